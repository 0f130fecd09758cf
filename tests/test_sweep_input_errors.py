"""Bad sweep definitions are refused before anything runs, naming the field, the value and the rule:
unknown keys of a sweep (``ssdx.sweep.source``) and of its ``keep`` blocks (``ssdx.sweep.reduce.parse``),
a ``keep`` block that is not a mapping, and ``keep`` or ``report`` names that are no result column
(``ssdx.sweep.job.check_outputs``).  Nothing is written: no ``results.parquet``, ``chunks/``,
``summary.json``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import compose_config
from test_cli import ssdx

from ssdx import presets
from ssdx.params import ConfigError
from ssdx.paths import sweeps_dir
from ssdx.sweep import job as sweep_job
from ssdx.sweep import reduce, source, space

BASE = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
        "model": {"n_steps": 16}, "precision": "float32"}


def _sweep(**extra) -> dict:
    """Four configurations of the fluid model (every one feasible), plus ``extra`` keys."""
    return {"name": "t", "chunk_size": 4, "on_invalid": "error",
            "base": {"drive.static_slc_gb": 24.0, "drive.user_capacity_gb": 500.0},
            "space": {"grid": {"drive.slc_mode": ["dynamic", "static"], "drive.dies_per_channel": [2, 4]}},
            **extra}


def _nothing_written(out: Path) -> None:
    for name in ("results.parquet", "summary.json", "chunks", "top_k.parquet", "pareto.parquet"):
        assert not (out / name).exists(), name


# ------------------------------------------------------------------ 1. unknown keys of a sweep definition

@pytest.mark.parametrize("sweep, field", [
    (_sweep(rounds=5), "sweep.rounds"),  # GC rounds in a fluid sweep
    (_sweep(requests=-3), "sweep.requests"),  # a hybrid study's measured requests
    (_sweep(model="thermal", n_steps=64), "sweep.n_steps"),  # a thermal run's steps are duration / dt
    (_sweep(name=5), "sweep.name"),
    ({"name": "h", "model": "hybrid", "on_invalid": "drop", "space": {"grid": {"hybrid.nand": ["tlc"]}}},
     "sweep.on_invalid"),  # the hybrid runner has no on_invalid
])
def test_a_key_the_sweeps_model_would_ignore_is_refused(tmp_path, sweep, field):
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(sweep, BASE, tmp_path, progress=False)
    assert e.value.field == field
    assert "remove it" in str(e.value) or "must be a string" in str(e.value)
    _nothing_written(tmp_path)


def test_a_sweep_file_with_an_unknown_key_is_refused_naming_it_and_the_allowed_keys(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(_sweep(chunksize=10, kep={"top_k": {"k": 3, "by": "mean_mb_s"}})))
    with pytest.raises(ConfigError) as e:
        source.load(path)
    assert e.value.field == "sweep.chunksize" and e.value.value == 10
    msg = str(e.value)
    assert "did you mean 'sweep.chunk_size'" in msg and "also unknown: kep" in msg and str(path) in msg
    assert all(k in msg for k in source.keys())


@pytest.mark.parametrize("path", sorted(sweeps_dir().glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_sweep_loads_with_the_allowed_keys(path):
    doc = source.load(path)
    assert set(doc) <= set(source.keys())


def test_run_sweep_refuses_an_unknown_key_however_the_sweep_was_selected(tmp_path):
    """``sweep=NAME`` and ``+sweep.KEY=...`` reach ``run_sweep`` without ``source.load``."""
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(_sweep(kep={"top_k": {"k": 3, "by": "mean_mb_s"}}), BASE, tmp_path / "o",
                        progress=False)
    assert e.value.field == "sweep.kep" and "did you mean 'sweep.keep'" in str(e.value)
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ 2. unknown keys of keep's blocks

@pytest.mark.parametrize("keep,field,hint", [
    ({"pareto": {"x": "drive.dies_per_channel", "y": "mean_mb_s", "y_beter": "max"}},
     "sweep.keep.pareto.y_beter", "sweep.keep.pareto.y_better"),
    ({"top_k": {"k": 5, "by": "mean_mb_s", "group-by": ["drive.nand"]}},
     "sweep.keep.top_k.group-by", "sweep.keep.top_k.group_by"),
    ({"histograms": {"metrics": ["mean_mb_s"], "bin": 8}}, "sweep.keep.histograms.bin",
     "sweep.keep.histograms.bins"),
    ({"histograms": {"metrics": ["mean_mb_s"], "quantile": [0.5]}}, "sweep.keep.histograms.quantile",
     "sweep.keep.histograms.quantiles"),
    ({"top-k": {"k": 5, "by": "mean_mb_s"}}, "sweep.keep.top-k", "sweep.keep.top_k"),
])
def test_an_unknown_key_of_a_keep_block_is_refused(keep, field, hint):
    with pytest.raises(ConfigError) as e:
        reduce.parse(keep)
    assert e.value.field == field
    assert f"did you mean '{hint}'" in str(e.value) and "Allowed keys:" in str(e.value)


def test_every_documented_keep_key_is_accepted():
    spec = reduce.parse({"all": True,
                         "top_k": {"k": 2, "by": "m", "group_by": ["g"], "ascending": True},
                         "pareto": {"x": "m", "y": "q", "x_better": "max", "y_better": "min"},
                         "histograms": {"metrics": ["m"], "bins": 4, "group_by": ["g"],
                                        "range": {"m": [1, 2]}, "log": ["m"], "quantiles": [0.5]}})
    assert spec["pareto"]["y_better"] == "min" and spec["histograms"]["edges"]["m"][0] == 1.0
    assert reduce.parse({"histograms": {"metrics": ["m"], "range": "auto"}})["histograms"]["auto"] == ["m"]


def test_a_misspelt_pareto_key_is_refused_through_the_cli(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(_sweep(n_steps=16, keep={"pareto": {
        "x": "drive.dies_per_channel", "y": "mean_mb_s", "y_beter": "max"}})))
    r = ssdx(f"sweep_file={path}", f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode == 2, r.stderr
    assert "sweep.keep.pareto.y_beter" in r.stderr and "y_better" in r.stderr and "Traceback" not in r.stderr
    _nothing_written(tmp_path / "run")


# ------------------------------------------------------------------ 3. a keep block that is not a mapping

@pytest.mark.parametrize("kind,value", [("top_k", 5), ("pareto", "mean_mb_s"), ("histograms", ["mean_mb_s"])])
def test_a_keep_block_that_is_no_mapping_is_refused(kind, value):
    with pytest.raises(ConfigError) as e:
        reduce.parse({kind: value})
    assert e.value.field == f"sweep.keep.{kind}" and e.value.value == value
    assert "must be a mapping with the keys" in str(e.value)
    assert all(k in str(e.value) for k in reduce.KEYS[kind])


def test_a_histogram_range_that_is_no_mapping_is_refused():
    with pytest.raises(ConfigError) as e:
        reduce.parse({"histograms": {"metrics": ["m"], "range": [1.0, 2.0]}})
    assert e.value.field == "sweep.keep.histograms.range"


@pytest.mark.parametrize("value", ["12", [1.0, 2.0, 3.0], [1.0], {"lo": 1.0}, 5.0, ["a", 2.0], [None, 2.0],
                                   [0, 10**400]])
def test_a_histogram_range_that_is_no_pair_of_numbers_is_refused(value):
    with pytest.raises(ConfigError, match=r"must be \[lo, hi\] or auto") as e:
        reduce.parse({"histograms": {"metrics": ["m"], "range": {"m": value}}})
    assert e.value.field == "sweep.keep.histograms.range.m" and e.value.value == value
    parsed = reduce.parse({"histograms": {"metrics": ["m"], "range": {"m": [1, 2.5]}}})
    assert parsed["histograms"]["edges"]["m"][0] == 1.0 and parsed["histograms"]["edges"]["m"][-1] == 2.5


# ------------------------------------------------------------------ 4. report (and keep) names checked first

@pytest.mark.parametrize("report,field,value", [
    ({"group_by": ["drive.nosuch"], "sort_by": "mean_mb_s"}, "sweep.report.group_by", "drive.nosuch"),
    ({"group_by": ["drive.slc_mode"], "sort_by": "mean_mb_s", "pareto": {"x": "nosuchcol", "y": "mean_mb_s"}},
     "sweep.report.pareto.x", "nosuchcol"),
    ({"sort_by": "mean_mbs"}, "sweep.report.sort_by", "mean_mbs"),
    ({"sort_by": "mean_mb_s", "columns": ["drive.nand", "speed"]}, "sweep.report.columns", "speed"),
    ({"sort_by": "mean_mb_s", "pareto": {"x": "time_s", "y": "mean_mb_s", "colour": "drive.nand"}},
     "sweep.report.pareto.colour", "drive.nand"),
    ({"sort_by": "mean_mb_s", "pareto": {"x": "time_s", "y": "mean_mb_s", "color": "drive.mode"}},
     "sweep.report.pareto.color", "drive.mode"),
    ({"sort_by": "mean_mb_s", "heatmap": {"x": "drive.slc_mode", "y": "drive.dies_per_channel",
                                          "value": "mean_mb_s", "better": "most"}},
     "sweep.report.heatmap.better", "most"),
    ({"sort_by": "mean_mb_s", "pareto": {"x": "time_s", "y": "mean_mb_s", "x_better": None}},
     "sweep.report.pareto.x_better", None),  # the plot refuses null: refused before the run, not after
    ({"sort_by": "mean_mb_s", "constraint": "max_temp_k < 350"}, "sweep.report.constraint",
     "max_temp_k < 350"),
    ({"sort_by": "mean_mb_s", "ascending": "no"}, "sweep.report.ascending", "no"),
    ({"sortby": "mean_mb_s"}, "sweep.report.sortby", "mean_mb_s"),
])
def test_a_bad_report_is_refused_before_the_sweep_runs(tmp_path, report, field, value):
    out = tmp_path / "run"
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(_sweep(report=report), BASE, out, progress=False)
    assert (e.value.field, e.value.value) == (field, value)
    assert not out.exists()  # the runner never started


def test_the_report_names_the_closest_column_and_the_known_ones(tmp_path):
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(_sweep(report={"group_by": ["drive.slc_mod"], "sort_by": "mean_mb_s"}), BASE,
                        tmp_path / "run", progress=False)
    msg = str(e.value)
    assert "did you mean 'drive.slc_mode'" in msg and "mean_mb_s" in msg and "drive.dies_per_channel" in msg


def test_a_keep_name_is_checked_before_the_host_path_runs(tmp_path):
    """The host path used to find it in the first chunk, after the runner had started."""
    out = tmp_path / "run"
    keep = {"all": True, "pareto": {"x": "nosuchmetric", "y": "mean_mb_s"}}
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(_sweep(keep=keep, generate="host"), BASE, out, progress=False)
    assert e.value.field == "sweep.keep.pareto.x" and e.value.value == "nosuchmetric"
    assert not out.exists()


@pytest.mark.parametrize("name", ["quick", "slc_design", "tmt_grid", "wa_spare"])
def test_every_shipped_chunked_sweep_passes_the_checks(name):
    cfg = compose_config(f"sweep={name}")
    sweep = cfg["sweep"]
    sweep_job.check_outputs(sweep, cfg, reduce.parse(sweep["keep"]))
    keep = {"top_k": {"k": 1, "by": sweep["report"]["sort_by"], "group_by": sweep["report"]["group_by"]}}
    sweep_job.check_outputs(sweep, cfg, reduce.parse(keep))


def test_a_bad_report_exits_2_through_the_cli_and_writes_nothing(tmp_path):
    path = tmp_path / "report.yaml"
    report = {"group_by": ["drive.nosuch"], "sort_by": "mean_mb_s",
              "pareto": {"x": "nosuchcol", "y": "mean_mb_s"}}
    path.write_text(yaml.safe_dump(_sweep(n_steps=16, report=report)))
    r = ssdx(f"sweep_file={path}", f"hydra.run.dir={tmp_path / 'run'}")
    assert r.returncode == 2, r.stderr
    assert "sweep.report.group_by" in r.stderr and "drive.nosuch" in r.stderr and "Traceback" not in r.stderr
    _nothing_written(tmp_path / "run")


# ------------------------------------------------------------------ a NaN written into a sweep

@pytest.mark.parametrize(("where", "field"), [
    ("grid", "space.grid.nand.t_prog_us"),
    ("list", "space.list[1].nand.t_prog_us"),
    ("base", "sweep.base.nand.t_prog_us"),
])
def test_a_nan_in_a_sweep_is_refused_not_run_as_the_catalog_value(tmp_path, where, field):
    # NaN in a nand.* column means "the catalog value": a sweep says that with null, and a .nan written in
    # the file (or computed by the script that wrote it) must stop the sweep naming where it is, as the
    # same value on the command line does, instead of running silently as the catalog value
    nan = float("nan")
    sweep = _sweep()
    if where == "grid":
        sweep["space"]["grid"]["nand.t_prog_us"] = [1500.0, nan]
    elif where == "list":
        sweep["space"] = {"list": [{"nand.t_prog_us": 1500.0}, {"nand.t_prog_us": nan}]}
    else:
        sweep["base"]["nand.t_prog_us"] = nan
    with pytest.raises(ConfigError) as e:
        sweep_job.sweep_columns(sweep, BASE)
    assert e.value.field == field and "NaN is not a value" in str(e.value)
    if where != "base":  # a sweep generated on the device reads its space by factors, not by rows
        with pytest.raises(ConfigError, match="NaN is not a value"):
            space.factors(sweep["space"])
    path = tmp_path / "nan.yaml"
    path.write_text(yaml.safe_dump(sweep))
    out = tmp_path / "out"
    r = ssdx(f"sweep_file={path}", f"hydra.run.dir={out}")
    assert r.returncode == 2 and f"field '{field}' = nan" in r.stderr
    _nothing_written(out)
