"""Time-stepped coupling of the write stream, power, temperatures and HCTM throttling.

One drive per call; sweeps ``vmap`` :func:`metrics`.  Each step of ``dt`` seconds (``thermal.dt_s``):

1. the firmware samples the composite temperature ``T`` and updates its throttle state
   (``ssdx.models.thermal.hctm``; exact, or relaxed with width ``sharpness`` for gradients);
2. the state's action scales each write mode's rate (``ssdx.models.fluid.model.rates``) and caps it under
   a power-state limit (``ssdx.models.thermal.power.rate_under_cap``);
3. the host writes for ``dt``: the time is spent in pSLC while the cache has room, then in direct
   native writes while free blocks remain, then folding — the same capacity accounting as the fluid
   engine (``ssdx.models.fluid.model.slc_room``/``native_room``: every pSLC mode, the dynamic-region cap),
   integrated over time instead of over bytes — until the run's bytes (``fluid.total_bytes``) are
   written, after which the drive idles;
4. the step's mean power per node heats the RC network (``ssdx.models.thermal.rc.advance``, exact for
   power constant over the step).

The drive starts at its idle equilibrium in the normal state.  All quantities SI (bytes, s, W, K).
Sustained writes that wrap around the logical space, and idle gaps, are not modelled here (a run
stops writing when ``workload.fill_fraction`` of the free capacity is written; bursts are refused by
``ssdx.models.thermal.params.validate``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ssdx.core.stats import percentile_low_masked
from ssdx.models.fluid import model as fluid
from ssdx.models.thermal import hctm, rc
from ssdx.models.thermal import power as pw
from ssdx.models.thermal.params import Power, Thermal
from ssdx.params import Drive, Workload


class Setup(NamedTuple):
    """Per-drive constants of a run, computed once outside the scan."""

    plan: fluid.Plan
    energy: pw.ModeEnergy
    net: rc.Network
    actions: tuple  # (normal, light, heavy) hctm.Action
    total: jax.Array  # host bytes the run writes


class State(NamedTuple):
    slc_bytes: jax.Array
    native_bytes: jax.Array
    raw_used_bytes: jax.Array
    written_bytes: jax.Array
    temps_k: jax.Array  # (3,) controller, NAND, case
    m1: jax.Array  # latch: state >= light
    m2: jax.Array  # latch: state == heavy
    smart: hctm.Smart
    energy_j: jax.Array


class StepOut(NamedTuple):
    time_s: jax.Array  # end of the step
    written_bytes: jax.Array
    speed: jax.Array  # host bytes/s averaged over the step
    composite_k: jax.Array  # sampled at the start of the step (what HCTM acted on)
    temps_k: jax.Array  # (3,) at the end of the step
    level: jax.Array  # 0 normal, 1 light, 2 heavy (a mixture in the relaxed model)
    power_w: jax.Array
    writing: jax.Array  # 1 while the run still had bytes to write at the start of the step


def setup(drive: Drive, workload: Workload, power: Power, th: Thermal) -> Setup:
    """Rates, energies, the discretised RC network and the policy's actions of one drive."""
    return Setup(plan=fluid.plan(drive, workload, 1), energy=pw.mode_energy(drive, power),
                 net=rc.network(th), actions=hctm.actions(power), total=fluid.total_bytes(drive, workload))


def idle_temps(su: Setup, power: Power, th: Thermal) -> jax.Array:
    """Idle equilibrium node temperatures, K (the start of every run)."""
    return rc.equilibrium(su.net, th, rc.node_powers(power.idle_w, jnp.zeros_like(power.idle_w)))


def init(drive: Drive, workload: Workload, power: Power, th: Thermal, su: Setup) -> State:
    f = fluid.init(drive, workload)
    zero = jnp.zeros_like(f.written_bytes)
    return State(slc_bytes=f.slc_bytes, native_bytes=f.native_bytes, raw_used_bytes=f.raw_used_bytes,
                 written_bytes=zero, temps_k=idle_temps(su, power, th), m1=zero, m2=zero,
                 smart=hctm.smart_init(zero, th.dt_s), energy_j=zero)


def _throttled_rates(su: Setup, power: Power, action: hctm.Action) -> tuple:
    """Host rates of (pSLC, direct, folding) under one action."""
    r = su.plan.rates
    return tuple(pw.rate_under_cap(action.rate * x, k, power, action.cap_w, action.ctrl)
                 for x, k in zip((r.slc, r.native, r.fold), su.energy.total))


def write_for(p: fluid.Plan, rates: tuple, s, n, raw, dt, remaining):
    """Spend up to ``dt`` seconds writing: pSLC, then direct native, then folding (module docstring).

    Returns new ``(s, n, raw)``, the bytes of each mode (3-tuple) and the busy seconds.
    """
    zero = jnp.zeros_like(dt)
    room_slc = jnp.maximum(fluid.slc_room(p, s, raw), zero)
    a_slc = jnp.minimum(jnp.minimum(room_slc, rates[0] * dt), remaining)
    raw = raw + p.bits * a_slc
    left = jnp.maximum(dt - a_slc / rates[0], zero)
    remaining = remaining - a_slc
    room_nat = jnp.maximum(fluid.native_room(p, n, raw), zero)
    a_dir = jnp.minimum(jnp.minimum(room_nat, rates[1] * left), remaining)
    left = jnp.maximum(left - a_dir / rates[1], zero)
    remaining = remaining - a_dir
    a_fold = jnp.maximum(jnp.minimum(rates[2] * left, remaining), zero)
    folded = jnp.minimum(p.fold * a_fold, s + a_slc)
    s = s + a_slc - folded
    n = n + a_dir + a_fold + folded
    busy = a_slc / rates[0] + a_dir / rates[1] + a_fold / rates[2]
    return s, n, raw + a_dir, (a_slc, a_dir, a_fold), busy


def step(su: Setup, power: Power, th: Thermal, state: State, k: jax.Array,
         sharpness: jax.Array | None = None) -> tuple[State, StepOut]:
    """One time step (module docstring).  ``sharpness`` (K) selects the relaxed throttle logic."""
    dt = th.dt_s
    temp = rc.composite(power, state.temps_k)
    m1, m2 = hctm.update(state.m1, state.m2, temp, th, power.hysteresis_k, sharpness)
    weights = hctm.occupancy(m1, m2)
    per_state = [_throttled_rates(su, power, a) for a in su.actions]
    rates = tuple(sum(w * r[i] for w, r in zip(weights, per_state)) for i in range(3))
    ctrl_fraction = sum(w * a.ctrl for w, a in zip(weights, su.actions))
    remaining = jnp.maximum(su.total - state.written_bytes, 0.0)
    s, n, raw, mode_bytes, busy = write_for(su.plan, rates, state.slc_bytes, state.native_bytes,
                                            state.raw_used_bytes, dt, remaining)
    p_ctrl, p_nand = pw.node_power(power, su.energy, mode_bytes, busy, ctrl_fraction, dt)
    temps = rc.advance(su.net, th, state.temps_k, rc.node_powers(p_ctrl, p_nand))
    host = mode_bytes[0] + mode_bytes[1] + mode_bytes[2]
    written = state.written_bytes + host
    smart = hctm.smart_update(state.smart, state.m1, state.m2, m1, m2, temp, power)
    new = State(slc_bytes=s, native_bytes=n, raw_used_bytes=raw, written_bytes=written, temps_k=temps,
                m1=m1, m2=m2, smart=smart, energy_j=state.energy_j + (p_ctrl + p_nand) * dt)
    out = StepOut(time_s=(k + 1.0) * dt, written_bytes=written, speed=host / dt, composite_k=temp,
                  temps_k=temps, level=m1 + m2, power_w=p_ctrl + p_nand,
                  writing=(remaining > 0).astype(dt.dtype))
    return new, out


def run(drive: Drive, workload: Workload, power: Power, th: Thermal, n_steps: int,
        sharpness: jax.Array | None = None) -> tuple[State, StepOut]:
    """Scan :func:`step` ``n_steps`` times: (final state, per-step outputs with leading axis n_steps)."""
    su = setup(drive, workload, power, th)

    def body(state, k):
        return step(su, power, th, state, k, sharpness)

    ks = jnp.arange(n_steps, dtype=su.total.dtype)
    return jax.lax.scan(body, init(drive, workload, power, th, su), ks)


def simulate(drive: Drive, workload: Workload, power: Power, th: Thermal, n_steps: int) -> StepOut:
    """Per-step outputs of the exact model."""
    return run(drive, workload, power, th, n_steps)[1]


def metrics(drive: Drive, workload: Workload, power: Power, th: Thermal,
            n_steps: int) -> dict[str, jax.Array]:
    """Scalar figures of one run (for sweeps): GB = 1e9 bytes, MB/s = 1e6 bytes/s, K, s, J.

    ``mean_mb_s`` is over the whole window; ``p5_mb_s`` over the steps in which the run still had
    bytes to write; ``unthrottled_``/``throttled_mean_mb_s`` average the writing steps in the normal
    state / in a throttle state (NaN when there are none).  SMART fields are the Health log's
    quantities before flooring to whole units.  Sums and maxima are carried through the scan, which
    keeps only the per-step speed (for the percentile).
    """
    su = setup(drive, workload, power, th)
    zero = jnp.zeros_like(su.total)

    def body(carry, k):
        state, acc = carry
        new, out = step(su, power, th, state, k)
        w = out.writing > 0
        thr = out.level > 0.5
        acc = (acc[0] + jnp.where(w & ~thr, out.speed, 0.0), acc[1] + (w & ~thr),
               acc[2] + jnp.where(w & thr, out.speed, 0.0), acc[3] + (w & thr), acc[4] + w,
               jnp.maximum(acc[5], out.composite_k), jnp.maximum(acc[6], out.temps_k[1]))
        return (new, acc), jnp.where(w, out.speed, jnp.inf)

    acc0 = (zero, zero, zero, zero, zero, jnp.full_like(zero, -jnp.inf), jnp.full_like(zero, -jnp.inf))
    (final, acc), speed = jax.lax.scan(body, (init(drive, workload, power, th, su), acc0),
                                       jnp.arange(n_steps, dtype=su.total.dtype))
    duration = n_steps * th.dt_s

    def mean(total, count):
        return jnp.where(count > 0, total / jnp.maximum(count, 1.0), jnp.nan) / 1e6

    sm = final.smart
    return {
        "written_gb": final.written_bytes / 1e9,
        "mean_mb_s": final.written_bytes / duration / 1e6,
        "p5_mb_s": percentile_low_masked(speed, acc[4], 5.0) / 1e6,
        "unthrottled_mean_mb_s": mean(acc[0], acc[1]),
        "throttled_mean_mb_s": mean(acc[2], acc[3]),
        "max_composite_k": jnp.maximum(acc[5], rc.composite(power, final.temps_k)),
        "max_nand_k": acc[6],
        "energy_j": final.energy_j,
        "mean_power_w": final.energy_j / duration,
        "mb_per_j": final.written_bytes / 1e6 / jnp.maximum(final.energy_j, 1e-30),
        "throttled_s": sm.time_tmt1_s + sm.time_tmt2_s,
        "tmt1_transitions": sm.tmt1_transitions,
        "tmt2_transitions": sm.tmt2_transitions,
        "time_tmt1_s": sm.time_tmt1_s,
        "time_tmt2_s": sm.time_tmt2_s,
        "time_above_wctemp_s": sm.warning_s + sm.critical_s,
        "time_above_cctemp_s": sm.critical_s,
    }
