"""MQSim's input files as ssdx inputs: ``ssdconfig.xml`` (the drive) and ``workload.xml`` (scenarios).

MQSim (Tavakkol, Gómez-Luna, Sadrosadati, Ghose, Mutlu, "MQSim: A Framework for Enabling Realistic
Studies of Modern Multi-Queue SSD Devices", FAST 2018) reads an ``Execution_Parameter_Set`` with a
``Host_Parameter_Set`` and a ``Device_Parameter_Set`` (holding a ``Flash_Parameter_Set``), and an
``MQSim_IO_Scenarios`` file of ``IO_Scenario`` elements, each a list of flows
(``IO_Flow_Parameter_Set_Synthetic`` / ``IO_Flow_Parameter_Set_Trace_Based``).  Field names and units
are MQSim's own (its ``Device_Parameter_Set``, ``Flash_Parameter_Set``, ``Host_Parameter_Set`` and
``IO_Flow_Parameter_Set`` deserialisers):

* times in the flash set are nanoseconds; ``Channel_Transfer_Rate`` is MT/s; ``Page_Capacity`` bytes;
  ``Data_Cache_Capacity`` bytes; ``CMT_Capacity`` bytes of mapping entries; ``PCIe_Lane_Bandwidth``
  GB/s per lane;
* in a flow, request sizes and the alignment unit are 512-byte sectors; ``Bandwidth`` bytes/s;
  ``Stop_Time`` nanoseconds; percentages 0-100.

:func:`parse_ssdconfig` turns a drive into ssdx overrides (``drive.*``, ``nand.*``, ``engine.*``,
``workload.queue_depth``) and a list of warnings naming every field ssdx does not model (nothing is
dropped silently).  Per-page-type latencies (LSB/CSB/MSB) are reduced to their **mean over the page
types the technology has** (SLC: LSB; MLC: LSB, MSB; TLC: LSB, CSB, MSB): with pages programmed and read
in equal numbers of each type, the mean is the per-page time a die spends on average.  Capacity: raw =
channels × chips × dies × planes × blocks × pages × page bytes; user = raw × (1 − ``Overprovisioning_Ratio``).

:func:`parse_workload` (``ssdx.workloads.mqsim_workload``) returns :class:`Scenario` objects of
:class:`Flow` objects.

Files are parsed by :mod:`ssdx.workloads.mqsim_xml_read` (expat, with a DOCTYPE refused outright, so no
entity can be declared: no entity expansion, no external entity).  A file that is not well formed, holds
an unknown element or a bad value raises :class:`MqsimXmlError` (a :class:`ssdx.params.ConfigError`:
exit status 2) naming the file, the element and its line.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdx.models.engine.params import MAP_UNIT_BYTES, MAX_SLOTS
from ssdx.params import NAND_RANGES, RANGES
from ssdx.units import KIB
from ssdx.workloads.mqsim_workload import (
    MAX_REQUEST_SECTORS,
    STOI_MAX,
    TIME_UNITS,
    WORKLOAD_FIELD,
    Flow,
    Scenario,
    parse_workload,
)
from ssdx.workloads.mqsim_xml_read import (
    MAX_BYTES,
    SECTOR_BYTES,
    MqsimXmlError,
    Node,
    bool_value,
    choice_value,
    float_value,
    int_value,
    read,
)

__all__ = ["MAX_BYTES", "MAX_REQUEST_SECTORS", "SECTOR_BYTES", "STOI_MAX", "Flow", "MqsimXmlError", "Node",
           "Scenario", "Source", "TIME_UNITS", "WORKLOAD_FIELD", "parse_ssdconfig", "parse_workload"]

#: the configuration key that names the drive file (the field of its :class:`MqsimXmlError`)
SSDCONFIG_FIELD = "mqsim.ssdconfig"
#: seconds a page written to MQSim's data cache stays "hot": a page written again within the window is not
#: written back again (``bloom_filter_reset_step`` = 10^9 ns in ``Data_Cache_Manager_Flash_Advanced.h`` and
#: ``_Simple.h``; the set is emptied at the first write past the window, ``write_to_destage_buffer``)
REWRITE_WINDOW_S = 1.0

# ------------------------------------------------------------------------------------------ ssdconfig

#: Host_Parameter_Set fields ssdx does not model -> why
_HOST_UNMODELLED = {
    "Enable_ResponseTime_Logging": "MQSim's response-time log files",
    "ResponseTime_Logging_Period_Length": "MQSim's response-time log files",
}
#: Device_Parameter_Set fields ssdx does not model -> why
_DEVICE_UNMODELLED = {
    "Seed": "MQSim's device random seed (ssdx uses its own seed)",
    "Enabled_Preconditioning": "MQSim's steady-state preconditioning (ssdx: workload.prefill_fraction)",
    "Memory_Type": "only FLASH exists in MQSim",
    "Data_Cache_Sharing_Mode": "per-flow cache partitions not modelled",
    "Address_Mapping": "ssdx maps pages (PAGE_LEVEL); HYBRID not modelled",
    "CMT_Sharing_Mode": "per-flow mapping-cache partitions not modelled",
    "Plane_Allocation_Scheme": "ssdx stripes pages over dies its own way (no CWDP/... orders)",
    "Transaction_Scheduling_Policy": "ssdx's die queues are first come first served with read priority",
    "GC_Exec_Threshold": "GC is triggered by ssdx's own free-space reserve",
    "GC_Block_Selection_Policy": "ssdx's GC victim model is greedy (fluid write amplification)",
    "Use_Copyback_for_GC": "copyback not modelled",
    "Preemptible_GC_Enabled": "preemptible GC not modelled",
    "GC_Hard_Threshold": "GC is triggered by ssdx's own free-space reserve",
    "Dynamic_Wearleveling_Enabled": "wear levelling not modelled",
    "Static_Wearleveling_Enabled": "wear levelling not modelled",
    "Static_Wearleveling_Threshold": "wear levelling not modelled",
    "Preferred_suspend_erase_time_for_read": "MQSim itself reads only the misspelt "
                                             "'Prefered_suspend_erase_time_for_read' and ignores this one",
    "Preferred_suspend_erase_time_for_write": "a write suspending an erase is not modelled (reads only)",
    "Flash_Comm_Protocol": "ONFI protocol variant: ssdx uses Channel_Transfer_Rate only",
}
_FLASH_UNMODELLED = {
    "Block_PE_Cycles_Limit": "endurance not modelled by the request engine",
    "Page_Metadat_Capacity": "spare area not modelled",
}
_HOST_MAPPED = ("PCIe_Lane_Bandwidth", "PCIe_Lane_Count", "SATA_Processing_Delay")
_DEVICE_MAPPED = ("HostInterface_Type", "IO_Queue_Depth", "Queue_Fetch_Size", "Data_Cache_Capacity",
                  "CMT_Capacity",
                  "Overprovisioning_Ratio", "Flash_Channel_Count", "Channel_Transfer_Rate",
                  "Flash_Channel_Width", "Chip_No_Per_Channel", "Flash_Parameter_Set", "Ideal_Mapping_Table",
                  "Data_Cache_DRAM_Row_Size", "Data_Cache_DRAM_Data_Rate", "Data_Cache_DRAM_Data_Busrt_Size",
                  "Data_Cache_DRAM_tRCD", "Data_Cache_DRAM_tCL", "Data_Cache_DRAM_tRP",
                  "Prefered_suspend_erase_time_for_read", "Preferred_suspend_write_time_for_read",
                  "Caching_Mechanism")
_FLASH_MAPPED = ("Flash_Technology", "Page_Read_Latency_LSB", "Page_Read_Latency_CSB",
                 "Page_Read_Latency_MSB", "Page_Program_Latency_LSB", "Page_Program_Latency_CSB",
                 "Page_Program_Latency_MSB", "Block_Erase_Latency", "Die_No_Per_Chip", "Plane_No_Per_Die",
                 "Block_No_Per_Plane", "Page_No_Per_Block", "Page_Capacity", "CMD_Suspension_Support",
                 "Suspend_Erase_Time", "Suspend_Program_Time")
#: MQSim's defaults (its Device/Flash/Host_Parameter_Set initialisers) for mapped fields a file omits
_DEFAULTS = {"PCIe_Lane_Bandwidth": "0.4", "PCIe_Lane_Count": "4", "SATA_Processing_Delay": "0",
             "HostInterface_Type": "NVME", "IO_Queue_Depth": "1024", "Queue_Fetch_Size": "512",
             "Data_Cache_Capacity": "536870912", "CMT_Capacity": "2097152",
             "Overprovisioning_Ratio": "0.07", "Flash_Channel_Count": "8", "Channel_Transfer_Rate": "300",
             "Flash_Channel_Width": "1",
             "Chip_No_Per_Channel": "4", "Flash_Technology": "MLC", "Page_Read_Latency_LSB": "75000",
             "Page_Read_Latency_CSB": "75000", "Page_Read_Latency_MSB": "75000",
             "Page_Program_Latency_LSB": "750000", "Page_Program_Latency_CSB": "750000",
             "Page_Program_Latency_MSB": "750000", "Block_Erase_Latency": "3800000",
             "Die_No_Per_Chip": "2", "Plane_No_Per_Die": "2", "Block_No_Per_Plane": "2048",
             "Page_No_Per_Block": "256", "Page_Capacity": "8192", "Ideal_Mapping_Table": "false",
             "Data_Cache_DRAM_Row_Size": "8192", "Data_Cache_DRAM_Data_Rate": "800",
             "Data_Cache_DRAM_Data_Busrt_Size": "4", "Data_Cache_DRAM_tRCD": "13",
             "Data_Cache_DRAM_tCL": "13",
             "Data_Cache_DRAM_tRP": "13", "Prefered_suspend_erase_time_for_read": "700000",
             "Preferred_suspend_write_time_for_read": "100000", "CMD_Suspension_Support": "ERASE",
             "Suspend_Erase_Time": "700000", "Suspend_Program_Time": "100000",
             "Caching_Mechanism": "ADVANCED"}
_TECH = {"SLC": (1, ("LSB",)), "MLC": (2, ("LSB", "MSB")), "TLC": (3, ("LSB", "CSB", "MSB"))}


@dataclass(frozen=True)
class Source:
    """The element of ``ssdconfig.xml`` an ssdx override was computed from: its name, line and text;
    ``default`` when the file leaves it out (MQSim's default was used; the line is then that of
    ``Device_Parameter_Set``)."""

    element: str
    line: int
    text: str
    default: bool = False

    def describe(self) -> str:
        """``<Element> = 'text' (line N)``, or the default's."""
        if self.default:
            return f"<{self.element}> absent (MQSim's default {self.text!r})"
        return f"<{self.element}> = {self.text!r} (line {self.line})"


_GEOMETRY = ("Flash_Channel_Count", "Chip_No_Per_Channel", "Die_No_Per_Chip", "Plane_No_Per_Die",
             "Block_No_Per_Plane", "Page_No_Per_Block", "Page_Capacity")
_READ = tuple(f"Page_Read_Latency_{t}" for t in ("LSB", "CSB", "MSB"))
_PROG = tuple(f"Page_Program_Latency_{t}" for t in ("LSB", "CSB", "MSB"))
_PCIE = ("PCIe_Lane_Bandwidth", "PCIe_Lane_Count")
#: ssdx override -> the elements it is computed from (those the file's drive reads: the page types of its
#: technology, SATA_Processing_Delay for SATA only, ...), first the one most likely to be at fault
_SOURCES: dict[str, tuple[str, ...]] = {
    "drive.nand": ("Flash_Technology",), "nand.bits_per_cell": ("Flash_Technology",),
    "drive.interface": ("HostInterface_Type", *_PCIE),
    "drive.channels": ("Flash_Channel_Count",),
    "drive.dies_per_channel": ("Chip_No_Per_Channel", "Die_No_Per_Chip"),
    "drive.planes_per_die": ("Plane_No_Per_Die",),
    "drive.bus_mts": ("Channel_Transfer_Rate", "Flash_Channel_Width"),
    "drive.die_gbit": ("Plane_No_Per_Die", "Block_No_Per_Plane", "Page_No_Per_Block", "Page_Capacity"),
    "drive.user_capacity_gb": ("Overprovisioning_Ratio", *_GEOMETRY),
    "nand.t_read_us": _READ, "nand.t_read_slc_us": _READ,
    "nand.t_prog_us": _PROG, "nand.t_prog_slc_us": _PROG,
    "nand.t_erase_us": ("Block_Erase_Latency",),
    "nand.page_kib": ("Page_Capacity",), "nand.write_unit_kib": ("Page_Capacity",),
    "nand.block_pages": ("Page_No_Per_Block",),
    "engine.write_buffer_mib": ("Data_Cache_Capacity",),
    "engine.map_cache_mib": ("CMT_Capacity",), "engine.map_cache": ("Ideal_Mapping_Table",),
    "engine.map_entry_bytes": _GEOMETRY,
    "engine.buffer_dram_mts": ("Data_Cache_DRAM_Data_Rate",),
    "engine.buffer_dram_row_bytes": ("Data_Cache_DRAM_Row_Size",),
    "engine.buffer_dram_burst_bytes": ("Data_Cache_DRAM_Data_Busrt_Size",),
    "engine.buffer_dram_trcd_ns": ("Data_Cache_DRAM_tRCD",),
    "engine.buffer_dram_tcl_ns": ("Data_Cache_DRAM_tCL",),
    "engine.buffer_dram_trp_ns": ("Data_Cache_DRAM_tRP",),
    "engine.suspension": ("CMD_Suspension_Support",),
    "engine.suspend_program_us": ("Suspend_Program_Time",),
    "engine.suspend_erase_us": ("Suspend_Erase_Time",),
    "engine.suspend_min_program_us": ("Preferred_suspend_write_time_for_read",),
    "engine.suspend_min_erase_us": ("Prefered_suspend_erase_time_for_read",),
    "workload.queue_depth": ("IO_Queue_Depth", "Queue_Fetch_Size"),
    "engine.write_back": ("Caching_Mechanism",),
    "engine.rewrite_window_s": ("Caching_Mechanism",),
    "engine.plane_merge": ("Plane_No_Per_Die", "Page_No_Per_Block"),
    "engine.merge_dies": ("Die_No_Per_Chip",),
    "engine.back_pressure": ("Caching_Mechanism",),
    "engine.inflight_kib": ("Flash_Channel_Count", "Chip_No_Per_Channel", "Die_No_Per_Chip",
                            "Plane_No_Per_Die", "Page_Capacity"),
    "engine.cmd_us": ("SATA_Processing_Delay", *_PCIE),
    "engine.host_gb_s": _PCIE,
    "engine.ctrl_kiops": ("SATA_Processing_Delay",),
    "engine.buffer_dram_formula": ("Data_Cache_DRAM_Row_Size",),
    "engine.page_types": ("Flash_Technology",),
    **{f"engine.prog_{t.lower()}_factor": _PROG for t in ("LSB", "CSB", "MSB")},
}


def _fields(p: Path, n: Node, mapped: tuple[str, ...], unmodelled: dict[str, str], warnings: list[str],
            where: str) -> dict[str, Node]:
    """Children of ``n`` by name: a mapped one kept, an unmodelled one named in ``warnings``, any other
    refused (an unknown element)."""
    out: dict[str, Node] = {}
    for c in n.children:
        if c.name in mapped:
            if c.name in out:
                raise MqsimXmlError(p, c.line, c.name, f"given twice in {where}")
            out[c.name] = c
        elif c.name in unmodelled:
            warnings.append(f"{where}.{c.name} = {c.text!r} not modelled: {unmodelled[c.name]}")
        else:
            raise MqsimXmlError(p, c.line, c.name, f"unknown element in {where}")
    return out


#: bytes MQSim's PCIe link adds to every transaction-layer packet: its TLP header (20), data-link-layer
#: overhead (6) and physical-layer framing (2) (``PCIe_Link`` constructor defaults)
PCIE_PACKET_OVERHEAD = 20 + 6 + 2
#: payload bytes of the PCIe messages on an NVMe command's path in MQSim, in order: the host's write of
#: the submission queue's tail doorbell (a 16-bit value, ``PCIe_Root_Complex::Write_to_device``), the
#: device's read request for the submission queue entry (no payload, 4 bytes of request on top of the
#: overhead), the 72-byte entry itself (``sizeof(Submission_Queue_Entry)`` with its alignment padding) and
#: the 16-byte completion queue entry the device writes back (``sizeof(Completion_Queue_Entry)``)
NVME_COMMAND_MESSAGES = (("write", 2), ("read_request", 0), ("read_completion", 72), ("write", 16))


def pcie_message_ns(kind: str, payload: int, lane_gb_s: float, lanes: int) -> float:
    """Time MQSim's PCIe link takes to deliver one message, ns (``PCIe_Link::estimate_transfer_time``):
    payloads in packets of at most 128 bytes, each with :data:`PCIE_PACKET_OVERHEAD`, the total spread over
    the lanes (rounded up to a whole byte per lane) at ``lane_gb_s`` bytes per ns, truncated to whole ns.
    A read request carries 4 bytes besides the overhead."""
    if kind == "read_request":
        total = PCIE_PACKET_OVERHEAD + 4
    else:
        full, rest = divmod(payload, 128)
        total = full * (128 + PCIE_PACKET_OVERHEAD) + (rest + PCIE_PACKET_OVERHEAD if rest else 0)
    return float(math.floor(math.ceil(total / lanes) / lane_gb_s))


def pcie_payload_gb_s(lane_gb_s: float, lanes: int) -> float:
    """Payload rate of MQSim's PCIe link each way, GB/s: ``lanes × lane_gb_s`` bytes per ns, 128 payload
    bytes in every 128 + :data:`PCIE_PACKET_OVERHEAD` (``PCIe_Link::estimate_transfer_time`` for data
    messages, exact for transfers of whole packets)."""
    return lanes * lane_gb_s * 128 / (128 + PCIE_PACKET_OVERHEAD)


def nvme_command_us(lane_gb_s: float, lanes: int) -> float:
    """What an NVMe command costs in MQSim besides its data, µs: the PCIe transfers of
    :data:`NVME_COMMAND_MESSAGES`, one after another (each waits for the one before it).  MQSim's host
    interface charges no processing time of its own (``Host_Interface_NVMe``, ``Request_Fetch_Unit_NVMe``:
    no event is delayed but by the link), and its response time runs from the request's entry into the
    submission queue to the completion entry's arrival at the host (``IO_Flow_Base``).  The data moves on
    the link as ssdx's host transfer."""
    return sum(pcie_message_ns(k, n, lane_gb_s, lanes) for k, n in NVME_COMMAND_MESSAGES) / 1e3


def _sata_hba(p: Path, node: Node, overrides: dict[str, Any], warnings: list[str]) -> None:
    """MQSim's SATA host bus adapter (``SATA_HBA``): it processes each command's submission, then each
    completion, one at a time, ``SATA_Processing_Delay`` ns each, so the drive runs at most one command per
    delay; its response time (``Device_Response_Time``) starts after the submission's processing, its
    ``End_to_End_Request_Delay`` at the request's arrival.  As ssdx's engine: the controller's front end
    serves one command per delay (``engine.ctrl_kiops``, at least its 1,000 commands/s) and each response
    includes the completion's processing (``engine.cmd_us``); ssdx's response runs from the request's
    arrival, so it compares with MQSim's end-to-end delay (a warning says so)."""
    delay_ns = float_value(p, node, 0.0)
    if delay_ns <= 0:
        return
    kiops = 1e6 / delay_ns
    if kiops < 1.0:
        warnings.append(f"Host_Parameter_Set.SATA_Processing_Delay = {delay_ns:g} ns: ssdx's front end "
                        "serves at least 1,000 commands/s (engine.ctrl_kiops >= 1); 1 ms per command used")
    overrides["engine.ctrl_kiops"] = min(max(kiops, 1.0), 1e6)
    overrides["engine.cmd_us"] += delay_ns / 1e3
    warnings.append(
        f"Device_Parameter_Set.HostInterface_Type = SATA: MQSim's HBA processes every submission and every "
        f"completion, one at a time, {delay_ns / 1e3:g} us each; ssdx serves commands at that rate and adds "
        "the completion's processing to each response, and its response time runs from the request's "
        "arrival: compare it with MQSim's End_to_End_Request_Delay (MQSim's Device_Response_Time leaves out "
        "the wait for and the time of the submission's processing)")


def _interface(lane_gb_s: float, lanes: int, kind: str, warnings: list[str]) -> str:
    """ssdx's interface (``ssdx.catalog.INTERFACES``) nearest MQSim's PCIe link: per-lane GB/s picks the
    generation (PCIe 3.0 ~1 GB/s, 4.0 ~2, 5.0 ~4 per lane); ssdx's PCIe links are all x4."""
    if kind == "SATA":
        return "sata3"
    gen = "pcie3x4" if lane_gb_s <= 1.0 + 1e-9 else "pcie4x4" if lane_gb_s <= 2.0 + 1e-9 else "pcie5x4"
    if lanes != 4:
        warnings.append(f"Host_Parameter_Set.PCIe_Lane_Count = {lanes}: ssdx's PCIe interfaces are x4; "
                        f"{gen} used")
    return gen


#: ``mqsim.arithmetic``: ``physical`` reads the file's values as the drive they describe; ``mqsim`` as MQSim
#: (commit ``7ec40e3``) computes with them: :func:`mqsim_channel_mts` and ``engine.buffer_dram_formula``
ARITHMETICS = ("physical", "mqsim")


def mqsim_channel_mts(rate_mts: float) -> float:
    """The channel rate (MT/s) MQSim simulates for a ``Channel_Transfer_Rate`` of ``rate_mts``: it times a
    pair of transfers as ``(sim_time_type)(1000 / rate) * 2`` ns (``SSD_Device``'s ``ONFI_Channel_NVDDR2``
    arguments), the period truncated to whole ns, so 533, 667 and 800 MT/s all run at 1000 and 400 at
    500; from 1000 MT/s up the period is 0 ns and a transfer takes no time (returned as ``inf``)."""
    period_ns = math.floor(1000.0 / rate_mts)
    return math.inf if period_ns == 0 else 1000.0 / period_ns


def parse_ssdconfig(path: os.PathLike | str, chip_as_die: bool = False,
                    sources: dict[str, list[Source]] | None = None,
                    arithmetic: str = "physical") -> tuple[dict[str, Any], list[str]]:
    """ssdx overrides from MQSim's ``ssdconfig.xml`` and the warnings for fields not modelled.

    ``arithmetic`` (:data:`ARITHMETICS`): ``physical`` (default) takes the channel rate and the DRAM's
    timings as the drive they describe; ``mqsim`` as MQSim computes with them, two slips of its integer
    arithmetic included, each named in a warning: the channel's transfer period truncated to whole ns
    (:func:`mqsim_channel_mts`) and its DRAM access time past one row (``engine.buffer_dram_formula =
    mqsim``).  For cross-validation against MQSim itself.

    ``chip_as_die``: each chip becomes one die of the chip's capacity (its blocks per plane times its
    dies), so ssdx's dies serialise as MQSim's chips do: MQSim's transaction scheduler keeps one busy
    status per chip and issues nothing to a chip while any of its dies works
    (``TSU_Priority_OutOfOrder``), where ssdx's dies are independent.  ``experiment=mqsim`` turns it on
    (``mqsim.chip_as_die``); off here, as a plain reading of the file.

    Returns ``(overrides, warnings)``: ``overrides`` is keyed by dotted ssdx field (``drive.channels``,
    ``drive.dies_per_channel`` = chips × dies, ``drive.planes_per_die``, ``drive.bus_mts``,
    ``drive.interface``, ``drive.dram``, ``drive.die_gbit`` (binary Gbit), ``drive.user_capacity_gb``
    (decimal GB), ``drive.nand``, ``drive.slc_mode`` (``pure_native``: MQSim has no pSLC cache),
    ``nand.t_read_us``/``t_prog_us``/``t_erase_us`` (µs, module docstring for the page-type mean),
    ``nand.t_read_slc_us``/``t_prog_slc_us`` the same page times (MQSim has no pSLC mode; its translation
    pages are read and programmed like data pages, and ssdx's engine times translation pages with the
    pSLC timings),
    ``nand.bits_per_cell``, ``nand.page_kib``, ``nand.block_pages``, ``engine.write_buffer_mib``,
    ``engine.map_cache_mib`` (``CMT_Capacity``) with ``engine.map_cache`` = ``entries`` (MQSim's CMT: LRU
    over entries, batch write-back; ``auto`` when ``Ideal_Mapping_Table``) and ``engine.map_entry_bytes``
    (MQSim's CMT entry size), ``engine.buffer_dram_*`` (``Data_Cache_DRAM_*``; MT/s,
    bytes, ns), ``engine.suspension`` (``CMD_Suspension_Support`` lower-cased), ``engine.suspend_*_us``
    (``Suspend_*_Time`` and the ``Prefere(r)d_suspend_*_for_read`` thresholds, ns → µs, the spelling
    MQSim's parser reads), ``workload.queue_depth`` (``IO_Queue_Depth``, the queue's size; on NVMe at most
    ``Queue_Fetch_Size``, the requests of a stream MQSim's device holds at once)),
    ``engine.write_back`` = ``eager`` (``Caching_Mechanism``: MQSim's ``SIMPLE`` and ``ADVANCED`` data cache
    managers both send a logical page not written in the last second to flash at once, "eagerly write
    back cold data", ``write_to_destage_buffer``), ``engine.rewrite_window_s`` =
    :data:`REWRITE_WINDOW_S` (a page written again within the current second stays in their cache),
    ``engine.plane_merge`` = true (its scheduler joins queued page programs of one die's planes with equal
    page numbers; ``engine.merge_dies``: the chip's dies where ``chip_as_die`` makes a chip one die) and
    ``engine.inflight_kib`` and ``engine.back_pressure`` = ``pages`` (their back pressure: a write's pages
    go to flash one by one, each while less than a page per plane of the drive is in flight, each looked
    up in the mapping table as it goes), ``engine.fresh_blocks`` = true (MQSim erases in garbage
    collection only),
    ``engine.map_read_bytes`` = 512 (a translation read moves one sector) and ``engine.cache_read`` = false
    (a chip holds a read until its data is out); for an NVMe drive ``engine.cmd_us``
    (:func:`nvme_command_us`: MQSim's command costs its PCIe messages only), ``engine.host_gb_s``
    (:func:`pcie_payload_gb_s`, its link's payload rate), ``engine.ctrl_kiops`` = 10^6
    and ``engine.map_hit_us`` = 0 (no processing time in MQSim's front end or on a mapping-cache hit); for a
    SATA drive its host bus adapter on top (:func:`_sata_hba`: ``SATA_Processing_Delay`` per command).
    ``nand.write_unit_kib`` is the page: MQSim programs a plane one page at a time (each of its program
    transactions is one page).  ``Page_Capacity`` must be a page ssdx's request engine can map: a whole
    number of its 4 KiB mapping units (``ssdx.models.engine.params.MAP_UNIT_BYTES``), at most
    ``nand.page_kib``'s 1024 KiB.

    ``sources``, where given, is filled with the elements each override was computed from (:class:`Source`,
    by ssdx field), so that a value ssdx's rules refuse can be reported at its element and line
    (``ssdx.models.engine.mqsim_job.load``).  Every :class:`MqsimXmlError` names ``mqsim.ssdconfig``.
    """
    try:
        return _ssdconfig(Path(path), chip_as_die, sources, arithmetic)
    except MqsimXmlError as e:
        raise e.named(SSDCONFIG_FIELD) from None


def preconditioning(path: os.PathLike | str) -> tuple[bool, int]:
    """``Enabled_Preconditioning`` and ``Seed`` of MQSim's ``ssdconfig.xml`` (MQSim's defaults, true and 123,
    where absent: ``Device_Parameter_Set``).  As MQSim reads them: any text but ``false`` (any case) turns
    preconditioning on, and the seed is an integer.  Their one use here is the draw MQSim's
    preconditioning makes to fill its mapping cache (``ssdx.workloads.mqsim_rng.cmt_step``)."""
    p = Path(path)
    try:
        root = read(p, SSDCONFIG_FIELD)
        dev = root if root.name == "Device_Parameter_Set" else next(
            (c for c in root.children if c.name == "Device_Parameter_Set"), root)
        nodes = {c.name: c for c in dev.children}
        on = nodes["Enabled_Preconditioning"].text.strip().upper() != "FALSE" \
            if "Enabled_Preconditioning" in nodes else True
        seed = int_value(p, nodes["Seed"], -(2**31), 2**31 - 1) if "Seed" in nodes else 123
    except MqsimXmlError as e:
        raise e.named(SSDCONFIG_FIELD) from None
    return on, seed


def _ssdconfig(p: Path, chip_as_die: bool, sources: dict[str, list[Source]] | None,
               arithmetic: str = "physical") -> tuple[dict[str, Any], list[str]]:
    """:func:`parse_ssdconfig` of the file ``p``."""
    root = read(p, SSDCONFIG_FIELD)
    warnings: list[str] = []
    if root.name == "Execution_Parameter_Set":
        host = next((c for c in root.children if c.name == "Host_Parameter_Set"), None)
        dev = next((c for c in root.children if c.name == "Device_Parameter_Set"), None)
        for c in root.children:
            if c.name not in ("Host_Parameter_Set", "Device_Parameter_Set"):
                raise MqsimXmlError(p, c.line, c.name, "unknown element in Execution_Parameter_Set")
    elif root.name == "Device_Parameter_Set":
        host, dev = None, root
    else:
        raise MqsimXmlError(p, root.line, root.name, "the root must be Execution_Parameter_Set")
    if dev is None:
        raise MqsimXmlError(p, root.line, root.name, "no Device_Parameter_Set")
    h = _fields(p, host, _HOST_MAPPED, _HOST_UNMODELLED, warnings, "Host_Parameter_Set") if host else {}
    d = _fields(p, dev, _DEVICE_MAPPED, _DEVICE_UNMODELLED, warnings, "Device_Parameter_Set")
    fl = d.get("Flash_Parameter_Set")
    f = _fields(p, fl, _FLASH_MAPPED, _FLASH_UNMODELLED, warnings, "Flash_Parameter_Set") if fl else {}

    seen: dict[str, Source] = {}

    def get(tab: dict[str, Node], name: str) -> Node:
        if name in tab:
            n = tab[name]
            seen[name] = Source(name, n.line, n.text)
            return n
        warnings.append(f"{name} absent: MQSim's default {_DEFAULTS[name]} used")
        seen[name] = Source(name, dev.line, _DEFAULTS[name], default=True)
        return Node(name, dev.line, _DEFAULTS[name])

    tech = choice_value(p, get(f, "Flash_Technology"), tuple(_TECH))
    bits, types = _TECH[tech]
    t_read = sum(float_value(p, get(f, f"Page_Read_Latency_{t}"), 1.0) for t in types) / len(types) / 1e3
    progs = {t: float_value(p, get(f, f"Page_Program_Latency_{t}"), 1.0) / 1e3 for t in types}
    t_prog = sum(progs.values()) / len(types)
    t_erase = float_value(p, get(f, "Block_Erase_Latency"), 1.0) / 1e3
    channels = int_value(p, get(d, "Flash_Channel_Count"), 1, 4096)
    chips = int_value(p, get(d, "Chip_No_Per_Channel"), 1, 4096)
    dies = int_value(p, get(f, "Die_No_Per_Chip"), 1, 1024)
    planes = int_value(p, get(f, "Plane_No_Per_Die"), 1, 64)
    blocks = int_value(p, get(f, "Block_No_Per_Plane"), 1, 1 << 24)
    # MQSim's back pressure (SSD_Device: one page per plane of the drive), from the file's geometry
    page_node = get(f, "Page_Capacity")
    page_b = int_value(p, page_node, 1)
    page_max = int(NAND_RANGES["page_kib"].hi * KIB)
    if page_b % MAP_UNIT_BYTES or page_b > page_max:
        raise MqsimXmlError(p, page_node.line, "Page_Capacity",
                            f"a page of {page_b} bytes: ssdx's request engine maps {MAP_UNIT_BYTES}-byte "
                            "units (ssdx.models.engine.params.MAP_UNIT_BYTES), so a page must be a whole "
                            f"number of them, from {MAP_UNIT_BYTES} to {page_max} bytes (nand.page_kib at "
                            f"most {NAND_RANGES['page_kib'].hi:g} KiB)")
    inflight_kib = channels * chips * dies * planes * page_b / 1024
    # MQSim's CMT entry: logical and physical page numbers and the page's sector bitmap
    # (Address_Mapping_Unit_Page_Level: ceil((2 log2(physical pages) + sectors per page) / 8) bytes)
    pages = int_value(p, get(f, "Page_No_Per_Block"), 1, 65536)
    physical_pages = channels * chips * dies * planes * blocks * pages
    entry_bytes = math.ceil((2 * math.log2(physical_pages) + page_b / 512) / 8)
    merged = chip_as_die and dies > 1
    chip_dies = dies if merged else 1  # the dies one modelled die stands for
    if merged:
        warnings.append(f"mqsim.chip_as_die: each chip's {dies} dies modelled as one die of "
                        f"{blocks * dies} blocks per plane (MQSim's one busy status per chip)")
        dies, blocks = 1, blocks * dies
    op = float_value(p, get(d, "Overprovisioning_Ratio"), 0.0, 0.99)
    die_bytes = planes * blocks * pages * page_b
    raw = channels * chips * dies * die_bytes
    kind = choice_value(p, get(d, "HostInterface_Type"), ("NVME", "SATA"))
    lane = float_value(p, get(h, "PCIe_Lane_Bandwidth"), 1e-6)
    lanes = int_value(p, get(h, "PCIe_Lane_Count"), 1, 64)
    overrides: dict[str, Any] = {
        "drive.name": "mqsim",
        "drive.nand": {1: "slc", 2: "mlc", 3: "tlc"}[bits],
        "drive.interface": _interface(lane, lanes, kind, warnings),
        "drive.channels": channels,
        "drive.dies_per_channel": chips * dies,
        "drive.planes_per_die": planes,
        # bytes per transfer x transfers: MQSim moves Flash_Channel_Width bytes a transfer
        # (ONFI_Channel_NVDDR2's NVDDR2DataInTransferTime); ssdx's bus moves one, at bus_mts
        "drive.bus_mts": float_value(p, get(d, "Channel_Transfer_Rate"), 1.0)
        * int_value(p, get(d, "Flash_Channel_Width"), 1, 64),
        "drive.die_gbit": die_bytes * 8 / 2**30,
        "drive.user_capacity_gb": raw * (1.0 - op) / 1e9,
        "drive.dram": True,
        "drive.slc_mode": "pure_native",
        "nand.t_read_us": t_read, "nand.t_prog_us": t_prog, "nand.t_erase_us": t_erase,
        # MQSim has no pSLC mode: translation pages live on the same flash and are read and programmed
        # at the technology's page times, which ssdx's engine takes from the pSLC timings
        "nand.t_read_slc_us": t_read, "nand.t_prog_slc_us": t_prog,
        "nand.bits_per_cell": bits, "nand.page_kib": page_b / 1024, "nand.block_pages": pages,
        # MQSim programs a plane one page at a time (a program transaction is one page)
        "nand.write_unit_kib": page_b / 1024,
        "engine.write_buffer_mib": int_value(p, get(d, "Data_Cache_Capacity"), 0) / 2**20,
        "engine.map_cache_mib": int_value(p, get(d, "CMT_Capacity"), 0) / 2**20,
        "engine.map_cache": "auto" if bool_value(p, get(d, "Ideal_Mapping_Table")) else "entries",
        "engine.map_entry_bytes": entry_bytes,
        # a translation read moves one sector (generate_flash_read_request_for_mapping_data)
        "engine.map_read_bytes": 512,
        # MQSim's chips have no cache read: a chip waits for its read data to go out before its next command
        # (WAIT_FOR_DATA_OUT, NVM_PHY_ONFI_NVDDR2)
        "engine.cache_read": False,
        "engine.buffer_dram_mts": float_value(p, get(d, "Data_Cache_DRAM_Data_Rate"), 1.0),
        "engine.buffer_dram_row_bytes": int_value(p, get(d, "Data_Cache_DRAM_Row_Size"), 1),
        "engine.buffer_dram_burst_bytes": int_value(p, get(d, "Data_Cache_DRAM_Data_Busrt_Size"), 1),
        "engine.buffer_dram_trcd_ns": float_value(p, get(d, "Data_Cache_DRAM_tRCD")),
        "engine.buffer_dram_tcl_ns": float_value(p, get(d, "Data_Cache_DRAM_tCL")),
        "engine.buffer_dram_trp_ns": float_value(p, get(d, "Data_Cache_DRAM_tRP")),
        "engine.suspension": choice_value(p, get(f, "CMD_Suspension_Support"),
                                     ("NONE", "PROGRAM", "ERASE", "PROGRAM_ERASE")).lower(),
        "engine.suspend_program_us": float_value(p, get(f, "Suspend_Program_Time")) / 1e3,
        "engine.suspend_erase_us": float_value(p, get(f, "Suspend_Erase_Time")) / 1e3,
        "engine.suspend_min_program_us":
            float_value(p, get(d, "Preferred_suspend_write_time_for_read")) / 1e3,
        "engine.suspend_min_erase_us": float_value(p, get(d, "Prefered_suspend_erase_time_for_read")) / 1e3,
        "workload.queue_depth": int_value(p, get(d, "IO_Queue_Depth"), 1, 65535),
        # both of MQSim's data cache managers (SIMPLE, ADVANCED) write data not written in the last second
        # back to flash at once, page by page (write_to_destage_buffer)
        "engine.write_back": {"SIMPLE": "eager", "ADVANCED": "eager"}[
            choice_value(p, get(d, "Caching_Mechanism"), ("SIMPLE", "ADVANCED"))],
        "engine.inflight_kib": inflight_kib,
        # ... except a page written again within the current second, which stays in the cache
        "engine.rewrite_window_s": REWRITE_WINDOW_S,
        # its transaction scheduler joins queued page programs of one die's planes with equal page numbers
        # into multi-plane programs (TSU_Base::issue_command_to_chip)
        "engine.plane_merge": True,
        # a program takes its page type's time, the type by the page's index in its block
        # (Flash_Chip::Get_command_execution_latency)
        "engine.page_types": "mqsim",
        **{f"engine.prog_{t.lower()}_factor": progs[t] / t_prog for t in types},
        "engine.merge_dies": chip_dies,
        # a write's transactions go to flash one by one, each while the sectors in flight are below
        # back_pressure_buffer_max_depth (write_to_destage_buffer), each looked up in the mapping table as
        # it goes (Translate_lpa_to_ppa_and_dispatch)
        "engine.back_pressure": "pages",
        # MQSim erases blocks in garbage collection only, none while a plane has free blocks
        "engine.fresh_blocks": True,
    }
    if arithmetic == "mqsim":  # MQSim's integer arithmetic (parse_ssdconfig)
        width = int_value(p, get(d, "Flash_Channel_Width"), 1, 64)
        given = float_value(p, get(d, "Channel_Transfer_Rate"), 1.0)
        rate = mqsim_channel_mts(given)
        top = RANGES["drive.bus_mts"].hi
        overrides["drive.bus_mts"] = min(rate * width, top)
        capped = f" (0 ns: taken as ssdx's fastest bus, {top:g} MT/s)" if rate * width > top else ""
        warnings.append(f"mqsim.arithmetic = mqsim: Channel_Transfer_Rate {given:g} MT/s runs at "
                        f"{min(rate, top / width):g} MT/s, MQSim's transfer period truncated to whole ns"
                        + capped)
        overrides["engine.buffer_dram_formula"] = "mqsim"
        warnings.append("mqsim.arithmetic = mqsim: DRAM accesses longer than a row timed by MQSim's "
                        "estimate_dram_access_time (engine.buffer_dram_formula = mqsim)")
    # MQSim's front end takes no time of its own: a command costs its PCIe messages (nvme_command_us), the
    # controller serves commands at any rate (the fastest ctrl_kiops allows, 1 ns each) and a cached
    # mapping entry is found in no time (Address_Mapping_Unit_Page_Level); a SATA drive adds its HBA
    overrides["engine.cmd_us"] = nvme_command_us(lane, lanes)
    overrides["engine.host_gb_s"] = pcie_payload_gb_s(lane, lanes)
    overrides["engine.ctrl_kiops"] = 1e6
    overrides["engine.map_hit_us"] = 0.0
    if kind == "SATA":
        _sata_hba(p, get(h, "SATA_Processing_Delay"), overrides, warnings)
    else:
        # NVMe: MQSim keeps at most Queue_Fetch_Size of a stream's requests in the device
        # (Input_Stream_Manager_NVMe's On_the_fly_requests); the rest wait in the submission queue, and that
        # wait is part of their response time, as a wait in ssdx's host queue is
        overrides["workload.queue_depth"] = min(overrides["workload.queue_depth"],
                                                int_value(p, get(d, "Queue_Fetch_Size"), 1, 65535))
    if overrides["engine.suspension"] != "none":
        warnings.append(
            f"Flash_Parameter_Set.CMD_Suspension_Support = {overrides['engine.suspension'].upper()}: ssdx "
            "suspends programs/erases for reads as this asks, but MQSim's schedulers never do (in "
            "TSU_OutofOrder and TSU_Priority_OutOfOrder::service_read_transaction the WRITING and ERASING "
            "cases fall through to 'default: return false'); engine.suspension=none reproduces MQSim")
    if overrides["workload.queue_depth"] > MAX_SLOTS:
        warnings.append(f"Device_Parameter_Set.IO_Queue_Depth = {overrides['workload.queue_depth']}: the "
                        f"request engine tracks at most {MAX_SLOTS} outstanding commands; {MAX_SLOTS} used")
        overrides["workload.queue_depth"] = MAX_SLOTS
    if sources is not None:
        for key in overrides:
            names = _SOURCES.get(key, ())
            if key == "drive.die_gbit" and merged:  # a chip's dies made one die
                names = (*names, "Die_No_Per_Chip")
            found = [seen[n] for n in names if n in seen]
            if found:
                sources[key] = found
    return overrides, warnings
