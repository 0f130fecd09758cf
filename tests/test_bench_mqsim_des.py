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


@pytest.mark.parametrize("arbitration", [True, False])
def test_one_read_at_a_time_takes_each_step_once(arbitration):
    # QD1 on one chip, every request its own translation page: the translation read (its command, the
    # array read, one 512-byte sector out), then the data read (command, array read, 4 KiB out), then the
    # 4 KiB over the host link; commands take the channel only with arbitration
    host = 3000.0  # B/µs
    got = des.reads_on_channels(1, 1, des.sequential(1, 1, 1, 4096, 1), arbitration, 200, qd=1,
                                host_b_per_us=host)
    cmd = des.T_CMD if arbitration else 0.0
    want = 2 * (cmd + des.T_R) + (512 + 4096) / des.CHANNEL_B_PER_US + 4096 / host
    assert got["mean_us"] == pytest.approx(want, rel=1e-12)
    assert got["p99_us"] == pytest.approx(want, rel=1e-12)  # every request alike
    assert got["translation_reads_per_request"] == 1.0


def test_translation_reads_first_keep_the_mean_and_widen_the_tail():
    # 32 chips with a channel each, open loop near MQSim's QD64 rate: serving a chip's translation reads
    # before its data reads moves the mean little (the work is the same) and the p99 up (data reads are
    # overtaken), the effect MQSim's tails show against ssdx's
    kw = {"rate_per_us": 0.12, "warmup": 0.1, "host_b_per_us": des.HOST_B_PER_US}
    first, one = (des.reads_on_channels(32, 1, des.random_4k(32), False, 20_000, map_first=f, **kw)
                  for f in (True, False))
    assert first["mean_us"] == pytest.approx(one["mean_us"], rel=0.05)
    assert first["p99_us"] > 1.15 * one["p99_us"]


def test_requests_share_a_translation_page_being_read():
    # 16-page requests, 114 pages a translation page: one translation read per 114 / 16 requests, the
    # requests that need it while it is read waiting for that one read
    got = des.reads_on_channels(8, 4, des.sequential(8, 4, 16, 8192, 114), False, 4_000, qd=8)
    assert got["translation_reads_per_request"] == pytest.approx(16 / 114, rel=0.01)


def test_translation_reads_first_help_where_requests_share_them():
    # a translation page shared by several requests: served before the chip's queued data reads, it holds
    # up fewer of them than in one first-come-first-served queue
    run = [des.reads_on_channels(8, 4, des.sequential(8, 4, 16, 8192, 114), False, 4_000, qd=8,
                                 map_first=first)["mean_us"] for first in (True, False)]
    assert run[0] < 0.95 * run[1]
