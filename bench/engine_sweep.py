"""Benchmark of request-engine sweeps (``model: engine``) against the bare per-configuration loop.

What is timed
-------------
``cpu_loop`` (the baseline, ``bench.engine``'s row of that name): ``N`` configurations (``bench.engine``'s:
four drive presets x queue depths 1-32, cycled) in one batch through ``replay.prepare(backend="cpu")`` and
one call of the compiled loop over ``M`` requests (``bench.engine.stream``), Numba's compile apart.

``engine_sweep``: the same configurations and requests as a sweep, ``ssdx.models.engine.sweep.run_rows``
end to end: the stream read from a trace file (the same requests, written as an MSR Cambridge CSV), the
designs grouped, chunked (``--chunk``), replayed, their metrics and costs computed, each chunk checkpointed
into a fresh directory and the results table written.

The two are interleaved in one process, ``--repeats`` times each (alternating which goes first), and the
median of each is reported, with the sweep's rate as a share of the loop's.  The rows of the two are
compared (latency sums against the sweep's mean latency x requests, to float32 rounding).

``--rss``: peak resident memory of sweeps that keep reductions only (Pareto front, top-k, histograms),
each in a fresh process, at two sizes (``--rss-configs``): a sweep whose memory is flat holds no row.

Usage: ``python -m bench.engine_sweep [--configs N] [--requests M] [--chunk C] [--repeats R] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bench import engine as bench_engine
from ssdx import presets
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import sweep as engine_sweep
from ssdx.report.machine import machine


def write_trace(m: int, path: Path) -> None:
    """``bench.engine.stream(m)`` as an MSR Cambridge CSV (times in 100 ns ticks)."""
    ch = bench_engine.stream(m)
    t = np.round(np.nan_to_num(np.asarray(ch.time_s, np.float64)) * 1e7).astype(np.int64)
    kind = np.where(np.asarray(ch.op) == 0, "Read", "Write")
    with open(path, "w") as f:
        for i in range(m):
            f.write(f"{t[i]},host,0,{kind[i]},{int(ch.offset[i])},{int(ch.size[i])},0\n")


def base_cfg(trace: Path) -> dict[str, Any]:
    engine = {**presets.engine(), **bench_engine.ENGINE, "backend": "cpu"}
    return {"drive": presets.drive(), "nand": None, "seed": 0, "engine": engine,
            "workload": {**presets.workload(), "trace_path": str(trace), "format": "msr"}}


def sweep_columns(n: int, trace: Path) -> dict[str, np.ndarray]:
    """``bench.engine.columns(n)`` with the trace as every design's workload source."""
    cols = bench_engine.columns(n)
    for key in engine_sweep.SOURCES:
        cols[key] = np.full(n, str(trace) if key == "workload.trace_path" else "")
    return cols


def time_loop(cols: dict, m: int) -> dict[str, Any]:
    run = bench_engine.time_batch(cols, m, 1, "cpu")
    return {"run_s": run["run_s"], "compile_s": run["compile_s"], "lat_sum": run["lat_sum"]}


def time_sweep(cols: dict, base: dict, m: int, chunk: int) -> dict[str, Any]:
    sweep = {"name": "bench", "model": "engine", "requests": m}
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        table = engine_sweep.run_rows(cols, sweep, base, np.float32, chunk, out_dir=Path(d) / "out",
                                      progress=False)
        wall = time.perf_counter() - t0
    df = table.to_pandas()
    return {"run_s": wall, "compile_s": float(table.schema.metadata[b"compile_s"]), "table": df}


def rss_of(n: int, m: int, chunk: int) -> dict[str, Any]:
    """Peak RSS of a reduced sweep of ``n`` designs in a fresh process (``--rss-child``)."""
    out = subprocess.run([sys.executable, "-m", "bench.engine_sweep", "--rss-child", str(n), "--requests",
                          str(m), "--chunk", str(chunk)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def rss_child(n: int, m: int, chunk: int) -> None:
    from ssdx.sweep.job import run_sweep

    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "trace.csv"
        write_trace(m, trace)
        base = base_cfg(trace)
        dies = [1, 2, 4, 8]
        reps = int(np.ceil(n / (4 * len(dies) * 3 * 2)))
        sweep = {"name": "rss", "model": "engine", "requests": m, "chunk_size": chunk,
                 "base": {"drive.user_capacity_gb": 100.0, "drive.die_gbit": 1024},
                 "space": {"grid": {"drive.channels": [2, 4, 8, 16], "drive.dies_per_channel": dies,
                                    "engine.write_buffer_mib": [4, 16, 64], "drive.dram": [True, False],
                                    "engine.ctrl_kiops": [float(1000 + i) for i in range(reps)]}},
                 "keep": {"pareto": {"x": "cost_usd", "y": "read_latency_p99_us"},
                          "top_k": {"k": 10, "by": "read_latency_p99_us", "ascending": True},
                          "histograms": {"metrics": ["read_latency_p99_us", "iops"], "bins": 64,
                                         "range": {"read_latency_p99_us": [1, 1e6], "iops": [1, 1e7]},
                                         "log": ["read_latency_p99_us", "iops"]}}}
        t0 = time.perf_counter()
        s = run_sweep(sweep, base, Path(d) / "out", progress=False)
        wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"configs": s["n_configs"], "requests": m, "wall_s": wall, "peak_rss_mib": peak}))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=4096, help="configurations N (default 4096)")
    ap.add_argument("--requests", type=int, default=10000, help="requests M per design (default 10000)")
    ap.add_argument("--chunk", type=int, default=2048, help="designs per sweep chunk (default 2048)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats, median (default 3)")
    ap.add_argument("--rss-configs", type=int, nargs=2, default=[2304, 18432],
                    help="the two sweep sizes of the peak-RSS check (default 2304 18432)")
    ap.add_argument("--rss-requests", type=int, default=2000, help="requests per design of the RSS check")
    ap.add_argument("--rss-child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None,
                    help="JSON path (default bench/results/engine_sweep_<platform>.json)")
    a = ap.parse_args(argv)
    if a.rss_child is not None:
        rss_child(a.rss_child, a.requests, a.chunk)
        return {}
    dev = jax.devices()[0]
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "trace.csv"
        write_trace(a.requests, trace)
        base = base_cfg(trace)
        cols = sweep_columns(a.configs, trace)
        loops, sweeps = [], []
        for r in range(a.repeats):  # interleaved, alternating which goes first
            order = ("loop", "sweep") if r % 2 == 0 else ("sweep", "loop")
            for which in order:
                if which == "loop":
                    loops.append(time_loop(bench_engine.columns(a.configs), a.requests))
                else:
                    sweeps.append(time_sweep(cols, base, a.requests, a.chunk))
    loop_s = float(np.median([x["run_s"] for x in loops]))
    sweep_s = float(np.median([x["run_s"] for x in sweeps]))
    n, m = a.configs, a.requests
    df = sweeps[-1]["table"]
    lat = df["latency_mean_us"].to_numpy() * 1e-6 * df["requests"].to_numpy()
    ref = loops[-1]["lat_sum"].sum(1)
    diff = float(np.max(np.abs(lat - ref) / np.maximum(np.abs(ref), 1e-30)))
    rows = [
        {"runner": "cpu_loop", "configs": n, "requests": m, "compile_s": loops[0]["compile_s"],
         "run_s": loop_s, "runs_s": [x["run_s"] for x in loops], "config_requests_per_s": n * m / loop_s},
        {"runner": "engine_sweep", "configs": n, "requests": m, "chunk": a.chunk,
         "compile_s": sweeps[0]["compile_s"], "run_s": sweep_s, "runs_s": [x["run_s"] for x in sweeps],
         "config_requests_per_s": n * m / sweep_s, "share_of_cpu_loop": loop_s / sweep_s,
         "max_rel_diff_vs_cpu_loop": diff},
    ]
    rss = [rss_of(k, a.rss_requests, a.chunk) for k in a.rss_configs]
    res = {"benchmark": "engine_sweep", "machine": machine(),
           "device": {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count()},
           "sizes": {"configs": n, "requests": m, "chunk": a.chunk, "repeats": a.repeats,
                     "layout": engine_params.layout(bench_engine.columns(n))._asdict(),
                     "drives": list(bench_engine.DRIVES), "queue_depths": list(bench_engine.QDS)},
           "baseline": "cpu_loop (bench.engine: one batch, one call of the compiled loop, no I/O)",
           "rows": rows, "peak_rss": rss}
    print(f"{'runner':<14}{'configs':>9}{'requests':>10}{'compile s':>11}{'run s':>9}{'config-req/s':>14}"
          f"{'share':>8}")
    for r in rows:
        share = f"{r.get('share_of_cpu_loop', 1.0):.2f}"
        print(f"{r['runner']:<14}{r['configs']:>9}{r['requests']:>10}{r['compile_s']:>11.2f}{r['run_s']:>9.2f}"
              f"{r['config_requests_per_s']:>14.3e}{share:>8}")
    for x in rss:
        print(f"reduced sweep of {x['configs']} designs x {x['requests']} requests: peak RSS "
              f"{x['peak_rss_mib']:.0f} MiB in {x['wall_s']:.1f} s")
    print(f"sweep rows vs loop: max rel diff of latency sums {diff:.1e}")
    path = Path(a.json or Path(__file__).parent / "results" / f"engine_sweep_{dev.platform}.json")
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"json: {path}")
    return res


if __name__ == "__main__":
    main()
