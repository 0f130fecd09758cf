"""The entry cache (``engine.map_cache = entries``, MQSim's cached mapping table): the host cache against
a plain LRU written independently, the batch write-back against its closed form, and the engine's two
back ends on the events it hands them."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from conftest import x64

from ssdx import params, presets
from ssdx.core.fields import ConfigError
from ssdx.models.engine import entries, replay
from ssdx.models.engine import params as engine_params
from ssdx.workloads.traces import Chunk

ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
WORK = {"pattern": "random", "block_kib": 4, "queue_depth": 4, "prefill_fraction": 0.5, "fill_fraction": 1.0,
        "burst_gb": 0.0, "idle_s": 0.0}


def reference(ops, off4k, sizes, cap, page_4k, tpage_4k, cap_4k):
    """LRU over logical pages with an OrderedDict; an evicted entry written since its translation page's
    last write-back writes that page back."""
    lru: OrderedDict = OrderedDict()
    dirty: dict = {}
    wb_at: dict = {}
    clock = 0
    out = []
    n_lpn = -(-cap_4k // page_4k)
    for o, off, sz in zip(ops, off4k, sizes, strict=True):
        miss, first_wb, n_wb = False, -1, 0
        if o != entries.TRIM:
            o4 = off % cap_4k
            k = max(-(-((o4 % page_4k) * 4096 + sz) // (page_4k * 4096)), 1)
            for j in range(k):
                lpn = (o4 // page_4k + j) % n_lpn
                clock += 1
                if lpn in lru:
                    lru.move_to_end(lpn)
                else:
                    miss = True
                    if len(lru) >= cap:
                        old, _ = lru.popitem(last=False)
                        tp = old * page_4k // tpage_4k
                        if dirty.pop(old, 0) > wb_at.get(tp, 0):
                            wb_at[tp] = clock
                            n_wb += 1
                            first_wb = tp if first_wb < 0 else first_wb
                    lru[lpn] = True
                    dirty[lpn] = 0
                if o == entries.WRITE:
                    dirty[lpn] = clock
        out.append((miss, first_wb, n_wb))
    return np.array(out)


def test_entry_cache_is_lru_with_batch_write_back_across_chunks():
    rng = np.random.default_rng(1)
    n = 6000
    ops = rng.choice([0, 1, 2], n, p=[0.5, 0.45, 0.05])
    off4k = rng.integers(0, 3000, n)
    sizes = rng.choice([4096, 8192, 65536], n)
    cache = entries.EntryCache(200, 3000, 2, 64)
    sl = [slice(i, i + 777) for i in range(0, n, 777)]
    evs = [cache.events(ops[s], off4k[s], sizes[s], np.ones(len(ops[s]), bool)) for s in sl]
    got = np.stack([np.concatenate([getattr(e, k) for e in evs]) for k in ("miss", "wb_tpage", "wb_count")],
                   1)
    want = reference(ops, off4k, sizes, 200, 2, 64, 3000)
    np.testing.assert_array_equal(got, want)
    assert 0 < got[:, 0].mean() < 1 and (got[:, 2] > 1).any()  # hits and misses, multi-page write-backs


def test_sequential_writes_write_back_one_translation_page_per_its_entries():
    # page-sized writes cycling over 4,096 logical pages through a cache of 1,000 entries: every write
    # misses; once the cache is full, the eviction of the oldest (dirty) entry writes its translation page
    # back and cleans the next E - 1 entries of that page, so write-backs = evictions / E exactly
    # (E = 32 entries per translation page)
    n, cap, e = 3 * 4096, 1000, 32
    cache = entries.EntryCache(cap, 4096 * 2, 2, 2 * e)
    ev = cache.events(np.ones(n, np.int64), (np.arange(n) % 4096) * 2, np.full(n, 8192), np.ones(n, bool))
    assert ev.miss.all() and ev.wb_count[:cap].sum() == 0
    assert ev.wb_count[cap:].sum() == pytest.approx((n - cap) / e, abs=1)
    # reads only: nothing is ever dirty
    cache = entries.EntryCache(cap, 4096 * 2, 2, 2 * e)
    assert cache.events(np.zeros(n, np.int64), (np.arange(n) % 4096) * 2, np.full(n, 8192),
                        np.ones(n, bool)).wb_count.sum() == 0


def _cols(**eng):
    cols = params.columns_from_config(presets.drive("generic_tlc_1tb"), WORK)
    return cols | engine_params.columns(ENGINE | eng)


def test_engine_back_ends_agree_on_the_entry_cache_and_it_is_timed():
    # 70 % reads, 4 KiB, over 2^22 pages, a cache of 1,000 entries: misses and write-backs throughout;
    # both back ends book the translation reads and write-backs alike; a larger cache misses less
    rng = np.random.default_rng(5)
    n = 4000
    op = (rng.random(n) < 0.3).astype(np.int8)
    ch = Chunk(time_s=np.full(n, np.nan), op=op, offset=rng.integers(0, 1 << 22, n) * 16384,
               size=np.full(n, 4096), line=np.zeros(n, np.int64))
    small = _cols(map_cache="entries", map_cache_mib=8000 / 2**20, map_entry_bytes=8)
    with x64():
        trees = engine_params.build(params.concat_columns([small, small]), dtype=np.float64)
        res = {b: replay.replay(trees, [ch], chunk_len=1500, keep_latency=True, backend=b)
               for b in ("jax", "cpu")}
    np.testing.assert_allclose(res["cpu"].latencies, res["jax"].latencies, rtol=1e-9, atol=1e-15)
    for k in ("map_misses", "map_writebacks", "busy", "lat_sum"):
        np.testing.assert_allclose(res["cpu"].extra["sums"][k], res["jax"].extra["sums"][k], rtol=1e-9,
                                   err_msg=k)
    sums = res["cpu"].extra["sums"]
    ev = entries.EntryCache(1000, int(np.floor(trees[0].user_bytes[0] / 4096)), 4, 4096).events(
        op, ch.offset // 4096, ch.size, np.ones(n, bool))
    assert sums["map_misses"][0] == ev.miss.sum() and sums["map_writebacks"][0] == ev.wb_count.sum() > 0
    big = _cols(map_cache="entries", map_cache_mib=64, map_entry_bytes=8)
    res_big = replay.replay(engine_params.build(big), [ch], chunk_len=1500, backend="cpu")
    assert res_big.extra["sums"]["map_writebacks"][0] == 0  # 8 M entries never fill
    assert res_big.metrics["latency_mean_us"][0] < res["cpu"].metrics["latency_mean_us"][0]


def test_a_batch_mixing_entry_cache_sizes_is_refused():
    cols = params.concat_columns([_cols(map_cache="entries", map_cache_mib=1),
                                  _cols(map_cache="entries", map_cache_mib=2)])
    ch = Chunk(time_s=np.full(4, np.nan), op=np.zeros(4, np.int8), offset=np.arange(4) * 4096,
               size=np.full(4, 4096), line=np.zeros(4, np.int64))
    with pytest.raises(ConfigError, match="engine.map_cache.*share the cache size"):
        replay.replay(engine_params.build(cols), [ch], chunk_len=4, backend="cpu")
