"""The registry of ssdx's jobs and sweep models: what ``ssdx`` runs for each ``task`` and ``sweep.model``.

A :class:`JobSpec` names, for one value of ``task`` (set by an experiment, ``conf/experiment/NAME.yaml``):
the function that runs it, the config blocks it reads, which workload sources it reads (``workload.fio``,
``workload.trace_path``, ``workload.synthetic``), whether it takes a progress bar or a sweep executor, and
the formatter of the lines the CLI prints (``ssdx.models.<model>.console``; a sweep's and a trace analysis's:
``ssdx.report.console``).  A
:class:`SweepModelSpec` names, for one ``sweep.model``: how the base columns and the checks of its
parameters are made, how its parameter trees, static groups and per-configuration function are built
for the chunked ``jit(vmap)`` runner (``ssdx.sweep.runner``), and its formatter — or, for a model whose
sweeps run elsewhere (``hybrid``: a trace replay per group, ``ssdx.models.hybrid.jobs.run_sweep``), that
runner, stated here rather than intercepted by the CLI.

Functions are named as ``"module:function"`` and imported only when used (:func:`resolve`), so importing
the registry imports no job or model module; the CLI, :func:`ssdx.sweep.job.run_sweep` and the tests read it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.params import ConfigError

#: Config blocks every job may read (the root config's own keys and groups).
COMMON = ("seed", "precision", "quiet", "logger")


@dataclass(frozen=True)
class JobSpec:
    """One job of the CLI (one value of ``task``).

    ``run`` is ``"module:function"`` taking ``(cfg, out_dir, **kw)`` (a sweep: ``(sweep, cfg, out_dir,
    **kw)``) and returning the summary it wrote; ``lines`` the formatter ``(summary, out_dir) -> lines``.
    ``blocks`` are the config blocks it reads, ``required`` those of them it cannot run without (a missing
    one is refused naming it; the others have defaults); ``experiments`` the ``conf/experiment`` files
    that select it; ``fio``, ``trace_path`` and ``synthetic`` whether it reads ``workload.fio``,
    ``workload.trace_path`` and ``workload.synthetic`` (:func:`check_sources` refuses the others);
    ``progress``/``executor``/``chunk_size`` which keyword arguments ``run`` takes."""

    name: str
    run: str
    lines: str
    experiments: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    fio: bool = False
    trace_path: bool = False
    synthetic: bool = False
    progress: bool = False
    executor: bool = False
    chunk_size: bool = False
    description: str = ""


@dataclass(frozen=True)
class SweepModelSpec:
    """One ``sweep.model``.

    For the chunked runner: ``base_columns`` (``"module:function"``, ``base_cfg -> columns``, added to the
    drive/workload columns; a model with its own runner: its whole one-row base, which
    ``ssdx.sweep.config_of`` decodes a configuration from), ``prepare`` (``base_cfg -> base_cfg``, run before
    the columns are made: a fio job as the base workload), ``checks`` (validators of the columns besides
    ``ssdx.params.validate``) and ``build`` (``(cols, sweep, base_cfg, dtype) -> (trees, groups, factory,
    n_steps)``, the inputs of :func:`ssdx.sweep.runner.run`).  A model with its own runner gives ``run``
    instead (``(sweep, cfg, out_dir, progress=, executor=) -> summary``); it does not reduce in the runner
    (``reduces`` False: ``keep`` must be ``all``).  ``fio``, ``trace_path`` and ``synthetic``: whether its
    sweeps read ``workload.fio`` (the base workload), ``workload.trace_path`` and ``workload.synthetic``
    (:func:`check_sources`).  ``blocks`` are the config blocks its columns come from; ``metrics`` the scalar
    metrics its per-configuration function returns, the table's columns besides ``config_id`` and the
    parameters (a model with its own runner lists none here: its table is that runner's), or ``"module:NAME"``
    of the tuple that lists them (:meth:`metric_names`).  ``sweep_keys``: the keys of a sweep definition
    that this model reads and some others do not (:func:`model_keys`); ``sort``: the metric its report ranks
    by when ``report.sort_by`` is not set, and whether lower is better; ``shadows``: pairs of one of its sweep
    keys and the config key whose value the sweep's replaces (:func:`sweep_shadows`).  ``device``
    (``(sweep, base_cfg) -> (factory, n_steps)``): a model whose reduced sweeps may be generated and run on
    the device (``ssdx.sweep.device``, which tabulates its leaves over the sweep factors).

    A model whose configurations are not one ``vmap``-ped function each (the request engine: a batch replays
    a shared request stream) gives ``rows`` instead of ``build``: ``"module:function"`` taking ``(cols,
    sweep, base_cfg, dtype, chunk_size, out_dir=, progress=, desc=, executor=, definition=, keep=)`` and
    returning what :func:`ssdx.sweep.runner.run` returns (it runs its chunks through
    :func:`ssdx.sweep.runner.execute`, so checkpoints, resume, reductions and executors are the same).
    ``complete`` (``(cols, sweep, base_cfg) -> cols``) finishes the expanded columns (and any one row
    ``ssdx.sweep.config_of`` decodes); ``fields`` (``sweep -> None``) refuses a swept field the model has
    as a column but does not read."""

    name: str
    lines: str
    base_columns: str | None = None
    prepare: str | None = None
    checks: tuple[str, ...] = ()
    build: str | None = None
    run: str | None = None
    rows: str | None = None
    complete: str | None = None
    fields: str | None = None
    blocks: tuple[str, ...] = ()
    fio: bool = True
    trace_path: bool = False
    synthetic: bool = False
    reduces: bool = True
    metrics: tuple[str, ...] | str = ()
    sweep_keys: tuple[str, ...] = ()
    shadows: tuple[tuple[str, str], ...] = ()
    sort: tuple[str, bool] = ("time_s", True)
    device: str | None = None
    description: str = ""

    def metric_names(self) -> tuple[str, ...]:
        """The metrics of :attr:`metrics` (the tuple a ``"module:NAME"`` names, imported now)."""
        return tuple(resolve(self.metrics)) if isinstance(self.metrics, str) else self.metrics


def resolve(ref: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names (imported now)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


# ------------------------------------------------------------------------------------ model factories

def fluid_inputs(cols: Mapping[str, np.ndarray],
                 dtype=np.float32) -> tuple[tuple, list[tuple[bool, np.ndarray]]]:
    """The fluid model's stacked ``(Drive, Workload)`` trees and its static groups
    (:func:`idle_gap_groups`)."""
    from ssdx import params

    trees = params.build(cols, dtype=dtype)
    return trees, idle_gap_groups(trees[1])


def idle_gap_groups(workload) -> list[tuple[bool, np.ndarray]]:
    """``(idle_gaps, indices)`` for the configurations without and with idle gaps (non-empty groups): the
    fluid step splits at idle gaps only when the workload has bursts and idle time (a static choice)."""
    has = (np.asarray(workload.burst_bytes) > 0) & (np.asarray(workload.idle_s) > 0)
    return [(flag, np.flatnonzero(has == flag)) for flag in (False, True) if np.any(has == flag)]


def fluid_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory of the per-configuration function a fluid sweep vmaps, given the static ``idle_gaps`` flag:
    (Drive, Workload) -> dict of scalars (``ssdx.models.fluid.model.metrics``).  Its ``inputs`` attribute
    (:func:`fluid_inputs`) builds the trees and groups the runner needs when none are given."""
    from ssdx.models.fluid import model as fluid
    factory = lambda idle_gaps: partial(fluid.metrics, n_steps=n_steps, idle_gaps=idle_gaps)  # noqa: E731
    factory.inputs = fluid_inputs  # type: ignore[attr-defined]
    return factory


def thermal_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory for the coupled write/power/thermal model: (Drive, Workload, Power, Thermal) -> scalars
    (``ssdx.models.thermal.coupled.metrics``); one static group."""
    from ssdx.models.thermal import coupled
    return lambda _flag: partial(coupled.metrics, n_steps=n_steps)


def fluid_steps(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any]) -> int:
    """Scan steps of a ``model: fluid`` sweep: ``sweep.n_steps``, default ``model.n_steps`` (checked)."""
    from ssdx.core import io

    return io.scan_steps(sweep.get("n_steps", base_cfg["model"]["n_steps"]), "sweep.n_steps")


def fluid_device(sweep: Mapping[str, Any], base_cfg: Mapping[str, Any]) -> tuple[Callable, int]:
    """The device path's model of a ``model: fluid`` sweep: its factory (:func:`fluid_model`) and scan
    steps (:func:`fluid_steps`)."""
    n_steps = fluid_steps(sweep, base_cfg)
    return fluid_model(n_steps), n_steps


def fluid_build(cols: Mapping[str, np.ndarray], sweep: Mapping[str, Any], base_cfg: Mapping[str, Any],
                dtype=np.float32) -> tuple:
    """Runner inputs of a ``model: fluid`` sweep (:func:`fluid_steps` scan steps)."""
    n_steps = fluid_steps(sweep, base_cfg)
    trees, groups = fluid_inputs(cols, dtype)
    return trees, groups, fluid_model(n_steps), n_steps


def thermal_build(cols: Mapping[str, np.ndarray], sweep: Mapping[str, Any], base_cfg: Mapping[str, Any],
                  dtype=np.float32) -> tuple:
    """Runner inputs of a ``model: thermal`` sweep: the four stacked trees, one group, the step count from
    ``thermal.duration_s`` / ``thermal.dt_s`` (``ssdx.models.thermal.params.n_steps``)."""
    from ssdx import api

    trees, n_steps = api.build_thermal(dict(cols), dtype=dtype)
    return trees, [(False, np.arange(len(cols["drive.nand"])))], thermal_model(n_steps), n_steps


def thermal_columns(base_cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The ``power.*`` and ``thermal.*`` base columns of a thermal sweep (the drive's power block needed)."""
    from ssdx.models.thermal import params as thermal_params
    if "power" not in base_cfg["drive"]:
        raise ConfigError("drive.power", None, "a thermal sweep needs the drive's power block")
    return thermal_params.columns(base_cfg["drive"]["power"], base_cfg["thermal"])


def fio_fill_base(base_cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """A fluid or thermal sweep's base config with the fill a fio write job sets as its workload
    (``workload.fio``: ``ssdx.models.engine.jobs.with_fio_fill``); unchanged without one."""
    if not base_cfg.get("workload", {}).get("fio"):
        return base_cfg
    from ssdx.models.engine.jobs import with_fio_fill
    return with_fio_fill(base_cfg)[0]


def gc_columns(base_cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The ``gc.*`` base columns of a GC sweep (``pages_per_block`` resolved from the drive's NAND)."""
    from ssdx.models.gc import jobs as tasks_gc
    from ssdx.models.gc import params as gc_params
    return gc_params.columns(tasks_gc.gc_config(base_cfg))


# ----------------------------------------------------------------------------------------- registry

_CONSOLE = "ssdx.report.console"

JOBS: dict[str, JobSpec] = {s.name: s for s in (
    JobSpec("sweep", "ssdx.sweep.job:run_sweep", f"{_CONSOLE}:sweep", (), ("sweep", "runner"), ("sweep",),
            fio=True, trace_path=True, progress=True, executor=True, chunk_size=True,
            description="a sweep definition (sweeps/NAME.yaml or sweep_file=); per model: SWEEP_MODELS"),
    JobSpec("fill", "ssdx.models.fluid.jobs:run_fill", "ssdx.models.fluid.console:fill", ("aldrin_pro_fill",),
            ("drive", "nand", "workload", "model"), fio=True,
            description="whole-drive fill of one configuration (fluid model)"),
    JobSpec("thermal", "ssdx.models.thermal.jobs:run_thermal", "ssdx.models.thermal.console:thermal",
            ("sn8e_thermal", "harsh_throttle"), ("drive", "nand", "workload", "thermal"), fio=True,
            description="coupled write/power/thermal run with HCTM throttling"),
    JobSpec("tmt_optimize", "ssdx.models.thermal.jobs:run_tmt_optimize",
            "ssdx.models.thermal.console:tmt_optimize",
            ("tmt_optimize",), ("drive", "nand", "workload", "thermal", "optimize"), fio=True, progress=True,
            description="host TMT thresholds by Optax against the exhaustive grid"),
    JobSpec("fit_rc", "ssdx.models.thermal.jobs:run_fit_rc",
            "ssdx.models.thermal.console:fit_rc", ("fit_rc",),
            ("drive", "nand", "workload", "thermal", "fit"),
            description="RC thermal network fitted to a measured temperature series"),
    JobSpec("fit_fill", "ssdx.models.fluid.fit_job:run_fit_fill",
            "ssdx.models.fluid.console:fit_fill", ("fit_fill",),
            ("drive", "nand", "workload", "fit"), fio=True,
            description="fluid-model drive fitted to a measured fill curve"),
    JobSpec("wa", "ssdx.models.gc.jobs:run_wa", "ssdx.models.gc.console:wa", ("wa_uniform",),
            ("drive", "nand", "workload", "gc"),
            description="steady-state write amplification of the block-level GC model"),
    JobSpec("gc_fill", "ssdx.models.gc.jobs:run_gc_fill",
            "ssdx.models.gc.console:gc_fill", ("thnsns120_fill",),
            ("drive", "nand", "workload", "gc", "fill"), ("fill",),
            description="timed write sets on a GC'd drive, secure erase, more sets"),
    JobSpec("analyse", "ssdx.tasks:run_analyse", f"{_CONSOLE}:analyse", ("trace_analyse",), ("workload",),
            trace_path=True, description="statistics of a block trace"),
    JobSpec("replay", "ssdx.models.engine.jobs:run_replay",
            "ssdx.models.engine.console:replay", ("trace_replay",),
            ("drive", "nand", "workload", "engine"), fio=True, trace_path=True, synthetic=True, progress=True,
            description="a trace, synthetic stream or fio job through the request engine"),
    JobSpec("boot", "ssdx.models.engine.jobs:run_boot", "ssdx.models.engine.console:boot", ("boot_qd1",),
            ("drive", "nand", "workload", "engine", "boot"), fio=True, progress=True,
            description="QD1 latencies and the OS boot log per drive preset"),
    JobSpec("mqsim", "ssdx.models.engine.mqsim_job:run_mqsim", "ssdx.models.engine.console:mqsim", ("mqsim",),
            ("engine", "mqsim"), progress=True,
            description="MQSim's ssdconfig.xml and workload.xml on the request engine"),
    JobSpec("hybrid_sensitivity", "ssdx.models.hybrid.studies:run_sensitivity",
            "ssdx.models.hybrid.console:hybrid_sensitivity",
            ("hybrid_sensitivity",), ("workload", "hybrid", "sensitivity", "runner"), trace_path=True,
            progress=True, executor=True,
            description="one 2D FG MLC characteristic at a time on 3D CT TLC (SCM/NAND hybrid)"),
    JobSpec("hybrid_validate", "ssdx.models.hybrid.studies:run_validate",
            "ssdx.models.hybrid.console:hybrid_validate",
            ("hybrid_validate",), ("workload", "hybrid", "validate", "runner"), trace_path=True,
            progress=True, executor=True,
            description="the hybrid SSD study's findings checked on the model"),
)}

#: The config schemas each model declares in its folder (``ssdx/models/<model>/conf.py``), by the
#: ``(group, name)`` Hydra stores each under: ``conf/<group>/*.yaml`` name ``base`` in their defaults list,
#: an experiment names its blocks' (``- /fit: rc_base``).  ``ssdx.cli.schema`` stores them beside the
#: drive, NAND and workload schemas.
CONF_SCHEMAS: dict[tuple[str, str], str] = {
    ("model", "base"): "ssdx.models.fluid.conf:ModelConf",
    ("fit", "fill_base"): "ssdx.models.fluid.conf:FitFillConf",
    ("thermal", "base"): "ssdx.models.thermal.conf:ThermalConf",
    ("fit", "rc_base"): "ssdx.models.thermal.conf:FitRcConf",
    ("optimize", "base"): "ssdx.models.thermal.conf:OptimizeConf",
    ("gc", "base"): "ssdx.models.gc.conf:GcConf",
    ("fill", "base"): "ssdx.models.gc.conf:FillConf",
    ("engine", "base"): "ssdx.models.engine.conf:EngineConf",
    ("boot", "base"): "ssdx.models.engine.conf:BootConf",
    ("mqsim", "base"): "ssdx.models.engine.conf:MqsimConf",
    ("hybrid", "base"): "ssdx.models.hybrid.conf:HybridConf",
    ("sensitivity", "base"): "ssdx.models.hybrid.conf:HybridStudyConf",
    ("validate", "base"): "ssdx.models.hybrid.conf:HybridStudyConf",
}

SWEEP_MODELS: dict[str, SweepModelSpec] = {s.name: s for s in (
    SweepModelSpec("fluid", f"{_CONSOLE}:sweep", build="ssdx.core.registry:fluid_build",
                   prepare="ssdx.core.registry:fio_fill_base",
                   blocks=("drive", "nand", "workload", "model"),
                   metrics=("cache_gb", "capacity_gb", "direct_gb", "folding_gb", "folding_mb_s",
                            "host_mb_s", "mean_mb_s", "min_mb_s", "native_mb_s", "p5_mb_s", "pslc_gb",
                            "pslc_mb_s", "raw_gb", "time_s", "written_gb"),
                   sweep_keys=("n_steps",), shadows=(("n_steps", "model.n_steps"),), sort=("time_s", True),
                   device="ssdx.core.registry:fluid_device",
                   description="fluid write model: fill time, speeds, cache phases"),
    SweepModelSpec("thermal", f"{_CONSOLE}:sweep", base_columns="ssdx.core.registry:thermal_columns",
                   prepare="ssdx.core.registry:fio_fill_base",
                   checks=("ssdx.models.thermal.params:validate",), build="ssdx.core.registry:thermal_build",
                   blocks=("drive", "nand", "workload", "thermal"),
                   metrics=("energy_j", "max_composite_k", "max_nand_k", "mb_per_j", "mean_mb_s",
                            "mean_power_w", "p5_mb_s", "throttled_mean_mb_s", "throttled_s",
                            "time_above_cctemp_s", "time_above_wctemp_s", "time_tmt1_s", "time_tmt2_s",
                            "tmt1_transitions", "tmt2_transitions", "unthrottled_mean_mb_s", "written_gb"),
                   sort=("written_gb", False), description="coupled write/power/thermal model"),
    SweepModelSpec("gc", f"{_CONSOLE}:sweep", base_columns="ssdx.core.registry:gc_columns",
                   checks=("ssdx.models.gc.params:validate",), build="ssdx.models.gc.jobs:sweep_model",
                   blocks=("drive", "nand", "workload", "gc"), fio=False,
                   metrics=("complete", "cycles", "erases_per_host_page", "mb_s", "precondition_wa",
                            "steady_state_round", "write_amplification"),
                   sweep_keys=("rounds",), shadows=(("rounds", "gc.rounds"),),
                   sort=("write_amplification", True),
                   description="block-level GC: write amplification after SNIA preconditioning"),
    SweepModelSpec("engine", f"{_CONSOLE}:sweep", base_columns="ssdx.models.engine.sweep:base_columns",
                   checks=("ssdx.models.engine.sweep:validate",), rows="ssdx.models.engine.sweep:run_rows",
                   complete="ssdx.models.engine.sweep:complete",
                   fields="ssdx.models.engine.sweep:check_fields",
                   blocks=("drive", "nand", "workload", "engine"), trace_path=True, synthetic=True,
                   metrics="ssdx.models.engine.sweep:METRICS", sweep_keys=("requests", "cost"),
                   shadows=(("requests", "workload.requests"),), sort=("latency_p99_us", True),
                   description="request engine: latency percentiles, IOPS and cost of drive designs on a fio "
                               "job, trace or generated stream"),
    SweepModelSpec("hybrid", "ssdx.models.hybrid.console:hybrid_sweep",
                   base_columns="ssdx.models.hybrid.jobs:base_columns",
                   run="ssdx.models.hybrid.jobs:run_sweep",
                   blocks=("workload", "hybrid"), fio=False, trace_path=True, reduces=False,
                   sweep_keys=("requests",), shadows=(("requests", "workload.requests"),),
                   description="SCM/NAND hybrid drive replaying MSR streams (its own runner: one replay "
                               "per group of configurations sharing a stream)"),
)}


def model_keys() -> dict[str, tuple[str, ...]]:
    """Each sweep-definition key that only some models read, and the models that read it (another model
    would ignore the key, so its sweep is refused)."""
    keys: dict[str, tuple[str, ...]] = {}
    for spec in SWEEP_MODELS.values():
        for key in spec.sweep_keys:
            keys[key] = (*keys.get(key, ()), spec.name)
    return keys


def sweep_shadows() -> dict[str, str]:
    """Each sweep-definition key that replaces a config key's value in the sweep's runs, and that key
    (``n_steps`` -> ``model.n_steps``, ...): a value given on the command line for the config key alone would
    be ignored, so the CLI refuses it (``ssdx.cli.main.check_shadowed``)."""
    return {own: key for spec in SWEEP_MODELS.values() for own, key in spec.shadows}


def _names(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def job(name: str) -> JobSpec:
    """The job ``task=name`` runs; an unknown name is refused listing the registered ones."""
    if name not in JOBS:
        raise ConfigError("task", name, f"must be {_names(list(JOBS))}")
    return JOBS[name]


#: the model of a sweep that names none
DEFAULT_SWEEP_MODEL = "fluid"


def sweep_model(sweep: Mapping[str, Any]) -> SweepModelSpec:
    """The spec of a sweep's ``model`` (default :data:`DEFAULT_SWEEP_MODEL`); an unknown model is refused
    listing them."""
    name = sweep.get("model", DEFAULT_SWEEP_MODEL)
    if name not in SWEEP_MODELS:
        raise ConfigError("sweep.model", name, f"must be {_names(list(SWEEP_MODELS))}")
    return SWEEP_MODELS[name]


def job_for(cfg: Mapping[str, Any]) -> JobSpec:
    """The job a composed config runs: ``task``'s, and for a sweep with the model's workload sources
    (``fio``, ``trace_path``, ``synthetic``) and printer (and its own runner, where it has one)."""
    spec = job(str(cfg.get("task")))
    if spec.name != "sweep":
        return spec
    model = sweep_model(cfg.get("sweep") or {})
    return dataclasses.replace(spec, lines=model.lines, fio=model.fio, trace_path=model.trace_path,
                               synthetic=model.synthetic, chunk_size=model.run is None)


def check_blocks(spec: JobSpec, cfg: Mapping[str, Any]) -> None:
    """Refuse a config that lacks a block the job cannot run without (e.g. ``task=gc_fill`` without an
    experiment that sets ``fill``), naming the block and the experiments that set it."""
    for block in spec.required:
        if cfg.get(block) is None:
            where = (f" (set by experiment={' or experiment='.join(spec.experiments)})"
                     if spec.experiments else "")
            raise ConfigError(block, None, f"task={spec.name} needs the '{block}' block{where}")


def run(spec: JobSpec, cfg: Mapping[str, Any], out_dir: Path, *, progress: bool = True, executor=None,
        chunk_size: int | None = None) -> dict[str, Any]:
    """Run the job ``spec`` on the composed config ``cfg`` (plain containers) into ``out_dir``; returns
    its summary."""
    check_blocks(spec, cfg)
    kw: dict[str, Any] = {}
    if spec.progress:
        kw["progress"] = progress
    if spec.executor:
        kw["executor"] = executor
    if spec.chunk_size:
        kw["chunk_size"] = chunk_size
    fn = resolve(spec.run)
    if spec.name == "sweep":
        return fn(cfg["sweep"], cfg, out_dir, **kw)
    return fn(cfg, out_dir, **kw)


def lines(spec: JobSpec, summary: Mapping[str, Any], out_dir: Path) -> list[str]:
    """The lines the CLI prints for ``summary`` (the job's formatter)."""
    return resolve(spec.lines)(summary, out_dir)


#: the workload sources a job may read (``workload.<field>``), each with what it names; a replay reads one
#: of them (``ssdx.models.engine.jobs.stream``)
SOURCES = {
    "fio": "a fio job file",
    "trace_path": "a block trace, or for the hybrid studies and sweeps a directory of <volume>.csv",
    "synthetic": "a generated stream: windows11_boot | msr:<volume> | profile:<summary.json>",
}


def source_readers(field: str) -> list[str]:
    """Where ``workload.<field>`` (one of :data:`SOURCES`) is read: ``experiment=NAME`` for each job that
    reads it, ``sweeps with model: NAME`` for each sweep model."""
    jobs = [f"experiment={e}" for j in JOBS.values() if getattr(j, field) and j.name != "sweep"
            for e in j.experiments]
    return jobs + [f"sweeps with model: {m.name}" for m in SWEEP_MODELS.values() if getattr(m, field)]


def _is_set(value: Any) -> bool:
    """Whether a workload source is given: every preset and experiment leaves them null (an empty string,
    which Hydra gives for ``workload.trace_path=``, is unset too, as the jobs read it)."""
    return value is not None and value != ""


def check_sources(spec: JobSpec, cfg: Mapping[str, Any]) -> None:
    """Refuse a workload source (:data:`SOURCES`) the job ``spec`` does not read (:func:`job_for`'s spec,
    so a sweep carries its model's rule): a fio job, a trace or a generated stream given to a job that runs
    a workload of its own would be ignored without a word.  Every preset and experiment leaves the sources
    null, so any value set is the user's.  Two sources given to the one job that reads several, a replay,
    are refused where it reads them (``ssdx.models.engine.jobs.source``)."""
    w = cfg.get("workload") or {}
    if spec.name == "sweep":
        sweep = cfg.get("sweep") or {}
        here = f"a model: {sweep.get('model', 'fluid')} sweep (sweep={sweep.get('name', '?')})"
    else:
        here = f"task={spec.name}" + (f" (experiment={' or '.join(spec.experiments)})" if spec.experiments
                                      else "")
    for field in SOURCES:
        if _is_set(w.get(field)) and not getattr(spec, field):
            readers = source_readers(field)
            raise ConfigError(f"workload.{field}", w[field], f"workload.{field} ({SOURCES[field]}) is read "
                              f"only by {', '.join(readers[:-1])}{' and ' if len(readers) > 1 else ''}"
                              f"{readers[-1]}; {here} does not read it, so it would be ignored",
                              fix=f"To run this job, unset workload.{field}; or run one of those")
