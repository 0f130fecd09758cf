"""fio's options that pace jobs against each other and against the drive: ``startdelay``, ``flow``,
``verify_backlog`` and the ``latency_target`` search, each on a stream or a search traced by hand from
fio's HOWTO and source (``flow.c``, ``io_u.c``)."""

import numpy as np
import pytest

from ssdx import presets
from ssdx.models.engine import jobs as engine_jobs
from ssdx.models.engine.latency_search import Search, window_end
from ssdx.params import ConfigError
from ssdx.workloads import fio
from ssdx.workloads.fio_timing import LatencyTarget
from ssdx.workloads.traces import READ, WRITE


def _job(tmp_path, text: str, name: str = "j.fio"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _requests(path, n=10_000, capacity=1e12):
    chunks = list(fio.load(path).stream(capacity, n))
    return {k: np.concatenate([getattr(c, k) for c in chunks]) for k in ("op", "offset", "size", "time_s")}


# ------------------------------------------------------------------------------------------ startdelay

def test_startdelay_shifts_a_timed_jobs_requests_and_a_range_is_drawn_per_clone(tmp_path):
    # 4 KiB reads at 1,000 IOPS: request i of a job is due at i ms, plus its delay
    text = ("[global]\nrw=read\nbs=4k\nrate_iops=1000\nsize=1m\n[a]\nstartdelay=0\n[b]\nstartdelay=2\n"
            "offset=100m\n")
    r = _requests(_job(tmp_path, text), n=600)
    a, b = r["offset"] < 100 << 20, r["offset"] >= 100 << 20
    np.testing.assert_allclose(r["time_s"][a][:5], [0.0, 1e-3, 2e-3, 3e-3, 4e-3])
    np.testing.assert_allclose(r["time_s"][b][:3], [2.0, 2.001, 2.002])
    assert (np.diff(r["time_s"]) >= 0).all()  # merged in time order
    text = "[r]\nrw=read\nbs=4k\nrate_iops=1000\nsize=1m\nnumjobs=8\noffset_increment=10m\nstartdelay=1-3\n"
    r = _requests(_job(tmp_path, text, "r.fio"), n=8 * 256)
    starts = [r["time_s"][r["offset"] // (10 << 20) == k].min() for k in range(8)]
    assert all(1.0 <= s <= 3.0 for s in starts) and len(set(starts)) == 8
    again = _requests(_job(tmp_path, text, "r.fio"), n=8 * 256)
    np.testing.assert_array_equal(r["time_s"], again["time_s"])  # the draw is the job's seed


def test_startdelay_in_the_closed_loop_and_bad_ranges_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"j.fio:4: job \[b\]: startdelay in a closed-loop job"):
        fio.load(_job(tmp_path, "[a]\nrw=read\n[b]\nstartdelay=5\nrw=read\n"))
    with pytest.raises(ConfigError, match=r"j.fio:2: startdelay: '5-2': the range's end is before"):
        fio.load(_job(tmp_path, "[a]\nstartdelay=5-2\nrate_iops=10\n"))
    with pytest.raises(ConfigError, match=r"j.fio:2: startdelay: 'x' is not a whole number"):
        fio.load(_job(tmp_path, "[a]\nstartdelay=x\nrate_iops=10\n"))


# ------------------------------------------------------------------------------------------------ flow

def test_flow_weights_set_the_jobs_shares_of_the_loop(tmp_path):
    # fio's examples/flow.fio without its flow_sleep: the writer at weight 1, the reader at weight 8
    text = ("[global]\nbs=8k\niodepth=16\nsize=10g\n[w]\nrw=write\nflow=1\n[r]\nrw=randread\nflow=8\n"
            "offset=20g\n")
    r = _requests(_job(tmp_path, text), n=9000)
    assert (r["op"] == WRITE).sum() == 1000 and (r["op"] == READ).sum() == 8000
    head = r["op"][:90]  # request by request, not in bursts
    assert (head == WRITE).sum() == 10
    # without flow the depths set the shares (1:1 here); a job outside the flow keeps its depth's share
    r = _requests(_job(tmp_path, text.replace("flow=1\n", "").replace("flow=8\n", ""), "n.fio"), n=9000)
    assert (r["op"] == WRITE).sum() == 4500
    text3 = text + "[x]\nrw=read\noffset=40g\niodepth=32\n"
    r = _requests(_job(tmp_path, text3, "x.fio"), n=6400)
    seq_reads = (r["op"] == READ) & (r["offset"] >= 40 << 30)
    assert seq_reads.sum() == 3200  # depth 32 of 64: half the loop; the flow's 32 split 1:8
    assert (r["op"] == WRITE).sum() == pytest.approx(3200 / 9, abs=1)


def test_flow_sleep_and_timed_flows_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"j.fio:2: flow_sleep: a job ahead of its flow share"):
        fio.load(_job(tmp_path, "[global]\nflow_sleep=1000\n[a]\nflow=2\n[b]\nflow=1\n"))
    fio.load(_job(tmp_path, "[global]\nflow_sleep=1000\n[a]\nrw=read\n"))  # no flow: nothing to pause
    with pytest.raises(ConfigError, match=r"flow: flow with rate"):
        fio.load(_job(tmp_path, "[a]\nflow=2\nrate_iops=100\n"))
    with pytest.raises(ConfigError, match=r"flow: '1001' must lie in 0 .. 1000"):
        fio.load(_job(tmp_path, "[a]\nflow=1001\n"))


# -------------------------------------------------------------------------------------- verify_backlog

def test_verify_backlog_reads_back_the_oldest_blocks_while_writing(tmp_path):
    base = "[w]\nrw=write\nbs=4k\nsize=40k\nverify=crc32c\nverify_backlog=4\n"
    r = _requests(_job(tmp_path, base))
    ops = "".join("W" if o == WRITE else "R" for o in r["op"])
    assert ops == "WWWWRRRR" * 2 + "WW" + "RR"  # the 2 left after the writes: the verify phase
    w, rd = r["offset"][r["op"] == WRITE], r["offset"][r["op"] == READ]
    np.testing.assert_array_equal(rd, w)  # every block once, in the order written
    # a batch of 2: after the first 4, each 2 written make the history a multiple of 4 again
    r = _requests(_job(tmp_path, base + "verify_backlog_batch=2\n", "b.fio"))
    ops = "".join("W" if o == WRITE else "R" for o in r["op"])
    assert ops == "WWWWRR" + "WWRR" * 3 + "RR"
    np.testing.assert_array_equal(r["offset"][r["op"] == READ], r["offset"][r["op"] == WRITE])
    # a batch larger than the backlog goes on reading each new write back as it is written (fio keeps
    # the batch's count, io_u.c check_get_verify)
    big = base.replace("size=40k", "size=64k") + "verify_backlog_batch=8\n"
    r = _requests(_job(tmp_path, big, "g8.fio"))
    assert "".join("W" if o == WRITE else "R" for o in r["op"]) == ("WWWWRRRR" + "WR" * 4) * 2
    # do_verify=0 or no verify method: fio logs no written block (backend.c), so nothing is read back
    for name, text in (("d.fio", base + "do_verify=0\n"), ("n.fio", base.replace("verify=crc32c\n", ""))):
        assert (_requests(_job(tmp_path, text, name))["op"] == WRITE).all()
    assert len(fio.load(_job(tmp_path, base, "g.fio")).groups()) == 1  # no separate verify phase


def test_verify_phase_reads_only_what_the_verifying_jobs_wrote(tmp_path):
    text = "[global]\nbs=4k\nsize=40k\n[v]\nrw=write\nverify=md5\n[p]\nrw=write\noffset=1m\n"
    w = fio.load(_job(tmp_path, text))
    g = w.groups()
    assert [x.phase for x in g] == ["run", "verify"] and [j.name for j in g[1].jobs] == ["v"]
    assert [d["group"] for d in w.describe()] == [0, 0]  # each job's run group, not its verify phase
    reads = np.concatenate([c.offset for c in g[1].stream(1e12, 1000)])
    assert len(reads) == 10 and (reads < 1 << 20).all()


# ------------------------------------------------------------------------------------- latency_target

def test_the_search_moves_the_depth_as_fios_io_u_does():
    """Depths traced by hand through fio's lat_target_success/__lat_target_failed for a drive that meets
    the target at depth 22 and below, iodepth 64: doubling to the first miss, bisecting, three successes
    just below the bound, then one more window at the depth found."""
    s = Search(64)
    depths = []
    while not s.done:
        depths.append(s.depth)
        s.success(run=False) if s.depth <= 22 else s.failure(99.0)
    assert depths == [1, 2, 4, 8, 16, 32, 24, 20, 22, 23, 22, 22] and s.depth == 22 and s.error is None
    s = Search(8)  # every window meets it: up to iodepth, then one more window there
    while not s.done:
        s.success(run=False)
    assert s.depth == 8
    s = Search(8)
    s.failure(100.0)  # a request over the target at depth 1 with a percentile of 100: fio's ETIMEDOUT
    assert s.done and "ETIMEDOUT" in s.error
    s = Search(8)
    s.failure(99.0)  # below 100 fio stays at depth 1
    assert not s.done and s.depth == 1


def test_a_window_ends_at_its_length_or_at_the_first_completion_over_the_target():
    issue = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    lat = np.array([0.5, 0.5, 3.5, 0.5, 0.5])
    done = issue + lat
    assert window_end(LatencyTarget(1.0, 3.5, 99.0, False), issue, done, lat) == (4, "window")
    assert window_end(LatencyTarget(1.0, 3.5, 100.0, False), issue, done, lat) == (4, "window")
    assert window_end(LatencyTarget(1.0, 9.0, 100.0, False), issue, done, lat) == (5, "over")  # at 5.5
    assert window_end(LatencyTarget(1.0, 9.0, 99.0, False), issue, done, lat) == (5, None)  # more could fit


def test_latency_target_finds_a_depth_that_meets_it_on_the_drive(tmp_path):
    """4 KiB random reads: the depth found meets the target in the window that ends the search, the next
    depth tried above it missed, a looser target finds a deeper queue, and the figures are those of the
    windows after the reset."""
    found = {}
    for target in (150, 400):
        text = (f"[d]\nrw=randread\nbs=4k\niodepth=64\nlatency_target={target}\nlatency_window=10ms\n"
                "latency_percentile=99\n")
        engine = presets.engine()
        engine["backend"] = "cpu"
        cfg = {"drive": presets.drive("generic_tlc_1tb"), "nand": None, "engine": engine, "seed": 0,
               "workload": {**presets.workload(), "fio": str(_job(tmp_path, text, f"{target}.fio")),
                            "requests": 100_000}}
        s = engine_jobs.run_replay(cfg, tmp_path / str(target), progress=False)
        g = s["fio_groups"][0]
        lt = g["latency_target"]
        w = lt["windows"]
        assert w[-1]["decision"] == "final" and w[-1]["within_target_pct"] >= 99.0
        assert g["queue_depth"] == lt["depth"] == w[-1]["queue_depth"]
        missed = [x["queue_depth"] for x in w if x["decision"] == "down"]
        assert all(d > lt["depth"] for d in missed)
        reset = max(i for i, x in enumerate(w) if x["decision"] == "hold")
        assert g["requests"] == sum(x["requests"] for x in w[reset + 1:])
        found[target] = lt["depth"]
    assert 1 <= found[150] < found[400] <= 64


def test_latency_target_is_refused_where_one_depth_cannot_be_searched(tmp_path):
    with pytest.raises(ConfigError, match=r"j.fio:3: job \[a\]: latency_target searches one clone"):
        fio.load(_job(tmp_path, "[a]\nnumjobs=2\nlatency_target=100\nlatency_window=1s\n"))
    with pytest.raises(ConfigError, match=r"j.fio:2: latency_window: latency_window needs latency_target"):
        fio.load(_job(tmp_path, "[a]\nlatency_window=1s\n"))
    with pytest.raises(ConfigError, match=r"latency_target: latency_target needs a latency_window"):
        fio.load(_job(tmp_path, "[a]\nlatency_target=100\n"))
    with pytest.raises(ConfigError, match=r"latency_percentile: must lie in \(0, 100\]"):
        fio.load(_job(tmp_path, "[a]\nlatency_target=100\nlatency_window=1s\nlatency_percentile=0\n"))


# -------------------------------------------------------------------------------------------- wait_for

def test_wait_for_starts_a_group_once_the_named_job_is_done(tmp_path):
    # fio's examples/waitfor.fio, its chain of jobs each waiting for the one before; a second job waiting
    # for the same one joins the group
    text = ("[global]\nbs=4k\nsize=1g\n[writers]\nrw=write\nnumjobs=4\n[readers]\nnew_group\n"
            "wait_for=writers\nrw=randread\n[writers2]\nwait_for=readers\nrw=randwrite\n[also]\n"
            "wait_for=readers\nrw=read\n")
    g = fio.load(_job(tmp_path, text)).groups()
    assert [[j.name for j in x.jobs] for x in g] == [["writers"], ["readers"], ["writers2", "also"]]
    refusals = [  # fio would start the job while other jobs still run (backend.c, run_threads)
        ("[a]\nrw=read\n[c]\nrw=read\n[b]\nrw=read\nwait_for=a\n", r"s.fio:7: job \[b\]: wait_for=a: that "
         r"job runs beside c"),
        ("[a]\nrw=read\n[b]\nwait_for=a\n[c]\nrw=write\n", r"s.fio:5: job \[c\]: this job would start at "
         r"once, beside job \[a\]"),  # c starts at once in fio, beside a
        ("[a]\nrw=read\n[b]\nwait_for=a\n[c]\nwait_for=b\n[d]\nwait_for=a\n", r"wait_for=a: no job of that "
         "name runs just before it"),  # a ended while b ran
        ("[a]\nrw=read\n[b]\nwait_for=z\n", r"wait_for=z: no job of that name"),
        ("[a]\nwait_for=a\n", r"a job cannot wait for itself")]
    for text, match in refusals:
        with pytest.raises(ConfigError, match=match):
            fio.load(_job(tmp_path, text, "s.fio"))


# ------------------------------------------------------------------------------ sequence distribution

def test_sequence_distribution_takes_its_blocks_in_turn_and_strides_as_fios_io_u(tmp_path):
    # fio's examples/sequence-distribution.fio: 2,0,1,2,0,1 repeated; with the stride 2,0,1,5,3,4
    base = "[global]\nrw=randread\nbs=4k\nsize=48k\nio_size=24k\n[s]\nrandom_distribution=sequence:2,0,1\n"
    r = _requests(_job(tmp_path, base))
    assert (r["offset"] // 4096).tolist() == [2, 0, 1, 2, 0, 1]
    r = _requests(_job(tmp_path, base + "random_sequence_stride=1\n", "s.fio"))
    assert (r["offset"] // 4096).tolist() == [2, 0, 1, 5, 3, 4]
    # a block past the region ends the job (fio's __get_next_rand_offset_sequence returns 1)
    text = "[s]\nrw=randread\nbs=4k\nsize=16k\nrandom_distribution=sequence:2,0,1\nrandom_sequence_stride=1\n"
    r = _requests(_job(tmp_path, text, "e.fio"))
    assert (r["offset"] // 4096).tolist() == [2, 0, 1]
    # each direction counts its own requests, in blocks of its own size (fio: b x ba[ddir])
    text = ("[s]\nrw=randrw\nbs=4k,8k\nsize=64k\nio_size=64k\nrandom_distribution=sequence:3,1\n"
            "random_sequence_stride=1\n")
    r = _requests(_job(tmp_path, text, "m.fio"))
    for d, bs in ((READ, 4096), (WRITE, 8192)):
        blocks = (r["offset"][r["op"] == d] // bs).tolist()
        assert len(blocks) >= 3 and blocks == [3, 1, 5, 3, 7, 5, 9, 7][:len(blocks)]
    # every request of the direction counts, those that continue a run of rw=randread:2 too (io_issues)
    text = ("[s]\nrw=randread:2\nbs=4k\nsize=64k\nio_size=32k\nrandom_distribution=sequence:2,0,1\n"
            "random_sequence_stride=1\n")
    assert (_requests(_job(tmp_path, text, "r.fio"))["offset"] // 4096).tolist() == [2, 3, 1, 2, 3, 4, 8, 9]
    with pytest.raises(ConfigError, match=r"sequence block 9 lies past the region's 4 blocks of reads"):
        _requests(_job(tmp_path, "[s]\nrw=randread\nbs=4k\nsize=16k\nrandom_distribution=sequence:9\n",
                       "p.fio"))
    with pytest.raises(ConfigError, match=r"sequence:2,x: block indices"):
        fio.load(_job(tmp_path, "[s]\nrw=randread\nrandom_distribution=sequence:2,x\n", "x.fio"))
