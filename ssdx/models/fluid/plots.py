"""Fill-curve phases and plots from the fluid engine's per-step outputs (host side, NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ssdx import report
from ssdx.models.fluid.model import PHASES, StepOut

#: Figures of the Aldrin Pro review (docs/references.md): (name, start GB, end GB, mean MB/s).
ALDRIN_REVIEW = (("pslc", 0.0, 691.0, 6579.0), ("direct_native", 693.0, 868.0, 2159.0),
                 ("folding", 868.0, 2000.0, 863.0))


def phases(out: StepOut) -> list[dict[str, Any]]:
    """Contiguous write-mode segments in write order: ``{name, start_gb, end_gb, mean_mb_s}``.

    Within a step the engine writes pSLC, then direct native, then folding bytes, so the pieces are
    laid out in that order and merged with their neighbours of the same mode.
    """
    mb = np.asarray(out.mode_bytes, dtype=np.float64).reshape(-1)
    mt = np.asarray(out.mode_time_s, dtype=np.float64).reshape(-1)
    names = np.tile(np.arange(len(PHASES)), len(mb) // len(PHASES))
    keep = mb > 0
    mb, mt, names = mb[keep], mt[keep], names[keep]
    segs: list[dict[str, Any]] = []
    pos = 0.0
    for b, t, k in zip(mb, mt, names):
        if segs and segs[-1]["_k"] == k:
            segs[-1]["_b"] += b
            segs[-1]["_t"] += t
        else:
            segs.append({"_k": k, "_start": pos, "_b": b, "_t": t})
        pos += b
    return [
        {"name": PHASES[s["_k"]], "start_gb": s["_start"] / 1e9, "end_gb": (s["_start"] + s["_b"]) / 1e9,
         "mean_mb_s": s["_b"] / s["_t"] / 1e6}
        for s in segs
    ]


def summary(out: StepOut, capacity_gb: float) -> dict[str, Any]:
    """The fill experiment's ``summary.json`` content."""
    written = float(out.written_bytes[-1])
    busy = float(np.sum(out.mode_time_s))
    return {
        "phases": phases(out),
        "capacity_gb": capacity_gb,
        "written_gb": written / 1e9,
        "mean_mb_s": written / busy / 1e6,
        "min_mb_s": float(np.min(out.speed)) / 1e6,
        "max_mb_s": float(np.max(out.speed)) / 1e6,
        "time_s": float(out.time_s[-1]),
    }


def plot_fill(out: StepOut, path, title: str = "", reference=None) -> None:
    """Write speed (MB/s) against host data written in this run (GB), phases shaded, to ``path`` (PNG).

    The x axis counts from the start of the run (pre-filled data excluded), as ``phases`` does.
    """

    gb = np.asarray(out.written_bytes, dtype=np.float64) / 1e9
    mbs = np.asarray(out.speed, dtype=np.float64) / 1e6
    fig, ax = report.subplots(figsize=(8, 4.2), layout="constrained")
    ax.step(gb, mbs, where="pre", color="k", lw=1.4, label="ssdx fluid model")
    colors = {"pslc": "#4c9be8", "direct_native": "#f2b134", "folding": "#e8574c"}
    for p in phases(out):
        ax.axvspan(p["start_gb"], p["end_gb"], color=colors[p["name"]],
                   alpha=0.18, lw=0, label=f'{p["name"]}: {p["mean_mb_s"]:.0f} MB/s')
    if reference:
        for i, (_name, a, b, v) in enumerate(reference):
            ax.hlines(v, a, b, colors="tab:green", linestyles="--", lw=1.5,
                      label="Aldrin Pro review" if i == 0 else None)
    ax.set_xlabel("host data written in this run, GB (1e9 B)")
    ax.set_ylabel("write speed, MB/s (1e6 B/s)")
    ax.set_ylim(0, max(mbs.max() * 1.15, 1.0))
    ax.set_xlim(0, gb[-1])
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
