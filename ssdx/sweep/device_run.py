"""The chunks of a device-generated sweep (``ssdx.sweep.device``): the jitted chunk, its state, the loop.

A chunk is ``(part, first configuration, count)``.  :func:`chunk_job` (a module-level function, so a Ray
worker runs exactly what this process runs) decodes the chunk's configurations from their digits,
gathers their parameters from the tables, runs the model, reduces on the device and returns the chunk's
reduction state (``ssdx.sweep.reduce``'s format, ids = space indices).  :func:`execute` runs the chunks
on an executor, checkpoints each state as it arrives and resumes from the checkpoints.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Var

from ssdx.sweep import executors, store
from ssdx.sweep import reduce as reduce_mod
from ssdx.sweep.device import PARETO_CAPACITY, PARETO_HEADROOM, DeviceSpace, Table, edges_f32
from ssdx.sweep.runner import compile_once

#: most entries of a table read by a chain of selects rather than a gather (on a CPU a gather is a
#: scalar loop, several times slower than a few fused compares)
SELECTED_ENTRIES = 16


def _gather(t: Table, values, digits: list, sizes: list[int], chunk: int):
    """Each configuration's entry of table ``t`` (its factors' digits in mixed radix), exactly."""
    if not t.factors:
        return jnp.broadcast_to(values[0], (chunk,))
    idx, stride = 0, 1
    for f in reversed(t.factors):
        idx = idx + digits[f] * np.uint32(stride)
        stride *= sizes[f]
    if values.shape[0] > SELECTED_ENTRIES:
        return values[idx]
    out = jnp.broadcast_to(values[0], (chunk,))
    for j in range(1, values.shape[0]):
        out = jnp.where(idx == j, values[j], out)
    return out


def digits_of(start, sizes: list[int], chunk: int) -> list:
    """The mixed-radix digits (uint32, slowest factor first) of the ``chunk`` configurations from the one
    whose digits are ``start``: the offset added to the last digit, carried up (unsigned division by a
    constant, which compiles to a multiply and a shift)."""
    digits: list = [None] * len(sizes)
    carry = jnp.arange(chunk, dtype=jnp.uint32)
    for f in reversed(range(len(sizes))):
        t = start[f].astype(jnp.uint32) + carry
        carry = t // np.uint32(sizes[f])
        digits[f] = t - carry * np.uint32(sizes[f])
    return digits


def chunk_fn(ds: DeviceSpace, part: int, model: Callable[[bool], Callable], chunk: int,
             capacity: int = PARETO_CAPACITY) -> Callable:
    """The function of one chunk of part ``part``: ``(first digits, count, tables) -> reduced arrays``;
    at most ``capacity`` Pareto candidates come back (their count always does)."""
    p, tabs, rule_list = ds.parts[part], ds.tables[part], ds.feasible[part]
    sizes, keep, metrics = p.sizes, ds.keep, ds.metrics
    per_config = model(ds.idle_gaps)
    wide = np.dtype(ds.dtype) == np.float64
    used = used_leaves(per_config, ds)

    def fn(start, count, leaf_v, rule_v, group_v, rank_v, slot_v):
        o = jnp.arange(chunk, dtype=jnp.int32)
        digits = digits_of(start, sizes, chunk)
        g = lambda t, v: _gather(t, v, digits, sizes, chunk)  # noqa: E731
        # the barrier keeps XLA from fusing the gathers into the model, whose arithmetic (contractions,
        # fusion) then compiles as in the host path's jit(vmap(model)): the same metrics to the bit
        got = jax.lax.optimization_barrier(
            [g(t, v) for t, v, u in zip(tabs["leaves"], leaf_v, used, strict=True) if u])
        it = iter(got)  # a leaf the model never reads is not gathered
        leaves = [next(it) if u else jnp.zeros(chunk, ds.dtype) for u in used]
        drive, workload = jax.tree_util.tree_unflatten(ds.treedef, leaves)
        ok = o < count
        for t, v in zip(rule_list, rule_v, strict=True):
            ok = ok & g(t, v)
        # every configuration's metrics, of which XLA computes only those the reductions read (a key, a
        # histogram); when that is not all of them, the rows kept with the top-k and the Pareto candidates
        # come from running the model again on those few configurations (rows_at), so a chunk does not
        # compute every metric of every configuration
        met = jax.vmap(per_config)(drive, workload)

        def rows_at(flat):
            """Every metric (rows in ``metrics`` order) of the configurations at positions ``flat``."""
            sub = jax.lax.optimization_barrier([x[flat] for x in leaves])  # as above: the same arithmetic
            again = jax.vmap(per_config)(*jax.tree_util.tree_unflatten(ds.treedef, sub))
            return jnp.stack([again[m] for m in metrics])

        key = lambda name: met[name] if name in met else g(tabs["ranks"][name], rank_v[name])  # noqa: E731
        out = {"n": count_true(ok)}
        if "top_k" in keep:
            t = keep["top_k"]
            grp = g(tabs["groups"]["top_k"], group_v["top_k"])
            v = key(t["by"])
            elig = ok & ~jnp.isnan(v)
            s = -v if t["ascending"] else v
            pos = group_top_k(jnp.where(elig, s, -jnp.inf), grp, len(ds.groups["top_k"]), min(t["k"], chunk))
            out["top_pos"] = pos
            out["top_ok"] = elig[pos] & (grp[pos] == jnp.arange(pos.shape[0])[:, None])
        if "pareto" in keep:
            pk = keep["pareto"]
            x, y = key(pk["x"]), key(pk["y"])
            x = -x if pk["x_better"] == "max" else x
            y = -y if pk["y_better"] == "max" else y
            elig = ok & ~jnp.isnan(x) & ~jnp.isnan(y)
            x, y = jnp.where(elig, x, jnp.inf), jnp.where(elig, y, jnp.inf)
            out["par_pos"], out["par_n"] = front_positions(x, y, elig & ~pivot_dominated(x, y, elig),
                                                           min(capacity, chunk))
        kept = [out[k] for k in ("top_pos", "par_pos") if k in out]
        if kept:
            flat = jnp.concatenate([k.reshape(-1) for k in kept])
            if set(metrics) <= set(reduce_mod.columns_needed(keep)):  # all computed anyway: take them
                rows = jnp.stack([met[m] for m in metrics])[:, flat]
            else:  # one second run of the model for both: one more copy of it to compile, not two
                rows = rows_at(flat)
            if "top_pos" in out:
                n_top = out["top_pos"].size
                out["top_rows"] = rows[:, :n_top].reshape((len(metrics), *out["top_pos"].shape))
                rows = rows[:, n_top:]
            if "par_pos" in out:
                out["par_rows"] = rows
        if "histograms" in keep:
            h = keep["histograms"]
            n_groups, slots = len(ds.groups["histograms"]), h["bins"] + 3
            grp = g(tabs["groups"]["histograms"], group_v["histograms"])
            for m in h["metrics"]:
                if m in met:
                    v, edges = met[m], h["edges"][m]
                    e = np.asarray(edges) if wide else edges_f32(edges)
                    slot = edges_at_or_below(v, e, m in h["log"])
                    if wide or float(np.float32(edges[-1])) == edges[-1]:
                        slot = jnp.where(v == e[-1], h["bins"], slot)
                    slot = jnp.where(jnp.isnan(v), h["bins"] + 2, slot)
                else:
                    slot = g(tabs["slots"][m], slot_v[m])
                out[f"hist_{m}"] = jax.ops.segment_sum(ok.astype(jnp.int32), grp * slots + slot,
                                                       n_groups * slots).reshape(n_groups, slots)
            # every feasible configuration falls in one slot (under, over and NaN included)
            out["hist_n"] = out[f"hist_{h['metrics'][0]}"].sum(axis=1)
        return out

    return fn


def edges_at_or_below(v, edges: np.ndarray, log: bool = False):
    """How many of the sorted ``edges`` are <= each ``v`` (``searchsorted(edges, v, side="right")``; for
    NaN either form may answer, so the caller gives NaN its own slot), int32, exactly (of the values as
    XLA holds them: its CPU flushes subnormal numbers to zero).

    Up to :data:`COMPARED_EDGES` edges, one compare per edge, fused into a single pass.  Beyond, the bin
    is computed from the spacing the edges were made with (equal widths, or equal ratios with ``log``),
    moved by one where the estimate's rounding put it next door (the two edges around it gathered as one
    pair), and checked; a chunk in which any value is still outside its bin after that is counted by the
    compares, or by the binary search above :data:`UNROLLED_EDGES`.  So the cost does not grow with the
    bins, and the answer never depends on the estimate (``bench.hist_slots`` times the three forms)."""
    if len(edges) <= COMPARED_EDGES or not float(edges[-1]) > float(edges[0]):  # or all rounded to one value
        return _edges_compared(v, edges)
    return estimated_or_compared(v, edges, log)


def estimated_or_compared(v, edges: np.ndarray, log: bool = False):
    """:func:`edges_at_or_below` by :func:`estimated_slots` whatever the number of edges, the compares (or
    the binary search) where any value of ``v`` falls outside the bin it estimates; ``edges`` must span a
    positive width."""
    c, inside = estimated_slots(v, edges, log)
    return jax.lax.cond(inside.all(), lambda: c, lambda: _edges_compared(v, edges))


def estimated_slots(v, edges: np.ndarray, log: bool = False) -> tuple:
    """The estimate of :func:`edges_at_or_below` (int32) and whether each value lies in the bin it gives
    (NaN always does)."""
    e, n = np.asarray(edges), len(edges)
    # pair[c] = (edge c - 1, edge c): a value with c edges at or below it lies in [pair[c][0], pair[c][1])
    pair = jnp.asarray(np.stack([np.concatenate([[-np.inf], e]), np.concatenate([e, [np.inf]])], axis=1),
                       v.dtype)
    lo, hi = float(e[0]), float(e[-1])
    if log and lo > 0:
        t = (jnp.log(v) - np.log(lo)) * ((n - 1) / (np.log(hi) - np.log(lo)))
    else:
        t = (v - lo) * ((n - 1) / (hi - lo))
    c = (jnp.floor(jnp.clip(jnp.where(jnp.isnan(t), 0, t), -1, n - 1)) + 1).astype(jnp.int32)
    below, above = pair[c, 0], pair[c, 1]
    c = c + ((v >= above) & (c < n)).astype(jnp.int32) - (v < below).astype(jnp.int32)
    below, above = pair[c, 0], pair[c, 1]
    return c, ((v >= below) & ((v < above) | (c == n))) | jnp.isnan(v)


def _edges_compared(v, edges: np.ndarray):
    """:func:`edges_at_or_below` by a compare per edge, or a binary search beyond :data:`UNROLLED_EDGES`."""
    if len(edges) > UNROLLED_EDGES:
        return jnp.searchsorted(jnp.asarray(edges), v, side="right").astype(jnp.int32)
    return sum(((v >= e).astype(jnp.int32) for e in edges.tolist()), jnp.zeros(v.shape, jnp.int32))


#: most histogram edges counted by compares alone (more: estimated from the spacing, then checked): on a CPU
#: the estimate costs less from about 80 bins on a linear scale and about 112 on a log scale
#: (``bench.hist_slots``), so one threshold between the two
COMPARED_EDGES = 96
#: most histogram edges counted by compares rather than a binary search, where the estimate fails
UNROLLED_EDGES = 129
#: configurations per block of the top-k pre-selection
TOP_K_BLOCK = 1024
#: most groups whose block maxima are found by one masked pass each (more: one scatter)
DENSE_GROUPS = 16


def group_top_k(s, grp, n_groups: int, k: int):
    """Per group ``g < n_groups``, the positions of the ``k`` largest ``s`` among positions with ``grp == g``
    (other positions count as -inf), ties to the lower position: ``lax.top_k`` of each group's masked row,
    shape ``(n_groups, k)``, found without a pass of ``top_k`` over the whole chunk per group.

    The chunk is cut into blocks of :data:`TOP_K_BLOCK`; per group, only the ``k`` blocks whose maxima
    rank first (value, then block) are searched.  Exact: every block ranking before the block of one of
    a row's top ``k`` holds an element ranking before it, so fewer than ``k`` blocks do."""
    n = s.shape[0]
    block = min(TOP_K_BLOCK, n)
    nb = -(-n // block)
    pad = nb * block - n
    s = jnp.concatenate([s, jnp.full(pad, -jnp.inf, s.dtype)]) if pad else s  # after every real position
    grp = jnp.concatenate([grp, jnp.full(pad, n_groups, grp.dtype)]) if pad else grp
    # a group's row is -inf outside the group, so its block maxima are over its own positions (-inf if none)
    if n_groups <= DENSE_GROUPS:  # a masked maximum per group over the blocks: dense passes, no scatter
        s2, g2 = s.reshape(nb, block), grp.reshape(nb, block)
        bmax = jnp.stack([jnp.where(g2 == gi, s2, -jnp.inf).max(axis=1) for gi in range(n_groups)])
    else:
        b = jnp.arange(nb * block, dtype=jnp.int32) // block
        bmax = jax.ops.segment_max(s, jnp.where(grp < n_groups, grp * nb + b, n_groups * nb),
                                   n_groups * nb + 1)[:-1].reshape(n_groups, nb)
    kb = min(k, nb)
    blocks = jnp.sort(jax.lax.top_k(bmax, kb)[1], axis=1)  # ascending: position order within the row
    pos = (blocks[:, :, None] * block + jnp.arange(block, dtype=jnp.int32)).reshape(n_groups, kb * block)
    row = jnp.where(grp[pos] == jnp.arange(n_groups, dtype=grp.dtype)[:, None], s[pos], -jnp.inf)
    return jnp.take_along_axis(pos, jax.lax.top_k(row, k)[1], axis=1)


def _words(mask):
    """A boolean array's last axis read four entries at a time as uint32 words (XLA stores a boolean as
    one byte, 0 or 1): ``(..., 4 k)`` -> ``(..., k)``; a word is non-zero where any of its four entries is
    set, and its population count is the number set."""
    b = mask.astype(jnp.uint8)
    return jax.lax.bitcast_convert_type(b.reshape(*b.shape[:-1], b.shape[-1] // 4, 4), jnp.uint32)


def count_true(mask):
    """The number of True entries of the 1-D ``mask`` (int32): the population counts of its entries read as
    words (:func:`_words`), in less time than XLA's sum of the mask on a CPU (``bench.mask_count``)."""
    if mask.shape[0] % 4:
        return mask.sum(dtype=jnp.int32)
    return jax.lax.population_count(_words(mask)).astype(jnp.int32).sum()


def compact(mask, size: int):
    """The positions of the first ``size`` True entries of ``mask``, ascending, 0 after the last
    (``jnp.nonzero(mask, size=size, fill_value=0)[0]``), by a prefix sum and a scatter."""
    c = jax.lax.associative_scan(jnp.add, mask.astype(jnp.int32))
    at = jnp.where(mask, c - 1, size)
    return jnp.zeros(size, jnp.int32).at[at].set(jnp.arange(mask.shape[0], dtype=jnp.int32), mode="drop")


def used_leaves(per_config: Callable, ds: DeviceSpace) -> list[bool]:
    """Which leaves of ``(Drive, Workload)`` the per-configuration function reads (its jaxpr's inputs that
    some equation or output uses)."""
    example = jax.tree_util.tree_unflatten(ds.treedef, [np.zeros((), ds.dtype)] * len(ds.leaves))
    jaxpr = jax.make_jaxpr(per_config)(*example).jaxpr
    read = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, Var)}
    read |= {v for v in jaxpr.outvars if isinstance(v, Var)}
    return [v in read for v in jaxpr.invars]


def _front_sorted(x, y, elig):
    """Non-dominated points (both axes minimised) by one sort and a running minimum: the mask (the rule of
    ``ssdx.sweep.reduce._front``, in JAX; equal points all stay)."""
    n = x.shape[0]
    o = jnp.arange(n, dtype=jnp.int32)
    x, y = jnp.where(elig, x, jnp.inf), jnp.where(elig, y, jnp.inf)
    order = jnp.lexsort((o, y, x))
    xs, ys = x[order], y[order]
    new = jnp.concatenate([jnp.ones(1, bool), xs[1:] != xs[:-1]])
    first = jax.lax.cummax(jnp.where(new, o, 0))  # first point of each equal-x run
    before = jnp.concatenate([jnp.full(1, jnp.inf, ys.dtype), jax.lax.cummin(ys)[:-1]])[first]
    return jnp.zeros(n, bool).at[order].set((ys == ys[first]) & (ys < before) & elig[order])


#: buckets of x whose best points screen the others before the sort
PIVOTS = 256
#: points of a chunk the pivots are drawn from (every ``n // PIVOT_SAMPLE``-th point)
PIVOT_SAMPLE = 1 << 16
#: buckets of the second screen, drawn from every point, when the first leaves more than SCREENED
FINE_PIVOTS = 8192
#: most screened points sorted alone (more: the whole chunk is sorted)
SCREENED = 16384
#: screened points sorted in the smaller of the two sorts (most chunks have a few hundred candidates)
FEW_SCREENED = 512


def pivot_dominated(x, y, elig, pivots: int = PIVOTS, sample: int = PIVOT_SAMPLE):
    """Points that one of ``pivots`` real points dominates (both axes minimised).  The pivots are, in
    each of equal-width buckets of x, the point of least y (least x among ties), drawn from every
    ``stride``-th point of the chunk (a sample of about ``sample`` points, so the two scatter-minima stay
    small).  Every pivot of an earlier bucket has a strictly smaller x (the bucket is a non-decreasing
    function of x, clipped at both ends), so a point is dominated when the least y among them is <= its
    own, or when its own bucket's pivot has ``x' < x, y' <= y`` or ``x' <= x, y' < y``.  Sound (every
    flagged point is dominated by a real eligible point), not complete; three gathers from
    ``pivots``-entry tables per point."""
    fin = elig & jnp.isfinite(x) & jnp.isfinite(y)
    stride = max(1, x.shape[0] // sample)
    xs, ys, fs = x[::stride], y[::stride], fin[::stride]
    lo = jnp.min(jnp.where(fs, xs, jnp.inf))
    hi = jnp.max(jnp.where(fs, xs, -jnp.inf))
    lo = jnp.where(jnp.isfinite(lo), lo, 0.0)  # no finite sampled point: any bucketing is sound
    width = jnp.where(hi > lo, hi - lo, 1.0)

    def bucket(v):
        return jnp.clip(jnp.floor((v - lo) / width * pivots), 0, pivots - 1).astype(jnp.int32)

    bs = jnp.where(fs, bucket(xs), 0)
    ymin = jax.ops.segment_min(jnp.where(fs, ys, jnp.inf), bs, pivots)
    xmin = jax.ops.segment_min(jnp.where(fs & (ys == ymin[bs]), xs, jnp.inf), bs, pivots)
    if pivots <= PIVOTS:
        # least y over the buckets before each, by a masked minimum over a triangle: a cumulative minimum
        # here is fused into the per-point gathers below and recomputed for every point
        earlier = np.tril(np.ones((pivots, pivots), bool), -1)  # [i, j]: bucket j comes before bucket i
        before = jnp.min(jnp.where(earlier, ymin[None, :], jnp.inf), axis=1)
    else:  # the triangle grows as pivots^2: a cumulative minimum, kept apart from the gathers
        before = jnp.concatenate([jnp.full(1, jnp.inf, ymin.dtype), jax.lax.cummin(ymin)[:-1]])
        ymin, xmin, before = jax.lax.optimization_barrier((ymin, xmin, before))
    b = jnp.where(fin, bucket(x), 0)
    yb, xb, pb = ymin[b], xmin[b], before[b]
    d1 = (pb <= y) | ((xb < x) & (yb <= y))  # earlier buckets' x is strictly smaller
    d2 = (pb < y) | ((xb <= x) & (yb < y))
    return fin & (d1 | d2)


def front_positions(x, y, cand, size: int):
    """The positions of the non-dominated points among ``cand`` (both axes minimised, ``x``, ``y`` +inf
    where not eligible; the candidates left by :func:`pivot_dominated`), the first ``size`` of them
    ascending (0 after), and their count.  Exact: the candidates are compacted and sorted alone, in the
    smaller of :data:`FEW_SCREENED` or :data:`SCREENED` entries that holds them (each sort compiled adds
    about half a second to a sweep's compile time, so there are two).
    More than :data:`SCREENED` candidates (a long front of two opposed metrics: the first screen's 256
    buckets are too coarse for it) are screened again by :data:`FINE_PIVOTS` buckets drawn from every
    point; only if they still do not fit is the whole chunk sorted.  A point outside ``cand`` is never
    returned."""
    n = x.shape[0]
    caps = sorted({min(c, n) for c in (FEW_SCREENED, SCREENED)})

    def among(cap, c):
        def run(_):
            total = count_true(c)
            idx = compact_sparse(c, cap) if cap == caps[0] else compact(c, cap)
            m = _front_sorted(x[idx], y[idx], jnp.arange(cap) < total)
            count = m.sum()
            return jnp.where(jnp.arange(size) < count, idx[compact(m, size)], 0), count
        return run

    def whole(c):
        def run(_):
            front = _front_sorted(x, y, c)
            return compact(front, size), count_true(front)
        return run

    def again(_):  # a second, finer screen, drawing its pivots from every eligible point
        fin = jnp.isfinite(x) & jnp.isfinite(y)
        c = cand & ~pivot_dominated(x, y, fin, FINE_PIVOTS, n)
        return jax.lax.cond(count_true(c) <= caps[-1], among(caps[-1], c), whole(c), None)

    # the smallest sort that holds every candidate (a branch not taken costs nothing: no conditional
    # before the switch, which would keep XLA from fusing the candidates' mask into its consumers)
    which = jnp.searchsorted(jnp.asarray(caps, jnp.int32), count_true(cand))
    last = again if n > caps[-1] else whole(cand)
    return jax.lax.switch(which, [among(c, cand) for c in caps] + [last], None)


#: configurations per block of :func:`compact_sparse`
SPARSE_BLOCK = 64


def compact_sparse(mask, size: int):
    """:func:`compact` for a mask with few True entries, in one dense pass over it: whether each block of
    :data:`SPARSE_BLOCK` entries holds any, the first ``size`` blocks that do (they hold the first
    ``size`` True entries), and :func:`compact` over those blocks alone.  Exact for any mask."""
    n = mask.shape[0]
    nb = -(-n // SPARSE_BLOCK)
    pad = nb * SPARSE_BLOCK - n
    m2 = (jnp.concatenate([mask, jnp.zeros(pad, bool)]) if pad else mask).reshape(nb, SPARSE_BLOCK)
    full = (_words(m2) != 0).any(axis=1)  # SPARSE_BLOCK is a multiple of 4
    blocks = compact(full, min(size, nb))
    sub = m2[blocks] & (jnp.arange(blocks.shape[0]) < full.sum())[:, None]  # fill blocks hold nothing
    pos = (blocks[:, None] * SPARSE_BLOCK + jnp.arange(SPARSE_BLOCK, dtype=jnp.int32)).reshape(-1)
    inner = compact(sub.reshape(-1), size)
    return jnp.where(jnp.arange(size) < sub.sum(), pos[inner], 0)


def _inputs(ds: DeviceSpace, part: int) -> tuple:
    tabs = ds.tables[part]
    return ([t.values for t in tabs["leaves"]], [t.values for t in ds.feasible[part]],
            {k: t.values for k, t in tabs["groups"].items()}, {k: t.values for k, t in tabs["ranks"].items()},
            {k: t.values for k, t in tabs["slots"].items()})


def _device_inputs(ds: DeviceSpace, part: int, device) -> tuple:
    """:func:`_inputs` placed on ``device`` (default: JAX's) once per space, part and device, and kept on
    the space: every chunk of a part reads the same tables, which would otherwise be copied to the device
    again with each chunk."""
    held = ds.__dict__.setdefault("_on_device", {})
    key = (part, str(device))
    if key not in held:  # two threads may both place it: the same values, the last one kept
        held[key] = jax.device_put(_inputs(ds, part), device)
    return held[key]


_CAPACITY: dict[tuple[str, int], int] = {}  # Pareto capacity grown per (run, part)


def first_capacity(chunk: int) -> int:
    """Pareto candidates a chunk of ``chunk`` configurations returns at first: :data:`PARETO_CAPACITY`, or
    for a small chunk a power of two of at most ``chunk / 32`` (and at least 256), because every returned
    place is one more configuration the model runs again for its row (a longer front grows it)."""
    return min(PARETO_CAPACITY, max(256, 1 << max(0, (chunk // 32).bit_length() - 1)))


def _compiled(ds, part, model, chunk, token, device, args, capacity) -> tuple[Callable, float]:
    return compile_once(("device", token, part, str(device), capacity),
                        lambda: jax.jit(chunk_fn(ds, part, model, chunk, capacity)).lower(*args))


def chunk_job(ds: DeviceSpace, model: Callable[[bool], Callable], part: int, lo: int, count: int, chunk: int,
              token: str, device=None) -> tuple[dict[str, Any], float, float]:
    """Run configurations ``lo .. lo + count - 1`` of part ``part`` on ``device``; returns the chunk's
    reduction state, the seconds spent compiling (0 once compiled) and the seconds of the compiled call
    (from its start until its results are back on the host).  ``ds`` may be an executor's
    ``executors.Shared`` handle of the space (Ray: fetched once per worker)."""
    ds = executors.resolve(ds)
    args = (*jax.device_put((ds.parts[part].digits(lo), np.int32(count)), device),
            *_device_inputs(ds, part, device))
    key = (token, part)
    capacity = _CAPACITY.get(key, first_capacity(chunk))
    fn, compile_s = _compiled(ds, part, model, chunk, token, device, args, capacity)
    t0 = time.perf_counter()
    res = jax.device_get(fn(*args))
    if "par_n" in res and int(res["par_n"]) > capacity:
        # more tied or non-dominated points than returned: grow the capacity (a power of two, at most the
        # chunk) for this chunk and the ones after it, with room for PARETO_HEADROOM times as many, since
        # each growth recompiles the chunk (seconds) and the next chunks' fronts are often a little longer
        capacity = min(chunk, 1 << int(np.ceil(np.log2(PARETO_HEADROOM * int(res["par_n"])))))
        _CAPACITY[key] = max(capacity, _CAPACITY.get(key, 0))
        fn, more = _compiled(ds, part, model, chunk, token, device, args, capacity)
        compile_s += more
        res = jax.device_get(fn(*args))
    return to_state(ds, part, lo, res), compile_s, time.perf_counter() - t0


def to_state(ds: DeviceSpace, part: int, lo: int, res: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The reduction state of one chunk from its device arrays (``ssdx.sweep.reduce`` 's format)."""
    first = ds.parts[part].offset + lo
    keep, metrics = ds.keep, ds.metrics
    st: dict[str, Any] = {"n": int(res["n"]), "metrics": list(metrics), "top_k": {}, "pareto": [],
                          "histograms": {}}

    def values(name: str, ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if name in metrics:
            return rows[metrics.index(name)].astype(np.float64)
        return ds.rows(ids)[name].astype(np.float64)

    if "top_k" in keep:
        pos, ok, rows = res["top_pos"], res["top_ok"], res["top_rows"]
        for gi, gkey in enumerate(ds.groups["top_k"]):
            sel = np.flatnonzero(ok[gi])
            if not len(sel):
                continue
            ids = first + pos[gi, sel].astype(np.int64)
            r = rows[:, gi, sel].astype(np.float64)
            v = values(keep["top_k"]["by"], ids, r)
            st["top_k"][gkey] = [[float(v[j]), int(ids[j]), r[:, j].tolist()] for j in range(len(sel))]
    if "pareto" in keep:
        n = int(res["par_n"])
        if n > len(res["par_pos"]):  # chunk_job grows the capacity first; this cannot happen
            raise RuntimeError(f"a chunk has {n} Pareto candidates, more than {len(res['par_pos'])}")
        ids = first + res["par_pos"][:n].astype(np.int64)
        r = res["par_rows"][:, :n].astype(np.float64)
        pk = keep["pareto"]
        x, y = values(pk["x"], ids, r), values(pk["y"], ids, r)
        points = [[float(x[j]), float(y[j]), int(ids[j]), r[:, j].tolist()] for j in range(n)]
        st["pareto"] = reduce_mod._nondominated(points, pk["x_better"] == "max", pk["y_better"] == "max")
    if "histograms" in keep:
        for gi, gkey in enumerate(ds.groups["histograms"]):
            if res["hist_n"][gi] > 0:
                st["histograms"][gkey] = {m: res[f"hist_{m}"][gi].astype(np.int64).tolist()
                                          for m in keep["histograms"]["metrics"]}
    return st


class Outcome(NamedTuple):
    """What :func:`execute` returns (the fields ``ssdx.sweep.job`` reads of the host runner's outcome)."""

    state: dict[str, Any]
    infos: list[dict[str, Any]]
    resumed_chunks: int
    resumed_configs: int
    elapsed_s: float
    compile_s: float
    device_s: float = 0.0


#: a chunk's length is a multiple of SMALL_ALIGN, and of TOP_K_BLOCK where that takes no more chunks: XLA's
#: CPU loops run a length that is not a multiple of the vector width with a scalar tail, and the top-k
#: blocking copies a chunk that is not whole blocks to pad it (``bench.scale_device`` and
#: docs/performance_sweeps.md measure the difference)
SMALL_ALIGN = 8


def part_chunk(size: int, chunk: int) -> int:
    """The chunk size a part of ``size`` configurations runs with, at most ``chunk``: as few chunks as
    lengths of at most ``chunk`` that are multiples of :data:`SMALL_ALIGN` allow, balanced so the last
    one is nearly full, each a whole number of top-k blocks (:data:`TOP_K_BLOCK`) where that takes no
    more chunks, else a multiple of :data:`SMALL_ALIGN` (for ``chunk`` below that: balanced only)."""
    best = None
    for align in (TOP_K_BLOCK, SMALL_ALIGN):
        most = chunk // align * align
        if most == 0:
            continue
        n = -(-size // most)
        balanced = -(-size // n)
        step = -(-balanced // align) * align  # rounded up to the alignment: still <= most
        if best is None or n < best[0]:
            best = (n, step)
    return best[1] if best is not None else -(-size // -(-size // chunk))


def plan(ds: DeviceSpace, chunk: int) -> list[tuple[int, int, int]]:
    """``(part, first, count)`` of every chunk: cut within each part (:func:`part_chunk`), in part order."""
    out = []
    for pi, p in enumerate(ds.parts):
        step = part_chunk(p.size, chunk)
        out += [(pi, lo, min(step, p.size - lo)) for lo in range(0, p.size, step)]
    return out


def execute(ds: DeviceSpace, model: Callable[[bool], Callable], chunk: int, out_dir: Path | None,
            definition: Mapping[str, Any], executor=None, progress: bool = True,
            desc: str = "sweep") -> Outcome:
    """Run every chunk of ``ds`` and merge their states; checkpointed and resumable with ``out_dir``."""
    from ssdx.progress import bar as progress_bar

    chunks = plan(ds, chunk)
    ids = lambda i: np.arange(ds.parts[chunks[i][0]].offset + chunks[i][1],  # noqa: E731
                              ds.parts[chunks[i][0]].offset + chunks[i][1] + chunks[i][2], dtype=np.int64)
    reducer = reduce_mod.Reducer(ds.keep, {})
    state = reducer.empty()
    infos: dict[int, dict[str, Any]] = {}
    if out_dir is not None:
        store.open_run(Path(out_dir), ds.fingerprint(definition))
        for i in range(len(chunks)):
            got = store.finished_state(Path(out_dir), i, ids(i))
            if got is not None:
                state, infos[i] = reducer.merge(state, got[0]), got[1]
    resumed, resumed_configs = len(infos), sum(chunks[i][2] for i in infos)
    token = uuid.uuid4().hex
    executor = executor if executor is not None else executors.LocalExecutor()
    shared = executor.share(ds) if hasattr(executor, "share") else ds
    jobs = [executors.Job(i, chunk_job, (shared, model, pi, lo, count,
                                         part_chunk(ds.parts[pi].size, chunk), token),
                          range(ds.parts[pi].offset + lo, ds.parts[pi].offset + lo + count))
            for i, (pi, lo, count) in enumerate(chunks) if i not in infos]
    bar = progress_bar(ds.n, desc, enabled=progress, initial=resumed_configs)
    writer = None if out_dir is None else ThreadPoolExecutor(max_workers=1, thread_name_prefix="ssdx-store")
    writes, compile_s, device_s, t0 = [], 0.0, 0.0, time.perf_counter()
    try:
        for job, (st, c_s, d_s), where in executor.map(jobs):
            info = {"compile_s": c_s, "device_s": d_s, **where}
            compile_s += c_s
            device_s += d_s
            text = reduce_mod.dumps(st)
            state = reducer.merge(state, reduce_mod.loads(text))  # exactly what a resume reads back
            if writer is not None:
                writes.append(writer.submit(store.write_state, store.state_path(Path(out_dir), job.index),
                                            text, ids(job.index), info))
            infos[job.index] = info
            bar.update(chunks[job.index][2])
    finally:
        bar.close()
        if writer is not None:
            writer.shutdown(wait=True)
    for w in writes:
        w.result()
    missing = sorted(set(range(len(chunks))) - set(infos))
    if missing:
        raise RuntimeError(f"the executor returned no result for chunks {missing[:10]}")
    return Outcome(state, [infos[i] for i in range(len(chunks))], resumed, resumed_configs,
                   time.perf_counter() - t0, compile_s, device_s)
