"""The data of the SCM/NAND hybrid model (:mod:`ssdx.models.hybrid.model`): a chunk of 4 KiB lines
(:class:`Lines`), the drive's state (:class:`State`: the SCM table, the gather buffer, the busy-until times
of dies, channels, SCM banks and link, the request in flight) and the accumulators (:class:`Acc`); the
SCM table's set hash and victim order, the time at which flushed data fits the SCM again
(:func:`space_time`), and the empty drive (:func:`init`, :func:`zero_acc`).  Times in s."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.core.stats import N_BINS
from ssdx.models.hybrid.params import VICTIMS, HybridParams, Layout

LRU, FIFO, CFLRU = (VICTIMS.index(v) for v in ("lru", "fifo", "cflru"))
_HASH = np.uint32(2654435761)  # Knuth's multiplicative hash constant (2^32 / golden ratio)


class Lines(NamedTuple):
    """One chunk of 4 KiB lines, shape ``(L,)`` each, shared by every configuration."""

    op: jax.Array  # int32 READ/WRITE
    line: jax.Array  # int32 logical line (offset // 4 KiB)
    sectors: jax.Array  # int32 512 B sectors of the request inside this line
    first: jax.Array  # bool: first line of its request
    last: jax.Array  # bool: last line of its request
    measure: jax.Array  # bool: counted in the metrics (after the warm-up)
    half: jax.Array  # bool: in the second half of the measured window (steady-state check)
    valid: jax.Array  # bool: False on padding


class State(NamedTuple):
    """SCM table, gathering unit, NAND dies, channels, SCM banks, host link and host slots of one drive
    (times relative to the last issue)."""

    tag: jax.Array  # (S, A) int32 line held; -1 empty
    stamp: jax.Array  # (S, A) int32 recency (LRU) or insertion (FIFO) clock
    dirty: jax.Array  # (S, A) bool
    gtag: jax.Array  # (S, G) int32 gathering line; live while gunit == unit_id
    gunit: jax.Array  # (S, G) int32
    resident: jax.Array  # int32 lines in the table
    gather: jax.Array  # int32 lines in the gathering unit
    unit_id: jax.Array  # int32 units flushed so far
    clock: jax.Array  # int32 lines served
    wptr: jax.Array  # int32 die of the next flush
    slots: jax.Array  # (Q,) completion times of the host slots; inf = not in use
    die_free: jax.Array  # (D,) end of all booked die work
    die_r: jax.Array  # (D,) end of booked reads (read priority)
    op_end: jax.Array  # (D,) end of the program in progress (or last started) on each die
    prog_end: jax.Array  # (D,) end of the last program booked on each die (reads it waits for included)
    op_len: jax.Array  # (D,) length of one program operation on each die (the latest unit's pages x t_prog)
    unit_len: jax.Array  # (D,) die time of the latest unit flushed to each die (its programs and its GC)
    susp: jax.Array  # (D,) int32 suspensions of the program in progress
    chan_free: jax.Array  # (C,) fluid backlog end of each channel bus (``fluid_book``)
    scm_free: jax.Array  # (K,) fluid backlog end of each SCM bank
    link_free: jax.Array  # (2,) fluid backlog end of the host link's two directions (to host, to drive)
    req_slot: jax.Array  # int32 slot of the request in service
    req_done: jax.Array  # completion of its lines so far
    req_miss: jax.Array  # int32 lines of it read from NAND so far
    req_read_end: jax.Array  # end of its latest NAND page read
    req_stall: jax.Array  # longest wait of one of its lines for SCM space


class Acc(NamedTuple):
    """Sums over the measured lines of a chunk (busy times in resource-seconds)."""

    elapsed: jax.Array
    elapsed_c: jax.Array
    count: jax.Array  # (2,) requests read / write
    lines: jax.Array  # (2,)
    lat_sum: jax.Array  # (2,)
    hist: jax.Array  # (2, N_BINS) int32
    scm_hits: jax.Array  # (2,) lines served from SCM
    nand_reads: jax.Array  # pages read for host misses
    nand_programs: jax.Array  # pages of host data programmed (before GC)
    flushes: jax.Array
    partial_flushes: jax.Array
    skipped: jax.Array  # insertions over the threshold whose set held nothing to evict
    stall: jax.Array  # s writes waited for SCM space
    busy: jax.Array  # (D,) die-seconds
    chan_busy: jax.Array  # channel-seconds (all channels)
    scm_busy: jax.Array  # bank-seconds (all SCM banks)
    link_busy: jax.Array  # (2,) host-link seconds, to the host (reads) and to the drive (writes)
    suspensions: jax.Array  # programs suspended for reads
    read_waits: jax.Array  # NAND page reads that waited for a program (its suspensions spent)
    pending_hits: jax.Array  # read lines served from flushed data not yet programmed
    half_count: jax.Array  # (2,) requests completed in the first / second half of the measured window
    half_elapsed: jax.Array  # (2,) issue-clock seconds of each half
    half_busy: jax.Array  # (2, 4) work booked in each half on the dies, channels, SCM banks and link, s


def set_index(line: jax.Array, sets: jax.Array) -> jax.Array:
    """Set of ``line``: Knuth's multiplicative hash modulo the active set count (int32)."""
    h = line.astype(jnp.uint32) * _HASH
    return (h % sets.astype(jnp.uint32)).astype(jnp.int32)


def victim_key(policy: jax.Array, stamp: jax.Array, dirty: jax.Array, empty: jax.Array) -> jax.Array:
    """Eviction order of a set's ways (smallest leaves first): ``lru`` and ``fifo`` by stamp (a hit
    refreshes the stamp only under LRU), ``cflru`` clean lines before dirty ones, each by recency.
    Empty ways never leave.  Ways outside the first choice get the int32 maximum rather than an offset
    stamp, so the order holds for any stamp below it (2^31 lines served)."""
    full = ~empty
    clean_first = (policy == CFLRU) & jnp.any(full & ~dirty)
    return jnp.where(full & ~(clean_first & dirty), stamp, jnp.iinfo(jnp.int32).max)


def space_time(die_free: jax.Array, rate: jax.Array, room: jax.Array) -> jax.Array:
    """Earliest time ``t >= 0`` at which the flushed data still waiting on the dies fits in ``room`` lines.

    Die ``d`` holds ``rate·max(die_free[d] − t, 0)`` lines not yet programmed (it programs ``rate`` lines
    per second and SCM frees each line once programmed), so the condition is
    ``h(t) = Σ_d max(f_d − t, 0) <= room / rate``.  ``h`` is the upper envelope of ``S_k − k·t`` over the
    sums ``S_k`` of the ``k`` largest ``f_d``, hence ``t = max(0, max_k (S_k − room/rate) / k)``.  The top-k
    sets are formed pairwise (``{j: f_j >= f_i}`` for each die ``i``; ties only add the endpoints of a linear
    stretch), which on a CPU is several times faster than sorting a few dozen values per step.  Exact for
    any mix of unit sizes."""
    f = jnp.maximum(die_free, 0.0)
    ge = f[None, :] >= f[:, None]
    k = jnp.sum(ge, axis=1).astype(f.dtype)
    top = jnp.sum(jnp.where(ge, f[None, :], 0.0), axis=1)
    return jnp.maximum(jnp.max((top - room / rate) / k), 0.0)


def init(p: HybridParams, lay: Layout) -> State:
    """An empty SCM, idle dies, channels, banks and link, and free host slots at time 0."""
    z = jnp.zeros_like(p.t_read)
    i0 = jnp.int32(0)
    sa, sg = (lay.sets, lay.ways), (lay.sets, lay.gways)
    dies = jnp.zeros((lay.dies,), z.dtype)
    return State(
        tag=jnp.full(sa, -1, jnp.int32), stamp=jnp.zeros(sa, jnp.int32), dirty=jnp.zeros(sa, bool),
        gtag=jnp.full(sg, -1, jnp.int32), gunit=jnp.full(sg, -1, jnp.int32),
        resident=i0, gather=i0, unit_id=i0, clock=i0, wptr=i0,
        slots=jnp.where(jnp.arange(lay.slots) < p.queue_depth, z, jnp.inf),
        die_free=dies, die_r=dies, op_end=dies, prog_end=dies, op_len=dies, unit_len=dies,
        susp=jnp.zeros((lay.dies,), jnp.int32),
        chan_free=jnp.zeros((lay.channels,), z.dtype),
        scm_free=jnp.zeros((lay.banks,), z.dtype), link_free=jnp.zeros((2,), z.dtype),
        req_slot=i0, req_done=z, req_miss=i0, req_read_end=z, req_stall=z,
    )


def zero_acc(p: HybridParams, lay: Layout) -> Acc:
    """Empty accumulators."""
    z = jnp.zeros_like(p.t_read)
    two = jnp.zeros((2,), z.dtype)
    return Acc(elapsed=z, elapsed_c=z, count=two, lines=two, lat_sum=two,
               hist=jnp.zeros((2, N_BINS), jnp.int32),
               scm_hits=two, nand_reads=z, nand_programs=z, flushes=z, partial_flushes=z, skipped=z, stall=z,
               busy=jnp.zeros((lay.dies,), z.dtype), chan_busy=z, scm_busy=z, link_busy=two,
               suspensions=z, read_waits=z, pending_hits=z,
               half_count=two, half_elapsed=two,
               half_busy=jnp.zeros((2, 4), z.dtype))
