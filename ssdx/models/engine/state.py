"""The data of the request-level engine (:mod:`ssdx.models.engine.model`) and its host side.

A chunk of requests shared by a batch (:class:`Requests`), the per-configuration constants computed once
outside the scan (:class:`Plan`, :func:`plan`, :func:`plan_batch`), the resources' state
(:class:`State`, with the read booking :class:`Server` and the program/erase run :class:`PE` of each die)
and the per-chunk sums (:class:`Acc`); on the host, a stream cut into padded chunks (:func:`requests`)
and the sums turned into per-configuration figures (:func:`metrics`).  Times in s, sizes in bytes.  The
path of a request through the resources is specified and stepped in :mod:`ssdx.models.engine.model`."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.core.stats import N_BINS, percentiles_from_hist
from ssdx.models.engine import entries
from ssdx.models.engine import rewrites as rewrites_mod
from ssdx.models.engine.params import (
    MAP_ENTRY_BYTES,
    MAP_UNIT_BYTES,
    MERGE_RING,
    EngineParams,
    Layout,
    suspend_on,
)
from ssdx.models.fluid import model as fluid
from ssdx.params import Drive, Workload

READ, WRITE, TRIM = 0, 1, 2  # the op codes of the trace array form (ssdx.workloads.traces; tested equal)
OPS = ("read", "write", "trim")


class Requests(NamedTuple):
    """A chunk of requests shared by every configuration, shape ``(R,)`` each.

    ``off4k`` offset in 4 KiB units (int32; wrapped to each drive's capacity), ``size`` bytes,
    ``gap_s`` time since the previous request's arrival (open loop; 0 for closed), ``valid`` False on
    padding; the entry cache's outcome for the request (``engine.map_cache = entries``, computed on the
    host: ``ssdx.models.engine.entries``): ``map_miss``, ``wb_tpage`` (first translation page written
    back, -1 none), ``wb_count`` (translation pages written back); ``kept``, a write's pages kept in the
    write buffer and not written back (bit ``j``: its ``j``-th page; ``engine.rewrite_window_s``, computed
    on the host: ``ssdx.models.engine.rewrites``); ``first_read``, a read's pages read for the first time
    (bit ``j``: its ``j``-th page; ``engine.plane_merge``, ``rewrites.FirstReads``)."""

    op: jax.Array
    off4k: jax.Array
    size: jax.Array
    gap_s: jax.Array
    valid: jax.Array
    map_miss: jax.Array
    wb_tpage: jax.Array
    wb_count: jax.Array
    kept: jax.Array
    first_read: jax.Array


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
    fresh_units: jax.Array  # engine.fresh_blocks: program units each die has erased at the start; else 0
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
    dram_mqsim: jax.Array  # engine.buffer_dram_formula = mqsim: MQSim's arithmetic, see _dram_time
    eager: jax.Array  # engine.write_back = eager: each logical page programmed at once on its die
    inflight_bytes: jax.Array  # eager: written-back bytes in flight before a write waits
    rewrites: jax.Array  # eager, rewrite_window_s > 0: a write's kept pages (Requests.kept) stay buffered
    plane_merge: jax.Array  # eager, engine.plane_merge: page programs join queued ones of other planes
    merge_dies: jax.Array  # plane_merge: dies a modelled die stands for (engine.merge_dies)
    bp_programs: jax.Array  # eager, engine.back_pressure = programs or pages: the programs in flight counted
    bp_pages: jax.Array  # eager, engine.back_pressure = pages: a write's pages let in one by one (cpu, cuda)
    page_rule: jax.Array  # engine.page_types = mqsim: bits per cell (MQSim's page types), else 0
    prog_f0: jax.Array  # LSB, CSB, MSB page's program time over the mean (engine.prog_*_factor)
    prog_f1: jax.Array
    prog_f2: jax.Array
    op_bias: jax.Array  # page types: the mean length of the program a read lands in over the mean program
    map_entries: jax.Array  # engine.map_cache = entries: misses and write-backs come with the requests
    t_map_xfer: jax.Array  # channel time of a translation read's bytes (engine.map_read_bytes)
    hold_read: jax.Array  # engine.cache_read false: a read keeps its die until its data is out


class Server(NamedTuple):
    """Booked time of a read-priority resource (:func:`~.book.book`): its booked work ends at ``end``;
    before that it is idle only in the gaps ``[gap[k], win[k]]``, ``k`` from the oldest to the newest
    (leading axis of ``Layout.read_gaps``; empty gaps have ``win <= gap``)."""

    end: jax.Array  # (D,)
    win: jax.Array  # (K, D), K = Layout.read_gaps
    gap: jax.Array  # (K, D)


class PE(NamedTuple):
    """Where a die's programs and erases lie in its backlog (:func:`~.book.suspend`), times
    relative to the origin like ``die_free``: the current run of back-to-back program/erase work spans
    ``[start, end]``; its latest erase ends at ``er_end`` and lasts ``er_len`` (0: none booked yet); a
    program operation (one multi-plane program unit) lasts ``t_op``."""

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
    map_tp: jax.Array  # int32: translation page of the latest translation read (-1: none yet)
    map_end: jax.Array  # when that read's entries reach the controller (-inf: none yet)
    pe: PE  # (D,) the program/erase run of each die (read suspension, engine_book.suspend)
    merge: jax.Array  # (Layout.merge_rows, D) engine.plane_merge: per plane of each die it stands for, the
    # pages programmed there, then the start times of its latest MERGE_RING programs (-inf: none)
    flight: jax.Array  # (3, Layout.flight_slots) engine.back_pressure = pages: each page in flight to flash,
    # when its program ends, the bytes it carries and its die position, in slots 1..n (n in flight[1, 0])


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
    programs: jax.Array  # program commands of host data (a multi-plane program counted once)


def _op_bias(eng: EngineParams) -> jax.Array:
    """``engine.page_types = mqsim``: the mean length of the program a read arriving at random lands in,
    over the mean program: ``E[f²] / E[f]`` over the page types a block holds equally (MLC: LSB, MSB; TLC:
    LSB, CSB, MSB; ``f`` each type's factor), the length-biased mean of renewal theory (a read is likelier
    to arrive during a long program); 1 where the rule is off."""
    f0, f1, f2, rule = eng.prog_f0, eng.prog_f1, eng.prog_f2, eng.page_rule
    mlc = (f0 * f0 + f2 * f2) / (f0 + f2)
    tlc = (f0 * f0 + f1 * f1 + f2 * f2) / (f0 + f1 + f2)
    return jnp.where(rule > 2.5, tlc, jnp.where(rule > 1.5, mlc, jnp.where(rule > 0.5, f0, 1.0)))


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
        fresh_units=jnp.where(eng.fresh_blocks > 0.5,
                              jnp.maximum(drive.raw_bytes - st.raw_used_bytes, 0.0) / (drive.dies * unit),
                              0.0),
        chan_rate=drive.bus_bytes_per_s / drive.channels, host_rate=eng.host_rate,
        cmd_s=eng.cmd_s, ctrl_s=eng.ctrl_s, map_hit_s=eng.map_hit_s,
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
        suspend_on=suspend_on(eng),
        map_lru=(eng.map_policy > 1.5) & (eng.map_policy < 2.5), map_writeback=eng.map_policy > 0.5,
        map_entries=eng.map_entries > 0,
        t_map_xfer=eng.map_read_bytes / (drive.bus_bytes_per_s / drive.channels),
        hold_read=eng.hold_read > 0.5,
        dram_rate=eng.dram_rate, dram_row=eng.dram_row, dram_burst=eng.dram_burst, dram_trcd=eng.dram_trcd,
        dram_tcl=eng.dram_tcl, dram_trp=eng.dram_trp, dram_mqsim=eng.dram_mqsim > 0.5, eager=eng.eager > 0.5,
        inflight_bytes=jnp.where(eng.inflight_bytes > 0, eng.inflight_bytes,
                                 drive.dies * drive.planes_per_die * nand.page_bytes),
        # kept by arrival time: an open loop only (a closed loop's times come out of the simulation)
        rewrites=(eng.eager > 0.5) & (eng.rewrite_window_s > 0) & (eng.open_loop > 0.5),
        plane_merge=eng.plane_merge > 0.5, merge_dies=eng.merge_dies, bp_programs=eng.bp_programs > 0.5,
        bp_pages=eng.bp_programs > 1.5,
        page_rule=eng.page_rule, prog_f0=eng.prog_f0, prog_f1=eng.prog_f1, prog_f2=eng.prog_f2,
        op_bias=_op_bias(eng),
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
    gaps = jnp.zeros((lay.read_gaps,) + p.mask.shape, z.dtype)
    chans = jnp.zeros((lay.channels,) + z.shape, z.dtype)
    slots = jnp.where(jnp.arange(lay.slots)[:, None] < p.queue_depth[None], z[None], jnp.inf)
    return State(slots=slots, ctrl_free=z, link_rx=z, link_tx=z, dram_free=z, die_free=dies, free_max=z,
                 die_r=Server(dies, gaps, gaps), chan_free=chans, chan_r=chans,
                 last_arrival=z, last_done=z, wptr=jnp.zeros(z.shape, jnp.int32), wpartial=z,
                 die_units=dies, ds=z, dn=z, draw=z,
                 tags=jnp.full((lay.map_sets,) + z.shape, -1, jnp.int32),
                 map_age=jnp.full((lay.map_sets,) + z.shape, -1, jnp.int32),
                 map_dirty=jnp.zeros((lay.map_sets,) + z.shape, jnp.int32),
                 map_tp=jnp.full(z.shape, -1, jnp.int32), map_end=jnp.full(z.shape, -jnp.inf, z.dtype),
                 pe=PE(dies, dies, dies, dies, dies), merge=merge_init(lay, dies),
                 flight=jnp.stack([jnp.full((lay.flight_slots,) + z.shape, -jnp.inf, z.dtype),
                                   jnp.zeros((lay.flight_slots,) + z.shape, z.dtype),
                                   jnp.full((lay.flight_slots,) + z.shape, -1.0, z.dtype)]))


def merge_init(lay: Layout, dies: jax.Array) -> jax.Array:
    """The multi-plane state of a fresh drive (``State.merge``, ``(Layout.merge_rows,) + dies.shape``): no
    page programmed on any plane, no program remembered."""
    ring = (jnp.arange(lay.merge_rows) % (1 + MERGE_RING)) > 0
    return jnp.where(ring.reshape((-1,) + (1,) * dies.ndim), -jnp.inf,
                     jnp.zeros((lay.merge_rows,) + dies.shape, dies.dtype))


def zero_acc(p: Plan, lay: Layout) -> Acc:
    """Empty accumulators (batched, configurations on the last axis)."""
    z = jnp.zeros_like(p.page_bytes)
    three = jnp.zeros((3,) + z.shape, z.dtype)
    return Acc(elapsed=z, elapsed_c=z, count=three, bytes=three, lat_sum=three, queue_sum=z,
               hist=jnp.zeros((3, N_BINS) + z.shape, jnp.int32), busy=jnp.zeros(p.mask.shape, z.dtype),
               read_pages=z, prog_pages=z, erases=z, map_misses=z, mode_bytes=three, idle_folded=z,
               suspensions=jnp.zeros((2,) + z.shape, z.dtype), map_writebacks=z,
               programs=z)


def requests(op: np.ndarray, offset: np.ndarray, size: np.ndarray, time_s: np.ndarray | None,
             prev_time_s: float | None, length: int, dtype=np.float32,
             cache: entries.EntryCache | None = None,
             rewrites: rewrites_mod.Rewrites | None = None,
             first_reads: rewrites_mod.FirstReads | None = None) -> tuple[Requests, float | None]:
    """Host arrays of one chunk padded to ``length``; returns them and the chunk's last arrival time.

    Offsets become 4 KiB units modulo 2^31 (each drive wraps them to its capacity); gaps are taken in
    float64 from the previous chunk's last time, so a long trace keeps its resolution.  ``cache``: the
    batch's entry cache (``entries.for_batch``), advanced over the chunk for its per-request events;
    ``rewrites``: the batch's rewrite window (``rewrites.for_batch``), advanced over the chunk for the pages
    each write keeps in the buffer (before the entry cache: a kept page is not looked up); ``first_reads``:
    the batch's touched pages (``rewrites.first_reads_for_batch``), for the pages each read reads first."""
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
    op = np.asarray(op, np.int32)
    off4k = (np.asarray(offset, np.int64) // MAP_UNIT_BYTES % (1 << 31)).astype(np.int32)
    kept = (np.zeros(n, np.int32) if rewrites is None else
            rewrites.kept(op, off4k, np.asarray(size), np.ones(n, bool), t if timed else None))
    fresh = (np.zeros(n, np.int32) if first_reads is None else
             first_reads.first(op, off4k, np.asarray(size), np.ones(n, bool)))
    ev = entries.no_events(n) if cache is None else cache.events(op, off4k, np.asarray(size),
                                                                 np.ones(n, bool), kept)
    return Requests(
        op=f(op, TRIM), off4k=f(off4k, 0), size=f(np.asarray(size, dtype), 0),
        gap_s=f(np.maximum(gap, 0.0).astype(dtype), 0), valid=f(np.ones(n, bool), False),
        map_miss=f(ev.miss, False), wb_tpage=f(ev.wb_tpage, -1), wb_count=f(ev.wb_count.astype(dtype), 0),
        kept=f(kept, 0), first_read=f(fresh, 0),
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
        for tag, value in zip(("p50", "p99", "p999"), percentiles_from_hist(h, (0.5, 0.99, 0.999)),
                              strict=True):
            out[f"{name}latency_{tag}_us"] = 1e6 * value
    for i, name in ((0, "read"), (1, "write")):
        mean = 1e6 * lat_sum[:, i] / np.maximum(count[:, i], 1)
        out[f"{name}_latency_mean_us"] = np.where(count[:, i] > 0, mean, np.nan)
    horizon = makespan_s if busy_end_s is None else np.maximum(makespan_s, busy_end_s)
    util = acc["busy"] / horizon[:, None, None]
    out["die_utilisation_mean"] = (util * mask).sum((1, 2)) / mask.sum((1, 2))
    out["die_utilisation_max"] = np.where(mask, util, -np.inf).max((1, 2))
    out["_die_utilisation"] = np.where(mask, util, np.nan)
    return out
