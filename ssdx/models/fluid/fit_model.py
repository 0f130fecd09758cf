"""The fluid model as a function of a fill fit's parameter vector (:mod:`ssdx.models.fluid.fit`).

The fittable drive numbers (:data:`PARAMS`) and cache-size rules (:data:`RULES`); a ``Drive`` with some
leaves replaced (:func:`with_values`); the model's mean speed over a measured sample's GB interval
(:func:`model_speed`, exact within a scan step: :func:`busy_time_at`); and the compiled loss, its
batched form, the Adam and L-BFGS loops and the Jacobian of the residuals, shared by every rule
(:class:`Problem`).  Speeds in MB/s (10^6 B/s), capacities in GB (10^9 B), times in us as in
``ssdx.params``."""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ssdx import params
from ssdx.core.optim import lbfgs_minimise
from ssdx.models.fluid import model as fluid
from ssdx.params import Drive, Workload


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
FIRST_T, FIRST_GB, THROUGH = "drive.first_slc_t_prog_us", "drive.first_slc_gb", "drive.fold_while_writing"
PACED = "drive.paced_folding"
MODE = "drive.slc_mode"

PARAMS: dict[str, Param] = {p.key: p for p in (
    Param(T_SLC, ("nand", "t_prog_slc_us"), 1.0, "us", "pSLC page program time"),
    Param(T_PROG, ("nand", "t_prog_us"), 1.0, "us", "native page program time"),
    Param(FOLD, ("fold_efficiency",), 1.0, "", "fold efficiency (fold scheduling, re-encoding)"),
    Param(RESERVE, ("reserve_fraction",), 1.0, "", "fraction of raw NAND reserved"),
    Param(STATIC, ("static_slc_bytes",), 1e9, "GB", "static pSLC region"),
    Param(CAP, ("max_dynamic_slc_bytes",), 1e9, "GB", "cap of the dynamic pSLC cache"),
    Param(FIRST_T, ("first_slc_t_prog_us",), 1.0, "us", "page program time of the cache's first region"),
    Param(FIRST_GB, ("first_slc_bytes",), 1e9, "GB", "first region of a dynamic cache"),
    # a behaviour, never fitted: the rules fix it at 0 or 1
    Param(THROUGH, ("fold_while_writing",), 1.0, "", "past the cache: through pSLC, folded at once"),
    Param(PACED, ("paced_folding",), 1.0, "", "folding paced from the cache's end"),
)}
MODE_LEAF = ("slc_mode",)


@dataclasses.dataclass(frozen=True)
class Rule:
    """A cache-size rule: the pSLC mode it sets, the parameters it fits, and the config values it fixes
    (dropped where ``ssdx.params`` lacks the field)."""

    name: str
    slc_mode: str
    fitted: tuple[str, ...]
    fixed: tuple[tuple[str, float], ...] = ()


_ONE_SPEED, _DIRECT, _THROUGH = ((FIRST_T, 0.0), (FIRST_GB, 0.0)), ((THROUGH, 0.0),), ((THROUGH, 1.0),)
_BASE_RULES = (
    Rule("dynamic", "dynamic", (T_SLC, T_PROG, FOLD, RESERVE), ((STATIC, 0.0), (CAP, 0.0), *_ONE_SPEED,
                                                                 *_DIRECT)),
    Rule("capped", "dynamic", (T_SLC, T_PROG, FOLD, RESERVE, CAP), ((STATIC, 0.0), *_ONE_SPEED, *_DIRECT)),
    Rule("static", "static", (T_SLC, T_PROG, STATIC), ((CAP, 0.0), *_ONE_SPEED, *_DIRECT)),
    Rule("hybrid", "hybrid", (T_SLC, T_PROG, FOLD, STATIC, CAP), (*_ONE_SPEED, *_DIRECT)),
    # folding while writing: past the cache the curve sets t_prog / η together (both act only through
    # the fold), so η keeps the base drive's value
    Rule("static_through", "static", (T_SLC, T_PROG, STATIC), ((CAP, 0.0), *_ONE_SPEED, *_THROUGH)),
    Rule("capped_through", "dynamic", (T_SLC, T_PROG, RESERVE, CAP), ((STATIC, 0.0), *_ONE_SPEED,
                                                                       *_THROUGH)),
    # a cache with two speeds: a capped dynamic cache whose first region has its own program time, or
    # a static region at its own program time before the dynamic one
    Rule("two_speed", "dynamic", (FIRST_T, FIRST_GB, T_SLC, T_PROG, FOLD, RESERVE, CAP),
         ((STATIC, 0.0), *_DIRECT)),
    Rule("two_speed_through", "dynamic", (FIRST_T, FIRST_GB, T_SLC, T_PROG, RESERVE, CAP),
         ((STATIC, 0.0), *_THROUGH)),
    Rule("hybrid_two_speed", "hybrid", (FIRST_T, T_SLC, T_PROG, FOLD, STATIC, CAP),
         ((FIRST_GB, 0.0), *_DIRECT)),
)
#: the suffix of a rule's variant that folds paced from the cache's end (``drive.paced_folding``)
PACED_SUFFIX = "_paced"
RULES: dict[str, Rule] = {r.name: r for r in (
    *(dataclasses.replace(r, fixed=(*r.fixed, (PACED, 0.0))) for r in _BASE_RULES),
    # the modes that lend the cache from the user capacity fold it (a static region is never folded);
    # past the cache one speed sets t_prog, η and the reserve together, so η and the reserve keep the
    # base drive's values and the fold's cost follows from the NAND's times
    *(Rule(r.name + PACED_SUFFIX, r.slc_mode, tuple(k for k in r.fitted if k not in (FOLD, RESERVE)),
           (*r.fixed, (PACED, 1.0)))
      for r in _BASE_RULES if r.slc_mode in ("dynamic", "hybrid")),
)}


#: the rules fitted when ``fit.rules`` is not given: every behaviour but the paced-folding variants,
#: which ``fit.paced_folding`` adds when none of these explains the curve
BASE_RULES = tuple(r.name for r in _BASE_RULES)


def paced_variant(name: str) -> str | None:
    """The name of rule ``name``'s paced-folding variant (itself when it is one; ``None`` when the rule's
    pSLC mode never folds)."""
    if name.endswith(PACED_SUFFIX):
        return name
    v = name + PACED_SUFFIX
    return v if v in RULES else None


def has_leaf(path: tuple[str, ...]) -> bool:
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
    return tuple(k for k, p in PARAMS.items() if has_leaf(p.leaf))


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


def get_leaf(tree: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        tree = getattr(tree, name)
    return tree


def set_leaf(tree: Any, path: tuple[str, ...], value: Any) -> Any:
    if len(path) == 1:
        return dataclasses.replace(tree, **{path[0]: value})
    return dataclasses.replace(tree, **{path[0]: set_leaf(getattr(tree, path[0]), path[1:], value)})


def with_values(drive: Drive, leaves: tuple[tuple[str, ...], ...], values: jax.Array) -> Drive:
    """``drive`` with each leaf path of ``leaves`` set to the matching entry of ``values`` (leaf units)."""
    for i, path in enumerate(leaves):
        drive = set_leaf(drive, path, values[i].astype(jnp.asarray(get_leaf(drive, path)).dtype))
    return drive


def busy_time_at(out: fluid.StepOut, r: fluid.Rates, x_bytes: jax.Array,
                 paced: jax.Array | float = 0.0) -> jax.Array:
    """Busy seconds the model takes to write its first ``x_bytes`` host bytes (clipped to the run).

    Exact within a step: a step writes its pSLC bytes (first region first), then direct native, then folding
    (``fluid._write``) at the mode rates, so the time is piecewise linear in ``x`` with the phase
    boundaries where the capacity accounting puts them, whatever ``n_steps`` (with idle gaps,
    ``workload.burst_gb > 0``, a step may hold two such sequences and this is an approximation).
    Differentiable in the rates and in the bytes each mode took, hence in the boundaries.  ``paced``
    (``drive.paced_folding``): the rate past the cache depends on the state (``fluid.paced_ratio``), so
    each step's own time per byte past the cache is used.
    """
    n = out.written_bytes.shape[0]
    delta = out.written_bytes[0]
    busy = out.mode_time_s[:, 0] + out.mode_time_s[:, 1] + out.mode_time_s[:, 2]
    start = jnp.cumsum(busy) - busy
    x = jnp.clip(x_bytes, 0.0, out.written_bytes[-1])
    k = jnp.clip(jnp.floor(x / delta), 0, n - 1).astype(jnp.int32)
    o = x - k * delta
    a = out.mode_bytes[k]
    st = out.first_bytes[k]  # the step's pSLC bytes in the cache's first region, written before the rest
    extra = 1.0 / r.slc_first - 1.0 / r.slc  # s/byte of the first region over the rest: 0 when equal
    t_dir = out.mode_time_s[k, 1]
    has_dir = a[:, 1] > 0
    step_rate = jnp.where(has_dir, a[:, 1], 1.0) / jnp.where(has_dir & (t_dir > 0), t_dir, 1.0)
    past = jnp.where((paced > 0) & has_dir, step_rate, r.native)
    return (start[k] + jnp.minimum(o, a[:, 0]) / r.slc + jnp.minimum(o, st) * extra
            + jnp.clip(o - a[:, 0], 0.0, a[:, 1]) / past
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
    paced = drive.paced_folding
    dt = busy_time_at(out, r, hi, paced) - busy_time_at(out, r, lo, paced)
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


def values(theta, mask, fixed, lo, hi):
    u = jax.nn.sigmoid(theta)
    return jnp.where(mask > 0, lo * jnp.exp(u * jnp.log(hi / lo)), fixed)


def _residual(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    d = with_values(drive, leaves, values(theta, mask, fixed, lo, hi))
    return (model_speed(d, workload, gb[0], gb[1], n_steps) - mb_s) / scale


def _loss(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    r = _residual(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps)
    return jnp.mean(r * r)


_STATIC = ("leaves", "n_steps")


@partial(jax.jit, static_argnames=_STATIC)
def loss_batch(thetas, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    f = partial(_loss, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    return jax.vmap(f)(thetas)


@partial(jax.jit, static_argnames=(*_STATIC, "steps"))
def adam(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, lr, leaves, n_steps, steps):
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
def lbfgs(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, tol, leaves, n_steps, steps,
           patience):
    fun = partial(_loss, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                  mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    # the coordinates not fitted enter through `fixed` only: zero gradient
    best, k, _ = lbfgs_minimise(fun, theta, tol, steps, patience, guard_nonfinite=True, recheck_last=True)
    return best, k


residuals = jax.jit(_residual, static_argnames=_STATIC)


@partial(jax.jit, static_argnames=_STATIC)
def residuals_and_jacobian(theta, mask, fixed, lo, hi, drive, workload, gb, mb_s, scale, leaves, n_steps):
    f = partial(_residual, mask=mask, fixed=fixed, lo=lo, hi=hi, drive=drive, workload=workload, gb=gb,
                mb_s=mb_s, scale=scale, leaves=leaves, n_steps=n_steps)
    return f(theta), jax.jacfwd(f)(theta)


@partial(jax.jit, static_argnames="n_steps")
def speed(drive, workload, gb, n_steps):
    return model_speed(drive, workload, gb[0], gb[1], n_steps)
