"""What ``ssdx`` prints after the fluid model's fill and fill-curve fit: one formatter per job, ``(summary,
out_dir) -> lines`` (the job registry, ``ssdx.core.registry``, names each; ``ssdx.report.console`` holds
the shared sweep's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def fill(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``fill`` job."""
    lines: list[str] = []
    lines.append(
        f"{s['drive']} ({s['slc_mode']}, pre-fill {s['prefill_gb']:.0f} GB): "
        f"{s['written_gb']:.0f} GB in {s['time_s']:.0f} s, mean {s['mean_mb_s']:.0f} MB/s"
    )
    if s.get("fio_job") is not None:
        w = s["fio_workload"]
        lines.append(
            f"fio job {s['fio_job']}: {w['pattern']} {w['block_kib']:g} KiB writes at QD "
            f"{w['queue_depth']}, {100 * w['fill_fraction']:.0f} % of the drive"
            + (f", {w['burst_gb']:g} GB bursts with {w['idle_s']:g} s idle" if w["burst_gb"] else "")
            + (
                "; ignored (workload.fio_unknown=warn): " + ", ".join(i["option"] for i in s["fio_ignored"])
                if s["fio_ignored"]
                else ""
            )
        )
    lines += phase_lines(s["phases"])
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fill_curve.png'}, {out / 'fill_curve.csv'}")
    return lines


def phase_lines(phases: list[Mapping[str, Any]]) -> list[str]:
    """One line per phase: its name (the names' column as wide as the longest), GB range and MB/s."""
    w = max([14, *(len(p["name"]) for p in phases)])
    return [f"  {p['name']:<{w}} {p['start_gb']:8.1f} -> {p['end_gb']:8.1f} GB  {p['mean_mb_s']:8.1f} MB/s"
            for p in phases]


def fit_fill(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``fit_fill`` job."""
    lines: list[str] = []
    lines.append(
        f"fit of {s['curve']} ({s['format']}, {s['n_samples']} samples) on {s['drive']}: "
        f"rule {s['rule']}, RMSE {s['rmse_mb_s']:.3g} MB/s ({100 * s['rmse_fraction']:.2g} % of "
        f"the mean {s['mean_measured_mb_s']:.0f} MB/s; preset {s['preset_rmse_mb_s']:.1f} MB/s)"
    )
    lines += phase_lines(s["phases"])
    for note in ([s["warning"]] if s["warning"] else []) + s["notes"]:
        lines.append(f"  note: {note}")
    lines.append(f"apply: {s['command']}")
    lines.append(f"preset: {s['preset_path']} (+ {s['nand_preset_path']}): {s['preset_command']}")
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fit_curve.png'}, {out / 'fit_curve.csv'}")
    return lines
