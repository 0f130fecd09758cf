"""Fluid engine: calibration to the Aldrin Pro review, conservation, phase order, physics directions."""

import jax
import numpy as np
import pytest
from conftest import build_one, metrics, simulate, x64
from hypothesis import given, settings
from hypothesis import strategies as st

from ssdx import params, presets
from ssdx.core import stats
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid.plots import ALDRIN_REVIEW, phases
from ssdx.units import gbit_die_to_bytes


def test_aldrin_three_phases_match_review_within_5pct(aldrin):
    ph = phases(simulate(*aldrin, 512))
    assert [p["name"] for p in ph] == ["pslc", "direct_native", "folding"]
    for p, (name, _start, end, speed) in zip(ph, ALDRIN_REVIEW):
        assert p["name"] == name
        assert p["end_gb"] == pytest.approx(end, rel=0.05), p
        assert p["mean_mb_s"] == pytest.approx(speed, rel=0.05), p
    # phases are contiguous
    assert ph[0]["end_gb"] == pytest.approx(ph[1]["start_gb"])
    assert ph[1]["end_gb"] == pytest.approx(ph[2]["start_gb"])


def test_pure_native_is_flat_and_above_2100():
    out = simulate(*build_one(slc_mode="pure_native"))
    mbs = out.speed / 1e6
    assert mbs.min() >= 2100
    assert mbs.max() <= 1.05 * mbs.min()


def test_pure_slc_capacity_near_640gb_and_never_folds():
    d, w = build_one(slc_mode="pure_slc")
    m = metrics(d, w)
    assert m["capacity_gb"] == pytest.approx(640.0, rel=0.05)
    assert m["folding_gb"] == 0 and m["direct_gb"] == 0
    assert m["written_gb"] == pytest.approx(m["capacity_gb"], rel=1e-4)


def test_prefill_shrinks_dynamic_cache_by_the_accounting():
    m0 = metrics(*build_one())
    d, w = build_one(workload=presets.workload("seq_fill", prefill_fraction=0.5))
    m5 = metrics(d, w)
    u, b = 2000.0, 3.0
    assert m0["cache_gb"] == pytest.approx(u / b, rel=1e-3)
    # cache at pre-fill p is (1 - p) U / b: 0.5 U of native data takes 0.5 U of the pSLC zone
    assert m5["cache_gb"] == pytest.approx(0.5 * u / b, rel=1e-3)
    assert m0["cache_gb"] - m5["cache_gb"] == pytest.approx(0.5 * u / b, rel=1e-3)


def test_phase_boundaries_do_not_depend_on_step_count(aldrin):
    a = phases(simulate(*aldrin, 64))
    b = phases(simulate(*aldrin, 1000))
    for p, q in zip(a, b):
        assert p["end_gb"] == pytest.approx(q["end_gb"], rel=1e-4)
        assert p["mean_mb_s"] == pytest.approx(q["mean_mb_s"], rel=1e-4)


def _random_config(draw_vals):
    mode, nand, dpc, pre, fill, burst, idle, cap_frac = draw_vals
    d = presets.drive("aldrin_pro_2tb", slc_mode=mode, nand=nand, dies_per_channel=dpc, static_slc_gb=20.0)
    raw = 8 * dpc * gbit_die_to_bytes(512) / 1e9
    bits = {"ymtc_cdt1b": 3, "qlc": 4, "2d_fg_mlc": 2, "tlc": 3}[nand]
    # up to the very limit the accounting allows, so over-provisioning can be smaller than a step
    static_raw = bits * 20.0 if mode == "static" else 0.0
    d["user_capacity_gb"] = cap_frac * 0.99999 * (raw * 0.995 - static_raw)
    w = presets.workload("seq_fill", prefill_fraction=pre, fill_fraction=fill, burst_gb=burst, idle_s=idle)
    return build_one(d, w)


configs = st.tuples(
    st.sampled_from(["dynamic", "static", "pure_slc", "pure_native"]),
    st.sampled_from(["ymtc_cdt1b", "qlc", "2d_fg_mlc", "tlc"]),
    st.sampled_from([1, 2, 4]),
    st.floats(0.0, 0.9),
    st.floats(0.05, 1.0),
    st.sampled_from([0.0, 5.0, 50.0]),
    st.floats(0.0, 120.0),
    st.one_of(st.just(1.0), st.floats(0.5, 1.0)),
)


@settings(max_examples=25, deadline=None)
@given(configs)
def test_bytes_conserved_and_curve_monotone(vals):
    d, w = _random_config(vals)
    out = simulate(d, w, 64)
    pre = float(w.prefill_fraction) * float(fluid.capacity_bytes(d))
    host = out.written_bytes
    # host bytes in = bytes held in pSLC + native (minus what was there before)
    held = out.slc_bytes + out.native_bytes - pre
    np.testing.assert_allclose(held, host, rtol=2e-4, atol=1e-6 * float(d.user_bytes))
    np.testing.assert_allclose(out.mode_bytes.sum(axis=1), np.diff(host, prepend=0.0),
                               rtol=1e-4, atol=1e-6 * float(d.user_bytes))
    assert np.all(np.diff(out.time_s) > 0)
    assert np.all(out.slc_bytes >= -1e-6 * float(d.user_bytes))
    # raw NAND never over-committed
    b = float(d.nand.bits_per_cell)
    raw_used = b * out.slc_bytes + out.native_bytes
    assert raw_used.max() <= float(fluid.usable_raw_bytes(d)) * (1 + 1e-5)
    # the pSLC never holds more than its mode allows
    u, mode = float(d.user_bytes), int(d.slc_mode)
    limit = {0: u / b, 1: float(d.static_slc_bytes), 2: u / b, 3: 0.0}[mode]
    assert out.slc_bytes.max() <= limit * (1 + 1e-5) + 1e-5 * u
    if float(w.burst_bytes) == 0:
        # write modes in firmware order within an uninterrupted stream
        ph = [p["name"] for p in phases(out)]
        order = {"pslc": 0, "direct_native": 1, "folding": 2}
        assert ph == sorted(ph, key=order.get)
        # without idle gaps, no pSLC write after the zone is full: total pSLC bytes <= what was free
        pslc = out.mode_bytes[:, 0].sum()
        free_zone = {0: (u - pre) / b, 1: float(d.static_slc_bytes), 2: u / b - pre, 3: 0.0}[mode]
        assert pslc <= free_zone * (1 + 1e-5) + 1e-5 * u
        # and the split between modes does not depend on the step count
        fine = metrics(d, w, 256)
        coarse = metrics(d, w, 64)
        for k in ("pslc_gb", "direct_gb", "folding_gb", "time_s"):
            assert coarse[k] == pytest.approx(fine[k], rel=2e-3, abs=2e-5 * u / 1e9), k


def test_vmap_equals_single_config():
    cols = params.broadcast_columns(params.columns_from_config(presets.drive(), presets.workload()), 6)
    cols["drive.slc_mode"] = np.array(["dynamic", "static", "pure_slc", "pure_native", "dynamic", "static"])
    cols["drive.static_slc_gb"] = np.full(6, 30.0)
    cols["drive.dies_per_channel"] = np.array([4, 4, 2, 1, 2, 4])
    cols["drive.user_capacity_gb"] = np.full(6, 500.0)
    cols["workload.prefill_fraction"] = np.array([0.0, 0.3, 0.5, 0.0, 0.7, 0.1])
    drive, workload = params.build(cols)
    batched = jax.jit(jax.vmap(lambda d, w: fluid.metrics(d, w, 128)))(drive, workload)
    for i in range(6):
        single = metrics(params.index(drive, i), params.index(workload, i), 128)
        for k, v in single.items():
            assert float(batched[k][i]) == pytest.approx(v, rel=1e-6, abs=1e-9), (i, k)


def test_float32_matches_float64(aldrin):
    m32 = metrics(*aldrin, 256)
    with x64():
        d64, w64 = build_one(dtype=np.float64)
        assert d64.user_bytes.dtype == np.float64
        m64 = {k: float(v) for k, v in jax.jit(fluid.metrics, static_argnums=2)(d64, w64, 256).items()}
    for k in m32:
        assert m32[k] == pytest.approx(m64[k], rel=1e-3, abs=1e-6), k


def test_more_dies_raise_native_speed_until_link_caps_pslc():
    m = {dpc: metrics(*build_one(dies_per_channel=dpc, user_capacity_gb=500.0)) for dpc in (1, 2, 4, 8)}
    native = [m[k]["native_mb_s"] for k in (1, 2, 4)]
    assert native[1] == pytest.approx(2 * native[0], rel=1e-4)  # die-bound: linear in dies
    assert native[2] == pytest.approx(2 * native[1], rel=1e-4)
    # pSLC at 8 dies/channel would be 13 GB/s from the dies: capped by the PCIe 4.0 x4 link (~7 GB/s)
    assert m[8]["pslc_mb_s"] == pytest.approx(7010, rel=0.01)
    assert m[8]["pslc_mb_s"] < 2 * m[4]["pslc_mb_s"]


def test_bits_per_cell_set_cache_size_and_fold_cost():
    tlc = metrics(*build_one(nand="tlc"))
    qlc = metrics(*build_one(nand="qlc"))
    assert tlc["cache_gb"] == pytest.approx(2000 / 3, rel=1e-3)
    assert qlc["cache_gb"] == pytest.approx(2000 / 4, rel=1e-3)
    # QLC folds 1/(4-1) byte per host byte instead of 1/2, but its native programming is slower
    assert qlc["folding_mb_s"] < tlc["folding_mb_s"]


def test_idle_gaps_recover_the_cache():
    w_busy = presets.workload("seq_fill", prefill_fraction=0.5, fill_fraction=0.5)
    w_idle = dict(w_busy, burst_gb=50.0, idle_s=120.0)
    busy = metrics(*build_one(workload=w_busy))
    idle = metrics(*build_one(workload=w_idle))
    # without idle time the 333 GB cache runs out before the 500 GB are written; with 2 min of idle
    # after every 50 GB the firmware folds the cache back and every byte goes at pSLC speed
    assert busy["pslc_gb"] == pytest.approx(333.3, rel=1e-3)
    assert idle["pslc_gb"] == pytest.approx(500.0, rel=1e-3)
    assert idle["min_mb_s"] == pytest.approx(idle["pslc_mb_s"], rel=1e-4)


def test_sata_drive_is_link_bound_and_dramless_random_is_slower():
    d = presets.drive("generic_tlc_1tb", interface="sata3")
    seq = metrics(*build_one(d, presets.workload("seq_fill")))
    assert seq["pslc_mb_s"] == pytest.approx(552, rel=0.01)
    rnd = presets.workload("seq_fill", pattern="random", block_kib=4, queue_depth=1)
    dram_less = metrics(*build_one(dict(d, dram=False), rnd))
    with_dram = metrics(*build_one(dict(d, dram=True), rnd))
    assert dram_less["host_mb_s"] < with_dram["host_mb_s"]


@pytest.mark.parametrize("n", [16, 64, 257, 512])
def test_low_percentile_matches_numpy(n):
    x = np.random.default_rng(n).random(n).astype(np.float32) * 1000
    got = float(stats.percentile_low(jax.numpy.asarray(x), 5.0))
    assert got == pytest.approx(float(np.percentile(x, 5.0)), rel=1e-6)


def test_metrics_agree_with_per_step_outputs(aldrin):
    m = metrics(*aldrin, 256)
    out = simulate(*aldrin, 256)
    assert m["p5_mb_s"] == pytest.approx(np.percentile(out.speed, 5) / 1e6, rel=1e-6)
    assert m["min_mb_s"] == pytest.approx(out.speed.min() / 1e6, rel=1e-6)
    assert m["pslc_gb"] == pytest.approx(out.mode_bytes[:, 0].sum() / 1e9, rel=1e-5)
    assert m["time_s"] == pytest.approx(float(out.time_s[-1]), rel=1e-6)


def test_a_full_mode_never_takes_a_step_even_when_steps_are_tiny():
    # 8 GB written into a 1 GB static cache: 1 GB pSLC, 7 GB direct, whatever the step size
    w = presets.workload("seq_fill", fill_fraction=0.004)
    for n_steps in (16, 512, 4096):
        m = metrics(*build_one(workload=w, slc_mode="static", static_slc_gb=1.0), n_steps)
        assert m["pslc_gb"] == pytest.approx(1.0, rel=1e-3), n_steps
        assert m["direct_gb"] == pytest.approx(7.0, rel=1e-3), n_steps
    w = presets.workload("seq_fill", prefill_fraction=0.996)
    m = metrics(*build_one(workload=w), 512)
    assert m["cache_gb"] == pytest.approx(0.004 * 2000 / 3, rel=5e-3)  # float32 on U - 0.996 U


def test_tiny_over_provisioning_is_never_over_committed():
    d = presets.drive("aldrin_pro_2tb")
    usable_gb = 2199.023 * 0.995
    d["user_capacity_gb"] = 0.999 * usable_gb  # 2.2 GB of over-provisioning, less than one step
    direct = []
    with x64():  # an accounting property: checked without float32 rounding, to 1e-9
        for n_steps in (64, 512, 4096):
            drive, wl = build_one(d, dtype=np.float64)
            sim = jax.jit(fluid.simulate, static_argnums=2)
            out = jax.tree_util.tree_map(np.asarray, sim(drive, wl, n_steps))
            raw_used = 3.0 * out.slc_bytes + out.native_bytes
            assert raw_used.max() <= float(fluid.usable_raw_bytes(drive)) * (1 + 1e-9)
            direct.append(out.mode_bytes[:, 1].sum() / 1e9)
    assert direct == pytest.approx([direct[-1]] * 3, rel=1e-2, abs=0.05)
    assert direct[-1] == pytest.approx(0.001 * usable_gb, rel=0.05)


def test_idle_gaps_inside_steps_do_not_depend_on_step_count():
    w = presets.workload("seq_fill", burst_gb=5.0, idle_s=2.0)
    a = metrics(*build_one(workload=w), 512)  # steps of 3.9 GB: some hold a 5 GB boundary
    b = metrics(*build_one(workload=w), 2048)
    for k in ("cache_gb", "pslc_gb", "folding_gb", "time_s"):
        assert a[k] == pytest.approx(b[k], rel=2e-3), k
