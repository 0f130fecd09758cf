"""The randomized cross-validation against MQSim (``bench/mqsim_random.py``): its draw, its closed-form
checks on MQSim's runs, MQSim's DRAM arithmetic and the committed results.

MQSim: Tavakkol et al., "MQSim: A Framework for Enabling Realistic Studies of Modern Multi-Queue SSD
Devices", USENIX FAST 2018 (commit ``7ec40e3``).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bench import mqsim_random as mr
from bench import mqsim_xval as xv


def test_the_draw_is_fixed_by_its_seed_and_stays_in_the_space_and_in_mqsims_rules() -> None:
    a, b = mr.draw_cases(n=60), mr.draw_cases(n=60)
    assert a == b
    assert mr.draw_cases(seed=1, n=5) != a[:5]
    for rec in a:
        d = rec["drive_overrides"]
        assert 1 <= d["Flash_Channel_Count"] <= 16 and 1 <= d["Chip_No_Per_Channel"] <= 8
        assert 1 <= d["Die_No_Per_Chip"] <= 4 and 1 <= d["Plane_No_Per_Die"] <= 4
        assert d["Page_Capacity"] in (4096, 8192, 16384)
        cell = mr.CELL[d["Flash_Technology"]]
        for k, t in enumerate(cell["types"]):  # each page type's latency in its range
            assert cell["read"][k][0] <= d[f"Page_Read_Latency_{t}"] <= cell["read"][k][1]
            assert cell["prog"][k][0] <= d[f"Page_Program_Latency_{t}"] <= cell["prog"][k][1]
        planes = (d["Flash_Channel_Count"] * d["Chip_No_Per_Channel"] * d["Die_No_Per_Chip"]
                  * d["Plane_No_Per_Die"])
        pages = planes * d["Block_No_Per_Plane"] * d["Page_No_Per_Block"]
        assert pages <= (mr.MAX_PRECONDITION_PAGES if rec["precondition"] else mr.MAX_PAGES) or \
            d["Block_No_Per_Plane"] == 64
        assert rec["bandwidth_bps"] <= mr.MAX_BANDWIDTH  # MQSim reads Bandwidth with std::stoi
        assert 8 <= rec["size_sectors"] <= 512 and 0 <= rec["read_pct"] <= 100
        if rec["generator"] == "BANDWIDTH":
            assert 0.1 <= rec["load_fraction"] <= 0.9
            offered = rec["bandwidth_bps"] / (rec["size_sectors"] * 512)
            cap = mr.capacity_iops(d, rec["size_sectors"] * 512, rec["read_pct"] / 100)
            assert offered == pytest.approx(rec["load_fraction"] * cap, rel=1e-6)
        else:
            assert rec["qd"] in mr.QDS
        assert rec["precondition"] == (rec["occupancy_pct"] > 0)


def test_the_committed_case_list_is_the_draw() -> None:
    """The committed cases are what the seed draws: before and after a change, the same cases."""
    doc = json.loads((mr.RESULTS / "cases.json").read_text())
    assert doc["seed"] == mr.SEED and doc["n"] == len(doc["cases"]) == mr.N_CASES
    assert doc["cases"][:40] == json.loads(json.dumps(mr.draw_cases(n=40)))


def test_mqsims_dram_formula_by_hand() -> None:
    """MQSim's estimate_dram_access_time on its default DRAM (100 MT/s, 1-byte bursts, 8 KiB rows, 13 ns):
    up to a row, tRCD + tCL + bytes / 2 transfers of 10 ns; past it, half the rows (integer division) of
    tRCD + tCL + 4096 transfers + tRP, then tRCD + tCL and the remainder over the transfer time."""
    d = xv.DEFAULT_DRIVE
    assert mr.mqsim_dram_s(d, 4096) == pytest.approx((26 + 2048 * 10) * 1e-9)
    row = 26 + 40960 + 13
    assert mr.mqsim_dram_s(d, 65536) == pytest.approx((4 * row + 26) * 1e-9)
    assert mr.mqsim_dram_s(d, 20480) == pytest.approx((row + 26 + 409) * 1e-9)  # 4096 B / 10 ns, whole ns
    assert mr.mqsim_dram_s(d, 16384) == pytest.approx((row + 26) * 1e-9)  # two rows counted as one


def _log(n: int, gap_s: float, served_s: float, resp_us: float) -> dict:
    """A response-time log's statistics: ``n`` completions ``served_s`` apart, ``resp_us`` each."""
    t = 1e6 * (resp_us * 1e-6 + served_s * np.arange(1, n + 1))
    return mr.log_stats(t, np.full(n, resp_us))


def test_an_open_loop_that_falls_behind_its_arrivals_is_flagged() -> None:
    case = xv.Case(name="x", generator="BANDWIDTH", qd=0, size_sectors=8, bandwidth_bps=10_000 * 4096)
    rate = case.offered_iops()
    util = {"dies": 0.5, "channels": 0.2}
    ok = mr.checks(case, 100.0, _log(4000, 1 / rate, 1 / rate, 100.0), util)
    assert ok["keeps_up"]["pass"] and ok["little"]["pass"] is None
    behind = mr.checks(case, 100.0, _log(4000, 1 / rate, 1.2 / rate, 100.0), util)
    assert behind["keeps_up"]["pass"] is False
    assert behind["keeps_up"]["served_iops"] == pytest.approx(rate / 1.2, rel=1e-3)
    busy = mr.checks(case, 100.0, _log(4000, 1 / rate, 1 / rate, 100.0), {"dies": 1.02, "channels": 0.2})
    assert busy["utilisation"]["pass"] is False


def test_a_closed_loop_is_held_to_littles_law() -> None:
    """QD8, 1,000 requests each taking 800 µs, one completing every 100 µs: 8 outstanding; the same log
    claimed for QD16 is not."""
    util = {"dies": 0.5, "channels": 0.2}
    log = _log(1000, 0.0, 100e-6, 800.0)
    assert mr.checks(xv.Case(name="x", qd=8), 800.0, log, util)["little"]["pass"]
    assert mr.checks(xv.Case(name="x", qd=16), 800.0, log, util)["little"]["pass"] is False


def test_utilisation_by_counting_by_hand() -> None:
    """Two dies, one channel of 100 MB/s, 1 s: 1,000 reads of 50 µs (100 of them translation reads) and 200
    programs of 1 ms, 4 MB of host data: dies 0.045 + 0.0025 + 0.1, channel 4 % plus the translation reads'
    sectors; the dominant mechanism is the programs."""
    d = {**xv.DEFAULT_DRIVE, "Flash_Channel_Count": 1, "Chip_No_Per_Channel": 2, "Die_No_Per_Chip": 1,
         "Page_Read_Latency": 50_000, "Page_Program_Latency": 1_000_000, "Channel_Transfer_Rate": 100}
    ftl = {"Issued_Flash_Read_CMD": 1000, "Issued_Flash_Read_CMD_For_Mapping": 100,
           "Issued_Flash_Program_CMD": 200}
    u = mr.utilisation(d, ftl, 4e6, 1.0)
    assert u["die_reads"] == pytest.approx(900 * 50e-6 / 2)
    assert u["die_translation_reads"] == pytest.approx(100 * 50e-6 / 2)
    assert u["die_programs"] == pytest.approx(200 * 1e-3 / 2)
    assert u["channels"] == pytest.approx((4e6 + 100 * 512) / 100e6)
    assert mr.dominant(u) == "unloaded" and mr.dominant({**u, "die_programs": 0.3}) == "programs"


def test_the_committed_reports_recompute_from_the_committed_results() -> None:
    """Every committed ssdx run's summary is what its results give (the tables are not edited by hand)."""
    cases = json.loads((mr.RESULTS / "cases.json").read_text())["cases"]
    mq = json.loads((mr.RESULTS / "mqsim.json").read_text())
    runs = sorted(mr.RESULTS.glob("ssdx*.json"))
    assert runs
    for path in runs:
        suffix = path.stem[len("ssdx"):]
        text, doc = mr.report(cases, mq, json.loads(path.read_text()))
        assert (mr.RESULTS / f"report{suffix}.md").read_text() == text, path.name
        committed = json.loads((mr.RESULTS / f"summary{suffix}.json").read_text())
        assert committed["overall"]["within_10"] == pytest.approx(doc["overall"]["within_10"])
        assert committed["valid"] == doc["valid"] >= 200
        assert all(math.isfinite(r) for r in (doc["overall"]["median"], doc["overall"]["p90"]))
