"""Request-level engine: closed-form queueing, unloaded latency by component, capacity limits, the pSLC
accounting shared with the fluid engine, the mapping cache, padding/vmap/chunking invariance, float
precision over a week-long trace."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import x64

from ssdx import params, presets
from ssdx.core import stats
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import replay
from ssdx.models.fluid import model as fluid
from ssdx.workloads import synthetic
from ssdx.workloads.traces import READ, WRITE, Chunk

ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
WORK = {"pattern": "random", "block_kib": 4, "queue_depth": 1, "prefill_fraction": 0.5, "fill_fraction": 1.0,
        "burst_gb": 0.0, "idle_s": 0.0}
PAGE = 16384


def one_die(**over) -> dict:
    """One die on one channel, one plane, DRAM, a fast bus and link: the die is the only bottleneck."""
    d = dict(presets.drive("aldrin_pro_2tb"), channels=1, dies_per_channel=1, planes_per_die=1,
             user_capacity_gb=60.0, bus_mts=100000, interface="pcie5x4", slc_mode="pure_native", dram=True)
    d.update(over)
    return d


def cfg(drive: dict, qd: int = 1, **eng) -> dict:
    return {"drive": drive, "nand": {}, "workload": dict(WORK, queue_depth=qd), "engine": dict(ENGINE, **eng)}


def run(c: dict, chunk: Chunk, dtype=np.float64, **kw) -> replay.Result:
    if dtype == np.float64:
        with x64():
            return replay.replay_config(c, chunk, dtype=dtype, **kw)
    return replay.replay_config(c, chunk, dtype=dtype, **kw)


def stream(n: int, op: int = READ, size: int = 4096, times: np.ndarray | None = None, offsets=None,
           seed: int = 0) -> Chunk:
    rng = np.random.default_rng(seed)
    off = rng.integers(0, 10**6, n) * PAGE if offsets is None else np.asarray(offsets, np.int64)
    t = np.full(n, np.nan) if times is None else np.asarray(times, float)
    return Chunk(time_s=t, op=np.full(n, op, np.int8), offset=off, size=np.full(n, size, np.int64),
                 line=np.arange(1, n + 1))


def unloaded_read_s(d: dict, size: int = 4096) -> float:
    """Closed form of one read of one page on an idle drive with DRAM (module docstring, steps 2-6)."""
    D, _ = params.build(params.columns_from_config(d, WORK), dtype=np.float64)
    chan = float(D.bus_bytes_per_s[0] / D.channels[0])
    return (1 / (ENGINE["ctrl_kiops"] * 1e3) + float(D.cmd_overhead_s[0]) + ENGINE["map_hit_us"] * 1e-6
            + float(D.nand.t_read_us[0]) * 1e-6 + size / chan + size / float(D.host_bytes_per_s[0]))


def test_qd1_read_is_the_sum_of_its_components():
    d = presets.drive("aldrin_pro_2tb")
    r = run(cfg(d), stream(200), keep_latency=True)
    assert np.allclose(r.latencies[0], unloaded_read_s(d), rtol=1e-9)
    assert r.metrics["queue_share"][0] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("qd", [2, 4, 16])
def test_closed_loop_one_die_is_die_bound_and_obeys_littles_law(qd):
    d = one_die()
    t_r = 76e-6  # ymtc_cdt1b read (Table 1's 3D CT TLC)
    m = run(cfg(d, qd), stream(4000)).metrics
    assert m["iops"][0] == pytest.approx(1 / t_r, rel=0.01)  # the die never idles
    assert m["latency_mean_us"][0] * 1e-6 * m["iops"][0] == pytest.approx(qd, rel=0.01)  # N = X R
    assert m["die_utilisation_max"][0] == pytest.approx(1.0, abs=0.01)


def test_open_loop_deterministic_arrivals():
    d = one_die()
    l0, s = unloaded_read_s(d), 76e-6
    for gap, growth in ((100e-6, 0.0), (60e-6, s - 60e-6)):  # D/D/1 below and above saturation
        n = 300
        r = run(cfg(d, 64, loop="open"), stream(n, times=np.arange(n) * gap), keep_latency=True)
        lat = r.latencies[0][: 60]  # before the 64-slot host queue fills
        assert np.allclose(lat, l0 + growth * np.arange(60), rtol=1e-6, atol=1e-10)


def test_open_loop_poisson_matches_md1():
    """One die with deterministic service S and Poisson arrivals: Pollaczek–Khinchine mean wait
    W = ρS / (2(1 − ρ))."""
    d = one_die()
    s, rho, n = 76e-6, 0.7, 100_000
    t = np.cumsum(np.random.default_rng(3).exponential(s / rho, n))
    m = run(cfg(d, 4096, loop="open"), stream(n, times=t)).metrics
    wait = m["latency_mean_us"][0] * 1e-6 - unloaded_read_s(d)
    assert wait == pytest.approx(rho * s / (2 * (1 - rho)), rel=0.04)
    assert m["queue_share"][0] == pytest.approx(wait / (m["latency_mean_us"][0] * 1e-6), rel=0.02)


def test_sustained_writes_run_at_the_fluid_engines_rate():
    """Sequential 128 KiB writes at QD32 saturate the die array at the rate the fluid engine derives
    from the same timing: pSLC while the cache has room, native without a cache."""
    for mode, rate_field in (("pure_native", "native"), ("dynamic", "slc")):
        d = presets.drive("aldrin_pro_2tb", slc_mode=mode)
        c = cfg(d, 32)
        n = 20_000
        ch = synthetic.fio_like(n, 0.0, {131072: 1.0}, random=False, span_bytes=100e9)
        m = run(c, ch, dtype=np.float32).metrics
        D, W = params.build(params.columns_from_config(d, dict(WORK, block_kib=128, queue_depth=32)))
        expect = float(getattr(fluid.rates(params.index(D, 0), params.index(W, 0)), rate_field))
        assert m["mb_s"][0] * 1e6 == pytest.approx(expect, rel=0.03), mode
        assert m["die_utilisation_mean"][0] > 0.95


def test_pslc_room_is_the_fluid_accounting():
    """A write stream larger than the pSLC room: exactly the fluid engine's room goes to pSLC, the rest to
    direct native blocks."""
    d = presets.drive("generic_tlc_1tb", user_capacity_gb=1000.0)
    w = dict(WORK, prefill_fraction=0.999)  # 1 GB free: pSLC room (1 - p)·U/b = 333 MB
    c = dict(cfg(d, 32), workload=w)
    n = 4000
    ch = synthetic.fio_like(n, 0.0, {262144: 1.0}, random=False, span_bytes=100e9)  # 1.05 GB
    m = run(c, ch).metrics
    room = (1 - 0.999) * 1000e9 / 3
    assert m["pslc_bytes"][0] == pytest.approx(room, rel=1e-6)
    assert m["pslc_bytes"][0] + m["native_bytes"][0] + m["folding_bytes"][0] == pytest.approx(n * 262144)
    assert m["folding_bytes"][0] == 0  # the over-provisioning (~88 GB) takes the rest directly


def test_dramless_map_cache_misses():
    d = one_die(dram=False, channels=2, dies_per_channel=2)
    sets = 16  # 16 translation pages of 16 KiB, each mapping 4096 x 4 KiB = 16 MiB
    c = cfg(d, 1, map_cache_mib=sets * PAGE / 2**20)
    span = 16 * 2**20
    seq = stream(2000, offsets=np.arange(2000) * 65536)  # 128 MiB sequential: 8 translation pages, once each
    assert run(c, seq).metrics["map_misses"][0] == len(np.unique(seq.offset // span))
    rng = np.random.default_rng(1)
    far = stream(20_000, offsets=rng.integers(0, 4 * sets, 20_000) * span)  # 4 x the coverage, uniform
    rate = run(c, far).metrics["map_misses"][0] / 20_000
    assert rate == pytest.approx(0.75, abs=0.02)  # a direct-mapped set holds 1 of its 4 candidates
    hot = run(cfg(one_die(), 1), far).metrics["map_misses"][0]
    assert hot == 0  # a drive with DRAM never misses


def test_reads_are_not_held_behind_the_program_backlog():
    """Program/erase suspension: with a deep write backlog, reads wait only for reads."""
    d = presets.drive("aldrin_pro_2tb", slc_mode="pure_native")
    n = 20_000
    ch = synthetic.fio_like(n, 0.3, {131072: 0.7, 4096: 0.3}, span_bytes=100e9, seed=2)
    r = run(cfg(d, 32, write_buffer_mib=256), ch, dtype=np.float32, keep_latency=True)
    reads = r.latencies[0][(r.ops == READ)]
    t_prog = 971.4e-6
    assert np.median(reads) < t_prog / 2  # a FIFO die would make reads wait for queued programs
    assert r.metrics["die_utilisation_mean"][0] > 0.8  # and the dies are busy programming


def test_sata_link_caps_iops():
    d = presets.drive("sata_tlc_500", bus_mts=100000)
    m = run(cfg(d, 32), stream(20_000), dtype=np.float32).metrics
    D, _ = params.build(params.columns_from_config(d, WORK))
    cap = float(D.host_bytes_per_s[0]) / 4096
    assert 0.95 * cap < m["iops"][0] <= cap * 1.0001


def test_padded_batch_equals_single_runs_and_chunking_does_not_matter():
    drives = [presets.drive(n) for n in ("sata_tlc_500", "generic_tlc_1tb", "aldrin_pro_2tb", "thnsns120")]
    ch = synthetic.fio_like(6000, 0.6, {4096: 0.6, 65536: 0.4}, span_bytes=50e9, seed=4)
    rows = [engine_params.columns(ENGINE) | params.columns_from_config(d, dict(WORK, queue_depth=8))
            for d in drives]
    cols = params.concat_columns(rows)
    batch = replay.replay(engine_params.build(cols), [ch], chunk_len=6000).metrics
    chunked = replay.replay(engine_params.build(cols), [ch], chunk_len=1024).metrics
    for i, d in enumerate(drives):
        single = run(cfg(d, 8), ch, dtype=np.float32).metrics
        for k in ("iops", "latency_mean_us", "latency_p99_us", "nand_read_pages", "map_misses"):
            assert batch[k][i] == pytest.approx(single[k][0], rel=1e-5), (d["name"], k)
            assert chunked[k][i] == pytest.approx(batch[k][i], rel=1e-4), (d["name"], k)


def test_float32_agrees_with_float64():
    ch = synthetic.fio_like(5000, 0.5, {4096: 0.5, 131072: 0.5}, span_bytes=80e9, seed=5)
    c = cfg(presets.drive("generic_tlc_1tb"), 16)
    a, b = run(c, ch, dtype=np.float32).metrics, run(c, ch, dtype=np.float64).metrics
    for k in ("iops", "latency_mean_us", "queue_share"):
        assert a[k][0] == pytest.approx(b[k][0], rel=1e-3), k
    # percentiles come from a histogram: rounding may move a request across a bin edge (4.7 % wide)
    assert a["latency_p99_us"][0] == pytest.approx(b["latency_p99_us"][0], rel=0.05)


def test_week_long_open_loop_keeps_microsecond_resolution():
    """Rebasing every step keeps float32 times small: isolated requests a week apart see exactly the
    unloaded latency."""
    d = one_die()
    n = 1000
    t = np.arange(n) * 604.8  # a week
    r = run(cfg(d, 1, loop="open"), stream(n, times=t), dtype=np.float32, keep_latency=True)
    assert np.allclose(r.latencies[0], unloaded_read_s(d), rtol=1e-4)
    assert r.metrics["makespan_s"][0] == pytest.approx(t[-1] + unloaded_read_s(d), rel=1e-9)


def test_op_codes_are_the_trace_array_forms():
    from ssdx.workloads import traces

    assert (engine.READ, engine.WRITE, engine.TRIM) == (traces.READ, traces.WRITE, traces.TRIM)


def test_idle_gaps_fold_the_pslc_cache_back():
    """Open loop: a burst that fills most of the pSLC cache, an idle minute, another burst.  The idle
    time folds the first burst into native blocks (fluid engine's idle rate), which gives its pSLC room
    back — less the native space the folded data now takes: a dynamic cache on a drive with 1 GB free
    holds (1 GB − folded)/3 afterwards (fluid accounting, b = 3)."""
    d = presets.drive("generic_tlc_1tb")
    w = dict(WORK, prefill_fraction=0.999)  # pSLC room 333 MB
    c = dict(cfg(d, 32, loop="open"), workload=w)
    n = 2400  # 2 x 1200 x 256 KiB = 2 x 315 MB, the second burst 60 s after the first
    t = np.concatenate([np.arange(1200) * 1e-4, 60.0 + np.arange(1200) * 1e-4])
    ch = stream(n, op=WRITE, size=262144, times=t, offsets=np.arange(n) * 262144)
    m = run(c, ch).metrics
    burst, free = 1200 * 262144, 1e9
    assert m["idle_folded_bytes"][0] == pytest.approx(burst, rel=1e-6)  # all of it folded in the minute
    assert m["pslc_bytes"][0] == pytest.approx(burst + (free - burst) / 3, rel=1e-6)
    shut = run(dict(c, workload=w), stream(n, op=WRITE, size=262144, times=np.arange(n) * 1e-4,
                                           offsets=np.arange(n) * 262144)).metrics
    assert shut["pslc_bytes"][0] == pytest.approx((1 - 0.999) * 1000e9 / 3, rel=1e-6)  # no idle: room only


def test_percentiles_from_the_histogram():
    rng = np.random.default_rng(0)
    lat = rng.lognormal(np.log(100e-6), 1.0, 200_000)
    h = np.bincount(np.asarray(stats.latency_bin(lat)), minlength=stats.N_BINS)
    for q in (0.5, 0.99, 0.999):
        assert stats.percentile_from_hist(h, q) == pytest.approx(np.quantile(lat, q), rel=0.025)
    assert np.isnan(stats.percentile_from_hist(np.zeros(stats.N_BINS), 0.5))


def test_bad_engine_fields_name_the_field():
    c = cfg(presets.drive("aldrin_pro_2tb"))
    for field, value in (("loop", "sideways"), ("ctrl_kiops", 0.0), ("write_buffer_mib", -1.0)):
        bad = dict(c, engine=dict(ENGINE, **{field: value}))
        with pytest.raises(params.ConfigError, match=f"engine.{field}"):
            engine_params.build_from_config(bad)
    with pytest.raises(params.ConfigError, match="engine.map_hit_us"):
        engine_params.build(engine_params.columns({k: v for k, v in ENGINE.items()} | {"map_hit_us": 1e9})
                            | params.columns_from_config(presets.drive("aldrin_pro_2tb"), WORK))


def test_writes_ack_from_the_buffer_until_it_is_full():
    d = one_die(planes_per_die=1)
    small = run(cfg(d, 1, write_buffer_mib=64), stream(100, op=WRITE), keep_latency=True).latencies[0]
    assert small.max() < 20e-6  # buffered: command + transfer only
    through = cfg(d, 1, write_buffer_mib=0)
    full = run(through, stream(400, op=WRITE, size=PAGE), keep_latency=True).latencies[0]
    assert np.median(full) > 900e-6  # write-through: each page waits for its program (971 us)


SPLIT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import jax
from test_engine import split_case
assert jax.device_count() == int(sys.argv[3]), jax.devices()
np.save(sys.argv[1], split_case())
"""


def split_case() -> np.ndarray:
    """Three configurations (an odd batch: padded to the device count) replayed with latencies kept."""
    drives = [presets.drive(n) for n in ("sata_tlc_500", "generic_tlc_1tb", "aldrin_pro_2tb")]
    cols = params.concat_columns([engine_params.columns(ENGINE)
                                  | params.columns_from_config(d, dict(WORK, queue_depth=4)) for d in drives])
    ch = synthetic.fio_like(1500, 0.6, {4096: 0.6, 65536: 0.4}, span_bytes=50e9, seed=7)
    r = replay.replay(engine_params.build(cols), [ch], chunk_len=1024, keep_latency=True, backend="jax")
    return np.concatenate([r.latencies.ravel(), r.metrics["iops"], r.metrics["die_utilisation_mean"],
                           r.metrics["map_misses"]])


@pytest.mark.validation
def test_configurations_split_over_two_host_devices_give_the_same_results(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    def on_cpu(devices: int) -> np.ndarray:  # both on CPU (a GPU would round differently)
        out = tmp_path / f"{devices}.npy"
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} "
                             f"--xla_force_host_platform_device_count={devices}".strip())
        r = subprocess.run([sys.executable, "-c", SPLIT, str(out), str(Path(__file__).parent), str(devices)],
                           env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return np.load(out)

    assert np.array_equal(on_cpu(2), on_cpu(1), equal_nan=True)


def test_sorted_slot_insert_and_round_robin_counts():
    rng = np.random.default_rng(0)
    rest = np.sort(rng.random((5, 7), np.float32), axis=0)
    rest[3:, 2] = np.inf  # a shallower queue: unused slots stay last
    done = rng.random(7, np.float32)
    got = np.asarray(engine._push(rest, done))
    assert np.array_equal(got, np.sort(np.vstack([rest, done]), axis=0))
    # items start..start+count-1 dealt over the dies (brute force), dies 3..8 with padded positions
    for n_dies, start, count in [(3, 2, 7), (8, 0, 0), (8, 5, 3), (5, 4, 23), (8, 7, 64)]:
        mask = np.arange(8) < n_dies
        p = engine.Plan(*([None] * len(engine.Plan._fields)))._replace(
            mask=mask[:, None], die_id=np.arange(8)[:, None], n_dies=np.array([n_dies]))
        got = np.asarray(engine._per_die(p, np.array([start]), np.array([count])))[:, 0]
        want = np.bincount((start + np.arange(count)) % n_dies, minlength=8)
        assert np.array_equal(got, want), (n_dies, start, count)
