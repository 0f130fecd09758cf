"""Chunked ``jit(vmap(model))`` runner, resumable, on local devices or Ray (``ssdx.sweep.executors``).

Configurations are processed in chunks of ``chunk_size``; the last chunk is padded by repeating its
final row so every chunk has the same shape and the model compiles once.  Each configuration's
result depends only on its own parameters, so results are identical whatever the chunk size or the
order in which chunks run (tested).  In the fluid engine no array shape depends on a parameter (die
count, capacity and NAND type only scale rates and capacities), so nothing needs masks; the one
static choice is whether the step must split at idle gaps (about 7x the work per step on CPU), so
configurations are grouped by it and each group runs the kernel specialised for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import pyarrow as pa

from ssdx import params
from ssdx.models import fluid
from ssdx.sweep import store


def fluid_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory of the per-configuration function a sweep vmaps, given the static ``idle_gaps`` flag:
    (Drive, Workload) -> dict of scalars."""
    return lambda idle_gaps: partial(fluid.metrics, n_steps=n_steps, idle_gaps=idle_gaps)


def thermal_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory for the coupled write/power/thermal model: (Drive, Workload, Power, Thermal) -> scalars."""
    from ssdx.models import coupled

    return lambda _flag: partial(coupled.metrics, n_steps=n_steps)


def idle_gap_groups(workload) -> list[tuple[bool, np.ndarray]]:
    """``(idle_gaps, indices)`` for the configurations without and with idle gaps (non-empty groups)."""
    has = (np.asarray(workload.burst_bytes) > 0) & (np.asarray(workload.idle_s) > 0)
    return [(flag, np.flatnonzero(has == flag)) for flag in (False, True) if np.any(has == flag)]


def _take(tree, idx: np.ndarray):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[idx], tree)


class Chunk(NamedTuple):
    """Chunk ``index`` of a sweep: configurations ``idx`` (row numbers), all with the static ``flag``."""

    index: int
    flag: Any
    idx: np.ndarray


def plan(groups: Sequence[tuple[Any, np.ndarray]], chunk_size: int) -> list[Chunk]:
    """Chunks of at most ``chunk_size`` cut within each group, numbered in group order."""
    cuts = [(flag, idx[lo:lo + chunk_size]) for flag, idx in groups for lo in range(0, len(idx), chunk_size)]
    return [Chunk(i, flag, idx) for i, (flag, idx) in enumerate(cuts)]


_COMPILED: OrderedDict = OrderedDict()
_COMPILED_LOCK = threading.Lock()


def _compiled(model: Callable[[Any], Callable], flag: Any, token: str, inputs: tuple,
              device) -> tuple[Callable, float]:
    """``jit(vmap(model(flag)))`` compiled ahead of time for the chunk shape, kept per (sweep run, flag,
    device) so a worker compiles it once per run; returns it and the seconds spent compiling (0 when
    cached)."""
    key = (token, flag, str(device))
    with _COMPILED_LOCK:
        fn = _COMPILED.get(key)
    if fn is not None:
        return fn, 0.0
    t0 = time.perf_counter()
    fn = jax.jit(jax.vmap(model(flag))).lower(*inputs).compile()
    seconds = time.perf_counter() - t0
    with _COMPILED_LOCK:
        _COMPILED[key] = fn
        while len(_COMPILED) > 16:
            _COMPILED.popitem(last=False)
    return fn, seconds


def chunk_job(model: Callable[[Any], Callable], flag: Any, inputs: tuple, token: str,
              device=None) -> dict[str, np.ndarray]:
    """Run one padded chunk: ``jit(vmap(model(flag)))(*inputs)`` on ``device`` (default: JAX's).

    A module-level function, so a Ray worker runs exactly what this process runs.  The result holds the
    metrics and ``_compile_s``, the compile time this call spent."""
    if device is not None:
        inputs = jax.device_put(inputs, device)
    fn, compile_s = _compiled(model, flag, token, inputs, device)
    out = {k: np.asarray(v) for k, v in jax.device_get(fn(*inputs)).items()}
    out["_compile_s"] = np.asarray(compile_s)
    return out


def run(
    cols: Mapping[str, np.ndarray],
    model: Callable[[Any], Callable],
    chunk_size: int,
    out_dir: Path | None = None,
    dtype=np.float32,
    progress: bool = True,
    order: Sequence[int] | None = None,
    desc: str = "sweep",
    trees: tuple | None = None,
    groups: list[tuple[Any, np.ndarray]] | None = None,
    executor=None,
    definition: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Run ``model(flag)`` over every configuration in ``cols``; one row per configuration.

    Chunks are cut within each static-flag group (default: :func:`idle_gap_groups`, configurations
    without idle gaps first) and numbered in that order.  The table holds ``config_id``, every column
    of ``cols`` and every metric.  ``trees`` are the stacked parameter pytrees ``model(flag)`` takes
    (default: ``params.build(cols)``, i.e. (Drive, Workload)).

    ``executor`` (:mod:`ssdx.sweep.executors`; default: every local device) runs the chunks.  With
    ``out_dir`` each chunk is checkpointed atomically to ``out_dir/chunks/`` as it finishes, and a run
    on a directory holding the same sweep (``definition`` + columns, see :func:`store.fingerprint`)
    skips the chunks already there; a different sweep there is refused.  The merged table is written
    to ``out_dir/results.parquet``.  ``order`` permutes the chunk submission order (for tests).
    """
    from ssdx.progress import bar as progress_bar
    from ssdx.sweep import executors

    n = len(next(iter(cols.values())))
    if trees is None:
        trees = params.build(cols, dtype=dtype)
    if groups is None:
        groups = idle_gap_groups(trees[1])
    chunk_size = max(1, min(int(chunk_size), n))
    chunks = plan(groups, chunk_size)
    n_chunks = len(chunks)
    order = list(range(n_chunks)) if order is None else list(order)
    if sorted(order) != list(range(n_chunks)):
        raise ValueError(f"order must be a permutation of range({n_chunks})")
    executor = executor if executor is not None else executors.LocalExecutor()
    pieces: dict[int, pa.Table] = {}
    if out_dir is not None:
        out_dir = Path(out_dir)
        defn = {"model": getattr(model, "__qualname__", type(model).__name__), **dict(definition or {}),
                "chunk_size": chunk_size, "dtype": np.dtype(dtype).name}
        store.open_run(out_dir, store.fingerprint(cols, defn))
        for ch in chunks:
            done = store.finished(out_dir, ch.index, ch.idx)
            if done is not None:
                pieces[ch.index] = done
    resumed = len(pieces)
    resumed_configs = sum(len(chunks[i].idx) for i in pieces)
    token = uuid.uuid4().hex
    jobs = []
    for c in order:
        ch = chunks[c]
        if ch.index in pieces:
            continue
        padded = np.concatenate([ch.idx, np.full(chunk_size - len(ch.idx), ch.idx[-1])])  # one shape
        jobs.append(executors.Job(ch.index, chunk_job, (model, ch.flag, _take(trees, padded), token),
                                  ch.idx.astype(np.int64)))
    bar = progress_bar(n, desc, enabled=progress, initial=resumed_configs)
    # Checkpoints (config_id + metrics; the configuration columns follow from the fingerprinted ``cols``)
    # are written by one background thread while the next chunk computes.
    writer = None if out_dir is None else ThreadPoolExecutor(max_workers=1, thread_name_prefix="ssdx-store")
    writes = []
    t0 = time.perf_counter()
    compile_s = 0.0
    try:
        for job, res, info in executor.map(jobs):
            res = dict(res)
            compile_s += float(res.pop("_compile_s", 0.0))
            idx = chunks[job.index].idx
            data = {"config_id": idx.astype(np.int64)}
            data.update({k: np.asarray(v, dtype=np.float64)[:len(idx)] for k, v in res.items()})
            table = pa.table(data)
            if writer is not None:
                writes.append(writer.submit(store.write_atomic, store.with_info(table, info),
                                            store.chunk_path(out_dir, job.index), "none"))
            pieces[job.index] = table
            bar.update(len(idx))
    finally:
        bar.close()
        if writer is not None:
            writer.shutdown(wait=True)
    for w in writes:
        w.result()  # a failed checkpoint write surfaces here
    elapsed = time.perf_counter() - t0
    table = store.assemble(cols, [pieces[i] for i in range(n_chunks)])
    if out_dir is not None:
        store.write_atomic(table, out_dir / "results.parquet")
    return table.replace_schema_metadata({"elapsed_s": f"{elapsed:.3f}", "compile_s": f"{compile_s:.3f}",
                                         "chunks": str(n_chunks),
                                         "resumed_chunks": str(resumed),
                                         "resumed_configs": str(resumed_configs), "executor": executor.name,
                                         "workers": str(executor.workers)})
