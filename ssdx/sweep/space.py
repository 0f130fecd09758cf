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

The shape of a definition is checked before anything is computed (:func:`check_part`, run for every
mapping by :func:`space_parts`, and :func:`base_columns` for ``base``): a block that is not of its form, an
unknown key of a block or of a parameter's distribution, a parameter written outside ``params:``, an
empty list or mapping, raise :class:`ConfigError` naming where it is in the file (``space.random.seeed``,
``space[1].grid.drive.nand``, ``sweep.base``), what is written there and the form expected.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ssdx.core import registry
from ssdx.core.fields import did_you_mean
from ssdx.params import ConfigError, broadcast_columns

Rows = dict[str, np.ndarray]

#: the blocks a ``space`` mapping may hold
BLOCKS = ("grid", "list", "random", "sobol")
#: the keys of a ``random`` or ``sobol`` block
SAMPLE_KEYS = ("n", "seed", "params")
#: the keys of a sampled parameter's distribution
SPEC_KEYS = ("low", "high", "log", "integer", "choices")
#: the forms of a sampled parameter's distribution, as the rules quote them
SPEC_FORM = "{low: L, high: H} (optionally log: true, integer: true) or {choices: [V, ...]}"
#: the forms of ``space``, as the rules quote them
SPACE_FORM = "a mapping of blocks (grid, list, random, sobol) or a non-empty list of such mappings"


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


# ------------------------------------------------------------------ the shape of a definition

def _single(v: Any) -> bool:
    """Whether ``v`` is one value of a column (a number, a name or null), not a list or a mapping."""
    return not isinstance(v, Mapping | Sequence | set | np.ndarray) or isinstance(v, str | bytes)


def _is_list(v: Any) -> bool:
    """A list of values: a sequence other than a string, or a one-dimensional NumPy array."""
    if isinstance(v, np.ndarray):
        return v.ndim == 1
    return isinstance(v, Sequence) and not isinstance(v, str | bytes)


def _values(field: str, v: Any) -> None:
    """``v`` (a grid axis, a parameter's ``choices``) must be a non-empty list of single values."""
    if not _is_list(v) or len(v) == 0:
        raise ConfigError(field, v, "must be a non-empty list of values")
    for x in v:
        if not _single(x):
            raise ConfigError(field, v, "must be a list of single values (numbers, names or null), not of "
                              "lists or mappings")
    refuse_nan(field, v)


def _integer(v: Any, lo: int) -> int | None:
    """``v`` as an integer >= ``lo`` (a whole number, or a string of one), else None."""
    if isinstance(v, bool | np.bool_):
        return None
    if isinstance(v, int | np.integer):
        x = int(v)
    elif isinstance(v, float | np.floating) and np.isfinite(v) and v == int(v):
        x = int(v)
    elif isinstance(v, str):
        try:
            x = int(v)
        except ValueError:
            return None
    else:
        return None
    return x if x >= lo else None


def _number(v: Any) -> float | None:
    """``v`` as a finite float (a number, or a string of one such as YAML's ``1e3``), else None."""
    if isinstance(v, bool | np.bool_):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def _known_keys(block: Mapping[str, Any], field: str, allowed: Sequence[str], form: str) -> None:
    """Refuse a key of ``block`` (at ``field``) that is none of ``allowed``, naming it, the closest allowed
    key not already given, and the block's ``form``."""
    unknown = [k for k in block if k not in allowed]
    if unknown:
        key = unknown[0]
        near = did_you_mean(str(key), [k for k in allowed if k not in block], prefix=field)
        raise ConfigError(f"{field}.{key}", block[key], "unknown key" + (f" ({near})" if near else "")
                          + f"; the keys are {', '.join(allowed)}: {form}")


def check_grid(axes: Any, field: str = "space.grid") -> list:
    """Refuse a ``grid`` block that is not a non-empty mapping of parameter: [values]; its parameters."""
    if not isinstance(axes, Mapping) or not axes:
        raise ConfigError(field, axes, "must be a non-empty mapping of parameter: [values], e.g. "
                                       "{drive.nand: [tlc, qlc]}")
    for k, v in axes.items():
        _values(f"{field}.{k}", v)
    return list(axes)


def check_list(rows: Any, field: str = "space.list") -> list:
    """Refuse a ``list`` block that is not a non-empty list of mappings setting the same parameters (in the
    same order); its parameters."""
    if not _is_list(rows) or not rows:
        raise ConfigError(field, rows, "must be a non-empty list of mappings, each setting the same "
                                       "parameters, e.g. [{drive.nand: tlc}, {drive.nand: qlc}]")
    keys: list = []
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping) or not r:
            raise ConfigError(f"{field}[{i}]", r, "must be a mapping of parameter: value setting at least "
                                                  "one parameter, e.g. {drive.nand: tlc}")
        if i == 0:
            keys = list(r)
        elif list(r) != keys:
            raise ConfigError(f"{field}[{i}]", dict(r), f"every row must set exactly {keys}")
        for k in keys:
            if not _single(r[k]):
                raise ConfigError(f"{field}[{i}].{k}", r[k], "must be a single value (a number, a name or "
                                  "null): each row sets one value of each parameter")
            refuse_nan(f"{field}[{i}].{k}", [r[k]])
    return keys


def check_spec(spec: Any, field: str) -> None:
    """Refuse a sampled parameter's distribution that is not of :data:`SPEC_FORM`."""
    if not isinstance(spec, Mapping):
        raise ConfigError(field, spec, f"must be {SPEC_FORM}, e.g. {{low: 0.4, high: 1.0}}")
    _known_keys(spec, field, SPEC_KEYS, f"a distribution is {SPEC_FORM}")
    if "choices" in spec:
        other = [k for k in spec if k != "choices"]
        if other:
            raise ConfigError(field, dict(spec), f"takes 'choices' alone or 'low' and 'high' (with 'log', "
                              f"'integer'), not both: {', '.join(map(str, other))} given with 'choices'")
        _values(f"{field}.choices", spec["choices"])
        return
    if "low" not in spec or "high" not in spec:
        raise ConfigError(field, dict(spec), f"needs numeric 'low' and 'high' (or 'choices'): must be "
                                             f"{SPEC_FORM}")
    lo, hi = _number(spec["low"]), _number(spec["high"])
    for key, x in (("low", lo), ("high", hi)):
        if x is None:
            raise ConfigError(f"{field}.{key}", spec[key], "must be a finite number")
    if not hi > lo:
        raise ConfigError(field, dict(spec), "'high' must be greater than 'low'")
    for key in ("log", "integer"):
        if spec.get(key) is not None and not isinstance(spec[key], bool | np.bool_):
            raise ConfigError(f"{field}.{key}", spec[key], "must be true or false")
    if spec.get("log", False) and lo <= 0:
        raise ConfigError(field, dict(spec), "log scale needs low > 0")


def check_sampled(block: Any, field: str) -> tuple[int, int, dict[str, Any]]:
    """Refuse a ``random`` or ``sobol`` block that is not ``{n: N, seed: S, params: {NAME: DISTRIBUTION}}``
    (an unknown key, a parameter written outside ``params``, a distribution not of :data:`SPEC_FORM`); its
    ``n``, ``seed`` and ``params``."""
    if not isinstance(block, Mapping):
        raise ConfigError(field, block, "must be a mapping {n: N, seed: S, params: {NAME: DISTRIBUTION}}, "
                                        f"each DISTRIBUTION {SPEC_FORM}")
    for key, v in block.items():
        if key not in SAMPLE_KEYS and isinstance(key, str) and "." in key:
            raise ConfigError(f"{field}.{key}", v, f"a parameter goes under 'params:' ({{params: {{{key}: "
                              f"DISTRIBUTION}}}}, each DISTRIBUTION {SPEC_FORM}); the keys of the block are "
                              f"{', '.join(SAMPLE_KEYS)}")
    _known_keys(block, field, SAMPLE_KEYS, f"a {field.rsplit('.', 1)[-1]} block is {{n: N, seed: S, params: "
                "{NAME: DISTRIBUTION}} (seed: default 0)")
    n = _integer(block.get("n"), 1)
    if n is None:
        raise ConfigError(f"{field}.n", block.get("n"), "must be an integer >= 1")
    seed = _integer(block.get("seed", 0), 0)
    if seed is None:
        raise ConfigError(f"{field}.seed", block.get("seed"), "must be an integer >= 0 (default 0)")
    prm = block.get("params")
    if not isinstance(prm, Mapping) or not prm:
        raise ConfigError(f"{field}.params", prm, f"must name at least one parameter: a mapping NAME: "
                                                  f"DISTRIBUTION, each DISTRIBUTION {SPEC_FORM}")
    for k, spec in prm.items():
        check_spec(spec, f"{field}.params.{k}")
    return n, seed, dict(prm)


def check_part(part: Any, field: str = "space") -> None:
    """Refuse a ``space`` mapping (``field``: ``space``, or ``space[i]`` in a list of them) whose blocks are
    not of their forms, or which sets a parameter in two blocks; nothing is computed."""
    if not isinstance(part, Mapping):
        raise ConfigError(field, part, "must be a mapping of blocks (grid, list, random, sobol)")
    if not part:
        raise ConfigError(field, dict(part), "must contain at least one block")
    seen: set = set()
    for key, block in part.items():
        if key not in BLOCKS:
            near = did_you_mean(key, BLOCKS, prefix=field)
            raise ConfigError(f"{field}.{key}", block, "unknown block" + (f" ({near})" if near else "")
                              + f"; use one of {list(BLOCKS)}")
        if key == "grid":
            names = check_grid(block, f"{field}.grid")
        elif key == "list":
            names = check_list(block, f"{field}.list")
        else:
            names = list(check_sampled(block, f"{field}.{key}")[2])
        overlap = seen & set(names)
        if overlap:
            raise ConfigError(field, sorted(overlap), "a parameter may appear in only one block")
        seen |= set(names)


def _parts(sweep: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``space`` mappings of a sweep with where each is in the file (``space`` or ``space[i]``), every
    one checked (:func:`check_part`) before any is used."""
    sp = sweep.get("space")
    if isinstance(sp, Mapping):
        parts = [("space", sp)]
    elif _is_list(sp) and len(sp) > 0:
        parts = [(f"space[{i}]", p) for i, p in enumerate(sp)]
    else:
        raise ConfigError("space", sp, f"must be {SPACE_FORM} (their configurations are concatenated)")
    for field, part in parts:
        check_part(part, field)
    return parts


# ------------------------------------------------------------------ expansion

def grid(axes: Mapping[str, Sequence[Any]], field: str = "space.grid") -> Rows:
    """Cartesian product of the axes, first axis slowest."""
    keys = check_grid(axes, field)
    combos = list(itertools.product(*(axes[k] for k in keys)))
    return {k: np.asarray([c[i] for c in combos]) for i, k in enumerate(keys)}


def explicit(rows: Sequence[Mapping[str, Any]], field: str = "space.list") -> Rows:
    """Explicit rows; every row must name the same fields."""
    keys = check_list(rows, field)
    return {k: np.asarray([r[k] for r in rows]) for k in keys}


def _scale(u: np.ndarray, spec: Mapping[str, Any]) -> np.ndarray:
    """Uniforms ``u`` mapped onto a checked distribution ``spec`` (:func:`check_spec`)."""
    if "choices" in spec:
        choices = list(spec["choices"])
        return np.asarray(choices)[np.minimum((u * len(choices)).astype(int), len(choices) - 1)]
    lo, hi = float(spec["low"]), float(spec["high"])
    if spec.get("log", False):
        x = np.exp(np.log(lo) + u * (np.log(hi) - np.log(lo)))
    else:
        x = lo + u * (hi - lo)
    return np.round(x) if spec.get("integer", False) else x


def sampled(block: Mapping[str, Any], kind: str, field: str | None = None) -> Rows:
    """``random`` (NumPy PCG64) or ``sobol`` (scrambled, SciPy QMC) samples of ``params``."""
    n, seed, prm = check_sampled(block, field or f"space.{kind}")
    if kind == "random":
        u = np.random.default_rng(seed).random((n, len(prm)))
    else:
        from scipy.stats import qmc

        u = qmc.Sobol(d=len(prm), scramble=True, seed=seed).random(n)
    return {k: _scale(u[:, j], spec) for j, (k, spec) in enumerate(prm.items())}


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


def expand(space: Mapping[str, Any], field: str = "space") -> Rows:
    """Expand a ``space`` mapping into columns (one entry per configuration); ``field`` is where it is in
    the sweep (``space``, or ``space[i]`` in a list of them)."""
    check_part(space, field)
    builders = {
        "grid": lambda v, f: grid(v, f),
        "list": lambda v, f: explicit(v, f),
        "random": lambda v, f: sampled(v, "random", f),
        "sobol": lambda v, f: sampled(v, "sobol", f),
    }
    rows: Rows = {}
    for key, block in space.items():
        rows = product(rows, builders[key](block, f"{field}.{key}"))
    return rows


def unknown_field(field: str, key: Any, value: Any, known: Iterable[str], model: str | None = None
                  ) -> ConfigError:
    """The error for a sweep parameter ``key`` that names no configuration column of ``known`` (``field``:
    where the sweep gives it, ``sweep.base.KEY`` or ``sweep.space: KEY``; ``model``: the sweep's, named in
    the rule; None: the default model): its first ``value`` as a plain Python value, the closest known
    column and every known one."""
    known = sorted(known)
    if isinstance(value, np.generic):
        value = value.item()
    near = did_you_mean(key, known)
    where = f" of a model: {model or registry.DEFAULT_SWEEP_MODEL} sweep"
    return ConfigError(field, value, f"unknown field{where}" + (f" ({near})" if near else "")
                       + f"; known: {known}")


def base_columns(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any]) -> Rows:
    """The one-row ``base`` columns with the sweep's ``base`` overrides (null becomes NaN: "keep the catalog
    value"); an unknown field names itself, a ``base`` that is not a mapping of single values is refused."""
    base = dict(base)
    over = sweep.get("base")
    if over is None:
        over = {}
    if not isinstance(over, Mapping):
        raise ConfigError("sweep.base", over, "must be a mapping of field: value (the values every "
                                              "configuration starts from), e.g. {drive.nand: tlc}")
    for key, value in over.items():
        if key not in base:
            raise unknown_field(f"sweep.base.{key}", key, value, base, sweep.get("model"))
        if not _single(value):
            raise ConfigError(f"sweep.base.{key}", value, "must be a single value (a number, a name or "
                              "null); to sweep several values, put the field in a block of space")
        refuse_nan(f"sweep.base.{key}", [value])
        base[key] = np.asarray([np.nan if value is None else value])
    return base


def space_parts(sweep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``space`` mappings of a sweep (one, or the list whose configurations are concatenated), every
    one's shape checked (:func:`check_part`) before any is returned."""
    return [part for _, part in _parts(sweep)]


def factors(part: Mapping[str, Any], field: str = "space") -> list[Rows]:
    """The factors of one ``space`` mapping, slowest first: one per grid axis, one per list, random or
    Sobol block (its rows, computed as :func:`expand` computes them).  Configuration ``i`` of the mapping
    takes row ``d_f`` of each factor, where the ``d_f`` are the mixed-radix digits of ``i`` (sizes: the
    factors' row counts), so the product of the factors is exactly :func:`expand` 's rows."""
    check_part(part, field)
    out: list[Rows] = []
    for key, block in part.items():
        if key == "grid":
            out += [{k: np.asarray(list(v))} for k, v in block.items()]
        elif key == "list":
            out.append(explicit(block, f"{field}.list"))
        else:
            out.append(sampled(block, key, f"{field}.{key}"))
    return out


def sweep_rows(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any]) -> Rows:
    """Columns of every configuration of a sweep definition: the one-row ``base`` columns, the sweep's
    ``base`` overrides (null becomes NaN: "keep the catalog value"), then its ``space`` — one mapping of
    blocks or a list of them, whose configurations are concatenated.  Unknown fields name themselves; the
    definition's shape is checked before anything is expanded."""
    base = base_columns(base, sweep)
    parts = _parts(sweep)
    blocks = []
    for field, part in parts:
        rows = expand(part, field)
        n = len(next(iter(rows.values())))
        cols = broadcast_columns(base, n)
        for key, values in rows.items():
            if key not in cols:
                raise unknown_field(f"sweep.space: {key}", key, values[0], cols, sweep.get("model"))
            cols[key] = values
        blocks.append(cols)
    return {k: np.concatenate([b[k] for b in blocks]) for k in base}


def _block_size(key: str, block: Any) -> int:
    """The rows of one checked block (:func:`check_part`)."""
    if key == "grid":
        return int(np.prod([len(v) for v in block.values()]))
    if key == "list":
        return len(block)
    return check_sampled(block, f"space.{key}")[0]


def _block_row(key: str, block: Any, j: int) -> Rows:
    """Row ``j`` of one checked block, as one-element columns of the dtype the expanded block has."""
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
    _, seed, prm = check_sampled(block, f"space.{key}")
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
    return {k: _scale(u[:, c], spec) for c, (k, spec) in enumerate(prm.items())}


def _part_row(part: Mapping[str, Any], i: int, field: str = "space") -> tuple[Rows, int]:
    """Row ``i`` of one ``space`` mapping (blocks combined by Cartesian product, first block slowest)
    and the number of rows it defines."""
    check_part(part, field)
    sizes = [_block_size(key, block) for key, block in part.items()]
    total = int(np.prod(sizes))
    if not 0 <= i < total:
        return {}, total
    out: Rows = {}
    rest = i
    digits = []
    for s in reversed(sizes):
        rest, d = divmod(rest, s)
        digits.append(d)
    for (key, block), d in zip(part.items(), reversed(digits), strict=True):
        out.update(_block_row(key, block, d))
    return out, total


def sweep_row(base: Mapping[str, np.ndarray], sweep: Mapping[str, Any], index: int) -> Rows:
    """Configuration ``index`` of :func:`sweep_rows` without expanding the space: a grid's mixed-radix
    digits, a list's row, the random block's PCG64 stream advanced to the row, the Sobol engine
    fast-forwarded to it.  Equal, column for column, to ``sweep_rows(base, sweep)`` at ``index`` (the
    columns keep the dtype the whole expansion gives them).  Raises :class:`ConfigError` outside it."""
    base = base_columns(base, sweep)
    parts = _parts(sweep)
    found: Rows | None = None
    dtypes: dict[str, list] = {k: [] for k in base}
    offset = 0
    for field, part in parts:
        rows, total = _part_row(part, index - offset, field)
        sample = rows or _part_row(part, 0, field)[0]
        for key, values in sample.items():
            if key not in base:
                raise unknown_field(f"sweep.space: {key}", key, values[0], base, sweep.get("model"))
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
