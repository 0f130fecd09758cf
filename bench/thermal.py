"""Benchmark of the coupled write/power/thermal/HCTM scan (``ssdx.models.thermal.coupled``) over many runs.

Default case: 10,000 ten-minute runs at 1 s steps (600 steps each) on whatever device JAX
picks (CPU here).

What is timed
-------------
``jax_vmap``: ``jax.jit(jax.vmap(lambda d, w, p, t: coupled.metrics(d, w, p, t, S)))`` over chunks of
``C`` configurations (float32; ``--chunk``, default all ``N`` in one call; a short last chunk is padded
so it reuses the compiled program).  ``compile_s`` is tracing + lowering + XLA compilation, ahead of
time (``.lower(...).compile()``), kept apart from ``run_s``: one untimed warm-up pass follows, then
``--repeats`` timed passes over all ``N`` configurations, each ending in ``jax.block_until_ready``;
``run_s`` is their median (min and every repeat are in the JSON).  Throughput is reported as
configuration-steps per second, ``N * S / run_s``.

Baselines (the same model, ported in this file, float64, reading the same float32-built parameters)
-----------------------------------------------------------------------------------------------
``numpy_vectorised``: the scan vectorised over configurations with NumPy arrays of shape ``(N,)`` and a
Python loop over the ``S`` steps.  Timed on all ``N`` (on the first 100,000 and extrapolated beyond).

``python_loop``: one configuration at a time in plain Python scalar code (``min``/``max``/``if``, the 3x3
propagator written out), a loop over the ``S`` steps inside: how one-run-at-a-time simulators are
written.  Timed on a sample of ``M`` configurations; the per-configuration time is extrapolated to ``N``.

``jax_step_loop``: one configuration at a time, a Python loop over the steps calling the jitted
single-step function ``coupled.step`` (setup and initial state jitted too; per-step outputs collected
and reduced with NumPy): JAX used without ``vmap`` or ``scan``.  Timed on a sample, extrapolated.

In all ports the per-run constants (rates, throttled rates per state, mode energies, the RC
propagator ``expm(-C^-1 L dt)`` and ``L^-1``, the idle equilibrium) are computed once per configuration
with NumPy/SciPy before the step loop, as ``coupled.setup`` does before the scan; only the step loop
differs between engines.

Agreement: every port is compared with the JAX float32 results on the configurations it ran (written
bytes within 1e-3 relative, maximum composite and NAND temperatures within 0.05 K; every other metric's
largest difference is recorded too).  A float32 rounding can flip a throttle decision at a threshold,
which moves one run's figures by a step; such configurations are counted, not hidden.  To show that the
ports are the model and not an approximation, the engine is also run in float64 (``jax.enable_x64``,
untimed) on the ``python_loop`` sample, where both ports must agree with it on every metric to ~1e-9
(``agreement.x64_port_check``).

Configurations (``config_columns``): drive ``sn8e_1920`` (pure native TLC, PCIe 3) or ``aldrin_pro_2tb``
(dynamic pSLC, PCIe 4: pSLC, direct-native and folding phases); cooling bare / heatsink / airflow;
TMT1/TMT2 off, one level or both (65-85 C); policy ``ssd_a`` / ``ssd_b``; vendor hysteresis 2 / 5 K;
workload sequential fill of an empty or half-full drive, or 4 KiB random writes; ambient 15-45 C from a
golden-ratio sequence, so no two of the first 10,000 runs are alike.

``--sizes``: a JAX-only sweep of batch sizes in one call each (``--chunk`` does not apply): a comma list,
or ``double`` to double from ``--size-start`` until the device runs out of memory (``RESOURCE_EXHAUSTED``),
``--max-configs`` is reached or the next size would pass ``--size-time-limit`` seconds; it reports the
largest batch that ran and its config-steps/s.  Large batches tile a pool of distinct configurations
(gathered on the device), which costs the same as distinct ones: the scan has no data-dependent control.

Usage: ``python -m bench.thermal [--configs N] [--steps S] [--chunk C] [--loop-configs M]
[--step-loop-configs K] [--repeats R] [--sizes LIST|double] [--out FILE.json]``
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from ssdx import api, params, presets
from ssdx.models.thermal import coupled
from ssdx.models.thermal import params as thermal_params
from ssdx.report.machine import machine
from ssdx.units import ZERO_C_IN_K

BASELINES = ("numpy_vectorised", "python_loop", "jax_step_loop")
HEADLINE_BASELINE = "numpy_vectorised"  # the strongest baseline, measured on every configuration
NUMPY_MAX_CONFIGS = 100_000
POOL_CONFIGS = 65_536  # distinct configurations tiled by the --sizes sweep
DT_S = 1.0
WRITTEN_REL_TOL = 1e-3
TEMP_ABS_TOL_K = 0.05
X64_TOL = 1e-9
TEMP_KEYS = ("max_composite_k", "max_nand_k")

# Axes of the configuration grid, fastest-varying first (configuration i = mixed-radix digits of i).
DRIVES = ("sn8e_1920", "aldrin_pro_2tb")
COOLINGS = ("bare", "heatsink", "airflow")
TMT_C = ((0.0, 0.0), (0.0, 80.0), (70.0, 0.0), (65.0, 75.0), (70.0, 80.0), (75.0, 85.0))  # 0 = level off
POLICIES = ("ssd_a", "ssd_b")
HYSTERESIS_K = (2.0, 5.0)
WORKLOADS: tuple[dict[str, Any], ...] = (
    {},  # seq_fill: 128 KiB sequential, QD32, empty drive
    {"prefill_fraction": 0.5},  # the same on a half-full drive
    {"pattern": "random", "block_kib": 4, "queue_depth": 32},  # 4 KiB random writes
)
AMBIENT_C = (15.0, 45.0)
GRID_SIZE = len(DRIVES) * len(COOLINGS) * len(TMT_C) * len(POLICIES) * len(HYSTERESIS_K) * len(WORKLOADS)
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


# ----------------------------------------------------------------------------- configurations
def config_columns(index: Sequence[int] | np.ndarray, steps: int = 600, dt_s: float = DT_S) -> dict:
    """Columns (drive, workload, nand, power, thermal) of the configurations numbered ``index``."""
    i = np.asarray(index, dtype=np.int64)
    ambient = AMBIENT_C[0] + (AMBIENT_C[1] - AMBIENT_C[0]) * np.mod((i + 1) * GOLDEN, 1.0)
    digits = []
    for axis in (DRIVES, COOLINGS, TMT_C, POLICIES, HYSTERESIS_K, WORKLOADS):
        digits.append(i % len(axis))
        i = i // len(axis)
    drive_i, cool_i, tmt_i, pol_i, hyst_i, wl_i = digits
    thermal = api.thermal_preset("bare", dt_s=dt_s, duration_s=steps * dt_s)
    wl = presets.workload("seq_fill")
    base = [api.thermal_columns(presets.drive(name), wl, thermal) for name in DRIVES]
    cols: dict[str, np.ndarray] = {}
    for key in base[0]:
        values = np.concatenate([b[key] for b in base])  # one row per drive preset
        cols[key] = values[drive_i]
    for k, variant in enumerate(WORKLOADS):
        for field, value in variant.items():
            key = f"workload.{field}"
            cols[key] = np.where(wl_i == k, value, cols[key])
    tmt = np.asarray(TMT_C)[tmt_i]
    cols["thermal.cooling"] = np.asarray(COOLINGS)[cool_i]
    cols["thermal.ambient_c"] = np.round(ambient, 2)
    # whole Kelvin, as Set Features 0x10 carries a TMT (80 C -> 353 K)
    cols["thermal.tmt1_k"] = np.where(tmt[:, 0] > 0, np.round(tmt[:, 0] + ZERO_C_IN_K), 0.0)
    cols["thermal.tmt2_k"] = np.where(tmt[:, 1] > 0, np.round(tmt[:, 1] + ZERO_C_IN_K), 0.0)
    cols["power.policy"] = np.asarray(POLICIES)[pol_i]
    cols["power.hysteresis_k"] = np.asarray(HYSTERESIS_K)[hyst_i]
    return cols


def build_configs(index: Sequence[int] | np.ndarray, steps: int = 600, dt_s: float = DT_S,
                  dtype: type = np.float32) -> tuple[tuple[Any, Any, Any, Any], int]:
    """Validated, stacked ``(Drive, Workload, Power, Thermal)`` pytrees and the step count."""
    return api.build_thermal(config_columns(index, steps, dt_s), dtype=dtype)


def take_tree(tree: Any, idx: np.ndarray | slice) -> Any:
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[idx], tree)


# ----------------------------------------------------------------------------- per-run constants (NumPy)
class K(NamedTuple):
    """Per-run constants of the ports, float64 arrays of shape (N,) (``phi``/``r``: (N, 3, 3)).

    ``rate``: host rates (3 throttle states x 3 write modes, each (N,)) after the state's action and
    power cap; ``ctrl``: the states' controller-power fractions; ``e_nand``: the NAND-node energy per
    host byte of each mode.
    """

    total: Any
    s0: Any
    n0: Any
    raw0: Any
    bits: Any
    fold: Any
    slc_a: Any
    slc_cs: Any
    slc_craw: Any
    nat_c: Any
    nat_dn: Any
    nat_draw: Any
    rate: Any  # [state][mode]
    ctrl: Any  # [state]
    e_nand: Any  # [mode]
    host_j: Any
    idle_w: Any
    ctrl_w: Any
    phi: Any
    r: Any
    ambient: Any
    temps0: Any  # (N, 3)
    w_sensor: Any
    tmt1: Any
    tmt2: Any
    hyst: Any
    wctemp: Any
    cctemp: Any
    dt: Any


def constants(drive: params.Drive, workload: params.Workload, power: thermal_params.Power,
              th: thermal_params.Thermal) -> K:
    """Port of ``coupled.setup`` + ``coupled.init`` to float64 NumPy (stacked pytrees in, :class:`K` out)."""
    f64 = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    d, w, nd, p, t = drive, workload, drive.nand, power, th
    b, u, mode = f64(nd.bits_per_cell), f64(d.user_bytes), f64(d.slc_mode)
    dyn, sta, psl, pna = mode == 0, mode == 1, mode == 2, mode == 3
    planes = f64(d.dies) * f64(d.planes_per_die)
    page = f64(nd.page_bytes)
    # fluid.die_time / fold_ratio / rates
    f = 1.0 / np.maximum(b - 1.0, 1.0)
    die_slc = f64(nd.t_prog_slc_us) * 1e-6 / (planes * page)
    die_native = f64(nd.t_prog_us) * 1e-6 / (planes * page)
    read_s = f64(nd.t_read_slc_us) * 1e-6 / (planes * page)
    erase_s = f64(nd.t_erase_us) * 1e-6 / (planes * f64(nd.block_bytes))
    eta = f64(d.fold_efficiency)
    die_fold = (1.0 + f) * die_native / eta + f * read_s + b * f * erase_s
    bs = f64(w.block_bytes)
    t_cmd = (f64(d.cmd_overhead_s) + bs / f64(d.host_bytes_per_s)
             + f64(w.random) * (1.0 - f64(d.dram)) * f64(nd.t_read_slc_us) * 1e-6)
    host = np.minimum(f64(d.host_bytes_per_s), f64(w.queue_depth) * bs / t_cmd)
    bus = f64(d.bus_bytes_per_s)
    r_slc = np.minimum(np.minimum(host, bus), 1.0 / die_slc)
    r_nat = np.minimum(np.minimum(host, bus), 1.0 / die_native)
    r_fold = np.minimum(np.minimum(host, bus / (1.0 + 2.0 * f)), 1.0 / die_fold)
    # fluid.plan (rooms), fluid.init, fluid.total_bytes
    usable = f64(d.raw_bytes) * (1.0 - f64(d.reserve_fraction))
    static = f64(d.static_slc_bytes)
    zero, one = np.zeros_like(u), np.ones_like(u)
    cap = np.where(psl, u / b, u)
    pre = f64(w.prefill_fraction) * cap
    s0, n0 = np.where(psl, pre, zero), np.where(psl, zero, pre)
    # power.mode_energy
    io, host_j, die_w = f64(p.io_j_per_byte), f64(p.host_j_per_byte), f64(p.die_w)
    dies_w = f64(d.dies) * die_w
    e_nand = (dies_w * die_slc + io, dies_w * die_native + io, dies_w * die_fold + io * (1.0 + 2.0 * f))
    e_total = tuple(host_j + e for e in e_nand)
    # hctm.actions (policy 0 = ssd_a: the heavy action in both throttle states) and power.rate_under_cap
    ssd_b = f64(p.policy) == 1
    heavy = (f64(p.heavy_rate), f64(p.heavy_ctrl), f64(p.heavy_cap_w))
    light = tuple(np.where(ssd_b, x, y) for x, y in zip((f64(p.light_rate), f64(p.light_ctrl),
                                                         f64(p.light_cap_w)), heavy))
    actions = ((one, one, zero), light, heavy)
    idle_w, ctrl_w = f64(p.idle_w), f64(p.ctrl_w)
    rate = []
    for a_rate, a_ctrl, a_cap in actions:
        fixed = idle_w + ctrl_w * a_ctrl
        per_mode = []
        for x, k in zip((r_slc, r_nat, r_fold), e_total):
            x = a_rate * x
            capped = np.maximum((a_cap - fixed) / k, 1e-6 * x)
            per_mode.append(np.where(a_cap > 0, np.minimum(x, capped), x))
        rate.append(tuple(per_mode))
    # thermal.network and the idle equilibrium
    a, bb, c = f64(t.g_ctrl_nand), f64(t.g_ctrl_case), f64(t.g_nand_case)
    lap = np.stack([np.stack([a + bb + f64(t.g_ctrl_amb), -a, -bb], -1),
                    np.stack([-a, a + c + f64(t.g_nand_amb), -c], -1),
                    np.stack([-bb, -c, bb + c + f64(t.g_case_amb)], -1)], -2)
    caps = np.stack([f64(t.c_ctrl), f64(t.c_nand), f64(t.c_case)], -1)
    dt = f64(t.dt_s)
    phi = scipy.linalg.expm(-lap / caps[..., :, None] * dt[..., None, None])
    r = np.linalg.inv(lap)
    ambient = f64(t.ambient_k)
    temps0 = ambient[..., None] + r[..., :, 0] * idle_w[..., None]
    return K(total=f64(w.fill_fraction) * cap * (1.0 - f64(w.prefill_fraction)), s0=s0, n0=n0,
             raw0=b * s0 + n0, bits=b, fold=f,
             slc_a=np.select([dyn | psl, sta], [u / b, static], zero),
             slc_cs=np.where(sta | psl, one, zero), slc_craw=np.where(dyn, 1.0 / b, zero),
             nat_c=np.select([dyn | pna, sta], [usable, usable - b * static], zero),
             nat_dn=np.where(sta | pna, one, zero), nat_draw=np.where(dyn, one, zero),
             rate=tuple(rate), ctrl=tuple(x[1] for x in actions), e_nand=e_nand, host_j=host_j,
             idle_w=idle_w, ctrl_w=ctrl_w, phi=phi, r=r, ambient=ambient, temps0=temps0,
             w_sensor=f64(p.sensor_ctrl_weight), tmt1=f64(t.tmt1_k), tmt2=f64(t.tmt2_k),
             hyst=f64(p.hysteresis_k), wctemp=f64(p.wctemp_k), cctemp=f64(p.cctemp_k), dt=dt)


def take_k(k: K, sl: slice | np.ndarray) -> K:
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[sl], k)


# ----------------------------------------------------------------------------- baseline: NumPy over configs
def _percentile_rows(speeds: np.ndarray, writing: np.ndarray, q: float) -> np.ndarray:
    """Per column, the linear-interpolation percentile of ``speeds`` over the rows where ``writing``
    (``jnp.nanpercentile`` of the speeds with the other rows NaN); NaN where no row is writing."""
    x = np.sort(np.where(writing, speeds, np.inf), axis=0)
    cnt = writing.sum(axis=0)
    pos = q / 100.0 * np.maximum(cnt - 1, 0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(cnt - 1, 0))
    cols = np.arange(x.shape[1])
    a, b = x[lo, cols], x[hi, cols]
    out = a + (b - a) * (pos - lo)
    return np.where(cnt > 0, out, np.nan)


def _finish(k: K, n_steps: int, written, energy, smart, temps_end, max_comp, max_nand,
            sum_unthr, cnt_unthr, sum_thr, cnt_thr, p5) -> dict[str, np.ndarray]:
    """``coupled.metrics``' figures from the accumulators of a run (NumPy; shared by the ports)."""
    duration = n_steps * k.dt
    tr1, tr2, t1, t2, warn, crit = smart  # times as step counts (hctm.Smart)
    t1, t2, warn, crit = (x * k.dt for x in (t1, t2, warn, crit))
    comp_end = k.w_sensor * temps_end[0] + (1.0 - k.w_sensor) * temps_end[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        unthr = np.where(cnt_unthr > 0, sum_unthr / np.maximum(cnt_unthr, 1), np.nan) / 1e6
        thr = np.where(cnt_thr > 0, sum_thr / np.maximum(cnt_thr, 1), np.nan) / 1e6
    return {
        "written_gb": written / 1e9,
        "mean_mb_s": written / duration / 1e6,
        "p5_mb_s": p5 / 1e6,
        "unthrottled_mean_mb_s": unthr,
        "throttled_mean_mb_s": thr,
        "max_composite_k": np.maximum(max_comp, comp_end),
        "max_nand_k": max_nand,
        "energy_j": energy,
        "mean_power_w": energy / duration,
        "mb_per_j": written / 1e6 / np.maximum(energy, 1e-30),
        "throttled_s": t1 + t2,
        "tmt1_transitions": tr1,
        "tmt2_transitions": tr2,
        "time_tmt1_s": t1,
        "time_tmt2_s": t2,
        "time_above_wctemp_s": warn + crit,
        "time_above_cctemp_s": crit,
    }


def numpy_vectorised(k: K, n_steps: int) -> dict[str, np.ndarray]:
    """Baseline: ``coupled.metrics`` for all configurations at once, NumPy over (N,), a loop over steps."""
    n = len(k.total)
    dt = k.dt
    s, nn, raw = k.s0.copy(), k.n0.copy(), k.raw0.copy()
    written, energy = np.zeros(n), np.zeros(n)
    t = [k.temps0[:, j].copy() for j in range(3)]
    phi = [[k.phi[:, i, j] for j in range(3)] for i in range(3)]
    rr = [[k.r[:, i, j] for j in range(2)] for i in range(3)]
    m1, m2 = np.zeros(n), np.zeros(n)
    tr1, tr2, t1, t2, warn, crit = (np.zeros(n) for _ in range(6))
    max_comp, max_nand = np.full(n, -np.inf), np.full(n, -np.inf)
    sum_unthr, cnt_unthr, sum_thr, cnt_thr = (np.zeros(n) for _ in range(4))
    speeds = np.empty((n_steps, n))
    writing_steps = np.empty((n_steps, n), dtype=bool)
    on1, on2 = (k.tmt1 > 0).astype(float), (k.tmt2 > 0).astype(float)
    for step in range(n_steps):
        temp = k.w_sensor * t[0] + (1.0 - k.w_sensor) * t[1]
        # hctm.update (exact)
        a1 = on1 * (temp >= k.tmt1)
        b1 = on1 * (temp >= k.tmt1 - k.hyst)
        a2 = on2 * (temp >= k.tmt2)
        b2 = on2 * (temp >= k.tmt2 - k.hyst)
        m2n = a2 + (1.0 - a2) * m2 * b2
        light = a1 + (1.0 - a1) * m1 * b1
        m1n = m2n + light - m2n * light
        wts = (1.0 - m1n, m1n - m2n, m2n)
        rates = [wts[0] * k.rate[0][i] + wts[1] * k.rate[1][i] + wts[2] * k.rate[2][i] for i in range(3)]
        cf = wts[0] * k.ctrl[0] + wts[1] * k.ctrl[1] + wts[2] * k.ctrl[2]
        remaining = np.maximum(k.total - written, 0.0)
        # coupled.write_for
        room_slc = np.maximum(k.slc_a - k.slc_cs * s - k.slc_craw * raw, 0.0)
        a_slc = np.minimum(np.minimum(room_slc, rates[0] * dt), remaining)
        raw = raw + k.bits * a_slc
        left = np.maximum(dt - a_slc / rates[0], 0.0)
        rem = remaining - a_slc
        room_nat = np.maximum(k.nat_c - k.nat_dn * nn - k.nat_draw * raw, 0.0)
        a_dir = np.minimum(np.minimum(room_nat, rates[1] * left), rem)
        left = np.maximum(left - a_dir / rates[1], 0.0)
        rem = rem - a_dir
        a_fold = np.maximum(np.minimum(rates[2] * left, rem), 0.0)
        folded = np.minimum(k.fold * a_fold, s + a_slc)
        s = s + a_slc - folded
        nn = nn + a_dir + a_fold + folded
        raw = raw + a_dir
        busy = a_slc / rates[0] + a_dir / rates[1] + a_fold / rates[2]
        # power.node_power, thermal.advance
        hb = a_slc + a_dir + a_fold
        nand_j = k.e_nand[0] * a_slc + k.e_nand[1] * a_dir + k.e_nand[2] * a_fold
        p_ctrl = k.idle_w + (k.ctrl_w * cf * busy + k.host_j * hb) / dt
        p_nand = nand_j / dt
        eq = [k.ambient + rr[i][0] * p_ctrl + rr[i][1] * p_nand for i in range(3)]
        d0, d1, d2 = t[0] - eq[0], t[1] - eq[1], t[2] - eq[2]
        t = [eq[i] + phi[i][0] * d0 + phi[i][1] * d1 + phi[i][2] * d2 for i in range(3)]
        written = written + hb
        # hctm.smart_update
        lt, hv = m1n - m2n, m2n
        wrn = (temp >= k.wctemp) & (temp < k.cctemp)
        crt = temp >= k.cctemp
        tr1, tr2 = tr1 + (1.0 - m1) * lt, tr2 + (1.0 - m2) * hv
        t1, t2 = t1 + lt, t2 + hv  # steps; _finish scales by dt
        warn, crit = warn + wrn, crit + crt
        energy = energy + (p_ctrl + p_nand) * dt
        m1, m2 = m1n, m2n
        # per-step figures kept by coupled.metrics
        speed = hb / dt
        wr = remaining > 0
        thr = (m1n + m2n) > 0.5
        speeds[step], writing_steps[step] = speed, wr
        max_comp = np.maximum(max_comp, temp)
        max_nand = np.maximum(max_nand, t[1])
        u_mask, t_mask = wr & ~thr, wr & thr
        sum_unthr, cnt_unthr = sum_unthr + np.where(u_mask, speed, 0.0), cnt_unthr + u_mask
        sum_thr, cnt_thr = sum_thr + np.where(t_mask, speed, 0.0), cnt_thr + t_mask
    p5 = _percentile_rows(speeds, writing_steps, 5.0)
    return _finish(k, n_steps, written, energy, (tr1, tr2, t1, t2, warn, crit), t, max_comp, max_nand,
                   sum_unthr, cnt_unthr, sum_thr, cnt_thr, p5)


# ----------------------------------------------------------------------------- baseline: Python scalars
def _percentile_py(x: list[float], q: float) -> float:
    """Linear-interpolation percentile (NumPy's default method); NaN for an empty list."""
    if not x:
        return math.nan
    a = sorted(x)
    pos = q / 100.0 * (len(a) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(a) - 1)
    return a[lo] + (a[hi] - a[lo]) * (pos - lo)


def _run_py(c: dict[str, Any], n_steps: int) -> tuple:
    """One run of the coupled scan in Python scalars (``c``: one configuration's :class:`K` as floats)."""
    dt, bits, fold = c["dt"], c["bits"], c["fold"]
    slc_a, slc_cs, slc_craw = c["slc_a"], c["slc_cs"], c["slc_craw"]
    nat_c, nat_dn, nat_draw = c["nat_c"], c["nat_dn"], c["nat_draw"]
    rate, ctrl, e_nand = c["rate"], c["ctrl"], c["e_nand"]
    (p00, p01, p02), (p10, p11, p12), (p20, p21, p22) = c["phi"]
    (r00, r01, _), (r10, r11, _), (r20, r21, _) = c["r"]
    amb, wsen, total = c["ambient"], c["w_sensor"], c["total"]
    tmt1, tmt2, hyst, wct, cct = c["tmt1"], c["tmt2"], c["hyst"], c["wctemp"], c["cctemp"]
    idle_w, ctrl_w, host_j = c["idle_w"], c["ctrl_w"], c["host_j"]
    s, nn, raw = c["s0"], c["n0"], c["raw0"]
    t0, t1, t2 = c["temps0"]
    written = energy = 0.0
    m1 = m2 = 0.0
    tr1 = tr2 = time1 = time2 = warn = crit = 0.0
    max_comp = max_nand = -math.inf
    sum_u = cnt_u = sum_t = cnt_t = 0.0
    writing_speeds: list[float] = []
    for _ in range(n_steps):
        temp = wsen * t0 + (1.0 - wsen) * t1
        if tmt2 > 0:
            m2n = 1.0 if (temp >= tmt2 or (m2 > 0 and temp >= tmt2 - hyst)) else 0.0
        else:
            m2n = 0.0
        if tmt1 > 0:
            light = 1.0 if (temp >= tmt1 or (m1 > 0 and temp >= tmt1 - hyst)) else 0.0
        else:
            light = 0.0
        m1n = 1.0 if (m2n > 0 or light > 0) else 0.0
        state = 2 if m2n > 0 else (1 if m1n > 0 else 0)
        r_slc, r_nat, r_fold = rate[state]
        cf = ctrl[state]
        remaining = total - written if total > written else 0.0
        room = slc_a - slc_cs * s - slc_craw * raw
        a_slc = min(max(room, 0.0), r_slc * dt, remaining)
        raw += bits * a_slc
        left = max(dt - a_slc / r_slc, 0.0)
        rem = remaining - a_slc
        room = nat_c - nat_dn * nn - nat_draw * raw
        a_dir = min(max(room, 0.0), r_nat * left, rem)
        left = max(left - a_dir / r_nat, 0.0)
        rem -= a_dir
        a_fold = max(min(r_fold * left, rem), 0.0)
        folded = min(fold * a_fold, s + a_slc)
        s = s + a_slc - folded
        nn = nn + a_dir + a_fold + folded
        raw += a_dir
        busy = a_slc / r_slc + a_dir / r_nat + a_fold / r_fold
        hb = a_slc + a_dir + a_fold
        p_ctrl = idle_w + (ctrl_w * cf * busy + host_j * hb) / dt
        p_nand = (e_nand[0] * a_slc + e_nand[1] * a_dir + e_nand[2] * a_fold) / dt
        e0 = amb + r00 * p_ctrl + r01 * p_nand
        e1 = amb + r10 * p_ctrl + r11 * p_nand
        e2 = amb + r20 * p_ctrl + r21 * p_nand
        d0, d1, d2 = t0 - e0, t1 - e1, t2 - e2
        t0 = e0 + p00 * d0 + p01 * d1 + p02 * d2
        t1 = e1 + p10 * d0 + p11 * d1 + p12 * d2
        t2 = e2 + p20 * d0 + p21 * d1 + p22 * d2
        written += hb
        lt, hv = m1n - m2n, m2n
        tr1 += (1.0 - m1) * lt
        tr2 += (1.0 - m2) * hv
        time1 += lt  # steps; _finish scales by dt
        time2 += hv
        if temp >= cct:
            crit += 1.0
        elif temp >= wct:
            warn += 1.0
        energy += (p_ctrl + p_nand) * dt
        m1, m2 = m1n, m2n
        speed = hb / dt
        if temp > max_comp:
            max_comp = temp
        if t1 > max_nand:
            max_nand = t1
        if remaining > 0:
            writing_speeds.append(speed)
            if m1n + m2n > 0.5:
                sum_t += speed
                cnt_t += 1.0
            else:
                sum_u += speed
                cnt_u += 1.0
    return (written, energy, (tr1, tr2, time1, time2, warn, crit), (t0, t1, t2), max_comp, max_nand,
            sum_u, cnt_u, sum_t, cnt_t, _percentile_py(writing_speeds, 5.0))


def scalar_configs(k: K) -> list[dict[str, Any]]:
    """:class:`K` -> one dict of Python floats (nested tuples for the per-state/mode/matrix fields) each."""
    n = len(k.total)
    out = []
    for i in range(n):
        c = {}
        for name, v in zip(K._fields, k):
            if name in ("rate",):
                c[name] = tuple(tuple(float(x[i]) for x in per_mode) for per_mode in v)
            elif name in ("ctrl", "e_nand"):
                c[name] = tuple(float(x[i]) for x in v)
            else:
                c[name] = np.asarray(v)[i].tolist()
        out.append(c)
    return out


def python_loop(configs: Sequence[dict[str, Any]], k: K, n_steps: int) -> dict[str, np.ndarray]:
    """Baseline: :func:`_run_py` one configuration at a time; figures stacked (``k`` for ``_finish``)."""
    runs = [_run_py(c, n_steps) for c in configs]
    cols = list(zip(*runs))
    arr = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    smart = tuple(arr(x) for x in zip(*cols[2]))
    temps = [arr(x) for x in zip(*cols[3])]
    return _finish(k, n_steps, arr(cols[0]), arr(cols[1]), smart, temps, *(arr(x) for x in cols[4:]))


# ----------------------------------------------------------------------------- baseline: jitted single step
_setup_j = jax.jit(coupled.setup)
_init_j = jax.jit(coupled.init)
_step_j = jax.jit(coupled.step)


def jax_step_loop(trees: tuple, n_steps: int, k: K) -> dict[str, np.ndarray]:
    """Baseline: per configuration, a Python loop over the steps calling the jitted ``coupled.step``;
    the per-step outputs are reduced to ``coupled.metrics``' figures with NumPy (``k``: for ``_finish``)."""
    n = int(np.asarray(trees[0].user_bytes).shape[0])
    acc: list[tuple] = []
    for i in range(n):
        d, w, p, t = jax.device_put(take_tree(trees, i))
        su = _setup_j(d, w, p, t)
        state = _init_j(d, w, p, t, su)
        outs = []
        for step in range(n_steps):
            state, out = _step_j(su, p, t, state, np.float32(step))
            outs.append(out)
        state, outs = jax.device_get((state, outs))
        speed = np.array([o.speed for o in outs], dtype=np.float64)
        writing = np.array([o.writing for o in outs]) > 0
        thr = np.array([o.level for o in outs]) > 0.5
        sm = state.smart
        acc.append((float(state.written_bytes), float(state.energy_j),
                    tuple(float(x) for x in (sm.tmt1_transitions, sm.tmt2_transitions, sm.tmt1_steps,
                                             sm.tmt2_steps, sm.warning_steps, sm.critical_steps)),
                    tuple(float(x) for x in state.temps_k),
                    max(float(o.composite_k) for o in outs), max(float(o.temps_k[1]) for o in outs),
                    float(np.sum(speed[writing & ~thr])), float(np.sum(writing & ~thr)),
                    float(np.sum(speed[writing & thr])), float(np.sum(writing & thr)),
                    _percentile_py(speed[writing].tolist(), 5.0)))
    cols = list(zip(*acc))
    arr = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    return _finish(k, n_steps, arr(cols[0]), arr(cols[1]), tuple(arr(x) for x in zip(*cols[2])),
                   [arr(x) for x in zip(*cols[3])], *(arr(x) for x in cols[4:]))


# ----------------------------------------------------------------------------- JAX
def jax_metrics_fn(n_steps: int) -> Callable:
    """The timed program: jit of vmap of ``coupled.metrics``."""
    return jax.jit(jax.vmap(lambda d, w, p, t: coupled.metrics(d, w, p, t, n_steps)))


def chunks(trees: tuple, chunk: int) -> list[tuple]:
    """Device-resident chunks of ``chunk`` configurations; the last is padded by repeating its last row."""
    n = int(np.asarray(trees[0].user_bytes).shape[0])
    out = []
    for lo in range(0, n, chunk):
        idx = np.minimum(np.arange(lo, lo + chunk), n - 1)
        out.append(jax.device_put(take_tree(trees, idx)))
    return out


def compile_fn(n_steps: int, example: tuple) -> tuple[Any, dict[str, float]]:
    """Ahead-of-time compiled program for the shape of ``example``; (compiled, {lower_s, compile_s})."""
    t0 = time.perf_counter()
    lowered = jax_metrics_fn(n_steps).lower(*example)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return compiled, {"lower_s": t1 - t0, "xla_compile_s": t2 - t1, "compile_s": t2 - t0}


def run_jax(fn: Callable, parts: list[tuple]) -> list[dict[str, jax.Array]]:
    """Every chunk through ``fn``; blocks until all results are ready."""
    return jax.block_until_ready([fn(*part) for part in parts])


def gather(results: list[dict[str, jax.Array]], n: int) -> dict[str, np.ndarray]:
    return {k: np.concatenate([np.asarray(r[k]) for r in results])[:n].astype(np.float64) for k in results[0]}


def x64(enable: bool = True) -> contextlib.AbstractContextManager:
    """Context manager switching JAX to 64-bit types (``jax.enable_x64``; older JAX: experimental)."""
    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:  # pragma: no cover - jax < 0.5
        from jax.experimental import enable_x64 as ctx
    return ctx(enable)


def jax_metrics_x64(trees: tuple, n_steps: int) -> dict[str, np.ndarray]:
    """The engine's own results in float64 (one untimed call): the exact reference for the ports."""
    tree = jax.tree_util.tree_map(lambda x: np.asarray(x, dtype=np.float64), trees)
    with x64():
        out = jax_metrics_fn(n_steps)(*tree)
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


# ----------------------------------------------------------------------------- agreement, timing
def rel_diff(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|x - y| / max(|x|, |y|) per element; 0 where equal (NaN == NaN), inf where only one is NaN."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-300)
    both_nan = np.isnan(x) & np.isnan(y)
    d = np.where((x == y) | both_nan, 0.0, d)
    return np.where(np.isnan(x) ^ np.isnan(y), np.inf, d)


def abs_diff(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return np.where(x == y, 0.0, np.abs(x - y))


def agreement(ref: dict[str, np.ndarray], port: dict[str, np.ndarray], index: np.ndarray) -> dict[str, Any]:
    """The brief's check (written bytes 1e-3 relative, max temperatures 0.05 K) and every metric's diff."""
    written = rel_diff(ref["written_gb"], port["written_gb"])
    temps = {key: abs_diff(ref[key], port[key]) for key in TEMP_KEYS}
    bad = (written > WRITTEN_REL_TOL) | np.logical_or.reduce([t > TEMP_ABS_TOL_K for t in temps.values()])
    all_rel = {key: float(np.max(rel_diff(ref[key], port[key]))) for key in sorted(ref)}
    return {
        "configs": len(written),
        "written_max_rel_diff": float(np.max(written)),
        "temp_max_abs_diff_k": {key: float(np.max(v)) for key, v in temps.items()},
        "outside_tolerance": int(bad.sum()),
        "outside_tolerance_configs": [int(x) for x in index[bad][:20]],
        "ok": bool(not bad.any()),
        "all_metrics_max_rel_diff": all_rel,
    }


def explain_outliers(agree: dict[str, Any], trees: tuple, n_steps: int, jx: dict[str, np.ndarray],
                     ports: dict[str, dict[str, np.ndarray] | None], limit: int = 64) -> None:
    """For configurations outside the float32 tolerance, rerun the engine in float64 and record how
    far the port and the float32 engine each are from it (a flipped threshold moves the float32
    engine, not the port, when the port is exact)."""
    for name, port in ports.items():
        ag = agree.get(name)
        if port is None or ag is None or ag["outside_tolerance"] == 0:
            continue
        written = rel_diff(jx["written_gb"][:ag["configs"]], port["written_gb"])
        temps = [abs_diff(jx[key][:ag["configs"]], port[key]) for key in TEMP_KEYS]
        bad = np.flatnonzero((written > WRITTEN_REL_TOL)
                             | np.logical_or.reduce([t > TEMP_ABS_TOL_K for t in temps]))[:limit]
        ref = jax_metrics_x64(take_tree(trees, bad), n_steps)
        port_d = max(float(np.max(rel_diff(ref[k], port[k][bad]))) for k in sorted(ref))
        f32_d = float(np.max(rel_diff(ref["written_gb"], jx["written_gb"][bad])))
        f32_t = max(float(np.max(abs_diff(ref[k], jx[k][bad]))) for k in TEMP_KEYS)
        ag["outside_tolerance_vs_x64"] = {
            "configs": [int(x) for x in bad], "port_max_rel_diff_all_metrics": port_d,
            "jax_float32_written_rel_diff": f32_d, "jax_float32_temp_abs_diff_k": f32_t,
            "explained_by_float32_rounding": bool(port_d <= X64_TOL),
        }


def timed(repeats: int, fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
    """Wall times of ``repeats`` calls of ``fn`` (median, min, all) and the last result."""
    times, res = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "times_s": times}, res


def device_info() -> dict[str, Any]:
    dev = jax.devices()[0]
    info: dict[str, Any] = {"kind": dev.device_kind, "platform": dev.platform, "count": jax.device_count()}
    with contextlib.suppress(Exception):
        stats = dev.memory_stats()
        if stats and "bytes_limit" in stats:
            info["memory_bytes_limit"] = int(stats["bytes_limit"])
    return info


def peak_bytes() -> int | None:
    with contextlib.suppress(Exception):
        stats = jax.devices()[0].memory_stats()
        if stats and "peak_bytes_in_use" in stats:
            return int(stats["peak_bytes_in_use"])
    return None


def is_oom(err: BaseException) -> bool:
    msg = str(err)
    return "RESOURCE_EXHAUSTED" in msg or "out of memory" in msg.lower() or isinstance(err, MemoryError)


# ----------------------------------------------------------------------------- --sizes sweep
def sizes_sweep(spec: str, steps: int, repeats: int, start: int, max_configs: int,
                time_limit_s: float) -> dict[str, Any]:
    """JAX-only batch-size sweep, one call per batch (module docstring)."""
    doubling = spec.strip().lower() == "double"
    sizes = [] if doubling else [int(x) for x in spec.split(",") if x.strip()]
    pool_n = min(POOL_CONFIGS, max(sizes) if sizes else max_configs)
    t0 = time.perf_counter()
    pool, _ = build_configs(np.arange(pool_n), steps)
    pool = jax.device_put(pool)
    tile = jax.jit(lambda tree, idx: jax.tree_util.tree_map(lambda x: x[idx], tree))
    build_s = time.perf_counter() - t0
    rows: list[dict[str, Any]] = []
    stop = "list done"
    began = time.perf_counter()
    n = start
    while True:
        if not doubling:
            if len(rows) == len(sizes):
                break
            n = sizes[len(rows)]
        elif n > max_configs:
            stop = f"reached --max-configs {max_configs}"
            break
        row: dict[str, Any] = {"configs": n}
        trees = compiled = res = None
        try:
            trees = tile(pool, jnp.arange(n, dtype=jnp.int32) % pool_n)
            jax.block_until_ready(trees)
            compiled, ct = compile_fn(steps, trees)
            w0 = time.perf_counter()
            jax.block_until_ready(compiled(*trees))
            row["warmup_s"] = time.perf_counter() - w0
            tm, res = timed(repeats, lambda c=compiled, t=trees: jax.block_until_ready(c(*t)))
            ok = bool(np.all(np.isfinite(np.asarray(res["written_gb"]))))
            row.update(ct, run_s=tm["median_s"], run_min_s=tm["min_s"], times_s=tm["times_s"],
                       config_steps_per_s=n * steps / tm["median_s"], ok=ok, peak_bytes_in_use=peak_bytes())
        except Exception as err:  # an out-of-memory error ends the sweep; anything else is re-raised
            if not is_oom(err):
                raise
            row.update(ok=False, error=str(err).splitlines()[0][:300])
            stop = f"out of memory at {n} configurations"
        del trees, compiled, res
        gc.collect()
        rows.append(row)
        print(f"  sizes: {n:>10} configs  " + (f"run {row['run_s']:.3f} s  "
                                               f"{row['config_steps_per_s']:.3g} cfg-steps/s"
                                               if "run_s" in row else row.get("error", "failed")), flush=True)
        if "error" in row:
            break
        if doubling:
            spent = time.perf_counter() - began
            nxt = 2.0 * row["run_s"] * (repeats + 1) + 2.0 * row["compile_s"] + 2.0 * row["warmup_s"]
            if spent + nxt > time_limit_s:
                stop = f"next size would pass --size-time-limit {time_limit_s:g} s"
                break
            n *= 2
    ran = [r for r in rows if "run_s" in r]
    best = max(ran, key=lambda r: r["configs"]) if ran else None
    return {"mode": "double" if doubling else "list", "steps": steps, "repeats": repeats,
            "pool_configs": pool_n, "pool_build_s": build_s, "stop": stop, "rows": rows,
            "largest_ran": None if best is None else {"configs": best["configs"], "run_s": best["run_s"],
                                                      "config_steps_per_s": best["config_steps_per_s"]},
            "best_config_steps_per_s": max((r["config_steps_per_s"] for r in ran), default=None)}


# ----------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=10_000, help="number of runs N (default 10000)")
    ap.add_argument("--steps", type=int, default=600, help="time steps per run S of 1 s (default 600)")
    ap.add_argument("--chunk", type=int, default=None, help="configurations per JAX call (default N)")
    ap.add_argument("--loop-configs", type=int, default=None,
                    help="python_loop sample M (default min(N, 100)); also the float64 check's sample")
    ap.add_argument("--step-loop-configs", type=int, default=None,
                    help="jax_step_loop sample (default min(N, 8)); 0 skips it")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats, median reported (default 5)")
    ap.add_argument("--baseline-repeats", type=int, default=3,
                    help="timed repeats of each baseline, median reported (default 3)")
    ap.add_argument("--sizes", default=None,
                    help="batch-size sweep after the main case: comma list (1000,10000,...) or 'double'")
    ap.add_argument("--size-start", type=int, default=4096, help="first size of --sizes double")
    ap.add_argument("--max-configs", type=int, default=1 << 24, help="--sizes double stops above this")
    ap.add_argument("--size-time-limit", type=float, default=300.0,
                    help="--sizes double stops when the next size would pass this many seconds")
    ap.add_argument("--sizes-only", action="store_true", help="run only the --sizes sweep")
    ap.add_argument("--out", default=None, help="JSON path (default bench/thermal_<platform>.json)")
    a = ap.parse_args(argv)
    n, steps = a.configs, a.steps
    dev = device_info()
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = a.out or os.path.join(here, f"thermal_{dev['platform']}.json")
    result: dict[str, Any] = {
        "benchmark": "coupled.metrics: time-stepped write/power/thermal/HCTM runs",
        "timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "jax_version": jax.__version__,
        "device": dev,
        "grid": {"drives": list(DRIVES), "cooling": list(COOLINGS), "tmt_c": [list(x) for x in TMT_C],
                 "policies": list(POLICIES), "hysteresis_k": list(HYSTERESIS_K),
                 "workloads": [dict(x) or {"preset": "seq_fill"} for x in WORKLOADS],
                 "ambient_c": list(AMBIENT_C), "discrete_size": GRID_SIZE, "dt_s": DT_S},
    }
    print(f"coupled.metrics: device {dev['platform']}/{dev['kind']}; jax {jax.__version__}; "
          f"{os.cpu_count()} CPUs", flush=True)
    if not a.sizes_only:
        result.update(main_case(a, n, steps))
    if a.sizes:
        print(f"batch-size sweep ({a.sizes}), {steps} steps, one call per batch:", flush=True)
        sw = sizes_sweep(a.sizes, steps, a.repeats, a.size_start, a.max_configs, a.size_time_limit)
        result["sizes_sweep"] = sw
        if sw["largest_ran"]:
            lr = sw["largest_ran"]
            print(f"largest batch that ran: {lr['configs']} configs, {lr['run_s']:.3f} s, "
                  f"{lr['config_steps_per_s']:.3g} cfg-steps/s ({sw['stop']})")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {out_path}")
    return result


def main_case(a: argparse.Namespace, n: int, steps: int) -> dict[str, Any]:
    chunk = min(a.chunk or n, n)
    m_loop = max(min(100 if a.loop_configs is None else a.loop_configs, n), 1)
    m_step = min(8 if a.step_loop_configs is None else a.step_loop_configs, n)
    m_np = min(n, NUMPY_MAX_CONFIGS)
    notes = []

    t0 = time.perf_counter()
    trees, s_check = build_configs(np.arange(n), steps)
    build_s = time.perf_counter() - t0
    assert s_check == steps
    t0 = time.perf_counter()
    k_all = constants(*trees)
    constants_s = time.perf_counter() - t0

    # JAX: compile ahead of time, one warm-up pass, then the median of `repeats` timed passes.
    parts = chunks(trees, chunk)
    compiled, ct = compile_fn(steps, parts[0])
    t0 = time.perf_counter()
    run_jax(compiled, parts)
    warmup_s = time.perf_counter() - t0
    jt, res = timed(a.repeats, lambda: run_jax(compiled, parts))
    jax_run_s = jt["median_s"]
    jx = gather(res, n)
    peak = peak_bytes()

    # Baseline: NumPy vectorised over configurations.
    k_np = take_k(k_all, slice(0, m_np))
    nt, np_res = timed(a.baseline_repeats, lambda: numpy_vectorised(k_np, steps))
    np_run_s = nt["median_s"] * n / m_np
    if m_np < n:
        notes.append(f"numpy_vectorised timed on the first {m_np} configurations, extrapolated to {n}")

    # Baseline: Python loop, one configuration at a time (a sample, extrapolated).
    k_loop = take_k(k_all, slice(0, m_loop))
    configs = scalar_configs(k_loop)
    lt, loop_res = timed(a.baseline_repeats, lambda: python_loop(configs, k_loop, steps))
    loop_run_s = lt["median_s"] * n / m_loop
    if m_loop < n:
        notes.append(f"python_loop timed on {m_loop} configurations, per-configuration time x {n}")

    # Baseline: Python loop over steps of the jitted single step (a sample, extrapolated).
    step_row = None
    step_res = None
    if m_step > 0:
        first = take_tree(trees, slice(0, 1))
        t0 = time.perf_counter()
        jax_step_loop(first, steps, take_k(k_all, slice(0, 1)))  # compiles setup/init/step: warm-up
        step_compile_s = time.perf_counter() - t0
        sub = take_tree(trees, slice(0, m_step))
        k_step = take_k(k_all, slice(0, m_step))
        st, step_res = timed(a.baseline_repeats, lambda: jax_step_loop(sub, steps, k_step))
        step_row = {"configs_timed": m_step, "compile_s": step_compile_s,
                    "run_s": st["median_s"] * n / m_step,
                    "measured_s": st["median_s"], "measured_min_s": st["min_s"], "times_s": st["times_s"],
                    "extrapolated": m_step < n}
        if m_step < n:
            notes.append(f"jax_step_loop timed on {m_step} configurations, per-configuration time x {n}; its "
                         "compile_s is the first (warm-up) configuration's wall time, compiles included")

    # Exactness of the ports: the engine in float64 on the python_loop sample, every metric.
    ref64 = jax_metrics_x64(take_tree(trees, slice(0, m_loop)), steps)
    exact = {"configs": m_loop, "keys": "all metrics", "tolerance_rel": X64_TOL}
    for name, port in (("numpy_vectorised", {k: v[:m_loop] for k, v in np_res.items()}),
                       ("python_loop", loop_res)):
        d = {key: float(np.max(rel_diff(ref64[key], port[key]))) for key in sorted(ref64)}
        exact[name] = max(d.values())
        exact[f"{name}_temp_max_abs_diff_k"] = max(float(np.max(abs_diff(ref64[key], port[key])))
                                                   for key in TEMP_KEYS)
    exact["ok"] = max(exact["numpy_vectorised"], exact["python_loop"]) <= X64_TOL

    agree = {
        "tolerance": {"written_rel": WRITTEN_REL_TOL, "temp_abs_k": TEMP_ABS_TOL_K, "keys": ["written_gb",
                                                                                           *TEMP_KEYS]},
        "numpy_vectorised": agreement({k: v[:m_np] for k, v in jx.items()}, np_res, np.arange(m_np)),
        "python_loop": agreement({k: v[:m_loop] for k, v in jx.items()}, loop_res, np.arange(m_loop)),
        "x64_port_check": exact,
    }
    if step_res is not None:
        agree["jax_step_loop"] = agreement({k: v[:m_step] for k, v in jx.items()}, step_res,
                                           np.arange(m_step))
    explain_outliers(agree, trees, steps, jx, {"numpy_vectorised": np_res, "python_loop": loop_res,
                                              "jax_step_loop": step_res})

    work = {  # what the runs did (JAX float32 results): the benchmark is not timing idle drives
        "share_throttled": float(np.mean(jx["throttled_s"] > 0)),
        "share_heavy_throttled": float(np.mean(jx["time_tmt2_s"] > 0)),
        "share_above_wctemp": float(np.mean(jx["time_above_wctemp_s"] > 0)),
        "written_gb": {"min": float(np.min(jx["written_gb"])), "mean": float(np.mean(jx["written_gb"])),
                       "max": float(np.max(jx["written_gb"]))},
        "max_composite_c": {"min": float(np.min(jx["max_composite_k"]) - ZERO_C_IN_K),
                            "max": float(np.max(jx["max_composite_k"]) - ZERO_C_IN_K)},
    }
    cs = float(n) * steps
    table: dict[str, dict[str, Any]] = {
        "jax_vmap": {"configs_timed": n, "compile_s": ct["compile_s"], "run_s": jax_run_s,
                     "run_min_s": jt["min_s"], "times_s": jt["times_s"], "warmup_s": warmup_s,
                     "extrapolated": False},
        "numpy_vectorised": {"configs_timed": m_np, "compile_s": 0.0, "run_s": np_run_s,
                             "measured_s": nt["median_s"], "measured_min_s": nt["min_s"],
                             "times_s": nt["times_s"], "extrapolated": m_np < n},
        "python_loop": {"configs_timed": m_loop, "compile_s": 0.0, "run_s": loop_run_s,
                        "measured_s": lt["median_s"], "measured_min_s": lt["min_s"], "times_s": lt["times_s"],
                        "extrapolated": m_loop < n},
    }
    if step_row is not None:
        table["jax_step_loop"] = step_row
    for row in table.values():
        row["config_steps_per_s"] = cs / row["run_s"]
        row["jax_speedup"] = row["run_s"] / jax_run_s
    baselines = [b for b in BASELINES if b in table]
    ratios = {f"jax/{b}": table[b]["run_s"] / jax_run_s for b in baselines}
    out = {
        "sizes": {"configs": n, "steps": steps, "dt_s": DT_S, "chunk": chunk, "chunks": len(parts),
                  "loop_configs": m_loop, "step_loop_configs": m_step, "numpy_configs": m_np,
                  "repeats": a.repeats, "baseline_repeats": a.baseline_repeats},
        "timing": {"statistic": "median of repeats, each ending in jax.block_until_ready (JAX)",
                   "jax_compile": "jit(vmap(coupled.metrics)).lower(...).compile(), ahead of time; "
                                  "one untimed warm-up pass before the timed repeats"},
        "dtype": {"jax_vmap": "float32", "numpy_vectorised": "float64", "python_loop": "float64",
                  "jax_step_loop": "float32"},
        "baselines": baselines,
        "baseline": HEADLINE_BASELINE,
        "speedup_vs_baseline": ratios[f"jax/{HEADLINE_BASELINE}"],
        "build_s": build_s,
        "constants_s": constants_s,
        "compile_s": ct["compile_s"],
        "compile": ct,
        "peak_bytes_in_use": peak,
        "run_s": {k: v["run_s"] for k, v in table.items()},
        "config_steps_per_s": {k: v["config_steps_per_s"] for k, v in table.items()},
        "ratios": ratios,
        "rows": table,
        "agreement": agree,
        "work": work,
        "notes": notes,
    }

    print(f"{n} runs x {steps} steps of {DT_S:g} s, chunk {chunk} ({len(parts)} call(s)); "
          f"JAX median of {a.repeats}, baselines median of {a.baseline_repeats}")
    hdr = (f"{'engine':<18}{'configs':>9}{'steps':>7}{'compile_s':>11}{'run_s':>11}"
           f"{'cfg-steps/s':>13}{'jax x':>9}")
    print(hdr)
    print("-" * len(hdr))
    for name, row in table.items():
        note = f"  (timed {row['configs_timed']}, extrapolated)" if row["extrapolated"] else ""
        print(f"{name:<18}{n:>9}{steps:>7}{row['compile_s']:>11.3f}{row['run_s']:>11.3f}"
              f"{row['config_steps_per_s']:>13.3g}{row['jax_speedup']:>9.1f}{note}")
    print(f"runs: {work['share_throttled']:.0%} throttled ({work['share_heavy_throttled']:.0%} heavy), "
          f"{work['share_above_wctemp']:.0%} above WCTEMP; written {work['written_gb']['min']:.0f}-"
          f"{work['written_gb']['max']:.0f} GB; max composite {work['max_composite_c']['min']:.0f}-"
          f"{work['max_composite_c']['max']:.0f} C")
    print(f"headline baseline: {HEADLINE_BASELINE}, jax_vmap is {out['speedup_vs_baseline']:.1f}x faster")
    for name in baselines:
        ag = agree[name]
        tmax = ", ".join(f"{k} {v:.2e} K" for k, v in ag["temp_max_abs_diff_k"].items())
        print(f"agreement {name} vs jax float32 on {ag['configs']} configs: written rel "
              f"{ag['written_max_rel_diff']:.1e}, {tmax}; outside tolerance: {ag['outside_tolerance']}")
        ex = ag.get("outside_tolerance_vs_x64")
        if ex:
            print(f"  those {len(ex['configs'])} rerun in float64: port max rel diff "
                  f"{ex['port_max_rel_diff_all_metrics']:.1e} (all metrics), jax float32 off by "
                  f"{ex['jax_float32_written_rel_diff']:.1e} written, "
                  f"{ex['jax_float32_temp_abs_diff_k']:.2f} K: "
                  + ("float32 rounding flips a throttle threshold" if ex["explained_by_float32_rounding"]
                     else "NOT explained by float32 rounding"))
    print(f"port check vs jax float64 on {m_loop} configs, all metrics (max rel diff): numpy_vectorised "
          f"{exact['numpy_vectorised']:.1e}, python_loop {exact['python_loop']:.1e}")
    return out


if __name__ == "__main__":
    main()
