"""Benchmarks of ssdx's models, each a module run as ``python -m bench.NAME`` from the repository root.

Each writes a JSON record (machine, sizes, compile time apart from run time) under ``bench/results/``
or where ``--json`` says; ``tests/test_bench_*.py`` run them at tiny sizes and import their baselines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def timed_calls(fn: Callable[[Any], Any], x: Any, reps: int) -> tuple[float, float, float]:
    """``(least, median, first)`` wall seconds of calls of the jitted ``fn`` on ``x``: the first call
    (compilation and a warm-up) apart, then ``reps`` calls, each waited for."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(x))
    first = time.perf_counter() - t0
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        ts.append(time.perf_counter() - t0)
    return min(ts), float(np.median(ts)), first
