"""The thermal jobs behind the CLI: one coupled run (``task=thermal``) and TMT optimisation.

Each takes a composed config as plain containers and an output directory, writes its files there
and returns the summary it wrote (see ``ssdx.cli.main`` for the contract).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ssdx import api, params
from ssdx.core import io
from ssdx.core.fields import existing_file
from ssdx.models.engine.jobs import with_fio_fill
from ssdx.models.thermal import coupled, hctm, tmt
from ssdx.models.thermal import plots as thermal_report
from ssdx.units import ZERO_C_IN_K


def _single(cfg: Mapping[str, Any], dtype) -> tuple[tuple, int]:
    cfg, _ = with_fio_fill(cfg)  # a fio write job as the run's workload (workload.fio)
    cols = api.thermal_columns(cfg["drive"], cfg["workload"], cfg["thermal"], cfg.get("nand"))
    trees, n_steps = api.build_thermal(cols, dtype=dtype)
    return tuple(params.index(x, 0) for x in trees), n_steps


def _commands(tmt1_k: float, tmt2_k: float) -> dict[str, str]:
    from ssdx.models.thermal import nvme
    return {"nvme_command": nvme.set_feature_command(tmt1_k, tmt2_k),
            "nvme_hctm_command": nvme.hctm_command(tmt1_k, tmt2_k)}


def run_thermal(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """One coupled run: ``summary.json``, ``thermal.png`` (the KIOXIA thermal-throttling article's figure),
    ``thermal.csv``."""
    dtype = io.dtype(cfg.get("precision", "float32"))
    trees, n_steps = _single(cfg, dtype)
    run = jax.jit(coupled.run, static_argnums=4)
    final, out = jax.tree_util.tree_map(np.asarray, run(*trees, n_steps))
    met = {k: float(v) for k, v in jax.jit(coupled.metrics, static_argnums=4)(*trees, n_steps).items()}
    th = cfg["thermal"]
    tmt1_k, tmt2_k = float(th["tmt1_k"]), float(th["tmt2_k"])
    throttled = out.level > 0.5
    onset = np.flatnonzero(throttled & ~np.r_[False, throttled[:-1]])
    release = np.flatnonzero(~throttled & np.r_[False, throttled[:-1]])
    unthr, thr = met["unthrottled_mean_mb_s"], met["throttled_mean_mb_s"]
    summary = {
        "drive": cfg["drive"].get("name", "custom"),
        "cooling": th["cooling"],
        "ambient_c": float(th["ambient_c"]),
        "tmt1_k": tmt1_k,
        "tmt2_k": tmt2_k,
        "policy": cfg["drive"]["power"]["policy"],
        "duration_s": float(th["duration_s"]),
        "dt_s": float(th["dt_s"]),
        "max_composite_k": met["max_composite_k"],
        "max_composite_c": met["max_composite_k"] - ZERO_C_IN_K,
        "max_nand_c": met["max_nand_k"] - ZERO_C_IN_K,
        "smart": hctm.smart_log(final.smart),
        "unthrottled_mean_mb_s": unthr,
        "throttled_mean_mb_s": thr,
        "throttle_drop_mb_s": unthr - thr if np.isfinite(thr) else None,
        "throttle_onsets_s": (out.time_s[onset] - float(th["dt_s"])).tolist(),
        "release_composite_c": (out.composite_k[release] - ZERO_C_IN_K).tolist(),
        "written_gb": met["written_gb"],
        "mean_mb_s": met["mean_mb_s"],
        "energy_j": met["energy_j"],
        "mean_power_w": met["mean_power_w"],
        "peak_power_w": float(out.power_w.max()),
        "mb_per_j": met["mb_per_j"],
        "time_to_max_s": float(out.time_s[int(np.argmax(out.composite_k))]),
        **_commands(tmt1_k, tmt2_k),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    thermal_report.write_csv(out, out_dir / "thermal.csv", summary["dt_s"])
    title = (f'{summary["drive"]} — {summary["cooling"]}, ambient {summary["ambient_c"]:.0f} °C, '
             f'{summary["policy"]}')
    thermal_report.plot(out, out_dir / "thermal.png", title, tmt1_k, tmt2_k, summary["dt_s"])
    return summary


def run_tmt_optimize(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Grid of integer TMT pairs vs Optax on the relaxed model, both judged in the exact model."""
    from ssdx.progress import bar as progress_bar

    dtype = io.dtype(cfg.get("precision", "float32"))
    opt = dict(cfg.get("optimize") or {})
    for key in ("temp_limit_k", "tmt1_range", "tmt2_range", "init", "steps", "learning_rate", "sharpness"):
        if key not in opt:
            raise params.ConfigError(f"optimize.{key}", None, "the field is required (see conf/experiment/"
                                     "tmt_optimize.yaml)")
    limit = float(opt["temp_limit_k"])
    if not 250.0 <= limit <= 420.0:
        raise params.ConfigError("optimize.temp_limit_k", limit, "Kelvin, 250 <= x <= 420")
    for key in ("tmt1_range", "tmt2_range", "init"):
        v = opt[key]
        pair = isinstance(v, list | tuple) and len(v) == 2
        if not (pair and (key == "init" or float(v[0]) <= float(v[1]))):
            raise params.ConfigError(f"optimize.{key}", v, "a pair [low, high] in Kelvin")
    trees, n_steps = _single(cfg, dtype)
    t0 = time.perf_counter()
    grid = tmt.grid(trees, n_steps, limit, tuple(int(x) for x in opt["tmt1_range"]),
                    tuple(int(x) for x in opt["tmt2_range"]))
    t_grid = time.perf_counter() - t0
    bar = progress_bar(int(opt["steps"]), "optax", unit="step", enabled=progress)
    t0 = time.perf_counter()
    res = tmt.optimize(trees, n_steps, limit, init=tuple(float(x) for x in opt["init"]),
                       steps=int(opt["steps"]), learning_rate=float(opt["learning_rate"]),
                       sharpness=float(opt["sharpness"]), progress=lambda _i: bar.update(1))
    bar.close()
    t_opt = time.perf_counter() - t0
    th = cfg["thermal"]
    summary = {
        "drive": cfg["drive"].get("name", "custom"),
        "cooling": th["cooling"],
        "ambient_c": float(th["ambient_c"]),
        "policy": cfg["drive"]["power"]["policy"],
        "duration_s": float(th["duration_s"]),
        "objective_name": "written_gb (host GB written in the window)",
        "temp_limit_k": limit,
        "tmt1_k": res["tmt1_k"],
        "tmt2_k": res["tmt2_k"],
        "objective": res["objective"],
        "max_composite_k": res["max_composite_k"],
        "grid_best_objective": grid["objective"],
        "grid_best_tmt_k": [grid["tmt1_k"], grid["tmt2_k"]],
        "objective_ratio": res["objective"] / grid["objective"],
        "evaluations": res["evaluations"],
        "relaxed_evaluations": res["relaxed_evaluations"],
        "exact_evaluations": res["exact_evaluations"],
        "grid_evaluations": grid["evaluations"],
        "unthrottled_written_gb": res["unthrottled_written_gb"],
        "relaxed_tmt_k": res["relaxed_tmt_k"],
        "sharpness_k": float(opt["sharpness"]),
        "grid_wall_s": t_grid,
        "optimizer_wall_s": t_opt,
        "path": res["path"],
        **_commands(res["tmt1_k"], res["tmt2_k"]),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    thermal_report.plot_tmt_landscape(grid, res, limit, out_dir / "tmt_landscape.png")
    return summary


def run_fit_rc(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Fit the drive's RC network to a measured series (``ssdx.models.thermal.fit_rc``).

    ``fit.series``: a JSON-lines file of ``nvme smart-log -o json`` snapshots or a CSV
    (``ssdx.models.thermal.nvme.read_series``) with the write throughput; ``fit.fields``: RC fields to fit
    (the rest
    stay at the cooling preset of ``thermal``).  Writes ``summary.json`` (fitted and starting values,
    RMSE, iterations, the ``thermal.rc.*`` overrides that apply the fit) and ``fit_rc.png`` (measured,
    preset and fitted composite temperature, and the residual).
    """
    from ssdx.models.thermal import fit_rc, nvme
    dtype = io.dtype(cfg.get("precision", "float32"))
    fit_cfg = dict(cfg.get("fit") or {})
    path = existing_file(fit_cfg.get("series"), "fit.series", "a path to a JSON-lines smart-log capture "
                         "or a CSV series (time_s, composite_k or temp_c, throughput_mb_s)")
    fields = tuple(fit_cfg.get("fields") or fit_rc.DEFAULT_FIELDS)
    bad = sorted(set(fields) - set(fit_rc.RC_FIELDS))
    if bad:
        raise params.ConfigError("fit.fields", list(fields), f"each one of {list(fit_rc.RC_FIELDS)}")
    try:
        series = nvme.read_series(path, fit_cfg.get("format"))
    except ValueError as e:
        raise params.ConfigError("fit.series", path, str(e)) from None
    dt = float(cfg["thermal"]["dt_s"])
    duration = float(series.time_s[-1])
    if duration < 10 * dt:
        raise params.ConfigError("fit.series", path, f"needs at least 10 steps of thermal.dt_s = {dt:g} s; "
                                 f"it spans {duration:g} s")
    thermal_cfg = {**cfg["thermal"], "duration_s": dt * (int(np.floor(duration / dt + 1e-9)) + 1)}
    (drive, _, power, th), _ = _single({**cfg, "thermal": thermal_cfg}, dtype)
    res = fit_rc.fit_series(series, drive, power, th, fields=fields)
    comp, thr, counters = fit_rc.resample(series, dt)
    frac = fit_rc.ctrl_fraction_from_counters(power, counters, dt) if counters else 1.0
    p = fit_rc.powers_from_throughput(drive, power, thr, ctrl_fraction=frac)
    p0 = np.asarray([float(np.asarray(power.idle_w)), 0.0])
    before = np.asarray(fit_rc.composite_trace(th, p, power.sensor_ctrl_weight, p0))
    after = np.asarray(fit_rc.composite_trace(res.thermal, p, power.sensor_ctrl_weight, p0))
    overrides = " ".join(f"thermal.rc.{k}={v:.6g}" for k, v in res.params.items())
    summary = {
        "series": str(path),
        "n_samples": int(len(series.time_s)),
        "n_steps": int(len(comp)),
        "dt_s": dt,
        "drive": cfg["drive"].get("name", "custom"),
        "cooling": cfg["thermal"]["cooling"],
        "fields": list(fields),
        "fitted": res.params,
        "initial": res.initial,
        "ratio_to_preset": {k: res.params[k] / res.initial[k] for k in fields},
        "rmse_k": res.rmse_k,
        "preset_rmse_k": float(np.sqrt(np.mean((before - comp) ** 2))),
        "iterations": res.iterations,
        "adam_iterations": res.adam_iterations,
        "lbfgs_iterations": res.lbfgs_iterations,
        "overrides": overrides,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    thermal_report.plot_fit_rc(np.arange(len(comp)) * dt, comp, before, after, summary,
                               out_dir / "fit_rc.png")
    return summary
