"""The thermal jobs behind the CLI: one coupled run (``task=thermal``) and TMT optimisation.

Each takes a composed config as plain containers and an output directory, writes its files there
and returns the summary it wrote (see ``ssdx.cli.main`` for the contract).
"""

from __future__ import annotations

import math
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
from ssdx.models.fluid.fit_job import MAX_OPTIMIZER_STEPS
from ssdx.models.thermal import coupled, hctm, tmt
from ssdx.models.thermal import params as thermal_params
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



def _optimize_number(opt: Mapping[str, Any], key: str) -> float:
    v = opt[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise params.ConfigError(f"optimize.{key}", v, "a finite number")
    return float(v)


def optimize_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The checked ``optimize.*`` settings of ``experiment=tmt_optimize``; :class:`ssdx.params.ConfigError`
    names the field, the value and the rule, before anything is computed.

    A threshold the optimiser or the grid may set must lie in the drive's ``[MNTMT, MXTMT]``
    (``power.mntmt_k``, ``power.mxtmt_k``; NVMe HCTM: outside it the drive answers Invalid Field in
    Command), with TMT2 > TMT1.  ``steps``: 1 to :data:`MAX_OPTIMIZER_STEPS`.  ``learning_rate`` (K per
    Adam step) and ``sharpness`` (K, width of the logistic relaxation) are positive and at most the width
    ``MXTMT - MNTMT`` of that window: a step or a blur wider than every threshold the drive accepts
    carries no information about where in the window the optimum is.
    """
    opt = dict(cfg.get("optimize") or {})
    for key in ("temp_limit_k", "tmt1_range", "tmt2_range", "init", "steps", "learning_rate", "sharpness"):
        if key not in opt:
            raise params.ConfigError(f"optimize.{key}", None, "the field is required (see conf/experiment/"
                                     "tmt_optimize.yaml)")
    limit = _optimize_number(opt, "temp_limit_k")
    if not 250.0 <= limit <= 420.0:
        raise params.ConfigError("optimize.temp_limit_k", limit, "Kelvin, 250 <= x <= 420")
    # the drive has a power block: run_tmt_optimize builds the run first (_single: api.thermal_columns
    # refuses a drive without one), and thermal_params.columns refuses a missing MNTMT or MXTMT
    pw = thermal_params.columns(cfg["drive"]["power"], cfg["thermal"])
    lo, hi = float(pw["power.mntmt_k"][0]), float(pw["power.mxtmt_k"][0])
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        raise params.ConfigError("power.mxtmt_k", hi, f"MXTMT must be above MNTMT (power.mntmt_k = {lo:g})")
    window = f"MNTMT = {lo:g} K <= x <= MXTMT = {hi:g} K (power.mntmt_k, power.mxtmt_k; NVMe HCTM)"
    pairs: dict[str, tuple[float, float]] = {}
    for key in ("tmt1_range", "tmt2_range", "init"):
        v = opt[key]
        field = f"optimize.{key}"
        ok = isinstance(v, list | tuple) and len(v) == 2 and all(
            not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(float(x)) for x in v)
        if not ok:
            raise params.ConfigError(field, v, "a pair [low, high] of numbers in Kelvin")
        a, b = float(v[0]), float(v[1])
        if key != "init" and not (a.is_integer() and b.is_integer() and a <= b):
            raise params.ConfigError(field, v, "a pair [low, high] of whole Kelvin, low <= high (the grid's "
                                     "integer thresholds, inclusive)")
        if not (lo <= a <= hi and lo <= b <= hi):
            raise params.ConfigError(field, v, f"each value in Kelvin, {window}")
        if key == "init" and not b > a:
            raise params.ConfigError(field, v, "[TMT1, TMT2] in Kelvin with TMT2 > TMT1 (NVMe HCTM)")
        pairs[key] = (a, b)
    if not pairs["tmt2_range"][1] > pairs["tmt1_range"][0]:
        raise params.ConfigError("optimize.tmt2_range", opt["tmt2_range"], "must reach above the low end "
                                 f"of optimize.tmt1_range ({opt['tmt1_range']}): the grid keeps TMT2 > TMT1")
    steps = opt["steps"]
    whole = not isinstance(steps, bool) and isinstance(steps, int | np.integer)
    if not (whole and 1 <= steps <= MAX_OPTIMIZER_STEPS):
        raise params.ConfigError("optimize.steps", steps, f"integer 1 <= x <= {MAX_OPTIMIZER_STEPS} (Adam "
                                 "steps; the cap of fit.adam_steps)")
    out = {"temp_limit_k": limit, "tmt1_range": tuple(int(x) for x in pairs["tmt1_range"]),
           "tmt2_range": tuple(int(x) for x in pairs["tmt2_range"]), "init": pairs["init"],
           "steps": int(steps)}
    for key, what in (("learning_rate", "K per Adam step"), ("sharpness", "K, the width of the logistic "
                                                                          "relaxation of the thresholds")):
        x = _optimize_number(opt, key)
        if not 0.0 < x <= hi - lo:
            raise params.ConfigError(f"optimize.{key}", opt[key], f"{what}: 0 < x <= MXTMT - MNTMT = "
                                     f"{hi - lo:g} K (power.mxtmt_k - power.mntmt_k)")
        out[key] = x
    return out


def run_tmt_optimize(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Grid of integer TMT pairs vs Optax on the relaxed model, both judged in the exact model."""
    from ssdx.progress import bar as progress_bar

    dtype = io.dtype(cfg.get("precision", "float32"))
    trees, n_steps = _single(cfg, dtype)  # checks the drive, power and thermal blocks; computes nothing
    o = optimize_settings(cfg)
    limit = o["temp_limit_k"]
    t0 = time.perf_counter()
    grid = tmt.grid(trees, n_steps, limit, o["tmt1_range"], o["tmt2_range"])
    t_grid = time.perf_counter() - t0
    bar = progress_bar(o["steps"], "optax", unit="step", enabled=progress)
    t0 = time.perf_counter()
    res = tmt.optimize(trees, n_steps, limit, init=o["init"], steps=o["steps"],
                       learning_rate=o["learning_rate"], sharpness=o["sharpness"],
                       progress=lambda _i: bar.update(1))
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
        "sharpness_k": o["sharpness"],
        "grid_wall_s": t_grid,
        "optimizer_wall_s": t_opt,
        "path": res["path"],
        **_commands(res["tmt1_k"], res["tmt2_k"]),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    thermal_report.plot_tmt_landscape(grid, res, limit, out_dir / "tmt_landscape.png")
    return summary


def _check_span(series: Any, path: str, dt: float) -> None:
    """Refuse a series the model cannot run over: the fit simulates it on the ``thermal.dt_s`` grid as one
    thermal run, so it may span at most ``thermal.duration_s``'s bounds (``ssdx.models.thermal.params``:
    :data:`~ssdx.models.thermal.params.MAX_STEPS` steps, the field's largest value).  Names the line of
    the first sample past that (usually after a gap in the capture)."""
    most = min(thermal_params.MAX_STEPS * dt, thermal_params.RANGES["thermal.duration_s"].hi)
    t = np.asarray(series.time_s, float)
    steps = np.floor(t / dt + 1e-9) + 1  # the steps a run to each sample takes (fit_rc.resample)
    past = np.flatnonzero(steps * dt > most)
    if not len(past):
        return
    i = int(past[0])
    where = f"line {int(series.line[i])}" if series.line is not None else f"sample {i + 1}"
    gap = float(t[i] - t[i - 1]) if i else float(t[i])
    raise params.ConfigError(
        "fit.series", path, f"{path}, {where}: the series reaches {t[i]:.6g} s after its first sample "
        f"({gap:.6g} s after the previous one: a gap in the capture?); a fit runs the model over the whole "
        f"series, at most {thermal_params.MAX_STEPS} steps of thermal.dt_s = {dt:g} s and "
        f"{thermal_params.RANGES['thermal.duration_s'].hi:g} s: split the capture at the gap")


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
    fmt = fit_cfg.get("format")
    if fmt not in (None, "jsonl", "csv"):
        raise params.ConfigError("fit.format", fmt, "one of ['jsonl', 'csv'], or null: from the file name "
                                 "or its first character")
    path = existing_file(fit_cfg.get("series"), "fit.series", "a path to a JSON-lines smart-log capture "
                         "or a CSV series (time_s, composite_k or temp_c, throughput_mb_s)")
    fields = tuple(fit_cfg.get("fields") or fit_rc.DEFAULT_FIELDS)
    bad = sorted(set(fields) - set(fit_rc.RC_FIELDS))
    if bad:
        raise params.ConfigError("fit.fields", list(fields), f"each one of {list(fit_rc.RC_FIELDS)}")
    try:
        series = nvme.read_series(path, fmt)
    except ValueError as e:
        raise params.ConfigError("fit.series", path, str(e)) from None
    if series.throughput_mb_s is None:
        raise params.ConfigError("fit.series", path, "needs a throughput column (one of "
                                 f"{list(nvme.THROUGHPUT_KEYS)}): the fit derives the node powers from it")
    dt = float(cfg["thermal"]["dt_s"])
    duration = float(series.time_s[-1])
    if duration < 10 * dt:
        raise params.ConfigError("fit.series", path, f"needs at least 10 steps of thermal.dt_s = {dt:g} s; "
                                 f"it spans {duration:g} s")
    _check_span(series, path, dt)
    thermal_cfg = {**cfg["thermal"], "duration_s": dt * (int(np.floor(duration / dt + 1e-9)) + 1)}
    (drive, _, power, th), _ = _single({**cfg, "thermal": thermal_cfg}, dtype)
    try:
        res = fit_rc.fit_series(series, drive, power, th, fields=fields)
    except ValueError as e:  # a series the fit cannot use (fit_rc.fit's checks)
        raise params.ConfigError("fit.series", path, str(e)) from None
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
