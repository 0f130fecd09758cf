"""Run by ``test_engine_cuda.py`` in a process of its own with ``NUMBA_ENABLE_CUDASIM=1`` (Numba reads it
at import): the CUDA back end (simulated, thread by thread) and the CPU back end on the same batches,
their results saved to the ``.npz`` named on the command line."""

from __future__ import annotations

import sys

import numpy as np
from test_engine_cpu import batch, erasing_plan, mixed
from test_engine_entries import _cols

from ssdx import params
from ssdx.models.engine import cpu as engine_cpu
from ssdx.models.engine import cuda as engine_cuda
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import replay
from ssdx.workloads.traces import Chunk


def main(out: str) -> None:
    res: dict[str, np.ndarray] = {}
    # the replay path: several chunks with padding, the state handed on between them
    trees = engine_params.build(batch(qds=(1, 8)), dtype=np.float64)
    ch = mixed(260, seed=7)
    for b in ("cpu", "cuda"):
        r = replay.replay(trees, [ch], chunk_len=100, keep_latency=True, backend=b)
        res[f"{b}/backend"] = np.asarray(r.extra["backend"])
        res[f"{b}/latencies"] = r.latencies
        for k, v in r.extra["sums"].items():
            res[f"{b}/sums/{k}"] = v
    # the raw chunk functions on a batch that erases and folds (blocks of 3 units, rooms of 2.5 MB)
    p, lay = erasing_plan((2,), 2.5e6)
    ch = mixed(150, seed=5)
    req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 160, np.float64)
    s0 = engine.init(p, lay)
    pf = engine_cpu.pack_plan(p, lay)
    outs = {"cpu": engine_cpu.run_chunk(pf, s0, req, lay, True),
            "cuda": engine_cuda.run_chunk(engine_cuda.device_plan(pf), s0, req, lay, True, threads=3)}
    for b, (s, a, lat) in outs.items():
        for k, v in s._asdict().items():
            for kk, vv in (v._asdict().items() if hasattr(v, "_asdict") else [("", v)]):
                res[f"{b}/chunk/state/{k}{kk}"] = np.asarray(vv)
        for k, v in a._asdict().items():
            res[f"{b}/chunk/acc/{k}"] = np.asarray(v)
        res[f"{b}/chunk/lat"] = lat
    # the raw chunk under read suspension of erases only, with MQSim's overheads, an LRU mapping cache of
    # 32 translation pages with write-back, the write buffer's DRAM timing, eager write-back with back
    # pressure and reads that hold their die until their data is out (the engine's options)
    p, lay = erasing_plan((2,), 2.5e6, loop="open", suspension="erase", suspend_program_us=100,
                          suspend_erase_us=700, map_cache="lru", map_cache_mib=0.5,
                          buffer_dram_mts=100, buffer_dram_burst_bytes=1, write_back="eager",
                          inflight_kib=128, cache_read=False)
    ch = mixed(150, seed=5, timed=True)
    req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 160, np.float64)
    s0 = engine.init(p, lay)
    pf = engine_cpu.pack_plan(p, lay)
    outs = {"cpu": engine_cpu.run_chunk(pf, s0, req, lay, True),
            "cuda": engine_cuda.run_chunk(engine_cuda.device_plan(pf), s0, req, lay, True, threads=3)}
    for b, (s, a, lat) in outs.items():
        res[f"{b}/suspension/lat"] = lat
        for k in ("suspensions", "busy", "queue_sum", "lat_sum", "map_misses", "map_writebacks"):
            res[f"{b}/suspension/{k}"] = np.asarray(getattr(a, k))
        for k, v in s.pe._asdict().items():
            res[f"{b}/suspension/pe_{k}"] = np.asarray(v)
        for k in ("tags", "map_age", "map_dirty"):
            res[f"{b}/suspension/{k}"] = np.asarray(getattr(s, k))
    # the replay path with the entry cache (engine.map_cache = entries): its events reach the kernel
    one = _cols(map_cache="entries", map_cache_mib=0.002)  # one drive: the batch shares one entry cache
    trees = engine_params.build(params.concat_columns([one, one, one]), dtype=np.float64)
    ch = mixed(200, seed=9)
    for b in ("cpu", "cuda"):
        r = replay.replay(trees, [ch], chunk_len=90, keep_latency=True, backend=b)
        res[f"{b}/entries/latencies"] = r.latencies
        for k in ("map_misses", "map_writebacks", "busy", "lat_sum"):
            res[f"{b}/entries/{k}"] = r.extra["sums"][k]
    # the replay path with MQSim's write-back: rewrites kept in the buffer, page programs of two planes
    # joined into one, pages read first placed on their planes (engine.rewrite_window_s, plane_merge); the
    # second configuration counts the programs in flight for its back pressure (engine.back_pressure), the
    # third lets a write's pages in one by one on a drive whose free blocks are erased
    rng = np.random.default_rng(13)
    n = 300
    ch = Chunk(time_s=np.cumsum(rng.exponential(20e-6, n)), op=(rng.random(n) < 0.5).astype(np.int8),
               offset=rng.integers(0, 4000, n) * 4096, size=rng.choice([4096, 8192, 65536], n),
               line=np.zeros(n, np.int64))
    one = _cols(loop="open", write_back="eager", rewrite_window_s=1.0, plane_merge=True, merge_dies=2,
                inflight_kib=256)
    programs = one | {"engine.back_pressure": np.asarray(["programs"])}
    pages = one | {"engine.back_pressure": np.asarray(["pages"]), "engine.fresh_blocks": np.asarray([True])}
    trees = engine_params.build(params.concat_columns([one, programs, pages]), dtype=np.float64)
    for b in ("cpu", "cuda"):
        r = replay.replay(trees, [ch], chunk_len=128, keep_latency=True, backend=b)
        res[f"{b}/merge/latencies"] = r.latencies
        for k in ("programs", "prog_pages", "busy", "lat_sum"):
            res[f"{b}/merge/{k}"] = r.extra["sums"][k]
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
