"""The fill job behind ``ssdx experiment=aldrin_pro_fill`` (and any ``task=fill``): one whole-drive fill
of the composed drive through the fluid model, with its summary, curve and plot."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ssdx import params
from ssdx.core import io
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid import plots as fill_report


def run_fill(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Whole-drive fill of one configuration: ``summary.json``, ``fill_curve.png``, ``fill_curve.csv``.

    ``workload.fio`` (a fio write job; ``workload.fio_job``, ``workload.fio_unknown``) sets ``pattern``,
    ``block_kib``, ``queue_depth``, ``fill_fraction``, ``burst_gb`` and ``idle_s``
    (``ssdx.workloads.fio.FioWorkload.fill``, which refuses what the fluid model cannot represent); the
    summary then names them under ``fio_workload`` with ``fio_job`` and ``fio_ignored``."""
    dtype = io.dtype(cfg.get("precision", "float32"))
    from ssdx.models.engine.jobs import with_fio_fill

    cfg, jobs = with_fio_fill(cfg)
    cols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    drive, workload = params.build(cols, dtype=dtype)
    drive, workload = params.index(drive, 0), params.index(workload, 0)
    n_steps = io.scan_steps(cfg["model"]["n_steps"], "model.n_steps")
    sim = jax.jit(fluid.simulate, static_argnums=2)
    out = jax.tree_util.tree_map(np.asarray, sim(drive, workload, n_steps))
    capacity_gb = float(fluid.capacity_bytes(drive)) / 1e9
    summary = fill_report.summary(out, capacity_gb, drive)
    prefill_fraction = float(cfg["workload"]["prefill_fraction"])
    prefill_gb = prefill_fraction * capacity_gb
    nand_name = (cfg.get("nand") or {}).get("name") or cfg["drive"]["nand"]
    summary.update({
        "drive": cfg["drive"].get("name", "custom"),
        "nand": nand_name,
        "slc_mode": cfg["drive"]["slc_mode"],
        "prefill_fraction": prefill_fraction,
        "prefill_gb": prefill_gb,
        "raw_gb": float(drive.raw_bytes) / 1e9,
        "n_steps": n_steps,
    })
    if jobs is not None:
        summary.update({"fio_job": jobs.name, "fio_ignored": jobs.ignored,
                        "fio_ignored_by_design": jobs.ignored_by_design,
                        "fio_workload": {k: cfg["workload"][k] for k in params.WORKLOAD_FIELDS}})
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    np.savetxt(out_dir / "fill_curve.csv",
               np.c_[out.written_bytes / 1e9, out.time_s, out.speed / 1e6, out.slc_bytes / 1e9,
                     out.idle_folded_bytes / 1e9],
               delimiter=",", header="written_gb,time_s,speed_mb_s,pslc_data_gb,idle_folded_gb", comments="")
    # The review's curve is drawn only where it applies: the preset as reviewed, fresh, factory mode.
    is_review = (summary["drive"] == "aldrin_pro_2tb" and nand_name == "ymtc_cdt1b" and prefill_gb == 0
                 and summary["slc_mode"] == "dynamic")
    fill_report.plot_fill(out, out_dir / "fill_curve.png",
                          title=f'{summary["drive"]} ({nand_name}) — {summary["slc_mode"]}, '
                                f'pre-fill {prefill_gb:.0f} GB',
                          reference=fill_report.ALDRIN_REVIEW if is_review else None, drive=drive)
    return summary
