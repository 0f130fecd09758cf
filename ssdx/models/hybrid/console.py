"""What ``ssdx`` prints after the SCM/NAND hybrid's sweep and studies: one formatter per job, ``(summary,
out_dir) -> lines`` (the job registry, ``ssdx.core.registry``, names each; ``ssdx.report.console`` holds
the shared sweep's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def hybrid_sweep(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``model: hybrid`` sweep: IOPS relative to the baseline NAND."""
    lines: list[str] = []
    lines.append(
        f"sweep {s['sweep']}: {s['n_configs']} hybrid drives in {s['wall_s']:.1f} s; "
        f"IOPS relative to "
        f"{s['baseline']} at SCM = {s['scm_ratio']:g} x {s['scm_basis']}:"
    )
    nands = list(s["nands"])
    lines.append(f"  {'workload':<8} " + " ".join(f"{n:>10}" for n in nands) + "  best")
    for w, rel in s["relative_iops"].items():
        ties = s["best_nand_ties"][w]
        lines.append(
            f"  {w:<8} "
            + " ".join(f"{rel.get(n, float('nan')):10.3f}" for n in nands)
            + f"  {s['best_nand'][w] if len(ties) == 1 else 'tie: ' + ', '.join(ties)}"
        )
    lines.append(f"outputs: {out / 'results.parquet'}, {out / 'summary.json'}, {out / 'relative_iops.png'}")
    return lines


def hybrid_sensitivity(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``hybrid_sensitivity`` job."""
    lines: list[str] = []
    lines.append(
        "3D CT TLC with one 2D FG MLC characteristic: largest |IOPS change| over the workloads: "
        + ", ".join(f"{k} {v:.2f} %" for k, v in s["sensitivity"].items())
        + f"; dominant: {s['dominant']}"
    )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'sensitivity.png'}")
    return lines


def hybrid_validate(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``hybrid_validate`` job."""
    lines: list[str] = []
    lines.append(
        f"findings of the hybrid SSD study: {s['holds']} of {s['of']} hold "
        f"({s['requests']} measured requests per run, SCM = {s['scm_ratio']:g} x {s['scm_basis']})"
    )
    for f in s["findings"]:
        lines.append(f"  [{'holds' if f['holds'] else 'FAILS'}] {f['name']}: {f['detail']}")
    for w, why in (s.get("excluded") or {}).items():
        lines.append(f"  {w} carries no finding: {why}")
    if not s["steady_state"]["all_steady"]:
        lines.append(
            f"  {len(s['steady_state']['not_steady'])} runs not steady (halves differ > "
            f"{100 * s['steady_state']['tolerance']:g} % or a resource booked above "
            f"{s['steady_state']['max_utilisation']:g} of the window): see summary.json "
            "steady_state"
        )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'results.parquet'}, {out / 'validation.png'}")
    return lines
