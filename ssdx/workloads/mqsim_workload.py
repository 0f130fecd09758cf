"""MQSim's ``workload.xml`` as ssdx input: ``MQSim_IO_Scenarios``, each ``IO_Scenario`` a list of flows
(``IO_Flow_Parameter_Set_Synthetic`` / ``IO_Flow_Parameter_Set_Trace_Based``), read with MQSim's own field
names and units (its ``IO_Flow_Parameter_Set`` deserialisers: request sizes and the alignment unit in
512-byte sectors, ``Bandwidth`` in bytes/s, ``Stop_Time`` in nanoseconds, percentages 0-100) into
:class:`Scenario` objects of :class:`Flow` objects (:func:`parse_workload`).  The drive file:
``ssdx.workloads.mqsim_xml``; the reader and its safety: ``ssdx.workloads.mqsim_xml_read``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssdx.models.engine.params import MAX_SLOTS
from ssdx.workloads.mqsim_xml_read import (
    SECTOR_BYTES,
    MqsimXmlError,
    Node,
    bool_value,
    choice_value,
    float_value,
    ids_value,
    int_value,
    read,
)

#: the configuration key that names the workload file (the field of its :class:`MqsimXmlError`)
WORKLOAD_FIELD = "mqsim.workload"
#: the largest value MQSim's parser takes for a flow's integer fields: it reads them with ``std::stoi``
#: (``IO_Flow_Parameter_Set::XML_deserialize``, src/exec/IO_Flow_Parameter_Set.cpp), which throws
#: ``std::out_of_range`` above INT_MAX
STOI_MAX = 2**31 - 1
#: the most sectors one request of MQSim's carries to its device: the NVMe submission entry holds the
#: count in 16 bits (``IO_Flow_Base::NVMe_read_sqe``, src/host/IO_Flow_Base.cpp: ``(uint16_t)
#: request->LBA_count``; ``Host_Interface_NVMe`` reads ``Command_specific[2] & 0xffff``, and
#: ``SATA_HBA`` fills its NCQ entry the same way)
MAX_REQUEST_SECTORS = 0xFFFF
GENERATORS = ("QUEUE_DEPTH", "BANDWIDTH")
DISTRIBUTIONS = ("RANDOM_UNIFORM", "RANDOM_HOTCOLD", "STREAMING")
SIZE_DISTRIBUTIONS = ("FIXED", "NORMAL")
TIME_UNITS = {"PICOSECOND": 1e-12, "NANOSECOND": 1e-9, "MICROSECOND": 1e-6}


@dataclass
class Flow:
    """One MQSim flow (units: sectors of 512 bytes, ns, bytes/s, percent as in MQSim's XML)."""

    kind: str  # "synthetic" | "trace"
    line: int
    priority: str = "HIGH"
    caching_mode: str = "WRITE_CACHE"
    channel_ids: tuple[int, ...] = ()
    chip_ids: tuple[int, ...] = ()
    die_ids: tuple[int, ...] = ()
    plane_ids: tuple[int, ...] = ()
    initial_occupancy_pct: float = 50.0
    working_set_pct: float = 100.0
    generator: str = "QUEUE_DEPTH"
    read_pct: float = 100.0
    address_distribution: str = "RANDOM_UNIFORM"
    hot_region_pct: float = 0.0
    aligned: bool = True
    alignment_sectors: int = 8
    size_distribution: str = "FIXED"
    mean_size_sectors: int = 8
    variance_size_sectors: int = 0
    seed: int = 0
    queue_depth: int = 1
    bandwidth_bytes_s: float = 0.0
    stop_time_ns: float = 0.0
    total_requests: int = 0
    file_path: str | None = None
    time_unit: str = "NANOSECOND"
    percentage_to_execute: float = 100.0
    relay_count: int = 1
    warnings: list[str] = field(default_factory=list)
    #: the workload file, and the line of each element the flow gives (by element name)
    source: str = ""
    lines: dict[str, int] = field(default_factory=dict)

    def error(self, element: str, problem: str) -> MqsimXmlError:
        """A :class:`MqsimXmlError` at ``element`` of this flow (its line; the flow's own where the file
        leaves the element out), naming ``mqsim.workload``."""
        return MqsimXmlError(self.source, self.lines.get(element, self.line), element, problem,
                             field=WORKLOAD_FIELD)

    @property
    def name(self) -> str:
        if self.kind == "trace":
            return f"trace:{Path(self.file_path or '').name}"
        return f"{self.generator.lower()}:{self.read_pct:g}%read"

    @property
    def mean_interarrival_s(self) -> float:
        """MQSim's mean inter-arrival time of a BANDWIDTH flow, s: ``10^9 / ((Bandwidth / 512) /
        Average_Request_Size)`` ns in unsigned integer arithmetic, as its ``Host_System`` constructor
        computes it (the gaps are then drawn exponential with this mean, ``IO_Flow_Synthetic``); inf for
        less than one request a second (MQSim divides by zero there; :func:`parse_workload` refuses it)."""
        per_s = int(self.bandwidth_bytes_s) // SECTOR_BYTES // max(int(self.mean_size_sectors), 1)
        return math.inf if per_s == 0 else (10**9 // per_s) * 1e-9


@dataclass
class Scenario:
    """One ``IO_Scenario``: flows sharing the drive."""

    line: int
    flows: list[Flow]


_COMMON = {"Priority_Class": ("priority", "choice", ("URGENT", "HIGH", "MEDIUM", "LOW")),
           "Device_Level_Data_Caching_Mode": ("caching_mode", "choice", (
               "WRITE_CACHE", "READ_CACHE", "WRITE_READ_CACHE", "TURNED_OFF")),
           "Channel_IDs": ("channel_ids", "ids", None), "Chip_IDs": ("chip_ids", "ids", None),
           "Die_IDs": ("die_ids", "ids", None), "Plane_IDs": ("plane_ids", "ids", None),
           "Initial_Occupancy_Percentage": ("initial_occupancy_pct", "pct", None)}
_SYNTH = {**_COMMON,
          "Working_Set_Percentage": ("working_set_pct", "pct", None),
          "Synthetic_Generator_Type": ("generator", "choice", GENERATORS),
          "Read_Percentage": ("read_pct", "pct", None),
          "Address_Distribution": ("address_distribution", "choice", DISTRIBUTIONS),
          "Percentage_of_Hot_Region": ("hot_region_pct", "pct", None),
          "Generated_Aligned_Addresses": ("aligned", "bool", None),
          "Address_Alignment_Unit": ("alignment_sectors", "int", (1, 1 << 20)),
          "Request_Size_Distribution": ("size_distribution", "choice", SIZE_DISTRIBUTIONS),
          "Average_Request_Size": ("mean_size_sectors", "int", (1, MAX_REQUEST_SECTORS)),
          "Variance_Request_Size": ("variance_size_sectors", "int", (0, STOI_MAX)),
          "Seed": ("seed", "int", (-STOI_MAX - 1, STOI_MAX)),
          "Average_No_of_Reqs_in_Queue": ("queue_depth", "int", (0, 65535)),
          "Bandwidth": ("bandwidth_bytes_s", "int", (0, 2**32 - 1)),
          "Intensity": (None, "warn", "Intensity is not read by MQSim's deserialiser (Bandwidth is)"),
          "Stop_Time": ("stop_time_ns", "float", (0, 1e18)),
          "Total_Requests_To_Generate": ("total_requests", "int", (0, 10**9))}
_TRACE = {**_COMMON,
          "File_Path": ("file_path", "str", None),
          "Time_Unit": ("time_unit", "choice", tuple(TIME_UNITS)),
          "Percentage_To_Be_Executed": ("percentage_to_execute", "pct", None),
          "Relay_Count": ("relay_count", "int", (1, 10**6))}
#: why a flow field has the range it has, where the reason is not plain (said when a value breaks it)
_RANGE_WHY = {
    "Average_Request_Size": "MQSim's NVMe command carries a request's sector count in 16 bits, so its "
                            f"device serves at most {MAX_REQUEST_SECTORS} sectors "
                            "(IO_Flow_Base::NVMe_read_sqe)",
    "Variance_Request_Size": "MQSim reads it with std::stoi, which refuses a value above INT_MAX "
                             "(IO_Flow_Parameter_Set.cpp)",
    "Seed": "MQSim reads it with std::stoi into an int (IO_Flow_Parameter_Set.cpp), so a seed is a 32-bit "
            "signed integer",
}
#: fields parsed but not acted on by ssdx's engine, and why
FLOW_UNMODELLED = {
    "Priority_Class": "priority classes (NVMe WRR arbitration) not modelled: flows are served first come "
                      "first served",
    "Device_Level_Data_Caching_Mode": "per-flow caching mode not modelled (ssdx's write buffer serves all)",
    "Channel_IDs": "flows use the whole drive; per-flow resource partitions not modelled",
    "Chip_IDs": "flows use the whole drive; per-flow resource partitions not modelled",
    "Die_IDs": "flows use the whole drive; per-flow resource partitions not modelled",
    "Plane_IDs": "flows use the whole drive; per-flow resource partitions not modelled",
    "Initial_Occupancy_Percentage": "mapped to workload.prefill_fraction (one value per scenario: the mean)",
}


def _needed(fl: Flow) -> list[str]:
    """The elements a flow's figures depend on, given its other settings (a BANDWIDTH flow's queue depth, a
    fixed size's variance, ... are not): named in a warning when the file leaves one out."""
    if fl.kind == "trace":
        return ["Time_Unit", "Percentage_To_Be_Executed", "Relay_Count", "Initial_Occupancy_Percentage"]
    need = ["Synthetic_Generator_Type", "Read_Percentage", "Address_Distribution", "Working_Set_Percentage",
            "Generated_Aligned_Addresses", "Request_Size_Distribution", "Average_Request_Size", "Seed",
            "Initial_Occupancy_Percentage", "Stop_Time", "Total_Requests_To_Generate"]
    need.append("Average_No_of_Reqs_in_Queue" if fl.generator == "QUEUE_DEPTH" else "Bandwidth")
    if fl.address_distribution == "RANDOM_HOTCOLD":
        need.append("Percentage_of_Hot_Region")
    if fl.aligned:
        need.append("Address_Alignment_Unit")
    if fl.size_distribution == "NORMAL":
        need.append("Variance_Request_Size")
    return need


def _flow(p: Path, n: Node) -> Flow:
    """One flow element: its fields, ranges and the rules between them."""
    kind = "synthetic" if n.name == "IO_Flow_Parameter_Set_Synthetic" else "trace"
    spec = _SYNTH if kind == "synthetic" else _TRACE
    fl = Flow(kind=kind, line=n.line, source=str(p))
    seen: set[str] = set()
    for c in n.children:
        if c.name not in spec:
            raise MqsimXmlError(p, c.line, c.name, f"unknown element in {n.name}", field="mqsim.workload")
        if c.name in seen:
            raise MqsimXmlError(p, c.line, c.name, f"given twice in {n.name}", field="mqsim.workload")
        seen.add(c.name)
        fl.lines[c.name] = c.line
        attr, how, arg = spec[c.name]
        if how == "warn":
            fl.warnings.append(f"{n.name}.{c.name} (line {c.line}): {arg}")
            continue
        if how == "choice":
            v: Any = choice_value(p, c, arg)
        elif how == "ids":
            v = ids_value(p, c)
        elif how == "pct":
            v = float_value(p, c, 0.0, 100.0)
        elif how == "bool":
            v = bool_value(p, c)
        elif how == "int":
            v = int_value(p, c, *arg, why=_RANGE_WHY.get(c.name, ""))
        elif how == "float":
            v = float_value(p, c, *arg)
        else:
            v = c.text
        setattr(fl, attr, v)
        if c.name in FLOW_UNMODELLED and c.name != "Initial_Occupancy_Percentage":
            fl.warnings.append(f"{n.name}.{c.name} = {c.text!r} (line {c.line}) not modelled: "
                               f"{FLOW_UNMODELLED[c.name]}")
    for name in _needed(fl):
        if name not in seen:
            fl.warnings.append(f"{n.name}.{name} absent (flow at line {n.line}): MQSim leaves the field "
                               f"unset (no default in IO_Flow_Parameter_Set), ssdx takes "
                               f"{getattr(fl, spec[name][0])!r}")
    if kind == "synthetic":
        if fl.generator == "BANDWIDTH" and fl.bandwidth_bytes_s <= 0:
            where = ("Bandwidth", fl.lines["Bandwidth"]) if "Bandwidth" in fl.lines else (n.name, n.line)
            raise MqsimXmlError(p, where[1], where[0], "a BANDWIDTH flow needs Bandwidth > 0 (bytes/s)",
                                field="mqsim.workload")
        least = SECTOR_BYTES * fl.mean_size_sectors  # bytes/s of one request a second
        if fl.generator == "BANDWIDTH" and not math.isfinite(fl.mean_interarrival_s):
            # MQSim: 10^9 / ((Bandwidth / 512) / Average_Request_Size) in unsigned integers
            # (src/exec/Host_System.cpp), a division by zero below one request a second
            raise fl.error("Bandwidth", f"{fl.bandwidth_bytes_s:g} bytes/s is less than one request a second "
                           f"of Average_Request_Size = {fl.mean_size_sectors} sectors: MQSim's mean "
                           "inter-arrival time, 10^9 / ((Bandwidth / 512) / Average_Request_Size) ns in "
                           "integer arithmetic (Host_System.cpp), is finite only for Bandwidth >= 512 x "
                           f"Average_Request_Size = {least} bytes/s")
        if fl.generator == "QUEUE_DEPTH" and fl.queue_depth < 1:
            raise MqsimXmlError(p, n.line, n.name, "a QUEUE_DEPTH flow needs Average_No_of_Reqs_in_Queue "
                                ">= 1 (a BANDWIDTH flow does not read it)", field="mqsim.workload")
        if fl.total_requests == 0 and fl.stop_time_ns == 0:
            raise MqsimXmlError(p, n.line, n.name, "neither Total_Requests_To_Generate nor Stop_Time is set",
                                field="mqsim.workload")
    elif not fl.file_path:
        raise MqsimXmlError(p, n.line, n.name, "File_Path is required", field="mqsim.workload")
    return fl


def parse_workload(path: os.PathLike | str) -> list[Scenario]:
    """Every ``IO_Scenario`` of MQSim's ``workload.xml`` with its flows, in file order.  A trace flow's
    relative ``File_Path`` is taken relative to the workload file's folder.

    Besides MQSim's own rules, a scenario whose flows are all QUEUE_DEPTH must keep at most
    ``ssdx.models.engine.params.MAX_SLOTS`` requests outstanding in all: ssdx runs it closed loop with the
    sum of the flows' ``Average_No_of_Reqs_in_Queue`` outstanding (``mqsim_job.scenario_streams``), and the
    request engine tracks at most that many commands.  Every :class:`MqsimXmlError` names
    ``mqsim.workload``."""
    try:
        return _workload(Path(path))
    except MqsimXmlError as e:
        raise e.named(WORKLOAD_FIELD) from None


def _queue_depths(sc: Scenario) -> None:
    """Refuse a closed-loop scenario (every flow QUEUE_DEPTH) whose queue depths sum past ``MAX_SLOTS``,
    at the element of its deepest flow."""
    if not all(f.kind == "synthetic" and f.generator == "QUEUE_DEPTH" for f in sc.flows):
        return
    total = sum(f.queue_depth for f in sc.flows)
    if total <= MAX_SLOTS:
        return
    deepest = max(sc.flows, key=lambda f: f.queue_depth)
    each = ", ".join(f"{f.queue_depth} at line {f.lines.get('Average_No_of_Reqs_in_Queue', f.line)}"
                     for f in sc.flows)
    raise deepest.error(
        "Average_No_of_Reqs_in_Queue",
        f"the QUEUE_DEPTH flows of the IO_Scenario at line {sc.line} keep {total} requests outstanding in "
        f"all (the sum of their Average_No_of_Reqs_in_Queue: {each}); ssdx runs the scenario closed loop "
        f"with that sum outstanding, and its request engine tracks at most {MAX_SLOTS} commands "
        f"(ssdx.models.engine.params.MAX_SLOTS): lower the flows' depths to a sum of at most {MAX_SLOTS} "
        "(workload.queue_depth cannot help: the flows' depths replace it)")


def _workload(p: Path) -> list[Scenario]:
    """:func:`parse_workload` of the file ``p``."""
    root = read(p, WORKLOAD_FIELD)
    if root.name != "MQSim_IO_Scenarios":
        raise MqsimXmlError(p, root.line, root.name, "the root must be MQSim_IO_Scenarios",
                            field="mqsim.workload")
    out: list[Scenario] = []
    for sc in root.children:
        if sc.name != "IO_Scenario":
            raise MqsimXmlError(p, sc.line, sc.name, "unknown element in MQSim_IO_Scenarios",
                                field="mqsim.workload")
        flows = []
        for n in sc.children:
            if n.name not in ("IO_Flow_Parameter_Set_Synthetic", "IO_Flow_Parameter_Set_Trace_Based"):
                raise MqsimXmlError(p, n.line, n.name, "unknown element in IO_Scenario",
                                    field="mqsim.workload")
            fl = _flow(p, n)
            if fl.file_path and not Path(fl.file_path).is_absolute():
                fl.file_path = str(p.parent / fl.file_path)
            flows.append(fl)
        if not flows:
            raise MqsimXmlError(p, sc.line, sc.name, "a scenario without flows", field="mqsim.workload")
        out.append(Scenario(line=sc.line, flows=flows))
        _queue_depths(out[-1])
    if not out:
        raise MqsimXmlError(p, root.line, root.name, "no IO_Scenario", field="mqsim.workload")
    return out
