"""Lumped RC thermal network of an M.2 drive: controller, NAND and case nodes.

``C dT/dt = P − L (T − T_amb)`` with ``C = diag(c_ctrl, c_nand, c_case)`` (J/K) and ``L`` the
conductance Laplacian (W/K): ``L_ii = Σ_j g_ij + g_i,amb``, ``L_ij = −g_ij``.  Node 0 is the
controller package, 1 the NAND packages, 2 the case (PCB, and the heatsink when one is fitted);
parameters come from ``ssdx.catalog.COOLING``.

With power constant over a step of ``dt`` the update is exact, not an Euler step::

    T(t+dt) = T_eq + Φ (T(t) − T_eq),   T_eq = T_amb + R P,   R = L⁻¹,   Φ = expm(−C⁻¹ L dt)

so it is stable for any ``dt`` and its steady state is exactly ``T_amb + R·P`` (energy balance).
``−C⁻¹L`` is a Metzler matrix, so ``Φ ≥ 0`` element-wise: temperatures stay between ambient and the
equilibrium of the largest power applied.

The **composite temperature** the firmware reports and compares with TMT1/TMT2 is ``w·T_ctrl + (1−w)·T_nand``
(``power.sensor_ctrl_weight = w``, Kelvin).  The NVMe specification does not say where it is measured (KIOXIA,
"How thermal throttling of NVMe SSDs works" (Japanese technical article, revised from a Qiita post of January
2020)); a controller-die sensor is ``w = 1``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg

from ssdx.models.thermal.params import Power, Thermal


class Network(NamedTuple):
    """Discretised network of one drive: ``Phi`` (3, 3) step propagator, ``R`` (3, 3) K/W."""

    phi: jax.Array
    r: jax.Array


def laplacian(th: Thermal) -> jax.Array:
    """Conductance matrix ``L`` (3, 3), W/K."""
    a, b, c = th.g_ctrl_nand, th.g_ctrl_case, th.g_nand_case
    return jnp.stack([
        jnp.stack([a + b + th.g_ctrl_amb, -a, -b]),
        jnp.stack([-a, a + c + th.g_nand_amb, -c]),
        jnp.stack([-b, -c, b + c + th.g_case_amb]),
    ])


def capacities(th: Thermal) -> jax.Array:
    """Heat capacities (3,), J/K."""
    return jnp.stack([th.c_ctrl, th.c_nand, th.c_case])


def network(th: Thermal, dt_s: jax.Array | None = None) -> Network:
    """Propagator over one step and the thermal resistance matrix (computed once per drive)."""
    lap = laplacian(th)
    dt = th.dt_s if dt_s is None else dt_s
    a = -lap / capacities(th)[:, None]
    return Network(phi=jax.scipy.linalg.expm(a * dt), r=jnp.linalg.inv(lap))


def node_powers(p_ctrl: jax.Array, p_nand: jax.Array) -> jax.Array:
    """Power vector (3,) over the nodes; the case has no source."""
    return jnp.stack([p_ctrl, p_nand, jnp.zeros_like(p_ctrl)])


def equilibrium(net: Network, th: Thermal, p: jax.Array) -> jax.Array:
    """Steady-state node temperatures under constant node power ``p`` (3,), K."""
    return th.ambient_k + net.r @ p


def advance(net: Network, th: Thermal, temps: jax.Array, p: jax.Array) -> jax.Array:
    """Node temperatures (3,) after one step at constant node power ``p``, K."""
    eq = equilibrium(net, th, p)
    return eq + net.phi @ (temps - eq)


def composite(power: Power, temps: jax.Array) -> jax.Array:
    """Composite temperature reported to the host, K (module docstring)."""
    w = power.sensor_ctrl_weight
    return w * temps[0] + (1.0 - w) * temps[1]
