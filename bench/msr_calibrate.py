"""Calibration of the MSR volume generators' LRU reuse (``ssdx.workloads.msr``) to published miss ratios.

Target: [S3F] (Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023, artifact
github.com/Thesys-lab/sosp23-s3fifo, ``result/cachesim/MSR/<vol>.IQI.bin.txt``): LRU miss ratio by
request count of the whole trace, cold misses included, at caches of 0.1 … 80 % of the distinct offsets
(``msr.S3F_LRU``), for prxy_0, proj_0, hm_0 and prxy_1.

What is fitted: each volume's ``lru_curve``, the survival ``P(d >= C)`` of the stack depth of a run's
first request at the eight published cache sizes.  Without continuations the generated miss ratio would
equal it; continuations (which revisit the next object and so have their own, longer reuse) and cold
misses move the generated curve, so the points are corrected by fixed-point iteration,
``P_i <- P_i · published_i / generated_i`` (then made non-increasing), measuring the generated curve

1. in steady state (``msr.steady_depths``: exact LRU distances of the stream replayed after the
   generator's initial stack) on ``--steady`` requests, ``--steady-iters`` times; then
2. for prxy_0, proj_0 and hm_0, on the whole stream at the published request count, replayed from an
   empty cache with ``lru.miss_ratio`` (cold misses included, as [S3F] counts them), ``--full-iters``
   times.  prxy_1 (168.6 M requests) is fitted in steady state only.

Printed and written (JSON, with machine information): published vs generated miss ratio at every
published size, before and after, and the fitted points, to be copied by hand into the presets.

Usage: ``python -m bench.msr_calibrate [--json bench/results/msr_calibration.json] [--steady N]``
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import time
from pathlib import Path

import numpy as np

from ssdx.report.machine import machine
from ssdx.workloads import lru, msr

RESULTS = Path(__file__).resolve().parent / "results"
FULL = ("prxy_0", "proj_0", "hm_0")  # generated whole at the published length


def sizes(v: msr.MsrVolume) -> list[int]:
    """[S3F]'s cache sizes, objects: ``int(fraction · keys)``."""
    return [int(f * v.keys) for f in msr.S3F_FRACTIONS]


def steady(v: msr.MsrVolume, n: int, seed: int) -> np.ndarray:
    d = msr.steady_depths(v.name, n, seed)
    return np.asarray([(d >= c).mean() for c in sizes(v)])


def full(v: msr.MsrVolume, seed: int) -> np.ndarray:
    c = msr.generate(v.name, v.requests, seed=seed, timed=False)
    return lru.miss_ratio(c.offset, sizes(v))


def update(v: msr.MsrVolume, got: np.ndarray, want: np.ndarray) -> msr.MsrVolume:
    """One fixed-point step on the curve's probabilities; the preset is replaced in ``msr.VOLUMES``."""
    p = np.asarray([q for _, q in v.lru_curve]) * want / np.maximum(got, 1e-9)
    p = np.minimum.accumulate(np.clip(p, 1e-6, 1.0))
    nv = dataclasses.replace(v, lru_curve=tuple(zip(msr.S3F_FRACTIONS, (round(float(q), 4) for q in p))))
    msr.VOLUMES[v.name] = nv
    return nv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=str(RESULTS / "msr_calibration.json"))
    ap.add_argument("--steady", type=int, default=3_000_000, help="requests per steady-state measurement")
    ap.add_argument("--steady-iters", type=int, default=6)
    ap.add_argument("--full-iters", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--volumes", nargs="*", default=list(msr.S3F_LRU), help="volumes to fit (default: all)")
    a = ap.parse_args()
    t_start = time.perf_counter()
    result: dict = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    "machine": machine(), "source": "[S3F] Thesys-lab/sosp23-s3fifo result/cachesim/MSR",
                    "fractions": list(msr.S3F_FRACTIONS),
                    "args": {k: v for k, v in vars(a).items() if k != "json"}, "volumes": {}}
    for name in a.volumes:
        pub = msr.S3F_LRU[name]
        v = msr.volume(name)
        want = np.asarray(pub)
        t0 = time.perf_counter()
        before = {"curve": [q for _, q in v.lru_curve], "steady": steady(v, a.steady, a.seed).tolist()}
        for _ in range(a.steady_iters):
            v = update(v, steady(v, a.steady, a.seed), want)
        if name in FULL:
            for _ in range(a.full_iters):
                v = update(v, full(v, a.seed), want)
        st = steady(v, a.steady, a.seed + 1)          # checked on other seeds than the fit's
        fu = full(v, a.seed + 1) if name in FULL else None
        got = fu if fu is not None else st
        result["volumes"][name] = {
            "requests": v.requests, "keys": v.keys, "cold_share": v.keys / v.requests,
            "cache_objects": sizes(v), "published": pub, "before": before,
            "fitted_curve": [q for _, q in v.lru_curve],
            "generated_full": None if fu is None else fu.tolist(), "generated_steady": st.tolist(),
            "max_abs_error": float(np.abs(got - want).max()), "seconds": time.perf_counter() - t0}
        print(f"\n{name}: {v.requests:,} requests, {v.keys:,} keys (cold share {v.keys / v.requests:.4f}); "
              f"generated {'whole, from an empty cache' if fu is not None else 'steady state'} "
              f"({time.perf_counter() - t0:.0f} s)")
        print(f"{'cache':>8} {'frac':>6} {'published':>9} {'generated':>9} {'steady':>7} {'fitted P':>8}")
        for c, f, w, g, s, q in zip(sizes(v), msr.S3F_FRACTIONS, want, got, st, v.lru_curve):
            print(f"{c:>8} {f:>6.3f} {w:>9.4f} {g:>9.4f} {s:>7.4f} {q[1]:>8.4f}")
        print(f"fitted lru_curve: _curve({', '.join(f'{q:.4f}' for _, q in v.lru_curve)})")
    result["total_seconds"] = time.perf_counter() - t_start
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
