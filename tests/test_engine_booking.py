"""The die booking of the request engine (``ssdx.models.engine.book.book`` and the CPU loop's ``_book``)
held to what a first-come-first-served server does.

The engine books requests in issue order, but a request's work becomes ready later (a data read waits
for its translation read), so a die often holds work booked for later when earlier-ready work arrives.
The reference here is an event-ordered simulation of the same work, written independently of the booking
(``bench.mqsim_des``): every die serves its waiting work in the order it became ready, one piece at a time.
"""

from __future__ import annotations

import random

import jax.numpy as jnp
import numpy as np
import pytest

from bench import mqsim_des
from ssdx.models.engine.book import book
from ssdx.models.engine.cpu import _book
from ssdx.models.engine.state import Server
from tests.conftest import x64

T_MAP = mqsim_des.T_MAP * 1e-6  # s: a translation read held until its 512 bytes are out (MQSim's drive)
T_DATA = mqsim_des.T_DATA * 1e-6  # s: a 4 KiB data read held until its data is out


def _jax_book(state: tuple[float, float, float], ready: float, dur: float):
    start, new = book(Server(*(jnp.asarray([x], jnp.float64) for x in state)), jnp.asarray([ready]),
                      jnp.asarray([dur]))
    return float(start[0]), tuple(float(x[0]) for x in new)


@pytest.mark.parametrize("impl", ["jax", "cpu"])
def test_a_die_idle_when_work_is_ready_starts_it_and_moves_later_work_back(impl):
    """Work booked for 10–20 (idle before it since 0); a 8-long piece ready at 5 does not fit before 10.
    The die is idle at 5, so it starts at 5 and the booked work moves back by the 3 it overlaps: the
    booking ends at 23 and its window starts at 5.  (It used to wait until 20, leaving 5–10 idle.)"""
    state = (20.0, 10.0, 0.0)  # end, win, gap
    if impl == "jax":
        with x64():
            start, new = _jax_book(state, 5.0, 8.0)
    else:
        start, *new = _book(*state, 5.0, 8.0)
    assert start == pytest.approx(5.0)
    assert tuple(new) == pytest.approx((23.0, 5.0, 0.0))


def test_the_two_implementations_book_alike_on_random_work():
    """Random readiness and durations, out of order: the JAX step's ``book`` and the CPU loop's
    ``_book`` give the same start and booking every time (float64), through every rule of the booking."""
    rnd = random.Random(7)
    state = (0.0, 0.0, 0.0)
    rules = set()
    with x64():
        for _ in range(300):
            ready, dur = state[0] + rnd.uniform(-30.0, 6.0), rnd.uniform(0.5, 9.0)
            j = _jax_book(state, ready, dur)
            c = _book(*state, ready, dur)
            assert j[0] == pytest.approx(c[0], abs=1e-12)
            assert j[1] == pytest.approx(tuple(c[1:]), abs=1e-12)
            end = state[0]
            start, new_end = c[0], c[1]
            rules.add("free" if new_end == pytest.approx(ready + dur) and start == pytest.approx(ready)
                      else "gap" if new_end == pytest.approx(end)
                      else "queue" if start == pytest.approx(end)
                      else "overlap")
            state = j[1]
    assert rules == {"free", "gap", "queue", "overlap"}


def _booked_mean(rate: float, dies: int, n: int, seed: int) -> float:
    """Mean latency (s) of two-phase reads booked in issue order with ``_book``: each request's
    translation read on a random die at its arrival, then its data read on a random die when the
    translation read ends."""
    rnd = random.Random(seed)
    state = [(-1e9, -1e9, -1e9)] * dies
    t, lat = 0.0, []
    for _ in range(n):
        t += rnd.expovariate(rate)
        a, b = rnd.randrange(dies), rnd.randrange(dies)
        s1, *state[a] = _book(*state[a], t, T_MAP)
        s2, *state[b] = _book(*state[b], s1 + T_MAP, T_DATA)
        lat.append(s2 + T_DATA - t)
    return float(np.mean(lat[n // 10:]))


def _fcfs_mean(rate: float, dies: int, n: int, seed: int) -> float:
    """The same requests (same random numbers) through the event-ordered simulation of
    ``bench.mqsim_des`` (µs there): each die serves its waiting work in the order it became ready, one
    piece at a time; mean latency (s)."""
    return mqsim_des.two_phase_fcfs(rate * 1e-6, dies, T_MAP * 1e6, T_DATA * 1e6, n, seed) * 1e-6


@pytest.mark.parametrize("busy", [0.5, 0.62])
def test_loaded_two_phase_reads_match_an_event_ordered_server(busy):
    """Poisson 4 KiB reads that each need a translation read, over 32 dies busy ``busy`` of the time
    (MQSim's default drive at 90 % of its QD64 read rate is at 0.62): the booked mean latency is within
    10 % of the event-ordered simulation (-2 % and +5 % when written).  Without the overlap rule it was
    17 % and 38 % above."""
    rate = busy * 32 / (T_MAP + T_DATA)
    booked = _booked_mean(rate, 32, 20_000, seed=1)
    fcfs = _fcfs_mean(rate, 32, 20_000, seed=1)
    assert booked == pytest.approx(fcfs, rel=0.10), (booked, fcfs)
