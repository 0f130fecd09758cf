"""Chunked ``jit(vmap(model))`` runner, resumable, on local devices or Ray (``ssdx.sweep.executors``).

Configurations are processed in chunks of ``chunk_size``; the last chunk is padded by repeating its
final row so every chunk has the same shape and the model compiles once.  Each configuration's
result depends only on its own parameters, so results are identical whatever the chunk size or the
order in which chunks run (tested).  In the fluid engine no array shape depends on a parameter (die
count, capacity and NAND type only scale rates and capacities), so nothing needs masks; the one
static choice is whether the step must split at idle gaps (several times the work per step), so
configurations are grouped by it and each group runs the kernel specialised for it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
import pyarrow as pa

from ssdx.sweep import reduce as reduce_mod
from ssdx.sweep import store


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
_COMPILING: dict[tuple, threading.Lock] = {}  # keys being compiled, each with its own lock


def compile_once(key: tuple, lower: Callable[[], Any]) -> tuple[Callable, float]:
    """The compiled function cached under ``key`` (the last 16 kept; keys name the sweep run, its static
    choice and the device, so a worker compiles once per run), compiled from ``lower()`` (a lowered
    ``jax.jit``) when absent; returns it and the seconds spent compiling (0 when cached).  Threads asking
    for the same key at once compile it once: the others wait for it (their wait is not compile time)."""
    with _COMPILED_LOCK:
        fn = _COMPILED.get(key)
        if fn is None:
            pending = _COMPILING.setdefault(key, threading.Lock())
    if fn is not None:
        return fn, 0.0
    with pending:
        with _COMPILED_LOCK:
            fn = _COMPILED.get(key)
        if fn is not None:
            return fn, 0.0
        t0 = time.perf_counter()
        try:
            fn = lower().compile()
        except BaseException:
            with _COMPILED_LOCK:
                _COMPILING.pop(key, None)
            raise
        seconds = time.perf_counter() - t0
        with _COMPILED_LOCK:  # cached and no longer pending at once: no thread can start a second compile
            _COMPILED[key] = fn
            _COMPILING.pop(key, None)
            while len(_COMPILED) > 16:
                _COMPILED.popitem(last=False)
    return fn, seconds


def _compiled(model: Callable[[Any], Callable], flag: Any, token: str, inputs: tuple,
              device) -> tuple[Callable, float]:
    """``jit(vmap(model(flag)))`` compiled ahead of time for the chunk shape (:func:`compile_once`)."""
    return compile_once(("vmap", token, flag, str(device)),
                        lambda: jax.jit(jax.vmap(model(flag))).lower(*inputs))


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


def chunk_columns(idx: np.ndarray, res: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray],
                                                                            dict[str, Any]]:
    """A padded chunk's result as the columns of its configurations ``idx`` (``config_id`` and each metric
    in float64, the padding cut off) and its info (``compile_s``, the compile time the job spent)."""
    res = dict(res)
    compile_s = float(res.pop("_compile_s", 0.0))
    data = {"config_id": idx.astype(np.int64)}
    data.update({k: np.asarray(v, dtype=np.float64)[:len(idx)] for k, v in res.items()})
    return data, {"compile_s": compile_s}


class Outcome(NamedTuple):
    """What :func:`execute` returns: the results table and each chunk's info, in chunk order."""

    table: pa.Table
    infos: list[dict[str, Any]]
    resumed_chunks: int
    resumed_configs: int
    elapsed_s: float
    compile_s: float
    state: dict[str, Any] | None = None


def execute(cols: Mapping[str, np.ndarray], units: Sequence[np.ndarray], make_job: Callable[[int], Any],
            to_columns: Callable[[int, Any], tuple[dict[str, np.ndarray], dict[str, Any]]],
            out_dir: Path | None, definition: Mapping[str, Any], executor=None, progress: bool = True,
            desc: str = "sweep", order: Sequence[int] | None = None, reducer=None) -> Outcome:
    """Run the chunks of a sweep, checkpointed and resumable; the loop shared by every sweep kind.

    ``units[i]`` are chunk ``i``'s configuration ids; ``make_job(i)`` its :class:`executors.Job`;
    ``to_columns(i, result)`` turns a job's result into the chunk's columns (``config_id`` + metrics) and
    an info mapping (``compile_s`` is summed).  With ``out_dir``, :func:`store.open_run` checks the
    fingerprint of ``cols`` and ``definition`` (in the background on a fresh directory, before any chunk is
    written), finished chunks are read back instead of run, and each new chunk is checkpointed by a
    background thread while the next computes.  The results table is :func:`store.assemble` d; with
    ``out_dir`` it is written to ``results.parquet``, by the same background thread as the chunks arrive
    (:class:`store.ResultsStream`) when the chunks hold the ids in order, else whole at the end.

    ``reducer`` (:class:`ssdx.sweep.reduce.Reducer`) reduces each chunk's columns to a state as they
    arrive and merges the states (``Outcome.state``).  Unless its spec keeps ``all`` rows too, no row is
    held: a chunk's checkpoint is its state (:func:`store.write_state`) and ``Outcome.table`` is None, so
    memory does not grow with the number of configurations."""
    from ssdx.progress import bar as progress_bar
    from ssdx.sweep import executors

    n_units = len(units)
    order = list(range(n_units)) if order is None else list(order)
    if sorted(order) != list(range(n_units)):
        raise ValueError(f"order must be a permutation of range({n_units})")
    pieces: dict[int, pa.Table] = {}
    infos: dict[int, dict[str, Any]] = {}
    rows = reducer is None or reducer.spec["all"]
    state = None if reducer is None else reducer.empty()
    n = len(next(iter(cols.values())))
    writer = None if out_dir is None else ThreadPoolExecutor(max_workers=1, thread_name_prefix="ssdx-store")
    writes = []  # the background writer's tasks run in submission order
    config = stream = None
    ordered = out_dir is not None and rows and store.in_id_order(units, n)
    try:
        if out_dir is not None:
            out_dir = Path(out_dir)
            def start() -> None:
                store.open_run(out_dir, store.fingerprint(cols, definition))

            if store.is_fresh(out_dir):  # nothing to check: the manifest is written before any chunk
                writes.append(writer.submit(start))
            else:
                start()
            if rows:
                config = writer.submit(store.config_table, cols)
                if ordered:
                    stream = store.ResultsStream(out_dir / store.RESULTS, config.result,
                                                 [len(u) for u in units])
            for i, ids in enumerate(units):
                if rows:
                    done = store.finished(out_dir, i, ids)
                    if done is not None:
                        pieces[i], infos[i] = done, store.chunk_info(done)
                        if stream is not None:
                            writes.append(writer.submit(stream.add, i, done))
                        if reducer is not None:
                            state = reducer.merge(state, reducer.chunk({k: done.column(k).to_numpy()
                                                                        for k in done.column_names}))
                else:
                    got = store.finished_state(out_dir, i, ids)
                    if got is not None:
                        state, infos[i] = reducer.merge(state, got[0]), got[1]
        resumed = len(infos)
        resumed_configs = sum(len(units[i]) for i in infos)
        jobs = [make_job(i) for i in order if i not in infos]
        executor = executor if executor is not None else executors.LocalExecutor()
        bar = progress_bar(n, desc, enabled=progress, initial=resumed_configs)
        t0 = time.perf_counter()
        compile_s = 0.0
        try:
            for job, res, where in executor.map(jobs):
                data, info = to_columns(job.index, res)
                info = {**info, **where}
                compile_s += float(info.get("compile_s", 0.0))
                if reducer is not None:
                    st = reducer.chunk(data)
                    text = reduce_mod.dumps(st)
                    state = reducer.merge(state, reduce_mod.loads(text))  # exactly what a resume reads back
                if rows:
                    table = pa.table(data)
                    pieces[job.index] = table
                    if writer is not None:
                        writes.append(writer.submit(store.write_chunk, store.with_info(table, info),
                                                    store.chunk_path(out_dir, job.index)))
                        if stream is not None:
                            writes.append(writer.submit(stream.add, job.index, table))
                elif writer is not None:
                    writes.append(writer.submit(store.write_state, store.state_path(out_dir, job.index), text,
                                                units[job.index], info))
                infos[job.index] = info
                bar.update(len(units[job.index]))
        finally:
            bar.close()
        missing = sorted(set(range(n_units)) - set(infos))
        if missing:  # an executor must return or report every job; never write a table with rows left out
            raise RuntimeError(f"the executor returned no result for chunks {missing[:10]}")
        if stream is not None:
            writes.append(writer.submit(stream.close))
            stream = None
    finally:
        if writer is not None:
            if stream is not None:  # a failure: no partial results file is left behind
                writer.submit(stream.abort)
            writer.shutdown(wait=True)
    for w in writes:
        w.result()  # a failed checkpoint or results write surfaces here
    elapsed = time.perf_counter() - t0
    table = None
    if rows:
        table = store.assemble(cols, [pieces[i] for i in range(n_units)],
                               config=None if config is None else config.result())
        if out_dir is not None and not ordered:
            store.write_results(table, out_dir / store.RESULTS, list(cols))
    if state is not None and state["n"] != n:
        raise RuntimeError(f"the reduction states cover {state['n']} of {n} configurations")
    return Outcome(table, [infos[i] for i in range(n_units)], resumed, resumed_configs, elapsed, compile_s,
                   state)


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
    keep: Mapping[str, Any] | None = None,
) -> pa.Table | Outcome:
    """Run ``model(flag)`` over every configuration in ``cols``; one row per configuration.

    ``model`` is a model's factory (``ssdx.core.registry``: e.g. ``fluid_model(n_steps)``), ``trees`` the
    stacked parameter pytrees ``model(flag)`` takes and ``groups`` the ``(flag, row indices)`` of each
    static choice; when either is None the factory's ``inputs(cols, dtype)`` gives them (the fluid
    model's: (Drive, Workload) and its idle-gap groups, configurations without idle gaps first).  The
    runner imports no model.  Chunks are cut within each group and numbered in group order.  The table
    holds ``config_id``, every column of ``cols`` and every metric.

    ``executor`` (:mod:`ssdx.sweep.executors`; default: every local device) runs the chunks, through
    :func:`execute`: with ``out_dir`` they are checkpointed and a re-run of the same sweep (``definition``
    + columns, see :func:`store.fingerprint`) resumes.  ``order`` permutes the submission order (tests).

    ``keep`` (a parsed spec, :func:`ssdx.sweep.reduce.parse`; None: the whole table) reduces the results
    in the runner; then the :class:`Outcome` is returned (its ``state`` the merged reductions, its
    ``table`` None unless the spec keeps ``all`` rows too).
    """
    from ssdx.sweep import executors

    n = len(next(iter(cols.values())))
    if trees is None or groups is None:
        inputs = getattr(model, "inputs", None)
        if inputs is None:
            raise ValueError("runner.run needs trees and groups for a model factory without an inputs "
                             "function (ssdx.core.registry)")
        built_trees, built_groups = inputs(cols, dtype)
        trees = built_trees if trees is None else trees
        groups = built_groups if groups is None else groups
    chunk_size = max(1, min(int(chunk_size), n))
    chunks = plan(groups, chunk_size)
    token = uuid.uuid4().hex

    def make_job(i: int):
        ch = chunks[i]
        padded = np.concatenate([ch.idx, np.full(chunk_size - len(ch.idx), ch.idx[-1])])  # one shape
        args = (model, ch.flag, _take(trees, padded), token)
        return executors.Job(i, chunk_job, args, ch.idx.astype(np.int64))

    def to_columns(i: int, res: Mapping[str, np.ndarray]):
        return chunk_columns(chunks[i].idx, res)

    defn = {"model": getattr(model, "__qualname__", type(model).__name__), **dict(definition or {}),
            "chunk_size": chunk_size, "dtype": np.dtype(dtype).name}
    reducer = None
    if keep is not None:
        reducer = reduce_mod.Reducer(keep, cols)
        defn["keep"] = dict(keep)
    executor = executor if executor is not None else executors.LocalExecutor()
    out = execute(cols, [ch.idx for ch in chunks], make_job, to_columns, out_dir, defn, executor, progress,
                  desc, order, reducer)
    if keep is not None:
        return out
    return out.table.replace_schema_metadata({
        "elapsed_s": f"{out.elapsed_s:.3f}", "compile_s": f"{out.compile_s:.3f}", "chunks": str(len(chunks)),
        "resumed_chunks": str(out.resumed_chunks), "resumed_configs": str(out.resumed_configs),
        "executor": executor.name, "workers": str(executor.workers),
        **({"in_flight": str(executor.per_device)} if hasattr(executor, "per_device") else {})})
