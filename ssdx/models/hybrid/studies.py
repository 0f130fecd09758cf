"""The hybrid's two studies of Fukuchi et al. (SCM/NAND hybrid SSD with four NAND types; full version ISCAS
2018) behind the CLI: the sensitivity study (``hybrid_sensitivity``: one 2D FG MLC characteristic at a
time on 3D CT TLC) and the validation of the paper's findings (``hybrid_validate``).  Both replay their
volumes through :func:`ssdx.models.hybrid.jobs.run_table` (streams, warm-up and steady-state rules: that
module)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import catalog, params
from ssdx.core import io
from ssdx.models.hybrid import params as hybrid_params
from ssdx.models.hybrid.findings import (
    BASELINE,
    PAPER_TABLE2,
    TABLE1,
    balance_ratio,
    excluded,
    fg_tlc_loss_bound,
    steady_state,
    utilisation,
    validation_findings,
    volume_statistics,
)
from ssdx.models.hybrid.jobs import footprint_hint, run_table


def study_settings(cfg: Mapping[str, Any], group: str) -> tuple[list[str], int]:
    """The workloads and measured requests of a hybrid study's ``group`` (``sensitivity``, ``validate``),
    checked before anything runs: at least one workload (default: Fukuchi et al.'s seven volumes, when the
    group leaves them unset), and 1,000 to 10^8 measured requests per workload (default 100,000)."""
    s = dict(cfg.get(group) or {})
    workloads = s.get("workloads")
    if workloads is None:
        workloads = list(PAPER_TABLE2)
    if not workloads:
        raise params.ConfigError(f"{group}.workloads", workloads, "name at least one workload (an MSR "
                                 f"volume, e.g. [hm_0]; the paper's seven: {list(PAPER_TABLE2)})")
    measure = s.get("requests", 100_000)
    if isinstance(measure, bool) or not isinstance(measure, int) or not 1000 <= measure <= 100_000_000:
        raise params.ConfigError(f"{group}.requests", measure, "integer 1000 <= x <= 1e8 (measured requests "
                                 "per workload)")
    return list(workloads), measure


def run_sensitivity(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True,
                    executor=None) -> dict[str, Any]:
    """Fukuchi et al. Fig. 5: change one 3D CT TLC characteristic at a time to 2D FG MLC's; ``summary.json``
    with ``sensitivity`` (largest absolute IOPS change, percent, over the workloads) and
    ``sensitivity.png``."""

    workloads, measure = study_settings(cfg, "sensitivity")
    ct = catalog.nand("3d_ct_tlc")
    cases = {"base": {}, **sensitivity_cases()}
    base = hybrid_params.columns({**cfg["hybrid"], "nand": ct.name})
    rows = []
    for w in workloads:
        for over in cases.values():
            row = dict(base)
            row["workload.msr"] = np.asarray([w])
            for k, v in over.items():
                row[f"hybrid.{k}"] = np.asarray([v], float)
            rows.append(row)
    cols = params.concat_columns(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    table, infos = run_table(cols, cfg, measure, None, progress, desc="sensitivity", executor=executor)
    df = table.to_pandas()
    names = list(cases)
    change: dict[str, dict[str, float]] = {c: {} for c in names[1:]}
    for w in workloads:
        iops = df[df["workload.msr"] == w].sort_values("config_id")["iops"].to_numpy()
        for i, c in enumerate(names[1:], start=1):
            change[c][w] = float(100 * (iops[i] / iops[0] - 1))
    summary = {
        "sensitivity": {c: float(max(abs(v) for v in change[c].values())) for c in change},
        "change_percent": change, "cases": {c: cases[c] for c in names[1:]},
        "scm_ratio": float(cfg["hybrid"]["scm_ratio"]), "streams": infos,
        "dominant": max(change, key=lambda c: max(abs(v) for v in change[c].values())),
    }
    io.write_json(out_dir / "summary.json", summary)
    from ssdx.models.hybrid import plots as hybrid_report
    hybrid_report.plot_sensitivity(change, out_dir / "sensitivity.png")
    return summary


def sensitivity_cases() -> dict[str, dict[str, float]]:
    """Fukuchi et al.'s Fig. 5 cases, 3D CT TLC with one characteristic set to 2D FG MLC's: ``{case:
    {override field: value}}`` for block size, latency (program, read, erase) and write unit."""

    mlc = catalog.nand(BASELINE)
    return {"block_size": {"block_pages": mlc.block_pages},
            "latency": {"t_prog_us": mlc.t_prog_us, "t_read_us": mlc.t_read_us, "t_erase_us": mlc.t_erase_us},
            "write_unit": {"write_unit_kib": mlc.write_unit_bytes / 1024}}


#: the Table 1 types with a block write unit, also run with whole-block staging by ``hybrid_validate``
BLOCK_UNIT_NANDS = ("2d_fg_tlc", "3d_fg_tlc")


def _staging_unfit(rows: Sequence[Mapping[str, np.ndarray]], name: str, workload: Mapping[str, Any]) -> str:
    """Why the other-staging rows of volume ``name`` cannot run (``""`` if they can): a real trace, whose
    footprint is known only once it is read, or an SCM whose threshold space cannot hold a whole block."""
    fp = footprint_hint(name, workload)
    if fp is None:
        return "a real trace: its footprint, which sizes the SCM, is not known before it is read"
    try:
        for r in rows:
            hybrid_params.validate(r, np.full(1, fp))
    except params.ConfigError as e:
        return f"{e.field}: {e.rule}"
    return ""


def run_validate(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True,
                 executor=None) -> dict[str, Any]:
    """Every finding of Fukuchi et al. checked at once: the four Table 1 NAND types, the three Fig. 5
    sensitivity cases and the two block-unit types with the other ``block_staging`` over the volumes of
    ``validate.workloads``; ``summary.json`` with ``findings: [{name, holds, detail}]``, ``relative_iops``,
    ``sensitivity_percent``, ``staging_percent``, ``volumes`` (what decides each sign), ``excluded`` (volumes
    carrying no finding, and why), ``utilisation`` and ``steady_state``; ``results.parquet`` (one row per
    run, ``case`` naming it) and ``validation.png``."""
    workloads, measure = study_settings(cfg, "validate")
    cases = sensitivity_cases()
    base = hybrid_params.columns(cfg["hybrid"])
    default_staging = str(cfg["hybrid"]["block_staging"])
    other = next(x for x in hybrid_params.STAGING if x != default_staging)
    rows, keys = [], []
    skipped: dict[str, str] = {}
    for w in workloads:
        for nand in TABLE1:
            rows.append({**base, "workload.msr": np.asarray([w]), "hybrid.nand": np.asarray([nand])})
            keys.append((w, nand))
        for case, over in cases.items():
            row = {**base, "workload.msr": np.asarray([w]), "hybrid.nand": np.asarray(["3d_ct_tlc"])}
            row.update({f"hybrid.{k}": np.asarray([v], float) for k, v in over.items()})
            rows.append(row)
            keys.append((w, case))
        extra = [{**base, "workload.msr": np.asarray([w]), "hybrid.nand": np.asarray([nand]),
                  "hybrid.block_staging": np.asarray([other])} for nand in BLOCK_UNIT_NANDS]
        why = _staging_unfit(extra, w, dict(cfg.get("workload") or {}))
        if why:
            skipped[w] = why
            continue
        rows.extend(extra)
        keys.extend((w, f"{other}:{nand}") for nand in BLOCK_UNIT_NANDS)
    cols = params.concat_columns(rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table, infos = run_table(cols, cfg, measure, None, progress, desc="validate", executor=executor)
    df = table.to_pandas().sort_values("config_id").reset_index(drop=True)
    df.insert(1, "case", [k[1] for k in keys])
    df.to_parquet(out_dir / "results.parquet")
    at = {k: df.iloc[i] for i, k in enumerate(keys)}
    rel = {w: {n: float(at[(w, n)]["iops"] / at[(w, BASELINE)]["iops"]) for n in TABLE1} for w in workloads}
    change = {c: {w: float(100 * (at[(w, c)]["iops"] / at[(w, "3d_ct_tlc")]["iops"] - 1)) for w in workloads}
              for c in cases}
    staging = {w: {n: float(100 * (at[(w, f"{other}:{n}")]["iops"] / at[(w, BASELINE)]["iops"] - 1))
                   for n in BLOCK_UNIT_NANDS} for w in workloads if w not in skipped}
    steady_staging = {w: v for w, v in staging.items() if w not in skipped
                      if all(at[(w, f"{other}:{n}")]["steady"] > 0.5 for n in BLOCK_UNIT_NANDS)}
    rw = {w: float(at[(w, BASELINE)]["nand_read_write_ratio"]) for w in workloads}
    nand_rows = df[[k[1] in TABLE1 for k in keys]]
    out_of = excluded(nand_rows, infos)
    bal = balance_ratio(cfg["hybrid"])
    bound = fg_tlc_loss_bound(cfg["hybrid"])
    util = utilisation(nand_rows)
    found = validation_findings(rel, change, rw, util, excluded=out_of,
                                staging=steady_staging if default_staging == "progressive" else None,
                                balance=bal, loss_bound=bound)
    h = cfg["hybrid"]
    summary = {
        "findings": found, "holds": sum(f["holds"] for f in found), "of": len(found),
        "relative_iops": rel, "sensitivity_percent": change,
        "staging_percent": {"staging": other, "vs_2d_fg_mlc": staging, "steady_on": sorted(steady_staging),
                            "not_run": skipped},
        "nand_read_write_ratio": rw, "volumes": volume_statistics(nand_rows, bal),
        "balance_read_write_ratio": bal, "fg_tlc_die_time_loss_bound_percent": bound,
        "excluded": out_of,
        "paper_table2_percent": {w: PAPER_TABLE2[w] for w in workloads if w in PAPER_TABLE2},
        "utilisation": util, "steady_state": steady_state(df),
        "setup": {k: h.get(k) for k in ("interface", "scm_ratio", "scm_basis", "scm_banks", "channels",
                                         "dies_per_channel", "bus_mts", "read_priority", "max_suspends",
                                         "suspend_resume_us", "block_staging", "nand_utilisation",
                                         "queue_depth")},
        "scm_ratio": float(h["scm_ratio"]), "scm_basis": str(h["scm_basis"]),
        "requests": measure, "wall_s": time.perf_counter() - t0, "streams": infos,
    }
    io.write_json(out_dir / "summary.json", summary)
    from ssdx.models.hybrid import plots as hybrid_report
    hybrid_report.plot_validation(rel, change, rw, out_dir / "validation.png", paper=PAPER_TABLE2,
                                  bottleneck={w: d["3d_ct_tlc"]["bottleneck"] for w, d in util.items()},
                                  balance=bal, excluded=out_of)
    return summary
