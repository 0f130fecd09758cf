"""Sweeps of the request-level engine (``model: engine``): thousands of drive designs on one workload.

A sweep varies ``drive.*``, ``nand.*`` and ``engine.*`` fields and the workload's ``queue_depth`` and
``prefill_fraction`` over one or more workloads: the sources a replay reads, ``workload.fio`` (a fio job
file), ``workload.trace_path`` (a block trace, any format of ``workload.format``, MQSim's ASCII traces
included) and ``workload.synthetic`` (a generated stream), each a column of the results, exactly one set
per design.  The fluid model's synthetic fill (``workload.pattern``, ``block_kib``, ``fill_fraction``,
``burst_gb``, ``idle_s``) is not read (the requests come from the source) and is refused when swept.

**Queue depth and loop of a fio job.**  A fio job sets each design's queue depth (its ``iodepth`` summed
over its jobs and clones) and loop (open when it is timed by ``rate``, ``rate_iops`` or ``thinktime``),
as ``experiment=trace_replay`` does.  Where the sweep sets ``workload.queue_depth`` (in ``base`` or its
``space``), the sweep's value wins: it is the question asked; likewise ``engine.loop``.

**How it runs.**  Designs are grouped by what their replay shares: the request stream (its source; for a
fio job also the drive's user capacity, which ``size=N%`` refers to) and the state the engine computes
once per batch on the host (the entry cache of ``engine.map_cache: entries``, the rewrite window, the
pages merged across planes: ``ssdx.models.engine.replay``).  Each group's stream is made once and shared
by its jobs; the group is cut into chunks of ``chunk_size`` designs, each one replay of the whole stream
on one batch (``engine.backend``: the compiled per-configuration loop on a CPU, the batched scan or the
CUDA kernel on a GPU), padded to the group's layout, so each group compiles once.  Chunks are checkpointed
and resumed, reduced (``keep:``) and spread over Ray as every sweep's (``ssdx.sweep.runner.execute``).  A
design's figures depend on its own parameters and its group's stream only: a design rerun alone
(``sweep.only``) gives its row's numbers.

**Metrics** (:data:`METRICS`): ``iops``, ``mb_s``, latency mean/p50/p99/p99.9 in µs overall and per
direction (``read_``, ``write_``), die utilisation (mean and busiest die), ``channel_utilisation`` (host
and translation bytes over the channels' capacity, over the same horizon as the dies'),
``flash_commands_per_request`` (page reads, program commands, erases, translation reads and write-backs
per host request) and the design's cost (``ssdx.models.engine.cost``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import params
from ssdx.core.fields import ConfigError, check_rule
from ssdx.models.engine import cost as engine_cost
from ssdx.models.engine import params as engine_params

#: the workload sources of a replay, as columns (``""``: unset)
SOURCES = ("workload.fio", "workload.trace_path", "workload.synthetic")
#: workload columns of the fluid model's synthetic fill, which an engine sweep does not read
NOT_READ = ("workload.pattern", "workload.block_kib", "workload.fill_fraction", "workload.burst_gb",
            "workload.idle_s")
#: what a design's row holds besides its columns
METRICS = ("requests", "read_fraction", "iops", "mb_s", "makespan_s",
           "latency_mean_us", "latency_p50_us", "latency_p99_us", "latency_p999_us",
           "read_latency_mean_us", "read_latency_p50_us", "read_latency_p99_us", "read_latency_p999_us",
           "write_latency_mean_us", "write_latency_p50_us", "write_latency_p99_us", "write_latency_p999_us",
           "queue_share", "die_utilisation_mean", "die_utilisation_max", "channel_utilisation",
           "flash_commands_per_request", "nand_read_pages", "nand_program_pages", "erases", "map_misses",
           "offered_iops", "saturated",
           "cost_usd", "nand_usd", "memory_usd", "controller_usd", "raw_gib", "memory_mib")
#: the engine's own metrics carried over as they are (``ssdx.models.engine.state.metrics``)
_CARRIED = tuple(m for m in METRICS if m not in (
    "channel_utilisation", "flash_commands_per_request", "offered_iops", "saturated", "cost_usd", "nand_usd",
    "memory_usd", "controller_usd", "raw_gib", "memory_mib"))
#: an open-loop design is saturated when its achieved rate falls this far below the offered rate
SATURATED_BELOW = 0.95


def base_columns(base_cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The ``engine.*`` columns of the composed config and its workload source columns (:data:`SOURCES`)."""
    cols = engine_params.columns(base_cfg["engine"])
    w = base_cfg.get("workload") or {}
    for key in SOURCES:
        value = w.get(key.split(".", 1)[1])
        cols[key] = np.asarray(["" if value is None else str(value)])
    return cols


def swept(sweep: Mapping[str, Any]) -> set[str]:
    """The fields a sweep definition sets: its ``base`` keys and every parameter of its ``space``."""
    from ssdx.sweep import space

    out = set((sweep.get("base") or {}).keys()) if isinstance(sweep.get("base"), Mapping) else set()
    for part in space.space_parts(sweep):
        for kind, block in part.items():
            if kind == "grid":
                out |= set(block)
            elif kind == "list":
                out |= {k for row in block for k in row}
            else:
                out |= set(block.get("params") or {})
    return out


def check_fields(sweep: Mapping[str, Any]) -> None:
    """Refuse a swept field the engine does not read (:data:`NOT_READ`), naming it and the model."""
    for key in sorted(swept(sweep) & set(NOT_READ)):
        raise ConfigError(f"sweep.space: {key}", key, "is not read by a model: engine sweep (its requests "
                          "come from the workload source: workload.fio, workload.trace_path or "
                          "workload.synthetic; "
                          "the engine reads workload.queue_depth and workload.prefill_fraction)")


def check_sources(cols: Mapping[str, np.ndarray], report: list | None = None) -> None:
    """Every design reads exactly one workload source (:data:`SOURCES`)."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    given = np.stack([np.broadcast_to(np.asarray(cols[k]).astype(str), (n,)) != "" for k in SOURCES])
    count = given.sum(0)
    first = next((k for k in SOURCES if np.any(given[SOURCES.index(k)])), SOURCES[0])
    check_rule(cols, first, count == 1, "an engine sweep reads exactly one workload source per design: "
               f"{', '.join(SOURCES)} (set one in the config or the sweep; a design with two would leave one "
               "unused)", np.asarray(cols[first]).astype(str), report)


def validate(cols: Mapping[str, np.ndarray], report: list | None = None) -> None:
    """The engine's rules (``ssdx.models.engine.params.validate``) and :func:`check_sources`."""
    engine_params.validate(cols, report)
    check_sources(cols, report)


def _fio_jobs(path: str, w: Mapping[str, Any]):
    from ssdx.models.engine import jobs as engine_jobs

    return engine_jobs.fio_workload({"workload": {**w, "fio": resolve_path(path)}})


def complete(cols: dict[str, np.ndarray], sweep: Mapping[str, Any],
             base_cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``cols`` with each fio design's queue depth and loop set by its job where the sweep does not set
    them (module docstring); the job files are read here, so a bad one stops before anything runs."""
    fio = np.asarray(cols["workload.fio"]).astype(str)
    paths = sorted(set(fio.tolist()) - {""})
    if not paths:
        return cols
    own = swept(sweep)
    cols = dict(cols)
    n = len(fio)
    w = base_cfg.get("workload") or {}
    for path in paths:
        jobs = _fio_jobs(path, w)
        rows = fio == path
        if "workload.queue_depth" not in own:
            qd = np.broadcast_to(np.asarray(cols["workload.queue_depth"]), (n,)).copy()
            qd = qd.astype(np.result_type(qd.dtype, np.int64))
            qd[rows] = jobs.queue_depth
            cols["workload.queue_depth"] = qd
        if "engine.loop" not in own:
            loop = np.broadcast_to(np.asarray(cols["engine.loop"]).astype(object), (n,)).copy()
            loop[rows] = "open" if jobs.open_loop else "closed"
            cols["engine.loop"] = loop.astype(str)
    return cols


# ------------------------------------------------------------------------------------------- groups

def _capacity(cols: Mapping[str, np.ndarray]) -> np.ndarray:
    """User capacity each design's host addresses, bytes (float64, ``engine_params.user_capacity_bytes``)."""
    drive, _ = params.build(cols, dtype=np.float64)
    return engine_params.user_capacity_bytes(drive)


def group_keys(cols: Mapping[str, np.ndarray]) -> list[tuple]:
    """Each design's group (module docstring): its stream (source, loop, and for a fio job the capacity)
    and the host-side state it shares (entry-cache size, rewrite window and time scale, plane merging,
    each with the capacity and page size it is computed for; None where the design does not use it)."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    cap = _capacity(cols)
    page = params.nand_value(cols, "page_bytes")
    src = {k: np.broadcast_to(np.asarray(cols[k]).astype(str), (n,)) for k in SOURCES}
    loop = np.broadcast_to(np.asarray(cols["engine.loop"]).astype(str), (n,))
    policy = engine_params.map_policy(cols)
    entries = np.where(policy == 3, np.floor(params.num(cols, "engine.map_cache_mib") * 2**20
                                             / engine_params._opt(cols, "engine.map_entry_bytes")), 0)
    eager = engine_params.eager(cols) > 0
    window = np.where(eager & (loop == "open"), engine_params._opt(cols, "engine.rewrite_window_s"), 0.0)
    scale = params.num(cols, "engine.time_scale")
    merge = engine_params.plane_merge(cols) > 0
    keys = []
    for i in range(n):
        geometry = (float(cap[i]), float(page[i]))
        keys.append((src["workload.fio"][i], src["workload.trace_path"][i], src["workload.synthetic"][i],
                     str(loop[i]), float(cap[i]) if src["workload.fio"][i] else None,
                     (float(entries[i]), *geometry) if entries[i] > 0 else None,
                     (float(window[i]), float(scale[i]), *geometry) if window[i] > 0 else None,
                     geometry if merge[i] else None))
    return keys


def groups(cols: Mapping[str, np.ndarray]) -> list[tuple[tuple, np.ndarray]]:
    """``(key, row indices)`` of each group of :func:`group_keys`, in the order of their first rows."""
    keys = group_keys(cols)
    first: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, []).append(i)
    return [(k, np.asarray(v, np.int64)) for k, v in first.items()]


def resolve_path(value: str) -> str:
    """A workload file as given, or, when it does not exist relative to the current directory, the
    package's example of that name (``examples/fio/NAME.fio`` resolves in any directory)."""
    from ssdx import paths

    p = Path(value).expanduser()
    if p.exists() or p.is_absolute() or not p.parts or p.parts[0] != "examples":
        return value
    packaged = paths.examples_dir().joinpath(*p.parts[1:])
    return str(packaged) if packaged.exists() else value


def source_files(cols: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """Each fio job or trace file the designs read, with its size and modification time (ns): part of a
    sweep's fingerprint, so that a file changed between a killed run and its resume is not mixed in."""
    out = {}
    for key in ("workload.fio", "workload.trace_path"):
        for value in sorted(set(np.asarray(cols[key]).astype(str).tolist()) - {""}):
            p = Path(resolve_path(value))
            st = p.stat() if p.is_file() else None
            out[value] = [st.st_size, st.st_mtime_ns] if st else []
    return out


def offered_iops(chunks: Sequence) -> float:
    """The rate a timed stream offers, requests/s over its arrival span (NaN: untimed or one request)."""
    t = np.concatenate([np.asarray(c.time_s, np.float64) for c in chunks])
    if not len(t) or np.isnan(t).all():
        return float("nan")
    span = float(np.nanmax(t) - np.nanmin(t))
    return (len(t) - 1) / span if span > 0 else float("nan")


def stream_for(key: tuple, cols: Mapping[str, np.ndarray], rows: np.ndarray, base_cfg: Mapping[str, Any],
               requests: int | None) -> list:
    """The request stream of group ``key`` (its rows ``rows``), materialised: the chunks a replay of the
    source gives (``ssdx.models.engine.jobs.stream``), each request checked to fit the smallest drive of the
    group."""
    from ssdx.models.engine import jobs as engine_jobs

    fio, trace, synthetic, loop = key[:4]
    fio, trace = resolve_path(fio) if fio else fio, resolve_path(trace) if trace else trace
    w = dict(base_cfg.get("workload") or {}, fio=fio or None, trace_path=trace or None,
             synthetic=synthetic or None, requests=requests)
    cfg = {**base_cfg, "workload": w, "engine": dict(base_cfg["engine"], loop=loop)}
    cap = float(_capacity({k: np.asarray(v)[rows] for k, v in cols.items()}).min())
    jobs = engine_jobs.fio_workload(cfg) if fio else None
    chunks, reader, label = engine_jobs.stream(cfg, jobs, cap if fio else None)
    field = "workload.fio" if fio else "workload.trace_path" if trace else "workload.synthetic"
    from ssdx.workloads.traces import TraceError

    try:
        out = [c for c in engine_jobs.within(chunks, cap, label) if len(c)]
    except TraceError as e:
        raise ConfigError(field, label, f"malformed trace: {e}") from None
    if not out:
        from ssdx.workloads.traces import no_requests

        raise ConfigError(field, label, no_requests("replay", reader.skipped if reader else 0))
    return out


# ---------------------------------------------------------------------------------------------- jobs

_NUMBA = threading.Lock()  # one per-configuration loop at a time: it already uses every core
_WARM: set = set()  # batch shapes of the batched scan compiled in this process
_WARMING: dict = {}
_WARM_GUARD = threading.Lock()


def _first_of_shape(key: tuple):
    """A lock the first job of a batch shape holds through its replay (its compile), so that jobs of the
    same shape running beside it wait and then reuse the compiled scan; nothing to hold once it is warm."""
    with _WARM_GUARD:
        if key in _WARM:
            return contextlib.nullcontext()
        return _WARMING.setdefault(key, threading.Lock())


def figures(res, cols: Mapping[str, np.ndarray], price: Mapping[str, float],
            offered: float = float("nan")) -> dict[str, np.ndarray]:
    """The :data:`METRICS` of a replay's result ``res`` (``ssdx.models.engine.replay.Result``) for the designs
    ``cols`` replaying a stream that offers ``offered`` requests/s (its arrival times; NaN: untimed).  An
    open-loop design that reached less than :data:`SATURATED_BELOW` of the offered rate (trace time divided
    by ``engine.time_scale``) is ``saturated`` (1): its queue grew through the run, so its latencies
    describe the run's length, not the design."""
    m, s = res.metrics, res.extra["sums"]
    n = len(m["iops"])
    out = {k: np.asarray(m[k], np.float64) for k in _CARRIED}
    requests = np.maximum(np.asarray(m["requests"], np.float64), 1.0)
    commands = (s["read_pages"] + s["programs"] + s["erases"] + s["map_misses"] + s["map_writebacks"])
    out["flash_commands_per_request"] = np.asarray(commands, np.float64) / requests
    drive, _ = params.build(cols, dtype=np.float64)
    chan_rate = np.asarray(drive.bus_bytes_per_s, np.float64)  # every channel together, bytes/s
    moved = s["bytes"][:, 0] + s["bytes"][:, 1] + s["map_misses"] * engine_params._opt(cols,
                                                                                    "engine.map_read_bytes")
    out["channel_utilisation"] = moved / (chan_rate * np.asarray(res.extra["horizon_s"], np.float64))
    open_loop = np.asarray(cols["engine.loop"]).astype(str) == "open"
    out["offered_iops"] = np.where(open_loop, offered * params.num(cols, "engine.time_scale"), np.nan)
    out["saturated"] = (open_loop & (out["iops"] < SATURATED_BELOW * out["offered_iops"])).astype(np.float64)
    out.update({k: np.asarray(v, np.float64) for k, v in engine_cost.cost(cols, price).items()})
    return {k: v[:n] for k, v in out.items()}


def replay_chunk(cols: Mapping[str, np.ndarray], lay: engine_params.Layout, stream: Any, backend: str,
                 dtype: str, price: Mapping[str, float], offered: float, *,
                 device=None) -> dict[str, np.ndarray]:
    """One chunk of an engine sweep: the designs ``cols`` (one row each) replaying the group's ``stream``
    (a :class:`ssdx.sweep.executors.Shared` or the chunks) on ``backend``, laid out as ``lay`` (the group's);
    their :func:`figures` and ``_compile_s``.  Module-level, so a Ray worker runs what this process runs."""
    from ssdx.models.engine import replay
    from ssdx.sweep import executors

    chunks = executors.resolve(stream)
    chunk_len = min(replay.DEFAULT_CHUNK, max(len(c) for c in chunks))
    # the loop uses every core: a second job's host work beside it would only slow it down; the batched
    # scan compiles once per shape (the first job of it compiles, the others wait for it)
    shape = (lay, len(np.atleast_1d(cols["engine.loop"])), dtype, chunk_len, str(device))
    with _NUMBA if backend in ("cpu", "cuda") else _first_of_shape(shape):
        trees = engine_params.build(cols, dtype=np.dtype(dtype), warn=False)[:3] + (lay,)
        res = replay.replay(trees, chunks, chunk_len=chunk_len, backend=backend)
        out = figures(res, cols, price, offered)
    if backend == "jax":
        with _WARM_GUARD:
            _WARM.add(shape)
    out["_compile_s"] = np.asarray(res.compile_s)
    return out


def run_rows(cols: Mapping[str, np.ndarray], sweep: Mapping[str, Any], base_cfg: Mapping[str, Any], dtype,
             chunk_size: int, out_dir: Path | None = None, progress: bool = True, desc: str = "sweep",
             executor=None, definition: Mapping[str, Any] | None = None,
             keep: Mapping[str, Any] | None = None):
    """Run every design of ``cols`` (one row each; ``config_index`` carried when present) as the chunked
    runner runs a vmapped model (``ssdx.sweep.runner.run``: same return values, checkpoints, resume,
    reductions and executors), grouped and replayed as the module docstring says."""
    from ssdx.models.engine import backends
    from ssdx.sweep import executors, runner
    from ssdx.sweep import reduce as reduce_mod

    design = {k: v for k, v in cols.items() if k != "config_index"}
    n = len(np.atleast_1d(design["engine.loop"]))
    backend = backends.select(base_cfg["engine"])
    price = engine_cost.prices(sweep.get("cost"))
    requests = sweep.get("requests", (base_cfg.get("workload") or {}).get("requests"))
    executor = executor if executor is not None else executors.LocalExecutor()
    if backend in ("cpu", "cuda") and getattr(executor, "chosen", False):
        executor.per_device = 1  # the loop uses every core: a job beside it only slows it down
    chunk_size = max(1, min(int(chunk_size), n))
    parts = groups(design)
    chunks = runner.plan([(g, idx) for g, (_, idx) in enumerate(parts)], chunk_size)
    layouts, streams, offered = {}, {}, {}
    for g, (key, idx) in enumerate(parts):
        sub = {k: np.asarray(v)[idx] for k, v in design.items()}
        layouts[g] = engine_params.layout(sub)
        chunks_g = stream_for(key, design, idx, base_cfg, requests)
        offered[g] = offered_iops(chunks_g)
        streams[g] = executor.share(chunks_g)

    def make_job(i: int):
        ch = chunks[i]
        size = min(chunk_size, len(parts[ch.flag][1]))  # one shape per group
        padded = np.concatenate([ch.idx, np.full(size - len(ch.idx), ch.idx[-1])])
        rows = {k: np.asarray(v)[padded] for k, v in design.items()}
        args = (rows, layouts[ch.flag], streams[ch.flag], backend, np.dtype(dtype).name, price,
                offered[ch.flag])
        return executors.Job(i, replay_chunk, args, ch.idx.astype(np.int64))

    def to_columns(i: int, res: Mapping[str, np.ndarray]):
        return runner.chunk_columns(chunks[i].idx, res)

    defn = {"model": "engine", **dict(definition or {}), "chunk_size": chunk_size,
            "dtype": np.dtype(dtype).name, "requests": requests, "seed": int(base_cfg.get("seed", 0)),
            "prices": price, "sources": source_files(design)}
    reducer = None
    if keep is not None:
        reducer = reduce_mod.Reducer(keep, cols)
        defn["keep"] = dict(keep)
    out = runner.execute(cols, [ch.idx for ch in chunks], make_job, to_columns, out_dir, defn, executor,
                         progress, desc, None, reducer)
    if keep is not None:
        return out
    return out.table.replace_schema_metadata({
        "elapsed_s": f"{out.elapsed_s:.3f}", "compile_s": f"{out.compile_s:.3f}", "chunks": str(len(chunks)),
        "resumed_chunks": str(out.resumed_chunks), "resumed_configs": str(out.resumed_configs),
        "executor": executor.name, "workers": str(executor.workers), "backend": backend})

