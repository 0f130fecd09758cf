"""Block-level GC reports: write amplification per SNIA round and the timed fill sets (THNSNS120GBSP test)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import report


def plot_wa_rounds(s: Mapping[str, Any], path: Path) -> None:
    """Write amplification and host MB/s per SNIA round of a ``task=wa`` summary
    (``ssdx.models.gc.jobs.run_wa``),
    with the closed-form WA and the first steady-state window."""
    r = np.arange(1, len(s["wa_rounds"]) + 1)
    fig, (a1, a2) = report.subplots(2, 1, figsize=(8, 5.5), sharex=True, layout="constrained")
    a1.plot(r, s["wa_rounds"], "o-", ms=3, label="simulated, per round")
    if s["analytic_write_amplification"]:
        a1.axhline(s["analytic_write_amplification"], color="k", ls="--", lw=1,
                   label=f'{s["analytic_model"]}: {s["analytic_write_amplification"]:.3f}')
    a1.set_ylabel("write amplification")
    a1.legend(fontsize=8)
    a2.plot(r, s["mb_s_rounds"], "o-", ms=3, color="tab:green")
    a2.set_ylabel("host write MB/s")
    a2.set_xlabel("SNIA round (after preconditioning)")
    if s["steady_state_round"]:
        for ax in (a1, a2):
            ax.axvspan(s["steady_state_round"] - 4 - 0.5, s["steady_state_round"] + 0.5, color="tab:orange",
                       alpha=0.15, label="first steady-state window")
        a2.legend(fontsize=8)
    a1.set_title(f'{s["policy"]}, {s["pattern"]}, S_f = {s["spare_factor"]:g}, b = {s["pages_per_block"]}, '
                 f'{s["n_blocks"]} blocks')
    fig.savefig(path, dpi=120)


def plot_fill_sets(s: Mapping[str, Any], path: Path) -> None:
    """Write speed per timed set (MB/s) and total written (GiB) of a ``task=gc_fill`` summary
    (``ssdx.models.gc.jobs.run_gc_fill``), with the GC onset and the secure erase marked (THNSNS120GBSP
    test)."""
    n = len(s["set_mb_s"])
    t = (np.arange(n) + 1) * s["set_s"]
    fig, ax = report.subplots(figsize=(9, 4.5), layout="constrained")
    ax.plot(t, s["set_mb_s"], "o-", ms=3, color="tab:blue", label="write speed (per set)")
    ax.set_ylabel("write speed (MB/s)", color="tab:blue")
    ax.set_xlabel("time (s)")
    ax.set_ylim(0, max(s["set_mb_s"]) * 1.15)
    ax2 = ax.twinx()
    ax2.plot(t, s["set_total_gib"], color="tab:red", label="total written")
    ax2.set_ylabel("total written (GiB)", color="tab:red")
    if s["gc_onset_gib"]:
        ax2.axhline(s["gc_onset_gib"], color="tab:red", ls=":", lw=1)
        ax2.text(t[0], s["gc_onset_gib"], f' GC starts at {s["gc_onset_gib"]:.1f} GiB', color="tab:red",
                 va="bottom", fontsize=8)
    if s["erase_at_set"] < n:
        ax.axvline(s["erase_at_set"] * s["set_s"], color="k", ls="--", lw=1)
        ax.text(s["erase_at_set"] * s["set_s"], 5, " secure erase", fontsize=8)
    pre = f', after a {s["random_fill"]:g}x random fill' if s["random_fill"] else ""
    ax.set_title(f'{s["drive"]}: {s["block_kib"]:g} KiB {s["pattern"]} writes, {s["set_s"]:g}-s sets{pre}')
    fig.savefig(path, dpi=120)
