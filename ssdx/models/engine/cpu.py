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
from ssdx.models.engine.model import (
    END_SLACK,
    FIT_SLACK,
    PE,
    READ,
    TRIM,
    WRITE,
    Acc,
    Plan,
    Requests,
    Server,
    State,
    to_host,
)
from ssdx.models.engine.params import MAP_UNIT_BYTES, MASK_PAGES, MERGE_RING, Layout

# ---------------------------------------------------------------------------------------------- packing
#: per-configuration constants, columns of the (B, len(PLAN)) float64 matrix the loop reads
PLAN = ("n_dies", "n_ch", "planes", "page_bytes", "page_4k", "cap_4k", "tpage_4k", "map_sets",
        "map_always_hit", "unit_bytes", "units_per_block", "chan_rate", "host_rate", "cmd_s", "ctrl_s",
        "map_hit_s", "t_read", "t_map_read", "t_erase", "t_unit0", "t_unit1", "t_unit2", "idle_fold_rate",
        "room_slc0", "room_nat0", "s0", "slc_cs", "slc_craw", "bits", "nat_dn", "nat_draw", "fold",
        "buffer_bytes", "open_loop", "time_scale", "duplex", "room_cap0", "cap_cs", "suspend_program",
        "suspend_erase", "suspend_program_s", "suspend_erase_s", "suspend_min_program_s",
        "suspend_min_erase_s", "suspend_on", "map_lru", "map_writeback", "dram_rate", "dram_row",
        "dram_burst", "dram_trcd", "dram_tcl", "dram_trp", "eager", "inflight_bytes", "map_entries",
        "t_map_xfer", "hold_read", "rewrites", "plane_merge", "merge_dies",
        "merge_ring", "bp_programs", "dram_mqsim", "page_rule", "prog_f0", "prog_f1", "prog_f2", "op_bias")
#: per-configuration scalar state, columns of (B, len(SCALARS)) float64
SCALARS = ("ctrl_free", "link_rx", "link_tx", "free_max", "last_arrival", "last_done", "wptr", "wpartial",
           "ds", "dn", "draw", "dram_free", "map_tp", "map_end")
#: per-die state, rows of (B, len(DIES) + 2 K, D): these, then the read booking's gap starts
#: (K = ``Layout.read_gaps`` rows from :data:`GAP`) and gap ends (as many after them), oldest first
DIES = ("die_free", "r_end", "die_units", "pe_start", "pe_end", "er_end", "er_len", "t_op")
#: per-configuration accumulator scalars, columns of (B, len(SUMS))
SUMS = ("count0", "count1", "count2", "bytes0", "bytes1", "bytes2", "lat0", "lat1", "lat2", "queue_sum",
        "read_pages", "prog_pages", "erases", "map_misses", "mode0", "mode1", "mode2", "idle_folded",
        "elapsed", "susp_program", "susp_erase", "map_writebacks", "programs")

(N_DIES, N_CH, PLANES, PAGE_BYTES, PAGE_4K, CAP_4K, TPAGE_4K, MAP_SETS, ALWAYS_HIT, UNIT_BYTES, UPB,
 CHAN_RATE, HOST_RATE, CMD_S, CTRL_S, MAP_HIT_S, T_READ, T_MAP_READ, T_ERASE, T_UNIT0, T_UNIT1, T_UNIT2,
 IDLE_FOLD_RATE, ROOM_SLC0, ROOM_NAT0, S0, SLC_CS, SLC_CRAW, BITS, NAT_DN, NAT_DRAW, FOLD, BUFFER_BYTES,
 OPEN_LOOP, TIME_SCALE, DUPLEX, ROOM_CAP0, CAP_CS, SUS_P, SUS_E, SUS_P_S, SUS_E_S, SUS_MIN_P,
 SUS_MIN_E, SUS_ON, MAP_LRU, MAP_WB, DRAM_RATE, DRAM_ROW, DRAM_BURST, DRAM_TRCD, DRAM_TCL,
 DRAM_TRP, EAGER, INFLIGHT, MAP_ENT, T_MAP_XFER, HOLD_READ, REWRITES, MERGE, MERGE_DIES,
 RING, BP_PROG, DRAM_MQSIM, PAGE_RULE, PROG_F0, PROG_F1, PROG_F2, OP_BIAS) = range(len(PLAN))
(CTRL_FREE, LINK_RX, LINK_TX, FREE_MAX, LAST_ARRIVAL, LAST_DONE, WPTR, WPARTIAL, DS, DN, DRAW,
 DRAM_FREE, MAP_TP, MAP_END) = range(len(SCALARS))
DIE_FREE, R_END, DIE_UNITS, PE_START, PE_END, ER_END, ER_LEN, T_OP = range(len(DIES))
GAP = len(DIES)  # the first row of the read booking's gaps
(COUNT, BYTES, LAT, QUEUE_SUM, READ_PAGES, PROG_PAGES, ERASES, MAP_MISSES, MODE, IDLE_FOLDED,
 ELAPSED, SUSP, MAP_WBS) = (SUMS.index(k) for k in (
     "count0", "bytes0", "lat0", "queue_sum", "read_pages", "prog_pages", "erases", "map_misses", "mode0",
     "idle_folded", "elapsed", "susp_program", "map_writebacks"))
PROGRAMS = SUMS.index("programs")
TAG, AGE, DIRTY = range(3)  # rows of a configuration's mapping cache (3, M): page held, last use, dirty


def pack_plan(p: Plan, lay: Layout) -> np.ndarray:
    """The batched plan as the (B, len(PLAN)) float64 matrix the loop reads."""
    mask = to_host(p.mask, lay, dies=True) > 0.5  # (B, ways, channels)
    t_unit = to_host(p.t_unit, None)  # (B, 3)
    cols = {
        "n_ch": mask.any(1).sum(1), **{f"t_unit{i}": t_unit[:, i] for i in range(3)},
        # read at run time, so a compiled (cached) loop never holds a stale ring size
        "merge_ring": np.full(t_unit.shape[0], float(MERGE_RING)),
        **{k: to_host(getattr(p.coef, k), None) for k in ("slc_cs", "slc_craw", "bits", "nat_dn", "nat_draw",
                                                            "fold", "cap_cs")},
    }
    return np.stack([cols[k] if k in cols else to_host(getattr(p, k), None) for k in PLAN], axis=1)


# ------------------------------------------------------------------------------------------- the loop
@numba.njit(cache=True, inline="always")
def _book(die, pd, ready, dur, commit):
    """book.book on the die at position ``pd`` (row :data:`R_END` of ``die`` and its gaps: as many gap
    starts from row :data:`GAP` as gap ends after them, ``Layout.read_gaps`` in the engine): returns the
    start of ``dur`` s of work ready at ``ready``, and where ``commit`` books it."""
    k_n = (die.shape[0] - GAP) // 2
    win = GAP + k_n
    fit = dur * (1.0 - FIT_SLACK)
    end = die[R_END, pd]
    if ready + (dur - fit) >= end:  # free
        if commit:
            if ready > end + FIT_SLACK * dur:  # idle since end: the gaps move down, the newest [end, ready]
                for k in range(k_n - 1):
                    die[GAP + k, pd] = die[GAP + k + 1, pd]
                    die[win + k, pd] = die[win + k + 1, pd]
                die[GAP + k_n - 1, pd] = end
                die[win + k_n - 1, pd] = ready
            die[R_END, pd] = ready + dur
        return ready
    # the oldest gap the die is idle in at max(ready, its start); the gaps are in time order, so those
    # ending by ready + (dur - fit), which none can be, come first: skip them from the newest back (reads
    # ready in issue order find none at once)
    lo = k_n
    while lo > 0 and die[win + lo - 1, pd] > ready + (dur - fit):
        lo -= 1
    for i in range(lo, k_n):
        gs, ge = die[GAP + i, pd], die[win + i, pd]
        at = max(ready, gs)
        if at + (dur - fit) < ge:
            if not commit:
                return at
            if at + fit <= ge:  # fits: [gs, at] moves down one (the older gaps with it), [at + dur, ge] stays
                for k in range(i - 1):
                    die[GAP + k, pd] = die[GAP + k + 1, pd]
                    die[win + k, pd] = die[win + k + 1, pd]
                if i > 0:
                    die[GAP + i - 1, pd] = gs
                    die[win + i - 1, pd] = at
                die[GAP + i, pd] = at + dur
            else:  # idle at at: start there, the work after it moves back, absorbed gap by gap
                push = at + dur - ge
                die[win + i, pd] = at
                for j in range(i + 1, k_n):
                    g, w = die[GAP + j, pd], die[win + j, pd]
                    die[GAP + j, pd] = min(g + max(push, 0.0), w)
                    push -= max(w - g, 0.0)
                die[R_END, pd] = end + max(push, 0.0)
            return at
    if commit:
        die[R_END, pd] = end + dur
    return end


@numba.njit(cache=True, inline="always")
def _heap_replace_min(h, v, n):
    """Replace the least entry of the min-heap ``h[:n]`` (its root) by ``v`` and restore the heap: a
    request's completion time takes the slot of the earliest one, ``log2 n`` steps where a sorted list
    would move up to ``n`` entries (``IO_Queue_Depth`` of MQSim's traces is 1,024)."""
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and h[c + 1] < h[c]:
            c += 1
        if h[c] >= v:
            break
        h[i] = h[c]
        i = c
    h[i] = v


@numba.njit(cache=True, inline="always")
def _shift(n):
    """``log2 n`` where the integer ``n`` is a power of two, else -1 (the ``s`` of :func:`_div` and
    :func:`_mod`)."""
    if n <= 0 or (n & (n - 1)) != 0:
        return -1
    s = 0
    while (1 << s) < n:
        s += 1
    return s


@numba.njit(cache=True, inline="always")
def _div(x, d, s):
    """``x // d`` (floor) for integers, by a shift where ``d = 2**s`` (``s`` from :func:`_shift`): an integer
    division is the longest step on a request's dependency chain, a shift one cycle; exact for negative
    ``x`` too (an arithmetic shift floors)."""
    return x >> s if s >= 0 else x // d


@numba.njit(cache=True, inline="always")
def _mod(x, d, s):
    """``x % d`` (floor, so in ``[0, d)``) for integers, by a mask where ``d = 2**s``; exact for negative
    ``x`` too (two's complement)."""
    return x & (d - 1) if s >= 0 else x % d


@numba.njit(cache=True, inline="always")
def _pos(d, n_ch, C, s_ch):
    """Layout position of die ``d`` (channel ``d mod n_ch``, way ``d div n_ch``; ``s_ch`` =
    :func:`_shift` of ``n_ch``)."""
    return _div(d, n_ch, s_ch) * C + _mod(d, n_ch, s_ch)


@numba.njit(cache=True, inline="always")
def _kept_on(kept, j, k, n_dies):
    """How many of a write's pages dealt to its ``j``-th die (pages ``j``, ``j + n_dies``, ... below ``k``)
    are kept in the buffer (bits of ``kept``, :data:`~ssdx.models.engine.params.MASK_PAGES` of them)."""
    n = 0
    t = j
    while t < min(k, MASK_PAGES):
        n += (kept >> t) & 1
        t += n_dies
    return n


@numba.njit(cache=True, inline="always")
def _plane_row(n, sub, planes, ring):
    """The first ``State.merge`` row of the plane the ``n``-th page dealt to a die lies on: plane
    ``(n div sub) mod planes`` of the die's ``n mod sub``-th die (MQSim's CWDP), and that plane; ``ring``
    program starts a plane (the plan's ``merge_ring``)."""
    q_ = (n // sub) % planes
    return ((n % sub) * planes + q_) * (1 + ring), q_


@numba.njit(cache=True, inline="always")
def _merge_page(mg, pd, n, sub, planes, ppb, start_new, ready, ring, rule, fac0, fac1, fac2):
    """engine.plane_merge: program the ``n``-th page dealt to the die at position ``pd`` (logical page
    ``die + n·dies``), on plane ``(n div sub) mod planes`` of the die's ``n mod sub``-th die, taking that
    plane's next page number.  Where another plane of that die holds a program of the same page number,
    booked and starting at ``ready`` or later, the page joins it (returns 0: no die time of its own);
    else it is a program of its own starting at ``start_new``: returns its time over the mean program's,
    1 unless ``rule`` (engine.page_types = mqsim: bits per cell) gives its page type's factor ``fac0``,
    ``fac1`` or ``fac2`` by the page number's index in its block (MQSim's Flash_Chip::Get_command_execution_
    latency: MLC alternates; TLC pages 0-5 LSB, 6-7 CSB, then pairs of LSB, CSB, MSB).  ``mg`` rows: per
    plane, pages programmed, then the start of its latest ``ring`` programs by page count
    (``State.merge``)."""
    base, q_ = _plane_row(n, sub, planes, ring)
    first = base - q_ * (1 + ring)  # the row of the die's first plane
    a_new = mg[base, pd]
    mg[base, pd] = a_new + 1.0
    slot_new = base + 1 + int(a_new) % ring
    for q2 in range(planes):
        if q2 == q_:
            continue
        b2 = first + q2 * (1 + ring)
        f2 = mg[b2, pd]
        back = f2 - 1.0 - a_new  # how far before the plane's latest page lies a_new's page number
        if back < 0.0 or back >= ppb:
            back = back % ppb
        if back < ring and f2 - 1.0 - back >= 0.0:  # among the ring's programs
            st = mg[b2 + 1 + int(f2 - 1.0 - back) % ring, pd]
            if st >= ready:
                mg[slot_new, pd] = st
                return 0.0
    mg[slot_new, pd] = start_new
    if rule < 1.5:
        return 1.0
    idx = a_new % ppb
    if rule < 2.5:
        typ = 2.0 * (idx % 2.0)  # MLC: LSB, MSB
    elif idx <= 5.0:
        typ = 0.0
    elif idx <= 7.0:
        typ = 1.0
    else:
        typ = math.floor((idx - 8.0) / 2.0) % 3.0
    return fac0 if typ == 0.0 else (fac1 if typ == 1.0 else fac2)


@numba.njit(cache=True, inline="always")
def _allocate(mg, pd, n, sub, planes, ring):
    """engine.plane_merge: the ``n``-th page dealt to the die at position ``pd`` read before it was ever
    written takes its plane's next page number, as MQSim places it, no program holding it (its slot of the
    ring cleared; :func:`_merge_page` for the plane)."""
    base, _ = _plane_row(n, sub, planes, ring)
    a = mg[base, pd]
    mg[base + 1 + int(a) % ring, pd] = -math.inf
    mg[base, pd] = a + 1.0


@numba.njit(cache=True, inline="always")
def _admit(h_end, issue, backlog, n_dies, inflight, t_unit, per_op):
    """engine._admission: when the eager write-back's back pressure lets a write in, ``backlog`` s of
    program work on ``n_dies`` dies from ``issue`` on, ``per_op`` bytes a program of ``t_unit`` s, up to
    ``inflight`` bytes in flight; never before its host data is in at ``h_end``."""
    return max(h_end, issue + backlog / n_dies - inflight * t_unit / (n_dies * per_op))


@numba.njit(cache=True, inline="always")
def _select(v, row, n, k):
    """The ``k``-th smallest (from 0) of ``v[row, :n]``, which it reorders (Hoare's quickselect)."""
    lo, hi = 0, n - 1
    while lo < hi:
        pivot = v[row, (lo + hi) >> 1]
        i, j = lo, hi
        while i <= j:
            while v[row, i] < pivot:
                i += 1
            while v[row, j] > pivot:
                j -= 1
            if i <= j:
                v[row, i], v[row, j] = v[row, j], v[row, i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return v[row, k]
    return v[row, k]


#: at most this many values are selected from by counting ranks (branch-free), more by quickselect
RANK_SELECT = 24


@numba.njit(cache=True, inline="always")
def _kth(v, row, n, k):
    """The ``k``-th smallest (from 0) of ``v[row, :n]``: a few by counting each one's rank, with no branch
    on the values (quickselect mispredicts about every other comparison on values in random order); more
    by :func:`_select`, which reorders them."""
    if n > RANK_SELECT:
        return _select(v, row, n, k)
    for i in range(n):
        vi = v[row, i]
        rank = 0
        for j in range(n):
            vj = v[row, j]
            rank += int(vj < vi) + (int(vj == vi) & int(j < i))
        if rank == k:
            return vi
    return v[row, k]


@numba.njit(cache=True, inline="always")
def _kth_phase(wk, n, k, t_unit):
    """The ``k``-th smallest (from 0) of the ``n`` phases ``wk[1, :n]``, which lie in (0, ``t_unit``]
    (within ``END_SLACK``): first among those in a window about where the ``k``-th of ``n`` even phases
    would lie, gathered into ``wk[0]`` in one pass without a data-dependent branch (most often the window
    holds it, as the phases of programs booked at random instants spread evenly); else by quickselect
    over them all."""
    half = math.sqrt(k + 1.0) + 2.0  # about two standard deviations of the k-th of n even phases
    lo = (k + 1.0 - half) * t_unit / n
    hi = (k + 1.0 + half) * t_unit / n
    below, cnt = 0, 0
    for j in range(n):
        ph = wk[1, j]
        below += int(ph <= lo)
        wk[0, cnt] = ph
        cnt += int(ph > lo) & int(ph <= hi)
    if below <= k < below + cnt:
        return _kth(wk, 0, cnt, k - below)
    return _select(wk, 1, n, k)


@numba.njit(cache=True, inline="always")
def _admit_programs(h_end, die, n_dies, n_ch, C, t_unit, limit, wk):
    """engine._admission_programs: the first instant from ``h_end`` on at which at most ``limit`` programs
    are still queued or running on the dies, each die's backlog (``DIE_FREE``) taken as back-to-back
    programs of ``t_unit`` s ending where it ends.  ``wk`` is scratch of (2, dies).

    The program ends after ``h_end`` fall in rounds: a die whose backlog holds ``n`` programs from
    ``h_end`` on ends its first at its phase ``x - (n - 1) t_unit`` (``x`` its backlog past ``h_end``) and
    one every ``t_unit`` after.  The instant sought is the ``m``-th end, ``m`` the programs above
    ``limit``: its round ``r`` is the least with ``sum(min(n, r + 1)) >= m`` (0 where ``m`` is at most
    the busy dies), found from below in steps that cannot overshoot, and within the round it is the
    ``k``-th smallest phase of the dies that still have a program then."""
    inv = 1.0 / t_unit
    nb = 0
    n_tot = 0.0
    first = math.inf  # the earliest end
    for w in range(n_dies // n_ch):
        for c in range(n_ch):
            x = die[DIE_FREE, w * C + c] - h_end
            n = math.ceil(x * inv - END_SLACK)
            if n > 0.0:
                ph = x - (n - 1.0) * t_unit
                wk[0, nb] = n
                wk[1, nb] = ph
                first = min(first, ph)
                nb += 1
                n_tot += n
    m = n_tot - limit  # the program ends to wait for
    if m <= 0.0:
        return h_end
    if m <= nb:  # in the first round: the m-th earliest of the dies' first ends
        return h_end + (first if m == 1.0 else _kth_phase(wk, nb, int(m) - 1, t_unit))
    r = math.ceil(m / nb) - 1.0  # at most nb ends a round: a lower bound
    while True:
        s1, above = 0.0, 0  # ends in rounds 0..r, dies with programs left after round r
        for j in range(nb):
            n = wk[0, j]
            if n > r + 1.0:
                s1 += r + 1.0
                above += 1
            else:
                s1 += n
        if s1 >= m:
            break
        r += math.ceil((m - s1) / above)  # each round ends at most `above` more
    s0, cnt = 0.0, 0  # ends before round r; the phases of the dies with a program in round r, packed
    for j in range(nb):
        n = wk[0, j]
        if n > r:
            s0 += r
            wk[1, cnt] = wk[1, j]
            cnt += 1
        else:
            s0 += n
    return h_end + r * t_unit + _kth_phase(wk, cnt, int(m - s0) - 1, t_unit)


@numba.njit(cache=True, inline="always")
def _bp_limit(inflight, size, pages, n_pages):
    """engine._bp_limit: the most programs of one page of a write (``size`` bytes over ``pages`` pages)
    that may still be in flight when the write, ``n_pages`` of its pages written back, is let in."""
    room = inflight * pages / size - max(n_pages - 1.0, 0.0)
    return max(math.ceil(room) - 1.0, 0.0)


@numba.njit(cache=True, inline="always")
def _nth_die(start, j, n_dies):
    """The ``j``-th die (``j < n_dies``) of a round-robin deal starting at die ``start``."""
    d = start + j
    return d - n_dies if d >= n_dies else d


@numba.njit(cache=True, inline="always")  # inlined: called per read, the call was ~15 % of a read step
def _suspend(f, die, a, pd, ready, dur, start):
    """book.suspend for a read of ``dur`` s ready at ``ready`` on the die at position ``pd``, which its
    read booking would start at ``start``: where it would start at once inside the die's program/erase
    run, how long it waits for the operation in progress or how much longer it takes to suspend it
    (counted in ``a``).  Returns when the read is ready to be booked and its die time."""
    if start <= ready + FIT_SLACK * dur and die[PE_START, pd] <= ready < die[PE_END, pd]:
        er_end, er_len = die[ER_END, pd], die[ER_LEN, pd]
        e0 = er_end - er_len
        in_erase = er_len > 0 and e0 <= ready < er_end
        if in_erase:
            left = er_end - ready
            if left > (1.0 - FIT_SLACK) * er_len:  # the erase is only starting
                left = 0.0
            slack = FIT_SLACK * er_len
        else:
            t_op = die[T_OP, pd] if die[T_OP, pd] > 0 else 1.0
            base = e0 if ready < e0 else die[PE_END, pd]
            left = max(base - ready, 0.0) % t_op
            if left < FIT_SLACK * t_op or left > (1.0 - FIT_SLACK) * t_op:
                left = 0.0
            slack = FIT_SLACK * t_op
        if left > slack:
            if in_erase:
                can = f[SUS_E] > 0.5 and left >= f[SUS_MIN_E]
            else:
                can = f[SUS_P] > 0.5 and left >= f[SUS_MIN_P]
            if can:
                a[SUSP + (1 if in_erase else 0)] += 1.0
                return ready, dur + (f[SUS_E_S] if in_erase else f[SUS_P_S])
            return ready + left, dur
    return ready, dur


@numba.njit(cache=True, inline="always")
def _read_on_die(f, sus_on, die, busy, a, pd, ready, dur):
    """Book a read of ``dur`` s ready at ``ready`` on the die at position ``pd`` with read priority
    (book.book on its read booking; where ``sus_on``, a suspension option, first :func:`_suspend`, and
    the program/erase run booked after the read moves back), then its all-work backlog and busy time;
    returns its start and its die time (``dur`` plus any suspend overhead)."""
    if sus_on:
        ready, dur = _suspend(f, die, a, pd, ready, dur, _book(die, pd, ready, dur, False))
    start = _book(die, pd, ready, dur, True)
    if sus_on:
        for r in (PE_START, PE_END, ER_END):  # the program/erase work booked after the read moves back
            if die[r, pd] > start + FIT_SLACK * dur:
                die[r, pd] += dur
    die[DIE_FREE, pd] = max(die[DIE_FREE, pd], start) + dur
    busy[pd] += dur
    return start, dur


@numba.njit(cache=True)
def _config(f, sc, die, chan, slots, tags, a, hist, busy, x_c, first_c, last_c, end_c, op, off4k, size, gap_s,
            valid, map_miss, wb_tpage, wb_count, kept, first_read, lat, keep, b, C, mg, wk):
    """Run one configuration through the chunk (``engine.step`` request by request).

    Its arrays are one configuration's views (``f`` its plan row, ``sc`` scalars, ``die``
    (len(DIES) + 2 K, D), ``chan`` (2, C), ``slots``, ``tags`` (3, M), accumulators ``a``,
    ``hist`` (3, N_BINS), ``busy`` (D,)), written in place; ``x_c``, ``first_c``, ``last_c``, ``end_c``
    are scratch of at least ``C`` entries, ``wk`` of (2, dies);
    ``lat[i, b]`` gets request ``i``'s latency when ``keep``.  No allocation and no numpy calls: the
    same source is compiled as a CUDA device function by :mod:`ssdx.models.engine.cuda`."""
    n_dies = int(f[N_DIES])
    n_ch = int(f[N_CH])
    planes = f[PLANES]
    page_bytes = f[PAGE_BYTES]
    page_4k = int(f[PAGE_4K])
    cap_4k = int(f[CAP_4K])
    tpage_4k = int(f[TPAGE_4K])
    map_sets = int(f[MAP_SETS])
    always_hit = f[ALWAYS_HIT] > 0.5
    unit = f[UNIT_BYTES]
    upb = f[UPB]
    chan_rate = f[CHAN_RATE]
    host_rate = f[HOST_RATE]
    t_read = f[T_READ]
    t_map = f[T_MAP_READ]
    open_loop = f[OPEN_LOOP] > 0.5
    duplex = f[DUPLEX] > 0.5
    sus_on = f[SUS_ON] > 0.5  # a suspension option in effect: track the program/erase runs
    map_lru = f[MAP_LRU] > 0.5
    map_wb = f[MAP_WB] > 0.5
    map_ent = f[MAP_ENT] > 0.5  # engine.map_cache = entries: misses and write-backs come with the requests
    t_map_xfer = f[T_MAP_XFER]
    hold_on = f[HOLD_READ] > 0.5  # engine.cache_read false: a read keeps its die until its data is out
    ring = int(f[RING])  # engine.plane_merge: program starts a plane remembers (params.MERGE_RING)
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
            elif not always_hit:  # engine._lookup: direct-mapped or LRU, dirty pages written back
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
        # model._in_flight: the page of the latest translation read, not in yet: wait for that read
        inflight = o != TRIM and tpage == map_tp and map_end > t_cmd
        if inflight:
            miss = False
        if miss:  # 3. translation page read from die tpage mod dies, read priority
            pm = _pos(_mod(tpage, n_dies, s_dies), n_ch, C, s_ch)
            m_start, m_dur = _read_on_die(f, sus_on, die, busy, a, pm, t_cmd,
                                          t_map + (t_map_xfer if hold_on else 0.0))
            free_max = max(free_max, die[DIE_FREE, pm])
            a[MAP_MISSES] += 1.0
            map_tp, map_end = tpage, m_start + m_dur + (0.0 if hold_on else t_map_xfer)  # entries in
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
            if hold_on:  # model._hold: where each array read would end, so when its channel's transfers end
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
            fr_i = first_read[i] if f[MERGE] > 0.5 else 0
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
            # pSLC accounting (engine._place)
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
            # the write's pages kept in the buffer, not written back (engine._write: Requests.kept)
            kept_i = kept[i] if eager and f[REWRITES] > 0.5 else 0
            merge_on = eager and f[MERGE] > 0.5
            rule, fac0, fac1, fac2 = f[PAGE_RULE], f[PROG_F0], f[PROG_F1], f[PROG_F2]  # engine.page_types
            if eager:  # engine._write, eager: the pages the write touches, on the dies of their addresses
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
            bp_prog = eager and f[BP_PROG] > 0.5
            if bp_prog:  # engine.back_pressure = programs: let in once few enough programs are in flight
                adm = _admit_programs(h_end, die, n_dies, n_ch, C, t_unit,
                                      _bp_limit(f[INFLIGHT], sz, float(n_units), float(n_units - n_kept)), wk)
            for j in range(n_tc):  # channel transfer of the units, after the host data is in
                c = _mod(start + j, n_ch, s_ch)
                if x_c[c] > 0:
                    chan[0, c] = max(chan[0, c], h_end) + x_c[c] * t_item
            n_ops = 0.0
            backlog_pre = 0.0  # merge_on: the dies' backlog before this write's programs, then its change
            if merge_on and not bp_prog:  # when the back pressure (below) lets the pages into the flash queue
                for w in range(n_dies // n_ch):
                    for c in range(n_ch):
                        backlog_pre += max(die[DIE_FREE, w * C + c] - issue, 0.0)
                own = (n_units - n_kept) * t_unit
                adm = _admit(h_end, issue, backlog_pre + own, n_dies, f[INFLIGHT], t_unit, sz / n_units)
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
                n_erase = math.floor((old + used) / upb) - math.floor(old / upb)
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
                if sus_on:  # the program/erase run (engine._write): erases first, then the units
                    if p_start - die[PE_END, pd] > FIT_SLACK * t_unit:
                        die[PE_START, pd] = p_start
                    die[PE_END, pd] = p_start + p_dur
                    if n_erase > 0:
                        die[ER_LEN, pd] = n_erase * f[T_ERASE]
                        die[ER_END, pd] = p_start + die[ER_LEN, pd]
                    die[T_OP, pd] = t_unit * f[OP_BIAS]  # the op a read lands in (engine._write)
                if merge_on and not bp_prog:  # the backlog's change, instead of a second pass over the dies
                    backlog_pre += p_start + p_dur - issue - max(die[DIE_FREE, pd] - issue, 0.0)
                die[DIE_FREE, pd] = p_start + p_dur
                free_max = max(free_max, die[DIE_FREE, pd])
                busy[pd] += p_dur
                a[ERASES] += n_erase
            h_ack = adm
            if eager and not bp_prog:  # let in once the data in flight fits in inflight_bytes (engine._write)
                backlog = backlog_pre
                if not merge_on:
                    for w in range(n_dies // n_ch):  # every die in die order, without a division per die
                        for c in range(n_ch):
                            backlog += max(die[DIE_FREE, w * C + c] - issue, 0.0)
                written = sz if n_kept == 0 else sz / n_units * max(n_units - n_kept, 1)
                per_op = written / max(n_ops, 1.0)  # bytes written back per program
                h_ack = _admit(h_end, issue, backlog, n_dies, f[INFLIGHT], t_unit, per_op)
            if f[DRAM_RATE] > 0:  # into the buffer's DRAM through one memory channel (engine._dram_time)
                if f[DRAM_MQSIM] > 0.5 and sz > f[DRAM_ROW]:  # MQSim's arithmetic (engine._dram_time)
                    t_dram = ((f[DRAM_TRCD] + f[DRAM_TCL] + math.floor(f[DRAM_ROW] / f[DRAM_BURST] / 2.0)
                               / f[DRAM_RATE] + f[DRAM_TRP]) * math.floor(sz / f[DRAM_ROW] / 2.0)
                              + f[DRAM_TRCD] + f[DRAM_TCL]
                              + (sz % f[DRAM_ROW]) * f[DRAM_RATE] / f[DRAM_BURST] * 1e-18)
                else:
                    rows = max(math.ceil(sz / f[DRAM_ROW]), 1.0)
                    t_dram = (rows * (f[DRAM_TRCD] + f[DRAM_TCL]) + (rows - 1.0) * f[DRAM_TRP]
                              + math.floor(sz / f[DRAM_BURST] / 2.0) / f[DRAM_RATE])
                dram_free = max(h_ack, dram_free) + t_dram
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
    for r in range(mg.shape[0]):  # the multi-plane state's start times
        if r % (1 + ring) != 0:
            for d in range(mg.shape[1]):
                mg[r, d] -= now


@numba.njit(cache=True, parallel=True)
def _run(pf, sc, die, chan, slots, tags, a, hist, busy, op, off4k, size, gap_s, valid, map_miss, wb_tpage,
         wb_count, kept, first_read, lat, keep, C, mg):
    for b in numba.prange(pf.shape[0]):
        x_c, first_c, last_c, end_c = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
        wk = np.empty((2, die.shape[2]))
        # the index as int64: Numba types a prange index int64 while it infers types and uint64 in the
        # parallel loop it lowers, and would compile _config, nearly all of the code, once for each
        _config(pf[b], sc[b], die[b], chan[b], slots[b], tags[b], a[b], hist[b], busy[b], x_c, first_c,
                last_c, end_c, op, off4k, size, gap_s, valid, map_miss, wb_tpage, wb_count, kept, first_read,
                lat, keep, np.int64(b), C, mg[b], wk)


# ------------------------------------------------------------------------------------------- host side
def pack_state(s: State) -> tuple[np.ndarray, ...]:
    """The state as the loop's arrays, configurations last (fresh copies: the loop writes them):
    scalars ``(len(SCALARS), B)``, dies ``(len(DIES) + 2 K, D, B)``, channels ``(2, C, B)``
    (all work, reads), slots ``(S, B)`` float64 and the mapping cache ``(3, M, B)`` int64 (page held,
    last use, dirty)."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    r = s.die_r
    return (np.stack([f(getattr(s, k)) for k in SCALARS]),
            np.concatenate([np.stack([f(x) for x in (s.die_free, r.end, s.die_units, *s.pe)]), f(r.gap),
                            f(r.win)]),
            np.stack([f(s.chan_free), f(s.chan_r)]), np.array(s.slots, np.float64),
            np.stack([np.asarray(x, np.int64) for x in (s.tags, s.map_age, s.map_dirty)]))


def pack_merge(s: State) -> np.ndarray:
    """The multi-plane state (``State.merge``) as the loop's float64 array ``(Layout.merge_rows, D, B)``
    (a fresh copy)."""
    return np.array(s.merge, np.float64)


def request_arrays(req: Requests) -> tuple[np.ndarray, ...]:
    """The chunk's requests as the loop reads them: op, off4k (int64), size, gap_s (float64), valid, and
    the entry cache's map_miss, wb_tpage (int64), wb_count (float64), and the pages kept in the buffer
    (``kept``) and the pages each read reads first (``first_read``), int64 bit masks."""
    return (np.asarray(req.op, np.int64), np.asarray(req.off4k, np.int64), np.asarray(req.size, np.float64),
            np.asarray(req.gap_s, np.float64), np.asarray(req.valid, np.bool_),
            np.asarray(req.map_miss, np.bool_), np.asarray(req.wb_tpage, np.int64),
            np.asarray(req.wb_count, np.float64), np.asarray(req.kept, np.int64),
            np.asarray(req.first_read, np.int64))


def new_sums(b: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zeroed accumulators, configurations last: sums ``(len(SUMS), B)``, hist ``(3, N_BINS, B)`` int32,
    busy ``(D, B)``."""
    return np.zeros((len(SUMS), b)), np.zeros((3, N_BINS, b), np.int32), np.zeros((d, b))


def unpack(sc, die, chan, slots, tags, a, hist, busy, mg, dt) -> tuple[State, Acc]:
    """The loop's arrays (configurations last, as :func:`pack_state` and :func:`new_sums` give them) as
    the engine's ``State`` and ``Acc`` in the dtype ``dt``."""
    c = lambda x, t=dt: np.ascontiguousarray(x, dtype=t)  # noqa: E731
    k_n = (die.shape[0] - GAP) // 2
    state = State(
        slots=c(slots), ctrl_free=c(sc[CTRL_FREE]), link_rx=c(sc[LINK_RX]), link_tx=c(sc[LINK_TX]),
        dram_free=c(sc[DRAM_FREE]),
        die_free=c(die[DIE_FREE]), free_max=c(sc[FREE_MAX]),
        die_r=Server(end=c(die[R_END]), win=c(die[GAP + k_n:]), gap=c(die[GAP:GAP + k_n])),
        chan_free=c(chan[0]), chan_r=c(chan[1]), last_arrival=c(sc[LAST_ARRIVAL]), last_done=c(sc[LAST_DONE]),
        wptr=c(sc[WPTR], np.int32), wpartial=c(sc[WPARTIAL]), die_units=c(die[DIE_UNITS]), ds=c(sc[DS]),
        dn=c(sc[DN]), draw=c(sc[DRAW]), tags=c(tags[TAG], np.int32), map_age=c(tags[AGE], np.int32),
        map_dirty=c(tags[DIRTY], np.int32), map_tp=c(sc[MAP_TP], np.int32), map_end=c(sc[MAP_END]),
        pe=PE(*(c(die[k]) for k in (PE_START, PE_END, ER_END, ER_LEN, T_OP))), merge=c(mg))
    acc = Acc(elapsed=c(a[ELAPSED]), elapsed_c=np.zeros(a.shape[1], dt), count=c(a[COUNT:COUNT + 3]),
              bytes=c(a[BYTES:BYTES + 3]), lat_sum=c(a[LAT:LAT + 3]), queue_sum=c(a[QUEUE_SUM]),
              hist=c(hist, np.int32), busy=c(busy), read_pages=c(a[READ_PAGES]), prog_pages=c(a[PROG_PAGES]),
              erases=c(a[ERASES]), map_misses=c(a[MAP_MISSES]), mode_bytes=c(a[MODE:MODE + 3]),
              idle_folded=c(a[IDLE_FOLDED]), suspensions=c(a[SUSP:SUSP + 2]), map_writebacks=c(a[MAP_WBS]),
              programs=c(a[PROGRAMS]))
    return state, acc


def run_chunk(pf: np.ndarray, s: State, req: Requests, lay: Layout,
              keep_latency: bool = False) -> tuple[State, Acc, np.ndarray | None]:
    """:func:`ssdx.models.engine.model.run_chunk` on the CPU for the packed plan ``pf`` (:func:`pack_plan`):
    the same state, accumulators and latencies (numpy, configurations last, the state's dtype)."""
    dt = np.asarray(s.ctrl_free).dtype
    b = pf.shape[0]
    first = [np.ascontiguousarray(np.moveaxis(x, -1, 0))
             for x in (*pack_state(s), *new_sums(b, lay.ways * lay.channels), pack_merge(s))]
    n_req = np.shape(req.op)[0]
    lat = np.zeros((n_req, b) if keep_latency else (1, 1))
    _run(pf, *first[:-1], *request_arrays(req), lat, keep_latency, lay.channels, first[-1])
    state, acc = unpack(*(np.moveaxis(x, 0, -1) for x in first), dt)
    return state, acc, (lat.astype(dt) if keep_latency else None)
