"""The L-BFGS loop the fits share (``ssdx.models.fluid.fit``, ``ssdx.models.thermal.fit_rc``)."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax


def lbfgs_minimise(fun: Callable[[jax.Array], jax.Array], theta: jax.Array, tol: float, steps: int,
                   patience: int, guard_nonfinite: bool = False,
                   recheck_last: bool = False) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Minimise ``fun`` from ``theta`` with L-BFGS (``optax.lbfgs``, backtracking line search of at most
    20 steps), to be traced inside a jitted caller (``steps`` and ``patience`` static).

    Stops after ``steps`` iterations, when the gradient norm is below ``tol``, or after ``patience``
    iterations without a lower value (float32 round-off).  ``guard_nonfinite``: a step to a point with a
    non-finite coordinate is not taken.  ``recheck_last``: the point the loop ends on is evaluated too.
    Returns the best point visited, the iterations run and the value at each iteration (NaN beyond)."""
    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
        max_backtracking_steps=20, store_grad=True))
    vg = optax.value_and_grad_from_state(fun)

    def cond(c):
        k, gnorm, stalled = c[2], c[3], c[4]
        return (k < steps) & (gnorm > tol) & (stalled < patience)

    def body(c):
        x, s, k, _, stalled, hist, best_x, best_v = c
        v, g = vg(x, state=s)
        u, s = opt.update(g, s, x, value=v, grad=g, value_fn=fun)
        hist = hist.at[k].set(v)
        improved = v < best_v
        best_x = jnp.where(improved, x, best_x)
        best_v = jnp.minimum(v, best_v)
        stalled = jnp.where(improved, 0, stalled + 1)
        x_new = optax.apply_updates(x, u)
        if guard_nonfinite:
            x_new = jnp.where(jnp.all(jnp.isfinite(x_new)), x_new, x)
        return (x_new, s, k + 1, optax.tree_utils.tree_l2_norm(g), stalled, hist, best_x, best_v)

    inf = jnp.asarray(jnp.inf, theta.dtype)
    hist0 = jnp.full((steps,), jnp.nan, theta.dtype)
    c = (theta, opt.init(theta), jnp.asarray(0), inf, jnp.asarray(0), hist0, theta, inf)
    x, _, k, _, _, hist, best_x, best_v = jax.lax.while_loop(cond, body, c)
    if recheck_last:
        best_x = jnp.where(fun(x) < best_v, x, best_x)
    return best_x, k, hist
