"""Convenience entry points for notebooks and scripts: one drive in, arrays out."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from ssdx import params, presets
from ssdx.models.fluid import model as fluid
from ssdx.models.thermal import coupled
from ssdx.models.thermal import params as thermal_params


def build_one(drive: dict[str, Any], workload: dict[str, Any], nand: dict[str, Any] | None = None,
              dtype=np.float32) -> tuple[params.Drive, params.Workload]:
    """Validated (Drive, Workload) pytrees of scalars for one configuration."""
    d, w = params.build(params.columns_from_config(drive, workload, nand), dtype=dtype)
    return params.index(d, 0), params.index(w, 0)


@partial(jax.jit, static_argnames="n_steps")
def _simulate(drive, workload, n_steps):
    return fluid.simulate(drive, workload, n_steps)


def fill(drive: str | dict = "aldrin_pro_2tb", workload: str | dict = "seq_fill", n_steps: int = 512,
         nand: dict | None = None, **drive_overrides: Any) -> fluid.StepOut:
    """Run the fluid engine for one drive; returns per-step outputs as NumPy arrays."""
    d = presets.drive(drive, **drive_overrides) if isinstance(drive, str) else {**drive, **drive_overrides}
    w = presets.workload(workload) if isinstance(workload, str) else workload
    D, W = build_one(d, w, nand)
    return jax.tree_util.tree_map(np.asarray, _simulate(D, W, n_steps))


def thermal_preset(name: str = "bare", **overrides: Any) -> dict[str, Any]:
    """A thermal preset (``conf/thermal/NAME.yaml``: cooling and HCTM settings) with overrides."""
    return {**presets._load("thermal", name), **overrides}


def thermal_columns(drive: dict[str, Any], workload: dict[str, Any], thermal: dict[str, Any],
                    nand: dict[str, Any] | None = None) -> dict:
    """One-row columns of a thermal run: drive, workload, nand, ``power.*`` and ``thermal.*``."""
    if "power" not in drive:
        raise params.ConfigError("drive.power", None, "a thermal run needs the drive's power block")
    cols = params.columns_from_config(drive, workload, nand)
    cols.update(thermal_params.columns(drive["power"], thermal))
    return cols


def build_thermal(cols: dict, dtype=np.float32):
    """Validated ``(Drive, Workload, Power, Thermal)`` stacked pytrees and the static step count."""
    drive, workload = params.build(cols, dtype=dtype)
    power, th = thermal_params.build(cols, dtype=dtype)
    return (drive, workload, power, th), thermal_params.n_steps(cols)


def thermal_one(drive: str | dict = "sn8e_1920", workload: str | dict = "seq_fill",
                thermal: str | dict = "bare", nand: dict | None = None, dtype=np.float32,
                **thermal_over: Any):
    """Scalar pytrees ``(Drive, Workload, Power, Thermal)`` of one thermal run and its step count."""
    d = presets.drive(drive) if isinstance(drive, str) else drive
    w = presets.workload(workload) if isinstance(workload, str) else workload
    t = thermal_preset(thermal, **thermal_over) if isinstance(thermal, str) else {**thermal, **thermal_over}
    trees, n = build_thermal(thermal_columns(d, w, t, nand), dtype)
    return tuple(params.index(x, 0) for x in trees), n


@partial(jax.jit, static_argnames="n_steps")
def _thermal_sim(drive, workload, power, th, n_steps):
    return coupled.simulate(drive, workload, power, th, n_steps)


def thermal_run(drive: str | dict = "sn8e_1920", workload: str | dict = "seq_fill",
                thermal: str | dict = "bare", **thermal_over: Any) -> coupled.StepOut:
    """Run the coupled write/power/thermal/HCTM model for one drive; per-step NumPy outputs."""
    trees, n = thermal_one(drive, workload, thermal, **thermal_over)
    return jax.tree_util.tree_map(np.asarray, _thermal_sim(*trees, n_steps=n))
