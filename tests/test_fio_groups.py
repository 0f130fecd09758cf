"""fio's job groups: ``stonewall`` runs a job after every job before it, on the drive they left; each group
is reported, and where the groups would run at once (a sweep, a fluid fill) they are refused."""

import copy

import numpy as np
import pytest

from ssdx import presets
from ssdx.models.engine import jobs as engine_jobs
from ssdx.params import ConfigError
from ssdx.workloads import fio


def _job(tmp_path, text: str, name: str = "j.fio"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _cfg(path, requests=2000, **drive) -> dict:
    engine = presets.engine()
    engine["backend"] = "cpu"
    return {"drive": presets.drive("generic_tlc_1tb", **drive), "nand": None, "engine": engine, "seed": 0,
            "workload": {**presets.workload(), "fio": str(path), "requests": requests}}


def test_stonewall_and_its_alias_start_groups(tmp_path):
    p = _job(tmp_path, "[global]\nbs=4k\nsize=1g\n[a]\nrw=read\niodepth=2\n[b]\nrw=randread\niodepth=8\n"
                       "[c]\nrw=write\nstonewall\niodepth=4\nnumjobs=2\n[d]\nrw=randwrite\nwait_for_previous\n")
    w = fio.load(p)
    assert [[j.name for j in g.jobs] for g in w.groups()] == [["a", "b"], ["c"], ["d"]]
    assert [g.queue_depth for g in w.groups()] == [10, 8, 1] and w.queue_depth == 10
    assert [d["group"] for d in w.describe()] == [0, 0, 1, 2]
    # a stonewall in [global] is every job's: each job its own group
    text = "[global]\nstonewall\nbs=4k\nsize=1g\n[a]\nrw=read\n[b]\nrw=write\n"
    every = fio.load(_job(tmp_path, text, "g.fio"))
    assert len(every.groups()) == 2
    one = fio.load(_job(tmp_path, "[a]\nrw=read\nsize=1g\n[b]\nrw=write\nsize=1g\n", "o.fio"))
    assert one.groups() == [one]


def test_groups_run_at_once_elsewhere_are_refused_naming_the_line(tmp_path):
    p = _job(tmp_path, "[global]\nbs=128k\nsize=1g\n[a]\nrw=write\n[b]\nrw=write\nstonewall\noffset=2g\n")
    w = fio.load(p)
    with pytest.raises(ConfigError, match=r"j.fio:8: job \[b\]: stonewall"):
        w.stream(1e12, 100)
    with pytest.raises(ConfigError, match=r"j.fio:8: job \[b\]: stonewall"):
        w.fill(1e12, 0.0)
    # the loops of one group must agree, of two groups need not
    text = "[a]\nrw=read\nsize=1g\n[b]\nrw=read\nsize=1g\nrate_iops=100\nstonewall\n"
    fio.load(_job(tmp_path, text, "l.fio"))
    with pytest.raises(ConfigError, match="one loop"):
        fio.load(_job(tmp_path, "[a]\nrw=read\nsize=1g\n[b]\nrw=read\nsize=1g\nrate_iops=100\n", "m.fio"))


def test_each_group_starts_once_the_one_before_has_completed(tmp_path):
    """A QD1 read group after a QD32 read group on a drive that holds its whole map: reads leave it as they
    found it, so the second group gives exactly what it gives alone (it never waits behind the first group's
    requests, which would add the depth-32 queueing, more than its whole latency); the groups' requests and
    makespans add up to the run's."""
    both = _job(tmp_path, "[global]\nbs=4k\nsize=1g\n[deep]\nrw=randread\niodepth=32\n"
                          "[qd1]\nrw=randread\niodepth=1\nstonewall\noffset=2g\n", "both.fio")
    alone = _job(tmp_path, "[global]\nbs=4k\nsize=1g\n[qd1]\nrw=randread\niodepth=1\noffset=2g\n",
                 "alone.fio")
    s = engine_jobs.run_replay(_cfg(both, dram=True), tmp_path / "both", progress=False)
    a = engine_jobs.run_replay(_cfg(alone, dram=True), tmp_path / "alone", progress=False)
    g0, g1 = s["fio_groups"]
    assert (g0["queue_depth"], g1["queue_depth"]) == (32, 1) and g1["jobs"] == ["qd1"]
    assert g0["latency_us"]["mean"] > 2 * g1["latency_us"]["mean"]  # queueing at depth 32
    for k in ("mean", "p50", "p99"):
        assert g1["latency_us"][k] == pytest.approx(a["latency_us"][k], rel=1e-9)
    assert g1["iops"] == pytest.approx(a["iops"], rel=1e-6)  # the makespan from the float32 clock
    assert s["requests"] == g0["requests"] + g1["requests"] == 4000
    assert s["makespan_s"] == pytest.approx(g0["makespan_s"] + g1["makespan_s"], rel=1e-9)
    assert [j["group"] for j in s["fio_jobs"]] == [0, 1]


def test_a_group_writes_on_the_drive_the_group_before_filled(tmp_path):
    """Writes after a fill find the pSLC cache used up: the same write group writes native NAND after the fill
    and pSLC on a fresh drive."""
    after = _job(tmp_path, "[global]\nsize=100%\n[fill]\nrw=write\nbs=1m\niodepth=16\n"
                           "[steady]\nrw=randwrite\nbs=128k\niodepth=32\nstonewall\n", "after.fio")
    fresh = _job(tmp_path, "[steady]\nrw=randwrite\nbs=128k\niodepth=32\nsize=100%\n", "fresh.fio")
    cfg = _cfg(after, requests=30000, user_capacity_gb=64.0, die_gbit=128)
    s = engine_jobs.run_replay(cfg, tmp_path / "after", progress=False)
    a = engine_jobs.run_replay(_cfg(fresh, requests=30000, user_capacity_gb=64.0, die_gbit=128),
                               tmp_path / "fresh", progress=False)
    steady = s["fio_groups"][1]
    assert a["nand"]["native_bytes"] < 0.05 * a["nand"]["pslc_bytes"]  # a fresh drive: pSLC
    assert steady["nand"]["native_bytes"] > steady["nand"]["pslc_bytes"]  # after the fill: native
    assert steady["write_latency_us"]["mean"] > 1.5 * a["write_latency_us"]["mean"]


def test_the_summary_reports_each_group_as_fio_does(tmp_path):
    p = _job(tmp_path, "[global]\nbs=4k\nsize=1g\niodepth=4\n[r]\nrw=randread\n"
                       "[w]\nrw=randwrite\nstonewall\n")
    cfg = _cfg(p, requests=500)
    s = engine_jobs.run_replay(copy.deepcopy(cfg), tmp_path / "o", progress=False)
    r, w = s["fio_groups"]
    assert r["read"]["io_bytes"] == 500 * 4096 and r["write"]["io_bytes"] == 0
    assert w["write"]["io_bytes"] == 500 * 4096 and w["read"]["io_bytes"] == 0
    assert r["loop"] == w["loop"] == "closed" and r["truncated"] and s["fio_truncated"]
    assert np.isclose(s["iops"], 1000 / s["makespan_s"])


def test_a_negative_sequential_stride_reads_backwards_as_fio_does(tmp_path):
    """fio's get_next_seq_offset: the first request at the start, each next one N bytes before the end of the
    one before, and one that would start before the region at N bytes before its end."""
    p = _job(tmp_path, "[b]\nrw=read:-8k\nbs=4k\nsize=64k\n")
    w = fio.load(p)
    assert w.jobs[0].hole_bytes == -8192
    blocks = (next(iter(w.stream(1e12, 40))).offset // 4096).tolist()
    assert blocks == [0, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]  # size ends it: 16 blocks
    with pytest.raises(ConfigError, match="rw"):
        fio.load(_job(tmp_path, "[r]\nrw=randread:-8\nbs=4k\nsize=64k\n", "neg.fio"))


def test_verify_reads_back_what_the_job_wrote_once_its_writes_end(tmp_path):
    """fio's verify phase: after a writing job's writes, the same offsets and sizes read in the order written;
    do_verify=0 or verify=0 leave it out; where phases would run at once it is refused naming verify."""
    p = _job(tmp_path, "[w]\nrw=randwrite\nbssplit=4k/50:64k/50\nsize=1g\niodepth=8\nverify=crc32c\n")
    w = fio.load(p)
    run, check = w.groups()
    assert (run.phase, check.phase) == ("run", "verify") and not check.open_loop
    writes = list(run.stream(1e12, 300))
    reads = list(check.stream(1e12, 300))
    np.testing.assert_array_equal(np.concatenate([c.offset for c in reads]),
                                  np.concatenate([c.offset for c in writes]))
    np.testing.assert_array_equal(np.concatenate([c.size for c in reads]),
                                  np.concatenate([c.size for c in writes]))
    assert (np.concatenate([c.op for c in reads]) == 0).all()
    s = engine_jobs.run_replay(_cfg(p, requests=300), tmp_path / "o", progress=False)
    g0, g1 = s["fio_groups"]
    assert (g0["phase"], g1["phase"]) == ("run", "verify")
    assert g1["read"]["io_bytes"] == g0["write"]["io_bytes"] > 0 and g1["write"]["io_bytes"] == 0
    assert s["requests"] == 600
    for off in ("do_verify=0", "verify=0"):
        q = _job(tmp_path, f"[w]\nrw=write\nbs=4k\nsize=1g\nverify=md5\n{off}\n", "off.fio")
        assert len(fio.load(q).groups()) == 1
    with pytest.raises(ConfigError, match=r"j.fio:6: job \[w\]: verify"):
        w.stream(1e12, 100)
    with pytest.raises(ConfigError, match="verify"):
        w.fill(1e12, 0.0)
