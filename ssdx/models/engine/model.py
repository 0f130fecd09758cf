"""Request-level SSD engine: one ``lax.scan`` over a request stream shared by every configuration.

A batch of configurations is stepped together, with the configurations on the **last axis** of every
array (a die array is ``(dies, B)``): an operation that broadcasts a per-configuration value over the
dies, or reduces over them, then reads contiguous memory (faster on a CPU than with ``vmap``'s leading batch
axis; ``docs/performance.md``).  The request is shared by the batch, so its type picks
one branch (``lax.switch``): a read computes only the read path, a write only the write path, and a
read that lies on one die in every configuration books that die alone (:data:`READ_DIES`).  Each
configuration keeps the state of its own resources, as busy-until times relative to the current
request's issue time (rebased every step, so float32 keeps sub-microsecond resolution over a week-long
trace; the absolute clock is a compensated sum).  Outstanding commands are kept sorted, so the next
free slot is the first.  This batched step is the GPU path; on a CPU, ``ssdx.models.engine.cpu`` runs
the same step as a compiled per-configuration loop (``engine.backend``, ``ssdx.models.engine.params``).  A
change to the model must be made in both; ``tests/test_engine_cpu.py`` compares them request by request.

**Resources and path of a request** (times in s):

1. *Host queue.*  ``closed`` loop: ``workload.queue_depth`` slots; a request is issued when the earliest
   slot frees (fio's iodepth).  ``open`` loop: it arrives at its trace time (÷ ``time_scale``) and is
   issued at ``max(arrival, earliest free slot)``; latency counts from arrival.
2. *Controller front end* — one server, ``ctrl_s`` per command; then the interface's fixed
   ``cmd_overhead_s`` (host + controller command processing, pipelined: latency only).
3. *Mapping lookup* — a drive with DRAM holds the table (``map_hit_s``).  A DRAM-less drive caches
   translation pages (one NAND page of 4-byte entries, each mapping 4 KiB) in a direct-mapped cache of
   ``map_cache_pages`` sets (the DFTL cached mapping table, Gupta et al., ASPLOS 2009, direct-mapped); a
   miss reads the translation page from its die in SLC-mode timing (``t_read_slc``) and moves
   ``engine.map_read_bytes`` of it over the channel (``t_map_xfer``) before the data.
   That is ``engine.map_cache = auto``.  ``direct`` and ``lru`` keep the table in flash on every drive,
   DRAM or not (MQSim caches it in its CMT unless ``Ideal_Mapping_Table``; Tavakkol et al., FAST 2018),
   in ``map_cache_pages`` slots, direct-mapped or fully associative with least-recently-used
   replacement (an empty slot first; a per-configuration clock of uses, ``map_age``).  A write marks its
   translation page dirty (it updates the page's entries); a miss that evicts a dirty page writes it
   back: the page is read (``t_read_slc``) and programmed (the pSLC program time of one operation) on
   its die ``tpage mod D``, as background work behind the die's backlog from the request's issue on;
   the request does not wait for it (MQSim issues the write-back and frees the slot at once), and the
   reads and writes after it find the die busier.  Write-backs are counted (``map_writebacks``).
   Differences from MQSim, whose CMT is LRU over *entries* (one per logical page; capacity
   ``CMT_Capacity`` / entry bytes): ssdx caches whole translation pages, so a sequential stream misses
   once per translation page where MQSim reads one for every entry; one translation page per request
   (its first logical page); write-back programs are not part of the suspension model's
   program/erase runs.  ``entries`` is MQSim's CMT itself (LRU over entries, an evicted dirty entry
   writing back its translation page with all its dirty entries); which requests miss and write back
   is computed on the host (``ssdx.models.engine.entries``) and arrives with the requests
   (``Requests.map_miss``, ``wb_tpage``, ``wb_count``); several write-backs of one request are booked
   together on the die of the first.  *A translation page in flight is read once*: a lookup of the page
   of the latest translation read, made before that read's entries are in (``map_tp``, ``map_end``),
   issues no read of its own, hit or miss, and waits for that one (a controller does not read a page it
   is already reading; MQSim's ``ArrivingMappingEntries``, Address_Mapping_Unit_Page_Level).  Only the
   latest translation read is remembered, which is what a sequential stream needs.
4. *Striping* — logical page ``j`` (NAND-page sized) lives on die ``j mod D``; die ``d`` sits on channel
   ``d mod C``, way ``d div C``; consecutive pages on one die fall on consecutive planes (channel-first,
   then way, then plane: MQSim's CWDP order, Tavakkol et al., FAST 2018).  A request touching ``k``
   pages puts ``n_d`` on die ``d`` and costs that die ``ceil(n_d / planes)`` multi-plane operations.
   Writes do not follow the logical address: they fill a **write frontier** of program units
   (``planes × page`` bytes, one multi-plane program) dealt round-robin over the dies, as a log-structured
   FTL does; data waits in the buffer until a unit is full.  With ``engine.write_back = eager`` every
   page a write touches is sent to flash at once instead, on the die of its logical address (the pages
   of one die in ``ceil(n_d / planes)`` programs), as MQSim's data cache managers write back data not
   written in the last second (``write_to_destage_buffer``; Tavakkol et al., FAST 2018): a 4 KiB write
   then costs a whole page program.  With ``engine.rewrite_window_s`` a page written again within the
   current window is kept in the buffer instead (``Requests.kept``, computed on the host from the
   arrival times: ``ssdx.models.engine.rewrites``), MQSim's one-second filter.  With
   ``engine.plane_merge`` each page is a program of its own unless it joins a booked program of another
   plane of its die (of the ``merge_dies`` the die stands for) that has the same page number and starts
   no earlier than the page is ready, the later of its channel transfer's end and the back pressure's
   admission (step 7); a page takes its plane's next page number, a page read before it was ever written
   too (``Requests.first_read``), as MQSim's scheduler and allocator do (``_merge_programs``, ``State.merge``
   with the latest ``MERGE_RING`` program starts a plane).
5. *Dies and channels, two classes* — host reads take priority over programs and erases at every die
   and channel (program/erase suspension, Wu & He, FAST 2012): a read waits only for earlier reads
   (``die_r``, ``chan_r``) and pushes the die's and channel's program backlog (``die_free``,
   ``chan_free``) back by its own duration.  Read: ``ceil(n_d/planes)·t_read`` on each die, then its
   bytes over the die's channel (``bus_bytes_per_s / channels``); per channel the transfers start when
   the first of its dies is done and serialise.  The die is free again when its array read ends (ONFI
   read cache); with ``engine.cache_read = false`` it is held until its data is out (:func:`_hold`), and
   a translation read until its ``map_read_bytes`` are.  Requests are issued in order but become ready out of
   order (one waits for a map read or a busy die, the next finds its die idle), and real resources
   serve what is ready: dies book reads with gap filling (:func:`~.book.book`; a die idle when a read
   is ready starts it and moves reads booked for later back), channels and the link keep a fluid
   backlog (:func:`fluid_book`), so nothing waits behind work that is not ready yet (no head-of-line
   blocking) and no resource is booked beyond its capacity (a read moved back keeps the times already
   reported for it: its latency is short by at most the overlap).  Write units: transfer over the
   channel, then program (``t_prog_slc`` while the pSLC cache has room, else native ``t_prog``, else the
   folding die time of ``ssdx.models.fluid.model.die_time``); one erase (``t_erase``) every
   ``block_pages`` units on a die.

   *Read suspension* (``engine.suspension``; MQSim's ``CMD_Suspension_Support``, Tavakkol et al., FAST
   2018).  ``program_erase`` (the default) is the model above: a read suspends whatever program or erase
   the die is running, at no cost unless ``suspend_program_s``/``suspend_erase_s`` are set.  Under
   ``program``, ``erase`` or ``none`` a read that finds an operation it may not suspend in progress waits
   for that operation to end, then goes ahead of the die's queued programs and erases (MQSim's
   out-of-order transaction scheduler serves a die's reads first, TSU_OutOfOrder); it does not wait for
   the queue.  Each die keeps where its programs and erases lie (:class:`PE`): the current run of
   back-to-back work, its latest erase and the program operation's length ``t_op`` (one multi-plane
   unit); a write's erases come first in its run (they free the block its units go to).  A read that
   suspends takes ``suspend_*_s`` longer on the die (MQSim adds ``Suspend_Program_Time`` or
   ``Suspend_Erase_Time`` before the read command, NVM_PHY_ONFI_NVDDR2), and only suspends an operation
   with at least ``suspend_min_*_s`` left (MQSim's ``Preferred_suspend_write_time_for_read`` /
   ``Preferred_suspend_erase_time_for_read``), else it waits.  A read that follows another read of the
   die pays nothing more: the die is not programming then.  Translation-page reads (step 3) follow the
   same rule.  Reads that suspended are counted (``suspensions``: program, erase).  Under the defaults
   (``program_erase`` at no cost, no thresholds) the runs are not tracked (``suspend_on`` false): the
   engine is the model above, bit for bit, and counts no suspensions.  Approximations: the
   operations of a run are taken to be of equal length ``t_op`` (a write switching program mode mid-run
   shifts the grid), only the latest erase of a die is placed exactly, and one read suspends one
   operation (MQSim suspends at most one command per chip).
6. *Host link* — reads stream out cut-through (the first die's data starts the transfer, the last page
   ends it); writes come in before anything else.  PCIe is full duplex (one link resource per direction);
   SATA is half duplex (one shared).
7. *Write acknowledgement* — the buffer (``write_buffer_bytes``) drains at the die array's program rate
   ``ρ = D·unit/t_unit``; a write is acknowledged at ``max(host transfer end, end of the program
   backlog − buffer/ρ)``, i.e. once the data ahead of it fits in the buffer (FIFO fluid buffer).
   With ``engine.buffer_dram_mts > 0`` the buffer is DRAM with MQSim's timing (its data cache,
   ``Data_Cache_DRAM_*``; Tavakkol et al., FAST 2018): after its host transfer a write's data goes into
   the DRAM through one memory channel that serves writes in order, ``_dram_time`` each (``tRCD + tCL``
   per row opened, ``tRP`` between rows, ``floor(bytes / burst / 2)`` transfers of ``1 / rate``), and
   "the host transfer end" above becomes the end of that DRAM write.  Eager write-back (step 4) is
   acknowledged differently: the write enters the buffer once the data in flight to flash, its own
   included, fits in ``inflight_bytes`` (MQSim's back pressure, one page per plane of the drive), taking
   the in-flight data as the dies' summed backlogs at this write's bytes per program; then its DRAM
   write, and the ack.  Not modelled: MQSim's reads of the DRAM when it evicts data to flash and its
   read hits in the data cache.

**pSLC accounting** reuses the fluid engine's (``ssdx.models.fluid.model.plan``/``init``): the rooms of the
pSLC cache (and its dynamic-region cap, ``room_cap0``) and of direct native writes at the start, and the
same affine room coefficients as bytes are written, so a replayed write stream switches program timing
exactly where a fill would, in every pSLC mode (``hybrid`` and a capped ``dynamic`` included).  Idle time
(all dies idle before an arrival) folds pSLC data back at ``fluid.rates().idle_fold`` (the drive's
``idle_fold_bytes_per_s`` when set).  pure_slc drives keep pSLC timing and pure_native drives native
timing when their room runs out (overwrites; garbage collection is the GC model's concern,
``ssdx.models.gc.model`` — this engine replays a drive whose free blocks the accounting provides).  Reads
cost native ``t_read`` (preconditioned data sits in native blocks).

**Outputs** per configuration (:class:`Acc`, summed per chunk): requests, bytes, latency sums and a
latency histogram (log-spaced, :data:`BINS_PER_DECADE` bins per decade from 0.1 µs to 100 s) per
operation type (read, write, trim), queue time (time spent waiting for a busy resource along the
request's path, including the host queue), per-die busy time, NAND page reads and programs, erases,
mapping-cache misses and write-backs, and reads that suspended a program or an erase.  :func:`metrics`
turns them into IOPS, bandwidth, mean and percentile latency, queue-time share and per-die utilisation.
"""


from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from ssdx.core.stats import kahan_add, latency_bin
from ssdx.models.booking import fluid_book
from ssdx.models.engine.admission import END_SLACK, _admission, _admission_programs, _bp_limit, _dram_time
from ssdx.models.engine.book import FIT_SLACK, pick, shift
from ssdx.models.engine.pages import (
    _allocate_reads,
    _kept_per_die,
    _merge_programs,
    _page_count,
    _pages,
    _per_die,
    _place,
)
from ssdx.models.engine.params import MERGE_RING, Layout
from ssdx.models.engine.reads import (
    READ_DIES,
    _by_channel,
    _hold,
    _map_read,
    _positions,
    _push_runs,
    _read_book,
    _read_book_at,
)
from ssdx.models.engine.state import (
    OPS,
    PE,
    READ,
    TRIM,
    WRITE,
    Acc,
    Plan,
    Requests,
    Server,
    State,
    init,
    metrics,
    plan,
    plan_batch,
    requests,
    to_host,
    zero_acc,
)

__all__ = ["END_SLACK", "FIT_SLACK", "OPS", "PE", "READ", "TRIM", "WRITE", "Acc", "Plan", "Requests",
           "Server", "State", "init", "metrics", "plan", "plan_batch", "requests", "run_chunk", "step",
           "to_host", "zero_acc"]


class Front(NamedTuple):
    """What every request shares: host queue, controller (times relative to the new origin, the issue
    instant, except ``issue`` itself, relative to the previous one) and the idle-folded bytes."""

    issue: jax.Array
    arrival: jax.Array
    ctrl_start: jax.Array
    t_cmd: jax.Array
    fold_x: jax.Array


def _front(p: Plan, s: State, r: Requests) -> tuple[Front, State]:
    """1-2: arrival and issue (earliest free slot), idle folding while every die was idle, controller;
    returns the front and the state rebased to the issue instant, with the folding accounted."""
    slot_free = s.slots[0]  # slots are kept sorted: the earliest completion comes first
    arrival = s.last_arrival + r.gap_s.astype(slot_free.dtype) / p.time_scale
    issue = jnp.where(p.open_loop, jnp.maximum(arrival, slot_free), slot_free)
    arrival = jnp.where(p.open_loop, arrival, issue)
    idle = jnp.maximum(issue - s.free_max, 0.0)
    fold_x = jnp.minimum(idle * p.idle_fold_rate, jnp.maximum(p.s0 + s.ds, 0.0))
    ctrl_start = jnp.maximum(s.ctrl_free - issue, 0.0)
    f = Front(issue=issue, arrival=arrival - issue, ctrl_start=ctrl_start,
              t_cmd=ctrl_start + p.ctrl_s + p.cmd_s, fold_x=fold_x)
    t = issue[None]
    rebased = s._replace(
        slots=s.slots - t, ctrl_free=s.ctrl_free - issue, link_rx=s.link_rx - issue,
        dram_free=s.dram_free - issue,
        link_tx=s.link_tx - issue, die_free=s.die_free - t, free_max=s.free_max - issue,
        die_r=shift(s.die_r, issue), chan_free=s.chan_free - t, chan_r=s.chan_r - t,
        last_done=s.last_done - issue, ds=s.ds - fold_x, map_end=s.map_end - issue,
        pe=s.pe._replace(start=s.pe.start - t, end=s.pe.end - t, er_end=s.pe.er_end - t), dn=s.dn + fold_x,
        draw=s.draw - (p.coef.bits - 1.0) * fold_x, merge=_merge_shift(s.merge, issue),
        flight=s.flight.at[0].add(-issue[None]) if s.flight.shape[1] else s.flight)
    return f, rebased


def _merge_shift(merge: jax.Array, issue: jax.Array) -> jax.Array:
    """``State.merge`` rebased to ``issue``: its start times move, its page counts do not."""
    if merge.shape[0] == 0:
        return merge
    ring = (jnp.arange(merge.shape[0]) % (1 + MERGE_RING) > 0)[:, None, None]
    return merge - jnp.where(ring, issue[None, None], 0.0)


def _push(rest: jax.Array, done: jax.Array) -> jax.Array:
    """Insert ``done`` (B,) into the sorted outstanding completions ``rest`` (S-1, B): sorted (S, B)."""
    pos = jnp.sum(rest < done[None], axis=0)
    i = jnp.arange(rest.shape[0] + 1)[:, None]
    pad = jnp.full((1,) + done.shape, jnp.inf, done.dtype)
    here = jnp.concatenate([rest, pad])
    below = jnp.concatenate([pad, rest])
    return jnp.where(i < pos, here, jnp.where(i == pos, done[None], below))


class Look(NamedTuple):
    """3: a request's logical offset, translation page and mapping-cache probe (per configuration)."""

    off4k: jax.Array
    tpage: jax.Array
    miss: jax.Array
    tags: jax.Array  # the cache with the missed sets refilled
    age: jax.Array
    dirty: jax.Array
    writeback: jax.Array  # a dirty translation page was evicted: its number, else -1


def _lookup(p: Plan, lay: Layout, s: State, r: Requests) -> Look:
    """3: probe the translation-page cache (direct-mapped, or LRU with ``map_lru``); only reads and writes
    look up (and miss).  With ``map_writeback`` a write marks its translation page dirty, and a miss that
    evicts a dirty page writes it back (see :func:`step`).  What no configuration of the batch uses
    (``lay.map_lru``, ``lay.map_writeback``) is left out: it would change nothing."""
    tags = s.tags
    off4k = jnp.mod(r.off4k, p.cap_4k)
    tpage = off4k // p.tpage_4k
    cset = jnp.mod(tpage, p.map_sets)
    cols = jnp.arange(tpage.shape[0])
    looked = r.valid & (r.op != TRIM) & ~p.map_always_hit
    age = s.map_age
    if lay.map_lru:
        # LRU: the slot holding the page, else the least recently used (an empty one first) of this
        # configuration's map_sets slots
        in_cfg = jnp.arange(tags.shape[0])[:, None] < p.map_sets[None]
        match = (tags == tpage[None]) & in_cfg
        hit_lru = jnp.any(match, axis=0)
        victim = jnp.argmin(jnp.where(in_cfg, s.map_age, jnp.iinfo(jnp.int32).max), axis=0)
        cset = jnp.where(p.map_lru, jnp.where(hit_lru, jnp.argmax(match, axis=0), victim), cset)
        clock = jnp.max(s.map_age, axis=0) + 1
        age = jnp.where(p.map_lru & looked, s.map_age.at[cset, cols].set(clock), s.map_age)
    held = tags[cset, cols]
    miss = ~(p.map_always_hit | (held == tpage)) & r.valid & (r.op != TRIM)
    writeback = jnp.full(tpage.shape, -1, held.dtype)
    dirty = s.map_dirty
    if lay.map_writeback:
        was_dirty = s.map_dirty[cset, cols] > 0
        writeback = jnp.where(p.map_writeback & miss & (held >= 0) & was_dirty, held, -1)
        dirty_new = ((r.op == WRITE) | (~miss & was_dirty)).astype(jnp.int32)
        dirty = jnp.where(p.map_writeback & looked, s.map_dirty.at[cset, cols].set(dirty_new), s.map_dirty)
    tags = tags.at[cset, cols].set(jnp.where(miss, tpage, held))
    if lay.map_entries:  # engine.map_cache = entries: the host's entry cache decided (Requests)
        miss = jnp.where(p.map_entries, r.map_miss & r.valid & (r.op != TRIM), miss)
        writeback = jnp.where(p.map_entries, r.wb_tpage, writeback)
    return Look(off4k, tpage, miss, tags, age, dirty, writeback)


def _in_flight(s: State, look: Look, t_cmd: jax.Array) -> tuple[jax.Array, jax.Array]:
    """3: whether the request reads its translation page from flash (``miss``) and whether it waits for
    a read of that page already in flight instead (``inflight``): a lookup of the page of the latest
    translation read, before that read's entries are in, issues no read of its own and waits for them,
    hit or miss (MQSim's ``ArrivingMappingEntries``: a miss on a translation page being read reserves a
    slot and waits for that read, Address_Mapping_Unit_Page_Level; Tavakkol et al., FAST 2018)."""
    inflight = (look.tpage == s.map_tp) & (s.map_end > t_cmd)
    return look.miss & ~inflight, inflight


def _latest_map_read(s: State, miss, tpage, m_in) -> dict[str, jax.Array]:
    """The state fields :func:`_in_flight` reads: the page and entries-in time of the request's own
    translation read where it issued one, else those of the read before."""
    return dict(map_tp=jnp.where(miss, tpage.astype(s.map_tp.dtype), s.map_tp),
                map_end=jnp.where(miss, m_in, s.map_end))


def _max_free(p: Plan, die_free: jax.Array) -> jax.Array:
    return jnp.max(jnp.where(p.mask, die_free, -jnp.inf), axis=0)


def _finish(p: Plan, s: State, acc: Acc, r: Requests, f: Front, op: int, done, queue,
            state: dict | None = None, add: dict | None = None) -> tuple[State, Acc, jax.Array]:
    """Completion of a request of type ``op`` on the rebased state ``s``: the slot, the clocks, the
    ``state`` fields it changed and the accumulators (``add`` summed in, ``busy`` replaced)."""
    lat = done - f.arrival
    add = dict(add or {})
    busy = add.pop("busy", acc.busy)
    new = s._replace(slots=_push(s.slots[1:], done), ctrl_free=f.ctrl_start + p.ctrl_s,
                     last_arrival=f.arrival, last_done=jnp.maximum(s.last_done, done), **(state or {}))
    el, el_c = kahan_add(acc.elapsed, acc.elapsed_c, f.issue)
    new_acc = acc._replace(
        elapsed=el, elapsed_c=el_c, busy=busy, count=acc.count.at[op].add(1.0),
        bytes=acc.bytes.at[op].add(r.size.astype(done.dtype)), lat_sum=acc.lat_sum.at[op].add(lat),
        queue_sum=acc.queue_sum + queue, idle_folded=acc.idle_folded + f.fold_x,
        **{k: getattr(acc, k) + v for k, v in add.items()})
    return new, new_acc, lat


def _read(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests, look: Look, dies: int = 0):
    """A host read: map lookup, dies (gap-filling, read priority), channels, host link.  With ``dies``
    (its pages lie on at most that many dies in every configuration, :func:`step`) only those dies'
    bookings are computed, as for a translation read (:func:`_map_read`); with 0, every die's."""
    f, s = _front(p, s, r)
    dt = f.issue.dtype
    size = r.size.astype(dt)
    off4k, tpage = look.off4k, look.tpage
    miss, inflight = _in_flight(s, look, f.t_cmd)
    die_r, die_free, busy, pe, m_start, m_in, sus_m = _map_read(p, lay, f.t_cmd, tpage, miss,
                                                                 s.die_r, s.die_free, acc.busy, s.pe)
    t_map = jnp.where(miss, m_in, jnp.where(inflight, jnp.maximum(s.map_end, f.t_cmd + p.map_hit_s),
                                            f.t_cmd + p.map_hit_s))
    q_map = jnp.where(miss, m_start - f.t_cmd, jnp.where(inflight, s.map_end - f.t_cmd, 0.0))

    k, n_d = _pages(p, off4k, size)
    merge = _allocate_reads(p, s.merge, off4k, k, r.first_read) if lay.merge_rows else s.merge
    active = n_d > 0
    n_f = n_d.astype(dt)
    dur = jnp.ceil(n_f / p.planes[None]) * p.t_read[None]
    xfer = n_f * (size / k.astype(dt) / p.chan_rate)[None]
    hold = _hold(p, lay, s.chan_r, die_r, t_map, dur, xfer, active) if lay.hold_read else 0.0
    book_f = _read_book
    if dies:
        pos, on = _positions(p, jnp.mod(off4k // p.page_4k, p.n_dies), jnp.minimum(k, p.n_dies), dies)
        book_f = partial(_read_book_at, pos=pos, on=on)
    r_start, die_r_new, dur, s_p, s_e = book_f(p, lay, pe, die_r, ready=t_map[None], dur=dur + hold)
    r_end = r_start + dur - hold
    x_c = jnp.sum(_by_channel(xfer, lay), axis=0)
    first_c = jnp.min(_by_channel(jnp.where(active, r_end, jnp.inf), lay), axis=0)
    last_c = jnp.max(_by_channel(jnp.where(active, r_end + xfer, -jnp.inf), lay), axis=0)
    act_c = x_c > 0
    c_start, chan_r_new = fluid_book(s.chan_r, first_c, x_c)
    c_end = jnp.maximum(c_start + x_c, last_c)
    data_first = jnp.min(jnp.where(active, r_end + xfer, jnp.inf), axis=0)
    data_last = jnp.max(jnp.where(act_c, c_end, -jnp.inf), axis=0)
    link_start, tx_new = fluid_book(s.link_tx, data_first, size / p.host_rate)
    done = jnp.maximum(link_start + size / p.host_rate,
                       data_last + jnp.minimum(size, p.page_bytes) / p.host_rate)
    die_free = jnp.where(active, jnp.maximum(die_free, r_start) + dur, die_free)
    q_read = (jnp.max(jnp.where(active, r_start - t_map[None], 0.0), axis=0)
              + jnp.max(jnp.where(act_c, c_start - first_c, 0.0), axis=0) + (link_start - data_first))
    return _finish(
        p, s, acc, r, f, READ, done, -f.arrival + f.ctrl_start + q_map + q_read,
        state=dict(die_r=pick(active, die_r_new, die_r), die_free=die_free, free_max=_max_free(p, die_free),
                   pe=_push_runs(p, lay, pe, active, r_start, dur),
                   chan_r=jnp.where(act_c, chan_r_new, s.chan_r),
                   chan_free=jnp.where(act_c, jnp.maximum(s.chan_free, c_start) + x_c, s.chan_free),
                   link_tx=tx_new, link_rx=jnp.where(p.duplex, s.link_rx, tx_new), merge=merge,
                   **_latest_map_read(s, miss, tpage, m_in)),
        add=dict(busy=busy + jnp.where(active, dur, 0.0), read_pages=jnp.sum(n_f, axis=0),
                 map_misses=miss.astype(dt),
                 suspensions=sus_m + jnp.stack([jnp.sum(active & s_p, axis=0),
                                                jnp.sum(active & s_e, axis=0)]).astype(dt)))


def _write(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests, look: Look):
    """A host write: host transfer, write frontier, channel transfer, program (+ erase), buffered ack."""
    f, s = _front(p, s, r)
    dt = f.issue.dtype
    size = r.size.astype(dt)
    miss, _ = _in_flight(s, look, f.t_cmd)
    die_r, die_free, busy, pe, _, m_in, sus_m = _map_read(p, lay, f.t_cmd, look.tpage, miss, s.die_r,
                                                           s.die_free, acc.busy, s.pe)
    h_start, rx_new = fluid_book(s.link_rx, f.t_cmd, size / p.host_rate)
    h_end = h_start + size / p.host_rate
    (ds, dn, draw), mode_bytes = _place(p, s.ds, s.dn, s.draw, size)
    t_unit = jnp.where(size > 0, jnp.sum(mode_bytes * p.t_unit, axis=0) / jnp.maximum(size, 1.0),
                       p.t_unit[1])
    total = s.wpartial + size
    n_units = jnp.floor(total / p.unit_bytes)
    u_f = _per_die(p, s.wptr, n_units.astype(jnp.int32)).astype(dt)  # units (multi-plane programs) per die
    wx_c = jnp.sum(_by_channel(u_f, lay), axis=0) * (p.unit_bytes / p.chan_rate)[None]
    ops, used, prog_pages = u_f, u_f, n_units * p.planes  # programs, blocks' units used, pages per die
    wptr = jnp.mod(s.wptr + n_units.astype(jnp.int32), p.n_dies)
    wpartial = total - n_units * p.unit_bytes
    if lay.eager:
        # engine.write_back = eager: every page the write touches is programmed at once on the die of its
        # logical address, the pages of one die together (multi-plane); the frontier does not move
        e = p.eager
        k, n_d = _pages(p, look.off4k, size)
        n_written = k
        kept = jnp.zeros_like(r.kept)
        if lay.rewrites:  # the pages kept in the buffer (engine.rewrite_window_s) are not written back
            kept = jnp.where(p.rewrites, r.kept, 0)  # (p.rewrites: open loops only)
            kept_d = _kept_per_die(p, jnp.mod(look.off4k // p.page_4k, p.n_dies), k, kept)
            n_d = n_d - kept_d
            n_written = k - jnp.sum(kept_d, axis=0)
        n_e = n_d.astype(dt)
        ops = jnp.where(e[None], jnp.ceil(n_e / p.planes[None]), u_f)
        used = jnp.where(e[None], n_e / p.planes[None], u_f)
        x_e = jnp.sum(_by_channel(n_e, lay), axis=0) * (size / k.astype(dt) / p.chan_rate)[None]
        wx_c = jnp.where(e[None], x_e, wx_c)
        prog_pages = jnp.where(e, n_written.astype(dt), prog_pages)
        wptr, wpartial = jnp.where(e, s.wptr, wptr), jnp.where(e, s.wpartial, wpartial)
    adm_p = h_end  # engine.back_pressure = programs: let in once few enough programs are in flight
    if lay.bp_programs:
        limit = _bp_limit(p.inflight_bytes, size, k.astype(dt), n_written.astype(dt))
        adm_p = jnp.where(p.bp_programs, _admission_programs(h_end, die_free, p.mask, t_unit, limit), h_end)
    w_cend = jnp.where(wx_c > 0, jnp.maximum(s.chan_free, h_end[None]) + wx_c, s.chan_free)
    die_units = s.die_units + used
    n_erase = _erases(p, s.die_units, die_units)
    p_start = jnp.maximum(_by_channel(die_free, lay), w_cend[None]).reshape(die_free.shape)
    merge = s.merge
    if lay.merge_rows:
        # engine.plane_merge: a page joins a program of another plane still queued when the back pressure
        # (below) lets it into the flash queue (the backlog before this write's programs, plus them)
        n_dies_f = p.n_dies.astype(dt)
        backlog0 = jnp.sum(jnp.where(p.mask, jnp.maximum(die_free, 0.0), 0.0), axis=0)
        adm = _admission(h_end, backlog0 + n_written.astype(dt) * t_unit, n_dies_f, p.inflight_bytes, t_unit,
                         size / k.astype(dt))
        adm = jnp.where(p.bp_programs, adm_p, adm)
        w_cend_d = jnp.broadcast_to(w_cend[None], (lay.ways,) + w_cend.shape).reshape(die_free.shape)
        # a program starting as the page is ready (within rounding) takes it
        m_ops, m_dur, merge = _merge_programs(p, lay, s.merge, look.off4k, k, kept,
                                              p_start + n_erase * p.t_erase[None], t_unit,
                                              jnp.maximum(w_cend_d, adm[None]) - END_SLACK * t_unit[None])
        durf = jnp.where(p.plane_merge[None], m_dur, ops)  # programs in units of t_unit (page types)
        ops = jnp.where(p.plane_merge[None], m_ops, ops)
    else:
        durf = ops
    p_dur = durf * t_unit[None] + n_erase * p.t_erase[None]
    # the program/erase run (suspend): the erases first (they free the block the units go to), then the
    # units; a run that starts after the die's backlog has ended (by more than rounding) starts a new run
    if lay.suspension:
        on = (p_dur > 0) & p.suspend_on[None]
        er_len = n_erase * p.t_erase[None]
        pe = PE(start=jnp.where(on & (p_start - pe.end > FIT_SLACK * t_unit[None]), p_start, pe.start),
                end=jnp.where(on, p_start + p_dur, pe.end),
                er_end=jnp.where(on & (n_erase > 0), p_start + er_len, pe.er_end),
                er_len=jnp.where(on & (n_erase > 0), er_len, pe.er_len),
                # the op a read lands in: with page types, longer on average than the mean op (op_bias)
                t_op=jnp.where(on, jnp.broadcast_to((t_unit * p.op_bias)[None], on.shape), pe.t_op))
    die_free = jnp.where(p_dur > 0, p_start + p_dur, die_free)
    backlog_end = _max_free(p, die_free)
    drain = p.n_dies.astype(dt) * p.unit_bytes / t_unit
    admit = h_end
    if lay.eager:
        # eager: the write enters the buffer once the data in flight to flash, including its own, fits in
        # inflight_bytes; in flight = the dies' program backlogs (summed: the pages land on the dies
        # their addresses give, not evenly) at this write's bytes per program
        n_dies = p.n_dies.astype(dt)
        backlog = jnp.sum(jnp.where(p.mask, jnp.maximum(die_free, 0.0), 0.0), axis=0)
        written = size
        if lay.rewrites:  # the bytes a program writes back: the write's pages less those kept
            page = size / k.astype(dt)
            written = jnp.where(n_written < k, page * jnp.maximum(n_written, 1).astype(dt), size)
        per_op = written / jnp.maximum(jnp.sum(jnp.where(p.mask, ops, 0.0), axis=0), 1.0)
        admit = jnp.where(p.bp_programs, adm_p,
                          jnp.where(p.eager, _admission(h_end, backlog, n_dies, p.inflight_bytes, t_unit,
                                                        per_op), h_end))
    # the data written into the buffer's DRAM before the ack: one memory channel, writes in order
    dram_on = p.dram_rate > 0
    d_start = jnp.maximum(admit, s.dram_free)
    dram_new = d_start + _dram_time(p, size)
    h_ack = jnp.where(dram_on, dram_new, admit)
    done = jnp.maximum(h_ack, backlog_end - p.buffer_bytes / drain)
    if lay.eager:
        done = jnp.where(p.eager, h_ack, done)
    q_write = (h_start - f.t_cmd) + (done - h_end)
    return _finish(
        p, s, acc, r, f, WRITE, done, -f.arrival + f.ctrl_start + q_write,
        state=dict(die_r=die_r, die_free=die_free, free_max=backlog_end, chan_free=w_cend,
                   dram_free=jnp.where(dram_on, dram_new, s.dram_free),
                   link_rx=rx_new, link_tx=jnp.where(p.duplex, s.link_tx, rx_new),
                   wptr=wptr, wpartial=wpartial, die_units=die_units, ds=ds, dn=dn, draw=draw, pe=pe,
                   merge=merge, **_latest_map_read(s, miss, look.tpage, m_in)),
        add=dict(busy=busy + p_dur, prog_pages=prog_pages, erases=jnp.sum(n_erase, axis=0),
                 programs=jnp.sum(jnp.where(p.mask, ops, 0.0), axis=0),
                 map_misses=miss.astype(dt), mode_bytes=mode_bytes, suspensions=sus_m))


def _erases(p: Plan, before: jax.Array, after: jax.Array) -> jax.Array:
    """The blocks a die erases as its programmed units go from ``before`` to ``after`` (D, B): one each
    ``units_per_block`` past the ``fresh_units`` erased at the start (``engine.fresh_blocks``)."""
    upb, fresh = p.units_per_block[None], p.fresh_units[None]
    return (jnp.floor(jnp.maximum(after - fresh, 0.0) / upb)
            - jnp.floor(jnp.maximum(before - fresh, 0.0) / upb))


def _trim(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests):
    """A trim (deallocate): the controller only."""
    f, s = _front(p, s, r)
    return _finish(p, s, acc, r, f, TRIM, f.t_cmd, -f.arrival + f.ctrl_start)


def step(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests) -> tuple[State, Acc, jax.Array]:
    """Serve one request (shared by the batch: ``r`` fields are scalars) for every configuration;
    returns the new state, accumulators and the latencies (s, (B,)).  The request's type picks one
    branch (``lax.switch`` on a value shared by the batch: only that path is computed); padding changes
    nothing."""
    look = _lookup(p, lay, s, r)
    idx = jnp.where(r.valid, jnp.clip(r.op, 0, 2), 3)
    # a read whose pages lie on few dies in every configuration: the branch that books only those dies
    k = _page_count(p, look.off4k, r.size.astype(s.last_done.dtype))
    fits = jnp.asarray(READ_DIES or (0,)) >= jnp.max(jnp.minimum(k, p.n_dies))
    branch = jnp.where((idx == READ) & jnp.any(fits), 4 + jnp.argmax(fits), idx) if READ_DIES else idx
    # the cache and the histogram stay outside the branches (no copies of them through the switch)
    inner_s = s._replace(tags=None, map_age=None, map_dirty=None)
    inner_acc = acc._replace(hist=None)
    branches = (lambda s, acc: _read(p, lay, s, acc, r, look),
                lambda s, acc: _write(p, lay, s, acc, r, look),
                lambda s, acc: _trim(p, lay, s, acc, r),
                lambda s, acc: (s, acc, jnp.full_like(s.last_done, jnp.nan)),  # padding
                *(partial(lambda s, acc, m: _read(p, lay, s, acc, r, look, dies=m), m=m) for m in READ_DIES))
    new, new_acc, lat = jax.lax.switch(branch, branches, inner_s, inner_acc)
    cols = jnp.arange(lat.shape[0])
    hist = acc.hist.at[jnp.minimum(idx, 2), latency_bin(jnp.where(r.valid, lat, 1.0)), cols].add(
        r.valid.astype(jnp.int32))
    # 3: a dirty translation page evicted by this request's miss is written back on its die (tpage mod
    # dies) from the request's issue on: the rest of the page read (SLC) and programmed (a pSLC page
    # program), as background work behind the die's backlog; the request does not wait for it
    new = new._replace(tags=look.tags, map_age=look.age, map_dirty=look.dirty)
    if lay.map_writeback:
        wb = look.writeback >= 0
        on = (p.die_id == jnp.mod(look.writeback, p.n_dies)[None]) & p.mask & wb[None]
        t_wb = p.t_map_read + p.t_unit[0]
        n_wb = wb.astype(new_acc.busy.dtype)
        if lay.map_entries:  # an entry cache may write several translation pages back (booked together)
            t_wb = jnp.where(p.map_entries, t_wb * r.wb_count, t_wb)
            n_wb = jnp.where(p.map_entries, r.wb_count, n_wb)
        die_free = jnp.where(on, jnp.maximum(new.die_free, 0.0) + t_wb[None], new.die_free)
        free_max = jnp.where(wb, jnp.maximum(new.free_max, _max_free(p, die_free)), new.free_max)
        new = new._replace(die_free=die_free, free_max=free_max)
        new_acc = new_acc._replace(busy=new_acc.busy + on * t_wb[None],
                                   map_writebacks=new_acc.map_writebacks + n_wb)
    return new, new_acc._replace(hist=hist), lat


def run_chunk(p: Plan, s: State, req: Requests, lay: Layout,
              keep_latency: bool = False) -> tuple[State, Acc, jax.Array | None]:
    """Scan one chunk of requests from state ``s`` (batched, configurations on the last axis);
    per-request latencies ``(R, B)`` only with ``keep_latency``."""
    def body(carry, r):
        st, acc = carry
        st, acc, lat = step(p, lay, st, acc, r)
        return (st, acc), (lat if keep_latency else None)

    (s, acc), lats = jax.lax.scan(body, (s, zero_acc(p, lay)), req)
    return s, acc, lats
