"""What the package says about its configuration matches the configuration it ships."""

from __future__ import annotations

import re

import pytest
import yaml

from ssdx import presets
from ssdx.models.engine import params as engine_params
from ssdx.models.gc import params as gc_params
from ssdx.models.hybrid import params as hybrid_params
from ssdx.params import ConfigError
from ssdx.paths import conf_dir
from tests.test_imports import PKG


def test_hybrid_defaults_are_the_shipped_yaml():
    shipped = yaml.safe_load((conf_dir() / "hybrid" / "default.yaml").read_text())
    shipped.pop("defaults", None)
    assert hybrid_params.defaults() == shipped


def test_every_config_file_the_package_names_exists():
    named = set()
    for path in PKG.rglob("*.py"):
        named |= set(re.findall(r"conf/[a-z0-9_]+/[a-z0-9_]+\.yaml", path.read_text()))
    assert named, "the search finds the names"
    assert [n for n in sorted(named) if not (conf_dir() / n[len("conf/"):]).is_file()] == []


def test_rounds_rule_is_one_declaration():
    assert gc_params.n_rounds(5) == 5
    for bad in (4, 10_001, 5.5):
        with pytest.raises(ConfigError, match=r"gc\.rounds.*integer 5 <= x <= 10000"):
            gc_params.n_rounds(bad)
    with pytest.raises(ConfigError, match=r"sweep\.rounds"):
        gc_params.n_rounds(3, "sweep.rounds")


def test_engine_columns_from_config_one_row_per_drive():
    cfg = {"drive": presets.drive("aldrin_pro_2tb"), "workload": presets.workload("seq_fill"), "nand": None,
           "engine": yaml.safe_load((conf_dir() / "engine" / "default.yaml").read_text())}
    one = engine_params.columns_from_config(cfg)
    drives = [presets.drive("aldrin_pro_2tb"), presets.drive("sn8e_1920")]
    two = engine_params.columns_from_config(cfg, drives)
    assert len(one["drive.channels"]) == 1 and len(two["drive.channels"]) == 2
    assert set(one) == set(two)
    cols, _ = engine_params.build_from_config(cfg, n=3)
    assert all(len(v) == 3 for v in cols.values())


def test_the_engine_options_are_declared_once_and_everything_else_is_derived():
    """Each ``engine.*`` option is declared once (``options.DECLARED``: default and meaning); the shipped
    yaml (what a run gets) is written from it, the schema (what a mistyped override is checked against) is
    built from it, ``OPTIONAL`` (what a batch that leaves a field out gets) and the numeric Fields'
    defaults are taken from it."""
    import dataclasses

    from ssdx.models.engine import options
    from ssdx.models.engine.conf import EngineConf

    text = (conf_dir() / "engine" / "default.yaml").read_text()
    assert text == options.yaml_text(), "run python -m ssdx.models.engine.options > conf/engine/default.yaml"
    declared = {k: v for k, (v, _) in options.DECLARED.items()}
    shipped = yaml.safe_load(text)
    shipped.pop("defaults", None)
    assert shipped == declared
    assert {f.name: f.default for f in dataclasses.fields(EngineConf)} == declared
    assert engine_params.OPTIONAL == {k: declared[k] for k in engine_params.OPTIONAL}
    assert set(declared) == {*engine_params.FIELDS, *engine_params.OPTIONAL, "backend"}
    for name, f in engine_params.RANGES.items():  # a number's Field carries the declared default
        assert f.default is None or f.default == declared[name.split(".", 1)[1]], name
    # one option, followed through: engine.back_pressure
    assert declared["back_pressure"] in engine_params.BACK_PRESSURES
    assert "back_pressure: fluid" in text.splitlines()


def test_a_drive_field_and_an_mqsim_option_are_declared_once():
    """``drive.channels``: its default and meaning in ``params.DRIVE_DECLARED``, from which the schema
    (``DriveConf``), ``DRIVE_FIELDS`` and its Field's meaning come.  ``mqsim.requests_per_flow``: its
    default, bound and meaning in ``MqsimConf``, which the MQSim job reads; the experiment's YAML repeats
    none of the block's values."""
    import dataclasses

    from ssdx import params
    from ssdx.cli.schema import DriveConf
    from ssdx.models.engine import mqsim_job
    from ssdx.models.engine.conf import MqsimConf

    drive = {f.name: f.default for f in dataclasses.fields(DriveConf) if f.name != "power"}
    assert drive == {k: v for k, (v, _) in params.DRIVE_DECLARED.items()}
    assert params.DRIVE_FIELDS == tuple(k for k in params.DRIVE_DECLARED if k != "name")
    assert params.RANGES["drive.channels"].doc == params.DRIVE_DECLARED["channels"][1]
    flow = {f.name: f for f in dataclasses.fields(MqsimConf)}["requests_per_flow"]
    assert mqsim_job.DEFAULTS["requests_per_flow"] is flow.default is None
    assert mqsim_job.MAX_REQUESTS == flow.metadata["hi"]
    assert {f.name for f in mqsim_job.conf_fields()} >= {"mqsim.requests_per_flow"}
    shipped = yaml.safe_load((conf_dir() / "experiment" / "mqsim.yaml").read_text())
    assert "mqsim" not in shipped
