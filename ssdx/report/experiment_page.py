"""An experiment's ``report.html``: every figure of its summary, its tables, a fill's curve with its
phases, the request engine's latency CDFs, and every PNG the job drew."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ssdx import loggers
from ssdx.report import html
from ssdx.report.run_dir import png_sections, summary_tables


def _fill_figure(out_dir: Path, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """A fill's write speed against data written (``fill_curve.csv``) with its phases shaded."""
    path = out_dir / "fill_curve.csv"
    if not path.is_file():
        return None
    curve = pd.read_csv(path)
    if not {"written_gb", "speed_mb_s"} <= set(curve.columns):
        return None
    colours = ("rgba(69,123,157,.12)", "rgba(230,57,70,.12)", "rgba(42,157,143,.12)", "rgba(244,162,97,.15)")
    shapes = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": p["start_gb"],
            "x1": p["end_gb"],
            "y0": 0,
            "y1": 1,
            "fillcolor": colours[i % len(colours)],
            "line": {"width": 0},
            "label": {"text": f"{p['name']}: {p['mean_mb_s']:.0f} MB/s", "textposition": "top center"},
        }
        for i, p in enumerate(summary.get("phases") or [])
        if {"start_gb", "end_gb"} <= set(p)
    ]
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "write speed",
            "x": curve["written_gb"].to_numpy(),
            "y": curve["speed_mb_s"].to_numpy(),
            "line": {"color": "#1d3557"},
            "hovertemplate": "%{x:.1f} GB written: %{y:.0f} MB/s<extra></extra>",
        }
    ]
    if "measured_mb_s" in curve:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "measured",
                "x": curve["written_gb"].to_numpy(),
                "y": curve["measured_mb_s"].to_numpy(),
                "line": {"color": "#e63946", "dash": "dot"},
            }
        )
    return {
        "data": data,
        "layout": {
            "shapes": shapes,
            "xaxis": {"title": {"text": "data written (GB)"}},
            "yaxis": {"title": {"text": "write speed (MB/s)"}, "rangemode": "tozero"},
        },
    }


def _cdf_figure(out_dir: Path, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request engine's latency CDFs (``latency_cdf.csv``) with the summary's p50, p99 and p99.9 of
    each direction marked."""
    path = out_dir / "latency_cdf.csv"
    if not path.is_file():
        return None
    cdf = pd.read_csv(path)
    if "latency_us" not in cdf or len(cdf.columns) < 2:
        return None
    first = int(np.argmax((cdf.drop(columns="latency_us") > 0).any(axis=1).to_numpy()))
    cdf = cdf.iloc[max(first - 1, 0) :]
    last = (cdf.drop(columns="latency_us") < 1).any(axis=1).to_numpy()
    cdf = cdf.iloc[: int(np.flatnonzero(last)[-1]) + 2] if last.any() else cdf
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "line": {"shape": "hv", "dash": "dash" if "write" in c else "solid"},
            "name": c,
            "x": cdf["latency_us"].to_numpy(),
            "y": cdf[c].to_numpy(),
            "hovertemplate": "%{y:.4f} of requests at or below %{x:.4g} µs<extra>" + c + "</extra>",
        }
        for c in cdf.columns
        if c != "latency_us"
    ]
    shapes = []
    for key, colour in (("read_latency_us", "#e63946"), ("write_latency_us", "#457b9d")):
        for q, label in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
            v = (summary.get(key) or {}).get(q)
            if isinstance(v, int | float) and v > 0:
                shapes.append(
                    {
                        "type": "line",
                        "x0": v,
                        "x1": v,
                        "yref": "paper",
                        "y0": 0,
                        "y1": 1,
                        "line": {"color": colour, "dash": "dot", "width": 1},
                        "label": {
                            "text": f"{key.split('_')[0]} {label}",
                            "textposition": "end",
                            "font": {"size": 10},
                        },
                    }
                )
    return {
        "data": data,
        "layout": {
            "shapes": shapes,
            "xaxis": {"type": "log", "title": {"text": "latency (µs)"}},
            "yaxis": {"title": {"text": "fraction of requests"}, "range": [0, 1.02]},
        },
    }


def experiment_page(
    out_dir: Path, summary: Mapping[str, Any], cfg: Mapping[str, Any], overrides: list[str]
) -> tuple[str, str, list[html.Section], None]:
    """The title, subtitle and sections of an experiment's page: its figures (every scalar of its summary,
    nested names joined with ``/``), a fill's curve, the request engine's latency CDFs, its lists of
    records as tables and the PNGs it drew."""
    name = next(
        (o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0].lstrip("+") == "experiment"), None
    )
    name = name or str(cfg.get("task") or "run")
    scalars = [
        (k, f"{v:.6g}" if isinstance(v, float) else v)
        for k, v in loggers.flatten({k: v for k, v in summary.items() if not k.startswith("_")}).items()
        if v is not None
    ]
    sections = [
        html.Section("Run", "facts", {"items": [("command", " ".join(["ssdx", *overrides]))]}),
        html.Section(
            "Figures",
            "table",
            {"columns": ["name", "value"], "rows": html.plain(scalars)},
            "Every number and setting of summary.json (nested names joined with /).",
        ),
    ]
    for title, fig, text in (
        (
            "Fill curve",
            _fill_figure(out_dir, summary),
            "Write speed against data written; the shaded bands are the phases of summary.json.",
        ),
        (
            "Latency CDF",
            _cdf_figure(out_dir, summary),
            "The fraction of requests at or "
            "below each latency, per direction; dotted lines at summary.json's percentiles.",
        ),
    ):
        if fig is not None:
            sections.append(html.Section(title, "plot", fig, text))
    sections += summary_tables(summary)
    sections += png_sections(out_dir)
    return f"ssdx {name}", out_dir.name, sections, None
