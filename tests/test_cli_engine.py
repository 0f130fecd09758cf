"""CLI contracts of the request-level engine: `experiment=trace_replay` and `experiment=boot_qd1`."""

import json

import numpy as np
import pytest
from test_cli import ssdx

from ssdx.workloads import synthetic


def _msr_file(path, n=3000, bad_line=None):
    ch = synthetic.fio_like(n, 0.4, {4096: 0.7, 65536: 0.3}, span_bytes=20e9, seed=7)
    t0 = 128166372000000000  # a Windows filetime in 2007, as in the MSR traces
    ticks = t0 + np.cumsum(np.random.default_rng(0).integers(200, 5000, n))
    lines = [f"{t},hm,0,{'Read' if o == 0 else 'Write'},{off},{s},1000"
             for t, o, off, s in zip(ticks, ch.op, ch.offset, ch.size)]
    if bad_line:
        lines.insert(bad_line - 1, "128166372000000000,hm,0,Read,notanumber,4096,1000")
    path.write_text("\n".join(lines) + "\n")
    return ch


def test_trace_replay_contract(tmp_path):
    trace = tmp_path / "hm_0.csv"
    ch = _msr_file(trace)
    out = tmp_path / "run"
    r = ssdx("experiment=trace_replay", f"workload.trace_path={trace}", "workload.format=msr",
             f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["requests"] == len(ch)
    assert s["read_fraction"] == pytest.approx(float(np.mean(ch.op == 0)), abs=1e-9)
    assert s["iops"] > 0 and 0 < s["latency_us"]["mean"] < s["latency_us"]["p99"]
    assert s["skipped_lines"] == 0 and s["trace_truncated"] is False  # workload.requests unset: all of it
    assert (out / "latency_cdf.png").stat().st_size > 10_000
    assert "summary.json" in r.stdout


@pytest.mark.parametrize("experiment", ["trace_replay", "trace_analyse"])
def test_a_trace_job_takes_the_first_workload_requests_of_the_trace(tmp_path, experiment):
    # workload.requests set: the trace's first N requests (both jobs silently read the whole trace); a count
    # past the trace's end reads it whole and says it was not cut; a count out of range names the field
    trace = tmp_path / "hm_0.csv"
    ch = _msr_file(trace)
    for n, cut in ((1000, True), (len(ch), False), (10 * len(ch), False)):
        out = tmp_path / f"run{n}"
        r = ssdx(f"experiment={experiment}", f"workload.trace_path={trace}", f"workload.requests={n}",
                 f"hydra.run.dir={out}")
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        assert s["requests"] == min(n, len(ch)) and s["trace_truncated"] is cut
        first = ch.op[:min(n, len(ch))]
        assert s["read_fraction"] == pytest.approx(float(np.mean(first == 0)), abs=1e-9)
        assert ("the first 1000 requests of the trace (workload.requests)" in r.stdout) is cut
    r = ssdx(f"experiment={experiment}", f"workload.trace_path={trace}", "workload.requests=0",
             f"hydra.run.dir={tmp_path / 'bad'}")
    assert r.returncode == 2 and "workload.requests" in r.stderr and "1 <= x" in r.stderr


def test_a_request_count_the_boot_log_does_not_read_is_refused(tmp_path):
    r = ssdx("experiment=trace_replay", "workload.synthetic=windows11_boot", "workload.requests=500",
             f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2
    assert "workload.requests" in r.stderr and "windows11_boot" in r.stderr and "500" in r.stderr


def test_trace_replay_bad_line_names_file_and_line_or_is_skipped(tmp_path):
    trace = tmp_path / "bad.csv"
    _msr_file(trace, n=500, bad_line=123)
    r = ssdx("experiment=trace_replay", f"workload.trace_path={trace}", f"hydra.run.dir={tmp_path / 'a'}")
    assert r.returncode == 2
    assert "bad.csv, line 123" in r.stderr and "workload.trace_path" in r.stderr
    out = tmp_path / "b"
    r = ssdx("experiment=trace_replay", f"workload.trace_path={trace}", "workload.on_error=skip",
             f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["skipped_lines"] == 1 and s["requests"] == 500


def test_trace_replay_open_loop_synthetic_msr(tmp_path):
    r = ssdx("experiment=trace_replay", "workload.synthetic=msr:hm_0", "workload.requests=5000",
             "engine.loop=open", "engine.time_scale=1000", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["requests"] == 5000 and s["loop"] == "open"
    assert s["read_fraction"] == pytest.approx(0.355, abs=0.02)
    r = ssdx("experiment=trace_replay", "workload.synthetic=msr:nope", f"hydra.run.dir={tmp_path / 'x'}")
    assert r.returncode == 2 and "workload.synthetic" in r.stderr


def test_boot_qd1_contract(tmp_path):
    r = ssdx("experiment=boot_qd1", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["seed_method_difference_s"] == pytest.approx(2.2, rel=0.10)
    ifaces = {d["interface"] for d in s["drives"].values()}
    assert {"sata3", "pcie3x4", "pcie4x4"} <= ifaces
    for d in s["drives"].values():
        assert set(d) >= {"qd1_read_4k_us", "qd1_write_4k_us", "boot_storage_time_s"}
        assert 20 < d["qd1_read_4k_us"] < 300 and 0 < d["qd1_write_4k_us"] < d["qd1_read_4k_us"]
        # QD1: the storage time is the sum of the latencies of the 45,491 commands
        assert d["boot_storage_time_s"] == pytest.approx(d["boot_read_time_s"] + d["boot_write_time_s"],
                                                         rel=1e-3)
    sata, pcie4 = s["drives"][s["sata_drive"]], s["drives"][s["pcie4_drive"]]
    diff = sata["boot_storage_time_s"] - pcie4["boot_storage_time_s"]
    assert s["model_difference_s"] == pytest.approx(diff)
    assert s["model_difference_s"] > 0
    assert (tmp_path / "boot_qd1.png").stat().st_size > 10_000
