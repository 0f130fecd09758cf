"""``bench/hist_slots.py`` checks every form against NumPy's searchsorted before timing it, builds the
compares only up to UNROLLED_EDGES, and records the threshold's choice (no timing is asserted)."""

import json

from bench import hist_slots
from ssdx.sweep import device_run


def test_hist_slots_bench_small(tmp_path):
    out = tmp_path / "hist_slots.json"
    hist_slots.main(["--values", "4096", "--reps", "2", "--bins", "8,200", "--json", str(out)])
    d = json.loads(out.read_text())
    rows = {(r["scale"], r["bins"]): r for r in d["rows"]}
    assert set(rows) == {("linear", 8), ("linear", 200), ("log", 8), ("log", 200)}
    assert d["thresholds"] == {"COMPARED_EDGES": device_run.COMPARED_EDGES} and d["machine"]
    for (_, bins), r in rows.items():
        assert r["search_ns"] > 0 and r["estimate_ns"] > 0
        assert (r["compare_ns"] is None) == (bins + 1 > device_run.UNROLLED_EDGES)
        assert r["chosen"] == ("compare" if bins + 1 <= device_run.COMPARED_EDGES else "estimate")
