"""The event-ordered simulations of MQSim's flash scheduling (``bench.mqsim_des``) against closed forms
and against each other."""

from __future__ import annotations

import pytest

from bench import mqsim_des as des


def test_one_chip_queue_is_the_pollaczek_khinchine_mean():
    # Poisson arrivals on one chip of fixed service time (no translation read): M/D/1, whose mean wait
    # is rho * s / (2 (1 - rho)) (Pollaczek-Khinchine)
    s, rho = des.T_DATA, 0.6
    got = des.two_phase_fcfs(rho / s, 1, None, s, 60_000, seed=3)
    assert got == pytest.approx(s + rho * s / (2 * (1 - rho)), rel=0.03)


def test_channel_arbitration_costs_only_where_chips_share_a_channel():
    # one chip per channel: whether a command waits for the channel changes (almost) nothing; eight chips
    # per channel: commands held back behind waiting read data cost a quarter of the reads and more
    alone = [des.closed_loop_channels(32, 1, 64, arb, 8_000)["iops"] for arb in (True, False)]
    assert alone[0] == pytest.approx(alone[1], rel=0.02)
    shared = [des.closed_loop_channels(4, 8, 64, arb, 8_000)["iops"] for arb in (True, False)]
    assert shared[0] < 0.75 * shared[1]
    # and without arbitration a closed loop of 64 on 32 chips stays under the chips' bound
    assert shared[1] < 32 / (des.T_R + 4096 / des.CHANNEL_B_PER_US) * 1e6
