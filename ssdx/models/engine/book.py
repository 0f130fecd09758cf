"""Booking of work on a die of the request-level engine (:mod:`ssdx.models.engine.model`): reads go first and
fill idle gaps (:func:`book`), and a read may suspend a program or an erase in progress
(:func:`suspend`, with the program/erase run moved by the reads put into it, :func:`pe_push`).
Times in s, relative to the engine's current origin (:func:`shift` rebases them)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ssdx.models.engine.state import PE, Plan, Server

FIT_SLACK = 1e-3  # work fits a gap overshooting it by under this share of its duration (book)


def book(sv: Server, ready: jax.Array, dur: jax.Array) -> tuple[jax.Array, Server]:
    """Book ``dur`` seconds of work ready at ``ready``; returns its start and the new booking.

    Requests are issued in order but become ready out of order (one waits for a map read, another finds
    its die idle), and the resource serves whatever is ready.  The booking is the end ``end`` of its
    booked work and the ``K`` latest idle gaps before it, ``[gap[k], win[k]]``, oldest first (``K`` =
    ``gap.shape[0]``, ``Layout.read_gaps`` in the engine), with no idle time between them but the gaps.
    Work ready at or after ``end`` starts at once (the time since ``end``, if any beyond
    :data:`FIT_SLACK` of the work, becomes the newest gap, the oldest is forgotten; so the gaps stay in
    time order).  Work ready earlier goes to the oldest gap in which the resource is idle at
    ``at = max(ready, gap[k])``: if it ends by ``win[k]`` it is placed there and the gap splits in two
    (the part before ``at`` and the part after the work; the oldest gap is forgotten to make room);
    otherwise it starts at ``at`` all the same and the work after it moves back by the overlap, which
    the later gaps absorb as far as they are long and ``end`` takes the rest: the resource serves what
    is ready first, as a first-come-first-served server does, instead of idling until work booked for
    later is done.  Work that finds no such gap queues at ``end``.  No rule leaves the resource idle
    while booked work could run, so its capacity is kept.  Approximate: work moved back by an overlap
    keeps the times already reported for it (its request's latency is short by at most the overlap).
    No head-of-line blocking.

    How many gaps matter.  A data read waiting for its translation read is booked ahead of time, and
    under load a die holds many such reads in its future, each with an idle gap before it.  With one
    gap (the engine's booking before it kept several) each new window forgot the gap before the last,
    work that was ready inside a forgotten gap queued at ``end``, the lost capacity compounded, and
    two-phase reads at three quarters of the dies' capacity came out ten times slower than a
    first-come-first-served server; ``tests/test_engine_booking.py`` and ``bench/booking.py`` hold the
    booking to an event-ordered first-come-first-served simulation of the same work up to 92 and 96 %
    utilisation (figures in the validation docs).  Where every read is ready in issue order (a drive
    with its map in DRAM, no suspension) no gap but the newest can take work, and one gap books exactly
    as many do (``Layout.read_gaps``).

    Work "fits" (and a resource counts as free) when it overshoots by less than :data:`FIT_SLACK` of its
    duration: a gap left by a read is often exactly one read long, and work is often ready exactly when
    the booking ends; without the slack whether the next read fits would depend on
    the last bit of rounding (float32 against float64, or the CPU loop of ``ssdx.models.engine.cpu``
    against this step)."""
    # unrolled over the K gaps (a static, small count): every operation is elementwise on (D, B), which
    # XLA fuses, where gathers, a cumulative sum and an argmax over K each made a pass of their own
    k_n = sv.gap.shape[0]
    g, w, end = list(sv.gap), list(sv.win), sv.end
    fit = dur * (1.0 - FIT_SLACK)
    free = ready + (dur - fit) >= end
    at = [jnp.maximum(ready, x) for x in g]
    # first[k]: gap k is the oldest usable one; seen[k]: a gap older than k is usable
    first, seen, found = [], [], jnp.zeros(end.shape, bool)
    for a, y in zip(at, w, strict=True):
        usable = a + (dur - fit) < y
        seen.append(found)
        first.append(usable & ~found)
        found = found | usable
    placed = ~free & found
    at_i, gs_i, ge_i = at[0], g[0], w[0]
    for k in range(1, k_n):
        at_i, gs_i, ge_i = (jnp.where(first[k], x[k], x_i) for x, x_i in ((at, at_i), (g, gs_i), (w, ge_i)))
    fits = placed & (at_i + fit <= ge_i)
    over = placed & ~fits
    start = jnp.where(free, ready, jnp.where(placed, at_i, end))
    idle = free & (ready > end + FIT_SLACK * dur)  # an idle time of any length (not rounding)
    # free, ready after end: the gaps move down one, the newest is [end, ready] (so the gaps stay in time
    # order, ends included)
    g_f, w_f = g[1:] + [end], w[1:] + [jnp.broadcast_to(ready, end.shape)]
    push = at_i + dur - ge_i  # over: the overlap
    none = jnp.zeros(end.shape, bool)
    gaps, wins, total = [], [], None
    for k in range(k_n):
        nxt = first[k + 1] if k + 1 < k_n else none  # gap k + 1 is the first usable one
        older = ~found if k + 1 == k_n else ~(seen[k + 1] | nxt)  # k < first - 1
        # fits: the first usable gap splits into [gap, at] (one position down, the older gaps moving
        # down one) and [at + dur, win] (its own position)
        gap_s = jnp.where(older, g_f[k], jnp.where(nxt, gs_i, jnp.where(first[k], at_i + dur, g[k])))
        win_s = jnp.where(older, w_f[k], jnp.where(nxt, at_i, w[k]))
        # over: the first usable gap ends at at; the work after it moves back by the overlap, absorbed
        # gap by gap (the gaps after the first, in order)
        length = jnp.where(seen[k], jnp.maximum(w[k] - g[k], 0.0), 0.0)
        total = length if total is None else total + length
        before = total - length
        gap_o = jnp.where(seen[k], jnp.minimum(g[k] + jnp.maximum(push - before, 0.0), w[k]), g[k])
        win_o = jnp.where(first[k], at_i, w[k])
        gaps.append(jnp.where(idle, g_f[k], jnp.where(fits, gap_s, jnp.where(over, gap_o, g[k]))))
        wins.append(jnp.where(idle, w_f[k], jnp.where(fits, win_s, jnp.where(over, win_o, w[k]))))
    rest = jnp.maximum(push - total, 0.0)
    new = Server(end=jnp.where(free, ready + dur, jnp.where(fits, end, end + jnp.where(over, rest, dur))),
                 win=jnp.stack(wins), gap=jnp.stack(gaps))
    return start, new


def materialised(x: jax.Array) -> jax.Array:
    """``x`` unchanged, computed into a buffer of its own before what reads it.  XLA fuses elementwise
    work into each of its consumers, and where a long chain (a booking) feeds an array that a booking of
    ``K`` gaps reads at many indices, the fused kernels recompute the chain for every one.  A reduction is
    not fused into its consumers, so the identity is written as one (the larger of ``x`` and -inf);
    ``optimization_barrier`` would say so directly, but XLA's CPU back end removes it before fusion."""
    return jnp.max(jnp.stack([x, jnp.full_like(x, -jnp.inf)]), axis=0)


def suspend(p: Plan, pe: PE, sv: Server, ready: jax.Array, dur: jax.Array):
    """Book a read of ``dur`` s ready at ``ready`` on a die with the suspension policy (step 5):
    returns its start, the new read booking, its die time (``dur`` plus any suspend overhead) and
    whether it suspended a program or an erase (masks).

    A read that would start at once (:func:`book`: no read of the die in its way) looks at the die's
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
    s0, _ = book(sv, ready, dur)
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
    # the booking's inputs in buffers of their own: fused into it, the first booking and the test for an
    # operation in progress were recomputed for every die and gap it writes (most of the step's time on a
    # CPU; bench/engine_mechanisms.py)
    ready, dur = materialised(t + wait), materialised(dur)
    start, new = book(sv, ready, dur)
    return start, new, dur, sus & ~in_erase, sus & in_erase


def pe_push(p: Plan, pe: PE, on: jax.Array, start: jax.Array, dur: jax.Array) -> PE:
    """A read of ``dur`` s starting at ``start`` on the dies ``on`` pushes the program/erase work booked
    after its start back by its duration (as it pushes ``die_free``); only tracked where a suspension
    option is in effect (``suspend_on``).  A time within :data:`FIT_SLACK` of the read's duration after
    its start counts as at its start (a read that waited for an operation starts where it ends), so
    the push does not hang on rounding."""
    on = on & p.suspend_on[None]
    push = lambda x: jnp.where(on & (x > start + FIT_SLACK * dur), x + dur, x)  # noqa: E731
    return pe._replace(start=push(pe.start), end=push(pe.end), er_end=push(pe.er_end))


def shift(sv: Server, t: jax.Array) -> Server:
    """Rebase a booking to an origin ``t`` (B,) later."""
    return Server(sv.end - t[None], sv.win - t[None], sv.gap - t[None])


def pick(mask: jax.Array, a: Server, b: Server) -> Server:
    return Server(*(jnp.where(mask, x, y) for x, y in zip(a, b, strict=True)))
