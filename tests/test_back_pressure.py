"""The eager write-back's back pressure counted in programs (``engine.back_pressure = programs``): the
instant a write is let in, against a walk over every program end, on both back ends; the limit's
arithmetic against MQSim's rule; and what it changes in a stream of writes."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import x64
from test_engine_cpu import DRIVES, ENGINE, both

from ssdx import params, presets
from ssdx.core.fields import ConfigError
from ssdx.models.engine import cpu_ops, cpu_pack
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.workloads.traces import Chunk


def walk(h: float, free: np.ndarray, tau: float, limit: float) -> float:
    """The reference: list every program end after ``h`` (each backlog as back-to-back programs of
    ``tau`` ending where it ends; one ending at ``h`` has ended), and let the write in once no more than
    ``limit`` end later."""
    runs = [f - tau * np.arange(np.round((f - h) / tau) if np.isclose((f - h) / tau, np.round((f - h) / tau))
                                else np.ceil((f - h) / tau)) for f in free if f > h + 1e-12]
    ends = np.sort(np.concatenate([[]] + runs))
    over = len(ends) - int(limit)
    return h if over <= 0 else float(ends[over - 1])


def cases(seed: int, n: int = 300):
    """Random backlogs on up to 64 dies (idle, short and long ones; in a third of the cases whole numbers
    of programs from ``h`` with some dies equal), program times and limits."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        d = int(rng.integers(1, 65))
        tau = float(rng.uniform(1e-4, 1e-3))
        h = 1.0 + float(rng.uniform(0, 2 * tau))
        if i % 3 == 0:  # programs ending exactly at h + j tau: ties between dies and ends at h itself
            free = h + tau * rng.integers(0, 6, d).astype(float)
            yield h, free, tau, float(rng.integers(0, int(np.sum(free > h + tau / 2) * 3) + 2))
            continue
        free = np.where(rng.random(d) < 0.2, 0.0, rng.uniform(0, rng.choice([2, 10, 60]) * tau, d)) + 1.0
        total = sum(max(np.ceil((f - h) / tau), 0) for f in free)
        yield h, free, tau, float(rng.integers(0, max(int(total), 1) + 2))


def cpu_admit(h, free, tau, limit):
    """The CPU loop's admission for the dies ``free``, laid out as the loop lays them: one channel, or
    two channels padded to four positions each way (``w * C + c``, the padding holding a backlog that
    must not count) where the dies are even."""
    n = len(free)
    if n % 2:
        die = np.zeros((len(cpu_pack.DIES), n))
        die[cpu_pack.DIE_FREE] = free
        return cpu_ops._admit_programs(h, die, n, 1, 1, tau, limit, np.empty((2, n)))
    ways, cap = n // 2, 4
    die = np.full((len(cpu_pack.DIES), ways * cap), h + 100 * tau)  # padding: a long backlog
    for w in range(ways):
        die[cpu_pack.DIE_FREE, w * cap:w * cap + 2] = free[2 * w:2 * w + 2]
    return cpu_ops._admit_programs(h, die, n, 2, cap, tau, limit, np.empty((2, ways * cap)))


def test_the_loop_lets_a_write_in_at_the_program_end_a_walk_finds():
    for h, free, tau, limit in cases(1):
        assert cpu_admit(h, free, tau, limit) == pytest.approx(walk(h, free, tau, limit), rel=0, abs=1e-12)


def test_the_batched_step_lets_a_write_in_at_the_program_end_a_walk_finds():
    # configurations on the last axis, padded die positions masked off
    batch = list(cases(2, 120))
    d = max(len(c[1]) for c in batch)
    free = np.zeros((d, len(batch)))
    mask = np.zeros((d, len(batch)), bool)
    for b, (_, f, _, _) in enumerate(batch):
        free[:len(f), b], mask[:len(f), b] = f, True
    h, tau, limit = (np.array([c[i] for c in batch]) for i in (0, 2, 3))
    with x64():
        got = np.asarray(engine._admission_programs(jnp.asarray(h - 1.0), jnp.asarray(free - 1.0),
                                                    jnp.asarray(mask), jnp.asarray(tau), jnp.asarray(limit)))
    want = np.array([walk(*c) for c in batch]) - 1.0  # times from the issue, here at 1 s
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 24, 25, 64])
def test_every_selection_finds_the_kth_smallest(n):
    # ties included (values rounded to a coarse grid), windows that miss (values bunched), every k
    rng = np.random.default_rng(n)
    for values in (rng.uniform(0, 1e-3, n), np.round(rng.uniform(0, 1e-3, n), 4),
                   rng.uniform(0.9e-3, 1e-3, n)):
        want = np.sort(values)
        for k in range(n):
            wk = np.stack([np.zeros(n), values])
            assert cpu_ops._kth(wk, 1, n, k) == want[k]
            wk = np.stack([np.zeros(n), values])
            assert cpu_ops._select(wk, 1, n, k) == want[k]
            wk = np.stack([np.zeros(n), values])
            assert cpu_ops._kth_phase(wk, n, k, 1e-3) == want[k]


def test_a_write_is_let_in_at_once_below_the_limit_and_after_everything_above_it():
    free = np.array([1.0 + 3.5e-3, 1.0 + 2.2e-3, 0.0, 1.0 + 1e-3])
    tau = 1e-3
    # 4 + 3 + 0 + 1 = 8 programs from h = 1 s
    assert cpu_admit(1.0, free, tau, 8) == 1.0
    assert cpu_admit(1.0, free, tau, 7) == pytest.approx(1.0 + 0.2e-3)  # the first end: 3.5 ms - 3 ms
    assert cpu_admit(1.0, free, tau, 0) == pytest.approx(1.0 + 3.5e-3)  # all of them


@pytest.mark.parametrize("inflight, size, pages, written, limit", [
    (1 << 20, 4096, 1, 1, 255),  # MQSim's default drive, 4 KiB writes: 2,048 sectors, 8 a write
    (1 << 20, 131072, 16, 16, 112),  # 128 KiB writes of 8 KiB pages: 15 of them ride on top
    (1 << 20, 131072, 16, 4, 124),  # the same with 12 of its pages kept in the buffer
    (1 << 20, 65536, 3, 3, 45),  # 64 KiB over 3 pages (unaligned): 48 such pages fill it exactly
    (1 << 20, 8192 * 200, 200, 200, 0),  # a write larger than the limit waits for everything in flight
    (10000, 4096, 1, 1, 2)])  # 4,096 x 2 < 10,000 <= 4,096 x 3
def test_the_limit_keeps_the_data_in_flight_below_the_buffer(inflight, size, pages, written, limit):
    assert cpu_ops._bp_limit(inflight, size, pages, written) == limit
    f32 = (jnp.float32(x) for x in (inflight, size, pages, written))
    assert float(engine._bp_limit(*f32)) == limit
    b = size / pages  # MQSim's test: the sectors in flight and the write's pages before its last below
    if limit > 0:  # the depth, and one program more would not be
        assert (limit + written - 1) * b < inflight <= (limit + written) * b
    else:
        assert (written - 1) * b >= inflight


def test_back_pressure_is_checked():
    cols = params.columns_from_config(presets.drive(DRIVES[0]), {
        "pattern": "random", "block_kib": 4, "queue_depth": 1, "prefill_fraction": 0.5, "fill_fraction": 1.0,
        "burst_gb": 0.0, "idle_s": 0.0}) | engine_params.columns(ENGINE | {"back_pressure": "discrete"})
    with pytest.raises(ConfigError, match="engine.back_pressure") as e:
        engine_params.validate(cols)
    assert "fluid" in str(e.value) and "programs" in str(e.value)


def writes(n: int, qd: int, sizes=(4096,), reads: float = 0.0, **eng) -> tuple[dict, Chunk]:
    """Random writes of ``sizes`` (and a share ``reads`` of 4 KiB reads) at queue depth ``qd`` on a 32-die
    drive, eager write-back with a limit of 64 KiB in flight (and the engine fields ``eng``), fluid and
    counted in programs (two configurations of one batch)."""
    rows = []
    for bp in ("fluid", "programs"):
        cols = params.columns_from_config(presets.drive("generic_tlc_1tb"), {
            "pattern": "random", "block_kib": 4, "queue_depth": qd, "prefill_fraction": 0.5,
            "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0})
        rows.append(cols | engine_params.columns(ENGINE | {"write_back": "eager", "inflight_kib": 64,
                                                           "back_pressure": bp} | eng))
    rng = np.random.default_rng(11)
    ch = Chunk(time_s=np.cumsum(rng.exponential(30e-6, n)), op=(rng.random(n) >= reads).astype(np.int8),
               offset=rng.integers(0, 1 << 20, n) * 4096, size=rng.choice(sizes, n),
               line=np.zeros(n, np.int64))
    return params.concat_columns(rows), ch


def merged(n: int = 1500) -> tuple[dict, Chunk]:
    """:func:`writes` of 1 to 16 pages with 30 % reads, open loop, pages merged into multi-plane programs
    and rewrites kept in the buffer (MQSim's write-back whole)."""
    return writes(n, 8, sizes=(4096, 16384, 65536), reads=0.3, loop="open", plane_merge=True,
                  rewrite_window_s=1.0)


def test_multi_plane_programs_and_kept_rewrites_under_either_back_pressure_match_between_backends():
    # MQSim's write-back whole: pages joined into multi-plane programs once let in, rewrites kept in the
    # buffer, writes of 1 to 16 pages, reads between them, open loop
    with x64():
        cols, ch = merged()
        cpu, ref = both(cols, ch, 500)
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)
    for k in ("programs", "prog_pages", "busy", "lat_sum"):
        np.testing.assert_allclose(cpu.extra["sums"][k], ref.extra["sums"][k], rtol=1e-9, err_msg=k)
    assert not np.allclose(cpu.latencies[0], cpu.latencies[1])


def test_counting_programs_spreads_the_waits_of_a_saturated_write_stream():
    # at QD1 the eager write-back keeps 64 KiB in flight, and a write waits for room: counted in programs
    # it waits for whole program ends (some writes a long time, many not at all), where the fluid backlog
    # gives every write the same share.  Both hold the same data in flight, so (Little's law) about the
    # same rate; the programs rule a little less, as a write comes in only at a program's end
    with x64():
        cols, ch = writes(3000, 1)  # on the layout of the multi-plane stream above (its compiled scan)
        cpu, ref = both(cols, ch, 500, like=engine_params.build(merged()[0])[3])
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)
    fluid, prog = cpu.latencies[:, 1000:]  # past the start, with the dies' backlogs built up
    assert 1.0 < prog.mean() / fluid.mean() < 1.2
    assert np.percentile(prog, 99) > 1.5 * np.percentile(fluid, 99)
    assert np.percentile(prog, 50) < np.percentile(fluid, 50)


def test_the_float32_scan_takes_the_same_program_ends_and_partners_as_the_loop():
    # the batch's default dtype: the JAX step's times in float32 from the issue, the loop's in float64;
    # the admissions land on program ends and pages meet programs starting as they are ready, so a
    # tie split by rounding would change whole programs, not a rounding's worth
    cols, ch = merged()
    cpu, ref = both(cols, ch, 500, dtype=np.float32)
    np.testing.assert_array_equal(cpu.extra["sums"]["programs"], ref.extra["sums"]["programs"])
    for k in ("iops", "latency_mean_us", "write_latency_mean_us", "latency_p99_us"):
        np.testing.assert_allclose(cpu.metrics[k], ref.metrics[k], rtol=1e-3, err_msg=k)
