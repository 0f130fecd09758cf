"""A write's pages let into flash one by one (``engine.back_pressure = pages``, ``cpu_ops._write_pages``):
the instants MQSim's rule gives on a one-die drive, worked by hand; the translation reads a write's pages
make as they go; the erased blocks of a fresh drive (``engine.fresh_blocks``); and the back ends that run
it."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import x64

from ssdx import params, presets
from ssdx.core.fields import ConfigError
from ssdx.models.engine import admission as engine_admission
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import cpu_ops, replay
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.workloads.traces import Chunk

#: one die of one plane on one channel: every page of a write goes to the same die, one at a time
ONE_DIE = {"channels": 1, "dies_per_channel": 1, "planes_per_die": 1, "die_gbit": 512,
           "user_capacity_gb": 50.0, "slc_mode": "pure_native", "dram": True}
ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.0, "ctrl_kiops": 1000,
          "time_scale": 1.0, "write_back": "eager"}


def one_die(limit_pages: float, pages: int, **eng) -> tuple[dict, object]:
    """The one-die drive at QD1 with room for ``limit_pages`` pages in flight: ``engine.back_pressure``
    ``pages`` and ``programs`` (two configurations), and its plan."""
    rows = []
    for bp in ("pages", "programs"):
        cols = params.columns_from_config(presets.drive("generic_tlc_1tb", **ONE_DIE), {
            "pattern": "random", "block_kib": 4, "queue_depth": 1, "prefill_fraction": 0.0,
            "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0})
        rows.append(cols | engine_params.columns(ENGINE | {"back_pressure": bp} | eng))
    trees = engine_params.build(params.concat_columns(rows), dtype=np.float64)
    page = float(np.asarray(engine.plan_batch(*trees[:3], lay=trees[3]).page_bytes)[0])
    rows = [r | {"engine.inflight_kib": np.asarray([limit_pages * page / 1024])} for r in rows]
    trees = engine_params.build(params.concat_columns(rows), dtype=np.float64)
    return trees, engine.plan_batch(*trees[:3], lay=trees[3])


def one_write(trees, page: float, pages: int, at_page: int) -> replay.Result:
    """One write of ``pages`` whole pages at page ``at_page`` on the idle drive (the CPU loop)."""
    ch = Chunk(time_s=np.zeros(1), op=np.ones(1, np.int8), offset=np.asarray([at_page * int(page)]),
               size=np.asarray([pages * int(page)]), line=np.zeros(1, np.int64))
    return replay.replay(trees, [ch], chunk_len=1, keep_latency=True, backend="cpu")


def test_a_write_goes_to_flash_a_page_each_time_the_room_frees():
    # room for one page: page j goes once page j - 1 has been sent (x) and programmed (t), so a write of
    # four pages is let in 3 (x + t) later than a write of one, past its longer host transfer; counted in
    # programs (its own pages filling the room) it is let in at once
    with x64():
        trees, p = one_die(1, 4)
        page = float(np.asarray(p.page_bytes)[0])
        x = page / float(np.asarray(p.chan_rate)[0])
        t = float(np.asarray(p.t_unit)[1, 0])
        host = page / float(np.asarray(p.host_rate)[0])
        lat1 = one_write(trees, page, 1, 0).latencies[:, 0]
        lat4 = one_write(trees, page, 4, 0).latencies[:, 0]
    np.testing.assert_allclose(lat4 - lat1, [3 * host + 3 * (x + t), 3 * host], rtol=1e-9)


def test_room_for_the_whole_write_lets_it_in_at_once():
    with x64():
        trees, p = one_die(8, 4)
        page = float(np.asarray(p.page_bytes)[0])
        host = page / float(np.asarray(p.host_rate)[0])
        lat1 = one_write(trees, page, 1, 0).latencies[:, 0]
        lat4 = one_write(trees, page, 4, 0).latencies[:, 0]
    np.testing.assert_allclose(lat4 - lat1, [3 * host, 3 * host], rtol=1e-9)


def test_a_page_that_misses_the_mapping_cache_reads_its_translation_page_unless_a_read_is_in_flight():
    # every page of a write misses (never written, an entry cache): with room for one page each page goes
    # after the previous one's read has come in, so each reads its translation page again and waits for it
    # (m = the read and its transfer) before its data goes; with room for all four, the four wait for one
    miss = {"map_cache": "entries", "map_entry_bytes": 8}
    with x64():
        out = {}
        for room in (1, 8):
            trees, p = one_die(room, 4, **miss)
            page = float(np.asarray(p.page_bytes)[0])
            res = [one_write(trees, page, k, 1000 * k) for k in (1, 4)]
            out[room] = ([r.latencies[0, 0] for r in res],
                         [float(r.extra["sums"]["map_misses"][0]) for r in res])
        x = page / float(np.asarray(p.chan_rate)[0])
        t = float(np.asarray(p.t_unit)[1, 0])
        m = float(np.asarray(p.t_map_read)[0] + np.asarray(p.t_map_xfer)[0])
        host = page / float(np.asarray(p.host_rate)[0])
    (lat1, lat4), (n1, n4) = out[1]
    assert (n1, n4) == (1.0, 4.0)
    np.testing.assert_allclose(lat4 - lat1, 3 * host + 3 * (m + x + t), rtol=1e-9)
    (lat1, lat4), (n1, n4) = out[8]
    assert (n1, n4) == (1.0, 1.0)
    np.testing.assert_allclose(lat4 - lat1, 3 * host, rtol=1e-9)


def test_a_fresh_drive_erases_only_past_its_free_blocks():
    # die units from 0 to 10 with 3 a block: 3 erases at steady state (at units 3, 6 and 9), and 1 from 5
    # to 7 (at 6); with 4 units erased at the start, only past them (at 7 and 10; from 5 to 7, at 7): 2 and
    # 1; with all of them erased, none
    before, after, upb = np.asarray([0.0, 5.0]), np.asarray([10.0, 7.0]), 3.0
    for fresh, want in ((0.0, [3, 1]), (4.0, [2, 1]), (64.0, [0, 0])):
        got_cpu = [cpu_ops._erases.py_func(b, a, upb, fresh) for b, a in zip(before, after, strict=True)]
        p = type("P", (), {"units_per_block": jnp.asarray([upb]), "fresh_units": jnp.asarray([fresh])})
        got_jax = engine._erases(p, jnp.asarray(before)[:, None], jnp.asarray(after)[:, None])[:, 0]
        assert got_cpu == want and np.asarray(got_jax).tolist() == want


def test_fresh_blocks_leave_a_short_run_of_writes_without_erases():
    with x64():
        counts = []
        for fresh in (False, True):
            trees, p = one_die(1, 4, fresh_blocks=fresh)
            page = float(np.asarray(p.page_bytes)[0])
            per_block = float(np.asarray(p.units_per_block)[0])
            n = int(3 * per_block)  # three blocks' worth of one-page writes
            ch = Chunk(time_s=np.zeros(n), op=np.ones(n, np.int8), offset=np.arange(n) * int(page),
                       size=np.full(n, int(page)), line=np.zeros(n, np.int64))
            res = replay.replay(trees, [ch], chunk_len=n, backend="cpu")
            counts.append(res.extra["sums"]["erases"])
    np.testing.assert_array_equal(counts[0], [3.0, 3.0])
    np.testing.assert_array_equal(counts[1], [0.0, 0.0])


def test_pages_run_in_the_per_configuration_loop_only():
    assert engine_backends.select({"backend": "auto", "back_pressure": "pages"}) == "cpu"
    with pytest.raises(ConfigError) as e:
        engine_backends.select({"backend": "jax"}, pages=True)
    assert "engine.backend" in str(e.value) and "pages" in str(e.value)


def test_the_pages_let_in_together_go_into_dram_together():
    # MQSim writes the sectors each call of write_to_destage_buffer lets in to DRAM with one access: with
    # room for one page, the last page goes alone (one page's DRAM write after the others have gone);
    # with room for all four, the four go together (one write of four pages)
    dram = {"buffer_dram_mts": 100, "buffer_dram_burst_bytes": 1, "buffer_dram_row_bytes": 8192,
            "buffer_dram_trcd_ns": 13, "buffer_dram_tcl_ns": 13, "buffer_dram_trp_ns": 13}
    with x64():
        lat = {}
        for room in (1, 8):
            trees, p = one_die(room, 4, **dram)
            page = float(np.asarray(p.page_bytes)[0])
            lat[room] = [one_write(trees, page, k, 0).latencies[0, 0] for k in (1, 4)]
        x = page / float(np.asarray(p.chan_rate)[0])
        t = float(np.asarray(p.t_unit)[1, 0])
        host = page / float(np.asarray(p.host_rate)[0])
        d = {n: float(engine_admission._dram_time(p, np.asarray([n * page]))[0]) for n in (1, 4)}
    np.testing.assert_allclose(lat[1][1] - lat[1][0], 3 * host + 3 * (x + t), rtol=1e-9)
    np.testing.assert_allclose(lat[8][1] - lat[8][0], 3 * host + d[4] - d[1], rtol=1e-9)
    assert d[4] > d[1] > 0
