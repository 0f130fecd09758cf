"""``bench/mask_count.py`` checks each form against NumPy before timing it and writes its JSON (no timing is
asserted)."""

import json

from bench import mask_count


def test_mask_count_bench_small(tmp_path):
    out = tmp_path / "mask_count.json"
    mask_count.main(["--values", "4096", "--reps", "2", "--json", str(out)])
    d = json.loads(out.read_text())
    forms = {(r["mask"], r["form"]) for r in d["rows"]}
    assert len(forms) == 8 and all(r["least_ms"] > 0 and r["median_ms"] >= r["least_ms"] for r in d["rows"])
    assert d["values"] == 4096 and d["baseline"].startswith("sum")
