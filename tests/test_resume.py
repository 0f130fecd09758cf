"""Resume: chunks checkpointed as they finish, skipped on a re-run, a changed sweep refused, SIGKILL."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import mixed_sweep_cols
from test_cli import ssdx_here

from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.sweep import executors, runner, store


def _cols():
    """48 configurations in two static-flag groups (conftest.mixed_sweep_cols)."""
    return mixed_sweep_cols()


class Crash(RuntimeError):
    pass


class CrashAfter(executors.LocalExecutor):
    """The local executor, dying after ``after`` finished jobs (as a killed process would)."""

    def __init__(self, after: int):
        super().__init__(1)
        self.after = after
        self.ran: list[int] = []

    def map(self, jobs):
        for i, item in enumerate(super().map(jobs)):
            if i == self.after:
                raise Crash("simulated crash")
            self.ran.append(item[0].index)
            yield item


class Recording(executors.LocalExecutor):
    def __init__(self):
        super().__init__(1)
        self.ran: list[int] = []

    def map(self, jobs):
        jobs = list(jobs)
        self.ran += [j.index for j in jobs]
        yield from super().map(jobs)


def test_interrupted_sweep_resumes_to_the_same_rows(tmp_path):
    cols = _cols()
    model = registry.fluid_model(64)
    ref = runner.run(cols, model, chunk_size=5, progress=False).to_pandas()
    crash = CrashAfter(4)  # the first four to finish: with chunks in flight, not always chunks 0-3
    with pytest.raises(Crash):
        runner.run(cols, model, chunk_size=5, out_dir=tmp_path, progress=False, executor=crash)
    assert len(crash.ran) == 4 and len(list((tmp_path / "chunks").glob("chunk_*.parquet"))) == 4
    assert not (tmp_path / "results.parquet").exists()
    rec = Recording()
    table = runner.run(cols, model, chunk_size=5, out_dir=tmp_path, progress=False, executor=rec)
    meta = table.schema.metadata
    assert int(meta[b"resumed_chunks"]) == 4 and int(meta[b"chunks"]) == 10
    assert sorted(rec.ran) == sorted(set(range(10)) - set(crash.ran))  # only the unfinished chunks ran
    got = table.to_pandas()
    assert got["config_id"].tolist() == list(range(48))  # none missing, none duplicated
    pd.testing.assert_frame_equal(got, ref)
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "results.parquet").to_pandas(), ref)
    # a finished sweep re-run computes nothing and gives the same table
    rec2 = Recording()
    again = runner.run(cols, model, chunk_size=5, out_dir=tmp_path, progress=False, executor=rec2)
    assert rec2.ran == [] and int(again.schema.metadata[b"resumed_chunks"]) == 10
    pd.testing.assert_frame_equal(again.to_pandas(), ref)


def _one_group_cols():
    """The 24 configurations of ``_cols`` without idle gaps: one static-flag group, so the chunks hold the
    ids in order and ``results.parquet`` is written as they arrive (``store.ResultsStream``)."""
    cols = _cols()
    keep = np.asarray(cols["workload.burst_gb"]) == 0.0
    return {k: np.asarray(v)[keep] for k, v in cols.items()}


def test_results_written_as_chunks_arrive_equal_the_whole_table(tmp_path, monkeypatch):
    cols = _one_group_cols()
    model = registry.fluid_model(64)
    ref = runner.run(cols, model, chunk_size=24, progress=False).to_pandas()
    assert ref["config_id"].tolist() == list(range(24)) and ref["pslc_gb"].nunique() > 5
    monkeypatch.setattr(store, "ROW_GROUP_ROWS", 7)
    order = np.random.default_rng(3).permutation(5).tolist()  # chunks of 5 arrive out of order
    table = runner.run(cols, model, chunk_size=5, out_dir=tmp_path / "a", progress=False, order=order)
    pd.testing.assert_frame_equal(table.to_pandas(), ref, check_exact=True)
    f = pq.ParquetFile(tmp_path / "a" / "results.parquet")
    pd.testing.assert_frame_equal(f.read().to_pandas(), ref, check_exact=True)
    sizes = [f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)]
    assert sizes == [10, 10, 4]  # whole chunks, at least ROW_GROUP_ROWS each but the last
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["chunks", "results.parquet"]
    # killed after two chunks: no results file; the re-run streams the resumed chunks and the new ones
    crash = CrashAfter(2)
    with pytest.raises(Crash):
        runner.run(cols, model, chunk_size=5, out_dir=tmp_path / "b", progress=False, executor=crash)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["chunks"]  # nor a partial one
    (tmp_path / "b" / ".results.parquet.tmp-1-2").write_bytes(b"PAR1 half")  # as a SIGKILL leaves it
    rec = Recording()
    table = runner.run(cols, model, chunk_size=5, out_dir=tmp_path / "b", progress=False, executor=rec)
    assert sorted(rec.ran) == sorted(set(range(5)) - set(crash.ran)) and len(rec.ran) == 3
    pd.testing.assert_frame_equal(pq.read_table(tmp_path / "b" / "results.parquet").to_pandas(), ref,
                                  check_exact=True)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["chunks", "results.parquet"]


def test_results_stream_refuses_missing_or_misplaced_rows(tmp_path):
    cols = _one_group_cols()
    config = store.config_table(cols)
    ids = [np.arange(lo, min(lo + 10, 24)) for lo in (0, 10, 20)]
    metrics = [pa.table({"config_id": i, "m": i * 0.5}) for i in ids]
    assert store.in_id_order([np.arange(0, 10), np.arange(10, 24)], 24)
    assert not store.in_id_order([np.arange(10, 24), np.arange(0, 10)], 24)
    assert not store.in_id_order([np.arange(0, 10)], 24)
    path = tmp_path / "results.parquet"
    s = store.ResultsStream(path, lambda: config, [10, 10, 4])
    s.add(2, metrics[2])
    s.add(0, metrics[0])
    with pytest.raises(RuntimeError, match=r"chunks \[1\] of 3 never arrived"):
        s.close()
    s.abort()
    assert not list(tmp_path.iterdir())  # neither the file nor its partial copy
    s = store.ResultsStream(path, lambda: config, [10, 10, 4])
    with pytest.raises(RuntimeError, match=r"chunk 0 should hold configurations 0..9"):
        s.add(0, metrics[1])
    s = store.ResultsStream(path, lambda: config, [10, 10, 4])
    for i in (1, 0, 2):
        s.add(i, metrics[i])
    s.close()
    got = pq.read_table(path)
    assert got.column_names == ["config_id", *cols, "m"]
    assert got.equals(store.assemble(cols, metrics))


def test_damaged_or_foreign_chunk_files_are_recomputed(tmp_path):
    cols = _cols()
    model = registry.fluid_model(64)
    ref = runner.run(cols, model, chunk_size=8, out_dir=tmp_path, progress=False).to_pandas()
    store.chunk_path(tmp_path, 2).write_bytes(b"PAR1 truncated")           # damaged
    other = pq.read_table(store.chunk_path(tmp_path, 1))
    pq.write_table(other, store.chunk_path(tmp_path, 3))                    # holds chunk 1's configurations
    (tmp_path / "chunks" / ".chunk_000004.parquet.tmp-99").write_bytes(b"half")  # a crash mid-write
    rec = Recording()
    with pytest.warns(UserWarning) as warned:
        table = runner.run(cols, model, chunk_size=8, out_dir=tmp_path, progress=False, executor=rec)
    assert sorted(rec.ran) == [2, 3]
    assert any("unreadable" in str(w.message) for w in warned)
    assert any("other configurations" in str(w.message) for w in warned)
    pd.testing.assert_frame_equal(table.to_pandas(), ref)


def test_a_changed_sweep_in_the_same_directory_is_refused(tmp_path):
    cols = _cols()
    runner.run(cols, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False,
               definition={"n_steps": 64})
    changed = dict(cols, **{"drive.dies_per_channel": np.asarray(cols["drive.dies_per_channel"]) * 2})
    with pytest.raises(ConfigError, match=r"different sweep definition \(values of drive.dies_per_channel\)"):
        runner.run(changed, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False,
                   definition={"n_steps": 64})
    with pytest.raises(ConfigError, match=r"n_steps 64 -> 128"):
        runner.run(cols, registry.fluid_model(128), chunk_size=8, out_dir=tmp_path, progress=False,
                   definition={"n_steps": 128})
    with pytest.raises(ConfigError, match=r"chunk_size 8 -> 16"):
        runner.run(cols, registry.fluid_model(64), chunk_size=16, out_dir=tmp_path, progress=False,
                   definition={"n_steps": 64})
    fewer = {k: np.asarray(v)[:30] for k, v in cols.items()}
    with pytest.raises(ConfigError, match=r"48 -> 30 configurations"):
        runner.run(fewer, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False,
                   definition={"n_steps": 64})
    # string columns of equal values but different widths (e.g. after on_invalid: drop) are the same sweep
    narrow = dict(cols, **{"drive.slc_mode": np.asarray(cols["drive.slc_mode"]).astype("<U40")})
    runner.run(narrow, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False,
               definition={"n_steps": 64})
    # chunk files whose manifest is gone: nothing says which sweep wrote them
    (tmp_path / "chunks" / store.MANIFEST).unlink()
    with pytest.raises(ConfigError, match="no manifest.json"):
        runner.run(cols, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False,
                   definition={"n_steps": 64})


def test_a_changed_sweep_is_accepted_while_nothing_has_finished(tmp_path):
    cols = _cols()
    with pytest.raises(Crash):  # dies before its first checkpoint (e.g. out of memory)
        runner.run(cols, registry.fluid_model(64), chunk_size=48, out_dir=tmp_path, progress=False,
                   executor=CrashAfter(0))
    assert not list((tmp_path / "chunks").glob("chunk_*.parquet"))
    table = runner.run(cols, registry.fluid_model(64), chunk_size=8, out_dir=tmp_path, progress=False)
    assert table.num_rows == 48


# steps per fill: a chunk of 4 configurations takes ~0.05 s on a 2-core CPU, so the sweep's 36 chunks last
# far longer than the kill takes to follow the third (the asserted window is 3 <= done < 36)
KILL_STEPS = 25_000


def _args(run_dir, *extra) -> list[str]:
    """The kill test's ``ssdx`` arguments: a fluid sweep of 36 chunks into ``run_dir``."""
    return [f"hydra.run.dir={run_dir}", "sweep.chunk_size=4", f"sweep.n_steps={KILL_STEPS}",
            "runner.devices=1", *extra]


def _ssdx(run_dir, *extra):
    cmd = [sys.executable, "-m", "ssdx.cli.main", *_args(run_dir, *extra)]
    return cmd, dict(os.environ, TQDM_DISABLE="1")


def test_sigkill_mid_sweep_then_rerun_gives_the_uninterrupted_rows(tmp_path):
    """The CLI contract: kill -9 a sweep, run the same command again, get exactly the full run's rows."""
    full, killed = tmp_path / "full", tmp_path / "killed"
    cmd, env = _ssdx(killed)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chunks = killed / "chunks"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if chunks.exists() and len(list(chunks.glob("chunk_*.parquet"))) >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    done = len(list(chunks.glob("chunk_*.parquet")))
    assert 3 <= done < 36, f"{done} of 36 chunks at the kill: the test needs an unfinished sweep"
    assert not (killed / "results.parquet").exists()

    cmd, env = _ssdx(killed)  # a new process resumes, as a user's would
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"resumed: {done} of 36 chunks were already done" in r.stdout
    r = ssdx_here(*_args(full))  # the uninterrupted run and the refusal below: in this process
    assert r.returncode == 0, r.stderr
    a = pq.read_table(killed / "results.parquet").to_pandas()
    b = pq.read_table(full / "results.parquet").to_pandas()
    assert a["config_id"].tolist() == list(range(144))
    pd.testing.assert_frame_equal(a, b)

    # the same directory with a changed sweep is refused, exit status 2, nothing overwritten
    r = ssdx_here(*_args(killed, "sweep.n_steps=1000"))
    assert r.returncode == 2
    assert "different sweep definition" in r.stderr and f"n_steps {KILL_STEPS} -> 1000" in r.stderr
    pd.testing.assert_frame_equal(pq.read_table(killed / "results.parquet").to_pandas(), b)


def test_hybrid_sweep_groups_resume_with_their_stream_info(tmp_path):
    from ssdx.models.hybrid import jobs as tasks_hybrid
    from ssdx.models.hybrid import params as hybrid_params
    cfg = {"hybrid": {**hybrid_params.defaults(), "warmup_fills": 0.02}, "workload": {}, "seed": 0}
    sweep = {"space": {"grid": {"workload.msr": ["prxy_0", "hm_0", "web_1"],
                                "hybrid.nand": ["2d_fg_mlc", "3d_ct_tlc"]}}}
    cols = tasks_hybrid.sweep_columns(sweep, cfg)
    ref, ref_info = tasks_hybrid.run_table(cols, cfg, 1500, tmp_path / "a", progress=False)
    store.chunk_path(tmp_path / "a", 1).unlink()  # the hm_0 group is lost
    rec = Recording()
    table, info = tasks_hybrid.run_table(cols, cfg, 1500, tmp_path / "a", progress=False, executor=rec)
    assert rec.ran == [1]
    pd.testing.assert_frame_equal(table.to_pandas(), ref.to_pandas())
    assert [i["workload"] for i in info] == ["prxy_0", "hm_0", "web_1"]
    assert [i["warmup_requests"] for i in info] == [i["warmup_requests"] for i in ref_info]
    with pytest.raises(ConfigError, match=r"requests 1500 -> 2000"):
        tasks_hybrid.run_table(cols, cfg, 2000, tmp_path / "a", progress=False)
    # the same values typed differently (queue_depth 32 -> 32.0) resume, with this run's column types
    store.chunk_path(tmp_path / "a", 2).unlink()
    floats = dict(cols, **{"hybrid.queue_depth": np.asarray(cols["hybrid.queue_depth"], float)})
    table, _ = tasks_hybrid.run_table(floats, cfg, 1500, tmp_path / "a", progress=False)
    assert table.column("hybrid.queue_depth").type == "double"
    got, want = table.to_pandas(), ref.to_pandas()
    qd = "hybrid.queue_depth"
    pd.testing.assert_frame_equal(got.drop(columns=qd), want.drop(columns=qd))


def test_replace_atomic_keeps_the_old_file_when_a_write_dies(tmp_path):
    from ssdx.core.io import replace_atomic

    path = tmp_path / "out" / "summary.json"
    replace_atomic(path, lambda tmp: tmp.write_text("old"))
    assert path.read_text() == "old"

    def dies(tmp):
        tmp.write_text("half of the new")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_atomic(path, dies)
    assert path.read_text() == "old"  # the reader still sees the whole old file
    assert sorted(p.name for p in path.parent.iterdir()) == ["summary.json"]  # no temporary left
    replace_atomic(path, lambda tmp: tmp.write_text("new"))
    assert path.read_text() == "new"
