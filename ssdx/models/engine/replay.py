"""Replay a request stream through the request-level engine for a batch of configurations.

The stream comes in chunks (``ssdx.workloads.traces.Chunk``: a trace reader or a synthetic generator),
so a multi-GB trace never sits whole in memory; every chunk is padded to one length and run on the
whole batch by one of three back ends of the same model (``engine.backend``, ``ssdx.models.engine.backends``):

* ``jax`` — the compiled ``jit(run_chunk)`` of ``ssdx.models.engine.model`` (configurations on the last axis),
  split over the local devices (``shard_map``) when there are several;
* ``cpu`` — the compiled per-configuration loop of ``ssdx.models.engine.cpu``, parallel over the cores;
* ``cuda`` — that loop as a CUDA kernel (``ssdx.models.engine.cuda``), one GPU thread per configuration.

Accumulators are added on the host in float64 chunk by chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ssdx.core.fields import ConfigError
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import entries, rewrites
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.workloads.traces import Chunk

DEFAULT_CHUNK = 65_536


class EmptyStream(ValueError):
    """A request stream that holds no request (an empty trace, or one whose lines were all skipped)."""


@dataclass
class Carry:
    """What a replay leaves to the next group of requests on the same drives (fio's ``stonewall``,
    ``ssdx.models.engine.jobs``): the batch's state as its back end holds it and the host-side state of the
    batch (entry cache, pages read first, rewrite window)."""

    state: Any
    cache: Any = None
    fresh: Any = None
    kept: Any = None
    #: the last request's trace time (s), and whether the next replay waits for every request (``barrier``;
    #: a job's stonewall) or goes on as the same stream would (fio's ``ramp_time``: the stats restart)
    prev_t: float | None = None
    barrier: bool = True


def barrier(state, queue_depth) -> tuple[Any, Any]:
    """``state`` once every request issued so far has completed: each of the next group's ``queue_depth``
    slots (per configuration) frees at the last completion, and its first request arrives then (trace time
    restarts there).  Returns the state and that instant, relative to the state's origin.  NumPy or JAX
    arrays, configurations on the last axis."""
    xp = jnp if isinstance(state.slots, jax.Array) else np
    t = xp.maximum(state.last_done, 0.0)
    used = xp.arange(state.slots.shape[0])[:, None] < queue_depth[None]
    slots = xp.where(used, t[None], xp.inf).astype(state.slots.dtype)
    return state._replace(slots=slots, last_arrival=t.astype(state.last_arrival.dtype)), t


@dataclass
class Result:
    """Per-configuration metrics (``engine.metrics``) and, if kept, per-request latencies (s)."""

    metrics: dict[str, np.ndarray]
    latencies: np.ndarray | None = None  # (configs, requests)
    ops: np.ndarray | None = None  # (requests,)
    compile_s: float = 0.0
    run_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _by_config(tree):
    """Partition specs splitting every leaf along its last axis (the configurations)."""
    return jax.tree_util.tree_map(lambda x: P(*([None] * (len(x.shape) - 1)), "c"), tree)


@lru_cache(maxsize=16)
def compiled(lay: engine_params.Layout, keep_latency: bool, mesh: Mesh | None = None):
    """The jitted plan, init and chunk functions of a batch for a layout (shared by ssdx and bench/).
    With a ``mesh`` (axis ``"c"``) each device runs the chunk on its share of the configurations
    (``shard_map``: no communication, the requests are replicated).  Cached by its arguments, so the
    batches of a sweep that share a layout reuse one set of jitted functions (each compiled once per
    shape)."""
    plan = jax.jit(partial(engine.plan_batch, lay=lay))
    init = jax.jit(partial(engine.init, lay=lay))
    fn = partial(engine.run_chunk, lay=lay, keep_latency=keep_latency)
    if mesh is None:
        return plan, init, jax.jit(fn)

    def split(p, s, req):
        out = _by_config(jax.eval_shape(fn, p, s, req))
        f = jax.shard_map(fn, mesh=mesh, in_specs=(_by_config(p), _by_config(s), P()), out_specs=out,
                          check_vma=False)
        return f(p, s, req)

    return plan, init, jax.jit(split)


class Runner:
    """Runs one chunk of a prepared batch: ``runner(plan, state, requests) -> (state, acc, latencies)``;
    :meth:`compile` compiles it ahead of the first call and returns the seconds that took."""

    def __init__(self, fn, backend: str, warm):
        self.fn, self.backend, self._warm = fn, backend, warm

    def compile(self, p, s, req) -> float:
        import time

        t0 = time.perf_counter()
        self._warm(p, s, req)
        return time.perf_counter() - t0

    def __call__(self, p, s, req):
        return self.fn(p, s, req)


def prepare(trees: tuple, keep_latency: bool = False, devices: Sequence | None = None,
            backend: str = "auto") -> tuple[Runner, Any, Any, int]:
    """Chunk runner, plan and initial state of a batch ``trees`` (``engine_params.build``) on ``backend``
    (``auto``, ``jax``, ``cpu`` or ``cuda``: ``engine_backends.select``); returns ``(run, plan, state, n)``
    with ``n`` the real batch size.

    ``jax``: the configurations are split over ``devices`` (default: every local device of the default
    backend; on a CPU host, as many as ``XLA_FLAGS=--xla_force_host_platform_device_count`` makes, which
    the CLI sets to the cores), the batch padded to a multiple of the device count by repeating its last
    configuration.  ``cpu``: numpy arrays, one batch, the cores shared by Numba's threads.  ``cuda``: the
    same loop on the first GPU Numba sees, the plan copied there once and the state at every chunk."""
    drive, workload, eng, lay = trees
    n = int(np.shape(drive.user_bytes)[0])
    backend = engine_backends.select({"backend": backend}, pages=lay.flight_slots > 0)
    if backend in ("cpu", "cuda"):  # the per-configuration loop, on the cores or one GPU thread each
        from ssdx.models.engine import cpu as engine_cpu
        plan_f, init_f, _ = compiled(lay, keep_latency)  # jitted lazily: the scan is never compiled
        p = jax.tree_util.tree_map(np.asarray, plan_f(drive, workload, eng))
        state = jax.tree_util.tree_map(np.asarray, init_f(p))
        if backend == "cpu":
            bind = lambda pf: partial(engine_cpu.run_chunk, pf)  # noqa: E731
        else:
            from ssdx.models.engine import cuda as engine_cuda
            bind = lambda pf: partial(engine_cuda.run_chunk, engine_cuda.device_plan(pf))  # noqa: E731
        pf = engine_cpu.pack_plan(p, lay)
        run = bind(pf)
        fn = lambda _, s, req: run(s, req, lay, keep_latency)  # noqa: E731

        def warm(_, s, req):  # Numba compiles for the argument types: one configuration, one request
            first = lambda t: jax.tree_util.tree_map(lambda x: np.asarray(x)[..., :1], t)  # noqa: E731
            bind(pf[:1])(first(s), first(req), lay, keep_latency)

        return Runner(fn, backend, warm), p, state, n
    devs = list(jax.local_devices() if devices is None else devices)[:n]
    mesh = Mesh(np.array(devs), ("c",)) if len(devs) > 1 else None
    plan_f, init_f, run_f = compiled(lay, keep_latency, mesh)
    p = plan_f(drive, workload, eng)
    pad = -n % max(len(devs), 1)
    if pad:
        p = jax.tree_util.tree_map(
            lambda x: jnp.concatenate([x, jnp.repeat(x[..., -1:], pad, axis=-1)], axis=-1), p)
    state = init_f(p)
    if mesh is not None:  # placed once: no resharding at every chunk
        place = lambda t: jax.device_put(  # noqa: E731
            t, jax.tree_util.tree_map(lambda s: NamedSharding(mesh, s), _by_config(t)))
        p, state = place(p), place(state)
    return Runner(run_f, backend, lambda p, s, req: run_f.lower(p, s, req).compile()), p, state, n


def replay(trees: tuple, chunks: Iterable[Chunk], chunk_len: int = DEFAULT_CHUNK, keep_latency: bool = False,
           progress: bool = False, total: int | None = None, desc: str = "replay",
           backend: str = "auto", carry: Carry | None = None, warm_map: np.ndarray | None = None) -> Result:
    """Run every chunk of ``chunks`` through every configuration of ``trees`` = (drive, workload, engine
    params, layout) from ``engine_params.build`` on ``backend`` (:func:`prepare`); see :class:`Result`.

    ``carry`` (a previous replay's ``extra["carry"]``, of the same batch and layout): start on the drives
    that replay left, once all its requests have completed (:func:`barrier`); the makespan counts from
    there.  The plan is this replay's (its queue depth and loop may differ).  ``warm_map``: logical pages
    (NAND-page numbers) the entry cache holds, clean, before the first request (``EntryCache.warm``;
    nothing where no configuration caches entries or with ``carry``)."""
    import time

    from ssdx.progress import bar as progress_bar

    drive, workload, eng, lay = trees
    dtype = np.asarray(drive.user_bytes).dtype
    run_f, p, state, n_cfg = prepare(trees, keep_latency, backend=backend)
    start = 0.0
    prev_t: float | None = None
    if carry is not None and carry.barrier:
        state, start = barrier(carry.state, p.queue_depth)
        start = np.asarray(start, np.float64)[..., :n_cfg]
    elif carry is not None:  # the same stream going on: its clock and arrivals continue
        state, prev_t = carry.state, carry.prev_t
    # the batch's host-side state, computed once for all its configurations (each None where none uses it):
    # the entry cache (engine.map_cache = entries), the pages each read reads first (engine.plane_merge)
    # and the rewrite window (engine.rewrite_window_s); a carried replay keeps the drives' own
    host = lambda x: np.asarray(x).reshape(-1)[:n_cfg]  # noqa: E731
    if carry is not None:
        cache, fresh, kept = carry.cache, carry.fresh, carry.kept
    else:
        cache = entries.for_batch(host(eng.map_entries), host(p.cap_4k), host(p.page_4k), host(p.tpage_4k))
        fresh = rewrites.first_reads_for_batch(host(p.plane_merge), host(p.cap_4k), host(p.page_4k))
        kept = rewrites.for_batch(host(p.rewrites), host(eng.rewrite_window_s), host(eng.time_scale),
                                  host(p.cap_4k), host(p.page_4k))
        if cache is not None and warm_map is not None:
            cache.warm(warm_map)
    if kept is not None and cache is not None and np.any((host(eng.map_entries) > 0)
                                                         & ~np.asarray(host(p.rewrites), bool)):
        raise ConfigError("engine.rewrite_window_s", 0.0,
                          "in a batch where some configurations keep rewrites in the buffer, every one that "
                          "caches mapping entries must keep them too (the entry cache, computed once for the "
                          "batch, skips the kept pages)")
    sums: dict[str, np.ndarray] = {}
    elapsed = None
    lats, ops = [], []
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
                                          prev_t, chunk_len, dtype, cache=cache, rewrites=kept,
                                          first_reads=fresh)
            if not compile_s:
                compile_s = run_f.compile(p, state, req)
            t0 = time.perf_counter()
            state, acc, lat = jax.block_until_ready(run_f(p, state, req))
            run_s += time.perf_counter() - t0
            acc = {k: engine.to_host(v, lay, dies=k == "busy")[:n_cfg] for k, v in acc._asdict().items()}
            el = acc.pop("elapsed") - acc.pop("elapsed_c")
            elapsed = el if elapsed is None else elapsed + el
            for k, v in acc.items():
                sums[k] = v if k not in sums else sums[k] + v
            n = int(np.sum(np.asarray(req.valid)))
            if keep_latency:
                lats.append(np.asarray(lat)[:n, :n_cfg].T)
                ops.append(np.asarray(req.op)[:n])
            bar.update(n)
    bar.close()
    if elapsed is None:
        raise EmptyStream("the request stream is empty")
    after = Carry(state, cache, fresh, kept, prev_t)
    state = jax.tree_util.tree_map(lambda x: x[..., :n_cfg], state)
    p = jax.tree_util.tree_map(lambda x: x[..., :n_cfg], p)
    elapsed = elapsed - start  # from the barrier a carried replay starts at
    makespan = elapsed + np.asarray(state.last_done, np.float64)
    if first_t is not None and prev_t is not None:  # timed stream: the absolute clock from float64 times
        open_loop = np.asarray(eng.open_loop) > 0.5
        timed = (prev_t - first_t) / np.asarray(eng.time_scale, np.float64) \
            + np.asarray(state.last_done, np.float64) - np.asarray(state.last_arrival, np.float64)
        makespan = np.where(open_loop, timed, makespan)
    mask = engine.to_host(p.mask, lay, dies=True) > 0.5
    die_end = np.where(mask, engine.to_host(state.die_free, lay, dies=True), -np.inf).max((1, 2))
    out = engine.metrics(sums, makespan, mask, busy_end_s=elapsed + die_end)
    return Result(metrics=out, latencies=np.concatenate(lats, 1) if keep_latency else None,
                  ops=np.concatenate(ops) if keep_latency else None, compile_s=compile_s, run_s=run_s,
                  extra={"sums": sums, "backend": run_f.backend, "carry": after, "mask": mask,
                         "horizon_s": np.maximum(makespan, elapsed + die_end)})


def replay_config(cfg: Mapping[str, Any], chunk: Chunk, n: int = 1, dtype=np.float32, **kw) -> Result:
    """Replay one in-memory ``chunk`` through the configuration ``cfg`` (drive, nand, workload, engine)."""
    _, trees = engine_params.build_from_config(cfg, n=n, dtype=dtype)
    kw.setdefault("backend", cfg["engine"].get("backend", "auto"))
    return replay(trees, [chunk], chunk_len=min(DEFAULT_CHUNK, max(len(chunk), 1)), **kw)
