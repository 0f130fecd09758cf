"""Bad input from users and from other people's files: every case stops with the field or the file and
line and the rule (the CLI with exit status 2), before anything is computed or written."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from conftest import compose_config
from test_cli import ssdx

from ssdx.core import stats
from ssdx.models.engine import jobs
from ssdx.models.engine import params as engine_params
from ssdx.models.fluid import model as fluid
from ssdx.workloads import fio, synthetic, traces


def test_a_trace_address_beyond_64_bits_names_the_line(tmp_path):
    # Python reads any integer; the request arrays are int64, so an offset past 2^63 must stop at its line
    # instead of overflowing the conversion (or wrapping) later
    for fmt, line in (("msr", "128166372003061629,hm,0,Read,{off},4096,2000"),
                      ("mqsim", "0 0 {off} 8 1")):
        path = tmp_path / f"big.{fmt}"
        path.write_text(line.format(off=0) + "\n" + line.format(off=2**63) + "\n")
        with pytest.raises(traces.TraceError, match="largest byte address") as e:
            traces.read(path, fmt)
        assert e.value.line == 2
    # in 512-byte sectors the limit is 2^63 bytes, not 2^63 sectors
    path = tmp_path / "sectors.mqsim"
    path.write_text(f"0 0 {2**63 // 512} 8 1\n")
    with pytest.raises(traces.TraceError, match="512-byte units"):
        traces.read(path, "mqsim")
    path.write_text(f"0 0 {2**54 - 9} 8 1\n")  # the last 8 sectors that can be addressed end at 2^63 - 512
    assert traces.read(path, "mqsim").offset[0] == (2**54 - 9) * 512


def test_a_request_larger_than_the_drive_is_refused_at_its_line():
    chunk = traces.Chunk(time_s=np.zeros(3), op=np.zeros(3, np.int8), offset=np.zeros(3, np.int64),
                         size=np.array([4096, 3 * 10**12, 4096]), line=np.array([5, 9, 11]))
    with pytest.raises(traces.TraceError, match="larger than the drive's user capacity") as e:
        list(jobs.within([chunk], 2e12, "t.csv"))
    assert (e.value.path, e.value.line) == ("t.csv", 9)
    assert len(list(jobs.within([chunk], 4e12, "t.csv"))) == 1
    chunk.size[2] = 5 * 10**12  # two too large: the first is named
    with pytest.raises(traces.TraceError) as e:
        list(jobs.within([chunk], 2e12, "t.csv"))
    assert e.value.line == 9 and "a request of 3000000000000 bytes" in str(e.value)


def test_requests_past_the_end_of_the_drive_are_counted_with_the_first_line():
    def chunk(offsets, lines):
        n = len(offsets)
        return traces.Chunk(time_s=np.zeros(n), op=np.zeros(n, np.int8), offset=np.array(offsets, np.int64),
                            size=np.full(n, 4096), line=np.array(lines))

    cap = 2e12
    beyond = jobs.Beyond()
    chunks = [chunk([0, 4 * 10**12, 8192], [1, 2, 3]), chunk([2 * 10**12 - 4096, 2 * 10**12], [4, 7]),
              chunk([5 * 10**12], [9])]
    assert len(list(jobs.within(chunks, cap, "t.csv", beyond))) == 3  # every request still replays
    assert (beyond.count, beyond.first_line) == (3, 2)  # 4e12, 2e12 (the first byte past the end), 5e12
    w = beyond.warning(cap, "t.csv")
    assert w.startswith("3 requests lay past the end of the drive's user capacity (2e+12 bytes), the first "
                        "at line 2 of t.csv: they were wrapped onto the drive modulo its capacity")
    assert "request 2 of msr:hm_0" in beyond.warning(cap, "msr:hm_0", lines=False)
    inside = jobs.Beyond()
    list(jobs.within(chunks, 8e12, "t.csv", inside))
    assert inside.count == 0 and inside.warning(8e12, "t.csv") is None


def test_a_replay_of_a_trace_past_the_drive_warns_how_many_requests_were_wrapped(tmp_path):
    trace = tmp_path / "big_drive.csv"
    trace.write_text("128166372003061629,hm,0,Read,8192,4096,2000\n"
                     "128166372003071629,hm,0,Read,4000000000000,4096,2000\n"
                     "128166372003081629,hm,0,Write,6000000000000,4096,2000\n")
    r = ssdx("experiment=trace_replay", f"workload.trace_path={trace}", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["requests"] == 3 and s["requests_past_capacity"] == 2
    assert len(s["warnings"]) == 1 and s["warnings"][0].startswith(
        "2 requests lay past the end of the drive's user capacity (2e+12 bytes), the first at line 2 of "
        f"{trace}:")
    assert "wrapped onto the drive modulo its capacity" in s["warnings"][0]
    assert f"warning: {s['warnings'][0]}" in r.stdout


def test_oversized_gives_the_requests_larger_than_the_capacity_in_order():
    assert jobs.oversized(np.array([4096, 8192, 512, 8193]), 8192.0).tolist() == [3]
    assert jobs.oversized(np.array([9000, 4096, 9000]), 8192.0).tolist() == [0, 2]
    assert jobs.oversized(np.zeros(0, np.int64), 8192.0).tolist() == []


@pytest.mark.parametrize("value", ["zipf:nan", "zipf:inf", "pareto:0.2:nan", "normal:nan"])
def test_a_fio_distribution_with_a_non_finite_parameter_names_its_line(tmp_path, value):
    job = tmp_path / "j.fio"
    job.write_text(f"[j]\nrw=randread\nbs=4k\nsize=1g\nrandom_distribution={value}\n")
    with pytest.raises(fio.FioError, match="finite") as e:
        fio.load(job)
    assert ":5:" in str(e.value)
    with pytest.raises(ValueError, match="finite"):
        synthetic.Distribution("zoned", zones=((float("nan"), 0.5), (1.0, 0.5)))


def test_the_histogram_warning_names_the_top_bins_edge():
    top = stats.bin_edges()[-2]
    assert 90.0 < top < 100.0  # the last bin: [95.5 s, 100 s], latencies above it counted there
    w = jobs.histogram_warning(3)
    assert w.startswith("3 requests took 95.5 s or longer") and "means are exact" in w


def test_cli_refuses_empty_streams_and_mistyped_values_with_exit_2(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing but a comment\n")
    for experiment in ("trace_replay", "trace_analyse"):
        out = tmp_path / experiment
        r = ssdx(f"experiment={experiment}", f"workload.trace_path={empty}", "workload.format=msr",
                 f"hydra.run.dir={out}")
        assert r.returncode == 2, r.stderr
        assert "workload.trace_path" in r.stderr and "holds no request" in r.stderr
        assert "Traceback" not in r.stderr and not (out / "summary.json").exists()
    # a value of the wrong type is refused by Hydra as it composes the configuration: also exit 2
    r = ssdx("experiment=aldrin_pro_fill", "drive.dies_per_channel=abc", f"hydra.run.dir={tmp_path / 'h'}")
    assert r.returncode == 2 and "drive.dies_per_channel" in r.stderr and "nothing was computed" in r.stderr
    assert not (tmp_path / "h" / "summary.json").exists()


def test_a_replay_past_the_histogram_says_so(tmp_path):
    # one write of 1.5 TB takes longer than the histogram's 100 s: the summary warns that its percentiles
    # are not resolved there, and keeps the exact mean
    trace = tmp_path / "big.csv"
    trace.write_text("128166372003061629,hm,0,Write,0,1500000000000,2000\n"
                     "128166372003071629,hm,0,Read,0,4096,2000\n")
    r = ssdx("experiment=trace_replay", f"workload.trace_path={trace}", "workload.format=msr",
             f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["latency_beyond_histogram"] == 1 and s["warnings"] == [jobs.histogram_warning(1)]
    assert s["latency_us"]["mean"] > 100e6 / 2  # the 1.5 TB write alone takes well over 100 s
    assert "warning: 1 requests took" in r.stdout


def test_host_devices_must_be_a_count_from_1():
    from ssdx.cli.main import MAX_HOST_DEVICES, host_devices
    from ssdx.params import ConfigError

    for bad in ("abc", "0", "-1", str(MAX_HOST_DEVICES + 1)):
        with pytest.raises(ConfigError, match="SSDX_HOST_DEVICES") as e:
            host_devices({"SSDX_HOST_DEVICES": bad})
        assert "environment variable" in str(e.value) and "Hydra override" not in str(e.value)
    env = {"SSDX_HOST_DEVICES": " "}
    host_devices(env)
    assert "XLA_FLAGS" not in env


def test_an_unreachable_ray_head_is_refused_at_once():
    import socket
    import time

    from ssdx.params import ConfigError
    from ssdx.sweep import executors

    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        t0 = time.perf_counter()
        with pytest.raises(ConfigError, match="no Ray head answers there"):
            executors._reachable(f"127.0.0.1:{port}")
    assert time.perf_counter() - t0 < executors.CONNECT_TIMEOUT_S
    with pytest.raises(ConfigError, match="host:port"):
        executors._reachable("nohostport")


def _fake_wandb(monkeypatch):
    """A stand-in ``wandb`` module, with the names the logger's ``start`` uses, in ``sys.modules``:
    ``init`` fails the test until the test sets what it does."""
    import sys
    import types

    def init(**_kwargs):
        raise AssertionError("wandb.init was called")

    wb = types.ModuleType("wandb")
    wb.errors = types.SimpleNamespace(Error=type("Error", (Exception,), {}))
    wb.Settings = lambda **kwargs: kwargs
    wb.init = init
    monkeypatch.setitem(sys.modules, "wandb", wb)
    return wb


def test_a_wandb_directory_that_cannot_be_made_is_refused(tmp_path, monkeypatch):
    from ssdx.loggers import WandbLogger
    from ssdx.params import ConfigError

    wb = _fake_wandb(monkeypatch)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="logger.dir"):  # before W&B is asked for a run
        WandbLogger(dir=str(blocker / "sub")).start({}, tmp_path / "out")

    # a run W&B refuses (its errors.Error: no API key online, a project name it does not take) is a
    # configuration error that names the logger's fields and carries W&B's reason
    def refuse(**kwargs):
        raise wb.errors.Error(f"invalid project name {kwargs['project']!r}")

    wb.init = refuse
    logger = WandbLogger(project="a/b", dir=str(tmp_path / "wb"))
    with pytest.raises(ConfigError, match="W&B did not start the run: invalid project name 'a/b'") as e:
        logger.start({}, tmp_path / "out")
    assert e.value.field == "logger" and e.value.value["project"] == "a/b" and logger.run is None

    # anything else init raises is no refusal of the configuration: it goes on as it is
    def broken(**_kwargs):
        raise RuntimeError("a bug")

    wb.init = broken
    with pytest.raises(RuntimeError, match="a bug"):
        logger.start({}, tmp_path / "out")


def test_a_negative_seed_is_refused_before_anything_runs(tmp_path):
    r = ssdx("experiment=boot_qd1", "seed=-1", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "'seed' = -1" in r.stderr and "Traceback" not in r.stderr


def test_a_seed_is_any_non_negative_integer_numpy_takes():
    from ssdx.cli.main import check_seed
    from ssdx.params import ConfigError
    from ssdx.workloads import msr

    big = 2**64 + 5  # beyond 64 bits: NumPy's SeedSequence still takes it
    assert check_seed(0) == 0 and check_seed(big) == big
    assert len(synthetic.windows11_boot(big)) > 0 and len(msr.generate("hm_0", 100, seed=big)) == 100
    assert not np.array_equal(msr.generate("hm_0", 100, seed=big).offset,
                              msr.generate("hm_0", 100, seed=big + 1).offset)
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ConfigError, match="'seed'"):
            check_seed(bad)


def test_a_resumed_run_removes_the_partial_chunk_a_killed_run_left(tmp_path):
    from ssdx.params import ConfigError
    from ssdx.sweep import store

    fp = {"definition": {"a": 1}}
    assert store.open_run(tmp_path, fp) is False
    chunks = tmp_path / "chunks"
    partial = chunks / ".chunk_000043.parquet.tmp-123-456"
    partial.write_bytes(b"half a parquet file")
    (chunks / "chunk_000000.parquet").write_bytes(b"")
    with pytest.raises(ConfigError, match="different sweep definition"):
        store.open_run(tmp_path, {"definition": {"a": 2}})
    assert partial.exists()  # a refused run touches nothing
    assert store.open_run(tmp_path, fp) is True
    assert not partial.exists() and (chunks / "chunk_000000.parquet").exists()


def test_a_setting_the_sweep_overrides_is_refused_not_ignored(tmp_path):
    # a sweep's own n_steps (rounds, requests) wins over model.n_steps (gc.rounds, workload.requests): a
    # command-line value of the latter used to be ignored without a word
    from ssdx.cli.main import check_shadowed
    from ssdx.params import ConfigError

    cfg = {"sweep": {"name": "s", "n_steps": 256, "rounds": 3}, "model": {"n_steps": 32}, "gc": {"rounds": 9}}
    with pytest.raises(ConfigError, match=r"= 32 .*sets its own n_steps \(256\).*Set sweep.n_steps"):
        check_shadowed(cfg, frozenset({"model.n_steps"}))
    with pytest.raises(ConfigError, match="gc.rounds"):
        check_shadowed(cfg, frozenset({"gc.rounds"}))
    check_shadowed(cfg, frozenset({"model.n_steps", "sweep.n_steps"}))  # the sweep's own value is set too
    check_shadowed({"sweep": {"name": "t"}}, frozenset({"model.n_steps"}))  # no n_steps: the model's is used
    check_shadowed({"sweep": None}, frozenset({"model.n_steps"}))  # not a sweep
    r = ssdx("sweep=quick", "model.n_steps=32", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "sweep.n_steps" in r.stderr and not (tmp_path / "results.parquet").exists()
    # an experiment takes model.n_steps as it always did (the default config also selects a sweep)
    r = ssdx("experiment=aldrin_pro_fill", "model.n_steps=64", f"hydra.run.dir={tmp_path / 'fill'}")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "fill" / "summary.json").read_text())["n_steps"] == 64


def test_an_empty_trace_is_refused_in_one_wording_by_replay_analysis_and_the_hybrid_model(tmp_path):
    from ssdx import tasks
    from ssdx.models.hybrid import jobs as hybrid_jobs
    from ssdx.params import ConfigError

    assert traces.no_requests("replay") == "holds no request to replay"
    assert traces.no_requests("analyse", 2) == "holds no request to analyse (2 malformed lines skipped)"
    bad = tmp_path / "bad.csv"
    bad.write_text("not,a,trace\nnor,is,this\n")
    w = {"trace_path": str(bad), "format": "msr", "on_error": "skip"}
    with pytest.raises(ConfigError) as e:
        hybrid_jobs._requests_from_trace(w, bad, 100)
    assert (e.value.field, e.value.rule) == ("workload.trace_path", "holds no request to replay (2 malformed "
                                             "lines skipped): every volume's trace needs requests")
    with pytest.raises(ConfigError) as e:
        tasks.run_analyse({"workload": w}, tmp_path / "out")
    assert e.value.rule == "holds no request to analyse (2 malformed lines skipped)"
    cfg = compose_config("experiment=trace_replay", f"workload.trace_path={bad}", "workload.format=msr",
                         "workload.on_error=skip")
    with pytest.raises(ConfigError) as e:
        jobs.run_replay(cfg, tmp_path / "r", progress=False)
    assert e.value.rule == "holds no request to replay (2 malformed lines skipped)"


def test_a_drive_larger_than_the_engine_addresses_is_named_in_the_replays_warnings(tmp_path):
    # the request engine counts offsets in int32 4 KiB units (8 TiB): a 16 TB drive's replay runs, and its
    # summary and console say that requests were mapped onto the first 8 TiB and what that changes
    assert engine_params.address_warning(8e12) is None
    assert "hit rate overestimated" in engine_params.address_warning(1.6e13)
    assert engine_params.address_warning(engine_params.ADDRESSABLE_BYTES) is None
    r = ssdx("experiment=trace_replay", "workload.synthetic=msr:prxy_0", "workload.requests=200",
             "drive.user_capacity_gb=16000", "drive.die_gbit=1024", "drive.dies_per_channel=16",
             f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(s["warnings"]) == 1 and s["warnings"][0].startswith(
        "the drive's user capacity (1.6e+13 bytes) is more than the request engine addresses")
    assert f"warning: {s['warnings'][0]}" in r.stdout and "UserWarning" not in r.stderr
    big = ("experiment=trace_replay", "drive.user_capacity_gb=16000", "drive.die_gbit=1024",
           "drive.dies_per_channel=16")
    with pytest.warns(UserWarning, match="first 8 TiB"):
        engine_params.build(engine_params.columns_from_config(compose_config(*big)))
    # in pure_slc mode the host addresses U / bits per cell (the fluid model's capacity): 5.3 TB, no warning
    cols = engine_params.columns_from_config(compose_config(*big, "drive.slc_mode=pure_slc"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        drive = engine_params.build(cols)[0]
    np.testing.assert_allclose(engine_params.user_capacity_bytes(drive), fluid.capacity_bytes(drive))
