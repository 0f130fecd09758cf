"""``ssdx`` console entry point (Hydra).  Thin: compose config -> call ``ssdx.tasks`` -> print.

Contract (kept stable for checks):
* ``ssdx`` — the default small sweep (``sweeps/quick.yaml``), prints a table of the best designs.
* ``ssdx experiment=aldrin_pro_fill hydra.run.dir=DIR`` — ``DIR/summary.json`` + ``fill_curve.png``.
* ``ssdx sweep=NAME hydra.run.dir=DIR [sweep.chunk_size=N]`` — ``DIR/results.parquet`` + ``summary.json``;
  ``sweep_file=PATH.yaml`` instead of ``sweep=NAME`` runs a definition from any file; with a ``keep:``
  mapping, ``top_k.parquet``/``pareto.parquet``/``histograms.json`` (``docs/sweeps.md``).
* ``ssdx experiment=sn8e_thermal [thermal=heatsink] hydra.run.dir=DIR`` — ``summary.json`` (max composite
  temperature, SMART thermal counters, throttled/unthrottled speed), ``thermal.png``, ``thermal.csv``.
* ``ssdx experiment=tmt_optimize hydra.run.dir=DIR`` — ``summary.json`` (Optax answer vs the exact grid,
  evaluation counts, the nvme-cli command), ``tmt_landscape.png``.
* ``ssdx experiment=fit_rc fit.series=FILE hydra.run.dir=DIR`` — ``summary.json`` (fitted RC values, RMSE,
  the ``thermal.rc.*`` overrides that apply them), ``fit_rc.png``.
* ``ssdx experiment=fit_fill fit.curve=FILE [drive=NAME drive.*=...] [workload.fio=JOB.fio]
  hydra.run.dir=DIR`` — ``summary.json`` (``phases``, ``measured_phases``, ``rmse_mb_s``, ``overrides``
  for ``experiment=aldrin_pro_fill``, ``preset_path``), the fitted presets
  ``DIR/conf/{drive,nand}/NAME.yaml``, ``fit_curve.png``; an unreadable curve exits 2 naming file and line.
* ``ssdx experiment=wa_uniform gc.spare_factor=S gc.policy=greedy|fifo gc.pages_per_block=N
  hydra.run.dir=DIR`` — ``summary.json`` (``write_amplification`` at steady state,
  ``steady_state_round``), ``wa_rounds.png``.
* ``ssdx experiment=trace_replay workload.fio=JOB.fio [workload.fio_job=NAME] [workload.fio_unknown=warn]
  hydra.run.dir=DIR`` — ``summary.json`` as for a trace (``iops``, ``mb_s``, ``latency_us``) plus fio's
  names (``fio_job``, ``fio_ignored``, ``bw`` KiB/s, ``clat_us`` percentiles); an option ssdx does not
  model exits 2 naming it and its line (a warning with ``warn``).  ``experiment=aldrin_pro_fill
  workload.fio=JOB.fio`` takes a write job as the fill's workload.
* ``ssdx experiment=mqsim [mqsim.ssdconfig=ssdconfig.xml] [mqsim.workload=workload.xml] hydra.run.dir=DIR``
  — ``summary.json`` (``scenarios: [{flows: [{name, requests, iops, mb_s, device_response_time_us,
  p99_response_time_us, ...}]}]``, ``warnings``, ``overrides``); a bad XML exits 2 naming file and line.
* ``ssdx experiment=trace_analyse workload.trace_path=FILE workload.format=msr`` — ``summary.json``.
* ``ssdx sweep=nand_per_workload hydra.run.dir=DIR`` — ``results.parquet``, ``summary.json``
  (``relative_iops``, ``best_nand``, ``nand_counts``, per SCM ratio), ``relative_iops.png``.
* ``ssdx experiment=hybrid_sensitivity hydra.run.dir=DIR`` — ``summary.json`` (``sensitivity``),
  ``sensitivity.png``.
* ``ssdx experiment=hybrid_validate hydra.run.dir=DIR`` — ``summary.json`` (``findings: [{name, holds,
  detail}]``, ``relative_iops``, ``utilisation``, ``steady_state``), ``validation.png``.
* ``ssdx sweep=NAME runner=ray [runner.address=auto] hydra.run.dir=DIR`` — the same outputs through Ray.
* ``ssdx sweep=NAME logger=wandb hydra.run.dir=DIR`` — the same outputs and an offline W&B run in DIR/wandb.
* Re-running ``ssdx sweep=NAME hydra.run.dir=DIR`` on a finished or interrupted DIR resumes; a changed
  sweep there exits with status 2 naming what changed.  Chunks that fail after their retries exit 1.
* A bad value exits with status 2 and a one-paragraph message naming field, value and rule; so does a
  config name that no group holds (``experiment=aldrin_fill``), with the group's valid names.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ssdx import loggers
from ssdx.cli import schema
from ssdx.params import ConfigError
from ssdx.paths import conf_dir, sweeps_dir
from ssdx.sweep import executors


def register_sweeps(extra: dict | None = None) -> None:
    """Make every ``sweeps/NAME.yaml`` selectable as ``sweep=NAME`` (and ``extra``, a ``sweep_file``'s
    definition, as ``sweep=file_NAME``); ``keep`` defaults to ``all`` so ``sweep.keep=...`` overrides it."""
    from ssdx.sweep import source

    cs = ConfigStore.instance()
    for path in sorted(sweeps_dir().glob("*.yaml")):
        node = OmegaConf.load(path)
        if "keep" not in node:
            node.keep = "all"
        cs.store(group="sweep", name=path.stem, node=node)
    if extra is not None:
        node = OmegaConf.create({"keep": "all", **extra})
        cs.store(group="sweep", name=source.store_name(extra), node=node)


def user_config_dirs(argv: list[str]) -> list[Path]:
    """The user's own config directories named on the command line, in order: ``--config-dir DIR``
    (``-cd DIR``, ``--config-dir=DIR``) and the ``file://`` entries (or plain paths) of
    ``hydra.searchpath=[...]``.  Each holds groups as ``conf/`` does (``DIR/drive/NAME.yaml``,
    ``DIR/sweep/NAME.yaml``, ...); ``pkg://`` entries name packages, not directories, and are skipped."""
    dirs: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in ("--config-dir", "-cd"):
            dirs.append(next(it, ""))
        elif arg.startswith("--config-dir="):
            dirs.append(arg.split("=", 1)[1])
        elif arg.lstrip("+").startswith("hydra.searchpath="):
            value = arg.split("=", 1)[1].strip().strip("[]")
            for entry in (e.strip().strip("'\"") for e in value.split(",")):
                if entry and not entry.startswith("pkg://"):
                    dirs.append(entry.removeprefix("file://"))
    return [Path(d).expanduser() for d in dirs if d]


def group_options(extra_dirs: list[Path] | None = None) -> dict[str, list[str]]:
    """Every config group of ``conf/`` (and ``sweep``) with the names it holds (its YAML files), together
    with those of the user's config directories ``extra_dirs``."""
    out: dict[str, set[str]] = {}
    roots = [conf_dir(), *(extra_dirs or [])]
    for root in roots:
        if root.is_dir():
            for d in root.iterdir():
                if d.is_dir():
                    out.setdefault(d.name, set()).update(p.stem for p in d.glob("*.yaml"))
    out.setdefault("sweep", set()).update(p.stem for p in sweeps_dir().glob("*.yaml"))
    return {k: sorted(v) for k, v in out.items()}


def check_choices(argv: list[str], options: dict[str, list[str]] | None = None) -> None:
    """Refuse a command-line choice of a config group that names none of its options (``group=NAME`` or
    ``+group=NAME``; comma-separated names under ``-m``).  Hydra refuses most, but ignores a wrong name in
    an optional group (``experiment``), which would then run the default job.  The user's config
    directories (:func:`user_config_dirs`) count as the package's; one that does not exist is refused."""
    if options is None:
        extra = user_config_dirs(argv)
        for d in extra:
            if not d.is_dir():
                raise ConfigError("hydra.searchpath", str(d), "must name an existing config directory "
                                  "(file://DIR or --config-dir DIR, holding e.g. DIR/drive/NAME.yaml)")
        options = group_options(extra)
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        group = key.lstrip("+")
        if group not in options or value in ("", "null"):
            continue
        for name in value.split(","):
            if name not in options[group]:
                raise ConfigError(group, name, f"must name a config of the '{group}' group: "
                                  f"{', '.join(options[group])}")


def _out_dir(cfg: DictConfig) -> Path:
    if cfg.get("out_dir"):
        return Path(cfg.out_dir)
    return Path(HydraConfig.get().runtime.output_dir)


def run(cfg: DictConfig) -> None:
    """Dispatch on ``cfg.task``; turn configuration errors into exit status 2."""
    from ssdx import tasks

    out = _out_dir(cfg)
    executor = None
    logger: loggers.NullLogger | loggers.WandbLogger = loggers.NullLogger()
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
        seed = container.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ConfigError("seed", seed, "an integer")
        logger = loggers.from_config(container.get("logger"), seed=seed)
        fio_job = (container.get("workload") or {}).get("fio")
        if fio_job and (cfg.task not in ("fill", "thermal", "tmt_optimize", "fit_fill", "replay", "boot",
                                         "sweep")
                        or (cfg.task == "sweep" and container["sweep"].get("model") == "hybrid")):
            raise ConfigError("workload.fio", fio_job, tasks.FIO_NOT_HERE)
        if cfg.task in ("sweep", "hybrid_sensitivity", "hybrid_validate"):
            executor = executors.from_config(container.get("runner"))
        logger.start(container, out)
        if cfg.task == "fill":
            s = tasks.run_fill(container, out)
            print(f'{s["drive"]} ({s["slc_mode"]}, pre-fill {s["prefill_gb"]:.0f} GB): '
                  f'{s["written_gb"]:.0f} GB in {s["time_s"]:.0f} s, mean {s["mean_mb_s"]:.0f} MB/s')
            if s.get("fio_job") is not None:
                w = s["fio_workload"]
                print(f'fio job {s["fio_job"]}: {w["pattern"]} {w["block_kib"]:g} KiB writes at QD '
                      f'{w["queue_depth"]}, {100 * w["fill_fraction"]:.0f} % of the drive'
                      + (f', {w["burst_gb"]:g} GB bursts with {w["idle_s"]:g} s idle'
                         if w["burst_gb"] else "")
                      + ('; ignored (workload.fio_unknown=warn): '
                         + ", ".join(i["option"] for i in s["fio_ignored"]) if s["fio_ignored"] else ""))
            for p in s["phases"]:
                print(f'  {p["name"]:<14} {p["start_gb"]:8.1f} -> {p["end_gb"]:8.1f} GB  '
                      f'{p["mean_mb_s"]:8.1f} MB/s')
            print(f"outputs: {out / 'summary.json'}, {out / 'fill_curve.png'}, {out / 'fill_curve.csv'}")
        elif cfg.task == "sweep" and container["sweep"].get("model") == "hybrid":
            from ssdx import tasks_hybrid

            s = tasks_hybrid.run_sweep(container["sweep"], container, out,
                                       progress=not cfg.get("quiet", False), executor=executor)
            print(f'sweep {s["sweep"]}: {s["n_configs"]} hybrid drives in {s["wall_s"]:.1f} s; '
                  f'IOPS relative to '
                  f'{tasks_hybrid.BASELINE} at SCM = {s["scm_ratio"]:g} x {s["scm_basis"]}:')
            nands = list(tasks_hybrid.TABLE1)
            print(f'  {"workload":<8} ' + " ".join(f"{n:>10}" for n in nands) + "  best")
            for w, rel in s["relative_iops"].items():
                ties = s["best_nand_ties"][w]
                print(f"  {w:<8} " + " ".join(f"{rel.get(n, float('nan')):10.3f}" for n in nands)
                      + f'  {s["best_nand"][w] if len(ties) == 1 else "tie: " + ", ".join(ties)}')
            print(f"outputs: {out / 'results.parquet'}, {out / 'summary.json'}, {out / 'relative_iops.png'}")
        elif cfg.task == "hybrid_sensitivity":
            from ssdx import tasks_hybrid

            s = tasks_hybrid.run_sensitivity(container, out, progress=not cfg.get("quiet", False),
                                             executor=executor)
            print("3D CT TLC with one 2D FG MLC characteristic: largest |IOPS change| over the workloads: "
                  + ", ".join(f"{k} {v:.2f} %" for k, v in s["sensitivity"].items())
                  + f'; dominant: {s["dominant"]}')
            print(f"outputs: {out / 'summary.json'}, {out / 'sensitivity.png'}")
        elif cfg.task == "hybrid_validate":
            from ssdx import tasks_hybrid

            s = tasks_hybrid.run_validate(container, out, progress=not cfg.get("quiet", False),
                                          executor=executor)
            print(f'findings of the hybrid SSD study: {s["holds"]} of {s["of"]} hold '
                  f'({s["requests"]} measured requests per run, SCM = {s["scm_ratio"]:g} x {s["scm_basis"]})')
            for f in s["findings"]:
                print(f'  [{"holds" if f["holds"] else "FAILS"}] {f["name"]}: {f["detail"]}')
            if not s["steady_state"]["all_steady"]:
                print(f'  {len(s["steady_state"]["not_steady"])} runs not steady (halves differ > '
                      f'{100 * s["steady_state"]["tolerance"]:g} %): see summary.json steady_state')
            print(f"outputs: {out / 'summary.json'}, {out / 'validation.png'}")
        elif cfg.task == "sweep":
            chunk = cfg.runner.get("chunk_size")
            s = tasks.run_sweep(container["sweep"], container, out, chunk_size=chunk,
                                progress=not cfg.get("quiet", False), executor=executor)
            resumed = (f'; resumed: {s["resumed_chunks"]} of {s["chunks"]} chunks were already done'
                       if s["resumed_chunks"] else "")
            print(f'sweep {s["sweep"]}: {s["n_configs"]} configurations '
                  f'({s["n_dropped"]} infeasible dropped) in {s["wall_s"]:.1f} s on '
                  f'{s["runner"]["executor"]} ({s["runner"]["workers"]} worker'
                  f'{"s" if s["runner"]["workers"] > 1 else ""}){resumed}')
            print(f'best by {s["best_by"]["metric"]} per {", ".join(s["best_by"]["group_by"]) or "run"}:')
            print(s["_table"])
            plots = [v for k, v in s["plots"].items() if k.endswith("_png")]
            print(f"outputs: {', '.join([*s['outputs'], *plots])}")
        elif cfg.task == "thermal":
            from ssdx import tasks_thermal

            s = tasks_thermal.run_thermal(container, out)
            sm = s["smart"]
            print(f'{s["drive"]} ({s["cooling"]}, ambient {s["ambient_c"]:.0f} C, TMT1 {s["tmt1_k"]:.0f} K, '
                  f'TMT2 {s["tmt2_k"]:.0f} K): max composite {s["max_composite_k"]:.1f} K '
                  f'({s["max_composite_c"]:.1f} C), {s["written_gb"]:.0f} GB written')
            print(f'  throttle entries TMT1 {sm["tmt1_transitions"]}, TMT2 {sm["tmt2_transitions"]}; '
                  f'{sm["time_tmt1_s"]} s light, {sm["time_tmt2_s"]} s heavy; '
                  f'unthrottled {s["unthrottled_mean_mb_s"]:.0f} MB/s, '
                  f'throttled {s["throttled_mean_mb_s"] or float("nan"):.0f} MB/s')
            print(f"outputs: {out / 'summary.json'}, {out / 'thermal.png'}, {out / 'thermal.csv'}")
        elif cfg.task == "tmt_optimize":
            from ssdx import tasks_thermal

            s = tasks_thermal.run_tmt_optimize(container, out, progress=not cfg.get("quiet", False))
            print(f'TMT1 {s["tmt1_k"]:.0f} K, TMT2 {s["tmt2_k"]:.0f} K: {s["objective"]:.1f} GB '
                  f'({100 * s["objective_ratio"]:.2f} % of the grid best {s["grid_best_objective"]:.1f} GB) '
                  f'with {s["evaluations"]} model evaluations vs {s["grid_evaluations"]} for the grid; '
                  f'max composite {s["max_composite_k"]:.2f} K <= {s["temp_limit_k"]:.2f} K')
            print(f'apply: {s["nvme_command"]}')
            print(f'   or: {s["nvme_hctm_command"]}')
            print(f"outputs: {out / 'summary.json'}, {out / 'tmt_landscape.png'}")
        elif cfg.task == "mqsim":
            from ssdx import tasks_mqsim

            s = tasks_mqsim.run_mqsim(container, out, progress=not container.get("quiet", False))
            for i, sc in enumerate(s["scenarios"]):
                for f in sc["flows"]:
                    print(f'scenario {i} {f["name"]}: {f["requests"]} requests, {f["iops"]:.0f} IOPS, '
                          f'{f["mb_s"]:.1f} MB/s, response {f["device_response_time_us"]:.1f} us '
                          f'(p99 {f["p99_response_time_us"]:.1f} us)')
            print(f'{len(s["warnings"])} warnings (fields not modelled) in {out / "summary.json"}')
        elif cfg.task == "fit_rc":
            from ssdx import tasks_thermal

            s = tasks_thermal.run_fit_rc(container, out)
            fitted = ", ".join(f"{k} {v:.4g} ({s['ratio_to_preset'][k]:.2f}x preset)"
                               for k, v in s["fitted"].items())
            print(f'RC fit of {s["n_steps"]} steps from {s["series"]}: {fitted}; RMSE {s["rmse_k"]:.2f} K '
                  f'(preset {s["preset_rmse_k"]:.2f} K), {s["iterations"]} iterations')
            print(f'apply: {s["overrides"]}')
            print(f"outputs: {out / 'summary.json'}, {out / 'fit_rc.png'}")
        elif cfg.task == "fit_fill":
            from ssdx import tasks_fit

            s = tasks_fit.run_fit_fill(container, out)
            print(f'fit of {s["curve"]} ({s["format"]}, {s["n_samples"]} samples) on {s["drive"]}: '
                  f'rule {s["rule"]}, RMSE {s["rmse_mb_s"]:.3g} MB/s ({100 * s["rmse_fraction"]:.2g} % of '
                  f'the mean {s["mean_measured_mb_s"]:.0f} MB/s; preset {s["preset_rmse_mb_s"]:.1f} MB/s)')
            for p in s["phases"]:
                print(f'  {p["name"]:<14} {p["start_gb"]:8.1f} -> {p["end_gb"]:8.1f} GB  '
                      f'{p["mean_mb_s"]:8.1f} MB/s')
            for note in ([s["warning"]] if s["warning"] else []) + s["notes"]:
                print(f"  note: {note}")
            print(f'apply: {s["command"]}')
            print(f'preset: {s["preset_path"]} (+ {s["nand_preset_path"]}): {s["preset_command"]}')
            print(f"outputs: {out / 'summary.json'}, {out / 'fit_curve.png'}, {out / 'fit_curve.csv'}")
        elif cfg.task == "wa":
            from ssdx import tasks_gc

            s = tasks_gc.run_wa(container, out)
            ss = s["steady_state_round"]
            ana = s["analytic_write_amplification"]
            print(f'{s["policy"]}, {s["pattern"]}, S_f {s["spare_factor"]:g}, b {s["pages_per_block"]}: '
                  f'WA {s["write_amplification"]:.3f}'
                  + (f' (analytic {ana:.3f}, {100 * s["relative_error"]:+.2f} %)' if ana else "")
                  + (f'; SNIA steady state at round {ss}' if ss else "; SNIA steady state not reached")
                  + f'; {s["mb_s"]:.0f} MB/s')
            print(f"outputs: {out / 'summary.json'}, {out / 'wa_rounds.png'}")
        elif cfg.task == "gc_fill":
            from ssdx import tasks_gc

            s = tasks_gc.run_gc_fill(container, out)
            gib = s["gc_onset_gib"]
            print(f'{s["drive"]}: fresh {s["fresh_mb_s"]:.0f} MB/s; GC starts at '
                  + (f'{gib:.1f} GiB written' if gib else "before the test (preconditioning)")
                  + (f'; speed drop from {s["drop_onset_gib"]:.1f} GiB' if s["drop_onset_gib"] else "")
                  + (f', then {s["after_drop_mb_s"]:.0f} MB/s' if s["after_drop_mb_s"] else "")
                  + f'; WA {s["write_amplification"]:.2f}'
                  + (f'; after secure erase {s["restored_mb_s"]:.0f} MB/s' if s["restored_mb_s"] else ""))
            print(f"outputs: {out / 'summary.json'}, {out / 'fill_sets.png'}")
        elif cfg.task == "analyse":
            s = tasks.run_analyse(container, out)
            seq = s["sequential_fraction"]
            print(f'{s["trace"]} ({s["format"]}): {s["requests"]} requests, read fraction '
                  f'{s["read_fraction"] if s["read_fraction"] is None else round(s["read_fraction"], 4)}, '
                  f'{100 * seq:.2f} % sequential, footprint {s["footprint_bytes"] / 2**30:.2f} GiB'
                  + (f'; {s["skipped_lines"]} malformed lines skipped' if s["skipped_lines"] else "")
                  + (f'; {s["unsorted_requests"]} out-of-order timestamps' if s["unsorted_requests"] else ""))
            print(f"outputs: {out / 'summary.json'}")
        elif cfg.task == "replay":
            from ssdx import tasks_engine

            s = tasks_engine.run_replay(container, out, progress=not cfg.get("quiet", False))
            lat = s["latency_us"]
            print(f'{s["trace"]} on {s["drive"]} ({s["loop"]} loop, QD {s["queue_depth"]}): '
                  f'{s["requests"]} requests, read fraction {s["read_fraction"]:.3f}, {s["iops"]:.0f} IOPS, '
                  f'{s["mb_s"]:.1f} MB/s; latency mean {lat["mean"]:.1f} us, p99 {lat["p99"]:.1f} us; '
                  f'queue share {s["queue_share"]:.2f}'
                  + (f'; {s["skipped_lines"]} malformed lines skipped' if s["skipped_lines"] else ""))
            if s.get("fio_job") is not None:
                c = s["clat_us"]
                print(f'fio job {s["fio_job"]}: IOPS={s["iops"]:.0f}, BW={s["bw"]:.0f}KiB/s; clat (usec) '
                      f'p50 {c["p50"]:.1f}, p99 {c["p99"]:.1f}, p99.9 {c["p99.9"]:.1f}'
                      + (f'; the first {s["requests"]} requests of the job (workload.requests)'
                         if s["fio_truncated"] else ""))
                if s["fio_ignored"]:
                    print("fio options ignored (workload.fio_unknown=warn): "
                          + ", ".join(f'{i["option"]} ({i["where"]})' for i in s["fio_ignored"]))
            print(f"outputs: {out / 'summary.json'}, {out / 'latency_cdf.png'}")
        elif cfg.task == "boot":
            from ssdx import tasks_engine

            s = tasks_engine.run_boot(container, out, progress=not cfg.get("quiet", False))
            for name, d in s["drives"].items():
                print(f'{name:<16} {d["interface"]:<8} QD1 4K read {d["qd1_read_4k_us"]:6.1f} us, write '
                      f'{d["qd1_write_4k_us"]:6.1f} us; boot storage time {d["boot_storage_time_s"]:.2f} s')
                if "fio" in d:
                    f = d["fio"]
                    print(f'{"":<16} fio job {s["fio_job"]} (QD {s["fio_queue_depth"]}, {s["fio_loop"]} '
                          f'loop): IOPS={f["iops"]:.0f}, BW={f["bw"]:.0f}KiB/s, '
                          f'clat p99 {f["clat_us"]["p99"]:.1f} us')
            print(f'SATA - PCIe 4.0: model {s["model_difference_s"]:.2f} s; seed method '
                  f'{s["seed_method_difference_s"]:.2f} s; press: < 2 s')
            print(f"outputs: {out / 'summary.json'}, {out / 'boot_qd1.png'}")
        else:
            raise ConfigError("task", cfg.task, "must be 'sweep', 'fill', 'thermal', 'tmt_optimize', "
                              "'fit_rc', 'fit_fill', 'wa', 'gc_fill', 'analyse', 'replay', 'boot', "
                              "'hybrid_sensitivity' or 'hybrid_validate'")
        logger.finish(s, out)
        if logger.name == "wandb":
            where = f"{logger.dir or out}/wandb"
            print(f"W&B run ({logger.mode}): {where}" + (f"; upload with: wandb sync {where}/offline-run-*"
                                                         if logger.mode == "offline" else ""))
    except ConfigError as e:
        logger.abort()
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(2)
    except executors.JobsFailed as e:
        logger.abort()
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(1)
    except BaseException:  # an error or Ctrl-C: the W&B run is closed as failed, then the error goes on
        logger.abort()
        raise
    finally:
        if executor is not None and hasattr(executor, "close"):
            executor.close()


def host_devices(env: dict | None = None, cores: int | None = None) -> None:
    """Expose the CPU cores as XLA host devices (at most 8) so the local runner spreads chunks over them.

    Only when ``XLA_FLAGS`` sets no device count already; ``SSDX_HOST_DEVICES=N`` picks the number (1:
    one device).  It affects only JAX's CPU platform (a GPU run keeps its GPUs), and must run before
    JAX starts a backend.  On 2 cores a 2048-step fluid sweep runs 1.6x faster (``bench/scale.py``)."""
    env = os.environ if env is None else env
    flags = env.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    want = env.get("SSDX_HOST_DEVICES")
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = int(want) if want and want.strip().isdigit() else min(cores, 8)
    if n > 1:
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


def main() -> None:
    """Console script ``ssdx``."""
    from ssdx.sweep import source

    host_devices()
    try:
        argv, from_file = source.split_argv(sys.argv[1:])
        check_choices(argv)
    except ConfigError as e:
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(2)
    if from_file is not None:
        sys.argv[1:] = [*argv, f"sweep={source.store_name(from_file)}"]
    schema.register()
    register_sweeps(from_file)
    hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(run)()


if __name__ == "__main__":
    main()
