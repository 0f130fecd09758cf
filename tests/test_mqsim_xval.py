"""The MQSim cross-validation harness: its closed-form checks, its parser, and the committed reference.

No MQSim binary is needed: the reference figures are read from ``bench/results/mqsim_xval``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import mqsim_xval as xv

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "mqsim_xval"
REFERENCE = RESULTS / "mqsim_reference.json"
XVAL = RESULTS / "xval.json"


def test_drive_bounds_by_hand() -> None:
    """MQSim's default drive, 4 KiB: floor 75 + 4096/333 MB/s + 4096/4 GB/s us; the channels cap reads."""
    b = xv.drive_bounds(xv.DEFAULT_DRIVE, 4096)
    assert b["read_floor_us"] == pytest.approx(75.0 + 4096 / 333e6 * 1e6 + 4096 / 4e9 * 1e6, rel=1e-12)
    assert b["read_floor_us"] == pytest.approx(88.324, abs=1e-3)
    # 128 planes / 75 us = 1.71 M; 8 channels x 333 MB/s / 4 KiB = 650 k; 4 GB/s / 4 KiB = 977 k.
    assert b["read_iops_cap"] == pytest.approx(8 * 333e6 / 4096, rel=1e-12)
    # 128 planes x 8 KiB / 750 us = 1.40 GB/s -> 341 k 4 KiB writes/s, below the channels' 650 k.
    assert b["write_flash_iops_cap"] == pytest.approx(128 * 8192 / 750e-6 / 4096, rel=1e-12)


def test_little_check_catches_the_whole_scenario_clock() -> None:
    """A QD16 flow reported at 11,395 IOPS and 175 us holds 2.0 requests, not 16: the check must fail."""
    case = xv.Case(name="x", read_pct=100, qd=16)
    flow = {"IOPS": 11395.0, "Device_Response_Time": 175.0, "Request_Count": 200000,
            "Read_Request_Count": 200000, "Write_Request_Count": 0,
            "IOPS_Read": 11395.0, "IOPS_Write": 0.0, "Min_Device_Response_Time": 89.0}
    little = xv.closed_form(case, flow)["little"]
    assert little["outstanding"] == pytest.approx(1.994125)
    assert little["pass"] is False
    flow_ok = dict(flow, IOPS=16 / 175e-6, IOPS_Read=16 / 175e-6)
    assert xv.closed_form(case, flow_ok)["little"]["pass"] is True
    # Tolerance: 2 % + QD/N + 1/mean_us.
    assert xv.little_tolerance(16, 1600, 100.0) == pytest.approx(0.04)


def test_read_floor_check() -> None:
    case = xv.Case(name="x", read_pct=100, qd=1)
    base = {"IOPS": 1.0 / 100e-6, "Device_Response_Time": 100.0, "Request_Count": 10000,
            "Read_Request_Count": 10000, "Write_Request_Count": 0, "IOPS_Read": 1.0 / 100e-6,
            "IOPS_Write": 0.0}
    assert xv.closed_form(case, dict(base, Min_Device_Response_Time=88.0))["read_floor"]["pass"] is True
    assert xv.closed_form(case, dict(base, Min_Device_Response_Time=60.0))["read_floor"]["pass"] is False


def test_offered_rate_repeats_mqsims_integer_arithmetic() -> None:
    # 123456789 B/s -> 241126 sectors/s -> 30140 requests/s -> 33178 ns between arrivals.
    c = xv.Case(name="x", generator="BANDWIDTH", bandwidth_bps=123456789, size_sectors=8)
    assert c.offered_iops() == pytest.approx(1e9 / 33178)
    assert xv.Case(name="y", generator="BANDWIDTH", bandwidth_bps=409600000).offered_iops() == 100000.0


def _result_file(tmp_path: Path, body: str) -> Path:
    """An MQSim result file (``<MQSim_Results>``) holding ``body``."""
    out = tmp_path / "w_scenario_1.xml"
    out.write_text(f'<?xml version="1.0" encoding="us-ascii"?>\n<MQSim_Results>\n{body}</MQSim_Results>\n')
    return out


def test_parser_reads_mqsim_output_and_names_a_bad_file(tmp_path: Path) -> None:
    good = _result_file(tmp_path, "<Host>\n<Host.IO_Flow>\n"
                        "<Name>Host.IO_Flow.Synth.No_0</Name>\n<Request_Count>20000</Request_Count>\n"
                        "<IOPS>inf</IOPS>\n<IOPS_Write>-nan</IOPS_Write>\n"
                        "<Device_Response_Time>260</Device_Response_Time>\n"
                        "</Host.IO_Flow>\n</Host>\n")
    (flow,) = xv.parse_result(good)
    assert flow["Request_Count"] == 20000 and flow["Device_Response_Time"] == 260
    assert flow["IOPS"] is None and flow["IOPS_Write"] is None  # MQSim's 0 s denominator
    bad = tmp_path / "bad.xml"
    bad.write_text("<MQSim_Results>\n<Host>\n<Host.IO_Flow>\n</Host>\n")
    with pytest.raises(ValueError, match=r"bad\.xml: line 4"):
        xv.parse_result(bad)


def test_mqsim_flash_counters_per_request(tmp_path: Path) -> None:
    # MQSim's FTL counters of its 1 s QD16 random-write run: one page program per write (single-plane
    # commands plus two pages per multi-plane one), one translation read per write, no translation program
    out = _result_file(tmp_path, '<SSDDevice>\n<SSDDevice.FTL Issued_Flash_Read_CMD="37549" '
                       'Issued_Flash_Program_CMD="34952" Issued_Flash_Multiplane_Program_CMD="1316" '
                       'Issued_Flash_Read_CMD_For_Mapping="37575" Issued_Flash_Program_CMD_For_Mapping="0" '
                       'Average_Page_Movement_For_GC="-nan"/>\n</SSDDevice>\n')
    ftl = xv.parse_ftl(out)
    assert ftl["Issued_Flash_Program_CMD"] == 34952 and ftl["Issued_Flash_Erase_CMD"] is None
    per = xv.flash_per_request(ftl, 37594, planes=2)
    assert per["page_programs"] == pytest.approx(37584 / 37594)
    assert per["program_commands"] == pytest.approx((34952 + 1316) / 37594)  # a multi-plane program once
    assert per["translation_reads"] == pytest.approx(37575 / 37594) and per["translation_programs"] == 0.0
    assert xv.flash_per_request({}, 10, 2) == {}


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


def test_reference_verdicts_recompute(reference: dict) -> None:
    """Every verdict recorded in the reference is what the checks compute from its own numbers."""
    n = 0
    for name, rec in reference["cases"].items():
        if "error" in rec:
            continue
        case = xv.Case(**rec["case"])
        now = xv.closed_form(case, rec["mqsim"]["flows"][0])
        for check in ("little", "read_floor", "capacity"):
            assert now[check]["pass"] == rec["checks"][check]["pass"], (name, check)
            n += 1
    assert n >= 30


def test_reference_closed_loops_obey_littles_law_with_one_flow(reference: dict) -> None:
    """Single-flow closed loops run for whole seconds pass Little's law; the two-flow counted run does not."""
    for name, rec in reference["cases"].items():
        if "error" in rec or rec["case"]["generator"] != "QUEUE_DEPTH" or rec["case"]["kind"] == "trace":
            continue
        little = rec["checks"]["little"]
        if rec["case"]["kind"] == "pair":
            assert little["pass"] is False and little["outstanding"] < 0.5 * rec["case"]["qd"], name
        else:
            assert little["pass"] is True, name
            assert math.isclose(little["outstanding"], rec["case"]["qd"], rel_tol=little["tol"])


def test_a_sata_drive_runs_at_mqsims_host_bus_adapter_rate(reference: dict, tmp_path: Path) -> None:
    """MQSim's SATA host bus adapter processes every submission and completion one at a time, 400 us each:
    QD16 random reads run at one command per 400 us (MQSim: 2,514 IOPS) and, by Little's law, their
    end-to-end delay is 16 of those; ssdx on the same files within 2 % of both (its response runs from the
    request's arrival, as MQSim's end-to-end delay does)."""
    rec = reference["cases"]["sata_randread_qd16"]
    m = rec["mqsim"]["flows"][0]
    case = xv.Case(**rec["case"])
    assert case.response_field() == "End_to_End_Request_Delay"
    (tmp_path / "ssdconfig.xml").write_text(xv.ssdconfig_xml(case.drive_params()))
    (tmp_path / "workload.xml").write_text(xv.workload_xml(case))
    s = xv.run_ssdx(tmp_path, xv.count_overrides(xv.ssdx_requests(rec)))
    assert s is not None
    assert s["flow"]["iops"] == pytest.approx(m["IOPS"], rel=0.02)
    assert s["flow"]["device_response_time_us"] == pytest.approx(m["End_to_End_Request_Delay"], rel=0.02)
    assert m["Device_Response_Time"] < 0.1 * m["End_to_End_Request_Delay"]  # the figure ssdx does not give


REGRESSION_CASES = ("randread_qd1", "randwrite_qd1", "mix70_qd1")


@pytest.mark.validation
@pytest.mark.parametrize("name", REGRESSION_CASES)
def test_ssdx_figures_unchanged(name: str, tmp_path: Path) -> None:
    """ssdx re-run now on a cheap case's XML files gives the committed figures (a regression check)."""
    ref = json.loads(REFERENCE.read_text())
    committed = json.loads(XVAL.read_text())
    rec = ref["cases"][name]
    case = xv.Case(**rec["case"])
    (tmp_path / "ssdconfig.xml").write_text(xv.ssdconfig_xml(case.drive_params()))
    (tmp_path / "workload.xml").write_text(xv.workload_xml(case))
    s = xv.run_ssdx(tmp_path, xv.count_overrides(xv.ssdx_requests(rec)))
    assert s is not None
    got, want = s["flow"], committed[name]["ssdx"]
    assert got.get("iops") == pytest.approx(want["iops"], rel=1e-9)
    assert got.get("device_response_time_us") == pytest.approx(want["mean_us"], rel=1e-9)


def test_drive_wide_counters_per_request_count_every_flow(tmp_path: Path) -> None:
    """A scenario of two flows: the drive-wide flash counters are divided by both flows' requests, as
    MQSim's are.  4 KiB random reads read at most one translation page each, so the ratio is at most 1
    (divided by the first flow's requests alone it was 1.12)."""
    ref = json.loads(REFERENCE.read_text())
    case = xv.Case(**ref["cases"]["pair_qd16_qd2_count"]["case"])
    (tmp_path / "ssdconfig.xml").write_text(xv.ssdconfig_xml(case.drive_params()))
    (tmp_path / "workload.xml").write_text(xv.workload_xml(case))
    s = xv.run_ssdx(tmp_path, ["mqsim.requests_per_flow=3000"])
    assert s is not None
    summary = json.loads((tmp_path / "ssdx" / "summary.json").read_text())
    flows = summary["scenarios"][0]["flows"]
    assert len(flows) == 2
    assert s["requests"] == sum(f["requests"] for f in flows) > flows[0]["requests"]
    reads = s["flash"]["translation_reads"]
    assert 0.5 < reads / s["requests"] <= 1.0


def test_sequential_writes_follow_mqsims_dram_formula(tmp_path: Path) -> None:
    """128 KiB sequential writes are 2x slower in ssdx than in MQSim because MQSim's DRAM formula counts
    half the rows of an access larger than a row (``estimate_dram_access_time``: ``bytes / row / 2``), so
    its 128 KiB buffer write takes half the transfer time.  Given that half time (the DRAM's data rate
    doubled, which the formula amounts to up to the rows' few ns of tRCD + tCL + tRP), ssdx gives MQSim's
    figures, and its translation reads and program commands per request follow: they are set by how
    closely the writes follow each other, not by a mechanism of their own."""
    ref = json.loads(REFERENCE.read_text())
    rec = ref["cases"]["seqwrite128k_qd8"]
    case = xv.Case(**rec["case"])
    m = rec["mqsim"]["flows"][0]
    (tmp_path / "ssdconfig.xml").write_text(xv.ssdconfig_xml(case.drive_params()))
    (tmp_path / "workload.xml").write_text(xv.workload_xml(case))
    rate = 2 * float(case.drive_params()["Data_Cache_DRAM_Data_Rate"])
    s = xv.run_ssdx(tmp_path, [*xv.count_overrides(xv.ssdx_requests(rec)),
                               f"engine.buffer_dram_mts={rate}"])
    assert s is not None
    assert s["flow"]["iops"] == pytest.approx(m["IOPS"], rel=0.02)
    assert s["flow"]["device_response_time_us"] == pytest.approx(m["Device_Response_Time"], rel=0.02)
    planes = case.drive_params()["Plane_No_Per_Die"]
    mq = xv.flash_per_request(rec["mqsim"]["ftl"], rec["mqsim"]["requests"], planes)
    n = s["requests"]
    assert s["flash"]["translation_reads"] / n == pytest.approx(mq["translation_reads"], rel=0.05)
    assert s["flash"]["program_commands"] / n == pytest.approx(mq["program_commands"], rel=0.05)
    # at the DRAM's own rate the same files give half the rate (the committed comparison)
    committed = json.loads(XVAL.read_text())["seqwrite128k_qd8"]
    assert committed["ssdx"]["iops"] < 0.55 * m["IOPS"]


def test_response_log_parsed_and_a_bad_line_named(tmp_path: Path) -> None:
    """MQSim's response-time log: a header, then time, device response and end-to-end delay in whole µs."""
    log = tmp_path / "workload.IO_Flow.No_0.log"
    log.write_text("SimulationTime(us)\tReponseTime(us)\tEndToEndDelay(us)\n165\t165\t170\n300\t90\t95\n")
    assert xv.parse_response_log(log, 1).tolist() == [165.0, 90.0]
    assert xv.parse_response_log(log, 2).tolist() == [170.0, 95.0]
    log.write_text("SimulationTime(us)\tReponseTime(us)\tEndToEndDelay(us)\n165\t165\t170\n300\t9x\t95\n")
    with pytest.raises(ValueError, match=r"No_0\.log: line 3"):
        xv.parse_response_log(log, 1)
    log.write_text("165\t165\t170\n")
    with pytest.raises(ValueError, match="line 1"):
        xv.parse_response_log(log, 1)


def test_ssdconfig_turns_mqsims_log_on_only_when_asked() -> None:
    d = xv.DEFAULT_DRIVE
    assert "<Enable_ResponseTime_Logging>false" in xv.ssdconfig_xml(d)
    on = xv.ssdconfig_xml(d, 1)
    assert "<Enable_ResponseTime_Logging>true" in on
    assert "<ResponseTime_Logging_Period_Length>1</ResponseTime_Logging_Period_Length>" in on
    with pytest.raises(ValueError, match="positive"):
        xv.ssdconfig_xml(d, 0)


def test_committed_p99_runs_logged_every_request_and_changed_nothing() -> None:
    """The p99 reference: MQSim run again with its log on gave the reference run's figures, one log line a
    request; the table's p99 differences are taken against it."""
    p99 = json.loads((RESULTS / "mqsim_p99.json").read_text())["cases"]
    rows = json.loads(XVAL.read_text())
    assert set(p99) == set(rows)
    for name, r in p99.items():
        assert r["same_as_reference"], name
        assert r["lines"] == r["requests"] > 0, name
        # the log's lines are the requests' own times (the right column, one a request): their mean is
        # MQSim's reported mean, both truncated to whole µs (the log per request, the report once)
        assert abs(r["log_mean_us"] - r["mean_us"]) <= 1.0, name
        assert rows[name]["mqsim"]["p99_us"] == r["p99_us"]
        assert rows[name]["rel_p99"] == pytest.approx(rows[name]["ssdx"]["p99_us"] / r["p99_us"] - 1.0)
