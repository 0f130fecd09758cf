"""Bad workload input stops with its field, file or line (exit 2 on the CLI) and loses nothing: hybrid trace
volumes (empty, too small), trace profiles, blkparse junk, huge and unsorted traces in the analyser, the
open loop on an untimed trace, and the boot study's ``boot.probe_requests`` / ``boot.drives``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_cli import ssdx

from ssdx.models.engine import jobs as engine_jobs
from ssdx.models.hybrid import jobs as hybrid_jobs
from ssdx.models.hybrid import params as hybrid_params
from ssdx.params import ConfigError
from ssdx.workloads import analyse, profile, traces
from ssdx.workloads.traces import READ, WRITE, Chunk

VOLUMES = ("hm_0", "proj_0", "proj_3", "prxy_0", "prxy_1", "src2_1", "web_1")
MSR_LINE = "128341{i:010d},hm,0,Write,{off},4096,100\n"


def _profile() -> dict:
    """A valid analysed profile (the analyser's own summary of a small timed stream)."""
    n = 2000
    rng = np.random.default_rng(1)
    c = Chunk(time_s=np.cumsum(rng.exponential(1e-3, n)), op=rng.choice([READ, WRITE], n).astype(np.int8),
              offset=rng.integers(0, 1 << 20, n) * 4096, size=rng.choice([4096, 8192, 65536], n),
              line=np.arange(1, n + 1))
    return analyse.analyse([c])


# ------------------------------------------------------------------------------------------- 1, 2 hybrid

def test_hybrid_empty_volume_file_is_refused_naming_it(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    (d / "prxy_0.csv").write_text("# only a comment\n")
    with pytest.raises(ConfigError) as e:
        hybrid_jobs.stream("prxy_0", {"trace_path": str(d), "format": "msr"}, 1000, lambda fp: 1, 1.0)
    assert e.value.field == "workload.trace_path" and e.value.value.endswith("prxy_0.csv")
    assert "no request" in e.value.rule


def test_cli_hybrid_empty_volume_files_exit_2_before_the_sweep(tmp_path):
    d = tmp_path / "traces"
    d.mkdir()
    for v in VOLUMES:
        (d / f"{v}.csv").write_text("")
    out = tmp_path / "run"
    r = ssdx("sweep=nand_per_workload", f"workload.trace_path={d}", f"hydra.run.dir={out}")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert "workload.trace_path" in r.stderr and ".csv" in r.stderr and "empty" in r.stderr
    assert not (out / "summary.json").exists() and not (out / "chunks").exists()


def test_hybrid_tiny_trace_is_named_not_the_default_scm_ratio(tmp_path):
    f = tmp_path / "prxy_0.csv"
    f.write_text("".join(MSR_LINE.format(i=i, off=4096 * (i + 1)) for i in range(5)))
    st = hybrid_jobs.stream("prxy_0", {"trace_path": str(f), "format": "msr"}, 1000, lambda fp: 1, 1.0)
    d = hybrid_params.defaults()
    sub = hybrid_params.columns(d)
    with pytest.raises(ConfigError) as e:
        hybrid_jobs.fits_trace(sub, st.info["footprint_bytes"], f)
    assert e.value.field == "workload.trace_path" and e.value.value == str(f)
    assert "too small" in e.value.rule and "5 distinct" in e.value.rule and "gathering unit" in e.value.rule
    hybrid_jobs.fits_trace(sub, 1e12, f)  # a trace of a real size passes


# ------------------------------------------------------------------------------------------- 3 profiles

@pytest.mark.parametrize("entry, value, named", [
    (("per_type",), [1, 2], "per_type"),
    (("per_type", "read"), 5, "per_type.read"),
    (("per_type", "read", "commands"), -500, "per_type.read.commands"),
    (("per_type", "read", "commands"), "many", "per_type.read.commands"),
    (("per_type", "read", "sequential_commands"), -500, "per_type.read.sequential_commands"),
    (("footprint_bytes",), float("nan"), "footprint_bytes"),
    (("interarrival_s", "mean"), -1, "interarrival_s.mean"),
    (("interarrival_s", "cv"), "abc", "interarrival_s.cv"),
    (("size_bytes", "histogram"), {"100000000000000000000000": 5}, "size_bytes.histogram"),
    (("size_bytes", "histogram"), {"abc": 5}, "size_bytes.histogram"),
    (("size_bytes", "histogram"), {"4096": float("nan")}, "size_bytes.histogram"),
])
def test_bad_profile_entry_is_named(entry, value, named):
    p = _profile()
    at = p
    for k in entry[:-1]:
        at = at[k]
    at[entry[-1]] = value
    with pytest.raises(ValueError) as e:
        profile.fit(p)
    assert f"entry {named}" in str(e.value) and "rule" in str(e.value)


def test_profile_file_errors_name_the_file_and_the_replay_maps_them(tmp_path):
    bad = tmp_path / "trunc.json"
    bad.write_text('{"per_type": {\n  "read": {"commands": 1')
    with pytest.raises(ValueError, match=r"trunc\.json, line 2"):
        profile.load(bad)
    lst = tmp_path / "list.json"
    lst.write_text("[1, 2, 3]")
    with pytest.raises(ValueError, match="list.json"):
        profile.load(lst)
    p = _profile()
    p["per_type"]["read"]["commands"] = -500
    neg = tmp_path / "neg.json"
    neg.write_text(json.dumps(p))
    cfg = {"workload": {"synthetic": f"profile:{neg}", "requests": 100}, "engine": {"loop": "closed"}}
    with pytest.raises(ConfigError) as e:
        engine_jobs.stream(cfg)
    assert e.value.field == "workload.synthetic" and "neg.json" in str(e.value.value)
    assert "per_type.read.commands" in e.value.rule


@pytest.mark.parametrize("mean", [None, 0.0])
def test_an_open_loop_needs_a_profile_with_gaps_between_arrivals(tmp_path, mean):
    """A profile without inter-arrival times, or one whose requests all arrived at once (the analyser
    writes a mean gap of 0), gives an open loop nothing to follow: refused, naming engine.loop."""
    p = _profile()
    p["interarrival_s"]["mean"] = mean
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    cfg = {"workload": {"synthetic": f"profile:{f}", "requests": 100}, "engine": {"loop": "open"}}
    with pytest.raises(ConfigError) as e:
        engine_jobs.stream(cfg)
    assert e.value.field == "engine.loop" and "no inter-arrival times" in e.value.rule
    cfg["engine"]["loop"] = "closed"
    (chunk,), _, _ = engine_jobs.stream(cfg)
    assert len(chunk) == 100


def test_valid_profile_still_generates():
    f = profile.fit(_profile())
    c = profile.generate(f, 500, seed=0)
    assert len(c) == 500 and np.all(c.size > 0) and np.all(c.offset >= 0)


# ------------------------------------------------------------------------------------------- 4, 6 analyser

def test_analyse_counts_a_request_ending_at_the_largest_accepted_byte():
    """An extent ending at byte 2^63 - 1 (the traces' bound) covers one page, not a negative count."""
    c = Chunk(time_s=np.array([0.0]), op=np.array([WRITE], np.int8),
              offset=np.array([2 ** 63 - 1 - 100], np.int64), size=np.array([100], np.int64),
              line=np.array([1]))
    s = analyse.analyse([c])
    assert s["footprint_bytes"] == 4096


def test_analyse_counts_a_huge_request_without_expanding_it():
    c = Chunk(time_s=np.array([0.0, 1.0]), op=np.array([WRITE, READ], np.int8),
              offset=np.array([0, 10 * 4096], np.int64), size=np.array([2 ** 40, 4096], np.int64),
              line=np.array([1, 2]))
    s = analyse.analyse([c])  # 2^28 pages: expanding them page by page would take GBs
    assert s["footprint_bytes"] == 2 ** 40 and s["write_footprint_bytes"] == 2 ** 40


def test_analyse_footprint_matches_the_page_set():
    rng = np.random.default_rng(3)
    chunks, pages, wpages = [], set(), set()
    for k in range(4):
        n = 300
        off = rng.integers(0, 5000, n) * 512
        size = rng.integers(1, 40, n) * 512
        op = rng.choice([READ, WRITE, 2], n).astype(np.int8)
        chunks.append(Chunk(time_s=np.arange(n) + k * n * 1.0, op=op, offset=off, size=size,
                            line=np.arange(n)))
        for o, s, t in zip(off, size, op, strict=True):
            got = set(range(int(o) // 4096, (int(o) + int(s) + 4095) // 4096))
            if t != 2:
                pages |= got
            if t == WRITE:
                wpages |= got
    s = analyse.analyse(chunks)
    assert s["footprint_bytes"] == len(pages) * 4096
    assert s["write_footprint_bytes"] == len(wpages) * 4096


def test_analyse_duration_of_unsorted_times_is_their_span(tmp_path):
    f = tmp_path / "ds.txt"
    f.write_text("".join(f"{t} 0 {8 * (i + 1)} 8 {i % 2}\n"
                         for i, t in enumerate([1.0, 2.0, 3.0, 10.0, -5.0])))
    s = analyse.analyse(traces.Reader(f, "disksim"))
    assert s["duration_s"] == pytest.approx(0.015)
    assert s["iops"] == pytest.approx(5 / 0.015)


# ------------------------------------------------------------------------------------------- 5 blkparse

BLK = "  8,0    0  {i}  0.000{i}00  1234  D   W {s} + 8 [fio]\n"
SUMMARY = """CPU0 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:          10,       40KiB
 Read Dispatches:        0,        0KiB\t Write Dispatches:       10,       40KiB
 Reads Requeued:         0\t\t Writes Requeued:         0
 Reads Completed:        0,        0KiB\t Writes Completed:       10,       40KiB
 Read Merges:            0,        0KiB\t Write Merges:            0,        0KiB
 Read depth:             1        \t Write depth:             1
 IO unplugs:             0        \t Timer unplugs:           0
Total (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:          10,       40KiB
 IO unplugs:             0        \t Timer unplugs:           0

Throughput (R/W): 0KiB/s / 22KiB/s
Events (8,0): 1,040 entries
Skips: 0 forward (0 -   0.0%)
"""


def test_blkparse_summary_is_skipped_but_junk_is_an_error_at_its_line(tmp_path):
    events = "".join(BLK.format(i=i, s=8 * i) for i in range(1, 4))
    good = tmp_path / "good.txt"
    good.write_text(events + SUMMARY)
    assert len(traces.read(good, "blkparse")) == 3
    junk = tmp_path / "junk.txt"
    junk.write_text(events + "garbage_without_comma D W 8 + 8\n" + SUMMARY)
    with pytest.raises(traces.TraceError) as e:
        traces.read(junk, "blkparse")
    assert e.value.line == 4 and e.value.path == str(junk)
    r = traces.Reader(junk, "blkparse", on_error="skip")
    assert sum(len(c) for c in r) == 3 and r.skipped == 1


# ------------------------------------------------------------------------------------------- 7 open loop

def test_open_loop_on_an_untimed_trace_is_refused(tmp_path):
    f = tmp_path / "job.log"
    f.write_text("fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n/dev/x close\n")
    cfg = {"workload": {"trace_path": str(f), "format": "fio2"}, "engine": {"loop": "open"}}
    with pytest.raises(ConfigError) as e:
        engine_jobs.stream(cfg)
    assert e.value.field == "engine.loop" and "fio2" in e.value.rule and "no arrival times" in e.value.rule
    engine_jobs.stream({**cfg, "engine": {"loop": "closed"}})  # the closed loop replays it


# ------------------------------------------------------------------------------------------- 8, 9 boot

@pytest.mark.parametrize("n", [-5, 0, 1_000_000_000, 2.5])
def test_boot_probe_requests_out_of_range_is_refused_before_computing(n, tmp_path):
    cfg = {"boot": {"probe_requests": n}, "workload": {}, "engine": {}}
    with pytest.raises(ConfigError) as e:
        engine_jobs.run_boot(cfg, tmp_path)
    assert e.value.field == "boot.probe_requests" and "1 <= x <= 1e+08" in e.value.rule
    assert not (tmp_path / "summary.json").exists()


def test_boot_empty_drive_list_is_refused(tmp_path):
    cfg = {"boot": {"drives": []}, "workload": {}, "engine": {}}
    with pytest.raises(ConfigError) as e:
        engine_jobs.run_boot(cfg, tmp_path)
    assert e.value.field == "boot.drives" and "non-empty" in e.value.rule


def test_cli_boot_probe_requests_zero_exits_2(tmp_path):
    r = ssdx("experiment=boot_qd1", "boot.probe_requests=0", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "boot.probe_requests" in r.stderr
    assert not Path(tmp_path / "summary.json").exists()


def test_blkparse_output_as_printed_reads_its_events_and_skips_its_other_lines(tmp_path):
    """``blkparse sda > trace.txt`` as the tool prints it: the ``Input file ... added`` lines before the
    events and the statistics after them are skipped; the D event is the request."""
    path = tmp_path / "blk.txt"
    path.write_text(
        "Input file sda.blktrace.0 added\nInput file sda.blktrace.1 added\n"
        "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n"
        "  8,0    3        2     0.000001000   697  D   W 223490 + 8 [kjournald]\n"
        "CPU3 (8,0):\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n"
        " Read depth:             0        \t Write depth:             1\n"
        " IO unplugs:             0        \t Timer unplugs:           0\n\n"
        "Total (8,0):\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n\n"
        "Throughput (R/W): 0KiB/s / 59,150KiB/s\nEvents (8,0): 2 entries\nSkips: 0 forward (0 -   0.0%)\n")
    c = traces.read(path, "blkparse")
    assert list(c.offset) == [223490 * 512] and list(c.size) == [4096] and list(c.line) == [4]


def test_blkparse_per_process_statistics_are_skipped(tmp_path):
    """``blkparse -s`` prints a block per process after the events, headed ``comm (pid)`` (or ``comm (pid,
    ...)`` for several pids of one name)."""
    path = tmp_path / "blk_s.txt"
    path.write_text(
        "  8,0    0        1     0.000000000  1234  D   W 1000 + 8 [dd]\n"
        "dd (1234)\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n"
        "kworker/u8:2 (1235, ...)\n Reads Queued:  0,  0KiB\t Writes Queued:  1,  4KiB\n"
        "\nCPU0 (8,0):\n Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB\n")
    c = traces.read(path, "blkparse")
    assert list(c.line) == [1] and list(c.offset) == [1000 * 512]


def test_a_hybrid_trace_group_checks_its_rules_once(tmp_path, monkeypatch):
    # fits_trace checks every rule on the footprint the model is built with: the build does not repeat it
    f = tmp_path / "prxy_0.csv"
    f.write_text("".join(MSR_LINE.format(i=i, off=4096 * (i + 1)) for i in range(200)))
    sub = hybrid_params.columns({**hybrid_params.defaults(), "scm_basis": "nand", "nand_capacity_gib": 1.0})
    calls = []
    check = hybrid_params.validate
    monkeypatch.setattr(hybrid_params, "validate", lambda *a, **k: calls.append(a) or check(*a, **k))
    wl = {"trace_path": str(f), "format": "msr"}
    data, info = hybrid_jobs.group_job("prxy_0", np.array([0]), sub, wl, 1000, 0.0, 0)
    assert len(calls) == 1 and info["measured_requests"] > 0 and data["config_id"].tolist() == [0]
    # a rule broken is still named, before anything is replayed
    calls.clear()
    bad = hybrid_params.columns({**hybrid_params.defaults(), "scm_basis": "nand", "scm_banks": 0})
    with pytest.raises(ConfigError, match="hybrid.scm_banks"):
        hybrid_jobs.group_job("prxy_0", np.array([0]), bad, wl, 1000, 0.0, 0)
    assert len(calls) == 1
