"""Fit RC-network parameters of the thermal model to a measured composite-temperature series.

A drive engineer logs ``nvme smart-log -o json`` (composite temperature, Kelvin) and the write
throughput while a known workload runs (``ssdx.models.thermal.nvme.read_series``), and wants the chassis's
thermal
network (``ssdx.models.thermal.rc``) instead of the representative ``ssdx.catalog.COOLING`` preset.

**Forward model.**  Given per-step node powers ``P_k = (P_ctrl, P_nand)`` (W, constant over each step
of ``dt = thermal.dt_s``), the network is integrated exactly (``thermal.network``/``thermal.advance``)
in a ``lax.scan`` from the equilibrium under an initial power (``(idle_w, 0)`` starts where the coupled
model starts every run), and the composite temperature ``w·T_ctrl + (1−w)·T_nand``
(``power.sensor_ctrl_weight = w``) is read at the *start* of each step, as
``ssdx.models.thermal.coupled.StepOut.composite_k`` is (what HCTM acted on).  With the coupled model's own
node powers (:func:`power_trace`) the trace equals the coupled model's composite trace.

**Powers.**  Either the coupled model's powers for the drive preset and the known workload
(:func:`power_trace`, :func:`simulate_with_powers`: the run is repeated and each step's (controller,
NAND) split is recomputed with ``ssdx.models.thermal.power.node_power``), or, for a measurement that has only
throughput, from the drive's energy per byte in its current write mode (:func:`powers_from_throughput`,
direct-native mode; :func:`fit_series` does this for a file).  The powers are inputs of the fit, not
refitted: throttling feedback is in the measured throughput already.

**Parameters fitted** (:data:`DEFAULT_FIELDS`), in log space, the others kept at the preset:

* ``g_case_amb`` (W/K) — the case-to-ambient conductance, the dominant path to ambient (0.075 of the
  bare preset's 0.12 W/K): it sets the steady temperature rise per watt, the level of every plateau.
* ``c_case`` (J/K) — the case (PCB, heatsink) heat capacity, about half of the total: with the
  conductances it sets the slow time constant (~90 s bare), the shape of the heating and cooling
  curves.

Why only these two: a composite trace sampled once a second (``nvme smart-log`` polling) shows the
network's steady resistance to ambient and its slow time constant; the internal conductances and the
controller/NAND capacities act through the fast modes (~2–3 s bare), barely resolved at 1 s.  The
Fisher information of the experiment in ``tests/test_fit_rc.py`` (sn8e_1920, bare, TMT1/TMT2 =
353.15/358.15 K so throttling cycles excite it, 1,200 s at 1 s, 0.3 K noise, powers known) gives
standard errors (log parameter, ×100 ≈ %):

* ``g_case_amb``, ``c_case``: 0.25 %, 0.6 % (correlation small) — well determined;
* adding ``g_nand_case``: 28 % on it (correlation 0.99 with the others); the best of all 84
  three-parameter subsets still has a 4.3 % standard error, all nine together are singular;
* the ambient conductances (``g_ctrl_amb``, ``g_nand_amb``) are interchangeable with ``g_case_amb``
  for one trace (any one of them with ``c_case`` gives the same 0.25 %), and ``c_nand``/``c_ctrl``
  with ``c_case``.

So the two fitted values are *effective*: they absorb small errors of the fixed ones, which is what a
calibration for prediction needs; fitting more needs faster sampling or separately measured node
temperatures.  Other subsets of :data:`RC_FIELDS` may be passed as ``fields``.

**Optimiser.**  Mean squared error in K² between model and measurement, minimised with Adam
(``optax.adam``) from the preset, then refined with L-BFGS (``optax.lbfgs``, zoom line search) until
the gradient norm is below ``tol`` or ``lbfgs_steps`` are spent.  Units SI throughout (W, J/K, W/K,
K, s, bytes/s).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ssdx.core.optim import lbfgs_minimise
from ssdx.models.thermal import coupled, hctm, nvme, rc
from ssdx.models.thermal import params as thermal_params
from ssdx.models.thermal import power as pw
from ssdx.models.thermal.params import Power, Thermal
from ssdx.params import Drive, Workload

#: RC fields of :class:`ssdx.models.thermal.params.Thermal` that may be fitted (J/K and W/K).
RC_FIELDS = thermal_params.RC_FIELDS
#: Fitted by default (module docstring): identifiable from one composite trace.
DEFAULT_FIELDS = ("g_case_amb", "c_case")


@dataclasses.dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit`.

    ``params``: fitted values by field (J/K, W/K); ``initial``: the starting values; ``thermal``: the
    starting Thermal with the fitted values substituted; ``loss_history``: MSE (K²) before each
    iteration, Adam then L-BFGS, plus the final value; ``iterations`` = ``adam_iterations`` +
    ``lbfgs_iterations``; ``rmse_k``: final root-mean-square residual, K.
    """

    params: dict[str, float]
    initial: dict[str, float]
    thermal: Thermal
    loss_history: np.ndarray
    iterations: int
    adam_iterations: int
    lbfgs_iterations: int
    rmse_k: float


# --------------------------------------------------------------------------------------------------
# Powers


def _step_powers(su: coupled.Setup, power: Power, th: Thermal, state: coupled.State) -> tuple:
    """(controller, NAND) mean power of the step that starts in ``state``, W.

    Mirrors steps 1–3 of ``ssdx.models.thermal.coupled.step`` (throttle update, rates, ``write_for``) and
    splits the energy with ``ssdx.models.thermal.power.node_power``; :func:`simulate_with_powers` checks the
    sum
    against the coupled model's ``power_w``.
    """
    dt = th.dt_s
    temp = rc.composite(power, state.temps_k)
    m1, m2 = hctm.update(state.m1, state.m2, temp, th, power.hysteresis_k, None)
    weights = hctm.occupancy(m1, m2)
    per_state = [coupled._throttled_rates(su, power, a) for a in su.actions]
    rates = tuple(sum(w * r[i] for w, r in zip(weights, per_state)) for i in range(3))
    ctrl_fraction = sum(w * a.ctrl for w, a in zip(weights, su.actions))
    remaining = jnp.maximum(su.total - state.written_bytes, 0.0)
    *_, mode_bytes, busy = coupled.write_for(su.plan, rates, state.slc_bytes, state.native_bytes,
                                             state.raw_used_bytes, dt, remaining)
    return pw.node_power(power, su.energy, mode_bytes, busy, ctrl_fraction, dt)


@partial(jax.jit, static_argnames="n_steps")
def _simulate_with_powers(drive, workload, power, th, n_steps):
    su = coupled.setup(drive, workload, power, th)

    def body(state, k):
        p = _step_powers(su, power, th, state)
        new, out = coupled.step(su, power, th, state, k)
        return new, (out, jnp.stack(p))

    ks = jnp.arange(n_steps, dtype=su.total.dtype)
    return jax.lax.scan(body, coupled.init(drive, workload, power, th, su), ks)[1]


def simulate_with_powers(drive: Drive, workload: Workload, power: Power, thermal: Thermal,
                         n_steps: int) -> tuple[coupled.StepOut, np.ndarray]:
    """The exact coupled run (``ssdx.models.thermal.coupled.simulate``, NumPy) and its node powers, W.

    Powers: shape ``(n_steps, 2)``, (controller, NAND), step ``k`` covering ``[k·dt, (k+1)·dt)``;
    checked to add up to the run's ``power_w``.  Scalar pytrees as from ``ssdx.api.thermal_one``.
    """
    out, p = jax.device_get(_simulate_with_powers(drive, workload, power, thermal, n_steps=n_steps))
    out = jax.tree_util.tree_map(np.asarray, out)
    p = np.asarray(p)
    scale = max(float(np.max(np.abs(out.power_w))), 1.0)
    if not np.allclose(p.sum(axis=1), out.power_w, rtol=1e-4, atol=1e-4 * scale):  # pragma: no cover
        raise RuntimeError("node powers do not add up to ssdx.models.thermal.coupled's power_w; "
                           "ssdx.models.thermal.fit_rc._step_powers is out of step with coupled.step")
    return out, p


def power_trace(drive: Drive, workload: Workload, power: Power, thermal: Thermal,
                n_steps: int) -> np.ndarray:
    """Node powers the coupled model produced, shape ``(n_steps, 2)``: (controller, NAND) in W.

    The throttle feedback uses ``thermal`` (the exact coupled run, :func:`simulate_with_powers`).
    """
    return simulate_with_powers(drive, workload, power, thermal, n_steps)[1]


def powers_from_throughput(drive: Drive, power: Power, throughput_b_s: Any,
                           ctrl_fraction: Any = 1.0, busy: Any = None) -> np.ndarray:
    """(controller, NAND) node powers, W, shape ``(n, 2)``, from a measured host write rate.

    With ``x`` the host bytes/s of a step (``throughput_b_s``) and the direct-native write mode's
    energies ``k = e_host + e_nand`` (``ssdx.models.thermal.power.mode_energy``, J/byte; the mode of a drive
    whose pSLC cache is off or full and that is not folding — the sustained regime of a long write)::

        P_ctrl = idle_w + ctrl_w · c · busy + e_host · x
        P_nand = e_nand · x

    ``c`` (``ctrl_fraction``) is the controller's active-power fraction of the current throttle
    state: 1 unthrottled, the policy's action in the light/heavy states (``ssd_b``: ``power.light_ctrl``
    / ``power.heavy_ctrl``; pass a per-step array when the state is known, e.g. from the SMART TMT1/TMT2
    counters with :func:`ctrl_fraction_from_counters`); ``busy`` the
    fraction of the step spent writing (default 1 where ``x > 0``).  Writes in pSLC or while folding
    use ``mode_energy``'s other entries; they are not derived here.
    """
    x = np.asarray(throughput_b_s, dtype=float)
    energy = jax.device_get(pw.mode_energy(drive, power))
    e_host = float(np.asarray(power.host_j_per_byte))
    e_nand = float(np.asarray(energy.nand[1]))
    b = (x > 0).astype(float) if busy is None else np.broadcast_to(np.asarray(busy, float), x.shape)
    c = np.broadcast_to(np.asarray(ctrl_fraction, float), x.shape)
    p_ctrl = float(np.asarray(power.idle_w)) + float(np.asarray(power.ctrl_w)) * c * b + e_host * x
    return np.stack([p_ctrl, e_nand * x], axis=-1)


# --------------------------------------------------------------------------------------------------
# Forward model


def composite_trace(th: Thermal, node_power_w: jax.Array, ctrl_weight: Any,
                    initial_power_w: jax.Array | None = None) -> jax.Array:
    """Composite temperature at the start of each step, K, shape ``(n,)`` (module docstring).

    ``node_power_w``: ``(n, 2)`` (controller, NAND) W over each step; ``ctrl_weight``: the composite's
    controller weight ``w``; ``initial_power_w``: ``(2,)`` W whose equilibrium is the initial state
    (default zero: ambient; ``(power.idle_w, 0)`` starts at the idle equilibrium, as the coupled
    model does).
    """
    p = jnp.asarray(node_power_w, dtype=th.ambient_k.dtype)
    net = rc.network(th)
    p0 = jnp.zeros(2, p.dtype) if initial_power_w is None else jnp.asarray(initial_power_w, p.dtype)
    t0 = rc.equilibrium(net, th, rc.node_powers(p0[0], p0[1]))
    w = jnp.asarray(ctrl_weight, p.dtype)

    def body(temps, pk):
        comp = w * temps[0] + (1.0 - w) * temps[1]
        return rc.advance(net, th, temps, rc.node_powers(pk[0], pk[1])), comp

    return jax.lax.scan(body, t0, p)[1]


def with_params(th: Thermal, values: dict[str, Any]) -> Thermal:
    """``th`` with RC fields replaced (J/K, W/K); unknown names raise ``KeyError``."""
    bad = sorted(set(values) - set(RC_FIELDS))
    if bad:
        raise KeyError(f"not fittable Thermal fields {bad}; choose from {list(RC_FIELDS)}")
    dtype = jnp.asarray(th.ambient_k).dtype
    return dataclasses.replace(th, **{k: jnp.asarray(v, dtype) for k, v in values.items()})


def _loss(theta, th, fields, p, measured, w, p0):
    th = with_params(th, {f: jnp.exp(theta[i]) for i, f in enumerate(fields)})
    r = composite_trace(th, p, w, p0) - measured
    return jnp.mean(r * r)


_loss_jit = jax.jit(_loss, static_argnames="fields")


@partial(jax.jit, static_argnames=("fields", "steps"))
def _adam(theta, th, fields, p, measured, w, p0, lr, steps):
    opt = optax.adam(lr)
    vg = jax.value_and_grad(_loss)

    def body(carry, _):
        x, s = carry
        v, g = vg(x, th, fields, p, measured, w, p0)
        u, s = opt.update(g, s, x)
        return (optax.apply_updates(x, u), s), v

    (theta, _), losses = jax.lax.scan(body, (theta, opt.init(theta)), None, length=steps)
    return theta, losses


@partial(jax.jit, static_argnames=("fields", "steps", "patience"))
def _lbfgs(theta, th, fields, p, measured, w, p0, tol, steps, patience):
    fun = partial(_loss, th=th, fields=fields, p=p, measured=measured, w=w, p0=p0)
    return lbfgs_minimise(fun, theta, tol, steps, patience)


def fit(thermal: Thermal, node_power_w: Any, composite_k: Any, ctrl_weight: Any,
        fields: Sequence[str] = DEFAULT_FIELDS, initial_power_w: Any = None,
        adam_steps: int = 300, learning_rate: float = 0.03, lbfgs_steps: int = 200,
        tol: float = 1e-7, patience: int = 5) -> FitResult:
    """Fit ``fields`` of ``thermal`` to a measured composite trace (module docstring).

    ``thermal``: scalar Thermal pytree (the preset; its values of ``fields`` are the starting point,
    the others stay fixed, ambient and ``dt_s`` must match the measurement); ``node_power_w``:
    ``(n, 2)`` W per step; ``composite_k``: ``(n,)`` K measured at the start of each step;
    ``ctrl_weight``: ``power.sensor_ctrl_weight``; ``initial_power_w``: see :func:`composite_trace`.
    ``learning_rate`` is Adam's step in log-parameter units.  L-BFGS stops after ``lbfgs_steps``, when
    the gradient norm (log parameters) is below ``tol``, or after ``patience`` iterations without a
    lower loss (float32 round-off); the best point it visited is returned.
    """
    fields = tuple(fields)
    with_params(thermal, {f: 1.0 for f in fields})  # name check
    dtype = jnp.asarray(thermal.ambient_k).dtype
    p = jnp.asarray(node_power_w, dtype)
    y = jnp.asarray(composite_k, dtype)
    if p.ndim != 2 or p.shape[1] != 2 or y.shape != (p.shape[0],):
        raise ValueError(f"node_power_w must be (n, 2) and composite_k (n,); got {p.shape} and {y.shape}")
    if not (np.all(np.isfinite(np.asarray(p))) and np.all(np.isfinite(np.asarray(y)))):
        raise ValueError("node_power_w and composite_k must be finite")
    w = jnp.asarray(ctrl_weight, dtype)
    p0 = jnp.zeros(2, dtype) if initial_power_w is None else jnp.asarray(initial_power_w, dtype)
    initial = {f: float(np.asarray(getattr(thermal, f))) for f in fields}
    theta = jnp.log(jnp.asarray([initial[f] for f in fields], dtype))
    losses = []
    if adam_steps > 0:
        theta, hist = _adam(theta, thermal, fields, p, y, w, p0, jnp.asarray(learning_rate, dtype),
                            adam_steps)
        losses.append(np.asarray(hist))
    k = 0
    if lbfgs_steps > 0:
        theta, k, hist = _lbfgs(theta, thermal, fields, p, y, w, p0, jnp.asarray(tol, dtype), lbfgs_steps,
                                patience)
        k = int(k)
        losses.append(np.asarray(hist)[:k])
    final = float(_loss_jit(theta, thermal, fields, p, y, w, p0))
    losses.append(np.asarray([final]))
    values = {f: float(np.exp(np.asarray(theta)[i])) for i, f in enumerate(fields)}
    return FitResult(params=values, initial=initial, thermal=with_params(thermal, values),
                     loss_history=np.concatenate(losses).astype(float), iterations=adam_steps + k,
                     adam_iterations=adam_steps, lbfgs_iterations=k, rmse_k=float(np.sqrt(final)))


def resample(series: nvme.Series, dt_s: float) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A series on the model's grid ``t_k = k·dt_s`` up to its last sample.

    Returns ``(composite_k, throughput_b_s, counters)``: the composite linearly interpolated, K; the
    throughput held from the sample that starts each step (``nvme.Series`` convention), bytes/s
    (zeros if absent); cumulative counters interpolated at ``t_k``.
    """
    t = np.asarray(series.time_s, float)
    n = int(np.floor(t[-1] / dt_s + 1e-9)) + 1
    grid = np.arange(n) * dt_s
    comp = np.interp(grid, t, series.composite_k)
    if series.throughput_mb_s is None:
        thr = np.zeros(n)
    else:
        idx = np.clip(np.searchsorted(t, grid, side="right") - 1, 0, len(t) - 1)
        thr = np.asarray(series.throughput_mb_s, float)[idx] * 1e6
    counters = {k: np.interp(grid, t, v) for k, v in series.counters.items()}
    return comp, thr, counters


def ctrl_fraction_from_counters(power: Power, counters: dict[str, np.ndarray], dt_s: float) -> np.ndarray:
    """Per-step controller active-power fraction from the TMT1/TMT2 total-time counters (seconds).

    The increase of ``thm_temp1_total_time`` / ``thm_temp2_total_time`` over a step is the time spent
    in the light / heavy state; the fraction mixes the policy's actions (``ssdx.models.thermal.hctm.actions``)
    by those occupancies.  Ones when the counters are absent.
    """
    keys = ("thm_temp1_total_time", "thm_temp2_total_time")
    n = len(next(iter(counters.values()))) if counters else 0
    if not all(k in counters for k in keys) or n < 2:
        return np.ones(max(n, 1))
    occ = [np.clip(np.diff(counters[k]) / dt_s, 0.0, 1.0) for k in keys]
    occ = [np.append(o, o[-1]) for o in occ]
    light, heavy = np.clip(occ[0], 0.0, 1.0), np.clip(occ[1], 0.0, 1.0 - occ[0])
    _, a_light, a_heavy = jax.device_get(hctm.actions(power))
    return (1.0 - light - heavy) + light * float(a_light.ctrl) + heavy * float(a_heavy.ctrl)


def fit_series(series: nvme.Series, drive: Drive, power: Power, thermal: Thermal,
               fields: Sequence[str] = DEFAULT_FIELDS, **fit_kwargs: Any) -> FitResult:
    """Fit ``fields`` to a measured series (``ssdx.models.thermal.nvme.read_series``) of a direct-native
    write.

    The series is put on the ``thermal.dt_s`` grid (:func:`resample`); node powers come from its
    throughput (:func:`powers_from_throughput`, the controller fraction from the TMT counters when
    present: :func:`ctrl_fraction_from_counters`); the run starts at the idle equilibrium.  Other
    keyword arguments go to :func:`fit`.  Scalar pytrees as from ``ssdx.api.thermal_one``.
    """
    if series.throughput_mb_s is None:
        raise ValueError("the series has no throughput_mb_s: derive node powers another way "
                         "(e.g. power_trace for a known workload) and call fit()")
    dt = float(np.asarray(thermal.dt_s))
    comp, thr, counters = resample(series, dt)
    frac = ctrl_fraction_from_counters(power, counters, dt) if counters else 1.0
    p = powers_from_throughput(drive, power, thr, ctrl_fraction=frac)
    p0 = np.asarray([float(np.asarray(power.idle_w)), 0.0])
    return fit(thermal, p, comp, power.sensor_ctrl_weight, fields=fields, initial_power_w=p0, **fit_kwargs)
