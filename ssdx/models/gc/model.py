"""Block-level garbage collection in a page-mapped FTL: write amplification from the mapping itself.

One drive per call (sweeps ``vmap``).  The drive is scaled down in block count (``n_blocks``, static)
but keeps the spare factor ``S_f`` and the pages per block ``b`` (``ssdx.models.gc.params``).

**State.**  ``l2p`` (logical page → physical page, −1 unmapped), ``p2l`` (physical page → logical page,
−1 free or invalid), per-block valid counts, the cycle in which each block was closed (−1: never
written since the last secure erase), the erased GC destination ("spare") and the count of
never-written blocks used.  Physical page ``p`` lies in block ``p // m``, ``m`` = ``max_pages_per_block``
(static), of which the first ``b`` pages are used.

**One step = one block filled** (``cycle``):

1. a block to write: the next never-written block while the secure-erased pool lasts (block
   ``n_blocks − 1`` is kept as the first spare); afterwards GC: the policy picks a victim among the
   closed blocks, its ``k`` valid pages are copied (compacted) into the spare, the victim is erased
   and becomes the next spare (one erased block is all this FTL ever needs);
2. the host writes ``b − k`` pages into the rest of that block: the workload names a logical page,
   its old copy (if any) is invalidated, the new copy appended.  The block's writes are applied
   together: the result equals page-by-page processing because, of several writes of one logical
   page in a block, only the last stays valid (tested against a page-by-page Python FTL).

Write amplification = NAND pages programmed / host pages = ``c·(host + copies)/host`` with ``c`` the
compressibility (the simulation counts NAND-page units: data reduction before NAND shrinks the
written space to ``c`` of the host's, Desnoyers' and SandForce's "DuraWrite" effect alike).

**Policies** (factories, :data:`FACTORIES`): ``greedy`` (fewest valid pages), ``fifo`` (oldest closed
block; LRU cleaning in Desnoyers' terms), ``cost_benefit`` (largest ``age·(1−u)/(2u)``, Rosenblum &
Ousterhout, LFS 1992), ``d_choices`` (fewest valid among ``d`` blocks drawn uniformly, Van Houdt 2013).

**Workload** per host page ``n`` (0, 1, 2, … since the last secure erase): the first
``precondition·L`` pages are sequential (SNIA PTS preconditioning), then the pattern — sequential,
uniform random, or hot/cold (fraction ``f`` of the written space ``L`` takes fraction ``r`` of the
writes).  Random numbers come from a counter-based integer hash of (seed, n) — no carried key, so a
page's address does not depend on how the run is cut into steps.  Uniform draws have 24-bit
resolution: the bias is below ``L / 2**24`` (< 0.1 % of a page's hit rate for ``L`` ≤ 16 k pages).

All counters are int32 (runs up to 2**31 host pages).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ssdx.models.gc.params import D_MAX, POLICIES, GcParams

BIG = jnp.iinfo(jnp.int32).max


class Geometry(NamedTuple):
    """Per-run integers derived from :class:`GcParams` (computed once, outside the scan)."""

    b: jax.Array  # pages per block
    logical: jax.Array  # U = floor((1 - S_f)·n_blocks·b)
    written: jax.Array  # L: NAND-page units of logical space the workload covers (after TRIM, compression)
    hot: jax.Array  # hot pages of the written space
    pre: jax.Array  # sequential preconditioning pages
    round_pages: jax.Array  # host pages (units) per SNIA round


class State(NamedTuple):
    l2p: jax.Array  # (n_blocks·m,) int32
    p2l: jax.Array  # (n_blocks·m,) int32
    valid: jax.Array  # (n_blocks,) int32
    closed: jax.Array  # (n_blocks,) int32: cycle in which the block was closed, -1 never
    spare: jax.Array  # erased GC destination
    next_fresh: jax.Array  # never-written blocks used since the secure erase
    host: jax.Array  # host pages written since the secure erase
    cycle: jax.Array


class CycleOut(NamedTuple):
    host: jax.Array  # host pages (NAND-page units) written in the cycle
    copies: jax.Array  # valid pages copied by GC
    erases: jax.Array  # blocks erased (0 while the fresh pool lasts)


def geometry(gp: GcParams, n_blocks: int) -> Geometry:
    b = gp.pages_per_block.astype(jnp.int32)
    f32 = jnp.float32
    logical = jnp.floor((1.0 - gp.spare_factor.astype(f32)) * (n_blocks * b).astype(f32)).astype(jnp.int32)
    written = jnp.floor(logical.astype(f32) * (1.0 - gp.trim_fraction.astype(f32))
                        * gp.compressibility.astype(f32)).astype(jnp.int32)
    written = jnp.maximum(written, 2)
    hot = jnp.clip(jnp.round(gp.hot_fraction.astype(f32) * written.astype(f32)).astype(jnp.int32), 1,
                   written - 1)
    pre = jnp.floor(gp.precondition.astype(f32) * written.astype(f32)).astype(jnp.int32)
    rnd = jnp.maximum(jnp.floor(gp.round_fraction.astype(f32) * written.astype(f32)).astype(jnp.int32), 1)
    return Geometry(b=b, logical=logical, written=written, hot=hot, pre=pre, round_pages=rnd)


def init(n_blocks: int, max_pages: int) -> State:
    """A secure-erased drive: nothing mapped, every block erased."""
    p = n_blocks * max_pages
    z = jnp.zeros((), jnp.int32)
    return State(l2p=jnp.full((p,), -1, jnp.int32), p2l=jnp.full((p,), -1, jnp.int32),
                 valid=jnp.zeros((n_blocks,), jnp.int32), closed=jnp.full((n_blocks,), -1, jnp.int32),
                 spare=jnp.asarray(n_blocks - 1, jnp.int32), next_fresh=z, host=z, cycle=z)


# --------------------------------------------------------------------------------------- random stream

def _hash(x: jax.Array) -> jax.Array:
    """lowbias32 integer hash (C. Wellons), uint32 -> uint32."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def uniform(seed: jax.Array, n: jax.Array, stream: int) -> jax.Array:
    """A float32 in [0, 1) for counter ``n`` of ``stream`` (24-bit resolution)."""
    key = _hash(seed.astype(jnp.uint32) * jnp.uint32(0x9E3779B9) + jnp.uint32(stream))
    h = _hash(n.astype(jnp.uint32) ^ key)
    return (h >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)


def _below(u: jax.Array, n: jax.Array) -> jax.Array:
    """``floor(u·n)`` clipped to ``[0, n − 1]`` (int32)."""
    return jnp.minimum((u * n.astype(jnp.float32)).astype(jnp.int32), n - 1)


def logical_page(gp: GcParams, g: Geometry, n: jax.Array) -> jax.Array:
    """Logical page of host write ``n`` (module docstring)."""
    seq = n % g.written
    u1, u2 = uniform(gp.seed, n, 0), uniform(gp.seed, n, 1)
    uni = _below(u1, g.written)
    hot = jnp.where(u1 < gp.hot_share, _below(u2, g.hot), g.hot + _below(u2, g.written - g.hot))
    pat = jnp.where(gp.pattern == 0, seq, jnp.where(gp.pattern == 1, uni, hot))
    return jnp.where(n < g.pre, seq, pat)


# ---------------------------------------------------------------------------------------------- policies

class Policy(NamedTuple):
    """A GC victim policy: ``select(gp, g, state, eligible) -> block`` (eligible: bool per block)."""

    name: str
    select: Callable[[GcParams, Geometry, State, jax.Array], jax.Array]


def greedy() -> Policy:
    """Fewest valid pages (ties: lowest block number)."""
    return Policy("greedy", lambda gp, g, st, ok: jnp.argmin(jnp.where(ok, st.valid, BIG)))


def fifo() -> Policy:
    """Oldest closed block (FIFO; LRU cleaning in Desnoyers' terms)."""
    return Policy("fifo", lambda gp, g, st, ok: jnp.argmin(jnp.where(ok, st.closed, BIG)))


def cost_benefit() -> Policy:
    """Largest ``age·(1 − u)/(2u)``, ``u`` the valid fraction, age in cycles (Rosenblum & Ousterhout)."""
    def select(gp, g, st, ok):
        u = st.valid.astype(jnp.float32) / g.b.astype(jnp.float32)
        age = (st.cycle - st.closed).astype(jnp.float32) + 1.0
        score = jnp.where(u > 0, age * (1.0 - u) / (2.0 * jnp.maximum(u, 1e-9)), jnp.inf)
        return jnp.argmax(jnp.where(ok, score, -jnp.inf))
    return Policy("cost_benefit", select)


def d_choices() -> Policy:
    """Fewest valid pages among ``d`` blocks drawn uniformly with replacement (Van Houdt 2013)."""
    def select(gp, g, st, ok):
        n_blocks = st.valid.shape[0]
        j = jnp.arange(D_MAX, dtype=jnp.uint32)
        u = uniform(gp.seed, st.cycle.astype(jnp.uint32) * jnp.uint32(D_MAX) + j, 2)
        cand = _below(u, jnp.asarray(n_blocks, jnp.int32))
        use = (jnp.arange(D_MAX) < gp.d) & ok[cand]
        score = jnp.where(use, st.valid[cand], BIG)
        pick = cand[jnp.argmin(score)]
        return jnp.where(jnp.any(use), pick, greedy().select(gp, g, st, ok))
    return Policy("d_choices", select)


FACTORIES: dict[str, Callable[[], Policy]] = {"greedy": greedy, "fifo": fifo, "cost_benefit": cost_benefit,
                                              "d_choices": d_choices}
assert tuple(FACTORIES) == POLICIES  # GcParams.policy indexes this order


def victim(gp: GcParams, g: Geometry, st: State, policy: str | None = None) -> jax.Array:
    """The policy's victim among closed blocks other than the spare.

    ``policy`` (static) names the one policy to evaluate; ``None`` evaluates all and picks by
    ``gp.policy`` (a batch mixing policies: four scans of the blocks per cycle instead of one).
    """
    ok = (jnp.arange(st.valid.shape[0]) != st.spare) & (st.closed >= 0)
    if policy is not None:
        return FACTORIES[policy]().select(gp, g, st, ok).astype(jnp.int32)
    picks = jnp.stack([FACTORIES[name]().select(gp, g, st, ok) for name in POLICIES])
    return picks[gp.policy].astype(jnp.int32)


# ------------------------------------------------------------------------------------------------- cycle

def cycle(gp: GcParams, g: Geometry, st: State, policy: str | None = None) -> tuple[State, CycleOut]:
    """Fill one block (module docstring, steps 1–2); ``policy``: see :func:`victim`.

    The reverse map is read as it was before the cycle and written by one scatter: the victim's copies,
    its erase, the host writes' invalidations and the host writes never give one entry two different
    values (a copy that the host rewrites in the same block is written invalid; an old copy in the
    victim is looked for at its new place).  The forward map is then updated from the destination
    block as written.  This order (read l2p, write p2l, read p2l, write l2p) lets XLA update both maps
    in place; a gather of one map fused into the other's scatter made it copy both every cycle
    (tested against a page-by-page Python FTL).
    """
    n_blocks, m = st.valid.shape[0], st.p2l.shape[0] // st.valid.shape[0]
    oob = st.p2l.shape[0]  # out-of-bounds index: a masked scatter is dropped
    fresh = st.next_fresh < n_blocks - 1
    gc_on = ~fresh
    v = victim(gp, g, st, policy)
    blk = jnp.where(fresh, st.next_fresh, st.spare)
    j = jnp.arange(m)

    # GC: the victim's valid pages, compacted to the start of the destination block
    vslots = jax.lax.dynamic_slice(st.p2l, (v * m,), (m,))
    live = (vslots >= 0) & (j < g.b) & gc_on
    rank = jnp.cumsum(live) - 1
    k = jnp.sum(live).astype(jnp.int32)
    dest = blk * m + rank

    # host writes into the rest of the block; of several writes of one page only the last stays valid
    room = g.b - k
    lpn = logical_page(gp, g, st.host + j)
    active = j < room
    same = lpn[None, :] == lpn[:, None]
    last = active & ~jnp.any(same & (j[None, :] > j[:, None]) & active[None, :], axis=1)
    first = active & ~jnp.any(same & (j[None, :] < j[:, None]) & active[None, :], axis=1)
    rewritten = live & jnp.any((vslots[:, None] == lpn[None, :]) & active[None, :], axis=1)
    old = st.l2p[lpn]
    in_victim = gc_on & (old >= 0) & (old // m == v)
    old_now = jnp.where(in_victim, blk * m + rank[jnp.clip(old - v * m, 0, m - 1)], old)
    stale = first & (old >= 0)
    ppn = blk * m + k + j

    valid = st.valid.at[jnp.where(stale & ~in_victim, old // m, n_blocks)].add(-1, mode="drop")
    valid = valid.at[jnp.where(gc_on, v, n_blocks)].set(0, mode="drop")
    valid = valid.at[blk].set((jnp.sum(live & ~rewritten) + jnp.sum(last)).astype(valid.dtype))
    # the scatter's indices read the new valid counts (always >= 0): every read of the old p2l (valid's
    # included) is then ordered before its in-place update, and XLA does not copy p2l each cycle
    p2l_idx = jnp.concatenate([
        jnp.where(live, dest, oob), jnp.where(gc_on, v * m + j, oob), jnp.where(stale, old_now, oob),
        jnp.where(active, ppn, oob)])
    p2l = st.p2l.at[jnp.where(valid[blk] >= 0, p2l_idx, oob)].set(jnp.concatenate([
        jnp.where(rewritten, -1, vslots), jnp.full((m,), -1, jnp.int32), jnp.full((m,), -1, jnp.int32),
        jnp.where(last, lpn, -1)]).astype(st.p2l.dtype), mode="drop")
    # the destination block now holds exactly the pages it maps: point them here (reading the new p2l
    # orders this write after every read of l2p above, so neither map is copied)
    here = jax.lax.dynamic_slice(p2l, (blk * m,), (m,))
    here = jnp.where(valid[blk] >= 0, here, -1)  # always true: orders the l2p write after valid's read of it
    l2p = st.l2p.at[jnp.where(here >= 0, here, oob)].set((blk * m + j).astype(st.l2p.dtype), mode="drop")
    closed = st.closed.at[jnp.where(gc_on, v, n_blocks)].set(-1, mode="drop").at[blk].set(st.cycle)
    new = State(l2p=l2p, p2l=p2l, valid=valid, closed=closed, spare=jnp.where(fresh, st.spare, v),
                next_fresh=st.next_fresh + fresh.astype(jnp.int32), host=st.host + room, cycle=st.cycle + 1)
    gc = gc_on.astype(jnp.int32)
    return new, CycleOut(host=room, copies=k, erases=gc)


def trim(st: State, lo: jax.Array, hi: jax.Array) -> State:
    """TRIM logical pages ``[lo, hi)``: unmap them and invalidate their physical copies."""
    n_blocks, m = st.valid.shape[0], st.p2l.shape[0] // st.valid.shape[0]
    lpn = jnp.arange(st.l2p.shape[0])
    hit = (lpn >= lo) & (lpn < hi) & (st.l2p >= 0)
    p2l = st.p2l.at[jnp.where(hit, st.l2p, st.p2l.shape[0])].set(-1, mode="drop")
    valid = jax.ops.segment_sum((p2l >= 0).astype(jnp.int32), jnp.arange(p2l.shape[0]) // m,
                                num_segments=n_blocks)
    return st._replace(l2p=jnp.where(hit, -1, st.l2p), p2l=p2l, valid=valid)


def run(gp: GcParams, n_blocks: int, max_pages: int, n_cycles: int, state: State | None = None,
        policy: str | None = None) -> tuple[State, CycleOut]:
    """Scan ``n_cycles`` cycles from ``state`` (default: secure-erased); per-cycle outputs."""
    g = geometry(gp, n_blocks)
    st = init(n_blocks, max_pages) if state is None else state
    return jax.lax.scan(lambda s, _: cycle(gp, g, s, policy), st, None, length=n_cycles)


# ------------------------------------------------------------------------------------ time and rounds

class Timing(NamedTuple):
    """Seconds per NAND page of each kind of work (the same physics as ``ssdx.models.fluid.model``).

    ``prog_s``/``read_s``: page program / read time spread over every plane of every die (the die-array
    time per page when writes stripe across them); ``erase_s``: block erase over the planes; ``bus_s``:
    one page over the NAND channels; ``host_s``: one page of host data over the link at the host
    ceiling (``fluid.rates(...).host``); ``page_bytes``.
    """

    prog_s: jax.Array
    read_s: jax.Array
    erase_s: jax.Array
    bus_s: jax.Array
    host_s: jax.Array
    page_bytes: jax.Array


def timing(drive, workload) -> Timing:
    """:class:`Timing` of a ``ssdx.params.Drive`` under a ``Workload`` (its block size and queue depth)."""
    from ssdx.models.fluid import model as fluid
    nand = drive.nand
    planes = drive.dies * drive.planes_per_die
    host = fluid.rates(drive, workload).host
    prog_s = fluid.die_time(drive).native * nand.page_bytes  # the fluid engine's native program time
    return Timing(prog_s=prog_s, read_s=nand.t_read_us * 1e-6 / planes,
                  erase_s=nand.t_erase_us * 1e-6 / planes, bus_s=nand.page_bytes / drive.bus_bytes_per_s,
                  host_s=nand.page_bytes / host, page_bytes=nand.page_bytes)


def cycle_time(tm: Timing, gp: GcParams, out: CycleOut) -> jax.Array:
    """Seconds to write one cycle: the slowest of the die array (programs of host data and copies,
    copy reads, erases), the channels (host pages once, copies twice: out and back, no copy-back) and
    the host link (host pages are ``1/c`` NAND pages of host data)."""
    h, c, e = (x.astype(tm.prog_s.dtype) for x in out)
    nand = (h + c) * tm.prog_s + c * tm.read_s + e * tm.erase_s
    bus = (h + 2.0 * c) * tm.bus_s
    link = h / gp.compressibility * tm.host_s
    return jnp.maximum(jnp.maximum(nand, bus), link)


def steady_state(y: jax.Array, window: int = 5, max_excursion: float = 0.20,
                 max_slope: float = 0.10) -> tuple[jax.Array, jax.Array]:
    """SNIA PTS steady state on a per-round tracking variable ``y`` (R,).

    Window of ``window`` rounds ending at round ``r``: steady when ``max − min ≤ max_excursion·mean`` and
    the least-squares line's change across the window ``≤ max_slope·mean``.  Returns ``(ok (R,), first)``
    with ``first`` the 1-based number of the first round ending a steady window (0 if none).
    """
    n = y.shape[0]
    idx = jnp.arange(n)[:, None] - (window - 1) + jnp.arange(window)[None, :]
    ok_idx = idx >= 0
    w = y[jnp.clip(idx, 0, n - 1)]
    full = jnp.all(ok_idx, axis=1) & jnp.all(jnp.isfinite(w), axis=1)
    mean = jnp.mean(w, axis=1)
    x = jnp.arange(window, dtype=y.dtype) - (window - 1) / 2.0
    slope = jnp.sum(x * (w - mean[:, None]), axis=1) / jnp.sum(x * x)
    ok = full & (jnp.max(w, axis=1) - jnp.min(w, axis=1) <= max_excursion * jnp.abs(mean)) \
        & (jnp.abs(slope * (window - 1)) <= max_slope * jnp.abs(mean))
    first = jnp.where(jnp.any(ok), jnp.argmax(ok) + 1, 0)
    return ok, first


def rounds(gp: GcParams, tm: Timing, n_blocks: int, max_pages: int, n_rounds: int,
           max_cycles: int, policy: str | None = None) -> dict[str, jax.Array]:
    """Secure erase, precondition, then ``n_rounds`` SNIA rounds of the pattern (one drive).

    Runs cycles until the last round's host pages are written (or ``max_cycles``).  A cycle counts
    in the round in which it starts (a cycle is one block, much less than a round).  Returns per-round
    sums (``host``, ``copies``, ``erases`` in NAND pages, ``time_s``) and the preconditioning totals.
    """
    g = geometry(gp, n_blocks)
    target = g.pre + n_rounds * g.round_pages
    z = jnp.zeros((n_rounds,), jnp.int32)
    acc0 = (z, z, z, jnp.zeros((n_rounds,), jnp.float32), jnp.zeros((4,), jnp.float32))

    def cond(c):
        st, _ = c
        return (st.host < target) & (st.cycle < max_cycles)

    def body(c):
        st, (h, cp, er, t, pre) = c
        r = jnp.where(st.host < g.pre, n_rounds, (st.host - g.pre) // g.round_pages)
        new, out = cycle(gp, g, st, policy)
        dt = cycle_time(tm, gp, out)
        h, cp, er = h.at[r].add(out.host, mode="drop"), cp.at[r].add(out.copies, mode="drop"), \
            er.at[r].add(out.erases, mode="drop")
        t = t.at[r].add(dt.astype(jnp.float32), mode="drop")
        in_pre = (st.host < g.pre).astype(jnp.float32)
        pre = pre + in_pre * jnp.stack([out.host, out.copies, out.erases, dt]).astype(jnp.float32)
        return new, (h, cp, er, t, pre)

    st, (h, cp, er, t, pre) = jax.lax.while_loop(cond, body, (init(n_blocks, max_pages), acc0))
    return {"host": h, "copies": cp, "erases": er, "time_s": t, "pre": pre, "cycles": st.cycle,
            "complete": st.host >= target}


def metrics(gp: GcParams, tm: Timing, n_blocks: int, max_pages: int, n_rounds: int,
            max_cycles: int, policy: str | None = None) -> dict[str, jax.Array]:
    """Scalar and per-round figures of :func:`rounds` (for sweeps and the CLI).

    ``wa_rounds``/``mb_s_rounds``: per round, NAND pages per host page (× compressibility) and host
    MB/s (1 MB = 1e6 bytes); ``steady_state_round``: SNIA PTS on the per-round MB/s (0 = not reached);
    ``write_amplification``/``mb_s``: over the last five rounds (the longest-run estimate; the SNIA
    window itself may end while a slow transient still moves by less than its 20 %/10 % bounds);
    ``precondition_wa``: over the preconditioning.
    """
    r = rounds(gp, tm, n_blocks, max_pages, n_rounds, max_cycles, policy)
    c = gp.compressibility.astype(jnp.float32)
    h = r["host"].astype(jnp.float32)
    nand = h + r["copies"].astype(jnp.float32)
    wa = jnp.where(h > 0, c * nand / jnp.maximum(h, 1.0), jnp.nan)
    host_bytes = h / c * tm.page_bytes
    mbs = jnp.where(r["time_s"] > 0, host_bytes / jnp.maximum(r["time_s"], 1e-30) / 1e6, jnp.nan)
    _, first = steady_state(mbs)
    last = slice(max(n_rounds - 5, 0), n_rounds)
    hl, nl = jnp.sum(h[last]), jnp.sum(nand[last])
    pre = r["pre"]
    return {
        "write_amplification": jnp.where(hl > 0, c * nl / jnp.maximum(hl, 1.0), jnp.nan),
        "mb_s": jnp.sum(host_bytes[last]) / jnp.maximum(jnp.sum(r["time_s"][last]), 1e-30) / 1e6,
        "steady_state_round": first,
        "precondition_wa": jnp.where(pre[0] > 0, c * (pre[0] + pre[1]) / jnp.maximum(pre[0], 1.0), jnp.nan),
        "wa_rounds": wa,
        "mb_s_rounds": mbs,
        "erases_per_host_page": jnp.sum(r["erases"][last]) / jnp.maximum(hl, 1.0),
        "complete": r["complete"],
        "cycles": r["cycles"],
    }
