"""Sweep spaces: grid, random, Sobol and explicit lists, expanded into configuration columns.

A sweep definition (``sweeps/NAME.yaml``) has a ``space`` mapping with any of these blocks; the
blocks are combined by Cartesian product (each block is a set of rows)::

    space:
      grid:   {drive.slc_mode: [dynamic, pure_native], drive.dies_per_channel: [2, 4, 8]}
      list:   [{drive.nand: tlc, drive.user_capacity_gb: 1000}, {drive.nand: qlc, ...}]
      random: {n: 16, seed: 0, params: {drive.static_slc_gb: {low: 8, high: 128, log: true}}}
      sobol:  {n: 16, seed: 0, params: {drive.fold_efficiency: {low: 0.4, high: 1.0}}}

Values may be catalog names (NAND types, interfaces, pSLC modes); they stay strings in the columns
and are resolved into numbers by :func:`ssdx.params.build`.  ``random``/``sobol`` parameters may
carry ``integer: true`` (rounded) or ``choices: [...]`` (uniform pick).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ssdx.params import ConfigError, broadcast_columns

Rows = dict[str, np.ndarray]


def _n(rows: Rows) -> int:
    return len(next(iter(rows.values()))) if rows else 1


def grid(axes: Mapping[str, Sequence[Any]]) -> Rows:
    """Cartesian product of the axes, first axis slowest."""
    keys = list(axes)
    for k in keys:
        if not isinstance(axes[k], Sequence) or isinstance(axes[k], str) or len(axes[k]) == 0:
            raise ConfigError(f"space.grid.{k}", axes[k], "must be a non-empty list of values")
    combos = list(itertools.product(*(axes[k] for k in keys)))
    return {k: np.asarray([c[i] for c in combos]) for i, k in enumerate(keys)}


def explicit(rows: Sequence[Mapping[str, Any]]) -> Rows:
    """Explicit rows; every row must name the same fields."""
    if not rows:
        raise ConfigError("space.list", rows, "must be a non-empty list of mappings")
    keys = list(rows[0])
    for i, r in enumerate(rows):
        if list(r) != keys:
            raise ConfigError(f"space.list[{i}]", dict(r), f"every row must set exactly {keys}")
    return {k: np.asarray([r[k] for r in rows]) for k in keys}


def _scale(u: np.ndarray, spec: Mapping[str, Any], key: str) -> np.ndarray:
    if "choices" in spec:
        choices = list(spec["choices"])
        return np.asarray(choices)[np.minimum((u * len(choices)).astype(int), len(choices) - 1)]
    try:
        lo, hi = float(spec["low"]), float(spec["high"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(key, dict(spec), "needs numeric 'low' and 'high' (or 'choices')") from None
    if not hi > lo:
        raise ConfigError(key, dict(spec), "'high' must be greater than 'low'")
    if spec.get("log", False):
        if lo <= 0:
            raise ConfigError(key, dict(spec), "log scale needs low > 0")
        x = np.exp(np.log(lo) + u * (np.log(hi) - np.log(lo)))
    else:
        x = lo + u * (hi - lo)
    return np.round(x) if spec.get("integer", False) else x


def sampled(block: Mapping[str, Any], kind: str) -> Rows:
    """``random`` (NumPy PCG64) or ``sobol`` (scrambled, SciPy QMC) samples of ``params``."""
    n = int(block.get("n", 0))
    if n < 1:
        raise ConfigError(f"space.{kind}.n", block.get("n"), "must be an integer >= 1")
    prm = dict(block.get("params", {}))
    if not prm:
        raise ConfigError(f"space.{kind}.params", prm, "must name at least one parameter")
    seed = int(block.get("seed", 0))
    if kind == "random":
        u = np.random.default_rng(seed).random((n, len(prm)))
    else:
        from scipy.stats import qmc

        u = qmc.Sobol(d=len(prm), scramble=True, seed=seed).random(n)
    return {k: _scale(u[:, j], spec, f"space.{kind}.params.{k}") for j, (k, spec) in enumerate(prm.items())}


def product(a: Rows, b: Rows) -> Rows:
    """Cartesian product of two row sets (``a`` slowest)."""
    if not a:
        return b
    if not b:
        return a
    na, nb = _n(a), _n(b)
    overlap = set(a) & set(b)
    if overlap:
        raise ConfigError("space", sorted(overlap), "a parameter may appear in only one block")
    out = {k: np.repeat(v, nb) for k, v in a.items()}
    out.update({k: np.tile(v, na) for k, v in b.items()})
    return out


def expand(space: Mapping[str, Any]) -> Rows:
    """Expand a ``space`` mapping into columns (one entry per configuration)."""
    builders = {
        "grid": lambda v: grid(v),
        "list": lambda v: explicit(v),
        "random": lambda v: sampled(v, "random"),
        "sobol": lambda v: sampled(v, "sobol"),
    }
    rows: Rows = {}
    for key, block in space.items():
        if key not in builders:
            raise ConfigError(f"space.{key}", "...", f"unknown block; use one of {sorted(builders)}")
        rows = product(rows, builders[key](block))
    if not rows:
        raise ConfigError("space", dict(space), "must contain at least one block")
    return rows


def sweep_rows(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any]) -> Rows:
    """Columns of every configuration of a sweep definition: the one-row ``base`` columns, the sweep's
    ``base`` overrides (null becomes NaN: "keep the catalog value"), then its ``space`` — one mapping of
    blocks or a list of them, whose configurations are concatenated.  Unknown fields name themselves."""
    base = dict(base)
    for key, value in dict(sweep.get("base") or {}).items():
        if key not in base:
            raise ConfigError(f"sweep.base.{key}", value, f"unknown field; known: {sorted(base)}")
        base[key] = np.asarray([np.nan if value is None else value])
    parts = sweep["space"] if isinstance(sweep["space"], list | tuple) else [sweep["space"]]
    blocks = []
    for part in parts:
        rows = expand(part)
        n = len(next(iter(rows.values())))
        cols = broadcast_columns(base, n)
        for key, values in rows.items():
            if key not in cols:
                raise ConfigError(f"sweep.space: {key}", values[0], f"unknown field; known: {sorted(cols)}")
            cols[key] = values
        blocks.append(cols)
    return {k: np.concatenate([b[k] for b in blocks]) for k in base}
