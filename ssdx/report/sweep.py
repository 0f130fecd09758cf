"""Plots of a sweep's results table: a Pareto front of two metrics and a heatmap over two parameters;
and of a reduced sweep (``keep:``): its histograms with their quantiles, and its Pareto front.

Sweeps ask for them in their ``report`` block::
    report:
      pareto:  {x: time_s, x_better: min, y: pslc_mb_s, y_better: max, color: drive.slc_mode}
      heatmap: {x: thermal.tmt1_k, y: thermal.tmt2_k, value: written_gb, better: max,
                facet: thermal.cooling}

A configuration is on the Pareto front when no other one is at least as good on both metrics and better
on one.  A heatmap cell shows the best ``value`` over every other swept parameter (after the report's
``constraint``), so it answers "what is the most this pair of settings can give".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ssdx import report
from ssdx.params import ConfigError


def better(spec: Mapping[str, Any], key: str, field: str) -> bool:
    """Whether the plot block ``spec`` (``sweep.report.FIELD``) wants the larger value on ``key`` (an
    ``x_better`` / ``y_better`` / ``better``: ``max``, the default, or ``min``); anything else, null
    included, is refused (:class:`ConfigError`).  ``ssdx.sweep.job`` applies it before a sweep runs."""
    v = spec.get(key, "max")
    if v not in ("min", "max"):
        raise ConfigError(f"sweep.report.{field}.{key}", v, "must be 'min' or 'max'")
    return v == "max"


def _column(df: pd.DataFrame, spec: Mapping[str, Any], key: str, field: str) -> str:
    col = spec.get(key)
    if col not in df.columns:
        raise ConfigError(
            f"sweep.report.{field}.{key}", col, f"must name a result column, one of {list(df.columns)}"
        )
    return str(col)


def pareto_mask(x: np.ndarray, y: np.ndarray, x_max: bool = True, y_max: bool = True) -> np.ndarray:
    """True for the points no other point dominates (at least as good on both, better on one); of
    identical points one is kept.  Sorted by the first metric (best first, ties by the second), a point
    is on the front when its second metric beats every point before it."""
    a = np.where(x_max, x, -x).astype(float)
    b = np.where(y_max, y, -y).astype(float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = np.where(ok, a, -np.inf), np.where(ok, b, -np.inf)
    order = np.lexsort((-b, -a))
    sb = b[order]
    best_before = np.maximum.accumulate(np.concatenate([[-np.inf], sb[:-1]]))
    keep = np.zeros(len(a), bool)
    keep[order] = (sb > best_before) & ok[order]
    return keep


def pareto(
    df: pd.DataFrame, spec: Mapping[str, Any], path: Path | None = None, title: str = ""
) -> pd.DataFrame:
    """The Pareto-front rows of ``df`` for ``spec`` (x, y, x_better, y_better, color); with ``path``, the
    plot of every configuration with the front drawn through."""
    x, y = _column(df, spec, "x", "pareto"), _column(df, spec, "y", "pareto")
    x_max, y_max = better(spec, "x_better", "pareto"), better(spec, "y_better", "pareto")
    mask = pareto_mask(df[x].to_numpy(float), df[y].to_numpy(float), x_max, y_max)
    front = df[mask].sort_values(x)
    if path is not None:
        fig, ax = report.subplots(figsize=(7, 4.5))
        color = spec.get("color")
        if color in df.columns:
            for name, g in df.groupby(color, sort=True):
                ax.scatter(g[x], g[y], s=8, alpha=0.5, label=f"{color.split('.')[-1]}={name}")
            ax.legend(fontsize=7, loc="best")
        else:
            ax.scatter(df[x], df[y], s=8, alpha=0.5, color="0.6")
        _draw_front(
            fig, ax, front, spec, path, title or f"{len(df)} configurations, {int(mask.sum())} on the front"
        )
    return front


def _draw_front(fig, ax, front: pd.DataFrame, spec: Mapping[str, Any], path: Path, title: str) -> None:
    """The front's rows through ``ax`` (sorted by x), the axes labelled with which way is better; saved."""
    x, y = spec["x"], spec["y"]
    ax.plot(front[x], front[y], "k.-", lw=1.2, label="Pareto front")
    ax.set_xlabel(f"{x} ({spec.get('x_better', 'max')} is better)")
    ax.set_ylabel(f"{y} ({spec.get('y_better', 'max')} is better)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def heatmap(df: pd.DataFrame, spec: Mapping[str, Any], path: Path, title: str = "") -> dict[str, Any]:
    """Best ``value`` per (x, y) cell over everything else, one panel per ``facet`` value; the grid too."""

    x, y = _column(df, spec, "x", "heatmap"), _column(df, spec, "y", "heatmap")
    value = _column(df, spec, "value", "heatmap")
    agg = "max" if better(spec, "better", "heatmap") else "min"
    facet = spec.get("facet")
    if facet is not None and facet not in df.columns:
        raise ConfigError("sweep.report.heatmap.facet", facet, "must name a result column or be null")
    panels = list(df.groupby(facet, sort=True)) if facet else [("all", df)]
    fig, axes = report.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    grids = {}
    for ax, (name, g) in zip(axes[0], panels, strict=True):
        tab = g.pivot_table(index=y, columns=x, values=value, aggfunc=agg)
        im = ax.imshow(tab.to_numpy(float), origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(
            range(len(tab.columns)),
            [f"{c:g}" if isinstance(c, float | int) else str(c) for c in tab.columns],
            rotation=90,
            fontsize=6,
        )
        ax.set_yticks(
            range(len(tab.index)),
            [f"{c:g}" if isinstance(c, float | int) else str(c) for c in tab.index],
            fontsize=6,
        )
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{facet}={name}" if facet else value, fontsize=8)
        fig.colorbar(im, ax=ax, label=f"{agg} {value}")
        cells = tab.to_numpy(float)
        grids[str(name)] = {
            "x": [_plain(c) for c in tab.columns],
            "y": [_plain(c) for c in tab.index],
            "value": np.where(np.isfinite(cells), cells, None).tolist(),
        }
    fig.suptitle(title or f"{agg} {value} over the other parameters", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return grids


def histograms(doc: Mapping[str, Any], path: Path, title: str = "") -> None:
    """``histograms.json`` (``ssdx.sweep.reduce.write_outputs``) drawn: a panel per metric, a step line per
    group of the share of its configurations in each bin (log x axis for a log-scale metric), the counts
    outside the range and NaN in the legend, and each quantile's estimate as a dotted line."""
    metrics = list(doc["edges"])
    fig, axes = report.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 3.8), squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        e = np.asarray(doc["edges"][m], float)
        for g in doc["groups"]:
            c = np.asarray(g["counts"][m], float)
            n = c.sum()
            if n == 0:
                continue
            share = np.r_[c[1:-2], c[-3]] / n  # the bins, the last one repeated for the step's end
            name = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in g["group"].items()) or "all"
            out = f"; {int(c[0])} below, {int(c[-2])} above" if c[0] or c[-2] else ""
            nan = f", {int(c[-1])} NaN" if c[-1] else ""
            (line,) = ax.step(e, share, where="post", lw=1.2, label=f"{name} ({int(n)}{out}{nan})")
            for q in (g.get("quantiles") or {}).get(m, []):
                if q["value"] is not None:
                    ax.axvline(q["value"], color=line.get_color(), ls=":", lw=0.9)
        if doc["scale"].get(m) == "log":
            ax.set_xscale("log")
        ax.set_xlabel(m)
        ax.set_ylabel("share of configurations")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")
        qs = (doc.get("quantiles") or {}).get("q")
        marks = f" (dotted: quantiles {', '.join(f'{q:g}' for q in qs)})" if qs else ""
        ax.set_title(m + marks, fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def front(df: pd.DataFrame, spec: Mapping[str, Any], path: Path, title: str = "") -> None:
    """A reduced sweep's Pareto front (``pareto.parquet``: the front's rows only, no other configuration),
    ``spec`` the ``keep.pareto`` block."""
    fig, ax = report.subplots(figsize=(7, 4.5))
    _draw_front(
        fig,
        ax,
        df.sort_values([spec["x"], spec["y"]]),
        spec,
        path,
        title or f"{len(df)} configurations on the front",
    )
