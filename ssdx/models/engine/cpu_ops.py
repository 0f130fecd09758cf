"""The building blocks of the CPU loop (:func:`ssdx.models.engine.cpu._config`), each a Numba function
inlined into it: gap-filling read booking (:func:`_book`, the scalar form of
:func:`ssdx.models.engine.book.book`), the plane-merge page numbers (:func:`_merge_page`,
:func:`_allocate`), the back pressure's admission (:func:`_admit`, :func:`_admit_programs`, the k-th
smallest die backlog by :func:`_select` / :func:`_kth`) and read suspension (:func:`_suspend`,
:func:`_read_on_die`).  Each mirrors the function of :mod:`ssdx.models.engine.model` its docstring names;
the CUDA kernel (:mod:`ssdx.models.engine.cuda`) compiles the same Python code for the GPU."""

from __future__ import annotations

import math

import numba

from ssdx.models.engine.cpu_pack import (
    DIE_FREE,
    DIE_UNITS,
    DRAM_BURST,
    DRAM_MQSIM,
    DRAM_RATE,
    DRAM_ROW,
    DRAM_TCL,
    DRAM_TRCD,
    DRAM_TRP,
    ER_END,
    ER_LEN,
    ERASES,
    FRESH_UNITS,
    GAP,
    INFLIGHT_BYTES,
    MAP_MISSES,
    OP_BIAS,
    PE_END,
    PE_START,
    R_END,
    SUSP,
    SUSPEND_ERASE,
    SUSPEND_ERASE_S,
    SUSPEND_MIN_ERASE_S,
    SUSPEND_MIN_PROGRAM_S,
    SUSPEND_PROGRAM,
    SUSPEND_PROGRAM_S,
    T_ERASE,
    T_OP,
)
from ssdx.models.engine.model import END_SLACK, FIT_SLACK
from ssdx.models.engine.params import MASK_PAGES


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
def _erases(before, after, upb, fresh):
    """model._erases: the blocks a die erases as its programmed units go from ``before`` to ``after``."""
    return math.floor(max(after - fresh, 0.0) / upb) - math.floor(max(before - fresh, 0.0) / upb)


@numba.njit(cache=True, inline="always")
def _dram_s(f, sz):
    """admission._dram_time: seconds to write ``sz`` bytes into the write buffer's DRAM."""
    if f[DRAM_MQSIM] > 0.5 and sz > f[DRAM_ROW]:  # MQSim's arithmetic
        return ((f[DRAM_TRCD] + f[DRAM_TCL] + math.floor(f[DRAM_ROW] / f[DRAM_BURST] / 2.0) / f[DRAM_RATE]
                 + f[DRAM_TRP]) * math.floor(sz / f[DRAM_ROW] / 2.0) + f[DRAM_TRCD] + f[DRAM_TCL]
                + (sz % f[DRAM_ROW]) * f[DRAM_RATE] / f[DRAM_BURST] * 1e-18)
    rows = max(math.ceil(sz / f[DRAM_ROW]), 1.0)
    return (rows * (f[DRAM_TRCD] + f[DRAM_TCL]) + (rows - 1.0) * f[DRAM_TRP]
            + math.floor(sz / f[DRAM_BURST] / 2.0) / f[DRAM_RATE])


@numba.njit(cache=True, inline="always")
def _admit(h_end, issue, backlog, n_dies, inflight, t_unit, per_op):
    """admission._admission: when the eager write-back's back pressure lets a write in, ``backlog`` s of
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
    """admission._admission_programs: the first instant from ``h_end`` on at which at most ``limit`` programs
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
    """admission._bp_limit: the most programs of one page of a write (``size`` bytes over ``pages`` pages)
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
                can = f[SUSPEND_ERASE] > 0.5 and left >= f[SUSPEND_MIN_ERASE_S]
            else:
                can = f[SUSPEND_PROGRAM] > 0.5 and left >= f[SUSPEND_MIN_PROGRAM_S]
            if can:
                a[SUSP + (1 if in_erase else 0)] += 1.0
                return ready, dur + (f[SUSPEND_ERASE_S] if in_erase else f[SUSPEND_PROGRAM_S])
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
    _ahead(sus_on, die, busy, pd, start, dur)
    return start, dur


@numba.njit(cache=True, inline="always")
def _ahead(sus_on, die, busy, pd, start, dur):
    """A read of ``dur`` s from ``start`` served ahead of the work queued on the die at position ``pd``:
    the program/erase run booked after it moves back (where ``sus_on`` tracks it), and the die's
    all-work backlog and busy time grow by ``dur``."""
    if sus_on:
        for r in (PE_START, PE_END, ER_END):
            if die[r, pd] > start + FIT_SLACK * dur:
                die[r, pd] += dur
    die[DIE_FREE, pd] = max(die[DIE_FREE, pd], start) + dur
    busy[pd] += dur


@numba.njit(cache=True, inline="always")
def _map_read_first(f, sus_on, die, busy, a, pd, ready, dur):
    """A translation read of ``dur`` s ready at ``ready`` on the die at position ``pd`` served ahead of
    the reads queued there, behind only the operation in progress (MQSim's mapping reads go first,
    ``TSU_Priority_OutOfOrder``; that operation suspended where the suspension options allow,
    :func:`_suspend`); the program/erase work booked after it moves back.  The read booking's gaps are
    left alone: the read is booked at a future instant (when a write's page goes to flash), where a
    gap-filling booking would give up the gaps before it.  Returns its start and die time."""
    start = ready
    if sus_on:
        start, dur = _suspend(f, die, a, pd, ready, dur, ready)
    _ahead(sus_on, die, busy, pd, start, dur)
    return start, dur


@numba.njit(cache=True, inline="always")
def _flight_push(fl, pd, start, dur):
    """A read of ``dur`` s from ``start`` on the die at position ``pd``, served ahead of the programs queued
    there, moves the ends of that die's pages in flight (``State.flight``) that come after it back by
    ``dur``, as it moves the die's program/erase run (``engine.back_pressure = pages``; nothing without)."""
    for q in range(1, int(fl[1, 0]) + 1 if fl.shape[1] else 0):  # the slots in use (_write_pages)
        if fl[2, q] == pd and fl[0, q] > start + FIT_SLACK * dur:
            fl[0, q] += dur


@numba.njit(cache=True)
def _write_pages(f, sus_on, die, busy, a, mg, wk, fl, chan, h_end, sz, k, start, first_page, kept_i, n_dies,
                 n_ch, C, s_dies, s_ch, t_unit, t_item, merge_on, sub, n_pl, upb, ring, rule, fac0, fac1,
                 fac2, miss, pm, t_map_die, t_map_in, tpage, map_tp, map_end, dram_free, issue):
    """``engine.back_pressure = pages``: a write's ``k`` pages let into the flash back end one by one, each
    looked up in the mapping table as it goes, then programmed (MQSim's
    ``Data_Cache_Manager_Flash_Advanced::write_to_destage_buffer`` and ``Address_Mapping_Unit_Page_Level``;
    Tavakkol et al., FAST 2018).

    * **Admission.**  Page ``j`` goes to flash at the first instant from the previous page's (from
      ``h_end`` for the first) at which the pages in flight to flash (``fl``: sent, their programs not yet
      ended; this write's and every earlier one's) carry less than ``inflight_bytes``; it then carries
      ``sz / k`` bytes until its program ends.  The pages let in at one instant are written into the
      buffer's DRAM together (``dram_free``: when its one memory channel is free), the pages kept in the
      buffer with the next ones let in (MQSim writes the sectors each ``write_to_destage_buffer`` call
      lets in to DRAM with one access); the write is acknowledged when the DRAM write of its last pages
      ends (its last page's admission without a DRAM model).
    * **Translation windows.**  Where the write misses the mapping cache (``miss``), a page that goes to
      flash while no read of its translation page is in flight reads it (die position ``pm``, read
      priority, ``t_map_die`` s of die time, its entries in ``t_map_in`` s after the read ends); pages
      that go while it is in flight wait for it.  Only the pages that waited get entries, so a long write
      reads its translation page once per read it outlasts.
    * **Programs.**  A page's data crosses its channel (``t_item`` s) once it is let in and its entries are
      in, then it is programmed on its die behind the die's backlog, joining a queued program of another
      plane where ``merge_on`` (:func:`_merge_page`), else a program of its own; each die runs its erases
      (``DIE_UNITS`` crossing a block) before the write's first program there.

    ``first_page`` is the write's first page number; pages whose bit in ``kept_i`` is set stay in the
    buffer.  ``fl`` (3, W) holds when each page in flight ends, its bytes and its die position, in slots
    1..n (``n`` in ``fl[1, 0]``; slot 0 holds nothing else); where all are in use, a page takes one whose
    program has ended by its admission, else slot 1.  ``issue``: the write's issue instant.  ``wk[0]``
    (dies) is scratch: each die's erases still to run, by its place in the write's deal.  Returns the
    write's acknowledgement, the programs, the latest translation page read and when its entries are in,
    the dies' latest backlog end and when the DRAM is free."""
    eps = END_SLACK * t_unit
    width = fl.shape[1]
    # the slots in use are 1..n (n kept in fl[1, 0]); a page whose program ended by the write's issue is
    # in no later request's way: its slot goes (the last one in use moves into it)
    n = int(fl[1, 0])
    q = 1
    while q <= n:
        if fl[0, q] <= issue:
            fl[0, q], fl[1, q], fl[2, q] = fl[0, n], fl[1, n], fl[2, n]
            fl[0, n] = -math.inf
            n -= 1
        else:
            q += 1
    per_page = sz / k  # bytes a page of the write carries to flash
    t = h_end
    for jd in range(min(k, n_dies)):  # each die's erases for the write (run before its first program)
        d = _nth_die(start, jd, n_dies)
        pd = _pos(d, n_ch, C, s_ch)
        u = 0
        q = jd
        while q < k:
            if not (q < MASK_PAGES and (kept_i >> q) & 1):
                u += 1
            q += n_dies
        old = die[DIE_UNITS, pd]
        used = u / n_pl
        die[DIE_UNITS, pd] = old + used
        n_erase = _erases(old, old + used, upb, f[FRESH_UNITS])
        a[ERASES] += n_erase
        wk[0, jd] = n_erase * f[T_ERASE]
    win_end = -math.inf  # when the entries of the translation read in flight are in
    dram_on = f[DRAM_RATE] > 0
    g_t, g_bytes = h_end, 0.0  # the pages let in at one instant: when, and their bytes (DRAM)
    n_ops = 0.0
    free_max = -math.inf
    for j in range(k):
        if j < MASK_PAGES and (kept_i >> j) & 1:
            g_bytes += per_page  # into DRAM with the next pages let in
            continue
        free = 0  # a slot whose page has ended by t
        while True:  # admission: less than inflight_bytes in flight at t
            cnt = 0.0
            nxt = math.inf
            for q in range(1, n + 1):
                e = fl[0, q]
                if e > t + eps:
                    cnt += fl[1, q]
                    nxt = min(nxt, e)
                else:
                    free = q
            if cnt < f[INFLIGHT_BYTES] or nxt == math.inf:
                break
            t = nxt
        slot = free if free > 0 else (n + 1 if n + 1 < width else 1)
        if t > g_t:  # a later admission: the pages let in before go into DRAM together
            if dram_on and g_bytes > 0.0:
                dram_free = max(g_t, dram_free) + _dram_s(f, g_bytes)
            g_t, g_bytes = t, 0.0
        g_bytes += per_page
        ready = t
        if miss:  # the translation page: read unless a read of it is in flight
            if t >= win_end:
                if tpage == map_tp and map_end > t:
                    win_end = map_end
                else:
                    m_start, m_dur = _map_read_first(f, sus_on, die, busy, a, pm, t, t_map_die)
                    _flight_push(fl, pm, m_start, m_dur)
                    win_end = m_start + m_dur + t_map_in
                    a[MAP_MISSES] += 1.0
                    map_tp, map_end = tpage, win_end
            ready = max(ready, win_end)
        jd = j % n_dies
        d = _nth_die(start, jd, n_dies)
        pd = _pos(d, n_ch, C, s_ch)
        c = _mod(d, n_ch, s_ch)
        chan[0, c] = max(chan[0, c], ready) + t_item  # the page's data to its die
        cur = die[DIE_FREE, pd]
        if wk[0, jd] > 0.0:  # the die's erases first (they free the block the pages go to)
            e_len = wk[0, jd]
            if sus_on:
                if cur - die[PE_END, pd] > FIT_SLACK * t_unit:
                    die[PE_START, pd] = cur
                die[ER_LEN, pd] = e_len
                die[ER_END, pd] = cur + e_len
                die[PE_END, pd] = cur + e_len
            cur += e_len
            busy[pd] += e_len
            wk[0, jd] = 0.0
        p_start = max(cur, chan[0, c])
        if merge_on:  # the page joins a program issued to its die (once the die is free) after it could go
            w_ = _merge_page(mg, pd, _div(first_page + j, n_dies, s_dies), sub, n_pl, upb, max(cur, ready),
                             ready - eps, ring, rule, fac0, fac1, fac2)
        else:
            w_ = 1.0
        if w_ > 0.0:  # a program of its own, on the die's booking as it goes (a translation read sees it)
            cur = p_start + w_ * t_unit
            busy[pd] += w_ * t_unit
            n_ops += 1.0
            if sus_on:  # the program/erase run (model._write)
                if p_start - die[PE_END, pd] > FIT_SLACK * t_unit:
                    die[PE_START, pd] = p_start
                die[PE_END, pd] = cur
                die[T_OP, pd] = t_unit * f[OP_BIAS]
        die[DIE_FREE, pd] = cur
        free_max = max(free_max, cur)
        fl[0, slot] = cur
        fl[1, slot] = per_page
        fl[2, slot] = pd
        n = max(n, slot)
    fl[1, 0] = n
    if miss:
        free_max = max(free_max, die[DIE_FREE, pm])
    ack = g_t
    if dram_on:
        dram_free = max(g_t, dram_free) + _dram_s(f, g_bytes)
        ack = dram_free
    return ack, n_ops, map_tp, map_end, free_max, dram_free
