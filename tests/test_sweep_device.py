"""Sweeps generated from the configuration index and reduced on the device (``ssdx.sweep.device``)."""

import json

import jax
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ssdx import catalog, params, presets
from ssdx.params import ConfigError
from ssdx.sweep import device, space
from ssdx.sweep.job import run_sweep, sweep_base

BASE = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
        "model": {"n_steps": 32}, "precision": "float32"}

#: every reduction, keyed by metrics and by configuration columns
KEEP = {"top_k": {"k": 4, "by": "time_s", "group_by": ["drive.nand", "drive.slc_mode"], "ascending": True},
        "pareto": {"x": "drive.static_slc_gb", "x_better": "min", "y": "mean_mb_s", "y_better": "max"},
        "histograms": {"metrics": ["mean_mb_s", "drive.fold_efficiency"], "bins": 16,
                       "group_by": ["drive.dies_per_channel"],
                       "range": {"mean_mb_s": [100.0, 5000.0], "drive.fold_efficiency": [0.4, 1.0]},
                       "log": ["mean_mb_s"], "quantiles": [0.1, 0.5, 0.99]}}


def _sweep(keep=KEEP, chunk=97, generate="device", on_invalid="drop") -> dict:
    """Two concatenated mappings (grid x Sobol, grid x list x random), with infeasible capacities."""
    return {"name": "dev", "chunk_size": chunk, "on_invalid": on_invalid, "keep": keep, "generate": generate,
            "space": [
                {"grid": {"drive.slc_mode": ["dynamic", "static", "hybrid"],
                          "drive.nand": ["tlc", "qlc", "2d_fg_mlc"],
                          "drive.dies_per_channel": [2, 4],
                          "drive.user_capacity_gb": [1000.0, 4000.0]},
                 "sobol": {"n": 8, "seed": 3, "params": {
                     "drive.static_slc_gb": {"low": 4.0, "high": 64.0, "log": True},
                     "drive.fold_efficiency": {"low": 0.4, "high": 1.0}}}},
                {"grid": {"drive.slc_mode": ["pure_native"], "drive.nand": ["tlc", "qlc"]},
                 "list": [{"drive.dies_per_channel": 2, "drive.user_capacity_gb": 500.0},
                          {"drive.dies_per_channel": 4, "drive.user_capacity_gb": 8000.0}],
                 "random": {"n": 5, "seed": 1, "params": {
                     "workload.prefill_fraction": {"low": 0.0, "high": 0.9},
                     "drive.fold_efficiency": {"low": 0.3, "high": 1.0}}}},
            ]}


def _outputs(d) -> tuple:
    return ({f: pq.read_table(d / f).to_pandas() for f in ("top_k.parquet", "pareto.parquet")},
            json.loads((d / "histograms.json").read_text()))


# chunks of 13 (many, the last one short) in the fast tier, as the tests below compile them; one large
# chunk and another short last one in the full validation
@pytest.mark.parametrize("chunk", [13, pytest.param(97, marks=pytest.mark.validation),
                                   pytest.param(1000, marks=pytest.mark.validation)])
def test_device_and_host_give_the_same_outputs_and_counts(tmp_path, chunk):
    host = run_sweep(_sweep(generate="host"), BASE, tmp_path / "host", progress=False)
    want = _outputs(tmp_path / "host")
    d = tmp_path / f"dev{chunk}"
    dev = run_sweep(_sweep(chunk=chunk), BASE, d, progress=False)
    assert dev["generated_on"] == "device"
    for k in ("n_configs", "n_defined", "n_dropped", "dropped_rules", "n_infeasible_by_rule"):
        assert dev[k] == host[k], k
    got = _outputs(d)
    for f in want[0]:
        pd.testing.assert_frame_equal(got[0][f], want[0][f], check_exact=True)
    assert got[1] == want[1]
    assert host["n_dropped"] > 0 and host["n_configs"] > 100
    assert len(want[0]["top_k.parquet"]) > 10 and len(want[1]["groups"]) == 2


def test_auto_histogram_ranges_are_the_same_on_the_device_and_the_host(tmp_path):
    """A histogram without a declared range takes it from the pilot sample, which both paths run on the
    host the same way (infeasible configurations left out): the same edges, counts and quantiles.  With 120
    bins the device places a metric's values by the estimate from the edges' spacing."""
    keep = {"histograms": {"metrics": ["mean_mb_s", "drive.static_slc_gb"], "bins": 120, "log": ["mean_mb_s"],
                           "group_by": ["drive.nand"], "quantiles": [0.25, 0.75]}}
    host = run_sweep(_sweep(keep, generate="host"), BASE, tmp_path / "host", progress=False)
    dev = run_sweep(_sweep(keep, chunk=64), BASE, tmp_path / "dev", progress=False)
    assert dev["generated_on"] == "device" and dev["n_configs"] == host["n_configs"]
    h, d = (json.loads((tmp_path / k / "histograms.json").read_text()) for k in ("host", "dev"))
    assert d == h and h["range_from"]["mean_mb_s"].startswith("pilot sample of")
    assert sum(sum(g["counts"]["mean_mb_s"]) for g in h["groups"]) == host["n_configs"]


def test_two_chunks_in_flight_on_one_device_give_the_same_outputs(tmp_path):
    """On an accelerator two chunks run at once per device (their results arrive in any order); forced
    here on the CPU, the device and host paths' outputs equal those of one chunk at a time."""
    from ssdx.sweep import executors

    for generate in ("device", "host"):
        one = run_sweep(_sweep(chunk=13, generate=generate), BASE, tmp_path / f"{generate}1", progress=False,
                        executor=executors.LocalExecutor(1, in_flight=1))
        two = run_sweep(_sweep(chunk=13, generate=generate), BASE, tmp_path / f"{generate}2", progress=False,
                        executor=executors.LocalExecutor(1, in_flight=2))
        assert one["n_infeasible_by_rule"] == two["n_infeasible_by_rule"] and one["n_configs"] > 100
        assert (one["runner"]["in_flight"], two["runner"]["in_flight"]) == (1, 2)
        want, got = _outputs(tmp_path / f"{generate}1"), _outputs(tmp_path / f"{generate}2")
        for f in want[0]:
            pd.testing.assert_frame_equal(got[0][f], want[0][f], check_exact=True)
        assert got[1] == want[1]


def test_an_accelerator_runs_device_sweeps_in_large_chunks_unless_the_runner_says():
    from ssdx.sweep.job import ACCELERATOR_CHUNK, device_chunk

    sweep = {"chunk_size": 4096}
    assert device_chunk(sweep, None, 10**9, "cpu") == 4096
    assert device_chunk(sweep, None, 10**9, "gpu") == ACCELERATOR_CHUNK
    assert device_chunk(sweep, None, 5000, "gpu") == 5000  # never more than the sweep
    assert device_chunk(sweep, 8192, 10**9, "gpu") == 8192  # the runner's chunk_size is kept
    assert device_chunk({"chunk_size": 1 << 22}, None, 10**9, "gpu") == 1 << 22
    with pytest.raises(ConfigError, match="sweep.chunk_size"):
        device_chunk({"chunk_size": 0}, None, 10, "gpu")


def test_rows_are_the_same_whether_or_not_the_model_runs_again_for_them(tmp_path):
    """A chunk whose reductions read only some metrics runs the model again on the kept configurations for
    their rows; one whose reductions read every metric takes the rows from its one run.  Both give the
    host path's outputs."""
    from ssdx.core import registry
    from ssdx.sweep import reduce

    metrics = list(registry.SWEEP_MODELS["fluid"].metrics)
    every = {"top_k": KEEP["top_k"], "pareto": KEEP["pareto"],
             "histograms": {"metrics": metrics, "bins": 4, "range": {m: [-1e9, 1e9] for m in metrics}}}
    assert set(metrics) <= set(reduce.columns_needed(reduce.parse(every)))
    assert not set(metrics) <= set(reduce.columns_needed(reduce.parse(KEEP)))
    run_sweep(_sweep(keep=every, generate="host"), BASE, tmp_path / "h", progress=False)
    run_sweep(_sweep(keep=every, chunk=31), BASE, tmp_path / "d", progress=False)
    want, got = _outputs(tmp_path / "h"), _outputs(tmp_path / "d")
    for f in want[0]:
        pd.testing.assert_frame_equal(got[0][f], want[0][f], check_exact=True)
    assert got[1] == want[1]


def test_a_chunk_returns_few_pareto_places_when_small():
    """Every returned Pareto place is a configuration the model runs again: a small chunk returns a
    power of two of at most 1/32 of it (at least 256), a large one PARETO_CAPACITY."""
    from ssdx.sweep import device_run

    for chunk in (1, 97, 8191, 32768, 100_000, 1 << 20, 1 << 23):
        c = device_run.first_capacity(chunk)
        assert c & (c - 1) == 0 and 256 <= c <= device_run.PARETO_CAPACITY
        assert c <= max(256, chunk // 32)
    assert device_run.first_capacity(1 << 23) == device_run.PARETO_CAPACITY


def test_chunks_are_aligned_balanced_and_never_larger_than_asked():
    """A chunk runs at most the asked size, as few chunks as multiples of 8 allow (an odd length runs
    XLA's CPU loops with a scalar tail), balanced, and whole top-k blocks where that takes no more."""
    from ssdx.sweep import device_run

    block, small = device_run.TOP_K_BLOCK, device_run.SMALL_ALIGN
    assert device_run.part_chunk(99_998_400, 1 << 20) == 1018 * block  # balanced 1,041,650, rounded up
    assert device_run.part_chunk(5, 3) == 3  # below the alignment: balanced only
    rng = np.random.default_rng(0)
    sizes = [*rng.integers(1, 10**9, 300), *rng.integers(1, 5000, 300)]
    chunks = [*rng.integers(8, 1 << 22, 300), *rng.integers(8, 3000, 300)]
    for size, chunk in zip(map(int, sizes), map(int, chunks), strict=True):
        step = device_run.part_chunk(size, chunk)
        n = -(-size // step)
        assert 0 < step <= chunk and step % small == 0, (size, chunk, step)
        assert n == -(-size // (chunk // small * small)), (size, chunk, step)
        # balanced: no more than the alignment above an even share of the part
        assert step - -(-size // n) < (block if step % block == 0 else small), (size, chunk, step)
        if chunk >= block and -(-size // (chunk // block * block)) == n:
            assert step % block == 0, (size, chunk, step)


def test_rules_are_counted_from_the_tables_exactly():
    sweep = _sweep()
    base = sweep_base(sweep, BASE)
    ds = device.DeviceSpace(base, sweep, {"histograms": KEEP["histograms"], "all": False}, ["mean_mb_s"])
    cols = space.sweep_rows(base, sweep)
    ok, broken = params.valid_rows(cols)
    assert ds.dropped() == broken and ds.n == len(ok)
    idx = np.random.default_rng(0).integers(0, ds.n, 300)
    rows = ds.rows(idx)
    for k, v in cols.items():
        assert rows[k].dtype == v.dtype
        np.testing.assert_array_equal(rows[k], v[idx])


def test_every_leaf_and_rule_reads_only_its_declared_columns():
    """Perturb one column at a time: a leaf or a rule that does not declare it must not move."""
    rng = np.random.default_rng(7)
    choices = {"drive.nand": sorted(catalog.NAND), "nand.name": ["", *sorted(catalog.NAND)],
               "drive.interface": sorted(catalog.INTERFACES), "drive.slc_mode": list(params.SLC_MODES),
               "workload.pattern": list(params.PATTERNS), "drive.dram": [True, False],
               "drive.fold_while_writing": [False, True], "drive.paced_folding": [False, True]}
    numeric = {"drive.channels": [4, 8, 16], "drive.dies_per_channel": [1, 2, 8],
               "drive.die_gbit": [256, 1024], "drive.planes_per_die": [2, 4], "drive.bus_mts": [800, 1600],
               "drive.user_capacity_gb": [250.0, 4000.0],
               "drive.static_slc_gb": [0.0, 12.0], "drive.max_dynamic_slc_gb": [0.0, 100.0],
               "drive.idle_fold_mb_s": [0.0, 300.0], "drive.reserve_fraction": [0.005, 0.2],
               "drive.first_slc_t_prog_us": [0.0, 120.0], "drive.first_slc_gb": [0.0, 5.0],
               "drive.bus_efficiency": [0.5, 0.9], "drive.fold_efficiency": [0.4, 0.9],
               "workload.block_kib": [4, 128], "workload.queue_depth": [1, 32],
               "workload.prefill_fraction": [0.0, 0.5], "workload.fill_fraction": [0.3, 1.0],
               "workload.burst_gb": [0.0, 5.0], "workload.idle_s": [0.0, 2.0],
               **{f"nand.{f}": [np.nan, v] for f, v in (("t_prog_us", 900.0), ("t_read_us", 60.0),
                                                       ("t_erase_us", 4000.0), ("t_prog_slc_us", 150.0),
                                                       ("t_read_slc_us", 30.0), ("bits_per_cell", 3.0),
                                                       ("page_kib", 16.0), ("block_pages", 1152.0),
                                                       ("write_unit_kib", 48.0))}}
    pool = {**choices, **numeric}
    base = params.columns_from_config(presets.drive(), presets.workload(), None)
    assert set(pool) == set(base)
    n = 64
    typed = lambda k, a: np.asarray(a) if base[k].dtype.kind == "U" else np.asarray(a).astype(base[k].dtype)  # noqa: E731
    cols = {k: typed(k, [pool[k][i] for i in rng.integers(0, len(pool[k]), n)]) for k in base}
    names = device.leaf_names(params.assemble(cols))
    leaves = dict(zip(names, jax.tree_util.tree_leaves(params.assemble(cols)), strict=True))
    report: list = []
    params.validate(cols, report)
    for c, values in pool.items():
        moved = {k: v.copy() for k, v in cols.items()}
        moved[c] = typed(c, [values[(values.index(x) + 1) % len(values)] if x in values else values[0]
                             for x in cols[c].tolist()])
        after = dict(zip(names, jax.tree_util.tree_leaves(params.assemble(moved)), strict=True))
        for name in names:
            if c not in params.LEAF_COLUMNS[name]:
                np.testing.assert_array_equal(after[name], leaves[name], err_msg=f"{name} moved with {c}")
        rep2: list = []
        params.validate(moved, rep2)
        for (k, r, m), (_, _, m2) in zip(report, rep2, strict=True):
            if c not in params.RULE_COLUMNS.get(k, (k,)):
                np.testing.assert_array_equal(m, m2, err_msg=f"rule of {k} ({r}) moved with {c}")


def test_a_breach_is_refused_naming_the_field_and_the_rule(tmp_path):
    with pytest.raises(ConfigError, match="drive.user_capacity_gb.*must fit in raw NAND"):
        run_sweep(_sweep(on_invalid="error"), BASE, tmp_path, progress=False)
    assert not (tmp_path / "chunks").exists()


def test_what_the_device_cannot_generate_runs_on_the_host_or_is_refused(tmp_path):
    keep = {"top_k": {"k": 2, "by": "time_s", "group_by": ["mean_mb_s"]}}  # groups keyed by a metric
    with pytest.raises(ConfigError, match="sweep.generate.*groups by the metric mean_mb_s"):
        run_sweep(_sweep(keep=keep), BASE, tmp_path / "d", progress=False)
    s = run_sweep(_sweep(keep=keep, generate="auto"), BASE, tmp_path / "a", progress=False)
    assert "generated_on" not in s and s["n_configs"] > 0
    with pytest.raises(ConfigError, match="sweep.generate.*reductions only"):
        run_sweep(_sweep(keep="all"), BASE, tmp_path / "b", progress=False)
    with pytest.raises(ConfigError, match="sweep.generate.*one of"):
        run_sweep(_sweep(generate="gpu"), BASE, tmp_path / "c", progress=False)


def test_float32_edges_bin_as_the_float64_edges_do():
    rng = np.random.default_rng(3)
    edges = np.geomspace(0.1, 7.3, 33)
    v = np.concatenate([rng.uniform(0.05, 8.0, 20000), edges, np.nextafter(edges, 0)]).astype(np.float32)
    from ssdx.sweep import reduce

    want = reduce.histogram_slots(v.astype(np.float64), edges)
    got = np.searchsorted(device.edges_f32(edges), v, side="right")
    got[np.float64(v) == edges[-1]] = len(edges) - 1
    np.testing.assert_array_equal(got, want)


# the larger chunks run in the validation tier: the same screening, more points
@pytest.mark.parametrize("n, front", [(5000, False), pytest.param(40000, False, marks=pytest.mark.validation),
                                      (6000, True), pytest.param(20000, True, marks=pytest.mark.validation),
                                      pytest.param(300000, False, marks=pytest.mark.validation)])
def test_the_screened_pareto_front_is_exact(n, front):
    """Pivot screening then a sort of the candidates (512 or 16,384 entries) or, past SCREENED candidates
    that a second screen leaves too, of the whole chunk gives exactly the non-dominated points, ties and
    ineligible points included (against ``reduce._front``); the first four cases go through the three
    sorts, the last draws its pivots from every fourth point."""
    from ssdx.sweep import device_run, reduce

    rng = np.random.default_rng(n)
    x = rng.integers(0, 40, n).astype(np.float32)  # many equal x
    # a wide front when n is large: y falls with x along a curve, plus noise
    y = (np.round(rng.normal(0, 1, n), 1) + (0.0 if n < 10000 else 40.0 - x)).astype(np.float32)
    if front:  # every point on the front: every eligible point is a candidate
        x, y = np.arange(n, dtype=np.float32), -np.arange(n, dtype=np.float32)
    elig = rng.random(n) > 0.1
    want = np.zeros(n, bool)
    ids = np.flatnonzero(elig)
    want[ids[reduce._front(x[ids], y[ids], ids, False, False)]] = True
    cand = elig & ~np.asarray(device_run.pivot_dominated(jnp_(x), jnp_(y), jnp_(elig)))
    assert not (want & ~cand).any()  # screening never removes a front point
    sort = {5000: "few", 40000: "few", 6000: "screened", 20000: "whole", 300000: "few"}[n]
    assert sort == ("few" if cand.sum() <= device_run.FEW_SCREENED
                    else "screened" if cand.sum() <= device_run.SCREENED else "whole")
    assert n // device_run.PIVOT_SAMPLE == (4 if n == 300000 else 0)
    size = int(want.sum()) + 5
    pos, count = jax.jit(device_run.front_positions, static_argnums=3)(
        jnp_(np.where(elig, x, np.inf)), jnp_(np.where(elig, y, np.inf)), jnp_(cand), size)
    assert int(count) == want.sum() > 3
    np.testing.assert_array_equal(np.asarray(pos), np.concatenate([np.flatnonzero(want), np.zeros(5, int)]))


def test_a_long_front_of_opposed_metrics_is_screened_again_not_sorted_whole():
    """Two opposed continuous metrics (y falls with x, in a narrow band): the front is thousands of points
    long and the first screen's 256 buckets leave more than SCREENED candidates; the second screen
    (FINE_PIVOTS buckets from every point) removes no front point and leaves few enough to sort alone,
    and the front comes out exact."""
    from ssdx.sweep import device_run, reduce

    n = 60000
    rng = np.random.default_rng(7)
    x = rng.random(n).astype(np.float32)
    y = (1.0 - x + 0.003 * rng.random(n)).astype(np.float32)
    elig = rng.random(n) > 0.1
    ids = np.flatnonzero(elig)
    want = np.zeros(n, bool)
    want[ids[reduce._front(x[ids], y[ids], ids, False, False)]] = True
    xe, ye = np.where(elig, x, np.inf), np.where(elig, y, np.inf)
    coarse = elig & ~np.asarray(device_run.pivot_dominated(jnp_(x), jnp_(y), jnp_(elig)))
    fine = coarse & ~np.asarray(device_run.pivot_dominated(jnp_(xe), jnp_(ye), jnp_(np.isfinite(xe)),
                                                           device_run.FINE_PIVOTS, n))
    assert coarse.sum() > device_run.SCREENED >= fine.sum() and want.sum() > 1000
    assert not (want & ~fine).any()  # the second screen removes no front point either
    size = int(want.sum()) + 5
    pos, count = jax.jit(device_run.front_positions, static_argnums=3)(jnp_(xe), jnp_(ye), jnp_(coarse), size)
    assert int(count) == want.sum()
    np.testing.assert_array_equal(np.asarray(pos), np.concatenate([np.flatnonzero(want), np.zeros(5, int)]))


@pytest.mark.parametrize("n_groups", [3, 40])
def test_blocked_top_k_per_group_is_lax_top_k_of_each_masked_row(n_groups):
    """The block pre-selection (dense below DENSE_GROUPS groups, a scatter above) picks exactly what a
    full ``lax.top_k`` of each group's row picks, ties to the lower position, on a chunk that is not a
    whole number of blocks, with -inf values and groups with fewer than k members."""
    from ssdx.sweep import device_run

    rng = np.random.default_rng(n_groups)
    n, k = 5 * device_run.TOP_K_BLOCK + 77, 12
    s = np.round(rng.normal(0, 1, n), 1).astype(np.float32)  # many ties
    s[rng.random(n) < 0.2] = -np.inf
    grp = rng.integers(0, n_groups, n).astype(np.int32)
    grp[grp == 1] = 0  # group 1 empty: its row is all -inf
    grp[np.flatnonzero(grp == 2)[k // 2:]] = 0  # group 2 has fewer than k members
    want = np.stack([np.asarray(jax.lax.top_k(jnp_(np.where(grp == g, s, -np.inf)), k)[1])
                     for g in range(n_groups)])
    got = np.asarray(jax.jit(device_run.group_top_k, static_argnums=(2, 3))(jnp_(s), jnp_(grp), n_groups, k))
    np.testing.assert_array_equal(got, want)


def test_compaction_and_edge_counts_equal_their_jnp_forms():
    from ssdx.sweep import device_run

    rng = np.random.default_rng(7)
    fns = [jax.jit(f, static_argnums=1) for f in (device_run.compact, device_run.compact_sparse)]
    # a cut last block of 64 or none; fewer True entries than the size, as many, more; none at all
    for n, density, sizes in ((10001, 0.01, (3, None, 500)), (777, 0.3, (3, 500)), (640, 0.0, (3,))):
        mask = rng.random(n) < density
        for size in (int(mask.sum()) if s is None else s for s in sizes):
            want = np.asarray(jax.numpy.nonzero(jnp_(mask), size=size, fill_value=0)[0])
            for fn in fns:
                np.testing.assert_array_equal(np.asarray(fn(jnp_(mask), size)), want)
    v = np.concatenate([rng.uniform(-1, 12, 5000), [np.inf, -np.inf]]).astype(np.float32)
    for edges in (np.linspace(0, 10, 65), np.geomspace(0.01, 10, 400)):  # compares; binary search
        e = device.edges_f32(edges)
        v_e = np.concatenate([v, e, np.nextafter(e, np.float32(0))])
        np.testing.assert_array_equal(np.asarray(device_run.edges_at_or_below(jnp_(v_e), e)),
                                      np.searchsorted(e, v_e, side="right"))


@pytest.mark.parametrize("lo, hi, bins, log, missed", [
    (0.0, 10.0, 64, False, False), (-3.0, 7.0, 200, False, False), (0.01, 10.0, 400, True, False),
    (1.0, 1e6, 150, True, False), (1e6, 1e6 + 1.0, 60, False, False),
    # 1,001 edges merged by float32 rounding into 17 values (rounded up, as the estimate's floor is)
    (1e6, 1e6 + 1.0, 1000, False, False),
    # log-scale edges estimated as if linear: the estimate misses by many bins, the fallback answers
    (0.01, 10.0, 300, "as linear", True)])
def test_estimated_histogram_slots_are_exact(lo, hi, bins, log, missed):
    """The slots from the edges' spacing are searchsorted's for every value (edges, their float32
    neighbours, values outside the range, infinities, zero and negatives on a log scale), through the
    estimate where it lands and the fallback where it does not."""
    from ssdx.sweep import device_run, reduce

    e = device.edges_f32(reduce.bin_edges("m", lo, hi, bins, bool(log)))
    rng = np.random.default_rng(bins)
    span = (np.geomspace(lo / 3, hi * 3, 20000) if log
            else np.linspace(2 * lo - hi, 2 * hi - lo, 20000))
    v = np.concatenate([span, rng.uniform(lo, hi, 20000), e, np.nextafter(e, np.float32(-np.inf)),
                        np.nextafter(e, np.float32(np.inf)), [np.inf, -np.inf, 0.0, -1.0]]).astype(np.float32)
    v[np.abs(v) < np.finfo(np.float32).tiny] = 0.0  # XLA's CPU flushes subnormals to zero, NumPy does not
    want = np.searchsorted(e, v, side="right")
    fn = jax.jit(lambda x: device_run.edges_at_or_below(x, e, log is True))
    np.testing.assert_array_equal(np.asarray(fn(jnp_(v))), want)
    c, inside = jax.jit(lambda x: device_run.estimated_slots(x, e, log is True))(jnp_(v))
    assert bool(np.asarray(inside).all()) is not missed
    np.testing.assert_array_equal(np.asarray(c)[np.asarray(inside)], want[np.asarray(inside)])
    nan = np.asarray(fn(jnp_(np.array([np.nan, 1.0], np.float32))))  # NaN: any slot, never a failure
    assert 0 <= nan[0] <= len(e)


def test_a_range_whose_float32_edges_are_all_one_value_is_counted_by_compares():
    """A range narrower than a float32 step (or beyond float32) rounds every edge up to one value: there is
    no spacing to estimate from, so the compares or the binary search answer."""
    from ssdx.sweep import device_run, reduce

    for lo, hi, bins in ((1 + 1e-12, 1 + 2e-12, 100), (1 + 1e-12, 1 + 2e-12, 300), (-1e39, -9e38, 120)):
        with np.errstate(over="ignore"):  # -1e39 is beyond float32
            e = device.edges_f32(reduce.bin_edges("m", lo, hi, bins, False))
        assert e[0] == e[-1]
        v = np.array([0.5, 1.0, np.nextafter(np.float32(1.0), np.float32(2.0)), 2.0, -np.inf, np.inf,
                      -3.4e38], np.float32)
        got = jax.jit(lambda x, e=e: device_run.edges_at_or_below(x, e))(jnp_(v))
        np.testing.assert_array_equal(np.asarray(got), np.searchsorted(e, v, side="right"))


def test_counting_a_mask_by_words_is_exact():
    """count_true reads four entries at a time as a uint32 word and adds population counts: the mask's
    sum for every length (a multiple of 4 or not), density and position, all set and none."""
    from ssdx.sweep import device_run

    rng = np.random.default_rng(11)
    fn = jax.jit(device_run.count_true)
    for n in (1, 3, 4, 7, 64, 1000, 4096, 65537, 1 << 20):
        for density in (0.0, 0.003, 0.5, 1.0):
            mask = rng.random(n) < density
            assert int(fn(jnp_(mask))) == int(mask.sum()), (n, density)


def jnp_(a):
    return jax.numpy.asarray(a)


def test_a_chunk_with_more_pareto_candidates_than_returned_is_run_again(tmp_path, monkeypatch):
    """Tied points all stay on the front; a chunk holding more of them than the capacity grows it."""
    from ssdx.sweep import device_run

    keep = {"pareto": KEEP["pareto"]}
    monkeypatch.setattr(device_run, "PARETO_CAPACITY", 1)
    run_sweep(_sweep(keep=keep, generate="host"), BASE, tmp_path / "h", progress=False)
    run_sweep(_sweep(keep=keep), BASE, tmp_path / "d", progress=False)
    want, got = (pq.read_table(tmp_path / d / "pareto.parquet").to_pandas() for d in ("h", "d"))
    assert len(want) > 1
    pd.testing.assert_frame_equal(got, want, check_exact=True)
