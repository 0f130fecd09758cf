"""Trace readers (ssdx.workloads.traces) and the analyser (ssdx.workloads.analyse)."""

from __future__ import annotations

import numpy as np
import pytest

from ssdx.workloads import analyse, traces
from ssdx.workloads.traces import READ, TRIM, WRITE, TraceError

# the same four requests: (time s, op, offset bytes, size bytes)
REQS = [(0.0, READ, 0, 4096), (0.001, READ, 4096, 8192), (0.0025, WRITE, 1 << 20, 65536),
        (0.004, WRITE, 0, 512)]


def _files(tmp_path) -> dict[str, tuple]:
    ticks = lambda t: int(round(t / 1e-7)) + 128166372000000000  # noqa: E731 (filetime of 2007)
    msr = "\n".join(f"{ticks(t)},hm,0,{'Read' if o == READ else 'Write'},{off},{n},1234"
                    for t, o, off, n in REQS)
    blk = ["  8,0    1        1     0.000000000  4162  Q   R 0 + 8 [fio]",
           *[f"  8,0    1        {i + 2}     {t:.9f}  4162  D   {'R' if o == READ else 'WS'} {off // 512} + "
             f"{n // 512} [fio]" for i, (t, o, off, n) in enumerate(REQS)],
           "  8,0    1        9     0.005000000  4162  D   FN [fio]",
           "CPU1 (8,0):", " Reads Queued:           1,        4KiB"]
    fio2 = ["fio version 2 iolog", "/dev/sdb add", "/dev/sdb open",
            *[f"/dev/sdb {'read' if o == READ else 'write'} {off} {n}" for _, o, off, n in REQS],
            "/dev/sdb close"]
    fio3 = ["fio version 3 iolog", "0 /dev/sdb add", "0 /dev/sdb open",
            *[f"{t * 1e3:g} /dev/sdb {'read' if o == READ else 'write'} {off} {n}" for t, o, off, n in REQS]]
    disksim = [f"{t * 1e3:g} 0 {off // 512} {n // 512} {1 if o == READ else 0}" for t, o, off, n in REQS]
    mqsim = [f"{int(round(t * 1e9))} 0 {off // 512} {n // 512} {1 if o == READ else 0}"
             for t, o, off, n in REQS]
    out = {}
    for fmt, lines in (("msr", msr.split("\n")), ("blkparse", blk), ("fio2", fio2), ("fio3", fio3),
                       ("disksim", disksim), ("mqsim", mqsim)):
        path = tmp_path / f"t.{fmt}"
        path.write_text("\n".join(lines) + "\n")
        out[fmt] = path
    return out


@pytest.mark.parametrize("fmt", traces.FORMATS)
def test_every_format_gives_the_same_requests(tmp_path, fmt):
    c = traces.read(_files(tmp_path)[fmt], fmt)
    np.testing.assert_array_equal(c.op, [r[1] for r in REQS])
    np.testing.assert_array_equal(c.offset, [r[2] for r in REQS])
    np.testing.assert_array_equal(c.size, [r[3] for r in REQS])
    if fmt == "fio2":
        assert np.all(np.isnan(c.time_s))  # v2 logs carry no timestamps
    else:
        t = c.time_s - c.time_s[0]
        np.testing.assert_allclose(t, [r[0] for r in REQS], atol=1e-6)


def test_streaming_chunks_equal_one_read_and_analysis(tmp_path):
    rng = np.random.default_rng(4)
    n = 1000
    ops = rng.choice([0, 1], n, p=[0.3, 0.7])
    off = np.where(rng.random(n) < 0.5, rng.integers(0, 1 << 20, n) * 512, 0)
    size = rng.choice([512, 4096, 16384, 131072], n)
    for i in range(1, n):  # a third of the commands continue the previous one
        if rng.random() < 0.33:
            ops[i], off[i] = ops[i - 1], off[i - 1] + size[i - 1]
    t = np.cumsum(rng.exponential(1e-3, n))
    path = tmp_path / "r.csv"
    kind = np.where(ops == 0, "Read", "Write")
    path.write_text("".join(f"{int(t[i] / 1e-7)},h,0,{kind[i]},{off[i]},{size[i]},1\n" for i in range(n)))
    reader = traces.Reader(path, "msr", chunk_lines=37)
    chunks = list(reader)
    assert len(chunks) == -(-n // 37) and reader.requests == n and reader.unsorted == 0
    whole = traces.read(path, "msr")
    np.testing.assert_array_equal(np.concatenate([c.offset for c in chunks]), whole.offset)
    a_stream, a_whole = analyse.analyse(chunks), analyse.analyse([whole])
    assert a_stream == a_whole
    # brute force of the OS-boot article's rule: same type as the previous command, starting where it ended
    seq = np.r_[False, (ops[1:] == ops[:-1]) & (off[1:] == off[:-1] + size[:-1])]
    assert a_stream["per_type"]["write"]["sequential_commands"] == int((seq & (ops == 1)).sum())
    assert a_stream["per_type"]["read"]["random_commands"] == int((~seq & (ops == 0)).sum())
    assert a_stream["read_fraction"] == pytest.approx((ops == 0).mean())
    pages = set()
    for o, s in zip(off, size):
        pages.update(range(o // 4096, (o + s + 4095) // 4096))
    assert a_stream["footprint_bytes"] == 4096 * len(pages)
    gaps = np.diff(np.floor(t / 1e-7) * 1e-7)
    assert a_stream["interarrival_s"]["mean"] == pytest.approx(gaps.mean(), rel=1e-9)
    assert a_stream["interarrival_s"]["p50"] == pytest.approx(np.median(gaps), rel=0.02)
    assert a_stream["size_bytes"]["p50"] == np.median(size)


def test_sequential_rule_by_hand():
    c = traces.Chunk(time_s=np.arange(6.0), op=np.array([0, 0, 1, 1, 0, 0], np.int8),
                     offset=np.array([0, 4096, 8192, 12288, 0, 8192]), size=np.full(6, 4096),
                     line=np.arange(1, 7))
    s = analyse.analyse([c])
    # read 0 (first: random), read 4096 (seq), write 8192 (type changed: random), write 12288 (seq),
    # read 0 (random), read 8192 (not contiguous with the read before: random)
    r, w = s["per_type"]["read"], s["per_type"]["write"]
    assert r["sequential_commands"] == 1 and r["random_commands"] == 3
    assert w["sequential_commands"] == 1 and w["random_commands"] == 1
    assert s["footprint_bytes"] == 4 * 4096 and s["write_footprint_bytes"] == 2 * 4096


BAD = [("1,h,0,Read,0,4096", "expected 7"), ("1,h,0,Read,abc,4096,1", "non-numeric offset"),
       ("1,h,0,Read,0,-5,1", "size must be positive"), ("1,h,0,Flush,0,4096,1", "unknown request type"),
       ("1,h,0,Write,-4096,4096,1", "negative offset")]


@pytest.mark.parametrize("bad,problem", BAD)
def test_malformed_line_names_file_and_line(tmp_path, bad, problem):
    path = tmp_path / "bad.csv"
    path.write_text(f"0,h,0,Read,0,4096,1\n\n{bad}\n3,h,0,Write,0,4096,1\n")
    with pytest.raises(TraceError) as e:
        traces.read(path, "msr")
    assert e.value.line == 3 and problem in str(e.value) and str(path) in str(e.value)
    r = traces.Reader(path, "msr", on_error="skip")
    c = traces.read(path, "msr", on_error="skip")
    list(r)
    assert r.skipped == 1 and r.requests == 2 and len(c) == 2 and "line 3" in r.skipped_examples[0]


@pytest.mark.parametrize("fmt,line,problem", [
    ("blkparse", "  8,0 1 1 0.1 4162 D R 12 + x [fio]", "non-numeric block count"),
    ("blkparse", "  8,0 1 1 0.1 4162 D R 12", r"sector \+ blocks"),
    ("fio2", "/dev/sdb write 4096", "offset length"),
    ("fio2", "/dev/sdb erase 0 4096", "unknown action"),
    ("fio3", "abc /dev/sdb write 0 4096", "non-numeric timestamp"),
    ("disksim", "1.0 0 12 8", "expected 5 fields"),
    ("mqsim", "100 0 12 8 7", "unknown request type"),
])
def test_malformed_lines_in_other_formats(tmp_path, fmt, line, problem):
    path = tmp_path / f"bad.{fmt}"
    path.write_text(line + "\n")
    with pytest.raises(TraceError, match=problem) as e:
        traces.read(path, fmt)
    assert e.value.line == 1


def test_unsorted_timestamps_are_counted_and_trim_is_kept(tmp_path):
    path = tmp_path / "u.mqsim"
    path.write_text("100 0 0 8 1\n50 0 8 8 0\n200 0 16 8 1\n150 0 24 8 1\n")
    r = traces.Reader(path, "mqsim")
    list(r)
    assert r.unsorted == 2
    blk = tmp_path / "d.blk"
    blk.write_text("  8,0 1 1 0.1 4162 D DS 2048 + 2048 [fstrim]\n  8,0 1 2 0.2 4162 Q R 0 + 8 [cat]\n")
    c = traces.read(blk, "blkparse")  # only 'D' events: the queued read is left out
    assert c.op.tolist() == [TRIM] and c.size.tolist() == [2048 * 512]
    assert traces.read(blk, "blkparse", blkparse_action="Q").op.tolist() == [READ]
    with pytest.raises(ValueError, match="unknown trace format"):
        traces.Reader(path, "spc")


def test_trace_analyse_cli_names_the_line_or_skips_and_counts(tmp_path):
    from test_cli import ssdx

    path = tmp_path / "t.csv"
    path.write_text("128166372000000000,hm,0,Read,0,4096,1\n128166372000010000,hm,0,Write,4096,8192,1\n"
                    "bad,line\n128166372000020000,hm,0,Write,12288,4096,1\n")
    r = ssdx("experiment=trace_analyse", f"workload.trace_path={path}", f"hydra.run.dir={tmp_path / 'a'}")
    assert r.returncode == 2 and f"{path}, line 3" in r.stderr
    r = ssdx("experiment=trace_analyse", f"workload.trace_path={path}", "workload.on_error=skip",
             f"hydra.run.dir={tmp_path / 'b'}")
    assert r.returncode == 0, r.stderr
    import json

    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["requests"] == 3 and s["skipped_lines"] == 1 and s["read_fraction"] == pytest.approx(1 / 3)
    assert s["per_type"]["write"]["sequential_commands"] == 1  # 4096+8192 then 12288: contiguous
    assert s["interarrival_s"]["mean"] == pytest.approx(1e-3)


@pytest.mark.parametrize("n", [1, 36, 37, 38, 74, 99, 100, 101, 500])
def test_a_reader_with_a_limit_keeps_the_first_requests_at_any_chunk_boundary(tmp_path, n):
    # a replay with workload.requests = n reads the trace's first n requests, whether n falls inside a chunk,
    # at a chunk's end or past the trace's end (100 requests in chunks of 37), and says whether the file
    # went on; the comment and blank line after the last request are not more requests
    path = tmp_path / "t.csv"
    path.write_text("".join(f"{1000 + i},h,0,{'Read' if i % 3 else 'Write'},{4096 * i},4096,1\n"
                            for i in range(100)) + "# end\n\n")
    whole = traces.read(path, "msr")
    reader = traces.Reader(path, "msr", chunk_lines=37, limit=n)
    chunks = list(reader)
    assert sum(len(c) for c in chunks) == reader.requests == min(n, 100) and all(len(c) for c in chunks)
    for f in ("time_s", "op", "offset", "size", "line"):
        np.testing.assert_array_equal(np.concatenate([getattr(c, f) for c in chunks]),
                                      getattr(whole, f)[:n])
    assert reader.truncated is (n < 100)


def test_a_reader_with_a_limit_parses_no_line_past_its_last_request(tmp_path):
    # a malformed line after the kept requests is not read (on_error=raise would stop on it), but it shows
    # that the file went on
    path = tmp_path / "t.csv"
    path.write_text("1000,h,0,Read,0,4096,1\n1001,h,0,Write,4096,4096,1\n1002,h,0,Read,notanumber,4096,1\n")
    reader = traces.Reader(path, "msr", limit=2)
    assert [len(c) for c in reader] == [2] and reader.truncated
    with pytest.raises(TraceError, match="line 3"):
        list(traces.Reader(path, "msr", limit=3))
