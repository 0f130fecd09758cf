"""Cross-validation against MQSim: run MQSim on a matrix of cases, check its figures, compare with ssdx.

MQSim is the multi-queue SSD simulator of Tavakkol, Gómez-Luna, Sadrosadati, Ghose and Mutlu,
"MQSim: A Framework for Enabling Realistic Studies of Modern Multi-Queue SSD Devices", USENIX FAST
2018 (CMU SAFARI). This script

1. writes each case as MQSim's two input files (an ``Execution_Parameter_Set`` drive description and an
   ``MQSim_IO_Scenarios`` workload) — the drive is MQSim's own default ``ssdconfig.xml`` (8 channels x
   4 chips x 2 dies x 2 planes, MLC, 8 KiB pages, t_R 75 us, t_PROG 750 us, erase 3.8 ms, 333 MT/s
   NV-DDR2 channels, 2 MiB CMT, 256 MiB data cache, PCIe 4 lanes of 1 GB/s) and a smaller variant with
   fewer blocks per plane on which preconditioning to 50 % and 90 % occupancy is quick;
2. runs MQSim on each (``--mqsim PATH``), parses its ``*_scenario_N.xml`` result and records per flow
   the request counts, IOPS, bandwidth, device response time (mean, min, max) and MQSim's CPU time;
3. applies closed-form checks to MQSim's figures (Little's law for closed loops, the unloaded-read
   floor, the dies'/channels'/link's capacity) and records the verdict of each;
4. where ``ssdx.models.engine.mqsim_job`` is available, runs ssdx on the same XML files and writes a
side-by-side
   table (``table.md``, ``xval.json``).

MQSim writes figures only as the XML elements listed in ``MQSIM_FIELDS``, no percentile; its
response-time log gives one (``--p99``).

Usage::

    python bench/mqsim_xval.py --mqsim PATH_TO_MQSIM [--out bench/results/mqsim_xval] [--quick]
    python bench/mqsim_xval.py --mqsim PATH_TO_MQSIM --p99          # MQSim's p99, mqsim_p99.json
    python bench/mqsim_xval.py --mqsim PATH_TO_MQSIM --ssdx-only    # ssdx again, the table
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

# ----------------------------------------------------------------------------------------------------
# The drive: MQSim's default ssdconfig.xml (repository CMU-SAFARI/MQSim), parameter for parameter.
# ----------------------------------------------------------------------------------------------------

#: MQSim's default drive. Times in ns (MQSim's unit), sizes in bytes, rates in MT/s and GB/s per lane.
DEFAULT_DRIVE: dict[str, Any] = {
    "PCIe_Lane_Bandwidth": 1.0,  # GB/s per lane
    "PCIe_Lane_Count": 4,
    "Seed": 321,
    "Enabled_Preconditioning": False,
    "IO_Queue_Depth": 65535,
    "Queue_Fetch_Size": 512,
    "Caching_Mechanism": "ADVANCED",
    "Data_Cache_Sharing_Mode": "SHARED",
    "Data_Cache_Capacity": 268435456,
    "Data_Cache_DRAM_Row_Size": 8192,
    "Data_Cache_DRAM_Data_Rate": 100,
    "Data_Cache_DRAM_Data_Busrt_Size": 1,
    "Data_Cache_DRAM_tRCD": 13,
    "Data_Cache_DRAM_tCL": 13,
    "Data_Cache_DRAM_tRP": 13,
    "Ideal_Mapping_Table": False,
    "CMT_Capacity": 2097152,
    "Plane_Allocation_Scheme": "CWDP",
    "Transaction_Scheduling_Policy": "PRIORITY_OUT_OF_ORDER",
    "Overprovisioning_Ratio": 0.07,
    "GC_Exec_Threshold": 0.05,
    "GC_Block_Selection_Policy": "RGA",
    "GC_Hard_Threshold": 0.005,
    "Preferred_suspend_erase_time_for_read": 700000,
    "Preferred_suspend_erase_time_for_write": 700000,
    "Preferred_suspend_write_time_for_read": 100000,
    "Flash_Channel_Count": 8,
    "Flash_Channel_Width": 1,  # bytes
    "Channel_Transfer_Rate": 333,  # MT/s
    "Chip_No_Per_Channel": 4,
    "CMD_Suspension_Support": "ERASE",
    "Page_Read_Latency": 75000,
    "Page_Program_Latency": 750000,
    "Block_Erase_Latency": 3800000,
    "Suspend_Erase_Time": 700000,
    "Suspend_Program_Time": 100000,
    "Die_No_Per_Chip": 2,
    "Plane_No_Per_Die": 2,
    "Block_No_Per_Plane": 2048,
    "Page_No_Per_Block": 256,
    "Page_Capacity": 8192,
}

#: The smaller variant: the same drive with 256 blocks per plane (69 GiB raw instead of 550 GiB), so that
#: MQSim's preconditioning to 90 % occupancy runs in about a minute. With 64 blocks per plane MQSim's
#: preconditioner stops ("not possible to assign PPA to all LPAs in Allocate_address_for_preconditioning").
SMALL_BLOCKS_PER_PLANE = 256


def ssdconfig_xml(drive: dict[str, Any], log_period_ns: int | None = None) -> str:
    """MQSim's ``Execution_Parameter_Set`` for ``drive`` (the keys of ``DEFAULT_DRIVE``); with
    ``log_period_ns``, MQSim logs each flow's response time every that many ns (``Enable_ResponseTime_
    Logging``: the mean of the requests completed since the previous line, so with 1 ns one line a request
    unless two complete in the same ns)."""
    d = drive
    if log_period_ns is not None and log_period_ns <= 0:
        raise ValueError(f"log_period_ns = {log_period_ns}: MQSim's log period must be positive (ns)")
    log = "true" if log_period_ns else "false"
    period = int(log_period_ns or 1_000_000)

    def b(x: bool) -> str:
        return "true" if x else "false"

    # one latency for every page type unless the drive gives one per type (``Page_Read_Latency_LSB`` ...)
    lat = {f"{k}_{t}": d.get(f"{k}_{t}", d[k]) for k in ("Page_Read_Latency", "Page_Program_Latency")
           for t in ("LSB", "CSB", "MSB")}
    return f"""<?xml version="1.0" encoding="us-ascii"?>
<Execution_Parameter_Set>
	<Host_Parameter_Set>
		<PCIe_Lane_Bandwidth>{d['PCIe_Lane_Bandwidth']:.5f}</PCIe_Lane_Bandwidth>
		<PCIe_Lane_Count>{d['PCIe_Lane_Count']}</PCIe_Lane_Count>
		<SATA_Processing_Delay>400000</SATA_Processing_Delay>
		<Enable_ResponseTime_Logging>{log}</Enable_ResponseTime_Logging>
		<ResponseTime_Logging_Period_Length>{period}</ResponseTime_Logging_Period_Length>
	</Host_Parameter_Set>
	<Device_Parameter_Set>
		<Seed>{d['Seed']}</Seed>
		<Enabled_Preconditioning>{b(d['Enabled_Preconditioning'])}</Enabled_Preconditioning>
		<Memory_Type>FLASH</Memory_Type>
		<HostInterface_Type>{d.get('HostInterface_Type', 'NVME')}</HostInterface_Type>
		<IO_Queue_Depth>{d['IO_Queue_Depth']}</IO_Queue_Depth>
		<Queue_Fetch_Size>{d['Queue_Fetch_Size']}</Queue_Fetch_Size>
		<Caching_Mechanism>{d['Caching_Mechanism']}</Caching_Mechanism>
		<Data_Cache_Sharing_Mode>{d['Data_Cache_Sharing_Mode']}</Data_Cache_Sharing_Mode>
		<Data_Cache_Capacity>{d['Data_Cache_Capacity']}</Data_Cache_Capacity>
		<Data_Cache_DRAM_Row_Size>{d['Data_Cache_DRAM_Row_Size']}</Data_Cache_DRAM_Row_Size>
		<Data_Cache_DRAM_Data_Rate>{d['Data_Cache_DRAM_Data_Rate']}</Data_Cache_DRAM_Data_Rate>
		<Data_Cache_DRAM_Data_Busrt_Size>{d['Data_Cache_DRAM_Data_Busrt_Size']}</Data_Cache_DRAM_Data_Busrt_Size>
		<Data_Cache_DRAM_tRCD>{d['Data_Cache_DRAM_tRCD']}</Data_Cache_DRAM_tRCD>
		<Data_Cache_DRAM_tCL>{d['Data_Cache_DRAM_tCL']}</Data_Cache_DRAM_tCL>
		<Data_Cache_DRAM_tRP>{d['Data_Cache_DRAM_tRP']}</Data_Cache_DRAM_tRP>
		<Address_Mapping>PAGE_LEVEL</Address_Mapping>
		<Ideal_Mapping_Table>{b(d['Ideal_Mapping_Table'])}</Ideal_Mapping_Table>
		<CMT_Capacity>{d['CMT_Capacity']}</CMT_Capacity>
		<CMT_Sharing_Mode>SHARED</CMT_Sharing_Mode>
		<Plane_Allocation_Scheme>{d['Plane_Allocation_Scheme']}</Plane_Allocation_Scheme>
		<Transaction_Scheduling_Policy>{d['Transaction_Scheduling_Policy']}</Transaction_Scheduling_Policy>
		<Overprovisioning_Ratio>{d['Overprovisioning_Ratio']}</Overprovisioning_Ratio>
		<GC_Exec_Threshold>{d['GC_Exec_Threshold']:.5f}</GC_Exec_Threshold>
		<GC_Block_Selection_Policy>{d['GC_Block_Selection_Policy']}</GC_Block_Selection_Policy>
		<Use_Copyback_for_GC>false</Use_Copyback_for_GC>
		<Preemptible_GC_Enabled>false</Preemptible_GC_Enabled>
		<GC_Hard_Threshold>{d['GC_Hard_Threshold']:.6f}</GC_Hard_Threshold>
		<Dynamic_Wearleveling_Enabled>true</Dynamic_Wearleveling_Enabled>
		<Static_Wearleveling_Enabled>true</Static_Wearleveling_Enabled>
		<Static_Wearleveling_Threshold>100</Static_Wearleveling_Threshold>
		<Preferred_suspend_erase_time_for_read>{d['Preferred_suspend_erase_time_for_read']}</Preferred_suspend_erase_time_for_read>
		<Preferred_suspend_erase_time_for_write>{d['Preferred_suspend_erase_time_for_write']}</Preferred_suspend_erase_time_for_write>
		<Preferred_suspend_write_time_for_read>{d['Preferred_suspend_write_time_for_read']}</Preferred_suspend_write_time_for_read>
		<Flash_Channel_Count>{d['Flash_Channel_Count']}</Flash_Channel_Count>
		<Flash_Channel_Width>{d['Flash_Channel_Width']}</Flash_Channel_Width>
		<Channel_Transfer_Rate>{d['Channel_Transfer_Rate']}</Channel_Transfer_Rate>
		<Chip_No_Per_Channel>{d['Chip_No_Per_Channel']}</Chip_No_Per_Channel>
		<Flash_Comm_Protocol>NVDDR2</Flash_Comm_Protocol>
		<Flash_Parameter_Set>
			<Flash_Technology>{d.get('Flash_Technology', 'MLC')}</Flash_Technology>
			<CMD_Suspension_Support>{d['CMD_Suspension_Support']}</CMD_Suspension_Support>
			<Page_Read_Latency_LSB>{lat['Page_Read_Latency_LSB']}</Page_Read_Latency_LSB>
			<Page_Read_Latency_CSB>{lat['Page_Read_Latency_CSB']}</Page_Read_Latency_CSB>
			<Page_Read_Latency_MSB>{lat['Page_Read_Latency_MSB']}</Page_Read_Latency_MSB>
			<Page_Program_Latency_LSB>{lat['Page_Program_Latency_LSB']}</Page_Program_Latency_LSB>
			<Page_Program_Latency_CSB>{lat['Page_Program_Latency_CSB']}</Page_Program_Latency_CSB>
			<Page_Program_Latency_MSB>{lat['Page_Program_Latency_MSB']}</Page_Program_Latency_MSB>
			<Block_Erase_Latency>{d['Block_Erase_Latency']}</Block_Erase_Latency>
			<Block_PE_Cycles_Limit>10000</Block_PE_Cycles_Limit>
			<Suspend_Erase_Time>{d['Suspend_Erase_Time']}</Suspend_Erase_Time>
			<Suspend_Program_Time>{d['Suspend_Program_Time']}</Suspend_Program_Time>
			<Die_No_Per_Chip>{d['Die_No_Per_Chip']}</Die_No_Per_Chip>
			<Plane_No_Per_Die>{d['Plane_No_Per_Die']}</Plane_No_Per_Die>
			<Block_No_Per_Plane>{d['Block_No_Per_Plane']}</Block_No_Per_Plane>
			<Page_No_Per_Block>{d['Page_No_Per_Block']}</Page_No_Per_Block>
			<Page_Capacity>{d['Page_Capacity']}</Page_Capacity>
			<Page_Metadat_Capacity>448</Page_Metadat_Capacity>
		</Flash_Parameter_Set>
	</Device_Parameter_Set>
</Execution_Parameter_Set>
"""


# ----------------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------------

SECTOR = 512  # bytes, MQSim's SECTOR_SIZE_IN_BYTE
NS_PER_S = 1_000_000_000


@dataclass
class Case:
    """One MQSim run: a drive variant and one synthetic or trace flow.

    ``stop_time_s`` is MQSim's ``Stop_Time`` (whole seconds of simulated time, see ``closed_form``
    for why whole seconds); a trace runs to its end instead.
    """

    name: str
    kind: str = "synthetic"  # synthetic | trace | pair (two flows sharing the drive)
    drive: str = "default"  # default | small
    generator: str = "QUEUE_DEPTH"  # QUEUE_DEPTH | BANDWIDTH
    read_pct: int = 100
    qd: int = 1
    size_sectors: int = 8
    address: str = "RANDOM_UNIFORM"  # RANDOM_UNIFORM | STREAMING
    bandwidth_bps: int = 0  # bytes/s, BANDWIDTH generator only
    precondition: bool = False
    occupancy_pct: int = 0
    stop_time_s: int = 1
    trace: str = ""
    total_requests: int = 0  # MQSim's Total_Requests_To_Generate (with stop_time_s = 0)
    second_flow_qd: int = 0  # kind "pair": a second, identical flow at this queue depth
    drive_overrides: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def drive_params(self) -> dict[str, Any]:
        """The drive's parameters (``DEFAULT_DRIVE`` with this case's variant and overrides)."""
        d = dict(DEFAULT_DRIVE)
        if self.drive == "small":
            d["Block_No_Per_Plane"] = SMALL_BLOCKS_PER_PLANE
        d["Enabled_Preconditioning"] = self.precondition
        d.update(self.drive_overrides)
        return d

    def response_field(self) -> str:
        """MQSim's figure that ssdx's mean response compares with: ``Device_Response_Time`` (from the
        request's entry into the submission queue), or on a SATA drive ``End_to_End_Request_Delay`` (from
        the request's arrival): MQSim's SATA host bus adapter processes each submission, one at a time,
        before the request enters the queue, and ssdx's response, like the end-to-end delay, counts that
        wait (``ssdx.workloads.mqsim_xml``)."""
        sata = self.drive_params().get("HostInterface_Type") == "SATA"
        return "End_to_End_Request_Delay" if sata else "Device_Response_Time"

    def offered_iops(self) -> float:
        """The BANDWIDTH generator's actual mean arrival rate (requests/s).

        MQSim (``Host_System.cpp``) turns ``Bandwidth`` into a mean inter-arrival time with integer
        arithmetic, ``1e9 / ((Bandwidth / 512) / Average_Request_Size)`` ns; this repeats it.
        """
        if self.generator != "BANDWIDTH" or self.bandwidth_bps <= 0:
            return 0.0
        per_s = (self.bandwidth_bps // SECTOR) // self.size_sectors
        return NS_PER_S / (NS_PER_S // per_s)


def workload_xml(case: Case, trace_path: str = "") -> str:
    """MQSim's ``MQSim_IO_Scenarios`` with one scenario holding the case's single flow."""
    d = case.drive_params()
    ids = {k: ",".join(str(i) for i in range(int(d[k]))) for k in
           ("Flash_Channel_Count", "Chip_No_Per_Channel", "Die_No_Per_Chip", "Plane_No_Per_Die")}
    common = f"""			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
			<Channel_IDs>{ids['Flash_Channel_Count']}</Channel_IDs>
			<Chip_IDs>{ids['Chip_No_Per_Channel']}</Chip_IDs>
			<Die_IDs>{ids['Die_No_Per_Chip']}</Die_IDs>
			<Plane_IDs>{ids['Plane_No_Per_Die']}</Plane_IDs>
			<Initial_Occupancy_Percentage>{case.occupancy_pct}</Initial_Occupancy_Percentage>
"""
    if case.kind == "trace":
        flow = f"""		<IO_Flow_Parameter_Set_Trace_Based>
{common}			<File_Path>{trace_path}</File_Path>
			<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>
			<Relay_Count>1</Relay_Count>
			<Time_Unit>NANOSECOND</Time_Unit>
		</IO_Flow_Parameter_Set_Trace_Based>
"""
    else:
        flow = _synthetic_flow(case, common, case.qd, 798)
        if case.kind == "pair":
            flow += _synthetic_flow(case, common, case.second_flow_qd, 6533)
    return (
        '<?xml version="1.0" encoding="us-ascii"?>\n<MQSim_IO_Scenarios>\n\t<IO_Scenario>\n'
        + flow
        + "\t</IO_Scenario>\n</MQSim_IO_Scenarios>\n"
    )


def _synthetic_flow(case: Case, common: str, qd: int, seed: int) -> str:
    return f"""		<IO_Flow_Parameter_Set_Synthetic>
{common}			<Working_Set_Percentage>100</Working_Set_Percentage>
			<Synthetic_Generator_Type>{case.generator}</Synthetic_Generator_Type>
			<Read_Percentage>{case.read_pct}</Read_Percentage>
			<Address_Distribution>{case.address}</Address_Distribution>
			<Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>{case.size_sectors}</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>{case.size_sectors}</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>{seed}</Seed>
			<Average_No_of_Reqs_in_Queue>{qd}</Average_No_of_Reqs_in_Queue>
			<Bandwidth>{case.bandwidth_bps}</Bandwidth>
			<Stop_Time>{case.stop_time_s * NS_PER_S}</Stop_Time>
			<Total_Requests_To_Generate>{case.total_requests}</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
"""


QDS = (1, 4, 16, 64)
OPEN_LOOP_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9)
TRACES = ("tpcc-small.trace", "wsrch-small.trace")


def closed_loop_cases(quick: bool) -> list[Case]:
    """QD1..QD64 4 KiB random read / write / 70-30 mix, sequential 128 KiB, preconditioned variants."""
    cases: list[Case] = []
    mixes = (("randread", 100), ("randwrite", 0), ("mix70", 70))
    for label, rp in mixes:
        for qd in (QDS if not quick else (1, 16)):
            cases.append(Case(name=f"{label}_qd{qd}", read_pct=rp, qd=qd))
    for label, rp in (("seqread128k", 100), ("seqwrite128k", 0)):
        cases.append(Case(name=f"{label}_qd8", read_pct=rp, qd=8, size_sectors=256, address="STREAMING"))
    for occ in (50, 90):
        for label, rp in mixes[2:]:  # the 70/30 mix only: MQSim's preconditioning costs about a minute
            cases.append(Case(name=f"small_occ{occ}_{label}_qd16", drive="small", read_pct=rp, qd=16,
                              precondition=True, occupancy_pct=occ))
    return cases


def open_loop_cases(sat_iops: float, quick: bool) -> list[Case]:
    """Poisson 4 KiB random reads at fractions of the measured QD64 saturation rate."""
    out = []
    for f in (OPEN_LOOP_FRACTIONS if not quick else (0.1, 0.5, 0.9)):
        bw = int(round(f * sat_iops * 8 * SECTOR))
        out.append(Case(name=f"openread_{int(round(f * 100))}pct", generator="BANDWIDTH", qd=0,
                        bandwidth_bps=bw, note=f"{f:.0%} of the QD64 random-read rate"))
    return out


def trace_cases() -> list[Case]:
    """MQSim's two bundled traces (``traces/`` of its source tree), whole, on the default drive."""
    return [Case(name=t.replace("-small.trace", ""), kind="trace", trace=t, occupancy_pct=70,
                 stop_time_s=0) for t in TRACES]


def evidence_cases(sat_iops: float) -> list[Case]:
    """Re-runs with one MQSim mechanism switched, to measure (not guess) what it contributes
    (``sat_iops``: the QD64 random-read rate the open-loop cases are fractions of)."""
    open90 = open_loop_cases(sat_iops, False)[-1]
    loaded_reads = [
        replace(open90, name=f"{open90.name}_{label}", drive_overrides=over,
                note=f"{open90.name} (the same arrivals) {what}")
        for label, over, what in (
            ("ideal_map", {"Ideal_Mapping_Table": True},
             "with Ideal_Mapping_Table: the loaded reads without their translation reads"),
            ("8chips_1die", {"Chip_No_Per_Channel": 8, "Die_No_Per_Chip": 1},
             "with the same 64 dies as 8 one-die chips per channel: no chip holds two dies"),
            ("32ch_1chip", {"Flash_Channel_Count": 32, "Chip_No_Per_Channel": 1},
             "with the same 32 chips on 32 channels of one chip each: no channel shared"),
        )]
    beyond = [
        replace(open90, name=f"openread_{pct}pct{tag}",
                bandwidth_bps=int(round(pct / 100 * sat_iops * 8 * SECTOR)), drive_overrides=over,
                note=f"{pct} % of the QD64 random-read rate{what}: the chips busy three quarters of the "
                     "time and more, each read after its translation read")
        for pct in (110, 120)
        for tag, over, what in (("", {}, ""),
                                ("_32ch_1chip", {"Flash_Channel_Count": 32, "Chip_No_Per_Channel": 1},
                                 ", the 32 chips on 32 channels of one chip each"))]
    return loaded_reads + beyond + [
        Case(name="randread_qd16_ideal_map", read_pct=100, qd=16,
             drive_overrides={"Ideal_Mapping_Table": True}, note="randread_qd16 with Ideal_Mapping_Table"),
        Case(name="mix70_qd16_ideal_map", read_pct=70, qd=16,
             drive_overrides={"Ideal_Mapping_Table": True}, note="mix70_qd16 with Ideal_Mapping_Table"),
        Case(name="mix70_qd16_susp_prog_erase", read_pct=70, qd=16,
             drive_overrides={"CMD_Suspension_Support": "PROGRAM_ERASE"},
             note="mix70_qd16 with program and erase suspension"),
        Case(name="randwrite_qd16_ideal_map", read_pct=0, qd=16,
             drive_overrides={"Ideal_Mapping_Table": True}, note="randwrite_qd16 with Ideal_Mapping_Table"),
        Case(name="randwrite_qd16_dram800", read_pct=0, qd=16,
             drive_overrides={"Data_Cache_DRAM_Data_Rate": 800},
             note="randwrite_qd16 with the data cache's DRAM at 800 MT/s instead of 100"),
        Case(name="randwrite_qd16_tprog375", read_pct=0, qd=16,
             drive_overrides={"Page_Program_Latency": 375000},
             note="randwrite_qd16 with half the page program time: does MQSim's write ceiling follow it?"),
        Case(name="randwrite_qd16_ideal_map_tprog375", read_pct=0, qd=16,
             drive_overrides={"Page_Program_Latency": 375000, "Ideal_Mapping_Table": True},
             note="randwrite_qd16 with half the page program time and no mapping-table misses"),
        Case(name="randwrite_qd16_8chips_1die", read_pct=0, qd=16,
             drive_overrides={"Chip_No_Per_Channel": 8, "Die_No_Per_Chip": 1},
             note="randwrite_qd16 with the same 64 dies as 8 one-die chips per channel: is the write "
                  "ceiling per chip?"),
        Case(name="randwrite_qd16_2chips_4dies", read_pct=0, qd=16,
             drive_overrides={"Chip_No_Per_Channel": 2, "Die_No_Per_Chip": 4},
             note="randwrite_qd16 with the same 64 dies as 2 four-die chips per channel"),
        Case(name="randread_qd64_ideal_map", read_pct=100, qd=64,
             drive_overrides={"Ideal_Mapping_Table": True},
             note="randread_qd64 without mapping-table misses: where do MQSim's reads saturate?"),
        Case(name="randread_qd64_ideal_map_32ch_1chip", read_pct=100, qd=64,
             drive_overrides={"Ideal_Mapping_Table": True, "Flash_Channel_Count": 32,
                              "Chip_No_Per_Channel": 1},
             note="randread_qd64_ideal_map with the same 32 chips on 32 channels of one chip each: no "
                  "channel shared, so what is left is the chip held until its data is out"),
        Case(name="randread_qd64_ideal_map_4ch_8chips", read_pct=100, qd=64,
             drive_overrides={"Ideal_Mapping_Table": True, "Flash_Channel_Count": 4,
                              "Chip_No_Per_Channel": 8},
             note="randread_qd64_ideal_map with the same 32 chips on 4 channels of 8: how MQSim's channel "
                  "arbitration (waiting read data before new commands) costs as chips share a channel"),
        Case(name="randread_qd64_ideal_map_chan1333", read_pct=100, qd=64,
             drive_overrides={"Ideal_Mapping_Table": True, "Channel_Transfer_Rate": 1333},
             note="randread_qd64_ideal_map with channels four times faster"),
        Case(name="seqread128k_qd8_ideal_map", read_pct=100, qd=8, size_sectors=256, address="STREAMING",
             drive_overrides={"Ideal_Mapping_Table": True},
             note="seqread128k_qd8 without translation reads: its channels and chips alone"),
        Case(name="randread_qd64_32ch_1chip", read_pct=100, qd=64,
             drive_overrides={"Flash_Channel_Count": 32, "Chip_No_Per_Channel": 1},
             note="randread_qd64 with the same 32 chips on 32 channels of one chip each: the translation "
                  "and data reads of a closed loop with no channel shared"),
        Case(name="randread_qd64_8chips_1die", read_pct=100, qd=64,
             drive_overrides={"Chip_No_Per_Channel": 8, "Die_No_Per_Chip": 1},
             note="randread_qd64 with the same 64 dies as 8 one-die chips per channel"),
        Case(name="small_occ90_randwrite_qd16_10s", drive="small", read_pct=0, qd=16, precondition=True,
             occupancy_pct=90, stop_time_s=10,
             note="10 s of random writes on the 90 % full small drive: 1.5 GB, past the 256 MiB data "
                  "cache, so that garbage collection runs"),
        *(Case(name=f"randread_qd1_ideal_map{tag}", read_pct=100, qd=1,
               drive_overrides={"Ideal_Mapping_Table": True, "Flash_Channel_Width": width},
               note=f"unloaded reads without translation reads, a {width}-byte channel: t_R plus the "
                    "page's transfer, which a wider channel shortens")
          for tag, width in (("", 1), ("_chanwidth2", 2))),
        *(Case(name=f"sata_{mix}_qd{qd}", read_pct=pct, qd=qd, drive_overrides={"HostInterface_Type": "SATA"},
               note=f"{mix}_qd{qd} on a SATA drive: MQSim's host bus adapter processes every submission "
                    "and completion, 400 us each (SATA_Processing_Delay)")
          for mix, pct, qd in (("randread", 100, 1), ("randread", 100, 16), ("randwrite", 0, 16))),
        Case(name="pair_qd16_qd2_count", kind="pair", read_pct=100, qd=16, second_flow_qd=2, stop_time_s=0,
             total_requests=50000,
             note="two random-read flows (QD16, QD2) with equal request counts: the QD16 flow's IOPS is "
                  "divided by the whole scenario's clock (Little's-law suspect)"),
    ]


# ----------------------------------------------------------------------------------------------------
# Running MQSim and reading its result
# ----------------------------------------------------------------------------------------------------

#: The per-flow elements of MQSim's result file (``IO_Flow_Base::Report_results_in_XML``).
MQSIM_FIELDS = (
    "Request_Count", "Read_Request_Count", "Write_Request_Count", "IOPS", "IOPS_Read", "IOPS_Write",
    "Bytes_Transferred", "Bytes_Transferred_Read", "Bytes_Transferred_Write", "Bandwidth",
    "Bandwidth_Read", "Bandwidth_Write", "Device_Response_Time", "Min_Device_Response_Time",
    "Max_Device_Response_Time", "End_to_End_Request_Delay", "Min_End_to_End_Request_Delay",
    "Max_End_to_End_Request_Delay",
)


def _num(text: str | None, path: Path, tag: str) -> float | None:
    if text is None:
        return None
    t = text.strip()
    try:
        v = float(t)
    except ValueError as exc:
        raise ValueError(f"{path}: element {tag}: not a number: {t!r}") from exc
    return v if math.isfinite(v) else None  # MQSim writes inf / -nan for a 0 s denominator


def parse_result(path: Path) -> list[dict[str, Any]]:
    """The ``Host.IO_Flow`` elements of an MQSim result file, as dicts of numbers (None for inf/nan)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: line {exc.position[0]}: malformed XML: {exc}") from exc
    flows = []
    for el in root.iter("Host.IO_Flow"):
        rec: dict[str, Any] = {"Name": (el.findtext("Name") or "").strip()}
        for tag in MQSIM_FIELDS:
            rec[tag] = _num(el.findtext(tag), path, tag)
        flows.append(rec)
    if not flows:
        raise ValueError(f"{path}: no Host.IO_Flow element")
    return flows


#: MQSim's flash-command counters (the ``SSDDevice.FTL`` element of its result file)
MQSIM_FTL_FIELDS = (
    "Issued_Flash_Read_CMD", "Issued_Flash_Multiplane_Read_CMD", "Issued_Flash_Program_CMD",
    "Issued_Flash_Multiplane_Program_CMD", "Issued_Flash_Erase_CMD", "Issued_Flash_Read_CMD_For_Mapping",
    "Issued_Flash_Program_CMD_For_Mapping", "Total_GC_Executions",
)


def parse_ftl(path: Path) -> dict[str, float | None]:
    """MQSim's flash-command counters (:data:`MQSIM_FTL_FIELDS`) from its result file; {} if absent."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{path}: line {exc.position[0]}: malformed XML: {exc}") from exc
    el = next(root.iter("SSDDevice.FTL"), None)
    if el is None:
        return {}
    return {k: _num(el.get(k), path, f"SSDDevice.FTL@{k}") for k in MQSIM_FTL_FIELDS}


def flash_per_request(ftl: dict[str, Any], requests: int, planes: int) -> dict[str, float | None]:
    """MQSim's counters as flash work per host request: pages programmed (a multi-plane program counted
    as ``planes`` pages, an upper bound), program commands of host data (a multi-plane program counted
    once), translation pages read and programmed."""
    if not ftl or not requests:
        return {}
    g = lambda k: ftl.get(k) or 0.0  # noqa: E731
    programs = g("Issued_Flash_Program_CMD") + planes * g("Issued_Flash_Multiplane_Program_CMD")
    commands = g("Issued_Flash_Program_CMD") + g("Issued_Flash_Multiplane_Program_CMD")
    return {"page_programs": (programs - g("Issued_Flash_Program_CMD_For_Mapping")) / requests,
            "program_commands": (commands - g("Issued_Flash_Program_CMD_For_Mapping")) / requests,
            "translation_reads": g("Issued_Flash_Read_CMD_For_Mapping") / requests,
            "translation_programs": g("Issued_Flash_Program_CMD_For_Mapping") / requests}


def write_case_files(case: Case, workdir: Path, mqsim_src: Path | None,
                     log_period_ns: int | None = None) -> tuple[Path, Path]:
    """Write the case's ``ssdconfig.xml`` (MQSim's response-time log on with ``log_period_ns``) and
    ``workload.xml`` (and copy its trace) into ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    trace_path = ""
    if case.kind == "trace":
        if mqsim_src is None or not (mqsim_src / "traces" / case.trace).is_file():
            raise FileNotFoundError(f"trace {case.trace} not found under MQSim's source tree traces/")
        shutil.copy(mqsim_src / "traces" / case.trace, workdir / case.trace)
        trace_path = case.trace
    ssd = workdir / "ssdconfig.xml"
    wl = workdir / "workload.xml"
    ssd.write_text(ssdconfig_xml(case.drive_params(), log_period_ns))
    wl.write_text(workload_xml(case, trace_path))
    return ssd, wl


def run_mqsim(binary: Path, case: Case, workdir: Path, mqsim_src: Path | None,
              log_period_ns: int | None = None, timeout_s: float | None = None) -> dict[str, Any]:
    """Write the case's XML files in ``workdir``, run MQSim (stopped after ``timeout_s`` s of wall time,
    a ``RuntimeError``), return its flows and CPU/wall time; with ``log_period_ns`` also its first flow's
    response-time log (``response_log``, µs, one value a line: :func:`parse_response_log`)."""
    ssd, wl = write_case_files(case, workdir, mqsim_src, log_period_ns)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(binary), "-i", ssd.name, "-w", wl.name], cwd=workdir,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"MQSim stopped on {case.name} after {timeout_s:g} s of wall time") from None
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = workdir / "workload_scenario_1.xml"
    if proc.returncode != 0 or not out.is_file():
        raise RuntimeError(f"MQSim failed on {case.name} (exit {proc.returncode}): {proc.stdout[-2000:]}"
                           f"{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    flows = parse_result(out)
    n = sum(int(f["Request_Count"] or 0) for f in flows)
    res = {"flows": flows, "ftl": parse_ftl(out), "wall_s": wall, "cpu_s": cpu, "requests": n,
           "cpu_us_per_request": 1e6 * cpu / n if n else None}
    if log_period_ns:  # named after the workload file: <workload less its extension>.IO_Flow.No_0.log
        column = 2 if case.response_field() == "End_to_End_Request_Delay" else 1
        res["response_log"] = parse_response_log(workdir / f"{wl.stem}.IO_Flow.No_0.log", column)
    return res


def parse_response_log(path: Path, column: int) -> np.ndarray:
    """One column of MQSim's response-time log (``IO_Flow_Base``: a header, then per line the simulated
    time, the mean device response time and the mean end-to-end delay, in whole µs, of the requests
    completed since the previous line): column 1 the device response, 2 the end-to-end delay.  A line
    that is not three integers names the file and the line."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read MQSim's response-time log: {exc}") from exc
    if not lines or not lines[0].startswith("SimulationTime"):
        raise ValueError(f"{path}: line 1: not MQSim's response-time log header")
    out = np.empty(len(lines) - 1)
    for i, line in enumerate(lines[1:]):
        parts = line.split("\t")
        try:
            if len(parts) != 3:
                raise ValueError(f"{len(parts)} fields")
            out[i] = float(int(parts[column]))
        except ValueError as exc:
            raise ValueError(f"{path}: line {i + 2}: expected three integers separated by tabs: "
                             f"{line[:80]!r} ({exc})") from exc
    return out


# ----------------------------------------------------------------------------------------------------
# Closed-form checks on MQSim's figures
# ----------------------------------------------------------------------------------------------------


def drive_bounds(drive: dict[str, Any], size_bytes: int) -> dict[str, float]:
    """Physical limits of the drive for requests of ``size_bytes`` (4 KiB random or 128 KiB sequential).

    - unloaded read floor (us): one page read t_R, the request's bytes over one channel
      (``Channel_Transfer_Rate`` MT/s x ``Flash_Channel_Width`` bytes) and over the PCIe link
      (lanes x GB/s); command/address cycles, firmware and DRAM time only add to it.
    - read capacity (IOPS): every plane of every die reading one page per t_R (pages per request
      rounded up), every channel busy moving the request's bytes, the link moving them — the least.
    - flash write capacity (IOPS): every plane programming a page per t_PROG, channel and link as above.
    """
    d = drive
    ch_bps = d["Channel_Transfer_Rate"] * 1e6 * d["Flash_Channel_Width"]
    link_bps = d["PCIe_Lane_Count"] * d["PCIe_Lane_Bandwidth"] * 1e9
    dies = d["Flash_Channel_Count"] * d["Chip_No_Per_Channel"] * d["Die_No_Per_Chip"]
    planes = dies * d["Plane_No_Per_Die"]
    pages = math.ceil(size_bytes / d["Page_Capacity"])
    t_r = d["Page_Read_Latency"] * 1e-9
    t_p = d["Page_Program_Latency"] * 1e-9
    chan_iops = d["Flash_Channel_Count"] * ch_bps / size_bytes
    link_iops = link_bps / size_bytes
    # A request smaller than a page occupies a whole page's read (no two 4 KiB reads share one t_R
    # unless they address the same page, which uniform random addressing makes negligible).
    read_die_iops = planes / t_r / pages
    write_die_iops = planes * d["Page_Capacity"] / t_p / size_bytes  # sub-page writes are merged in pages
    return {
        "read_floor_us": 1e6 * (t_r + min(size_bytes, d["Page_Capacity"]) / ch_bps + size_bytes / link_bps),
        "read_iops_cap": min(read_die_iops, chan_iops, link_iops),
        "write_flash_iops_cap": min(write_die_iops, chan_iops, link_iops),
        "link_iops_cap": link_iops,
    }


def little_tolerance(qd: int, n: int, mean_us: float) -> float:
    """Relative tolerance on ``IOPS x mean response = QD`` for a finite closed-loop run.

    Three honest sources of error, added: (1) MQSim truncates the mean response to whole microseconds
    (``Get_device_response_time`` casts to ``uint32_t``), up to ``1/mean_us``; (2) the run's edges — the
    first QD requests start together and the last ones are cut by ``Stop_Time``, at most ``QD/N`` of the
    requests; (3) 2 % for the host-side time outside the device response (submission-queue doorbell
    and completion handling, counted in neither figure).
    """
    return 0.02 + (qd / n if n else 1.0) + (1.0 / mean_us if mean_us > 0 else 1.0)


def closed_form(case: Case, flow: dict[str, Any], wall_stop_s: int | None = None) -> dict[str, Any]:
    """The closed-form checks on one MQSim flow; each entry ``{"pass": bool|None, ...}``.

    ``None`` means the check does not apply (or MQSim gave no finite figure to check).
    MQSim computes IOPS as ``count / (Time_ns / 1000000000)`` with integer division
    (``IO_Flow_Base::Report_results_in_XML``; ``sim_time_type`` is ``uint64_t`` and
    ``SIM_TIME_TO_SECONDS_COEFF`` the integer 1000000000): the denominator is the simulated time rounded
    *down* to whole seconds, and the clock it reads runs until MQSim's event list is empty — past the
    last host request, through any write-back of the data cache and garbage collection still queued.
    """
    drive = case.drive_params()
    size = case.size_sectors * SECTOR
    b = drive_bounds(drive, size)
    iops = flow.get("IOPS")
    r_us = flow.get(case.response_field())
    n = int(flow.get("Request_Count") or 0)
    out: dict[str, Any] = {"bounds": b}

    # Little's law (closed loop only).
    if case.kind in ("synthetic", "pair") and case.generator == "QUEUE_DEPTH" and iops and r_us:
        l_obs = iops * r_us * 1e-6
        tol = little_tolerance(case.qd, n, r_us)
        rel = l_obs / case.qd - 1.0
        out["little"] = {"pass": abs(rel) <= tol, "outstanding": l_obs, "qd": case.qd, "rel_err": rel,
                         "tol": tol}
    else:
        out["little"] = {"pass": None}

    # Unloaded read floor: every read response at least t_R + channel + link.
    rd = flow.get("Read_Request_Count") or 0
    wr = flow.get("Write_Request_Count") or 0
    mn = flow.get(f"Min_{case.response_field()}")
    if case.kind in ("synthetic", "pair") and rd and not wr and mn is not None:
        out["read_floor"] = {"pass": mn >= math.floor(b["read_floor_us"]), "min_us": mn,
                             "floor_us": b["read_floor_us"]}
    else:
        out["read_floor"] = {"pass": None}

    # Capacity: reads within the dies'/channels'/link's read rate; writes within flash rate plus what
    # the data cache can absorb over the run (cache bytes / request bytes / run time).
    ir, iw = flow.get("IOPS_Read"), flow.get("IOPS_Write")
    if iops:
        run_s = n / iops if iops else 0.0
        cache_iops = drive["Data_Cache_Capacity"] / size / run_s if run_s > 0 else math.inf
        cap_r = b["read_iops_cap"]
        cap_w = b["write_flash_iops_cap"] + cache_iops
        # Time-sharing the drive between reads and writes: the fractions of capacity must sum to <= 1.
        load = (ir or 0.0) / cap_r + (iw or 0.0) / cap_w
        out["capacity"] = {"pass": load <= 1.0 and iops <= b["link_iops_cap"], "load": load,
                           "read_cap": cap_r, "write_cap": cap_w}
    else:
        out["capacity"] = {"pass": None}
    return out


# ----------------------------------------------------------------------------------------------------
# The ssdx side
# ----------------------------------------------------------------------------------------------------


def run_ssdx(workdir: Path, overrides: list[str] | None = None) -> dict[str, Any] | None:
    """ssdx's figures on the case's XML files, run as a user runs them (``ssdx experiment=mqsim ...``).

    ``overrides`` are further Hydra overrides.  Returns the first flow of the first scenario, the requests
    of all its flows (the drive-wide counters' denominator, as MQSim's), the wall time and the child's CPU
    time (which includes starting Python and JAX and compiling), or None where ssdx is not installed.
    """
    if importlib.util.find_spec("ssdx") is None:
        return None
    out_dir = workdir / "ssdx"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ssdx.cli.main", "experiment=mqsim",
         f"mqsim.ssdconfig={workdir / 'ssdconfig.xml'}", f"mqsim.workload={workdir / 'workload.xml'}",
         f"hydra.run.dir={out_dir}", *(overrides or [])],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        env={**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "Agg"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"ssdx exit {proc.returncode}: {(proc.stdout + proc.stderr)[-600:]}")
    summary = json.loads((out_dir / "summary.json").read_text())
    flows = summary["scenarios"][0]["flows"]
    return {"flow": flows[0], "requests": sum(int(f.get("requests") or 0) for f in flows),
            "flash": summary["scenarios"][0].get("flash", {}), "wall_s": wall,
            "summary_warnings": len(summary.get("warnings", [])),
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def ssdx_requests(rec: dict[str, Any]) -> int:
    """Requests per flow for ssdx: as many as MQSim executed in the case (its ``Stop_Time`` or its count),
    at least 1,000."""
    return max(max(int(f["Request_Count"] or 0) for f in rec["mqsim"]["flows"]), 1000)


def count_overrides(n: int) -> list[str]:
    """The Hydra overrides that run ``n`` requests per flow: every flow capped there, and a closed loop
    stopped by ``Stop_Time`` (which has no count of its own) given that count."""
    return [f"mqsim.requests_per_flow={n}", f"mqsim.timed_requests={n}"]


#: cases timed by ``--speed``: a closed-loop read, a mixed load, a write load and MQSim's bursty trace
SPEED_CASES = ("randread_qd16", "mix70_qd16", "randwrite_qd16", "tpcc")


def compose_mqsim(workdir: Path, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The configuration ``ssdx experiment=mqsim`` composes, in this process, for a case's XML files in
    ``workdir`` with the further Hydra ``overrides`` (a plain dict, interpolations resolved)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from ssdx.cli import main as cli_main
    from ssdx.cli import schema
    from ssdx.paths import conf_dir

    schema.register()
    cli_main.register_sweeps()
    ov = ["experiment=mqsim", f"mqsim.ssdconfig={workdir / 'ssdconfig.xml'}",
          f"mqsim.workload={workdir / 'workload.xml'}", *overrides]
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        return OmegaConf.to_container(compose("config", ov), resolve=True)


def ssdx_stream(workdir: Path, requests: int, backend: str = "auto") -> tuple[dict[str, Any], Any]:
    """The configuration ``ssdx experiment=mqsim`` composes for a case's XML files in ``workdir`` (read
    with ``ssdx.models.engine.mqsim_job.load``) and its first scenario's request stream (one flow), at
    most ``requests`` requests: ``(config, chunk)``."""
    from ssdx.models.engine.mqsim_job import load, scenario_streams

    cfg = compose_mqsim(workdir, [*count_overrides(requests), f"engine.backend={backend}"])
    run_cfg, scenarios, _, _ = load(cfg)
    run_cfg_s, chunks, _ = scenario_streams(run_cfg, scenarios[0], 0, [])
    return run_cfg_s, chunks[0]


def ssdx_speed(workdir: Path, requests: int, batches: tuple[int, ...],
               backend: str = "auto") -> list[dict[str, Any]]:
    """ssdx's engine on a case's XML files with ``B`` configurations per batch, each ``B`` of ``batches``.

    The configuration is composed as the ``ssdx`` command composes it (``experiment=mqsim`` and the two
    files), read with ``ssdx.models.engine.mqsim_job.load``; the first scenario's stream (one flow) is
    replayed once
    through ``B`` copies of the drive (every copy costs the engine the same as a different drive would:
    its work does not depend on the values).  Compile time apart; ``run_s`` is the replay's own time.
    """
    from ssdx.models.engine import params as engine_params
    from ssdx.models.engine import replay

    run_cfg_s, stream = ssdx_stream(workdir, requests, backend)
    rows = []
    for b in batches:
        _, trees = engine_params.build_from_config(run_cfg_s, n=b)
        res = replay.replay(trees, [stream], chunk_len=min(replay.DEFAULT_CHUNK, len(stream)),
                            backend=run_cfg_s["engine"].get("backend", "auto"))
        rate = b * len(stream) / res.run_s
        rows.append({"configs": b, "requests": len(stream), "compile_s": res.compile_s, "run_s": res.run_s,
                     "config_requests_per_s": rate, "us_per_config_request": 1e6 / rate})
    return rows


def rel(a: float | None, b: float | None) -> float | None:
    """(a - b) / b, or None where either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b


# ----------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------


def mqsim_commit(binary: Path) -> str:
    """The commit of the MQSim source tree the binary sits in (``MQSIM_COMMIT`` overrides)."""
    env = os.environ.get("MQSIM_COMMIT")
    if env:
        return env
    try:
        return subprocess.run(["git", "-C", str(binary.parent), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the matrix; write ``mqsim_reference.json`` (and ``xval.json``/``table.md`` when ssdx can run)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mqsim", type=Path, required=True,
                    help="MQSim binary (its source tree holds traces/; --ssdx-only reads only the traces)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/mqsim_xval"))
    ap.add_argument("--quick", action="store_true", help="a subset of the cases")
    ap.add_argument("--no-ssdx", action="store_true", help="MQSim only")
    ap.add_argument("--only", default="", help="comma-separated case names: run these, merge into the "
                    "existing mqsim_reference.json")
    ap.add_argument("--ssdx-only", action="store_true",
                    help="run ssdx on every case of the existing mqsim_reference.json (MQSim is not run) and "
                         "write xval.json and table.md; with --only, on those cases, merged into them")
    ap.add_argument("--speed", default="", help="comma-separated batch sizes: time ssdx's engine on the "
                    f"cases {', '.join(SPEED_CASES)} with that many configurations per batch against MQSim's "
                    "CPU time per request (from the existing mqsim_reference.json); writes speed.json")
    ap.add_argument("--mqsim-arithmetic", action="store_true",
                    help="with --ssdx-only: run ssdx with mqsim.arithmetic=mqsim (MQSim's channel period and "
                         "DRAM formula), into xval_mqsim_arithmetic.json and table_mqsim_arithmetic.md")
    ap.add_argument("--independent-dies", action="store_true",
                    help="with --ssdx-only: run ssdx with mqsim.chip_as_die=false, every die of a chip "
                         "independent (experiment=mqsim serialises a chip's dies as MQSim does); writes "
                         "xval_independent_dies.json and its table")
    ap.add_argument("--p99", action="store_true",
                    help="run MQSim again on every case of the existing mqsim_reference.json (with --only, "
                         "on those) with its response-time log on, one line a request, and write "
                         "mqsim_p99.json (MQSim's p99, which --ssdx-only then compares)")
    args = ap.parse_args(argv)
    binary = args.mqsim.resolve()
    ref_path = args.out / "mqsim_reference.json"
    if args.p99:
        if not ref_path.is_file() or not binary.is_file():
            ap.error(f"--p99 needs an existing {ref_path} and the MQSim binary")
        write_mqsim_p99(json.loads(ref_path.read_text()), binary, args.out,
                        [x for x in args.only.split(",") if x])
        return 0
    if args.speed:
        if not ref_path.is_file():
            ap.error(f"--speed needs an existing {ref_path}")
        write_speed(json.loads(ref_path.read_text()), binary, args.out,
                    tuple(int(x) for x in args.speed.split(",")))
        return 0
    if args.ssdx_only:
        if not ref_path.is_file():
            ap.error(f"--ssdx-only needs an existing {ref_path}")
        ref = json.loads(ref_path.read_text())
        only = [x for x in args.only.split(",") if x]
        unknown = [x for x in only if x not in ref["cases"]]
        if unknown:
            ap.error(f"--only: not in {ref_path}: {', '.join(unknown)}")
        tmp = Path(tempfile.mkdtemp(prefix="mqsim_xval_"))
        for name, rec in ref["cases"].items():
            if "error" not in rec and (not only or name in only):
                case = Case(**rec["case"])
                write_case_files(case, tmp / name, binary.parent)
        if args.mqsim_arithmetic:
            write_xval(ref, tmp, args.out, suffix="_mqsim_arithmetic", overrides=["mqsim.arithmetic=mqsim"],
                       only=only)
        elif args.independent_dies:
            write_xval(ref, tmp, args.out, suffix="_independent_dies", overrides=["mqsim.chip_as_die=false"],
                       only=only)
        else:
            write_xval(ref, tmp, args.out, only=only)
        return 0
    if not binary.is_file():
        ap.error(f"--mqsim {args.mqsim}: no such file")
    src = binary.parent
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="mqsim_xval_"))

    cases = closed_loop_cases(args.quick)
    results: dict[str, Any] = {}
    only = [x for x in args.only.split(",") if x]

    def do(case: Case) -> None:
        try:
            r = run_mqsim(binary, case, tmp / case.name, src)
        except (RuntimeError, FileNotFoundError, ValueError) as exc:
            results[case.name] = {"case": asdict(case), "error": str(exc)[-600:]}
            print(f"{case.name}: {exc}", flush=True)
            return
        f = r["flows"][0]
        checks = closed_form(case, f)
        results[case.name] = {"case": asdict(case), "mqsim": r, "checks": checks}
        print(f"{case.name:36s} IOPS {f['IOPS']!s:>14}  resp {f['Device_Response_Time']!s:>8} us  "
              f"n {r['requests']:>8}  cpu {r['cpu_s']:.2f} s  little {checks['little'].get('pass')} "
              f"floor {checks['read_floor'].get('pass')} cap {checks['capacity'].get('pass')}", flush=True)

    if only:
        if not ref_path.is_file():
            ap.error(f"--only needs an existing {ref_path}")
        old = json.loads(ref_path.read_text())
        sat = old["saturation_iops_qd64_randread"]
        pool = {c.name: c for c in cases + open_loop_cases(sat, False) + trace_cases() + evidence_cases(sat)}
        unknown = [x for x in only if x not in pool]
        if unknown:
            ap.error(f"--only: unknown case(s) {', '.join(unknown)}")
        for x in only:
            do(pool[x])
            if pool[x].generator == "BANDWIDTH":
                results[x]["offered_iops"] = pool[x].offered_iops()
        old["cases"].update(results)
        ref_path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
        print(f"updated {ref_path}")
        return 0
    for c in cases:
        do(c)
    sat = results["randread_qd64"]["mqsim"]["flows"][0]["IOPS"] if "randread_qd64" in results else \
        results["randread_qd16"]["mqsim"]["flows"][0]["IOPS"]
    for c in open_loop_cases(sat, args.quick):
        do(c)
        results[c.name]["offered_iops"] = c.offered_iops()
    for c in trace_cases():
        do(c)
    if not args.quick:
        for c in evidence_cases(sat):
            do(c)
            if c.generator == "BANDWIDTH":
                results[c.name]["offered_iops"] = c.offered_iops()

    ref = {
        "mqsim": {"repository": "CMU-SAFARI/MQSim", "commit": mqsim_commit(binary),
                  "citation": "Tavakkol et al., MQSim: A Framework for Enabling Realistic Studies of Modern "
                              "Multi-Queue SSD Devices, USENIX FAST 2018"},
        "host_cpu": os.cpu_count(),
        "saturation_iops_qd64_randread": sat,
        "default_drive": DEFAULT_DRIVE,
        "small_blocks_per_plane": SMALL_BLOCKS_PER_PLANE,
        "cases": results,
    }
    ref_path.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print(f"wrote {ref_path}")

    if not args.no_ssdx:
        write_xval(ref, tmp, args.out)
    return 0


#: MQSim's response-time log period for the p99 runs (ns): one line a request (:func:`ssdconfig_xml`)
LOG_PERIOD_NS = 1


def write_mqsim_p99(ref: dict[str, Any], binary: Path, out: Path, only: Sequence[str] = ()) -> None:
    """Run MQSim again on every case of ``ref`` with its response-time log on (:data:`LOG_PERIOD_NS`) and
    write ``mqsim_p99.json``: per case, the 99th percentile of its first flow's logged response times (the
    figure the case compares, device response or end-to-end delay; numpy's linear interpolation between
    the logged values), the lines logged against the requests (fewer where several completed in one ns
    and were logged as their mean), and whether the run's figures equal the reference run's (the log
    changes nothing MQSim simulates).  With ``only``, those cases merged into the existing file."""
    path = out / "mqsim_p99.json"
    cases = json.loads(path.read_text())["cases"] if only and path.is_file() else {}
    with tempfile.TemporaryDirectory(prefix="mqsim_p99_") as tmp_dir:
        for name, rec in ref["cases"].items():
            if "error" not in rec and (not only or name in only):
                cases[name] = _p99_case(binary, Case(**rec["case"]), rec, Path(tmp_dir) / name)
                print(f"{name:36s} p99 {cases[name]['p99_us']!s:>8} us  lines {cases[name]['lines']:>8} of "
                      f"{cases[name]['requests']:>8}  same figures {cases[name]['same_as_reference']}",
                      flush=True)
    doc = {"mqsim": {"repository": "CMU-SAFARI/MQSim", "commit": mqsim_commit(binary)},
           "log_period_ns": LOG_PERIOD_NS,
           "percentile": "numpy.percentile(logged values, 99), linear; MQSim logs whole µs, truncated, so "
                         "up to 1 µs low",
           "command": "python -m bench.mqsim_xval --mqsim PATH --p99", "cases": dict(sorted(cases.items()))}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}")


def _p99_case(binary: Path, case: Case, rec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """One case of :func:`write_mqsim_p99`: MQSim run in ``workdir`` with its log on, its first flow's p99
    (µs), lines and requests, the log's mean and whether the figures equal the reference run's ``rec``."""
    r = run_mqsim(binary, case, workdir, binary.parent, LOG_PERIOD_NS)
    v, f0, f_ref = r["response_log"], r["flows"][0], rec["mqsim"]["flows"][0]
    same = all(f0.get(k) == f_ref.get(k) for k in ("IOPS", "Request_Count", case.response_field()))
    return {"p99_us": float(np.percentile(v, 99)) if v.size else None, "lines": int(v.size),
            "requests": int(f0["Request_Count"] or 0), "log_mean_us": float(v.mean()) if v.size else None,
            "mean_us": f0[case.response_field()], "same_as_reference": same}


def write_xval(ref: dict[str, Any], tmp: Path, out: Path, suffix: str = "",
               overrides: Sequence[str] = (), only: Sequence[str] = ()) -> None:
    """Run ssdx on every case's XML files (with the further Hydra ``overrides``) and write
    ``xval{suffix}.json`` and ``table{suffix}.md``; with ``only``, on those cases, their rows merged into
    the existing ``xval{suffix}.json``.  MQSim's p99 comes from ``mqsim_p99.json`` where it is recorded
    (:func:`write_mqsim_p99`)."""
    path = out / f"xval{suffix}.json"
    rows = json.loads(path.read_text()) if only and path.is_file() else {}
    p99_path = out / "mqsim_p99.json"
    p99_ref = json.loads(p99_path.read_text())["cases"] if p99_path.is_file() else {}
    for name, rec in ref["cases"].items():
        if "error" in rec or (only and name not in only):
            continue
        t0 = time.perf_counter()
        try:
            s = run_ssdx(tmp / name, [*count_overrides(ssdx_requests(rec)), *overrides])
        except Exception as exc:  # noqa: BLE001 - one case's failure is recorded, the others still run
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"[-600:]}
            print(f"{name}: ssdx failed: {rows[name]['error']}", flush=True)
            continue
        if s is None:
            print("ssdx.models.engine.mqsim_job not available: no side-by-side table")
            return
        m = rec["mqsim"]["flows"][0]
        f = s["flow"]
        n_m = rec["mqsim"]["requests"]
        cpu_m = rec["mqsim"]["cpu_us_per_request"]
        n_s = s.get("requests") or f.get("requests") or n_m  # every flow's, as MQSim's n_m
        cpu_s = 1e6 * s["cpu_s"] / n_s if n_s else None
        checks_ok = all(v.get("pass") in (True, None) for k, v in rec["checks"].items() if k != "bounds")
        case = Case(**rec["case"])
        d = case.drive_params()
        m_mean = m[case.response_field()]
        p99_m = (p99_ref.get(name) or {}).get("p99_us")
        fl_s = s.get("flash") or {}
        rows[name] = {
            "flash_per_request": {
                "mqsim": flash_per_request(rec["mqsim"].get("ftl", {}), n_m, d["Plane_No_Per_Die"]),
                "ssdx": {k: fl_s[k] / n_s for k in ("page_programs", "program_commands", "translation_reads",
                                                    "translation_programs") if k in fl_s and n_s}},
            "mqsim": {"iops": m["IOPS"], "mean_us": m_mean, "p99_us": p99_m},
            "ssdx": {"iops": f.get("iops"), "mean_us": f.get("device_response_time_us"),
                     "p99_us": f.get("p99_response_time_us")},
            "rel_iops": rel(f.get("iops"), m["IOPS"]),
            "rel_mean": rel(f.get("device_response_time_us"), m_mean),
            "rel_p99": rel(f.get("p99_response_time_us"), p99_m),
            "mqsim_checks_pass": checks_ok,
            "cpu_us_per_request": {"mqsim": cpu_m, "ssdx": cpu_s,
                                   "ratio_ssdx_over_mqsim": (cpu_s / cpu_m) if cpu_s and cpu_m else None},
        }
        mean = _f(rows[name]["ssdx"]["mean_us"], ".1f")
        print(f"{name:36s} ssdx {time.perf_counter() - t0:6.1f} s  mean {mean} us vs MQSim "
              f"{m_mean} us", flush=True)
    path.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    (out / f"table{suffix}.md").write_text(table_md(rows))
    print(f"wrote {out / f'xval{suffix}.json'} and {out / f'table{suffix}.md'}")
    from bench import mqsim_plot

    if not suffix and out.resolve() == mqsim_plot.RESULTS.resolve() and (out / "des.json").is_file():
        # the committed results changed: the docs' figure is drawn again from them, never left stale
        mqsim_plot.plot(rows, json.loads((out / "des.json").read_text()), mqsim_plot.OUT)
        print(f"wrote {mqsim_plot.OUT}")


def _mqsim_cpu(binary: Path, workdir: Path, ssd: Path, wl: Path, repeats: int) -> tuple[float, int]:
    """The least CPU seconds (user + system) of ``repeats`` MQSim runs of ``workdir``'s files, and the
    requests it served (the least: the system time of MQSim's start-up varies between runs)."""
    cpus = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([str(binary), "-i", ssd.name, "-w", wl.name], cwd=workdir, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    flows = parse_result(workdir / "workload_scenario_1.xml")
    return min(cpus), sum(int(f["Request_Count"] or 0) for f in flows)


def mqsim_startup_cpu(binary: Path, ref: dict[str, Any], workdir: Path,
                      repeats: int = 3) -> tuple[float, int]:
    """MQSim's fixed cost per run on the default drive: ``randread_qd16`` stopped after 1 ms of simulated
    time (about 70 requests: building the drive's structures, most of it system time), the least CPU
    seconds of ``repeats`` runs, and its requests."""
    base = Case(**ref["cases"]["randread_qd16"]["case"])
    ssd, wl = write_case_files(base, workdir, None)
    wl.write_text(wl.read_text().replace(f"<Stop_Time>{base.stop_time_s * NS_PER_S}</Stop_Time>",
                                         "<Stop_Time>1000000</Stop_Time>"))
    return _mqsim_cpu(binary, workdir, ssd, wl, repeats)


def mqsim_per_request_cpu(binary: Path, ref: dict[str, Any], name: str, workdir: Path,
                          startup: tuple[float, int], repeats: int = 3) -> dict[str, Any]:
    """MQSim's CPU time per request less its fixed cost per run (``startup``, :func:`mqsim_startup_cpu`):
    the case run whole (the least of ``repeats`` runs) less the start-up, over the requests it adds."""
    cpu0, n0 = startup
    ssd, wl = write_case_files(Case(**ref["cases"][name]["case"]), workdir / name, binary.parent)
    cpu1, n1 = _mqsim_cpu(binary, workdir / name, ssd, wl, repeats)
    return {"startup_cpu_s": cpu0, "startup_requests": n0, "run_cpu_s": cpu1, "requests": n1,
            "us_per_request": 1e6 * (cpu1 - cpu0) / max(n1 - n0, 1)}


def write_speed(ref: dict[str, Any], binary: Path, out: Path, batches: tuple[int, ...]) -> None:
    """Time ssdx on :data:`SPEED_CASES` (``ssdx_speed``) and write ``speed.json`` with the ratio of MQSim's
    CPU time per request to ssdx's per configuration-request: MQSim's whole run (from the reference) and,
    where the binary is at hand, its run less its fixed start-up (:func:`mqsim_startup_cpu`,
    :func:`mqsim_per_request_cpu`)."""
    import platform

    import jax

    mqsim_src = binary.parent
    tmp = Path(tempfile.mkdtemp(prefix="mqsim_speed_"))
    startup = mqsim_startup_cpu(binary, ref, tmp / "startup") if binary.is_file() else None
    rows: dict[str, Any] = {}
    print(f"{'case':16s} {'configs':>8s} {'requests':>9s} {'compile s':>9s} {'run s':>8s} "
          f"{'cfg-req/s':>10s} {'MQSim us/req':>12s} {'less start':>10s} {'ssdx us/cfg-req':>15s} "
          f"{'ratio':>6s} {'ratio less start':>16s}")
    for name in SPEED_CASES:
        rec = ref["cases"][name]
        write_case_files(Case(**rec["case"]), tmp / name, mqsim_src)
        mq = rec["mqsim"]["cpu_us_per_request"]
        marginal = mqsim_per_request_cpu(binary, ref, name, tmp / "mqsim", startup) if startup else None
        mq_run = marginal["us_per_request"] if marginal else None
        rows[name] = {"mqsim_cpu_us_per_request": mq, "mqsim_cpu_us_per_request_less_startup": mq_run,
                      "mqsim_less_startup": marginal, "ssdx": []}
        for r in ssdx_speed(tmp / name, ssdx_requests(rec), batches):
            r["ratio_mqsim_over_ssdx"] = mq / r["us_per_config_request"]
            r["ratio_mqsim_less_startup_over_ssdx"] = mq_run / r["us_per_config_request"] if mq_run else None
            rows[name]["ssdx"].append(r)
            less = r["ratio_mqsim_less_startup_over_ssdx"]
            print(f"{name:16s} {r['configs']:8d} {r['requests']:9d} {r['compile_s']:9.2f} {r['run_s']:8.3f} "
                  f"{r['config_requests_per_s']:10.3g} {mq:12.2f} {_f(mq_run, '10.2f')} "
                  f"{r['us_per_config_request']:15.4f} {r['ratio_mqsim_over_ssdx']:6.0f} {_f(less, '16.0f')}",
                  flush=True)
    doc = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                       "processor": platform.processor()},
           "device": str(jax.devices()[0]), "baseline": "MQSim's CPU time per request (same machine, one "
           "process, mqsim_reference.json); and the same less MQSim's start-up (mqsim_per_request_cpu)",
           "batches": list(batches), "cases": rows,
           "command": "python -m bench.mqsim_xval --mqsim PATH --speed " + ",".join(map(str, batches))}
    (out / "speed.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out / 'speed.json'}")


def _f(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def table_md(rows: dict[str, Any]) -> str:
    """The side-by-side table in Markdown (MQSim's p99 from its response-time log, ``mqsim_p99.json``,
    where recorded).  CPU time per request: MQSim's process; ssdx's whole ``ssdx`` process, Python, JAX
    start-up and compilation included (about two seconds, so it dominates at these request counts)."""
    lines = ["| case | MQSim IOPS | ssdx IOPS | Δ IOPS | MQSim mean µs | ssdx mean µs | Δ mean "
             "| MQSim p99 µs | ssdx p99 µs | Δ p99 | MQSim checks | CPU µs/req MQSim | ssdx (with start-up) "
             "| ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|"]
    for k, r in rows.items():
        if "error" in r:
            lines.append(f"| {k} | ssdx failed: {r['error'][:80]} |" + " |" * 12)
            continue
        c = r["cpu_us_per_request"]
        lines.append(
            f"| {k} | {_f(r['mqsim']['iops'], ',.0f')} | {_f(r['ssdx']['iops'], ',.0f')} | "
            f"{_f(r['rel_iops'], '+.1%')} | {_f(r['mqsim']['mean_us'], '.0f')} | "
            f"{_f(r['ssdx']['mean_us'], '.1f')} | "
            f"{_f(r['rel_mean'], '+.1%')} | {_f(r['mqsim'].get('p99_us'), '.0f')} | "
            f"{_f(r['ssdx']['p99_us'], '.1f')} | {_f(r.get('rel_p99'), '+.1%')} | "
            f"{'pass' if r['mqsim_checks_pass'] else 'FAIL'} | {_f(c['mqsim'], '.2f')} | "
            f"{_f(c['ssdx'], '.2f')} | "
            f"{_f(c['ratio_ssdx_over_mqsim'], '.2f')} |")
    lines += ["", "Flash work per host request (MQSim: its `SSDDevice.FTL` counters, a multi-plane program "
              "counted as one page per plane and as one program command; ssdx: `summary.json` `flash`):", "",
              "| case | page programs MQSim | ssdx | program commands MQSim | ssdx | translation reads MQSim "
              "| ssdx | translation programs MQSim | ssdx |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k, r in rows.items():
        fm, fs = (r.get("flash_per_request") or {}).get("mqsim") or {}, \
            (r.get("flash_per_request") or {}).get("ssdx") or {}
        if "error" in r or not (fm or fs):
            continue
        cells = [f"{_f(fm.get(x), '.3f')} | {_f(fs.get(x), '.3f')}"
                 for x in ("page_programs", "program_commands", "translation_reads", "translation_programs")]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
