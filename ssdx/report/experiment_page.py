"""An experiment's ``report.html``: every figure of its summary, its tables, a fill's curve with its
phases, the request engine's latency CDFs, and every PNG the job drew."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ssdx import loggers
from ssdx.core import io
from ssdx.report import html
from ssdx.report.run_dir import png_sections, summary_tables


def _phase_bands(phases: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Shaded bands, one per phase of ``summary.json`` (``start_gb``, ``end_gb``, ``name``, ``mean_mb_s``)."""
    colours = ("rgba(69,123,157,.12)", "rgba(230,57,70,.12)", "rgba(42,157,143,.12)", "rgba(244,162,97,.15)")
    return [
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
            "label": {
                "text": f"{p.get('name', '')}: {p.get('mean_mb_s', 0):.0f} MB/s",
                "textposition": "top center",
            },
        }
        for i, p in enumerate(phases or [])
        if {"start_gb", "end_gb"} <= set(p)
    ]


#: the curves of a fill's CSVs: file, x column, then (column, name, colour, dash) per curve
CURVES = (
    ("fill_curve.csv", "written_gb", (("speed_mb_s", "write speed", "#1d3557", "solid"),)),
    (
        "fit_curve.csv",
        "gb",
        (("measured_mb_s", "measured", "#e63946", "dot"), ("fitted_mb_s", "fitted", "#1d3557", "solid")),
    ),
)


def _fill_figure(out_dir: Path, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """A fill's write speed against data written (``fill_curve.csv``; a fit's measured and fitted curves,
    ``fit_curve.csv``) with its phases shaded."""
    data = []
    for name, x, curves in CURVES:
        if not (out_dir / name).is_file():
            continue
        curve = pd.read_csv(out_dir / name)
        for col, label, colour, dash in curves:
            if x in curve and col in curve:
                data.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "name": label,
                        "x": curve[x].to_numpy(),
                        "y": curve[col].to_numpy(),
                        "line": {"color": colour, "dash": dash},
                        "hovertemplate": "%{x:.1f} GB written: %{y:.0f} MB/s<extra>" + label + "</extra>",
                    }
                )
    if not data:
        return None
    return {
        "data": data,
        "layout": {
            "shapes": _phase_bands(summary.get("phases") or []),
            "xaxis": {"title": {"text": "data written (GB)"}},
            "yaxis": {"title": {"text": "write speed (MB/s)"}, "rangemode": "tozero"},
        },
    }


def _thermal_figure(out_dir: Path, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """A thermal run's temperatures (°C) with TMT1/TMT2 drawn, above its write speed and throttle level,
    against time (``thermal.csv``)."""
    path = out_dir / "thermal.csv"
    if not path.is_file():
        return None
    t = pd.read_csv(path)
    if "time_s" not in t:
        return None
    # column, name, axis, line, offset (temperatures in K drawn in °C)
    traces = (
        ("composite_k", "composite", "y", {"color": "#e63946", "width": 1.5}, -273.15),
        ("nand_k", "NAND", "y", {"color": "#457b9d", "width": 1.5}, -273.15),
        ("ctrl_k", "controller", "y", {"color": "#f4a261", "width": 1.5}, -273.15),
        ("case_k", "case", "y", {"color": "#6a4c93", "width": 1.5}, -273.15),
        ("speed_mb_s", "write speed", "y2", {"color": "#1d3557", "width": 1}, 0.0),
        ("level", "throttle level", "y3", {"color": "#2a9d8f", "shape": "hv", "dash": "dot"}, 0.0),
    )
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": t["time_s"].to_numpy(),
            "y": (t[col] + offset).to_numpy(),
            "yaxis": axis,
            "line": line,
        }
        for col, name, axis, line, offset in traces
        if col in t
    ]
    shapes = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": summary[k] - 273.15,
            "y1": summary[k] - 273.15,
            "line": {"color": "#999", "dash": "dash", "width": 1},
            "label": {"text": f"{k[:4].upper()} {summary[k] - 273.15:.0f} °C", "textposition": "end"},
        }
        for k in ("tmt1_k", "tmt2_k")
        if isinstance(summary.get(k), int | float)
    ]
    return {
        "data": data,
        "layout": {
            "height": 560,
            "shapes": shapes,
            "xaxis": {"title": {"text": "time (s)"}, "anchor": "y2"},
            "yaxis": {"title": {"text": "temperature (°C)"}, "domain": [0.45, 1.0]},
            "yaxis2": {"title": {"text": "write speed (MB/s)"}, "domain": [0.0, 0.38], "rangemode": "tozero"},
            "yaxis3": {
                "title": {"text": "throttle level"},
                "overlaying": "y2",
                "side": "right",
                "rangemode": "tozero",
            },
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
        (k, v)  # numbers stay numbers: the page formats them and sorts them as numbers
        for k, v in loggers.flatten({k: v for k, v in summary.items() if not k.startswith("_")}).items()
        if v is not None
    ]
    sections = [
        html.Section("Run", "facts", {"items": [("command", " ".join(["ssdx", *overrides]))]}),
        html.Section(
            "Figures",
            "table",
            {"columns": ["name", "value"], "rows": io.jsonable(scalars)},
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
            "Temperature, speed and throttling",
            _thermal_figure(out_dir, summary),
            "Temperatures against time with the NVMe thresholds TMT1 and TMT2 (dashed), above the write "
            "speed and the throttle level.",
        ),
        (
            "Latency CDF",
            _cdf_figure(out_dir, summary),
            "The fraction of requests at or below each latency, per direction; dotted lines at "
            "summary.json's percentiles.",
        ),
    ):
        if fig is not None:
            sections.append(html.Section(title, "plot", fig, text))
    sections += summary_tables(summary)
    sections += png_sections(out_dir)
    return f"ssdx {name}", out_dir.name, sections, None
