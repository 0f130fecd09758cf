import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import mixed_sweep_cols

from ssdx import params, presets
from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.sweep import runner, space
from ssdx.sweep.job import run_sweep, sweep_columns

BASE = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
        "model": {"n_steps": 64}, "precision": "float32"}


def test_grid_list_product_sizes_and_order():
    rows = space.expand({"grid": {"a": [1, 2, 3], "b": ["x", "y"]}, "list": [{"c": 0}, {"c": 1}]})
    assert len(rows["a"]) == 12
    assert rows["a"].tolist()[:4] == [1, 1, 1, 1]
    assert rows["b"].tolist()[:4] == ["x", "x", "y", "y"]
    assert rows["c"].tolist()[:4] == [0, 1, 0, 1]


def test_random_and_sobol_are_seeded_and_in_range():
    block = {"n": 32, "seed": 3, "params": {"x": {"low": 8, "high": 128, "log": True},
                                             "k": {"low": 1, "high": 8, "integer": True},
                                             "c": {"choices": ["tlc", "qlc"]}}}
    for kind in ("random", "sobol"):
        a = space.sampled(block, kind)
        b = space.sampled(block, kind)
        assert np.array_equal(a["x"], b["x"])
        assert (a["x"] >= 8).all() and (a["x"] <= 128).all()
        assert set(a["k"].tolist()) <= set(range(1, 9))
        assert set(a["c"].tolist()) == {"tlc", "qlc"}
    with pytest.raises(ConfigError, match="high"):
        space.sampled({"n": 4, "params": {"x": {"low": 2, "high": 1}}}, "random")


def test_space_errors_name_the_block():
    with pytest.raises(ConfigError, match="space.lattice"):
        space.expand({"lattice": {}})
    with pytest.raises(ConfigError, match="only one block"):
        space.expand({"grid": {"a": [1]}, "list": [{"a": 2}]})


def _cols():
    return mixed_sweep_cols(dies=(1, 2, 4))


def test_results_identical_whatever_chunk_size_or_order():
    cols = _cols()
    model = registry.fluid_model(64)
    # half the configurations have idle gaps: they run in their own group with the splitting kernel
    ref = runner.run(cols, model, chunk_size=72, progress=False).to_pandas()
    a = runner.run(cols, model, chunk_size=5, progress=False).to_pandas()
    shuffled = np.random.default_rng(0).permutation(12).tolist()  # 2 groups x ceil(36 / 7) chunks
    b = runner.run(cols, model, chunk_size=7, progress=False, order=shuffled).to_pandas()
    assert len(ref) == 72 and ref["config_id"].tolist() == list(range(72))
    assert ref["pslc_gb"].nunique() > 10  # the configurations really differ
    for other in (a, b):
        pd.testing.assert_frame_equal(ref, other, check_exact=True)


def test_sweep_writes_one_row_per_configuration_with_every_parameter_and_metric(tmp_path):
    sweep = {"name": "t", "chunk_size": 4, "on_invalid": "drop",
             "space": {"grid": {"drive.user_capacity_gb": [500.0, 3000.0],
                                "drive.nand": ["tlc", "qlc", "3d_ct_tlc"],
                                "drive.dies_per_channel": [2, 4]}},
             "report": {"group_by": ["drive.nand"], "sort_by": "mean_mb_s", "ascending": False}}
    s = run_sweep(sweep, BASE, tmp_path, progress=False)
    t = pq.read_table(tmp_path / "results.parquet").to_pandas()
    # 3000 GB fits neither 8 x 2 nor 8 x 4 dies of 68.7 GB: those 6 configurations are dropped
    assert s["n_defined"] == 12 and s["n_dropped"] == 6 and s["n_configs"] == len(t) == 6
    assert s["dropped_rules"][0]["field"] == "drive.user_capacity_gb"
    for col in ("drive.nand", "drive.dies_per_channel", "drive.user_capacity_gb", "workload.pattern",
                "mean_mb_s", "cache_gb", "time_s", "folding_mb_s"):
        assert col in t.columns
    assert t["config_id"].is_unique
    assert len(list((tmp_path / "chunks").glob("chunk_*.parquet"))) == 2
    assert {b["drive.nand"] for b in s["best"]} == {"tlc", "qlc", "3d_ct_tlc"}


def test_sweep_error_policy_names_field_and_configuration():
    sweep = {"space": {"grid": {"drive.channels": [8, -2]}}}
    with pytest.raises(ConfigError) as e:
        sweep_columns(sweep, BASE)
    assert e.value.field == "drive.channels" and e.value.value == -2 and e.value.row == 1
    with pytest.raises(ConfigError, match="unknown field"):
        sweep_columns({"space": {"grid": {"drive.chanels": [8]}}}, BASE)


def test_an_unknown_sweep_column_shows_its_plain_value_and_the_closest_known_one():
    from ssdx.sweep import device
    from ssdx.sweep.job import sweep_base

    sweep = {"space": {"grid": {"drive.dies_per_channel": [2, 4], "drive.nandd": ["tlc", "qlc"]}}}
    base = sweep_base(sweep, BASE)
    for build in (lambda: space.sweep_rows(base, sweep), lambda: space.sweep_row(base, sweep, 0),
                  lambda: device.DeviceSpace(base, sweep, {}, ["mean_mb_s"])):
        with pytest.raises(ConfigError) as e:
            build()
        assert e.value.field == "sweep.space: drive.nandd" and e.value.value == "tlc"
        assert type(e.value.value) is str
        assert "= 'tlc' breaks" in str(e.value) and "np.str_" not in str(e.value)
        assert "unknown field of a model: fluid sweep (did you mean 'drive.nand'?); known: [" in str(e.value)
    near = r"unknown field of a model: fluid sweep \(did you mean 'drive.channels'\?\)"
    with pytest.raises(ConfigError, match=near) as e:
        space.sweep_rows(base, {"base": {"drive.chanels": 8}, "space": sweep["space"]})
    assert e.value.field == "sweep.base.drive.chanels"
    # nothing close: no suggestion
    with pytest.raises(ConfigError, match=r"unknown field of a model: fluid sweep; known: \[") as e:
        space.sweep_rows(base, {"space": {"grid": {"zzz": [1.5]}}})
    assert e.value.value == 1.5 and type(e.value.value) is float


def test_slc_design_sweep_is_large_enough():
    from omegaconf import OmegaConf

    from ssdx.paths import sweeps_dir

    sweep = OmegaConf.to_container(OmegaConf.load(sweeps_dir() / "slc_design.yaml"))
    cols, dropped, n_def = sweep_columns(sweep, BASE)
    n = len(cols["drive.nand"])
    assert n >= 10_000
    # the four single-region policies (the sweep predates the static + dynamic ``hybrid`` mode)
    assert set(cols["drive.slc_mode"]) == set(params.SLC_MODES) - {"hybrid"}
    assert len(set(cols["drive.nand"])) >= 4 and len(set(cols["drive.dies_per_channel"])) >= 3
    assert len(set(cols["drive.user_capacity_gb"])) >= 3
    assert n_def == 18432 + 576 and dropped
    # the pure modes, which ignore static size and fold efficiency, are not repeated per sample
    pure = np.isin(cols["drive.slc_mode"], ["pure_slc", "pure_native"])
    assert pure.sum() <= 576
