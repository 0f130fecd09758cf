"""Plot of a fill-curve fit (``ssdx experiment=fit_fill``): measured against fitted speed, phases shaded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ssdx import report
from ssdx.models.fluid.plots import REGIME_COLORS


def plot_fit(gb: np.ndarray, measured_mb_s: np.ndarray, fitted_mb_s: np.ndarray,
             phases: Sequence[Mapping[str, Any]], measured_phases: Sequence[Mapping[str, Any]],
             regions: Sequence[Mapping[str, Any]], path, title: str = "") -> None:
    """Two panels to ``path`` (PNG): measured samples and the fitted model's speed over each sample's
    interval against GB written (GB = 1e9 B, MB/s = 1e6 B/s), the fitted phases shaded and the
    measured plateaus dashed; below, the residual (model - measured) with the regions where the curve
    leaves the model hatched."""

    gb = np.asarray(gb, float)
    y = np.asarray(measured_mb_s, float)
    m = np.asarray(fitted_mb_s, float)
    fig, (ax, ax_r) = report.subplots(2, 1, figsize=(9, 6), sharex=True, height_ratios=[3, 1],
                                   layout="constrained")
    for p in phases:
        ax.axvspan(p["start_gb"], p["end_gb"], color=REGIME_COLORS.get(p["name"], "0.8"), alpha=0.18, lw=0,
                   label=f'fitted {p["name"]}: {p["mean_mb_s"]:.0f} MB/s')
    ax.plot(gb, y, ".", ms=2.5, color="0.45", label="measured")
    ax.plot(gb, m, color="k", lw=1.4, label="fitted fluid model")
    for i, p in enumerate(measured_phases):
        ax.hlines(p["mean_mb_s"], p["start_gb"], p["end_gb"], colors="tab:green", linestyles="--", lw=1.4,
                  label="measured plateaus" if i == 0 else None)
    ax.set_ylabel("write speed, MB/s (1e6 B/s)")
    top = max(float(np.max(y)) if len(y) else 0.0, float(np.max(m)) if len(m) else 0.0, 1.0)
    ax.set_ylim(0, top * 1.15)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    r = m - y
    ax_r.plot(gb, r, color="tab:red", lw=1.0)
    ax_r.axhline(0.0, color="0.3", lw=0.8)
    for i, g in enumerate(regions):
        ax_r.axvspan(g["start_gb"], g["end_gb"], color="tab:red", alpha=0.12, lw=0,
                     label="model leaves the curve" if i == 0 else None)
    if regions:
        ax_r.legend(loc="lower right", fontsize=8)
    ax_r.set_xlabel("host data written in this run, GB (1e9 B)")
    ax_r.set_ylabel("model - measured, MB/s")
    ax_r.grid(alpha=0.3)
    ax_r.set_xlim(0, max(float(gb[-1]) if len(gb) else 1.0, max((p["end_gb"] for p in phases), default=1.0)))
    fig.savefig(path, dpi=110)
