"""Cache policies real drives ship: a cap on the dynamic pSLC region, the static + dynamic ``hybrid`` mode
and a firmware-chosen idle recovery rate — each against a curve computed by hand from the capacity
accounting (``ssdx.models.fluid.model`` module docstring), in the fluid model, the thermal model and the
request
engine, and the defaults reproducing the single-region model exactly.

The small drive of the fluid checks: 2 dies of 512 Gbit TLC (raw ``R = 2 x 2^39/8`` bytes, ``b = 3``),
reserve 0.5 % (usable raw ``A = 0.995 R = 136.75 GB``), user capacity ``U = 100 GB``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import build_one, x64

from ssdx import api, params, presets
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import replay
from ssdx.models.fluid import model as fluid
from ssdx.models.thermal import coupled
from ssdx.params import ConfigError
from ssdx.units import gbit_die_to_bytes
from ssdx.workloads.traces import WRITE, Chunk

GB = 1e9
U = 100 * GB
B = 3.0  # bits per cell of ymtc_cdt1b
A = 2 * gbit_die_to_bytes(512) * (1 - 0.005)  # usable raw, bytes
F = 1 / (B - 1)  # pSLC bytes folded per host byte


def small(**over) -> dict:
    """The small drive of the module docstring (aldrin's NAND, controller and link)."""
    return presets.drive("aldrin_pro_2tb", channels=2, dies_per_channel=1, user_capacity_gb=100.0, **over)


def run64(drive: dict, workload: dict, n_steps: int):
    """Per-step fluid outputs (float64 NumPy) and the scalar (Drive, Workload) pytrees."""
    with x64():
        d, w = build_one(drive, workload, dtype=np.float64)
        out = jax.jit(fluid.simulate, static_argnums=2)(d, w, n_steps)
        return jax.tree_util.tree_map(np.asarray, out), d, w


def expected_curve(cache: float, direct_end: float, total: float, n_steps: int, rates: fluid.Rates):
    """Host bytes of each mode per step, the step speeds and the pSLC data at each step's end, for a fill
    of ``total`` bytes: pSLC on ``[0, cache)``, direct native on ``[cache, direct_end)``, folding after
    (``f`` bytes of pSLC data folded per host byte)."""
    edges = np.linspace(0.0, total, n_steps + 1)
    bounds = (0.0, cache, min(direct_end, total), total)
    mode = np.stack([np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0.0, None)
                     for lo, hi in zip(bounds[:-1], bounds[1:])], axis=1)
    r = np.array([float(rates.slc), float(rates.native), float(rates.fold)])
    speed = np.diff(edges) / (mode / r).sum(1)
    w = edges[1:]
    slc = np.minimum(w, cache) - F * np.clip(w - bounds[2], 0.0, None)
    return mode, speed, slc


def phases(static_gb: float, cap_gb: float, pre: float) -> tuple[float, float, float]:
    """Cache size, end of direct native writes and the fill's host bytes, from the accounting: the static
    region plus what the firmware lends (``(1-p)U/b``, at most the cap), then native writes until raw use
    ``pU + b·cache + direct`` reaches ``A``."""
    cache = static_gb * GB + min((1 - pre) * U / B, cap_gb * GB if cap_gb > 0 else np.inf)
    return cache, cache + (A - pre * U - B * cache), (1 - pre) * U


# --------------------------------------------------------------------------------------- fluid: fills
# (policy, static GB, cap GB, pre-fill): cache, direct-native end and folding from the accounting
FILLS = [
    # capped dynamic: the cache ends at the cap, direct native takes the raw space not lent, then folding
    ("dynamic", 0.0, 25.0, 0.0),
    # a cap under (A - U)/(b - 1) = 18.4 GB: the drive never folds
    ("dynamic", 0.0, 10.0, 0.0),
    # pre-fill 0.2: (1-p)U/b = 26.7 GB, the 20 GB cap binds
    ("dynamic", 0.0, 20.0, 0.2),
    # pre-fill 0.5: (1-p)U/b = 16.7 GB under the 25 GB cap: the uncapped accounting
    ("dynamic", 0.0, 25.0, 0.5),
    # hybrid: 2 GB static + 25 GB capped dynamic, then direct native, then folding of the dynamic data
    ("hybrid", 2.0, 25.0, 0.0),
    # hybrid at pre-fill 0.7: the dynamic part shrinks to (1-p)U/b = 10 GB, the static part stays
    ("hybrid", 2.0, 25.0, 0.7),
    # uncapped hybrid: 2 + U/b GB of cache
    ("hybrid", 2.0, 0.0, 0.0),
    ("hybrid", 2.0, 0.0, 0.9),
]


@pytest.mark.parametrize("mode, static_gb, cap_gb, pre", FILLS)
def test_fill_curve_follows_the_hand_computed_accounting(mode, static_gb, cap_gb, pre):
    n_steps = 250  # steps of 0.4 (1-p) GB: no phase boundary falls on a step edge
    out, d, w = run64(small(slc_mode=mode, static_slc_gb=static_gb, max_dynamic_slc_gb=cap_gb),
                      presets.workload("seq_fill", prefill_fraction=pre), n_steps)
    cache, direct_end, total = phases(static_gb, cap_gb, pre)
    mode_b, speed, slc = expected_curve(cache, direct_end, total, n_steps, fluid.rates(d, w))
    delta = total / n_steps
    np.testing.assert_allclose(out.mode_bytes, mode_b, rtol=0, atol=1e-6 * delta)
    np.testing.assert_allclose(out.speed, speed, rtol=1e-7)
    np.testing.assert_allclose(out.slc_bytes, slc, rtol=0, atol=1e-6 * delta)
    np.testing.assert_allclose(out.native_bytes, pre * U + out.written_bytes - slc, rtol=1e-9)
    assert out.slc_bytes.min() >= 0
    if mode == "hybrid":  # the static region's data is never folded while the host writes
        assert out.slc_bytes[out.written_bytes >= cache].min() >= static_gb * GB * (1 - 1e-12)
    assert (B * out.slc_bytes + out.native_bytes).max() <= A * (1 + 1e-12)  # raw never over-committed


def test_fill_cases_cover_every_phase_order():
    """The table above is not vacuous: some cases fold, some never do; some caps bind, some do not."""
    folds = [phases(sg, cg, p)[1] < phases(sg, cg, p)[2] for _, sg, cg, p in FILLS]
    binds = [0 < cg * GB < (1 - p) * U / B for _, sg, cg, p in FILLS]
    assert any(folds) and not all(folds) and any(binds) and not all(binds)


def test_cache_size_metric_is_the_cap_or_the_lent_space():
    with x64():
        for pre in (0.0, 0.3, 0.6, 0.9):
            for cap in (5.0, 15.0, 0.0):
                d, w = build_one(small(max_dynamic_slc_gb=cap),
                                 presets.workload("seq_fill", prefill_fraction=pre), dtype=np.float64)
                m = jax.jit(fluid.metrics, static_argnums=2)(d, w, 200)
                want = min((1 - pre) * U / B, cap * GB if cap else np.inf)
                assert float(m["cache_gb"]) * GB == pytest.approx(want, rel=1e-9), (pre, cap)
                d, w = build_one(small(slc_mode="hybrid", static_slc_gb=3.0, max_dynamic_slc_gb=cap),
                                 presets.workload("seq_fill", prefill_fraction=pre), dtype=np.float64)
                m = jax.jit(fluid.metrics, static_argnums=2)(d, w, 200)
                assert float(m["cache_gb"]) * GB == pytest.approx(3 * GB + want, rel=1e-9), (pre, cap)


def test_cap_applies_in_float32_too():
    m = {k: float(v) for k, v in jax.jit(fluid.metrics, static_argnums=2)(
        *build_one(small(max_dynamic_slc_gb=25.0)), 256).items()}
    assert m["cache_gb"] == pytest.approx(25.0, rel=1e-5)
    assert m["direct_gb"] == pytest.approx((A - B * 25 * GB) / GB, rel=1e-5)
    assert m["folding_gb"] == pytest.approx(100 - 25 - (A - B * 25 * GB) / GB, rel=1e-4)


# --------------------------------------------------------------------------------- fluid: idle gaps
def _bursts(out, n_bursts: int) -> tuple[np.ndarray, np.ndarray]:
    """Host bytes in pSLC / direct native per burst, and the idle-folded bytes of each gap."""
    per = out.mode_bytes.reshape(n_bursts, -1, 3).sum(1)
    return per, out.idle_folded_bytes.reshape(n_bursts, -1)


# (policy, static GB, cap GB, idle MB/s, idle s): per burst of 5 GB, pSLC GB and idle-folded GB per gap
IDLE = [
    # capped dynamic, 2 GB recovered per gap (< the pSLC data): 5, 3 -> 8, 6 -> 11 > 10: cap, then 2 per burst
    ("dynamic", 0.0, 10.0, 100.0, 20.0, [5, 5, 4] + [2] * 7, [2] * 10),
    # rate x t = 10 GB > the 5 GB held: everything is recovered, every burst fits
    ("dynamic", 0.0, 10.0, 100.0, 100.0, [5] * 10, [5] * 10),
    # hybrid 2 + 3 GB, 1 GB recovered per gap (from the dynamic region): 1 GB of pSLC per later burst
    ("hybrid", 2.0, 3.0, 50.0, 20.0, [5] + [1] * 9, [1] * 10),
    # 4 GB recovered per gap: the dynamic region and half the static one are folded while idle
    ("hybrid", 2.0, 3.0, 200.0, 20.0, [5] + [4] * 9, [4] * 10),
]


@pytest.mark.parametrize("mode, static_gb, cap_gb, rate, idle_s, pslc_gb, folded_gb", IDLE)
def test_idle_gap_recovers_min_of_held_data_and_rate_times_time(mode, static_gb, cap_gb, rate, idle_s,
                                                                pslc_gb, folded_gb):
    drive = small(slc_mode=mode, static_slc_gb=static_gb, max_dynamic_slc_gb=cap_gb, idle_fold_mb_s=rate)
    wl = presets.workload("seq_fill", fill_fraction=0.5, burst_gb=5.0, idle_s=idle_s)  # 10 bursts of 5 GB
    out, d, w = run64(drive, wl, 100)
    assert float(fluid.rates(d, w).idle_fold) == rate * 1e6  # taken as given
    per, folded = _bursts(out, 10)
    np.testing.assert_allclose(per[:, 0] / GB, pslc_gb, rtol=1e-9)
    np.testing.assert_allclose(per[:, 1] / GB, 5 - np.asarray(pslc_gb, float), atol=1e-9)
    assert (per[:, 2] == 0).all()
    # the gap's recovery lands in the step at the burst boundary, nothing anywhere else
    np.testing.assert_allclose(folded[:, -1] / GB, folded_gb, rtol=1e-9)
    assert (folded[:, :-1] == 0).all()
    held = out.slc_bytes.reshape(10, -1)[:, -1] + folded[:, -1]  # pSLC data before each gap
    np.testing.assert_allclose(folded[:, -1], np.minimum(held, rate * 1e6 * idle_s), rtol=1e-9)


def test_default_idle_rate_is_the_derived_die_and_bus_limit():
    d, w = build_one(small())
    derived = jnp.minimum(d.bus_bytes_per_s / 2.0, 1.0 / fluid.die_time(d).idle_fold)
    assert float(d.idle_fold_bytes_per_s) == 0.0
    assert float(fluid.rates(d, w).idle_fold) == float(derived)
    d2, _ = build_one(small(idle_fold_mb_s=12.5))
    assert float(fluid.rates(d2, w).idle_fold) == pytest.approx(12.5e6, rel=1e-7)


# ------------------------------------------------------------------------------- defaults: exact no-ops
def test_defaults_reproduce_the_single_region_model_bit_for_bit(monkeypatch):
    """With no cap and the derived idle rate, the outputs equal those of the room and rate formulas
    without the new terms (the model before the cache policies), bit for bit."""
    cases = [(presets.drive("aldrin_pro_2tb"), presets.workload("seq_fill")),
             (presets.drive("aldrin_pro_2tb", slc_mode="static", static_slc_gb=50.0),
              presets.workload("seq_fill")),
             (presets.drive("aldrin_pro_2tb", slc_mode="pure_slc"), presets.workload("seq_fill")),
             (presets.drive("aldrin_pro_2tb"), presets.workload("bursty_copy"))]
    trees = [build_one(d, w) for d, w in cases]
    new = [jax.tree_util.tree_map(np.asarray, jax.jit(lambda d, w: fluid.simulate(d, w, 128))(d, w))
           for d, w in trees]
    rates = fluid.rates

    def old_rates(drive, workload):
        die = fluid.die_time(drive)
        return rates(drive, workload)._replace(
            idle_fold=jnp.minimum(drive.bus_bytes_per_s / 2.0, 1.0 / die.idle_fold))

    monkeypatch.setattr(fluid, "rates", old_rates)
    monkeypatch.setattr(fluid, "slc_room",
                        lambda p, s, raw, paced=0.0: p.slc_a - p.slc_cs * s - p.slc_craw * raw)
    for (d, w), got in zip(trees, new):
        ref = jax.tree_util.tree_map(np.asarray, jax.jit(lambda d, w: fluid.simulate(d, w, 128))(d, w))
        for k, v in ref._asdict().items():
            assert np.array_equal(getattr(got, k), v), k
    # and the defaults are what a preset without the new fields gets
    d = presets.drive("aldrin_pro_2tb")
    assert "max_dynamic_slc_gb" not in d and "idle_fold_mb_s" not in d
    cols = params.columns_from_config(d, presets.workload("seq_fill"))
    assert cols["drive.max_dynamic_slc_gb"][0] == 0.0 and cols["drive.idle_fold_mb_s"][0] == 0.0


def test_uncapped_plan_has_an_infinite_cap_term():
    for mode in ("dynamic", "static", "pure_slc", "pure_native", "hybrid"):
        d, w = build_one(small(slc_mode=mode, static_slc_gb=2.0))
        assert np.isinf(float(fluid.plan(d, w, 8).cap_a)), mode
    d, w = build_one(small(slc_mode="static", static_slc_gb=2.0, max_dynamic_slc_gb=5.0))
    assert np.isinf(float(fluid.plan(d, w, 8).cap_a))  # no dynamic region: nothing to cap


# ------------------------------------------------------------------------------ gradients (fitting)
def test_room_is_differentiable_in_the_cap_and_finite_when_uncapped():
    """The fill time's derivative in the cap is the accounting's: one more byte of cache moves a byte from
    folding to pSLC and ``b`` bytes of direct native writes to folding (raw use ``pU + b·C + direct = A``),
    ``d time / dC = 1/r_slc - b/r_native + (b-1)/r_fold`` (positive here: a larger cache slows a full
    fill); zero and finite without a cap."""
    def fill_time(d, w):  # steps of 2 GB: the phase boundaries fall inside steps (differentiable there)
        return fluid.simulate(d, w, 50).time_s[-1]

    grad = jax.jit(jax.grad(fill_time))
    hybrid = {"slc_mode": "hybrid", "static_slc_gb": 2.0, "max_dynamic_slc_gb": 25.0}
    for over, capped in (({"max_dynamic_slc_gb": 25.0}, True), ({}, False), (hybrid, True)):
        d, w = build_one(small(**over))
        g = grad(d, w)
        leaves = jax.tree_util.tree_leaves(g)
        assert all(np.isfinite(np.asarray(x)).all() for x in leaves), over
        r = fluid.rates(d, w)
        want = (1 / r.slc - B / r.native + (B - 1) / r.fold) if capped else 0.0
        assert float(g.max_dynamic_slc_bytes) == pytest.approx(float(want), rel=1e-3, abs=1e-15), over
        assert float(g.nand.t_prog_slc_us) > 0 and float(g.nand.t_prog_us) > 0


# ------------------------------------------------------------------------------------- validation
def _cols(**drive_over):
    return params.columns_from_config(small(**drive_over), presets.workload("seq_fill"))


def test_mode_codes_are_stable_and_hybrid_is_last():
    assert params.SLC_MODES[:4] == ("dynamic", "static", "pure_slc", "pure_native")
    assert params.SLC_MODES.index("hybrid") == fluid.HYBRID == 4
    d, _ = params.build(_cols(slc_mode="hybrid", static_slc_gb=2.0))
    assert float(d.slc_mode[0]) == 4.0


@pytest.mark.parametrize("over, field, rule_part", [
    ({"slc_mode": "hybrid", "static_slc_gb": 0.0}, "drive.static_slc_gb", "hybrid modes need"),
    ({"slc_mode": "hybrid", "static_slc_gb": 2.0, "nand": "slc"}, "drive.slc_mode", "multi-bit"),
    # 100 GB + 3 x 13 GB > 136.75 GB of usable raw
    ({"slc_mode": "hybrid", "static_slc_gb": 13.0}, "drive.user_capacity_gb", "static pSLC size"),
    ({"max_dynamic_slc_gb": -1.0}, "drive.max_dynamic_slc_gb", "0 <= x"),
    ({"idle_fold_mb_s": -5.0}, "drive.idle_fold_mb_s", "0 <= x"),
    ({"idle_fold_mb_s": float("nan")}, "drive.idle_fold_mb_s", "0 <= x"),
])
def test_bad_policy_values_name_field_and_rule(over, field, rule_part):
    with pytest.raises(ConfigError) as e:
        params.build(_cols(**over))
    assert e.value.field == field and rule_part in e.value.rule
    params.build(_cols(slc_mode="hybrid", static_slc_gb=12.0))  # 100 + 36 <= 136.75: fits


# ------------------------------------------------------------------------------------------ thermal
@pytest.mark.parametrize("over, cache_gb", [({"max_dynamic_slc_gb": 50.0}, 50.0),
                                            ({"slc_mode": "hybrid", "static_slc_gb": 6.0,
                                              "max_dynamic_slc_gb": 20.0}, 26.0)])
def test_thermal_run_fills_the_same_cache_as_the_fluid_model(over, cache_gb):
    d = presets.drive("aldrin_pro_2tb", **over)
    trees, _ = api.thermal_one(d, "seq_fill", "bare", duration_s=60.0)
    final, out = jax.jit(coupled.run, static_argnums=4)(*trees, 60)
    assert float(final.slc_bytes) == pytest.approx(cache_gb * GB, rel=1e-6)
    fluid_cache = float(jax.jit(fluid.metrics, static_argnums=2)(trees[0], trees[1], 256)["cache_gb"])
    assert fluid_cache == pytest.approx(cache_gb, rel=1e-5)
    # the speed leaves the pSLC rate in the step in which the cache fills
    slc_rate = float(fluid.rates(trees[0], trees[1]).slc)
    written, speed = np.asarray(out.written_bytes), np.asarray(out.speed)
    first_slow = int(np.argmax(speed < slc_rate * (1 - 1e-4)))
    assert written[first_slow - 1] <= cache_gb * GB < written[first_slow]


# ------------------------------------------------------------------------------------------- engine
ENGINE = {"loop": "open", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
WORK = {"pattern": "sequential", "block_kib": 256, "queue_depth": 32, "prefill_fraction": 0.999,
        "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0}


def _writes(times: np.ndarray) -> Chunk:
    n = len(times)
    return Chunk(time_s=np.asarray(times, float), op=np.full(n, WRITE, np.int8),
                 offset=np.arange(n) * 262144, size=np.full(n, 262144, np.int64), line=np.arange(1, n + 1))


def _replay_both(drive: dict, chunk: Chunk) -> list[dict]:
    cols = params.columns_from_config(drive, WORK) | engine_params.columns(ENGINE)
    with x64():
        trees = engine_params.build(cols, dtype=np.float64)
        return [replay.replay(trees, [chunk], chunk_len=len(chunk), backend=b).metrics
                for b in ("jax", "cpu")]


@pytest.mark.parametrize("over, cache", [
    ({"max_dynamic_slc_gb": 0.1}, 0.1e9),  # the cap binds: (1 - 0.999) x 1000 GB / 3 = 333 MB lendable
    ({"slc_mode": "hybrid", "static_slc_gb": 0.05, "max_dynamic_slc_gb": 0.1}, 0.15e9),
    ({"slc_mode": "hybrid", "static_slc_gb": 0.05}, 0.05e9 + 1e9 / 3),
])
def test_engine_cache_matches_the_fluid_accounting_on_both_backends(over, cache):
    d = presets.drive("generic_tlc_1tb", **over)
    ch = _writes(np.arange(2400) * 1e-4)  # 629 MB back to back: no idle time
    with x64():  # float64: the room is a difference of terabytes
        fl = float(jax.jit(fluid.metrics, static_argnums=2)(*build_one(d, WORK, np.float64), 256)["cache_gb"])
    assert fl * GB == pytest.approx(cache, rel=1e-6)
    for m in _replay_both(d, ch):
        assert m["idle_folded_bytes"][0] == 0
        assert m["pslc_bytes"][0] == pytest.approx(cache, rel=1e-9)
        placed = m["pslc_bytes"][0] + m["native_bytes"][0] + m["folding_bytes"][0]
        assert placed == pytest.approx(2400 * 262144)


def test_engine_idle_recovery_uses_the_configured_rate():
    """A burst fills the capped cache (100 MB), the dies idle ~1000 s at 50 kB/s: 50 MB recovered, which
    the second burst writes in pSLC again."""
    d = presets.drive("generic_tlc_1tb", max_dynamic_slc_gb=0.1, idle_fold_mb_s=0.05)
    t = np.concatenate([np.arange(1200) * 1e-4, 1000.0 + np.arange(1200) * 1e-4])
    for m in _replay_both(d, _writes(t)):
        assert m["idle_folded_bytes"][0] == pytest.approx(0.05e6 * 1000.0, rel=2e-3)
        assert m["pslc_bytes"][0] == pytest.approx(0.1e9 + m["idle_folded_bytes"][0], rel=1e-9)
