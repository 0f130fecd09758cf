"""TMT1/TMT2 selection: exhaustive grid in the exact model, and Optax on the relaxed model.

Problem: for one drive, workload, cooling and ambient, choose the host's HCTM thresholds
(Set Features 0x10, integer Kelvin) maximising the bytes written in the window subject to the
composite temperature never exceeding a limit ``T_lim``::

    maximise  written_gb(TMT1, TMT2)   s.t.  max_t composite(t) <= T_lim,  TMT2 > TMT1

**Grid**: every integer pair of a range, each evaluated in the exact model (one vmapped batch).

**Gradient**: the throttle logic is replaced by its logistic relaxation of width ``sharpness`` (K)
(``ssdx.models.thermal.hctm``); the relaxed run is differentiable in the thresholds.  Adam minimises::

    −written_gb / scale + μ·relu(max composite − (T_lim − margin))² + μ·relu(TMT1 + 1 − TMT2)²

then the answer is rounded to integer Kelvin and **re-evaluated in the exact model**; the 3×3
integer neighbourhood is checked and the best feasible point is kept (if none is feasible the pair
is lowered 1 K at a time until it is).  Every exact and relaxed model call is counted.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ssdx.models.thermal import coupled


def _with_tmt(th, tmt1, tmt2):
    return dataclasses.replace(th, tmt1_k=jnp.asarray(tmt1, th.ambient_k.dtype),
                               tmt2_k=jnp.asarray(tmt2, th.ambient_k.dtype))


@partial(jax.jit, static_argnames="n_steps")
def _exact_batch(drive, workload, power, th, tmt1, tmt2, n_steps):
    def one(t1, t2):
        m = coupled.metrics(drive, workload, power, _with_tmt(th, t1, t2), n_steps)
        return m["written_gb"], m["max_composite_k"], m["throttled_s"]
    return jax.vmap(one)(tmt1, tmt2)


def exact(trees: tuple, n_steps: int, tmt1: np.ndarray, tmt2: np.ndarray) -> dict[str, np.ndarray]:
    """Exact-model written GB, max composite K and throttled seconds for each threshold pair."""
    t1 = np.atleast_1d(np.asarray(tmt1, float))
    t2 = np.atleast_1d(np.asarray(tmt2, float))
    w, tmax, thr = jax.device_get(_exact_batch(*trees, t1, t2, n_steps=n_steps))
    return {"tmt1_k": t1, "tmt2_k": t2, "written_gb": np.asarray(w, float),
            "max_composite_k": np.asarray(tmax, float), "throttled_s": np.asarray(thr, float)}


def grid(trees: tuple, n_steps: int, temp_limit_k: float, tmt1_range: tuple[int, int],
         tmt2_range: tuple[int, int]) -> dict[str, Any]:
    """Every integer pair with TMT2 > TMT1 in the ranges (inclusive); the best feasible one."""
    a = np.arange(tmt1_range[0], tmt1_range[1] + 1)
    b = np.arange(tmt2_range[0], tmt2_range[1] + 1)
    t1, t2 = (x.ravel() for x in np.meshgrid(a, b, indexing="ij"))
    keep = t2 > t1
    res = exact(trees, n_steps, t1[keep], t2[keep])
    feasible = res["max_composite_k"] <= temp_limit_k
    if not feasible.any():
        raise ValueError(f"no grid point keeps the composite temperature <= {temp_limit_k} K; "
                         "widen the TMT ranges or raise optimize.temp_limit_k")
    i = int(np.argmax(np.where(feasible, res["written_gb"], -np.inf)))
    return {"tmt1_k": float(res["tmt1_k"][i]), "tmt2_k": float(res["tmt2_k"][i]),
            "objective": float(res["written_gb"][i]), "max_composite_k": float(res["max_composite_k"][i]),
            "evaluations": int(keep.sum()), "table": res, "feasible": feasible}


def relaxed_loss(theta: jax.Array, trees: tuple, n_steps: int, temp_limit_k: float, sharpness: float,
                 scale: float, margin: float, mu: float) -> tuple[jax.Array, tuple]:
    """Penalised objective of the relaxed model (module docstring) and (written GB, max composite K)."""
    drive, workload, power, th = trees
    th = _with_tmt(th, theta[0], theta[1])
    final, out = coupled.run(drive, workload, power, th, n_steps, sharpness=jnp.asarray(sharpness))
    written = final.written_bytes / 1e9
    tmax = jnp.max(out.composite_k)
    loss = (-written / scale + mu * jax.nn.relu(tmax - (temp_limit_k - margin)) ** 2
            + mu * jax.nn.relu(theta[0] + 1.0 - theta[1]) ** 2)
    return loss, (written, tmax)


def optimize(trees: tuple, n_steps: int, temp_limit_k: float, init: tuple[float, float],
             steps: int = 60, learning_rate: float = 0.5, sharpness: float = 1.0, margin: float = 0.5,
             mu: float = 1.0, progress=None) -> dict[str, Any]:
    """Adam on the relaxed model, then exact re-evaluation with an integer neighbourhood check."""
    scale = float(exact(trees, n_steps, [0.0], [0.0])["written_gb"][0])  # unthrottled bytes: O(1) objective
    grad_fn = jax.jit(jax.value_and_grad(relaxed_loss, has_aux=True), static_argnums=(2,))
    opt = optax.adam(learning_rate)
    theta = jnp.asarray(init, dtype=trees[3].ambient_k.dtype)
    state = opt.init(theta)
    path = []
    for i in range(steps):
        (loss, (written, tmax)), g = grad_fn(theta, trees, n_steps, temp_limit_k, sharpness, scale,
                                             margin, mu)
        path.append({"step": i, "tmt1_k": float(theta[0]), "tmt2_k": float(theta[1]), "loss": float(loss),
                     "relaxed_written_gb": float(written), "relaxed_max_composite_k": float(tmax)})
        updates, state = opt.update(g, state, theta)
        theta = optax.apply_updates(theta, updates)
        if progress is not None:
            progress(i)
    relaxed_evals = steps
    t1, t2 = (int(round(float(x))) for x in theta)
    cand1, cand2 = np.meshgrid(np.arange(t1 - 1, t1 + 2), np.arange(t2 - 1, t2 + 2), indexing="ij")
    cand1, cand2 = cand1.ravel(), cand2.ravel()
    ok = cand2 > cand1
    res = exact(trees, n_steps, cand1[ok], cand2[ok])
    exact_evals = int(ok.sum()) + 1  # + the unthrottled scale run
    feasible = res["max_composite_k"] <= temp_limit_k
    while not feasible.any():
        t1, t2 = t1 - 1, t2 - 1
        res = exact(trees, n_steps, [t1], [t2])
        exact_evals += 1
        feasible = res["max_composite_k"] <= temp_limit_k
        if t1 < 200:
            raise ValueError("no feasible thresholds found below the optimiser's answer")
    i = int(np.argmax(np.where(feasible, res["written_gb"], -np.inf)))
    return {"tmt1_k": float(res["tmt1_k"][i]), "tmt2_k": float(res["tmt2_k"][i]),
            "objective": float(res["written_gb"][i]), "max_composite_k": float(res["max_composite_k"][i]),
            "relaxed_tmt_k": [float(theta[0]), float(theta[1])], "path": path,
            "evaluations": relaxed_evals + exact_evals, "relaxed_evaluations": relaxed_evals,
            "exact_evaluations": exact_evals, "unthrottled_written_gb": scale}
