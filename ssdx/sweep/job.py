"""The sweep job behind ``ssdx sweep=NAME``: a sweep definition's configurations (:func:`sweep_space`), run
by its model's registry line (``ssdx.core.registry``: a vmapped ``build``, a ``rows`` runner or a model's
own ``run``) on the host or generated on the device, reduced, reported and written (:func:`run_sweep`).

It takes plain mappings (a composed Hydra config converted to containers) and an output directory,
writes its files there, and returns the summary it wrote.  It names no model: what a model adds comes
from its registry line.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import params
from ssdx.core import io, registry
from ssdx.report.tables import best_per_group, format_table
from ssdx.sweep import outputs, runner, source, space

#: sweep keys of the chunked runner's models only (a model with its own runner, hybrid, has its own base)
CHUNKED_KEYS = ("drive", "workload", "on_invalid", "chunk_size", "only")


def check_model_keys(sweep: Mapping[str, Any], model: str, chunked: bool) -> None:
    """Refuse a key of a ``model`` sweep definition that the model would ignore (``rounds`` in a fluid
    sweep, ``n_steps`` in a thermal one: its steps are ``thermal.duration_s / dt_s``; ``on_invalid`` in a
    hybrid one), and a ``name`` that is not a string: :class:`ssdx.params.ConfigError`."""
    name = sweep.get("name")
    if name is not None and not isinstance(name, str):
        raise params.ConfigError("sweep.name", name, "must be a string (the sweep's name, in its outputs)")
    model_keys = registry.model_keys()
    for key, value in sweep.items():
        models = model_keys.get(key)
        if models is not None and model not in models:
            raise params.ConfigError(f"sweep.{key}", value, f"is read by {' and '.join(models)} sweeps only; "
                                     f"a {model} sweep would ignore it: remove it")
        if key in CHUNKED_KEYS and not chunked:
            raise params.ConfigError(f"sweep.{key}", value,
                                     f"a {model} sweep has its own runner, which does not read it: remove it")


def sweep_columns(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any]) -> tuple[dict, list[dict], int]:
    """Columns of every feasible configuration of a sweep (:func:`sweep_space`, rows kept by ``ok``)."""
    cols, ok, broken, n = sweep_space(sweep, base_cfg)
    return ({k: v[ok] for k, v in cols.items()} if not ok.all() else cols), broken, n


def sweep_base(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The one-row base columns of a sweep: the composed config, or the sweep's own ``drive``/``workload``
    presets (a fio job given as the workload, ``workload.fio``, wins over the sweep's workload preset),
    plus the ``gc.*`` or ``power.*``/``thermal.*`` columns its model needs."""
    from ssdx import presets

    spec = _vmap_model(sweep)
    base_cfg = dict(base_cfg)
    for group in ("drive", "workload"):  # a sweep may name its own base presets
        if group == "workload" and (base_cfg.get("workload") or {}).get("fio"):
            continue
        if sweep.get(group):
            try:
                base_cfg[group] = getattr(presets, group)(str(sweep[group]))
            except KeyError as e:
                raise params.ConfigError(f"sweep.{group}", sweep[group], str(e)) from None
    base = params.columns_from_config(base_cfg["drive"], base_cfg["workload"], base_cfg.get("nand"))
    if spec.base_columns:
        base.update(registry.resolve(spec.base_columns)(base_cfg))
    return base


def sweep_space(sweep: Mapping[str, Any],
                base_cfg: Mapping[str, Any]) -> tuple[dict, np.ndarray, list[dict], int]:
    """Columns of every configuration of a sweep: base config, ``base`` overrides, then the space.

    A sweep may name its own base presets (``drive: NAME``, ``workload: NAME``), which replace the
    composed config's groups; ``model: thermal`` adds the ``power.*`` and ``thermal.*`` columns.

    ``space`` is one mapping of blocks or a list of them (their configurations are concatenated,
    e.g. to sample a parameter only for the cache modes that use it).  Returns every configuration's
    columns (row ``i`` = configuration index ``i`` of the space), which are feasible (``ok``), for
    ``on_invalid: drop`` the rules that removed configurations (each with its count) and the number of
    configurations.
    """
    base = sweep_base(sweep, base_cfg)
    spec = _vmap_model(sweep)
    if spec.fields:
        registry.resolve(spec.fields)(sweep)
    cols = space.sweep_rows(base, sweep)
    if spec.complete:
        cols = registry.resolve(spec.complete)(cols, sweep, base_cfg)
    n = len(cols["drive.nand"])
    policy = on_invalid(sweep)
    checks = _checks(sweep)
    if policy == "error":
        for check in checks:
            check(cols)
        return cols, np.ones(n, bool), [], n
    ok = np.ones(n, bool)
    broken: list = []
    for check in checks:
        ok_c, broken_c = params.valid_rows(cols, check)
        ok, broken = ok & ok_c, broken + broken_c
    if not ok.any():
        for check in checks:
            check(cols)  # raises, naming the first breach
    return cols, ok, broken, n


def _checks(sweep: Mapping[str, Any]) -> list:
    """The validation functions a sweep's configurations must pass: ``params.validate`` and its model's."""
    return [params.validate] + [registry.resolve(c) for c in _vmap_model(sweep).checks]


def set_auto_ranges(keep: dict[str, Any] | None, sweep: Mapping[str, Any], base_cfg: Mapping[str, Any],
                    dtype, n_defined: int, rows_of) -> None:
    """Fix the ``auto`` histogram ranges of ``keep`` (in place) from the pilot sample
    (``reduce.pilot_ids`` of the ``n_defined`` configurations; ``rows_of(ids)`` their columns), its
    infeasible configurations left out and the feasible ones run through the sweep's model on the host.
    The host and the device path run the same configurations the same way, so they get the same edges."""
    from ssdx.sweep import reduce

    h = (keep or {}).get("histograms")
    if not h or not h["auto"] or h["pilot"] is not None:  # nothing to fix, or fixed already (device path)
        return
    cols = rows_of(reduce.pilot_ids(n_defined))
    ok = np.logical_and.reduce([params.valid_rows(cols, c)[0] for c in _checks(sweep)])
    cols = {k: np.asarray(v)[ok] for k, v in cols.items()}
    n = int(ok.sum())
    values: dict[str, np.ndarray] = {m: np.zeros(0) for m in h["auto"]}
    if n:
        table = _run_rows(sweep, base_cfg, cols, dtype, n, progress=False)[0]
        values = {m: (table.column(m).to_numpy() if m in table.column_names else cols[m]) for m in h["auto"]}
    reduce.set_auto_ranges(keep, values, n)


def _run_rows(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any], cols: Mapping[str, np.ndarray], dtype,
              chunk: int, **kw) -> tuple[Any, int | None]:
    """Run the configurations ``cols`` of a sweep of the chunked runner: its model's ``rows`` runner, else
    :func:`ssdx.sweep.runner.run` on the inputs its ``build`` makes.  Returns what that runner returns and
    the scan steps (None for a model without them)."""
    spec = _vmap_model(sweep)
    if spec.rows is not None:
        return registry.resolve(spec.rows)(cols, sweep, base_cfg, dtype, chunk, **kw), None
    trees, groups, model, n_steps = registry.resolve(spec.build)(
        {k: v for k, v in cols.items() if k != "config_index"}, sweep, base_cfg, dtype)
    if kw.get("definition") is not None:  # the run's fingerprint holds the model's scan steps
        kw["definition"] = {**kw["definition"], "n_steps": n_steps}
    return runner.run(cols, model, chunk, dtype=dtype, trees=trees, groups=groups, **kw), n_steps


def only_row(only: Any, ok: np.ndarray, cols: Mapping[str, np.ndarray],
             sweep: Mapping[str, Any]) -> np.ndarray:
    """The one space index ``sweep.only`` names, as an array: an integer index of the space (``config_index``
    of any kept row; ``cols`` every configuration's columns, ``ok`` which are feasible) that is feasible; else
    :class:`ssdx.params.ConfigError` naming the rule it breaks."""
    n = len(ok)
    if isinstance(only, bool) or not isinstance(only, int | np.integer) or not 0 <= only < n:
        raise params.ConfigError("sweep.only", only, f"must be a configuration index 0 <= x < {n} of the "
                                 "sweep (the config_index of a row of its results)")
    if not ok[only]:
        row = {k: np.asarray(v)[[only]] for k, v in cols.items()}
        broken = [d for c in _checks(sweep) for d in params.valid_rows(row, c)[1]]
        rule = f"{broken[0]['field']}: {broken[0]['rule']}" if broken else "infeasible"
        raise params.ConfigError("sweep.only", only, f"configuration {only} is infeasible ({rule})")
    return np.asarray([int(only)], np.int64)


def _vmap_model(sweep: Mapping[str, Any]) -> registry.SweepModelSpec:
    """The registry's spec of the sweep's model, which must run in the chunked runner (``build`` or
    ``rows``)."""
    spec = registry.sweep_model(sweep)
    if spec.build is None and spec.rows is None:
        vmap = [m.name for m in registry.SWEEP_MODELS.values() if m.build or m.rows]
        raise params.ConfigError("sweep.model", spec.name, "has its own runner; the columns of a sweep are "
                                 f"built for {', '.join(vmap)}")
    return spec


def run_sweep(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any], out_dir: Path,
              chunk_size: int | None = None, progress: bool = True, executor=None) -> dict[str, Any]:
    """Run a sweep definition; writes ``results.parquet`` and ``summary.json`` into ``out_dir``.

    ``executor`` (``ssdx.sweep.executors``; default: the local devices) runs the chunks.  Chunks are
    checkpointed as they finish; running the same sweep again on the same ``out_dir`` resumes (a
    finished sweep is merged again without compute), a different sweep there is refused.

    The model (``sweep.model``) is the registry's (``ssdx.core.registry.SWEEP_MODELS``): its spec builds
    the runner's inputs; a model with its own runner (``hybrid``) is run by it (``chunk_size`` unused).

    The definition is checked before anything runs or is written: its keys (``ssdx.sweep.source.keys``),
    its ``keep`` (``ssdx.sweep.reduce.parse``) and the names its ``keep`` and ``report`` use
    (:func:`check_outputs`); a breach raises :class:`ssdx.params.ConfigError`."""
    source.check_keys(sweep, "sweep", source.keys())
    spec = registry.sweep_model(sweep)
    check_model_keys(sweep, spec.name, chunked=spec.run is None)
    # workload.fio / trace_path / synthetic only where the model reads them (as the CLI checks)
    registry.check_sources(registry.job_for({"task": "sweep", "sweep": sweep}), {**base_cfg, "sweep": sweep})
    if not spec.reduces and sweep.get("keep", "all") != "all":
        raise params.ConfigError("sweep.keep", sweep["keep"],
                                 f"a {spec.name} sweep keeps its whole table: 'all'")
    if spec.run is not None:
        _on_device(sweep, spec, None)  # sweep.generate checked: such a model generates on the host only
        return registry.resolve(spec.run)(sweep, base_cfg, out_dir, progress=progress, executor=executor)
    dtype = io.dtype(base_cfg.get("precision", "float32"))
    if spec.prepare is not None:  # a fio job as a fluid or thermal sweep's base workload (an engine sweep
        base_cfg = registry.resolve(spec.prepare)(base_cfg)  # replays the job itself)
    from ssdx.sweep import reduce

    keep = reduce.parse(sweep.get("keep", "all"))
    check_outputs(sweep, base_cfg, keep)
    only = sweep.get("only")
    if only is not None:  # one design alone: its row in full, nothing to reduce
        keep = None
    if _on_device(sweep, spec, keep):
        from ssdx.sweep import device

        try:
            return _device_sweep(sweep, base_cfg, keep, out_dir, dtype, chunk_size, progress, executor)
        except device.NotOnDevice as e:
            if sweep.get("generate") == "device":
                raise params.ConfigError("sweep.generate", "device", f"cannot run on the device here: {e}; "
                                         "use generate: host or auto") from None
    cols, ok, dropped, n_defined = sweep_space(sweep, base_cfg)
    set_auto_ranges(keep, sweep, base_cfg, dtype, n_defined, lambda ids: {k: v[ids] for k, v in cols.items()})
    space_index = np.flatnonzero(ok)
    if only is not None:
        space_index = only_row(only, ok, cols, sweep)
        ok = np.zeros(n_defined, bool)
        ok[space_index] = True
    if not ok.all():
        cols = {k: v[ok] for k, v in cols.items()}
    # each row's index in the space (before on_invalid: drop), as the reduced outputs carry it: what
    # ssdx.sweep.config_of re-materialises
    cols = {"config_index": space_index.astype(np.int64), **cols}
    chunk = sweep_chunk(sweep, chunk_size)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table, n_steps = _run_rows(sweep, base_cfg, cols, dtype, chunk, out_dir=out_dir, progress=progress,
                               desc=str(sweep.get("name", "sweep")), executor=executor,
                               definition={"sweep_model": registry.sweep_model(sweep).name}, keep=keep)
    wall = time.perf_counter() - t0
    infeasible = {f'{d["field"]}: {d["rule"]}': d["configurations"] for d in dropped}
    if keep is not None:
        out = table
        kept = reduce.write_outputs(keep, out.state, cols, space_index, out_dir)
        if not keep["all"]:
            return _reduced_summary(sweep, keep, kept, out, infeasible, n_defined, dropped, n_steps, chunk,
                                    wall, executor, out_dir)
        table = out.table.replace_schema_metadata({
            "elapsed_s": f"{out.elapsed_s:.3f}", "compile_s": f"{out.compile_s:.3f}",
            "chunks": str(len(out.infos)), "resumed_chunks": str(out.resumed_chunks),
            "resumed_configs": str(out.resumed_configs)})
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    df = table.to_pandas()
    rep = dict(sweep.get("report") or {})
    group_by = list(rep.get("group_by") or [])
    sort_by, ascending = outputs.default_sort(str(sweep.get("model", registry.DEFAULT_SWEEP_MODEL)))
    sort_by = rep.get("sort_by", sort_by)
    ascending = bool(rep.get("ascending", True if "sort_by" in rep else ascending))
    constraint = rep.get("constraint")
    eligible = df
    if constraint:
        try:
            eligible = df.query(str(constraint))
        except Exception as e:  # pandas raises many types for a bad expression
            raise params.ConfigError("sweep.report.constraint", constraint,
                                     f"must be a pandas query over result columns ({e})") from None
    best = best_per_group(eligible, group_by, sort_by, ascending)
    n = len(df)
    summary = {
        "sweep": sweep.get("name"),
        "n_configs": n,
        "n_defined": n_defined,
        "n_dropped": n_defined - n,
        "dropped_rules": dropped,
        "n_steps": n_steps,
        "chunk_size": chunk,
        "chunks": int(meta.get("chunks", 0)),
        "resumed_chunks": int(meta.get("resumed_chunks", 0)),
        "runner": {"executor": meta.get("executor"), "workers": int(meta.get("workers", 1)),
                   **({"in_flight": int(meta["in_flight"])} if "in_flight" in meta else {})},
        "wall_s": wall,
        "compile_s": float(meta.get("compile_s", 0.0)),
        "configs_per_s": (n - int(meta.get("resumed_configs", 0))) / wall if wall > 0 else None,
        "best_by": {"metric": sort_by, "ascending": ascending, "group_by": group_by,
                    "constraint": constraint, "n_meeting_constraint": len(eligible)},
        "best": best.to_dict(orient="records"),
        "metrics": {c: {"min": float(df[c].min()), "median": float(df[c].median()), "max": float(df[c].max())}
                    for c in df.columns if c not in cols and c != "config_id"},
        "results": str(out_dir / "results.parquet"),
        **({"only": int(only)} if only is not None else {}),
        "kept": kept if keep is not None else "all",
        "n_infeasible_by_rule": infeasible,
    }
    if keep is not None:
        summary["runner"] = {"executor": getattr(executor, "name", "local"),
                             "workers": int(getattr(executor, "workers", 1) or 1)}
    summary["outputs"] = [summary["results"], str(out_dir / "summary.json")] + [
        str(out_dir / v["file"]) for v in (kept.values() if keep is not None else []) if isinstance(v, dict)]
    summary["plots"] = outputs.sweep_plots(df, eligible, rep, out_dir, sweep.get("name"))
    if keep is not None and "histograms" in keep:  # kept beside the table
        summary["plots"] |= outputs.reduced_plots({"histograms": keep["histograms"]}, out_dir,
                                                  f"{sweep.get('name')}: {len(df)} configurations")
    if "pareto" in summary["plots"]:
        summary["pareto"] = summary["plots"].pop("pareto")
    io.write_json(out_dir / "summary.json", summary)
    shown = group_by + list(rep.get("columns") or [])
    summary["_table"] = format_table(best, shown + ["ties"] if shown else None)  # None: every column
    summary["_quantiles"] = outputs.quantile_table(keep, out_dir)
    return summary


def check_outputs(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any],
                  keep: Mapping[str, Any] | None) -> None:
    """Check, before a sweep of the chunked runner computes anything, every name its parsed ``keep`` and its
    ``report`` block use against its result columns: ``config_id``, the configuration columns (the sweep's
    base columns, :func:`sweep_base`, with its ``base`` overrides) and the metrics of its model
    (``ssdx.core.registry.SweepModelSpec.metrics``).  Also the ``report`` block's keys, its plots' keys,
    their ``min``/``max`` choices and its ``constraint`` (run on an empty table of those columns).  The
    default ``sort_by`` (``ssdx.sweep.outputs.default_sort``) is checked only where the table is kept (the
    report is made of it).  A breach raises :class:`ssdx.params.ConfigError` naming the field, e.g.
    ``sweep.report.group_by``."""
    from ssdx.sweep import reduce

    spec = _vmap_model(sweep)
    base = space.base_columns(sweep_base(sweep, base_cfg), sweep)
    reduce.check_columns(keep, list(base), spec.metric_names())
    outputs.check_report(sweep.get("report"), base, spec.name, spec.metric_names(),
                         keep is None or bool(keep["all"]))


GENERATE = ("auto", "host", "device")


def on_invalid(sweep: Mapping[str, Any]) -> str:
    """The sweep's ``on_invalid`` policy: ``error`` (the default) or ``drop``."""
    policy = sweep.get("on_invalid", "error")
    if policy not in ("error", "drop"):
        raise params.ConfigError("sweep.on_invalid", policy, "must be 'error' or 'drop'")
    return policy


def sweep_chunk(sweep: Mapping[str, Any], chunk_size: int | None) -> int:
    """Configurations per chunk: ``chunk_size`` (the runner's), else ``sweep.chunk_size`` (default 4096)."""
    chunk = chunk_size if chunk_size is not None else sweep.get("chunk_size", 4096)
    if not isinstance(chunk, int | np.integer) or isinstance(chunk, bool) or chunk < 1:
        raise params.ConfigError("sweep.chunk_size", chunk, "must be an integer >= 1")
    return int(chunk)


#: configurations per chunk that a device-generated sweep runs with at least on an accelerator, unless the
#: runner's ``chunk_size`` is given: each time step of the model is a few kernel launches, so a small chunk
#: leaves a GPU waiting on launches rather than computing (measured in docs/performance_sweeps.md)
ACCELERATOR_CHUNK = 1 << 20


def device_chunk(sweep: Mapping[str, Any], chunk_size: int | None, n: int, platform: str) -> int:
    """Configurations per chunk of a device-generated sweep of ``n`` configurations on ``platform``
    (``cpu``, ``gpu``, ...): :func:`sweep_chunk`, raised to :data:`ACCELERATOR_CHUNK` off a CPU when the
    runner did not set it, and at most ``n``."""
    chunk = sweep_chunk(sweep, chunk_size)
    if chunk_size is None and platform != "cpu":
        chunk = max(chunk, ACCELERATOR_CHUNK)
    return min(chunk, n)


def _platform(executor) -> str:
    """The platform the executor's jobs run on: its first local device's, else (Ray) this process's."""
    import jax

    devices = getattr(executor, "devices", None)
    return devices[0].platform if devices else jax.default_backend()


def _on_device(sweep: Mapping[str, Any], spec, keep) -> bool:
    """Whether the sweep's configurations are generated and reduced on the device (``sweep.generate``:
    ``auto``, the default, does so for a fluid sweep that keeps reductions only; ``host`` never; ``device``
    always, refused where it cannot)."""
    mode = sweep.get("generate", "auto")
    if mode not in GENERATE:
        raise params.ConfigError("sweep.generate", mode, f"must be one of {list(GENERATE)}")
    if mode == "host":
        return False
    possible = (spec.device is not None and keep is not None and not keep["all"]
                and not any("skip_if" in keep.get(k, {}) for k in ("top_k", "pareto")))
    if mode == "device" and not possible:
        models = " and ".join(m.name for m in registry.SWEEP_MODELS.values() if m.device)
        raise params.ConfigError("sweep.generate", mode, f"the device generates {models} sweeps that keep "
                                 "reductions only (a keep mapping without all: true or skip_if)")
    return possible


def _device_sweep(sweep, base_cfg, keep, out_dir: Path, dtype, chunk_size, progress,
                  executor) -> dict[str, Any]:
    """A sweep generated and reduced on the device (``ssdx.sweep.device``); same outputs as the host path."""
    from ssdx.sweep import device, device_run, executors, reduce

    policy = on_invalid(sweep)
    spec = registry.sweep_model(sweep)
    factory, n_steps = registry.resolve(spec.device)(sweep, base_cfg)
    ds = device.DeviceSpace(sweep_base(sweep, base_cfg), sweep, keep, spec.metric_names(), dtype)
    if policy == "error":
        ds.raise_first_breach()
    set_auto_ranges(keep, sweep, base_cfg, dtype, ds.n, ds.rows)
    ds.keep = dict(keep)  # the space took its copy before the pilot set the edges prepare() tabulates
    ds.prepare()
    executor = executor if executor is not None else executors.LocalExecutor()
    chunk = device_chunk(sweep, chunk_size, ds.n, _platform(executor))
    out_dir.mkdir(parents=True, exist_ok=True)
    definition = {"sweep_model": spec.name, "n_steps": n_steps, "space": sweep["space"],
                  "chunk_size": chunk, "dtype": np.dtype(dtype).name, "keep": dict(keep)}
    t0 = time.perf_counter()
    out = device_run.execute(ds, factory, chunk, out_dir, definition, executor,
                             progress, str(sweep.get("name", "sweep")))
    wall = time.perf_counter() - t0
    if out.state["n"] == 0:
        ds.raise_first_breach()
    dropped = ds.dropped()
    infeasible = {f'{d["field"]}: {d["rule"]}': d["configurations"] for d in dropped}
    kept = reduce.write_outputs(keep, out.state, None, None, out_dir, rows_of=ds.rows)
    return _reduced_summary(sweep, keep, kept, out, infeasible, ds.n, dropped, n_steps, chunk, wall,
                            executor, out_dir, extra={"generated_on": "device"})


def _reduced_summary(sweep, keep, kept, out, infeasible, n_defined, dropped, n_steps, chunk, wall, executor,
                     out_dir: Path, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json`` of a reduction-only sweep (no table: no plots, no per-metric medians), with the
    ``extra`` keys of its path (``generated_on`` for a device-generated sweep)."""
    import pyarrow.parquet as pq

    from ssdx.sweep import executors

    executor = executor if executor is not None else executors.LocalExecutor()
    n = int(out.state["n"])
    best = None
    if "top_k" in keep:
        best = pq.read_table(out_dir / "top_k.parquet").to_pandas()
        best = best[best["rank"] == 1]
    t = keep.get("top_k") or {}
    summary = {
        "sweep": sweep.get("name"),
        "n_configs": n,
        "n_defined": n_defined,
        "n_dropped": n_defined - n,
        "dropped_rules": dropped,
        "n_infeasible_by_rule": infeasible,
        "kept": kept,
        "n_steps": n_steps,
        "chunk_size": chunk,
        "chunks": len(out.infos),
        "resumed_chunks": out.resumed_chunks,
        "runner": {"executor": executor.name, "workers": int(executor.workers),
                   **({"in_flight": executor.per_device} if hasattr(executor, "per_device") else {})},
        "wall_s": wall,
        "compile_s": out.compile_s,
        "configs_per_s": (n - out.resumed_configs) / wall if wall > 0 else None,
        "best_by": {"metric": t.get("by"), "ascending": t.get("ascending"), "group_by": t.get("group_by", []),
                    "constraint": None},
        "best": [] if best is None else best.to_dict(orient="records"),
        "results": None,
        "plots": outputs.reduced_plots(keep, out_dir, f"{sweep.get('name')}: {n} configurations"),
        "outputs": [str(out_dir / "summary.json")] + [str(out_dir / v["file"]) for v in kept.values()
                                                       if isinstance(v, dict)],
    }
    if "pareto" in keep:  # the front's rows (the first 50 by x), as a table sweep's report gives them
        front = pq.read_table(out_dir / "pareto.parquet").to_pandas()
        summary["pareto"] = {"x": keep["pareto"]["x"], "y": keep["pareto"]["y"], "n_front": len(front),
                             "front": front.head(50).to_dict(orient="records")}
    summary.update(extra or {})
    io.write_json(out_dir / "summary.json", summary)
    cols = list(t.get("group_by", [])) + ["config_index"] + ([t["by"]] if t else [])
    summary["_table"] = "" if best is None else format_table(best, cols)
    summary["_quantiles"] = outputs.quantile_table(keep, out_dir)
    return summary
