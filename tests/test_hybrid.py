"""SCM/NAND hybrid model (ssdx.models.hybrid.model): NV-WB against the exact reference, invariants, gathering,
timing closed forms and the relative-IOPS direction of Fukuchi et al."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from nvwb_reference import NvWb, replay

from ssdx import catalog
from ssdx.models.hybrid import model as hybrid
from ssdx.models.hybrid import params as hybrid_params
from ssdx.params import ConfigError, concat_columns

LINE = hybrid_params.UNIT_BYTES


def cols_for(n: int = 1, **over) -> dict[str, np.ndarray]:
    d = hybrid_params.defaults()
    d.update({k: v for k, v in over.items() if not isinstance(v, list)})
    base = hybrid_params.columns(d)
    rows = []
    for i in range(n):
        r = dict(base)
        for k, v in over.items():
            if isinstance(v, list):
                r[f"hybrid.{k}"] = np.asarray([v[i]], dtype=float if k in hybrid_params.OVERRIDES else None)
        rows.append(r)
    return concat_columns(rows)


#: layout sizes the tests' batches are widened to, so that they share compiled programs (dies, channels,
#: SCM banks and host slots a configuration does not use are masked out:
#: ``test_a_larger_layout_and_chunk_give_the_same_results``); SCM sets are rounded up to a power of two
SHARED_FLOOR = {"dies": 32, "slots": 64, "channels": 8, "banks": 64}


def build(cols, footprint_lines: int, shared: bool = True):
    """``hybrid.build`` of ``cols`` with every footprint ``footprint_lines`` lines; with ``shared`` on the
    layout widened to :data:`SHARED_FLOOR` and its sets to a power of two (at least 128)."""
    n = len(cols["hybrid.nand"])
    hp, lay = hybrid.build(cols, np.full(n, footprint_lines * LINE))
    if not shared:
        return hp, lay
    floor = SHARED_FLOOR | {"sets": max(128, 1 << (lay.sets - 1).bit_length())}
    return hybrid.build(cols, np.full(n, footprint_lines * LINE), floor=floor)


def random_requests(rng, n, span, read_fraction=0.5, max_lines=3, theta=None):
    if theta is None:
        start = rng.integers(0, span, n)
    else:  # skewed: power-law ranks over the span
        start = np.minimum((span * rng.random(n) ** (1 / (1 - theta))).astype(int), span - 1)
    k = rng.integers(1, max_lines + 1, n)
    op = np.where(rng.random(n) < read_fraction, hybrid.READ, hybrid.WRITE)
    return op, start * LINE, k * LINE


def run(hp, lay, lines, chunk_len=4096):
    return hybrid.simulate(hp, lay, lines, chunk_len=chunk_len)


def final_state(hp, lay, lines, chunk_len=4096):
    """Single-configuration final state and summed accumulators (no vmap)."""
    p = jax.tree_util.tree_map(lambda x: x[0], hp)
    s = hybrid.init(p, lay)
    total = None
    for lo in range(0, len(lines["op"]), chunk_len):
        chunk = hybrid.pad_lines({k: v[lo:lo + chunk_len] for k, v in lines.items()}, chunk_len)
        s, acc = jax.jit(hybrid.run_chunk, static_argnums=3)(p, s, chunk, lay)
        acc = {k: np.asarray(v, np.float64) for k, v in acc._asdict().items()}
        total = acc if total is None else {k: total[k] + acc[k] for k in acc}
    return s, total


def table_content(s, hp):
    tag, dirty = np.asarray(s.tag), np.asarray(s.dirty)
    resident = {int(t): bool(d) for t, d in zip(tag.ravel(), dirty.ravel()) if t >= 0}
    live = (np.asarray(s.gtag) >= 0) & (np.asarray(s.gunit) == int(s.unit_id))
    return resident, set(np.asarray(s.gtag)[live].tolist())


@pytest.mark.parametrize("policy", ["lru", "fifo", "cflru"])
@pytest.mark.parametrize("ways,unit_kib", [(64, 16), (8, 48)])
def test_model_equals_exact_reference(policy, ways, unit_kib):
    """Line for line: hits, NAND reads and programs, flushes and the final SCM content equal the plain
    Python NV-WB.  ways=64 over a 64-line SCM is one set: the fully associative cache of Fukuchi et al.
    The reference has no timing, so it cannot serve a read from flushed data still being programmed: the
    model counts such reads as hits (the NAND is made near-instant and the host waits for each request, so
    they are few) and inserts their lines as the reference's misses do, so the table stays equal."""
    rng = np.random.default_rng(1)
    op, off, size = random_requests(rng, 3000, 400, read_fraction=0.4, theta=0.6)
    lines = hybrid.lines_from_requests(op, off, size)
    cols = cols_for(ways=ways, victim=policy, scm_ratio=1.0, write_unit_kib=[unit_kib], queue_depth=1,
                    t_prog_us=[0.01], t_read_us=[0.01], t_erase_us=[0.01], bus_mts=1e5)
    hp, lay = build(cols, 64)
    s, acc = final_state(hp, lay, lines)
    ref = NvWb(sets=int(hp.sets[0]), ways=ways, limit=int(hp.limit[0]), unit=int(hp.unit[0]),
               gways=lay.gways, policy=policy)
    replay(ref, lines)
    assert int(hp.sets[0]) * ways == 64
    pend = acc["pending_hits"]
    assert acc["scm_hits"].tolist() == [ref.counts["hits_r"] + pend, ref.counts["hits_w"]]
    assert ref.counts["nand_reads"] - pend <= acc["nand_reads"] <= ref.counts["nand_reads"]
    for k in ("nand_programs", "flushes", "partial_flushes", "skipped"):
        assert acc[k] == ref.counts[k], k
    resident, gathering = table_content(s, hp)
    assert resident == {line: d for row in ref.rows for line, (_, d) in row.items()}
    assert gathering == set(ref.gathering)
    assert ref.counts["flushes"] > 20 and ref.counts["hits_r"] > 100  # the case exercises eviction and hits
    assert pend < 0.05 * ref.counts["hits_r"]


def test_set_associative_approximation_close_to_fully_associative():
    """The documented approximation: 16-way sets vs one fully associative LRU of the same capacity.
    On a skewed stream the SCM hit rate and NAND traffic agree within 2 % of the fully associative."""
    rng = np.random.default_rng(2)
    op, off, size = random_requests(rng, 8000, 8000, read_fraction=0.5, theta=0.8)
    lines = hybrid.lines_from_requests(op, off, size)
    cols = cols_for(ways=16, scm_ratio=0.1, nand="2d_fg_mlc", queue_depth=1, t_prog_us=[0.01],
                    t_read_us=[0.01], t_erase_us=[0.01], bus_mts=1e5)  # few reads of data in flight
    hp, lay = build(cols, 8192)
    out = run(hp, lay, lines)
    cap = int(hp.sets[0]) * 16
    exact = replay(NvWb(sets=1, ways=cap, limit=int(hp.limit[0]), unit=int(hp.unit[0]), gways=cap), lines)
    n_lines = len(lines["op"])
    exact_hit = (exact.counts["hits_r"] + exact.counts["hits_w"]) / n_lines
    table_hit = float(out["scm_hit_rate"][0]) - float(out["pending_read_hits"][0]) / n_lines
    assert table_hit == pytest.approx(exact_hit, rel=0.02)
    assert float(out["nand_writes"][0]) == pytest.approx(exact.counts["nand_programs"], rel=0.02)
    assert float(out["nand_reads"][0]) == pytest.approx(exact.counts["nand_reads"], rel=0.02)
    assert 0.2 < exact_hit < 0.9


def test_invariants_threshold_and_no_data_lost():
    """After every line the resident lines stay at or below the threshold limit and the gathering unit below
    a write unit; every written line ends in SCM (resident or gathering) or NAND, none twice."""
    rng = np.random.default_rng(3)
    op, off, size = random_requests(rng, 4000, 600, read_fraction=0.3, theta=0.5)
    lines = hybrid.lines_from_requests(op, off, size)
    cols = cols_for(ways=16, scm_ratio=0.25, nand="3d_ct_tlc")
    hp, lay = build(cols, 600)
    p = jax.tree_util.tree_map(lambda x: x[0], hp)
    chunk = hybrid.pad_lines(lines, len(lines["op"]))
    s, acc, ev = jax.jit(hybrid.trace, static_argnums=3)(p, hybrid.init(p, lay), chunk, lay)
    assert int(acc.skipped) == 0
    assert np.asarray(ev["resident"]).max() <= int(hp.limit[0])
    assert np.asarray(ev["gather"]).max() < int(hp.unit[0])
    assert int(np.asarray(ev["resident"]).max()) == int(hp.limit[0])  # the threshold was reached
    ref = replay(NvWb(sets=int(hp.sets[0]), ways=16, limit=int(hp.limit[0]), unit=int(hp.unit[0]),
                      gways=lay.gways), lines)
    resident, gathering = table_content(s, hp)  # the model's final SCM content, equal to the reference's
    assert resident == {x: d for row in ref.rows for x, (_, d) in row.items()}
    assert gathering == set(ref.gathering)
    written = set(lines["line"][lines["op"] == hybrid.WRITE].tolist())
    assert written <= set(resident) | gathering | ref.nand
    assert not (set(resident) & gathering)
    assert {x for x, d in resident.items() if d} <= written


def test_written_lines_conserved_and_gathered_in_write_units():
    """Distinct lines written once each: lines programmed + gathering + dirty resident = lines written, and
    every program is one whole write unit (no partial flush)."""
    n = 12000
    lines = hybrid.lines_from_requests(np.full(n, hybrid.WRITE), np.arange(n) * LINE, np.full(n, LINE))
    for unit_kib in (16, 48, 4096):
        cols = cols_for(ways=16, scm_ratio=1.0, nand="2d_fg_mlc", write_unit_kib=[unit_kib],
                        block_staging="whole")
        hp, lay = build(cols, 2048 * 4 if unit_kib == 4096 else 2048)
        s, acc = final_state(hp, lay, lines)
        unit = int(hp.unit[0])
        resident, gathering = table_content(s, hp)
        assert acc["partial_flushes"] == 0
        assert acc["nand_programs"] * 4 == acc["flushes"] * unit
        assert acc["nand_programs"] * 4 + len(gathering) + sum(resident.values()) == n
        assert acc["flushes"] >= 1


def test_no_scm_baseline_and_traffic_reduction():
    """Without SCM hits the NAND does exactly the no-SCM drive's page operations (reduction 0); the baseline
    charges a 12 KiB read one page, a 20 KiB read two, and 4 written lines one page."""
    lines = hybrid.lines_from_requests(np.array([hybrid.READ, hybrid.READ, hybrid.WRITE]),
                                       np.array([0, 100, 200]) * LINE, np.array([3, 5, 4]) * LINE)
    assert hybrid.no_scm_pages(lines, np.array([4.0])).tolist() == [1 + 2 + 1]
    rng = np.random.default_rng(7)
    n = 4000
    lines = hybrid.lines_from_requests(np.full(n, hybrid.READ), rng.permutation(100 * n)[:n] * 8 * LINE,
                                       np.full(n, 8 * LINE))
    hp, lay = build(cols_for(ways=16, scm_ratio=0.01), 800 * n)
    out = run(hp, lay, lines)
    assert float(out["scm_hit_rate"][0]) == 0.0
    assert float(out["nand_traffic_reduction"][0]) == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(out["nand_read_write_ratio"][0])  # nothing programmed: no ratio


def test_reads_after_writes_hit():
    n = 500
    line = np.repeat(np.arange(n), 2)
    op = np.tile([hybrid.WRITE, hybrid.READ], n)
    lines = hybrid.lines_from_requests(op, line * LINE, np.full(2 * n, LINE))
    hp, lay = build(cols_for(ways=16, scm_ratio=0.5), 1024)
    out = run(hp, lay, lines)
    assert float(out["scm_read_hit_rate"][0]) == 1.0
    assert float(out["nand_reads"][0]) == 0.0


@pytest.mark.parametrize("base", [0, 1 << 30, (1 << 31) - 10])
def test_victim_order_holds_at_any_clock(base):
    # ways: empty, clean (stamp +5), dirty (+1), dirty (+3), clean (+7); stamps near 2^31 once a drive
    # has served ~1e9 lines (a stamp offset used to overflow int32 there)
    stamp = jnp.asarray(np.array([0, 5, 1, 3, 7], np.int64) + base, jnp.int32)
    empty = jnp.asarray([True, False, False, False, False])
    dirty = jnp.asarray([False, False, True, True, False])
    vic = {name: int(jnp.argmin(hybrid.victim_key(jnp.int32(pol), stamp, dirty, empty)))
           for name, pol in (("lru", hybrid.LRU), ("fifo", hybrid.FIFO), ("cflru", hybrid.CFLRU))}
    assert vic == {"lru": 2, "fifo": 2, "cflru": 1}  # oldest; oldest clean
    all_dirty = jnp.asarray([False, True, True, True, True])
    assert int(jnp.argmin(hybrid.victim_key(jnp.int32(hybrid.CFLRU), stamp, all_dirty, empty))) == 2
    assert int(jnp.argmin(hybrid.victim_key(jnp.int32(hybrid.CFLRU), stamp, dirty, jnp.ones(5, bool)))) == 0


def test_space_time_matches_brute_force():
    rng = np.random.default_rng(4)
    for _ in range(50):
        f = np.where(rng.random(16) < 0.3, -rng.random(16), rng.random(16) * 5)
        rate, room = 2.0 + rng.random(), rng.random() * 20
        t = float(hybrid.space_time(jnp.asarray(f), jnp.asarray(rate), jnp.asarray(room)))
        def held(x, f=f, rate=rate):
            return rate * np.maximum(f - x, 0).sum()

        assert held(t) <= room * (1 + 1e-5) + 1e-5
        if t > 1e-6:
            assert held(t - 1e-3) > room


def test_qd1_latencies_are_the_sum_of_their_parts():
    """One 4 KiB read miss at QD1: command + t_R + channel + link; then a read hit: command + 8 sectors of
    SCM + link; a write: command + link + 8 sectors (SCM empty, no stall)."""
    for interface in ("pcie3x4", "none"):  # no host link: no command overhead, no transfer to the host
        cols = cols_for(ways=16, scm_ratio=0.5, nand="3d_ct_tlc", queue_depth=1, interface=interface)
        hp, lay = build(cols, 4096)
        p = jax.tree_util.tree_map(lambda x: float(x[0]), hp)
        if interface == "none":
            cmd = link = 0.0
        else:
            iface = catalog.interface(interface)
            cmd, link = iface.cmd_overhead_us * 1e-6, LINE / iface.usable_bytes_per_s
        for ops, expect in (([hybrid.READ], cmd + p.t_read + p.chan_unit + link),
                            ([hybrid.WRITE, hybrid.READ], cmd + 8 * 100e-9 + link),
                            ([hybrid.WRITE], cmd + link + 8 * 100e-9)):
            lines = hybrid.lines_from_requests(np.asarray(ops), np.zeros(len(ops), int),
                                               np.full(len(ops), LINE), measure_from=len(ops) - 1)
            out = run(hp, lay, lines)
            assert float(out["latency_mean_us"][0]) == pytest.approx(1e6 * expect, rel=1e-4), interface


def test_write_saturation_runs_at_the_die_program_rate_and_ct_beats_mlc():
    """Distinct 16 KiB writes at QD32 once SCM is full: IOPS = dies x page / t_page (program + GC) within
    3 %, so 3D CT TLC beats 2D FG MLC by their t_page ratio (Fukuchi et al.: write-heavy → 3D CT TLC).
    2D FG TLC's block write unit, programmed progressively (an open block per die, word line by word line),
    keeps all 4 dies busy too; staged whole in SCM, the threshold space (1200 lines) holds little more than
    one 4 MiB block (1024 lines), freed as its pages program, so only between one and two dies work."""
    n = 30000
    lines = hybrid.lines_from_requests(np.full(n, hybrid.WRITE), np.arange(n) * 4 * LINE,
                                       np.full(n, 4 * LINE), measure_from=n // 2)
    cases = [("2d_fg_mlc", "progressive"), ("3d_ct_tlc", "progressive"), ("2d_fg_tlc", "progressive"),
             ("2d_fg_tlc", "whole")]
    cols = concat_columns([cols_for(ways=16, scm_ratio=0.05, nand=x, queue_depth=32, channels=2,
                                    dies_per_channel=2, block_staging=b) for x, b in cases])
    hp, lay = build(cols, 4 * n)
    assert np.asarray(hp.unit).tolist() == [4, 12, 12, 1024]  # page, word line, word line, block
    out = run(hp, lay, lines, chunk_len=8192)
    expect = 4 / np.asarray(hp.t_page, np.float64)  # 4 dies, one 16 KiB page per request
    np.testing.assert_allclose(out["iops"][:3], expect[:3], rtol=0.03)
    assert out["iops"][1] > out["iops"][0] > out["iops"][2]
    assert float(expect[3]) / 4 < float(out["iops"][3]) < 2 * float(expect[3]) / 4
    np.testing.assert_allclose(out["die_utilisation"][:3], 1.0, atol=0.04)
    assert (out["bottleneck"][:3] == hybrid.RESOURCES.index("die")).all()


def test_write_after_a_read_miss_does_not_wait_for_the_copy_in():
    """A 4 KiB write issued just after a read miss to an idle die: the miss's copy into SCM and its link
    transfer happen once the NAND data arrives (~80 µs later); the write needs the link and SCM now, and
    takes what it takes alone (command + link + 8 sectors), not the miss's latency."""
    cols = cols_for(ways=16, scm_ratio=0.5, nand="3d_ct_tlc", queue_depth=2, interface="pcie3x4")
    hp, lay = build(cols, 4096)
    iface = catalog.interface("pcie3x4")
    alone = 1e6 * (iface.cmd_overhead_us * 1e-6 + LINE / iface.usable_bytes_per_s + 8 * 100e-9)
    for ops in ([hybrid.WRITE], [hybrid.READ, hybrid.WRITE]):
        lines = hybrid.lines_from_requests(np.asarray(ops), np.arange(len(ops)) * 100 * LINE,
                                           np.full(len(ops), LINE), measure_from=len(ops) - 1)
        out = run(hp, lay, lines)
        assert float(out["write_latency_mean_us"][0]) == pytest.approx(alone, rel=1e-4), ops


def test_read_misses_share_their_channel():
    """Read misses spread over 8 dies on one slow channel (50 MT/s: 82 µs per 4 KiB line against 8 dies /
    76 µs): the channel bounds IOPS at bus rate / 4 KiB within 3 %, and is reported as the bottleneck."""
    rng = np.random.default_rng(8)
    n = 6000
    lines = hybrid.lines_from_requests(np.full(n, hybrid.READ), rng.permutation(50 * n)[:n] * 4 * LINE,
                                       np.full(n, LINE), measure_from=1000)
    cols = cols_for(ways=16, scm_ratio=0.01, nand="3d_ct_tlc", queue_depth=32, channels=1,
                    dies_per_channel=8, bus_mts=50.0)
    hp, lay = build(cols, 200 * n)
    out = run(hp, lay, lines)
    assert float(out["iops"][0]) == pytest.approx(50e6 / LINE, rel=0.03)
    assert float(out["channel_utilisation"][0]) == pytest.approx(1.0, abs=0.03)
    assert int(out["bottleneck"][0]) == hybrid.RESOURCES.index("channel")


def test_scm_banks_serve_hits_in_parallel():
    """4 KiB read hits over a PCIe 5.0 x4 link (0.29 µs per line): one SCM bank (0.8 µs per line) bounds
    IOPS at 1 / 0.8 µs; two banks, interleaved by line, double it."""
    n = 4000
    line = np.arange(n) % 256
    lines = hybrid.lines_from_requests(np.where(np.arange(n) < 256, hybrid.WRITE, hybrid.READ), line * LINE,
                                       np.full(n, LINE), measure_from=1000)
    cols = concat_columns([cols_for(ways=16, scm_ratio=1.0, interface="pcie5x4", queue_depth=32,
                                    scm_banks=b) for b in (1, 2)])
    hp, lay = build(cols, 1024)
    out = run(hp, lay, lines)
    assert float(out["scm_read_hit_rate"][0]) == 1.0
    np.testing.assert_allclose(out["iops"], [1 / 0.8e-6, 2 / 0.8e-6], rtol=0.03)
    assert int(out["bottleneck"][0]) == hybrid.RESOURCES.index("scm")
    assert float(out["scm_utilisation"][1]) == pytest.approx(1.0, abs=0.03)


def test_steady_state_check_compares_the_halves():
    """A stationary stream has equal halves (steady); one whose second half turns from SCM hits to read
    misses does not, and says so (the dies, idle in the first half, carry the second)."""
    n = 8000
    rng = np.random.default_rng(9)
    warm = np.arange(n) % 128
    miss = rng.permutation(100 * n)[:n] + 1000
    for second, steady in ((warm, True), (miss, False)):
        line = np.concatenate([np.arange(128), warm, second])
        op = np.concatenate([np.full(128, hybrid.WRITE), np.full(2 * n, hybrid.READ)])
        lines = hybrid.lines_from_requests(op, line * LINE, np.full(len(op), LINE), measure_from=128 + n // 2)
        hp, lay = build(cols_for(ways=16, scm_ratio=0.5, queue_depth=8), 1024)
        out = run(hp, lay, lines)
        assert bool(out["steady"][0]) == steady
        if steady:
            assert abs(float(out["steady_change"][0])) < 0.01
        else:
            assert abs(float(out["steady_change"][0])) > 0.5 and not bool(out["overbooked"][0])
            assert float(out["iops_change"][0]) < -0.5


def test_scm_sized_against_the_footprint_or_the_nand():
    cols = concat_columns([cols_for(scm_ratio=0.1, scm_basis="footprint"),
                           cols_for(scm_ratio=0.015, scm_basis="nand", nand_capacity_gib=128.0)])
    cap = hybrid_params.capacity_lines(cols, np.full(2, 2.0**30))
    assert cap.tolist() == [int(np.ceil(0.1 * 2**30 / LINE / 16)) * 16,
                            int(np.ceil(0.015 * 128 * 2**30 / LINE / 16)) * 16]


def test_read_misses_make_mlc_best():
    """A read-only stream over a footprint far above the SCM: every line misses, the dies bound IOPS at
    dies / t_R (one die per 1,600 MT/s channel, so the buses are not the limit): 2D FG MLC (44 µs) beats
    3D CT TLC (76 µs) by their read-time ratio within 3 %."""
    rng = np.random.default_rng(5)
    n = 20000
    lines = hybrid.lines_from_requests(np.full(n, hybrid.READ), rng.permutation(10 * n)[:n] * 4 * LINE,
                                       np.full(n, 4 * LINE), measure_from=2000)
    cols = concat_columns([cols_for(ways=16, scm_ratio=0.01, nand=x, queue_depth=64, channels=4,
                                    dies_per_channel=1, bus_mts=1600.0) for x in ("2d_fg_mlc", "3d_ct_tlc")])
    hp, lay = build(cols, 40 * n)
    out = run(hp, lay, lines, chunk_len=8192)
    assert float(out["scm_read_hit_rate"][0]) < 0.01
    assert (out["bottleneck"] == hybrid.RESOURCES.index("die")).all()
    assert out["iops"][0] / out["iops"][1] == pytest.approx(76.0 / 44.0, rel=0.03)


def test_batch_equals_single_runs():
    rng = np.random.default_rng(6)
    op, off, size = random_requests(rng, 3000, 3000, theta=0.7)
    lines = hybrid.lines_from_requests(op, off, size, measure_from=500)
    rows = [cols_for(ways=16, nand=n, scm_ratio=r) for n, r in (("2d_fg_mlc", 0.2), ("3d_ct_tlc", 0.4))]
    hp, lay = build(concat_columns(rows), 3000)
    batch = run(hp, lay, lines, chunk_len=1000)
    for i, r in enumerate(rows):
        hp1, _ = build(r, 3000)
        single = run(hp1, lay, lines, chunk_len=3000)  # same layout, another chunking
        for k in ("iops", "scm_hit_rate", "nand_reads", "nand_writes", "latency_mean_us"):
            assert float(batch[k][i]) == pytest.approx(float(single[k][0]), rel=1e-5), k


def test_a_larger_layout_and_chunk_give_the_same_results():
    # a sweep runs every workload group on its largest layout (more sets, dies, host slots, channels and
    # SCM banks than a configuration uses are masked out) and pads a short stream's chunk to a power of two
    rng = np.random.default_rng(8)
    op, off, size = random_requests(rng, 1500, 2000, theta=0.6)
    lines = hybrid.lines_from_requests(op, off, size, measure_from=300)
    cols = cols_for(ways=16, scm_ratio=0.2, channels=2, dies_per_channel=2, scm_banks=2, queue_depth=4)
    hp, lay = build(cols, 2000, shared=False)
    floor = {"sets": 4 * lay.sets, "dies": 16, "slots": 32, "channels": 8, "banks": 32, "ways": 1}
    hp2, big = hybrid.build(cols, [2000 * LINE], floor=floor)
    assert big == lay._replace(sets=4 * lay.sets, dies=16, slots=32, channels=8, banks=32)  # not ways
    small, large = run(hp, lay, lines, chunk_len=1500), run(hp2, big, lines, chunk_len=1500)
    for k in ("iops", "scm_hit_rate", "nand_reads", "nand_writes", "latency_mean_us", "die_utilisation_max",
              "pending_read_hits", "suspensions_per_nand_read"):
        np.testing.assert_array_equal(large[k], small[k], err_msg=k)
    assert hybrid.chunk_length(1500) == 2048 and hybrid.chunk_length(10) == hybrid.MIN_CHUNK_LINES
    assert hybrid.chunk_length(10**6) == hybrid.CHUNK_LINES and hybrid.chunk_length(1500, 1000) == 1000


def test_a_build_checks_the_rules_once(monkeypatch):
    calls = []
    check = hybrid_params.validate
    monkeypatch.setattr(hybrid_params, "validate", lambda *a, **k: calls.append(a) or check(*a, **k))
    hybrid.build(cols_for(), [1e9])
    assert len(calls) == 1  # before the garbage collection cost, not again in params.build
    hybrid.build(cols_for(), [1e9], checked=True)  # the caller has checked them
    assert len(calls) == 1
    with pytest.raises(ConfigError, match="hybrid.scm_banks"):  # checked before anything is computed
        hybrid.build(cols_for(scm_banks=0), [1e9])


def test_bad_values_name_the_field():
    with pytest.raises(ConfigError, match="hybrid.scm_ratio"):  # 25 MB blocks cannot gather in 20 % of 8 MB
        hybrid.build(cols_for(nand="3d_fg_tlc", scm_ratio=0.01, block_staging="whole"), [800e6])
    hybrid.build(cols_for(nand="3d_fg_tlc", scm_ratio=0.01), [800e6])  # word lines do
    with pytest.raises(ConfigError, match="hybrid.block_staging"):
        hybrid.build(cols_for(block_staging="partial"), [1e9])
    with pytest.raises(ConfigError, match="hybrid.scm_basis"):
        hybrid.build(cols_for(scm_basis="dram"), [1e9])
    with pytest.raises(ConfigError, match="hybrid.scm_banks"):
        hybrid.build(cols_for(scm_banks=0), [1e9])
    with pytest.raises(ConfigError, match="hybrid.victim"):
        hybrid.build(cols_for(victim="random"), [1e9])
    with pytest.raises(ConfigError, match="hybrid.write_unit_kib"):
        hybrid.build(cols_for(write_unit_kib=[6.0]), [1e9])
    with pytest.raises(ConfigError, match="hybrid.threshold"):
        hybrid.build(cols_for(threshold=1.0), [1e9])


def test_the_host_link_is_full_duplex():
    """64 KiB reads and writes of lines SCM holds, alternating, at QD32 over PCIe 3.0 x4 with SCM banks to
    spare: each direction carries its own 3.5 GB/s, so the drive moves twice one direction's rate; booked
    on one shared link it would move half that."""
    n, size = 6000, 16 * LINE
    line = (np.arange(n) % 64) * 16
    op = np.where(np.arange(n) % 2 == 0, hybrid.READ, hybrid.WRITE)
    op[:64] = hybrid.WRITE
    lines = hybrid.lines_from_requests(op, line * LINE, np.full(n, size), measure_from=1000)
    cols = cols_for(ways=16, scm_ratio=1.0, interface="pcie3x4", queue_depth=32, scm_banks=64)
    hp, lay = build(cols, 2048)
    out = run(hp, lay, lines)
    rate = catalog.interface("pcie3x4").usable_bytes_per_s
    assert float(out["scm_hit_rate"][0]) == 1.0
    assert float(out["iops"][0]) * size == pytest.approx(2 * rate, rel=0.03)
    assert float(out["link_read_utilisation"][0]) == pytest.approx(1.0, abs=0.03)
    assert float(out["link_write_utilisation"][0]) == pytest.approx(1.0, abs=0.03)
    assert int(out["bottleneck"][0]) == hybrid.RESOURCES.index("link")


def _die(**over):
    base = {"read_priority": 1.0, "max_suspends": 1, "t_read": 50e-6, "t_resume": 24e-6}
    base.update(over)
    return type("P", (), {k: jnp.asarray(v) for k, v in base.items()})()


def test_a_read_suspends_a_program_a_bounded_number_of_times():
    """A program booked to end at 3 ms: the first read at 1 ms suspends it (the program ends t_R + resume
    later); a second read at 2 ms finds its one suspension spent and waits for it to end, then goes before
    the programs queued behind it.  With no bound left (0) the first read waits too; FIFO waits for all
    booked work; one suspension per ISPP step (-1) lets both through."""
    f = lambda x: float(x)  # noqa: E731
    prog = {"die_free": jnp.asarray(6e-3), "die_r": jnp.asarray(0.0), "op_end": jnp.asarray(3e-3),
            "op_len": jnp.asarray(3e-3), "susp": jnp.asarray(0, jnp.int32)}
    a = hybrid.read_slot(_die(), jnp.asarray(1e-3), **prog)
    assert bool(a["suspend"]) and f(a["start"]) == pytest.approx(1e-3)
    assert f(a["die_free"]) == pytest.approx(6e-3 + 74e-6) and f(a["op_end"]) == pytest.approx(3.074e-3)
    assert int(a["susp"]) == 1 and f(a["extra"]) == pytest.approx(24e-6)
    b = hybrid.read_slot(_die(), jnp.asarray(2e-3), die_free=a["die_free"], die_r=jnp.asarray(1.05e-3),
                         op_end=a["op_end"], op_len=prog["op_len"], susp=a["susp"])
    assert bool(b["wait"]) and not bool(b["suspend"])
    assert f(b["start"]) == pytest.approx(3.074e-3)  # the end of the suspended program
    assert f(b["die_free"]) == pytest.approx(6e-3 + 74e-6 + 50e-6)  # the queued program moves by t_R
    assert int(b["susp"]) == 0 and f(b["op_end"]) == pytest.approx(3.074e-3 + 50e-6 + 3e-3)
    c = hybrid.read_slot(_die(max_suspends=0), jnp.asarray(1e-3), **prog)
    assert bool(c["wait"]) and f(c["start"]) == pytest.approx(3e-3)
    d = hybrid.read_slot(_die(read_priority=0.0), jnp.asarray(1e-3), **prog)
    assert f(d["start"]) == pytest.approx(6e-3) and not bool(d["suspend"])
    e = hybrid.read_slot(_die(max_suspends=-1), jnp.asarray(2e-3), die_free=a["die_free"],
                         die_r=jnp.asarray(1.05e-3), op_end=a["op_end"], op_len=prog["op_len"],
                         susp=a["susp"])
    assert bool(e["suspend"]) and int(e["susp"]) == 2  # 3 ms / 44 µs = 69 ISPP steps
    # a read while a program queued behind the first runs: found by whole program lengths
    g = hybrid.read_slot(_die(), jnp.asarray(4e-3), **prog)
    assert bool(g["suspend"]) and f(g["op_end"]) == pytest.approx(6e-3 + 74e-6)


def test_reads_of_flushed_data_not_yet_programmed_hit_scm():
    """Distinct 4 KiB writes at QD1 fill SCM and push dirty lines out; their 16 KiB pages go to the dies
    (1.2 ms each).  A read of the first line pushed out, microseconds later, finds it still in SCM waiting
    for its program: a hit, served in SCM time, and no NAND read."""
    cap = 256
    w = cap + 64  # ~100 dirty lines pushed out: 25 pages over 32 dies, each 1.2 ms
    op = np.r_[np.full(w, hybrid.WRITE), hybrid.READ]
    line = np.r_[np.arange(w), 0]
    lines = hybrid.lines_from_requests(op, line * LINE, np.full(len(op), LINE), measure_from=w)
    cols = cols_for(ways=cap, scm_ratio=cap / 4096, nand="2d_fg_mlc", queue_depth=1)
    hp, lay = build(cols, 4096)
    assert int(hp.sets[0]) == 1
    out = run(hp, lay, lines)
    assert float(out["pending_read_hits"][0]) == 1.0 and float(out["nand_reads"][0]) == 0.0
    assert float(out["latency_mean_us"][0]) == pytest.approx(8 * 0.1, rel=1e-4)


def test_the_warm_up_counts_flush_work_only():
    """100 one-line writes into an SCM of 50 lines, then 300 one-line reads of new lines: the writes push
    out 50 dirty lines, the first 50 reads the other 50, and every later read only clean ones.  Settling
    4 threshold spaces of 10 lines takes 90 requests from the start and 40 from the first read; from
    request 150 on nothing more is flushed, so only the cap ends it, and the threshold space never cycles."""
    from ssdx.models.hybrid import jobs

    line = np.r_[np.arange(100), np.arange(100, 400)]
    op = np.r_[np.full(100, hybrid.WRITE), np.full(300, hybrid.READ)]
    first = np.ones(400, bool)
    assert jobs.settle_requests(line, op, 0, first, 50, 10.0, 4.0, 1000) == (90, True)
    assert jobs.settle_requests(line, op, 100, first, 50, 10.0, 4.0, 1000) == (40, True)
    assert jobs.settle_requests(line, op, 150, first, 50, 10.0, 4.0, 200) == (200, False)
    assert jobs.settle_requests(line, op, 150, first, 50, 10.0, 4.0, 1000) == (None, False)
