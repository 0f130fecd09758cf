"""What ``ssdx`` prints after the request engine's replays (a trace or fio job, the boot study, MQSim's
files): one formatter per job, ``(summary, out_dir) -> lines`` (the job registry, ``ssdx.core.registry``,
names each; ``ssdx.report.console`` holds the shared sweep's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def mqsim(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``mqsim`` job."""
    lines: list[str] = []
    for i, sc in enumerate(s["scenarios"]):
        for f in sc["flows"]:
            lines.append(
                f"scenario {i} {f['name']}: {f['requests']} requests, {f['iops']:.0f} IOPS, "
                f"{f['mb_s']:.1f} MB/s, response {f['device_response_time_us']:.1f} us "
                f"(p99 {f['p99_response_time_us']:.1f} us)"
            )
    lines.append(f"{len(s['warnings'])} warnings (fields not modelled) in {out / 'summary.json'}")
    return lines


def replay(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``replay`` job."""
    lines: list[str] = []
    lat = s["latency_us"]
    lines.append(
        f"{s['trace']} on {s['drive']} ({s['loop']} loop, QD {s['queue_depth']}): "
        f"{s['requests']} requests, read fraction {s['read_fraction']:.3f}, {s['iops']:.0f} IOPS, "
        f"{s['mb_s']:.1f} MB/s; latency mean {lat['mean']:.1f} us, p99 {lat['p99']:.1f} us; "
        f"queue share {s['queue_share']:.2f}"
        + (f"; {s['skipped_lines']} malformed lines skipped" if s["skipped_lines"] else "")
        + (
            f"; the first {s['requests']} requests of the trace (workload.requests)"
            if s.get("trace_truncated")
            else ""
        )
    )
    if s.get("fio_job") is not None:
        c = s["clat_us"]
        lines.append(
            f"fio job {s['fio_job']}: IOPS={s['iops']:.0f}, BW={s['bw']:.0f}KiB/s; clat (usec) "
            f"p50 {c['p50']:.1f}, p99 {c['p99']:.1f}, p99.9 {c['p99.9']:.1f}"
            + (
                f"; the first {s['requests']} requests of the job (workload.requests)"
                if s["fio_truncated"] and not s.get("fio_groups")
                else ""
            )
        )
        for g in s.get("fio_groups") or []:  # stonewall groups, one after another
            c = g["clat_us"]
            lines.append(
                f"  group {g['group']} ({'+'.join(g['jobs'])}, {g['loop']} loop, "
                f"QD {g['queue_depth']}): {g['requests']} requests in {g['makespan_s']:.3g} s, "
                f"IOPS={g['iops']:.0f}, BW={g['bw']:.0f}KiB/s; clat (usec) p50 {c['p50']:.1f}, "
                f"p99 {c['p99']:.1f}, p99.9 {c['p99.9']:.1f}"
                + ("; its first requests only (workload.requests)" if g["truncated"] else "")
            )
        if s["fio_ignored"]:
            lines.append(
                "fio options ignored (workload.fio_unknown=warn): "
                + ", ".join(f"{i['option']} ({i['where']})" for i in s["fio_ignored"])
            )
    lines.extend(f"warning: {w}" for w in s.get("warnings", []))
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'latency_cdf.png'}")
    return lines


def boot(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``boot`` job."""
    lines: list[str] = []
    for name, d in s["drives"].items():
        lines.append(
            f"{name:<16} {d['interface']:<8} QD1 4K read {d['qd1_read_4k_us']:6.1f} us, write "
            f"{d['qd1_write_4k_us']:6.1f} us; boot storage time {d['boot_storage_time_s']:.2f} s"
        )
        if "fio" in d:
            f = d["fio"]
            lines.append(
                f"{'':<16} fio job {s['fio_job']} (QD {s['fio_queue_depth']}, {s['fio_loop']} "
                f"loop): IOPS={f['iops']:.0f}, BW={f['bw']:.0f}KiB/s, "
                f"clat p99 {f['clat_us']['p99']:.1f} us"
            )
    lines.append(
        f"SATA - PCIe 4.0: model {s['model_difference_s']:.2f} s; seed method "
        f"{s['seed_method_difference_s']:.2f} s; press: < 2 s"
    )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'boot_qd1.png'}")
    return lines
