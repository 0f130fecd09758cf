"""Fit the fluid model's drive parameters to a measured fill curve, with Optax, through the model itself.

A fill curve (``ssdx.workloads.fill_curve``: write speed against GB written while a whole drive is
filled) shows a few plateaus — pSLC, direct native, folding (``ssdx.models.fluid.model``) — whose speeds
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
  only hybrid reaches a cache above ``U/b`` (``S >= K - U/b``);
* ``static_through``, ``capped_through`` — the same caches folding while they write
  (``drive.fold_while_writing``): past the cache the curve sets ``t_prog / η_fold`` together, so ``η_fold``
  keeps the base drive's value;
* ``two_speed``, ``two_speed_through``, ``hybrid_two_speed`` — a cache whose first region has its own
  program time (``drive.first_slc_t_prog_us``; the first ``drive.first_slc_gb`` of a capped dynamic
  cache, or a hybrid's static region), the first from the first plateau;
* ``<rule>_paced`` — each rule whose cache is lent from the user capacity (``dynamic``, ``hybrid``
  modes) folding paced from the cache's end (``drive.paced_folding``): one speed past the cache instead
  of direct writes, then folding; that one speed sets ``t_prog``, ``η_fold`` and the reserve together, so
  the last two keep the base drive's values.  Not among the rules fitted by default
  (:data:`BASE_RULES`): the job adds them when no base rule is physical with the curve's phase count
  (``fit.paced_folding``).

An error alone does not tell these from each other (a post-cache speed through pSLC is a speed, as a direct
one is): which one is kept is decided by the published bounds and the curve's phases
(:mod:`ssdx.models.fluid.fit_choice`); :func:`choose` is the choice by error alone.

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
bring no lower loss; the best point visited is kept — as ``ssdx.models.thermal.fit_rc`` does.

**Uncertainty.**  Relative standard errors from the Gauss-Newton approximation at the optimum:
``cov(log v) = s²·(JᵀJ)⁻¹`` with ``J`` the Jacobian of the residuals in ``log v`` and ``s²`` the
residual variance.  Where a fitted parameter's automatic derivative is zero because the scan snaps a
phase boundary to whole steps, its column is a central difference instead (relative steps
:data:`FD_LOG_STEPS`).  A parameter the curve does not reach (the folding efficiency of a curve that
stops before folding) has a zero column even so and no standard error (``None``, reported as undetermined);
it is set back to the base drive's value when that fits as well (within its bounds).

**Measured phases and where the curve leaves the model**: :mod:`ssdx.models.fluid.phases`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax.numpy as jnp
import numpy as np

from ssdx import params
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid.fit_model import (
    BASE_RULES,
    CAP,
    FIRST_GB,
    FIRST_T,
    FOLD,
    MODE,
    MODE_LEAF,
    PACED,
    PACED_SUFFIX,
    PARAMS,
    RESERVE,
    RULES,
    STATIC,
    T_PROG,
    T_SLC,
    THROUGH,
    Param,
    Problem,
    Rule,
    adam,
    available_params,
    get_leaf,
    lbfgs,
    loss_batch,
    model_speed,
    paced_variant,
    residuals,
    residuals_and_jacobian,
    rule_missing,
    set_leaf,
    speed,
    values,
)
from ssdx.models.fluid.phases import relative_noise, residual_regions, segment
from ssdx.params import Drive, Workload

__all__ = ["BASE_RULES", "CAP", "FIRST_GB", "FIRST_T", "FOLD", "MODE", "PACED", "PACED_SUFFIX", "PARAMS",
           "RESERVE", "RULES", "STATIC", "THROUGH", "T_PROG", "T_SLC", "Fitter", "Param", "Rule",
           "RuleFit", "available_params", "bounds", "choose", "initial_values", "model_speed",
           "paced_variant", "relative_noise", "residual_regions", "rule_missing", "segment"]

#: Program-time bounds: within this factor of the plateau estimate, either way.
TIME_RANGE = 4.0
#: Measured-phase segmentation (module docstring).
#: Steps in ``log v`` (relative changes of a parameter) tried, smallest first, for a central difference
#: where a fitted parameter's automatic derivative is zero (:meth:`Fitter._difference_columns`).
FD_LOG_STEPS = (1e-3, 1e-2, 5e-2)
#: Rules whose RMSEs differ by less than this fraction of the mean measured speed tie (:func:`choose`).
RMSE_FLOOR = 1e-3
#: A fitted value within this relative distance (log) of a bound is reported at the bound.
AT_BOUND = 1e-3
#: Rows of a batched loss evaluation (the default coordinate search's 32 values and the current one).
BATCH = 33


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
    ``t_prog_us`` (inverts ``fluid.die_time``'s folding time), clipped to [0.05, 1].  A speed of 0 or
    less (no reader yields one: ``ssdx.workloads.fill_curve``) gives 0.05, the limit as the speed goes
    to 0, instead of dividing by zero."""
    if not speed_mb_s > 0.0:
        return 0.05
    dtype = jnp.asarray(drive.dies).dtype
    d = set_leaf(set_leaf(drive, ("nand", "t_prog_us"), jnp.asarray(t_prog_us, dtype)),
                 ("fold_efficiency",), jnp.asarray(1.0, dtype))
    die = fluid.die_time(d)
    f = _f(fluid.fold_ratio(d))
    program = (1.0 + f) * _f(die.native)  # s/byte of the programs at η = 1
    rest = _f(die.fold) - program  # read and erase, s/byte
    room = 1.0 / (speed_mb_s * 1e6) - rest
    return float(np.clip(program / room, 0.05, 1.0)) if room > 0 else 1.0


def through_program_time_us(drive: Drive, t_slc_us: float, speed_mb_s: float) -> float:
    """Native page program time (us) at which writing through pSLC and folding at once
    (``drive.fold_while_writing``) runs at ``speed_mb_s``, with pSLC program time ``t_slc_us`` and the
    drive's ``η_fold`` (inverts ``fluid.die_time``'s ``through``); the die-limited time of the speed
    when the pSLC program alone is slower."""
    dtype = jnp.asarray(drive.dies).dtype
    d = set_leaf(drive, ("nand", "t_prog_slc_us"), jnp.asarray(t_slc_us, dtype))
    d = set_leaf(d, ("first_slc_t_prog_us",), jnp.asarray(0.0, dtype))
    d = set_leaf(d, ("nand", "t_prog_us"), jnp.asarray(1.0, dtype))
    die = fluid.die_time(d)
    eta = _f(drive.fold_efficiency)
    per_us = _f(die.native) / eta  # s/byte of the native program per us of page time, at η
    room = 1.0 / (max(speed_mb_s, 1e-3) * 1e6) - (_f(die.through) - per_us)
    return room / per_us if room > 0 else die_limited_time_us(drive, speed_mb_s)


def initial_values(phases: Sequence[Mapping[str, Any]], drive: Drive, rule: Rule) -> dict[str, float]:
    """Starting values (config units) of ``rule``'s parameters from the measured plateaus ``phases``
    (:func:`segment`; module docstring).  A two-speed rule takes the first plateau for its static region
    and the second for its dynamic one; a rule that folds while writing inverts its post-cache plateau
    through the fold (:func:`through_program_time_us`)."""
    two = FIRST_T in rule.fitted
    v = [p["mean_mb_s"] for p in phases]
    ends = [p["end_gb"] for p in phases]
    cache = 1 if two and len(phases) > 2 else 0  # index of the last cache plateau
    v_slc = v[cache]
    v_post = v[cache + 1] if len(v) > cache + 1 else v[-1]
    through = dict(rule.fixed).get(THROUGH, 0.0) > 0
    t_slc = die_limited_time_us(drive, v_slc)
    t_prog = (through_program_time_us(drive, t_slc, v_post) if through
              else die_limited_time_us(drive, v_post))
    cache_end = ends[cache] if len(phases) > cache + 1 else ends[cache] / 2
    init = {T_SLC: t_slc, T_PROG: t_prog, FOLD: fold_efficiency_for(drive, t_prog, v[-1]),
            RESERVE: _f(drive.reserve_fraction), FIRST_T: die_limited_time_us(drive, v[0])}
    if two:
        first = ends[0] if len(phases) > 1 else cache_end / 2
        hybrid = rule.slc_mode == "hybrid"  # the static region is the first; the cap holds the rest
        init[FIRST_GB] = init[STATIC] = first
        init[CAP] = max(cache_end - first, 1e-3 * cache_end) if hybrid else cache_end
    elif rule.name.removesuffix(PACED_SUFFIX) == "hybrid":
        init[STATIC], init[CAP] = cache_end / 2, cache_end / 2
    else:
        init[STATIC] = init[CAP] = cache_end
    return {k: init[k] for k in rule.fitted}


def bounds(drive: Drive, rule: Rule, init: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """Bounds (config units) of ``rule``'s parameters (module docstring).  Raises ``ValueError`` when a
    rule has no room (no raw NAND left for a static region)."""
    u, raw, b = _f(drive.user_bytes) / 1e9, _f(drive.raw_bytes) / 1e9, _f(drive.nand.bits_per_cell)
    rho = _f(drive.reserve_fraction)
    out: dict[str, tuple[float, float]] = {}
    for k in rule.fitted:
        if k in (T_SLC, T_PROG, FIRST_T):
            out[k] = (max(init[k] / TIME_RANGE, 0.01), min(init[k] * TIME_RANGE, 1e6))
        elif k == FOLD:
            out[k] = (0.02, 1.0)
        elif k == RESERVE:
            out[k] = (1e-4, min(0.499, (1.0 - u / raw) * (1 - 1e-6)))
        elif k == STATIC:
            out[k] = (1e-3, (raw * (1 - rho) - u) / b * (1 - 1e-6))
        elif k in (CAP, FIRST_GB):
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
        self.leaves = tuple(PARAMS[k].leaf for k in self.keys) + (MODE_LEAF,)

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
            fixed[i] = fixed_cfg[k] * p.scale if k in fixed_cfg else _f(get_leaf(self.drive, p.leaf))
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
        v = np.asarray(values(jnp.asarray(theta, self.dtype), *[jnp.asarray(a, self.dtype) for a in
                                                                   (pb.mask, pb.fixed, pb.lo, pb.hi)]))
        return {k: round7(float(v[i]) / PARAMS[k].scale) for i, k in enumerate(self.keys) if pb.mask[i] > 0}

    def loss(self, pb: Problem, thetas: np.ndarray) -> np.ndarray:
        """Loss (mean squared residual / mean speed²) of each row of ``thetas``, in batches padded to a
        multiple of :data:`BATCH` rows (one compiled shape for every call)."""
        thetas = np.atleast_2d(np.asarray(thetas, float))
        n = len(thetas)
        rows = -(-n // BATCH) * BATCH
        padded = np.concatenate([thetas, np.repeat(thetas[:1], rows - n, axis=0)])
        return np.asarray(loss_batch(jnp.asarray(padded, self.dtype), *self._args(pb),
                                      leaves=self.leaves, n_steps=self.n_steps))[:n]

    def grid_search(self, pb: Problem, theta: np.ndarray, points: int, rounds: int) -> np.ndarray:
        """Coordinate search (module docstring): each fitted parameter set to the best of ``points`` values
        over its bounds, boundary parameters first; ``rounds`` passes."""
        order = [k for k in (RESERVE, STATIC, CAP, FIRST_GB, FOLD, T_PROG, T_SLC, FIRST_T) if k in self.keys]
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
            th, _ = adam(th, *args, jnp.asarray(learning_rate, self.dtype), leaves=self.leaves,
                          n_steps=self.n_steps, steps=adam_steps)
        n_lbfgs = 0
        if lbfgs_steps > 0:
            th, n_lbfgs = lbfgs(th, *args, jnp.asarray(tol, self.dtype), leaves=self.leaves,
                                 n_steps=self.n_steps, steps=lbfgs_steps, patience=patience)
            n_lbfgs = int(n_lbfgs)
        values = self.values(pb, np.asarray(th, float))
        th_r, r, jac, se = self._assess(pb, args, values)
        base = {k: round7(_f(get_leaf(self.drive, PARAMS[k].leaf)) / PARAMS[k].scale) for k in values}
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
        r, jac = residuals_and_jacobian(jnp.asarray(th, self.dtype), *args, leaves=self.leaves,
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
                r_lo, r_hi = (np.asarray(residuals(jnp.asarray(t, self.dtype), *args, leaves=self.leaves,
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

    def drive_of(self, fit: RuleFit) -> Drive:
        """The base drive with ``fit``'s fitted and fixed values and its pSLC mode (leaf units)."""
        d = self.drive
        for k, v in {**fit.fixed, **fit.values}.items():
            p = PARAMS[k]
            d = set_leaf(d, p.leaf, jnp.asarray(v * p.scale, self.dtype))
        return set_leaf(d, MODE_LEAF, jnp.asarray(params.SLC_MODES.index(fit.slc_mode), self.dtype))

    def speed(self, drive: Drive) -> np.ndarray:
        """The model's speed (MB/s) of ``drive`` at the samples."""
        return np.asarray(speed(drive, self.workload, self.gb, self.n_steps), float)


def choose(fits: Mapping[str, RuleFit], tolerance: float, floor_mb_s: float = 0.0) -> str:
    """The simplest rule (fewest fitted parameters, then :data:`RULES` order) whose RMSE is within
    ``tolerance`` (a fraction) of the best, or within ``floor_mb_s`` of it (the round-off of fits that
    are exact up to it)."""
    best = min(f.rmse_mb_s for f in fits.values())
    ok = [n for n, f in fits.items() if f.rmse_mb_s <= best * (1 + tolerance) + floor_mb_s]
    order = list(RULES)
    return min(ok, key=lambda n: (len(RULES[n].fitted), order.index(n)))
