"""A sweep's ``report.html``: its designs and what matters among them.

The page shows its designs (a scatter of any two metrics with the Pareto front, brushable parallel
coordinates over the swept parameters and the metrics), the best design per group and the top-k as
sortable tables, histograms with their quantiles, the infeasible designs by the rule they broke and which
parameters matter for each metric (:func:`importances`).  Clicking a design shows the command line that
reruns it alone (``++sweep.only=INDEX``).  A reduced sweep (``keep:`` without ``all``) is drawn from what it
kept (top-k, Pareto front, histograms), never from rows it did not keep; a whole table of more than
:data:`MAX_ROWS` rows is sampled for the interactive views, and the page says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ssdx import loggers
from ssdx.report import html
from ssdx.report.run_dir import (
    menu_figure,
    png_sections,
    read_json,
    records_table,
    rerun_command,
    summary_tables,
)

#: the most rows of a whole-table sweep the interactive views carry; above it they show a uniform random
#: sample (fixed seed) plus every Pareto and best-per-group design.  Measured in bench/pages.py: a page
#: of this many rows stays well inside the draw-time and size targets of docs/dashboards.md
MAX_ROWS = 5000
#: the most metrics drawn as histograms and parallel-coordinate axes
MAX_AXES = 14
#: columns of a sweep's tables that are bookkeeping, not configuration
BOOKKEEPING = ("config_id", "config_index", "rank", "ties")


def group_codes(x: pd.Series, bins: int = 10) -> np.ndarray:
    """Each row's group for a variance decomposition, as integers: its distinct value, or for a numeric
    column of more than ``bins`` distinct values its quantile bin (of ``bins``); a missing value is a
    group of its own."""
    if pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x) and x.nunique() > bins:
        codes = pd.qcut(x, bins, labels=False, duplicates="drop").to_numpy(dtype=float)
        return np.where(np.isnan(codes), -1, codes).astype(np.int64)
    return pd.factorize(x)[0].astype(np.int64)


def importances(df: pd.DataFrame, params: list[str], metrics: list[str], bins: int = 10) -> dict[str, dict]:
    """For each metric, each parameter's first-order share of its variance: ``Var(E[y | x_i]) / Var(y)``
    over the rows of ``df``, the main effect of a variance (Sobol) decomposition.  On a full factorial grid
    it is exact for the grid; a parameter of more than ``bins`` distinct numeric values is grouped into
    ``bins`` quantile bins (:func:`group_codes`).  The shares of independent parameters add up to at most
    1; what is left is their interactions.  Rows where a metric is not finite are left out of its shares;
    a constant metric gets none (it is left out)."""
    codes = {p: group_codes(df[p], bins) for p in params}
    out: dict[str, dict] = {}
    for m in metrics:
        y = pd.to_numeric(df[m], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(y)
        yv = y[ok]
        var = float(yv.var()) if len(yv) else 0.0
        if not var > 0:
            continue
        shares = {}
        for p, c in codes.items():
            cc = c[ok]
            cc = cc - cc.min() if len(cc) else cc
            n = np.bincount(cc)
            mean = np.bincount(cc, weights=yv)[n > 0] / n[n > 0]
            share = float((n[n > 0] * (mean - yv.mean()) ** 2).sum() / len(yv) / var)
            shares[p] = min(max(share, 0.0), 1.0)
        out[m] = shares
    return out


def _histograms_of_rows(df: pd.DataFrame, metrics: list[str], bins: int = 40) -> dict[str, Any]:
    """A histogram figure of each metric over the rows (one shown at a time, a menu picks it), with the
    median, 90th and 99th percentiles drawn."""
    data, shapes, names = [], [], []
    for m in metrics:
        v = pd.to_numeric(df[m], errors="coerce").to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        counts, edges = np.histogram(v, bins=bins)
        q = np.quantile(v, [0.5, 0.9, 0.99])
        data.append(
            {
                "type": "bar",
                "x": (edges[:-1] + edges[1:]) / 2,
                "y": counts,
                "width": np.diff(edges),
                "name": m,
                "visible": not names,
                "marker": {"color": "#457b9d"},
                "hovertemplate": "[%{x}]: %{y} designs<extra></extra>",
            }
        )
        shapes.append(
            [
                {
                    "type": "line",
                    "x0": x,
                    "x1": x,
                    "yref": "paper",
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": c, "dash": "dash"},
                    "label": {"text": t, "textposition": "end"},
                }
                for x, c, t in zip(q, ("#e63946", "#f4a261", "#6a4c93"), ("p50", "p90", "p99"), strict=True)
            ]
        )
        names.append(m)
    return menu_figure(data, shapes, names, "designs")


def _histograms_of_counts(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The histograms a reduced sweep kept (``histograms.json``): the counts of every group summed per bin
    (under- and overflow and NaN left out, their counts in the hover), one metric shown at a time; each a
    step outline whose ``y`` holds the bins' counts and the last one again (for the right edge)."""
    data, shapes, names = [], [], []
    for m, edges in doc["edges"].items():
        edges = np.asarray(edges, dtype=float)
        counts = np.sum([np.asarray(g["counts"][m], dtype=np.int64) for g in doc["groups"]], axis=0)
        inner = counts[1 : len(edges)]
        # a step outline over the bins' edges: right on a logarithmic axis too, where bars of one
        # width in data units are not
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "line": {"shape": "hv", "color": "#457b9d"},
                "fill": "tozeroy",
                "x": edges,
                "y": np.append(inner, inner[-1:]),
                "name": m,
                "visible": not names,
                "hovertemplate": (
                    f"from %{{x}}: %{{y}} designs (below the range: {int(counts[0])}, above: "
                    f"{int(counts[len(edges)])}, NaN: {int(counts[-1])})<extra></extra>"
                ),
            }
        )
        shapes.append(_quantile_marks(doc, m))
        names.append(m)
    fig = menu_figure(data, shapes, names, "designs")
    if names and doc["scale"].get(names[0]) == "log":  # one decade a tick; the menu's other metrics too
        fig["layout"]["xaxis"] = {"type": "log", "dtick": 1, "title": {"text": names[0]}}
    for b, m in zip(fig["layout"]["updatemenus"][0]["buttons"], names, strict=True):
        b["args"][1]["xaxis.type"] = "log" if doc["scale"].get(m) == "log" else "linear"
    return fig


def _quantile_marks(doc: Mapping[str, Any], metric: str) -> list[dict[str, Any]]:
    """The quantiles a reduced sweep read off its histogram of ``metric`` (one group only: with several,
    each group has its own and the page draws their sum): a dashed line at each estimate over a band from
    its lower to its upper bound."""
    if len(doc.get("groups") or []) != 1:
        return []
    marks: list[dict[str, Any]] = []
    for q in (doc["groups"][0].get("quantiles") or {}).get(metric) or []:
        if q.get("value") is None:
            continue
        if q.get("low") is not None and q.get("high") is not None:
            marks.append(
                {
                    "type": "rect",
                    "yref": "paper",
                    "x0": q["low"],
                    "x1": q["high"],
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": "rgba(230,57,70,.10)",
                    "line": {"width": 0},
                }
            )
        marks.append(
            {
                "type": "line",
                "yref": "paper",
                "x0": q["value"],
                "x1": q["value"],
                "y0": 0,
                "y1": 1,
                "line": {"color": "#e63946", "dash": "dash"},
                "label": {"text": f"q{q['q']:g}", "textposition": "end"},
            }
        )
    return marks


def _pareto_axes(
    sweep: Mapping[str, Any], summary: Mapping[str, Any], metrics: list[str], columns: list[str]
) -> dict[str, str]:
    """The scatter's first pair: the sweep's ``report.pareto`` (or ``keep.pareto``) pair with its better
    directions, else its first two metrics, both smaller-is-better."""
    keep = sweep.get("keep") if isinstance(sweep.get("keep"), Mapping) else {}
    for spec in ((sweep.get("report") or {}).get("pareto"), (keep or {}).get("pareto")):
        if isinstance(spec, Mapping) and spec.get("x") in columns and spec.get("y") in columns:
            return {
                "x": spec["x"],
                "y": spec["y"],
                "x_better": spec.get("x_better", "max"),
                "y_better": spec.get("y_better", "max"),
            }
    sp = summary.get("pareto") or {}
    if sp.get("x") in columns and sp.get("y") in columns:
        return {"x": sp["x"], "y": sp["y"], "x_better": "max", "y_better": "max"}
    ms = (metrics + [c for c in columns if c not in metrics])[:2]
    return {"x": ms[0], "y": ms[-1], "x_better": "min", "y_better": "min"}


def swept_keys(space: Any) -> list[str]:
    """The configuration fields a sweep's ``space`` names (its grid's, lists' and ranges' keys, at any
    depth, in the order written): the parameters a page plots, rather than every column that varies
    because of them."""
    found: list[str] = []
    if isinstance(space, Mapping):
        for k, v in space.items():
            if isinstance(k, str) and "." in k:
                found.append(k)
            found += swept_keys(v)
    elif isinstance(space, list):
        for v in space:
            found += swept_keys(v)
    return list(dict.fromkeys(found))


def model_metrics(sweep: Mapping[str, Any]) -> list[str]:
    """The metric columns of the sweep's model (``ssdx.core.registry``); empty for a model it does not
    know (an old run's page is then drawn from the columns alone)."""
    from ssdx.core import registry
    from ssdx.params import ConfigError

    try:
        spec = registry.sweep_model(sweep)
        return list(spec.metric_names()) if spec.metrics is not None else []
    except (ConfigError, ImportError, AttributeError):
        return []


def n_distinct(col: pd.Series) -> int:
    """How many distinct values ``col`` holds (values that cannot be hashed, such as lists, by their text)."""
    try:
        return int(col.nunique())
    except TypeError:
        return int(col.astype(str).nunique())


def _is_numeric(s: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))


def sweep_page(
    out_dir: Path, summary: Mapping[str, Any], cfg: Mapping[str, Any], overrides: list[str]
) -> tuple[str, str, list[html.Section], dict[str, Any] | None]:
    """The title, subtitle, sections and rows of a sweep's page."""
    from ssdx.core import registry

    sweep = cfg.get("sweep") or {}
    kept = summary.get("kept", "all")
    reduced = isinstance(kept, Mapping) and not kept.get("all", False)
    metrics_all = list(summary.get("metrics") or {})
    sections: list[html.Section] = []
    n_cfg, n_def = summary.get("n_configs"), summary.get("n_defined")
    facts = [
        ("sweep", summary.get("sweep")),
        ("model", sweep.get("model", registry.DEFAULT_SWEEP_MODEL)),
        ("designs run", f"{n_cfg} of {n_def} defined" if n_def is not None else f"{n_cfg}"),
        ("wall time", f"{summary.get('wall_s') or 0:.1f} s"),
        ("compile time", f"{summary.get('compile_s') or 0:.1f} s"),
        ("runner", json.dumps(summary.get("runner"))),
        ("outputs", "reduced in the runner (keep:)" if reduced else "every design's row (results.parquet)"),
        ("best by", json.dumps(summary.get("best_by")) if summary.get("best_by") else "—"),
    ]
    sections.append(html.Section("Run", "facts", {"items": facts}))
    if reduced:
        frames = [
            pd.read_parquet(out_dir / v["file"])
            for k, v in kept.items()
            if k in ("top_k", "pareto") and isinstance(v, Mapping) and (out_dir / v["file"]).is_file()
        ]
        df = (
            pd.concat(frames, ignore_index=True).drop_duplicates("config_index") if frames else pd.DataFrame()
        )
        metrics_all = metrics_all or model_metrics(sweep) or [c for c in df.columns if c not in BOOKKEEPING]
        note = (
            f"Drawn from the designs the sweep kept ({len(df)}: its top-k and Pareto front); the other "
            f"{(n_cfg or 0) - len(df):,} designs were reduced in the runner and are not on this page."
        )
    else:
        df = (
            pd.read_parquet(out_dir / "results.parquet")
            if (out_dir / "results.parquet").is_file()
            else pd.DataFrame(summary.get("best") or [])
        )
        note = f"Every design of the sweep ({len(df):,})."
    # a model whose summary lists no metrics: its metric columns are those not named group.field
    metrics_all = (
        metrics_all
        or model_metrics(sweep)
        or [c for c in df.columns if "." not in c and c not in BOOKKEEPING]
    )
    metrics = [m for m in metrics_all if m in df.columns and _is_numeric(df[m])]
    varying = [c for c in df.columns if c not in metrics_all and c not in BOOKKEEPING]
    varying = [c for c in varying if n_distinct(df[c]) > 1]
    named = [c for c in swept_keys(sweep.get("space")) if c in varying]
    params = named or varying  # the sweep's own knobs, not what they imply
    sample = df
    if len(df) > MAX_ROWS:
        keep_idx = set(loggers.sample_rows(df.reset_index(drop=True), MAX_ROWS, 0)[0].index.tolist())
        special = {r.get("config_index") for r in summary.get("best") or []} | {
            r.get("config_index") for r in (summary.get("pareto") or {}).get("front") or []
        }
        keep_idx |= (
            set(np.flatnonzero(df["config_index"].isin(special - {None})).tolist())
            if "config_index" in df
            else set()
        )
        sample = df.iloc[sorted(keep_idx)]
        note += (
            f" The interactive views show a uniform random sample of {MAX_ROWS:,} of them (seed 0) "
            "plus every best-per-group and Pareto design; the histograms and importances use every row."
        )
    rows = None
    if len(sample) and metrics:
        if "config_index" not in sample:
            sample = sample.assign(config_index=np.arange(len(sample)))
        rows = {
            "columns": {c: sample[c].to_numpy() for c in ["config_index", *params, *metrics]},
            "params": params,
            "metrics": metrics,
            "numeric": {c: _is_numeric(sample[c]) for c in params + metrics},
            "command": rerun_command(overrides),
            "n_rows": len(sample),
            "n_total": len(df),
        }
        axes = _pareto_axes(sweep, summary, metrics, params + metrics)
        sections.append(
            html.Section(
                "Designs: any two metrics, and their Pareto front",
                "plot",
                {"view": "scatter", **axes},
                note + " Hover a design for its configuration; click it for the command "
                "that reruns it alone.",
            )
        )
        sort_by = (summary.get("best_by") or {}).get("metric")
        moving = [m for m in metrics if n_distinct(sample[m]) > 1]  # a metric no design changes draws no axis
        dims = (params + moving)[:MAX_AXES]
        sections.append(
            html.Section(
                "Parallel coordinates",
                "plot",
                {
                    "view": "parcoords",
                    "dimensions": dims,
                    "color": sort_by if sort_by in moving else (moving or metrics)[0],
                },
                "Drag along an axis to keep only the designs inside that range; drag several axes to "
                "combine them.",
            )
        )
    best = summary.get("best") or []
    if best:
        group_by = (summary.get("best_by") or {}).get("group_by") or []
        sort_by = (summary.get("best_by") or {}).get("metric")
        cols = list(
            dict.fromkeys(
                [
                    *group_by,
                    "config_index",
                    *[m for m in [sort_by, *metrics] if m in best[0]],
                    *[p for p in params if p not in group_by],
                ]
            )
        )
        sections.append(
            html.Section(
                "Best design per group",
                "table",
                records_table(best, cols),
                f"Best by {json.dumps(summary.get('best_by'))}. Click a column to sort.",
            )
        )
    if reduced and isinstance(kept.get("top_k"), Mapping) and (out_dir / kept["top_k"]["file"]).is_file():
        top = pd.read_parquet(out_dir / kept["top_k"]["file"])
        by = kept["top_k"].get("by")
        cols = list(
            dict.fromkeys(
                [
                    "rank",
                    "config_index",
                    *[m for m in [by, *metrics] if m in top.columns],
                    *[p for p in params if p in top.columns],
                ]
            )
        )
        sections.append(
            html.Section(
                "Top-k",
                "table",
                records_table(top.to_dict(orient="records"), cols),
                f"{json.dumps({k: v for k, v in kept['top_k'].items() if k != 'file'})}",
            )
        )
    if reduced and isinstance(kept.get("histograms"), Mapping):
        doc = read_json(out_dir / kept["histograms"]["file"])
        sections.append(
            html.Section(
                "Histograms",
                "plot",
                _histograms_of_counts(doc),
                "Counted in the runner over every design (all groups summed); with one group, its "
                "quantiles dashed within their bounds (shaded).",
            )
        )
    elif len(df) and metrics:
        moving = [m for m in metrics if n_distinct(df[m]) > 1]
        sections.append(
            html.Section(
                "Histograms",
                "plot",
                _histograms_of_rows(df, moving[:MAX_AXES]),
                "Every design; dashed lines at the median, 90th and 99th percentiles.",
            )
        )
    infeasible = summary.get("n_infeasible_by_rule") or {}
    sections.append(
        html.Section(
            "Infeasible designs",
            "table",
            {"columns": ["rule", "designs"], "rows": [[k, v] for k, v in infeasible.items()]},
            "Designs the sweep's space defines that break a rule of the model, by the rule they broke."
            if infeasible
            else "None: every design the space defines was run.",
        )
    )
    if not reduced and len(df) > 1 and params and metrics:
        shares = importances(df, params, metrics)
        if shares:
            sort_by = (summary.get("best_by") or {}).get("metric")
            sections.append(
                html.Section(
                    "Which parameters matter",
                    "plot",
                    {
                        "view": "importance",
                        "shares": shares,
                        "metric": sort_by if sort_by in shares else next(iter(shares)),
                    },
                    "First-order variance decomposition over every design: the share of a metric's variance "
                    "that each parameter explains alone (its main effect); what the shares leave is "
                    "interactions.",
                )
            )
    sections += summary_tables(summary, skip=("best", "dropped_rules", "pareto/front"))
    sections += png_sections(out_dir)
    title = f"ssdx sweep {summary.get('sweep')}"
    return (
        title,
        f"{n_cfg:,} designs · {out_dir.name}" if isinstance(n_cfg, int) else out_dir.name,
        sections,
        rows,
    )
