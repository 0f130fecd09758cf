"""Speed of the request-level engine with its optional mechanisms on, against the defaults.

The batch and the stream are ``bench/engine.py``'s (four drive presets of different shapes × queue depths
1-32; 70 % reads of 4 KiB, 16 KiB and 128 KiB over 50 GB, closed loop), run through the back end
``engine.backend=auto`` picks here (the compiled CPU loop on a CPU, ``ssdx.models.engine.cpu``; the
batched scan on a GPU), once per case:

* ``default`` — today's engine (``engine.suspension=program_erase`` at no cost);
* ``suspension_none`` — reads wait for the program or erase in progress (what MQSim computes);
* ``suspension_erase_mqsim`` — MQSim's default drive: reads suspend erases only, with MQSim's
  ``Suspend_Erase_Time`` (700 µs) and ``Preferred_suspend_erase_time_for_read`` (700 µs);
* ``suspension_program_erase_mqsim`` — programs and erases suspended with MQSim's overheads (100 µs /
  700 µs) and thresholds (100 µs / 700 µs);
* ``map_cache_direct``, ``map_cache_lru`` — the mapping table in flash on every drive, 2 MiB of
  translation pages cached direct-mapped / LRU, dirty pages written back (MQSim's CMT);
* ``buffer_dram_mqsim`` — the write buffer with MQSim's DRAM timing (its code defaults: 800 MT/s,
  4-byte transfers, 8 KiB rows, 13 ns tRCD/tCL/tRP);
* ``mqsim_like`` — ``map_cache_lru`` with ``suspension_erase_mqsim`` and ``buffer_dram_mqsim``.

Each row: ``run_s`` (median of ``--repeats``), configuration-requests per second, and what the
mechanism did to the batch (mean read and write latency, reads that suspended a program / an erase,
mapping-cache misses and write-backs), so a row that is fast because the mechanism never fired shows it.

Usage: ``python -m bench.engine_mechanisms [--configs N] [--requests M] [--repeats R] [--backend B]
[--json FILE]`` (default ``bench/results/engine_mechanisms.json``).  ``--backend jax`` times the batched
scan on any device (on a CPU, what a GPU runs, at CPU speed).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bench import engine as bench_engine
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import model as engine
from ssdx.report.machine import machine

CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "suspension_none": {"suspension": "none"},
    "suspension_erase_mqsim": {"suspension": "erase", "suspend_program_us": 100, "suspend_erase_us": 700,
                               "suspend_min_program_us": 100, "suspend_min_erase_us": 700},
    "suspension_program_erase_mqsim": {"suspension": "program_erase", "suspend_program_us": 100,
                                       "suspend_erase_us": 700, "suspend_min_program_us": 100,
                                       "suspend_min_erase_us": 700},
    "map_cache_direct": {"map_cache": "direct"},
    "map_cache_lru": {"map_cache": "lru"},
    "buffer_dram_mqsim": {"buffer_dram_mts": 800},
    "mqsim_like": {"map_cache": "lru", "suspension": "erase", "suspend_program_us": 100,
                   "suspend_erase_us": 700, "suspend_min_program_us": 100, "suspend_min_erase_us": 700,
                   "buffer_dram_mts": 800},
}


def case_columns(n: int, options: dict[str, Any]) -> dict[str, np.ndarray]:
    """``bench/engine.py``'s ``n`` configurations with the engine options ``options`` set."""
    cols = bench_engine.columns(n)
    for k, v in options.items():
        cols[f"engine.{k}"] = np.full(n, v)
    return cols


def time_case(cols: dict, m: int, repeats: int, backend: str = "auto") -> dict[str, Any]:
    run_f, p, s0, req = bench_engine._prepare(cols, m, engine_backends.select({"backend": backend}))
    compile_s = run_f.compile(p, s0, req)
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(run_f(p, s0, req))
        times.append(time.perf_counter() - t0)
    n = len(next(iter(cols.values())))
    acc = out[1]
    count = engine.to_host(acc.count, None)[:n]
    lat = engine.to_host(acc.lat_sum, None)[:n]
    sus = engine.to_host(acc.suspensions, None)[:n]
    run_s = float(np.median(times))
    return {"backend": run_f.backend, "compile_s": compile_s, "run_s": run_s,
            "config_requests_per_s": n * m / run_s,
            "read_latency_mean_us": float(1e6 * lat[:, 0].sum() / max(count[:, 0].sum(), 1)),
            "write_latency_mean_us": float(1e6 * lat[:, 1].sum() / max(count[:, 1].sum(), 1)),
            "reads_suspending_program": float(sus[:, 0].sum()),
            "reads_suspending_erase": float(sus[:, 1].sum()),
            "map_misses": float(engine.to_host(acc.map_misses, None)[:n].sum()),
            "map_writebacks": float(engine.to_host(acc.map_writebacks, None)[:n].sum())}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=2000, help="configurations N (default 2000)")
    ap.add_argument("--requests", type=int, default=10000, help="requests M per config (default 10000)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median reported (default 3)")
    ap.add_argument("--backend", default="auto", choices=("auto", "jax", "cpu", "cuda"),
                    help="engine.backend (default auto; jax: the batched scan a GPU runs, on any device)")
    ap.add_argument("--json", default=None, help="JSON path (default bench/results/engine_mechanisms.json)")
    a = ap.parse_args(argv)
    rows = []
    for name, options in CASES.items():
        r = time_case(case_columns(a.configs, options), a.requests, a.repeats, a.backend)
        rows.append({"case": name, "options": options, "configs": a.configs, "requests": a.requests, **r})
    base = rows[0]["config_requests_per_s"]
    for r in rows:
        r["speed_vs_default"] = r["config_requests_per_s"] / base
    dev = jax.devices()[0]
    res = {"benchmark": "engine_mechanisms", "machine": machine(),
           "device": {"platform": dev.platform, "kind": dev.device_kind, "count": jax.device_count()},
           "sizes": {"configs": a.configs, "requests": a.requests, "drives": list(bench_engine.DRIVES),
                     "queue_depths": list(bench_engine.QDS)},
           "rows": rows}
    print(f"{'case':<32}{'backend':>8}{'run s':>9}{'config-req/s':>14}{'vs default':>11}{'read us':>9}"
          f"{'write us':>9}"
          f"{'susp P':>9}{'susp E':>8}{'misses':>10}{'wb':>9}")
    for r in rows:
        print(f"{r['case']:<32}{r['backend']:>8}{r['run_s']:>9.3f}{r['config_requests_per_s']:>14.3e}"
              f"{r['speed_vs_default']:>10.2f}x{r['read_latency_mean_us']:>9.1f}"
              f"{r['write_latency_mean_us']:>9.1f}"
              f"{r['reads_suspending_program']:>9.0f}{r['reads_suspending_erase']:>8.0f}"
              f"{r['map_misses']:>10.0f}{r['map_writebacks']:>9.0f}")
    path = Path(a.json or Path(__file__).with_name("results") / "engine_mechanisms.json")
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"json: {path}")
    return res


if __name__ == "__main__":
    main()
