"""A sweep's ``space`` or ``base`` of the wrong shape is refused before anything is computed, with a
:class:`ConfigError` naming where it is in the file, what is written there and the form expected, by every
path that reads a space: the expanded columns (``space.sweep_rows``), one configuration decoded from its
index (``space.sweep_row``) and the device-generated space (``device.DeviceSpace``); through the CLI, exit
status 2 and nothing written."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from test_cli import ssdx

from ssdx import presets
from ssdx.params import ConfigError
from ssdx.sweep import device, space
from ssdx.sweep import job as sweep_job

BASE_CFG = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
            "model": {"n_steps": 16}, "precision": "float32"}
BASE = sweep_job.sweep_base({}, BASE_CFG)  # the one-row base columns of a fluid sweep

FE = "drive.fold_efficiency"
GRID = {"grid": {"drive.nand": ["tlc", "qlc"]}}
DIST = {"low": 0.4, "high": 1.0}
FORM = "{low: L, high: H} (optionally log: true, integer: true) or {choices: [V, ...]}"


def _rnd(**block) -> dict:
    return {"space": {"random": block}}


# (id, sweep, field, value, a part of the rule)
CASES = [
    # the space itself
    ("space_empty_list", {"space": []}, "space", [], "non-empty list of such mappings"),
    ("space_number", {"space": 5}, "space", 5, "a mapping of blocks (grid, list, random, sobol)"),
    ("space_name", {"space": "grid"}, "space", "grid", "a mapping of blocks"),
    ("space_missing", {}, "space", None, "a mapping of blocks"),
    ("part_number", {"space": [GRID, 5]}, "space[1]", 5, "must be a mapping of blocks"),
    ("unknown_block", {"space": {"grd": {"drive.nand": ["tlc"]}}}, "space.grd", {"drive.nand": ["tlc"]},
     "unknown block (did you mean 'space.grid'?)"),
    # grid
    ("grid_list", {"space": {"grid": ["drive.nand"]}}, "space.grid", ["drive.nand"],
     "mapping of parameter: [values]"),
    ("grid_empty", {"space": {"grid": {}}}, "space.grid", {}, "non-empty mapping of parameter: [values]"),
    ("grid_axis_scalar_in_part_1", {"space": [GRID, {"grid": {"drive.nand": "tlc"}}]},
     "space[1].grid.drive.nand", "tlc", "non-empty list of values"),
    ("grid_axis_nested", {"space": {"grid": {"drive.nand": [["tlc", "qlc"]]}}}, "space.grid.drive.nand",
     [["tlc", "qlc"]], "single values"),
    # list
    ("list_mapping", {"space": {"list": {"drive.nand": "tlc"}}}, "space.list", {"drive.nand": "tlc"},
     "non-empty list of mappings"),
    ("list_of_names", {"space": {"list": ["tlc"]}}, "space.list[0]", "tlc", "mapping of parameter: value"),
    ("list_empty_row", {"space": {"list": [{}]}}, "space.list[0]", {}, "at least one parameter"),
    ("list_value_list", {"space": {"list": [{"drive.nand": ["tlc", "qlc"]}]}}, "space.list[0].drive.nand",
     ["tlc", "qlc"], "single value"),
    # random and sobol blocks
    ("sobol_number", {"space": {"sobol": 5}}, "space.sobol", 5, "{n: N, seed: S, params:"),
    ("n_name", _rnd(n="abc", params={FE: DIST}), "space.random.n", "abc", "integer >= 1"),
    ("n_fraction", {"space": {"sobol": {"n": 2.5, "params": {FE: DIST}}}}, "space.sobol.n", 2.5,
     "integer >= 1"),
    ("seed_negative", _rnd(n=2, seed=-1, params={FE: DIST}), "space.random.seed", -1, "integer >= 0"),
    ("seed_null", _rnd(n=2, seed=None, params={FE: DIST}), "space.random.seed", None, "integer >= 0"),
    ("seed_misspelt", _rnd(n=4, seeed=3, params={FE: DIST}), "space.random.seeed", 3,
     "unknown key (did you mean 'space.random.seed'?); the keys are n, seed, params"),
    ("parameter_outside_params", _rnd(n=5, **{"drive.dies_per_channel": [1, 8]}),
     "space.random.drive.dies_per_channel", [1, 8], "a parameter goes under 'params:'"),
    ("params_list", _rnd(n=2, params=[FE]), "space.random.params", [FE], "must name at least one parameter"),
    # a sampled parameter's distribution
    ("low_high_as_list", _rnd(n=2, params={FE: [0.4, 1.0]}), f"space.random.params.{FE}", [0.4, 1.0],
     f"must be {FORM}"),
    ("distribution_number", _rnd(n=2, params={FE: 0.5}), f"space.random.params.{FE}", 0.5, f"must be {FORM}"),
    ("distribution_key_misspelt", _rnd(n=2, params={FE: {**DIST, "lgo": True}}),
     f"space.random.params.{FE}.lgo", True, f"did you mean 'space.random.params.{FE}.log'?"),
    ("low_name", _rnd(n=2, params={FE: {"low": "a", "high": 1.0}}), f"space.random.params.{FE}.low", "a",
     "finite number"),
    ("log_name", _rnd(n=2, params={FE: {**DIST, "log": "yes"}}), f"space.random.params.{FE}.log", "yes",
     "true or false"),
    ("choices_with_low", _rnd(n=2, params={"drive.nand": {"choices": ["tlc"], "low": 1}}),
     "space.random.params.drive.nand", {"choices": ["tlc"], "low": 1}, "'choices' alone"),
    ("choices_empty", _rnd(n=2, params={"drive.nand": {"choices": []}}),
     "space.random.params.drive.nand.choices", [], "non-empty list of values"),
    ("choices_name", {"space": {"sobol": {"n": 2, "params": {"drive.nand": {"choices": "tlc"}}}}},
     "space.sobol.params.drive.nand.choices", "tlc", "non-empty list of values"),
    # base
    ("base_number", {"base": 5, "space": GRID}, "sweep.base", 5, "mapping of field: value"),
    ("base_list", {"base": ["drive.nand"], "space": GRID}, "sweep.base", ["drive.nand"],
     "mapping of field: value"),
    ("base_value_list", {"base": {"drive.nand": ["tlc", "qlc"]}, "space": GRID}, "sweep.base.drive.nand",
     ["tlc", "qlc"], "single value"),
]


@pytest.mark.parametrize(("sweep", "field", "value", "rule"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_malformed_space_or_base_is_refused_naming_where_it_is(sweep, field, value, rule):
    for build in (lambda: space.sweep_rows(BASE, sweep), lambda: space.sweep_row(BASE, sweep, 0),
                  lambda: device.DeviceSpace(BASE, sweep, {}, ["mean_mb_s"])):
        with pytest.raises(ConfigError) as e:
            build()
        assert (e.value.field, e.value.value) == (field, value)
        assert rule in e.value.rule
        assert f"field '{field}' = {value!r} breaks the rule" in str(e.value)


def test_a_nan_among_choices_is_refused():
    sweep = _rnd(n=2, params={"nand.t_prog_us": {"choices": [900.0, math.nan]}})
    with pytest.raises(ConfigError, match="NaN is not a value") as e:
        space.sweep_rows(BASE, sweep)
    assert e.value.field == "space.random.params.nand.t_prog_us.choices"


def test_every_mapping_is_checked_before_any_is_expanded(monkeypatch):
    """A bad second mapping stops the sweep before the first one's grid is expanded."""
    def no_expansion(*a, **k):
        raise AssertionError("expanded before the definition was checked")

    monkeypatch.setattr(space, "expand", no_expansion)
    monkeypatch.setattr(space, "_part_row", no_expansion)
    sweep = {"space": [GRID, {"random": {"n": 4, "seeed": 3, "params": {FE: DIST}}}]}
    for build in (lambda: space.sweep_rows(BASE, sweep), lambda: space.sweep_row(BASE, sweep, 0)):
        with pytest.raises(ConfigError) as e:
            build()
        assert e.value.field == "space[1].random.seeed"


def test_the_written_forms_still_run():
    """Whole numbers written as floats or strings, YAML's ``1e3`` (a string), null flags: accepted as
    before, and the decoded rows equal the expanded ones."""
    slc = {"low": 8, "high": "1e2", "log": True, "integer": None}
    sweep = {"base": None, "space": [
        {"grid": {"drive.nand": ["tlc", "qlc"]},
         "random": {"n": 3.0, "seed": "5", "params": {"drive.static_slc_gb": slc}}},
        {"list": [{"drive.nand": "tlc"}], "sobol": {"n": "2", "params": {FE: {**DIST, "log": False}}}}]}
    cols = space.sweep_rows(BASE, sweep)
    assert len(cols["drive.nand"]) == 2 * 3 + 2
    assert (cols["drive.static_slc_gb"][:6] >= 8).all() and (cols["drive.static_slc_gb"][:6] <= 100).all()
    for i in range(8):
        row = space.sweep_row(BASE, sweep, i)
        for k, v in cols.items():
            assert row[k][0] == v[i] or (v[i] != v[i] and row[k][0] != row[k][0]), (i, k)


def test_numpy_arrays_from_a_script_are_lists():
    # a sweep built in Python may give its grid axes and choices as 1-d arrays
    sweep = {"space": {"grid": {"drive.dies_per_channel": np.array([2, 4])},
                       "random": {"n": 3, "params": {"drive.nand": {"choices": np.array(["tlc", "qlc"])}}}}}
    cols = space.sweep_rows(BASE, sweep)
    assert len(cols["drive.nand"]) == 6 and set(cols["drive.nand"]) <= {"tlc", "qlc"}
    with pytest.raises(ConfigError):  # a 2-d array is not a list of values
        space.sweep_rows(BASE, {"space": {"grid": {"drive.dies_per_channel": np.array([[2, 4]])}}})


@pytest.mark.parametrize(("text", "field", "value"), [
    ("space: []\n", "space", "[]"),
    (f"space:\n  random: {{n: 4, seeed: 3, params: {{{FE}: {{low: 0.4, high: 1.0}}}}}}\n",
     "space.random.seeed", "3"),
], ids=["empty_space", "misspelt_seed"])
def test_the_cli_exits_2_naming_the_field(tmp_path, text, field, value):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nn_steps: 16\n" + text)
    assert yaml.safe_load(path.read_text())["space"] is not None
    out = tmp_path / "out"
    r = ssdx(f"sweep_file={path}", f"hydra.run.dir={out}")
    assert r.returncode == 2, r.stderr
    assert f"field '{field}' = {value} breaks the rule" in r.stderr and "Traceback" not in r.stderr
    for name in ("results.parquet", "summary.json", "chunks"):
        assert not (out / name).exists(), name
