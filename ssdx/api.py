"""Convenience entry points for notebooks and scripts: one drive in, arrays out."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import numpy as np

from ssdx import params, presets
from ssdx.models import fluid


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
