"""Reductions of a sweep's results in the runner (``keep:`` in a sweep definition).

A sweep of 10^8-10^10 configurations cannot keep a row per configuration, so a sweep may keep, instead
of (or besides) the whole table, small summaries computed chunk by chunk where the chunk's metrics are::

    keep: all                                   # default: the whole table (results.parquet)
    keep:
      all: false                                # true: keep the whole table as well
      top_k: {k: 10, by: mean_mb_s, group_by: [drive.nand], ascending: false}
      pareto: {x: drive.dies_per_channel, x_better: min, y: mean_mb_s, y_better: max}
      histograms: {metrics: [mean_mb_s], bins: 50, group_by: [drive.slc_mode],
                   range: {mean_mb_s: [1.0, 20000.0]}, log: [mean_mb_s], quantiles: [0.5, 0.99]}

Those are all the keys of each block (:data:`KEYS`) but ``skip_if``, which top-k and Pareto take: a
column whose non-zero rows they leave out (``skip_if: saturated`` keeps an engine sweep's saturated
designs off the front).  Any other key is refused (:func:`parse`), as is a name that is neither a metric
of the sweep's model nor one of its configuration columns (:func:`check_columns`, before the sweep runs).

Every reduction is a *state* with an associative and commutative merge, so the same sweep gives the same
state whatever the chunk size, the order chunks finish in, the devices or the Ray workers:

* top-k, per group: the ``k`` best ``(metric, configuration)`` pairs, ordered by the metric then by the
  configuration index (ties broken by the index, so the k-th place is never ambiguous); NaN never ranks.
  Merge: the union of two states, re-ordered, cut to ``k``.
* Pareto: the non-dominated set of ``(x, y)`` points with their indices (a point is dominated when
  another is at least as good on both axes and better on one; equal points all stay).  Merge: the
  non-dominated subset of the union (non-dominance of a union equals non-dominance of the union of the
  parts' non-dominated sets).
* histograms, per group and metric: counts on bin edges fixed before the sweep runs, from the declared
  ``range: [lo, hi]`` or, where it is ``auto`` or left out, from a pilot sample of the sweep's
  configurations fixed by its size alone (:func:`set_auto_ranges`; linear, or logarithmic for the
  metrics listed in ``log``), plus underflow,
  overflow and NaN counts: no value is dropped.  Merge: element-wise sum of integer counts.  The
  ``quantiles`` asked for are read off the merged counts (:func:`quantiles_of`): each one's bin, so a
  bracket that holds the exact order statistic, and an estimate within a known bound of it.

States are JSON (floats written by ``repr``, which round-trips exactly) and are checkpointed with their
chunk, so a resumed sweep merges exactly what an uninterrupted one would have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ssdx.core.fields import did_you_mean
from ssdx.params import ConfigError
from ssdx.sweep.source import check_keys

KINDS = ("top_k", "pareto", "histograms")
#: the keys of each reduction's block (anything else is refused: a misspelt key would be ignored)
KEYS = {"top_k": ("k", "by", "group_by", "ascending", "skip_if"),
        "pareto": ("x", "y", "x_better", "y_better", "skip_if"),
        "histograms": ("metrics", "bins", "group_by", "range", "log", "quantiles")}
#: an example of each reduction's block, quoted when one is not a mapping
EXAMPLES = {"top_k": "{k: 10, by: mean_mb_s}", "pareto": "{x: drive.dies_per_channel, y: mean_mb_s}",
            "histograms": "{metrics: [mean_mb_s], bins: 50}"}
State = dict[str, Any]


def _names(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(field, value, "must be a list of column names")
    return [str(v) for v in value]


def _block(keep: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The ``keep.<kind>`` block as a dict, refused unless it is a mapping of the keys :data:`KEYS` has."""
    field, value = f"sweep.keep.{kind}", keep[kind]
    if not isinstance(value, Mapping):
        raise ConfigError(field, value, f"must be a mapping with the keys {', '.join(KEYS[kind])} "
                                        f"(e.g. {kind}: {EXAMPLES[kind]})")
    check_keys(value, field, KEYS[kind])
    return dict(value)


def parse(keep: Any) -> dict[str, Any] | None:
    """The normalised ``keep`` spec; None for ``keep: all`` (the whole table, nothing reduced).

    Raises :class:`ConfigError` naming the field for anything malformed: a key of ``keep`` or of a
    reduction's block that is not one of theirs (:data:`KEYS`), a block that is not a mapping, a bad
    value.  The column names are checked against the sweep's by :func:`check_columns`."""
    if keep is None or keep == "all":
        return None
    if not isinstance(keep, Mapping):
        raise ConfigError("sweep.keep", keep, "must be 'all' or a mapping of top_k, pareto, histograms, all")
    check_keys(keep, "sweep.keep", (*KINDS, "all"))  # a reduction's name or all
    out: dict[str, Any] = {"all": keep.get("all", False)}
    if not isinstance(out["all"], bool):
        raise ConfigError("sweep.keep.all", out["all"], "must be true or false")
    if keep.get("top_k") is not None:
        t = _block(keep, "top_k")
        k = t.get("k", 10)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError("sweep.keep.top_k.k", k, "must be an integer >= 1")
        if not isinstance(t.get("by"), str):
            raise ConfigError("sweep.keep.top_k.by", t.get("by"), "must name a metric")
        asc = t.get("ascending", False)
        if not isinstance(asc, bool):
            raise ConfigError("sweep.keep.top_k.ascending", asc, "must be true or false")
        out["top_k"] = {"k": k, "by": t["by"], "ascending": asc,
                        "group_by": _names(t.get("group_by"), "sweep.keep.top_k.group_by"),
                        **_skip_if(t, "top_k")}
    if keep.get("pareto") is not None:
        p = _block(keep, "pareto")
        for axis in ("x", "y"):
            if not isinstance(p.get(axis), str):
                raise ConfigError(f"sweep.keep.pareto.{axis}", p.get(axis), "must name a metric or column")
            better = p.get(f"{axis}_better", "min")
            if better not in ("min", "max"):
                raise ConfigError(f"sweep.keep.pareto.{axis}_better", better, "must be 'min' or 'max'")
        out["pareto"] = {"x": p["x"], "y": p["y"], "x_better": p.get("x_better", "min"),
                         "y_better": p.get("y_better", "min"), **_skip_if(p, "pareto")}
    if keep.get("histograms") is not None:
        h = _block(keep, "histograms")
        metrics = _names(h.get("metrics"), "sweep.keep.histograms.metrics")
        if not metrics:
            raise ConfigError("sweep.keep.histograms.metrics", h.get("metrics"),
                              "must name at least one metric")
        bins = h.get("bins", 50)
        if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
            raise ConfigError("sweep.keep.histograms.bins", bins, "must be an integer >= 1")
        ranges = h.get("range")
        if ranges is None or ranges == "auto":
            ranges = {}
        if not isinstance(ranges, Mapping):
            raise ConfigError("sweep.keep.histograms.range", ranges,
                              "must be a mapping of metric: [lo, hi] or auto (e.g. {mean_mb_s: [10, 10000]})")
        ranges = dict(ranges)
        for m in ranges:
            if m not in metrics:  # a misspelt key would leave the metric it meant on a pilot's range
                raise ConfigError(f"sweep.keep.histograms.range.{m}", ranges[m],
                                  f"names no histogram metric; metrics: {metrics}")
        logs = _names(h.get("log"), "sweep.keep.histograms.log")
        edges: dict[str, list[float] | None] = {}
        auto = []
        for m in metrics:
            r = ranges.get(m, "auto")
            if r == "auto":  # from a pilot sample of the sweep, before it runs (set_auto_ranges)
                edges[m] = None
                auto.append(m)
                continue
            try:  # a list of two numbers: not a string of two digits, nor a longer list (an assert is not
                # checked under python -O)
                if isinstance(r, str) or not isinstance(r, Sequence) or len(r) != 2:
                    raise TypeError
                lo, hi = float(r[0]), float(r[1])
            except (TypeError, ValueError, OverflowError):  # float(10**400) overflows
                raise ConfigError(f"sweep.keep.histograms.range.{m}", r,
                                  "must be [lo, hi] or auto (bin edges fixed before the sweep runs, never "
                                  "from the data seen so far)") from None
            edges[m] = bin_edges(m, lo, hi, bins, m in logs)
        qs = h.get("quantiles") or []
        if isinstance(qs, str) or not isinstance(qs, Sequence) or not all(
                isinstance(q, int | float) and not isinstance(q, bool) and 0.0 <= q <= 1.0 for q in qs):
            raise ConfigError("sweep.keep.histograms.quantiles", qs, "must be a list of numbers in [0, 1]")
        out["histograms"] = {"metrics": metrics, "bins": bins, "edges": edges,
                             "log": [m for m in metrics if m in logs],
                             "group_by": _names(h.get("group_by"), "sweep.keep.histograms.group_by"),
                             "quantiles": [float(q) for q in qs], "auto": auto, "pilot": None}
    if not any(k in out for k in KINDS):
        raise ConfigError("sweep.keep", dict(keep),
                          "a mapping must declare at least one of " + ", ".join(KINDS))
    return out


def bin_edges(metric: str, lo: float, hi: float, bins: int, log: bool) -> list[float]:
    """``bins + 1`` edges from ``lo`` to ``hi`` (exactly), equal-width or equal-ratio (``log``); a bad range
    raises :class:`ConfigError` naming ``sweep.keep.histograms.range.<metric>``."""
    field = f"sweep.keep.histograms.range.{metric}"
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        raise ConfigError(field, [lo, hi], "needs finite lo < hi")
    if log and lo <= 0:
        raise ConfigError(field, [lo, hi], "a log-scale range needs lo > 0")
    e = np.geomspace(lo, hi, bins + 1) if log else np.linspace(lo, hi, bins + 1)
    e[0], e[-1] = lo, hi
    return e.tolist()


#: configurations of the pilot sample that sets the ``auto`` histogram ranges
PILOT = 4096
#: the share of the pilot's span (of its log span, on a log scale) added at each end of an ``auto`` range
PILOT_MARGIN = 0.1


def pilot_ids(n: int, size: int | None = None) -> np.ndarray:
    """The space indices of the pilot sample: ``size`` (default :data:`PILOT`) indices spread evenly over
    the ``n`` configurations (all of them when fewer), a function of the sweep's size alone."""
    size = PILOT if size is None else size
    return np.unique(np.linspace(0, n - 1, min(n, size)).round().astype(np.int64)) if n else np.zeros(0, int)


def set_auto_ranges(spec: dict[str, Any], values: Mapping[str, np.ndarray], n_pilot: int) -> None:
    """Fix the edges of the histogram metrics whose range is ``auto`` (in place) from their ``values`` over
    the pilot sample's feasible configurations (:func:`pilot_ids`): the least and greatest finite value,
    widened by :data:`PILOT_MARGIN` of their span at each end (of the ratio, on a log scale; not across
    zero on a linear one; a pilot of one value gets +-1 % of it, or +-1 at zero).  The edges depend on
    the sweep's definition alone, so the counts stay independent of chunking, devices and workers; values
    outside go to the under- and overflow counts, never lost.  Done once: a spec whose pilot ran is left
    as it is."""
    h = spec.get("histograms")
    if not h or not h["auto"] or h["pilot"] is not None:
        return
    for m in h["auto"]:
        v = np.asarray(values[m], np.float64)
        field, log = f"sweep.keep.histograms.range.{m}", m in h["log"]
        v = v[np.isfinite(v) & ((v > 0) if log else True)]
        if not len(v):
            raise ConfigError(field, "auto", f"the pilot sample ({n_pilot} configurations) has no finite "
                              f"{'positive ' if log else ''}value of {m}: declare its range [lo, hi]")
        lo, hi = float(v.min()), float(v.max())
        if log:
            if hi == lo:
                lo, hi = lo * 0.99, hi * 1.01
            r = (hi / lo) ** PILOT_MARGIN
            lo, hi = lo / r, hi * r
        else:
            if hi == lo:
                d = abs(lo) * 0.01 or 1.0
                lo, hi = lo - d, hi + d
            d = (hi - lo) * PILOT_MARGIN  # never across zero: a metric the pilot saw >= 0 stays so
            lo, hi = (lo - d if lo < 0 else max(lo - d, 0.0)), (hi + d if hi > 0 else min(hi + d, 0.0))
        h["edges"][m] = bin_edges(m, lo, hi, h["bins"], log)
    h["pilot"] = int(n_pilot)  # feasible configurations the pilot ran


def _skip_if(block: Mapping[str, Any], kind: str) -> dict[str, str]:
    """A reduction's optional ``skip_if`` (a column: rows where it is non-zero are left out, e.g. an engine
    sweep's ``saturated`` designs), as the parsed block carries it (nothing when not given)."""
    if block.get("skip_if") is None:
        return {}
    if not isinstance(block["skip_if"], str):
        raise ConfigError(f"sweep.keep.{kind}.skip_if", block["skip_if"],
                          "must name a metric or column (rows where it is non-zero are left out)")
    return {"skip_if": block["skip_if"]}


def _fields(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field, column)`` of every column name a parsed spec holds, in the order of its blocks."""
    out: list[tuple[str, str]] = []
    if "top_k" in spec:
        t = spec["top_k"]
        out += [("sweep.keep.top_k.by", t["by"]), *(("sweep.keep.top_k.group_by", c) for c in t["group_by"])]
    if "pareto" in spec:
        out += [("sweep.keep.pareto.x", spec["pareto"]["x"]), ("sweep.keep.pareto.y", spec["pareto"]["y"])]
    for kind in ("top_k", "pareto"):
        if "skip_if" in spec.get(kind, {}):
            out.append((f"sweep.keep.{kind}.skip_if", spec[kind]["skip_if"]))
    if "histograms" in spec:
        h = spec["histograms"]
        out += [*(("sweep.keep.histograms.metrics", c) for c in h["metrics"]),
                *(("sweep.keep.histograms.group_by", c) for c in h["group_by"])]
    return out


def columns_needed(spec: Mapping[str, Any]) -> list[str]:
    """Every column a reduction reads (configuration columns or metrics)."""
    return list(dict.fromkeys(c for _, c in _fields(spec)))


def check_column(field: str, name: Any, columns: Sequence[str], metrics: Sequence[str], model: str = "",
                 note: str = "", also: Sequence[str] = ()) -> None:
    """Refuse a ``name`` (of the config ``field``) that is none of the sweep's configuration ``columns``,
    its ``model``'s ``metrics`` or ``also``: :class:`ConfigError` naming the field, the name, the closest
    known name and the known ones (``note`` is added to the rule)."""
    known = [*also, *metrics, *columns]
    if isinstance(name, str) and name in known:
        return
    near = did_you_mean(name, known)
    raise ConfigError(field, name, f"must name a metric of the {model + ' ' if model else ''}model or a "
                      "configuration column of the sweep" + note
                      + (f" ({near})" if near else "")
                      + f"; metrics: {list(metrics)}; configuration columns: {list(columns)}")


def check_columns(spec: Mapping[str, Any] | None, columns: Sequence[str], metrics: Sequence[str]) -> None:
    """Refuse, before the sweep runs, a column name of the parsed ``spec`` that is neither one of the sweep's
    configuration ``columns`` nor one of its model's ``metrics`` (:func:`check_column`)."""
    for field, name in _fields(spec or {}):
        check_column(field, name, columns, metrics)


def _py(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return v


def _groups(data: Mapping[str, np.ndarray], by: Sequence[str], n: int) -> tuple[list[str], np.ndarray]:
    """The distinct groups of the columns ``by`` (JSON lists of their values) and each row's group."""
    if not by:
        return ["[]"], np.zeros(n, dtype=np.int64)
    uniq, codes = [], []
    for c in by:
        u, inv = np.unique(np.asarray(data[c]), return_inverse=True)
        uniq.append(u)
        codes.append(inv.reshape(-1))
    combos, inv = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    keys = [json.dumps([_py(uniq[j][c]) for j, c in enumerate(row)]) for row in combos.tolist()]
    return keys, inv.reshape(-1)


def _sort_top(entries: list, ascending: bool, k: int) -> list:
    entries = sorted(entries, key=lambda e: ((e[0] if ascending else -e[0]), e[1]))
    return entries[:k]


def _front(x: np.ndarray, y: np.ndarray, ids: np.ndarray, x_max: bool, y_max: bool) -> np.ndarray:
    """Positions of the points no other point dominates, in (x, y, id) order of the minimised axes."""
    if not len(x):
        return np.zeros(0, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64) * (-1.0 if x_max else 1.0)
    y = np.asarray(y, dtype=np.float64) * (-1.0 if y_max else 1.0)
    order = np.lexsort((ids, y, x))
    xs, ys = x[order], y[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    start = np.flatnonzero(new)[np.cumsum(new) - 1]  # first point of each point's equal-x run
    best_before = np.r_[np.inf, np.minimum.accumulate(ys)[:-1]][start]  # min y over strictly smaller x
    return order[(ys == ys[start]) & (ys < best_before)]


def _nondominated(points: list, x_max: bool, y_max: bool) -> list:
    """The points ``[x, y, id, row]`` no other point dominates (:func:`_front`)."""
    if not points:
        return []
    keep = _front(np.array([p[0] for p in points]), np.array([p[1] for p in points]),
                  np.array([p[2] for p in points], dtype=np.int64), x_max, y_max)
    return [points[i] for i in keep]


class Reducer:
    """Chunk states and their merge for one ``keep`` spec (:func:`parse`).

    ``cols`` are the sweep's configuration columns (row ``i`` = runner configuration id ``i``); a chunk's
    ``data`` holds ``config_id`` and its metrics.  Kept entries carry every metric of their row."""

    def __init__(self, spec: Mapping[str, Any], cols: Mapping[str, np.ndarray]):
        self.spec = dict(spec)
        self.cols = cols
        for c in columns_needed(self.spec):
            if c in cols and np.asarray(cols[c]).dtype.kind not in "fiubUSO":
                raise ConfigError("sweep.keep", c, "columns must hold numbers or names")
        self.metric_names: list[str] | None = None

    def _column(self, name: str, data: Mapping[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        if name in data:
            return np.asarray(data[name])
        if name in self.cols:
            return np.asarray(self.cols[name])[ids]
        known = sorted(k for k in data if k != "config_id")
        raise ConfigError("sweep.keep", name, f"names no metric or configuration column; metrics: {known}")

    def _kept(self, block: Mapping[str, Any], data: Mapping[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
        """The rows a reduction keeps: all, or those whose ``skip_if`` column is zero."""
        if "skip_if" not in block:
            return np.ones(len(ids), bool)
        return np.asarray(self._column(block["skip_if"], data, ids), np.float64) == 0

    def empty(self) -> State:
        """The identity of :meth:`merge`."""
        return {"n": 0, "metrics": self.metric_names or [], "top_k": {}, "pareto": [], "histograms": {}}

    def chunk(self, data: Mapping[str, np.ndarray]) -> State:
        """The state of one chunk's rows."""
        ids = np.asarray(data["config_id"], dtype=np.int64)
        n = len(ids)
        metrics = [k for k in data if k != "config_id"]
        self.metric_names = metrics
        mat = np.column_stack([np.asarray(data[m], dtype=np.float64) for m in metrics]) if metrics else None

        def row(i: int) -> list[float]:
            return [] if mat is None else mat[i].tolist()

        st: State = {"n": n, "metrics": metrics, "top_k": {}, "pareto": [], "histograms": {}}
        if "top_k" in self.spec:
            t = self.spec["top_k"]
            v = self._column(t["by"], data, ids).astype(np.float64)
            keys, inv = _groups({c: self._column(c, data, ids) for c in t["group_by"]}, t["group_by"], n)
            kept = self._kept(t, data, ids)
            for g, key in enumerate(keys):
                r = np.flatnonzero((inv == g) & ~np.isnan(v) & kept)
                if not len(r):
                    continue
                sk = v[r] if t["ascending"] else -v[r]
                best = r[np.lexsort((ids[r], sk))][:t["k"]]
                st["top_k"][key] = [[float(v[i]), int(ids[i]), row(i)] for i in best]
        if "pareto" in self.spec:
            p = self.spec["pareto"]
            x = self._column(p["x"], data, ids).astype(np.float64)
            y = self._column(p["y"], data, ids).astype(np.float64)
            ok = np.flatnonzero(~(np.isnan(x) | np.isnan(y)) & self._kept(p, data, ids))
            front = ok[_front(x[ok], y[ok], ids[ok], p["x_better"] == "max", p["y_better"] == "max")]
            st["pareto"] = [[float(x[i]), float(y[i]), int(ids[i]), row(i)] for i in front]
        if "histograms" in self.spec:
            h = self.spec["histograms"]
            ukeys, inv = _groups({c: self._column(c, data, ids) for c in h["group_by"]}, h["group_by"], n)
            for m in h["metrics"]:
                v = self._column(m, data, ids).astype(np.float64)
                slot = histogram_slots(v, np.asarray(h["edges"][m]))
                counts = np.zeros((len(ukeys), h["bins"] + 3), dtype=np.int64)
                np.add.at(counts, (inv, slot), 1)
                for g, key in enumerate(ukeys):
                    st["histograms"].setdefault(key, {})[m] = counts[g].tolist()
        return st

    def merge(self, a: State, b: State) -> State:
        """The state of the union of two states' configurations (associative and commutative)."""
        if a["n"] == 0:
            return b
        if b["n"] == 0:
            return a
        if a["metrics"] != b["metrics"]:
            raise RuntimeError(f"chunk states with different metrics: {a['metrics']} vs {b['metrics']}")
        out: State = {"n": a["n"] + b["n"], "metrics": a["metrics"], "top_k": {}, "pareto": [],
                      "histograms": {}}
        if "top_k" in self.spec:
            t = self.spec["top_k"]
            for key in sorted(set(a["top_k"]) | set(b["top_k"])):
                out["top_k"][key] = _sort_top(a["top_k"].get(key, []) + b["top_k"].get(key, []),
                                              t["ascending"], t["k"])
        if "pareto" in self.spec:
            p = self.spec["pareto"]
            out["pareto"] = _nondominated(a["pareto"] + b["pareto"], p["x_better"] == "max",
                                          p["y_better"] == "max")
        if "histograms" in self.spec:
            for key in sorted(set(a["histograms"]) | set(b["histograms"])):
                ha, hb = a["histograms"].get(key, {}), b["histograms"].get(key, {})
                out["histograms"][key] = {
                    m: (np.asarray(ha.get(m, 0), dtype=np.int64)
                        + np.asarray(hb.get(m, 0), dtype=np.int64)).tolist()
                    for m in self.spec["histograms"]["metrics"]}
        return out


def histogram_slots(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Slot of each value: 0 underflow (< lo), 1..bins the bins [e_i, e_i+1) (the last one closed at hi),
    bins + 1 overflow (> hi), bins + 2 NaN."""
    bins = len(edges) - 1
    slot = np.searchsorted(edges, v, side="right").astype(np.int64)  # 0 below lo, bins + 1 above/at hi
    slot[v == edges[-1]] = bins
    slot[np.isnan(v)] = bins + 2
    return slot


def quantiles_of(counts: Sequence[int], edges: Sequence[float], qs: Sequence[float],
                 log: bool) -> list[dict[str, Any]]:
    """The quantiles ``qs`` of the values a histogram counted (``counts`` in :func:`histogram_slots`'
    slots, on ``edges``), NaN values left out.

    The ``q``-quantile of ``n`` values is the ``ceil(q n)``-th smallest (at least the first): the lower
    quantile, numpy's ``method="inverted_cdf"``.  Its bin is known exactly from the counts, so each entry
    gives the bracket ``[low, high]`` that holds it (``low`` None: below the range's ``lo``; ``high`` None:
    above ``hi``) and an estimate ``value`` with its worst-case ``error`` (None when the quantile is out of
    range or nothing was counted):

    * log bins: the harmonic mean of the edges, ``2ab / (a + b)``, is within a relative error of
      ``(b - a) / (b + a)`` of every value in ``[a, b]`` (``(g - 1) / (g + 1)`` for edges a ratio ``g``
      apart; the estimate of DDSketch, Masson, Rim and Lee, "DDSketch: a fast and fully-mergeable quantile
      sketch with relative-error guarantees", VLDB 2019), ``error`` relative;
    * linear bins: the midpoint, within half the bin width, ``error`` absolute (in the metric's unit).

    Exact in the counts, so it inherits their independence of chunking, devices and workers."""
    from fractions import Fraction

    c = np.asarray(counts, dtype=np.int64)
    e = np.asarray(edges, dtype=np.float64)
    bins = len(e) - 1
    cum = np.cumsum(c[:bins + 2])  # NaN (the last slot) left out
    n = int(cum[-1])
    out = []
    for q in qs:
        entry: dict[str, Any] = {"q": float(q), "n": n, "rank": None, "low": None, "high": None,
                                 "value": None, "error": None}
        if n:
            rank = max(1, -(-Fraction(repr(float(q))) * n // 1))  # ceil(q n), exactly
            slot = int(np.searchsorted(cum, rank))  # the first slot holding `rank` values
            entry["rank"] = int(rank)
            if slot == 0:
                entry["high"] = float(e[0])
            elif slot == bins + 1:
                entry["low"] = float(e[-1])
            else:
                a, b = float(e[slot - 1]), float(e[slot])
                entry["low"], entry["high"] = a, b
                if log:
                    entry["value"], entry["error"] = 2 * a * b / (a + b), (b - a) / (b + a)
                else:
                    entry["value"], entry["error"] = (a + b) / 2, (b - a) / 2
        out.append(entry)
    return out


def dumps(state: State) -> str:
    """A state as JSON text (exact for float64)."""
    return json.dumps(state, sort_keys=True)


def loads(text: str) -> State:
    """The state :func:`dumps` wrote."""
    return json.loads(text)


def _group_dict(key: str, by: Sequence[str]) -> dict[str, Any]:
    return dict(zip(by, json.loads(key), strict=True))


def write_outputs(spec: Mapping[str, Any], state: State, cols: Mapping[str, np.ndarray] | None,
                  space_index: np.ndarray | None, out_dir, rows_of=None) -> dict[str, Any]:
    """Write ``top_k.parquet``, ``pareto.parquet`` and ``histograms.json`` (those declared) into ``out_dir``
    and return what was kept (for ``summary.json``).

    Every kept row carries ``config_index`` (the configuration's index in the sweep's space, before any
    ``on_invalid: drop``: :func:`ssdx.sweep.config_of` re-materialises it), its configuration columns
    (the values it ran with, ``params.effective_columns``) and every metric.  The state's ids index
    ``cols`` (their space indices: ``space_index``), or, with ``rows_of`` (``ids -> columns``), are the
    space indices themselves (a device-generated sweep, ``ssdx.sweep.device``)."""
    from pathlib import Path

    import pyarrow as pa

    from ssdx import params
    from ssdx.core import io

    out_dir = Path(out_dir)
    if rows_of is None:
        eff = params.effective_columns(cols)
        rows_of = lambda ids: (np.asarray(space_index, dtype=np.int64)[ids],  # noqa: E731
                               {k: np.asarray(v)[ids] for k, v in eff.items()})
    else:
        fn = rows_of
        rows_of = lambda ids: (ids, params.effective_columns(fn(ids)))  # noqa: E731
    metrics = list(state["metrics"])
    kept: dict[str, Any] = {"n_reduced": int(state["n"]), "all": bool(spec["all"])}

    def table(entries: list[tuple[dict[str, Any], int, list[float]]]) -> pa.Table:
        ids = np.asarray([e[1] for e in entries], dtype=np.int64)
        data: dict[str, Any] = {}
        for extra in (entries[0][0] if entries else {}):
            data[extra] = [e[0][extra] for e in entries]
        index, columns = rows_of(ids)
        data["config_index"] = index
        data.update({k: v for k, v in columns.items() if k not in data})
        data.update({m: np.asarray([e[2][j] for e in entries], dtype=np.float64)
                     for j, m in enumerate(metrics) if m not in data})
        return pa.table(data)

    if "top_k" in spec:
        t = spec["top_k"]
        entries = [({"rank": r + 1}, e[1], e[2]) for key in sorted(state["top_k"])
                   for r, e in enumerate(state["top_k"][key])]
        io.write_parquet(table(entries), out_dir / "top_k.parquet")
        kept["top_k"] = {**t, "rows": len(entries), "groups": len(state["top_k"]), "file": "top_k.parquet"}
    if "pareto" in spec:
        entries = [({}, e[2], e[3]) for e in state["pareto"]]
        io.write_parquet(table(entries), out_dir / "pareto.parquet")
        kept["pareto"] = {**spec["pareto"], "rows": len(entries), "file": "pareto.parquet"}
    if "histograms" in spec:
        h = spec["histograms"]
        doc = {"bins": h["bins"], "group_by": h["group_by"],
               "edges": {m: h["edges"][m] for m in h["metrics"]},
               "scale": {m: "log" if m in h["log"] else "linear" for m in h["metrics"]},
               "range_from": {m: (f"pilot sample of {h['pilot']} configurations"
                                  if m in h.get("auto", []) else "declared") for m in h["metrics"]},
               "slots": "counts[m] = [underflow (< lo), bins..., overflow (> hi), nan]; bin i is "
                        "[edges[i], edges[i+1]), the last one closed at hi",
               "groups": [{"group": _group_dict(key, h["group_by"]), "counts": state["histograms"][key]}
                          for key in sorted(state["histograms"])]}
        qs = h.get("quantiles") or []
        if qs:
            doc["quantiles"] = {
                "q": qs,
                "definition": "the ceil(q n)-th smallest of the n values counted (NaN left out) lies "
                "in [low, high] (low null: below lo; high null: above hi); value estimates it within error: "
                "relative on a log scale (harmonic mean of the bin's edges), absolute on a linear one "
                "(the bin's midpoint)"}
            for g in doc["groups"]:
                g["quantiles"] = {m: quantiles_of(g["counts"][m], h["edges"][m], qs, m in h["log"])
                                  for m in h["metrics"]}
        text = json.dumps(doc, indent=1) + "\n"
        io.write_text(out_dir / "histograms.json", text)
        kept["histograms"] = {"metrics": h["metrics"], "bins": h["bins"], "group_by": h["group_by"],
                              "quantiles": qs, "groups": len(doc["groups"]), "file": "histograms.json"}
    return kept
