"""Plots of the hybrid SCM/NAND studies (Fukuchi et al., SCM/NAND hybrid SSD: Figs. 3, 5, 6), host side."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ssdx import catalog, report

NAND_ORDER = catalog.TABLE1_NAND


def plot_relative(rel: Mapping[str, Mapping[str, float]], path: Path, title: str,
                  paper: Mapping[str, float] | None = None) -> None:
    """Grouped bars of IOPS relative to the baseline NAND per workload (Fig. 3); ``paper`` marks the paper's
    Table 2's 3D CT TLC figures (percent)."""

    ws = list(rel)
    nands = [n for n in NAND_ORDER if all(n in rel[w] for w in ws)] or sorted(next(iter(rel.values())))
    x = np.arange(len(ws))
    width = 0.8 / len(nands)
    fig, ax = report.subplots(figsize=(9, 4))
    for i, n in enumerate(nands):
        ax.bar(x + (i - (len(nands) - 1) / 2) * width, [rel[w][n] for w in ws], width, label=n)
    if paper and "3d_ct_tlc" in nands:
        i = nands.index("3d_ct_tlc")
        px = [x[k] + (i - (len(nands) - 1) / 2) * width for k, w in enumerate(ws) if w in paper]
        ax.scatter(px, [1 + paper[w] / 100 for w in ws if w in paper], marker="_", s=300, color="k",
                   zorder=3, label="paper Table 2 (3D CT TLC)")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(x, ws)
    ax.set_ylabel("IOPS / IOPS of 2D FG MLC")
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_sensitivity(change: Mapping[str, Mapping[str, float]], path: Path) -> None:
    """IOPS change (percent) when one 3D CT TLC characteristic takes 2D FG MLC's value (Fig. 5)."""

    cases = list(change)
    ws = list(next(iter(change.values())))
    x = np.arange(len(ws))
    width = 0.8 / len(cases)
    fig, ax = report.subplots(figsize=(9, 4))
    for i, c in enumerate(cases):
        ax.bar(x + (i - (len(cases) - 1) / 2) * width, [change[c][w] for w in ws], width, label=c)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(x, ws)
    ax.set_ylabel("IOPS change, %")
    ax.set_title("3D CT TLC with one characteristic of 2D FG MLC")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_validation(rel: Mapping[str, Mapping[str, float]], change: Mapping[str, Mapping[str, float]],
                    rw_ratio: Mapping[str, float], path: Path, paper: Mapping[str, float] | None = None,
                    bottleneck: Mapping[str, str] | None = None, balance: float | None = None,
                    excluded: Mapping[str, str] | None = None) -> None:
    """Three panels: relative IOPS per NAND (Fig. 3, with Table 2's 3D CT TLC marks), the sensitivity
    cases (Fig. 5), and 3D CT TLC's gain against the NAND read/write ratio of each workload (Fig. 6);
    ``bottleneck`` (workload → resource) labels the points and leaves those not bound by the dies hollow,
    ``balance`` draws the ratio at which the two types cost a die the same, and the ``excluded`` workloads
    (not warmed or not steady) are marked with a cross in every panel's labels."""
    excluded = excluded or {}

    ws = list(rel)
    fig, axes = report.subplots(1, 3, figsize=(16, 4.2), gridspec_kw={"width_ratios": [3, 3, 2]})
    x = np.arange(len(ws))
    nands = [n for n in NAND_ORDER if all(n in rel[w] for w in ws)]
    width = 0.8 / len(nands)
    ax = axes[0]
    for i, n in enumerate(nands):
        ax.bar(x + (i - (len(nands) - 1) / 2) * width, [rel[w][n] for w in ws], width, label=n)
    if paper and "3d_ct_tlc" in nands:
        i = nands.index("3d_ct_tlc")
        px = [x[k] + (i - (len(nands) - 1) / 2) * width for k, w in enumerate(ws) if w in paper]
        ax.scatter(px, [1 + paper[w] / 100 for w in ws if w in paper], marker="_", s=200, color="k", zorder=3,
                   label="paper Table 2")
    ax.axhline(1.0, color="grey", lw=0.8)
    labels = [f"{w} ✗" if w in excluded else w for w in ws]
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("IOPS / IOPS of 2D FG MLC")
    ax.set_title("NAND type behind the SCM")
    ax.set_ylim(0, 1.35)
    ax.legend(fontsize=7, ncols=3, loc="upper center")
    ax = axes[1]
    cases = list(change)
    width = 0.8 / len(cases)
    for i, c in enumerate(cases):
        ax.bar(x + (i - (len(cases) - 1) / 2) * width, [change[c][w] for w in ws], width, label=c)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("IOPS change, %")
    ax.set_title("3D CT TLC with one 2D FG MLC characteristic")
    ax.legend(fontsize=7)
    ax = axes[2]
    pts = [(rw_ratio[w], 100 * (rel[w]["3d_ct_tlc"] - 1), w) for w in ws
           if rw_ratio.get(w) is not None and np.isfinite(rw_ratio[w]) and rw_ratio[w] > 0]
    for r, g, w in pts:
        b = (bottleneck or {}).get(w, "die")
        if w in excluded:
            ax.scatter(r, g, color="C3", marker="x")
        else:
            ax.scatter(r, g, color="C3" if b == "die" else "none", edgecolors="C3")
        text = w if b == "die" else f"{w} ({b}-bound)"
        ax.annotate(f"{text} ✗" if w in excluded else text, (r, g), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_xscale("log")
    ax.axhline(0.0, color="grey", lw=0.8)
    if balance is not None and np.isfinite(balance) and balance > 0:
        ax.axvline(balance, color="grey", ls="--", lw=0.8)
        ax.annotate(f"die-time balance {balance:.2g}", (balance, ax.get_ylim()[1]), fontsize=7,
                    xytext=(3, -10), textcoords="offset points")
    ax.set_xlabel("NAND page reads / pages programmed (2D FG MLC drive)")
    ax.set_ylabel("3D CT TLC vs 2D FG MLC, %")
    ax.set_title("Gain against the NAND read/write ratio")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
