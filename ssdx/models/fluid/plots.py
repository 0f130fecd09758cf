"""Fill-curve phases and plots from the fluid engine's per-step outputs (host side, NumPy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ssdx import report
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid.model import PHASES, StepOut
from ssdx.params import Drive

#: Figures of the Aldrin Pro review (docs/references.md): (name, start GB, end GB, mean MB/s).
ALDRIN_REVIEW = (("pslc", 0.0, 691.0, 6579.0), ("direct_native", 693.0, 868.0, 2159.0),
                 ("folding", 868.0, 2000.0, 863.0))


def regime_names(drive: Drive | None = None) -> tuple[str, str, str, str]:
    """Names of the four pieces a step writes, in order: the cache's first region, the rest of the pSLC
    cache, past the cache, folding.  The first region is its own regime only when it has its own program
    time (``drive.first_slc_t_prog_us``): ``pslc_static`` in ``static`` and ``hybrid`` (the static region),
    ``pslc_first`` in ``dynamic``; past the cache the regime is ``fold_through`` when writes go through
    pSLC and are folded at once (``drive.fold_while_writing``), else ``direct_native``; either with
    ``_paced`` when the cache's data is folded from the cache's end on (``drive.paced_folding``)."""
    first = "pslc"
    if drive is not None and bool(np.any(np.asarray(drive.first_slc_t_prog_us) > 0)):
        mode = int(np.asarray(drive.slc_mode).reshape(-1)[0])
        first = "pslc_first" if mode == fluid.DYNAMIC else "pslc_static"
    through = drive is not None and bool(np.any(np.asarray(fluid.fold_through(drive))))
    past = "fold_through" if through else "direct_native"
    if drive is not None and bool(np.any(np.asarray(drive.paced_folding) > 0)):
        past += "_paced"
    return (first, "pslc", past, "folding")


def phases(out: StepOut, drive: Drive | None = None) -> list[dict[str, Any]]:
    """The model's regimes as contiguous segments in write order: ``{name, start_gb, end_gb,
    mean_mb_s}`` (names: :func:`regime_names` of ``drive``).

    Within a step the engine writes pSLC (its first region first), then past the cache (direct native or
    through pSLC), then folding bytes, so the pieces are laid out in that order and merged with their
    neighbours of the same regime.
    """
    mb = np.asarray(out.mode_bytes, dtype=np.float64).reshape(-1, len(PHASES))
    mt = np.asarray(out.mode_time_s, dtype=np.float64).reshape(-1, len(PHASES))
    sb = np.asarray(out.first_bytes, dtype=np.float64).reshape(-1)
    st = np.asarray(out.first_time_s, dtype=np.float64).reshape(-1)
    pieces_b = np.stack([sb, mb[:, 0] - sb, mb[:, 1], mb[:, 2]], axis=1).reshape(-1)
    pieces_t = np.stack([st, mt[:, 0] - st, mt[:, 1], mt[:, 2]], axis=1).reshape(-1)
    regimes = regime_names(drive)
    names = np.array([regimes[i] for i in np.tile(np.arange(4), len(sb))])
    keep = pieces_b > 0
    segs: list[dict[str, Any]] = []
    pos = 0.0
    for b, t, k in zip(pieces_b[keep], pieces_t[keep], names[keep]):
        if segs and segs[-1]["_k"] == k:
            segs[-1]["_b"] += b
            segs[-1]["_t"] += t
        else:
            segs.append({"_k": k, "_start": pos, "_b": b, "_t": t})
        pos += b
    return [
        {"name": str(s["_k"]), "start_gb": s["_start"] / 1e9, "end_gb": (s["_start"] + s["_b"]) / 1e9,
         "mean_mb_s": s["_b"] / max(s["_t"], 1e-300) / 1e6}
        for s in segs
    ]


def summary(out: StepOut, capacity_gb: float, drive: Drive | None = None) -> dict[str, Any]:
    """The fill experiment's ``summary.json`` content (regimes named for ``drive``, :func:`regime_names`)."""
    written = float(out.written_bytes[-1])
    busy = float(np.sum(out.mode_time_s))
    return {
        "phases": phases(out, drive),
        "capacity_gb": capacity_gb,
        "written_gb": written / 1e9,
        "mean_mb_s": written / busy / 1e6,
        "min_mb_s": float(np.min(out.speed)) / 1e6,
        "max_mb_s": float(np.max(out.speed)) / 1e6,
        "time_s": float(out.time_s[-1]),
    }


#: a colour per regime (:func:`regime_names`), shared by the fill and fit figures
REGIME_COLORS = {"pslc_static": "#2f6db0", "pslc_first": "#2f6db0", "pslc": "#4c9be8",
                 "direct_native": "#f2b134", "fold_through": "#b07cc6", "folding": "#e8574c",
                 "direct_native_paced": "#e0863a", "fold_through_paced": "#9a5fb5"}


def plot_fill(out: StepOut, path, title: str = "", reference=None, drive: Drive | None = None) -> None:
    """Write speed (MB/s) against host data written in this run (GB), phases shaded, to ``path`` (PNG).

    The x axis counts from the start of the run (pre-filled data excluded), as ``phases`` does.
    """

    gb = np.asarray(out.written_bytes, dtype=np.float64) / 1e9
    mbs = np.asarray(out.speed, dtype=np.float64) / 1e6
    fig, ax = report.subplots(figsize=(8, 4.2), layout="constrained")
    ax.step(gb, mbs, where="pre", color="k", lw=1.4, label="ssdx fluid model")
    colors = REGIME_COLORS
    for p in phases(out, drive):
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
