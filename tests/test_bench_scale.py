"""``bench/scale.py`` runs end to end at a small size: every runner gives the bare call's values and the
JSON carries the fields docs/performance.md quotes (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "scale.py"


@pytest.mark.validation
def test_scale_bench_small(tmp_path):
    out = tmp_path / "scale.json"
    r = subprocess.run([sys.executable, str(BENCH), "--configs", "480", "--chunk", "100", "--steps", "16",
                        "--reps", "1", "--devices", "1,2", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["sizes"] == {"configs": 480, "chunk": 100, "steps": 16, "reps": 1, "in_flight": None,
                          "padding_fraction": 20 / 480}
    runs = {(x["runner"], x["workers"]): x for x in d["runs"]}
    assert set(runs) == {("bare", 1), ("bare_chunks", 1), ("local", 1), ("local", 2)}
    assert all(x["identical_to_bare"] for x in d["runs"])
    assert len(runs[("local", 2)]["devices"]) == 2 and len(runs[("local", 1)]["devices"]) == 1
    for x in d["runs"]:
        assert x["run_s"] > 0 and x["compile_s"] >= 0 and x["configs_per_s_run"] > 0
    assert d["local_overhead"] == runs[("local", 1)]["overhead_vs_bare"]
    assert d["local_overhead_vs_chunks"] == runs[("local", 1)]["overhead_vs_bare_chunks"]
    # the reduction-only run (default: 1 worker) against keep: all; its top-k equals the table's
    red = d["reduction"]["runs"]
    assert [x["workers"] for x in red] == [1]
    assert set(d["reduction"]["keep"]) == {"top_k", "pareto", "histograms"}
    assert red[0]["top_k_identical_to_keep_all"] is True and red[0]["pareto_points"] >= 1
    assert red[0]["peak_rss_mib"] > 0
    assert red[0]["keep_all"]["peak_rss_mib"] == runs[("local", 1)]["peak_rss_mib"]
    assert "overhead" in r.stdout and "efficiency" in r.stdout
