"""SCM/NAND hybrid SSD with the NV-WB cache (Fukuchi, Sakaki, Matsui, Takeuchi: SCM/NAND hybrid SSD with four
NAND flash types, Chuo Univ., full version ISCAS 2018 — "Fukuchi et al."; NV-WB: Okamoto et al., IMW 2015).

One drive per call (no vmap inside); a batch ``vmap``s :func:`run_chunk` over stacked
:class:`~ssdx.models.hybrid.params.HybridParams` with the request stream broadcast, as the request-level
engine
(``ssdx.models.engine.model``) does, sharing its histogram and compensated clock (``ssdx.core.stats``) and its
fluid booking (``ssdx.models.booking``).

**Stream.**  Requests are cut on the host into 4 KiB *lines* (the SCM line and the FTL's mapping unit);
the scan takes one line per step (:class:`Lines`: op, logical line, sectors of the request inside it, and
flags for the request's first and last line, for the measured part of the stream and for its second half).

**SCM tier** (100 ns per 512 B sector, read and write: Fukuchi et al. Table 1) holds ``C = sets × ways``
lines in a set-associative table: line ``x`` lives in set ``hash(x) mod sets`` (a multiplicative hash, so
strided addresses spread).  **NV-WB** (Fukuchi et al. §2):

* every write goes to SCM (a hit updates the line in place, a miss inserts it dirty);
* a read that misses SCM is served from NAND and its line copied into SCM (clean);
* when an insertion finds SCM free space at or below ``threshold`` (resident + gathering lines ≥
  ``limit = ⌊(1 − threshold)·C⌋``), or finds its set full, one victim leaves its set: the set's
  least-recently used line (``victim`` policy: :func:`victim_key`).  A clean victim is dropped (NAND holds
  it); a dirty one joins the **gathering unit** — it stays in SCM (readable, writable in place) until a
  whole unit has gathered, which is then programmed on the next die in round-robin order.  The unit is the
  NAND's write unit (page 16 KiB, word line 48 KiB or a whole block: Table 1) under ``whole`` staging, and
  one word line (or the write unit if smaller) under ``progressive`` staging, where a block-unit NAND fills
  an open block on every die word line by word line (``ssdx.models.hybrid.params.gathering_unit_bytes``).
  Gathering lines sit in ``gways`` extra slots of the victim's set; when that set has none left, the
  partial unit is programmed at once (counted: ``partial_flushes``).

*Approximation (documented and tested, ``tests/test_hybrid.py``):* a fully associative LRU would evict the
globally least-recent line; here the victim is the least-recent line of the set being filled (with 16
ways this is a sample of 16, like the sampled LRU of many caches).  With ``sets = 1`` the table is fully
associative and the model's table equals the exact NV-WB reference (``tests/nvwb_reference.py``) line for
line; the reference has no timing, so a read of flushed data still being programmed, a hit here, is a
miss there (both insert the line clean).

**NAND tier.**  A line read from NAND costs one page read (``t_read``) on die ``(x div page_lines) mod
dies`` (logical striping, as the engine's reads); consecutive missing lines of one request share a page
read (a request's lines were written and evicted together, so they sit in one page).  Each line then
crosses the die's channel (die ``d`` on channel ``d mod channels``).  A flushed unit is read out of SCM,
crosses the target die's channel and costs ``pages × t_page`` on the die, where ``t_page`` adds greedy GC's
copies and the erases to the program time (:func:`die_seconds_per_page`: block size and
erase latency enter there).  Dies serve reads first (``read_priority``: reads go before queued programs
and suspend the running one at most ``max_suspends`` times, :func:`read_slot`) or in FIFO order.  Flushed
data keeps its SCM space and stays readable until its program ends (:func:`pending`).

**Timing.**  Closed loop at ``queue_depth``: a request is issued when a host slot frees, pays the
interface's command overhead (none without a host link), then each of its lines: the host link (reads
and writes on its two directions), the line's SCM bank (``scm_banks``,
interleaved by line address, sector time) and, on a read miss, its die and channel.  Dies are servers;
the channels, the SCM banks and the link carry short transfers and are booked as fluid backlogs
(``ssdx.models.booking.fluid_book``): a transfer that becomes ready later (a copy-in waiting for its NAND
read) adds its time to the backlog without moving the backlog to that instant, so nothing waits behind
work that has not started and each resource's capacity is kept.  A write that inserts a line waits while
SCM is full: flushed data stays in SCM until programmed, draining at the array's program rate ``drain``,
so the write completes at ``max(SCM write end, backlog end − free lines / drain)`` — a fluid form of the
engine's write buffer.  Times are rebased to each request's issue (float32 keeps sub-µs resolution).

**Outputs** (:class:`Acc`, summed over the measured lines): requests, latency sums and histograms per
operation, SCM read and write hits, NAND page reads (host misses), NAND pages programmed with host data,
flushes, partial flushes, skipped evictions, write-stall time, busy time of the dies, channels, SCM banks
and link, and requests and issue-clock time of each half of the measured window.  :func:`metrics` turns
them into IOPS, SCM hit rate, NAND read/write ratio, traffic reduction, utilisations, the bottleneck and
the steady-state check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.core.stats import kahan_add, latency_bin, percentile_from_hist
from ssdx.models.booking import fluid_book
from ssdx.models.gc import wa_analytic
from ssdx.models.hybrid import params as hybrid_params
from ssdx.models.hybrid.lines import lines_from_requests, no_scm_pages, pad_lines
from ssdx.models.hybrid.params import SECTOR_BYTES, UNIT_BYTES, HybridParams, Layout
from ssdx.models.hybrid.state import (
    CFLRU,
    FIFO,
    LRU,
    Acc,
    Lines,
    State,
    init,
    set_index,
    space_time,
    victim_key,
    zero_acc,
)
from ssdx.workloads.traces import READ, WRITE

__all__ = ["CFLRU", "FIFO", "LRU", "MAX_UTILISATION", "READ", "RESOURCES", "SATURATED", "STEADY_TOLERANCE",
           "WRITE", "Acc", "Lines", "State",
           "build", "compiled", "die_seconds_per_page", "gc_cost", "init", "lines_from_requests", "metrics",
           "no_scm_pages", "pad_lines", "pending", "read_slot", "run_chunk", "set_index", "simulate",
           "space_time", "step", "trace",
           "victim_key", "zero_acc"]


@lru_cache(maxsize=1024)
def _greedy_wa(spare: float, block_pages: int) -> float:
    """Greedy WA at ``spare`` (1 with no valid data), cached: a sweep repeats few (spare, b) pairs."""
    return wa_analytic.greedy_wa(spare, block_pages) if spare < 1.0 else 1.0


def die_seconds_per_page(t_prog_us: float, t_read_us: float, t_erase_us: float, block_pages: int,
                         utilisation: float) -> tuple[float, float]:
    """Die time per host page programmed into the NAND tier, s, and the write amplification ``WA``.

    Greedy GC at spare factor ``1 - utilisation`` (uniform-random mean field, ``wa_analytic.greedy_wa``)
    copies ``WA - 1`` valid pages per host page (read + program on the die: copyback, no channel
    transfer) and erases ``WA / block_pages`` blocks per host page::

        t_page = WA·t_prog + (WA - 1)·t_read + (WA / block_pages)·t_erase
    """
    wa = _greedy_wa(round(1.0 - float(utilisation), 12), int(block_pages))
    return 1e-6 * (wa * t_prog_us + (wa - 1.0) * t_read_us + wa / block_pages * t_erase_us), wa


def gc_cost(cols: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`die_seconds_per_page` of every configuration of ``hybrid.*`` columns (effective NAND numbers,
    ``ssdx.models.hybrid.params.nand_table``, and ``hybrid.nand_utilisation``): die seconds per host page and
    the
    NAND tier's write amplification, each ``(n,)``."""
    table = hybrid_params.nand_table(cols)
    util = np.asarray(cols["hybrid.nand_utilisation"], float)
    tp = [die_seconds_per_page(table["t_prog_us"][i], table["t_read_us"][i], table["t_erase_us"][i],
                               int(table["block_pages"][i]), util[i]) for i in range(len(util))]
    return np.array([t for t, _ in tp]), np.array([w for _, w in tp])


def build(cols: Mapping[str, np.ndarray], footprint_bytes: np.ndarray | list[float],
          dtype=np.float32, *, checked: bool = False,
          floor: Mapping[str, int] | None = None) -> tuple[HybridParams, Layout]:
    """The parameters and layout of a batch: ``ssdx.models.hybrid.params.build`` with the NAND tier's garbage
    collection cost of :func:`gc_cost` (the columns are checked first, once, so a bad value is named).
    ``footprint_bytes``: bytes, one per configuration; ``checked``: the caller has run
    ``ssdx.models.hybrid.params.validate`` on these same arguments already; ``floor``: layout sizes
    (``ssdx.models.hybrid.params.sizes``) that the layout takes where they are larger."""
    if not checked:
        hybrid_params.validate(cols, np.asarray(footprint_bytes, float))
    t_page, wa = gc_cost(cols)
    return hybrid_params.build(cols, footprint_bytes, t_page, wa, dtype=dtype, checked=True, floor=floor)


def read_slot(p: HybridParams, ready: jax.Array, die_free: jax.Array, die_r: jax.Array, op_end: jax.Array,
              op_len: jax.Array, susp: jax.Array) -> dict[str, jax.Array]:
    """When a NAND page read ready at ``ready`` runs on a die, and what it does to the die's programs.

    ``die_free``: end of all work booked on the die; ``die_r``: end of its booked reads; ``op_end``,
    ``op_len``, ``susp``: end and length of the program operation in progress (or last started) and its
    suspensions.  FIFO (``read_priority`` off): after everything booked.  Read priority: reads queue only
    behind reads and go before queued programs; a read that starts a new burst while a program runs
    suspends it if the program has been suspended fewer than ``max_suspends`` times (-1: once per ISPP
    step of its length, ``ssdx.models.hybrid.params.ISPP_STEP_US``; the program then ends ``t_read +
    t_resume`` later), else waits for it to end.  The operations queued behind one another are taken as
    equal in length (``op_len``: a unit's pages x ``t_prog``; the GC copies a unit brings are operations
    of about that length) to find the one in progress.  Returns ``start``, the die's new ``die_free``,
    ``op_end`` and ``susp``, ``extra`` (die time added besides the read), ``suspend`` and ``wait``."""
    fifo = p.read_priority < 0.5
    cand = jnp.maximum(ready, die_r)
    pend = ~fifo & (die_free > cand)  # program work booked past the read's start
    late = cand >= op_end  # the program last seen has ended: find the one running at cand
    k = jnp.floor((cand - op_end) / jnp.maximum(op_len, 1e-12)) + 1.0
    cur_end = jnp.where(late, jnp.minimum(op_end + k * op_len, die_free), op_end)
    cur_susp = jnp.where(late, 0, susp)
    burst = ready >= die_r  # no read booked on the die after ``ready``: this read opens a suspension
    allowed = jnp.where(p.max_suspends < 0, jnp.ceil(op_len / (hybrid_params.ISPP_STEP_US * 1e-6)),
                        p.max_suspends.astype(op_len.dtype))
    suspend = pend & burst & (cur_susp.astype(op_len.dtype) < allowed)
    wait = pend & burst & ~suspend
    start = jnp.where(fifo, jnp.maximum(ready, die_free), jnp.where(wait, jnp.maximum(cand, cur_end), cand))
    extra = jnp.where(suspend, p.t_resume, 0.0)
    new_free = jnp.where(pend, die_free + p.t_read + extra, jnp.maximum(die_free, start) + p.t_read)
    after = start + p.t_read
    new_end = jnp.where(wait, jnp.where(new_free > after, after + op_len, op_end),
                        jnp.where(pend, cur_end + p.t_read + extra, op_end))
    new_susp = jnp.where(wait, 0, jnp.where(pend, cur_susp + suspend, susp))
    return {"start": start, "die_free": new_free, "op_end": new_end, "susp": new_susp.astype(jnp.int32),
            "extra": extra, "suspend": suspend, "wait": wait}


def pending(g_tag: jax.Array, g_unit: jax.Array, unit_id: jax.Array, n_dies: jax.Array, prog_end: jax.Array,
            unit_len: jax.Array) -> jax.Array:
    """Which gathering slots hold flushed data whose program has not ended (still in SCM, so readable).

    Unit ``u`` was programmed on die ``u mod n_dies`` (flushes go round robin from die 0); of the units a
    die received, the last ``ceil((prog_end − now) / unit_len)`` are still waiting or being programmed,
    ``prog_end`` being the end of the die's last booked program (reads that went before it included, so a
    read-heavy die over-counts by at most one unit)."""
    flushed = (g_tag >= 0) & (g_unit < unit_id) & (g_unit >= 0)
    d = jnp.mod(jnp.maximum(g_unit, 0), n_dies)
    last = unit_id - 1 - jnp.mod(unit_id - 1 - d, n_dies)
    later = (last - g_unit) // n_dies
    waiting = jnp.ceil(jnp.maximum(prog_end[d], 0.0) / jnp.maximum(unit_len[d], 1e-12))
    return flushed & (later.astype(prog_end.dtype) < waiting)


def step(p: HybridParams, s: State, acc: Acc, u: Lines) -> tuple[State, Acc, jax.Array]:
    """Serve one line; returns the new state, accumulators and the request's latency when ``u.last``.

    The dies are booked as servers (work queues after what is booked on them, reads ahead of programs
    under ``read_priority``); the channel buses, the SCM banks and the host link are short transfers
    booked as fluid backlogs (``fluid_book``): work that becomes ready later (a copy-in waiting for its
    NAND read) adds to the backlog without moving it to that future instant, so a later hit or write
    does not wait behind a transfer that has not started."""
    dt = p.t_read.dtype
    v = u.valid
    is_r, is_w = v & (u.op == READ), v & (u.op == WRITE)
    io = is_r | is_w
    nbytes = u.sectors.astype(dt) * SECTOR_BYTES
    die_ok = jnp.arange(s.die_free.shape[0]) < p.n_dies
    bank_ok = jnp.arange(s.scm_free.shape[0]) < p.n_banks
    line_s = (UNIT_BYTES // SECTOR_BYTES) * p.t_sector  # SCM seconds per 4 KiB line

    # 1. a new request takes the earliest free host slot; rebase every time to its issue
    j = jnp.argmin(s.slots).astype(jnp.int32)  # int32 as State keeps it (argmin is int64 under x64)
    issue = jnp.where(u.first & v, s.slots[j], 0.0)
    slots, die_free, die_r = s.slots - issue, s.die_free - issue, s.die_r - issue
    op_end, prog_end, op_len, susp = s.op_end - issue, s.prog_end - issue, s.op_len, s.susp
    chan_free, scm_free, link_free = s.chan_free - issue, s.scm_free - issue, s.link_free - issue
    new_req = u.first & v
    req_slot = jnp.where(new_req, j, s.req_slot)
    req_done = jnp.where(new_req, p.cmd_s, s.req_done - issue)
    req_miss = jnp.where(new_req, 0, s.req_miss)
    read_end = jnp.where(new_req, 0.0, s.req_read_end - issue)
    ready = p.cmd_s  # every line of the request is ready once the command is decoded

    # 2. SCM lookup: the line's set and its gathering slots
    st = set_index(u.line, p.sets)
    row_t, row_s, row_d = s.tag[st], s.stamp[st], s.dirty[st]
    g_t, g_u = s.gtag[st], s.gunit[st]
    g_live = (g_t >= 0) & (g_u == s.unit_id)
    g_pend = pending(g_t, g_u, s.unit_id, p.n_dies, prog_end, s.unit_len)
    hit_way = (row_t == u.line) & v
    hit_r = jnp.any(hit_way)
    hit_g = jnp.any(g_live & (g_t == u.line)) & v
    at_pend = g_pend & (g_t == u.line) & v
    hit_p = jnp.any(at_pend) & is_r  # a read of flushed data not yet programmed is served from SCM
    hit = hit_r | hit_g | hit_p
    # a line not in the table is inserted, as NV-WB does: a write dirty (the copy being programmed turns
    # stale), a read clean — from NAND on a miss, from the data in flight on a pending hit (no NAND read)
    ins = io & ~(hit_r | hit_g)
    g_t = jnp.where(at_pend & ins, -1, g_t)
    g_pend = g_pend & ~(at_pend & ins)

    # 3. read miss: NAND page read (shared by consecutive missing lines of the request), then the line
    #    crosses its die's channel (die d sits on channel d mod channels)
    miss_r = is_r & ~hit
    new_page = miss_r & (jnp.mod(req_miss, p.page_units) == 0)
    d = jnp.mod(u.line // p.page_units, p.n_dies)
    rd = read_slot(p, ready, die_free[d], die_r[d], op_end[d], op_len[d], susp[d])
    r_start = rd["start"]
    r_end = r_start + p.t_read
    die_r = die_r.at[d].set(jnp.where(new_page, r_end, die_r[d]))
    die_free = die_free.at[d].set(jnp.where(new_page, rd["die_free"], die_free[d]))
    op_end = op_end.at[d].set(jnp.where(new_page, rd["op_end"], op_end[d]))
    pushed = new_page & (prog_end[d] > r_start)  # the read runs before programs booked on the die
    prog_end = prog_end.at[d].add(jnp.where(pushed, p.t_read + rd["extra"], 0.0))
    susp = susp.at[d].set(jnp.where(new_page, rd["susp"], susp[d]))
    busy = acc.busy.at[d].add(jnp.where(new_page & u.measure, p.t_read + rd["extra"], 0.0))
    read_end = jnp.where(new_page, r_end, read_end)
    req_miss = req_miss + miss_r
    c = jnp.mod(d, p.n_channels)
    c_start, c_end = fluid_book(chan_free[c], read_end, p.chan_unit)
    chan_free = chan_free.at[c].set(jnp.where(miss_r, c_end, chan_free[c]))
    chan_work = jnp.where(miss_r, p.chan_unit, 0.0)
    data_at = c_start + p.chan_unit

    # 4. host link and the line's SCM bank (write: link, then SCM; read hit: SCM, then link; miss: die,
    #    channel, then the link to the host and the copy into SCM side by side)
    xfer = nbytes / p.host_rate  # 0 without a host link (host_rate = inf)
    w_link, w_link_end = fluid_book(link_free[1], ready, xfer)
    k = jnp.mod(u.line, p.n_banks)
    scm_ready = jnp.where(is_w, w_link + xfer, jnp.where(miss_r, data_at, ready))
    scm_dur = jnp.where(io, jnp.where(miss_r, UNIT_BYTES // SECTOR_BYTES, u.sectors).astype(dt) * p.t_sector,
                        0.0)
    scm_start, bank_end = fluid_book(scm_free[k], scm_ready, scm_dur)
    scm_free = scm_free.at[k].set(jnp.where(io, bank_end, scm_free[k]))
    scm_end = scm_start + scm_dur
    r_link, r_link_end = fluid_book(link_free[0], jnp.where(miss_r, data_at, scm_end), xfer)
    link_free = jnp.stack([jnp.where(is_r, r_link_end, link_free[0]),
                           jnp.where(is_w, w_link_end, link_free[1])])
    read_done = r_link + xfer

    # 5. insertion: a victim leaves when SCM is over its threshold or the set is full
    empty = row_t < 0
    over = (s.resident + s.gather) >= p.limit
    need = ins & (over | ~jnp.any(empty))
    key = victim_key(p.policy, row_s, row_d, empty)
    vic = jnp.argmin(key)
    evict = need & ~empty[vic]
    skipped = need & empty[vic]
    way = jnp.where(evict, vic, jnp.argmax(empty))
    v_line, v_dirty = row_t[vic], evict & row_d[vic]
    resident = s.resident + ins - evict

    # 6. a dirty victim joins the gathering unit; a full unit (or a full gathering row) is programmed
    g_free = ~g_live
    force = v_dirty & ~jnp.any(g_free)
    flushed_lines = jnp.where(force, s.gather, 0)
    unit_id = s.unit_id + force
    gather = jnp.where(force, 0, s.gather)
    g_free = g_free | force
    # a free slot that holds no flushed data still readable is taken first, else the oldest such data
    held = g_pend | (force & g_live)
    gw = jnp.argmin(jnp.where(g_free, jnp.where(held, g_u, -1), jnp.iinfo(jnp.int32).max))
    g_t = g_t.at[gw].set(jnp.where(v_dirty, v_line, g_t[gw]))
    g_u = g_u.at[gw].set(jnp.where(v_dirty, unit_id, g_u[gw]))
    gather = gather + v_dirty
    full = gather >= p.unit
    flushed_lines = jnp.where(full, gather, flushed_lines)
    unit_id = unit_id + full
    gather = jnp.where(full, 0, gather)
    flush = force | full
    fl = flushed_lines.astype(dt)
    pages = jnp.ceil(fl / p.page_units).astype(dt)
    # the unit is read out of SCM (its lines spread over the banks), crosses the target die's channel, then
    # is programmed there after the die's booked work
    share = jnp.where(flush & bank_ok, fl / p.n_banks.astype(dt) * line_s, 0.0)
    o_start, o_end = fluid_book(scm_free, ready, share)
    scm_free = jnp.where(flush & bank_ok, o_end, scm_free)
    out_end = jnp.max(jnp.where(bank_ok, o_start + share, 0.0))
    w = s.wptr
    cw = jnp.mod(w, p.n_channels)
    x_dur = fl * p.chan_unit
    x_start, x_end = fluid_book(chan_free[cw], out_end, x_dur)
    chan_free = chan_free.at[cw].set(jnp.where(flush, x_end, chan_free[cw]))
    chan_work = chan_work + jnp.where(flush, x_dur, 0.0)
    prog = pages * p.t_page  # the unit's programs, its GC copies and its share of erases, die seconds
    op = pages * p.t_prog  # one program operation: the unit's pages (a page, or a word line one-shot)
    idle = die_free[w] <= x_start + x_dur  # nothing booked ahead: this program starts when its data is there
    op_end = op_end.at[w].set(jnp.where(flush & idle, x_start + x_dur + op, op_end[w]))
    susp = susp.at[w].set(jnp.where(flush & idle, 0, susp[w]))
    op_len = op_len.at[w].set(jnp.where(flush, op, op_len[w]))
    unit_len = s.unit_len.at[w].set(jnp.where(flush, prog, s.unit_len[w]))
    die_free = die_free.at[w].set(jnp.where(flush, jnp.maximum(die_free[w], x_start + x_dur) + prog,
                                            die_free[w]))
    prog_end = prog_end.at[w].set(jnp.where(flush, die_free[w], prog_end[w]))
    busy = busy.at[w].add(jnp.where(flush & u.measure, prog, 0.0))
    wptr = jnp.where(flush, jnp.mod(w + 1, p.n_dies), w)

    # 7. write completion: SCM write done, and room for the line once flushed data is programmed
    wait_until = space_time(jnp.where(die_ok, die_free, 0.0), p.drain / p.n_dies.astype(dt),
                            (p.sets * s.tag.shape[1] - resident - gather).astype(dt))
    write_done = jnp.where(ins, jnp.maximum(scm_end, wait_until), scm_end)
    stall = jnp.where(is_w, jnp.maximum(write_done - scm_end, 0.0), 0.0)
    req_stall = jnp.maximum(jnp.where(new_req, 0.0, s.req_stall), stall)
    done = jnp.where(is_w, write_done, jnp.where(is_r, read_done, ready))
    req_done = jnp.maximum(req_done, done)

    # 8. table update: touch on hit (LRU, CFLRU), write sets dirty, insertion fills ``way``
    clock = s.clock + v
    touch = hit_way & (p.policy != FIFO)
    row_s = jnp.where(touch, clock, row_s)
    row_d = row_d | (hit_way & is_w)
    row_t = row_t.at[way].set(jnp.where(ins, u.line, row_t[way]))
    row_s = row_s.at[way].set(jnp.where(ins, clock, row_s[way]))
    row_d = row_d.at[way].set(jnp.where(ins, is_w, row_d[way]))

    # 9. request completion
    end = u.last & v
    slots = slots.at[req_slot].set(jnp.where(end, req_done, slots[req_slot]))
    lat = req_done

    new = State(
        tag=s.tag.at[st].set(row_t), stamp=s.stamp.at[st].set(row_s), dirty=s.dirty.at[st].set(row_d),
        gtag=s.gtag.at[st].set(g_t), gunit=s.gunit.at[st].set(g_u),
        resident=resident, gather=gather, unit_id=unit_id, clock=clock, wptr=wptr, slots=slots,
        die_free=die_free, die_r=die_r, op_end=op_end, prog_end=prog_end, op_len=op_len, unit_len=unit_len,
        susp=susp,
        chan_free=chan_free, scm_free=scm_free, link_free=link_free,
        req_slot=req_slot, req_done=req_done, req_miss=req_miss, req_read_end=read_end, req_stall=req_stall,
    )
    m = (v & u.measure).astype(dt)
    op = jnp.clip(u.op, 0, 1)
    onehot = (jnp.arange(2) == op).astype(dt) * m
    endm = onehot * end
    half = (jnp.arange(2) == u.half.astype(jnp.int32)).astype(dt) * m
    el, el_c = kahan_add(acc.elapsed, acc.elapsed_c, issue * m)
    new_acc = Acc(
        elapsed=el, elapsed_c=el_c, count=acc.count + endm, lines=acc.lines + onehot,
        lat_sum=acc.lat_sum + endm * lat,
        hist=acc.hist.at[op, latency_bin(lat)].add((end & u.measure).astype(jnp.int32)),
        scm_hits=acc.scm_hits + onehot * hit, nand_reads=acc.nand_reads + new_page * m,
        nand_programs=acc.nand_programs + pages * flush * m, flushes=acc.flushes + flush * m,
        partial_flushes=acc.partial_flushes + force * m, skipped=acc.skipped + skipped * m,
        stall=acc.stall + endm[1] * req_stall, busy=busy,
        chan_busy=acc.chan_busy + chan_work * m,
        scm_busy=acc.scm_busy + (scm_dur + jnp.sum(share)) * m,
        link_busy=acc.link_busy + jnp.stack([is_r, is_w]).astype(dt) * xfer * m,
        suspensions=acc.suspensions + (new_page & rd["suspend"]) * m,
        read_waits=acc.read_waits + (new_page & rd["wait"]) * m, pending_hits=acc.pending_hits + hit_p * m,
        half_count=acc.half_count + half * end, half_elapsed=acc.half_elapsed + half * issue,
        half_busy=acc.half_busy + half[:, None] * jnp.stack([
            jnp.where(new_page, p.t_read + rd["extra"], 0.0) + jnp.where(flush, prog, 0.0), chan_work,
            scm_dur + jnp.sum(share), jnp.where(io, xfer, 0.0)])[None, :],
    )
    return new, new_acc, jnp.where(end, lat, jnp.nan)


def _scan(p: HybridParams, s: State, lines: Lines, lay: Layout, record: bool):
    def body(carry, u):
        st, acc = carry
        st, acc, _ = step(p, st, acc, u)
        return (st, acc), ({"resident": st.resident, "gather": st.gather} if record else None)

    (s, acc), ev = jax.lax.scan(body, (s, zero_acc(p, lay)), lines)
    return s, acc, ev


def run_chunk(p: HybridParams, s: State, lines: Lines, lay: Layout) -> tuple[State, Acc]:
    """Scan one chunk of lines from state ``s``."""
    s, acc, _ = _scan(p, s, lines, lay, record=False)
    return s, acc


def trace(p: HybridParams, s: State, lines: Lines, lay: Layout) -> tuple[State, Acc, dict[str, jax.Array]]:
    """Like :func:`run_chunk`, also returning the SCM occupancy after every line (for invariant checks):
    ``resident`` lines in the table and ``gather`` lines in the gathering unit."""
    return _scan(p, s, lines, lay, record=True)


# ------------------------------------------------------------------------------------------ host side
# the host's lines (lines_from_requests, pad_lines, no_scm_pages): ssdx.models.hybrid.lines

#: resources whose utilisation is reported; ``bottleneck`` names the busiest
RESOURCES = ("die", "channel", "scm", "link")
#: largest relative IOPS difference between the halves of the measured window still called steady
STEADY_TOLERANCE = 0.02
#: a resource booked for more than this share of the measured window ran behind its work: not steady
MAX_UTILISATION = 1.01
#: a resource at least this busy limits the run: its halves are compared work-normalised
SATURATED = 0.95


def metrics(acc: dict[str, np.ndarray], makespan_s: np.ndarray, counts: Mapping[str, np.ndarray],
            base_pages: np.ndarray) -> dict[str, np.ndarray]:
    """Per-configuration figures from summed accumulators (float64, leading axis = configurations).

    ``counts`` holds the active ``dies``, ``channels`` and ``banks`` per configuration.
    ``nand_read_write_ratio`` is NAND page reads for host misses over pages of host data programmed (the
    x-axis of Fig. 6 of Fukuchi et al.; NaN when nothing was programmed); ``nand_traffic_reduction`` compares
    those NAND page operations with ``base_pages``, what a drive without SCM would do under the same charging
    rules (:func:`no_scm_pages`).  ``<resource>_utilisation`` is the work booked on each resource by the
    measured requests over the makespan (dies, channels and banks averaged over their count): in steady
    state the rate work is booked equals the rate it is done, and a share above 1 means the backlog grew
    during the window (flushed data still being programmed at its end); ``bottleneck`` is the index into
    :data:`RESOURCES` of the busiest (the link's busier direction counts).  ``iops_first_half`` /
    ``iops_second_half`` are the request rates of the two halves of the measured window on the issue
    clock, ``utilisation_first_half`` / ``utilisation_second_half`` the busiest resource's booked share of
    each (the rate work-normalised: a half whose requests miss SCM more often has a lower IOPS but the same
    share).  ``steady_change`` is the relative change of that share where the resource limits the run (at
    least :data:`SATURATED` busy), else of the IOPS; ``halves_agree`` says whether it is within
    :data:`STEADY_TOLERANCE`, ``overbooked``
    whether some resource was booked above :data:`MAX_UTILISATION` of the window (work left over at its
    end), and ``steady`` is the first without the second."""
    count, lines, hits = acc["count"], acc["lines"], acc["scm_hits"]
    n_req = count.sum(1)
    reads, progs = acc["nand_reads"], acc["nand_programs"]
    span = np.maximum(makespan_s, 1e-30)
    out = {
        "requests": n_req, "read_fraction": count[:, 0] / np.maximum(n_req, 1),
        "iops": n_req / makespan_s, "makespan_s": makespan_s,
        "latency_mean_us": 1e6 * acc["lat_sum"].sum(1) / np.maximum(n_req, 1),
        "scm_hit_rate": hits.sum(1) / np.maximum(lines.sum(1), 1),
        "scm_read_hit_rate": hits[:, 0] / np.maximum(lines[:, 0], 1),
        "scm_write_hit_rate": hits[:, 1] / np.maximum(lines[:, 1], 1),
        "nand_reads": reads, "nand_writes": progs,
        "nand_read_write_ratio": np.where(progs > 0, reads / np.maximum(progs, 1e-30), np.nan),
        "nand_traffic_reduction": 1.0 - (reads + progs) / np.maximum(base_pages, 1e-30),
        "flushes": acc["flushes"], "partial_flushes": acc["partial_flushes"],
        "skipped_evictions": acc["skipped"], "write_stall_share": acc["stall"] / np.maximum(
            acc["lat_sum"][:, 1], 1e-30),
        "die_utilisation": acc["busy"].sum(1) / (span * counts["dies"]),
        "die_utilisation_max": acc["busy"].max(1) / span,
        "channel_utilisation": acc["chan_busy"] / (span * counts["channels"]),
        "scm_utilisation": acc["scm_busy"] / (span * counts["banks"]),
        "link_utilisation": acc["link_busy"].max(1) / span,
        "link_read_utilisation": acc["link_busy"][:, 0] / span,
        "link_write_utilisation": acc["link_busy"][:, 1] / span,
        "suspensions_per_nand_read": acc["suspensions"] / np.maximum(reads, 1),
        "nand_read_waits": acc["read_waits"], "pending_read_hits": acc["pending_hits"],
    }
    util = np.stack([out[f"{r}_utilisation"] for r in RESOURCES], axis=1)
    out["bottleneck"] = np.argmax(util, axis=1).astype(np.float64)
    out["utilisation_max"] = util.max(1)
    halves = acc["half_count"] / np.maximum(acc["half_elapsed"], 1e-30)
    out["iops_first_half"], out["iops_second_half"] = halves[:, 0], halves[:, 1]
    # work-normalised: the busiest resource's booked share of each half (IOPS x its work per request), so a
    # half whose requests happen to miss SCM more often is not read as a drift of the drive
    busiest = np.argmax(util, axis=1)
    hb = acc["half_busy"][np.arange(len(busiest)), :, busiest]
    units = np.stack([counts["dies"], counts["channels"], counts["banks"], np.ones_like(counts["dies"])], 1)
    u_half = hb / np.maximum(acc["half_elapsed"] * units[np.arange(len(busiest)), busiest][:, None], 1e-30)
    out["utilisation_first_half"], out["utilisation_second_half"] = u_half[:, 0], u_half[:, 1]
    out["iops_change"] = halves[:, 1] / np.maximum(halves[:, 0], 1e-30) - 1.0
    share_change = u_half[:, 1] / np.maximum(u_half[:, 0], 1e-30) - 1.0
    out["steady_change"] = np.where(out["utilisation_max"] >= SATURATED, share_change, out["iops_change"])
    out["halves_agree"] = (np.abs(out["steady_change"]) <= STEADY_TOLERANCE).astype(np.float64)
    out["overbooked"] = (out["utilisation_max"] > MAX_UTILISATION).astype(np.float64)
    out["steady"] = out["halves_agree"] * (1.0 - out["overbooked"])
    for i, name in ((0, "read"), (1, "write")):
        mean = 1e6 * acc["lat_sum"][:, i] / np.maximum(count[:, i], 1)
        out[f"{name}_latency_mean_us"] = np.where(count[:, i] > 0, mean, np.nan)
    out["latency_p99_us"] = 1e6 * percentile_from_hist(acc["hist"].sum(1), 0.99)
    return out


_COMPILED: dict = {}


def compiled(lay: Layout):
    """``jit(vmap(run_chunk))`` for a layout (parameters batched, lines shared), cached."""
    if lay not in _COMPILED:
        _COMPILED[lay] = jax.jit(jax.vmap(lambda p, s, x: run_chunk(p, s, x, lay), in_axes=(0, 0, None)))
    return _COMPILED[lay]


#: lines a chunk of :func:`simulate` holds at most
CHUNK_LINES = 16384
#: lines a chunk holds at least (a shorter stream is padded to it)
MIN_CHUNK_LINES = 1024


def chunk_length(n_lines: int, chunk_len: int = CHUNK_LINES) -> int:
    """The padded length of :func:`simulate`'s chunks for a stream of ``n_lines``: ``chunk_len``, or the
    power of two (at least :data:`MIN_CHUNK_LINES`) that holds a shorter stream whole, so that streams of
    similar lengths share one compiled program (padding lines touch nothing)."""
    whole = max(MIN_CHUNK_LINES, 1 << max(n_lines - 1, 0).bit_length())
    return max(1, min(chunk_len, whole))


def simulate(hp: HybridParams, lay: Layout, lines: dict[str, np.ndarray], chunk_len: int = CHUNK_LINES,
             progress: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
    """Replay host ``lines`` (:func:`lines_from_requests`) through every configuration of ``hp`` (leaves
    ``(n,)``) in chunks of :func:`chunk_length` lines; returns :func:`metrics` plus ``compile_s`` and
    ``run_s``.  Chunks are summed on the host in float64; the makespan runs from the first measured issue
    to the last completion."""
    import time

    n_lines = len(lines["op"])
    chunk_len = chunk_length(n_lines, chunk_len)
    fn = compiled(lay)
    state = jax.vmap(lambda p: init(p, lay))(hp)
    sums: dict[str, np.ndarray] | None = None
    compile_s, t0 = 0.0, time.perf_counter()
    for k, lo in enumerate(range(0, n_lines, chunk_len)):
        chunk = pad_lines({key: a[lo:lo + chunk_len] for key, a in lines.items()}, chunk_len)
        t = time.perf_counter()
        state, acc = fn(hp, state, chunk)
        acc = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float64), acc._asdict())
        if k == 0:
            compile_s = time.perf_counter() - t
        sums = acc if sums is None else {key: sums[key] + acc[key] for key in acc}
        if progress is not None:
            progress(min(chunk_len, n_lines - lo))
    run_s = time.perf_counter() - t0 - compile_s
    slots = np.asarray(state.slots, np.float64)
    last = np.where(np.isfinite(slots), slots, -np.inf).max(axis=1)
    makespan = sums["elapsed"] + last
    counts = {"dies": np.asarray(hp.n_dies, np.float64), "channels": np.asarray(hp.n_channels, np.float64),
              "banks": np.asarray(hp.n_banks, np.float64)}
    out = metrics(sums, makespan, counts, no_scm_pages(lines, np.asarray(hp.page_units, np.float64)))
    out["write_amplification"] = np.asarray(hp.wa, np.float64)
    out["scm_lines"] = np.asarray(hp.sets, np.float64) * lay.ways
    return {**out, "compile_s": compile_s, "run_s": run_s}
