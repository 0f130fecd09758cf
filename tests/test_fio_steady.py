"""fio's steady-state detection (``steadystate``/``ss``, ``ss_dur``, ``ss_ramp``, ``ss_interval``): fio's
criteria on hand-made samples, the times rebuilt from a replay, and a job that ends when fio would end it."""

import dataclasses

import numpy as np
import pytest

from ssdx import presets
from ssdx.models.engine import jobs as engine_jobs
from ssdx.models.engine import steady
from ssdx.params import ConfigError
from ssdx.workloads import fio
from ssdx.workloads.fio_timing import SteadyState


def _spec(**kw) -> SteadyState:
    base = {"criterion": "iops", "metric": "iops", "slope": False, "limit": 5.0, "percent": True,
            "duration_s": 0.1, "ramp_s": 0.0, "interval_s": 0.01}
    return SteadyState(**{**base, **kw})


def test_issue_and_completion_times_follow_the_slots_or_the_arrivals():
    issue, done = steady.times(np.array([1.0, 2.0, 1.0, 1.0, 3.0]), 2)
    np.testing.assert_allclose(issue, [0, 0, 1, 2, 2])  # each request takes the earliest free slot
    np.testing.assert_allclose(done, [1, 2, 2, 3, 5])
    issue, done = steady.times(np.array([1.0, 2.0]), 1, arrival_s=np.array([0.5, 0.6]))
    np.testing.assert_allclose(done, [1.5, 2.6])


def test_the_criteria_are_fios():
    """Deviation: the largest |sample - mean|, in % of the mean; slope: the least-squares slope per sample
    (numpy's polyfit), in % of the mean."""
    rng = np.random.default_rng(1)
    w = 1000 + rng.normal(0, 30, (4, 10))
    dev = steady.criterion(_spec(), w)
    np.testing.assert_allclose(dev, 100 * np.abs(w - w.mean(1, keepdims=True)).max(1) / w.mean(1))
    slope = steady.criterion(_spec(criterion="iops_slope", slope=True), w)
    fit = np.array([np.polyfit(np.arange(10), row, 1)[0] for row in w])
    np.testing.assert_allclose(slope, 100 * np.abs(fit) / w.mean(1))
    absolute = steady.criterion(_spec(criterion="iops_slope", slope=True, percent=False), w)
    np.testing.assert_allclose(absolute, np.abs(fit))


def test_detection_starts_an_interval_after_the_ramp_and_stops_at_the_first_steady_window():
    """Completions at 1,000/s for 0.5 s, then 2,000/s: with a 0.1 s window of 0.01 s samples and a 0.05 s ramp
    the first window judged ends at 0.15 s (steady: 0 % deviation) — unless the window straddles the step."""
    done = np.concatenate([np.arange(1, 501) / 1000, 0.5 + np.arange(1, 1001) / 2000])
    lat = np.full(len(done), 1e-4)
    size = np.full(len(done), 4096)
    spec = _spec(ramp_s=0.05)
    t, v = steady.samples(spec, done, lat, size, end_s=1.0)
    assert t[0] == pytest.approx(0.06) and v[0] == pytest.approx(1000)
    found = steady.detect(spec, done - 1e-4, done, lat, size)
    assert found.attained and found.at_s == pytest.approx(0.15) and found.criterion == pytest.approx(0)
    late = steady.detect(dataclasses.replace(spec, ramp_s=0.45), done - 1e-4, done, lat, size)
    assert late.attained and late.at_s == pytest.approx(0.6)  # the first window after the step
    bw = steady.samples(dataclasses.replace(spec, metric="bw"), done, lat, size, end_s=1.0)[1]
    assert bw[0] == pytest.approx(1000 * 4096)


def _cfg(path, requests):
    engine = presets.engine()
    engine["backend"] = "cpu"
    return {"drive": presets.drive("generic_tlc_1tb", user_capacity_gb=64.0, die_gbit=128), "nand": None,
            "engine": engine, "seed": 0,
            "workload": {**presets.workload(), "fio": str(path), "requests": requests}}


JOB = "[w]\nrw=randwrite\nbs=4k\nsize=100%\niodepth=32\ntime_based\nruntime=1h\n"


def test_a_job_ends_when_fio_would_and_reports_the_requests_issued_until_then(tmp_path):
    p = tmp_path / "ss.fio"
    p.write_text(JOB + "ss=iops:10%\nss_dur=200ms\nss_interval=20ms\nss_ramp=40ms\n")
    s = engine_jobs.run_replay(_cfg(p, 100_000), tmp_path / "ss", progress=False)
    g = s["fio_groups"][0]
    ss = g["steady_state"]
    assert ss["attained"] and ss["last_criterion"] < 10.0 and ss["samples"] >= 10
    assert 0.2 <= ss["attained_at_s"] < s["makespan_s"] + 1e-9 and not g["truncated"]
    n = g["requests"]
    assert n < 100_000
    # the same job without detection, stopped after those n requests: the same figures
    q = tmp_path / "plain.fio"
    q.write_text(JOB)
    plain = engine_jobs.run_replay(_cfg(q, n), tmp_path / "plain", progress=False)
    assert plain["requests"] == n
    for k in ("iops", "makespan_s"):
        assert s[k] == pytest.approx(plain[k], rel=1e-9)
    assert s["latency_us"] == pytest.approx(plain["latency_us"], rel=1e-9)
    # a limit the noise never meets: the whole stream, not attained
    p.write_text(JOB + "ss=iops:0.01%\nss_dur=200ms\nss_interval=20ms\n")
    s = engine_jobs.run_replay(_cfg(p, 20_000), tmp_path / "never", progress=False)
    assert not s["fio_groups"][0]["steady_state"]["attained"] and s["requests"] == 20_000


@pytest.mark.parametrize("options, match", [
    ("ss=iopz:1%\nss_dur=10s\n", "unknown criterion"),
    ("ss=iops:1x\nss_dur=10s\n", "limit after ':'"),
    ("ss=iops:1%\nss_dur=1s\nss_interval=2s\n", "window"),
])
def test_malformed_steady_state_options_are_refused_with_their_line(tmp_path, options, match):
    p = tmp_path / "bad.fio"
    p.write_text("[w]\nrw=write\nbs=4k\nsize=1g\n" + options)
    with pytest.raises(ConfigError, match=match) as e:
        fio.load(p)
    assert "bad.fio:" in str(e.value)


def test_jobs_judged_as_one_must_share_their_detection(tmp_path):
    p = tmp_path / "two.fio"
    p.write_text("[global]\nrw=randwrite\nbs=4k\nsize=1g\n[a]\nss_dur=1s\n[b]\nss_dur=2s\n")
    with pytest.raises(ConfigError, match="judged as one"):
        engine_jobs.run_replay(_cfg(p, 1000), tmp_path / "o", progress=False)


@pytest.mark.parametrize("pace", ["", "rate_iops=50000\n"])
def test_ramp_time_runs_its_requests_uncounted_and_the_rest_goes_on_as_one_stream(tmp_path, pace):
    """fio's ramp_time: the requests issued before it run on the drive and are left out of the figures; the
    counted ones go on from the drive and clock the ramp left (closed and open loop): ramp and rest add up to
    the uninterrupted replay of the whole stream."""
    from ssdx.models.engine import params as engine_params
    from ssdx.models.engine import replay

    p = tmp_path / "ramp.fio"
    p.write_text(JOB + "ramp_time=20ms\n" + pace)
    cfg = _cfg(p, 12_000)
    s = engine_jobs.run_replay(cfg, tmp_path / "o", progress=False)
    g = s["fio_groups"][0]
    n = g["ramp"]["ramp_requests"]
    assert 0 < n < 12_000 and g["requests"] == s["requests"] == 12_000 - n
    jobs = engine_jobs.fio_workload(cfg)
    run_cfg = engine_jobs.with_fio(cfg, jobs)
    trees = engine_params.build(engine_params.columns_from_config(run_cfg), warn=False)
    chunks = list(jobs.stream(engine_jobs.capacity_bytes(cfg), 12_000))
    whole = replay.replay(trees, chunks, backend="cpu").extra["sums"]
    rest, n2 = steady.replay_after_ramp(trees, chunks, 0.02, jobs.queue_depth, jobs.open_loop, 1.0,
                                         backend="cpu")
    assert n2 == n
    ramp = replay.replay(trees, steady.split_at(chunks, n)[0], backend="cpu").extra["sums"]
    for k in ("count", "bytes", "prog_pages"):
        np.testing.assert_array_equal(ramp[k] + rest.extra["sums"][k], whole[k], err_msg=k)
    for k in ("lat_sum", "busy"):  # summed in float32 within a replay's chunk: split where the ramp ends
        np.testing.assert_allclose(ramp[k] + rest.extra["sums"][k], whole[k], rtol=1e-6, err_msg=k)
    p.write_text(JOB + "ramp_time=20ms\nss_dur=100ms\nss_interval=10ms\n")
    with pytest.raises(ConfigError, match="ss_ramp"):
        engine_jobs.run_replay(_cfg(p, 1000), tmp_path / "both", progress=False)
