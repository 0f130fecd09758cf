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


def test_engine_defaults_agree_in_the_yaml_the_schema_and_the_optional_fields():
    """The engine's defaults are written in three places: the shipped yaml (what a run gets), the
    schema (what a mistyped override is checked against) and ``params.OPTIONAL`` (what a batch that
    leaves a field out gets).  They must say the same."""
    import dataclasses

    from ssdx.cli.schema import EngineConf

    shipped = yaml.safe_load((conf_dir() / "engine" / "default.yaml").read_text())
    shipped.pop("defaults", None)
    schema = {f.name: f.default for f in dataclasses.fields(EngineConf)}
    assert shipped == schema
    assert {k: shipped[k] for k in engine_params.OPTIONAL} == engine_params.OPTIONAL
