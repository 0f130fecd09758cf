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
from ssdx.models.engine.book import FIT_SLACK, book, pe_push, pick, shift, suspend
from ssdx.models.engine.params import MAP_UNIT_BYTES, MASK_PAGES, MERGE_RING, Layout
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


def _per_die(p: Plan, start: jax.Array, count: jax.Array) -> jax.Array:
    """Items ``start, start+1, … start+count-1`` (``0 <= start < dies``) dealt round-robin over the dies:
    how many land on each die position, ``(D, B)`` int32.  Die ``start + r`` gets ``q + (r < m)`` where
    ``count = q·dies + m`` (one division per configuration, none per die)."""
    q = count // p.n_dies
    # computed once per configuration: without the barrier XLA repeats the division for every die
    q, m, start = q[None], (count - q * p.n_dies)[None], start[None]
    r = p.die_id - start
    r = jnp.where(r < 0, r + p.n_dies[None], r)
    return jnp.where(p.mask, q + (r < m).astype(jnp.int32), 0)


def _pages(p: Plan, off4k: jax.Array, size: jax.Array) -> tuple[jax.Array, jax.Array]:
    """4: the NAND pages a request at ``off4k`` (4 KiB units) of ``size`` bytes touches, ``k`` (int32,
    at least 1), and how many of them lie on each die, ``(D, B)`` (logical page ``j`` on die ``j mod D``)."""
    k = _page_count(p, off4k, size)
    return k, _per_die(p, jnp.mod(off4k // p.page_4k, p.n_dies), k)


def _kept_per_die(p: Plan, start: jax.Array, k: jax.Array, kept: jax.Array) -> jax.Array:
    """Of a write's ``k`` pages dealt round-robin from die ``start``, how many each die position keeps in
    the buffer, ``(D, B)`` int32: page ``j`` (below ``k`` and :data:`~ssdx.models.engine.params.MASK_PAGES`)
    is kept where bit ``j`` of ``kept`` is set (``Requests.kept``)."""
    j = jnp.arange(MASK_PAGES, dtype=jnp.int32)[:, None]  # (J, 1)
    bit = ((kept >> j) & 1) * (j < k[None])  # (J, B)
    on = jnp.mod(j, p.n_dies[None])[:, None] == _deal_place(p, start)[None]  # (J, D, B)
    return jnp.where(p.mask, jnp.sum(jnp.where(on, bit[:, None], 0), axis=0), 0)


def _deal_place(p: Plan, start: jax.Array) -> jax.Array:
    """Each die position's place in a deal of pages starting at die ``start``, ``(D, B)`` int32."""
    r = p.die_id - start[None]
    return jnp.where(r < 0, r + p.n_dies[None], r)


def _row(merge: jax.Array, row: jax.Array) -> jax.Array:
    """``merge[row[d, b], d, b]`` for a row index per die position (``State.merge``)."""
    return jnp.take_along_axis(merge, row[None].astype(jnp.int32), axis=0)[0]


def _set_row(merge: jax.Array, row: jax.Array, value: jax.Array, on: jax.Array) -> jax.Array:
    """``merge`` with ``merge[row[d, b], d, b] = value[d, b]`` where ``on``."""
    rows = jnp.arange(merge.shape[0])[:, None, None]
    return jnp.where((rows == row[None]) & on[None], value[None], merge)


def _plane_slot(p: Plan, n: jax.Array) -> jax.Array:
    """The first ``State.merge`` row of the plane that the ``n``-th page dealt to a die lies on (plane
    ``(n div merge_dies) mod planes`` of the die's ``n mod merge_dies``-th die: MQSim's CWDP)."""
    sub = p.merge_dies.astype(jnp.int32)[None]
    planes = p.planes.astype(jnp.int32)[None]
    return (jnp.mod(n, sub) * planes + jnp.mod(n // sub, planes)) * (1 + MERGE_RING)


def _allocate_reads(p: Plan, merge: jax.Array, off4k: jax.Array, k: jax.Array, first: jax.Array) -> jax.Array:
    """``engine.plane_merge``: a read's pages read before they were ever written (``Requests.first_read``)
    each take their plane's next page number, as MQSim places them, no program holding it
    (``cpu._allocate``)."""
    page0 = off4k // p.page_4k
    place = _deal_place(p, jnp.mod(page0, p.n_dies))
    bits = jnp.where(p.plane_merge, first, 0)
    lim = jnp.minimum(k, MASK_PAGES)

    def body(i, m):
        t = place + i * p.n_dies[None]
        on = p.mask & (t < lim[None]) & (((bits[None] >> jnp.minimum(t, MASK_PAGES - 1)) & 1) > 0)
        row = _plane_slot(p, (page0[None] + t) // p.n_dies[None])
        a = _row(m, row)
        m = _set_row(m, row + 1 + jnp.mod(a, MERGE_RING).astype(jnp.int32), jnp.full_like(a, -jnp.inf), on)
        return _set_row(m, row, a + 1.0, on)

    # as many rounds as the configuration with the fewest dies needs (each deals its pages over its own)
    return jax.lax.fori_loop(0, jnp.max(jnp.where(p.plane_merge, (lim + p.n_dies - 1) // p.n_dies, 0)), body,
                             merge)


def _merge_programs(p: Plan, lay: Layout, merge: jax.Array, off4k: jax.Array, k: jax.Array,
                    kept: jax.Array, t0: jax.Array, t_unit: jax.Array, ready: jax.Array):
    """``engine.plane_merge`` (``cpu._merge_page``, page by page in the order of the write's pages): each
    page the write programs on a die joins a program of another plane of that die with its page number that
    starts at ``ready`` or later, or is a program of its own after the die's earlier ones from ``t0``.
    Returns the programs each die position runs, ``(D, B)``, and the new ``State.merge``."""
    ring = MERGE_RING
    page0 = off4k // p.page_4k
    place = _deal_place(p, jnp.mod(page0, p.n_dies))
    n_slots = lay.merge_rows // (1 + ring)
    ppb = p.units_per_block[None]

    def body(carry):
        i, m, ops, durf = carry
        t = place + i * p.n_dies[None]
        kept_t = (t < MASK_PAGES) & (((kept[None] >> jnp.minimum(t, MASK_PAGES - 1)) & 1) > 0)
        on = p.mask & p.plane_merge[None] & (t < k[None]) & ~kept_t
        n = (page0[None] + t) // p.n_dies[None]
        base = _plane_slot(p, n)
        a_new = _row(m, base)
        m = _set_row(m, base, a_new + 1.0, on)
        q_ = jnp.mod(n // p.merge_dies.astype(jnp.int32)[None], p.planes.astype(jnp.int32)[None])
        sub0 = base - q_ * (1 + ring)  # the first plane's row of the same die
        found = jnp.zeros_like(on)
        st_found = jnp.zeros_like(t0)
        for q2 in range(n_slots):
            b2 = sub0 + q2 * (1 + ring)
            ok = on & (q2 != q_) & (q2 < p.planes[None])
            f2 = _row(m, jnp.where(ok, b2, 0))
            a2 = f2 - 1.0 - jnp.mod(f2 - 1.0 - a_new, ppb)
            ok = ok & (a2 >= 0) & (f2 - a2 <= ring)
            st = _row(m, jnp.where(ok, b2 + 1 + jnp.mod(a2, ring).astype(jnp.int32), 0))
            hit = ok & ~found & (st >= ready)
            st_found = jnp.where(hit, st, st_found)
            found = found | hit
        start = jnp.where(found, st_found, t0 + durf * t_unit[None])
        m = _set_row(m, base + 1 + jnp.mod(a_new, ring).astype(jnp.int32), start, on)
        own = on & ~found
        return (i + 1, m, ops + own.astype(ops.dtype),
                durf + jnp.where(own, _page_factor(p, jnp.mod(a_new, ppb)), 0.0))

    def more(carry):
        return jnp.any(carry[0] * p.n_dies < k)

    zero = jnp.zeros_like(t0)
    _, merge, ops, durf = jax.lax.while_loop(more, body, (jnp.int32(0), merge, zero, zero))
    return ops, durf, merge


def _page_factor(p: Plan, idx: jax.Array) -> jax.Array:
    """``engine.page_types = mqsim``: the program time of the page at index ``idx`` of its block over the
    mean (``prog_f0/1/2`` by MQSim's page type, ``cpu._merge_page``); 1 where the rule is off."""
    rule = p.page_rule[None]
    tlc = jnp.where(idx <= 5.0, 0.0, jnp.where(idx <= 7.0, 1.0, jnp.mod(jnp.floor((idx - 8.0) / 2.0), 3.0)))
    typ = jnp.where(rule == 2, 2.0 * jnp.mod(idx, 2.0), jnp.where(rule == 3, tlc, 0.0))  # MLC: LSB, MSB
    f = jnp.where(typ == 0.0, p.prog_f0[None], jnp.where(typ == 1.0, p.prog_f1[None], p.prog_f2[None]))
    return jnp.where(rule > 0, f, 1.0)


def _admission(h_end: jax.Array, backlog: jax.Array, n_dies: jax.Array, inflight: jax.Array,
               t_unit: jax.Array, per_op: jax.Array) -> jax.Array:
    """When the eager write-back's back pressure lets a write in (s from its issue): once ``backlog`` s of
    program work summed over ``n_dies`` dies has drained to what ``inflight`` bytes in flight allow at
    ``per_op`` bytes a program of ``t_unit`` s (MQSim's ``back_pressure_buffer_max_depth``, a fluid
    backlog); never before its host data is in at ``h_end``."""
    return jnp.maximum(h_end, backlog / n_dies - inflight * t_unit / (n_dies * per_op))


#: a die's backlog ending within this share of a program past an instant counts that program as ended
#: then, and a program starting within it before a page is ready takes the page (``engine.plane_merge``):
#: so rounding in times kept two ways (absolute in float64 on the CPU, from the issue in the batch's dtype
#: here, float32 by default: about 1e-7 of the few ms a backlog spans) does not split a program's end
#: between the back ends.  7.5 ns of a 750 us program
END_SLACK = 1e-5


def _bp_limit(inflight: jax.Array, size: jax.Array, pages: jax.Array, n_pages: jax.Array) -> jax.Array:
    """``engine.back_pressure = programs``: the most programs of one page of a write (``size`` bytes over
    ``pages`` pages) that may still be in flight when the write, ``n_pages`` of its pages written back,
    is let in: ``N`` with ``(N + n_pages - 1) · size / pages < inflight`` (MQSim's
    ``write_to_destage_buffer`` sends a request's transaction to flash while the sectors in flight, those
    of the request sent before it included, are below its ``back_pressure_buffer_max_depth``).  Written
    as ``inflight · pages / size``, exact where that is a whole number.  A write whose own pages fill the
    limit waits for every program in flight (MQSim lets it in page by page)."""
    room = inflight * pages / size - jnp.maximum(n_pages - 1.0, 0.0)
    return jnp.maximum(jnp.ceil(room) - 1.0, 0.0)


def _admission_programs(h_end: jax.Array, die_free: jax.Array, mask: jax.Array, t_unit: jax.Array,
                        limit: jax.Array) -> jax.Array:
    """``engine.back_pressure = programs``: the first instant from ``h_end`` on (s from the issue) at
    which at most ``limit`` programs are still queued or running, each die's backlog ``die_free`` (D, B)
    taken as back-to-back programs of ``t_unit`` s ending where it ends.

    A die with ``n`` programs left at ``h_end`` ends its first at its phase ``x - (n - 1) t_unit`` (``x``
    its backlog past ``h_end``) and one each ``t_unit`` after, so the ends fall in rounds.  The instant is
    the ``m``-th end, ``m`` the programs above ``limit``.  Its round ``r`` is the least with ``S(r + 1) >=
    m``, ``S(R) = sum(min(n, R))``: with the ``n`` sorted, ``S`` is linear between consecutive ones, so
    the first sorted ``n_j`` with ``S(n_j) >= m`` gives ``r + 1 = ceil((m - sum_{i<j} n_i) / (D - j))``.
    Within the round it is the ``(m - S(r))``-th smallest phase of the dies with programs left."""
    dt = die_free.dtype
    x = jnp.where(mask, die_free - h_end[None], 0.0)
    n = jnp.maximum(jnp.ceil(x * (1.0 / t_unit)[None] - END_SLACK), 0.0)
    phase = jnp.where(n > 0, x - (n - 1.0) * t_unit[None], jnp.inf)
    m = jnp.sum(n, axis=0) - limit
    d = n.shape[0]
    ns = jnp.sort(n, axis=0)
    before = jnp.cumsum(ns, axis=0) - ns  # sum of the smaller n
    j = jnp.argmax(before + ns * (d - jnp.arange(d, dtype=dt))[:, None] >= m[None], axis=0)
    r = jnp.ceil((m - jnp.take_along_axis(before, j[None], 0)[0]) / (d - j).astype(dt)) - 1.0
    k = (m - jnp.sum(jnp.minimum(n, r[None]), axis=0)).astype(jnp.int32) - 1
    left = jnp.sort(jnp.where(n > r[None], phase, jnp.inf), axis=0)
    sel = jnp.take_along_axis(left, jnp.clip(k, 0, d - 1)[None], 0)[0]
    return jnp.where(m > 0, h_end + r * t_unit + sel, h_end)


def _page_count(p: Plan, off4k: jax.Array, size: jax.Array) -> jax.Array:
    """The NAND pages (int32, at least 1) a request at ``off4k`` of ``size`` bytes touches."""
    in_page = (jnp.mod(off4k, p.page_4k) * MAP_UNIT_BYTES).astype(size.dtype)
    return jnp.maximum(jnp.ceil((in_page + size) / p.page_bytes), 1.0).astype(jnp.int32)


def _place(p: Plan, ds: jax.Array, dn: jax.Array, draw: jax.Array, amount: jax.Array):
    """Split ``amount`` host bytes into pSLC, direct native and folding bytes with the fluid engine's
    room coefficients (``fluid.slc_room``/``native_room`` relative to the start); returns the new
    accounting changes ``(ds, dn, draw)`` and the three byte counts."""
    f = p.coef
    room_slc = jnp.maximum(jnp.minimum(p.room_slc0 - f.slc_cs * ds - f.slc_craw * draw,
                                       p.room_cap0 - f.cap_cs * ds), 0.0)
    a_slc = jnp.minimum(room_slc, amount)
    draw = draw + f.bits * a_slc
    room_nat = jnp.maximum(p.room_nat0 - f.nat_dn * dn - f.nat_draw * draw, 0.0)
    a_dir = jnp.minimum(room_nat, amount - a_slc)
    a_fold = amount - a_slc - a_dir
    folded = jnp.minimum(f.fold * a_fold, jnp.maximum(p.s0 + ds + a_slc, 0.0))
    new = (ds + a_slc - folded, dn + a_dir + a_fold + folded, draw + a_dir)
    return new, jnp.stack([a_slc, a_dir, a_fold])


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
        draw=s.draw - (p.coef.bits - 1.0) * fold_x, merge=_merge_shift(s.merge, issue))
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


def _read_book(p: Plan, lay: Layout, pe: PE, sv: Server, ready: jax.Array, dur: jax.Array):
    """:func:`~.book.suspend` where a configuration of the batch tracks suspension
    (``lay.suspension``); else :func:`~.book.book`, which gives every configuration that does not
    track it the same start, booking and die time, with no suspension and no cost."""
    if lay.suspension:
        return suspend(p, pe, sv, ready, dur)
    start, new = book(sv, ready, dur)
    none = jnp.zeros(start.shape, bool)
    return start, new, jnp.broadcast_to(dur, start.shape), none, none


def _push_runs(p: Plan, lay: Layout, pe: PE, on: jax.Array, start: jax.Array, dur: jax.Array) -> PE:
    """:func:`~.book.pe_push`, skipped where no configuration of the batch tracks suspension."""
    return pe_push(p, pe, on, start, dur) if lay.suspension else pe


#: the batched step's read branches that book only the dies a read touches: a read whose pages lie on at
#: most this many dies in every configuration of the batch takes the smallest that fits (:func:`step`);
#: a read on more dies books every die position.  Branches for 2, 4 and 8 dies as well were no faster on
#: the 2-core CPU of ``bench/engine.py`` and doubled the step's compile time (each is a read path of its
#: own), so one die only: a 4 KiB read, and every translation read (:func:`_map_read`)
READ_DIES = (1,)


def _read_book_at(p: Plan, lay: Layout, pe: PE, sv: Server, pos: jax.Array, on: jax.Array, ready: jax.Array,
                  dur: jax.Array):
    """:func:`_read_book` of the die positions ``pos`` (M, B) only, where ``on`` (M, B) (distinct
    positions where on), ``dur`` (D, B) the work of each die: the same arithmetic as booking every die,
    at an M-th of the dies' share of the cost.  The results have :func:`_read_book`'s shapes: the
    booking of the other dies unchanged, their start, die time and suspensions zero (the callers read
    them only where a die works).  They are put back by a scatter, which XLA does not fuse into the
    (K, D, B) arrays that read them: an elementwise put-back would have the booking recomputed for every
    die and gap."""
    take = lambda x: jnp.take_along_axis(x, jnp.broadcast_to(pos, x.shape[:-2] + pos.shape), axis=-2)  # noqa: E731
    at = lambda t: type(t)(*(take(x) for x in t))  # noqa: E731
    start, new, dur_m, s_p, s_e = _read_book(p, lay, at(pe) if lay.suspension else pe, at(sv), ready,
                                             take(dur))
    where = jnp.where(on, pos, dur.shape[-2])  # off: out of range, dropped
    put = lambda x, v: jnp.put_along_axis(  # noqa: E731
        x, jnp.broadcast_to(where, v.shape), v, axis=-2, inplace=False, mode="drop")
    zero = lambda v: put(jnp.zeros(dur.shape, v.dtype), jnp.broadcast_to(v, pos.shape))  # noqa: E731
    return (zero(start), Server(*(put(x, v) for x, v in zip(sv, new, strict=True))), zero(dur_m),
            zero(s_p), zero(s_e))


def _positions(p: Plan, first: jax.Array, count: jax.Array, m: int) -> tuple[jax.Array, jax.Array]:
    """The die positions (m, B) of the dies ``first, first + 1, …`` (mod the dies) and whether each is
    among the first ``count`` (B,)."""
    ids = jnp.mod(first[None] + jnp.arange(m)[:, None], p.n_dies[None])
    pos = jnp.stack([jnp.argmax((p.die_id == x[None]) & p.mask, axis=0) for x in ids])
    return pos, jnp.arange(m)[:, None] < count[None]


def _map_read(p: Plan, lay: Layout, t_cmd, tpage, miss, die_r: Server, die_free, busy, pe: PE):
    """3: a missed translation page is read from die ``tpage mod dies`` (SLC timing), booked with read
    priority under the suspension policy (:func:`suspend`); returns the die state, busy time, the
    program/erase runs, the read's start, when its entries are in the controller (its end, plus the
    ``map_read_bytes`` transfer unless the die was held for it; -inf where none) and the suspensions
    (2, B).  Only that die's booking is computed (gathered, booked, put back): the same arithmetic as
    booking every die and keeping that one, at a die's share of the cost."""
    on = (p.die_id == jnp.mod(tpage, p.n_dies)[None]) & p.mask & miss[None]
    t_die = p.t_map_read + jnp.where(p.hold_read, p.t_map_xfer, 0.0)  # cache_read false: held until out
    ms, die_r_m, m_dur, s_p, s_e = _read_book_at(p, lay, pe, die_r, jnp.argmax(on, axis=0)[None],
                                                 jnp.any(on, axis=0)[None], t_cmd[None],
                                                 jnp.broadcast_to(t_die[None], on.shape))
    m_start = jnp.max(jnp.where(on, ms, -jnp.inf), axis=0)
    m_end = jnp.max(jnp.where(on, ms + m_dur, -jnp.inf), axis=0)
    m_in = m_end + jnp.where(p.hold_read, 0.0, p.t_map_xfer)
    die_r = pick(on, die_r_m, die_r)
    die_free = jnp.where(on, jnp.maximum(die_free, m_start[None]) + m_dur, die_free)
    sus = jnp.stack([jnp.sum(on & s_p, axis=0), jnp.sum(on & s_e, axis=0)]).astype(busy.dtype)
    pe = _push_runs(p, lay, pe, on, m_start[None], m_dur)
    return die_r, die_free, busy + on * m_dur, pe, m_start, m_in, sus


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


def _hold(p: Plan, lay: Layout, chan_r, die_r: Server, ready, dur, xfer, active) -> jax.Array:
    """``engine.cache_read: false``: how long each die (D, B) keeps a read past its array time ``dur`` —
    until its data is out.  Where the read would be booked (:func:`~.book.book`) gives when the array
    read ends; the request's transfers on each channel start when its first die is done or the channel's
    backlog ``chan_r`` is through (the fluid booking of :func:`_read`), in no set order, so a die's own
    transfer ends on average after its own and half of the others' on that channel (or when it would
    alone, if later)."""
    est, _ = book(die_r, ready[None], dur)
    r_end = est + dur
    first_c = jnp.min(_by_channel(jnp.where(active, r_end, jnp.inf), lay), axis=0)
    x_c = jnp.sum(_by_channel(xfer, lay), axis=0)
    c_start = jnp.broadcast_to(jnp.maximum(first_c, chan_r)[None], (lay.ways,) + first_c.shape)
    x_c = jnp.broadcast_to(x_c[None], c_start.shape).reshape(r_end.shape)
    own_end = c_start.reshape(r_end.shape) + 0.5 * (x_c + xfer)
    out = jnp.maximum(own_end, r_end + xfer) - r_end
    return jnp.where(active & p.hold_read[None], out, 0.0)


def _by_channel(x: jax.Array, lay: Layout) -> jax.Array:
    """(D, B) die positions -> (W, C, B): channel ``c`` is the last-but-one axis."""
    return x.reshape(lay.ways, lay.channels, x.shape[-1])


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


def _dram_time(p: Plan, size: jax.Array) -> jax.Array:
    """Seconds to write ``size`` bytes into the write buffer's DRAM (``buffer_dram_*``): ``tRCD + tCL``
    for each row opened, ``tRP`` between rows, and ``floor(size / burst / 2)`` transfers of ``1 / rate``.
    One row is MQSim's ``estimate_dram_access_time`` exactly (Data_Cache_Manager_Base); for more, MQSim
    multiplies by half the row count and divides the remainder by the transfer time, which this does not
    follow unless ``engine.buffer_dram_formula = mqsim`` asks for it: each row is opened, read out and
    precharged once.  (MQSim's remainder term is bytes / (bytes x ns) read as ns: ``rem * rate / burst``
    in units of 10^-18 s here.)"""
    rows = jnp.maximum(jnp.ceil(size / p.dram_row), 1.0)
    rate = jnp.where(p.dram_rate > 0, p.dram_rate, 1.0)
    each_row = (rows * (p.dram_trcd + p.dram_tcl) + (rows - 1.0) * p.dram_trp
                + jnp.floor(size / p.dram_burst / 2.0) / rate)
    # engine.buffer_dram_formula = mqsim: MQSim's arithmetic past one row (params: buffer_dram_formula)
    open_row = p.dram_trcd + p.dram_tcl
    mqsim = ((open_row + jnp.floor(p.dram_row / p.dram_burst / 2.0) / rate + p.dram_trp)
             * jnp.floor(size / p.dram_row / 2.0) + open_row
             + jnp.mod(size, p.dram_row) * rate / p.dram_burst * 1e-18)
    return jnp.where(p.dram_mqsim & (size > p.dram_row), mqsim, each_row)


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
    upb = p.units_per_block[None]
    n_erase = jnp.floor(die_units / upb) - jnp.floor(s.die_units / upb)
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
