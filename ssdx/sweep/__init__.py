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
    and no NAND override, as ``ssdx sweep=NAME`` without overrides).  The space is not expanded: the
    row is decoded from the index (:func:`ssdx.sweep.space.sweep_row`: a grid's mixed-radix digits, the
    random block's PCG64 stream advanced to the row, the Sobol engine fast-forwarded to it), equal to
    the expanded sweep's row column for column.  The index counts every configuration the space
    defines, including any ``on_invalid: drop`` removed.  Raises :class:`ssdx.params.ConfigError` for an
    index outside the space."""
    from ssdx.core import registry
    from ssdx.params import ConfigError
    from ssdx.sweep import job as sweep_job
    from ssdx.sweep import space

    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise ConfigError("index", index, "must be an integer configuration index")
    spec = registry.sweep_model(sweep)
    if base_cfg is None:
        base_cfg = default_base(spec.blocks)
    if spec.run is not None:  # a model with its own runner: its own base columns alone
        return space.sweep_row(registry.resolve(spec.base_columns)(base_cfg), sweep, int(index))
    row = space.sweep_row(sweep_job.sweep_base(sweep, base_cfg), sweep, int(index))
    if spec.complete:  # the model's finishing of the columns (an engine sweep's fio queue depths)
        row = registry.resolve(spec.complete)(row, sweep, base_cfg)
    return row


def default_base(blocks: tuple[str, ...]) -> dict[str, Any]:
    """The composed config ``ssdx sweep=NAME`` gives a sweep reading the config ``blocks`` without
    overrides: the default drive and workload presets, no NAND override, and each other block's default
    (``conf/config.yaml``'s defaults list)."""
    from ssdx import presets

    base: dict[str, Any] = {"drive": presets.drive(), "workload": presets.workload(), "nand": None}
    for block in blocks:
        if block not in base and block != "model":
            base[block] = presets.group_default(block)
    return base
