"""Sweeps of the request engine (``model: engine``): rows equal one-design replays, one design rerun alone,
resume after a crash, Ray, the fio queue-depth rule, refusals, and the cost model's closed forms."""

import copy
import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from test_resume import CrashAfter

from ssdx import presets
from ssdx.models.engine import cost as engine_cost
from ssdx.models.engine import jobs as engine_jobs
from ssdx.models.engine import sweep as engine_sweep
from ssdx.params import ConfigError
from ssdx.sweep import config_of, executors
from ssdx.sweep.job import run_sweep

REQUESTS = 1500


def _base(**workload) -> dict:
    engine = presets.engine()
    engine["backend"] = "cpu"
    return {"drive": presets.drive("generic_tlc_1tb"), "workload": {**presets.workload(), **workload},
            "nand": None, "engine": engine, "seed": 0, "precision": "float32"}


def _sweep(**over) -> dict:
    s = {"name": "engine_test", "model": "engine", "requests": REQUESTS, "chunk_size": 3,
         "base": {"workload.fio": "examples/fio/oltp_rate.fio"},
         "space": {"grid": {"drive.channels": [4, 8], "drive.dram": [True, False],
                            "engine.write_back": ["gather", "eager"]}}}
    s.update(over)
    return s


def _table(out) -> pd.DataFrame:
    return pq.read_table(out / "results.parquet").to_pandas()


def _cfg_of(row: dict, base: dict) -> dict:
    """The composed config of one sweep row, as ``experiment=trace_replay`` takes it."""
    cfg = copy.deepcopy(base)
    for key, value in row.items():
        group, _, field = key.partition(".")
        if group in ("drive", "workload", "engine"):
            v = value[0].item() if isinstance(value[0], np.generic) else value[0]
            cfg[group][field] = None if isinstance(v, float) and np.isnan(v) else v
    for key in engine_sweep.SOURCES:
        field = key.split(".", 1)[1]
        cfg["workload"][field] = cfg["workload"][field] or None
    cfg["workload"]["requests"] = REQUESTS
    return cfg


def test_each_row_equals_its_design_replayed_alone(tmp_path):
    """Every row of a sweep (two groups of layouts: DRAM and DRAM-less, gather and eager, 4 and 8 channels,
    cut into chunks of 3) equals ``experiment=trace_replay`` of that one design on the same fio job."""
    base = _base()
    s = run_sweep(_sweep(), base, tmp_path / "sweep", progress=False)
    df = _table(tmp_path / "sweep")
    assert s["n_configs"] == 8 and len(df) == 8
    assert (df["workload.queue_depth"] == 32).all() and (df["engine.loop"] == "open").all()  # the job's
    assert df["read_latency_p99_us"].nunique() > 4  # the designs differ
    for i in (0, 3, 6):
        row = config_of(_sweep(), int(df["config_index"][i]), base)
        one = engine_jobs.run_replay(_cfg_of(row, base), tmp_path / f"one{i}", progress=False)
        got = df.iloc[i]
        assert got["iops"] == pytest.approx(one["iops"], rel=1e-12)
        assert got["read_latency_p99_us"] == pytest.approx(one["read_latency_us"]["p99"], rel=1e-12)
        assert got["write_latency_mean_us"] == pytest.approx(one["write_latency_us"]["mean"], rel=1e-12)
        assert got["die_utilisation_mean"] == pytest.approx(one["die_utilisation"]["mean"], rel=1e-12)
        assert got["nand_program_pages"] == one["nand"]["nand_program_pages"]
    assert ((df["channel_utilisation"] > 0) & (df["channel_utilisation"] < 1)).all()
    assert (df["flash_commands_per_request"] >= 1).all()
    assert np.allclose(df["offered_iops"], 74834.87, rtol=1e-6)  # 1,500 requests of the paced job
    behind = df["iops"] < engine_sweep.SATURATED_BELOW * df["offered_iops"]
    assert (df["saturated"] == behind).all() and 0 < df["saturated"].sum() < 8  # some 4-channel designs
    # DRAM-less designs look translation pages up in flash: more commands per request, and cost less
    dram = df["drive.dram"].astype(bool)
    assert df[~dram]["flash_commands_per_request"].min() > df[dram]["flash_commands_per_request"].max()
    assert df[~dram]["memory_usd"].max() < df[dram]["memory_usd"].min()


def test_one_design_rerun_alone_equals_its_row(tmp_path):
    base = _base()
    run_sweep(_sweep(), base, tmp_path / "all", progress=False)
    df = _table(tmp_path / "all")
    index = int(df["config_index"][5])
    s = run_sweep(_sweep(only=index), base, tmp_path / "one", progress=False)
    one = _table(tmp_path / "one")
    assert s["n_configs"] == 1 and one["config_index"].tolist() == [index]
    metrics = list(engine_sweep.METRICS)
    pd.testing.assert_frame_equal(one[metrics].reset_index(drop=True),
                                  df[df["config_index"] == index][metrics].reset_index(drop=True))
    with pytest.raises(ConfigError, match="sweep.only"):
        run_sweep(_sweep(only=8), base, tmp_path / "out", progress=False)


def test_a_crashed_reduced_sweep_resumes_to_the_same_reductions(tmp_path):
    keep = {"pareto": {"x": "cost_usd", "y": "read_latency_p99_us", "skip_if": "saturated"},
            "top_k": {"k": 2, "by": "read_latency_p99_us", "ascending": False, "group_by": ["drive.dram"]}}

    base = _base()
    run_sweep(_sweep(keep=keep, chunk_size=2), base, tmp_path / "ref", progress=False)
    d = tmp_path / "crashed"
    with pytest.raises(RuntimeError, match="simulated"):
        run_sweep(_sweep(keep=keep, chunk_size=2), base, d, progress=False, executor=CrashAfter(2))
    s = run_sweep(_sweep(keep=keep, chunk_size=2), base, d, progress=False)
    assert s["resumed_chunks"] == 2 and s["chunks"] == 4
    for f in ("top_k.parquet", "pareto.parquet"):
        pd.testing.assert_frame_equal(pq.read_table(d / f).to_pandas(),
                                      pq.read_table(tmp_path / "ref" / f).to_pandas())
    assert s["pareto"]["n_front"] == len(s["pareto"]["front"]) >= 1
    assert {"cost_usd", "read_latency_p99_us", "config_index"} <= set(s["pareto"]["front"][0])
    # the slowest designs fall behind the offered rate: the front leaves them out, the top-k (the worst) not
    top = pq.read_table(d / "top_k.parquet").to_pandas()
    front = pq.read_table(d / "pareto.parquet").to_pandas()
    assert (front["saturated"] == 0).all() and top["saturated"].max() == 1


@pytest.mark.validation
def test_ray_gives_the_local_kept_results(tmp_path):
    keep = {"pareto": {"x": "cost_usd", "y": "read_latency_p99_us"}}
    base = _base()
    run_sweep(_sweep(keep=keep), base, tmp_path / "local", progress=False)
    ex = executors.RayExecutor(num_cpus=1)
    try:
        run_sweep(_sweep(keep=keep), base, tmp_path / "ray", progress=False, executor=ex)
    finally:
        ex.close()
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "ray" / "pareto.parquet").to_pandas(),
                                  pq.read_table(tmp_path / "local" / "pareto.parquet").to_pandas())


def test_a_swept_queue_depth_wins_over_the_fio_iodepth(tmp_path):
    base = _base()
    sweep = _sweep(space={"grid": {"workload.queue_depth": [1, 4]}})
    run_sweep(sweep, base, tmp_path, progress=False)
    df = _table(tmp_path)
    assert df["workload.queue_depth"].tolist() == [1, 4]
    assert df["read_latency_p99_us"][0] != df["read_latency_p99_us"][1]
    assert config_of(sweep, 1, base)["workload.queue_depth"].tolist() == [4]
    assert config_of(_sweep(), 1, base)["workload.queue_depth"].tolist() == [32]  # the job's iodepth


def test_designs_with_host_state_of_their_own_run_in_groups_equal_to_alone(tmp_path):
    """Two entry-cache sizes cannot share one batch's host-side cache: they form two groups, each row equal
    to its design run alone."""
    base = _base()
    sweep = _sweep(base={"workload.synthetic": "msr:hm_0", "engine.map_cache": "entries"},
                   space={"grid": {"engine.map_cache_mib": [0.002, 0.25], "drive.channels": [4, 8]}})
    run_sweep(sweep, base, tmp_path / "all", progress=False)
    df = _table(tmp_path / "all")
    small = df["engine.map_cache_mib"] == 0.002
    assert df[small]["map_misses"].min() > 1.05 * df[~small]["map_misses"].max()
    for i in (0, 3):
        run_sweep({**sweep, "only": i}, base, tmp_path / f"one{i}", progress=False)
        one = _table(tmp_path / f"one{i}")
        assert one["read_latency_p99_us"][0] == df["read_latency_p99_us"][i]
    cols = {k: np.asarray(v) for k, v in config_of(sweep, 0, base).items()}
    four = {k: np.concatenate([v] * 4) for k, v in cols.items()}
    four["engine.map_cache_mib"] = np.asarray([0.002, 0.25, 0.002, 0.25])
    assert [len(idx) for _, idx in engine_sweep.groups(four)] == [2, 2]


@pytest.mark.parametrize("sweep, model, field", [
    ({"space": {"grid": {"fit.curve": ["a.csv"]}}}, "engine", "fit.curve"),
    ({"model": "fluid", "requests": None, "base": {},
      "space": {"grid": {"engine.write_buffer_mib": [4, 16]}}}, "fluid",
     "engine.write_buffer_mib"),
    ({"space": {"grid": {"workload.block_kib": [4, 128]}}}, "engine", "workload.block_kib"),
])
def test_a_field_the_model_does_not_read_is_refused_naming_it_and_the_model(sweep, model, field, tmp_path):
    with pytest.raises(ConfigError) as e:
        run_sweep({k: v for k, v in _sweep(**sweep).items() if v is not None}, _base(), tmp_path,
                  progress=False)
    assert field in str(e.value) and f"model: {model}" in str(e.value)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_two_workload_sources_in_one_design_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="exactly one workload source"):
        two = {"workload.fio": "examples/fio/oltp_rate.fio", "workload.synthetic": "msr:hm_0"}
        run_sweep(_sweep(base=two),
                  _base(), tmp_path, progress=False)


def test_cost_closed_forms():
    """NAND by raw GiB and bits per cell (a QLC GiB at 3/4 of TLC's), a DRAM drive's whole table at 4 bytes
    per 4 KiB, a DRAM-less drive's map cache, a controller priced per channel."""
    cols = {"drive.channels": np.asarray([8.0, 8.0, 4.0]), "drive.dies_per_channel": np.asarray([4.0] * 3),
            "drive.die_gbit": np.asarray([512.0] * 3), "nand.name": np.asarray(["", "", ""]),
            "drive.nand": np.asarray(["tlc", "qlc", "tlc"]), "nand.bits_per_cell": np.full(3, np.nan),
            "drive.dram": np.asarray([True, True, False]), "engine.loop": np.asarray(["closed"] * 3),
            "drive.user_capacity_gb": np.asarray([1000.0] * 3), "engine.map_cache_mib": np.asarray([2.0] * 3),
            "engine.write_buffer_mib": np.asarray([16.0] * 3), "engine.map_cache": np.asarray(["auto"] * 3)}
    price = engine_cost.prices({"nand_tlc_usd_per_gib": 0.05, "dram_usd_per_gib": 4.0,
                                "controller_usd_per_channel": 1.5})
    c = engine_cost.cost(cols, price)
    np.testing.assert_allclose(c["raw_gib"], [2048.0, 2048.0, 1024.0])
    np.testing.assert_allclose(c["nand_usd"], [102.4, 76.8, 51.2])
    table = 1000e9 / 1024 / 2**30
    np.testing.assert_allclose(c["memory_usd"], [(table + 16 / 1024) * 4.0] * 2 + [18 / 1024 * 4.0])
    np.testing.assert_allclose(c["controller_usd"], [12.0, 12.0, 6.0])
    np.testing.assert_allclose(c["cost_usd"], c["nand_usd"] + c["memory_usd"] + c["controller_usd"])
    with pytest.raises(ConfigError, match="sweep.cost.nand_usd"):
        engine_cost.prices({"nand_usd": 1.0})
    with pytest.raises(ConfigError, match="sweep.cost.dram_usd_per_gib"):
        engine_cost.prices({"dram_usd_per_gib": -1})


def test_a_fio_job_of_the_composed_config_is_every_designs_source(tmp_path):
    """``workload.fio`` given on the command line (the composed config) rather than in the sweep: replayed by
    every design, at the job's depth (a fluid sweep would turn it into a fill)."""
    sweep = _sweep(base={}, space={"grid": {"drive.channels": [8, 16]}})
    run_sweep(sweep, _base(fio="examples/fio/oltp_rate.fio"), tmp_path, progress=False)
    df = _table(tmp_path)
    assert (df["workload.fio"] == "examples/fio/oltp_rate.fio").all()
    assert (df["workload.queue_depth"] == 32).all()


@pytest.mark.validation
def test_the_cli_refuses_an_engine_field_in_a_fluid_sweep_with_exit_2(tmp_path):
    """The CLI end to end (the fast tier holds the same refusals through run_sweep)."""
    from test_cli import ssdx_here

    f = tmp_path / "s.yaml"
    f.write_text("name: s\nspace:\n  grid:\n    engine.suspension: [none, program]\n")
    r = ssdx_here(f"sweep_file={f}", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 2
    assert "engine.suspension" in r.stderr and "model: fluid" in r.stderr
    f.write_text("name: s\nmodel: engine\nrequests: 500\nspace:\n  grid:\n    workload.idle_s: [0, 1]\n")
    fio = "workload.fio=examples/fio/oltp_rate.fio"
    r = ssdx_here(f"sweep_file={f}", fio, f"hydra.run.dir={tmp_path / 'o2'}")
    assert r.returncode == 2
    assert "workload.idle_s" in r.stderr and "model: engine" in r.stderr
    # the job given on the command line is every design's source, as in the sweep's base
    f.write_text("name: s\nmodel: engine\nrequests: 500\nspace:\n  grid:\n    drive.channels: [8, 16]\n")
    r = ssdx_here(f"sweep_file={f}", fio, f"hydra.run.dir={tmp_path / 'o3'}")
    assert r.returncode == 0, r.stderr
    df = _table(tmp_path / "o3")
    assert (df["workload.fio"] == "examples/fio/oltp_rate.fio").all()
    assert (df["workload.queue_depth"] == 32).all()


@pytest.mark.validation
def test_the_batched_scan_compiles_each_shape_once_and_agrees_with_the_loop(tmp_path):
    """``engine.backend=jax`` (the GPU path, here on the CPU): two chunks of one shape, run two at a time,
    compile once; the rows agree with the compiled loop's to float32 rounding."""
    sweep = _sweep(base={"workload.synthetic": "msr:hm_0"}, chunk_size=4,
                   space={"grid": {"drive.channels": [4, 8], "engine.write_buffer_mib": [4, 16, 64, 128]}})
    base = _base()
    run_sweep(sweep, base, tmp_path / "cpu", progress=False)
    base["engine"]["backend"] = "jax"
    run_sweep(sweep, base, tmp_path / "jax", progress=False, executor=executors.LocalExecutor(in_flight=2))
    chunks = sorted((tmp_path / "jax" / "chunks").glob("*.parquet"))
    infos = [pq.read_schema(p).metadata[b"ssdx.chunk"] for p in chunks]
    compile_s = sorted(json.loads(i)["compile_s"] for i in infos)
    assert len(compile_s) == 2 and compile_s[0] < 0.05 * compile_s[1]
    a, b = _table(tmp_path / "cpu"), _table(tmp_path / "jax")
    np.testing.assert_allclose(b["read_latency_mean_us"], a["read_latency_mean_us"], rtol=1e-4)
    np.testing.assert_allclose(b["iops"], a["iops"], rtol=1e-4)


def test_a_trace_changed_before_the_rerun_is_refused_not_mixed_in(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("".join(f"{i * 1000},h,0,{'Read' if i % 3 else 'Write'},{i * 8192},4096,0\n"
                             for i in range(300)))
    base = _base(trace_path=str(trace), format="msr")
    sweep = _sweep(base={}, requests=None, space={"grid": {"drive.channels": [4, 8]}})
    run_sweep(sweep, base, tmp_path / "out", progress=False)
    assert len(_table(tmp_path / "out")) == 2
    with trace.open("a") as f:
        f.write("400000,h,0,Read,0,4096,0\n")
    with pytest.raises(ConfigError, match="different sweep"):
        run_sweep(sweep, base, tmp_path / "out", progress=False)
