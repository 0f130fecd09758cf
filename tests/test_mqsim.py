"""MQSim's input files: the ``ssdconfig.xml`` / ``workload.xml`` parsers and ``experiment=mqsim``.

References: MQSim's deserialisers (Tavakkol et al., "MQSim: A Framework for Enabling Realistic Studies
of Modern Multi-Queue SSD Devices", USENIX FAST 2018; its ``Device_Parameter_Set``,
``Flash_Parameter_Set`` and ``IO_Flow_Parameter_Set`` classes) and the values written in the example
files under ``examples/mqsim`` (MQSim's default drive).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from test_cli import ssdx

from ssdx.params import ConfigError
from ssdx.workloads import mqsim_xml
from ssdx.workloads.mqsim_xml import MqsimXmlError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "mqsim"
SSDCONFIG = EXAMPLES / "ssdconfig.xml"
WORKLOAD = EXAMPLES / "workload.xml"


def _flow(generator: str = "QUEUE_DEPTH", qd: int = 4, read_pct: int = 100, n: int = 3000,
          bandwidth: int = 0, extra: str = "") -> str:
    return f"""		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>HIGH</Priority_Class>
			<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
			<Working_Set_Percentage>100</Working_Set_Percentage>
			<Synthetic_Generator_Type>{generator}</Synthetic_Generator_Type>
			<Read_Percentage>{read_pct}</Read_Percentage>
			<Address_Distribution>RANDOM_UNIFORM</Address_Distribution>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>8</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>8</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>11</Seed>
			<Average_No_of_Reqs_in_Queue>{qd}</Average_No_of_Reqs_in_Queue>
			<Bandwidth>{bandwidth}</Bandwidth>
			<Stop_Time>0</Stop_Time>
			<Total_Requests_To_Generate>{n}</Total_Requests_To_Generate>{extra}
		</IO_Flow_Parameter_Set_Synthetic>
"""


def _workload(*scenarios: list[str]) -> str:
    body = "".join("\t<IO_Scenario>\n" + "".join(s) + "\t</IO_Scenario>\n" for s in scenarios)
    return f'<?xml version="1.0" encoding="us-ascii"?>\n<MQSim_IO_Scenarios>\n{body}</MQSim_IO_Scenarios>\n'


# ------------------------------------------------------------------------------------- ssdconfig.xml


def test_default_drive_by_hand() -> None:
    """MQSim's default drive, each override computed by hand from the file's values."""
    o, warnings = mqsim_xml.parse_ssdconfig(SSDCONFIG)
    assert o["drive.channels"] == 8 and o["drive.dies_per_channel"] == 4 * 2
    assert o["drive.planes_per_die"] == 2
    assert o["nand.bits_per_cell"] == 2 and o["drive.nand"] == "mlc"
    # MLC: the mean over its two page types (LSB, MSB); ns -> us
    assert o["nand.t_read_us"] == 75.0 and o["nand.t_prog_us"] == 750.0 and o["nand.t_erase_us"] == 3800.0
    # no pSLC mode in MQSim: translation pages (timed by the engine's pSLC timings) at the same page times
    assert o["nand.t_read_slc_us"] == 75.0 and o["nand.t_prog_slc_us"] == 750.0
    assert o["nand.page_kib"] == 8.0 and o["nand.block_pages"] == 256
    raw = 8 * 4 * 2 * 2 * 2048 * 256 * 8192  # channels x chips x dies x planes x blocks x pages x bytes
    assert o["drive.user_capacity_gb"] == pytest.approx(raw * (1 - 0.07) / 1e9, rel=1e-12)
    assert o["drive.die_gbit"] == pytest.approx(2 * 2048 * 256 * 8192 * 8 / 2**30, rel=1e-12)
    assert o["drive.bus_mts"] == 333.0
    assert o["engine.write_buffer_mib"] == 256.0 and o["engine.map_cache_mib"] == 2.0
    assert o["engine.map_cache"] == "entries"  # Ideal_Mapping_Table false: MQSim's CMT of entries
    # its entry: 2 x log2(2^28 physical pages) + 16 sector bits = 72 bits = 9 bytes
    assert o["engine.map_entry_bytes"] == 9
    assert o["engine.map_read_bytes"] == 512  # MQSim reads one sector of a translation page
    assert o["engine.cache_read"] is False  # MQSim's chips hold a read until its data is out
    assert o["engine.suspension"] == "erase"
    # MQSim's schedulers never suspend whatever the file asks: said, not silently copied or dropped
    assert any("never do" in w and "engine.suspension=none" in w for w in warnings)
    assert o["engine.suspend_erase_us"] == 700.0 and o["engine.suspend_program_us"] == 100.0
    assert o["engine.buffer_dram_mts"] == 100.0 and o["engine.buffer_dram_trcd_ns"] == 13.0
    # Caching_Mechanism ADVANCED writes first-written data back at once, with back pressure at one page per
    # plane of the drive (8 x 4 x 2 x 2 planes x 8 KiB), whatever shape ssdx gives the chips, and keeps a
    # page written again within the second in the cache (bloom_filter_reset_step, 1 s)
    assert o["engine.write_back"] == "eager" and o["engine.inflight_kib"] == 8 * 4 * 2 * 2 * 8
    assert o["engine.rewrite_window_s"] == 1.0
    # its scheduler joins page programs of a die's planes into multi-plane programs; with chip_as_die a
    # modelled die is a chip of two dies, of which a multi-plane program takes one
    assert o["engine.plane_merge"] is True and o["engine.merge_dies"] == 1
    o_chip, _ = mqsim_xml.parse_ssdconfig(SSDCONFIG, chip_as_die=True)
    assert o_chip["drive.dies_per_channel"] == 4 and o_chip["engine.inflight_kib"] == 8 * 4 * 2 * 2 * 8
    assert o_chip["engine.merge_dies"] == 2
    # NVMe on 4 lanes of 1 GB/s (1 byte per ns per lane), 28 bytes of packet overhead: doorbell
    # ceil((2 + 28) / 4) = 8 ns, command fetch request (28 + 4) / 4 = 8 ns, the 72-byte entry
    # (72 + 28) / 4 = 25 ns, the 16-byte completion (16 + 28) / 4 = 11 ns; no processing time besides
    assert o["engine.cmd_us"] == pytest.approx((8 + 8 + 25 + 11) / 1e3, abs=1e-12)
    assert o["engine.ctrl_kiops"] == 1e6 and o["engine.map_hit_us"] == 0.0
    # data: 128 payload bytes in every 156 on 4 lanes of 1 byte/ns
    assert o["engine.host_gb_s"] == pytest.approx(4 * 128 / 156, rel=1e-12)
    assert 4096 / o["engine.host_gb_s"] == pytest.approx(mqsim_xml.pcie_message_ns("write", 4096, 1.0, 4))


def test_the_device_holds_a_fetch_window_of_requests(tmp_path: Path) -> None:
    """NVMe: MQSim's device holds at most ``Queue_Fetch_Size`` requests of a stream (the rest wait in the
    submission queue, inside their response time): the engine's queue is the smaller of it and
    ``IO_Queue_Depth``; SATA has no such window."""
    text = SSDCONFIG.read_text()
    assert "<IO_Queue_Depth>65535" in text and "<Queue_Fetch_Size>512" in text
    o, warnings = mqsim_xml.parse_ssdconfig(SSDCONFIG)
    assert o["workload.queue_depth"] == 512 and not any("IO_Queue_Depth" in w for w in warnings)
    small = tmp_path / "small.xml"
    small.write_text(text.replace("<Queue_Fetch_Size>512", "<Queue_Fetch_Size>16"))
    assert mqsim_xml.parse_ssdconfig(small)[0]["workload.queue_depth"] == 16
    sata = tmp_path / "sata.xml"
    sata.write_text(text.replace("<HostInterface_Type>NVME", "<HostInterface_Type>SATA"))
    o, warnings = mqsim_xml.parse_ssdconfig(sata)
    assert o["workload.queue_depth"] == 4096 and any("IO_Queue_Depth = 65535" in w for w in warnings)


def test_a_wider_channel_moves_more_bytes_a_transfer(tmp_path: Path) -> None:
    """``Flash_Channel_Width`` bytes a transfer (MQSim's NVDDR2 transfer time divides the bytes by it):
    two bytes at 333 MT/s is ssdx's one-byte bus at 666 MT/s."""
    wide = tmp_path / "wide.xml"
    wide.write_text(SSDCONFIG.read_text().replace("<Flash_Channel_Width>1", "<Flash_Channel_Width>2"))
    assert mqsim_xml.parse_ssdconfig(wide)[0]["drive.bus_mts"] == 666.0


def test_a_sata_drive_takes_mqsims_host_bus_adapter(tmp_path: Path) -> None:
    """``HostInterface_Type = SATA``: the HBA's ``SATA_Processing_Delay`` (ns) per command, one command at
    a time, becomes the front end's rate and is added to each response; a delay past 1 ms per command is
    held to the front end's slowest rate and said so."""
    sata = tmp_path / "sata.xml"
    sata.write_text(SSDCONFIG.read_text().replace("<HostInterface_Type>NVME", "<HostInterface_Type>SATA"))
    o, warnings = mqsim_xml.parse_ssdconfig(sata)
    assert o["drive.interface"] == "sata3"
    assert o["engine.ctrl_kiops"] == pytest.approx(1e6 / 400_000)  # 400 us per command: 2,500 per second
    assert o["engine.cmd_us"] == pytest.approx(400.0 + 0.052, abs=1e-9)
    assert any("End_to_End_Request_Delay" in w for w in warnings)
    assert not any("SATA_Processing_Delay" in w for w in warnings)  # mapped, not named as unmodelled
    slow = tmp_path / "slow.xml"
    slow.write_text(sata.read_text().replace("<SATA_Processing_Delay>400000",
                                             "<SATA_Processing_Delay>5000000"))
    o, warnings = mqsim_xml.parse_ssdconfig(slow)
    assert o["engine.ctrl_kiops"] == 1.0 and any("1 ms per command used" in w for w in warnings)
    o, _ = mqsim_xml.parse_ssdconfig(SSDCONFIG)  # NVMe: the delay does not apply
    assert o["engine.ctrl_kiops"] == 1e6


def test_pcie_message_times_follow_mqsims_packets() -> None:
    """``PCIe_Link::estimate_transfer_time``: 128-byte packets, 28 bytes of overhead each, bytes spread
    over the lanes (rounded up), truncated to whole ns."""
    # 4 KiB = 32 full packets of 156 bytes = 4,992 bytes over 4 lanes at 1 GB/s
    assert mqsim_xml.pcie_message_ns("write", 4096, 1.0, 4) == 1248.0
    # 130 bytes: one full packet and a 2-byte one, (156 + 30) = 186 bytes over 8 lanes: 24 bytes each,
    # at 2 GB/s per lane 12 ns
    assert mqsim_xml.pcie_message_ns("read_completion", 130, 2.0, 8) == 12.0
    # a read request at 0.5 GB/s on one lane: 32 bytes, 64 ns
    assert mqsim_xml.pcie_message_ns("read_request", 0, 0.5, 1) == 64.0
    assert mqsim_xml.nvme_command_us(2.0, 4) == pytest.approx((4 + 4 + 12 + 5) / 1e3, abs=1e-12)


def test_the_default_files_are_found_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    """``mqsim.ssdconfig`` and ``mqsim.workload`` left out: MQSim's default drive and the example workload,
    found through the package (a wheel carries ``examples/`` as ``ssdx/examples``), not the working
    directory."""
    import tomllib

    from ssdx.models.engine import mqsim_job

    monkeypatch.chdir(tmp_path)
    ssd, wl = mqsim_job._paths({})
    assert ssd.read_bytes() == SSDCONFIG.read_bytes()
    assert mqsim_xml.parse_workload(wl)
    wheel = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert wheel["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]["examples"] == "ssdx/examples"


def test_every_element_is_mapped_or_named_in_a_warning() -> None:
    """No field of MQSim's drive is dropped silently: each element is either mapped or warned about."""
    o, warnings = mqsim_xml.parse_ssdconfig(SSDCONFIG)
    leaves = re.findall(r"<(\w+)>[^<]*</\1>", SSDCONFIG.read_text())
    mapped = {"PCIe_Lane_Bandwidth", "PCIe_Lane_Count", "HostInterface_Type", "Flash_Channel_Count",
              "Chip_No_Per_Channel", "Die_No_Per_Chip", "Plane_No_Per_Die", "Block_No_Per_Plane",
              "Page_No_Per_Block", "Page_Capacity", "Overprovisioning_Ratio", "Channel_Transfer_Rate",
              "Flash_Technology", "Block_Erase_Latency", "Data_Cache_Capacity", "CMT_Capacity",
              "Ideal_Mapping_Table", "CMD_Suspension_Support", "Suspend_Program_Time", "Suspend_Erase_Time",
              "IO_Queue_Depth", "Queue_Fetch_Size", "Preferred_suspend_write_time_for_read",
              "Caching_Mechanism",
              "Flash_Channel_Width",
              "SATA_Processing_Delay"}  # the last: a SATA drive's host bus adapter (NVMe ignores it)
    mapped |= {x for x in leaves
               if x.startswith(("Page_Read_Latency", "Page_Program_Latency", "Data_Cache_DRAM"))}
    text = "\n".join(warnings)
    unaccounted = [x for x in leaves if x not in mapped and x not in text]
    assert not unaccounted, unaccounted


def test_an_absent_field_takes_mqsims_default_and_is_named_once(tmp_path: Path) -> None:
    """A field the file leaves out gets MQSim's default and one warning, however many derived values
    read it (Page_No_Per_Block feeds the capacity and the mapping entry's size)."""
    s = re.sub(r"\s*<Page_No_Per_Block>\d+</Page_No_Per_Block>", "", SSDCONFIG.read_text())
    p = tmp_path / "ssd.xml"
    p.write_text(s)
    o, warnings = mqsim_xml.parse_ssdconfig(p)
    assert o["nand.block_pages"] == 256 and o["engine.map_entry_bytes"] == 9
    assert sum("Page_No_Per_Block absent" in w for w in warnings) == 1


def test_an_absent_flow_field_is_named_with_the_value_ssdx_takes(tmp_path: Path) -> None:
    """MQSim gives a flow's fields no default (its parameter set leaves them uninitialised): a field the
    figures depend on and the file leaves out is named with the value ssdx runs; one the flow does not
    read (a QUEUE_DEPTH flow's Bandwidth) is not."""
    s = re.sub(r"\s*<Read_Percentage>\d+</Read_Percentage>", "", WORKLOAD.read_text(), count=1)
    p = tmp_path / "workload.xml"
    p.write_text(s)
    flow = mqsim_xml.parse_workload(p)[0].flows[0]
    assert flow.read_pct == 100.0
    absent = [w for w in flow.warnings if "absent" in w]
    assert len(absent) == 1 and "Read_Percentage absent" in absent[0] and "ssdx takes 100.0" in absent[0]
    assert not any("absent" in w for sc in mqsim_xml.parse_workload(WORKLOAD) for f in sc.flows
                   for w in f.warnings)


def test_ideal_mapping_table_and_technology_page_types(tmp_path: Path) -> None:
    """Ideal_Mapping_Table turns the LRU mapping cache off; TLC averages its three page types."""
    s = SSDCONFIG.read_text()
    s = s.replace("<Ideal_Mapping_Table>false", "<Ideal_Mapping_Table>true")
    s = s.replace("<Flash_Technology>MLC", "<Flash_Technology>TLC")
    s = s.replace("<Page_Read_Latency_CSB>75000", "<Page_Read_Latency_CSB>120000")
    p = tmp_path / "ssd.xml"
    p.write_text(s)
    o, _ = mqsim_xml.parse_ssdconfig(p)
    assert o["engine.map_cache"] == "auto"
    assert o["nand.bits_per_cell"] == 3 and o["nand.t_read_us"] == pytest.approx((75 + 120 + 75) / 3)


@pytest.mark.parametrize("bad, after, what", [
    ("<Flash_Channel_Count>eight</Flash_Channel_Count>", 0, "Flash_Channel_Count"),
    ("<Flash_Channel_Count>8</Flash_Channel_Count><Flash_Chanel_Count>8</Flash_Chanel_Count>", 0,
     "Flash_Chanel_Count"),
    # an unclosed end tag: expat finds the bad token where the next element starts, one line on
    ("<Flash_Channel_Count>8</Flash_Channel_Count", 1, "not well-formed"),
])
def test_bad_ssdconfig_names_file_element_and_line(tmp_path: Path, bad: str, after: int, what: str) -> None:
    text = SSDCONFIG.read_text()
    want_line = text[:text.index("<Flash_Channel_Count>")].count("\n") + 1
    p = tmp_path / "broken.xml"
    p.write_text(text.replace("<Flash_Channel_Count>8</Flash_Channel_Count>", bad))
    with pytest.raises(MqsimXmlError) as e:
        mqsim_xml.parse_ssdconfig(p)
    assert e.value.path.endswith("broken.xml") and what in str(e.value)
    assert e.value.line == want_line + after
    assert isinstance(e.value, ConfigError)


@pytest.mark.parametrize("doctype", [
    # entity expansion ("billion laughs")
    '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
    # an external entity that would read a local file
    '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>',
])
def test_doctype_and_entities_are_refused(tmp_path: Path, doctype: str) -> None:
    root = "<Execution_Parameter_Set>"
    text = SSDCONFIG.read_text().replace(root, doctype + "\n" + root, 1)
    text = text.replace("<Seed>321</Seed>", "<Seed>&b;&e;</Seed>" if "b " in doctype else "<Seed>&e;</Seed>")
    p = tmp_path / "evil.xml"
    p.write_text(text)
    with pytest.raises(MqsimXmlError, match="DOCTYPE and entity declarations are refused") as e:
        mqsim_xml.parse_ssdconfig(p)
    assert e.value.line == text[:text.index("<!DOCTYPE")].count("\n") + 1


# -------------------------------------------------------------------------------------- workload.xml


def test_bandwidth_flow_interarrival_repeats_mqsims_integer_arithmetic(tmp_path: Path) -> None:
    """A BANDWIDTH flow does not read its queue depth (0 accepted); its mean gap is MQSim's integer one."""
    p = tmp_path / "w.xml"
    p.write_text(_workload([_flow("BANDWIDTH", qd=0, bandwidth=40_960_000)]))
    (sc,) = mqsim_xml.parse_workload(p)
    fl = sc.flows[0]
    # (40,960,000 / 512) / 8 = 10,000 requests/s -> 10^9 // 10,000 = 100,000 ns
    assert fl.mean_interarrival_s == pytest.approx(100e-6, rel=1e-15)
    p.write_text(_workload([_flow("BANDWIDTH", qd=0, bandwidth=40_000_000)]))
    # (40,000,000 // 512) // 8 = 9,765 -> 10^9 // 9,765 = 102,406 ns (integer divisions, as MQSim)
    assert mqsim_xml.parse_workload(p)[0].flows[0].mean_interarrival_s == pytest.approx(102_406e-9, rel=1e-15)


def test_queue_depth_flow_needs_a_queue_depth(tmp_path: Path) -> None:
    p = tmp_path / "w.xml"
    p.write_text(_workload([_flow("QUEUE_DEPTH", qd=0)]))
    with pytest.raises(MqsimXmlError, match="Average_No_of_Reqs_in_Queue") as e:
        mqsim_xml.parse_workload(p)
    assert e.value.line == 4  # the flow's opening element


def test_unknown_flow_element_is_refused_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "w.xml"
    p.write_text(_workload([_flow(extra="\n\t\t\t<Read_Percantage>50</Read_Percantage>")]))
    text = p.read_text()
    with pytest.raises(MqsimXmlError, match="Read_Percantage") as e:
        mqsim_xml.parse_workload(p)
    assert e.value.line == text[:text.index("<Read_Percantage>")].count("\n") + 1


# ------------------------------------------------------------------------------------ experiment=mqsim


def _run(tmp_path: Path, workload: str, *overrides: str) -> tuple[int, str, dict | None]:
    w = tmp_path / "workload.xml"
    w.write_text(workload)
    out = tmp_path / "run"
    r = ssdx("experiment=mqsim", f"mqsim.ssdconfig={SSDCONFIG}", f"mqsim.workload={w}",
             f"hydra.run.dir={out}", *overrides)
    s = json.loads((out / "summary.json").read_text()) if r.returncode == 0 else None
    return r.returncode, r.stderr, s


def test_closed_and_open_loop_flows_keep_their_definitions(tmp_path: Path) -> None:
    """Scenario 1, closed loop at QD8: Little's law, iops x mean response = 8.  Scenario 2, open loop at
    MQSim's BANDWIDTH rate, unsaturated: iops = the offered rate (Poisson count, 5 sigma)."""
    n, rate = 4000, 20_000  # requests, requests/s
    rc, err, s = _run(tmp_path, _workload([_flow(qd=8, read_pct=70, n=n)],
                                          [_flow("BANDWIDTH", qd=0, n=n, bandwidth=rate * 8 * 512)]))
    assert rc == 0, err
    closed, opened = s["scenarios"][0]["flows"][0], s["scenarios"][1]["flows"][0]
    for f in (closed, opened):
        assert f["requests"] == n == f["read_requests"] + f["write_requests"]
        assert f["mb_s"] == pytest.approx(f["iops"] * 4096 / 1e6, rel=1e-9)
        assert 0 < f["device_response_time_us"] < f["p99_response_time_us"]
    assert closed["read_requests"] / n == pytest.approx(0.7, abs=5 * math.sqrt(0.21 / n))
    assert closed["iops"] * closed["device_response_time_us"] * 1e-6 == pytest.approx(8, rel=0.03)
    assert s["scenarios"][0]["loop"] == "closed" and s["scenarios"][1]["loop"] == "open"
    assert opened["iops"] == pytest.approx(rate, rel=5 / math.sqrt(n))
    assert any("Priority_Class" in w for w in s["warnings"])  # not modelled, so named
    assert s["overrides"]["drive.channels"] == 8


def test_mapping_cache_misses_cost_a_translation_read(tmp_path: Path) -> None:
    """QD1 random reads over the whole drive: with MQSim's 2 MiB CMT almost every lookup misses and reads
    a translation page first, so the mean response grows by about one page read (t_R = 75 us plus its
    transfer); with Ideal_Mapping_Table it does not."""
    wl = _workload([_flow(qd=1, n=1500)])
    (tmp_path / "a").mkdir()
    rc, err, lru = _run(tmp_path / "a", wl)
    assert rc == 0, err
    ideal_cfg = tmp_path / "ideal.xml"
    ideal_cfg.write_text(SSDCONFIG.read_text().replace("<Ideal_Mapping_Table>false",
                                                       "<Ideal_Mapping_Table>true"))
    w = tmp_path / "w.xml"
    w.write_text(wl)
    r = ssdx("experiment=mqsim", f"mqsim.ssdconfig={ideal_cfg}", f"mqsim.workload={w}",
             f"hydra.run.dir={tmp_path / 'b'}")
    assert r.returncode == 0, r.stderr
    ideal = json.loads((tmp_path / "b" / "summary.json").read_text())
    extra = (lru["scenarios"][0]["flows"][0]["device_response_time_us"]
             - ideal["scenarios"][0]["flows"][0]["device_response_time_us"])
    assert 75.0 <= extra <= 75.0 + 40.0  # one t_R plus at most one channel transfer and a lookup


def test_a_field_set_on_the_command_line_wins_over_the_drive_file(tmp_path: Path) -> None:
    """The file asks for ``CMD_Suspension_Support = ERASE``; ``engine.suspension=none`` on the command line
    (what the warning about MQSim's schedulers advises) is what runs, and a warning names both values."""
    from ssdx.models.engine import mqsim_job

    cfg = {"mqsim": {"ssdconfig": str(SSDCONFIG), "workload": str(EXAMPLES / "workload.xml")},
           "drive": {}, "engine": {"suspension": "none", "map_hit_us": 0.5}}
    run_cfg, _, overrides, warnings = mqsim_job.load(cfg, frozenset({"engine.suspension"}))
    assert run_cfg["engine"]["suspension"] == "none" and "engine.suspension" not in overrides
    assert run_cfg["engine"]["map_hit_us"] == 0.0  # not given: the file's drive (MQSim's front end)
    assert any(w.startswith("engine.suspension = none from the command line, not erase") for w in warnings)
    run_cfg, _, _, _ = mqsim_job.load(cfg)  # nothing given: the file's value
    assert run_cfg["engine"]["suspension"] == "erase"
    rc, err, s = _run(tmp_path, _workload([_flow(qd=1, n=50)]), "engine.suspension=none")
    assert rc == 0, err
    assert any("engine.suspension = none from the command line" in w for w in s["warnings"])
    assert "engine.suspension" not in s["overrides"]


def test_mixed_loops_in_one_scenario_are_refused(tmp_path: Path) -> None:
    rc, err, _ = _run(tmp_path, _workload([_flow(qd=4), _flow("BANDWIDTH", qd=0, bandwidth=10_000_000)]))
    assert rc == 2
    assert "mqsim.workload" in err and "QUEUE_DEPTH" in err


def test_bad_workload_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    rc, err, _ = _run(tmp_path, _workload([_flow(qd=0)]))
    assert rc == 2
    assert "workload.xml:4" in err and "Average_No_of_Reqs_in_Queue" in err


def test_chip_as_die_folds_each_chip_into_one_die() -> None:
    """``mqsim.chip_as_die``: 8 channels x 4 chips of 2 dies become 4 dies per channel of twice the blocks:
    the capacity is kept, the die count halves, a multi-plane program takes the planes of one of a modelled
    die's two dies, and the warning says so."""
    o, _ = mqsim_xml.parse_ssdconfig(SSDCONFIG)
    c, warnings = mqsim_xml.parse_ssdconfig(SSDCONFIG, chip_as_die=True)
    assert c["drive.dies_per_channel"] == 4 and o["drive.dies_per_channel"] == 8
    assert c["drive.die_gbit"] == pytest.approx(2 * o["drive.die_gbit"], rel=1e-12)
    assert c["drive.user_capacity_gb"] == pytest.approx(o["drive.user_capacity_gb"], rel=1e-12)
    assert any("chip_as_die" in w for w in warnings)
    assert (c["engine.merge_dies"], o["engine.merge_dies"]) == (2, 1)
    folded = ("drive.dies_per_channel", "drive.die_gbit", "engine.merge_dies")
    assert {k: v for k, v in c.items() if k not in folded} == {k: v for k, v in o.items() if k not in folded}


def test_loaded_reads_with_translation_reads_keep_the_dies_capacity(tmp_path: Path) -> None:
    """Poisson 4 KiB random reads on MQSim's drive, each missing the mapping cache (a translation read,
    then the data read when it is in), offered at 83 % of what its 32 serialised chips can serve: every
    request is served at the offered rate, and the mean response is within 15 % of an event-ordered
    first-come-first-served simulation of the chips (``bench.mqsim_des``, which leaves out the front end,
    the channels and the host link that ssdx adds).  With one idle gap per die in the read booking the
    drive saturated at 138 k requests/s and the mean was 54 ms against 0.57 ms."""
    from bench import booking, mqsim_des

    busy, n = 0.83, 20_000
    rate = booking.rate_of(busy)  # MQSim's whole-nanosecond mean gap
    bandwidth = booking.per_second(busy) * 8 * 512
    rc, err, s = _run(tmp_path, _workload([_flow("BANDWIDTH", qd=0, n=n, bandwidth=bandwidth)]))
    assert rc == 0, err
    f = s["scenarios"][0]["flows"][0]
    des = mqsim_des.two_phase_fcfs(rate * 1e-6, 32, mqsim_des.T_MAP, mqsim_des.T_DATA, n, 1)
    assert f["iops"] == pytest.approx(rate, rel=0.03)
    assert f["device_response_time_us"] == pytest.approx(des, rel=0.15)


def test_chip_as_die_serialises_loaded_reads(tmp_path: Path) -> None:
    """QD64 random reads: with each chip one die the drive has half the independent servers, so it serves
    fewer reads per second, and each closed loop still obeys Little's law."""
    wl = _workload([_flow(qd=64, n=3000)])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    rc, err, dies = _run(tmp_path / "a", wl, "mqsim.chip_as_die=false")
    assert rc == 0, err
    rc, err, chips = _run(tmp_path / "b", wl)  # experiment=mqsim: MQSim's chips serialise
    assert rc == 0, err
    d, c = dies["scenarios"][0]["flows"][0], chips["scenarios"][0]["flows"][0]
    assert c["iops"] < 0.85 * d["iops"]
    for f in (d, c):
        assert f["iops"] * f["device_response_time_us"] * 1e-6 == pytest.approx(64, rel=0.05)


@pytest.mark.parametrize(("rate", "runs_at"), [(333, 1000 / 3), (200, 200), (400, 500), (533, 1000),
                                               (667, 1000), (800, 1000)])
def test_mqsims_channel_runs_at_its_whole_ns_period(rate: float, runs_at: float) -> None:
    """MQSim times two transfers as ``(sim_time_type)(1000 / rate) * 2`` ns: the period truncated to whole
    ns, so its 533-800 MT/s channels all run at 1000 MT/s."""
    assert mqsim_xml.mqsim_channel_mts(rate) == pytest.approx(runs_at, rel=1e-12)
    assert math.isinf(mqsim_xml.mqsim_channel_mts(1200))


def test_mqsim_arithmetic_is_an_option_named_in_the_warnings(tmp_path: Path) -> None:
    """``physical`` (default) reads 533 MT/s as 533 and times long DRAM accesses row by row; ``mqsim`` takes
    MQSim's channel period and DRAM formula, and says so; any other value is refused naming the field."""
    text = SSDCONFIG.read_text()
    start = text.index("<Channel_Transfer_Rate>")
    end = text.index("</Channel_Transfer_Rate>")
    p = tmp_path / "ssdconfig.xml"
    p.write_text(text[:start] + "<Channel_Transfer_Rate>533" + text[end:])
    o, w = mqsim_xml.parse_ssdconfig(p)
    assert o["drive.bus_mts"] == 533.0 and "engine.buffer_dram_formula" not in o
    assert not any("mqsim.arithmetic" in x for x in w)
    o, w = mqsim_xml.parse_ssdconfig(p, arithmetic="mqsim")
    assert o["drive.bus_mts"] == 1000.0 and o["engine.buffer_dram_formula"] == "mqsim"
    assert any("533 MT/s runs at 1000 MT/s" in x for x in w)
    from ssdx.models.engine import mqsim_job

    with pytest.raises(ConfigError) as e:
        mqsim_job.load({"mqsim": {"ssdconfig": str(p), "arithmetic": "exact"}})
    assert (e.value.field, e.value.value) == ("mqsim.arithmetic", "exact")


def _trace_workload(trace: Path, relays: int) -> str:
    return ('<?xml version="1.0"?>\n<MQSim_IO_Scenarios><IO_Scenario>\n<IO_Flow_Parameter_Set_Trace_Based>\n'
            f"<File_Path>{trace}</File_Path>\n<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>\n"
            f"<Relay_Count>{relays}</Relay_Count>\n<Time_Unit>NANOSECOND</Time_Unit>\n"
            "</IO_Flow_Parameter_Set_Trace_Based>\n</IO_Scenario></MQSim_IO_Scenarios>\n")


def test_a_trace_runs_whole_with_its_relays_unless_a_cap_is_given(tmp_path: Path) -> None:
    """MQSim replays a trace flow whole, ``Relay_Count`` times: 12,000 lines twice are 24,000 requests,
    more than the 20,000 a timed closed loop gets, with no warning; ``mqsim.requests_per_flow`` cuts the
    flow and says so."""
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{200_000 * i} 0 {8 * (i % 5000)} 8 {i % 2}\n" for i in range(12_000)))
    rc, err, s = _run(tmp_path, _trace_workload(trace, 2))
    assert rc == 0, err
    assert s["scenarios"][0]["flows"][0]["requests"] == 24_000
    assert not any("capped" in w for w in s["warnings"])
    rc, err, s = _run(tmp_path, _trace_workload(trace, 2), "mqsim.requests_per_flow=5000")
    assert rc == 0, err
    assert s["scenarios"][0]["flows"][0]["requests"] == 5000
    assert any("24000 requests capped at mqsim.requests_per_flow = 5000" in w for w in s["warnings"])


def test_a_timed_closed_loop_takes_timed_requests(tmp_path: Path) -> None:
    """A QUEUE_DEPTH flow stopped by ``Stop_Time`` has no count of its own: it runs
    ``mqsim.timed_requests``, named in a warning; a BANDWIDTH flow with ``Stop_Time`` runs every arrival
    before it (about rate x time)."""
    timed = _flow(qd=4, n=0).replace("<Stop_Time>0</Stop_Time>", "<Stop_Time>1000000000</Stop_Time>")
    rate = 3000
    opened = _flow("BANDWIDTH", qd=0, n=0, bandwidth=rate * 8 * 512).replace(
        "<Stop_Time>0</Stop_Time>", "<Stop_Time>1000000000</Stop_Time>")
    rc, err, s = _run(tmp_path, _workload([timed], [opened]), "mqsim.timed_requests=1500")
    assert rc == 0, err
    assert s["scenarios"][0]["flows"][0]["requests"] == 1500
    assert any("its count is mqsim.timed_requests = 1500" in w for w in s["warnings"])
    assert s["scenarios"][1]["flows"][0]["requests"] == pytest.approx(rate, abs=5 * math.sqrt(rate))


@pytest.mark.validation
def test_mqsims_preconditioning_leaves_the_runs_addresses_in_its_cmt_at_step_0(tmp_path: Path) -> None:
    """QD1 4 KiB random reads on MQSim's drive preconditioned to 50 %, with MQSim's arithmetic.  MQSim walks
    the addresses its preconditioning prepared, ordered as the run first touches them, with a step drawn
    from the drive's ``Seed`` (``mqsim_rng``, checked against MQSim's generator), bringing every step-th into
    its 2 MiB CMT: Seed 36 draws 0, so the run's first 233,016 pages are cached and its 800 reads read no
    translation page; Seed 321 draws 129, the cache starts empty and about every read misses."""
    from ssdx.workloads import mqsim_rng

    logical = int(511.27290691583994e9 // 8192)  # the drive's user capacity over its 8 KiB page
    assert [mqsim_rng.cmt_step(s, logical // 2, 2 * 2**20 // 9) for s in (36, 321)] == [0, 129]
    flow = _flow(qd=1, n=800).replace("<Initial_Occupancy_Percentage>0<", "<Initial_Occupancy_Percentage>50<")
    per_read = {}
    for seed in (36, 321):
        cfg = tmp_path / f"ssd{seed}.xml"
        cfg.write_text(SSDCONFIG.read_text().replace("<Seed>321</Seed>", f"<Seed>{seed}</Seed>")
                       .replace("<Enabled_Preconditioning>false<", "<Enabled_Preconditioning>true<"))
        w = tmp_path / "w.xml"
        w.write_text(_workload([flow]))
        out = tmp_path / f"run{seed}"
        r = ssdx("experiment=mqsim", f"mqsim.ssdconfig={cfg}", f"mqsim.workload={w}",
                 "mqsim.arithmetic=mqsim", f"hydra.run.dir={out}")
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        per_read[seed] = s["scenarios"][0]["flash"]["translation_reads"] / 800
        said = [x for x in s["warnings"] if "preconditioning fills its CMT" in x]
        assert len(said) == 1 and f"Seed {seed}" in said[0]
    assert per_read[36] == 0.0 and per_read[321] > 0.95
