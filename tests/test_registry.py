"""The job and sweep-model registry (``ssdx.core.registry``) against the configs it serves.

Every experiment of ``conf/experiment`` has a job and every job its experiments; every sweep of
``sweeps/`` a model spec, whose builder yields exactly the metrics the spec lists (traced with
``jax.eval_shape``, no model run); formatters print hand-computed lines; a bad name or key is refused
naming it.
"""

import ast
import dataclasses
from pathlib import Path

import jax
import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ssdx.cli import main, schema
from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.paths import conf_dir, sweeps_dir
from ssdx.sweep import job as sweep_job

EXPERIMENTS = sorted(p.stem for p in (conf_dir() / "experiment").glob("*.yaml"))
SWEEPS = sorted(p.stem for p in sweeps_dir().glob("*.yaml"))


@pytest.fixture(scope="module")
def composed():
    """``compose(overrides) -> container``: the config the CLI would run, without running it."""
    schema.register()
    main.register_sweeps()

    def run(*overrides: str) -> dict:
        with initialize_config_dir(str(conf_dir()), version_base="1.3"):
            return OmegaConf.to_container(compose("config", list(overrides)), resolve=True)

    return run


def test_every_experiment_has_a_job_and_every_job_its_experiments(composed):
    named = {e: j.name for j in registry.JOBS.values() for e in j.experiments}
    assert sorted(named) == EXPERIMENTS  # no experiment without a job, no job naming a missing file
    for exp in EXPERIMENTS:
        cfg = composed(f"experiment={exp}")
        assert cfg["task"] == named[exp], exp  # the file selects the job the registry says
        job = registry.job_for(cfg)
        registry.check_blocks(job, cfg)  # what the job cannot run without, the experiment gives
        assert set(job.required) <= set(job.blocks)
    every = {j.name for j in registry.JOBS.values()}
    assert every - {"sweep"} == set(named.values())  # each job but the sweep is some experiment's


def test_every_registered_function_resolves():
    for j in registry.JOBS.values():
        assert callable(registry.resolve(j.run)) and callable(registry.resolve(j.lines)), j.name
    for m in registry.SWEEP_MODELS.values():
        own = (m.base_columns, m.prepare, m.build, m.run, m.rows, m.complete, m.fields)
        refs = [m.lines, *m.checks] + [r for r in own if r]
        assert all(callable(registry.resolve(r)) for r in refs), m.name
        # the chunked runner on a vmapped model (build), its rows runner (rows) or its own, one of them
        assert [m.build, m.run, m.rows].count(None) == 2, m.name
        assert all(isinstance(x, str) for x in m.metric_names()), m.name
        assert m.reduces == (m.run is None)


def test_every_sweep_has_a_model_spec_and_every_spec_a_sweep(composed):
    models = {}
    for name in SWEEPS:
        sweep = composed(f"sweep={name}")["sweep"]
        models[name] = registry.sweep_model(sweep).name
    assert set(models.values()) == set(registry.SWEEP_MODELS)


@pytest.mark.parametrize("name", ["quick", "tmt_grid", "wa_spare"])
def test_a_sweep_model_builds_the_metrics_its_spec_lists(composed, name):
    """One configuration of a registered sweep through its model's builder; the per-configuration function
    is traced (``eval_shape``: shapes only, nothing computed) and returns exactly the spec's scalars."""
    cfg = composed(f"sweep={name}")
    spec = registry.sweep_model(cfg["sweep"])
    cols, _, _ = sweep_job.sweep_columns(cfg["sweep"], cfg)
    cols = {k: v[:1] for k, v in cols.items()}
    trees, groups, factory, n_steps = registry.resolve(spec.build)(cols, cfg["sweep"], cfg, np.float32)
    assert n_steps >= 1 and [idx.tolist() for _, idx in groups] == [[0]]
    out = jax.eval_shape(jax.vmap(factory(groups[0][0])), *trees)
    assert sorted(out) == sorted(spec.metrics)
    assert all(v.shape == (1,) for v in out.values())  # one scalar per configuration


def test_the_sweep_runner_imports_no_model_or_job():
    tree = ast.parse(Path(registry.__file__).parents[1].joinpath("sweep", "runner.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
              for a in n.names]  # from ssdx.models import fluid -> ssdx.models.fluid.model
    jobs = ("ssdx.models", "ssdx.tasks", "ssdx.sweep.job", "ssdx.params")
    assert not [m for m in names if m.startswith(jobs)], names


def test_the_hubs_import_no_model():
    # what the CLI, the sweep package (its job included), the reports and the trace analysis need of a
    # model comes from its registry line (resolved by name), so a model's change stays in its folder and
    # the registry
    root = Path(registry.__file__).parents[1]
    for path in [*root.glob("cli/*.py"), *root.glob("sweep/*.py"), *root.glob("report/*.py"),
                 root / "tasks.py"]:
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                  for a in n.names]
        assert not [m for m in names if m.startswith("ssdx.models")], path.name
        # nor a registered model's name as a literal: a model's role (the default sweep model, the one the
        # device generates) is a registry entry's, so registering a model changes no hub
        literals = {n.value for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        named = literals & set(registry.SWEEP_MODELS)
        assert not named, (path.name, named)


def test_a_sweep_key_only_other_models_read_is_refused_naming_them():
    from ssdx.sweep import outputs

    assert registry.model_keys() == {"n_steps": ("fluid",), "rounds": ("gc",),
                                     "requests": ("engine", "hybrid"), "cost": ("engine",)}
    assert registry.sweep_shadows() == {"n_steps": "model.n_steps", "rounds": "gc.rounds",
                                        "requests": "workload.requests"}
    with pytest.raises(ConfigError, match=r"sweep.rounds.*read by gc sweeps only; a fluid sweep would"):
        sweep_job.check_model_keys({"name": "s", "rounds": 3}, "fluid", chunked=True)
    with pytest.raises(ConfigError, match=r"sweep.requests.*read by engine and hybrid sweeps only"):
        sweep_job.check_model_keys({"requests": 300}, "gc", chunked=True)
    sweep_job.check_model_keys({"requests": 300, "cost": {}}, "engine", chunked=True)
    assert outputs.default_sort("thermal") == ("written_gb", False)
    assert outputs.default_sort("hybrid") == ("time_s", True)  # a model without a ranked table: the fluid's


def test_the_runner_needs_trees_from_the_factory_or_the_caller():
    from ssdx.sweep import runner

    cols = {"drive.nand": np.asarray(["tlc"])}
    with pytest.raises(ValueError, match="trees and groups"):
        runner.run(cols, lambda flag: (lambda x: {"y": x}), 1, progress=False)


def test_a_bad_job_or_model_name_is_refused_naming_it():
    with pytest.raises(ConfigError) as e:
        registry.job("fil")
    assert e.value.field == "task" and "'fill'" in str(e.value) and "'mqsim'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        registry.sweep_model({"model": "hybird"})
    assert e.value.field == "sweep.model" and "'hybrid'" in str(e.value)
    with pytest.raises(ConfigError) as e:  # a hybrid sweep has no columns for the chunked runner
        sweep_job.sweep_space({"model": "hybrid"}, {})
    assert e.value.field == "sweep.model" and "own runner" in str(e.value)
    with pytest.raises(ConfigError) as e:  # a model that does not reduce in the runner keeps its table
        sweep_job.run_sweep({"model": "hybrid", "keep": {"top_k": {"by": "iops"}}}, {}, Path("unused"))
    assert e.value.field == "sweep.keep" and "a hybrid sweep keeps its whole table" in str(e.value)
    with pytest.raises(ConfigError) as e:
        registry.check_blocks(registry.job("gc_fill"), {"task": "gc_fill"})
    assert e.value.field == "fill" and "experiment=thnsns120_fill" in str(e.value)


def test_fio_is_refused_by_the_jobs_and_models_that_do_not_take_it(composed):
    takes = registry.source_readers("fio")
    assert {"experiment=aldrin_pro_fill", "experiment=trace_replay", "experiment=boot_qd1",
            "sweeps with model: fluid", "sweeps with model: thermal"} <= set(takes)
    assert not {"experiment=wa_uniform", "experiment=thnsns120_fill", "experiment=mqsim",
                "experiment=trace_analyse", "sweeps with model: gc", "sweeps with model: hybrid"} & set(takes)
    assert not registry.job_for(composed("sweep=wa_spare")).fio
    assert registry.job_for(composed("sweep=quick")).fio
    hybrid = registry.job_for(composed("sweep=nand_per_workload"))
    assert not hybrid.chunk_size and hybrid.lines.endswith(":hybrid_sweep")


def test_formatters_print_hand_computed_lines(tmp_path):
    wa = {"policy": "greedy", "pattern": "uniform", "spare_factor": 0.2, "pages_per_block": 32,
          "write_amplification": 2.3456, "analytic_write_amplification": 2.3, "relative_error": 0.0198,
          "steady_state_round": 7, "mb_s": 412.6}
    assert registry.lines(registry.job("wa"), wa, tmp_path) == [
        "greedy, uniform, S_f 0.2, b 32: WA 2.346 (analytic 2.300, +1.98 %); SNIA steady state at round 7; "
        "413 MB/s",
        f"outputs: {tmp_path / 'summary.json'}, {tmp_path / 'wa_rounds.png'}"]
    an = {"trace": "t.csv", "format": "msr", "requests": 10, "read_fraction": 0.123456,
          "sequential_fraction": 0.5, "footprint_bytes": 2**31, "skipped_lines": 2, "unsorted_requests": 0}
    assert registry.lines(registry.job("analyse"), an, tmp_path)[0] == (
        "t.csv (msr): 10 requests, read fraction 0.1235, 50.00 % sequential, footprint 2.00 GiB; "
        "2 malformed lines skipped")


def test_every_schema_is_a_dataclass_stored_under_its_group():
    for (group, name), cls in schema.SCHEMAS.items():
        assert dataclasses.is_dataclass(cls) and name.endswith("base"), (group, name)


@pytest.mark.parametrize("argv, key, near", [
    (["experiment=fit_fill", "fit.curv=x.csv"], "fit.curv", "fit.curve"),
    (["experiment=fit_rc", "fit.curve=x.csv"], "fit.curve", None),  # fit_rc's fit block has series
    (["experiment=thnsns120_fill", "fill.set=3"], "fill.set", "fill.sets"),
    (["experiment=boot_qd1", "boot.drive=[a]"], "boot.drive", "boot.drives"),
    (["experiment=tmt_optimize", "+optimize.stpes=3"], "optimize.stpes", "optimize.steps"),
    (["experiment=hybrid_validate", "validate.request=2000"], "validate.request", "validate.requests"),
    (["drive.power.idle=1"], "drive.power.idle", "drive.power.idle_w"),
    (["experiment=harsh_throttle", "thermal.rc.c_ctl=3"], "thermal.rc.c_ctl", "thermal.rc.c_ctrl"),
])
def test_a_mistyped_key_is_refused_naming_it(argv, key, near):
    with pytest.raises(ConfigError) as e:
        main.check_keys(argv)
    assert e.value.field == key
    assert (f"did you mean '{near}'" in str(e.value)) if near else "did you mean" not in str(e.value)


def test_right_keys_pass_the_key_check():
    main.check_keys(["experiment=fit_fill", "fit.curve=x", "fit.rules=[static]", "drive.power.idle_w=2",
                     "thermal.rc.c_ctrl=3", "sweep.chunk_size=4", "hydra.run.dir=x", "nand=qlc",
                     "nand.t_prog_us=900", "+gc.d=4", "runner.address=auto", "logger.mode=offline"])
    main.check_keys(["experiment=fit_rc", "fit.series=s.jsonl", "fit.fields=[c_case]"])
