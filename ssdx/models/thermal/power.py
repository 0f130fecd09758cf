"""Drive power from activity, split over the thermal nodes.

While the drive writes at host rate ``x`` (bytes/s) in write mode ``m`` (pSLC, direct native,
folding), its power is affine in ``x``::

    P = idle + ctrl·c·busy + k_m·x
    k_m = e_host + e_io·bus_m + dies·die_w·d_m        (J per host byte)

* ``idle`` — the drive idle in its active power state (PHY, DRAM refresh, firmware), W.
* ``ctrl·c·busy`` — controller cores, DRAM and buffers running while commands are in flight; ``c`` is
  the controller power fraction of the current power state (1 unthrottled, lower when a thermal
  throttle lowers clocks and voltages), ``busy`` the fraction of the step spent writing.
* ``e_host`` — controller datapath (ECC encode, buffer writes) plus host-link PHY energy per byte.
* ``e_io`` — NAND bus I/O energy per byte on the channels; ``bus_m`` channel bytes per host byte
  (1 for pSLC and direct writes; ``1 + 2f`` when folding moves ``f`` bytes out and back).
* ``dies·die_w·d_m`` — every die draws ``die_w`` while busy (array read, program or erase,
  ``ssdx.catalog``); ``d_m`` is the die-array time per host byte (``ssdx.models.fluid.model.die_time``),
  so at the die-limited rate all dies are busy and the term is ``dies·die_w``.

Node split (``ssdx.models.thermal.rc``): idle, controller and datapath power heat the controller node;
die and NAND I/O power heat the NAND node; the case node has no source.

Calibration of ``aldrin_pro_2tb`` (its review, ``ssdx.presets``): see ``ssdx.presets.fit_power``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ssdx.models.fluid import model as fluid
from ssdx.models.thermal.params import Power
from ssdx.params import Drive


class ModeEnergy(NamedTuple):
    """Marginal energy per host byte of each write mode, J/byte, and the split heating the NAND node."""

    total: tuple  # (slc, native, fold)
    nand: tuple  # the part of ``total`` dissipated in the NAND packages


def mode_energy(drive: Drive, power: Power) -> ModeEnergy:
    """``k_m`` of the module docstring for the three write modes."""
    die = fluid.die_time(drive)
    f = fluid.fold_ratio(drive)
    dies_w = drive.dies * power.die_w
    nand = (dies_w * die.slc + power.io_j_per_byte,
            dies_w * die.native + power.io_j_per_byte,
            dies_w * die.fold + power.io_j_per_byte * (1.0 + 2.0 * f))
    total = tuple(power.host_j_per_byte + e for e in nand)
    return ModeEnergy(total=total, nand=nand)


def node_power(power: Power, energy: ModeEnergy, mode_bytes: tuple, busy_s: jax.Array,
               ctrl_fraction: jax.Array, dt_s: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Mean power over a step of ``dt_s`` into the (controller, NAND) nodes, W.

    ``mode_bytes``: host bytes written in each mode during the step; ``busy_s``: seconds spent writing.
    """
    host_bytes = mode_bytes[0] + mode_bytes[1] + mode_bytes[2]
    nand_j = energy.nand[0] * mode_bytes[0] + energy.nand[1] * mode_bytes[1] + energy.nand[2] * mode_bytes[2]
    ctrl = power.idle_w + (power.ctrl_w * ctrl_fraction * busy_s + power.host_j_per_byte * host_bytes) / dt_s
    return ctrl, nand_j / dt_s


def rate_under_cap(rate: jax.Array, k: jax.Array, power: Power, cap_w: jax.Array,
                   ctrl_fraction: jax.Array) -> jax.Array:
    """Largest host rate ``<= rate`` whose power stays under a power-state cap (0 = no cap).

    A cap below the fixed power leaves a trickle of one millionth of the rate rather than zero, so
    time to write a byte stays finite.
    """
    fixed = power.idle_w + power.ctrl_w * ctrl_fraction
    capped = jnp.maximum((cap_w - fixed) / k, 1e-6 * rate)
    return jnp.where(cap_w > 0, jnp.minimum(rate, capped), rate)
