"""Replay a request stream through the request-level engine for a batch of configurations.

The stream comes in chunks (``ssdx.workloads.traces.Chunk``: a trace reader or a synthetic generator),
so a multi-GB trace never sits whole in memory; every chunk is padded to one length and run by one
compiled ``jit(vmap(run_chunk))`` with the requests broadcast to all configurations.  Accumulators are
added on the host in float64 chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import numpy as np

from ssdx import engine_params
from ssdx.models import engine
from ssdx.workloads.traces import Chunk

DEFAULT_CHUNK = 65_536


@dataclass
class Result:
    """Per-configuration metrics (``engine.metrics``) and, if kept, per-request latencies (s)."""

    metrics: dict[str, np.ndarray]
    latencies: np.ndarray | None = None  # (configs, requests)
    ops: np.ndarray | None = None  # (requests,)
    compile_s: float = 0.0
    run_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def compiled(lay: engine_params.Layout, keep_latency: bool):
    """The jitted, vmapped plan, init and chunk functions for a layout (shared by ssdx and bench/)."""
    plan = jax.jit(jax.vmap(partial(engine.plan, lay=lay)))
    init = jax.jit(jax.vmap(partial(engine.init, lay=lay)))
    run = jax.jit(jax.vmap(partial(engine.run_chunk, lay=lay, keep_latency=keep_latency),
                           in_axes=(0, 0, None)))
    return plan, init, run


def replay(trees: tuple, chunks: Iterable[Chunk], chunk_len: int = DEFAULT_CHUNK, keep_latency: bool = False,
           progress: bool = False, total: int | None = None, desc: str = "replay") -> Result:
    """Run every chunk of ``chunks`` through every configuration of ``trees`` = (drive, workload, engine
    params, layout) from ``engine_params.build``; see :class:`Result`."""
    import time

    from ssdx.progress import bar as progress_bar

    drive, workload, eng, lay = trees
    dtype = np.asarray(drive.user_bytes).dtype
    plan_f, init_f, run_f = compiled(lay, keep_latency)
    p = plan_f(drive, workload, eng)
    state = init_f(p)
    sums: dict[str, np.ndarray] = {}
    elapsed = None
    lats, ops = [], []
    prev_t: float | None = None
    first_t: float | None = None
    compile_s = run_s = 0.0
    bar = progress_bar(total, desc, unit="req", enabled=progress)
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        for lo in range(0, len(chunk), chunk_len):
            sl = slice(lo, lo + chunk_len)
            if first_t is None and not np.isnan(chunk.time_s[lo]):
                first_t = float(chunk.time_s[lo])
            req, prev_t = engine.requests(chunk.op[sl], chunk.offset[sl], chunk.size[sl], chunk.time_s[sl],
                                          prev_t, chunk_len, dtype)
            t0 = time.perf_counter()
            if not compile_s:
                run_f.lower(p, state, req).compile()
                compile_s = time.perf_counter() - t0
                t0 = time.perf_counter()
            state, acc, lat = jax.block_until_ready(run_f(p, state, req))
            run_s += time.perf_counter() - t0
            acc = {k: np.asarray(v, np.float64) for k, v in acc._asdict().items()}
            el = acc.pop("elapsed") - acc.pop("elapsed_c")
            elapsed = el if elapsed is None else elapsed + el
            for k, v in acc.items():
                sums[k] = v if k not in sums else sums[k] + v
            n = int(np.sum(np.asarray(req.valid)))
            if keep_latency:
                lats.append(np.asarray(lat)[:, :n])
                ops.append(np.asarray(req.op)[:n])
            bar.update(n)
    bar.close()
    if elapsed is None:
        raise ValueError("the request stream is empty")
    makespan = elapsed + np.asarray(state.last_done, np.float64)
    if first_t is not None and prev_t is not None:  # timed stream: the absolute clock from float64 times
        open_loop = np.asarray(eng.open_loop) > 0.5
        timed = (prev_t - first_t) / np.asarray(eng.time_scale, np.float64) \
            + np.asarray(state.last_done, np.float64) - np.asarray(state.last_arrival, np.float64)
        makespan = np.where(open_loop, timed, makespan)
    mask = np.asarray(p.mask)
    die_end = np.where(mask, np.asarray(state.die_free, np.float64), -np.inf).max((1, 2))
    out = engine.metrics(sums, makespan, mask, busy_end_s=elapsed + die_end)
    return Result(metrics=out, latencies=np.concatenate(lats, 1) if keep_latency else None,
                  ops=np.concatenate(ops) if keep_latency else None, compile_s=compile_s, run_s=run_s,
                  extra={"sums": sums})


def replay_config(cfg: Mapping[str, Any], chunk: Chunk, n: int = 1, dtype=np.float32, **kw) -> Result:
    """Replay one in-memory ``chunk`` through the configuration ``cfg`` (drive, nand, workload, engine)."""
    _, trees = engine_params.build_from_config(cfg, n=n, dtype=dtype)
    return replay(trees, [chunk], chunk_len=min(DEFAULT_CHUNK, max(len(chunk), 1)), **kw)
