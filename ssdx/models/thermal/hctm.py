"""NVMe Host Controlled Thermal Management: throttle states, policies and SMART counters.

State machine (NVM Express Base Specification, revision 1.3d (NVM Express, March 2019), Host Controlled
Thermal Management), sampled once per step on the composite temperature ``T`` (Kelvin), with ``h`` the vendor
hysteresis:

* enter **heavy** (TMT2 state) when TMT2 ≠ 0 and ``T ≥ TMT2``; stay while ``T ≥ TMT2 − h``;
* enter **light** (TMT1 state) when TMT1 ≠ 0 and ``T ≥ TMT1``; stay while ``T ≥ TMT1 − h``;
  a drive leaving heavy throttling above ``TMT1 − h`` goes to light, else to normal;
* TMT = 0 disables that level (never entered).

The state is carried as two latches ``m1 = [state ≥ light]`` and ``m2 = [state = heavy]`` so that the
same update, with the step functions replaced by logistic sigmoids of width ``τ`` (``sharpness``, K),
is the smooth relaxation used for gradient-based TMT optimisation (``ssdx.models.thermal.tmt``)::

    m2' = a2 + (1 − a2)·m2·b2,      a2 = σ((T − TMT2)/τ),  b2 = σ((T − TMT2 + h)/τ)
    m1' = m2' ∨ (a1 + (1 − a1)·m1·b1),  x ∨ y = x + y − x·y

As ``τ → 0`` the relaxation becomes the exact machine.  State occupancies are ``p0 = 1 − m1``,
``p1 = m1 − m2``, ``p2 = m2`` (one-hot in the exact model, a mixture in the relaxed one).

**Policies** map states to actions (vendor-specific in the specification).  An action keeps a
fraction of each write mode's throughput, a fraction of the controller's active power (a lower
power state's clocks and voltages) and an optional power-state cap (W):

* ``ssd_a`` — SSD A of KIOXIA, "How thermal throttling of NVMe SSDs works" (Japanese technical article,
  revised from a Qiita post of January 2020): strong throttling as soon as TMT1 is crossed (the heavy action
  in both states), kept until the temperature is well down (a large hysteresis in its presets);
* ``ssd_b`` — that article's SSD B: the light action between TMT1 and TMT2, the heavy one above TMT2.

**SMART / Health log (02h)** counters, accumulated as the log defines them: TMT1TC / TMT2TC count
transitions into the light / heavy state (light from normal only: leaving heavy for light is a move
to a *higher* power state); TTTMT1 / TTTMT2 are seconds in each state; WCTT minutes with
``WCTEMP ≤ T < CCTEMP``; CCTT minutes with ``T ≥ CCTEMP``.  Times are counted in steps and scaled
by ``dt`` when read (:class:`Smart`); reported values are whole units (floor) saturating at
0xFFFFFFFF (:func:`smart_log`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.models.thermal.params import POLICIES, Power, Thermal

U32_MAX = 0xFFFFFFFF


class Action(NamedTuple):
    """Throttle action: throughput fraction, controller active-power fraction, power cap W (0 none)."""

    rate: jax.Array
    ctrl: jax.Array
    cap_w: jax.Array


class Policy(NamedTuple):
    """A throttle policy: the actions of the light and heavy states (normal is no throttling)."""

    name: str
    light: Callable[[Power], Action]
    heavy: Callable[[Power], Action]


def _light(p: Power) -> Action:
    return Action(p.light_rate, p.light_ctrl, p.light_cap_w)


def _heavy(p: Power) -> Action:
    return Action(p.heavy_rate, p.heavy_ctrl, p.heavy_cap_w)


def ssd_a() -> Policy:
    """The KIOXIA article's SSD A (module docstring): strong throttling from TMT1 until cooled."""
    return Policy("ssd_a", light=_heavy, heavy=_heavy)


def ssd_b() -> Policy:
    """The KIOXIA article's SSD B (module docstring): light between TMT1 and TMT2, heavy above TMT2."""
    return Policy("ssd_b", light=_light, heavy=_heavy)


FACTORIES: dict[str, Callable[[], Policy]] = {"ssd_a": ssd_a, "ssd_b": ssd_b}
assert tuple(FACTORIES) == POLICIES  # codes in Power.policy index this order


def actions(power: Power) -> tuple[Action, Action, Action]:
    """Actions of the normal, light and heavy states under the drive's policy (numeric code)."""
    normal = Action(jnp.ones_like(power.light_rate), jnp.ones_like(power.light_ctrl),
                    jnp.zeros_like(power.light_cap_w))
    per_policy = [FACTORIES[name]() for name in POLICIES]

    def pick(state: str) -> Action:
        out = getattr(per_policy[0], state)(power)
        for i, pol in enumerate(per_policy[1:], start=1):
            other = getattr(pol, state)(power)
            out = Action(*(jnp.where(power.policy == i, b, a) for a, b in zip(out, other)))
        return out

    return normal, pick("light"), pick("heavy")


def _ge(x: jax.Array, threshold: jax.Array, sharpness: jax.Array | None) -> jax.Array:
    """``[x >= threshold]`` as 0/1, or its logistic relaxation of width ``sharpness`` (K)."""
    if sharpness is None:
        return (x >= threshold).astype(x.dtype)
    return jax.nn.sigmoid((x - threshold) / sharpness)


def update(m1: jax.Array, m2: jax.Array, temp_k: jax.Array, th: Thermal, hysteresis_k: jax.Array,
           sharpness: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Next latches ``(m1, m2)`` from the composite temperature (module docstring)."""
    on1 = (th.tmt1_k > 0).astype(temp_k.dtype)
    on2 = (th.tmt2_k > 0).astype(temp_k.dtype)
    a1 = on1 * _ge(temp_k, th.tmt1_k, sharpness)
    b1 = on1 * _ge(temp_k, th.tmt1_k - hysteresis_k, sharpness)
    a2 = on2 * _ge(temp_k, th.tmt2_k, sharpness)
    b2 = on2 * _ge(temp_k, th.tmt2_k - hysteresis_k, sharpness)
    m2n = a2 + (1.0 - a2) * m2 * b2
    light = a1 + (1.0 - a1) * m1 * b1
    m1n = m2n + light - m2n * light
    return m1n, m2n


def occupancy(m1: jax.Array, m2: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(normal, light, heavy) weights from the latches."""
    return 1.0 - m1, m1 - m2, m2


class Smart(NamedTuple):
    """Accumulators of the Health log's thermal fields (floats inside the scan).

    Times are carried as **step counts** (occupancy-weighted in the relaxed model) and scaled by
    ``dt_s`` when read: a whole number of steps is exact in float32 up to 2**24 steps, whereas adding
    a fractional ``dt`` every step drifts (1200 x 0.1 s summed in float32 gives 119.9987 s, which the
    log would floor to 119).  The ``*_s`` properties are the seconds.
    """

    tmt1_transitions: jax.Array
    tmt2_transitions: jax.Array
    tmt1_steps: jax.Array
    tmt2_steps: jax.Array
    warning_steps: jax.Array
    critical_steps: jax.Array
    dt_s: jax.Array

    @property
    def time_tmt1_s(self) -> jax.Array:
        """Seconds in the light (TMT1) state."""
        return self.tmt1_steps * self.dt_s

    @property
    def time_tmt2_s(self) -> jax.Array:
        """Seconds in the heavy (TMT2) state."""
        return self.tmt2_steps * self.dt_s

    @property
    def warning_s(self) -> jax.Array:
        """Seconds with WCTEMP <= composite < CCTEMP."""
        return self.warning_steps * self.dt_s

    @property
    def critical_s(self) -> jax.Array:
        """Seconds with composite >= CCTEMP."""
        return self.critical_steps * self.dt_s


def smart_init(like: jax.Array, dt_s: jax.Array) -> Smart:
    z = jnp.zeros_like(like)
    return Smart(z, z, z, z, z, z, jnp.asarray(dt_s, z.dtype))


def smart_update(sm: Smart, m1: jax.Array, m2: jax.Array, m1n: jax.Array, m2n: jax.Array,
                 temp_k: jax.Array, power: Power) -> Smart:
    """Add one step: transitions into light (from normal) and heavy, steps in each, WCTT/CCTT steps."""
    _, light, heavy = occupancy(m1n, m2n)
    warn = ((temp_k >= power.wctemp_k) & (temp_k < power.cctemp_k)).astype(temp_k.dtype)
    crit = (temp_k >= power.cctemp_k).astype(temp_k.dtype)
    return Smart(
        tmt1_transitions=sm.tmt1_transitions + (1.0 - m1) * light,
        tmt2_transitions=sm.tmt2_transitions + (1.0 - m2) * heavy,
        tmt1_steps=sm.tmt1_steps + light,
        tmt2_steps=sm.tmt2_steps + heavy,
        warning_steps=sm.warning_steps + warn,
        critical_steps=sm.critical_steps + crit,
        dt_s=sm.dt_s,
    )


def _exact(x: Any) -> Fraction:
    """A float as the shortest decimal that round-trips in its own precision, as an exact fraction.

    float32(0.7) is 0.69999999 in binary; the user wrote 0.7, and 0.7 is what comes back.
    """
    v = np.asarray(x)[()]
    return Fraction(np.format_float_positional(v, unique=True, trim="0"))


def smart_log(sm: Smart) -> dict[str, int]:
    """Whole-unit counters as the Health log reports them (floor, saturating at 0xFFFFFFFF).

    Host-side; takes one configuration's accumulators.  Seconds are step counts times ``dt_s``,
    computed in exact rational arithmetic (:func:`_exact`) so that 1200 steps of 0.7 s floor to 840 s,
    not to 839.
    """
    dt = _exact(sm.dt_s)

    def u32(x: Fraction) -> int:
        return min(math.floor(x), U32_MAX)

    def n(v: Any) -> Fraction:
        v = float(np.asarray(v))
        return Fraction(v) if math.isfinite(v) else Fraction(U32_MAX + 1)

    return {
        "tmt1_transitions": u32(n(sm.tmt1_transitions)),
        "tmt2_transitions": u32(n(sm.tmt2_transitions)),
        "time_tmt1_s": u32(n(sm.tmt1_steps) * dt),
        "time_tmt2_s": u32(n(sm.tmt2_steps) * dt),
        "warning_temp_time_min": u32(n(sm.warning_steps) * dt / 60),
        "critical_temp_time_min": u32(n(sm.critical_steps) * dt / 60),
    }
