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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ssdx.core.fields import did_you_mean
from ssdx.params import ConfigError, broadcast_columns

Rows = dict[str, np.ndarray]


def _n(rows: Rows) -> int:
    return len(next(iter(rows.values()))) if rows else 1


def refuse_nan(field: str, values: Iterable[Any]) -> None:
    """Refuse a NaN among a sweep's literal ``values`` of ``field``: a NaN in a column means "the catalog
    value" of a nullable field, which a sweep says with null; a NaN written or computed by mistake would
    otherwise run silently as the catalog value."""
    for v in values:
        if isinstance(v, float | np.floating) and np.isnan(v):
            raise ConfigError(field, float("nan"), "must be a number (NaN is not a value here; null means "
                              "the catalog value where a field has one)")


def grid(axes: Mapping[str, Sequence[Any]]) -> Rows:
    """Cartesian product of the axes, first axis slowest."""
    keys = list(axes)
    _block_size("grid", axes)  # the axes' rules
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
        for k in keys:
            refuse_nan(f"space.list[{i}].{k}", [r[k]])
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


def unknown_field(field: str, key: Any, value: Any, known: Iterable[str]) -> ConfigError:
    """The error for a sweep parameter ``key`` that names no configuration column of ``known`` (``field``:
    where the sweep gives it, ``sweep.base.KEY`` or ``sweep.space: KEY``): its first ``value`` as a plain
    Python value, the closest known column and every known one."""
    known = sorted(known)
    if isinstance(value, np.generic):
        value = value.item()
    near = did_you_mean(key, known)
    return ConfigError(field, value, "unknown field" + (f" ({near})" if near else "") + f"; known: {known}")


def base_columns(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any]) -> Rows:
    """The one-row ``base`` columns with the sweep's ``base`` overrides (null becomes NaN: "keep the catalog
    value"); an unknown field names itself."""
    base = dict(base)
    for key, value in dict(sweep.get("base") or {}).items():
        if key not in base:
            raise unknown_field(f"sweep.base.{key}", key, value, base)
        refuse_nan(f"sweep.base.{key}", [value])
        base[key] = np.asarray([np.nan if value is None else value])
    return base


def space_parts(sweep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``space`` mappings of a sweep (one, or the list whose configurations are concatenated)."""
    return list(sweep["space"]) if isinstance(sweep["space"], list | tuple) else [sweep["space"]]


def factors(part: Mapping[str, Any]) -> list[Rows]:
    """The factors of one ``space`` mapping, slowest first: one per grid axis, one per list, random or
    Sobol block (its rows, computed as :func:`expand` computes them).  Configuration ``i`` of the mapping
    takes row ``d_f`` of each factor, where the ``d_f`` are the mixed-radix digits of ``i`` (sizes: the
    factors' row counts), so the product of the factors is exactly :func:`expand` 's rows."""
    out: list[Rows] = []
    seen: set[str] = set()
    for key, block in part.items():
        if key == "grid":
            _block_size(key, block)
            rows = [{k: np.asarray(list(v))} for k, v in block.items()]
        elif key == "list":
            rows = [explicit(block)]
        elif key in ("random", "sobol"):
            rows = [sampled(block, key)]
        else:
            raise ConfigError(f"space.{key}", "...",
                              "unknown block; use one of ['grid', 'list', 'random', 'sobol']")
        for r in rows:
            overlap = seen & set(r)
            if overlap:
                raise ConfigError("space", sorted(overlap), "a parameter may appear in only one block")
            seen |= set(r)
        out += rows
    if not out:
        raise ConfigError("space", dict(part), "must contain at least one block")
    return out


def sweep_rows(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any]) -> Rows:
    """Columns of every configuration of a sweep definition: the one-row ``base`` columns, the sweep's
    ``base`` overrides (null becomes NaN: "keep the catalog value"), then its ``space`` — one mapping of
    blocks or a list of them, whose configurations are concatenated.  Unknown fields name themselves."""
    base = base_columns(base, sweep)
    parts = space_parts(sweep)
    blocks = []
    for part in parts:
        rows = expand(part)
        n = len(next(iter(rows.values())))
        cols = broadcast_columns(base, n)
        for key, values in rows.items():
            if key not in cols:
                raise unknown_field(f"sweep.space: {key}", key, values[0], cols)
            cols[key] = values
        blocks.append(cols)
    return {k: np.concatenate([b[k] for b in blocks]) for k in base}


def _block_size(key: str, block: Any) -> int:
    if key == "grid":
        for k, v in block.items():  # grid()'s rules, without the product
            if not isinstance(v, Sequence) or isinstance(v, str) or len(v) == 0:
                raise ConfigError(f"space.grid.{k}", v, "must be a non-empty list of values")
            refuse_nan(f"space.grid.{k}", v)
        return int(np.prod([len(v) for v in block.values()]))
    if key == "list":
        return len(explicit(block)[next(iter(block[0]))])
    n = int(block.get("n", 0))
    if n < 1:
        raise ConfigError(f"space.{key}.n", block.get("n"), "must be an integer >= 1")
    return n


def _block_row(key: str, block: Any, j: int) -> Rows:
    """Row ``j`` of one block, as one-element columns of the dtype the expanded block has."""
    if key == "grid":
        out, rest = {}, j
        keys = list(block)
        for k in reversed(keys):  # last axis fastest
            axis = np.asarray(list(block[k]))
            rest, d = divmod(rest, len(axis))
            out[k] = axis[[d]]
        return {k: out[k] for k in keys}
    if key == "list":
        return {k: v[[j]] for k, v in explicit(block).items()}
    prm = dict(block.get("params", {}))
    if not prm:
        raise ConfigError(f"space.{key}.params", prm, "must name at least one parameter")
    seed = int(block.get("seed", 0))
    if key == "random":  # each uniform consumes one 64-bit PCG64 output, row by row
        bg = np.random.PCG64(seed)
        bg.advance(j * len(prm))
        u = np.random.Generator(bg).random((1, len(prm)))
    else:
        from scipy.stats import qmc

        eng = qmc.Sobol(d=len(prm), scramble=True, seed=seed)
        if j:
            eng.fast_forward(j)
        u = eng.random(1)
    return {k: _scale(u[:, c], spec, f"space.{key}.params.{k}") for c, (k, spec) in enumerate(prm.items())}


def _part_row(part: Mapping[str, Any], i: int) -> tuple[Rows, int]:
    """Row ``i`` of one ``space`` mapping (blocks combined by Cartesian product, first block slowest)
    and the number of rows it defines."""
    sizes = []
    for key, block in part.items():
        if key not in ("grid", "list", "random", "sobol"):
            raise ConfigError(f"space.{key}", "...",
                              "unknown block; use one of ['grid', 'list', 'random', 'sobol']")
        sizes.append(_block_size(key, block))
    total = int(np.prod(sizes)) if sizes else 0
    if not sizes:
        raise ConfigError("space", dict(part), "must contain at least one block")
    if not 0 <= i < total:
        return {}, total
    out: Rows = {}
    rest = i
    digits = []
    for s in reversed(sizes):
        rest, d = divmod(rest, s)
        digits.append(d)
    for (key, block), d in zip(part.items(), reversed(digits), strict=True):
        row = _block_row(key, block, d)
        overlap = set(out) & set(row)
        if overlap:
            raise ConfigError("space", sorted(overlap), "a parameter may appear in only one block")
        out.update(row)
    return out, total


def sweep_row(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any], index: int) -> Rows:
    """Configuration ``index`` of :func:`sweep_rows` without expanding the space: a grid's mixed-radix
    digits, a list's row, the random block's PCG64 stream advanced to the row, the Sobol engine
    fast-forwarded to it.  Equal, column for column, to ``sweep_rows(base, sweep)`` at ``index`` (the
    columns keep the dtype the whole expansion gives them).  Raises :class:`ConfigError` outside it."""
    base = base_columns(base, sweep)
    parts = space_parts(sweep)
    found: Rows | None = None
    dtypes: dict[str, list] = {k: [] for k in base}
    offset = 0
    for part in parts:
        rows, total = _part_row(part, index - offset)
        sample = rows or _part_row(part, 0)[0]
        for key, values in sample.items():
            if key not in base:
                raise unknown_field(f"sweep.space: {key}", key, values[0], base)
        for k in base:
            dtypes[k].append(_block_dtype(part, k) if k in sample else np.asarray(base[k]).dtype)
        if rows:
            found = {**{k: np.asarray(v)[:1] for k, v in base.items()}, **rows}
        offset += total
    if found is None or index < 0:
        raise ConfigError("index", index, f"must be a configuration index in [0, {offset})")
    return {k: found[k].astype(np.result_type(*dtypes[k])) for k in base}


def _block_dtype(part: Mapping[str, Any], k: str) -> np.dtype:
    """The dtype of column ``k`` in the expansion of one ``space`` mapping."""
    for key, block in part.items():
        if key == "grid" and k in block:
            return np.asarray(list(block[k])).dtype
        if key == "list" and k in block[0]:
            return explicit(block)[k].dtype
        if key in ("random", "sobol") and k in block.get("params", {}):
            spec = block["params"][k]
            return np.asarray(list(spec["choices"])).dtype if "choices" in spec else np.dtype(np.float64)
    raise KeyError(k)
