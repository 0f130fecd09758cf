"""``ssdx sweep_file=PATH.yaml``: a sweep definition from any file, through the CLI."""

import json

import numpy as np
import pyarrow.parquet as pq

from tests.test_cli import ssdx

SWEEP = """\
name: from_file
n_steps: 64
chunk_size: 3
base: {drive.user_capacity_gb: 500.0}
space:
  grid:
    drive.dies_per_channel: [2, 4, 8]
    drive.nand: [tlc, qlc]
report:
  group_by: []
  sort_by: mean_mb_s
  ascending: false
  columns: [drive.dies_per_channel, mean_mb_s]
"""


def test_sweep_file_runs_from_any_directory_and_keep_override(tmp_path):
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "mine.yaml").write_text(SWEEP)
    r = ssdx("sweep_file=defs/mine.yaml", f"hydra.run.dir={tmp_path / 'all'}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    t = pq.read_table(tmp_path / "all" / "results.parquet").to_pandas()
    assert len(t) == 6 and sorted(set(t["drive.dies_per_channel"])) == [2, 4, 8]
    assert json.loads((tmp_path / "all" / "summary.json").read_text())["sweep"] == "from_file"
    # the same file reduced to the best two per NAND type on two host devices: no table, the same rows
    r = ssdx("sweep_file=defs/mine.yaml", f"hydra.run.dir={tmp_path / 'top'}",
             "sweep.keep={top_k: {k: 2, by: mean_mb_s, group_by: [drive.nand]}, histograms: {metrics: "
             "[mean_mb_s], bins: 32, range: {mean_mb_s: [10, 10000]}, log: [mean_mb_s], quantiles: [0.5]}}",
             "sweep.chunk_size=1", cwd=tmp_path, env_extra={"SSDX_HOST_DEVICES": "2"})
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "top" / "results.parquet").exists()
    assert "best by mean_mb_s per drive.nand:" in r.stdout and "quantiles (value: estimate;" in r.stdout
    hist = json.loads((tmp_path / "top" / "histograms.json").read_text())
    median = hist["groups"][0]["quantiles"]["mean_mb_s"][0]
    assert median["low"] <= np.sort(t["mean_mb_s"])[2] <= median["high"]  # the 3rd of 6 (ceil(0.5 * 6))
    top = pq.read_table(tmp_path / "top" / "top_k.parquet").to_pandas()
    want = t.sort_values(["mean_mb_s", "config_id"], ascending=[False, True]).groupby("drive.nand").head(2)
    assert sorted(top["config_index"]) == sorted(want["config_id"])
    assert dict(zip(top["config_index"], top["mean_mb_s"], strict=True)) == \
        dict(zip(want["config_id"], want["mean_mb_s"], strict=True))


def test_sweep_file_refusals_name_the_file(tmp_path):
    r = ssdx("sweep_file=nowhere.yaml", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert r.returncode == 2 and "nowhere.yaml" in r.stderr
    (tmp_path / "bad.yaml").write_text("name: x\nspace:\n  grid: {a: [1, 2]\n")
    r = ssdx("sweep_file=bad.yaml", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert r.returncode == 2 and "bad.yaml line 4" in r.stderr, r.stderr
    (tmp_path / "ok.yaml").write_text(SWEEP)
    r = ssdx("sweep_file=ok.yaml", "sweep=quick", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert r.returncode == 2 and "sweep=NAME" in r.stderr
    r = ssdx("sweep_file=ok.yaml", "sweep.keep={top_k: {k: 0, by: mean_mb_s}}", f"hydra.run.dir={tmp_path}",
             cwd=tmp_path)
    assert r.returncode == 2 and "sweep.keep.top_k.k" in r.stderr
    r = ssdx("sweep_file=ok.yaml", "sweep.keep={histograms: {metrics: [mean_mb_s], "
             "range: {mean_mb_s: [1, 9]}, quantiles: [50]}}", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert r.returncode == 2 and "sweep.keep.histograms.quantiles" in r.stderr and "[0, 1]" in r.stderr


def test_sweep_generate_override_through_the_cli(tmp_path):
    """``sweep.generate`` is a key of every sweep: host and device give the same reductions; a bad value
    is refused naming the field, exit 2."""
    (tmp_path / "mine.yaml").write_text(SWEEP)
    keep = "sweep.keep={top_k: {k: 2, by: mean_mb_s, group_by: [drive.nand]}}"
    got = {}
    for mode in ("host", "device"):
        r = ssdx("sweep_file=mine.yaml", keep, f"sweep.generate={mode}", f"hydra.run.dir={tmp_path / mode}",
                 cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        got[mode] = pq.read_table(tmp_path / mode / "top_k.parquet").to_pandas()
        summary = json.loads((tmp_path / mode / "summary.json").read_text())
        assert summary.get("generated_on", "host") == mode
    assert got["host"].equals(got["device"]) and len(got["host"]) == 4
    r = ssdx("sweep=quick", keep, "sweep.generate=gpu", f"hydra.run.dir={tmp_path / 'bad'}")
    assert r.returncode == 2 and "sweep.generate" in r.stderr and "'auto', 'host', 'device'" in r.stderr
    # a model with its own runner (hybrid) generates on the host: the device is refused, not ignored
    r = ssdx("sweep=nand_per_workload", "sweep.generate=device", f"hydra.run.dir={tmp_path / 'hybrid'}")
    assert r.returncode == 2 and "sweep.generate" in r.stderr and "fluid sweeps" in r.stderr
