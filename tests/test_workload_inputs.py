"""Workload sources a job does not read, two sources at once, a bad ``workload.synthetic`` and a
non-boolean ``quiet``: each stops with exit 2 naming the field before anything is computed, instead of
running with the value ignored.  The CLI cases run as a user would (the ``ssdx`` console script in a
subprocess); the composed defaults of every experiment and sweep are checked in-process."""

import json

import pytest
from conftest import compose_config
from test_cli import ssdx

from ssdx.cli import main
from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.paths import conf_dir, examples_dir, sweeps_dir

TRACE = examples_dir() / "traces" / "synthetic_msr_mix.csv"
FIO = examples_dir() / "fio" / "randread_qd16.fio"


@pytest.mark.parametrize(("args", "field", "says"), [
    (("experiment=boot_qd1", f"workload.trace_path={TRACE}"), "workload.trace_path", "task=boot"),
    (("sweep=quick", f"workload.trace_path={TRACE}"), "workload.trace_path", "model: fluid sweep"),
    (("experiment=sn8e_thermal", "workload.synthetic=msr:hm_0"), "workload.synthetic", "task=thermal"),
    (("experiment=trace_replay", f"workload.trace_path={TRACE}", f"workload.fio={FIO}"), "workload.fio",
     "workload.trace_path = "),
    (("experiment=trace_replay", "workload.synthetic=foo"), "workload.synthetic", "msr:<volume>"),
    (("quiet=maybe",), "quiet", "true or false"),
], ids=["trace_path-boot", "trace_path-sweep", "synthetic-thermal", "fio-and-trace", "synthetic-foo",
        "quiet-maybe"])
def test_an_input_the_job_would_ignore_or_cannot_read_exits_2_naming_it(tmp_path, args, field, says):
    quiet = () if args[0].startswith("quiet=") else ("quiet=true",)
    r = ssdx(*args, *quiet, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2, r.stderr
    assert f"field '{field}'" in r.stderr and says in r.stderr, r.stderr
    assert "nothing was computed" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "summary.json").exists()


def test_a_job_that_reads_the_trace_still_replays_it(tmp_path):
    r = ssdx("experiment=trace_replay", f"workload.trace_path={TRACE}", "quiet=true",
             f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["trace"] == str(TRACE) and s["requests"] > 0 and s["format"] == "msr"


def _defaults():
    return ([f"experiment={p.stem}" for p in sorted((conf_dir() / "experiment").glob("*.yaml"))]
            + [f"sweep={p.stem}" for p in sorted(sweeps_dir().glob("*.yaml"))])


def test_no_experiment_or_sweep_is_refused_with_its_own_settings():
    """Every preset leaves the workload sources null and ``quiet`` false: nothing is refused by default."""
    for run in _defaults():
        cfg = compose_config(run)
        assert main.check_quiet(cfg["quiet"]) is False
        registry.check_sources(registry.job_for(cfg), cfg)
        assert not any(cfg["workload"].get(f) for f in registry.SOURCES), run


def test_the_readers_of_each_source_are_the_jobs_that_read_it():
    assert registry.source_readers("trace_path") == [
        "experiment=trace_analyse", "experiment=trace_replay", "experiment=hybrid_sensitivity",
        "experiment=hybrid_validate", "sweeps with model: engine", "sweeps with model: hybrid"]
    assert registry.source_readers("synthetic") == ["experiment=trace_replay", "sweeps with model: engine"]
    hybrid = compose_config("sweep=nand_per_workload", "workload.trace_path=DIR")
    registry.check_sources(registry.job_for(hybrid), hybrid)  # a directory of <volume>.csv: read
    with pytest.raises(ConfigError) as e:
        cfg = compose_config("sweep=nand_per_workload", "workload.synthetic=msr:hm_0")
        registry.check_sources(registry.job_for(cfg), cfg)
    assert e.value.field == "workload.synthetic" and "experiment=trace_replay" in e.value.rule


@pytest.mark.parametrize("value", [True, False])
def test_quiet_takes_a_boolean(value):
    assert main.check_quiet(value) is value
    for bad in ("maybe", 0.5, 1, None):
        with pytest.raises(ConfigError) as e:
            main.check_quiet(bad)
        assert e.value.field == "quiet" and e.value.value == bad


def test_a_sweep_run_from_python_refuses_a_trace_its_model_does_not_read(tmp_path):
    from ssdx import presets
    from ssdx.sweep import job as sweep_job

    sweep = {"name": "t", "space": {"grid": {"drive.dies_per_channel": [2, 4]}}}
    base = {"drive": presets.drive(), "workload": {**presets.workload(), "trace_path": "x.csv"}, "nand": None,
            "model": {"n_steps": 16}, "precision": "float32"}
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(sweep, base, tmp_path, progress=False)
    assert e.value.field == "workload.trace_path"
    assert not (tmp_path / "results.parquet").exists()
