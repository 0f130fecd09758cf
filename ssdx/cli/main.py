"""``ssdx`` console entry point (Hydra).  Thin: compose config -> call the job its registry line names
-> print.

Contract (kept stable for checks):
* ``ssdx`` — the default small sweep (``sweeps/quick.yaml``), prints a table of the best designs.
* ``ssdx experiment=aldrin_pro_fill hydra.run.dir=DIR`` — ``DIR/summary.json`` + ``fill_curve.png``.
* ``ssdx sweep=NAME hydra.run.dir=DIR [sweep.chunk_size=N]`` — ``DIR/results.parquet`` + ``summary.json``;
  ``sweep_file=PATH.yaml`` instead of ``sweep=NAME`` runs a definition from any file; with a ``keep:``
  mapping, ``top_k.parquet``/``pareto.parquet``/``histograms.json`` (with its quantiles) and their plots
  ``front.png``/``histograms.png`` (``docs/sweeps.md``).
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
import re
import sys
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ssdx import loggers, progress
from ssdx.cli import schema
from ssdx.core import io, registry
from ssdx.params import ConfigError
from ssdx.paths import conf_dir, sweeps_dir
from ssdx.report import run_dir
from ssdx.sweep import executors

#: keys every registered sweep has, so that ``sweep.KEY=...`` overrides them
SWEEP_DEFAULTS = {"keep": "all", "generate": "auto"}


def register_sweeps(extra: dict | None = None) -> None:
    """Make every ``sweeps/NAME.yaml`` selectable as ``sweep=NAME`` (and ``extra``, a ``sweep_file``'s
    definition, as ``sweep=file_NAME``); ``keep`` defaults to ``all`` and ``generate`` to ``auto`` so
    ``sweep.keep=...`` and ``sweep.generate=...`` override them."""
    from ssdx.sweep import source

    cs = ConfigStore.instance()
    for path in sorted(sweeps_dir().glob("*.yaml")):
        node = OmegaConf.load(path)
        for key, value in SWEEP_DEFAULTS.items():
            if key not in node:
                node[key] = value
        cs.store(group="sweep", name=path.stem, node=node)
    if extra is not None:
        node = OmegaConf.create({**SWEEP_DEFAULTS, **extra})
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


def help_choices() -> str:
    """One ``group: choice, ...`` line per config group a user picks from (``ssdx --help``, through the
    ``ssdx_choices`` resolver of ``conf/config.yaml``'s ``hydra.help``): the YAML files of ``conf/`` and
    ``sweeps/`` and of the user's config directories on the command line (:func:`user_config_dirs`).  The
    schemas stored as ``base`` are not choices: Hydra's own list (``$APP_CONFIG_GROUPS``) shows them, and
    ``drive=base`` is then refused."""
    groups = {g: [n for n in names if n != "base" and not n.startswith("_")]
              for g, names in group_options(user_config_dirs(sys.argv[1:])).items()}
    return "\n".join(f"{g}: {', '.join(names)}" for g, names in sorted(groups.items()) if names)


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


def _yaml_defaults(path: Path) -> list:
    """The defaults list of a config file (empty when it has none)."""
    node = OmegaConf.load(path)
    return list(OmegaConf.to_container(node.get("defaults") or OmegaConf.create([])))


def _find_config(group: str, name: str, roots: list[Path]) -> Path | None:
    for root in roots:
        path = root / group / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def _is_typed(group: str, name: str, roots: list[Path], depth: int = 0) -> bool:
    """Whether the option ``name`` of ``group`` composes onto the group's schema (``- base`` in its defaults
    list, or in that of another option of the group it names)."""
    path = _find_config(group, name, roots)
    if path is None or depth > 8:
        return False
    entries = _yaml_defaults(path)
    return "base" in entries or any(isinstance(e, str) and e not in ("_self_", "base")
                                    and _is_typed(group, e, roots, depth + 1) for e in entries)


def typed_blocks(argv: list[str], roots: list[Path] | None = None) -> dict[str, type]:
    """The blocks of the config ``argv`` composes that have a schema (``ssdx.cli.schema.SCHEMAS``), each with
    its dataclass: the groups whose chosen option (``config.yaml``'s default, the experiment's
    ``override /group: NAME``, then ``group=NAME`` on the command line) composes onto ``base``, and the
    blocks the chosen experiment loads by name (``- /fit: rc_base``), following experiments it extends."""
    roots = roots if roots is not None else [conf_dir(), *user_config_dirs(argv)]
    choices: dict[str, str] = {}
    for entry in _yaml_defaults(conf_dir() / "config.yaml"):
        if isinstance(entry, dict):
            for key, value in entry.items():
                if isinstance(value, str):
                    choices[key.replace("optional ", "").strip()] = value
    cli = {}
    for arg in argv:
        if not arg.startswith("-") and "=" in arg and "." not in arg.split("=", 1)[0]:
            key, value = arg.split("=", 1)
            cli[key.lstrip("+")] = value
    named: dict[str, type] = {}

    def experiment(name: str, depth: int = 0) -> None:
        path = _find_config("experiment", name, roots)
        if path is None or depth > 8:
            return
        for entry in _yaml_defaults(path):
            if isinstance(entry, str) and entry != "_self_":
                experiment(entry, depth + 1)
            elif isinstance(entry, dict):
                for key, value in entry.items():
                    if key.startswith("override /"):
                        choices[key.removeprefix("override /")] = str(value)
                    elif key.startswith("/") and (key[1:], str(value)) in schema.SCHEMAS:
                        named[key[1:]] = schema.SCHEMAS[(key[1:], str(value))]

    if cli.get("experiment") not in (None, "", "null") and "," not in cli["experiment"]:
        experiment(cli["experiment"])
    choices.update(cli)
    blocks = {group: schema.SCHEMAS[(group, "base")] for group, name in choices.items()
              if (group, "base") in schema.SCHEMAS and "," not in name and _is_typed(group, name, roots)}
    blocks.update(named)
    return blocks


def check_keys(argv: list[str], roots: list[Path] | None = None) -> None:
    """Refuse a command-line key that no field of its block's schema holds (``fit.curv=...``,
    ``drive.chanels=4``), naming it, the block's fields and the closest one, before Hydra composes the
    config (where it would stop with its own error).  Blocks without a schema (``sweep``) are left to
    their own checks."""
    import dataclasses

    from ssdx.core.fields import did_you_mean

    blocks = None
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("+")
        if key.startswith(("~", "hydra.")) or "." not in key:
            continue
        if blocks is None:
            blocks = typed_blocks(argv, roots)
        parts = key.split(".")
        cls = blocks.get(parts[0])
        for i, part in enumerate(parts[1:], start=1):
            if cls is None or not dataclasses.is_dataclass(cls):
                break
            fields = {f.name: f for f in dataclasses.fields(cls)}
            if part not in fields:
                block = ".".join(parts[:i])
                hint = did_you_mean(part, fields, prefix=block)
                raise ConfigError(key, value, f"not a field of the '{block}' block ({cls.__name__})"
                                  + (f"; {hint}" if hint else "")
                                  + f" Its fields: {', '.join(fields)}")
            ftype = fields[part].type  # a name in the module that declares cls (postponed annotations)
            cls = getattr(sys.modules[cls.__module__], ftype, None) if isinstance(ftype, str) else ftype


def _out_dir(cfg: DictConfig) -> Path:
    if cfg.get("out_dir"):
        return Path(cfg.out_dir)
    return Path(HydraConfig.get().runtime.output_dir)


#: a sweep's own key, and the configuration key it takes the place of in that sweep
def check_shadowed(cfg: dict[str, Any], given: frozenset[str]) -> None:
    """In the composed config ``cfg`` of a sweep, refuse a command-line value (``given``: the keys set there)
    of a key the sweep overrides with its own (``model.n_steps`` where the sweep sets ``n_steps``: the models'
    registry lines, ``ssdx.core.registry.sweep_shadows``): it would be ignored without a word."""
    sweep = cfg.get("sweep")
    if not isinstance(sweep, dict):
        return
    for own, key in registry.sweep_shadows().items():
        if own in sweep and key in given and f"sweep.{own}" not in given:
            group, _, leaf = key.partition(".")
            raise ConfigError(key, (cfg.get(group) or {}).get(leaf), f"the sweep '{sweep.get('name', '?')}' "
                              f"sets its own {own} ({sweep[own]}), which its runs use instead",
                              fix=f"Set sweep.{own}=... instead")


def check_seed(seed: object) -> int:
    """``seed``, the run's random seed, if it is a non-negative integer; else :class:`ConfigError`.

    Every generator the seed reaches is NumPy's, seeded through ``numpy.random.SeedSequence``
    (``default_rng(seed)``, or the seed as one word of an entropy list, e.g. fio's ``(seed, job,
    clone)``).  SeedSequence takes a non-negative integer of any size and refuses a negative one, so
    that is the whole rule: no upper bound (fio's own ``randseed``, which replaces it in the same
    entropy list, goes to 2^64 - 1)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError("seed", seed, "a non-negative integer (NumPy's SeedSequence, which seeds every "
                                        "generator here, takes no negative seed)")
    return seed


def check_quiet(quiet: object) -> bool:
    """``quiet`` (no progress bar) if it is a boolean; else :class:`ConfigError`.  The root config is not
    typed, so Hydra passes ``quiet=maybe`` as a string and ``quiet=0.5`` as a float, which would otherwise
    be read as true or false without a word."""
    if not isinstance(quiet, bool):
        raise ConfigError("quiet", quiet, "true or false (true: no progress bar)")
    return quiet


#: set once Hydra has composed the configuration and called :func:`run`: an exit before it is Hydra's
#: refusal of the configuration (a value of the wrong type, a malformed override), not a failed job
_composed: list[bool] = []
#: the ``sweep_file`` the command line gave, made absolute (before it is turned into a registered sweep):
#: what a run's recorded arguments name instead of that sweep (:func:`job_args`)
_sweep_file: list[str] = []


def run(cfg: DictConfig) -> None:
    """Run the job of ``cfg.task`` (``ssdx.core.registry``) and print its lines; configuration errors exit
    with status 2, failed sweep chunks with status 1."""
    from ssdx.core import registry

    _composed.append(True)
    out = _out_dir(cfg)
    executor = None
    logger: loggers.NullLogger | loggers.WandbLogger = loggers.NullLogger()
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
        seed = check_seed(container.get("seed", 0))
        quiet = check_quiet(container.get("quiet", False))
        logger = loggers.from_config(container.get("logger"), seed=seed)
        job = registry.job_for(container)
        if job.name == "sweep":
            check_shadowed(container, io.command_line_keys())
        registry.check_sources(job, container)  # workload.fio / trace_path / synthetic only where read
        if job.executor:
            executor = executors.from_config(container.get("runner"))
        logger.start(container, out)
        run_dir.save_args(out, job_args())
        s = registry.run(job, container, out, progress=not quiet, executor=executor,
                         chunk_size=(container.get("runner") or {}).get("chunk_size"))
        for line in registry.lines(job, s, out):
            print(line)
        page = write_page(out)
        if page is not None:
            print(f"report: {page}")
        logger.finish(s, out)
        if logger.name == "wandb":
            where = f"{logger.dir or out}/wandb"
            print(f"W&B run ({logger.mode}): {where}" + (f"; upload with: wandb sync {where}/offline-run-*"
                                                         if logger.mode == "offline" else ""))
    except ConfigError as e:
        progress.close_open()  # the message starts on its own line, not after a bar's
        logger.abort()
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(2)
    except executors.JobsFailed as e:
        progress.close_open()
        logger.abort()
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(1)
    except BaseException:  # an error or Ctrl-C: the W&B run is closed as failed, then the error goes on
        progress.close_open()
        logger.abort()
        raise
    finally:
        if executor is not None and hasattr(executor, "close"):
            executor.close()


def job_args() -> list[str]:
    """This job's own arguments as Hydra composed it (its task overrides: one job of a multirun, no
    ``hydra.*`` and no ``-m``), with the sweep a ``sweep_file=PATH`` registered named by its file again,
    so that the arguments rerun the job as given."""
    from hydra.core.hydra_config import HydraConfig

    try:
        task = [str(o) for o in HydraConfig.get().overrides.task]
    except ValueError:  # not under Hydra (a test calling run() directly)
        return []
    if _sweep_file:
        task = [f"sweep_file={_sweep_file[0]}" if o.split("=", 1)[0] == "sweep" and
                o.split("=", 1)[1].startswith("file_") else o for o in task]
    return task


def write_page(out: Path) -> Path | None:
    """Write the run's ``report.html`` (``ssdx.report.pages``); a page that cannot be drawn is said on stderr
    and loses nothing (the results are written before it).  None where nothing was written."""
    from ssdx.report import pages

    if not (out / "summary.json").is_file():
        return None
    try:
        return pages.write_report(out)
    except Exception as e:  # noqa: BLE001 - the run's results stand; the page is a view of them
        print(f"ssdx: report.html not written ({type(e).__name__}: {e}); the results above are complete",
              file=sys.stderr)
        return None


#: the most CPU host devices ``SSDX_HOST_DEVICES`` may ask for.  A sanity cap of this project's choosing,
#: not a limit of XLA: ``--xla_force_host_platform_device_count`` takes any positive count.  The local
#: runner gives each host device one worker thread by default (``executors._in_flight``), all sharing
#: this process's cores, so devices beyond the core count only add threads that contend; and XLA builds
#: every device at start-up, so start time and memory grow with the count (JAX 0.10 on a 2-core x86
#: host: 512 devices start in about 0.5 s and 70 MB more than 1; 2048 in about 2 s and 220 MB more)
MAX_HOST_DEVICES = 512


def host_devices(env: dict | None = None) -> None:
    """Expose ``SSDX_HOST_DEVICES=N`` CPU cores as N XLA host devices, so that the local runner spreads
    chunks over them; by default one device, on which the runner keeps several chunks in flight
    (``ssdx.sweep.executors``), compiling each kernel once rather than once per device.

    Only when ``XLA_FLAGS`` sets no device count already.  It affects only JAX's CPU platform (a GPU run
    keeps its GPUs), and must run before JAX starts a backend.  A value that is not an integer from 1 to
    :data:`MAX_HOST_DEVICES` raises :class:`ConfigError` (XLA builds every device as it starts)."""
    env = os.environ if env is None else env
    flags = env.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    want = env.get("SSDX_HOST_DEVICES", "").strip()
    if not want:
        return
    if not re.fullmatch(r"[0-9]+", want) or not 1 <= int(want) <= MAX_HOST_DEVICES:  # ASCII digits only
        raise ConfigError("SSDX_HOST_DEVICES", want, f"an integer 1 <= N <= {MAX_HOST_DEVICES} (CPU host "
                          "devices, one chunk in flight each)",
                          fix="Set the environment variable to such a number, or unset it for one device")
    n = int(want)
    if n > 1:
        env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


def print_help() -> None:
    """``ssdx --help``: the page of ``conf/config.yaml``'s ``hydra.help``, printed without composing a
    configuration.  Hydra's own ``--help`` would compose one and list every config group's options,
    copying its whole config repository once per group (seconds on a small machine), for lists this page
    does not show; ``--hydra-help`` is still Hydra's."""
    page = OmegaConf.load(conf_dir() / "config.yaml")
    OmegaConf.register_new_resolver("ssdx_choices", help_choices, replace=True)
    print(page.hydra.help.template)  # its interpolations (header, footer, choices) resolve as it is read


def main() -> None:
    """Console script ``ssdx``."""
    from ssdx.sweep import source

    _composed.clear()  # a process (a test) may call main() more than once
    _sweep_file[:] = [str(Path(a.split("=", 1)[1]).expanduser().resolve()) for a in sys.argv[1:]
                      if a.split("=", 1)[0].lstrip("+") == source.FIELD and "=" in a][:1]
    if sys.argv[1:2] == ["dashboard"]:  # a page over run directories, not a job: no configuration
        from ssdx.report import dashboard

        sys.exit(dashboard.main(sys.argv[2:]))
    try:
        host_devices()
        argv, from_file = source.split_argv(sys.argv[1:])
        check_choices(argv)
        check_keys(argv)
    except ConfigError as e:
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(2)
    if "--help" in argv or "-h" in argv:
        print_help()
        return
    if from_file is not None:
        sys.argv[1:] = [*argv, f"sweep={source.store_name(from_file)}"]
    schema.register()
    OmegaConf.register_new_resolver("ssdx_choices", help_choices, replace=True)
    register_sweeps(from_file)
    try:
        hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(run)()
    except SystemExit as e:
        if e.code == 1 and not _composed:  # Hydra printed why it could not compose the configuration
            print("ssdx: the configuration was refused as it was composed (above); nothing was computed",
                  file=sys.stderr)
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
