"""What ``ssdx`` prints after the GC model's WA run and fill sets: one formatter per job, ``(summary, out_dir)
-> lines`` (the job registry, ``ssdx.core.registry``, names each; ``ssdx.report.console`` holds the shared
sweep's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def wa(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``wa`` job."""
    lines: list[str] = []
    ss = s["steady_state_round"]
    ana = s["analytic_write_amplification"]
    lines.append(
        f"{s['policy']}, {s['pattern']}, S_f {s['spare_factor']:g}, b {s['pages_per_block']}: "
        f"WA {s['write_amplification']:.3f}"
        + (f" (analytic {ana:.3f}, {100 * s['relative_error']:+.2f} %)" if ana else "")
        + (f"; SNIA steady state at round {ss}" if ss else "; SNIA steady state not reached")
        + f"; {s['mb_s']:.0f} MB/s"
    )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'wa_rounds.png'}")
    return lines


def gc_fill(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``gc_fill`` job."""
    lines: list[str] = []
    gib = s["gc_onset_gib"]  # host GiB written when GC starts: 0.0 from the first cycle, None never
    if gib:
        gc = f"GC starts at {gib:.1f} GiB written"
    elif gib is not None:
        gc = "GC active from the start" + (
            " (the random preconditioning filled the drive)" if s.get("random_fill") else ""
        )
    else:
        gc = "GC did not start during the test"
    lines.append(
        f"{s['drive']}: fresh {s['fresh_mb_s']:.0f} MB/s; {gc}"
        + (f"; speed drop from {s['drop_onset_gib']:.1f} GiB" if s["drop_onset_gib"] else "")
        + (f", then {s['after_drop_mb_s']:.0f} MB/s" if s["after_drop_mb_s"] else "")
        + f"; WA {s['write_amplification']:.2f}"
        + (f"; after secure erase {s['restored_mb_s']:.0f} MB/s" if s["restored_mb_s"] else "")
    )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fill_sets.png'}")
    return lines
