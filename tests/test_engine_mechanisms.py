"""Optional mechanisms of the request-level engine against hand-computed timelines, in both back ends
(the batched JAX scan and the CPU loop): read suspension (``engine.suspension`` and its overheads and
thresholds, MQSim's ``CMD_Suspension_Support``, ``Suspend_*_Time``, ``Preferred_suspend_*_time_for_read``).

The drive is the DRAM preset ``aldrin_pro_2tb`` (32 dies on 8 channels, 4 planes of 16 KiB: a program
unit is 64 KiB; the map never misses) with its program time set to 750 µs (and, where said, an erase of
3 ms before every unit), so the timelines are easy to follow.  A write of one unit at time 0 goes to
die 0; its program starts once the data is in: command (controller + interface overhead), the host
transfer and the channel transfer.  A 4 KiB read of logical page 0 (die 0) is then timed to be ready on
the die a given time into that program.  On an idle die that read takes ``L_idle`` = command + map hit
+ ``t_read`` + its channel transfer + its host transfer; every expectation below is ``L_idle`` plus what
the timeline adds."""

from __future__ import annotations

import json
import types

import jax
import numpy as np
import pytest
from conftest import padded_layout, x64

from ssdx import catalog, params, presets
from ssdx.models.engine import cpu as engine_cpu
from ssdx.models.engine import entries, rewrites
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import reads as engine_reads
from ssdx.params import ConfigError

ENGINE = {"loop": "open", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
WORK = {"pattern": "random", "block_kib": 4, "queue_depth": 8, "prefill_fraction": 0.5, "fill_fraction": 1.0,
        "burst_gb": 0.0, "idle_s": 0.0}
T_PROG = 750e-6
T_ERASE = 3000e-6
US = 1e-6


#: the scan compiled once for this file's timelines (a module-level jit: every call of one layout and stream
#: length reuses its program)
RUN_CHUNK = jax.jit(engine.run_chunk, static_argnums=(3, 4))


def _cols(**eng) -> dict:
    """The columns of the file's drive and workload with the engine options ``eng``."""
    cols = params.columns_from_config(presets.drive("aldrin_pro_2tb"), WORK)
    return cols | engine_params.columns(ENGINE | eng)


def _plan(erase_every_unit: bool = False, **eng):
    """The float64 batched plan of one configuration with the program time set to :data:`T_PROG` (and an
    erase of :data:`T_ERASE` with every unit), and its layout, padded (``conftest.padded_layout``)."""
    drive, workload, e, lay = engine_params.build(_cols(**eng), dtype=np.float64)
    lay = padded_layout(lay)
    with x64():
        p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(drive, workload, e, lay))
    p = p._replace(t_unit=np.full(np.shape(p.t_unit), T_PROG))
    if erase_every_unit:
        p = p._replace(t_erase=np.full(np.shape(p.t_erase), T_ERASE),
                       units_per_block=np.ones(np.shape(p.units_per_block)))
    return p, lay


def _const(p, name: str) -> float:
    return float(np.asarray(getattr(p, name)).ravel()[0])


def _times(p) -> tuple[float, float, float]:
    """(start of the program of a one-unit write issued at 0, command-to-die time of a read, ``L_idle``)."""
    cmd = _const(p, "ctrl_s") + _const(p, "cmd_s")
    unit, host, chan = _const(p, "unit_bytes"), _const(p, "host_rate"), _const(p, "chan_rate")
    p_start = cmd + unit / host + unit / chan
    to_die = cmd + _const(p, "map_hit_s")
    l_idle = to_die + _const(p, "t_read") + 4096 / chan + 4096 / host
    return p_start, to_die, l_idle


def _length(n: int) -> int:
    """The padded length of a stream of ``n`` requests: a power of two of at least 64, so the tests' short
    streams share the scan's compiled shapes (padding requests are not valid: they change nothing)."""
    return max(64, 1 << (n - 1).bit_length())


#: whether :func:`_run` replays the timelines in the batched JAX scan too (set by :func:`back_ends`)
JAX_STEP = [True]


@pytest.fixture(autouse=True, params=["cpu", pytest.param("cpu_and_jax", marks=pytest.mark.validation)])
def back_ends(request):
    """The fast tier checks the timelines in the CPU loop; the validation tier runs the file again with the
    batched JAX scan beside it, asserted equal request by request (one compile of the scan per layout and
    stream length).  The two back ends are held to each other in the fast tier by ``test_engine_cpu`` and
    ``test_back_pressure`` for every mechanism, and by this file's tests that compare them directly."""
    JAX_STEP[0] = request.param == "cpu_and_jax"
    yield request.param
    JAX_STEP[0] = True


def _replay(p, lay, req, fields=("suspensions",)):
    """Latencies ``(n, 1)`` (s) and accumulators of the requests ``req`` in the CPU loop and, with
    :data:`JAX_STEP`, in the batched JAX scan too (latencies and the accumulators ``fields`` asserted
    equal).  Call under :func:`conftest.x64`."""
    s0 = engine.init(p, lay)
    np_tree = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731
    _, acc, lat = engine_cpu.run_chunk(engine_cpu.pack_plan(np_tree(p), lay), np_tree(s0), np_tree(req), lay,
                                       True)
    if JAX_STEP[0]:
        _, acc_j, lat_j = RUN_CHUNK(p, s0, req, lay, True)
        np.testing.assert_allclose(lat, np.asarray(lat_j), rtol=1e-12, atol=1e-15)
        for k in fields:
            np.testing.assert_allclose(getattr(acc, k), np.asarray(getattr(acc_j, k)), rtol=1e-12, err_msg=k)
    return lat, acc


def _run(p, lay, ops, offsets, sizes, times):
    """Latencies (s) and suspensions of the stream (:func:`_replay`)."""
    with x64():
        req, _ = engine.requests(np.asarray(ops), np.asarray(offsets, np.int64), np.asarray(sizes, np.int64),
                                 np.asarray(times, np.float64), None, _length(len(ops)), np.float64)
        lat, acc = _replay(p, lay, req)
    return lat[:len(ops), 0], np.asarray(acc.suspensions)[:, 0]


def _read_into_program(into: float, units: int = 1, erase_every_unit: bool = False, **eng):
    """A write of ``units`` program units at 0, then a 4 KiB read of die 0 ready ``into`` s after the
    program run on die 0 starts; returns the read's latency, its ``L_idle`` and the suspensions."""
    p, lay = _plan(erase_every_unit, **eng)
    p_start, to_die, l_idle = _times(p)
    unit, chan = _const(p, "unit_bytes"), _const(p, "chan_rate")
    if units > 1:  # units dealt over the 32 dies from die 0; channel 0 carries those of dies 0, 8, 16, 24
        n_ch0 = sum(units // 32 + (d < units % 32) for d in (0, 8, 16, 24))
        p_start += (units - 1) * unit / _const(p, "host_rate") + (n_ch0 - 1) * unit / chan
    lat, sus = _run(p, lay, [1, 0], [1 << 30, 0], [units * unit, 4096], [0.0, p_start + into - to_die])
    return lat[1], l_idle, sus


@pytest.mark.parametrize(("policy", "extra"), [
    ("program_erase", 0.0), ("program", 0.0),  # suspends the program at no cost (the presets' default)
    ("erase", T_PROG - 100 * US), ("none", T_PROG - 100 * US),  # waits for the 650 us left
])
def test_read_100us_into_a_750us_program(policy, extra):
    lat, l_idle, sus = _read_into_program(100 * US, suspension=policy)
    assert lat == pytest.approx(l_idle + extra, rel=1e-9)
    # suspensions are counted where a suspension option is away from its default (the default engine
    # does not track programs and erases: it is the original model, bit for bit)
    assert list(sus) == [1.0 if extra == 0 and policy != "program_erase" else 0.0, 0.0]


def test_suspending_a_program_costs_mqsims_suspend_time():
    # MQSim's Suspend_Program_Time (100 us) added to the read that suspends
    lat, l_idle, sus = _read_into_program(100 * US, suspend_program_us=100)
    assert lat == pytest.approx(l_idle + 100 * US, rel=1e-9)
    assert list(sus) == [1.0, 0.0]
    # with a 700 us threshold (MQSim's Preferred_suspend_write_time_for_read) the 650 us left are waited
    lat, l_idle, sus = _read_into_program(100 * US, suspend_program_us=100, suspend_min_program_us=700)
    assert lat == pytest.approx(l_idle + 650 * US, rel=1e-9)
    assert list(sus) == [0.0, 0.0]
    # and with 640 us it suspends again
    lat, _, _ = _read_into_program(100 * US, suspend_program_us=100, suspend_min_program_us=640)
    assert lat == pytest.approx(l_idle + 100 * US, rel=1e-9)


def test_a_read_that_cannot_suspend_waits_only_for_the_operation_in_progress():
    # 33 units: die 0 programs two back to back (1500 us); 100 us into the first a read waits 650 us for
    # it, then goes ahead of the queued second (MQSim's TSU serves reads first), not 1400 us
    lat, l_idle, _ = _read_into_program(100 * US, units=33, suspension="none")
    assert lat == pytest.approx(l_idle + 650 * US, rel=1e-9)
    # 850 us into the run: 100 us into the second program
    lat, l_idle, _ = _read_into_program(850 * US, units=33, suspension="none")
    assert lat == pytest.approx(l_idle + 650 * US, rel=1e-9)


@pytest.mark.parametrize(("policy", "into", "extra", "sus"), [
    ("program_erase", 100 * US, 700 * US, [0, 1]),  # suspends the erase, MQSim's 700 us Suspend_Erase_Time
    ("erase", 100 * US, 700 * US, [0, 1]),
    ("program", 100 * US, T_ERASE - 100 * US, [0, 0]),  # waits for the 2.9 ms of erase left
    ("none", 100 * US, T_ERASE - 100 * US, [0, 0]),
    # 100 us into the program that follows the erase
    ("program", T_ERASE + 100 * US, 100 * US, [1, 0]),  # suspends it at the 100 us program overhead
    ("erase", T_ERASE + 100 * US, T_PROG - 100 * US, [0, 0]),
])
def test_erase_before_the_unit(policy, into, extra, sus):
    lat, l_idle, got = _read_into_program(into, erase_every_unit=True, suspension=policy,
                                          suspend_program_us=100, suspend_erase_us=700)
    assert lat == pytest.approx(l_idle + extra, rel=1e-9)
    assert list(got) == sus


def test_a_read_behind_a_suspending_read_follows_it_without_a_second_suspension():
    p, lay = _plan(suspend_program_us=100)
    p_start, to_die, l_idle = _times(p)
    t = p_start + 100 * US - to_die
    # two 4 KiB reads of die 0 (logical pages 0 and 32) arriving together, 100 us into the program
    lat, sus = _run(p, lay, [1, 0, 0], [1 << 30, 0, 32 * 16384], [65536, 4096, 4096], [0.0, t, t])
    t_read = _const(p, "t_read")
    assert lat[1] == pytest.approx(l_idle + 100 * US, rel=1e-9)
    assert lat[2] == pytest.approx(l_idle + 100 * US + t_read, rel=1e-9)  # after the first, no overhead
    assert list(sus) == [1.0, 0.0]


def test_a_read_on_an_idle_die_or_at_a_boundary_waits_for_nothing():
    # after the program has ended, and exactly at its end
    for into in (T_PROG + 50 * US, T_PROG):
        lat, l_idle, sus = _read_into_program(into, suspension="none", suspend_program_us=100)
        assert lat == pytest.approx(l_idle, rel=1e-9) and list(sus) == [0.0, 0.0]


@pytest.mark.parametrize("bad, match", [
    ({"suspension": "always"}, "engine.suspension.*program_erase"),
    ({"suspend_erase_us": -1}, "engine.suspend_erase_us"),
    ({"map_cache": "arc"}, "engine.map_cache.*entries"),
    ({"buffer_dram_burst_bytes": 0}, "engine.buffer_dram_burst_bytes"),
    ({"write_back": "lazy"}, "engine.write_back.*eager"),
    ({"inflight_kib": -1}, "engine.inflight_kib"),
    ({"map_entry_bytes": 0}, "engine.map_entry_bytes"),
    ({"map_read_bytes": 0}, "engine.map_read_bytes"),
    ({"cache_read": "no"}, "engine.cache_read.*true or false"),
    ({"cmd_us": -0.1}, "engine.cmd_us.*or null for the catalog value"),
    ({"host_gb_s": 0}, "engine.host_gb_s.*or null for the catalog value"),
])
def test_engine_options_are_checked(bad, match):
    cols = params.columns_from_config(presets.drive("aldrin_pro_2tb"), WORK)
    with pytest.raises(params.ConfigError, match=match):
        engine_params.build(cols | engine_params.columns(ENGINE | bad))


IFACE = catalog.interface(presets.drive("aldrin_pro_2tb")["interface"])


@pytest.mark.parametrize(("field", "value", "leaf", "of_interface", "si", "shift"), [
    # command processing: latency only, so an unloaded read moves by exactly the difference
    ("cmd_us", 0.25, "cmd_s", IFACE.cmd_overhead_us * US, 0.25 * US, 0.25 * US - IFACE.cmd_overhead_us * US),
    # host link: a 4 KiB read's host transfer at 1 GB/s instead of the interface's rate
    ("host_gb_s", 1.0, "host_rate", IFACE.usable_bytes_per_s, 1e9,
     4096 / 1e9 - 4096 / IFACE.usable_bytes_per_s),
])
def test_interface_fields_are_the_catalogs_unless_set(field, value, leaf, of_interface, si, shift):
    """``engine.cmd_us`` and ``engine.host_gb_s``: null takes the interface's value (``ssdx.catalog``); a
    value replaces it, and an unloaded 4 KiB read's latency moves by exactly what it changes, in both
    back ends."""
    lats = {}
    for v, want in ((None, of_interface), (value, si)):
        p, lay = _plan(**{field: v})
        assert _const(p, leaf) == pytest.approx(want, rel=1e-12)
        lat, _ = _run(p, lay, [0], [0], [4096], [0.0])
        assert lat[0] == pytest.approx(_times(p)[2], rel=1e-12)  # L_idle, the field included
        lats[v] = lat[0]
    assert lats[value] - lats[None] == pytest.approx(shift, rel=1e-9)


def test_suspension_defaults_keep_the_original_engine():
    # left out: the original behaviour (programs and erases suspended at no cost)
    cols = params.columns_from_config(presets.drive("aldrin_pro_2tb"), WORK)
    _, _, e, _ = engine_params.build(cols | engine_params.columns(ENGINE))
    got = (float(e.suspend_program[0]), float(e.suspend_erase[0]), float(e.suspend_program_s[0]))
    assert got == (1, 1, 0)
    _, _, e, _ = engine_params.build(cols | engine_params.columns(ENGINE | {"suspension": "erase"}))
    assert (float(e.suspend_program[0]), float(e.suspend_erase[0])) == (0, 1)


def test_policies_side_by_side_in_one_batch():
    # engine.suspension is a numeric leaf: the four policies as four configurations of one batch give
    # what each gives alone (a read 100 us into a 750 us program)
    policies = ("program_erase", "program", "erase", "none")
    cols = params.concat_columns([
        params.columns_from_config(presets.drive("aldrin_pro_2tb"), WORK)
        | engine_params.columns(ENGINE | {"suspension": pol}) for pol in policies])
    drive, workload, e, lay = engine_params.build(cols, dtype=np.float64)
    with x64():
        p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(drive, workload, e, lay))
    p = p._replace(t_unit=np.full(np.shape(p.t_unit), T_PROG))
    p_start, to_die, l_idle = _times(p)
    with x64():
        req, _ = engine.requests(np.array([1, 0]), np.array([1 << 30, 0]), np.array([65536, 4096]),
                                 np.array([0.0, p_start + 100 * US - to_die]), None, _length(2), np.float64)
        lat, _ = _replay(p, lay, req)
    want = [l_idle, l_idle, l_idle + 650 * US, l_idle + 650 * US]
    np.testing.assert_allclose(np.asarray(lat)[1], want, rtol=1e-9)


def test_cli_takes_the_suspension_options_and_refuses_bad_ones(tmp_path):
    from test_cli import ssdx

    base = ("experiment=trace_replay", "workload.synthetic=msr:hm_0", "workload.requests=3000",
            "engine.loop=open", "engine.time_scale=1000")
    means = {}
    for name, extra in (("default", ()), ("none", ("engine.suspension=none",))):
        r = ssdx(*base, *extra, f"hydra.run.dir={tmp_path / name}")
        assert r.returncode == 0, r.stderr
        means[name] = json.loads((tmp_path / name / "summary.json").read_text())["latency_us"]["mean"]
    assert means["none"] > means["default"]  # reads now wait for programs in progress
    r = ssdx(*base, "engine.suspension=sometimes", f"hydra.run.dir={tmp_path / 'bad'}")
    assert r.returncode == 2 and "engine.suspension" in r.stderr and "program_erase" in r.stderr


# ------------------------------------------------------------------------------------ mapping cache
TPAGE = 16 << 20  # logical bytes one translation page maps: a 16 KiB page of 4-byte entries, each 4 KiB


def _map_stream(policy: str, ops, tpages, pages: int = 4, apart_s: float = 10e-3, page_of=None):
    """4 KiB requests ``ops`` to the translation pages ``tpages`` (at the NAND page ``page_of`` of each,
    default the first; consecutive pages lie on dies of different channels), ``apart_s`` apart (by
    default nothing overlaps), on the drive with ``engine.map_cache = policy`` and a cache of ``pages``
    translation pages; returns the latencies, the accumulators and the plan (:func:`_replay`)."""
    p, lay = _plan(map_cache=policy, map_cache_mib=pages * 16 / 1024)
    n = len(ops)
    at = np.asarray(tpages, np.int64) * TPAGE
    at = at + (0 if page_of is None else np.asarray(page_of, np.int64) * int(_const(p, "page_bytes")))
    cache = None
    if policy == "entries":  # the host's entry cache (engine.entries), of MQSim's 8-byte entries
        host = lambda x: np.asarray(x).reshape(-1)  # noqa: E731
        cache = entries.for_batch(np.array([pages * 16 * 1024 // 8]), host(p.cap_4k), host(p.page_4k),
                                  host(p.tpage_4k))
    with x64():
        req, _ = engine.requests(np.asarray(ops), at, np.full(n, 4096),
                                 np.arange(n) * apart_s, None, _length(n), np.float64, cache)
        lat, acc = _replay(p, lay, req, ("map_misses", "map_writebacks", "busy", "read_pages"))
    return np.asarray(lat)[:n, 0], jax.tree_util.tree_map(lambda x: np.asarray(x)[..., 0], acc), p


def test_lru_cache_of_n_pages_misses_every_time_on_n_plus_1_pages_round_robin():
    tp = np.tile(np.arange(5), 5)  # 5 translation pages, 5 rounds, through a cache of 4
    _, acc, _ = _map_stream("lru", np.zeros(25, int), tp)
    assert acc.map_misses == 25 and acc.map_writebacks == 0  # reads leave the pages clean
    # direct-mapped, 4 sets: pages 0 and 4 share set 0 and evict each other, 1-3 stay: 5 + 4 x 2 misses
    _, acc, _ = _map_stream("direct", np.zeros(25, int), tp)
    assert acc.map_misses == 5 + 4 * 2
    # the default on a drive with DRAM: the whole table in DRAM, no misses
    _, acc, _ = _map_stream("auto", np.zeros(25, int), tp)
    assert acc.map_misses == 0


def test_a_stream_inside_the_cache_misses_once_per_page():
    tp = np.tile(np.arange(4), 5)
    for policy in ("lru", "direct"):
        _, acc, _ = _map_stream(policy, np.zeros(20, int), tp)
        assert acc.map_misses == 4, policy


def test_lru_keeps_the_recently_used_page():
    # 0 1 2 3, then 0 again (now the most recent), then 4 evicts 1 (the least recent), so 0 still hits
    # and 1 misses
    tp = [0, 1, 2, 3, 0, 4, 0, 1]
    _, acc, _ = _map_stream("lru", np.zeros(8, int), tp)
    assert acc.map_misses == 4 + 1 + 1


def test_a_miss_reads_the_translation_page_before_the_data():
    lat, _, p = _map_stream("lru", [0], [7])
    cmd = _const(p, "ctrl_s") + _const(p, "cmd_s")
    chan, host = _const(p, "chan_rate"), _const(p, "host_rate")
    want = cmd + _const(p, "t_map_read") + 4096 / chan + _const(p, "t_read") + 4096 / chan + 4096 / host
    assert lat[0] == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("policy", ["lru", "direct", "entries"])
def test_a_lookup_of_a_translation_page_being_read_waits_for_that_read(policy):
    """Two reads of different data on one translation page, issued together: the first misses and reads
    the page; the second finds the page in the cache (``lru``, ``direct``) or misses on its own entry
    (``entries``, MQSim's cache, where it would read the page a second time), but the page's entries are
    not in yet, so it issues no read of its own and waits for that one (MQSim: a miss on a translation
    page in flight waits for its read).
    Its data read then runs beside the first's, on another die and channel: the same latency.  A read
    of a third entry of the page 10 ms later, when no read is in flight, finds the page in (one lookup)
    or, caching entries, misses and reads it again."""
    lat, acc, p = _map_stream(policy, [0, 0], [7, 7], apart_s=0.0, page_of=[0, 1])
    assert acc.map_misses == 1
    assert lat[1] == pytest.approx(lat[0], rel=1e-9)
    cmd = _const(p, "ctrl_s") + _const(p, "cmd_s")
    assert lat[1] > cmd + _const(p, "t_map_read") + _const(p, "t_read")
    lat, acc, _ = _map_stream(policy, [0, 0, 0], [7, 7, 7], page_of=[0, 1, 2])
    if policy == "entries":
        assert acc.map_misses == 3 and lat[2] == pytest.approx(lat[0], rel=1e-9)
    else:
        assert acc.map_misses == 1 and lat[2] < lat[0] - _const(p, "t_map_read") + 1e-9
    # a write that misses reads the page too; a read behind it waits for that read, not for the write
    lat, acc, _ = _map_stream(policy, [1, 0], [7, 7], apart_s=0.0, page_of=[0, 1])
    assert acc.map_misses == 1 and lat[1] > cmd + _const(p, "t_map_read") + _const(p, "t_read")


def test_dirty_translation_pages_are_written_back_on_eviction():
    tp = np.tile(np.arange(5), 5)
    _, acc, p = _map_stream("lru", np.ones(25, int), tp)  # writes: every page they touch turns dirty
    assert acc.map_misses == 25 and acc.map_writebacks == 25 - 4  # every eviction after the first 4
    # each write-back reads the page (SLC) and programs it on its die; the 25 writes of 4 KiB fill one
    # 64 KiB program unit; the 25 misses read translation pages
    t_map, t_prog = _const(p, "t_map_read"), T_PROG
    assert acc.busy.sum() == pytest.approx(t_prog + 25 * t_map + 21 * (t_map + t_prog), rel=1e-9)
    _, acc, _ = _map_stream("direct", np.ones(25, int), tp)
    assert acc.map_writebacks == 13 - 4  # the evictions in set 0
    # reads after one write: page 0 is written back once, then comes back clean
    _, acc, _ = _map_stream("lru", np.r_[1, np.zeros(24, int)], tp)
    assert acc.map_misses == 25 and acc.map_writebacks == 1


# ------------------------------------------------------------------------------- write-buffer DRAM
MQSIM_DRAM = {"buffer_dram_mts": 100, "buffer_dram_burst_bytes": 1, "buffer_dram_row_bytes": 8192,
              "buffer_dram_trcd_ns": 13, "buffer_dram_tcl_ns": 13, "buffer_dram_trp_ns": 13}  # MQSim's XML


def test_writes_go_through_the_buffers_dram_one_at_a_time():
    # MQSim's example drive: 100 MT/s, one byte per transfer; a 4 KiB write takes tRCD + tCL + 2048
    # transfers of 10 ns = 20.506 us in the DRAM after its host transfer
    p, lay = _plan(**MQSIM_DRAM)
    cmd, host, ctrl = _const(p, "ctrl_s") + _const(p, "cmd_s"), _const(p, "host_rate"), _const(p, "ctrl_s")
    t_dram = 26e-9 + 2048 * 10e-9
    lat, _ = _run(p, lay, [1] * 8, np.arange(8) * 4096, [4096] * 8, [0.0] * 8)
    # eight writes arriving together: the controller takes them 1 us apart, the DRAM serialises them
    h_end = cmd + 4096 / host
    np.testing.assert_allclose(lat, h_end + t_dram * np.arange(1, 9), rtol=1e-9)
    assert ctrl + 4096 / host < t_dram  # (the DRAM, not the controller or the link, sets the pace)
    # a 64 KiB write opens 8 rows: 8 (tRCD + tCL) + 7 tRP + 32768 transfers
    lat, _ = _run(p, lay, [1], [0], [65536], [0.0])
    assert lat[0] == pytest.approx(cmd + 65536 / host + 8 * 26e-9 + 7 * 13e-9 + 32768 * 10e-9, rel=1e-9)
    # engine.buffer_dram_formula = mqsim: MQSim's estimate_dram_access_time past one row, floor(bytes / row
    # / 2) rows of tRCD + tCL + 4096 transfers + tRP, then tRCD + tCL and the bytes past the last row over
    # the transfer time (4096 B / 10 ns read as 409.6 ns); up to a row, the same as above
    p, lay = _plan(**MQSIM_DRAM, buffer_dram_formula="mqsim")
    row = 26e-9 + 4096 * 10e-9 + 13e-9
    for size, t in ((65536, 4 * row + 26e-9), (20480, row + 26e-9 + 409.6e-9), (4096, t_dram)):
        lat, _ = _run(p, lay, [1], [0], [size], [0.0])
        assert lat[0] == pytest.approx(cmd + size / host + t, rel=1e-9), size
    # without DRAM timing (the default) the write is acknowledged when its data is in
    p, lay = _plan()
    lat, _ = _run(p, lay, [1], [0], [4096], [0.0])
    assert lat[0] == pytest.approx(cmd + 4096 / host, rel=1e-9)


# ------------------------------------------------------------------------------- eager write-back
def test_eager_write_back_programs_each_write_at_once_on_the_die_of_its_address():
    # one 4 KiB write into logical page 5 (die 5): gathered, it waits in the buffer for a full 64 KiB unit
    # (no program yet); eager, its page is programmed at once on die 5 (one program, t_prog of die time)
    # and the write is acknowledged when its data is in, before the program ends
    for mode, pages, busy_die in (("gather", 0, None), ("eager", 1, 5)):
        p, lay = _plan(write_back=mode)
        with x64():
            req, _ = engine.requests(np.array([1]), np.array([5 * 16384]), np.array([4096]), np.array([0.0]),
                                     None, _length(1), np.float64)
            lat, acc = _replay(p, lay, req, ("busy", "prog_pages"))
        busy = np.asarray(acc.busy)[:, 0]
        assert float(np.asarray(acc.prog_pages)[0]) == pages
        if busy_die is None:
            assert busy.sum() == 0
        else:
            assert busy[busy_die] == pytest.approx(T_PROG) and busy.sum() == pytest.approx(T_PROG)
        cmd, host = _const(p, "ctrl_s") + _const(p, "cmd_s"), _const(p, "host_rate")
        assert float(np.asarray(lat)[0, 0]) == pytest.approx(cmd + 4096 / host, rel=1e-9)


def test_eager_writes_past_the_back_pressure_run_at_one_program_per_write():
    # 2,000 writes of 4 KiB, one per logical page, arriving together: eager, each is one program on its
    # die, so once 64 KiB (16 writes) are in flight the writes are admitted at the dies' program rate,
    # dies / t_prog (closed form: one write per t_prog / 32 s); gathered into 64 KiB units, 16 writes share
    # a program and the 16 MiB buffer takes them all at the controller's pace
    n = 2000
    ops, offs, sizes, times = [1] * n, np.arange(n) * 16384, [4096] * n, [0.0] * n
    p, lay = _plan(write_back="eager", inflight_kib=64)
    lat, _ = _run(p, lay, ops, offs, sizes, times)
    np.testing.assert_allclose(np.diff(lat[1000:]).mean(), T_PROG / 32, rtol=1e-3)
    # the 17th write is the first to wait: 16 writes of 4 KiB fill 64 KiB
    assert np.all(np.diff(lat[:16]) < 2e-6) and lat[40] > lat[39] + T_PROG / 32 * 0.99
    p, lay = _plan(write_back="gather")
    lat_g, _ = _run(p, lay, ops, offs, sizes, times)
    np.testing.assert_allclose(np.diff(lat_g[1000:]).mean(), 1e-6, rtol=1e-3)  # the 1 us controller


@pytest.mark.validation  # fast tier: each mechanism off in test_engine_cpu's scans, held to the CPU loop
@pytest.mark.parametrize("mechanism", [{"suspension": "none"}, {"map_cache": "lru"}, {"map_cache": "direct"},
                                       {"write_back": "eager"}, {"cache_read": False},
                                       {"write_back": "eager", "plane_merge": True, "rewrite_window_s": 1.0}])
def test_a_mechanism_no_configuration_uses_is_left_out_exactly(mechanism):
    # the batch's layout turns a mechanism off where no configuration uses it (the JAX step's fast path; the
    # CPU loop has none); a default configuration must get the same latencies and counts alone (mechanism
    # off) as beside one that uses it (mechanism on, masked for the default one); the mechanism must change
    # the other configuration
    rng = np.random.default_rng(7)
    n = 3000
    ops = (rng.random(n) < 0.3).astype(np.int64)  # 70 % reads
    offs = rng.integers(0, 1 << 27, n) * 4096
    sizes = np.full(n, 4096)
    times = np.cumsum(rng.exponential(20e-6, n))
    drive = presets.drive("generic_tlc_1tb")  # DRAM-less: the map cache misses
    rows = [params.columns_from_config(drive, WORK) | engine_params.columns(ENGINE | e)
            for e in ({}, mechanism)]

    def run(cols):
        d, w, e, lay = engine_params.build(cols, dtype=np.float64)
        with x64():
            p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(d, w, e, lay))
            req, _ = engine.requests(ops, offs, sizes, times, None, _length(n), np.float64)
            _, acc, lat = RUN_CHUNK(p, engine.init(p, lay), req, lay, True)
        return lay, np.asarray(lat)[:n], jax.tree_util.tree_map(np.asarray, acc)

    lay1, lat1, acc1 = run(rows[0])
    lay2, lat2, acc2 = run(params.concat_columns(rows))
    assert (lay1.suspension, lay1.map_lru, lay1.map_writeback, lay1.eager, lay1.hold_read) == (False,) * 5
    assert lay2 != lay1  # the mixed batch runs the mechanism
    np.testing.assert_allclose(lat2[:, 0], lat1[:, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(acc2.hist[..., 0], acc1.hist[..., 0])
    np.testing.assert_array_equal(acc2.map_misses[0], acc1.map_misses[0])
    changed = not np.allclose(lat2[:, 1], lat2[:, 0], rtol=1e-6)
    assert (changed or acc2.map_writebacks[1] > 0 or acc2.map_misses[1] != acc2.map_misses[0]
            or acc2.prog_pages[1] != acc2.prog_pages[0])


def test_without_cache_read_a_die_serves_one_read_per_read_time_plus_its_transfer():
    # 400 reads of 4 KiB, all on die 0 (logical pages 32 apart), arriving together: with cache read the die
    # starts each array read while the last page goes out, one read per t_read; without (MQSim's chips) it
    # holds each read until its data is out, one per t_read + 4 KiB / channel rate (closed forms)
    n = 400
    for cache_read in (True, False):
        p, lay = _plan(cache_read=cache_read)
        assert engine_params.layout(_cols(cache_read=cache_read)).hold_read is not cache_read  # unpadded
        lat, _ = _run(p, lay, [0] * n, np.arange(n) * 32 * 16384, [4096] * n, [0.0] * n)
        per_read = _const(p, "t_read") + (0.0 if cache_read else 4096 / _const(p, "chan_rate"))
        np.testing.assert_allclose(np.diff(lat[100:]).mean(), per_read, rtol=1e-9)


def test_without_cache_read_dies_sharing_a_channel_wait_for_half_the_others_transfers():
    # a 144 KiB read (9 pages of 16 KiB on dies 0..8; dies 0 and 8 share channel 0) and a 16 KiB read of
    # die 8 issued with it: without cache read die 8 is held until its page is out, taken to be after its
    # own transfer and half of die 0's (the two go out in no set order), so the second read starts 1.5
    # transfers later than with cache read, and ends 1.5 transfers later
    p0, _ = _plan()
    x = 16384 / _const(p0, "chan_rate")
    lats = {}
    for cache_read in (True, False):
        p, lay = _plan(cache_read=cache_read)
        offs = [0, 8 * 16384 + 32 * 16384]  # the second: die 8, a stripe later
        lats[cache_read], _ = _run(p, lay, [0, 0], offs, [9 * 16384, 16384], [0.0, 0.0])
    assert lats[False][1] - lats[True][1] == pytest.approx(1.5 * x, rel=1e-6)


def test_reads_ready_in_issue_order_book_alike_with_one_gap_or_many():
    # a drive with DRAM and no suspension: every read is ready when its command is through, in issue order,
    # so the layout keeps one idle gap per die, and READ_GAPS of them give the very same bookings (JAX step
    # and CPU loop); a DRAM-less drive's data reads wait for translation reads: READ_GAPS
    rng = np.random.default_rng(3)
    n = 3000
    ops = (rng.random(n) < 0.3).astype(np.int64)
    offs = rng.integers(0, 1 << 27, n) * 4096
    sizes = rng.choice([4096, 16384, 131072], n)
    times = np.cumsum(rng.exponential(8e-6, n))
    cols = params.columns_from_config(presets.drive("sn8e_1920"), WORK) | engine_params.columns(ENGINE)
    d, w, e, lay = engine_params.build(cols, dtype=np.float64)
    assert lay.read_gaps == 1
    many = lay._replace(read_gaps=engine_params.READ_GAPS)
    lats = []
    with x64():
        req, _ = engine.requests(ops, offs, sizes, times, None, _length(n), np.float64)
        for layout in (lay, many):
            p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(d, w, e, layout))
            _, _, lat = RUN_CHUNK(p, engine.init(p, layout), req, layout, True)
            _, _, lat_cpu = engine_cpu.run_chunk(engine_cpu.pack_plan(p, layout), engine.init(p, layout), req,
                                                 layout, True)
            lats += [np.asarray(lat)[:n, 0], lat_cpu[:n, 0]]
    assert np.ptp(lats[0]) > 0
    for other in lats[1:]:
        np.testing.assert_allclose(other, lats[0], rtol=1e-9, atol=1e-15)
    dramless = params.columns_from_config(presets.drive("generic_tlc_1tb"), WORK)
    dramless |= engine_params.columns(ENGINE)
    assert engine_params.build(dramless)[3].read_gaps == engine_params.READ_GAPS


@pytest.mark.parametrize("field", ["cmd_us", "host_gb_s"])
def test_only_null_means_the_catalog_value_of_an_engine_override(field):
    # null: NaN in the column, which the plan replaces by the catalog's value; a NaN given is refused with
    # the field and its rule, not read as null
    assert np.isnan(engine_params.columns(ENGINE | {field: None})[f"engine.{field}"][0])
    assert engine_params.columns(ENGINE | {field: 2.5})[f"engine.{field}"][0] == 2.5
    with pytest.raises(params.ConfigError, match=f"engine.{field}.*nan.*or null for the catalog value"):
        engine_params.columns(ENGINE | {field: float("nan")})


@pytest.mark.validation
def test_a_read_on_few_dies_books_only_those_dies_with_the_same_results(monkeypatch):
    # the batched step books a translation read on its die alone, and a read whose pages lie on at most 1,
    # 2, 4 or 8 dies in every configuration on those dies alone: the same arithmetic as booking every die and
    # keeping those, so a loaded mixed stream over a batch with every mechanism on gives the same latencies
    # and counts with those bookings and with every read booked on every die
    rng = np.random.default_rng(11)
    n = 1000
    ops = (rng.random(n) < 0.3).astype(np.int64)
    offs = rng.integers(0, 1 << 27, n) * 4096  # 4 KiB aligned: a 16 KiB read spans two pages or one
    sizes = rng.choice([4096, 16384, 65536, 131072], n, p=[0.5, 0.2, 0.15, 0.15])
    times = np.cumsum(rng.exponential(6e-6, n))
    mechanisms = ({}, {"suspension": "none"}, {"suspend_program_us": 20.0}, {"map_cache": "lru"},
                  {"cache_read": False}, {"map_cache": "direct", "write_back": "eager"})
    rows = [params.columns_from_config(presets.drive(name), WORK) | engine_params.columns(ENGINE | m)
            for name in ("generic_tlc_1tb", "aldrin_pro_2tb") for m in mechanisms]
    d, w, e, lay = engine_params.build(params.concat_columns(rows), dtype=np.float64)
    assert lay.read_gaps == engine_params.READ_GAPS and lay.suspension and lay.hold_read

    def run():
        with x64():
            p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(d, w, e, lay))
            req, _ = engine.requests(ops, offs, sizes, times, None, _length(n), np.float64)
            # a function of its own: jit would reuse the trace of engine.run_chunk made before the patch
            run_chunk = jax.jit(lambda *a: engine.run_chunk(*a), static_argnums=(3, 4))
            _, acc, lat = run_chunk(p, engine.init(p, lay), req, lay, True)
        return np.asarray(lat)[:n], jax.tree_util.tree_map(np.asarray, acc)

    monkeypatch.setattr(engine, "READ_DIES", (1, 2, 8))  # the general branches too (the default: 1 die)
    lat1, acc1 = run()
    every_die = lambda p, lay, pe, sv, pos, on, ready, dur: engine._read_book(p, lay, pe, sv, ready, dur)  # noqa: E731
    for where in (engine, engine_reads):  # the step's one-die reads and its translation reads
        monkeypatch.setattr(where, "_read_book_at", every_die)
    lat_all, acc_all = run()
    assert np.all(np.isfinite(lat1)) and np.ptp(lat1[-1]) > 0
    assert np.mean(acc1.suspensions) > 0 and np.mean(acc1.map_misses) > 0
    # to the last bits of float64: XLA may contract a multiply and an add differently in the two compiled
    # scans (seen with the 2-die branch), which a wrong die or booking would exceed by orders of magnitude
    np.testing.assert_allclose(lat1, lat_all, rtol=1e-12, atol=0)
    for a, b in zip(jax.tree_util.tree_leaves(acc1), jax.tree_util.tree_leaves(acc_all), strict=True):
        if np.issubdtype(np.asarray(a).dtype, np.integer):
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-18)


# ------------------------------------------------------------------------- rewrites kept in the buffer
def test_the_rewrite_window_keeps_pages_written_again_within_it_as_mqsim_does():
    # 8 KiB pages (page_4k = 2).  MQSim empties its set of written pages after a write past the window's
    # end (the first window ends at 0) and starts a window of 1 s there: the write at 0.5 s is forgotten,
    # the one at 0.6 s starts the set, 0.7 s finds page 0 (kept), a read keeps nothing, an unaligned 8 KiB
    # write at 0.9 s keeps page 0 and writes page 1 back, the write at 1.6 s finds page 1 and then empties
    # the set (past 1.5 s), so 1.7 s writes page 1 back again
    w = rewrites.Rewrites(window=1.0, time_scale=1.0, cap_4k=1 << 20, page_4k=2)
    ops = np.array([1, 1, 1, 0, 1, 1, 1])
    off4k = np.array([0, 0, 0, 0, 1, 2, 2])
    size = np.array([8192, 8192, 4096, 8192, 8192, 8192, 8192])
    t = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 1.6, 1.7])
    np.testing.assert_array_equal(w.kept(ops, off4k, size, np.ones(7, bool), t), [0, 0, 1, 0, 1, 1, 0])
    # the window is on the simulated clock: with engine.time_scale 2 the stream's 1.6 s is 0.8 s, inside
    # the first window, and 1.7 s too (nothing emptied after 0.6 s)
    w2 = rewrites.Rewrites(window=1.0, time_scale=2.0, cap_4k=1 << 20, page_4k=2)
    np.testing.assert_array_equal(w2.kept(ops, off4k, size, np.ones(7, bool), t), [0, 0, 1, 0, 1, 1, 1])
    # a closed loop has no arrival times: nothing kept
    w3 = rewrites.Rewrites(window=1.0, time_scale=1.0, cap_4k=1 << 20, page_4k=2)
    assert not w3.kept(ops, off4k, size, np.ones(7, bool), np.full(7, np.nan)).any()


def _both(p, lay, ops, offs, sizes, times, chunk=None, e=None, jax_step=None):
    """The stream through the CPU loop and, with :data:`JAX_STEP` (or ``jax_step``), the JAX step, in
    chunks of ``chunk`` requests (default: one chunk; the state handed on between them), with the batch's
    rewrite window (from the engine leaves ``e``) and first reads; asserts the two back ends agree on every
    latency, accumulator and the multi-plane state, and returns the summed accumulators (dict), latencies
    ``(n, B)`` and final state (the JAX step's where it ran)."""
    n = len(ops)
    chunk = chunk or n
    use_jax = JAX_STEP[0] if jax_step is None else jax_step
    kept = (rewrites.for_batch(p.rewrites, np.asarray(e.rewrite_window_s), np.asarray(e.time_scale),
                               p.cap_4k, p.page_4k) if lay.rewrites else None)
    first = rewrites.first_reads_for_batch(p.plane_merge, p.cap_4k, p.page_4k) if lay.merge_rows else None
    np_tree = lambda t: jax.tree_util.tree_map(np.asarray, t)  # noqa: E731

    def add(total, acc):
        return {k: np.asarray(v) + (0 if total is None else total[k]) for k, v in acc._asdict().items()}

    with x64():
        s_j = engine.init(p, lay)
        s_c = np_tree(s_j)
        prev, sums_j, sums_c, lat_j, lat_c = None, None, None, [], []
        for lo in range(0, n, chunk):
            sl = slice(lo, lo + chunk)
            m = len(np.asarray(ops)[sl])
            req, prev = engine.requests(np.asarray(ops)[sl], np.asarray(offs, np.int64)[sl],
                                        np.asarray(sizes, np.int64)[sl], np.asarray(times, np.float64)[sl],
                                        prev, _length(chunk), np.float64, rewrites=kept, first_reads=first)
            if use_jax:
                s_j, a, lat = RUN_CHUNK(p, s_j, req, lay, True)
                sums_j, lat_j = add(sums_j, a), lat_j + [np.asarray(lat)[:m]]
            s_c, a, lat = engine_cpu.run_chunk(engine_cpu.pack_plan(np_tree(p), lay), s_c, np_tree(req), lay,
                                               True)
            sums_c, lat_c = add(sums_c, a), lat_c + [lat[:m]]
    lat_c = np.concatenate(lat_c)
    if not use_jax:
        return sums_c, lat_c, s_c
    s_j, lat_j = np_tree(s_j), np.concatenate(lat_j)
    np.testing.assert_allclose(lat_c, lat_j, rtol=1e-12, atol=1e-15)
    for k in sums_j:
        np.testing.assert_allclose(sums_c[k], sums_j[k], rtol=1e-12, atol=1e-15, err_msg=k)
    np.testing.assert_allclose(s_c.merge, s_j.merge, rtol=1e-12, atol=1e-12)
    return sums_j, lat_j, s_j


def _batch(rows_eng, drives=None):
    """The float64 batched plan of the ``aldrin_pro_2tb`` preset (or ``drives``, one per row) with the
    engine fields of each row, its layout and engine leaves."""
    drives = drives or [presets.drive("aldrin_pro_2tb")] * len(rows_eng)
    rows = [params.columns_from_config(dr, WORK) | engine_params.columns(ENGINE | x)
            for dr, x in zip(drives, rows_eng)]
    d, w, e, lay = engine_params.build(params.concat_columns(rows), dtype=np.float64)
    with x64():
        p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(d, w, e, lay))
    return p, lay, e


def test_pages_kept_in_the_buffer_are_neither_programmed_nor_held_against_the_back_pressure():
    # 600 writes of 16 KiB over 40 logical pages (16 KiB pages), 10 us apart (2.3 times what 32 dies
    # program at 750 us a page), eager with 64 KiB of back pressure: with a 1 s window only each page's
    # first write programs it and the rest stay in the buffer, so the dies program 41 pages (the very first
    # write is forgotten as the first window starts, and its page is written back again later) and the
    # writes soon wait for no program; without it every write is programmed and they wait
    rng = np.random.default_rng(5)
    n = 600
    offs = rng.integers(0, 40, n) * 16384
    offs[0] = 0
    times = 1e-3 + np.arange(n) * 10e-6
    eager = {"write_back": "eager", "inflight_kib": 64}
    p, lay, e = _batch([eager | {"rewrite_window_s": 1.0}, eager])
    assert lay.rewrites
    p = p._replace(t_unit=np.full(np.shape(p.t_unit), T_PROG))
    window = rewrites.for_batch(p.rewrites, np.asarray(e.rewrite_window_s), np.asarray(e.time_scale),
                                p.cap_4k, p.page_4k)
    kept = window.kept(np.ones(n), offs // 4096, np.full(n, 16384), np.ones(n, bool), times)
    assert (kept != 0).sum() == n - 40 - 1  # every write but each page's first, and the forgotten one
    sums, lat, _ = _both(p, lay, np.ones(n, np.int64), offs, np.full(n, 16384), times, e=e)
    assert sums["prog_pages"].tolist() == [41.0, float(n)]
    busy = sums["busy"]
    assert busy[:, 0].sum() == pytest.approx(41 * T_PROG) and busy[:, 1].sum() == pytest.approx(n * T_PROG)
    # with the window, once the 41 programs have drained (a kept page, as in MQSim, still waits while the
    # data in flight exceed the back pressure's limit) the writes wait for nothing: acknowledged once their
    # data are in; without it they queue behind the programs
    assert lat[300:, 0].max() < 50e-6 < 1e-3 < lat[300:, 1].mean()


def test_a_batch_whose_rewrite_windows_differ_is_refused_and_a_closed_loop_keeps_nothing():
    with pytest.raises(ConfigError, match="engine.rewrite_window_s"):
        rewrites.for_batch(np.array([True, True]), np.array([1.0, 2.0]), np.ones(2), np.full(2, 1 << 20),
                           np.full(2, 4))
    assert rewrites.for_batch(np.array([False, False]), np.array([1.0, 2.0]), np.ones(2),
                              np.full(2, 1 << 20), np.full(2, 4)) is None
    # kept pages follow arrival times, which a closed loop does not: gathered writes and a closed loop
    # keep nothing, even over a trace that has times
    eager = {"write_back": "eager"}
    cases = (({"loop": "open"} | eager, True), ({"loop": "closed"} | eager, False), ({"loop": "open"}, False))
    for eng, on in cases:
        p, lay = _plan(rewrite_window_s=1.0, **eng)
        assert lay.rewrites is on and bool(np.asarray(p.rewrites).ravel()[0]) is on


# ------------------------------------------------------------------------------ multi-plane programs
def test_a_page_program_joins_a_queued_program_of_another_plane_with_its_page_number():
    # 32 dies of 4 planes, 16 KiB pages: logical page 32 n lies on die 0, plane n mod 4, and takes its
    # plane's next page number (0 for each plane's first).  A write of page 0 at 0 starts programming at
    # once; page 32 (plane 1) at 200 us finds that program started and queues its own after it; pages 64
    # and 96 (planes 2 and 3, page number 0) at 300 and 400 us join the queued one; page 128 (plane 0,
    # page number 1) has no partner: 3 programs of 750 us for 5 pages, where each page alone makes 5
    offs = np.array([0, 32, 64, 96, 128]) * 16384
    times = np.array([0.0, 200e-6, 300e-6, 400e-6, 500e-6])
    for merge, programs in ((True, 3), (False, 5)):
        p, lay = _plan(write_back="eager", inflight_kib=1e6, plane_merge=merge)
        assert lay.merge_rows == (4 * (1 + engine_params.MERGE_RING) if merge else 0)
        sums, lat, _ = _both(p, lay, [1] * 5, offs, [16384] * 5, times)
        assert float(sums["programs"][0]) == programs and float(sums["prog_pages"][0]) == 5
        busy = sums["busy"][:, 0]
        assert busy[0] == pytest.approx(programs * T_PROG) and busy.sum() == pytest.approx(programs * T_PROG)
        # the writes are acknowledged once their data are in, merged or not
        cmd, host = _const(p, "ctrl_s") + _const(p, "cmd_s"), _const(p, "host_rate")
        np.testing.assert_allclose(lat[:, 0], cmd + 16384 / host, rtol=1e-9)


def test_a_page_read_before_it_was_written_takes_its_planes_next_page_number():
    # MQSim places a page read before it was ever written on its plane's next page: of reads of pages 32,
    # 32, 64 (written just before) and 200, the first and the last read a page first
    w = rewrites.FirstReads(cap_4k=1 << 24, page_4k=4)
    ops = np.array([0, 0, 1, 0, 0])
    off4k = np.array([32, 32, 64, 64, 200]) * 4
    np.testing.assert_array_equal(w.first(ops, off4k, np.full(5, 16384), np.ones(5, bool)), [1, 0, 0, 0, 1])
    # a read of 40 pages marks its first 31 (the mask's width); the pages past them stay unread, so a
    # later read of one of them reads it first
    got = w.first(np.array([0, 0]), np.array([1000, 1035]) * 4, np.array([40 * 16384, 16384]),
                  np.ones(2, bool))
    assert got.tolist() == [(1 << 31) - 1, 1]
    # through the engine: write page 0 at 1 us (it starts at once), page 128 (plane 0, page number 1) at
    # 200 us (queued behind it); page 160 (plane 1) at 300 us joins that queued program where a read of
    # page 32 first moved plane 1 to page number 1, and without that read (number 0) it has no partner
    p, lay = _plan(write_back="eager", inflight_kib=1e6, plane_merge=True)
    for read_first, programs in ((True, 2), (False, 3)):
        ops = [0, 1, 1, 1] if read_first else [1, 1, 1]
        offs = (np.array([32, 0, 128, 160]) if read_first else np.array([0, 128, 160])) * 16384
        times = np.array([0.0, 1e-6, 200e-6, 300e-6]) if read_first else np.array([1e-6, 200e-6, 300e-6])
        sums, _, _ = _both(p, lay, ops, offs, [16384] * len(ops), times)
        assert float(sums["programs"][0]) == programs


@pytest.mark.validation  # fast tier: test_back_pressure's multi-plane programs and kept rewrites
def test_both_back_ends_merge_planes_and_keep_rewrites_alike():
    # MQSim's write-back on a loaded mixed stream over 3,000 logical pages (16 KiB pages, 4 planes):
    # reads of pages never written, rewrites within the window, writes of 1 to 64 pages (two a die on 32
    # dies) joining queued programs, in chunks; a configuration without either option beside
    rng = np.random.default_rng(17)
    n = 1500
    ops = (rng.random(n) < 0.6).astype(np.int64)
    offs = rng.integers(0, 3000, n) * 16384 + rng.choice([0, 4096], n)
    sizes = rng.choice([4096, 16384, 65536, 131072, 1 << 20], n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    times = np.cumsum(rng.exponential(15e-6, n))
    base = {"write_back": "eager", "inflight_kib": 512}
    p, lay, e = _batch([base | {"plane_merge": True, "rewrite_window_s": 1.0, "merge_dies": 2}, base])
    sums, _, _ = _both(p, lay, ops, offs, sizes, times, chunk=500, e=e)
    programs, pages = sums["programs"], sums["prog_pages"]
    assert programs[0] < pages[0] < pages[1]  # joined programs, kept rewrites


def test_back_ends_agree_over_chunks_on_drives_of_different_die_counts():
    # an 8-die drive that merges planes beside a 32-die one that does not (the layout is the larger's):
    # reads of 512 KiB of unwritten pages deal 32 pages over 8 dies, four rounds, every one moving a
    # plane's page number; the state (page counts and program starts) is handed on between chunks
    rng = np.random.default_rng(23)
    n = 600
    ops = (rng.random(n) < 0.5).astype(np.int64)
    offs = rng.integers(0, 4000, n) * 16384
    sizes = rng.choice([16384, 65536, 512 * 1024], n, p=[0.5, 0.3, 0.2])
    times = np.cumsum(rng.exponential(30e-6, n))
    small = dict(presets.drive("aldrin_pro_2tb")) | {"dies_per_channel": 1, "user_capacity_gb": 500.0}
    mqsim = {"write_back": "eager", "inflight_kib": 512, "plane_merge": True, "rewrite_window_s": 1.0}
    p, lay, e = _batch([mqsim, {"write_back": "eager"}], [small, presets.drive("aldrin_pro_2tb")])
    assert np.asarray(p.n_dies).tolist() == [8, 32] and lay.ways * lay.channels == 32
    sums, _, _ = _both(p, lay, ops, offs, sizes, times, chunk=128, e=e, jax_step=True)
    assert sums["programs"][0] < sums["prog_pages"][0]


def test_a_page_read_first_holds_no_program_a_later_page_could_join():
    # die 0 of 32 (4 planes, page 32 n on plane n mod 4): plane 0's pages 0-7 (the first starts at once,
    # the others queue), then plane 1's pages 0-7 (page number 0 finds plane 0's started, 1-7 join plane
    # 0's queued ones: 9 programs), then a read of a never-written plane-1 page takes plane 1's page number
    # 8, then plane 0's page number 8 is written: no program of page number 8 exists on plane 1 (the
    # ring slot the read's page number reuses held page number 0's program), so it is a program of its
    # own, with or without the read: 10 programs for 17 pages
    p, lay = _plan(write_back="eager", inflight_kib=1e6, plane_merge=True)
    for with_read in (False, True):
        ops = [1] * 16 + ([0] if with_read else []) + [1]
        offs = [32 * 4 * i * 16384 for i in range(8)] + [32 * (4 * i + 1) * 16384 for i in range(8)]
        offs += ([32 * (4 * 8 + 1) * 16384] if with_read else []) + [32 * 4 * 8 * 16384]
        sums, _, _ = _both(p, lay, ops, offs, [16384] * len(ops), np.arange(len(ops)) * 1e-6)
        assert float(sums["programs"][0]) == 10 and float(sums["prog_pages"][0]) == 17


def test_page_types_time_each_program_by_its_pages_index_in_its_block():
    # engine.page_types = mqsim on the file's TLC drive: 14 pages programmed one by one on plane 0 of die
    # 0 (no partner plane) take MQSim's page types by their index in the block: 0-5 LSB, 6-7 CSB, 8-9 LSB,
    # 10-11 CSB, 12-13 MSB; with factors 0.5, 1 and 2 that is 6 x 0.5 + 2 + 1 + 2 + 4 = 12 programs' time
    # against 14 at the mean, in both back ends (_both asserts they agree)
    n = 14
    offs = [32 * 4 * i * 16384 for i in range(n)]
    busy = {}
    for rule in ("mean", "mqsim"):
        p, lay = _plan(write_back="eager", inflight_kib=1e6, plane_merge=True, page_types=rule,
                       prog_lsb_factor=0.5, prog_csb_factor=1.0, prog_msb_factor=2.0)
        sums, _, _ = _both(p, lay, [1] * n, offs, [16384] * n, np.arange(n) * 1e-6)
        assert float(sums["programs"][0]) == n
        busy[rule] = float(np.asarray(sums["busy"])[:, 0].sum())
    assert busy["mqsim"] == pytest.approx(busy["mean"] * 12 / 14, rel=1e-9)


def test_a_read_lands_in_a_longer_program_than_the_mean_one():
    # renewal theory: a read arriving at random during back-to-back programs of lengths f x t lands in one
    # of mean length E[f^2] / E[f] x t; the plan's op_bias: TLC (0.25 + 1 + 4) / 3.5 = 1.5, MLC (LSB and
    # MSB) (0.25 + 4) / 2.5 = 1.7, 1 with the rule off (page_types = mean, or without plane_merge)
    from ssdx.models.engine.state import _op_bias

    def bias(rule: float) -> float:
        e = types.SimpleNamespace(prog_f0=np.float64(0.5), prog_f1=np.float64(1.0), prog_f2=np.float64(2.0),
                                  page_rule=np.float64(rule))
        return float(_op_bias(e))

    assert bias(3) == pytest.approx(1.5) and bias(2) == pytest.approx(1.7) and bias(0) == 1.0
    assert float(np.asarray(_plan(write_back="eager", page_types="mqsim")[0].page_rule).ravel()[0]) == 0
    assert float(np.asarray(_plan(write_back="eager", plane_merge=True, page_types="mqsim")[0].page_rule)
                 .ravel()[0]) == 3
