"""The job behind ``ssdx experiment=fit_fill``: fit a drive to its measured fill curve.

``run_fit_fill(cfg, out_dir)`` reads ``fit.curve`` (``ssdx.workloads.fill_curve``), fits the fluid
model's free parameters under each cache-size rule of ``fit.rules`` (``ssdx.models.fluid.fit``),
starting from the composed drive (``drive=...`` and any ``drive.*``/``nand.*`` overrides: the known
hardware), keeps the best rule, and writes into ``out_dir``.  The fill runs under the composed workload
(``workload=seq_fill``), or under the fio write job that measured the curve (``workload.fio``, as
``ssdx.models.engine.jobs.with_fio_fill`` reads it: its pattern, block size and depth set the host ceiling):

* ``summary.json`` — ``phases`` (the fitted drive's fill, as ``experiment=aldrin_pro_fill`` writes
  them), ``measured_phases`` (plateaus of the measured curve), ``rmse_mb_s``, ``residual_regions``
  (GB ranges where the curve leaves the model), ``poor_fit``/``warning``, ``fitted`` values with
  ``std_error_pct``, every rule's result under ``rules``, ``overrides`` (``key=value`` strings that,
  appended to ``ssdx experiment=aldrin_pro_fill drive=<base drive>``, reproduce the fitted fill;
  ``command`` is that line), ``preset_path`` and ``nand_preset_path``;
* ``conf/drive/NAME.yaml`` and ``conf/nand/NAME.yaml`` — the fitted drive as presets (``NAME`` =
  ``fit.name``, default ``<base drive>_fit``).  A drive preset carries no NAND timings (``drive.nand``
  names a catalog type, and Hydra refuses a drive preset that overrides the ``nand`` group from its
  defaults list), so the fitted program times go into the companion NAND preset; use both:
  ``ssdx experiment=aldrin_pro_fill hydra.searchpath=[file://OUT/conf] drive=NAME nand=NAME``;
* ``fit_curve.png`` (``ssdx.models.fluid.fit_plots``) and ``fit_curve.csv`` (gb, measured, fitted, residual).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from omegaconf import OmegaConf

from ssdx import params, presets
from ssdx.core import io
from ssdx.core.fields import existing_file
from ssdx.models.engine.jobs import with_fio_fill
from ssdx.models.fluid import bounds as fill_bounds
from ssdx.models.fluid import fit as fit_fill
from ssdx.models.fluid import fit_choice
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid import plots as fill_report
from ssdx.models.fluid.phases import visible
from ssdx.workloads import fill_curve

#: The experiment the ``overrides`` are written for (sequential fill, ``workload=seq_fill``).
REPRODUCE = "ssdx experiment=aldrin_pro_fill"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _int(fit_cfg: Mapping[str, Any], key: str, lo: int, hi: int, default: int) -> int:
    v = fit_cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo <= int(v) <= hi:
        raise params.ConfigError(f"fit.{key}", v, f"integer {lo} <= x <= {hi}")
    return int(v)


def _float(fit_cfg: Mapping[str, Any], key: str, lo: float, hi: float, default: float) -> float:
    v = fit_cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not lo < float(v) <= hi:
        raise params.ConfigError(f"fit.{key}", v, f"a number {lo:g} < x <= {hi:g}")
    return float(v)


#: most optimiser steps a fit may ask for (``fit.adam_steps``, ``fit.lbfgs_steps``; also the thermal
#: optimiser's ``optimize.steps``): each step is one run of the relaxed model
MAX_OPTIMIZER_STEPS = 100_000


def fit_settings(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The checked ``fit.*`` settings (``ssdx.models.fluid.conf.FitFillConf`` documents them)."""
    f = dict(cfg.get("fit") or {})
    path = existing_file(f.get("curve"), "fit.curve", "a measured fill curve (csv 'gb,mb_s', a fio "
                         "write_bw_log, or one MB/s value per second)")
    fmt = f.get("format") or "auto"
    if fmt not in fill_curve.FORMATS:
        raise params.ConfigError("fit.format", fmt, f"must be one of {list(fill_curve.FORMATS)}")
    rules = list(f.get("rules") or fit_fill.BASE_RULES)
    bad = [r for r in rules if r not in fit_fill.RULES]
    if bad or len(set(rules)) != len(rules):
        raise params.ConfigError("fit.rules", rules, f"distinct names from {list(fit_fill.RULES)}")
    name = f.get("name")
    if name is not None and not _NAME.match(str(name)):
        raise params.ConfigError("fit.name", name, "a preset name: letters, digits, '_', '-', '.'")
    return {
        "curve": str(path), "format": fmt, "rules": rules, "name": name,
        "n_steps": io.scan_steps(f.get("n_steps", 512), "fit.n_steps"),
        "adam_steps": _int(f, "adam_steps", 0, MAX_OPTIMIZER_STEPS, 200),
        "lbfgs_steps": _int(f, "lbfgs_steps", 0, MAX_OPTIMIZER_STEPS, 100),
        "grid_points": _int(f, "grid_points", 0, 4096, 32),
        "max_samples": _int(f, "max_samples", fill_curve.MIN_SAMPLES, 10_000_000, 20_000),
        "learning_rate": _float(f, "learning_rate", 0.0, 10.0, 0.05),
        "rule_tolerance": _float(f, "rule_tolerance", -1e-12, 10.0, 0.02),
        "poor_fit_fraction": _float(f, "poor_fit_fraction", 0.0, 10.0, 0.1),
        "residual_fraction": _float(f, "residual_fraction", 0.0, 10.0, 0.05),
        "other_die_counts": _bool(f, "other_die_counts"),
        "paced_folding": _bool(f, "paced_folding"),
    }


def _bool(fit_cfg: Mapping[str, Any], key: str, default: bool = True) -> bool:
    v = fit_cfg.get(key, default)
    if not isinstance(v, bool | np.bool_):
        raise params.ConfigError(f"fit.{key}", v, "true or false")
    return bool(v)


def _fmt(v: Any) -> str:
    """A value as a Hydra command-line override prints it."""
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, float | np.floating):
        return f"{float(v):.7g}"
    return str(v)


def _differences(cfg_node: Mapping[str, Any], preset: Mapping[str, Any], prefix: str,
                 fields: tuple[str, ...]) -> list[str]:
    return [f"{prefix}.{k}={_fmt(cfg_node[k])}" for k in fields
            if k in cfg_node and (k not in preset or preset[k] != cfg_node[k])]


def fitted_config(cfg: Mapping[str, Any], fit: fit_fill.RuleFit) -> tuple[dict, dict]:
    """The drive and NAND config mappings of the fit: the composed ones with the fitted values, the
    rule's fixed values and its pSLC mode."""
    drive = {k: v for k, v in dict(cfg["drive"]).items()}
    nand = {k: v for k, v in dict(cfg.get("nand") or {}).items()}
    for key, value in {**fit.fixed, **fit.values, fit_fill.MODE: fit.slc_mode}.items():
        if key in (fit_fill.THROUGH, fit_fill.PACED):
            value = bool(value)
        group, field = key.split(".", 1)
        (drive if group == "drive" else nand)[field] = value
    return drive, nand


def overrides(cfg: Mapping[str, Any], drive: Mapping[str, Any], nand: Mapping[str, Any]) -> list[str]:
    """``key=value`` strings that, after ``ssdx experiment=aldrin_pro_fill drive=<base drive>``, give
    ``drive``/``nand`` and the composed workload: every drive field that differs from the base preset
    (all of them when the preset is not one of the package's), every NAND override that is set, and
    every workload field that differs from ``workload=seq_fill``."""
    base = str(cfg["drive"].get("name", ""))
    try:
        preset = presets.drive(base)
    except KeyError:
        preset = {}
    fields = tuple(params.DRIVE_FIELDS)
    out = _differences(drive, preset, "drive", fields)
    out += [f"nand.{k}={_fmt(v)}" for k, v in nand.items() if k != "defaults" and v is not None]
    out += _differences(cfg["workload"], presets.workload("seq_fill"), "workload", params.WORKLOAD_FIELDS)
    return out


def _yaml(node: Mapping[str, Any]) -> str:
    return OmegaConf.to_yaml(OmegaConf.create(dict(node)))


def write_presets(conf_dir: Path, name: str, drive: Mapping[str, Any], nand: Mapping[str, Any],
                  header: str) -> tuple[Path, Path]:
    """``conf_dir/drive/NAME.yaml`` (every drive field, ``defaults: [base, _self_]``) and its companion
    ``conf_dir/nand/NAME.yaml`` (the NAND overrides, on ``catalog``), each under ``header``."""
    d = {k: drive[k] for k in ("nand", *[f for f in params.DRIVE_FIELDS if f != "nand"]) if k in drive}
    if "power" in drive:
        d["power"] = dict(drive["power"])
    body = {"defaults": ["base", "_self_"], "name": name, **d}
    n = {"defaults": ["catalog", "_self_"], "name": nand.get("name"),
         **{k: nand.get(k) for k in params.NAND_OVERRIDES}}
    drive_path = conf_dir / "drive" / f"{name}.yaml"
    nand_path = conf_dir / "nand" / f"{name}.yaml"
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    io.replace_atomic(drive_path, lambda tmp: tmp.write_text(comment + _yaml(body)))
    nand_comment = comment + f"# Companion NAND preset of drive/{name}.yaml: the fitted program times.\n"
    io.replace_atomic(nand_path, lambda tmp: tmp.write_text(nand_comment + _yaml(n)))
    return drive_path, nand_path


def notes(fit: fit_fill.RuleFit, drive: Any, workload: Any) -> list[str]:
    """What the fit cannot tell from the curve: rates held at the host or bus ceiling (only bounded),
    undetermined parameters (standard error none or > 100 %), parameters at a bound, and the split of a
    hybrid cache (``ssdx.models.fluid.fit``)."""
    out = []
    r = fluid.rates(drive, workload)
    ceiling = min(float(r.host), float(drive.bus_bytes_per_s))
    for key, rate, what in ((fit_fill.T_SLC, r.slc, "pSLC"), (fit_fill.T_PROG, r.native, "direct-native")):
        if key in fit.values and ceiling <= float(rate) * (1 + 1e-3):
            out.append(f"the {what} plateau ({float(rate) / 1e6:.0f} MB/s) is the host link's or the NAND "
                       f"bus's ceiling, not the dies': {key} is only bounded above (kept at the plateau "
                       "estimate)")
    for key, se in fit.std_error_pct.items():
        if se is None or se > 100.0:
            why = "none: the curve does not reach where it acts" if se is None else f"{se:.3g} %"
            out.append(f"{key} = {fit.values[key]:.7g} is not determined by this curve (standard error "
                       f"{why})")
    for key in fit.at_bound:
        lo, hi = fit.bounds[key]
        out.append(f"{key} = {fit.values[key]:.7g} is at its bound [{lo:.4g}, {hi:.4g}]")
    if fit.rule.removesuffix(fit_fill.PACED_SUFFIX) == "hybrid":
        out.append(f"one fill determines the hybrid cache, {fit_fill.STATIC} + min(free user space / bits "
                   f"per cell, {fit_fill.CAP}), not its split between the two (ssdx.models.fluid.fit)")
    return out


@dataclasses.dataclass(frozen=True)
class Tried:
    """A fitted rule on one base drive: its judgement, the config it was fitted on and its fitter."""

    candidate: fit_choice.Candidate
    cfg: Mapping[str, Any]
    fitter: fit_fill.Fitter


def _fit_rules(cfg: Mapping[str, Any], drive: Any, workload: Any, curve: Any, s: Mapping[str, Any],
               measured_phases: list[dict[str, Any]], suffix: str) -> tuple[dict[str, Tried], dict[str, str]]:
    """Fit every rule of ``fit.rules`` on ``drive`` and judge it (``fit_choice.assess``); the fits by
    label (rule name and ``suffix``) and the rules skipped with the reason."""
    fitter = fit_fill.Fitter(curve.gb_lo, curve.gb_hi, curve.mb_s, drive, workload, s["n_steps"],
                             measured_phases)
    span = float(curve.gb_hi[-1] - curve.gb_lo[0])
    tried: dict[str, Tried] = {}
    skipped: dict[str, str] = {}
    for rule in s["rules"]:
        why = fit_fill.rule_missing(rule)
        if why is None:
            try:
                fit = fitter.fit(fit_fill.RULES[rule], adam_steps=s["adam_steps"],
                                 learning_rate=s["learning_rate"], lbfgs_steps=s["lbfgs_steps"],
                                 grid_points=s["grid_points"])
            except ValueError as e:  # no feasible range for one of its parameters
                why = str(e)
            else:
                label = rule + suffix
                cand = fit_choice.assess(fitter, fit, label, len(measured_phases), span)
                tried[label] = Tried(cand, cfg, fitter)
        if why is not None:
            skipped[rule] = why
    return tried, skipped


def run_fit_fill(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Fit the composed drive to ``fit.curve`` (module docstring); returns the summary it wrote."""
    s = fit_settings(cfg)
    dtype = io.dtype(cfg.get("precision", "float32"))
    try:
        curve = fill_curve.read(s["curve"], s["format"]).merged(s["max_samples"])
    except fill_curve.CurveError as e:
        raise params.ConfigError("fit.curve", s["curve"], f"unreadable fill curve: {e}") from None
    cfg, jobs = with_fio_fill(cfg)  # the fio job that measured the curve, when given (workload.fio)
    cols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    drive, workload = params.build(cols, dtype=dtype)
    drive, workload = params.index(drive, 0), params.index(workload, 0)
    total_gb = float(fluid.total_bytes(drive, workload)) / 1e9
    if curve.gb_hi[-1] > total_gb * 1.02:
        raise params.ConfigError(
            "fit.curve", s["curve"], f"the curve runs to {curve.gb_hi[-1]:.1f} GB, more than the "
            f"{total_gb:.1f} GB this drive's fill writes (drive.user_capacity_gb, workload.prefill_fraction, "
            "workload.fill_fraction)")
    measured_phases = fit_fill.segment(curve.gb_lo, curve.gb_hi, curve.mb_s, curve.time_s)
    mean = float(np.mean(curve.mb_s))
    floor = fit_fill.RMSE_FLOOR * mean
    tried, skipped = _fit_rules(cfg, drive, workload, curve, s, measured_phases, "")
    if not tried:
        raise params.ConfigError("fit.rules", s["rules"], f"no rule could be fitted: {skipped}")
    fitter = next(iter(tried.values())).fitter
    chosen, tier, runner = fit_choice.choose([t.candidate for t in tried.values()], s["rule_tolerance"],
                                             floor, mean)
    paced = [v for r in s["rules"] if (v := fit_fill.paced_variant(r)) is not None and v not in s["rules"]]
    if paced and s["paced_folding"] and not (chosen.physical and chosen.phase_match):
        # no behaviour is physical with the curve's phases: fold from the cache's end on
        s = {**s, "rules": [*s["rules"], *paced]}
        more, more_skipped = _fit_rules(cfg, drive, workload, curve, {**s, "rules": paced}, measured_phases,
                                        "")
        tried.update(more)
        skipped.update(more_skipped)
        chosen, tier, runner = fit_choice.choose([t.candidate for t in tried.values()],
                                                 s["rule_tolerance"], floor, mean)
    else:
        paced = []
    fits = {t.candidate.fit.rule: t.candidate.fit for t in tried.values()}
    tried_dies: list[int] = []
    if not chosen.physical and s["other_die_counts"]:  # no behaviour explains it: other die counts
        bits = int(round(float(drive.nand.bits_per_cell)))
        for alt in fit_choice.alternative_geometries(cfg["drive"], bits):
            cfg_alt = {**dict(cfg), "drive": alt}
            a_cols = params.columns_from_config(alt, cfg["workload"], cfg.get("nand"))
            a_drive, a_workload = (params.index(t, 0) for t in params.build(a_cols, dtype=dtype))
            n = int(alt["channels"]) * int(alt["dies_per_channel"])
            tried_dies.append(n)
            more, _ = _fit_rules(cfg_alt, a_drive, a_workload, curve, s, measured_phases, f"@{n}dies")
            tried.update(more)
        chosen, tier, runner = fit_choice.choose([t.candidate for t in tried.values()],
                                                 s["rule_tolerance"], floor, mean)
    cfg = tried[chosen.label].cfg
    best = chosen.fit

    # The fitted drive through the same path as `experiment=aldrin_pro_fill` with the overrides.
    drive_cfg, nand_cfg = fitted_config(cfg, best)
    f_cols = params.columns_from_config(drive_cfg, cfg["workload"], nand_cfg)
    f_drive, f_workload = (params.index(t, 0) for t in params.build(f_cols, dtype))
    sim = jax.jit(fluid.simulate, static_argnums=2)
    out = jax.tree_util.tree_map(np.asarray, sim(f_drive, f_workload, s["n_steps"]))
    regimes = fill_report.phases(out, f_drive)
    phases = visible(regimes, float(curve.gb_hi[-1] - curve.gb_lo[0]))
    fitted = fitter.speed(f_drive)
    residual = fitted - curve.mb_s
    rmse = float(np.sqrt(np.mean(residual ** 2)))
    poor = rmse > s["poor_fit_fraction"] * mean
    regions = fit_fill.residual_regions(curve.gb_lo, curve.gb_hi, curve.mb_s, residual,
                                        s["residual_fraction"] * mean)
    ov = overrides(cfg, drive_cfg, nand_cfg)
    base = str(cfg["drive"].get("name", "custom"))
    name = s["name"] or f"{base}_fit"
    warnings = []
    if poor:
        warnings.append(f"poor fit: RMSE {rmse:.1f} MB/s is {100 * rmse / mean:.1f} % of the mean measured "
                        f"speed (threshold {100 * s['poor_fit_fraction']:g} %); see residual_regions and "
                        "fit_curve.png")
    if not chosen.physical:
        warnings.append("not physical: " + "; ".join(fill_bounds.outside(chosen.checks))
                        + (f" (other die counts tried: {tried_dies})" if tried_dies else ""))
    if not chosen.phase_match:
        warnings.append(f"the fitted drive shows {len(phases)} phases where the curve shows "
                        f"{len(measured_phases)}")
    warning = "; ".join(warnings) or None
    conf = (out_dir / "conf").resolve()
    preset_command = f"{REPRODUCE} hydra.searchpath=[file://{conf}] drive={name} nand={name}"
    header = "\n".join([
        f"Fitted by `ssdx experiment=fit_fill` (ssdx.models.fluid.fit) to the fill curve {curve.path}",
        f"({curve.format}, {len(curve)} samples), starting from the drive preset {base}: rule {best.rule}",
        f"(drive.slc_mode={best.slc_mode}), RMSE {rmse:.3g} MB/s = {100 * rmse / mean:.2g} % of the mean "
        f"measured speed ({mean:.0f} MB/s).",
        "Fitted: " + ", ".join(f"{k}={_fmt(v)}" for k, v in best.values.items()) + ".",
        f"A drive preset holds no NAND timings: the fitted program times are in nand/{name}.yaml",
        "beside this directory. Use both, e.g.",
        f"  {preset_command}",
    ])
    preset_path, nand_path = write_presets(conf, name, {**drive_cfg, "name": name}, nand_cfg, header)
    summary = {
        "curve": curve.path,
        "format": curve.format,
        "n_samples": len(curve),
        "curve_notes": curve.notes,
        "drive": base,
        "rule": best.rule,
        "policy": {"rule": best.rule, "slc_mode": best.slc_mode,
                   "fold_while_writing": bool(dict(best.fixed).get(fit_fill.THROUGH, 0.0)),
                   "paced_folding": bool(dict(best.fixed).get(fit_fill.PACED, 0.0)),
                   "two_speed_cache": fit_fill.FIRST_T in best.values, "dies": chosen.dies,
                   "chosen_as": tier},
        "physical": chosen.physical,
        "parameters": [{**c.as_dict(), "std_error_pct": best.std_error_pct.get(c.key)}
                       for c in chosen.checks],
        "runner_up": None if runner is None else runner.summary(),
        "candidates": [t.candidate.summary() for t in tried.values()],
        "dies_tried": tried_dies,
        "paced_rules_tried": paced,
        "slc_mode": best.slc_mode,
        "phases": phases,
        "model_regimes": regimes,
        "phase_count": {"measured": len(measured_phases), "fitted": len(phases),
                        "match": chosen.phase_match},
        "measured_phases": [{k: v for k, v in p.items() if k not in ("first", "last")}
                            for p in measured_phases],
        "rmse_mb_s": rmse,
        "rmse_fraction": rmse / mean,
        "mean_measured_mb_s": mean,
        "preset_rmse_mb_s": float(np.sqrt(np.mean((fitter.speed(drive) - curve.mb_s) ** 2))),
        "poor_fit": bool(poor),
        "poor_fit_fraction": s["poor_fit_fraction"],
        "warning": warning,
        "residual_regions": regions,
        "relative_noise": fit_fill.relative_noise(curve.mb_s),
        "fitted": best.values,
        "initial": best.initial,
        "std_error_pct": best.std_error_pct,
        "undetermined": [k for k, v in best.std_error_pct.items() if v is None or v > 100.0],
        "at_bound": best.at_bound,
        "notes": notes(best, f_drive, f_workload),
        "rules": {r: {"rmse_mb_s": f.rmse_mb_s, "initial_rmse_mb_s": f.initial_rmse_mb_s, "fitted": f.values,
                      "fixed": f.fixed, "bounds": {k: list(v) for k, v in f.bounds.items()},
                      "std_error_pct": f.std_error_pct, "at_bound": f.at_bound,
                      "adam_iterations": f.adam_iterations, "lbfgs_iterations": f.lbfgs_iterations}
                  for r, f in fits.items()},
        "skipped_rules": skipped,
        "rule_tolerance": s["rule_tolerance"],
        "overrides": ov,
        "command": " ".join([REPRODUCE, f"drive={base}", *ov]),
        "preset_name": name,
        "preset_path": str(preset_path),
        "nand_preset_path": str(nand_path),
        "preset_command": preset_command,
        "capacity_gb": float(fluid.capacity_bytes(f_drive)) / 1e9,
        "written_gb": float(out.written_bytes[-1]) / 1e9,
        "n_steps": s["n_steps"],
        "fio_job": None if jobs is None else jobs.name,
        "fio_ignored": [] if jobs is None else jobs.ignored,
    }
    io.write_json(out_dir / "summary.json", summary)
    np.savetxt(out_dir / "fit_curve.csv", np.c_[curve.gb, curve.mb_s, fitted, residual], delimiter=",",
               header="gb,measured_mb_s,fitted_mb_s,residual_mb_s", comments="")
    from ssdx.models.fluid import fit_plots as fit_report
    fit_report.plot_fit(curve.gb, curve.mb_s, fitted, phases, measured_phases, regions,
                        out_dir / "fit_curve.png",
                        title=f"{Path(curve.path).name} on {base}: {best.rule} rule, RMSE {rmse:.0f} MB/s")
    return summary
