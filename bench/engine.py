"""Benchmark of the request-level engine (``ssdx.models.engine.model``): configuration-requests per second.

What is timed
-------------
``jax_batch``: the compiled batched ``engine.run_chunk`` that ``ssdx.models.engine.replay`` runs
(``replay.prepare``:
configurations on the last axis, split over the local devices when there are several), over ``N``
configurations sharing one stream of ``M`` requests (70 % reads; 4 KiB, 16 KiB and 128 KiB commands;
uniform random offsets over 50 GB; closed loop).  The configurations cycle through four drive presets
of different shapes (SATA 16 dies, PCIe 3.0 DRAM-less 16 dies, PCIe 3.0 32 dies, PCIe 4.0 32 dies; the
layout is padded to the largest) and queue depths 1-32.  ``compile_s`` (lower + XLA compile, ahead of
time) is kept apart from ``run_s``, the median of ``--repeats`` calls, each ending in
``jax.block_until_ready``.  Throughput: ``N·M / run_s`` configuration-requests per second.

``cpu_loop`` (on a CPU only): the same batch through ``ssdx.models.engine.cpu``, the compiled
per-configuration loop that ``ssdx.models.engine.replay`` runs on a CPU (``engine.backend=auto``):
configurations in parallel over the cores, a request visiting only the dies it uses.  ``compile_s`` is
Numba's compile (or its on-disk cache load) on a one-configuration call; ``max_rel_diff_vs_jax_batch``
compares its latency sums with the ``jax_batch`` row's (float32 against float64 rounding).

``cuda_loop`` (where Numba sees a CUDA GPU): the same per-configuration loop compiled as a CUDA kernel by
``ssdx.models.engine.cuda``, one GPU thread per configuration (``--cuda-threads`` per block), through
``replay.prepare(backend="cuda")``; ``run_s`` includes copying the state to the GPU and back (as a replay
chunk does), ``compile_s`` is Numba's CUDA compile on a one-configuration call.

Baseline (per-configuration loop, named)
----------------------------------------
``jax_single``: the same compiled engine on one configuration per call, ``--single-configs`` of them back
to back (JAX used the way one-configuration simulators are used), extrapolated per
configuration-request.  Its results equal the batch's to float32 rounding (checked, ``max_rel_diff``).

Reference point (not run here): a single-threaded C++ discrete-event SSD simulator processes on the
order of 10^4-10^5 requests per second for one configuration.

Usage: ``python -m bench.engine [--configs N] [--requests M] [--repeats R] [--single-configs S]
[--cuda-threads T] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for the CUDA kernel
import jax
import numpy as np

from ssdx import params, presets
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.models.engine.replay import prepare
from ssdx.report.machine import machine
from ssdx.workloads import synthetic

DRIVES = ("sata_tlc_500", "generic_tlc_1tb", "sn8e_1920", "aldrin_pro_2tb")
QDS = (1, 2, 4, 8, 16, 32)
ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}


def columns(n: int) -> dict[str, np.ndarray]:
    """``n`` configurations: drive presets x queue depths, cycled."""
    rows = []
    for i in range(n):
        d = presets.drive(DRIVES[i % len(DRIVES)])
        w = {"pattern": "random", "block_kib": 4, "queue_depth": QDS[(i // len(DRIVES)) % len(QDS)],
             "prefill_fraction": 0.5, "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0}
        rows.append(params.columns_from_config(d, w) | engine_params.columns(ENGINE))
    return params.concat_columns(rows)


def stream(m: int, seed: int = 0):
    return synthetic.fio_like(m, 0.7, {4096: 0.6, 16384: 0.25, 131072: 0.15}, span_bytes=50e9, seed=seed)


def _prepare(cols: dict, m: int, backend: str = "jax"):
    run_f, p, s0, _ = prepare(engine_params.build(cols), backend=backend)
    ch = stream(m)
    req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, m)
    return run_f, p, s0, req


def time_batch(cols: dict, m: int, repeats: int, backend: str = "jax") -> dict[str, Any]:
    run_f, p, s0, req = _prepare(cols, m, backend)
    compile_s = run_f.compile(p, s0, req)
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(run_f(p, s0, req))
        times.append(time.perf_counter() - t0)
    n = len(next(iter(cols.values())))
    run_s = float(np.median(times))
    return {"compile_s": compile_s, "run_s": run_s, "config_requests_per_s": n * m / run_s,
            "lat_sum": engine.to_host(out[1].lat_sum, None)[:n]}


def time_single(cols: dict, m: int, k: int) -> dict[str, Any]:
    """One configuration per call, ``k`` configurations back to back, each with its own (unpadded)
    layout, as a one-configuration simulator would size it; compilation is not timed."""
    sums, t_total = [], 0.0
    for i in range(k):
        run_f, p, s0, req = _prepare({key: v[i:i + 1] for key, v in cols.items()}, m)
        run_f.compile(p, s0, req)
        t0 = time.perf_counter()
        out = jax.block_until_ready(run_f(p, s0, req))
        t_total += time.perf_counter() - t0
        sums.append(engine.to_host(out[1].lat_sum, None)[0])
    return {"run_s": t_total, "config_requests_per_s": k * m / t_total, "lat_sum": np.stack(sums)}


def _cuda_ready() -> bool:
    """A real CUDA GPU (not Numba's simulator) for the ``cuda_loop`` row."""
    if jax.default_backend() != "gpu":
        return False
    why = engine_backends.cuda_unavailable()
    if why is not None:
        print(f"no cuda_loop row: {why}", file=sys.stderr)
    return why is None and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "0"


def _loop_row(name: str, res: dict, batch: dict, single: dict, configs: int, **extra) -> dict[str, Any]:
    """A per-configuration-loop row, with its speed-ups and its difference from the ``jax_batch`` row."""
    diff = np.abs(res["lat_sum"] - batch["lat_sum"]) / np.maximum(np.abs(batch["lat_sum"]), 1e-30)
    rate = res["config_requests_per_s"]
    return {"engine": name, "configs": configs, "compile_s": res["compile_s"], "run_s": res["run_s"],
            "config_requests_per_s": rate, "speedup_vs_jax_single": rate / single["config_requests_per_s"],
            "speedup_vs_jax_batch": rate / batch["config_requests_per_s"],
            "max_rel_diff_vs_jax_batch": float(np.max(diff)), **extra}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=1000, help="configurations N (default 1000)")
    ap.add_argument("--requests", type=int, default=10000, help="requests M per config (default 10000)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median reported (default 3)")
    ap.add_argument("--single-configs", type=int, default=8, help="jax_single sample (default 8)")
    ap.add_argument("--cuda-threads", type=int, default=None, help="cuda_loop threads per block")
    ap.add_argument("--json", default=None, help="JSON path (default bench/engine_<platform>.json)")
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    cols = columns(a.configs)
    lay = engine_params.layout(cols)
    batch = time_batch(cols, a.requests, a.repeats)
    loop = time_batch(cols, a.requests, a.repeats, "cpu") if engine_backends.select({}) == "cpu" else None
    gpu_loop = None
    if _cuda_ready():
        from ssdx.models.engine import cuda as engine_cuda
        engine_cuda.THREADS = a.cuda_threads or engine_cuda.THREADS
        gpu_loop = time_batch(cols, a.requests, a.repeats, "cuda")
    k = min(a.single_configs, a.configs)
    single = time_single(cols, a.requests, k)
    ref = batch["lat_sum"][:k]
    max_rel = float(np.max(np.abs(single["lat_sum"] - ref) / np.maximum(np.abs(ref), 1e-30)))
    rows = [
        {"engine": "jax_batch", "configs": a.configs, "compile_s": batch["compile_s"],
         "run_s": batch["run_s"],
         "config_requests_per_s": batch["config_requests_per_s"], "speedup_vs_jax_single":
             batch["config_requests_per_s"] / single["config_requests_per_s"]},
        {"engine": "jax_single", "configs": k, "compile_s": None, "run_s": single["run_s"],
         "config_requests_per_s": single["config_requests_per_s"], "speedup_vs_jax_single": 1.0,
         "max_rel_diff_vs_batch": max_rel},
    ]
    if loop is not None:
        rows.insert(1, _loop_row("cpu_loop", loop, batch, single, a.configs))
    if gpu_loop is not None:
        rows.insert(1, _loop_row("cuda_loop", gpu_loop, batch, single, a.configs,
                                 threads_per_block=engine_cuda.THREADS))
    res = {
        "benchmark": "engine", "machine": machine(),
        "device": {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count()},
        "sizes": {"configs": a.configs, "requests": a.requests, "layout": lay._asdict(),
                  "drives": list(DRIVES), "queue_depths": list(QDS)},
        "baseline": "jax_single (one configuration per call)", "rows": rows,
        "reference": "single-threaded C++ discrete-event SSD simulators: ~1e4-1e5 requests/s",
    }
    print(f"{'engine':<12}{'configs':>9}{'compile s':>11}{'run s':>10}{'config-req/s':>15}{'speed-up':>10}")
    for r in rows:
        c = "" if r["compile_s"] is None else f"{r['compile_s']:.2f}"
        print(f"{r['engine']:<12}{r['configs']:>9}{c:>11}{r['run_s']:>10.3f}"
              f"{r['config_requests_per_s']:>15.3e}{r['speedup_vs_jax_single']:>9.1f}x")
    print(f"device {dev.platform} ({dev.device_kind}); {a.requests} requests; layout {lay}; "
          f"jax_single vs batch max rel diff {max_rel:.1e}")
    path = Path(a.json or Path(__file__).with_name(f"engine_{dev.platform}.json"))
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"json: {path}")
    return res


if __name__ == "__main__":
    main()
