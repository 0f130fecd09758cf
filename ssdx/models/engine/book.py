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
    its die idle), and the resource serves whatever is ready.  The booking is a window ``[win, end]`` of
    back-to-back work and the idle gap ``[gap, win]`` before it.  Work ready at or after ``end`` starts at
    once and opens a new window (the time since ``end`` becomes the idle gap).  Work ready earlier is
    placed in the gap, at ``max(ready, gap)``, if it ends by ``win`` (the gap then starts after it);
    where the resource is idle at ``max(ready, gap)`` but the work does not fit before ``win``, it starts
    there all the same and the window's work moves back by the overlap (``end`` grows by it; the window
    now starts at the work): the resource serves what is ready first, as a first-come-first-served server
    does, instead of idling until work booked for later is done; otherwise it queues at ``end``.  Every
    rule keeps the window free of idle time, so the resource's capacity is kept.  Approximate: work moved
    back by an overlap keeps the times already reported for it (its request's latency is short by at most
    the overlap), and an older gap is forgotten once a new window opens.  No head-of-line blocking.

    Without the overlap rule, work booked ahead of time (a data read waiting for its translation read)
    left its die idle before it whenever a later request's translation read did not fit in the gap, and
    the lost time compounded under load; ``tests/test_engine_booking.py`` holds the booking to an
    event-ordered first-come-first-served simulation of the same work (figures in the validation docs).

    Work "fits" (and a resource counts as free) when it overshoots by less than :data:`FIT_SLACK` of its
    duration: a gap left by a read is often exactly one read long, and work is often ready exactly when
    the booking ends; without the slack whether the next read fits would depend on
    the last bit of rounding (float32 against float64, or the CPU loop of ``ssdx.models.engine.cpu``
    against this step)."""
    fit = dur * (1.0 - FIT_SLACK)
    free = ready + (dur - fit) >= sv.end
    at_gap = jnp.maximum(ready, sv.gap)
    in_gap = ~free & (at_gap + fit <= sv.win)
    over = ~free & ~in_gap & (at_gap + (dur - fit) < sv.win)  # idle at at_gap: the overlap rule
    start = jnp.where(free, ready, jnp.where(in_gap | over, at_gap, sv.end))
    new = Server(
        end=jnp.where(free, ready + dur, jnp.where(in_gap, sv.end, sv.end + jnp.where(
            over, at_gap + dur - sv.win, dur))),
        win=jnp.where(free, ready, jnp.where(over, at_gap, sv.win)),
        gap=jnp.where(free, sv.end, jnp.where(in_gap, at_gap + dur, sv.gap)),
    )
    return start, new


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
    start, new = book(sv, t + wait, dur)
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
