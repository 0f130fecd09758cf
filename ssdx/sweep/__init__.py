"""Sweeps: spaces, the chunked runner, its reductions and results store (see ``docs/sweeps.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def config_of(sweep: Mapping[str, Any], index: int, base_cfg: Mapping[str, Any] | None = None
              ) -> dict[str, np.ndarray]:
    """The configuration columns (one row each) of configuration ``index`` of a sweep definition: the
    ``config_index`` that every kept row of a reduced sweep carries (``top_k.parquet``, ``pareto.parquet``).

    ``base_cfg`` is the composed config the sweep ran on (default: the default drive and workload presets
    and no NAND override, as ``ssdx sweep=NAME`` without overrides).  The space is expanded whole and
    indexed (grid, list, random and Sobol blocks are drawn exactly as the sweep drew them), so this costs
    what expanding the space costs; the index counts every configuration the space defines, including
    any ``on_invalid: drop`` removed.  Raises :class:`ssdx.params.ConfigError` for an index outside it."""
    from ssdx import presets, tasks
    from ssdx.params import ConfigError

    if base_cfg is None:
        base_cfg = {"drive": presets.drive(), "workload": presets.workload(), "nand": None}
    cols, _ok, _broken, n = tasks.sweep_space(sweep, base_cfg)
    if isinstance(index, bool) or not isinstance(index, int | np.integer) or not 0 <= index < n:
        raise ConfigError("index", index, f"must be an integer configuration index in [0, {n})")
    return {k: np.asarray(v)[[int(index)]] for k, v in cols.items()}
