"""bench/engine.py at a tiny size: the table's rows, the JSON, and the baseline's agreement."""

import json

import pytest

from bench import engine as bench_engine


@pytest.mark.validation
def test_bench_engine_rows_and_json(tmp_path):
    out = tmp_path / "engine.json"
    bench = bench_engine
    bench.main(["--configs", "64", "--requests", "1000", "--repeats", "1", "--single-configs", "4",
                "--json", str(out)])
    back = json.loads(out.read_text())
    rows = {r["engine"]: r for r in back["rows"]}
    on_cpu = back["device"]["platform"] == "cpu"  # cpu_loop runs on a CPU only, cuda_loop on a CUDA GPU
    loop = ["cpu_loop"] if on_cpu else (["cuda_loop"] if bench._cuda_ready() else [])
    assert list(rows) == ["jax_batch", *loop, "jax_single"]
    assert back["sizes"]["configs"] == 64 and back["sizes"]["requests"] == 1000
    assert back["sizes"]["layout"]["ways"] == 4 and back["sizes"]["layout"]["channels"] == 8  # padded
    # the per-configuration baseline gives the batch's answers: padding changes nothing
    assert rows["jax_single"]["max_rel_diff_vs_batch"] < 1e-5
    for k in loop:  # the same model, float64 inside
        assert rows[k]["max_rel_diff_vs_jax_batch"] < 1e-3
    assert rows["jax_batch"]["compile_s"] > 0 and rows["jax_batch"]["run_s"] > 0
    assert rows["jax_batch"]["speedup_vs_jax_single"] > 1.5  # batching pays even at 64 configurations
    assert back["machine"]["cpu_count"] >= 1 and back["device"]["platform"]
