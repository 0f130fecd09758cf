"""What ``ssdx`` prints after each job: one formatter per job, ``(summary, out_dir) -> lines``.

Each formatter reads the summary the job returned (the one it wrote to ``summary.json``, plus for a
sweep its ``_table``) and the output directory, and returns the lines the CLI prints, in order.  The job
registry (``ssdx.core.registry``) names each job's formatter.  Users and tests read these lines, so a
change here changes the CLI's contract.
"""

from __future__ import annotations

import math
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
    for p in s["phases"]:
        lines.append(
            f"  {p['name']:<14} {p['start_gb']:8.1f} -> {p['end_gb']:8.1f} GB  {p['mean_mb_s']:8.1f} MB/s"
        )
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fill_curve.png'}, {out / 'fill_curve.csv'}")
    return lines


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


def fit_fill(s: Mapping[str, Any], out: Path) -> list[str]:
    """The lines ``ssdx`` prints after a ``fit_fill`` job."""
    lines: list[str] = []
    lines.append(
        f"fit of {s['curve']} ({s['format']}, {s['n_samples']} samples) on {s['drive']}: "
        f"rule {s['rule']}, RMSE {s['rmse_mb_s']:.3g} MB/s ({100 * s['rmse_fraction']:.2g} % of "
        f"the mean {s['mean_measured_mb_s']:.0f} MB/s; preset {s['preset_rmse_mb_s']:.1f} MB/s)"
    )
    for p in s["phases"]:
        lines.append(
            f"  {p['name']:<14} {p['start_gb']:8.1f} -> {p['end_gb']:8.1f} GB  {p['mean_mb_s']:8.1f} MB/s"
        )
    for note in ([s["warning"]] if s["warning"] else []) + s["notes"]:
        lines.append(f"  note: {note}")
    lines.append(f"apply: {s['command']}")
    lines.append(f"preset: {s['preset_path']} (+ {s['nand_preset_path']}): {s['preset_command']}")
    lines.append(f"outputs: {out / 'summary.json'}, {out / 'fit_curve.png'}, {out / 'fit_curve.csv'}")
    return lines


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
