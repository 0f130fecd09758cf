"""The request-level engine's step compiled for the CPU: one configuration at a time, touching only the
dies and channels a request uses.

:mod:`ssdx.models.engine.model` steps a whole batch at once, every die position of every configuration with
masks, which suits a GPU.  On a CPU that costs more than it needs: a 4 KiB read uses one die, yet the
batched step books all of them, and XLA's CPU back end recomputes the shared booking arithmetic in each
fused kernel and copies the die arrays through the request-type conditional (profiled in
``docs/performance.md``).  This module runs the same
model as a compiled loop (Numba, LLVM): configurations in parallel over the cores, each configuration
through its chunk of requests with its state in cache, and a request visits only the dies that hold its
pages (or receive its program units) and the channels of those dies.

It is the same model, not a second one: every formula mirrors :mod:`ssdx.models.engine.model` (the module
docstring there is the specification; :func:`_book` and the fluid transfers are the same functions
written on scalars), and the tests check both give the same latencies, accumulators and state on
mixed read/write/trim streams, open and closed loop, DRAM and DRAM-less drives.  Differences:

* Arithmetic is float64 inside a chunk, with times kept from the chunk's start instead of rebased at
  every request (the JAX step rebases so float32 keeps sub-µs resolution).  The state handed back is
  rebased to the last issue instant and cast to the batch's dtype, so chunks chain exactly as they do
  in the JAX engine and results agree to float32 rounding.
* The elapsed time comes back as a plain float64 sum (``elapsed_c`` = 0).

Arrays use the batched layout of :func:`ssdx.models.engine.model.plan_batch` (configurations on the last
axis); :func:`run_chunk` transposes them to configurations first for the loop and back.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ssdx.core.stats import BIN_NUDGE, BINS_PER_DECADE, LOG_MIN, N_BINS
from ssdx.models.engine.cpu_ops import (
    _admit,
    _admit_programs,
    _allocate,
    _book,
    _bp_limit,
    _div,
    _dram_s,
    _erases,
    _flight_push,
    _heap_replace_min,
    _kept_on,
    _merge_page,
    _mod,
    _nth_die,
    _pos,
    _read_on_die,
    _shift,
    _write_pages,
)
from ssdx.models.engine.cpu_pack import *  # noqa: F403  (the loop's column and row indices: INDICES)
from ssdx.models.engine.cpu_pack import (
    new_sums,
    pack_flight,
    pack_merge,
    pack_plan,
    pack_state,
    request_arrays,
    unpack,
)
from ssdx.models.engine.model import END_SLACK, FIT_SLACK, READ, TRIM, WRITE, Acc, Requests, State
from ssdx.models.engine.params import MAP_UNIT_BYTES, MASK_PAGES, Layout

__all__ = ["pack_plan", "run_chunk"]


# ------------------------------------------------------------------------------------------- the loop
@numba.njit(cache=True)
def _config(f, sc, die, chan, slots, tags, a, hist, busy, x_c, first_c, last_c, end_c, op, off4k, size, gap_s,
            valid, map_miss, wb_tpage, wb_count, kept, first_read, lat, keep, b, C, mg, wk, fl):
    """Run one configuration through the chunk (``engine.step`` request by request).

    Its arrays are one configuration's views (``f`` its plan row, ``sc`` scalars, ``die``
    (len(DIES) + 2 K, D), ``chan`` (2, C), ``slots``, ``tags`` (3, M), accumulators ``a``,
    ``hist`` (3, N_BINS), ``busy`` (D,)), written in place; ``x_c``, ``first_c``, ``last_c``, ``end_c``
    are scratch of at least ``C`` entries, ``wk`` of (2, dies), ``fl`` (3, ``Layout.flight_slots``) the
    pages in flight to flash (``State.flight``); ``lat[i, b]`` gets request ``i``'s latency when ``keep``.
    No allocation and no numpy calls: the same source is compiled as a CUDA device function by
    :mod:`ssdx.models.engine.cuda`."""
    n_dies = int(f[N_DIES])
    n_ch = int(f[N_CH])
    planes = f[PLANES]
    page_bytes = f[PAGE_BYTES]
    page_4k = int(f[PAGE_4K])
    cap_4k = int(f[CAP_4K])
    tpage_4k = int(f[TPAGE_4K])
    map_sets = int(f[MAP_SETS])
    always_hit = f[MAP_ALWAYS_HIT] > 0.5
    unit = f[UNIT_BYTES]
    upb = f[UNITS_PER_BLOCK]
    chan_rate = f[CHAN_RATE]
    host_rate = f[HOST_RATE]
    t_read = f[T_READ]
    t_map = f[T_MAP_READ]
    open_loop = f[OPEN_LOOP] > 0.5
    duplex = f[DUPLEX] > 0.5
    sus_on = f[SUSPEND_ON] > 0.5  # a suspension option in effect: track the program/erase runs
    map_lru = f[MAP_LRU] > 0.5
    map_wb = f[MAP_WRITEBACK] > 0.5
    map_ent = f[MAP_ENTRIES] > 0.5  # engine.map_cache = entries: misses, write-backs come with the requests
    t_map_xfer = f[T_MAP_XFER]
    hold_on = f[HOLD_READ] > 0.5  # engine.cache_read false: a read keeps its die until its data is out
    # a translation read's die time, and when its entries are in after it (its transfer, unless held for it)
    t_map_die = t_map + (t_map_xfer if hold_on else 0.0)
    t_map_in = 0.0 if hold_on else t_map_xfer
    ring = int(f[MERGE_RING])  # engine.plane_merge: program starts a plane remembers (params.MERGE_RING)
    sub, n_pl = int(f[MERGE_DIES]), int(planes)  # engine.plane_merge: dies a page's die stands for, planes
    # shifts and masks for the divisors that are powers of two (every MQSim and preset drive's)
    s_dies, s_ch, s_p4, s_tp, s_cap = (_shift(n_dies), _shift(n_ch), _shift(page_4k), _shift(tpage_4k),
                                       _shift(cap_4k))
    ctrl_free, link_rx, link_tx = sc[CTRL_FREE], sc[LINK_RX], sc[LINK_TX]
    free_max, last_arrival, last_done = sc[FREE_MAX], sc[LAST_ARRIVAL], sc[LAST_DONE]
    wptr, wpartial = int(sc[WPTR]), sc[WPARTIAL]
    ds, dn, draw = sc[DS], sc[DN], sc[DRAW]
    dram_free = sc[DRAM_FREE]
    map_tp, map_end = int(sc[MAP_TP]), sc[MAP_END]
    nq = 0
    while nq < slots.shape[0] and slots[nq] < math.inf:
        nq += 1
    now = 0.0
    for i in range(op.shape[0]):
        if not valid[i]:
            if keep:
                lat[i, b] = math.nan
            continue
        o = min(max(op[i], 0), 2)  # as engine.step clips it (no bounds checks here)
        sz = size[i]
        # 3. mapping-cache probe (reads and writes)
        miss = False
        tpage = 0
        m_start = 0.0
        o4 = _mod(off4k[i], cap_4k, s_cap)
        wb_page = -1
        wb_n = 1.0
        if o != TRIM:
            tpage = _div(o4, tpage_4k, s_tp)
            if map_ent:
                miss = map_miss[i]
                wb_page = wb_tpage[i]
                wb_n = wb_count[i]
            elif not map_lru and not map_wb:  # the original direct-mapped cache (engine.map_cache = auto)
                cset = tpage % map_sets
                if not always_hit and tags[TAG, cset] != tpage:
                    miss = True
                    tags[TAG, cset] = tpage
            elif not always_hit:  # model._lookup: direct-mapped or LRU, dirty pages written back
                if map_lru:
                    cset = -1
                    victim = 0
                    oldest = tags[AGE, 0]
                    clock = tags[AGE, 0]
                    for c in range(map_sets):
                        if tags[TAG, c] == tpage:
                            cset = c
                        if tags[AGE, c] < oldest:
                            oldest = tags[AGE, c]
                            victim = c
                        clock = max(clock, tags[AGE, c])
                    if cset < 0:
                        cset = victim
                    tags[AGE, cset] = clock + 1
                else:
                    cset = tpage % map_sets
                held = tags[TAG, cset]
                dirty = tags[DIRTY, cset] > 0
                if held != tpage:
                    miss = True
                    if held >= 0 and dirty:
                        wb_page = held
                    tags[TAG, cset] = tpage
                    dirty = False
                tags[DIRTY, cset] = 1 if (o == WRITE or dirty) else 0
        # 1-2. issue, idle folding, controller
        arrival = last_arrival + gap_s[i] / f[TIME_SCALE]
        # the earliest completion frees the slot the request takes: the root of the slots' min-heap (they
        # come in sorted, which is a heap, and go out sorted)
        issue = max(arrival, slots[0]) if open_loop else slots[0]
        if not open_loop:
            arrival = issue
        idle = max(issue - free_max, 0.0)
        fold_x = min(idle * f[IDLE_FOLD_RATE], max(f[S0] + ds, 0.0))
        ctrl_at = max(ctrl_free, issue)
        t_cmd = ctrl_at + f[CTRL_S] + f[CMD_S]
        a[ELAPSED] += issue - now
        now = issue
        ds -= fold_x
        dn += fold_x
        draw -= (f[BITS] - 1.0) * fold_x
        queue = (issue - arrival) + (ctrl_at - issue)
        done = t_cmd
        # engine.back_pressure = pages: a write's pages are looked up as they go to flash (_write_pages)
        by_page = o == WRITE and f[EAGER] > 0.5 and f[BP_PAGES] > 0.5
        # model._in_flight: the page of the latest translation read, not in yet: wait for that read
        inflight = o != TRIM and not by_page and tpage == map_tp and map_end > t_cmd
        if inflight:
            miss = False
        if miss and not by_page:  # 3. translation page read from die tpage mod dies, read priority
            pm = _pos(_mod(tpage, n_dies, s_dies), n_ch, C, s_ch)
            m_start, m_dur = _read_on_die(f, sus_on, die, busy, a, pm, t_cmd, t_map_die)
            _flight_push(fl, pm, m_start, m_dur)
            free_max = max(free_max, die[DIE_FREE, pm])
            a[MAP_MISSES] += 1.0
            map_tp, map_end = tpage, m_start + m_dur + t_map_in  # entries in
        if o == READ:
            if miss:
                ready = map_end
                queue += m_start - t_cmd
            elif inflight:
                ready = max(map_end, t_cmd + f[MAP_HIT_S])
                queue += map_end - t_cmd
            else:
                ready = t_cmd + f[MAP_HIT_S]
            first = _div(o4, page_4k, s_p4)
            in_page = _mod(o4, page_4k, s_p4) * MAP_UNIT_BYTES
            k = max(int(math.ceil((in_page + sz) / page_bytes)), 1)
            q, m = _div(k, n_dies, s_dies), _mod(k, n_dies, s_dies)
            per_page = sz / k / chan_rate
            start = _mod(first, n_dies, s_dies)
            # the channels the request uses: those of its first n_tc dies (dies are dealt channel by
            # channel and the die count is a multiple of the channel count), so only these are visited
            n_tc = min(k, n_ch)
            for j in range(n_tc):
                c = _mod(start + j, n_ch, s_ch)
                x_c[c] = 0.0
                first_c[c] = math.inf
                last_c[c] = -math.inf
            data_first = math.inf
            q_die = 0.0
            pages = 0
            if hold_on:  # reads._hold: where each array read would end, so when its channel's transfers end
                for j in range(min(k, n_dies)):
                    d = _nth_die(start, j, n_dies)
                    n = q + (1 if j < m else 0)
                    pd = _pos(d, n_ch, C, s_ch)
                    dur = math.ceil(n / planes) * t_read
                    est = _book(die, pd, ready, dur, False)
                    c = _mod(d, n_ch, s_ch)
                    x_c[c] += n * per_page
                    first_c[c] = min(first_c[c], est + dur)
                for j in range(n_tc):
                    c = _mod(start + j, n_ch, s_ch)
                    end_c[c] = max(first_c[c], chan[1, c]) + 0.5 * x_c[c]  # + half the die's own transfer
                    x_c[c] = 0.0
                    first_c[c] = math.inf
            fr_i = first_read[i] if f[PLANE_MERGE] > 0.5 else 0
            for j in range(min(k, n_dies)):
                d = _nth_die(start, j, n_dies)
                n = q + (1 if j < m else 0)
                pd = _pos(d, n_ch, C, s_ch)
                if fr_i != 0:  # engine.plane_merge: pages read first take their planes' next pages
                    t = j
                    while t < min(k, MASK_PAGES):
                        if (fr_i >> t) & 1:
                            _allocate(mg, pd, _div(first + t, n_dies, s_dies), sub, n_pl, ring)
                        t += n_dies
                dur = math.ceil(n / planes) * t_read
                xfer = n * per_page
                c = _mod(d, n_ch, s_ch)
                hold = 0.0
                if hold_on:
                    est = _book(die, pd, ready, dur, False)
                    hold = max(end_c[c] + 0.5 * xfer, est + dur + xfer) - (est + dur)
                r_start, dur = _read_on_die(f, sus_on, die, busy, a, pd, ready, dur + hold)
                _flight_push(fl, pd, r_start, dur)
                r_end = r_start + dur - hold
                x_c[c] += xfer
                first_c[c] = min(first_c[c], r_end)
                last_c[c] = max(last_c[c], r_end + xfer)
                data_first = min(data_first, r_end + xfer)
                q_die = max(q_die, r_start - ready)
                free_max = max(free_max, die[DIE_FREE, pd])
                pages += n
            data_last = -math.inf
            q_chan = 0.0
            for j in range(n_tc):
                c = _mod(start + j, n_ch, s_ch)
                if x_c[c] > 0:
                    c_start = max(first_c[c], chan[1, c])
                    chan[1, c] = max(chan[1, c], issue) + x_c[c]
                    data_last = max(data_last, max(c_start + x_c[c], last_c[c]))
                    q_chan = max(q_chan, c_start - first_c[c])
                    chan[0, c] = max(chan[0, c], c_start) + x_c[c]
            t_host = sz / host_rate
            link_start = max(data_first, link_tx)
            link_tx = max(link_tx, issue) + t_host
            if not duplex:
                link_rx = link_tx
            done = max(link_start + t_host, data_last + min(sz, page_bytes) / host_rate)
            queue += q_die + q_chan + (link_start - data_first)
            a[READ_PAGES] += pages
        elif o == WRITE:
            t_host = sz / host_rate
            h_start = max(t_cmd, link_rx)
            link_rx = max(link_rx, issue) + t_host
            if not duplex:
                link_tx = link_rx
            h_end = h_start + t_host
            # pSLC accounting (pages._place)
            room_slc = max(min(f[ROOM_SLC0] - f[SLC_CS] * ds - f[SLC_CRAW] * draw,
                               f[ROOM_CAP0] - f[CAP_CS] * ds), 0.0)
            a_slc = min(room_slc, sz)
            draw += f[BITS] * a_slc
            room_nat = max(f[ROOM_NAT0] - f[NAT_DN] * dn - f[NAT_DRAW] * draw, 0.0)
            a_dir = min(room_nat, sz - a_slc)
            a_fold = sz - a_slc - a_dir
            folded = min(f[FOLD] * a_fold, max(f[S0] + ds + a_slc, 0.0))
            ds, dn, draw = ds + a_slc - folded, dn + a_dir + a_fold + folded, draw + a_dir
            a[MODE] += a_slc
            a[MODE + 1] += a_dir
            a[MODE + 2] += a_fold
            if sz > 0:
                t_unit = (a_slc * f[T_UNIT0] + a_dir * f[T_UNIT1] + a_fold * f[T_UNIT2]) / max(sz, 1.0)
            else:
                t_unit = f[T_UNIT1]
            eager = f[EAGER] > 0.5
            total = wpartial + sz
            # the write's pages kept in the buffer, not written back (model._write: Requests.kept)
            kept_i = kept[i] if eager and f[REWRITES] > 0.5 else 0
            merge_on = eager and f[PLANE_MERGE] > 0.5
            rule, fac0, fac1, fac2 = f[PAGE_RULE], f[PROG_F0], f[PROG_F1], f[PROG_F2]  # engine.page_types
            if eager:  # model._write, eager: the pages the write touches, on the dies of their addresses
                k = max(int(math.ceil((_mod(o4, page_4k, s_p4) * MAP_UNIT_BYTES + sz) / page_bytes)), 1)
                n_units, start, t_item = k, _mod(_div(o4, page_4k, s_p4), n_dies, s_dies), sz / k / chan_rate
            else:  # full program units, round-robin from the frontier
                n_units = int(math.floor(total / unit))
                start, t_item = wptr, unit / chan_rate
            q, m = _div(n_units, n_dies, s_dies), _mod(n_units, n_dies, s_dies)
            n_tc = min(n_units, n_ch)  # the channels the units cross, as for a read
            for j in range(n_tc):
                x_c[_mod(start + j, n_ch, s_ch)] = 0.0
            n_kept = 0
            for j in range(min(n_units, n_dies)):
                u_k = _kept_on(kept_i, j, n_units, n_dies) if kept_i != 0 else 0
                n_kept += u_k
                x_c[_mod(_nth_die(start, j, n_dies), n_ch, s_ch)] += q + (1 if j < m else 0) - u_k
            adm = h_end
            bp_prog = eager and f[BP_PROGRAMS] > 0.5
            if by_page:  # engine.back_pressure = pages: page by page, programs booked there (_write_pages)
                pm = _pos(_mod(tpage, n_dies, s_dies), n_ch, C, s_ch)
                first_pg = _div(o4, page_4k, s_p4)
                adm, n_ops, map_tp, map_end, fm, dram_free = _write_pages(
                    f, sus_on, die, busy, a, mg, wk, fl, chan, h_end, sz, n_units, start, first_pg, kept_i,
                    n_dies, n_ch, C, s_dies, s_ch, t_unit, t_item, merge_on, sub, n_pl, upb, ring, rule, fac0,
                    fac1, fac2, miss, pm, t_map_die, t_map_in, tpage, map_tp, map_end, dram_free, issue)
                free_max = max(free_max, fm)
            elif bp_prog:  # engine.back_pressure = programs: let in once few enough programs are in flight
                limit = _bp_limit(f[INFLIGHT_BYTES], sz, float(n_units), float(n_units - n_kept))
                adm = _admit_programs(h_end, die, n_dies, n_ch, C, t_unit, limit, wk)
            backlog_pre = 0.0  # merge_on: the dies' backlog before this write's programs, then its change
            if not by_page:  # the write's units booked together (the other back pressures)
                for j in range(n_tc):  # channel transfer of the units, after the host data is in
                    c = _mod(start + j, n_ch, s_ch)
                    if x_c[c] > 0:
                        chan[0, c] = max(chan[0, c], h_end) + x_c[c] * t_item
                n_ops = 0.0
                if merge_on and not bp_prog:  # when the back pressure (below) lets the pages into flash
                    for w in range(n_dies // n_ch):
                        for c in range(n_ch):
                            backlog_pre += max(die[DIE_FREE, w * C + c] - issue, 0.0)
                    own = (n_units - n_kept) * t_unit
                    adm = _admit(h_end, issue, backlog_pre + own, n_dies, f[INFLIGHT_BYTES], t_unit,
                                 sz / n_units)
                for j in range(min(n_units, n_dies)):
                    d = _nth_die(start, j, n_dies)
                    u = q + (1 if j < m else 0)
                    if kept_i != 0:
                        u -= _kept_on(kept_i, j, n_units, n_dies)
                        if u == 0:  # every page of this die kept: no program
                            continue
                    ops, used = (float(math.ceil(u / planes)), u / planes) if eager else (float(u), float(u))
                    pd = _pos(d, n_ch, C, s_ch)
                    old = die[DIE_UNITS, pd]
                    die[DIE_UNITS, pd] = old + used
                    n_erase = _erases(old, old + used, upb, f[FRESH_UNITS])
                    c_d = _mod(d, n_ch, s_ch)
                    p_start = max(die[DIE_FREE, pd], chan[0, c_d])
                    durf = ops  # the programs' time in units of t_unit
                    if merge_on:  # page by page: each joins a queued program of another plane or is its own
                        ops = 0.0
                        durf = 0.0
                        slack = END_SLACK * t_unit  # a program starting as the page is ready takes it
                        t0 = p_start + n_erase * f[T_ERASE]  # the erases first
                        t = j
                        while t < n_units:
                            if not (t < MASK_PAGES and (kept_i >> t) & 1):
                                g = _div(o4, page_4k, s_p4) + t
                                w = _merge_page(mg, pd, _div(g, n_dies, s_dies), sub, n_pl, upb,
                                                t0 + durf * t_unit, max(chan[0, c_d], adm) - slack, ring,
                                                rule, fac0, fac1, fac2)
                                ops += 1.0 if w > 0.0 else 0.0  # (a select, not a branch)
                                durf += w
                            t += n_dies
                    n_ops += ops
                    p_dur = durf * t_unit + n_erase * f[T_ERASE]
                    if p_dur == 0.0:  # every page joined a queued program: no die time
                        continue
                    if sus_on:  # the program/erase run (model._write): erases first, then the units
                        if p_start - die[PE_END, pd] > FIT_SLACK * t_unit:
                            die[PE_START, pd] = p_start
                        die[PE_END, pd] = p_start + p_dur
                        if n_erase > 0:
                            die[ER_LEN, pd] = n_erase * f[T_ERASE]
                            die[ER_END, pd] = p_start + die[ER_LEN, pd]
                        die[T_OP, pd] = t_unit * f[OP_BIAS]  # the op a read lands in (model._write)
                    if merge_on and not bp_prog:  # the backlog's change, not a second pass over the dies
                        backlog_pre += p_start + p_dur - issue - max(die[DIE_FREE, pd] - issue, 0.0)
                    die[DIE_FREE, pd] = p_start + p_dur
                    free_max = max(free_max, die[DIE_FREE, pd])
                    busy[pd] += p_dur
                    a[ERASES] += n_erase
            h_ack = adm
            if eager and not bp_prog:  # let in once the data in flight fits in inflight_bytes (model._write)
                backlog = backlog_pre
                if not merge_on:
                    for w in range(n_dies // n_ch):  # every die in die order, without a division per die
                        for c in range(n_ch):
                            backlog += max(die[DIE_FREE, w * C + c] - issue, 0.0)
                written = sz if n_kept == 0 else sz / n_units * max(n_units - n_kept, 1)
                per_op = written / max(n_ops, 1.0)  # bytes written back per program
                h_ack = _admit(h_end, issue, backlog, n_dies, f[INFLIGHT_BYTES], t_unit, per_op)
            if f[DRAM_RATE] > 0 and not by_page:  # into the buffer's DRAM through one memory channel
                dram_free = max(h_ack, dram_free) + _dram_s(f, sz)
                h_ack = dram_free
            a[PROGRAMS] += n_ops
            if eager:
                done = h_ack
                a[PROG_PAGES] += n_units - n_kept
            else:
                done = max(h_ack, free_max - f[BUFFER_BYTES] / (n_dies * unit / t_unit))
                wptr = _mod(wptr + n_units, n_dies, s_dies)
                wpartial = total - n_units * unit
                a[PROG_PAGES] += n_units * planes
            queue += (h_start - t_cmd) + (done - h_end)
        if wb_page >= 0:  # 3. the evicted dirty translation page written back behind the die's backlog
            pw = _pos(_mod(wb_page, n_dies, s_dies), n_ch, C, s_ch)
            t_wb = t_map + f[T_UNIT0]
            if map_ent:
                t_wb = t_wb * wb_n
            die[DIE_FREE, pw] = max(die[DIE_FREE, pw], issue) + t_wb
            free_max = max(free_max, die[DIE_FREE, pw])
            busy[pw] += t_wb
            a[MAP_WBS] += wb_n
        # completion: slot, clocks, accumulators
        _heap_replace_min(slots, done, nq)
        ctrl_free = ctrl_at + f[CTRL_S]
        last_arrival = arrival
        last_done = max(last_done, done)
        la = done - arrival
        a[COUNT + o] += 1.0
        a[BYTES + o] += sz
        a[LAT + o] += la
        a[QUEUE_SUM] += queue
        a[IDLE_FOLDED] += fold_x
        x = (math.log10(max(la, 1e-12)) - LOG_MIN) * BINS_PER_DECADE + BIN_NUDGE
        hist[o, min(max(int(math.floor(x)), 0), N_BINS - 1)] += 1
        if keep:
            lat[i, b] = la
    # sorted, as the JAX engine keeps them (heapsort: the least to the back, then reversed), and back to
    # times relative to the last issue instant
    for n in range(nq - 1, 0, -1):
        v = slots[n]
        slots[n] = slots[0]
        _heap_replace_min(slots, v, n)
    for j in range(nq // 2):
        slots[j], slots[nq - 1 - j] = slots[nq - 1 - j], slots[j]
    for j in range(nq):
        slots[j] -= now
    for r in range(die.shape[0]):  # the times among the die rows
        if r == DIE_UNITS or r == ER_LEN or r == T_OP:
            continue
        for d in range(die.shape[1]):
            die[r, d] -= now
    for r in range(2):
        for c in range(chan.shape[1]):
            chan[r, c] -= now
    sc[CTRL_FREE], sc[LINK_RX], sc[LINK_TX] = ctrl_free - now, link_rx - now, link_tx - now
    sc[FREE_MAX], sc[LAST_ARRIVAL], sc[LAST_DONE] = free_max - now, last_arrival - now, last_done - now
    sc[WPTR], sc[WPARTIAL], sc[DS], sc[DN], sc[DRAW] = wptr, wpartial, ds, dn, draw
    sc[DRAM_FREE] = dram_free - now
    sc[MAP_TP], sc[MAP_END] = map_tp, map_end - now
    for j in range(fl.shape[1]):  # the pages in flight: when their programs end
        fl[0, j] -= now
    for r in range(mg.shape[0]):  # the multi-plane state's start times
        if r % (1 + ring) != 0:
            for d in range(mg.shape[1]):
                mg[r, d] -= now


@numba.njit(cache=True, parallel=True)
def _run(pf, sc, die, chan, slots, tags, a, hist, busy, op, off4k, size, gap_s, valid, map_miss, wb_tpage,
         wb_count, kept, first_read, lat, keep, C, mg, fl):
    for b in numba.prange(pf.shape[0]):
        x_c, first_c, last_c, end_c = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
        wk = np.empty((2, die.shape[2]))
        # the index as int64: Numba types a prange index int64 while it infers types and uint64 in the
        # parallel loop it lowers, and would compile _config, nearly all of the code, once for each
        _config(pf[b], sc[b], die[b], chan[b], slots[b], tags[b], a[b], hist[b], busy[b], x_c, first_c,
                last_c, end_c, op, off4k, size, gap_s, valid, map_miss, wb_tpage, wb_count, kept, first_read,
                lat, keep, np.int64(b), C, mg[b], wk, fl[b])


def run_chunk(pf: np.ndarray, s: State, req: Requests, lay: Layout,
              keep_latency: bool = False) -> tuple[State, Acc, np.ndarray | None]:
    """:func:`ssdx.models.engine.model.run_chunk` on the CPU for the packed plan ``pf`` (:func:`pack_plan`):
    the same state, accumulators and latencies (numpy, configurations last, the state's dtype)."""
    dt = np.asarray(s.ctrl_free).dtype
    b = pf.shape[0]
    first = [np.ascontiguousarray(np.moveaxis(x, -1, 0))
             for x in (*pack_state(s), *new_sums(b, lay.ways * lay.channels), pack_merge(s), pack_flight(s))]
    n_req = np.shape(req.op)[0]
    lat = np.zeros((n_req, b) if keep_latency else (1, 1))
    _run(pf, *first[:-2], *request_arrays(req), lat, keep_latency, lay.channels, *first[-2:])
    state, acc = unpack(*(np.moveaxis(x, 0, -1) for x in first), dt)
    return state, acc, (lat.astype(dt) if keep_latency else None)
