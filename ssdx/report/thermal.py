"""Thermal-run reports: the seed's temperature/throughput figure and the time-series CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ssdx import report
from ssdx.units import ZERO_C_IN_K


def moving_average(x: np.ndarray, window_steps: int) -> np.ndarray:
    """Trailing moving average over ``window_steps`` samples (shorter at the start), as the seed's
    plots use a 4-s moving average (seeds/000)."""
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
    """Write throughput (moving average) and composite temperature (deg C) against time, as in seeds/000."""

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
