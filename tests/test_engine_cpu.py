"""The CPU loop of the request-level engine (``ssdx.models.engine.cpu``) against the batched JAX scan
(``ssdx.models.engine.model``): same latencies, histograms, accumulators and state, request by request."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from conftest import padded_layout, x64

from ssdx import params, presets
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import cpu as engine_cpu
from ssdx.models.engine import cpu_ops, replay
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.workloads import synthetic
from ssdx.workloads.traces import Chunk

ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
DRIVES = ("sata_tlc_500", "generic_tlc_1tb", "sn8e_1920", "aldrin_pro_2tb")  # DRAM-less and DRAM, 16/32 dies


#: mapping-cache sets of the largest cache of the tests that share :func:`erasing_plan`'s layout
MAP_SETS = 128


def batch(qds=(1, 4, 32), **eng) -> dict:
    """Every drive preset at every queue depth (the layout padded to the largest)."""
    rows = []
    for qd in qds:
        for name in DRIVES:
            w = {"pattern": "random", "block_kib": 4, "queue_depth": qd, "prefill_fraction": 0.5,
                 "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0}
            cols = params.columns_from_config(presets.drive(name), w)
            rows.append(cols | engine_params.columns(ENGINE | eng))
    return params.concat_columns(rows)


def mixed(n: int, seed: int = 3, timed: bool = False) -> Chunk:
    """Reads and writes of 4 KiB to 1 MiB (the larger ones spread over every die) with trims."""
    ch = synthetic.fio_like(n, 0.6, {4096: 0.5, 16384: 0.2, 131072: 0.2, 1 << 20: 0.1}, span_bytes=20e9,
                            seed=seed)
    op = ch.op.copy()
    op[::53] = 2  # trims
    t = np.cumsum(np.random.default_rng(seed).exponential(40e-6, n)) if timed else ch.time_s
    return Chunk(time_s=t, op=op, offset=ch.offset, size=ch.size, line=ch.line)


def erasing_plan(qds, room_bytes: float, **eng):
    """The batched plan of :func:`batch` (engine fields ``eng``) with blocks of 3 program units, so writes
    erase, and pSLC and native rooms cut to ``room_bytes``, so writes end up folding (float64); returns
    ``(plan, layout)``, the layout padded (``conftest.padded_layout``) to hold every policy's mechanisms
    and :data:`MAP_SETS` cache sets."""
    drive, workload, eng, lay = engine_params.build(batch(qds=qds, **eng), dtype=np.float64)
    lay = padded_layout(lay, map_sets=MAP_SETS)  # one compiled scan for every policy of the tests below
    p = engine.plan_batch(drive, workload, eng, lay)
    return p._replace(units_per_block=np.full(np.shape(p.units_per_block), 3.0),
                      room_slc0=np.minimum(p.room_slc0, room_bytes),
                      room_nat0=np.minimum(p.room_nat0, room_bytes)), lay


def both(cols: dict, ch: Chunk, chunk_len: int, dtype=np.float64,
         like: engine_params.Layout | None = None) -> tuple[replay.Result, replay.Result]:
    """The JAX scan's and the CPU loop's replays of ``ch`` on the batch ``cols``, its layout padded
    (``conftest.padded_layout``: tests of one batch size, chunk length and dtype share a compiled scan);
    with ``like``, also to that layout's kept rewrites and multi-plane merge rows (unused, they change
    nothing: ``test_engine_mechanisms.py``, ``test_a_mechanism_no_configuration_uses_is_left_out_exactly``
    in the full validation)."""
    trees = engine_params.build(cols, dtype=dtype)
    lay = padded_layout(trees[3], map_sets=MAP_SETS)
    if like is not None:
        lay = lay._replace(rewrites=lay.rewrites or like.rewrites,
                           merge_rows=max(lay.merge_rows, like.merge_rows))
    trees = trees[:3] + (lay,)
    return tuple(replay.replay(trees, [ch], chunk_len=chunk_len, keep_latency=True, backend=b)
                 for b in ("jax", "cpu"))


@pytest.mark.parametrize("loop", ["closed", "open"])
def test_cpu_loop_equals_the_batched_scan_request_by_request(loop):
    # several chunks (the state handed from one to the next) with padding in the last; 8 configurations in
    # chunks of 1000 requests, the compiled scan of the raw chunk functions' tests below
    with x64():
        ref, cpu = both(batch(qds=(2, 16), loop=loop, time_scale=2.0), mixed(2500, timed=loop == "open"),
                        chunk_len=1000)
    assert (ref.extra["backend"], cpu.extra["backend"]) == ("jax", "cpu")
    assert np.isfinite(ref.latencies).all()
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)
    for k in ("count", "bytes", "lat_sum", "queue_sum", "busy", "read_pages", "prog_pages", "erases",
              "map_misses", "mode_bytes", "idle_folded"):
        np.testing.assert_allclose(cpu.extra["sums"][k], ref.extra["sums"][k], rtol=1e-9, atol=1e-6,
                                   err_msg=k)
    np.testing.assert_array_equal(cpu.extra["sums"]["hist"], ref.extra["sums"]["hist"])
    for k in ("iops", "makespan_s", "latency_p99_us", "die_utilisation_mean", "pslc_bytes", "queue_share"):
        np.testing.assert_allclose(cpu.metrics[k], ref.metrics[k], rtol=1e-9, err_msg=k)
    # the stream exercised what it should: misses on DRAM-less drives, erases, every die busy
    assert (ref.metrics["map_misses"][1::4] > 0).all() and (ref.metrics["map_misses"][3::4] == 0).all()
    assert (ref.metrics["nand_program_pages"] > 0).all() and (ref.metrics["die_utilisation_mean"] > 0).all()


def test_erases_folding_and_chunk_state_match_between_backends():
    # blocks of 3 program units, so the writes erase, and pSLC and native rooms of 10 MB, so the writes
    # end up folding; the raw chunk functions, state compared field by field
    import jax

    with x64():
        p, lay = erasing_plan((2, 16), 10e6)
        ch = mixed(900, seed=5)
        req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 1000, np.float64)
        s0 = engine.init(p, lay)
        s_ref, a_ref, l_ref = jax.jit(engine.run_chunk, static_argnums=(3, 4))(p, s0, req, lay, True)
        np_tree = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731
        s_cpu, a_cpu, l_cpu = engine_cpu.run_chunk(engine_cpu.pack_plan(np_tree(p), lay), np_tree(s0),
                                                   np_tree(req), lay, True)
    assert np.asarray(a_ref.erases).min() > 0
    modes = np.asarray(a_ref.mode_bytes)  # (3, B): pSLC, direct native, folding
    assert (modes[2, 1::4] > 0).all()  # the dynamic-pSLC drives fold (the 3rd preset is pure native)
    np.testing.assert_allclose(l_cpu, np.asarray(l_ref), rtol=1e-9, atol=1e-15)
    mask = np.asarray(p.mask) > 0.5
    leaves = zip(jax.tree_util.tree_leaves_with_path(np_tree(s_ref)), jax.tree_util.tree_leaves(s_cpu),
                 strict=True)
    for (path, want), got in leaves:
        if want.shape == mask.shape:
            want, got = np.where(mask, want, 0), np.where(mask, got, 0)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=jax.tree_util.keystr(path))
    for k in ("erases", "prog_pages", "busy", "lat_sum", "mode_bytes"):
        np.testing.assert_allclose(getattr(a_cpu, k), np.asarray(getattr(a_ref, k)), rtol=1e-9, err_msg=k)
    elapsed = np.asarray(a_ref.elapsed) - np.asarray(a_ref.elapsed_c)
    np.testing.assert_allclose(a_cpu.elapsed, elapsed, rtol=1e-12)


def test_a_deep_queue_keeps_its_completion_order_across_chunks():
    """The CPU loop keeps the outstanding requests' completion times as a min-heap: an open-loop stream in
    bursts of 400 requests 1 us apart (then 20 ms idle), at queue depths 300 and 7 in one batch (the
    shallower one padded), in chunks of 150: same latencies as the JAX scan, and the state handed from
    chunk to chunk (the completion times sorted, as the scan keeps them)."""
    n = 1200
    t = (np.arange(n) % 400) * 1e-6 + (np.arange(n) // 400) * 20e-3
    ch = mixed(n, seed=7)
    ch = Chunk(time_s=t, op=ch.op, offset=ch.offset, size=ch.size, line=ch.line)
    with x64():
        ref, cpu = both(batch(qds=(300, 7), loop="open"), ch, chunk_len=150)
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)
    assert np.nanmax(ref.latencies[0]) > 100 * np.nanmin(ref.latencies[0])  # the queue did build up
    trees = engine_params.build(batch(qds=(300,), loop="open"), dtype=np.float64)
    run_f, p, s, _ = replay.prepare(trees, backend="cpu")
    with x64():
        req, _ = engine.requests(ch.op[:400], ch.offset[:400], ch.size[:400], t[:400], None, 400, np.float64)
    s = run_f(p, s, req)[0]
    slots = np.asarray(s.slots)
    assert (np.diff(slots, axis=0) >= 0).all() and np.isfinite(slots).all()


SUSPENSION_CASES = [
    {"suspension": "none"},
    {"suspension": "erase", "suspend_program_us": 100, "suspend_erase_us": 700},
    {"suspension": "program", "suspend_program_us": 100, "suspend_erase_us": 700},
    {"suspension": "program_erase", "suspend_program_us": 100, "suspend_erase_us": 700,
     "suspend_min_program_us": 100, "suspend_min_erase_us": 700},
]


@pytest.mark.parametrize("eng", SUSPENSION_CASES, ids=[c["suspension"] for c in SUSPENSION_CASES])
def test_suspension_policies_match_between_backends(eng):
    # the raw chunk functions on drives that erase every 3 units, under each read-suspension policy with
    # MQSim's overheads and thresholds: latencies, suspensions and state request by request
    with x64():
        p, lay = erasing_plan((2, 16), 10e6, loop="open", **eng)
        ch = mixed(900, seed=11, timed=True)
        req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 1000, np.float64)
        s0 = engine.init(p, lay)
        run = jax.jit(engine.run_chunk, static_argnums=(3, 4))
        s_ref, a_ref, l_ref = run(p, s0, req, lay, True)
        np_tree = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731
        s_cpu, a_cpu, l_cpu = engine_cpu.run_chunk(engine_cpu.pack_plan(np_tree(p), lay), np_tree(s0),
                                                   np_tree(req), lay, True)
        p_def, _ = erasing_plan((2, 16), 10e6, loop="open")
        _, _, l_def = run(p_def, s0, req, lay, True)
    np.testing.assert_allclose(l_cpu, np.asarray(l_ref), rtol=1e-9, atol=1e-15)
    for k in ("suspensions", "busy", "lat_sum", "queue_sum", "erases"):
        np.testing.assert_allclose(getattr(a_cpu, k), np.asarray(getattr(a_ref, k)), rtol=1e-9, err_msg=k)
    mask = np.asarray(p.mask) > 0.5
    for k in ("start", "end", "er_end", "er_len", "t_op"):
        np.testing.assert_allclose(np.where(mask, getattr(s_cpu.pe, k), 0),
                                   np.where(mask, np.asarray(getattr(s_ref.pe, k)), 0), rtol=1e-9, atol=1e-12,
                                   err_msg=k)
    sus = np.asarray(a_ref.suspensions).sum(1)  # (program, erase) over the batch
    assert sus[0] > 0 if eng["suspension"] in ("program", "program_erase") else sus[0] == 0
    assert sus[1] > 0 if eng["suspension"] in ("erase", "program_erase") else sus[1] == 0
    reads = np.asarray(ch.op)[:900] == 0
    # the policy changed the reads' latencies (waits or overheads), and only ever lengthened them on average
    assert not np.allclose(np.asarray(l_ref)[:900][reads], np.asarray(l_def)[:900][reads])
    assert np.asarray(l_ref)[:900][reads].mean() > np.asarray(l_def)[:900][reads].mean()


@pytest.mark.parametrize("eng", [{"map_cache": "direct"},
                                 {"map_cache": "lru", "suspension": "none", "buffer_dram_mts": 800},
                                 {"map_cache": "lru", "suspension": "none", "buffer_dram_mts": 100,
                                  "write_back": "eager", "inflight_kib": 256, "cache_read": False}],
                         ids=["direct", "lru_none_dram", "eager_no_cache_read"])
def test_map_cache_policies_match_between_backends(eng):
    # the table in flash on every drive (DRAM ones too), a cache of 32 translation pages, dirty pages
    # written back: latencies, accumulators and every state field (the cache included)
    with x64():
        p, lay = erasing_plan((2, 16), 10e6, loop="open", map_cache_mib=0.5, **eng)
        ch = mixed(900, seed=13, timed=True)
        req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 1000, np.float64)
        s0 = engine.init(p, lay)
        s_ref, a_ref, l_ref = jax.jit(engine.run_chunk, static_argnums=(3, 4))(p, s0, req, lay, True)
        np_tree = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731
        s_cpu, a_cpu, l_cpu = engine_cpu.run_chunk(engine_cpu.pack_plan(np_tree(p), lay), np_tree(s0),
                                                   np_tree(req), lay, True)
    np.testing.assert_allclose(l_cpu, np.asarray(l_ref), rtol=1e-9, atol=1e-15)
    for k in ("map_misses", "map_writebacks", "busy", "lat_sum", "queue_sum", "suspensions"):
        np.testing.assert_allclose(getattr(a_cpu, k), np.asarray(getattr(a_ref, k)), rtol=1e-9, err_msg=k)
    mask = np.asarray(p.mask) > 0.5
    leaves = zip(jax.tree_util.tree_leaves_with_path(np_tree(s_ref)), jax.tree_util.tree_leaves(s_cpu),
                 strict=True)
    for (path, want), got in leaves:
        if want.shape == mask.shape:
            want, got = np.where(mask, want, 0), np.where(mask, got, 0)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=jax.tree_util.keystr(path))
    misses, wbs = np.asarray(a_ref.map_misses), np.asarray(a_ref.map_writebacks)
    assert (misses > 0).all()  # DRAM drives miss too
    assert (wbs > 0).all() and (wbs < misses).all()


# full validation: the fast tier holds the float32 scan to the loop on test_back_pressure's stream of reads
# and merged writes (its programs exactly, its latencies to rounding)
@pytest.mark.validation
def test_cpu_loop_matches_the_float32_scan_to_rounding():
    ref, cpu = both(batch(qds=(1, 8)), mixed(1500), chunk_len=1500, dtype=np.float32)
    for k in ("iops", "latency_mean_us", "read_latency_mean_us", "write_latency_mean_us",
              "die_utilisation_mean"):
        np.testing.assert_allclose(cpu.metrics[k], ref.metrics[k], rtol=1e-3, err_msg=k)
    assert cpu.latencies.dtype == np.float32


def test_idle_folding_matches_between_backends():
    # bursts of writes with idle gaps: the pSLC cache folds back while the dies are idle
    n = 1200
    t = np.arange(n) * 20e-6 + np.repeat(np.arange(n // 200) * 0.5, 200)
    ch = Chunk(time_s=t, op=np.ones(n, np.int8), offset=np.arange(n, dtype=np.int64) * 131072,
               size=np.full(n, 131072, np.int64), line=np.arange(1, n + 1))
    with x64():
        ref, cpu = both(batch(qds=(4, 4), loop="open"), ch, chunk_len=1000)  # the shape of the tests above
    assert (ref.metrics["idle_folded_bytes"][2:] > 0).any()
    np.testing.assert_allclose(cpu.metrics["idle_folded_bytes"], ref.metrics["idle_folded_bytes"], rtol=1e-9)
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)


def test_work_exactly_as_long_as_a_gap_fills_it_in_both_backends():
    # a die busy [0, 100] us after an idle gap [10, 30] us: a 20 us read ready at 10 us fits the gap
    from tests.test_engine_booking import _cpu_book, _jax_book, _state

    state = _state(100e-6, (10e-6, 30e-6))
    dur = 30e-6 - 10e-6
    with x64():
        start, new = _jax_book(state, 10e-6, dur)
    got = _cpu_book(state, 10e-6, dur)
    assert start == pytest.approx(10e-6) and got[0] == pytest.approx(10e-6)
    assert new[0] == pytest.approx(100e-6) and got[1][0] == pytest.approx(100e-6)  # nothing queued
    # one 1 % too long starts there all the same (the die is idle) and moves the booked work back by the
    # 0.2 us it overlaps; the gap now ends with it
    late = _cpu_book(state, 10e-6, dur * 1.01)
    assert late[0] == pytest.approx(10e-6)
    assert late[1] == pytest.approx(_state(100.2e-6, (10e-6, 10e-6)))
    # work ready after the gap, inside the window of back-to-back work, queues at the end of the booking
    assert _cpu_book(state, 40e-6, dur)[0] == pytest.approx(100e-6)
    # work ready exactly when the booking ends starts at once
    assert _cpu_book(state, 100e-6, dur)[0] == pytest.approx(100e-6)


def test_backend_is_checked_and_resolved():
    with pytest.raises(params.ConfigError, match="engine.backend"):
        engine_backends.select({"backend": "gpu"})
    import jax

    assert engine_backends.select({}) == ("cpu" if jax.default_backend() == "cpu" else "jax")
    assert engine_backends.select({"backend": "jax"}) == "jax"
    trees = engine_params.build(batch(qds=(2,)))
    run, p, s, n = replay.prepare(trees, backend="cpu")
    ch = mixed(64)
    req, _ = engine.requests(ch.op, ch.offset, ch.size, ch.time_s, None, 64)
    assert n == 4 and run.backend == "cpu"
    run.compile(p, s, req)  # one configuration, one request: the state handed in is not touched
    s2, acc, _ = run(p, s, req)
    assert s2.die_free.shape == s.die_free.shape and acc.count.sum() == 4 * 64
    assert np.array_equal(s.slots, engine.init(p, engine_params.layout(batch(qds=(2,)))).slots)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6, 8, 12, 64, 1 << 20, (1 << 20) + 1])
def test_shift_and_mask_divisions_are_floor_division(d):
    # the loop divides by powers of two with shifts and masks (cpu_ops._div/_mod) and by anything else
    # with // and %: both must be Python's floor division and modulo, negative values included
    s = cpu_ops._shift(d)
    assert (s >= 0) == (d & (d - 1) == 0)
    assert s < 0 or 1 << s == d
    xs = list(range(-300, 301)) + [(1 << 40) + 7, -(1 << 40) - 7]
    for f in (cpu_ops._div, cpu_ops._mod):
        want = [x // d if f is cpu_ops._div else x % d for x in xs]
        assert [f.py_func(x, d, s) for x in xs] == want
        assert [f(x, d, s) for x in xs] == want  # compiled
    assert cpu_ops._shift(0) == -1 and cpu_ops._shift(-4) == -1


def test_a_drive_of_no_power_of_two_geometry_matches_between_backends():
    # 6 channels of 3 dies (18 dies): every division of the loop takes the // and % path; the drive takes
    # the last place of a batch of drives of 16 and 32 dies (the compiled scan of the tests above)
    d = presets.drive("generic_tlc_1tb") | {"channels": 6, "dies_per_channel": 3}
    w = {"pattern": "random", "block_kib": 4, "queue_depth": 8, "prefill_fraction": 0.5, "fill_fraction": 1.0,
         "burst_gb": 0.0, "idle_s": 0.0}
    cols = params.columns_from_config(d, w) | engine_params.columns(ENGINE)
    others = {k: v[:-1] for k, v in batch(qds=(2, 16)).items()}
    with x64():
        ref, cpu = both(params.concat_columns([others, cols]), mixed(1200), chunk_len=1000)
    np.testing.assert_allclose(cpu.latencies, ref.latencies, rtol=1e-9, atol=1e-15)
    assert ref.metrics["die_utilisation_mean"][-1] > 0
