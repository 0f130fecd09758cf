"""Two cache behaviours of real drives, against curves computed by hand from the NAND's timings:

* a cache with two speeds — its first region (the static region of ``hybrid``, or the first
  ``drive.first_slc_gb`` of a ``dynamic`` cache), written first, programmed at its own page time
  (``drive.first_slc_t_prog_us``), then the rest at the NAND's pSLC time;
* folding while writing (``drive.fold_while_writing``) — past the cache, each host byte is written to
  pSLC and one pSLC byte is folded to native blocks at once: per host byte the die array spends a pSLC
  program plus a fold (read the pSLC page, program it natively at ``η_fold``, erase the ``b`` raw bytes it
  freed), and the channels carry three bytes (the host's, the fold's read and its write).

The drive: 2 dies of YMTC 512 Gbit TLC (``ymtc_cdt1b``: pSLC program 318.76 us, native 971.4 us, pSLC read
40 us, erase 4300 us per block of 576 pages of 16 KiB), 4 planes per die, user capacity 100 GB, reserve
0.5 %; the rates below are written out from those numbers, not taken from the model.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from conftest import build_one, x64

from ssdx import params, presets
from ssdx.models.fluid import fit_model
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid import plots as fill_report
from ssdx.params import ConfigError
from ssdx.units import gbit_die_to_bytes

GB = 1e9
U = 100 * GB
B = 3.0
A = 2 * gbit_die_to_bytes(512) * (1 - 0.005)  # usable raw NAND, bytes
PAGE = 16384.0
PLANES = 2 * 4  # dies x planes per die
BLOCK = 576 * PAGE
T_SLC, T_PROG, T_READ_SLC, T_ERASE = 318.76e-6, 971.4e-6, 40e-6, 4300e-6
ETA = 0.6074  # aldrin_pro_2tb's fold efficiency


def rate(t_page_s: float) -> float:
    """Die-limited rate (bytes/s) of one page program per plane of every die in ``t_page_s``."""
    return PLANES * PAGE / t_page_s


def fold_s_per_byte() -> float:
    """Die-array seconds to fold one pSLC byte: read it, program it natively at η, erase ``b`` raw bytes."""
    return (T_PROG / ETA + T_READ_SLC) / (PLANES * PAGE) + B * T_ERASE / (PLANES * BLOCK)


def small(**over) -> dict:
    return presets.drive("aldrin_pro_2tb", channels=2, dies_per_channel=1, user_capacity_gb=100.0, **over)


def fill(drive: dict, n_steps: int = 250):
    with x64():
        d, w = build_one(drive, presets.workload("seq_fill"), dtype=np.float64)
        out = jax.jit(fluid.simulate, static_argnums=2)(d, w, n_steps)
        return jax.tree_util.tree_map(np.asarray, out), d, w


def test_two_speed_cache_writes_its_static_region_first_at_its_own_speed():
    t_static = 150e-6  # faster than the dynamic region's 318.76 us
    out, d, _ = fill(small(slc_mode="hybrid", static_slc_gb=2.0, max_dynamic_slc_gb=25.0,
                           first_slc_t_prog_us=t_static * 1e6))
    got = fill_report.phases(out, d)
    cache = 27 * GB
    direct_end = cache + (A - B * cache)
    want = [("pslc_static", 0.0, 2 * GB, rate(t_static)), ("pslc", 2 * GB, cache, rate(T_SLC)),
            ("direct_native", cache, direct_end, rate(T_PROG))]
    assert [p["name"] for p in got] == ["pslc_static", "pslc", "direct_native", "folding"]
    for p, (name, lo, hi, v) in zip(got, want):
        assert p["start_gb"] == pytest.approx(lo / GB, abs=1e-9), name
        assert p["end_gb"] == pytest.approx(hi / GB, rel=1e-9), name
        assert p["mean_mb_s"] == pytest.approx(v / 1e6, rel=1e-9), name
    # the whole fill's busy time is each region's bytes over its rate
    f = 1 / (B - 1)
    fold_rate = 1 / ((1 + f) * T_PROG / ETA / (PLANES * PAGE) + f * T_READ_SLC / (PLANES * PAGE)
                     + B * f * T_ERASE / (PLANES * BLOCK))
    t = 2 * GB / rate(t_static) + 25 * GB / rate(T_SLC) + (direct_end - cache) / rate(T_PROG) \
        + (U - direct_end) / fold_rate
    assert float(np.sum(out.mode_time_s)) == pytest.approx(t, rel=1e-9)


def test_dynamic_cache_whose_speed_steps_down_after_its_first_region():
    """A dynamic cache (uncapped: ``U/b`` = 33.3 GB) whose first 10 GB are written at 600 us per page,
    slower than the rest: the speed steps *up* at 10 GB; the cache still ends at ``U/b``."""
    t_first = 600e-6
    out, d, _ = fill(small(slc_mode="dynamic", first_slc_gb=10.0, first_slc_t_prog_us=t_first * 1e6))
    got = fill_report.phases(out, d)
    cache = U / B
    assert [p["name"] for p in got[:3]] == ["pslc_first", "pslc", "direct_native"]
    assert got[0]["end_gb"] == pytest.approx(10.0, rel=1e-9)
    assert got[1]["end_gb"] == pytest.approx(cache / GB, rel=1e-9)
    assert got[0]["mean_mb_s"] == pytest.approx(rate(t_first) / 1e6, rel=1e-9)
    assert got[1]["mean_mb_s"] == pytest.approx(rate(T_SLC) / 1e6, rel=1e-9)
    # a hybrid or static drive's first region is its static one: first_slc_gb is ignored there
    out_h, d_h, _ = fill(small(slc_mode="hybrid", static_slc_gb=2.0, max_dynamic_slc_gb=25.0,
                               first_slc_gb=10.0, first_slc_t_prog_us=t_first * 1e6))
    assert fill_report.phases(out_h, d_h)[0]["end_gb"] == pytest.approx(2.0, rel=1e-9)


def test_static_region_at_the_nand_time_is_one_regime_and_the_same_curve():
    """``first_slc_t_prog_us = 0`` (the default) is the NAND's pSLC time: one ``pslc`` regime and speeds
    bit for bit those of the same time given explicitly (no second regime named)."""
    out0, d0, _ = fill(small(slc_mode="hybrid", static_slc_gb=2.0, max_dynamic_slc_gb=25.0))
    out1, d1, _ = fill(small(slc_mode="hybrid", static_slc_gb=2.0, max_dynamic_slc_gb=25.0,
                             first_slc_t_prog_us=318.76))
    assert [p["name"] for p in fill_report.phases(out0, d0)][:2] == ["pslc", "direct_native"]
    np.testing.assert_array_equal(out0.speed, out1.speed)
    np.testing.assert_array_equal(out0.first_bytes.sum(), 2 * GB)


@pytest.mark.parametrize("mode, static_gb", [("static", 5.0), ("dynamic", 0.0)])
def test_folding_while_writing_runs_past_the_cache_at_a_program_plus_a_fold(mode, static_gb):
    base = small(slc_mode=mode, static_slc_gb=static_gb)
    out_d, d_d, _ = fill(base)
    out_t, d_t, _ = fill({**base, "fold_while_writing": True})
    direct, through = fill_report.phases(out_d, d_d), fill_report.phases(out_t, d_t)
    # the same bytes move (one pSLC byte written, one folded: +1 raw byte, +1 native): same boundaries
    assert [(p["start_gb"], p["end_gb"]) for p in through] == [(p["start_gb"], p["end_gb"]) for p in direct]
    assert direct[1]["name"] == "direct_native" and through[1]["name"] == "fold_through"
    want = 1 / (T_SLC / (PLANES * PAGE) + fold_s_per_byte())
    assert through[1]["mean_mb_s"] == pytest.approx(want / 1e6, rel=1e-9)
    assert direct[1]["mean_mb_s"] == pytest.approx(rate(T_PROG) / 1e6, rel=1e-9)
    np.testing.assert_allclose(out_t.slc_bytes, out_d.slc_bytes, rtol=0, atol=1e-3)
    if mode == "dynamic":  # the folding regime after it is unchanged
        assert through[2]["mean_mb_s"] == pytest.approx(direct[2]["mean_mb_s"], rel=1e-12)


def test_folding_while_writing_through_a_faster_static_region_and_a_narrow_bus():
    """Through pSLC, the static region's program time counts; with a narrow bus the channels carry three
    bytes per host byte (rate = bus / 3)."""
    t_static = 200e-6
    out, d, _ = fill(small(slc_mode="static", static_slc_gb=5.0, first_slc_t_prog_us=t_static * 1e6,
                           fold_while_writing=True))
    p = fill_report.phases(out, d)
    assert [x["name"] for x in p] == ["pslc_static", "fold_through"]
    assert p[0]["mean_mb_s"] == pytest.approx(rate(t_static) / 1e6, rel=1e-9)
    assert p[1]["mean_mb_s"] == pytest.approx(1e-6 / (t_static / (PLANES * PAGE) + fold_s_per_byte()),
                                              rel=1e-9)
    bus = 2 * 20e6 * 0.9  # 2 channels at 20 MT/s, 90 % usable
    out, d, _ = fill(small(slc_mode="static", static_slc_gb=5.0, bus_mts=20, fold_while_writing=True))
    p = fill_report.phases(out, d)
    assert p[1]["name"] == "fold_through" and p[1]["mean_mb_s"] == pytest.approx(bus / 3 / 1e6, rel=1e-9)


def test_fit_speed_is_exact_across_the_static_regions_end():
    """The fit's model speed over an interval that straddles the end of a faster static region is the
    interval's bytes over the hand-computed time, whatever the scan's step."""
    t_static = 150e-6
    drive = small(slc_mode="hybrid", static_slc_gb=2.0, max_dynamic_slc_gb=25.0,
                  first_slc_t_prog_us=t_static * 1e6)
    lo, hi = np.array([1.5, 0.25]), np.array([2.9, 1.0])
    want = []
    for a, b in zip(lo, hi):
        t = (min(b, 2.0) - min(a, 2.0)) * GB / rate(t_static) + (max(b, 2.0) - max(a, 2.0)) * GB / rate(T_SLC)
        want.append((b - a) * GB / t / 1e6)
    with x64():
        d, w = build_one(drive, presets.workload("seq_fill"), dtype=np.float64)
        for n_steps in (7, 64):
            got = np.asarray(fit_model.model_speed(d, w, lo, hi, n_steps))
            np.testing.assert_allclose(got, want, rtol=1e-9)


@pytest.mark.parametrize("over, field", [
    ({"fold_while_writing": "sometimes"}, "drive.fold_while_writing"),
    ({"first_slc_t_prog_us": -5.0}, "drive.first_slc_t_prog_us"),
    ({"paced_folding": 2}, "drive.paced_folding"),
])
def test_bad_values_of_the_new_options_name_the_field(over, field):
    cols = params.columns_from_config(small(**over), presets.workload("seq_fill"))
    with pytest.raises(ConfigError) as e:
        params.build(cols)
    assert field in str(e.value)


def test_older_configs_without_the_options_take_the_defaults():
    d = small()
    d.pop("first_slc_t_prog_us", None)
    d.pop("fold_while_writing", None)
    d.pop("paced_folding", None)
    cols = params.columns_from_config(d, presets.workload("seq_fill"))
    assert cols["drive.first_slc_t_prog_us"][0] == 0.0 and not cols["drive.fold_while_writing"][0]
    assert not cols["drive.paced_folding"][0]


# --------------------------------------------------------------------------------------------------
# Folding paced from the cache's end (``drive.paced_folding``): from the cache's end each host byte is a
# native program plus ``g`` folded pSLC bytes, ``g = (h - r_n)/((b-1)·h)`` from the free host bytes ``h``
# and the native room ``r_n`` there; the raw NAND then runs out exactly as the user capacity fills.

def paced_rate(g: float) -> float:
    """Die-limited host bytes/s past the cache folding ``g`` pSLC bytes per host byte."""
    return 1 / (T_PROG / (PLANES * PAGE) + g * fold_s_per_byte())


@pytest.mark.parametrize("over, cache_gb, static_gb", [
    ({"slc_mode": "dynamic"}, U / B / GB, 0.0),
    ({"slc_mode": "dynamic", "max_dynamic_slc_gb": 25.0}, 25.0, 0.0),
    ({"slc_mode": "hybrid", "static_slc_gb": 2.0, "max_dynamic_slc_gb": 25.0}, 27.0, 2.0),
])
def test_paced_folding_is_one_regime_past_the_cache_ending_as_raw_runs_out(over, cache_gb, static_gb):
    out, d, _ = fill(small(paced_folding=True, **over))
    p = fill_report.phases(out, d)
    assert [x["name"] for x in p] == ["pslc", "direct_native_paced"]
    assert p[0]["end_gb"] == pytest.approx(cache_gb, rel=1e-9)
    s, h = cache_gb * GB, U - cache_gb * GB  # at the cache's end: pSLC data, free host bytes
    room = A - B * s  # native room: usable raw less the pSLC data's (no native data yet)
    g = (h - room) / ((B - 1) * h)
    assert 0 < g < 1
    assert p[1]["mean_mb_s"] == pytest.approx(paced_rate(g) / 1e6, rel=1e-9)
    # full drive: what stays in pSLC is what the over-provisioning holds, the raw NAND is used up
    s_end = (A - U) / (B - 1)
    assert s_end >= static_gb * GB  # the static region is never folded while writing
    assert out.slc_bytes[-1] == pytest.approx(s_end, rel=1e-9)
    assert out.native_bytes[-1] == pytest.approx(U - s_end, rel=1e-9)
    assert out.mode_bytes[:, 2].sum() == pytest.approx(0.0, abs=1e-6 * U)  # no folding regime


def test_paced_folding_with_a_cap_the_over_provisioning_holds_folds_nothing():
    """A cap ``C <= (A - U)/(b-1)`` never needs folding: the paced drive's curve is the unpaced one, bit
    for bit, and its state too."""
    base = small(slc_mode="dynamic", max_dynamic_slc_gb=10.0)
    assert 10.0 * GB <= (A - U) / (B - 1)
    out0, _, _ = fill(base)
    out1, d1, _ = fill({**base, "paced_folding": True})
    np.testing.assert_array_equal(out0.speed, out1.speed)
    np.testing.assert_array_equal(out0.slc_bytes, out1.slc_bytes)
    assert [x["name"] for x in fill_report.phases(out1, d1)] == ["pslc", "direct_native_paced"]


def test_fit_speed_is_exact_across_the_cache_end_under_paced_folding():
    """The fit's model speed over intervals across and past the cache's end of a paced drive is the
    interval's bytes over the hand-computed time, whatever the scan's step."""
    cache = U / B
    h = U - cache
    g = (h - (A - B * cache)) / ((B - 1) * h)
    lo, hi = np.array([30.0, 50.0]), np.array([40.0, 90.0])
    want = []
    for a, b in zip(lo * GB, hi * GB):
        t = (min(b, cache) - min(a, cache)) / rate(T_SLC) + (max(b, cache) - max(a, cache)) / paced_rate(g)
        want.append((b - a) / t / 1e6)
    with x64():
        d, w = build_one(small(slc_mode="dynamic", paced_folding=True), presets.workload("seq_fill"),
                         dtype=np.float64)
        for n_steps in (7, 64):
            got = np.asarray(fit_model.model_speed(d, w, lo, hi, n_steps))
            np.testing.assert_allclose(got, want, rtol=1e-9)
