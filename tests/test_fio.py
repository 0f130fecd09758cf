"""fio job files (ssdx.workloads.fio): parsing, the streams they make, every error path, the CLI contract
of `experiment=trace_replay workload.fio=...` and the fluid fill of a fio write job."""

import json
import warnings

import numpy as np
import pytest
from test_cli import ssdx

from ssdx import presets
from ssdx.models.fluid import jobs as fill_jobs
from ssdx.params import ConfigError
from ssdx.workloads import fio, synthetic
from ssdx.workloads.traces import READ, WRITE

TB2 = 2e12  # the aldrin preset's user capacity, bytes


def load(tmp_path, text, name="job.fio", **kw):
    path = tmp_path / name
    path.write_text(text)
    return fio.load(path, **kw)


def requests(workload, n=200_000, capacity=TB2, seed=0):
    s = workload.stream(capacity, n, seed)
    chunks = list(s)
    fields = ("time_s", "op", "offset", "size", "line")
    out = {k: np.concatenate([getattr(c, k) for c in chunks]) for k in fields}
    return out, s


# ------------------------------------------------------------------------------------------- parsing

def test_global_sections_apply_to_the_jobs_below_them_and_env_expands(tmp_path, monkeypatch):
    monkeypatch.setenv("SZ", "64m")
    w = load(tmp_path, """; comment
# another
[global]
bs=8k            ; fio cuts a line at ; or #
size=${SZ}
iodepth=${UNSET}4
[a]
rw=randread
time_based
runtime=2m
[global]
bs=16k
[b]
rw=write
norandommap
""")
    a, b = w.jobs
    assert (a.name, b.name) == ("a", "b")
    assert dict(a.read_sizes) == {8192: 1.0} and dict(b.write_sizes) == {16384: 1.0}  # a keeps 8k
    assert a.size == b.size == 64 << 20 and a.iodepth == 4  # ${UNSET} is the empty string
    assert a.time_based and a.runtime_s == 120.0 and not b.time_based
    assert a.random_map and not b.random
    assert w.name == "a+b" and w.queue_depth == 8


@pytest.mark.parametrize("value, kb_base, expected", [
    ("4096", 1024, 4096), ("4k", 1024, 4096), ("4KB", 1024, 4096), ("1m", 1024, 1 << 20),
    ("1g", 1024, 1 << 30), ("1MiB", 1024, 1_000_000), ("1m", 1000, 1_000_000), ("1MiB", 1000, 1 << 20),
    ("0x1000", 1024, 4096), ("2t", 1024, 2 << 40), ("20%", 1024, 0.2),
])
def test_size_units_as_fio_reads_them(tmp_path, value, kb_base, expected):
    w = load(tmp_path, f"[j]\nsize={value}\nkb_base={kb_base}\n")  # kb_base applies whatever its position
    assert w.jobs[0].size == expected


def test_kb_base_reads_the_values_of_its_section_and_those_after_it(tmp_path):
    w = load(tmp_path, """[global]
size=1m
[a]
[global]
kb_base=1000
[b]
[c]
size=1m
[d]
kb_base=1024
io_size=1m
""")
    a, b, c, d = w.jobs
    assert a.size == b.size == 1 << 20  # read before kb_base=1000 was set
    assert c.size == 1_000_000 and d.io_size == 1 << 20 and d.size == 1 << 20


@pytest.mark.parametrize("option, value, seconds", [
    ("runtime", "30", 30.0), ("runtime", "30s", 30.0), ("runtime", "10m", 600.0), ("runtime", "2h", 7200.0),
    ("runtime", "500ms", 0.5), ("thinktime", "100", 100e-6), ("thinktime", "2ms", 2e-3),
    ("thinktime", "1s", 1.0),
])
def test_time_units(tmp_path, option, value, seconds):
    w = load(tmp_path, f"[j]\n{option}={value}\n")
    got = w.jobs[0].runtime_s if option == "runtime" else w.jobs[0].thinktime_s
    assert got == pytest.approx(seconds)


def test_block_size_forms(tmp_path):
    j = load(tmp_path, "[j]\nrw=randrw\nbssplit=4k/50:8k/:16k/\n").jobs[0]
    assert dict(j.read_sizes) == dict(j.write_sizes) == {4096: 50.0, 8192: 25.0, 16384: 25.0}
    j = load(tmp_path, "[j]\nrw=randrw\nbs=4k,64k\n").jobs[0]
    assert dict(j.read_sizes) == {4096: 1.0} and dict(j.write_sizes) == {65536: 1.0}
    j = load(tmp_path, "[j]\nrw=randrw\nbs=,64k\n").jobs[0]  # default for reads
    assert dict(j.read_sizes) == {4096: 1.0} and dict(j.write_sizes) == {65536: 1.0}
    j = load(tmp_path, "[j]\nbsrange=4k-16k\n").jobs[0]
    assert dict(j.read_sizes) == pytest.approx({4096: 0.25, 8192: 0.25, 12288: 0.25, 16384: 0.25})
    j = load(tmp_path, "[j]\nbsrange=10k:4k\n").jobs[0]  # swapped; 10k not a multiple of 4k takes the rest
    assert dict(j.read_sizes) == pytest.approx({4096: 0.4, 8192: 0.4, 10240: 0.2})
    j = load(tmp_path, "[j]\nrw=randrw\nbssplit=2k/50:4k/50,4k/90:8k/10\n").jobs[0]
    assert dict(j.read_sizes) == {2048: 50.0, 4096: 50.0} and dict(j.write_sizes) == {4096: 90.0, 8192: 10.0}


@pytest.mark.parametrize("lines, read_fraction", [
    ("rw=randrw", 0.5), ("rw=randrw\nrwmixread=70", 0.7), ("rw=rw\nrwmixwrite=20", 0.8),
    ("rw=randrw\nrwmixread=70\nrwmixwrite=40", 0.6), ("rw=randrw\nrwmixwrite=40\nrwmixread=70", 0.7),
    ("rw=randread\nrwmixread=70", 1.0), ("readwrite=write", 0.0),
])
def test_rwmix_the_later_wins(tmp_path, lines, read_fraction):
    assert load(tmp_path, f"[j]\n{lines}\n").jobs[0].read_fraction == pytest.approx(read_fraction)


@pytest.mark.parametrize("rw", ["randread", "write", "randrw"])
@pytest.mark.parametrize("option, value", [("rwmixread", 150), ("rwmixwrite", 101)])
def test_rwmix_outside_0_to_100_is_refused_whatever_the_rw_mode(tmp_path, rw, option, value):
    # fio refuses a mix percentage above 100 even where the mode does not mix (rw=randread)
    with pytest.raises(fio.FioError, match=rf"job.fio:3: {option}: .*must lie in 0 \.\. 100"):
        load(tmp_path, f"[j]\nrw={rw}\n{option}={value}\n")


def test_sequential_runs_and_holes(tmp_path):
    r, _ = requests(load(tmp_path, "[j]\nrw=randread:8\nbs=4k\nsize=1g\n"), 4000)
    runs = r["offset"].reshape(-1, 8)
    assert np.all(np.diff(runs, axis=1) == 4096)  # 8 sequential offsets from each random start
    assert len(np.unique(runs[:, 0])) == len(runs)  # a new random start each time (random map)
    same, _ = requests(load(tmp_path, "[j]\nrw=randread:4\nrw_sequencer=identical\nsize=1g\n"), 400)
    assert np.all(np.diff(same["offset"].reshape(-1, 4), axis=1) == 0)
    holes, _ = requests(load(tmp_path, "[j]\nrw=write:4k\nbs=4k\nsize=1g\n"), 1000)
    assert np.all(np.diff(holes["offset"]) == 8192) and holes["offset"][0] == 0


def test_numjobs_merge_on_one_drive_by_queue_share(tmp_path):
    w = load(tmp_path, """[global]
rw=randread
size=1m
[a]
iodepth=3
numjobs=2
offset_increment=1m
[b]
iodepth=1
offset=2m
""")
    assert w.queue_depth == 7 and not w.open_loop
    r, s = requests(w, 10_000)
    clone = r["offset"] // (1 << 20)
    assert r["offset"].min() >= 0 and (r["offset"] + r["size"]).max() <= 3 << 20
    # each clone issues in proportion to its depth: 3:3:1 of the first 70 requests
    assert np.bincount(clone[:70]).tolist() == [30, 30, 10]
    assert np.bincount(clone).tolist() == [256, 256, 256]  # each clone's 1 MiB of 4 KiB reads, once
    assert not s.truncated and s.requests == 768
    np.testing.assert_array_equal(r["line"], np.arange(1, 769))
    assert np.isnan(r["time_s"]).all()


def test_rate_gives_arrival_times(tmp_path):
    w = load(tmp_path, "[j]\nrw=randread\nbs=4k\nrate_iops=1000\nsize=1g\n")
    assert w.open_loop
    r, _ = requests(w, 500)
    np.testing.assert_allclose(r["time_s"], np.arange(500) / 1000)  # linear: one every 1 ms
    w = load(tmp_path, "[j]\nrw=write\nbs=64k\nrate=64m\nruntime=50ms\nsize=1g\n")
    r, s = requests(w, 10_000)
    assert len(r["op"]) == 52 and not s.truncated  # 1024 requests/s: t = i/1024 < 50 ms for i <= 51
    np.testing.assert_allclose(np.diff(r["time_s"]), 1 / 1024)
    # fio's alias timeout is runtime; io_submit_mode and the minimum rates change nothing the drive sees
    text = "[j]\nrw=write\nbs=64k\nrate=64m\ntimeout=50ms\nsize=1g\nio_submit_mode=offload\n"
    text += "ratemin=1m\nrate_iops_min=10\nratecycle=500\n"
    w2 = load(tmp_path, text)
    assert w2.jobs[0].runtime_s == 0.05 and w2.ignored == []
    assert w2.ignored_by_design == ["io_submit_mode", "rate_cycle", "rate_iops_min", "rate_min"]
    r2, _ = requests(w2, 10_000)
    np.testing.assert_array_equal(r2["time_s"], r["time_s"])
    np.testing.assert_array_equal(r2["offset"], r["offset"])
    w = load(tmp_path, "[j]\nrw=randread\nrate_iops=1000\nrate_process=poisson\nsize=1g\n")
    gaps = np.diff(requests(w, 20_000)[0]["time_s"])
    assert gaps.mean() == pytest.approx(1e-3, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1, abs=0.05)  # exponential gaps
    w = load(tmp_path, "[j]\nrw=randread\niodepth=16\nthinktime=1ms\nthinktime_blocks=4\nsize=1g\n")
    assert w.open_loop and w.queue_depth == 4  # thinktime caps the depth at thinktime_blocks
    np.testing.assert_allclose(requests(w, 40)[0]["time_s"], np.arange(40) // 4 * 1e-3)


def test_rate_only_of_a_direction_in_use_times_a_job(tmp_path):
    w = load(tmp_path, "[j]\nrw=write\nrate=1m,\nsize=1g\n")  # limits reads only: a closed-loop writer
    assert not w.open_loop


# ------------------------------------------------------------------------------------------- streams

def test_stream_statistics_mix_sizes_region_and_alignment(tmp_path):
    w = load(tmp_path, """[j]
rw=randrw
rwmixread=70
bssplit=4k/60:16k/20:64k/20
offset=1m
size=64m
io_size=1g
blockalign=8k,64k
""")
    r, s = requests(w, 20_000)
    assert len(r["op"]) == 20_000 and s.truncated
    assert np.mean(r["op"] == READ) == pytest.approx(0.7, abs=0.01)
    for b, share in ((4096, 0.6), (16384, 0.2), (65536, 0.2)):
        assert np.mean(r["size"] == b) == pytest.approx(share, abs=0.015)
    off = r["offset"] - (1 << 20)
    assert off.min() >= 0 and (off + r["size"]).max() <= 64 << 20
    assert np.all(off[r["op"] == READ] % 8192 == 0) and np.all(off[r["op"] == WRITE] % 65536 == 0)
    again, _ = requests(w, 20_000)
    np.testing.assert_array_equal(again["offset"], r["offset"])  # deterministic
    other, _ = requests(w, 20_000, seed=1)
    assert not np.array_equal(other["offset"], r["offset"])
    seeded = load(tmp_path, "[j]\nrw=randread\nrandseed=5\nsize=1g\n", name="s.fio")
    np.testing.assert_array_equal(requests(seeded, 100, seed=0)[0]["offset"],
                                  requests(seeded, 100, seed=9)[0]["offset"])  # randseed wins


def test_random_map_covers_each_block_once(tmp_path):
    r, _ = requests(load(tmp_path, "[j]\nrw=randwrite\nsize=4m\n"))
    assert len(r["offset"]) == 1024 and len(np.unique(r["offset"])) == 1024  # a permutation of the blocks
    r, _ = requests(load(tmp_path, "[j]\nrw=randwrite\nsize=4m\nnorandommap\n"))
    assert len(np.unique(r["offset"])) < 0.7 * 1024  # with replacement: ~63 % distinct
    r, _ = requests(load(tmp_path, "[j]\nrw=randwrite\nsize=4m\nloops=3\n"))
    assert len(r["offset"]) == 3072 and np.all(np.bincount(r["offset"] // 4096) == 3)  # each pass once


def _pareto_cdf(j: np.ndarray, n: int, h: float) -> np.ndarray:
    """P(rank < j) of fio's pareto:h over n ranks: (j / (n - 1))^(ln(1-h) / ln h), at most 1."""
    return np.minimum(j / (n - 1), 1.0) ** (np.log(1 - h) / np.log(h))


def _through_hash(p: np.ndarray) -> np.ndarray:
    """The closed-form rank probabilities spread over the slots by the same hash as the stream."""
    n = len(p)
    return np.bincount(synthetic._scatter(np.arange(n), n), weights=p, minlength=n)


@pytest.mark.parametrize("spec, pmf", [
    ("zipf:0.9", lambda n: np.arange(1, n + 1.0) ** -0.9),
    ("zipf:1.2", lambda n: np.arange(1, n + 1.0) ** -1.2),
    ("pareto:0.2", lambda n: np.diff(_pareto_cdf(np.arange(n + 1), n, 0.2))),
])
def test_skewed_offsets_against_the_closed_form(tmp_path, spec, pmf):
    n = 1024
    r, _ = requests(load(tmp_path, f"[j]\nrw=randread\nsize=4m\nio_size=800m\nrandom_distribution={spec}\n"))
    p = pmf(n)
    slot_p = _through_hash(p / p.sum())
    hot = np.argsort(slot_p)[::-1][: n // 10]
    share = np.isin(r["offset"] // 4096, hot).mean()
    assert share == pytest.approx(slot_p[hot].sum(), abs=0.015)
    # and the ranks themselves (before the hash) follow it
    rng = np.random.default_rng(0)
    kind, value = spec.split(":")
    ranks = (synthetic._gray_zipf(rng, 200_000, n, float(value)) if kind == "zipf"
             else synthetic.pareto_ranks(rng, 200_000, n, float(value)))
    q = p / p.sum()
    assert np.mean(ranks < n // 10) == pytest.approx(q[: n // 10].sum(), abs=0.015)


def test_pareto_is_the_80_20_rule_and_normal_and_zoned(tmp_path):
    rng = np.random.default_rng(1)
    n = 100_000
    ranks = synthetic.pareto_ranks(rng, 200_000, n, 0.2)
    assert np.mean(ranks < 0.2 * n) == pytest.approx(0.8, abs=0.005)
    g = synthetic.normal_ranks(rng, 200_000, n)
    assert g.mean() == pytest.approx(n / 2, rel=0.01) and g.std() == pytest.approx(n / 12, rel=0.02)
    r, _ = requests(load(tmp_path, "[j]\nrw=randread\nsize=100m\nio_size=400m\n"
                                   "random_distribution=zoned:60/10:30/20:10/\n"))
    frac = r["offset"] / (100 << 20)
    assert np.mean(frac < 0.1) == pytest.approx(0.6, abs=0.01)
    assert np.mean((frac >= 0.1) & (frac < 0.3)) == pytest.approx(0.3, abs=0.01)
    assert np.mean(frac >= 0.3) == pytest.approx(0.1, abs=0.01)
    r, _ = requests(load(tmp_path, "[j]\nrw=randread\nsize=100m\nio_size=40m\n"
                                   "random_distribution=zoned_abs:90/1m:10/99m\n"))
    assert np.mean(r["offset"] < 1 << 20) == pytest.approx(0.9, abs=0.02)


def test_request_count_and_cap(tmp_path):
    w = load(tmp_path, "[j]\nrw=randread\nsize=1g\nnumber_ios=300\n")
    assert requests(w)[0]["op"].size == 300
    w = load(tmp_path, "[j]\nrw=randread\ntime_based\nruntime=10\nsize=1g\n")  # closed, time_based
    r, s = requests(w, 5000)
    assert r["op"].size == 5000 and s.truncated
    assert "workload.requests" in w.describe()[0]["bound"]
    w = load(tmp_path, "[j]\nrw=write\nbs=128k\n")  # no size: the whole drive
    r, s = requests(w, 1000, capacity=1 << 30)
    assert r["op"].size == 1000 and s.truncated
    r, s = requests(w, 10_000, capacity=1 << 30)
    assert r["op"].size == 8192 and not s.truncated and r["offset"][-1] == (1 << 30) - (128 << 10)


# -------------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text, line, match", [
    ("bs=4k\n", 1, "outside of a [job] section"),
    ("[j]\nthis is junk\n", 2, "not a [section]"),
    ("[j\nbs=4k\n", 1, "malformed section header"),
    ("[j]\nbs=4x\n", 2, "unknown unit"),
    ("[j]\nsize=1.5g\n", 2, "whole numbers only"),
    ("[j]\nsize=1mi\n", 2, "read 'mi' differently"),
    ("[j]\nbs=4KiB\n", 2, "not a multiple of 512"),
    ("[j]\nbs=4k/50\n", 2, "not a whole number"),
    ("[j]\nrw=randwhat\n", 2, "unknown rw value"),
    ("[j]\nrw=randtrim\n", 2, "trims are not modelled"),
    ("[j]\n\niodepth=0\n", 3, "must lie in 1"),
    ("[j]\nbssplit=4k/50:8k/40\n", 2, "add up to 90, not 100"),
    ("[j]\nrandom_distribution=zipf:1\n", 2, "zipf theta"),
    ("[j]\nrandom_distribution=zoned:60/10:30/20\n", 2, "not 100"),
    ("[j]\nruntime=10sec\n", 2, "'sec'"),
    ("[j]\nsize=(1024*4)\n", 2, "arithmetic expressions"),
    ("[j]\nsize=8*$mb_memory\n", 2, "reserved keyword $mb_memory"),
    ("[j]\ntime_based\n", 2, "time_based needs a runtime"),
    ("[j]\nfsync=8\n", 2, "option 'fsync' is not modelled"),
    ("[j]\nrw=read\nrw_sequencer=backwards\n", 3, "sequential or identical"),
    ("[j]\nbs\n", 2, "needs a value"),
    ("[j]\nnorandommap=yes\n", 2, "a flag takes"),
    ("[j]\ninclude nowhere.fio\n", 2, "include: no such file"),
    ("[a]\nrate_iops=100\n[b]\nrw=read\n", 3, "one loop"),
])
def test_errors_name_the_file_and_line(tmp_path, text, line, match):
    path = tmp_path / "bad.fio"
    path.write_text(text)
    with pytest.raises(fio.FioError) as e:
        fio.load(path)
    assert isinstance(e.value, ConfigError) and e.value.field == "workload.fio"
    assert e.value.line == line and f"{path}:{line}:" in str(e.value)
    assert match in str(e.value)


def test_file_level_errors(tmp_path):
    for text, match in (("", "holds no job"), ("[global]\nbs=4k\n", "holds no job")):
        with pytest.raises(fio.FioError, match=match):
            load(tmp_path, text)
    with pytest.raises(fio.FioError, match="no such file"):
        fio.load(tmp_path / "missing.fio")
    with pytest.raises(fio.FioError, match=r"no job named 'c'; its jobs: a, b") as e:
        load(tmp_path, "[a]\n[b]\n", job="c")
    assert e.value.field == "workload.fio_job"
    (tmp_path / "inc.fio").write_text("iodepth=4\n[oops]\n")
    with pytest.raises(fio.FioError, match="may not hold") as e:
        load(tmp_path, "[a]\ninclude inc.fio\n")
    assert e.value.path.endswith("inc.fio") and e.value.line == 2
    (tmp_path / "bin.fio").write_bytes(b"[a]\nbs=\xff\n")
    with pytest.raises(fio.FioError, match="not UTF-8") as e:
        fio.load(tmp_path / "bin.fio")
    assert e.value.line == 2
    w = load(tmp_path, "[j]\nrw=read\noffset=3t\n")  # placed on the drive only when it is known
    with pytest.raises(fio.FioError, match=r"job.fio:3: .*beyond the drive"):
        w.stream(TB2, 100)
    with pytest.raises(ConfigError, match="fio_unknown"):
        load(tmp_path, "[j]\n", unknown="skip")


def test_include_and_job_pick(tmp_path):
    (tmp_path / "common.fio").write_text("; shared\niodepth=8\nbs=16k\n")
    w = load(tmp_path, "[global]\ninclude common.fio\n[a]\nrw=read\n[b]\nrw=write\niodepth=2\n", job="b")
    assert w.name == "b" and w.queue_depth == 2 and dict(w.jobs[0].write_sizes) == {16384: 1.0}
    both = fio.load(tmp_path / "job.fio")
    picked, _ = requests(w, 1000, capacity=1 << 30)
    merged, _ = requests(both, 100_000, capacity=1 << 30)
    # the picked job's stream is its part of the merged one
    np.testing.assert_array_equal(picked["offset"], merged["offset"][merged["op"] == WRITE][:1000])


def test_unmodelled_option_refused_or_warned(tmp_path):
    text = "[global]\nioengine=libaio\n[j]\nrw=randread\nfsync=8\ndirect=1\n"
    with pytest.raises(fio.FioError, match=r"job.fio:5: option 'fsync' is not modelled"):
        load(tmp_path, text)
    with pytest.warns(fio.FioIgnoredWarning, match=r"job.fio:5: fio option 'fsync' ignored"):
        w = load(tmp_path, text, unknown="warn")
    assert w.ignored == [{"option": "fsync", "value": "8", "where": f"{tmp_path / 'job.fio'}:5"}]
    assert w.ignored_by_design == ["direct", "ioengine"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(tmp_path, "[j]\nrw=read\ngroup_reporting\n").ignored == []  # by design: no warning


# ------------------------------------------------------------------------------------------ fluid fill

def test_fill_translation(tmp_path):
    w = load(tmp_path, "[w]\nrw=randwrite\nbs=64k\niodepth=4\nnumjobs=2\nsize=25%\noffset_increment=25%\n")
    assert w.fill(TB2, 0.0) == {"pattern": "random", "block_kib": 64.0, "queue_depth": 8,
                                "fill_fraction": 0.5, "burst_gb": 0.0, "idle_s": 0.0}
    assert w.fill(TB2, 0.5)["fill_fraction"] == pytest.approx(1.0)
    w = load(tmp_path, "[w]\nrw=write\nbs=128k\niodepth=32\nsize=1t\nthinktime=10ms\nthinktime_blocks=8192\n")
    f = w.fill(TB2, 0.0)
    assert (f["queue_depth"], f["burst_gb"], f["idle_s"]) == (32, 8192 * 131072 / 1e9, 0.01)
    assert f["fill_fraction"] == pytest.approx(2**40 / TB2)


@pytest.mark.parametrize("text, line, match", [
    ("[w]\nrw=randrw\n", 2, "a fill models host writes only"),
    ("[w]\nrw=write\nbssplit=4k/50:8k/50\n", 3, "one command size"),
    ("[w]\nrw=write\nsize=1g\nnumjobs=2\n", 1, "overlaps"),
    ("[w]\nrw=randwrite\nnorandommap\nsize=1g\n", 3, "repeat blocks"),
    ("[w]\nrw=randwrite\nrandom_distribution=zipf:0.9\nsize=1g\n", 3, "repeat blocks"),
    ("[w]\nrw=write\nsize=1g\nio_size=2g\n", 4, "rewrites"),
    ("[w]\nrw=write\nsize=1g\ntime_based\nruntime=10\n", 4, "no time limit"),
    ("[w]\nrw=write\nsize=1g\nrate=100m\n", 4, "host rate"),
    ("[w]\nrw=write\n[v]\nrw=randwrite\noffset=50%\n", 4, "one pattern"),
    ("[w]\nrw=write\nsize=60%\n", 3, "free after"),
])
def test_fill_refuses_what_the_fluid_model_cannot_represent(tmp_path, text, line, match):
    w = load(tmp_path, text)
    with pytest.raises(fio.FioError, match=match) as e:
        w.fill(TB2, 0.5 if "60%" in text else 0.0)
    assert e.value.line == line and f"job.fio:{line}:" in str(e.value)


def test_fill_with_a_fio_write_job_equals_the_plain_overrides(tmp_path):
    path = tmp_path / "fill.fio"
    path.write_text("[global]\nioengine=libaio\n[w]\nrw=randwrite\nbs=64k\niodepth=4\nnumjobs=2\nsize=25%\n"
                    "offset_increment=25%\n")

    def run(workload, out):
        cfg = {"drive": presets.drive("aldrin_pro_2tb"), "workload": workload, "model": {"n_steps": 64}}
        return fill_jobs.run_fill(cfg, tmp_path / out)

    with_fio = run(presets.workload("seq_fill", fio=str(path)), "fio")
    plain = run(presets.workload("seq_fill", pattern="random", block_kib=64, queue_depth=8,
                                 fill_fraction=0.5), "plain")
    assert with_fio["fio_job"] == "w" and with_fio["fio_ignored"] == []
    assert with_fio["fio_workload"]["fill_fraction"] == 0.5
    assert {k: v for k, v in with_fio.items() if not k.startswith("fio")} == plain
    curve = [(tmp_path / d / "fill_curve.csv").read_text() for d in ("fio", "plain")]
    assert curve[0] == curve[1]


def test_thermal_run_takes_the_fio_write_job_as_its_workload(tmp_path):
    """The coupled thermal run's fluid workload is the job's, as a fill's is (``with_fio_fill``)."""
    from ssdx import api
    from ssdx.models.thermal.jobs import _single

    path = tmp_path / "w.fio"
    path.write_text("[w]\nrw=randwrite\nbs=64k\niodepth=4\nsize=10%\n")
    base = {"drive": presets.drive("sn8e_1920"), "thermal": api.thermal_preset("bare")}
    fio_cfg = {**base, "workload": presets.workload("seq_fill", fio=str(path))}
    (_, w_fio, _, _), _ = _single(fio_cfg, np.float32)
    (_, w_plain, _, _), _ = _single({**base, "workload": presets.workload(
        "seq_fill", pattern="random", block_kib=64, queue_depth=4, fill_fraction=0.1)}, np.float32)
    for k in ("random", "block_bytes", "queue_depth", "fill_fraction"):
        assert float(getattr(w_fio, k)) == pytest.approx(float(getattr(w_plain, k))), k


def test_boot_qd_study_replays_the_fio_job_on_every_drive(tmp_path):
    """``experiment=boot_qd1 workload.fio=...``: each drive's ``fio`` block is what a replay of the same job
    on that drive alone gives (one stream for all: an absolute ``size``, so the capacities do not matter)."""
    job = tmp_path / "rr.fio"
    job.write_text("[rr]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nsize=8g\n")
    r = ssdx("experiment=boot_qd1", f"workload.fio={job}", "workload.requests=3000",
             "boot.probe_requests=200", f"hydra.run.dir={tmp_path / 'boot'}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "boot" / "summary.json").read_text())
    assert s["fio_job"] == "rr" and s["fio_queue_depth"] == 8 and s["fio_loop"] == "closed"
    assert "fio job rr (QD 8, closed loop)" in r.stdout
    r = ssdx("experiment=trace_replay", "drive=aldrin_pro_2tb", f"workload.fio={job}",
             "workload.requests=3000", f"hydra.run.dir={tmp_path / 'one'}")
    assert r.returncode == 0, r.stderr
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    boot = s["drives"]["aldrin_pro_2tb"]["fio"]
    assert boot["requests"] == one["requests"] == 3000
    for k in ("iops", "bw"):
        assert boot[k] == pytest.approx(one[k], rel=1e-5), k
    for q in ("mean", "p99"):
        assert boot["clat_us"][q] == pytest.approx(one["clat_us"][q], rel=1e-5), q
    # a SATA link is slower than PCIe 4.0 for the same job
    assert s["drives"]["sata_tlc_500"]["fio"]["iops"] < boot["iops"]


@pytest.mark.parametrize("args", [("experiment=wa_uniform",), ("experiment=trace_analyse",)])
def test_a_job_with_its_own_workload_refuses_a_fio_job(tmp_path, args):
    job = tmp_path / "r.fio"
    job.write_text("[r]\nrw=randread\nbs=4k\n")
    r = ssdx(*args, f"workload.fio={job}", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 2 and "workload.fio" in r.stderr and "unset workload.fio" in r.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


# ------------------------------------------------------------------------------------------------- CLI

def test_trace_replay_cli_contract(tmp_path):
    job = tmp_path / "mix.fio"
    job.write_text("""; two clones of a 70/30 mix
[global]
ioengine=libaio
direct=1

[mix]
rw=randrw
rwmixread=70
bs=4k,64k
iodepth=8
numjobs=2
size=1g
offset_increment=1g
fsync=8
""")
    out = tmp_path / "run"
    r = ssdx("experiment=trace_replay", f"workload.fio={job}", "workload.fio_unknown=warn",
             "workload.requests=3000", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    assert "fsync" in r.stderr and "ignored" in r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert (s["fio_job"], s["format"], s["loop"]) == ("mix", "fio", "closed")
    assert s["queue_depth"] == 16 and s["requests"] == 3000
    assert s["fio_ignored"] == [{"option": "fsync", "value": "8", "where": f"{job}:14"}]
    assert s["fio_truncated"] and s["fio_ignored_by_design"] == ["direct", "ioengine"]
    assert s["read_fraction"] == pytest.approx(0.7, abs=0.03)
    assert set(s["clat_us"]) == {"mean", "p50", "p99", "p99.9"}
    assert s["clat_us"]["p99"] == s["latency_us"]["p99"] and s["bw"] == pytest.approx(s["bw_bytes"] / 1024)
    rd, wr = s["read"], s["write"]
    assert rd["iops"] + wr["iops"] == pytest.approx(s["iops"])
    assert rd["io_bytes"] % 4096 == 0 and wr["io_bytes"] % 65536 == 0
    assert rd["io_bytes"] // 4096 + wr["io_bytes"] // 65536 == 3000
    assert 0 < rd["clat_us"]["p50"] <= rd["clat_us"]["p99"] <= rd["clat_us"]["p99.9"]
    assert "fio job mix" in r.stdout and "fsync" in r.stdout
    r = ssdx("experiment=trace_replay", f"workload.fio={job}", f"hydra.run.dir={tmp_path / 'refused'}")
    assert r.returncode == 2
    assert f"{job}:14" in r.stderr and "fsync" in r.stderr and "workload.fio" in r.stderr


@pytest.mark.parametrize("sweep", ["quick", "tmt_grid"])
def test_a_fio_write_job_is_the_base_workload_of_a_fluid_or_thermal_sweep(tmp_path, sweep):
    # the job's pattern, block size and depth become the configurations' workload (what a fill of the same
    # job takes), over the workload preset a sweep file names (tmt_grid's seq_fill: 128 KiB at QD32)
    job = tmp_path / "seq.fio"
    job.write_text("[seq]\nrw=write\nbs=64k\niodepth=8\nsize=100%\n")
    r = ssdx(f"sweep={sweep}", "+sweep.only=3", f"workload.fio={job}", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 0, r.stderr
    import pandas as pd

    df = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert len(df) == 1 and (df["workload.block_kib"] == 64).all() and (df["workload.queue_depth"] == 8).all()
    assert (df["workload.pattern"] == "sequential").all()
