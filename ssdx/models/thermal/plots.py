"""Thermal-run reports: the KIOXIA thermal article's temperature/throughput figure and the time-series
CSV, the TMT landscape of ``experiment=tmt_optimize`` and the RC fit of ``experiment=fit_rc``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import report
from ssdx.units import ZERO_C_IN_K


def moving_average(x: np.ndarray, window_steps: int) -> np.ndarray:
    """Trailing moving average over ``window_steps`` samples (shorter at the start), as the KIOXIA
    thermal article's plots use a 4-s moving average."""
    x = np.asarray(x, float)
    w = max(int(window_steps), 1)
    c = np.cumsum(np.r_[0.0, x])
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(idx - w, 0)
    return (c[idx] - c[lo]) / (idx - lo)


def write_csv(out, path: Path, dt_s: float, window_s: float = 4.0) -> None:
    """Per-step series: time, temperatures (K and composite in deg C), speed (raw and moving average)."""
    speed = np.asarray(out.speed) / 1e6
    ma = moving_average(speed, round(window_s / dt_s))
    t = np.asarray(out.temps_k)
    np.savetxt(path, np.c_[out.time_s, out.composite_k, np.asarray(out.composite_k) - ZERO_C_IN_K,
                           t[:, 0], t[:, 1], t[:, 2], speed, ma, out.level, out.power_w,
                           np.asarray(out.written_bytes) / 1e9],
               delimiter=",", comments="",
               header="time_s,composite_k,composite_c,ctrl_k,nand_k,case_k,speed_mb_s,speed_ma4_mb_s,level,"
                      "power_w,written_gb")


def plot(out, path: Path, title: str, tmt1_k: float, tmt2_k: float, dt_s: float,
         window_s: float = 4.0) -> None:
    """Write throughput (moving average) and composite temperature (deg C) against time, as in the
    KIOXIA thermal article."""

    t = np.asarray(out.time_s)
    speed = moving_average(np.asarray(out.speed) / 1e6, round(window_s / dt_s))
    temp_c = np.asarray(out.composite_k) - ZERO_C_IN_K
    fig, ax = report.subplots(figsize=(9, 4.5))
    ax.plot(t, speed, color="tab:blue", lw=1.2, label=f"write speed ({window_s:g} s moving average)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("write speed (MB/s)", color="tab:blue")
    ax.set_ylim(0, max(speed.max() * 1.15, 1.0))
    throttled = np.asarray(out.level) > 0.5
    if throttled.any():
        ax.fill_between(t, 0, 1, where=throttled, transform=ax.get_xaxis_transform(), color="tab:orange",
                        alpha=0.12, step="pre", label="throttled (HCTM)")
    tx = ax.twinx()
    tx.plot(t, temp_c, color="tab:red", lw=1.2, label="composite temperature")
    for k, name in ((tmt1_k, "TMT1"), (tmt2_k, "TMT2")):
        if k > 0:
            tx.axhline(k - ZERO_C_IN_K, color="tab:red", ls="--", lw=0.8)
            tx.text(t[-1], k - ZERO_C_IN_K, f" {name} {k - ZERO_C_IN_K:.0f} °C", va="bottom", ha="right",
                    color="tab:red", fontsize=8)
    tx.set_ylabel("composite temperature (°C)", color="tab:red")
    lines = ax.get_legend_handles_labels()
    lines2 = tx.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="lower left", fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_tmt_landscape(grid: dict, res: dict, limit_k: float, path: Path) -> None:
    """Heatmap of the exact objective (GB written) over the TMT grid (K), points above ``limit_k`` hatched,
    with the Optax path and the grid's best (``ssdx.models.thermal.jobs.run_tmt_optimize``)."""

    tab = grid["table"]
    t1, t2 = tab["tmt1_k"], tab["tmt2_k"]
    a, b = np.unique(t1), np.unique(t2)
    z = np.full((len(b), len(a)), np.nan)
    feas = np.zeros_like(z, bool)
    z[np.searchsorted(b, t2), np.searchsorted(a, t1)] = tab["written_gb"]
    feas[np.searchsorted(b, t2), np.searchsorted(a, t1)] = grid["feasible"]
    fig, ax = report.subplots(figsize=(7, 5.5))
    m = ax.pcolormesh(a, b, z, shading="nearest", cmap="viridis")
    ax.contourf(a, b, (~feas & np.isfinite(z)).astype(float), levels=[0.5, 1.5], hatches=["//"],
                colors="none")
    fig.colorbar(m, ax=ax, label="GB written in the window (exact model)")
    p1 = [p["tmt1_k"] for p in res["path"]]
    p2 = [p["tmt2_k"] for p in res["path"]]
    ax.plot(p1, p2, "w.-", lw=1, ms=3, label="Optax path (relaxed)")
    ax.plot(res["tmt1_k"], res["tmt2_k"], "r*", ms=14, label="optimiser, exact re-evaluation")
    ax.plot(grid["tmt1_k"], grid["tmt2_k"], "wo", mfc="none", ms=12, label="grid best")
    ax.set_xlabel("TMT1 (K)")
    ax.set_ylabel("TMT2 (K)")
    ax.set_title(f"TMT landscape; hatched: composite exceeds {limit_k:.2f} K")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_fit_rc(t: np.ndarray, measured: np.ndarray, before: np.ndarray, after: np.ndarray,
                s: Mapping[str, Any], path: Path) -> None:
    """Measured composite temperature against the preset's and the fitted RC network's (°C; inputs in K,
    time in s) and the fit's residual (K), for ``ssdx experiment=fit_rc``."""
    fig, (ax, ax_r) = report.subplots(2, 1, figsize=(9, 6), sharex=True, height_ratios=[3, 1],
                                      layout="constrained")
    ax.plot(t, measured - ZERO_C_IN_K, ".", ms=2, color="0.5", label="measured")
    ax.plot(t, before - ZERO_C_IN_K, "--", color="tab:blue",
            label=f'preset "{s["cooling"]}" (RMSE {s["preset_rmse_k"]:.2f} K)')
    ax.plot(t, after - ZERO_C_IN_K, color="tab:red", label=f'fitted (RMSE {s["rmse_k"]:.2f} K)')
    ax.set_ylabel("composite temperature (°C)")
    ax.set_title(f'{s["drive"]}: RC fit of {", ".join(s["fields"])}')
    ax.legend(fontsize=8)
    ax_r.plot(t, after - measured, color="tab:red", lw=0.8)
    ax_r.axhline(0.0, color="0.3", lw=0.5)
    ax_r.set_ylabel("residual (K)")
    ax_r.set_xlabel("time (s)")
    fig.savefig(path, dpi=120)
