"""Runners: local devices (two forced host devices) and Ray (a two-node cluster on this machine)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import mixed_sweep_cols

from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.sweep import executors, runner, store


def _cols():
    return mixed_sweep_cols()


def _workers(out_dir: Path) -> set[str]:
    files = (out_dir / "chunks").glob("chunk_*.parquet")
    return {store.chunk_info(pq.read_table(p))["worker"] for p in files}


MULTI = """
import json, sys
from pathlib import Path
import jax, numpy as np, pyarrow.parquet as pq
sys.path.insert(0, sys.argv[2])
from test_executors import _cols, _workers
from ssdx.core import registry
from ssdx.sweep import executors, runner
cols = _cols()
one = runner.run(cols, registry.fluid_model(64), 5, executor=executors.LocalExecutor(1), progress=False)
two = runner.run(cols, registry.fluid_model(64), 5, out_dir=Path(sys.argv[1]), progress=False)
base = registry.fluid_model(64)
def model(idle_gaps):  # the idle-gap kernel fails: its chunks are reported, the others kept
    if idle_gaps:
        raise RuntimeError("no idle-gap kernel")
    return base(idle_gaps)
model.inputs = base.inputs  # the fluid model's trees and idle-gap groups
failed = None
try:
    runner.run(cols, model, 5, out_dir=Path(sys.argv[1]) / "broken", progress=False)
except executors.JobsFailed as e:
    failed = sorted(int(c) for job, _ in e.failures for c in job.configs)
kept = len(list((Path(sys.argv[1]) / "broken" / "chunks").glob("chunk_*.parquet")))
idle = np.flatnonzero(np.asarray(cols["workload.burst_gb"]) > 0).tolist()
print(json.dumps({"failed_ok": failed == idle, "kept": kept,
                  "devices": [str(d) for d in jax.local_devices()],
                  "equal": one.to_pandas().equals(two.to_pandas()),
                  "workers": sorted(_workers(Path(sys.argv[1]))),
                  "meta_workers": two.schema.metadata[b"workers"].decode()}))
"""


def test_chunks_spread_over_two_host_devices_give_identical_values(tmp_path):
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", MULTI, str(tmp_path), str(Path(__file__).parent)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["devices"]) == 2
    assert out["meta_workers"] == "2"
    assert len(out["workers"]) == 2  # both devices ran chunks
    assert out["equal"]
    assert out["failed_ok"] and out["kept"] == 5  # failing chunks named; the 24 other configurations kept


def _half_fails(i, device=None):
    if i % 2:
        raise RuntimeError(f"job {i} broke")
    return {"i": i}


def _bad_value(i, device=None):
    raise ConfigError("drive.channels", -1, "integer 1 <= x <= 64")


def test_local_executor_runs_every_job_then_names_the_failed_ones():
    jobs = [executors.Job(i, _half_fails, (i,), np.asarray([10 * i])) for i in range(6)]
    done = []
    with pytest.raises(executors.JobsFailed) as err:
        for _job, res, _ in executors.LocalExecutor(1).map(jobs):
            done.append(res["i"])
    assert sorted(done) == [0, 2, 4]  # every job that could finish did (in finishing order)
    assert [j.index for j, _ in err.value.failures] == [1, 3, 5]
    assert "chunk 3 (configurations 30)" in str(err.value) and "job 3 broke" in str(err.value)
    with pytest.raises(ConfigError, match="drive.channels"):  # a bad value is not a failed chunk
        list(executors.LocalExecutor(1).map([executors.Job(0, _bad_value, (0,))]))


def _meet(barrier, i, device=None):
    barrier.wait(timeout=20)  # breaks unless another job is running at the same time
    return {"i": i, "device": str(device)}


def test_two_jobs_in_flight_on_one_device_run_at_the_same_time():
    import threading

    barrier = threading.Barrier(2)
    jobs = [executors.Job(i, _meet, (barrier, i)) for i in range(4)]
    ex = executors.LocalExecutor(1, in_flight=2)
    assert ex.workers == 1 and ex.concurrency == 2
    got = sorted(res["i"] for _job, res, _ in ex.map(jobs))
    assert got == [0, 1, 2, 3]
    assert executors.LocalExecutor(1).concurrency >= 2  # the default on one device
    assert executors.LocalExecutor(1, in_flight=1).concurrency == 1


def test_runner_fields_are_checked():
    for bad in (0, -1, 1.5, "two", True):
        with pytest.raises(ConfigError, match="runner.in_flight"):
            executors.from_config({"name": "local", "in_flight": bad})
    assert executors.from_config({"name": "local", "in_flight": 3}).concurrency == 3
    with pytest.raises(ConfigError, match="runner.devices"):
        executors.from_config({"name": "local", "devices": 99})
    with pytest.raises(ConfigError, match="runner.devices"):
        executors.from_config({"name": "local", "devices": "two"})
    with pytest.raises(ConfigError, match="runner.address"):
        executors.RayExecutor(address=5)
    with pytest.raises(ConfigError, match="runner.spread"):
        executors.RayExecutor(spread="no")
    with pytest.raises(ConfigError, match="runner.adress"):
        executors.from_config({"name": "ray", "adress": "auto"})
    with pytest.raises(ConfigError, match="runner.name"):
        executors.from_config({"name": "slurm"})
    with pytest.raises(ConfigError, match="runner.max_retries"):
        executors.RayExecutor(max_retries=-1)


# ----------------------------------------------------------------------------- Ray
def test_ray_on_one_local_node_gives_the_local_runners_rows(tmp_path):
    """The Ray executor end to end on a Ray it starts itself (one node of one CPU, as ``runner=ray`` with no
    address does): the tasks are sent, run and gathered into the local runner's rows, and the Ray it
    started is shut down on close.  The two-node cluster's tests below run in the validation tier."""
    import ray

    cols = _cols()
    ref = runner.run(cols, registry.fluid_model(64), 5, progress=False).to_pandas()
    ex = executors.RayExecutor(num_cpus=1)
    try:
        table = runner.run(cols, registry.fluid_model(64), 5, out_dir=tmp_path, progress=False, executor=ex)
        assert ex.started and ray.is_initialized()
    finally:
        ex.close()
    pd.testing.assert_frame_equal(table.to_pandas(), ref)
    assert _workers(tmp_path) and not ray.is_initialized()


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes of one CPU each on this machine (ray.cluster_utils.Cluster)."""
    import ray
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False, include_dashboard=False)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.mark.validation
def test_ray_two_nodes_identical_values_and_both_nodes_used(cluster, tmp_path):
    cols = _cols()
    ref = runner.run(cols, registry.fluid_model(64), 5, progress=False).to_pandas()
    ex = executors.RayExecutor(num_cpus=1)
    assert not ex.started and ex.workers == 2
    table = runner.run(cols, registry.fluid_model(64), 5, out_dir=tmp_path, progress=False, executor=ex)
    pd.testing.assert_frame_equal(table.to_pandas(), ref)
    nodes = {w.split("/")[0] for w in _workers(tmp_path)}
    assert len(nodes) == 2, nodes


@pytest.mark.validation
def test_ray_retries_a_failed_task_then_reports_what_still_fails(cluster, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()

    def flaky(i, device=None):  # fails on its first attempt, succeeds on the second
        mark = marks / f"{i}"
        if not mark.exists():
            mark.write_text("tried")
            raise RuntimeError(f"transient failure of job {i}")
        return {"value": np.asarray([i * 10.0])}

    jobs = [executors.Job(i, flaky, (i,), np.asarray([2 * i, 2 * i + 1])) for i in range(4)]
    got = {job.index: res["value"][0] for job, res, _ in executors.RayExecutor(max_retries=1).map(jobs)}
    assert got == {0: 0.0, 1: 10.0, 2: 20.0, 3: 30.0}
    for p in marks.iterdir():
        p.unlink()
    done = []
    with pytest.raises(executors.JobsFailed) as err:
        for job, _res, _ in executors.RayExecutor(max_retries=0).map(jobs):
            done.append(job.index)
    assert done == []
    msg = str(err.value)
    assert "4 chunk(s) failed" in msg and "chunk 2 (configurations 4, 5)" in msg
    assert "transient failure of job 2" in msg


@pytest.mark.validation
def test_ray_sweep_with_a_failing_group_keeps_the_rest_and_resumes(cluster, tmp_path):
    broken = tmp_path / "broken"
    broken.write_text("the idle-gap kernel fails while this file exists")
    cols = _cols()
    ref = runner.run(cols, registry.fluid_model(64), 5, progress=False).to_pandas()
    base = registry.fluid_model(64)

    def model(idle_gaps):
        if idle_gaps and broken.exists():
            raise RuntimeError("idle-gap kernel unavailable")
        return base(idle_gaps)

    model.inputs = base.inputs  # the fluid model's trees and idle-gap groups
    out = tmp_path / "run"
    with pytest.raises(executors.JobsFailed) as err:
        runner.run(cols, model, 5, out_dir=out, progress=False, executor=executors.RayExecutor(max_retries=1))
    idle = np.flatnonzero(np.asarray(cols["workload.burst_gb"]) > 0)
    failed = sorted(int(c) for job, _ in err.value.failures for c in job.configs)
    assert failed == idle.tolist()  # exactly the configurations of the failing chunks are reported
    assert len(list((out / "chunks").glob("chunk_*.parquet"))) == 5  # the 24 others were kept
    broken.unlink()
    table = runner.run(cols, model, 5, out_dir=out, progress=False, executor=executors.RayExecutor())
    assert int(table.schema.metadata[b"resumed_chunks"]) == 5
    pd.testing.assert_frame_equal(table.to_pandas(), ref)


@pytest.mark.validation
def test_cli_runner_ray_writes_the_local_runners_rows(cluster, tmp_path):
    env = dict(os.environ, TQDM_DISABLE="1")
    base = [sys.executable, "-m", "ssdx.cli.main", "sweep.chunk_size=16"]
    a = subprocess.run(base + [f"hydra.run.dir={tmp_path / 'local'}"], capture_output=True, text=True,
                       env=env, timeout=300)
    assert a.returncode == 0, a.stderr
    b = subprocess.run(base + [f"hydra.run.dir={tmp_path / 'ray'}", "runner=ray",
                               f"runner.address={cluster.address}"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert b.returncode == 0, b.stderr
    assert "on ray (2 workers)" in b.stdout
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "ray" / "results.parquet").to_pandas(),
                                  pq.read_table(tmp_path / "local" / "results.parquet").to_pandas())
    sa = json.loads((tmp_path / "local" / "summary.json").read_text())
    sb = json.loads((tmp_path / "ray" / "summary.json").read_text())
    assert sa["best"] == sb["best"] and sb["runner"] == {"executor": "ray", "workers": 2}


def test_cli_keeps_one_cpu_device_unless_told():
    from ssdx.cli.main import host_devices

    env = {}
    host_devices(env)
    assert "XLA_FLAGS" not in env  # one device, several chunks in flight on it
    env = {"SSDX_HOST_DEVICES": "4"}
    host_devices(env)
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
    env = {"XLA_FLAGS": "--xla_dump_to=/tmp/x", "SSDX_HOST_DEVICES": "2"}
    host_devices(env)
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=2"
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=3", "SSDX_HOST_DEVICES": "2"}
    host_devices(env)
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"  # the user's count stays


def test_chunks_in_flight_follow_the_device_and_the_cores():
    class Dev:
        def __init__(self, platform):
            self.platform = platform

    assert executors._in_flight([Dev("gpu")], cores=64) == 2
    assert executors._in_flight([Dev("cpu")], cores=1) == 2
    assert executors._in_flight([Dev("cpu")], cores=4) == 4
    assert executors._in_flight([Dev("cpu")], cores=64) == 8
    assert executors._in_flight([Dev("cpu"), Dev("cpu")], cores=2) == 1


@pytest.mark.validation
def test_ray_runs_index_ranges_of_a_device_sweep_as_the_local_runner_does(cluster, tmp_path):
    """10^5 configurations generated on the device: Ray tasks receive a part and an index range (never
    columns) and return reduction states; the outputs equal the local runner's, both nodes work."""
    from ssdx import presets
    from ssdx.sweep.job import run_sweep

    base = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
            "model": {"n_steps": 8}, "precision": "float32"}
    sweep = {"name": "ray_index", "chunk_size": 16384, "generate": "device", "on_invalid": "drop",
             "keep": {"top_k": {"k": 5, "by": "mean_mb_s", "group_by": ["drive.nand"]},
                      "pareto": {"x": "drive.dies_per_channel", "y": "mean_mb_s", "y_better": "max"},
                      "histograms": {"metrics": ["mean_mb_s"], "bins": 32, "group_by": ["drive.slc_mode"],
                                     "range": {"mean_mb_s": [10.0, 10000.0]}, "log": ["mean_mb_s"]}},
             "space": {"grid": {"drive.slc_mode": ["dynamic", "static", "pure_slc", "pure_native"],
                                "drive.nand": ["tlc", "qlc", "3d_ct_tlc", "2d_fg_mlc"],
                                "drive.dies_per_channel": [2, 4, 8, 16],
                                "drive.user_capacity_gb": [500.0, 2000.0]},
                       "random": {"n": 782, "seed": 2, "params": {
                           "workload.prefill_fraction": {"low": 0.0, "high": 0.9},
                           "drive.static_slc_gb": {"low": 4.0, "high": 64.0, "log": True}}}}}
    local = run_sweep(sweep, base, tmp_path / "local", progress=False)
    ray = run_sweep(sweep, base, tmp_path / "ray", progress=False, executor=executors.RayExecutor(num_cpus=1))
    assert local["n_defined"] == ray["n_defined"] == 100_096 and ray["generated_on"] == "device"
    assert ray["n_configs"] == local["n_configs"] and ray["dropped_rules"] == local["dropped_rules"]
    for f in ("top_k.parquet", "pareto.parquet"):
        pd.testing.assert_frame_equal(pq.read_table(tmp_path / "ray" / f).to_pandas(),
                                      pq.read_table(tmp_path / "local" / f).to_pandas(), check_exact=True)
    hist = [(tmp_path / d / "histograms.json").read_text() for d in ("ray", "local")]
    assert hist[0] == hist[1]
    nodes = {json.loads(p.read_text())["info"]["worker"].split("/")[0]
             for p in (tmp_path / "ray" / "chunks").glob("chunk_*.json")}
    assert len(nodes) == 2, nodes


def test_threads_asking_for_one_kernel_at_once_compile_it_once():
    import threading
    import time as _time

    from ssdx.sweep import runner

    calls = []

    class Lowered:
        def compile(self):
            calls.append(1)
            _time.sleep(0.2)  # long enough for every thread to ask while it compiles
            return lambda: "kernel"

    got = []
    key = ("test", object())
    threads = [threading.Thread(target=lambda: got.append(runner.compile_once(key, Lowered)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert sorted(s > 0 for _, s in got) == [False, False, False, True]  # one compile time, three waits
    assert len({id(fn) for fn, _ in got}) == 1
    def broken():
        raise RuntimeError("broken")

    with pytest.raises(RuntimeError, match="broken"):  # a failed compile leaves nothing pending
        runner.compile_once(("test", "bad"), broken)
    assert ("test", "bad") not in runner._COMPILING
