"""NAND geometry overrides (``nand.bits_per_cell``, ``nand.page_kib``, ``nand.block_pages``,
``nand.write_unit_kib``): each reaches the fluid, request-level, GC and hybrid models with the physics
computed by hand here; a drive from MQSim's default ``ssdconfig.xml`` builds and replays; bad values are
refused naming the field; results record the effective NAND values instead of NaN."""

from __future__ import annotations

import json

import jax
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import x64
from test_cli import ssdx

from ssdx import catalog, params, presets
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import replay
from ssdx.models.fluid import model as fluid
from ssdx.models.gc import model as gc
from ssdx.models.hybrid import model as hybrid
from ssdx.models.hybrid import params as hybrid_params
from ssdx.params import ConfigError
from ssdx.units import KIB, MIB
from ssdx.workloads.traces import READ, WRITE, Chunk

ENGINE = {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5, "ctrl_kiops": 1000,
          "time_scale": 1.0}
WORK = {"pattern": "random", "block_kib": 4, "queue_depth": 1, "prefill_fraction": 0.5, "fill_fraction": 1.0,
        "burst_gb": 0.0, "idle_s": 0.0}

# MQSim's default ssdconfig.xml (Tavakkol et al., FAST 2018): 8 channels, 4 chips x 2 dies per channel,
# 2 planes per die, 2048 blocks per plane, 256 pages of 8 KiB per block, MLC, t_R 75 us, t_PROG 750 us,
# t_BERS 3.8 ms, 333 MT/s 8-bit channels.
MQSIM_DIE_GBIT = 2 * 2048 * 256 * 8 * KIB * 8 / 2**30
MQSIM_DRIVE = {"nand": "mlc", "interface": "pcie3x4", "user_capacity_gb": 480.0, "die_gbit": MQSIM_DIE_GBIT,
               "channels": 8, "dies_per_channel": 8, "planes_per_die": 2, "bus_mts": 333.0,
               "bus_efficiency": 0.9, "dram": True, "slc_mode": "pure_native", "static_slc_gb": 0.0,
               "reserve_fraction": 0.01, "fold_efficiency": 0.6}
MQSIM_NAND = {"bits_per_cell": 2, "page_kib": 8, "block_pages": 256, "write_unit_kib": 8,
              "t_read_us": 75.0, "t_prog_us": 750.0, "t_erase_us": 3800.0}


def trees(drive: dict | None = None, nand: dict | None = None, workload: dict | None = None,
          dtype=np.float32):
    """Scalar (Drive, Workload) of one configuration."""
    cols = params.columns_from_config(drive or presets.drive(), workload or presets.workload(), nand)
    d, w = params.build(cols, dtype=dtype)
    return params.index(d, 0), params.index(w, 0)


def fluid_metrics(d, w, n_steps: int = 128) -> dict[str, float]:
    out = jax.jit(fluid.metrics, static_argnums=2)(d, w, n_steps)
    return {k: float(v) for k, v in out.items()}




# ----------------------------------------------------------------------------- the helper and the record
def test_effective_values_are_the_catalog_unless_overridden():
    rows = [params.columns_from_config(presets.drive(nand=n), WORK, over) for n, over in
            (("tlc", None), ("qlc", {"page_kib": 8, "write_unit_kib": 32}), ("tlc", {"name": "mlc"}),
             ("tlc", {"block_pages": 1152, "t_prog_us": 1234.5}))]
    cols = params.concat_columns(rows)
    assert np.isnan(cols["nand.page_kib"][0])  # the column says "not overridden" ...
    assert params.nand_value(cols, "page_kib").tolist() == [16.0, 8.0, 16.0, 16.0]  # ... the value is known
    assert params.nand_value(cols, "page_bytes").tolist() == [16384.0, 8192.0, 16384.0, 16384.0]
    assert params.nand_value(cols, "bits_per_cell").tolist() == [3.0, 4.0, 2.0, 3.0]
    assert params.nand_value(cols, "block_pages").tolist() == [576.0, 768.0, 256.0, 1152.0]
    assert params.nand_value(cols, "block_bytes").tolist() == [576 * 16384.0, 768 * 8192.0, 256 * 16384.0,
                                                                1152 * 16384.0]
    assert params.nand_value(cols, "write_unit_kib").tolist() == [48.0, 32.0, 16.0, 48.0]
    assert params.nand_value(cols, "t_prog_us").tolist() == [1000.0, 2000.0, 750.0, 1234.5]
    assert params.nand_value(cols, "die_active_w").tolist() == [catalog.nand(n).die_active_w
                                                               for n in ("tlc", "qlc", "mlc", "tlc")]
    eff = params.effective_columns(cols)
    for f in params.NAND_OVERRIDES:
        assert not np.isnan(eff[f"nand.{f}"]).any(), f
        assert eff[f"nand.{f}"].tolist() == params.nand_value(cols, f).tolist(), f
    assert params.nand_record(cols, 1)["page_kib"] == 8.0 and params.nand_record(cols, 2)["t_read_us"] == 75.0
    # recording the effective values changes nothing a model computes: the same trees, bit for bit
    a, b = params.build(cols), params.build(eff)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        assert np.array_equal(x, y)


def test_pytree_holds_the_effective_geometry():
    d, _ = trees(presets.drive(nand="tlc"), {"bits_per_cell": 2, "page_kib": 8, "block_pages": 1024,
                                             "write_unit_kib": 16})
    assert float(d.nand.bits_per_cell) == 2.0
    assert float(d.nand.page_bytes) == 8192.0
    assert float(d.nand.block_bytes) == 1024 * 8192.0
    assert float(d.nand.write_unit_bytes) == 16 * KIB
    # the timings stay the catalog's
    assert float(d.nand.t_prog_us) == catalog.nand("tlc").t_prog_us


# ----------------------------------------------------------------------------- fluid model
@pytest.mark.parametrize("page_kib", [4, 8, 16])
def test_fluid_pslc_plateau_is_dies_planes_page_over_t_prog_slc(page_kib):
    """Aldrin Pro: 32 dies x 4 planes of YMTC CDT1B (t_prog_slc 318.76 us).  The pSLC plateau is die-bound
    (below the ~7 GB/s PCIe 4.0 x4 link and the 8.64 GB/s channels) and scales with the page."""
    d, w = trees(nand={"page_kib": page_kib, "write_unit_kib": 3 * page_kib})
    expect = 32 * 4 * page_kib * KIB / 318.76e-6
    assert expect < 6.6e9
    assert float(fluid.rates(d, w).slc) == pytest.approx(expect, rel=1e-6)
    m = fluid_metrics(d, w)
    assert m["pslc_mb_s"] * 1e6 == pytest.approx(expect, rel=1e-4)
    assert m["cache_gb"] == pytest.approx(2000 / 3, rel=1e-3)  # the cache size does not depend on the page


def test_fluid_bits_per_cell_sets_the_dynamic_cache_and_the_fold_ratio():
    """A dynamic pSLC cache lends the free user space at 1 bit per cell: it holds U/b; folding moves
    1/(b-1) pSLC bytes per host byte."""
    tlc, w = trees(nand={})
    mlc, _ = trees(nand={"bits_per_cell": 2})
    assert fluid_metrics(tlc, w)["cache_gb"] == pytest.approx(2000 / 3, rel=1e-3)
    assert fluid_metrics(mlc, w)["cache_gb"] == pytest.approx(2000 / 2, rel=1e-3)
    assert float(fluid.fold_ratio(tlc)) == pytest.approx(0.5)
    assert float(fluid.fold_ratio(mlc)) == pytest.approx(1.0)
    # pure-pSLC capacity is U/b
    d, _ = trees(presets.drive(slc_mode="pure_slc"), {"bits_per_cell": 4})
    assert float(fluid.capacity_bytes(d)) == pytest.approx(2000e9 / 4, rel=1e-6)


def test_fluid_block_pages_set_the_erase_cost_of_folding():
    """Folding f = 1/(b-1) pSLC bytes per host byte costs, on the whole die array (N planes):
    (1+f)·t_prog/(N·page)/eta + f·t_read_slc/(N·page) + b·f·t_erase/(N·block), block = block_pages·page."""
    m = catalog.nand("ymtc_cdt1b")
    planes, page, eta = 32 * 4, 16384.0, 0.6074
    for block_pages in (576, 96, 4096):
        with x64():
            d, _ = trees(nand={"block_pages": block_pages}, dtype=np.float64)
            die = fluid.die_time(d)
            b, f = 3, 0.5
            native = m.t_prog_us * 1e-6 / (planes * page)
            fold = ((1 + f) * native / eta + f * m.t_read_slc_us * 1e-6 / (planes * page)
                    + b * f * m.t_erase_us * 1e-6 / (planes * block_pages * page))
            assert float(die.fold) == pytest.approx(fold, rel=1e-12)
            assert float(die.native) == pytest.approx(native, rel=1e-12)


# ----------------------------------------------------------------------------- request-level engine
def one_die(**over) -> dict:
    """One die on one channel, one plane, DRAM, a fast bus and link: the die is the only bottleneck."""
    d = dict(presets.drive("aldrin_pro_2tb"), channels=1, dies_per_channel=1, planes_per_die=1,
             user_capacity_gb=60.0, bus_mts=100000, interface="pcie5x4", slc_mode="pure_native", dram=True)
    d.update(over)
    return d


def engine_cfg(drive: dict, nand: dict | None = None, qd: int = 1, **eng) -> dict:
    return {"drive": drive, "nand": nand or {}, "workload": dict(WORK, queue_depth=qd),
            "engine": dict(ENGINE, **eng)}


def chunk(op: int, offsets, size: int) -> Chunk:
    n = len(offsets)
    return Chunk(time_s=np.full(n, np.nan), op=np.full(n, op, np.int8), offset=np.asarray(offsets, np.int64),
                 size=np.full(n, size, np.int64), line=np.arange(1, n + 1))


def test_engine_plan_and_map_cache_follow_the_page():
    for page_kib in (8, 16, 32):
        c = engine_cfg(one_die(dram=False), {"page_kib": page_kib, "write_unit_kib": 3 * page_kib})
        cols, (d, w, e, lay) = engine_params.build_from_config(c)
        assert int(e.map_cache_pages[0]) == 2 * MIB // (page_kib * KIB)  # a 2 MiB cache of translation pages
        p = engine.plan(params.index(d, 0), params.index(w, 0), params.index(e, 0), lay)
        assert int(p.page_4k) == page_kib // 4  # 4 KiB map units per page
        assert int(p.tpage_4k) == page_kib * KIB // 4  # a translation page maps page/4 B entries
        assert float(p.unit_bytes) == page_kib * KIB  # one plane: the program unit is a page


@pytest.mark.parametrize("page_kib", [8, 16])
def test_engine_reads_count_pages_of_the_effective_size(page_kib):
    """QD1 reads on one die, one plane, DRAM.  A 4 KiB read at a 4 KiB offset reads one page whatever the
    page; an 8 KiB read at a 4 KiB offset spans two 8 KiB pages (two page reads, one after the other on
    the die) but one 16 KiB page.  Latency = controller + command + map hit + k·t_R + size/channel +
    size/host (``ssdx.models.engine.model._read``)."""
    t_read = 75.0
    d = one_die()
    c = engine_cfg(d, {"page_kib": page_kib, "write_unit_kib": 3 * page_kib, "t_read_us": t_read})
    n = 50
    offs = (np.random.default_rng(0).integers(0, 10**5, n) * 4 + 1) * 4096  # 4 KiB into a 16 KiB page
    with x64():
        D, _ = trees(d, c["nand"], WORK, dtype=np.float64)
        chan = float(D.bus_bytes_per_s) / float(D.channels)
        host, cmd = float(D.host_bytes_per_s), float(D.cmd_overhead_s)
        for size, pages in ((4096, 1), (8192, 2 if page_kib == 8 else 1)):
            r = replay.replay_config(c, chunk(READ, offs, size), dtype=np.float64, keep_latency=True)
            assert r.metrics["nand_read_pages"][0] == n * pages
            lat = (1 / (ENGINE["ctrl_kiops"] * 1e3) + cmd + ENGINE["map_hit_us"] * 1e-6
                   + pages * t_read * 1e-6 + size / chan + size / host)
            assert np.allclose(r.latencies[0], lat, rtol=1e-9), (size, page_kib)


@pytest.mark.parametrize("block_pages", [4, 16])
def test_engine_erases_once_per_block_of_program_units(block_pages):
    """Sequential page-sized writes on one die, one plane: every ``block_pages`` programmed pages close a
    block, and each block costs one erase."""
    c = engine_cfg(one_die(), {"page_kib": 8, "write_unit_kib": 8, "block_pages": block_pages}, qd=1)
    n = 64
    r = replay.replay_config(c, chunk(WRITE, np.arange(n) * 8192, 8192))
    assert r.metrics["nand_program_pages"][0] == n
    assert r.metrics["erases"][0] == n // block_pages


# ----------------------------------------------------------------------------- GC model
def test_gc_timing_and_block_size_use_the_effective_geometry():
    d, w = trees(presets.drive(nand="tlc", slc_mode="pure_native"),
                 {"page_kib": 8, "write_unit_kib": 24, "block_pages": 1024, "t_erase_us": 6000.0})
    tm = gc.timing(d, w)
    planes = float(d.dies * d.planes_per_die)  # every plane of every die
    assert float(tm.page_bytes) == 8192.0
    assert float(tm.prog_s) == pytest.approx(catalog.nand("tlc").t_prog_us * 1e-6 / planes, rel=1e-6)
    assert float(tm.erase_s) == pytest.approx(6000e-6 / planes, rel=1e-6)
    assert float(tm.read_s) == pytest.approx(catalog.nand("tlc").t_read_us * 1e-6 / planes, rel=1e-6)
    assert float(tm.bus_s) == pytest.approx(8192 / float(d.bus_bytes_per_s), rel=1e-6)
    # the GC fill's pages per block (ssdx.models.gc.jobs.run_gc_fill: block bytes / page bytes)
    assert int(round(float(d.nand.block_bytes) / float(d.nand.page_bytes))) == 1024


def test_gc_pages_per_block_default_is_the_effective_block():
    from ssdx.models.gc import jobs as tasks_gc
    cfg = {"drive": presets.drive(nand="tlc"), "workload": presets.workload(),
           "nand": {"name": "qlc", "block_pages": 1024}, "gc": {"pages_per_block": None}}
    assert tasks_gc.gc_config(cfg)["pages_per_block"] == 1024


# ----------------------------------------------------------------------------- hybrid model
def test_hybrid_word_line_follows_optional_page_and_bits_overrides():
    """Progressive staging gathers one word line (bits x page) or the write unit if smaller; 3D CT TLC:
    a word line of 3 x 16 KiB = its 48 KiB write unit."""
    def unit_lines(**over):
        cols = hybrid_params.columns({**hybrid_params.defaults(), "nand": "3d_ct_tlc", **over})
        hp, _ = hybrid.build(cols, [1e9])
        return int(hp.unit[0]), int(hp.page_units[0])

    assert unit_lines() == (12, 4)
    assert unit_lines(bits_per_cell=2) == (8, 4)  # a 32 KiB word line
    assert unit_lines(page_kib=8) == (6, 2)  # a 24 KiB word line, 8 KiB pages
    assert unit_lines(page_kib=None, bits_per_cell=None) == (12, 4)  # null: the catalog
    with pytest.raises(ConfigError, match="hybrid.page_kib"):
        hybrid.build(hybrid_params.columns({**hybrid_params.defaults(), "page_kib": 6}), [1e9])
    with pytest.raises(ConfigError, match="hybrid.bits_per_cell"):
        hybrid.build(hybrid_params.columns({**hybrid_params.defaults(), "bits_per_cell": 2.5}), [1e9])


# ----------------------------------------------------------------------------- MQSim's default drive
def test_mqsim_default_drive_builds_with_its_geometry():
    assert MQSIM_DIE_GBIT == 64.0
    with x64():
        d, w = trees(MQSIM_DRIVE, MQSIM_NAND, dict(presets.workload(), queue_depth=64), dtype=np.float64)
        assert float(d.raw_bytes) == 64 * 2 * 2048 * 256 * 8192  # 64 dies of 2 x 2048 x 256 x 8 KiB
        assert float(d.dies) == 64 and float(d.planes_per_die) == 2
        assert float(d.nand.bits_per_cell) == 2 and float(d.nand.page_bytes) == 8192
        assert float(d.nand.block_bytes) == 256 * 8192
        # native writes are die-bound: 64 dies x 2 planes x 8 KiB per 750 us = 1.40 GB/s (< 2.40 GB/s bus)
        die_rate = 64 * 2 * 8192 / 750e-6
        assert float(d.bus_bytes_per_s) == pytest.approx(8 * 333e6 * 0.9)
        assert float(fluid.rates(d, w).native) == pytest.approx(die_rate, rel=1e-12)


def test_mqsim_default_drive_replays_a_trace_from_the_cli(tmp_path):
    args = [f"drive.{k}={v}" for k, v in MQSIM_DRIVE.items()]
    args += [f"nand.{k}={v}" for k, v in MQSIM_NAND.items()]
    r = ssdx("experiment=trace_replay", "workload.synthetic=msr:prxy_0", "workload.requests=2000",
             "drive=generic_tlc_1tb", *args, f"hydra.run.dir={tmp_path}", "quiet=true")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["requests"] == 2000 and s["iops"] > 0
    assert s["nand"]["nand_program_pages"] > 0 and s["nand"]["pslc_bytes"] == 0.0  # pure native


# ----------------------------------------------------------------------------- bad values
@pytest.mark.parametrize("over, field, rule", [
    ({"bits_per_cell": 5}, "nand.bits_per_cell", "integer 1 <= x <= 4"),
    ({"bits_per_cell": 2.5}, "nand.bits_per_cell", "integer 1 <= x <= 4"),
    ({"page_kib": 0.25}, "nand.page_kib", "0.5 <= x <= 1024"),
    ({"page_kib": 2048}, "nand.page_kib", "0.5 <= x <= 1024"),
    ({"page_kib": 8.0001}, "nand.page_kib", "whole number of bytes"),
    ({"block_pages": 0}, "nand.block_pages", "integer 1 <= x <= 65536"),
    ({"block_pages": 1e6}, "nand.block_pages", "integer 1 <= x <= 65536"),
    ({"write_unit_kib": 0.0}, "nand.write_unit_kib", "0.5 <= x"),
    ({"write_unit_kib": 24}, "nand.write_unit_kib", "whole number of pages"),  # 1.5 pages of 16 KiB
    ({"page_kib": 32}, "nand.write_unit_kib", "whole number of pages"),  # the catalog's 48 KiB unit
    ({"block_pages": 2}, "nand.write_unit_kib", "at most one block"),  # 3 pages > a 2-page block
    ({"bits_per_cell": 1}, "drive.slc_mode", "multi-bit"),  # dynamic pSLC on the effective SLC
])
def test_bad_values_name_the_field(over, field, rule):
    cols = params.columns_from_config(presets.drive(), presets.workload(), over)
    with pytest.raises(ConfigError, match=rule) as e:
        params.validate(cols)
    assert e.value.field == field


def test_static_pslc_fit_uses_the_effective_bits():
    """A static region of S host GB costs bits x S of raw NAND: with 4 bits instead of 3 it no longer fits.
    16 dies of 512 Gbit = 1099.5 GB raw, 1094.0 GB after the 0.5 % reserve: 500 + 3 x 150 fits, 500 + 4 x 150
    does not."""
    d = presets.drive(slc_mode="static", static_slc_gb=150.0, user_capacity_gb=500.0, dies_per_channel=2)
    params.validate(params.columns_from_config(d, presets.workload(), {}))
    with pytest.raises(ConfigError) as e:
        params.validate(params.columns_from_config(d, presets.workload(), {"bits_per_cell": 4}))
    assert e.value.field == "drive.user_capacity_gb"


def test_engine_refuses_a_page_that_is_not_whole_4k_map_units():
    with pytest.raises(ConfigError, match="4 KiB") as e:
        engine_params.build_from_config(engine_cfg(one_die(), {"page_kib": 2, "write_unit_kib": 2}))
    assert e.value.field == "nand.page_kib"


@pytest.mark.parametrize("override, field", [
    ("nand.bits_per_cell=5", "nand.bits_per_cell"),
    ("nand.page_kib=32", "nand.write_unit_kib"),
])
def test_cli_refuses_bad_geometry_with_exit_2(tmp_path, override, field):
    r = ssdx("experiment=aldrin_pro_fill", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and field in r.stderr, r.stderr
    assert not (tmp_path / "summary.json").exists()


# ----------------------------------------------------------------------------- sweep records
SWEEP_BASE = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
              "model": {"n_steps": 16}, "precision": "float32"}
SWEEP = {"name": "geometry", "n_steps": 16,
         "space": [{"list": [{"drive.nand": "tlc"}]},
                   {"list": [{"drive.nand": "qlc", "nand.t_prog_us": 1500.0}]},
                   {"list": [{"drive.nand": "tlc", "nand.page_kib": 8.0, "nand.write_unit_kib": 24.0}]}]}


def test_sweep_over_geometry_runs_with_the_effective_values():
    from ssdx.sweep.job import sweep_columns

    cols, _, _ = sweep_columns(SWEEP, SWEEP_BASE)
    assert np.isnan(cols["nand.t_prog_us"][0]) and np.isnan(cols["nand.page_kib"][0])
    eff = params.effective_columns(cols)
    assert eff["nand.t_prog_us"].tolist() == [1000.0, 1500.0, 1000.0]
    assert eff["nand.page_kib"].tolist() == [16.0, 16.0, 8.0]
    assert eff["nand.bits_per_cell"].tolist() == [3.0, 4.0, 3.0]
    d, w = params.build(cols)
    slc = np.asarray(jax.vmap(fluid.rates)(d, w).slc)
    assert slc[2] == pytest.approx(slc[0] / 2, rel=1e-6)  # die-bound pSLC halves with the page


def test_sweep_results_record_effective_nand_values(tmp_path):
    from ssdx.sweep.job import run_sweep

    s = run_sweep(SWEEP, SWEEP_BASE, tmp_path, progress=False)
    t = pq.read_table(tmp_path / "results.parquet").to_pandas().sort_values("config_id")
    assert t["nand.t_prog_us"].tolist() == [1000.0, 1500.0, 1000.0]
    assert t["nand.page_kib"].tolist() == [16.0, 16.0, 8.0]
    for f in params.NAND_OVERRIDES:
        assert not t[f"nand.{f}"].isna().any(), f
    best = json.loads((tmp_path / "summary.json").read_text())["best"]
    assert all(not np.isnan(row["nand.t_read_us"]) for row in best)
    assert s["n_configs"] == 3
