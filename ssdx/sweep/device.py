"""Sweeps generated and reduced where the model runs: a configuration is its index.

A sweep of 10^8-10^10 configurations cannot be expanded into host columns (3-5 us of host work per
configuration: expansion, validation, pytree building, copies) nor written row by row.  For a sweep
that keeps reductions only (``keep:`` without ``all: true``), the fluid model's sweeps run here instead:

* **The space as factors.**  Each ``space`` mapping is a product of *factors* (``space.factors``: one per
  grid axis, one per list, random or Sobol block, their rows computed on the host exactly as the
  expanded space has them).  Configuration ``i`` of a mapping takes row ``d_f`` of factor ``f``, the
  mixed-radix digits of ``i``.  The host sends a chunk's first digits; the device adds the chunk offset
  with carries, so no index exceeds 32 bits inside the chunk.
* **Tables instead of columns.**  Every leaf of the model's parameter pytree reads a few columns
  (``ssdx.params.LEAF_COLUMNS``), so it is tabulated on the host over the product of the factors holding
  them only, by the same ``params.assemble`` the host path uses: the device gathers numbers that are
  bit for bit the host's.  Catalog names (NAND type, interface, pSLC mode) never reach the device.
* **Rules as tables.**  Each rule of ``params.validate`` is tabulated the same way over the factors of
  its columns (``params.RULE_COLUMNS``); the device ANDs the gathered masks into ``feasible``.  Since
  every combination of a table's factors occurs ``size / table size`` times in the mapping, the count
  of configurations breaking each rule is exact from the tables alone, before anything runs.
* **Reductions on the device.**  Per chunk: the feasible count, per-group top-k (``lax.top_k`` over the
  blocks of the chunk whose maxima can hold a group's best, ties to the lower index), the Pareto
  candidates (a pivot screen, then a sort of the few left and a running minimum: the device form of
  ``ssdx.sweep.reduce._front``) and per-group histogram counts (a compare per edge, then ``segment_sum``;
  float32 values against edges rounded up to float32, which compares exactly as the float64 edges do).
  Configuration columns used as a reduction key enter as their rank among the space's distinct values
  (order-exact) or their histogram slot (tabulated in float64 on the host).
  The host turns each chunk's few hundred numbers into the same state ``ssdx.sweep.reduce`` makes from
  a table, so merging, checkpoints and the written outputs are shared with the host path.

Limits (then the host path runs the sweep, or ``generate: device`` is refused with the reason): a table
over more than :data:`TABLE_LIMIT` factor combinations, more than :data:`GROUP_LIMIT` groups, a group or
histogram keyed by a metric, a mix of workloads with and without idle gaps, a catalog name that is not
in the catalog.  A chunk returns up to :data:`PARETO_CAPACITY` Pareto candidates (fewer for a small chunk:
``device_run.first_capacity``); a chunk with more
(many tied points) is run again with room for :data:`PARETO_HEADROOM` times as many, and the chunks
after it get that room too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ssdx import params
from ssdx.params import ConfigError
from ssdx.sweep import reduce as reduce_mod
from ssdx.sweep import space, store

#: most entries of one table (a product of factors' row counts)
TABLE_LIMIT = 1 << 24
#: most groups of a top-k or histogram ``group_by``
GROUP_LIMIT = 256
#: Pareto candidates a chunk returns at first (grown to a power of two, up to the chunk, when exceeded)
PARETO_CAPACITY = 4096
#: a grown capacity holds this many times the candidates of the chunk that outgrew it (each growth
#: recompiles the chunk)
PARETO_HEADROOM = 4


class NotOnDevice(Exception):
    """The sweep cannot be generated on the device; the message says why."""


def leaf_names(trees: tuple) -> list[str]:
    """Dotted paths of the leaves of ``(Drive, Workload)`` in flattening order (``drive.nand.page_bytes``)."""
    out = []
    for prefix, tree in zip(("drive", "workload"), trees, strict=True):
        for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]:
            out.append(".".join([prefix, *(k.name for k in path)]))
    return out


@dataclass
class Table:
    """Values over the product of ``factors`` (positions in the part, slowest first), C order."""

    factors: tuple[int, ...]
    values: np.ndarray


@dataclass
class Part:
    """One ``space`` mapping: its factors, their sizes, its first configuration index."""

    factors: list[dict[str, np.ndarray]]
    offset: int
    sizes: list[int] = field(init=False)
    size: int = field(init=False)
    where: dict[str, int] = field(init=False)

    def __post_init__(self):
        self.sizes = [len(next(iter(f.values()))) for f in self.factors]
        self.size = int(math.prod(self.sizes))
        self.where = {c: i for i, f in enumerate(self.factors) for c in f}

    def factors_of(self, columns: Sequence[str]) -> tuple[int, ...]:
        """The factors holding any of ``columns``, slowest first."""
        return tuple(sorted({self.where[c] for c in columns if c in self.where}))

    def mini(self, base: Mapping[str, np.ndarray], fs: Sequence[int]) -> dict[str, np.ndarray]:
        """Columns of every combination of the factors ``fs`` (C order), other factors at row 0."""
        total = int(math.prod(self.sizes[f] for f in fs))
        if total > TABLE_LIMIT:
            raise NotOnDevice(f"a table over {total:,} factor combinations (more than {TABLE_LIMIT:,})")
        digits = np.unravel_index(np.arange(total), [self.sizes[f] for f in fs]) if fs else ()
        # columns that do not vary here are read-only broadcast views: no memory per combination
        cols = {k: np.broadcast_to(np.asarray(v)[:1], total) for k, v in base.items()}
        for f, rows in enumerate(self.factors):
            if f in fs:
                cols.update({c: v[digits[fs.index(f)]] for c, v in rows.items()})
            else:
                cols.update({c: np.broadcast_to(v[:1], total) for c, v in rows.items()})
        return cols

    def digits(self, local: int) -> np.ndarray:
        """The mixed-radix digits of configuration ``local`` of this part (int32)."""
        out = []
        for s in reversed(self.sizes):
            local, d = divmod(int(local), s)
            out.append(d)
        return np.asarray(out[::-1], dtype=np.int32)


def _tabulate(part: Part, base, wanted: Mapping[Any, Sequence[str]],
              compute: Callable[[dict], Mapping[Any, np.ndarray]]) -> dict[Any, Table]:
    """One table per key of ``wanted`` (key -> the columns it reads), computed once per factor set."""
    by_set: dict[tuple[int, ...], list] = {}
    for key, cols in wanted.items():
        by_set.setdefault(part.factors_of(cols), []).append(key)
    out = {}
    for fs, keys in by_set.items():
        try:
            cols = part.mini(base, fs)
        except NotOnDevice as e:
            reads = sorted({c for k in keys for c in wanted[k] if c in part.where})
            raise NotOnDevice(f"{e}: {', '.join(map(str, keys[:3]))} read(s) {', '.join(reads)}, held by "
                              f"factors of {part.size:,} combinations in all") from None
        values = compute(cols)
        out.update({k: Table(fs, np.asarray(values[k])) for k in keys})
    return out


class DeviceSpace:
    """A fluid sweep's space as factors and tables, ready for :func:`run` (see the module docstring).

    ``base`` are the one-row base columns (``ssdx.sweep.job.sweep_base``), ``keep`` the parsed reduction spec,
    ``metrics`` the model's metric names.  Raises :class:`NotOnDevice` when the sweep needs the host path,
    :class:`ConfigError` for a bad definition (as the host path would)."""

    def __init__(self, base: Mapping[str, np.ndarray], sweep: Mapping[str, Any], keep: Mapping[str, Any],
                 metrics: Sequence[str], dtype=np.float32):
        self.base = space.base_columns(base, sweep)
        self.keep = dict(keep)
        self.metrics = sorted(metrics)
        self.dtype = np.dtype(dtype)
        self.parts: list[Part] = []
        offset = 0
        for mapping in space.space_parts(sweep):
            fs = space.factors(mapping)
            for rows in fs:
                for key, values in rows.items():
                    if key not in self.base:
                        raise space.unknown_field(f"sweep.space: {key}", key, values[0], self.base,
                                                  sweep.get("model"))
            self.parts.append(Part(fs, offset))
            offset += self.parts[-1].size
        self.n = offset
        self.dtypes = {c: np.concatenate([self._values(p, c)[:1] for p in self.parts]).dtype
                       for c in self.base}
        first = self.parts[0].mini(self.base, ())
        report: list = []
        params.validate(first, report)
        self.rules = [(k, r) for k, r, _ in report]
        trees = params.assemble(first, self.dtype)
        self.leaves, self.treedef = leaf_names(trees), jax.tree_util.tree_structure(trees)
        for name in self.leaves:
            if name not in params.LEAF_COLUMNS:
                raise NotOnDevice(f"the leaf {name} has no declared columns (params.LEAF_COLUMNS)")
        self._check_reductions()
        self.uniq = {c: np.unique(np.concatenate([self._values(p, c) for p in self.parts])
                                  .astype(self.dtypes[c])) for c in self._key_columns()}
        for c, u in self.uniq.items():
            if len(u) > 1 << 24:
                raise NotOnDevice(f"{c} has {len(u):,} distinct values (ranks beyond float32)")
        self.groups = {kind: self._group_keys(self.keep[kind]["group_by"])
                       for kind in ("top_k", "histograms") if kind in self.keep}
        self.rule_tables = [self._rule_tables(p) for p in self.parts]
        self.counts = self._rule_counts()
        self.tables = None  # built by prepare(), after the rules passed

    # ------------------------------------------------------------------ host side: columns and rules
    def _values(self, part: Part, c: str) -> np.ndarray:
        return part.factors[part.where[c]][c] if c in part.where else np.asarray(self.base[c])[:1]

    def rows(self, ids: Sequence[int]) -> dict[str, np.ndarray]:
        """The configuration columns of the space indices ``ids`` (as ``space.sweep_rows`` has them)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = {c: np.empty(len(ids), dtype=self.dtypes[c]) for c in self.base}
        for p in self.parts:
            m = (ids >= p.offset) & (ids < p.offset + p.size)
            if not m.any():
                continue
            d = np.unravel_index(ids[m] - p.offset, p.sizes)
            for c in self.base:
                out[c][m] = p.factors[p.where[c]][c][d[p.where[c]]] if c in p.where else self.base[c][0]
        return out

    def _rule_tables(self, part: Part) -> dict[int, Table]:
        wanted = {i: params.RULE_COLUMNS.get(k, (k,)) for i, (k, _) in enumerate(self.rules)}

        def compute(cols):
            report: list = []
            params.validate(cols, report)
            return {i: np.asarray(m, dtype=bool) for i, (_, _, m) in enumerate(report)}
        return _tabulate(part, self.base, wanted, compute)

    def _rule_counts(self) -> list[int]:
        """Configurations breaking each rule (exact: a table entry stands for size / table-size configs)."""
        counts = [0] * len(self.rules)
        for p, tabs in zip(self.parts, self.rule_tables, strict=True):
            for i, t in tabs.items():
                counts[i] += int((~t.values).sum()) * (p.size // max(1, t.values.size))
        return counts

    def dropped(self) -> list[dict[str, Any]]:
        """The broken rules with their counts, as ``params.valid_rows`` reports them."""
        return [{"field": k, "rule": r, "configurations": c}
                for (k, r), c in zip(self.rules, self.counts, strict=True) if c]

    def raise_first_breach(self) -> None:
        """Raise the :class:`ConfigError` ``params.validate`` gives for a configuration breaking a rule."""
        for i, c in enumerate(self.counts):
            if not c:
                continue
            for p, tabs in zip(self.parts, self.rule_tables, strict=True):
                t = tabs[i]
                bad = np.flatnonzero(~t.values)
                if len(bad):
                    cols = p.mini(self.base, t.factors)
                    params.validate({k: v[bad[:8]] for k, v in cols.items()})  # raises
        if any(self.counts):
            raise RuntimeError("a rule table marks configurations infeasible that validate accepts")

    def __getstate__(self) -> dict[str, Any]:
        """The space without the tables a process placed on its devices (``device_run._device_inputs``):
        a Ray worker places its own."""
        return {k: v for k, v in self.__dict__.items() if k != "_on_device"}

    def prepare(self) -> None:
        """Tabulate the model's leaves and the reductions' keys (after the rules, which may name a typo)."""
        bad_names = [k for (k, r), c in zip(self.rules, self.counts, strict=True)
                     if c and "must be one of" in r]
        if bad_names:
            raise NotOnDevice(f"{bad_names[0]} names a value outside the catalog")
        self.feasible = []  # per part: the rules ANDed per factor set, those that never fail left out
        for tabs in self.rule_tables:
            merged: dict[tuple[int, ...], np.ndarray] = {}
            for t in tabs.values():
                if not t.values.all():
                    merged[t.factors] = merged.get(t.factors, True) & t.values
            self.feasible.append([Table(fs, v) for fs, v in merged.items()])
        self.tables = []
        for p in self.parts:
            def compute(cols):
                flat = jax.tree_util.tree_leaves(params.assemble(cols, self.dtype))
                return dict(zip(self.leaves, flat, strict=True))
            leaves = _tabulate(p, self.base, {n: params.LEAF_COLUMNS[n] for n in self.leaves}, compute)
            self.tables.append({"leaves": [leaves[n] for n in self.leaves], **self._key_tables(p)})
        burst = [t["leaves"][self.leaves.index("workload.burst_bytes")].values for t in self.tables]
        idle = [t["leaves"][self.leaves.index("workload.idle_s")].values for t in self.tables]
        gaps_all = all((b > 0).all() for b in burst) and all((i > 0).all() for i in idle)
        gaps_none = all((b <= 0).all() for b in burst) or all((i <= 0).all() for i in idle)
        if not (gaps_all or gaps_none):
            raise NotOnDevice("the space mixes workloads with and without idle gaps (two kernels)")
        self.idle_gaps = bool(gaps_all and not gaps_none)

    # ------------------------------------------------------------------ reductions' keys
    def _check_reductions(self) -> None:
        known = set(self.metrics) | set(self.base)
        for name in reduce_mod.columns_needed(self.keep):
            if name not in known:
                raise ConfigError("sweep.keep", name, f"names no metric or configuration column; metrics: "
                                                      f"{self.metrics}")
        for kind in ("top_k", "histograms"):
            for c in self.keep.get(kind, {}).get("group_by", []):
                if c not in self.base:
                    raise NotOnDevice(f"{kind} groups by the metric {c}")

    def _key_columns(self) -> list[str]:
        k = self.keep
        names = [*k.get("top_k", {}).get("group_by", []), *k.get("histograms", {}).get("group_by", [])]
        names += [c for c in (k.get("top_k", {}).get("by"), k.get("pareto", {}).get("x"),
                              k.get("pareto", {}).get("y"), *k.get("histograms", {}).get("metrics", []))
                  if c is not None and c not in self.metrics]
        return list(dict.fromkeys(names))

    def _group_keys(self, by: Sequence[str]) -> list[str]:
        sizes = [len(self.uniq[c]) for c in by]
        if math.prod(sizes) > GROUP_LIMIT:
            raise NotOnDevice(f"{math.prod(sizes):,} groups of {list(by)} (more than {GROUP_LIMIT})")
        combos = np.unravel_index(np.arange(math.prod(sizes)), sizes) if by else ()
        return [json.dumps([reduce_mod._py(self.uniq[c][combos[j][g]]) for j, c in enumerate(by)])
                for g in range(math.prod(sizes))]

    def _key_tables(self, p: Part) -> dict[str, Any]:
        """Per part: group codes, ranks of key columns and histogram slots of binned columns."""
        def code(by):
            if not by:
                return Table((), np.zeros(1, np.int32))
            fs = p.factors_of(by)
            cols = p.mini(self.base, fs)
            g = np.zeros(len(next(iter(cols.values()))), np.int64)
            for c in by:
                g = g * len(self.uniq[c]) + np.searchsorted(self.uniq[c], cols[c].astype(self.dtypes[c]))
            return Table(fs, g.astype(np.int32))

        def column(c, fn):
            fs = p.factors_of([c])
            return Table(fs, fn(p.mini(self.base, fs)[c].astype(self.dtypes[c])))

        out: dict[str, Any] = {"groups": {kind: code(self.keep[kind]["group_by"]) for kind in self.groups}}
        out["ranks"] = {c: column(c, lambda v, c=c: np.searchsorted(self.uniq[c], v).astype(np.float32))
                        for c in self._key_columns() if c not in self.metrics}
        h = self.keep.get("histograms")
        out["slots"] = {m: column(m, lambda v, m=m: reduce_mod.histogram_slots(
            v.astype(np.float64), np.asarray(h["edges"][m])).astype(np.int32))
            for m in (h["metrics"] if h else []) if m not in self.metrics}
        return out

    def fingerprint(self, definition: Mapping[str, Any]) -> dict[str, Any]:
        """What identifies this sweep's results in a checkpoint directory."""
        return store.fingerprint(self.base, {**dict(definition), "generate": "device", "n": self.n})


def edges_f32(edges: Sequence[float]) -> np.ndarray:
    """Each float64 edge rounded *up* to float32: for a float32 ``v``, ``e <= v`` iff
    ``edges_f32(e) <= v``."""
    e = np.asarray(edges, dtype=np.float64)
    f = e.astype(np.float32)
    low = f.astype(np.float64) < e
    f[low] = np.nextafter(f[low], np.float32(np.inf))
    return f
