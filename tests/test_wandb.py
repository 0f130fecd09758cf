"""logger=wandb: offline runs inside the Hydra run directory, read back from their files."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from ssdx import loggers
from ssdx.params import ConfigError


def ssdx(*args):
    env = dict(os.environ, TQDM_DISABLE="1")
    env.pop("WANDB_MODE", None)
    return subprocess.run([sys.executable, "-m", "ssdx.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def _run_dir(root):
    runs = sorted((root / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, runs
    return runs[0]


def test_sweep_logged_offline_with_config_summary_tables_and_plot(tmp_path):
    r = ssdx("logger=wandb", "logger.max_table_rows=50", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert "W&B run (offline)" in r.stdout and "wandb sync" in r.stdout
    run_dir = _run_dir(tmp_path)
    got = loggers.read_offline_run(run_dir)
    assert got["exit_code"] == 0  # a run that ends well is closed as such (a failing one: the test below)
    assert got["config"]["task"] == "sweep" and got["config"]["sweep"]["name"] == "quick"
    assert got["config"]["logger"]["name"] == "wandb"
    summary = json.loads((tmp_path / "summary.json").read_text())
    s = got["summary"]
    assert s["n_configs"] == summary["n_configs"] == 144
    assert s["best_by/metric"] == "mean_mb_s" and s["pareto/n_front"] == summary["pareto"]["n_front"]
    assert s["results_table"] == {"rows_logged": 50, "rows_total": 144,
                                  "sampling": "uniform random sample without replacement (seed 0)"}
    logged = {"tables/best", "tables/results", "tables/pareto/front", "plots/pareto", "report"}
    assert logged <= set(got["logged"])
    files = {f.split("/")[-1].split("_")[0]: f for f in got["files"] if f.startswith("media/")}
    page = (run_dir / "files" / files["report"]).read_text(encoding="utf-8")
    assert page == (tmp_path / "report.html").read_text(encoding="utf-8")  # the page itself
    results = json.loads((run_dir / "files" / files["results"]).read_text())
    ids = [row[results["columns"].index("config_id")] for row in results["data"]]
    assert len(ids) == 50 and ids == sorted(set(ids))  # a sample without repeats, in table order
    best = json.loads((run_dir / "files" / files["best"]).read_text())
    assert len(best["data"]) == len(summary["best"]) == 12  # one row per (pre-fill, cache mode) group
    png = run_dir / "files" / files["pareto"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_experiment_logs_its_plot_and_summary(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", "logger=wandb", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    got = loggers.read_offline_run(_run_dir(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert got["config"]["task"] == "fill"
    assert got["summary"]["mean_mb_s"] == pytest.approx(summary["mean_mb_s"])
    assert "plots/fill_curve" in got["logged"] and "tables/phases" in got["logged"]
    assert "results_table" not in got["summary"]  # no results.parquet: nothing claimed


def test_bad_logger_value_exits_2(tmp_path):
    r = ssdx("logger=wandb", "logger.mode=sometimes", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "logger.mode" in r.stderr


def test_sampling_tables_and_fields():
    df = pd.DataFrame({"config_id": range(1000), "x": range(1000)})
    same, stated = loggers.sample_rows(df, 1000)
    assert len(same) == 1000 and stated["sampling"] == "all rows"
    part, stated = loggers.sample_rows(df, 100, seed=3)
    again, _ = loggers.sample_rows(df, 100, seed=3)
    assert len(part) == 100 and part["config_id"].is_monotonic_increasing and part.equals(again)
    assert stated["rows_total"] == 1000 and "seed 3" in stated["sampling"]
    t = loggers.tables({"best": [{"a": 1, "b": 2.0}], "rel": {"w1": {"mlc": 1.0, "ct": 1.1}},
                        "scalar": 3, "nested": {"x": {"y": {"z": 1}}}})
    assert list(t["best"].columns) == ["a", "b"]
    assert t["rel"].to_dict("records") == [{"key": "w1", "mlc": 1.0, "ct": 1.1}]
    assert loggers.flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"}) == {"a/b": 1, "d": "x"}
    with pytest.raises(ConfigError, match="logger.projekt"):
        loggers.from_config({"name": "wandb", "projekt": "x"})
    assert isinstance(loggers.from_config({"name": "none"}), loggers.NullLogger)


def test_a_failing_job_closes_its_run_as_failed(tmp_path):
    r = ssdx("logger=wandb", "sweep.n_steps=3", f"hydra.run.dir={tmp_path / 'bad'}")
    assert r.returncode == 2 and "sweep.n_steps" in r.stderr
    assert loggers.read_offline_run(_run_dir(tmp_path / "bad"))["exit_code"] == 1
    r = ssdx("logger=wandb", "logger.tags=design", f"hydra.run.dir={tmp_path / 'tags'}")
    assert r.returncode == 2 and "logger.tags" in r.stderr
