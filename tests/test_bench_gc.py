"""bench/gc.py at a tiny size: the table's rows, the JSON, and the Python port's exactness."""

import json

from bench import gc as bench_gc


def test_bench_gc_rows_and_json(tmp_path):
    out = tmp_path / "gc.json"
    res = bench_gc.main(["--configs", "16", "--cycles", "300", "--blocks", "32", "--pages", "16",
                         "--loop-configs", "1", "--loop-cycles", "300", "--single-configs", "2",
                         "--repeats", "1", "--metrics-blocks", "64", "--metrics-rounds", "4",
                         "--json", str(out)])
    back = json.loads(out.read_text())
    engines = [r["engine"] for r in back["rows"]]
    assert engines == ["jax_vmap", "jax_single", "python_loop", "jax_metrics"]
    rows = {r["engine"]: r for r in back["rows"]}
    assert rows["python_loop"]["exact_vs_model"] is True  # the baseline is the same FTL, page by page
    assert all(r["nand_pages_per_s"] > 0 and r["run_s"] > 0 for r in back["rows"])
    assert rows["jax_vmap"]["compile_s"] > 0 and back["sizes"]["configs"] == 16
    lo, hi = back["write_amplification_range"]
    assert 1.0 < lo <= hi  # GC ran: 300 cycles pass the 31-block fresh pool
    # the SNIA-rounds loop preconditioned the 64-block drive twice over, then ran 4 rounds with GC
    assert rows["jax_metrics"]["cycles"] > 3 * 64 and rows["jax_metrics"]["write_amplification"] > 1.0
    assert res["rows"][2]["jax_vmap_speedup"] > 1.0  # many drives at once beat the page-by-page loop
