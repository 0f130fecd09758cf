"""``bench/scale_device.py`` runs end to end at a small size: the device path's reduction states equal the
host path's, and the JSON carries the fields docs/performance.md quotes (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.validation
def test_scale_device_bench_small(tmp_path):
    out = tmp_path / "scale_device.json"
    r = subprocess.run([sys.executable, "-m", "bench.scale_device", "--configs", "600", "--steps", "8",
                        "--chunk", "256", "--trivial", "300000", "--reps", "1", "--in-flight", "1",
                        "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    runs = d["runs"]
    assert set(runs) == {"bare", "device", "host", "trivial", "trivial_small", "trivial_opposed"}
    assert runs["device"]["identical_to_host"] is True
    assert runs["device"]["configs"] == runs["bare"]["configs"] == d["sizes"]["configs"] == 576  # 48 x 12
    assert runs["trivial"]["configs"] == d["sizes"]["trivial"] == 300000
    assert runs["trivial_small"]["configs"] == runs["trivial_opposed"]["configs"] == 28800
    # the opposed metrics' front is long: many points, each a different static pSLC size
    assert runs["trivial_opposed"]["pareto_points"] > 50
    for k in ("trivial", "trivial_small", "trivial_opposed"):
        x = runs[k]
        assert x["run_s"] > 0 and x["device_s"] > 0 and x["compile_s"] > 0
        # one chunk at a time: the compiled calls are inside the run, compile time is not
        assert x["device_s"] < x["run_s"]
    assert d["device_overhead"] == runs["device"]["overhead_vs_bare"]
    assert d["opposed_pareto_configs_per_s"] == runs["trivial_opposed"]["configs_per_s_run"]
    assert set(d["peak_rss_mib"]) == {"28800", "300000"}
    assert "device states identical to the host path's: True" in r.stdout


@pytest.mark.validation
def test_trivial_each_times_the_chunk_with_each_reduction_left_out(tmp_path):
    out = tmp_path / "each.json"
    r = subprocess.run([sys.executable, "-m", "bench.scale_device", "--runs", "trivial_each", "--trivial",
                        "30000", "--reps", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    run = json.loads(out.read_text())["runs"]["trivial_each"]
    assert set(run["variants"]) == {"all three", "all but top_k", "all but pareto", "all but histograms",
                                    "a 4-bin histogram alone"}
    assert set(run["cpu_ns_added_by"]) == {"top_k", "pareto", "histograms"}
    for v in run["variants"].values():
        assert v["calls"] == 5 and v["wall_ns_per_config"] > 0 and v["cpu_ns_per_config"] > 0
    assert run["configs"] == run["chunk"] <= 30000 and run["compile_s"] > 0
    assert "trivial chunk, all three:" in r.stdout
