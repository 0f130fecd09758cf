"""bench/gc.py at a tiny size: the table's rows, the JSON, and the Python port's exactness."""

import json

from conftest import load_bench


def _bench():
    return load_bench("gc")


def test_bench_gc_rows_and_json(tmp_path):
    out = tmp_path / "gc.json"
    res = _bench().main(["--configs", "16", "--cycles", "300", "--blocks", "32", "--pages", "16",
                         "--loop-configs", "1", "--loop-cycles", "300", "--single-configs", "2",
                         "--repeats", "1", "--json", str(out)])
    back = json.loads(out.read_text())
    engines = [r["engine"] for r in back["rows"]]
    assert engines == ["jax_vmap", "jax_single", "python_loop"]
    rows = {r["engine"]: r for r in back["rows"]}
    assert rows["python_loop"]["exact_vs_model"] is True  # the baseline is the same FTL, page by page
    assert all(r["nand_pages_per_s"] > 0 and r["run_s"] > 0 for r in back["rows"])
    assert rows["jax_vmap"]["compile_s"] > 0 and back["sizes"]["configs"] == 16
    lo, hi = back["write_amplification_range"]
    assert 1.0 < lo <= hi  # GC ran: 300 cycles pass the 31-block fresh pool
    assert res["rows"][2]["jax_vmap_speedup"] > 1.0  # many drives at once beat the page-by-page loop
