"""What ``ssdx`` prints after the thermal run, the TMT optimisation and the RC fit: one formatter per job,
``(summary, out_dir) -> lines`` (the job registry, ``ssdx.core.registry``, names each;
``ssdx.report.console`` holds the shared sweep's)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def thermal(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``thermal`` job."""
    lines: list[str] = []
    sm = s["smart"]
    thr = s["throttled_mean_mb_s"]  # MB/s; None or NaN: no step was throttled
    throttled = f"throttled {thr:.0f} MB/s" if thr is not None and math.isfinite(thr) else "never throttled"
    lines.append(
        f"{s['drive']} ({s['cooling']}, ambient {s['ambient_c']:.0f} C, TMT1 {s['tmt1_k']:.0f} K, "
        f"TMT2 {s['tmt2_k']:.0f} K): max composite {s['max_composite_k']:.1f} K "
        f"({s['max_composite_c']:.1f} C), {s['written_gb']:.0f} GB written"
    )
    lines.append(
        f"  throttle entries TMT1 {sm['tmt1_transitions']}, TMT2 {sm['tmt2_transitions']}; "
        f"{sm['time_tmt1_s']} s light, {sm['time_tmt2_s']} s heavy; "
        f"unthrottled {s['unthrottled_mean_mb_s']:.0f} MB/s, {throttled}"
    )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'thermal.png'}, {out / 'thermal.csv'}")
    return lines


def tmt_optimize(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``tmt_optimize`` job."""
    lines: list[str] = []
    lines.append(
        f"TMT1 {s['tmt1_k']:.0f} K, TMT2 {s['tmt2_k']:.0f} K: {s['objective']:.1f} GB "
        f"({100 * s['objective_ratio']:.2f} % of the grid best {s['grid_best_objective']:.1f} GB) "
        f"with {s['evaluations']} model evaluations vs {s['grid_evaluations']} for the grid; "
        f"max composite {s['max_composite_k']:.2f} K <= {s['temp_limit_k']:.2f} K"
    )
    lines.append(f"apply: {s['nvme_command']}")
    lines.append(f"   or: {s['nvme_hctm_command']}")
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'tmt_landscape.png'}")
    return lines


def fit_rc(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``fit_rc`` job."""
    lines: list[str] = []
    fitted = ", ".join(f"{k} {v:.4g} ({s['ratio_to_preset'][k]:.2f}x preset)" for k, v in s["fitted"].items())
    lines.append(
        f"RC fit of {s['n_steps']} steps from {s['series']}: {fitted}; RMSE {s['rmse_k']:.2f} K "
        f"(preset {s['preset_rmse_k']:.2f} K), {s['iterations']} iterations"
    )
    lines.append(f"apply: {s['overrides']}")
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fit_rc.png'}")
    return lines
