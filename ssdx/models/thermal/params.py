"""Power, thermal-environment and HCTM parameters: columns, validation and pytrees.

Two column families join the drive/workload columns of :mod:`ssdx.params` when a run is thermal:

* ``power.*`` — the drive's power model and its firmware's thermal management (from the drive
  preset's ``power:`` block): idle and controller power, per-byte energies, the throttle policy and
  its actions, the vendor hysteresis, the composite-temperature sensor weighting, and the Identify
  Controller temperatures WCTEMP, CCTEMP, MNTMT and MXTMT (Kelvin).
* ``thermal.*`` — the environment and the host's settings: the cooling preset (``ssdx.catalog.COOLING``),
  ambient temperature (deg C at the edge, Kelvin inside), TMT1/TMT2 as set with Set Features 0x10
  (whole Kelvin, 0 disables the level), the time step and the run duration.  ``thermal.rc`` (optional)
  replaces RC values of the cooling preset — e.g. a chassis measured with ``ssdx experiment=fit_rc``
  — as columns ``thermal.rc.<field>`` (J/K, W/K).

Rules follow the Host Controlled Thermal Management of the NVM Express Base Specification, revision 1.3d (NVM
Express, March 2019): a TMT is a whole number of Kelvin (Set Features 0x10 carries each in 16 bits; a
fractional one would be simulated but not sent: the command holds it rounded), a non-zero TMT must lie in
[MNTMT, MXTMT], and non-zero TMT2 must be greater than non-zero TMT1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ssdx import catalog, params
from ssdx.core.fields import ConfigError, Field, check, check_rule, num, table
from ssdx.params import _choice, _pytree
from ssdx.units import ZERO_C_IN_K

POLICIES = ("ssd_a", "ssd_b")
POWER_FIELDS = (
    "idle_w", "ctrl_active_w", "datapath_nj_per_byte", "nand_io_pj_per_bit", "policy",
    "light_rate_fraction", "light_ctrl_fraction", "light_power_cap_w",
    "heavy_rate_fraction", "heavy_ctrl_fraction", "heavy_power_cap_w",
    "hysteresis_k", "sensor_ctrl_weight", "wctemp_k", "cctemp_k", "mntmt_k", "mxtmt_k",
)
THERMAL_FIELDS = ("cooling", "ambient_c", "tmt1_k", "tmt2_k", "dt_s", "duration_s")
#: RC values of a cooling preset (``ssdx.catalog.Cooling``) that ``thermal.rc`` may replace: J/K, W/K.
RC_FIELDS = ("c_ctrl", "c_nand", "c_case", "g_ctrl_nand", "g_ctrl_case", "g_nand_case", "g_case_amb",
             "g_ctrl_amb", "g_nand_amb")
RC_PREFIX = "thermal.rc."
MAX_STEPS = 1_000_000

#: the numeric fields, their ranges and meanings
RANGES: dict[str, Field] = table(
    Field("power.idle_w", "W", 0.0, 100.0, doc="idle power, W"),
    Field("power.ctrl_active_w", "W", 0.0, 100.0, doc="controller power added while busy, W"),
    Field("power.datapath_nj_per_byte", "nJ", 0.0, 100.0, doc="controller datapath energy per host byte, nJ"),
    Field("power.nand_io_pj_per_bit", "pJ", 0.0, 1000.0, doc="NAND bus I/O energy per bit, pJ"),
    Field("power.light_rate_fraction", "", 0.0, 1.0, lo_open=True,
          doc="throughput fraction kept in light throttling"),
    Field("power.heavy_rate_fraction", "", 0.0, 1.0, lo_open=True,
          doc="throughput fraction kept in heavy throttling"),
    Field("power.light_ctrl_fraction", "", 0.0, 1.0, doc="controller active power kept in light throttling"),
    Field("power.heavy_ctrl_fraction", "", 0.0, 1.0, doc="controller active power kept in heavy throttling"),
    Field("power.light_power_cap_w", "W", 0.0, 100.0, doc="power-state cap in light throttling, W; 0 = none"),
    Field("power.heavy_power_cap_w", "W", 0.0, 100.0, doc="power-state cap in heavy throttling, W; 0 = none"),
    Field("power.hysteresis_k", "K", 0.0, 50.0,
          doc="vendor hysteresis below a TMT before leaving its state, K"),
    Field("power.sensor_ctrl_weight", "", 0.0, 1.0, doc="weight of the controller node in the composite"),
    Field("power.wctemp_k", "K", 273.15, 423.15, doc="warning composite temperature WCTEMP, K"),
    Field("power.cctemp_k", "K", 273.15, 423.15, doc="critical composite temperature CCTEMP, K"),
    Field("power.mntmt_k", "K", 1.0, 423.15, doc="minimum thermal management temperature MNTMT, K"),
    Field("power.mxtmt_k", "K", 1.0, 423.15, doc="maximum thermal management temperature MXTMT, K"),
    Field("thermal.ambient_c", "degC", -40.0, 85.0, doc="ambient temperature, deg C"),
    Field("thermal.dt_s", "s", 1e-3, 60.0, doc="time step, s"),
    Field("thermal.duration_s", "s", 1.0, 1e7, doc="run duration, s"),
)


def _rc_field(name: str) -> Field:
    """The range of ``thermal.rc.<name>``: a heat capacity (``c_*``, J/K) or a conductance (W/K) above 0; a
    conductance to ambient may be 0 (no path)."""
    unit, amb = ("J/K" if name.startswith("c_") else "W/K"), name.endswith("_amb")
    return Field(RC_PREFIX + name, unit, 0.0, 1e6, lo_open=not amb, optional=True,
                 doc="replaces the cooling preset's value",
                 rule=f"finite, {'0 <=' if amb else '0 <'} x <= 1e6 ({unit}; replaces the cooling preset's "
                      "value)")


#: the RC values ``thermal.rc`` may replace (absent: the cooling preset's)
RC_RANGES: dict[str, Field] = table(*(_rc_field(f) for f in RC_FIELDS))


@_pytree
class Power:
    """Power model and firmware thermal management of one drive (W, J/byte, K)."""

    idle_w: Any
    ctrl_w: Any
    host_j_per_byte: Any  # controller datapath + host-link PHY, per host byte
    io_j_per_byte: Any  # NAND bus I/O, per byte on the channels
    die_w: Any  # per busy die
    policy: Any  # integer code into POLICIES
    light_rate: Any
    light_ctrl: Any
    light_cap_w: Any  # 0 = no cap
    heavy_rate: Any
    heavy_ctrl: Any
    heavy_cap_w: Any
    hysteresis_k: Any
    sensor_ctrl_weight: Any
    wctemp_k: Any
    cctemp_k: Any


@_pytree
class Thermal:
    """Environment (RC network, ambient) and host HCTM settings.  J/K, W/K, K, s."""

    ambient_k: Any
    tmt1_k: Any
    tmt2_k: Any
    dt_s: Any
    c_ctrl: Any
    c_nand: Any
    c_case: Any
    g_ctrl_nand: Any
    g_ctrl_case: Any
    g_nand_case: Any
    g_case_amb: Any
    g_ctrl_amb: Any
    g_nand_amb: Any


def columns(power: Mapping, thermal: Mapping) -> dict[str, np.ndarray]:
    """One-row ``power.*`` and ``thermal.*`` columns from config mappings."""
    cols: dict[str, np.ndarray] = {}
    for prefix, node, fields in (("power", power, POWER_FIELDS), ("thermal", thermal, THERMAL_FIELDS)):
        for f in fields:
            if f not in node:
                raise ConfigError(f"{prefix}.{f}", None, "the field is required")
            cols[f"{prefix}.{f}"] = np.asarray([node[f]])
    for f, v in (thermal.get("rc") or {}).items():
        if f not in RC_FIELDS:
            raise ConfigError(f"{RC_PREFIX}{f}", v, f"unknown RC field; one of {list(RC_FIELDS)}")
        if v is not None:
            cols[f"{RC_PREFIX}{f}"] = np.asarray([v])
    return cols


#: the rule a fractional ``thermal.tmt1_k`` / ``thermal.tmt2_k`` breaks
TMT_WHOLE_RULE = ("whole Kelvin: Set Features 0x10 carries each TMT as a 16-bit integer (NVMe HCTM), so a "
                  "fractional one could not be set on the drive (a sweep's random or sobol block draws whole "
                  "numbers with integer: true)")


def validate(cols: Mapping, report: list | None = None) -> None:
    """Check the power/thermal rules (raise :class:`ConfigError`, or append to ``report``)."""
    _choice(cols, "power.policy", lambda x: x in POLICIES, list(POLICIES), report)
    _choice(cols, "thermal.cooling", lambda x: x in catalog.COOLING, sorted(catalog.COOLING), report)
    check(RANGES, cols, report)
    wc, cc = num(cols, "power.wctemp_k"), num(cols, "power.cctemp_k")
    check_rule(cols, "power.cctemp_k", cc > wc, "CCTEMP must be above WCTEMP (power.wctemp_k)", report=report)
    lo, hi = num(cols, "power.mntmt_k"), num(cols, "power.mxtmt_k")
    check_rule(cols, "power.mxtmt_k", hi > lo, "MXTMT must be above MNTMT (power.mntmt_k)", report=report)
    t1, t2 = num(cols, "thermal.tmt1_k"), num(cols, "thermal.tmt2_k")
    for key, t in (("thermal.tmt1_k", t1), ("thermal.tmt2_k", t2)):
        check_rule(cols, key, (t == 0) | ((t >= lo) & (t <= hi)),
                   "Kelvin; 0 disables the level, otherwise MNTMT <= x <= MXTMT "
                   "(power.mntmt_k, power.mxtmt_k); "
                   "the drive answers Invalid Field in Command", report=report)
        check_rule(cols, key, t == np.round(t), TMT_WHOLE_RULE, report=report)
    check_rule(cols, "thermal.tmt2_k", (t1 == 0) | (t2 == 0) | (t2 > t1),
               "when both are non-zero, thermal.tmt2_k must be greater than thermal.tmt1_k (NVMe HCTM)",
               report=report)
    dt, dur = num(cols, "thermal.dt_s"), num(cols, "thermal.duration_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = dur / dt
    check_rule(cols, "thermal.duration_s",
               (np.abs(steps - np.round(steps)) < 1e-6 * np.maximum(steps, 1))
               & (steps <= MAX_STEPS) & (steps >= 1),
               f"must be a whole number of thermal.dt_s steps, at most {MAX_STEPS}", report=report)
    check(RC_RANGES, cols, report)
    if "workload.burst_gb" in cols:
        check_rule(cols, "workload.burst_gb", num(cols, "workload.burst_gb") == 0,
                   "idle gaps are not modelled by the thermal engine; use 0 (a continuous write)",
                   report=report)


def valid_rows(cols: Mapping) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Per-configuration validity of the power/thermal rules (see ``ssdx.params.valid_rows``)."""
    return params.valid_rows(cols, validate)


def n_steps(cols: Mapping) -> int:
    """Scan length of a thermal run (static); every configuration of a run must share it."""
    steps = np.round(num(cols, "thermal.duration_s") / num(cols, "thermal.dt_s")).astype(int)
    if len(np.unique(steps)) != 1:
        i = int(np.flatnonzero(steps != steps[0])[0])
        raise ConfigError("thermal.duration_s", num(cols, "thermal.duration_s")[i],
                          f"every configuration of one run needs the same number of steps "
                          f"(duration_s / dt_s = {steps[0]} for the first, {steps[i]} here)",
                          row=i, n=len(steps))
    return int(steps[0])


def build(cols: Mapping, dtype=np.float32) -> tuple[Power, Thermal]:
    """Validate and turn ``power.*``/``thermal.*`` columns into (Power, Thermal) pytrees, shape (n,)."""
    validate(cols)
    c = lambda a: np.asarray(a, dtype=dtype)  # noqa: E731
    links = params.Codes(np.asarray(cols["drive.interface"]).astype(str))
    cool = params.Codes(np.asarray(cols["thermal.cooling"]).astype(str))
    col = lambda k: num(cols, k)  # noqa: E731
    power = Power(
        idle_w=c(col("power.idle_w")),
        ctrl_w=c(col("power.ctrl_active_w")),
        host_j_per_byte=c(col("power.datapath_nj_per_byte") * 1e-9
                          + links.map(lambda x: catalog.interface(x).link_pj_per_bit) * 8e-12),
        io_j_per_byte=c(col("power.nand_io_pj_per_bit") * 8e-12),
        die_w=c(params.nand_value(cols, "die_active_w")),  # the configuration's NAND type (catalog)
        policy=c(params.lookup(np.asarray(cols["power.policy"]).astype(str), POLICIES.index)),
        light_rate=c(col("power.light_rate_fraction")),
        light_ctrl=c(col("power.light_ctrl_fraction")),
        light_cap_w=c(col("power.light_power_cap_w")),
        heavy_rate=c(col("power.heavy_rate_fraction")),
        heavy_ctrl=c(col("power.heavy_ctrl_fraction")),
        heavy_cap_w=c(col("power.heavy_power_cap_w")),
        hysteresis_k=c(col("power.hysteresis_k")),
        sensor_ctrl_weight=c(col("power.sensor_ctrl_weight")),
        wctemp_k=c(col("power.wctemp_k")),
        cctemp_k=c(col("power.cctemp_k")),
    )
    thermal = Thermal(
        ambient_k=c(col("thermal.ambient_c") + ZERO_C_IN_K),
        tmt1_k=c(col("thermal.tmt1_k")),
        tmt2_k=c(col("thermal.tmt2_k")),
        dt_s=c(col("thermal.dt_s")),
        **{f: c(col(RC_PREFIX + f) if RC_PREFIX + f in cols
                else cool.map(lambda x, f=f: getattr(catalog.cooling(x), f)))
           for f in RC_FIELDS},
    )
    return power, thermal


def nvme_value(tmt1_k: float, tmt2_k: float) -> int:
    """Set Features 0x10 Dword 11: TMT1 in bits 31:16, TMT2 in bits 15:0, Kelvin (NVMe HCTM)."""
    t1, t2 = int(round(tmt1_k)), int(round(tmt2_k))
    for name, t in (("tmt1_k", t1), ("tmt2_k", t2)):
        if not 0 <= t <= 0xFFFF:
            raise ConfigError(name, t, "must fit in 16 bits (Kelvin)")
    return (t1 << 16) | t2

