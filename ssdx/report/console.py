"""What ``ssdx`` prints after a sweep of any model and a trace analysis: ``(summary, out_dir) -> lines``.

Each model's jobs have their formatters in the model's folder (``ssdx.models.<model>.console``).  Each
formatter reads the summary the job returned (the one it wrote to ``summary.json``, plus for a
sweep its ``_table``) and the output directory, and returns the lines the CLI prints, in order.  The job
registry (``ssdx.core.registry``) names each job's formatter.  Users and tests read these lines, so a
change here changes the CLI's contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def sweep(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``sweep`` job."""
    lines: list[str] = []
    resumed = (
        f"; resumed: {s['resumed_chunks']} of {s['chunks']} chunks were already done"
        if s["resumed_chunks"]
        else ""
    )
    lines.append(
        f"sweep {s['sweep']}: {s['n_configs']} configurations "
        f"({s['n_dropped']} infeasible dropped) in {s['wall_s']:.1f} s on "
        f"{s['runner']['executor']} ({s['runner']['workers']} worker"
        f"{'s' if s['runner']['workers'] > 1 else ''}){resumed}"
    )
    if s["best_by"]["metric"] is not None:  # a reduced sweep without top-k has no best rows
        lines.append(f"best by {s['best_by']['metric']} per {', '.join(s['best_by']['group_by']) or 'run'}:")
        lines.append(s["_table"])
    if s.get("_quantiles"):
        lines.append("quantiles (value: estimate; bracket: where the exact one lies):")
        lines.append(s["_quantiles"])
    plots = [v for k, v in s["plots"].items() if k.endswith("_png")]
    lines.append(f"outputs: {', '.join([*s['outputs'], *plots])}")
    return lines


def analyse(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``analyse`` job."""
    lines: list[str] = []
    seq = s["sequential_fraction"]
    lines.append(
        f"{s['trace']} ({s['format']}): {s['requests']} requests, read fraction "
        f"{s['read_fraction'] if s['read_fraction'] is None else round(s['read_fraction'], 4)}, "
        f"{100 * seq:.2f} % sequential, footprint {s['footprint_bytes'] / 2**30:.2f} GiB"
        + (f"; {s['skipped_lines']} malformed lines skipped" if s["skipped_lines"] else "")
        + (f"; {s['unsorted_requests']} out-of-order timestamps" if s["unsorted_requests"] else "")
        + (
            f"; the first {s['requests']} requests of the trace (workload.requests)"
            if s.get("trace_truncated")
            else ""
        )
    )
    lines.append(f"outputs: {out / 'summary.json'}")
    return lines
