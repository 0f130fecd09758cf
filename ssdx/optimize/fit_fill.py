"""Fit the fluid model's drive parameters to a measured fill curve, with Optax, through the model itself.

A fill curve (``ssdx.workloads.fill_curve``: write speed against GB written while a whole drive is
filled) shows a few plateaus — pSLC, direct native, folding (``ssdx.models.fluid``) — whose speeds
and boundaries the fluid model derives from a handful of drive numbers.  This module finds those
numbers for one drive whose hardware (capacity, dies, planes, page size, interface) is known.

**Parameters** (:data:`PARAMS`; config key, the ``Drive`` leaf it sets, units):

* ``nand.t_prog_slc_us`` — pSLC page program time, us: the pSLC plateau is
  ``dies·planes·page / t_prog_slc`` when the die array limits it (not the host link or the bus);
* ``nand.t_prog_us`` — native page program time, us: the direct-native plateau, likewise;
* ``drive.fold_efficiency`` — ``η_fold`` (0..1]: with ``t_prog`` it sets the folding plateau;
* ``drive.reserve_fraction`` — fraction of raw NAND held back: in dynamic mode it sets where direct
  native writes stop and folding starts (``R·(1-ρ) - U`` GB of direct native writes on an empty drive);
* ``drive.static_slc_gb`` — the static pSLC region, GB;
* ``drive.max_dynamic_slc_gb`` — the cap of the dynamic pSLC cache, GB (when ``ssdx.params`` has it).

Each is fitted in log space inside bounds: ``v = lo·(hi/lo)^σ(θ)`` with ``θ`` free (σ the logistic
function), so every value stays inside ``[lo, hi]`` and Adam steps are relative changes.  Bounds
(:func:`bounds`): program times within a factor :data:`TIME_RANGE` of the plateau estimate;
``fold_efficiency`` in [0.02, 1]; ``reserve_fraction`` from 1e-4 to where user data would no longer fit
in raw NAND; the static region up to what the raw NAND left over by the user capacity holds at one bit
per cell; the dynamic cap up to the user capacity at one bit per cell.

**Cache-size rules** (:data:`RULES`).  The pSLC mode is discrete and not differentiable; it is
*relaxed by enumeration*: each candidate rule is fitted on its own and the one with the lowest RMSE is
kept — the simplest (fewest fitted parameters) among those within ``rule_tolerance`` (2 %) of the best
RMSE (or within :data:`RMSE_FLOOR` of the mean measured speed of it: float32 round-off), since a
richer rule reproduces a simpler one at the edge of its bounds (a cap at ``U/b`` is the uncapped
dynamic cache):

* ``dynamic`` — uncapped dynamic cache (``U/b`` on an empty drive): program times, ``η_fold``,
  ``reserve_fraction``;
* ``capped`` — dynamic, with ``drive.max_dynamic_slc_gb``: the same plus the cap ``C``;
* ``static`` — ``drive.static_slc_gb``, program times (a static drive never folds in a fill:
  ``η_fold`` and the reserve leave the curve unchanged and keep the base drive's values);
* ``hybrid`` — static region ``S`` plus a capped dynamic cache (``drive.slc_mode=hybrid``): program
  times, ``η_fold``, ``S`` and ``C``; the reserve keeps the base drive's value, since the static
  region's bound depends on it.  In the fluid accounting a fill writes the cache
  ``K = S + min((1-p)·U/b, C)`` (pre-fill ``p``) and then ``A - b·K`` GB of direct native writes from
  an empty drive (``A = R·(1-ρ)``): the curve depends on ``S`` and ``C`` through ``K`` only, so one
  fill determines the cache but not its split (the split's standard errors come out huge and both
  are listed as undetermined; telling them apart takes fills at two pre-fill levels).  With
  ``K <= U/b`` hybrid writes exactly as capped ``C = K`` does and the simpler ``capped`` rule wins;
  only hybrid reaches a cache above ``U/b`` (``S >= K - U/b``).

A rule whose fields this version of ``ssdx.params`` lacks is skipped and said so.

**Loss.**  A measured sample is the mean speed over the GB interval it covers (``fill_curve``); the
model's value for it is the same average: the interval's bytes over the model's busy time to write
them (:func:`model_speed`).  That time comes from ``fluid.simulate``'s per-step split of the bytes
between the write modes, exact within each step (:func:`busy_time_at`), so the phase boundaries are
where the capacity accounting puts them, not blurred over a step, and the fit does not depend on
``n_steps`` for a fill without idle gaps.  The sample that holds a boundary sees a mix of two speeds
that changes continuously with the boundary's position, which is how a boundary parameter gets its
gradient.  The loss is the mean squared residual over the samples, in units of the mean measured
speed.

**Initialisation** (:func:`initial_values`).  The measured curve is segmented into plateaus
(:func:`segment`); the first plateau gives the pSLC program time, the second the native one (the
die-limited speed is ``dies·planes·page / t``), the last with that native time gives ``η_fold``
(inverting ``fluid.die_time``'s folding time); the cache parameters start where the first plateau
ends.  Then a coordinate search: each parameter in turn is set to the best of ``grid_points`` values
spread over its bounds (log), the others held (one vmapped model batch per parameter; two rounds).

**Optimiser.**  Adam (``optax.adam``) on ``θ``, then L-BFGS (``optax.lbfgs``, backtracking line
search) until the gradient norm is below ``tol``, ``lbfgs_steps`` are spent or ``patience`` iterations
bring no lower loss; the best point visited is kept — as ``ssdx.optimize.fit_rc`` does.

**Uncertainty.**  Relative standard errors from the Gauss-Newton approximation at the optimum:
``cov(log v) = s²·(JᵀJ)⁻¹`` with ``J`` the Jacobian of the residuals in ``log v`` and ``s²`` the
residual variance.  Where a fitted parameter's automatic derivative is zero because the scan snaps a
phase boundary to whole steps, its column is a central difference instead (relative steps
:data:`FD_LOG_STEPS`).  A parameter the curve does not reach (the folding efficiency of a curve that
stops before folding) has a zero column even so and no standard error (``None``, reported as undetermined);
it is set back to the base drive's value when that fits as well (within its bounds).

**Measured phases** (:func:`segment`): a running median (window :data:`SMOOTH_FRACTION` of the samples,
at least 3) smooths the speeds; binary segmentation then splits the curve where a split most reduces
the squared error of a piecewise-constant fit, as long as both parts span at least
:data:`MIN_PHASE_FRACTION` of the curve's GB and their mean speeds differ by more than
:data:`MIN_STEP_FRACTION` of the larger, up to :data:`MAX_PHASES` parts; adjacent parts whose means
then differ by less than that are merged (compared by their medians).  A part's ``mean_mb_s`` is
bytes over time, as ``ssdx.report.fill.phases`` gives the model's, of its samples less the one at each
change (it may straddle the change).

**Where the curve leaves the model** (:func:`residual_regions`): runs of samples whose running-mean
residual (same window) exceeds ``residual_fraction`` (5 %) of the mean measured speed and three
standard errors of the measurement noise over the window (the noise estimated robustly from the
changes between neighbouring samples), largest (integrated |residual| over GB) first.  The fit is
flagged poor when the RMSE exceeds ``poor_fit_fraction`` (10 %) of the mean measured speed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ssdx import params
from ssdx.models import fluid
from ssdx.params import Drive, Workload

#: Program-time bounds: within this factor of the plateau estimate, either way.
TIME_RANGE = 4.0
#: Measured-phase segmentation (module docstring).
SMOOTH_FRACTION = 0.01
MIN_PHASE_FRACTION = 0.01
MIN_STEP_FRACTION = 0.1
MAX_PHASES = 8
#: Steps in ``log v`` (relative changes of a parameter) tried, smallest first, for a central difference
#: where a fitted parameter's automatic derivative is zero (:meth:`Fitter._difference_columns`).
FD_LOG_STEPS = (1e-3, 1e-2, 5e-2)
#: Rules whose RMSEs differ by less than this fraction of the mean measured speed tie (:func:`choose`).
RMSE_FLOOR = 1e-3
#: A fitted value within this relative distance (log) of a bound is reported at the bound.
AT_BOUND = 1e-3
#: Rows of a batched loss evaluation (the default coordinate search's 32 values and the current one).
BATCH = 33


@dataclasses.dataclass(frozen=True)
class Param:
    """A fittable drive number: config ``key``, the ``Drive`` ``leaf`` path it sets, ``scale`` (leaf units
    per config unit), ``unit`` and what it means."""

    key: str
    leaf: tuple[str, ...]
    scale: float
    unit: str
    meaning: str


T_SLC, T_PROG = "nand.t_prog_slc_us", "nand.t_prog_us"
FOLD, RESERVE = "drive.fold_efficiency", "drive.reserve_fraction"
STATIC, CAP = "drive.static_slc_gb", "drive.max_dynamic_slc_gb"
MODE = "drive.slc_mode"

PARAMS: dict[str, Param] = {p.key: p for p in (
    Param(T_SLC, ("nand", "t_prog_slc_us"), 1.0, "us", "pSLC page program time"),
    Param(T_PROG, ("nand", "t_prog_us"), 1.0, "us", "native page program time"),
    Param(FOLD, ("fold_efficiency",), 1.0, "", "fold efficiency (fold scheduling, re-encoding)"),
    Param(RESERVE, ("reserve_fraction",), 1.0, "", "fraction of raw NAND reserved"),
    Param(STATIC, ("static_slc_bytes",), 1e9, "GB", "static pSLC region"),
    Param(CAP, ("max_dynamic_slc_bytes",), 1e9, "GB", "cap of the dynamic pSLC cache"),
)}
_MODE_LEAF = ("slc_mode",)


@dataclasses.dataclass(frozen=True)
class Rule:
    """A cache-size rule: the pSLC mode it sets, the parameters it fits, and the config values it fixes
    (dropped where ``ssdx.params`` lacks the field)."""

    name: str
    slc_mode: str
    fitted: tuple[str, ...]
    fixed: tuple[tuple[str, float], ...] = ()


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("dynamic", "dynamic", (T_SLC, T_PROG, FOLD, RESERVE), ((STATIC, 0.0), (CAP, 0.0))),
    Rule("capped", "dynamic", (T_SLC, T_PROG, FOLD, RESERVE, CAP), ((STATIC, 0.0),)),
    Rule("static", "static", (T_SLC, T_PROG, STATIC), ((CAP, 0.0),)),
    Rule("hybrid", "hybrid", (T_SLC, T_PROG, FOLD, STATIC, CAP)),
)}


def _has_leaf(path: tuple[str, ...]) -> bool:
    """Whether ``Drive`` has the leaf ``path`` (``("nand", name)`` or a top-level field)."""
    cls: Any = Drive
    for i, name in enumerate(path):
        if name not in {f.name for f in dataclasses.fields(cls)}:
            return False
        if i < len(path) - 1:
            if name != "nand":
                return False
            cls = params.Nand
    return True


def available_params() -> tuple[str, ...]:
    """Keys of :data:`PARAMS` whose ``Drive`` leaf exists in this version of ``ssdx.params``."""
    return tuple(k for k, p in PARAMS.items() if _has_leaf(p.leaf))


def rule_missing(name: str) -> str | None:
    """Why rule ``name`` cannot be fitted with this ``ssdx.params`` (``None`` when it can)."""
    rule = RULES[name]
    have = set(available_params())
    missing = [k for k in rule.fitted if k not in have]
    if rule.slc_mode not in params.SLC_MODES:
        missing.append(f"drive.slc_mode={rule.slc_mode}")
    return f"needs {', '.join(missing)} (not in this version of ssdx.params)" if missing else None


# --------------------------------------------------------------------------------------------------
# The model as a function of a parameter vector


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        tree = getattr(tree, name)
    return tree


def _set(tree: Any, path: tuple[str, ...], value: Any) -> Any:
    if len(path) == 1:
        return dataclasses.replace(tree, **{path[0]: value})
    return dataclasses.replace(tree, **{path[0]: _set(getattr(tree, path[0]), path[1:], value)})


def with_values(drive: Drive, leaves: tuple[tuple[str, ...], ...], values: jax.Array) -> Drive:
    """``drive`` with each leaf path of ``leaves`` set to the matching entry of ``values`` (leaf units)."""
    for i, path in enumerate(leaves):
        drive = _set(drive, path, values[i].astype(jnp.asarray(_get(drive, path)).dtype))
    return drive


def busy_time_at(out: fluid.StepOut, r: fluid.Rates, x_bytes: jax.Array) -> jax.Array:
    """Busy seconds the model takes to write its first ``x_bytes`` host bytes (clipped to the run).

    Exact within a step: a step writes its pSLC bytes, then direct native, then folding
    (``fluid._write``) at the mode rates, so the time is piecewise linear in ``x`` with the phase
    boundaries where the capacity accounting puts them, whatever ``n_steps`` (with idle gaps,
    ``workload.burst_gb > 0``, a step may hold two such sequences and this is an approximation).
    Differentiable in the rates and in the bytes each mode took, hence in the boundaries.
    """
    n = out.written_bytes.shape[0]
    delta = out.written_bytes[0]
    busy = out.mode_time_s[:, 0] + out.mode_time_s[:, 1] + out.mode_time_s[:, 2]
    start = jnp.cumsum(busy) - busy
    x = jnp.clip(x_bytes, 0.0, out.written_bytes[-1])
    k = jnp.clip(jnp.floor(x / delta), 0, n - 1).astype(jnp.int32)
    o = x - k * delta
    a = out.mode_bytes[k]
    return (start[k] + jnp.minimum(o, a[:, 0]) / r.slc
            + jnp.clip(o - a[:, 0], 0.0, a[:, 1]) / r.native
            + jnp.clip(o - a[:, 0] - a[:, 1], 0.0, a[:, 2]) / r.fold)


def model_speed(drive: Drive, workload: Workload, gb_lo: jax.Array, gb_hi: jax.Array,
                n_steps: int) -> jax.Array:
    """The fluid model's mean write speed (MB/s) over each GB interval ``[gb_lo, gb_hi]`` of host data
    written in the run: the interval's bytes over the model's busy time to write them
    (:func:`busy_time_at`), as a measurement that averages over its window reports it.  Intervals
    narrower than a thousandth of a step are widened to that about their middle."""
    out = fluid.simulate(drive, workload, n_steps)
    r = fluid.rates(drive, workload)
    eps = 5e-4 * out.written_bytes[0]
    mid = 0.5 * (gb_lo + gb_hi) * 1e9
    lo = jnp.minimum(gb_lo * 1e9, mid - eps)
    hi = jnp.maximum(gb_hi * 1e9, mid + eps)
    dt = busy_time_at(out, r, hi) - busy_time_at(out, r, lo)
    width = jnp.minimum(hi, out.written_bytes[-1]) - jnp.maximum(lo, 0.0)
    return jnp.where(dt > 0, width / jnp.maximum(dt, 1e-30), r.slc) / 1e6


@dataclasses.dataclass(frozen=True)
class Problem:
    """One rule's fit as arrays over all available parameters plus the pSLC mode (leaf units).

    ``mask``: 1 for a fitted parameter; ``fixed``: the value of every other one (and the mode code);
    ``lo``/``hi``: bounds of the fitted ones.  The same compiled functions serve every rule.
    """

    keys: tuple[str, ...]
    leaves: tuple[tuple[str, ...], ...]
    mask: np.ndarray
    fixed: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def _values(theta, mask, fixed, lo, hi):
    u = jax.nn.sigmoid(theta)
    return jnp.where(mask > 0, lo * jnp.exp(u * jnp.log(hi / lo)), fixed)


def _residual(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    d = with_values(drive, leaves, _values(theta, mask, fixed, lo, hi))
    return (model_speed(d, workload, gb[0], gb[1], n_steps) - mb_s) / scale


def _loss(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    r = _residual(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps)
    return jnp.mean(r * r)


_STATIC = ("leaves", "n_steps")


@partial(jax.jit, static_argnames=_STATIC)
def _loss_batch(thetas, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    f = partial(_loss, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    return jax.vmap(f)(thetas)


@partial(jax.jit, static_argnames=(*_STATIC, "steps"))
def _adam(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, lr, leaves, n_steps, steps):
    opt = optax.adam(lr)
    fun = partial(_loss, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                  mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    vg = jax.value_and_grad(fun)

    def body(carry, _):
        x, s, best_x, best_v = carry
        v, g = vg(x)
        g = jnp.where(mask > 0, g, 0.0)
        better = v < best_v
        best_x, best_v = jnp.where(better, x, best_x), jnp.minimum(v, best_v)
        u, s = opt.update(g, s, x)
        return (optax.apply_updates(x, u), s, best_x, best_v), v

    inf = jnp.asarray(jnp.inf, theta.dtype)
    (x, _, best_x, best_v), losses = jax.lax.scan(body, (theta, opt.init(theta), theta, inf), None,
                                                  length=steps)
    v_last = fun(x)
    return jnp.where(v_last < best_v, x, best_x), losses


@partial(jax.jit, static_argnames=(*_STATIC, "steps", "patience"))
def _lbfgs(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, tol, leaves, n_steps, steps,
           patience):
    raw = partial(_loss, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                  mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)

    fun = raw  # the coordinates not fitted enter through `fixed` only: zero gradient

    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
        max_backtracking_steps=20, store_grad=True))
    vg = optax.value_and_grad_from_state(fun)

    def cond(c):
        k, gnorm, stalled = c[2], c[3], c[4]
        return (k < steps) & (gnorm > tol) & (stalled < patience)

    def body(c):
        x, s, k, _, stalled, best_x, best_v = c
        v, g = vg(x, state=s)
        u, s = opt.update(g, s, x, value=v, grad=g, value_fn=fun)
        improved = v < best_v
        best_x = jnp.where(improved, x, best_x)
        best_v = jnp.minimum(v, best_v)
        stalled = jnp.where(improved, 0, stalled + 1)
        x_new = optax.apply_updates(x, u)
        x_new = jnp.where(jnp.all(jnp.isfinite(x_new)), x_new, x)
        return (x_new, s, k + 1, optax.tree_utils.tree_l2_norm(g), stalled, best_x, best_v)

    inf = jnp.asarray(jnp.inf, theta.dtype)
    c = (theta, opt.init(theta), jnp.asarray(0), inf, jnp.asarray(0), theta, inf)
    x, _, k, _, _, best_x, best_v = jax.lax.while_loop(cond, body, c)
    v_last = fun(x)
    return jnp.where(v_last < best_v, x, best_x), k


_residuals = jax.jit(_residual, static_argnames=_STATIC)


@partial(jax.jit, static_argnames=_STATIC)
def _residuals_and_jacobian(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    f = partial(_residual, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    return f(theta), jax.jacfwd(f)(theta)


@partial(jax.jit, static_argnames="n_steps")
def _speed(drive, workload, gb, n_steps):
    return model_speed(drive, workload, gb[0], gb[1], n_steps)


# --------------------------------------------------------------------------------------------------
# Measured phases and residual regions (host side)


def _running(x: np.ndarray, window: int, how: str) -> np.ndarray:
    """Centred running median or mean of ``x`` over ``window`` samples (shrinking at the ends)."""
    n, h = len(x), window // 2
    if window <= 1 or n < 3:
        return x.astype(float).copy()
    pad = np.pad(x.astype(float), h, mode="edge")
    view = np.lib.stride_tricks.sliding_window_view(pad, 2 * h + 1)[:n]
    return np.median(view, axis=1) if how == "median" else view.mean(axis=1)


def smoothing_window(n: int) -> int:
    """Odd running window for ``n`` samples: :data:`SMOOTH_FRACTION` of them, at least 3 (1 below 5)."""
    if n < 5:
        return 1
    w = max(3, int(round(SMOOTH_FRACTION * n)))
    return w + 1 - w % 2


def _mean_speed(width_gb: np.ndarray, time_s: np.ndarray) -> float:
    """Bytes over time of a run of samples, MB/s."""
    t = float(np.sum(time_s))
    return float(np.sum(width_gb)) * 1e3 / t if t > 0 else 0.0


def segment(gb_lo: np.ndarray, gb_hi: np.ndarray, mb_s: np.ndarray,
            time_s: np.ndarray) -> list[dict[str, Any]]:
    """Plateaus of a measured curve (module docstring): ``[{start_gb, end_gb, mean_mb_s, first, last}]``
    with ``first``/``last`` the sample indices of each part (inclusive)."""
    n = len(mb_s)
    v = _running(np.asarray(mb_s, float), smoothing_window(n), "median")
    span = float(gb_hi[-1] - gb_lo[0])
    min_gb = MIN_PHASE_FRACTION * span
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])

    def sse(a: int, b: int) -> np.ndarray | float:
        m = b - a
        return c2[b] - c2[a] - (c1[b] - c1[a]) ** 2 / m

    def best_split(a: int, b: int) -> tuple[float, int]:
        k = np.arange(a + 2, b - 1)  # both parts at least 2 samples
        if len(k) == 0:
            return -1.0, -1
        ok = (gb_hi[k - 1] - gb_lo[a] >= min_gb) & (gb_hi[b - 1] - gb_lo[k] >= min_gb)
        left = (c1[k] - c1[a]) / (k - a)
        right = (c1[b] - c1[k]) / (b - k)
        ok &= np.abs(left - right) > MIN_STEP_FRACTION * np.maximum(np.abs(left), np.abs(right))
        if not ok.any():
            return -1.0, -1
        m_l, m_r = k - a, b - k
        sse_l = c2[k] - c2[a] - (c1[k] - c1[a]) ** 2 / m_l
        sse_r = c2[b] - c2[k] - (c1[b] - c1[k]) ** 2 / m_r
        gain = sse(a, b) - sse_l - sse_r
        gain = np.where(ok, gain, -1.0)
        i = int(np.argmax(gain))
        return float(gain[i]), int(k[i])

    parts = [(0, n)]
    while len(parts) < MAX_PHASES:
        cands = [(best_split(a, b), j) for j, (a, b) in enumerate(parts)]
        (gain, k), j = max(cands, key=lambda c: c[0][0])
        if k < 0:
            break
        a, b = parts[j]
        parts[j:j + 1] = [(a, k), (k, b)]
    merged = True
    while merged and len(parts) > 1:  # merge neighbours left too close by later splits
        merged = False
        med = [float(np.median(v[a:b])) for a, b in parts]
        for j in range(len(parts) - 1):
            if abs(med[j] - med[j + 1]) <= MIN_STEP_FRACTION * max(abs(med[j]), abs(med[j + 1])):
                parts[j:j + 2] = [(parts[j][0], parts[j + 1][1])]
                merged = True
                break
    width = np.asarray(gb_hi, float) - np.asarray(gb_lo, float)
    out = []
    for a, b in parts:
        # the samples next to a change may straddle it: the speed is taken from the others
        ia, ib = a + (a > 0), b - (b < n)
        ia, ib = (ia, ib) if ib > ia else (a, b)
        out.append({"start_gb": float(gb_lo[a]), "end_gb": float(gb_hi[b - 1]),
                    "mean_mb_s": _mean_speed(width[ia:ib], np.asarray(time_s)[ia:ib]), "first": a,
                    "last": b - 1})
    return out


def relative_noise(mb_s: np.ndarray) -> float:
    """Robust relative noise of a measured curve: the scaled median absolute deviation of the relative
    change between neighbouring samples, over √2 (two samples' noise in each change).  0 for a curve of
    clean plateaus (its changes are mostly exactly 0)."""
    y = np.asarray(mb_s, float)
    if len(y) < 3:
        return 0.0
    d = np.diff(y) / np.maximum(0.5 * (np.abs(y[1:]) + np.abs(y[:-1])), 1e-9)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


def residual_regions(gb_lo: np.ndarray, gb_hi: np.ndarray, measured_mb_s: np.ndarray,
                     residual_mb_s: np.ndarray, threshold_mb_s: float,
                     max_regions: int = 5) -> list[dict[str, float]]:
    """Runs of samples whose running-mean residual (model - measured, MB/s) exceeds in size both
    ``threshold_mb_s`` and three standard errors of the measurement noise over the window
    (``3·σ·speed/√window``, ``σ`` from :func:`relative_noise`, ``speed`` the smoothed measured speed
    there), largest (integrated |residual| x GB) first: ``[{start_gb, end_gb, mean_residual_mb_s,
    max_abs_residual_mb_s}]``."""
    r = np.asarray(residual_mb_s, float)
    w = smoothing_window(len(r))
    smooth = _running(r, w, "mean")
    level = np.abs(_running(np.asarray(measured_mb_s, float), w, "median"))
    limit = np.maximum(threshold_mb_s, 3.0 * relative_noise(measured_mb_s) * level / np.sqrt(w))
    over = np.abs(smooth) > limit
    width = np.asarray(gb_hi, float) - np.asarray(gb_lo, float)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], over.astype(int), [0]])))
    regions = []
    for a, b in zip(edges[::2], edges[1::2]):
        regions.append({"start_gb": float(gb_lo[a]), "end_gb": float(gb_hi[b - 1]),
                        "mean_residual_mb_s": float(np.mean(r[a:b])),
                        "max_abs_residual_mb_s": float(np.max(np.abs(r[a:b]))),
                        "_area": float(np.sum(np.abs(r[a:b]) * width[a:b])) + 1e-12 * (b - a)})
    regions.sort(key=lambda x: -x["_area"])
    return [{k: v for k, v in x.items() if k != "_area"} for x in regions[:max_regions]]


# --------------------------------------------------------------------------------------------------
# Initial values and bounds


def _f(x: Any) -> float:
    return float(np.asarray(x))


def die_limited_time_us(drive: Drive, speed_mb_s: float) -> float:
    """Page program time (us) at which the whole die array writes ``speed_mb_s``:
    ``dies·planes·page / speed`` (``ssdx.presets.fit_program_time_us``)."""
    planes = _f(drive.dies) * _f(drive.planes_per_die)
    return planes * _f(drive.nand.page_bytes) / max(speed_mb_s, 1e-3)


def fold_efficiency_for(drive: Drive, t_prog_us: float, speed_mb_s: float) -> float:
    """``η_fold`` at which the die-limited folding speed is ``speed_mb_s`` with native program time
    ``t_prog_us`` (inverts ``fluid.die_time``'s folding time), clipped to [0.05, 1]."""
    d = _set(_set(drive, ("nand", "t_prog_us"), jnp.asarray(t_prog_us, jnp.asarray(drive.dies).dtype)),
             ("fold_efficiency",), jnp.asarray(1.0, jnp.asarray(drive.dies).dtype))
    die = fluid.die_time(d)
    f = _f(fluid.fold_ratio(d))
    program = (1.0 + f) * _f(die.native)  # s/byte of the programs at η = 1
    rest = _f(die.fold) - program  # read and erase, s/byte
    room = 1.0 / (speed_mb_s * 1e6) - rest
    return float(np.clip(program / room, 0.05, 1.0)) if room > 0 else 1.0


def initial_values(phases: Sequence[Mapping[str, Any]], drive: Drive, rule: Rule) -> dict[str, float]:
    """Starting values (config units) of ``rule``'s parameters from the measured plateaus ``phases``
    (:func:`segment`; module docstring)."""
    v1 = phases[0]["mean_mb_s"]
    v2 = phases[1]["mean_mb_s"] if len(phases) > 1 else v1
    v_last = phases[-1]["mean_mb_s"]
    t_prog = die_limited_time_us(drive, v2)
    first_end = phases[0]["end_gb"] if len(phases) > 1 else phases[0]["end_gb"] / 2
    init = {T_SLC: die_limited_time_us(drive, v1), T_PROG: t_prog,
            FOLD: fold_efficiency_for(drive, t_prog, v_last), RESERVE: _f(drive.reserve_fraction)}
    if rule.name == "hybrid":
        init[STATIC], init[CAP] = first_end / 2, first_end / 2
    else:
        init[STATIC] = init[CAP] = first_end
    return {k: init[k] for k in rule.fitted}


def bounds(drive: Drive, rule: Rule, init: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """Bounds (config units) of ``rule``'s parameters (module docstring).  Raises ``ValueError`` when a
    rule has no room (no raw NAND left for a static region)."""
    u, raw, b = _f(drive.user_bytes) / 1e9, _f(drive.raw_bytes) / 1e9, _f(drive.nand.bits_per_cell)
    rho = _f(drive.reserve_fraction)
    out: dict[str, tuple[float, float]] = {}
    for k in rule.fitted:
        if k in (T_SLC, T_PROG):
            out[k] = (max(init[k] / TIME_RANGE, 0.01), min(init[k] * TIME_RANGE, 1e6))
        elif k == FOLD:
            out[k] = (0.02, 1.0)
        elif k == RESERVE:
            out[k] = (1e-4, min(0.499, (1.0 - u / raw) * (1 - 1e-6)))
        elif k == STATIC:
            out[k] = (1e-3, (raw * (1 - rho) - u) / b * (1 - 1e-6))
        elif k == CAP:
            out[k] = (u / b * 1e-3, u / b)
        lo, hi = out[k]
        if not hi > lo:
            raise ValueError(f"{k} has no feasible range ({lo:g} .. {hi:g}) for this drive")
    return out


# --------------------------------------------------------------------------------------------------
# The fit


@dataclasses.dataclass(frozen=True)
class RuleFit:
    """One rule's fit.  Values in config units (``values`` rounded to 7 significant digits, as the
    ``overrides`` print them); ``std_error_pct``: relative standard error, %, ``None`` where the curve
    does not determine the parameter; ``speed_mb_s``: the fitted model at the samples."""

    rule: str
    slc_mode: str
    values: dict[str, float]
    fixed: dict[str, float]
    initial: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    at_bound: list[str]
    std_error_pct: dict[str, float | None]
    rmse_mb_s: float
    initial_rmse_mb_s: float
    adam_iterations: int
    lbfgs_iterations: int
    speed_mb_s: np.ndarray


def round7(x: float) -> float:
    """``x`` to 7 significant digits (what a float32 holds, and what the overrides print)."""
    return float(f"{x:.7g}")


class Fitter:
    """Fits rules to one measured curve for one base drive (scalar pytrees from ``ssdx.params``)."""

    def __init__(self, gb_lo: np.ndarray, gb_hi: np.ndarray, mb_s: np.ndarray, drive: Drive,
                 workload: Workload, n_steps: int, phases: Sequence[Mapping[str, Any]]):
        self.dtype = jnp.asarray(drive.user_bytes).dtype
        self.drive, self.workload, self.n_steps = drive, workload, n_steps
        self.gb = jnp.stack([jnp.asarray(gb_lo, self.dtype), jnp.asarray(gb_hi, self.dtype)])
        self.mb_s = jnp.asarray(mb_s, self.dtype)
        self.scale = jnp.asarray(max(float(np.mean(mb_s)), 1e-9), self.dtype)
        self.phases = list(phases)
        self.keys = available_params()
        self.leaves = tuple(PARAMS[k].leaf for k in self.keys) + (_MODE_LEAF,)

    def problem(self, rule: Rule) -> tuple[Problem, dict[str, float], dict[str, tuple[float, float]]]:
        """Arrays of ``rule``'s fit, its starting values and bounds (config units)."""
        init = initial_values(self.phases, self.drive, rule)
        bnd = bounds(self.drive, rule, init)
        init = {k: float(np.clip(v, *bnd[k])) for k, v in init.items()}
        fixed_cfg = dict(rule.fixed)
        n = len(self.leaves)
        mask, fixed, lo, hi = np.zeros(n), np.zeros(n), np.ones(n), np.ones(n)
        for i, k in enumerate(self.keys):
            p = PARAMS[k]
            fixed[i] = fixed_cfg[k] * p.scale if k in fixed_cfg else _f(_get(self.drive, p.leaf))
            if k in rule.fitted:
                mask[i] = 1.0
                lo[i], hi[i] = bnd[k][0] * p.scale, bnd[k][1] * p.scale
        fixed[-1] = params.SLC_MODES.index(rule.slc_mode)
        return Problem(self.keys, self.leaves, mask, fixed, lo, hi), init, bnd

    def _args(self, pb: Problem) -> tuple:
        c = partial(jnp.asarray, dtype=self.dtype)
        return (c(pb.mask), c(pb.fixed), c(pb.lo), c(pb.hi), self.drive, self.workload, self.gb, self.mb_s,
                self.scale)

    def theta(self, pb: Problem, values: Mapping[str, float], margin: float = 1e-3) -> np.ndarray:
        """``θ`` of config ``values`` (0 for the parameters not fitted), at least ``margin`` (in ``σ(θ)``)
        inside the bounds: a start at a bound would have no gradient."""
        th = np.zeros(len(self.leaves))
        for i, k in enumerate(self.keys):
            if pb.mask[i] > 0:
                u = np.log(values[k] * PARAMS[k].scale / pb.lo[i]) / np.log(pb.hi[i] / pb.lo[i])
                u = float(np.clip(u, margin, 1 - margin))
                th[i] = np.log(u / (1 - u))
        return th

    def values(self, pb: Problem, theta: np.ndarray) -> dict[str, float]:
        """Config values of the fitted parameters at ``θ``, rounded (:func:`round7`)."""
        v = np.asarray(_values(jnp.asarray(theta, self.dtype), *[jnp.asarray(a, self.dtype) for a in
                                                                   (pb.mask, pb.fixed, pb.lo, pb.hi)]))
        return {k: round7(float(v[i]) / PARAMS[k].scale) for i, k in enumerate(self.keys) if pb.mask[i] > 0}

    def loss(self, pb: Problem, thetas: np.ndarray) -> np.ndarray:
        """Loss (mean squared residual / mean speed²) of each row of ``thetas``, in batches padded to a
        multiple of :data:`BATCH` rows (one compiled shape for every call)."""
        thetas = np.atleast_2d(np.asarray(thetas, float))
        n = len(thetas)
        rows = -(-n // BATCH) * BATCH
        padded = np.concatenate([thetas, np.repeat(thetas[:1], rows - n, axis=0)])
        return np.asarray(_loss_batch(jnp.asarray(padded, self.dtype), *self._args(pb),
                                      leaves=self.leaves, n_steps=self.n_steps))[:n]

    def grid_search(self, pb: Problem, theta: np.ndarray, points: int, rounds: int) -> np.ndarray:
        """Coordinate search (module docstring): each fitted parameter set to the best of ``points`` values
        over its bounds, boundary parameters first; ``rounds`` passes."""
        order = [k for k in (RESERVE, STATIC, CAP, FOLD, T_PROG, T_SLC) if k in self.keys]
        u = np.linspace(0.02, 0.98, points)
        grid = np.log(u / (1 - u))
        th = np.asarray(theta, float).copy()
        for _ in range(rounds):
            for k in order:
                i = self.keys.index(k)
                if pb.mask[i] == 0:
                    continue
                cand = np.tile(th, (points + 1, 1))
                cand[:points, i] = grid
                losses = self.loss(pb, cand)
                j = int(np.argmin(losses[:points]))
                if losses[j] < losses[points] * (1 - 1e-5):  # ties keep the current value
                    th = cand[j]
        return th

    def fit(self, rule: Rule, adam_steps: int = 200, learning_rate: float = 0.05, lbfgs_steps: int = 100,
            grid_points: int = 32, grid_rounds: int = 2, tol: float = 1e-7, patience: int = 10) -> RuleFit:
        """Fit ``rule`` (module docstring): plateau estimates, coordinate search, Adam, L-BFGS."""
        pb, init, bnd = self.problem(rule)
        args = self._args(pb)
        th0 = self.theta(pb, init)
        initial_loss = float(self.loss(pb, th0)[0])
        th = self.grid_search(pb, th0, grid_points, grid_rounds) if grid_points > 1 else th0
        th = jnp.asarray(th, self.dtype)
        if adam_steps > 0:
            th, _ = _adam(th, *args, jnp.asarray(learning_rate, self.dtype), leaves=self.leaves,
                          n_steps=self.n_steps, steps=adam_steps)
        n_lbfgs = 0
        if lbfgs_steps > 0:
            th, n_lbfgs = _lbfgs(th, *args, jnp.asarray(tol, self.dtype), leaves=self.leaves,
                                 n_steps=self.n_steps, steps=lbfgs_steps, patience=patience)
            n_lbfgs = int(n_lbfgs)
        values = self.values(pb, np.asarray(th, float))
        th_r, r, jac, se = self._assess(pb, args, values)
        base = {k: round7(_f(_get(self.drive, PARAMS[k].leaf)) / PARAMS[k].scale) for k in values}
        keep = {k: base[k] for k, v in se.items() if v is None and bnd[k][0] <= base[k] <= bnd[k][1]}
        if keep:  # what the curve does not determine keeps the base drive's value if that fits as well
            trial = {**values, **keep}
            losses = self.loss(pb, np.stack([th_r, self.theta(pb, trial, margin=1e-7)]))
            if losses[1] <= losses[0] * (1 + 1e-6) + 1e-12:
                values = trial
                th_r, r, jac, se = self._assess(pb, args, values)
        scale = float(self.scale)
        at_bound = [k for k in values if min(abs(np.log(values[k] / bnd[k][0])),
                                             abs(np.log(bnd[k][1] / values[k]))) < AT_BOUND]
        return RuleFit(
            rule=rule.name, slc_mode=rule.slc_mode, values=values,
            fixed={k: v for k, v in rule.fixed if k in self.keys}, initial=init, bounds=bnd,
            at_bound=at_bound, std_error_pct=se,
            rmse_mb_s=float(np.sqrt(np.mean(r * r))) * scale,
            initial_rmse_mb_s=float(np.sqrt(initial_loss)) * scale,
            adam_iterations=adam_steps, lbfgs_iterations=n_lbfgs,
            speed_mb_s=np.asarray(self.mb_s, float) + r * scale)

    def _assess(self, pb: Problem, args: tuple, values: Mapping[str, float]) -> tuple:
        """``θ``, scaled residuals, their Jacobian in ``θ`` and the standard errors at ``values``."""
        th = self.theta(pb, values, margin=1e-7)
        r, jac = _residuals_and_jacobian(jnp.asarray(th, self.dtype), *args, leaves=self.leaves,
                                         n_steps=self.n_steps)
        r, jac = np.asarray(r, float), np.asarray(jac, float)
        jac = self._difference_columns(pb, args, th, jac)
        return th, r, jac, self.std_errors(pb, th, r, jac)

    def _difference_columns(self, pb: Problem, args: tuple, th: np.ndarray, jac: np.ndarray) -> np.ndarray:
        """``jac`` with each fitted parameter's zero column replaced by a central difference over the
        smallest of :data:`FD_LOG_STEPS` (in ``log v``) that moves a residual.  The scan places a phase
        boundary on whole steps (``fluid._admit`` snaps a room within its rounding slack), so a
        parameter that sets a boundary can have a zero derivative at the optimum although the curve
        determines it; a parameter the curve does not reach keeps its zero column (undetermined)."""
        jac = jac.copy()
        norm = max(float(np.linalg.norm(jac)), 1e-30)
        u = 1.0 / (1.0 + np.exp(-th))
        dlogv = np.log(pb.hi / pb.lo) * u * (1 - u)
        for i in range(len(self.keys)):
            if pb.mask[i] <= 0 or np.linalg.norm(jac[:, i]) > 1e-9 * norm or dlogv[i] <= 1e-12:
                continue
            for step in FD_LOG_STEPS:
                h = step / dlogv[i]
                lo, hi = th.copy(), th.copy()
                lo[i] -= h
                hi[i] += h
                r_lo, r_hi = (np.asarray(_residuals(jnp.asarray(t, self.dtype), *args, leaves=self.leaves,
                                                    n_steps=self.n_steps), float) for t in (lo, hi))
                col = (r_hi - r_lo) / (2 * h)
                if np.linalg.norm(col) > 1e-9 * norm:
                    jac[:, i] = col
                    break
        return jac

    def std_errors(self, pb: Problem, theta: np.ndarray, r: np.ndarray,
                   jac: np.ndarray) -> dict[str, float | None]:
        """Relative standard errors (%) from the Gauss-Newton covariance (module docstring)."""
        fitted = [i for i in range(len(self.keys)) if pb.mask[i] > 0]
        u = 1.0 / (1.0 + np.exp(-theta))
        dlogv = np.log(pb.hi / pb.lo) * u * (1 - u)  # d log v / d θ
        out: dict[str, float | None] = {self.keys[i]: None for i in fitted}
        cols = [i for i in fitted if np.linalg.norm(jac[:, i]) > 1e-9 * max(np.linalg.norm(jac), 1e-30)
                and dlogv[i] > 1e-12]
        if not cols:
            return out
        j = jac[:, cols] / dlogv[cols]
        dof = max(len(r) - len(cols), 1)
        s2 = float(np.sum(r * r)) / dof
        try:
            cov = s2 * np.linalg.inv(j.T @ j)
        except np.linalg.LinAlgError:
            return out
        for c, i in enumerate(cols):
            var = cov[c, c]
            out[self.keys[i]] = float(100.0 * np.sqrt(var)) if np.isfinite(var) and var >= 0 else None
        return out

    def speed(self, drive: Drive) -> np.ndarray:
        """The model's speed (MB/s) of ``drive`` at the samples."""
        return np.asarray(_speed(drive, self.workload, self.gb, self.n_steps), float)


def choose(fits: Mapping[str, RuleFit], tolerance: float, floor_mb_s: float = 0.0) -> str:
    """The simplest rule (fewest fitted parameters, then :data:`RULES` order) whose RMSE is within
    ``tolerance`` (a fraction) of the best, or within ``floor_mb_s`` of it (the round-off of fits that
    are exact up to it)."""
    best = min(f.rmse_mb_s for f in fits.values())
    ok = [n for n, f in fits.items() if f.rmse_mb_s <= best * (1 + tolerance) + floor_mb_s]
    order = list(RULES)
    return min(ok, key=lambda n: (len(RULES[n].fitted), order.index(n)))
