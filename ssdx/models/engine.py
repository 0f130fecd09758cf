"""Request-level SSD engine: one ``lax.scan`` over a request stream shared by every configuration.

A batch of configurations is stepped together, with the configurations on the **last axis** of every
array (a die array is ``(dies, B)``): an operation that broadcasts a per-configuration value over the
dies, or reduces over them, then reads contiguous memory (such operations ran 2.8x faster on a 2-core
CPU than with ``vmap``'s leading batch axis).  The request is shared by the batch, so its type picks
one branch (``lax.switch``): a read computes only the read path, a write only the write path.  Each
configuration keeps the state of its own resources, as busy-until times relative to the current
request's issue time (rebased every step, so float32 keeps sub-microsecond resolution over a week-long
trace; the absolute clock is a compensated sum).  Outstanding commands are kept sorted, so the next
free slot is the first.  This batched step is the GPU path; on a CPU, ``ssdx.models.engine_cpu`` runs
the same step as a compiled per-configuration loop (``engine.backend``, ``ssdx.engine_params``).  A
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
   miss reads the translation page from its die in SLC-mode timing (``t_read_slc``) before the data.
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
   program/erase runs.
4. *Striping* — logical page ``j`` (NAND-page sized) lives on die ``j mod D``; die ``d`` sits on channel
   ``d mod C``, way ``d div C``; consecutive pages on one die fall on consecutive planes (channel-first,
   then way, then plane: MQSim's CWDP order, Tavakkol et al., FAST 2018).  A request touching ``k``
   pages puts ``n_d`` on die ``d`` and costs that die ``ceil(n_d / planes)`` multi-plane operations.
   Writes do not follow the logical address: they fill a **write frontier** of program units
   (``planes × page`` bytes, one multi-plane program) dealt round-robin over the dies, as a log-structured
   FTL does; data waits in the buffer until a unit is full.
5. *Dies and channels, two classes* — host reads take priority over programs and erases at every die
   and channel (program/erase suspension, Wu & He, FAST 2012): a read waits only for earlier reads
   (``die_r``, ``chan_r``) and pushes the die's and channel's program backlog (``die_free``,
   ``chan_free``) back by its own duration.  Read: ``ceil(n_d/planes)·t_read`` on each die, then its
   bytes over the die's channel (``bus_bytes_per_s / channels``); per channel the transfers start when
   the first of its dies is done and serialise.  Requests are issued in order but become ready out of
   order (one waits for a map read or a busy die, the next finds its die idle), and real resources
   serve what is ready: dies book reads with gap filling (:func:`_book`), channels and the link keep a
   fluid backlog (:func:`fluid_book`), so nothing waits behind work that is not ready yet (no head-of-line
   blocking) and no resource exceeds its capacity.  Write units: transfer over the channel, then
   program (``t_prog_slc`` while the pSLC cache has room, else native ``t_prog``, else the folding die
   time of ``ssdx.models.fluid.die_time``); one erase (``t_erase``) every ``block_pages`` units on a die.

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
   "the host transfer end" above becomes the end of that DRAM write.  Not modelled: MQSim's reads of
   the DRAM when it evicts data to flash, its read hits in the data cache, and its eager write-back of
   data written for the first time.

**pSLC accounting** reuses the fluid engine's (``ssdx.models.fluid.plan``/``init``): the rooms of the
pSLC cache (and its dynamic-region cap, ``room_cap0``) and of direct native writes at the start, and the
same affine room coefficients as bytes are written, so a replayed write stream switches program timing
exactly where a fill would, in every pSLC mode (``hybrid`` and a capped ``dynamic`` included).  Idle time
(all dies idle before an arrival) folds pSLC data back at ``fluid.rates().idle_fold`` (the drive's
``idle_fold_bytes_per_s`` when set).  pure_slc drives keep pSLC timing and pure_native drives native
timing when their room runs out (overwrites; garbage collection is the GC model's concern,
``ssdx.models.gc`` — this engine replays a drive whose free blocks the accounting provides).  Reads
cost native ``t_read`` (preconditioned data sits in native blocks).

**Outputs** per configuration (:class:`Acc`, summed per chunk): requests, bytes, latency sums and a
latency histogram (log-spaced, :data:`BINS_PER_DECADE` bins per decade from 0.1 µs to 100 s) per
operation type (read, write, trim), queue time (time spent waiting for a busy resource along the
request's path, including the host queue), per-die busy time, NAND page reads and programs, erases,
mapping-cache misses and write-backs, and reads that suspended a program or an erase.  :func:`metrics`
turns them into IOPS, bandwidth, mean and percentile latency, queue-time share and per-die utilisation.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.core.stats import N_BINS, kahan_add, latency_bin, percentile_from_hist
from ssdx.engine_params import MAP_ENTRY_BYTES, MAP_UNIT_BYTES, EngineParams, Layout
from ssdx.models import fluid
from ssdx.models.booking import fluid_book
from ssdx.params import Drive, Workload

READ, WRITE, TRIM = 0, 1, 2  # the op codes of the trace array form (ssdx.workloads.traces; tested equal)
OPS = ("read", "write", "trim")
FIT_SLACK = 1e-3  # work fits a gap or window overshooting it by under this share of its duration (_book)


class Requests(NamedTuple):
    """A chunk of requests shared by every configuration, shape ``(R,)`` each.

    ``off4k`` offset in 4 KiB units (int32; wrapped to each drive's capacity), ``size`` bytes,
    ``gap_s`` time since the previous request's arrival (open loop; 0 for closed), ``valid`` False on
    padding."""

    op: jax.Array
    off4k: jax.Array
    size: jax.Array
    gap_s: jax.Array
    valid: jax.Array


class Plan(NamedTuple):
    """Per-configuration constants, computed once outside the scan (SI units)."""

    mask: jax.Array  # (D,) die positions that exist (batched: (D, B), see plan_batch)
    die_id: jax.Array  # (D,) int32 die number w·C + c
    n_dies: jax.Array  # int32
    planes: jax.Array
    page_bytes: jax.Array
    page_4k: jax.Array  # int32: 4 KiB units per NAND page
    cap_4k: jax.Array  # int32: user capacity in 4 KiB units
    tpage_4k: jax.Array  # int32: 4 KiB units one translation page maps
    map_sets: jax.Array  # int32
    map_always_hit: jax.Array
    unit_bytes: jax.Array
    units_per_block: jax.Array
    chan_rate: jax.Array  # bytes/s per channel
    host_rate: jax.Array
    cmd_s: jax.Array
    ctrl_s: jax.Array
    map_hit_s: jax.Array
    t_read: jax.Array
    t_map_read: jax.Array
    t_erase: jax.Array
    t_unit: jax.Array  # (3,) s per program unit in pSLC / direct native / folding mode
    idle_fold_rate: jax.Array  # bytes/s
    room_slc0: jax.Array
    room_cap0: jax.Array  # pSLC room under the dynamic-region cap at the start, bytes; +inf when uncapped
    room_nat0: jax.Array
    s0: jax.Array
    coef: fluid.Plan
    buffer_bytes: jax.Array
    open_loop: jax.Array
    time_scale: jax.Array
    duplex: jax.Array
    queue_depth: jax.Array
    suspend_program: jax.Array  # 1 where a read may suspend a program (engine.suspension)
    suspend_erase: jax.Array  # 1 where a read may suspend an erase
    suspend_program_s: jax.Array  # overhead of suspending a program, added to the read that does
    suspend_erase_s: jax.Array
    suspend_min_program_s: jax.Array  # a program with less left than this is not suspended
    suspend_min_erase_s: jax.Array
    suspend_on: jax.Array  # any suspension option away from its default: track the program/erase runs
    map_lru: jax.Array  # engine.map_cache = lru: fully associative, least recently used replaced
    map_writeback: jax.Array  # engine.map_cache = direct or lru: dirty translation pages written back
    dram_rate: jax.Array  # write-buffer DRAM transfers/s (0: no DRAM timing), see _dram_time
    dram_row: jax.Array
    dram_burst: jax.Array
    dram_trcd: jax.Array
    dram_tcl: jax.Array
    dram_trp: jax.Array


class Server(NamedTuple):
    """Booked time of a read-priority resource (see :func:`_book`): the latest window of back-to-back
    bookings spans ``[win, end]`` and holds ``work`` seconds; the resource was idle from ``gap`` to
    ``win`` (minus gap fills already placed there)."""

    end: jax.Array
    win: jax.Array
    work: jax.Array
    gap: jax.Array


class PE(NamedTuple):
    """Where a die's programs and erases lie in its backlog (see :func:`_suspend`), times relative to the
    origin like ``die_free``: the current run of back-to-back program/erase work spans ``[start, end]``;
    its latest erase ends at ``er_end`` and lasts ``er_len`` (0: none booked yet); a program operation
    (one multi-plane program unit) lasts ``t_op``."""

    start: jax.Array
    end: jax.Array
    er_end: jax.Array
    er_len: jax.Array
    t_op: jax.Array


class State(NamedTuple):
    """Busy-until times relative to the current origin (the last issue time), and FTL counters; the
    configurations of a batch on the last axis (shapes below with ``B`` dropped)."""

    slots: jax.Array  # (S,) completion times of outstanding commands, sorted; inf = slot not in use
    ctrl_free: jax.Array
    link_rx: jax.Array  # fluid backlog end, host -> device (writes)
    link_tx: jax.Array  # fluid backlog end, device -> host (reads); = link_rx on a half-duplex link
    dram_free: jax.Array  # when the write buffer's DRAM channel is free (buffer_dram_mts > 0)
    die_free: jax.Array  # (D,) all work, D = ways x channels positions (position w·C + c)
    free_max: jax.Array  # the latest die_free of an existing die
    die_r: Server  # (D,) reads only
    chan_free: jax.Array  # (C,)
    chan_r: jax.Array  # (C,) fluid backlog end of read transfers (see fluid_book)
    last_arrival: jax.Array
    last_done: jax.Array
    wptr: jax.Array  # int32: die of the next program unit
    wpartial: jax.Array  # bytes gathered towards the next unit
    die_units: jax.Array  # (D,) units programmed on each die (erase every units_per_block)
    ds: jax.Array  # pSLC-accounting changes since the start: pSLC bytes, native bytes, raw bytes
    dn: jax.Array
    draw: jax.Array
    tags: jax.Array  # (M,) int32 translation page held by each cache set; -1 empty
    map_age: jax.Array  # (M,) int32 when each slot was last used (LRU clock; -1 empty)
    map_dirty: jax.Array  # (M,) int32 1 where the cached translation page holds updated entries
    pe: PE  # (D,) the program/erase run of each die (read suspension, _suspend)


class Acc(NamedTuple):
    """Per-chunk sums (host adds chunks in float64)."""

    elapsed: jax.Array  # advance of the origin (compensated pair)
    elapsed_c: jax.Array
    count: jax.Array  # (3,)
    bytes: jax.Array  # (3,)
    lat_sum: jax.Array  # (3,)
    queue_sum: jax.Array
    hist: jax.Array  # (3, N_BINS) int32
    busy: jax.Array  # (D,) die-seconds
    read_pages: jax.Array
    prog_pages: jax.Array
    erases: jax.Array
    map_misses: jax.Array
    mode_bytes: jax.Array  # (3,) host write bytes placed as pSLC / direct native / folding
    idle_folded: jax.Array
    suspensions: jax.Array  # (2,) reads (data or translation) that suspended a program / an erase
    map_writebacks: jax.Array  # dirty translation pages written back on eviction


def plan(drive: Drive, workload: Workload, eng: EngineParams, lay: Layout) -> Plan:
    """Constants of one configuration for the static layout ``lay``."""
    nand = drive.nand
    i32 = lambda x: jnp.asarray(jnp.round(x), jnp.int32)  # noqa: E731
    n_ch = i32(drive.channels)
    n_dies = i32(drive.dies)
    w = jnp.arange(lay.ways, dtype=jnp.int32)[:, None]
    c = jnp.arange(lay.channels, dtype=jnp.int32)[None, :]
    mask = ((w < n_dies // n_ch) & (c < n_ch)).reshape(-1)
    fp = fluid.plan(drive, workload, 1)
    st = fluid.init(drive, workload)
    die = fluid.die_time(drive)
    unit = drive.planes_per_die * nand.page_bytes
    per_unit = drive.dies * unit  # array seconds per byte x this = die seconds per unit
    mode = drive.slc_mode
    t_fold = jnp.where(mode == fluid.PURE_SLC, die.slc,
                       jnp.where(mode == fluid.PURE_NATIVE, die.native, die.fold)) * per_unit
    return Plan(
        mask=mask, die_id=(w * n_ch + c).reshape(-1), n_dies=n_dies, planes=drive.planes_per_die,
        page_bytes=nand.page_bytes, page_4k=i32(nand.page_bytes / MAP_UNIT_BYTES),
        cap_4k=i32(jnp.floor(fluid.capacity_bytes(drive) / MAP_UNIT_BYTES)),
        tpage_4k=i32(nand.page_bytes / MAP_ENTRY_BYTES),
        map_sets=jnp.asarray(eng.map_cache_pages, jnp.int32),
        map_always_hit=(drive.dram > 0.5) & (eng.map_policy < 0.5),
        unit_bytes=unit, units_per_block=nand.block_bytes / nand.page_bytes,
        chan_rate=drive.bus_bytes_per_s / drive.channels, host_rate=drive.host_bytes_per_s,
        cmd_s=drive.cmd_overhead_s, ctrl_s=eng.ctrl_s, map_hit_s=eng.map_hit_s,
        t_read=nand.t_read_us * 1e-6, t_map_read=nand.t_read_slc_us * 1e-6,
        t_erase=nand.t_erase_us * 1e-6,
        t_unit=jnp.stack([die.slc * per_unit, die.native * per_unit, t_fold]),
        idle_fold_rate=fluid.rates(drive, workload).idle_fold * (mode != fluid.PURE_SLC),
        room_slc0=fp.slc_a - fp.slc_cs * st.slc_bytes - fp.slc_craw * st.raw_used_bytes,
        room_cap0=fp.cap_a - fp.cap_cs * st.slc_bytes,
        room_nat0=fp.nat_c - fp.nat_dn * st.native_bytes - fp.nat_draw * st.raw_used_bytes,
        s0=st.slc_bytes, coef=fp, buffer_bytes=eng.write_buffer_bytes,
        open_loop=eng.open_loop > 0.5, time_scale=eng.time_scale, duplex=eng.duplex > 0.5,
        queue_depth=workload.queue_depth,
        suspend_program=eng.suspend_program, suspend_erase=eng.suspend_erase,
        suspend_program_s=eng.suspend_program_s, suspend_erase_s=eng.suspend_erase_s,
        suspend_min_program_s=eng.suspend_min_program_s, suspend_min_erase_s=eng.suspend_min_erase_s,
        suspend_on=(eng.suspend_program < 0.5) | (eng.suspend_erase < 0.5) | (eng.suspend_program_s > 0)
        | (eng.suspend_erase_s > 0) | (eng.suspend_min_program_s > 0) | (eng.suspend_min_erase_s > 0),
        map_lru=eng.map_policy > 1.5, map_writeback=eng.map_policy > 0.5,
        dram_rate=eng.dram_rate, dram_row=eng.dram_row, dram_burst=eng.dram_burst, dram_trcd=eng.dram_trcd,
        dram_tcl=eng.dram_tcl, dram_trp=eng.dram_trp,
    )


def plan_batch(drive: Drive, workload: Workload, eng: EngineParams, lay: Layout) -> Plan:
    """:func:`plan` of every configuration of a batch (leading axis of the leaves), laid out for
    :func:`run_chunk`: configurations on the last axis, so a die array is ``(D, B)`` and an operation
    broadcasting a per-configuration value over the dies reads contiguous memory."""
    one = jax.vmap(lambda d, w, e: plan(d, w, e, lay))(drive, workload, eng)
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, -1), one)


def init(p: Plan, lay: Layout) -> State:
    """An idle drive at time 0 with empty queues, an empty map cache and an empty write frontier, for
    the batched plan ``p`` (:func:`plan_batch`)."""
    z = jnp.zeros_like(p.page_bytes)
    dies = jnp.zeros(p.mask.shape, z.dtype)
    chans = jnp.zeros((lay.channels,) + z.shape, z.dtype)
    slots = jnp.where(jnp.arange(lay.slots)[:, None] < p.queue_depth[None], z[None], jnp.inf)
    return State(slots=slots, ctrl_free=z, link_rx=z, link_tx=z, dram_free=z, die_free=dies, free_max=z,
                 die_r=Server(dies, dies, dies, dies), chan_free=chans, chan_r=chans,
                 last_arrival=z, last_done=z, wptr=jnp.zeros(z.shape, jnp.int32), wpartial=z,
                 die_units=dies, ds=z, dn=z, draw=z,
                 tags=jnp.full((lay.map_sets,) + z.shape, -1, jnp.int32),
                 map_age=jnp.full((lay.map_sets,) + z.shape, -1, jnp.int32),
                 map_dirty=jnp.zeros((lay.map_sets,) + z.shape, jnp.int32),
                 pe=PE(dies, dies, dies, dies, dies))


def zero_acc(p: Plan, lay: Layout) -> Acc:
    """Empty accumulators (batched, configurations on the last axis)."""
    z = jnp.zeros_like(p.page_bytes)
    three = jnp.zeros((3,) + z.shape, z.dtype)
    return Acc(elapsed=z, elapsed_c=z, count=three, bytes=three, lat_sum=three, queue_sum=z,
               hist=jnp.zeros((3, N_BINS) + z.shape, jnp.int32), busy=jnp.zeros(p.mask.shape, z.dtype),
               read_pages=z, prog_pages=z, erases=z, map_misses=z, mode_bytes=three, idle_folded=z,
               suspensions=jnp.zeros((2,) + z.shape, z.dtype), map_writebacks=z)


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


def _book(sv: Server, ready: jax.Array, dur: jax.Array) -> tuple[jax.Array, Server]:
    """Book ``dur`` seconds of work ready at ``ready``; returns its start and the new booking.

    Requests are issued in order but become ready out of order (one waits for a map read, another finds
    its die idle), and the resource serves whatever is ready.  Work ready at or after ``end`` starts at
    once and opens a new window (the time since ``end`` becomes the idle gap).  Work ready earlier is
    placed, in this order: in the idle gap before the window, at ``max(ready, gap)``, if it ends by
    ``win`` (the gap then starts after it); inside the window at ``max(ready, win)`` if it ends by
    ``end`` and the window still has that much idle time; otherwise it queues at ``end``.  Gap fills
    never overlap and a window's work never exceeds its length, so the resource's capacity is kept;
    only the placement inside a window is approximate.  No head-of-line blocking.

    Work "fits" (and a resource counts as free) when it overshoots by less than :data:`FIT_SLACK` of its
    duration: a gap left by a read is often exactly one read long, and work is often ready exactly when
    the booking ends; without the slack whether the next read fits would depend on
    the last bit of rounding (float32 against float64, or the CPU loop of ``ssdx.models.engine_cpu``
    against this step)."""
    fit = dur * (1.0 - FIT_SLACK)
    free = ready + (dur - fit) >= sv.end
    at_gap = jnp.maximum(ready, sv.gap)
    in_gap = ~free & (at_gap + fit <= sv.win)
    at_win = jnp.maximum(ready, sv.win)
    in_win = ~free & ~in_gap & (at_win + fit <= sv.end) & ((sv.end - sv.win) - sv.work >= fit)
    start = jnp.where(free, ready, jnp.where(in_gap, at_gap, jnp.where(in_win, at_win, sv.end)))
    new = Server(
        end=jnp.where(free, ready + dur, jnp.where(in_gap | in_win, sv.end, sv.end + dur)),
        win=jnp.where(free, ready, sv.win),
        work=jnp.where(free, dur, jnp.where(in_gap, sv.work, sv.work + dur)),
        gap=jnp.where(free, sv.end, jnp.where(in_gap, at_gap + dur, sv.gap)),
    )
    return start, new


def _suspend(p: Plan, pe: PE, sv: Server, ready: jax.Array, dur: jax.Array):
    """Book a read of ``dur`` s ready at ``ready`` on a die with the suspension policy (step 5):
    returns its start, the new read booking, its die time (``dur`` plus any suspend overhead) and
    whether it suspended a program or an erase (masks).

    A read that would start at once (:func:`_book`: no read of the die in its way) looks at the die's
    program/erase run (:class:`PE`): is an operation in progress at ``ready``, which kind, and how long
    is left.  The run is back-to-back operations ending at ``pe.end``: the latest erase
    ``[er_end - er_len, er_end]``, program operations of ``t_op`` before and after it, so a program in
    progress has ``(boundary - ready) mod t_op`` left, the boundary being ``pe.end`` or the erase's
    start (a read inserted in the run pushes everything after it, keeping the grid; a read that cannot
    suspend waits for a boundary).  Within :data:`FIT_SLACK` of an operation's start or end nothing is in
    progress (the read goes first), so ties do not hang on rounding.  If
    the policy lets the read suspend that kind and at least ``suspend_min_*_s`` is left, the read starts
    at once and takes ``suspend_*_s`` longer (MQSim's ``Suspend_Program_Time``/``Suspend_Erase_Time``
    added before the read command, NVM_PHY_ONFI_NVDDR2; the thresholds are its TSU's
    ``Preferred_suspend_*_time_for_read``); otherwise it waits for the operation to end, then goes
    ahead of the queued programs (reads first, MQSim's TSU_OutOfOrder).  Where a read of the die is in
    the way, the read follows it (the die is not programming then) and nothing changes."""
    s0, _ = _book(sv, ready, dur)
    t = jnp.broadcast_to(ready, s0.shape)
    e0 = pe.er_end - pe.er_len
    in_erase = (pe.er_len > 0) & (t >= e0) & (t < pe.er_end)
    base = jnp.where(t < e0, e0, pe.end)
    t_op = jnp.where(pe.t_op > 0, pe.t_op, 1.0)
    r = jnp.mod(jnp.maximum(base - t, 0.0), t_op)
    r = jnp.where((r < FIT_SLACK * t_op) | (r > (1.0 - FIT_SLACK) * t_op), 0.0, r)
    left_e = pe.er_end - t
    left_e = jnp.where(left_e > (1.0 - FIT_SLACK) * pe.er_len, 0.0, left_e)  # the erase is only starting
    left = jnp.where(in_erase, left_e, r)
    slack = FIT_SLACK * jnp.where(in_erase, pe.er_len, t_op)
    fresh = s0 <= t + FIT_SLACK * dur  # no read of the die in the way (one ending just now is not)
    running = p.suspend_on[None] & fresh & (t >= pe.start) & (t < pe.end) & (left > slack)
    can = jnp.where(in_erase, (p.suspend_erase[None] > 0.5) & (left >= p.suspend_min_erase_s[None]),
                    (p.suspend_program[None] > 0.5) & (left >= p.suspend_min_program_s[None]))
    sus = running & can
    wait = jnp.where(running & ~can, left, 0.0)
    dur = dur + jnp.where(sus, jnp.where(in_erase, p.suspend_erase_s[None], p.suspend_program_s[None]), 0.0)
    start, new = _book(sv, t + wait, dur)
    return start, new, dur, sus & ~in_erase, sus & in_erase


def _pe_push(p: Plan, pe: PE, on: jax.Array, start: jax.Array, dur: jax.Array) -> PE:
    """A read of ``dur`` s starting at ``start`` on the dies ``on`` pushes the program/erase work booked
    after its start back by its duration (as it pushes ``die_free``); only tracked where a suspension
    option is in effect (``suspend_on``)."""
    on = on & p.suspend_on[None]
    push = lambda x: jnp.where(on & (x > start), x + dur, x)  # noqa: E731
    return pe._replace(start=push(pe.start), end=push(pe.end), er_end=push(pe.er_end))


def _shift(sv: Server, t: jax.Array) -> Server:
    """Rebase a booking to an origin ``t`` (B,) later."""
    return Server(sv.end - t[None], sv.win - t[None], sv.work, sv.gap - t[None])


def _pick(mask: jax.Array, a: Server, b: Server) -> Server:
    return Server(*(jnp.where(mask, x, y) for x, y in zip(a, b, strict=True)))


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
        die_r=_shift(s.die_r, issue), chan_free=s.chan_free - t, chan_r=s.chan_r - t,
        last_done=s.last_done - issue, ds=s.ds - fold_x,
        pe=s.pe._replace(start=s.pe.start - t, end=s.pe.end - t, er_end=s.pe.er_end - t), dn=s.dn + fold_x,
        draw=s.draw - (p.coef.bits - 1.0) * fold_x)
    return f, rebased


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


def _lookup(p: Plan, s: State, r: Requests) -> Look:
    """3: probe the translation-page cache (direct-mapped, or LRU with ``map_lru``); only reads and writes
    look up (and miss).  With ``map_writeback`` a write marks its translation page dirty, and a miss that
    evicts a dirty page writes it back (see :func:`step`)."""
    tags = s.tags
    off4k = jnp.mod(r.off4k, p.cap_4k)
    tpage = off4k // p.tpage_4k
    cset = jnp.mod(tpage, p.map_sets)
    cols = jnp.arange(tpage.shape[0])
    # LRU: the slot holding the page, else the least recently used (an empty one first) of this
    # configuration's map_sets slots
    in_cfg = jnp.arange(tags.shape[0])[:, None] < p.map_sets[None]
    match = (tags == tpage[None]) & in_cfg
    hit_lru = jnp.any(match, axis=0)
    victim = jnp.argmin(jnp.where(in_cfg, s.map_age, jnp.iinfo(jnp.int32).max), axis=0)
    cset = jnp.where(p.map_lru, jnp.where(hit_lru, jnp.argmax(match, axis=0), victim), cset)
    held = tags[cset, cols]
    looked = r.valid & (r.op != TRIM) & ~p.map_always_hit
    miss = ~(p.map_always_hit | (held == tpage)) & r.valid & (r.op != TRIM)
    was_dirty = s.map_dirty[cset, cols] > 0
    writeback = jnp.where(p.map_writeback & miss & (held >= 0) & was_dirty, held, -1)
    clock = jnp.max(s.map_age, axis=0) + 1
    age = jnp.where(p.map_lru & looked, s.map_age.at[cset, cols].set(clock), s.map_age)
    dirty_new = ((r.op == WRITE) | (~miss & was_dirty)).astype(jnp.int32)
    dirty = jnp.where(p.map_writeback & looked, s.map_dirty.at[cset, cols].set(dirty_new), s.map_dirty)
    return Look(off4k, tpage, miss, tags.at[cset, cols].set(jnp.where(miss, tpage, held)), age, dirty,
                writeback)


def _map_read(p: Plan, t_cmd, tpage, miss, die_r: Server, die_free, busy, pe: PE):
    """3: a missed translation page is read from die ``tpage mod dies`` (SLC timing), booked with read
    priority under the suspension policy (:func:`_suspend`); returns the die state, busy time, the
    program/erase runs, the read's start and its end (-inf where none) and the suspensions (2, B)."""
    on = (p.die_id == jnp.mod(tpage, p.n_dies)[None]) & p.mask & miss[None]
    ms, die_r_m, m_dur, s_p, s_e = _suspend(p, pe, die_r, t_cmd[None], p.t_map_read[None])
    m_start = jnp.max(jnp.where(on, ms, -jnp.inf), axis=0)
    m_end = jnp.max(jnp.where(on, ms + m_dur, -jnp.inf), axis=0)
    die_r = _pick(on, die_r_m, die_r)
    die_free = jnp.where(on, jnp.maximum(die_free, m_start[None]) + m_dur, die_free)
    sus = jnp.stack([jnp.sum(on & s_p, axis=0), jnp.sum(on & s_e, axis=0)]).astype(busy.dtype)
    return (die_r, die_free, busy + on * m_dur, _pe_push(p, pe, on, m_start[None], m_dur), m_start, m_end,
            sus)


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


def _read(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests, look: Look):
    """A host read: map lookup, dies (gap-filling, read priority), channels, host link."""
    f, s = _front(p, s, r)
    dt = f.issue.dtype
    size = r.size.astype(dt)
    off4k, tpage, miss = look.off4k, look.tpage, look.miss
    die_r, die_free, busy, pe, m_start, m_end, sus_m = _map_read(p, f.t_cmd, tpage, miss, s.die_r,
                                                                  s.die_free, acc.busy, s.pe)
    t_map = jnp.where(miss, m_end + MAP_UNIT_BYTES / p.chan_rate, f.t_cmd + p.map_hit_s)
    q_map = jnp.where(miss, m_start - f.t_cmd, 0.0)

    first = off4k // p.page_4k
    in_page = (jnp.mod(off4k, p.page_4k) * MAP_UNIT_BYTES).astype(dt)
    k = jnp.maximum(jnp.ceil((in_page + size) / p.page_bytes), 1.0).astype(jnp.int32)
    n_d = _per_die(p, jnp.mod(first, p.n_dies), k)
    active = n_d > 0
    n_f = n_d.astype(dt)
    dur = jnp.ceil(n_f / p.planes[None]) * p.t_read[None]
    r_start, die_r_new, dur, s_p, s_e = _suspend(p, pe, die_r, t_map[None], dur)
    r_end = r_start + dur
    xfer = n_f * (size / k.astype(dt) / p.chan_rate)[None]
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
        state=dict(die_r=_pick(active, die_r_new, die_r), die_free=die_free, free_max=_max_free(p, die_free),
                   pe=_pe_push(p, pe, active, r_start, dur),
                   chan_r=jnp.where(act_c, chan_r_new, s.chan_r),
                   chan_free=jnp.where(act_c, jnp.maximum(s.chan_free, c_start) + x_c, s.chan_free),
                   link_tx=tx_new, link_rx=jnp.where(p.duplex, s.link_rx, tx_new)),
        add=dict(busy=busy + jnp.where(active, dur, 0.0), read_pages=jnp.sum(n_f, axis=0),
                 map_misses=miss.astype(dt),
                 suspensions=sus_m + jnp.stack([jnp.sum(active & s_p, axis=0),
                                                jnp.sum(active & s_e, axis=0)]).astype(dt)))


def _dram_time(p: Plan, size: jax.Array) -> jax.Array:
    """Seconds to write ``size`` bytes into the write buffer's DRAM (``buffer_dram_*``): ``tRCD + tCL``
    for each row opened, ``tRP`` between rows, and ``floor(size / burst / 2)`` transfers of ``1 / rate``.
    One row is MQSim's ``estimate_dram_access_time`` exactly (Data_Cache_Manager_Base); for more, MQSim
    multiplies by half the row count and divides the remainder by the transfer time, which this does not
    follow: each row is opened, read out and precharged once."""
    rows = jnp.maximum(jnp.ceil(size / p.dram_row), 1.0)
    rate = jnp.where(p.dram_rate > 0, p.dram_rate, 1.0)
    return (rows * (p.dram_trcd + p.dram_tcl) + (rows - 1.0) * p.dram_trp
            + jnp.floor(size / p.dram_burst / 2.0) / rate)


def _write(p: Plan, lay: Layout, s: State, acc: Acc, r: Requests, look: Look):
    """A host write: host transfer, write frontier, channel transfer, program (+ erase), buffered ack."""
    f, s = _front(p, s, r)
    dt = f.issue.dtype
    size = r.size.astype(dt)
    miss = look.miss
    die_r, die_free, busy, pe, _, _, sus_m = _map_read(p, f.t_cmd, look.tpage, miss, s.die_r, s.die_free,
                                                        acc.busy, s.pe)
    h_start, rx_new = fluid_book(s.link_rx, f.t_cmd, size / p.host_rate)
    h_end = h_start + size / p.host_rate
    (ds, dn, draw), mode_bytes = _place(p, s.ds, s.dn, s.draw, size)
    t_unit = jnp.where(size > 0, jnp.sum(mode_bytes * p.t_unit, axis=0) / jnp.maximum(size, 1.0),
                       p.t_unit[1])
    total = s.wpartial + size
    n_units = jnp.floor(total / p.unit_bytes)
    u_d = _per_die(p, s.wptr, n_units.astype(jnp.int32))
    u_f = u_d.astype(dt)
    wx_c = jnp.sum(_by_channel(u_f, lay), axis=0) * (p.unit_bytes / p.chan_rate)[None]
    w_cend = jnp.where(wx_c > 0, jnp.maximum(s.chan_free, h_end[None]) + wx_c, s.chan_free)
    die_units = s.die_units + u_f
    upb = p.units_per_block[None]
    n_erase = jnp.floor(die_units / upb) - jnp.floor(s.die_units / upb)
    p_start = jnp.maximum(_by_channel(die_free, lay), w_cend[None]).reshape(die_free.shape)
    p_dur = u_f * t_unit[None] + n_erase * p.t_erase[None]
    # the program/erase run (_suspend): the erases first (they free the block the units go to), then the
    # units; a run that starts after the die's backlog has ended starts a new run
    on = (u_d > 0) & p.suspend_on[None]
    er_len = n_erase * p.t_erase[None]
    pe = PE(start=jnp.where(on & (p_start > pe.end), p_start, pe.start),
            end=jnp.where(on, p_start + p_dur, pe.end),
            er_end=jnp.where(on & (n_erase > 0), p_start + er_len, pe.er_end),
            er_len=jnp.where(on & (n_erase > 0), er_len, pe.er_len),
            t_op=jnp.where(on, jnp.broadcast_to(t_unit[None], on.shape), pe.t_op))
    die_free = jnp.where(u_d > 0, p_start + p_dur, die_free)
    backlog_end = _max_free(p, die_free)
    drain = p.n_dies.astype(dt) * p.unit_bytes / t_unit
    # the data written into the buffer's DRAM before the ack: one memory channel, writes in order
    dram_on = p.dram_rate > 0
    d_start = jnp.maximum(h_end, s.dram_free)
    dram_new = d_start + _dram_time(p, size)
    h_ack = jnp.where(dram_on, dram_new, h_end)
    done = jnp.maximum(h_ack, backlog_end - p.buffer_bytes / drain)
    q_write = (h_start - f.t_cmd) + (done - h_end)
    return _finish(
        p, s, acc, r, f, WRITE, done, -f.arrival + f.ctrl_start + q_write,
        state=dict(die_r=die_r, die_free=die_free, free_max=backlog_end, chan_free=w_cend,
                   dram_free=jnp.where(dram_on, dram_new, s.dram_free),
                   link_rx=rx_new, link_tx=jnp.where(p.duplex, s.link_tx, rx_new),
                   wptr=jnp.mod(s.wptr + n_units.astype(jnp.int32), p.n_dies),
                   wpartial=total - n_units * p.unit_bytes, die_units=die_units, ds=ds, dn=dn, draw=draw,
                   pe=pe),
        add=dict(busy=busy + p_dur, prog_pages=n_units * p.planes, erases=jnp.sum(n_erase, axis=0),
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
    look = _lookup(p, s, r)
    idx = jnp.where(r.valid, jnp.clip(r.op, 0, 2), 3)
    # the cache and the histogram stay outside the branches (no copies of them through the switch)
    inner_s = s._replace(tags=None, map_age=None, map_dirty=None)
    inner_acc = acc._replace(hist=None)
    branches = (lambda s, acc: _read(p, lay, s, acc, r, look),
                lambda s, acc: _write(p, lay, s, acc, r, look),
                lambda s, acc: _trim(p, lay, s, acc, r),
                lambda s, acc: (s, acc, jnp.full_like(s.last_done, jnp.nan)))  # padding
    new, new_acc, lat = jax.lax.switch(idx, branches, inner_s, inner_acc)
    cols = jnp.arange(lat.shape[0])
    hist = acc.hist.at[jnp.minimum(idx, 2), latency_bin(jnp.where(r.valid, lat, 1.0)), cols].add(
        r.valid.astype(jnp.int32))
    # 3: a dirty translation page evicted by this request's miss is written back on its die (tpage mod
    # dies) from the request's issue on: the rest of the page read (SLC) and programmed (a pSLC page
    # program), as background work behind the die's backlog; the request does not wait for it
    wb = look.writeback >= 0
    on = (p.die_id == jnp.mod(look.writeback, p.n_dies)[None]) & p.mask & wb[None]
    t_wb = p.t_map_read + p.t_unit[0]
    die_free = jnp.where(on, jnp.maximum(new.die_free, 0.0) + t_wb[None], new.die_free)
    free_max = jnp.where(wb, jnp.maximum(new.free_max, _max_free(p, die_free)), new.free_max)
    new = new._replace(tags=look.tags, map_age=look.age, map_dirty=look.dirty, die_free=die_free,
                       free_max=free_max)
    new_acc = new_acc._replace(busy=new_acc.busy + on * t_wb[None],
                               map_writebacks=new_acc.map_writebacks + wb.astype(new_acc.busy.dtype))
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


# ------------------------------------------------------------------------------------------ host side

def requests(op: np.ndarray, offset: np.ndarray, size: np.ndarray, time_s: np.ndarray | None,
             prev_time_s: float | None, length: int, dtype=np.float32) -> tuple[Requests, float | None]:
    """Host arrays of one chunk padded to ``length``; returns them and the chunk's last arrival time.

    Offsets become 4 KiB units modulo 2^31 (each drive wraps them to its capacity); gaps are taken in
    float64 from the previous chunk's last time, so a long trace keeps its resolution."""
    n = len(op)
    if n > length:
        raise ValueError(f"chunk of {n} requests exceeds the padded length {length}")
    pad = length - n
    t = np.zeros(n) if time_s is None else np.asarray(time_s, np.float64)
    timed = n > 0 and not np.isnan(t).any()
    if timed:
        prev = t[0] if prev_time_s is None else prev_time_s
        gap = np.diff(np.concatenate([[prev], t]))
        last = float(t[-1])
    else:
        gap, last = np.zeros(n), prev_time_s
    f = lambda a, v: np.concatenate([a, np.full(pad, v, a.dtype)])  # noqa: E731
    return Requests(
        op=f(np.asarray(op, np.int32), TRIM),
        off4k=f((np.asarray(offset, np.int64) // MAP_UNIT_BYTES % (1 << 31)).astype(np.int32), 0),
        size=f(np.asarray(size, dtype), 0),
        gap_s=f(np.maximum(gap, 0.0).astype(dtype), 0),
        valid=f(np.ones(n, bool), False),
    ), last


def to_host(x: jax.Array, lay: Layout | None, dies: bool = False) -> np.ndarray:
    """A batched array (configurations last) as float64 numpy with configurations first; a die array
    (``dies``, ``(D, B)``) becomes ``(B, ways, channels)``."""
    x = np.moveaxis(np.asarray(x, np.float64), -1, 0)
    return x.reshape(-1, lay.ways, lay.channels) if dies else x


def metrics(acc: dict[str, np.ndarray], makespan_s: np.ndarray, mask: np.ndarray,
            busy_end_s: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-configuration figures from summed accumulators (float64 arrays, leading axis = configs).

    IOPS and bandwidth over the makespan (first arrival to last completion); latencies in µs; die
    utilisation over ``busy_end_s`` (the makespan, or later when buffered writes were still being
    programmed at the last completion)."""
    count, lat_sum = acc["count"], acc["lat_sum"]
    n_io = count[:, 0] + count[:, 1]
    out = {
        "requests": count.sum(1),
        "read_fraction": count[:, 0] / np.maximum(n_io, 1),
        "iops": count.sum(1) / makespan_s,
        "mb_s": (acc["bytes"][:, 0] + acc["bytes"][:, 1]) / makespan_s / 1e6,
        "makespan_s": makespan_s,
        "latency_mean_us": 1e6 * lat_sum.sum(1) / np.maximum(count.sum(1), 1),
        "queue_share": acc["queue_sum"] / np.maximum(lat_sum.sum(1), 1e-30),
        "nand_read_pages": acc["read_pages"], "nand_program_pages": acc["prog_pages"],
        "erases": acc["erases"], "map_misses": acc["map_misses"],
        "pslc_bytes": acc["mode_bytes"][:, 0], "native_bytes": acc["mode_bytes"][:, 1],
        "folding_bytes": acc["mode_bytes"][:, 2], "idle_folded_bytes": acc["idle_folded"],
    }
    all_hist = acc["hist"].sum(1)
    for name, h in (("", all_hist), ("read_", acc["hist"][:, 0]), ("write_", acc["hist"][:, 1])):
        for q, tag in ((0.5, "p50"), (0.99, "p99"), (0.999, "p999")):
            out[f"{name}latency_{tag}_us"] = 1e6 * percentile_from_hist(h, q)
    for i, name in ((0, "read"), (1, "write")):
        mean = 1e6 * lat_sum[:, i] / np.maximum(count[:, i], 1)
        out[f"{name}_latency_mean_us"] = np.where(count[:, i] > 0, mean, np.nan)
    horizon = makespan_s if busy_end_s is None else np.maximum(makespan_s, busy_end_s)
    util = acc["busy"] / horizon[:, None, None]
    out["die_utilisation_mean"] = (util * mask).sum((1, 2)) / mask.sum((1, 2))
    out["die_utilisation_max"] = np.where(mask, util, -np.inf).max((1, 2))
    out["_die_utilisation"] = np.where(mask, util, np.nan)
    return out
