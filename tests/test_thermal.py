"""Thermal core: RC network energy balance and bounds, HCTM rules and SMART counters, calibration to the
KIOXIA thermal article and the Aldrin Pro review, gradients of the relaxed model, vmap and float64 agreement.

Compilation is the cost here: every coupled run of the exact model goes through one jitted ``run`` with
1200 or 1800 steps (one compile per step count), and the x64 checks compile once each.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import x64
from hypothesis import given, settings
from hypothesis import strategies as st

from ssdx import api, catalog, params, presets
from ssdx.models.thermal import coupled, hctm, rc
from ssdx.models.thermal import params as thermal_params
from ssdx.models.thermal.params import Thermal
from ssdx.params import ConfigError
from ssdx.units import ZERO_C_IN_K

TMT1, TMT2 = 353.0, 358.0  # KIOXIA thermal article: 80 and 85 deg C, whole Kelvin (Set Features 0x10)
COOLINGS = sorted(catalog.COOLING)


# --------------------------------------------------------------------------------------------- helpers

def _thermal(cooling: str, ambient_k: float = 298.15, dt_s: float = 1.0, tmt1_k: float = 0.0,
             tmt2_k: float = 0.0, dtype=jnp.float32) -> Thermal:
    """A Thermal pytree of scalars straight from the cooling catalog (no column machinery)."""
    c = catalog.cooling(cooling)
    f = {k: getattr(c, k) for k in ("c_ctrl", "c_nand", "c_case", "g_ctrl_nand", "g_ctrl_case", "g_nand_case",
                                     "g_case_amb", "g_ctrl_amb", "g_nand_amb")}
    return Thermal(**{k: jnp.asarray(v, dtype) for k, v in
                      dict(ambient_k=ambient_k, tmt1_k=tmt1_k, tmt2_k=tmt2_k, dt_s=dt_s, **f).items()})


def _np_network(cooling: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Independent float64 NumPy Laplacian L, capacities C and conductances to ambient of a preset."""
    c = catalog.cooling(cooling)
    g = np.zeros((3, 3))
    g[0, 1] = g[1, 0] = c.g_ctrl_nand
    g[0, 2] = g[2, 0] = c.g_ctrl_case
    g[1, 2] = g[2, 1] = c.g_nand_case
    g_amb = np.array([c.g_ctrl_amb, c.g_nand_amb, c.g_case_amb])
    lap = np.diag(g.sum(axis=1) + g_amb) - g
    return lap, np.array([c.c_ctrl, c.c_nand, c.c_case]), g_amb


@jax.jit
def _trajectory(th: Thermal, temps0: jax.Array, powers: jax.Array) -> jax.Array:
    """Node temperatures after each step of ``powers`` (n, 3), exact RC update."""
    net = rc.network(th)

    def body(t, p):
        t = rc.advance(net, th, t, p)
        return t, t

    return jax.lax.scan(body, temps0, powers)[1]


_run = jax.jit(coupled.run, static_argnums=4)


def _trees(drive="sn8e_1920", workload="seq_fill", thermal="bare", power: dict | None = None, **over):
    d = presets.drive(drive) if isinstance(drive, str) else drive
    if power:
        d = {**d, "power": {**d["power"], **power}}
    return api.thermal_one(d, workload, thermal, **over)


def _sim(drive="sn8e_1920", workload="seq_fill", thermal="bare", power: dict | None = None, **over):
    """Exact coupled run of one configuration: (scalar trees, final state, per-step outputs), NumPy."""
    trees, n = _trees(drive, workload, thermal, power, **over)
    final, out = _run(*trees, n)
    return trees, jax.tree_util.tree_map(np.asarray, final), jax.tree_util.tree_map(np.asarray, out)


def _composite_end(out, power) -> np.ndarray:
    w = float(power.sensor_ctrl_weight)
    return w * out.temps_k[:, 0] + (1.0 - w) * out.temps_k[:, 1]


def _max_composite(out, power) -> float:
    return float(max(out.composite_k.max(), _composite_end(out, power).max()))


def _speeds(out) -> tuple[float, float]:
    """(unthrottled, throttled) mean MB/s over the steps that were writing."""
    writing, throttled = out.writing > 0, out.level > 0.5
    speed = out.speed / 1e6
    return float(speed[writing & ~throttled].mean()), float(speed[writing & throttled].mean())


# ------------------------------------------------------------------------------- 1. RC energy balance

@pytest.mark.parametrize("cooling", COOLINGS)
def test_rc_steady_state_is_ambient_plus_r_p_and_balances_energy(cooling):
    lap, _, g_amb = _np_network(cooling)
    p = np.array([2.5, 3.0, 0.4])  # a source on the case too: the balance must hold for any vector
    amb = 301.0
    with x64():
        th = _thermal(cooling, amb, dt_s=1.0, dtype=jnp.float64)
        net = rc.network(th)
        np.testing.assert_allclose(np.asarray(rc.laplacian(th)), lap, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(net.r), np.linalg.inv(lap), rtol=1e-9)
        assert np.all(np.asarray(net.phi) >= 0)  # Metzler generator: non-negative propagator
        temps = _trajectory(th, jnp.full(3, amb), jnp.tile(jnp.asarray(p), (4000, 1)))
        t_end = np.asarray(temps[-1])
    expected = amb + np.linalg.solve(lap, p)
    np.testing.assert_allclose(t_end, expected, rtol=0, atol=1e-8)
    assert np.all(t_end > amb + 1.0)  # not trivially at ambient
    # heat leaving to ambient equals the power in
    assert float(g_amb @ (t_end - amb)) == pytest.approx(p.sum(), rel=1e-9)
    # and the network is not at equilibrium early on (the convergence above is not a one-step artefact)
    assert np.max(np.abs(np.asarray(temps[4]) - expected)) > 0.1


@pytest.mark.parametrize("cooling", COOLINGS)
def test_rc_exact_step_matches_fine_explicit_euler(cooling):
    lap, cap, _ = _np_network(cooling)
    amb, dt, h = 295.0, 2.0, 1e-4
    rng = np.random.default_rng(7)
    powers = rng.uniform(0.0, 6.0, size=(8, 3)) * np.array([1.0, 1.0, 0.0])
    t0 = amb + np.array([12.0, 3.0, 6.0])  # off equilibrium, controller hottest
    with x64():
        exact = np.asarray(_trajectory(_thermal(cooling, amb, dt_s=dt, dtype=jnp.float64), jnp.asarray(t0),
                                       jnp.asarray(powers)))
    t = t0.copy()
    euler = []
    for p in powers:
        for _ in range(int(round(dt / h))):
            t = t + h * (p - lap @ (t - amb)) / cap
        euler.append(t.copy())
    np.testing.assert_allclose(exact, np.array(euler), rtol=0, atol=2e-3)
    assert np.max(np.abs(exact[-1] - t0)) > 1.0  # the step moved the temperatures


# ------------------------------------------------------------------------------------ 2. bounds

@settings(max_examples=40, deadline=None)
@given(
    cooling=st.sampled_from(COOLINGS),
    ambient_c=st.floats(-40.0, 85.0),
    dt_s=st.floats(0.05, 60.0),
    p_max=st.tuples(st.floats(0.0, 12.0), st.floats(0.0, 12.0), st.floats(0.0, 2.0)),
    start=st.tuples(*[st.floats(0.0, 1.0)] * 3),
    fractions=st.lists(st.tuples(*[st.floats(0.0, 1.0)] * 3), min_size=48, max_size=48),
)
def test_rc_temperatures_between_ambient_and_max_power_equilibrium(cooling, ambient_c, dt_s, p_max, start,
                                                                   fractions):
    lap, _, _ = _np_network(cooling)
    r = np.linalg.inv(lap)
    assert np.all(r > 0)
    amb = ambient_c + ZERO_C_IN_K
    pmax = np.asarray(p_max)
    t_hi = amb + r @ pmax
    t0 = amb + r @ (np.asarray(start) * pmax)  # an equilibrium at some power in the box
    with x64():
        temps = np.asarray(_trajectory(_thermal(cooling, amb, dt_s=dt_s, dtype=jnp.float64), jnp.asarray(t0),
                                       jnp.asarray(np.asarray(fractions) * pmax)))
    assert np.all(temps >= amb - 1e-9)
    assert np.all(temps <= t_hi + 1e-9)


def _unthrottled_max_power(trees) -> np.ndarray:
    """Upper bound of the node powers (controller, NAND, case) at full, unthrottled write rate, W."""
    d, w, p, th = trees
    su = coupled.setup(d, w, p, th)
    rates = [float(x) for x in (su.plan.rates.slc, su.plan.rates.native, su.plan.rates.fold)]
    ctrl = float(p.idle_w) + float(p.ctrl_w) + float(p.host_j_per_byte) * max(rates)
    nand = max(float(e) * x for e, x in zip(su.energy.nand, rates))
    return np.array([ctrl, nand, 0.0])


@pytest.fixture(scope="module")
def sn8e_bare():
    return _sim("sn8e_1920", thermal="bare", tmt1_k=TMT1, tmt2_k=TMT2, duration_s=1200.0)


@pytest.fixture(scope="module")
def sn8e_heatsink():
    return _sim("sn8e_1920", thermal="heatsink", tmt1_k=TMT1, tmt2_k=TMT2, duration_s=1200.0)


@pytest.fixture(scope="module")
def aldrin_runs():
    """Whole-drive fill of aldrin_pro_2tb, no TMTs, 1800 s: {(cooling, slc_mode): sim}."""
    return {(cool, mode): _sim(presets.drive("aldrin_pro_2tb", slc_mode=mode), thermal=cool,
                               duration_s=1800.0)
            for cool in ("bare", "heatsink") for mode in ("dynamic", "pure_native")}


def test_coupled_temperatures_within_ambient_and_unthrottled_equilibrium(sn8e_bare, sn8e_heatsink,
                                                                         aldrin_runs):
    for trees, _, out in (sn8e_bare, sn8e_heatsink, *aldrin_runs.values()):
        _, _, p, th = trees
        lap, _, _ = _np_network(_cooling_of(th))
        amb = float(th.ambient_k)
        t_hi = amb + np.linalg.solve(lap, _unthrottled_max_power(trees))
        assert np.all(out.temps_k >= amb - 1e-3)
        assert np.all(out.temps_k <= t_hi + 1e-3), (out.temps_k.max(axis=0), t_hi)
        comp = _composite_end(out, p)
        w = float(p.sensor_ctrl_weight)
        assert comp.max() <= w * t_hi[0] + (1 - w) * t_hi[1] + 1e-3
        # the composite HCTM samples at the start of a step is the one at the end of the previous step
        np.testing.assert_allclose(out.composite_k[1:], comp[:-1], rtol=0, atol=1e-4)
        # and the run starts from the idle equilibrium
        r = np.linalg.inv(lap)
        t_idle = amb + r @ np.array([float(p.idle_w), 0.0, 0.0])
        assert out.composite_k[0] == pytest.approx(w * t_idle[0] + (1 - w) * t_idle[1], abs=1e-3)


def _cooling_of(th: Thermal) -> str:
    """Name of the catalog preset a Thermal was built from (by its conductances)."""
    for name, c in catalog.COOLING.items():
        if np.isclose(float(th.g_case_amb), c.g_case_amb) and np.isclose(float(th.c_case), c.c_case) \
                and np.isclose(float(th.g_ctrl_amb), c.g_ctrl_amb):
            return name
    raise AssertionError("unknown cooling")


# -------------------------------------------------------------------------------------- 3. SMART

def _brute_smart(out, power, dt: float) -> dict[str, int]:
    """The Health log's thermal fields counted on the per-step trace."""
    lv = np.rint(out.level).astype(int)
    assert np.all(np.abs(out.level - lv) == 0)  # exact model: integer levels
    prev = np.concatenate([[0], lv[:-1]])
    t = out.composite_k
    wc, cc = np.float32(power.wctemp_k), np.float32(power.cctemp_k)
    return {
        "tmt1_transitions": int(np.sum((prev == 0) & (lv == 1))),
        "tmt2_transitions": int(np.sum((prev != 2) & (lv == 2))),
        "time_tmt1_s": int(np.floor(np.sum(lv == 1) * dt)),
        "time_tmt2_s": int(np.floor(np.sum(lv == 2) * dt)),
        "warning_temp_time_min": int(np.floor(np.sum((t >= wc) & (t < cc)) * dt / 60.0)),
        "critical_temp_time_min": int(np.floor(np.sum(t >= cc) * dt / 60.0)),
    }


SMART_CASES = [
    # light -> heavy -> light cycles, WCTT
    dict(tmt1_k=338.0, tmt2_k=345.0, ambient_c=35.0, dt_s=1.0, duration_s=1200.0),
    # coarser step (seconds != steps), the fill ends and the drive cools back to normal
    dict(tmt1_k=338.0, tmt2_k=345.0, ambient_c=35.0, dt_s=2.0, duration_s=2400.0),
    # heavy only: normal -> heavy -> normal
    dict(tmt1_k=0.0, tmt2_k=345.0, ambient_c=35.0, dt_s=2.0, duration_s=2400.0),
    # no throttling: composite above CCTEMP for minutes
    dict(tmt1_k=0.0, tmt2_k=0.0, ambient_c=45.0, dt_s=1.0, duration_s=1200.0),
]


def test_smart_counters_equal_brute_force_count_on_the_trace(sn8e_bare):
    seen = {k: 0 for k in _brute_smart(sn8e_bare[2], sn8e_bare[0][2], 1.0)}
    moves = set()
    for case in SMART_CASES:
        trees, final, out = _sim("sn8e_1920", power={"wctemp_k": 343.15, "cctemp_k": 348.15}, **case)
        log = hctm.smart_log(final.smart)
        brute = _brute_smart(out, trees[2], case["dt_s"])
        assert log == brute, case
        # before flooring to minutes: WCTT/CCTT seconds on the composite HCTM sampled (start of step)
        t, dt = out.composite_k, case["dt_s"]
        wc, cc = np.float32(trees[2].wctemp_k), np.float32(trees[2].cctemp_k)
        assert float(final.smart.warning_s) == pytest.approx(np.sum((t >= wc) & (t < cc)) * dt, abs=1e-3)
        assert float(final.smart.critical_s) == pytest.approx(np.sum(t >= cc) * dt, abs=1e-3)
        for k, v in brute.items():
            seen[k] += v
        lv = np.rint(out.level).astype(int)
        moves |= set(zip(np.concatenate([[0], lv[:-1]]).tolist(), lv.tolist()))
    trees, final, out = sn8e_bare
    assert hctm.smart_log(final.smart) == _brute_smart(out, trees[2], 1.0)
    # the cases exercise every counter and every move of the state machine
    assert all(v > 0 for v in seen.values()), seen
    assert {(0, 1), (1, 2), (2, 1), (1, 0), (0, 2), (2, 0)} <= moves, moves


@pytest.mark.parametrize("dt_s", [0.1, 0.3, 0.7])
def test_smart_seconds_exact_with_a_fractional_time_step(dt_s):
    """1200 steps all in the light state and above WCTEMP: TTTMT1 = 1200·dt s, WCTT = floor(1200·dt/60) min.

    Adding ``dt`` in float32 every step would drift below the whole number (120 s -> 119.9987 s ->
    reported 119; 2 min -> 1); ``hctm.Smart`` counts steps and scales once.
    """
    case = dict(tmt1_k=290.0, tmt2_k=0.0, dt_s=dt_s, duration_s=1200 * dt_s)
    trees, final, out = _sim("sn8e_1920", power={"wctemp_k": 290.0, "cctemp_k": 400.0}, **case)
    assert np.all(out.level == 1) and np.all(out.composite_k >= 290.0)
    seconds = int(round(1200 * dt_s))
    assert _brute_smart(out, trees[2], dt_s)["time_tmt1_s"] == seconds
    log = hctm.smart_log(final.smart)
    assert log["time_tmt1_s"] == seconds
    assert log["warning_temp_time_min"] == seconds // 60


def test_smart_log_floors_and_saturates():
    def sm(dt_s=1.0, **kw):
        base = dict(tmt1_transitions=0.0, tmt2_transitions=0.0, tmt1_steps=0.0, tmt2_steps=0.0,
                    warning_steps=0.0, critical_steps=0.0)
        return hctm.Smart(**{k: np.float64(v) for k, v in {**base, **kw}.items()}, dt_s=np.float64(dt_s))

    log = hctm.smart_log(sm(tmt1_transitions=3.0, tmt1_steps=59.9, warning_steps=119.9, critical_steps=120.0))
    assert log == {"tmt1_transitions": 3, "tmt2_transitions": 0, "time_tmt1_s": 59, "time_tmt2_s": 0,
                   "warning_temp_time_min": 1, "critical_temp_time_min": 2}
    big = hctm.smart_log(sm(tmt1_transitions=1e12, tmt2_transitions=float(0xFFFFFFFF), tmt1_steps=5e9,
                            tmt2_steps=float(0xFFFFFFFE), warning_steps=60.0 * 2.0**33, critical_steps=1e300))
    assert big == {"tmt1_transitions": 0xFFFFFFFF, "tmt2_transitions": 0xFFFFFFFF, "time_tmt1_s": 0xFFFFFFFF,
                   "time_tmt2_s": 0xFFFFFFFE, "warning_temp_time_min": 0xFFFFFFFF,
                   "critical_temp_time_min": 0xFFFFFFFF}
    # steps are scaled by dt exactly: 1200 x float32(0.7) s is 840 s (not 839.99998), 119 x 0.5 s is 59 s
    f32 = hctm.Smart(*[np.float32(x) for x in (0.0, 0.0, 1200.0, 119.0, 0.0, 0.0)], dt_s=np.float32(0.7))
    assert np.float32(0.7) * np.float64(1200) < 840.0
    assert hctm.smart_log(f32)["time_tmt1_s"] == 840
    assert hctm.smart_log(f32._replace(dt_s=np.float32(0.5)))["time_tmt2_s"] == 59
    # float32 accumulators (what the scan carries) saturate too
    f32 = hctm.Smart(*[np.float32(x) for x in (4.3e9, 1.0, 2.0**32, 0.0, 0.0, 2.6e11)], dt_s=np.float32(1.0))
    assert hctm.smart_log(f32)["tmt1_transitions"] == hctm.U32_MAX == 0xFFFFFFFF
    assert hctm.smart_log(f32)["time_tmt1_s"] == 0xFFFFFFFF
    assert hctm.smart_log(f32)["critical_temp_time_min"] == 0xFFFFFFFF


# --------------------------------------------------------------------------------- 4. HCTM rules

def _update(level: int, temp: float, tmt1: float, tmt2: float, hyst: float) -> int:
    """One exact HCTM update from a level (0 normal, 1 light, 2 heavy); returns the new level."""
    th = _thermal("bare", tmt1_k=tmt1, tmt2_k=tmt2)
    m1, m2 = jnp.float32(level >= 1), jnp.float32(level == 2)
    n1, n2 = hctm.update(m1, m2, jnp.float32(temp), th, jnp.float32(hyst))
    n1, n2 = float(n1), float(n2)
    assert n1 in (0.0, 1.0) and n2 in (0.0, 1.0) and n1 >= n2
    return int(n1 + n2)


H = 5.0
T1, T2 = 350.0, 360.0
HCTM_TABLE = [
    # (level, temp, tmt1, tmt2, expected)
    (0, T1 - 0.25, T1, T2, 0),
    (0, T1, T1, T2, 1),  # enter light at >= TMT1
    (0, T2 - 0.25, T1, T2, 1),
    (0, T2, T1, T2, 2),  # enter heavy at >= TMT2 (straight from normal)
    (1, T1 - H, T1, T2, 1),  # stay light down to TMT1 - h inclusive
    (1, T1 - H - 0.25, T1, T2, 0),  # leave only below TMT1 - h
    (1, T2 - 1.0, T1, T2, 1),  # light does not become heavy below TMT2
    (1, T2, T1, T2, 2),
    (2, T2 - H, T1, T2, 2),  # stay heavy down to TMT2 - h
    (2, T2 - H - 0.25, T1, T2, 1),  # heavy -> light between TMT1 - h and TMT2 - h
    (2, T1 - H, T1, T2, 1),
    (2, T1 - H - 0.25, T1, T2, 0),  # heavy -> normal below TMT1 - h
    (0, 400.0, 0.0, T2, 2),  # TMT1 = 0: heavy only
    (0, T2 - 0.25, 0.0, T2, 0),
    (2, T2 - H - 0.25, 0.0, T2, 0),  # TMT1 = 0: leaving heavy goes to normal
    (0, 400.0, T1, 0.0, 1),  # TMT2 = 0: light only, however hot
    (1, 400.0, T1, 0.0, 1),
    (2, 400.0, T1, 0.0, 1),
    (0, 400.0, 0.0, 0.0, 0),  # both 0: never throttles
    (1, 400.0, 0.0, 0.0, 0),
    (2, 400.0, 0.0, 0.0, 0),
]


@pytest.mark.parametrize("level,temp,tmt1,tmt2,expected", HCTM_TABLE)
def test_hctm_exact_rules(level, temp, tmt1, tmt2, expected):
    assert _update(level, temp, tmt1, tmt2, H) == expected


def test_hctm_thresholds_at_real_tmts_in_float32():
    # thresholds in Kelvin with .15 (the relaxed optimiser moves them freely): the comparison uses the same
    # float32 value on both sides
    tmt1, tmt2 = 353.15, 358.15
    t1 = float(np.float32(tmt1))
    assert _update(0, t1, tmt1, tmt2, H) == 1
    assert _update(0, float(np.nextafter(np.float32(tmt1), np.float32(0))), tmt1, tmt2, H) == 0


def _reference_level(level: int, t: float, tmt1: float, tmt2: float, h: float) -> int:
    if tmt2 and t >= tmt2:
        return 2
    if level == 2 and tmt2 and t >= tmt2 - h:
        return 2
    if tmt1 and t >= tmt1:
        return 1
    if level >= 1 and tmt1 and t >= tmt1 - h:
        return 1
    return 0


@jax.jit
def _levels(temps, tmt1, tmt2, h):
    th = _thermal("bare", tmt1_k=tmt1, tmt2_k=tmt2)

    def body(carry, t):
        m = hctm.update(*carry, t, th, h)
        return m, m[0] + m[1]

    z = jnp.zeros((), jnp.float32)
    return jax.lax.scan(body, (z, z), temps)[1]


@settings(max_examples=60, deadline=None)
@given(
    tmts=st.sampled_from([(340.0, 345.0), (340.0, 350.0), (0.0, 345.0), (340.0, 0.0), (0.0, 0.0)]),
    h=st.sampled_from([0.0, 2.0, 5.0, 12.0]),
    steps=st.lists(st.integers(-8, 8), min_size=64, max_size=64),
)
def test_hctm_update_follows_reference_state_machine(tmts, h, steps):
    temps = 342.0 + 0.5 * np.cumsum(steps)  # a random walk across the thresholds, on an exact grid
    got = np.asarray(_levels(jnp.asarray(temps, jnp.float32), jnp.float32(tmts[0]), jnp.float32(tmts[1]),
                             jnp.float32(h)))
    level, want = 0, []
    for t in temps:
        level = _reference_level(level, t, tmts[0], tmts[1], h)
        want.append(level)
    np.testing.assert_array_equal(got, np.array(want, dtype=float))


def test_hctm_relaxed_update_tends_to_exact():
    th = _thermal("bare", tmt1_k=T1, tmt2_k=T2)
    for level in (0, 1, 2):
        for t in (T1 - H - 1.0, T1 - 1.0, T1 + 1.0, T2 - H - 1.0, T2 + 1.0):
            m = (jnp.float32(level >= 1), jnp.float32(level == 2))
            exact = hctm.update(*m, jnp.float32(t), th, jnp.float32(H))
            relaxed = hctm.update(*m, jnp.float32(t), th, jnp.float32(H), jnp.float32(0.02))
            np.testing.assert_allclose(np.asarray(relaxed), np.asarray(exact), atol=1e-6)
            soft = hctm.update(*m, jnp.float32(t), th, jnp.float32(H), jnp.float32(2.0))
            assert all(0.0 < float(x) < 1.0 for x in soft)  # truly relaxed at a wide width


def _power(policy: str):
    (_, _, p, _), _ = _trees(power={"policy": policy, "light_rate_fraction": 0.9, "light_ctrl_fraction": 0.6,
                                    "light_power_cap_w": 4.0, "heavy_rate_fraction": 0.2,
                                    "heavy_ctrl_fraction": 0.3, "heavy_power_cap_w": 3.0})
    return p


@pytest.mark.parametrize("policy,light", [("ssd_a", (0.2, 0.3, 3.0)), ("ssd_b", (0.9, 0.6, 4.0))])
def test_policy_actions(policy, light):
    normal, lt, hv = hctm.actions(_power(policy))
    np.testing.assert_allclose([float(x) for x in normal], [1.0, 1.0, 0.0])
    np.testing.assert_allclose([float(x) for x in lt], light, rtol=1e-6)
    np.testing.assert_allclose([float(x) for x in hv], (0.2, 0.3, 3.0), rtol=1e-6)


def _cols(**thermal):
    return api.thermal_columns(presets.drive("sn8e_1920"), presets.workload("seq_fill"),
                               api.thermal_preset("bare", **thermal))


@pytest.mark.parametrize("tmt1,tmt2", [(TMT1, TMT1), (TMT2, TMT1), (350.0, 340.0)])
def test_validate_tmt2_must_exceed_tmt1(tmt1, tmt2):
    with pytest.raises(ConfigError) as e:
        thermal_params.validate(_cols(tmt1_k=tmt1, tmt2_k=tmt2))
    assert e.value.field == "thermal.tmt2_k"
    assert "thermal.tmt2_k" in str(e.value)


@pytest.mark.parametrize("field,value", [("tmt1_k", 373.16), ("tmt1_k", 250.0), ("tmt2_k", 400.0),
                                         ("tmt2_k", 273.0), ("tmt1_k", -1.0)])
def test_validate_tmt_outside_mntmt_mxtmt(field, value):
    with pytest.raises(ConfigError) as e:
        thermal_params.validate(_cols(**{field: value}))
    assert e.value.field == f"thermal.{field}"


@pytest.mark.parametrize("tmt1,tmt2", [(0.0, 0.0), (0.0, TMT2), (TMT1, 0.0), (TMT1, TMT2), (274.0, 373.0),
                                       (274.0, 275.0)])
def test_validate_accepts_zero_and_bounds(tmt1, tmt2):
    cols = _cols(tmt1_k=tmt1, tmt2_k=tmt2)
    thermal_params.validate(cols)
    _, th = thermal_params.build(cols)
    assert float(th.tmt1_k[0]) == pytest.approx(tmt1) and float(th.tmt2_k[0]) == pytest.approx(tmt2)


@pytest.mark.parametrize("field,value", [("tmt1_k", 343.5), ("tmt2_k", 358.25), ("tmt1_k", 273.5)])
def test_validate_refuses_a_fractional_tmt(field, value):
    """Set Features 0x10 carries whole Kelvin: 343.5 K would be simulated but sent as 344 K."""
    other = {"tmt1_k": 0.0} if field == "tmt2_k" else {"tmt2_k": 0.0}
    with pytest.raises(ConfigError) as e:
        thermal_params.validate(_cols(**{field: value}, **other))
    assert (e.value.field, e.value.value) == (f"thermal.{field}", value)
    assert e.value.rule == thermal_params.TMT_WHOLE_RULE and "whole Kelvin" in str(e.value)
    cols = params.broadcast_columns(_cols(), 3)
    cols["thermal.tmt1_k"] = np.array([TMT1, 343.5, 0.0])
    report: list = []
    thermal_params.validate(cols, report)
    bad = {(k, tuple(ok.tolist())) for k, rule, ok in report if rule == thermal_params.TMT_WHOLE_RULE}
    assert bad == {("thermal.tmt1_k", (True, False, True)), ("thermal.tmt2_k", (True, True, True))}


def test_validate_report_collects_tmt_breaches():
    cols = params.broadcast_columns(_cols(), 3)
    cols["thermal.tmt1_k"] = np.array([TMT1, 0.0, 380.0])
    cols["thermal.tmt2_k"] = np.array([TMT1, 300.0, 0.0])
    report: list = []
    thermal_params.validate(cols, report)
    bad = {(k, tuple(ok.tolist())) for k, _, ok in report if not np.all(ok)}
    assert ("thermal.tmt2_k", (False, True, True)) in bad  # TMT2 <= TMT1 in row 0 only
    assert ("thermal.tmt1_k", (True, True, False)) in bad  # 380 K above MXTMT


# ------------------------------------------------------------------------------- 5. calibration

def test_sn8e_bare_throttles_between_80_and_75_c(sn8e_bare):
    (_, _, p, _), final, out = sn8e_bare
    log = hctm.smart_log(final.smart)
    assert _max_composite(out, p) >= TMT1 - 0.1
    assert log["tmt1_transitions"] >= 2  # it cycles
    unthrottled, throttled = _speeds(out)
    assert 50.0 <= unthrottled - throttled <= 150.0, (unthrottled, throttled)
    onset = int(np.argmax(out.level > 0.5))
    assert onset > 0
    writing = out.writing[onset:] > 0  # after the fill ends the idle drive cools to near ambient
    low = float(out.composite_k[onset:][writing].min()) - ZERO_C_IN_K
    assert 74.0 <= low <= 76.0, low
    # every exit from throttling happens near 75 deg C
    lv = out.level
    exits = np.flatnonzero((lv[:-1] > 0.5) & (lv[1:] < 0.5)) + 1
    assert len(exits) >= 2
    np.testing.assert_allclose(out.composite_k[exits] - ZERO_C_IN_K, 75.0, atol=0.5)
    assert log["tmt2_transitions"] == 0 and log["time_tmt2_s"] == 0
    assert _max_composite(out, p) < TMT2


def test_sn8e_heatsink_never_throttles_and_cools_nand_by_10k(sn8e_bare, sn8e_heatsink):
    (_, _, p, _), final, out = sn8e_heatsink
    assert _max_composite(out, p) < TMT1
    log = hctm.smart_log(final.smart)
    assert log["time_tmt1_s"] == log["time_tmt2_s"] == log["tmt1_transitions"] == 0
    assert np.all(out.level == 0)
    assert out.temps_k[:, 1].max() <= sn8e_bare[2].temps_k[:, 1].max() - 10.0
    # same load: the heatsink run writes no less
    assert final.written_bytes >= sn8e_bare[1].written_bytes


def test_ssd_a_preset_throttles_to_a_tenth():
    _, final, out = _sim("sn8e_1920", power={"policy": "ssd_a", "heavy_rate_fraction": 0.1}, tmt1_k=TMT1,
                         tmt2_k=TMT2, duration_s=1200.0)
    unthrottled, throttled = _speeds(out)
    assert throttled / unthrottled == pytest.approx(0.1, rel=0.2)
    assert hctm.smart_log(final.smart)["tmt1_transitions"] >= 1
    assert np.all(out.level < 1.5)  # ssd_a acts strongly in the light state; TMT2 is never reached


def test_ssd_b_light_state_keeps_light_rate(sn8e_bare):
    (_, _, p, _), _, out = sn8e_bare
    unthrottled, throttled = _speeds(out)
    assert throttled / unthrottled == pytest.approx(float(p.light_rate), rel=1e-3)


def test_aldrin_power_per_phase(aldrin_runs):
    _, _, dyn = aldrin_runs["bare", "dynamic"]
    _, _, nat = aldrin_runs["bare", "pure_native"]
    assert dyn.speed[:50].min() / 1e6 == pytest.approx(6579.0, rel=0.05)  # the first 50 s are pSLC
    assert nat.speed[:50].min() / 1e6 == pytest.approx(2159.0, rel=0.05)
    p_slc, p_nat = float(dyn.power_w[:50].mean()), float(nat.power_w[:50].mean())
    assert p_slc == pytest.approx(7.3, rel=0.03)
    assert p_nat == pytest.approx(5.0, rel=0.03)
    eff_slc = float(dyn.speed[:50].mean()) / 1e6 / p_slc
    eff_nat = float(nat.speed[:50].mean()) / 1e6 / p_nat
    assert eff_nat < 0.6 * eff_slc  # MB/s per W falls by more than 40 % without pSLC


def _t95(out) -> float:
    c = out.composite_k
    rise = c - c[0]
    return float(out.time_s[np.argmax(rise >= 0.95 * rise.max())])


@pytest.mark.parametrize("cooling", ["bare", "heatsink"])
def test_aldrin_same_max_temperature_reached_sooner_with_pslc(aldrin_runs, cooling):
    (_, _, p, _), fd, dyn = aldrin_runs[cooling, "dynamic"]
    _, fn, nat = aldrin_runs[cooling, "pure_native"]
    for f, o in ((fd, dyn), (fn, nat)):  # whole-drive fill, finished inside the window
        assert float(f.written_bytes) == pytest.approx(2000e9, rel=1e-4)
        assert o.writing[-1] == 0
        assert hctm.smart_log(f.smart)["time_tmt1_s"] == 0
    assert abs(_max_composite(dyn, p) - _max_composite(nat, p)) <= 3.0
    assert _max_composite(dyn, p) - float(dyn.composite_k[0]) > 10.0  # a real rise
    assert _t95(dyn) < 0.5 * _t95(nat), (_t95(dyn), _t95(nat))


# ---------------------------------------------------------------------------- 6. relaxed gradient

GRAD_STEPS = 600


@pytest.fixture(scope="module")
def relaxed():
    """x64 trees of sn8e bare (TMT1 80 C) and a jitted (values, d values/d tmt1) of the relaxed model."""
    with x64():
        trees, _ = _trees(tmt1_k=TMT1, tmt2_k=TMT2, duration_s=float(GRAD_STEPS), dtype=np.float64)
    d, w, p, th = trees

    def f(tmt1, s):
        final, out = coupled.run(d, w, p, dataclasses.replace(th, tmt1_k=tmt1), GRAD_STEPS, sharpness=s)
        v = jnp.stack([final.written_bytes / 1e9, jnp.mean(out.composite_k), jnp.max(out.composite_k)])
        return v, v

    return jax.jit(jax.jacrev(f, has_aux=True))


@pytest.mark.parametrize("sharpness", [1.0, 0.5])
def test_relaxed_gradient_matches_central_differences(relaxed, sharpness):
    eps = 1e-3
    with x64():
        x, s = jnp.asarray(TMT1, jnp.float64), jnp.asarray(sharpness, jnp.float64)
        grad, val = (np.asarray(a) for a in relaxed(x, s))
        up, down = (np.asarray(relaxed(x + sign * eps, s)[1]) for sign in (1.0, -1.0))
    assert val.dtype == np.float64
    fd = (up - down) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-3)
    # physics: a higher TMT1 throttles later, so more is written and the drive runs hotter
    assert grad[0] > 0.1 and grad[1] > 0.01


def test_relaxed_model_with_small_width_is_close_to_exact(relaxed, sn8e_bare):
    with x64():
        val = np.asarray(relaxed(jnp.asarray(TMT1, jnp.float64), jnp.asarray(0.02, jnp.float64))[1])
    exact = float(sn8e_bare[2].written_bytes[GRAD_STEPS - 1]) / 1e9
    assert float(val[0]) == pytest.approx(exact, rel=0.01)
    assert float(val[2]) == pytest.approx(float(sn8e_bare[2].composite_k[:GRAD_STEPS].max()), abs=0.1)


# ----------------------------------------------------------------------- 7. vmap and float64 agree

BATCH = [("bare", 25.0, TMT1), ("bare", 40.0, 343.0), ("heatsink", 25.0, 0.0), ("heatsink", 45.0, 333.0),
         ("airflow", 30.0, 338.0), ("bare", 25.0, 0.0)]
KEYS = ("written_gb", "max_composite_k", "max_nand_k")


def _batch_cols():
    cols = params.broadcast_columns(_cols(duration_s=1200.0), len(BATCH))
    cols["thermal.cooling"] = np.array([b[0] for b in BATCH])
    cols["thermal.ambient_c"] = np.array([b[1] for b in BATCH])
    cols["thermal.tmt1_k"] = np.array([b[2] for b in BATCH])
    return cols


_vmetrics = jax.jit(jax.vmap(coupled.metrics, in_axes=(0, 0, 0, 0, None)), static_argnums=4)


def test_vmap_equals_single_and_float32_matches_float64():
    cols = _batch_cols()
    trees, n = api.build_thermal(cols)
    assert n == 1200
    batch = {k: np.asarray(v) for k, v in _vmetrics(*trees, n).items()}
    with x64():
        trees64, _ = api.build_thermal(cols, dtype=np.float64)
        b64 = {k: np.asarray(v) for k, v in _vmetrics(*trees64, n).items()}
    assert b64["written_gb"].dtype == np.float64
    for i in range(len(BATCH)):
        one = [params.index(x, i) for x in trees]
        final, out = jax.tree_util.tree_map(np.asarray, _run(*one, n))
        # single run (exact engine) reproduces the batched metrics
        assert batch["written_gb"][i] == pytest.approx(float(final.written_bytes) / 1e9, rel=1e-6)
        assert batch["max_composite_k"][i] == pytest.approx(_max_composite(out, one[2]), abs=1e-4)
        assert batch["max_nand_k"][i] == pytest.approx(float(out.temps_k[:, 1].max()), abs=1e-4)
        sm = final.smart
        for k, v in (("tmt1_transitions", sm.tmt1_transitions), ("tmt2_transitions", sm.tmt2_transitions),
                     ("time_tmt1_s", sm.time_tmt1_s), ("time_tmt2_s", sm.time_tmt2_s),
                     ("throttled_s", sm.time_tmt1_s + sm.time_tmt2_s),
                     ("time_above_wctemp_s", sm.warning_s + sm.critical_s),
                     ("time_above_cctemp_s", sm.critical_s)):
            assert batch[k][i] == pytest.approx(float(v), abs=1e-6), (i, k)
        # float32 against float64
        assert batch["written_gb"][i] == pytest.approx(b64["written_gb"][i], rel=1e-4), i
        for k in ("max_composite_k", "max_nand_k"):
            assert batch[k][i] == pytest.approx(b64[k][i], abs=0.05), (i, k)
        assert batch["tmt1_transitions"][i] == b64["tmt1_transitions"][i]
        assert batch["throttled_s"][i] == b64["throttled_s"][i]
    # the batch is not degenerate: configurations differ, some throttle and some do not
    assert len(set(np.round(batch["max_composite_k"], 2))) == len(BATCH)
    assert (batch["throttled_s"] > 0).any() and (batch["throttled_s"] == 0).any()
