"""Published bounds of a fill fit's values and the choice among fitted behaviours
(``ssdx.models.fluid.bounds``, ``ssdx.models.fluid.fit_choice``), on values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ssdx import params, presets
from ssdx.models.fluid import bounds
from ssdx.models.fluid.fit import RuleFit
from ssdx.models.fluid.fit_choice import Candidate, alternative_geometries, choose
from ssdx.models.fluid.phases import visible


def drive(**over):
    d = presets.drive("generic_tlc_1tb", **over)
    built, _ = params.build(params.columns_from_config(d, presets.workload("seq_fill")))
    return params.index(built, 0)


def test_program_times_are_judged_as_per_die_throughput():
    # generic TLC: 4 planes of 16 KiB pages per die: 65,536 B per program of the whole die
    d = drive()
    got = {c.key: c for c in bounds.check(d, {"nand.t_prog_us": 1000.0, "nand.t_prog_slc_us": 50.0})}
    assert got["nand.t_prog_us"].per_die_mb_s == pytest.approx(65536 / 1000.0)  # 65.5 MB/s: inside 40..200
    assert got["nand.t_prog_us"].inside
    assert got["nand.t_prog_slc_us"].per_die_mb_s == pytest.approx(65536 / 50.0)  # 1311 MB/s > 1000
    assert not got["nand.t_prog_slc_us"].inside
    # a 14 ms QLC page program on the same geometry is 4.7 MB/s per die: below the slowest published 10
    q = drive(nand="qlc", die_gbit=1024, dies_per_channel=2)
    (c,) = bounds.check(q, {"nand.t_prog_us": 14000.0})
    assert c.per_die_mb_s == pytest.approx(65536 / 14000.0) and not c.inside
    (line,) = bounds.outside([c])
    assert "nand.t_prog_us = 1.4e+04 us is 4.68 MB/s per die" in line and "10..80" in line and "QLC" in line


def test_the_pslc_bound_starts_at_the_native_lower_bound():
    (lo, hi), _ = bounds.program_bound("pslc", 4)
    assert (lo, hi) == (bounds.NATIVE_MB_S[4][0], bounds.SLC_MAX_MB_S)
    (lo, hi), _ = bounds.program_bound("native", 3)
    assert (lo, hi) == (40.0, 200.0)


def test_structural_bounds_follow_the_raw_nand():
    d = drive()  # 1000 GB user on 16 x 512 Gbit = 1099.5 GB raw, reserve 1 %, TLC
    raw = 16 * 512 * 2**30 / 8 / 1e9
    got = {c.key: c for c in bounds.check(d, {"drive.static_slc_gb": 30.0, "drive.max_dynamic_slc_gb": 400.0,
                                              "drive.reserve_fraction": 0.05})}
    assert got["drive.static_slc_gb"].bound[1] == pytest.approx((raw * 0.99 - 1000.0) / 3)  # 29.5 GB
    assert not got["drive.static_slc_gb"].inside
    assert got["drive.max_dynamic_slc_gb"].bound[1] == pytest.approx(1000.0 / 3)
    assert not got["drive.max_dynamic_slc_gb"].inside
    assert got["drive.reserve_fraction"].bound[1] == pytest.approx(1 - 1000.0 / raw)
    assert got["drive.reserve_fraction"].inside


def test_die_counts_and_geometries_keep_the_raw_nand():
    assert bounds.die_counts(8192.0, 3) == [8, 16, 32, 64]  # 1 TiB raw of TLC dies, 1024..128 Gbit
    assert bounds.die_counts(16384.0, 4) == [8, 16]  # 2 TiB of QLC: 2048 and 1024 Gbit divide it
    cfg = presets.drive("generic_tlc_1tb")  # 4 channels x 4 dies x 512 Gbit
    alts = alternative_geometries(cfg, 3)
    assert sorted(a["channels"] * a["dies_per_channel"] for a in alts) == [8, 32, 64]
    for a in alts:
        assert a["channels"] * a["dies_per_channel"] * a["die_gbit"] == pytest.approx(8192.0)
        assert a["channels"] <= 4


def _cand(label, rule, rmse, physical, n_phases, n_measured=2):
    fit = RuleFit(rule=rule, slc_mode="dynamic", values={}, fixed={}, initial={}, bounds={}, at_bound=[],
                  std_error_pct={}, rmse_mb_s=rmse, initial_rmse_mb_s=rmse, adam_iterations=0,
                  lbfgs_iterations=0, speed_mb_s=np.zeros(1))
    check = bounds.Check("nand.t_prog_us", 1.0, 1.0, (0.0, 2.0), physical, "test")
    phases = [{"name": "x"}] * n_phases
    return Candidate(label, fit, 8, [check], phases, phases, n_measured)


def test_choice_prefers_physical_then_the_curves_phase_count_then_error():
    mean = 1000.0
    exact_unphysical = _cand("static", "static", 1.0, False, 2)
    close_physical = _cand("static_through", "static_through", 30.0, True, 2)  # 3 % of the mean
    chosen, tier, runner = choose([exact_unphysical, close_physical], 0.02, 1.0, mean)
    assert chosen.label == "static_through" and tier == "physical, phases match"
    assert runner.label == "static"
    # a physical fit far worse than acceptable (8 % of the mean) does not win: the best is kept, flagged
    far = _cand("static_through", "static_through", 80.0, True, 2)
    chosen, tier, _ = choose([exact_unphysical, far], 0.02, 1.0, mean)
    assert chosen.label == "static" and tier == "phases match, not physical"
    # among physical fits the curve's phase count wins over a slightly lower error
    extra_phase = _cand("capped", "capped", 10.0, True, 3)
    right_count = _cand("capped_through", "capped_through", 20.0, True, 2)
    chosen, tier, _ = choose([extra_phase, right_count], 0.02, 1.0, mean)
    assert chosen.label == "capped_through" and tier == "physical, phases match"
    # within the tolerance the simplest rule (fewest fitted parameters) is kept
    a, b = _cand("hybrid", "hybrid", 10.0, True, 2), _cand("static", "static", 10.1, True, 2)
    assert choose([a, b], 0.02, 1.0, mean)[0].label == "static"


def test_visible_phases_merge_close_speeds_and_absorb_narrow_regimes():
    regimes = [{"name": "pslc", "start_gb": 0.0, "end_gb": 100.0, "mean_mb_s": 3000.0},
               {"name": "direct_native", "start_gb": 100.0, "end_gb": 105.0, "mean_mb_s": 900.0},  # 0.5 %
               {"name": "fold_through", "start_gb": 105.0, "end_gb": 600.0, "mean_mb_s": 160.0},
               {"name": "folding", "start_gb": 600.0, "end_gb": 1000.0, "mean_mb_s": 150.0}]  # 6 % slower
    got = visible(regimes, 1000.0)
    assert [p["name"] for p in got] == ["pslc", "direct_native+fold_through+folding"]
    # bytes over time of the merged regimes
    t = 5.0 / 900.0 + 495.0 / 160.0 + 400.0 / 150.0
    assert got[1]["mean_mb_s"] == pytest.approx(900.0 / t)
    assert got[1]["start_gb"] == 100.0 and got[1]["end_gb"] == 1000.0


def test_a_pslc_program_as_slow_as_the_native_one_is_not_physical():
    d = drive()
    checks = {c.key: c for c in bounds.check(d, {"nand.t_prog_us": 1000.0, "nand.t_prog_slc_us": 900.0,
                                                 "drive.first_slc_t_prog_us": 300.0})}
    slow = checks["nand.t_prog_slc_us / nand.t_prog_us"]
    assert not slow.inside and slow.value == pytest.approx(0.9)  # both programs inside their own bounds
    assert checks["nand.t_prog_slc_us"].inside and checks["nand.t_prog_us"].inside
    assert checks["drive.first_slc_t_prog_us / nand.t_prog_us"].inside  # 3.3x faster
    assert any("1.5x faster" in line for line in bounds.outside(list(checks.values())))


def test_a_narrow_regime_the_segmentation_resolves_stays_a_phase():
    """A static region of 0.6 % of the fill at 480 MB/s before 400 MB/s: the segmentation of the curve
    gives it a part of the minimum 1 % width (mean 448 MB/s, 12 % above 400, its median 480), so it is
    a phase of its own; at 0.4 % it fills less than half that part and joins its neighbour."""
    from ssdx.models.fluid.phases import segment

    for end, want in ((24.0, 2), (16.0, 1)):
        regimes = [{"name": "pslc", "start_gb": 0.0, "end_gb": end, "mean_mb_s": 480.0},
                   {"name": "direct_native", "start_gb": end, "end_gb": 4000.0, "mean_mb_s": 400.0}]
        assert len(visible(regimes, 4000.0)) == want
        lo = np.arange(0.0, 4000.0, 2.0)
        mb_s = np.where(lo < end, 480.0, 400.0)
        assert len(segment(lo, lo + 2.0, mb_s, 2e3 / mb_s)) == want  # the measured curve's own count
