"""Randomized cross-validation against MQSim: drives and loads drawn over the space a user sweeps.

``bench/mqsim_xval.py`` holds ssdx's request engine to MQSim (Tavakkol et al., "MQSim: A Framework for
Enabling Realistic Studies of Modern Multi-Queue SSD Devices", USENIX FAST 2018) on MQSim's own default
drive.  A design-space explorer is used away from any one drive, so this harness draws the drives and the
loads at random, from a fixed seed, and runs both simulators on the same two XML files:

* **drives** — channels 1–16, chips per channel 1–8, dies per chip 1–4, planes per die 1–4, pages of 4, 8
  or 16 KiB, SLC / MLC / TLC with a read and a program latency per page type (LSB, CSB, MSB), channel rates
  200–800 MT/s, a DRAM data cache of 4–512 MiB and a mapping cache (CMT) of 256 KiB–8 MiB (or an ideal
  mapping table), over-provisioning 7–25 %, 4 or 8 PCIe lanes, preconditioning on (30–80 % occupancy) or
  off (:func:`draw_drive`);
* **loads** — closed loops of queue depth 1–64 and open loops (Poisson arrivals) at 10–90 % of the drive's
  computed capacity (``mqsim_xval.drive_bounds``), requests of 4–256 KiB, random or sequential, read
  fractions 0–100 % (:func:`draw_load`).

The page-type latencies are drawn in ranges that bracket those published for each cell type: SLC and MLC
from the measurements of Grupp et al., "Characterizing Flash Memory: Anomalies, Observations, and
Applications", MICRO 2009 (SLC reads of about 25 µs and programs of a few hundred µs; MLC programs that
differ several-fold between the fast and the slow page of a cell), TLC with the slower upper pages that
Cai et al., "Error Characterization, Mitigation, and Recovery in Flash-Memory-Based Solid-State Drives",
Proc. IEEE 2017, describe for multi-step programming.  They are not fitted to anything: the two simulators
only have to be given the same plausible drive.

Each case runs a fixed number of requests (MQSim's ``Total_Requests_To_Generate``, ``--data-mib`` of data
at most and ``--max-requests``), with MQSim's response-time log on for every request, so that the run's
length, MQSim's mean number of requests in the drive (Little's law) and its p99 come from the log
(MQSim's own IOPS divides by whole simulated seconds: infinite for a run shorter than one).  Every case
also gets closed-form checks on MQSim's figures (:func:`checks`):

* **Little's law** (closed loops): the sum of the logged response times over the run's length equals the
  queue depth, within ``mqsim_xval.little_tolerance``;
* **keeping up** (open loops): between the 10th and 90th percentile of completions MQSim completes
  requests at the offered rate — a run past saturation has no steady mean response to compare, so it is
  flagged, never compared (the capacity the offered fractions are drawn against counts every plane of
  every die busy, an upper bound that random reads of one page, or dies sharing a chip, do not reach);
* **utilisation by counting**: MQSim's issued flash commands (its ``SSDDevice.FTL`` counters) times their
  latencies over the dies and the run's length, and the bytes they move over the channels, each below 1.

The case list is drawn once and written first (``cases.json``); every later run reads it, so before and
after a change to ssdx are the same cases.  Results are written after each case (``mqsim.json``,
``ssdx{suffix}.json``): a run that dies resumes where it stopped.

Usage::

    python -m bench.mqsim_random --mqsim PATH_TO_MQSIM           # draw (once), MQSim, then ssdx
    python -m bench.mqsim_random --ssdx-only --suffix _before     # ssdx again, into ssdx_before.json
    python -m bench.mqsim_random --report                         # the tables and the figure again
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, fields
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from bench import mqsim_xval as xv

RESULTS = Path(__file__).resolve().parent / "results" / "mqsim_random"
SEED = 20261129
N_CASES = 280
SECTOR = xv.SECTOR

#: page-type latencies (ns) drawn per cell type: (read (lo, hi) per page type, program (lo, hi) per page
#: type, erase (lo, hi)); the ranges bracket published figures (module docstring)
CELL: dict[str, dict[str, Any]] = {
    "SLC": {"types": ("LSB",), "read": ((20_000, 30_000),), "prog": ((150_000, 300_000),),
            "erase": (1_500_000, 3_000_000)},
    "MLC": {"types": ("LSB", "MSB"), "read": ((40_000, 60_000), (60_000, 100_000)),
            "prog": ((250_000, 600_000), (900_000, 2_000_000)), "erase": (3_000_000, 5_000_000)},
    "TLC": {"types": ("LSB", "CSB", "MSB"), "read": ((50_000, 70_000), (65_000, 90_000), (85_000, 120_000)),
            "prog": ((400_000, 900_000), (1_200_000, 2_500_000), (2_500_000, 5_000_000)),
            "erase": (3_000_000, 6_000_000)},
}
CHANNEL_MTS = (200, 333, 400, 533, 667, 800)
DATA_CACHE_MIB = (4, 8, 16, 32, 64, 128, 256, 512)
CMT_KIB = (256, 512, 1024, 2048, 4096, 8192)
QDS = (1, 2, 4, 8, 16, 32, 64)
SIZES_KIB = (4, 8, 16, 32, 64, 128, 256)
#: physical pages of a drive at most (MQSim allocates per page: memory and start-up grow with it), and
#: of a preconditioned drive (MQSim's preconditioning walks every logical page)
MAX_PAGES = 1 << 25
MAX_PRECONDITION_PAGES = 1 << 22
#: blocks per plane of a preconditioned drive at least (with fewer, MQSim's preconditioner cannot place every
#: logical page; ``mqsim_xval.SMALL_BLOCKS_PER_PLANE``)
MIN_PRECONDITION_BLOCKS = 256
#: the largest ``Bandwidth`` (bytes/s) MQSim reads: its parser takes it with ``std::stoi`` (a 32-bit int,
#: ``IO_Flow_Parameter_Set_Synthetic::XML_deserialize``) and refuses the file above
MAX_BANDWIDTH = 2**31 - 1
#: wall time (s) an MQSim run may take before it is stopped and recorded as an error (its preconditioning
#: of some drives runs for many minutes)
MQSIM_TIMEOUT_S = 240.0


def _log_choice(rng: np.random.Generator, values: tuple[int, ...]) -> int:
    return int(values[int(rng.integers(len(values)))])


def draw_drive(rng: np.random.Generator) -> tuple[dict[str, Any], bool, int]:
    """One random MQSim drive (the keys of ``mqsim_xval.DEFAULT_DRIVE`` and per-page-type latencies), whether
    it is preconditioned, and the occupancy (%) it is preconditioned to (0 when not)."""
    d = dict(xv.DEFAULT_DRIVE)
    tech = ("SLC", "MLC", "TLC")[int(rng.integers(3))]
    cell = CELL[tech]
    d["Flash_Technology"] = tech
    reads = [int(rng.integers(lo, hi + 1)) for lo, hi in cell["read"]]
    progs = [int(rng.integers(lo, hi + 1)) for lo, hi in cell["prog"]]
    names = ("LSB", "CSB", "MSB")
    for k, (r, p) in enumerate(zip(reads, progs)):
        d[f"Page_Read_Latency_{cell['types'][k]}"] = r
        d[f"Page_Program_Latency_{cell['types'][k]}"] = p
    for t in names:  # a page type the technology does not have: MQSim never reads it; the MSB's is given
        d.setdefault(f"Page_Read_Latency_{t}", reads[-1])
        d.setdefault(f"Page_Program_Latency_{t}", progs[-1])
    d["Page_Read_Latency"] = int(round(np.mean(reads)))
    d["Page_Program_Latency"] = int(round(np.mean(progs)))
    d["Block_Erase_Latency"] = int(rng.integers(*cell["erase"]))
    d["Flash_Channel_Count"] = int(np.clip(round(2 ** rng.uniform(0, 4)), 1, 16))
    d["Chip_No_Per_Channel"] = int(rng.integers(1, 9))
    d["Die_No_Per_Chip"] = int(rng.integers(1, 5))
    d["Plane_No_Per_Die"] = int(rng.integers(1, 5))
    d["Page_Capacity"] = 1024 * _log_choice(rng, (4, 8, 16))
    d["Page_No_Per_Block"] = _log_choice(rng, (64, 128, 256))
    d["Channel_Transfer_Rate"] = _log_choice(rng, CHANNEL_MTS)
    d["Data_Cache_Capacity"] = _log_choice(rng, DATA_CACHE_MIB) << 20
    d["CMT_Capacity"] = _log_choice(rng, CMT_KIB) << 10
    d["Ideal_Mapping_Table"] = bool(rng.uniform() < 0.15)
    d["Overprovisioning_Ratio"] = round(float(rng.uniform(0.07, 0.25)), 3)
    d["PCIe_Lane_Count"] = _log_choice(rng, (4, 8))
    planes = (d["Flash_Channel_Count"] * d["Chip_No_Per_Channel"] * d["Die_No_Per_Chip"]
              * d["Plane_No_Per_Die"])
    precondition = bool(rng.uniform() < 0.4)
    limit = MAX_PRECONDITION_PAGES if precondition else MAX_PAGES
    blocks = 2048
    while blocks > 64 and planes * blocks * d["Page_No_Per_Block"] > limit:
        blocks //= 2
    if precondition and blocks < MIN_PRECONDITION_BLOCKS:
        precondition = False  # too large a drive to precondition in a minute
    d["Block_No_Per_Plane"] = blocks
    d["Enabled_Preconditioning"] = precondition
    occupancy = int(rng.integers(30, 81)) if precondition else 0
    d["Seed"] = int(rng.integers(1, 10_000))
    return d, precondition, occupancy


def capacity_iops(drive: Mapping[str, Any], size_bytes: int, read_frac: float) -> float:
    """The drive's computed capacity (requests/s) for a mix of ``read_frac`` reads of ``size_bytes``:
    reads and writes time-sharing its read and flash-write capacities (``mqsim_xval.drive_bounds``)."""
    b = xv.drive_bounds(dict(drive), size_bytes)
    return 1.0 / (read_frac / b["read_iops_cap"] + (1.0 - read_frac) / b["write_flash_iops_cap"])


def draw_load(rng: np.random.Generator, drive: Mapping[str, Any], data_mib: float,
              max_requests: int) -> dict[str, Any]:
    """One random load on ``drive``: ``Case`` fields of ``mqsim_xval`` (generator, queue depth or
    bandwidth, size, address pattern, read percentage, request count) and the fraction of capacity offered
    (open loop)."""
    size_kib = _log_choice(rng, SIZES_KIB)
    read_pct = int(rng.integers(0, 11)) * 10
    address = "STREAMING" if rng.uniform() < 0.3 else "RANDOM_UNIFORM"
    n = int(np.clip(data_mib * 1024 / size_kib, 1000, max_requests))
    load: dict[str, Any] = {"size_sectors": size_kib * 1024 // SECTOR, "read_pct": read_pct,
                            "address": address, "total_requests": n, "stop_time_s": 0}
    if rng.uniform() < 0.6:
        load.update(generator="QUEUE_DEPTH", qd=_log_choice(rng, QDS))
        load["load_fraction"] = None
    else:
        frac = round(float(rng.uniform(0.1, 0.9)), 3)
        iops = frac * capacity_iops(drive, size_kib * 1024, read_pct / 100.0)
        load.update(generator="BANDWIDTH", qd=0, bandwidth_bps=int(iops * size_kib * 1024))
        load["load_fraction"] = frac
    return load


def draw_cases(seed: int = SEED, n: int = N_CASES, data_mib: float = 48.0,
               max_requests: int = 6000) -> list[dict[str, Any]]:
    """``n`` random drive x load cases from ``seed`` (:func:`draw_drive`, :func:`draw_load`), each as the
    ``mqsim_xval.Case`` fields (``name``, ``drive_overrides`` holding the whole drive) plus ``load_fraction``
    and ``label`` (a short description)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        drive, pre, occ = draw_drive(rng)
        load = draw_load(rng, drive, data_mib, max_requests)
        while load.get("bandwidth_bps", 0) > MAX_BANDWIDTH:  # a rate MQSim's file cannot state: drawn again
            load = draw_load(rng, drive, data_mib, max_requests)
        frac = load.pop("load_fraction")
        case = xv.Case(name=f"r{i:03d}", precondition=pre, occupancy_pct=occ, drive_overrides=drive, **load)
        loop = f"QD{case.qd}" if case.generator == "QUEUE_DEPTH" else f"open {frac:.0%}"
        label = (f"{drive['Flash_Channel_Count']}ch x {drive['Chip_No_Per_Channel']}chip x "
                 f"{drive['Die_No_Per_Chip']}die x {drive['Plane_No_Per_Die']}pl {drive['Flash_Technology']} "
                 f"{drive['Page_Capacity'] // 1024}K pages, {drive['Data_Cache_Capacity'] >> 20} MiB cache; "
                 f"{loop} {case.size_sectors * SECTOR // 1024} KiB {case.read_pct}% read "
                 f"{'seq' if case.address == 'STREAMING' else 'rand'}"
                 + (f", {occ}% full" if pre else ""))
        out.append({**asdict(case), "load_fraction": frac, "label": label})
    return out


def case_of(rec: Mapping[str, Any]) -> xv.Case:
    """The ``mqsim_xval.Case`` of a case record of :func:`draw_cases`."""
    names = {f.name for f in fields(xv.Case)}
    return xv.Case(**{k: v for k, v in rec.items() if k in names})


def geometry_class(drive: Mapping[str, Any]) -> str:
    """A case's geometry class for the error tables: few (< 16), mid (16–63) or many (>= 64) dies."""
    dies = drive["Flash_Channel_Count"] * drive["Chip_No_Per_Channel"] * drive["Die_No_Per_Chip"]
    return "few dies (<16)" if dies < 16 else "16-63 dies" if dies < 64 else "64+ dies"


def load_class(rec: Mapping[str, Any]) -> str:
    """A case's load class: reads only, writes only or mixed; closed or open loop."""
    rp = rec["read_pct"]
    mix = "reads" if rp == 100 else "writes" if rp == 0 else "mixed"
    return f"{mix}, {'closed' if rec['generator'] == 'QUEUE_DEPTH' else 'open'}"


# ----------------------------------------------------------------------------------------------------
# MQSim's side: run, log, checks, the dominant mechanism
# ----------------------------------------------------------------------------------------------------


def mqsim_dram_s(drive: Mapping[str, Any], size_bytes: int) -> float:
    """Seconds MQSim's data cache takes to write ``size_bytes`` into its DRAM: its
    ``estimate_dram_access_time`` (``Data_Cache_Manager_Base.h``, commit ``7ec40e3``) term for term — for
    more than a row, half the rows (``size / row / 2``, integer division) and the remainder divided by,
    not multiplied by, the transfer time — with its integer nanoseconds."""
    d = drive
    row, burst = int(d["Data_Cache_DRAM_Row_Size"]), int(d["Data_Cache_DRAM_Data_Busrt_Size"])
    t = 1e9 / (d["Data_Cache_DRAM_Data_Rate"] * 1e6)  # ns a burst (dram_burst_transfer_time_ddr)
    rcd, cl, rp = d["Data_Cache_DRAM_tRCD"], d["Data_Cache_DRAM_tCL"], d["Data_Cache_DRAM_tRP"]
    if size_bytes <= row:
        return (rcd + cl + int(size_bytes // burst // 2 * t)) * 1e-9
    rows = float(size_bytes // row // 2)
    return ((rcd + cl + int(row // burst // 2 * t + rp)) * rows + rcd + cl
            + int((size_bytes % row) / (burst * t))) * 1e-9


def utilisation(drive: Mapping[str, Any], ftl: Mapping[str, Any], host_bytes: float,
                span_s: float, writes: float = 0.0, write_bytes: int = 0) -> dict[str, float]:
    """Busy fractions of MQSim's run by counting its issued flash commands (``SSDDevice.FTL``): per die, the
    read commands (host and translation) times the mean read latency, the program commands times the mean
    program latency, the erases times the erase latency, over the dies and ``span_s``; per channel, the
    bytes moved — the host's ``host_bytes``, a sector per translation read and a page per translation
    program (``flash_per_request``) — over the channels' rate (garbage collection's moves left out: a
    lower bound); for the data cache's DRAM channel, ``writes`` host writes of ``write_bytes`` each at
    :func:`mqsim_dram_s`."""
    g = lambda k: float(ftl.get(k) or 0.0)  # noqa: E731
    d = drive
    dies = d["Flash_Channel_Count"] * d["Chip_No_Per_Channel"] * d["Die_No_Per_Chip"]
    t_r, t_p, t_e = (d["Page_Read_Latency"] * 1e-9, d["Page_Program_Latency"] * 1e-9,
                     d["Block_Erase_Latency"] * 1e-9)
    reads = g("Issued_Flash_Read_CMD") + g("Issued_Flash_Multiplane_Read_CMD")
    map_reads = g("Issued_Flash_Read_CMD_For_Mapping")
    progs = g("Issued_Flash_Program_CMD") + g("Issued_Flash_Multiplane_Program_CMD")
    erases = g("Issued_Flash_Erase_CMD")
    moved = host_bytes + map_reads * SECTOR + g("Issued_Flash_Program_CMD_For_Mapping") * d["Page_Capacity"]
    ch_bps = d["Channel_Transfer_Rate"] * 1e6 * d["Flash_Channel_Width"] * d["Flash_Channel_Count"]
    span = max(span_s, 1e-12)
    die_busy = lambda x: x / (dies * span)  # noqa: E731
    out = {"die_reads": die_busy((reads - map_reads) * t_r),
           "die_translation_reads": die_busy(map_reads * t_r),
           "die_programs": die_busy(progs * t_p), "die_erases": die_busy(erases * t_e),
           "channels": moved / ch_bps / span}
    out["dram"] = writes * mqsim_dram_s(d, write_bytes) / span if write_bytes else 0.0
    out["dies"] = out["die_reads"] + out["die_translation_reads"] + out["die_programs"] + out["die_erases"]
    return out


def log_stats(times_us: np.ndarray, resp_us: np.ndarray) -> dict[str, float]:
    """What the checks need of MQSim's response-time log (one line a request, in completion order): its
    lines, the last completion (µs from the start), the sum of the logged responses (µs) and the
    completion times of the lines at 10 % and 90 % of the log."""
    n = int(times_us.size)
    if not n:
        return {"lines": 0, "span_us": 0.0, "sum_resp_us": 0.0, "t10_us": 0.0, "t90_us": 0.0}
    return {"lines": n, "span_us": float(times_us[-1]), "sum_resp_us": float(resp_us.sum()),
            "t10_us": float(times_us[int(0.1 * (n - 1))]), "t90_us": float(times_us[int(0.9 * (n - 1))])}


def checks(case: xv.Case, mean_us: float, log: Mapping[str, float],
           util: Mapping[str, float]) -> dict[str, Any]:
    """The closed-form checks on one MQSim run (module docstring), from its log's statistics
    (:func:`log_stats`) and its utilisation by counting:

    * ``little`` (closed loop): the logged responses' sum over the run's length equals the queue depth
      within ``mqsim_xval.little_tolerance``;
    * ``keeps_up`` (open loop): between the 10th and the 90th percentile of completions the drive completes
      requests at the offered rate (``Case.offered_iops``), less four Poisson standard deviations of that
      many arrivals: a drive past saturation completes them at its own, lower rate while its queue grows,
      and its mean response then depends on the run's length;
    * ``utilisation``: the dies' and the channels' busy fractions below 1.

    ``{"pass": bool | None, ...}`` each; None where it does not apply."""
    out: dict[str, Any] = {}
    n, span = int(log["lines"]), float(log["span_us"])
    if case.generator == "QUEUE_DEPTH" and span > 0 and n:
        held = float(log["sum_resp_us"]) / span
        tol = xv.little_tolerance(case.qd, n, mean_us)
        out["little"] = {"pass": abs(held / case.qd - 1.0) <= tol, "outstanding": held, "tol": tol}
    else:
        out["little"] = {"pass": None}
    offered = case.offered_iops()
    window = (float(log["t90_us"]) - float(log["t10_us"])) * 1e-6
    if case.generator == "BANDWIDTH" and offered > 0 and window > 0:
        k = int(0.9 * (n - 1)) - int(0.1 * (n - 1))
        served = k / window
        floor = offered * (1.0 - 4.0 / math.sqrt(max(k, 1)))
        out["keeps_up"] = {"pass": served >= floor, "served_iops": served, "offered_iops": offered}
    else:
        out["keeps_up"] = {"pass": None}
    worst = max(util["dies"], util["channels"])
    out["utilisation"] = {"pass": worst < 1.0, "dies": util["dies"], "channels": util["channels"]}
    return out


def dominant(util: Mapping[str, float]) -> str:
    """The mechanism that dominates MQSim's run by counting (:func:`utilisation`): the largest busy fraction
    of host reads, translation reads, programs, erases, channel transfers and the data cache's DRAM writes;
    ``unloaded`` when none reaches 20 %."""
    keys = {"die_reads": "flash reads", "die_translation_reads": "translation reads",
            "die_programs": "programs", "die_erases": "erases (GC)", "channels": "channel transfers",
            "dram": "DRAM writes"}
    k = max(keys, key=lambda x: util[x])
    return keys[k] if util[k] >= 0.2 else "unloaded"


def run_mqsim_case(binary: str, rec: Mapping[str, Any], work: str) -> dict[str, Any]:
    """MQSim on one case (its files written in ``work``/name): its first flow's figures, its flash counters
    and what the checks need of its log (:func:`log_stats`); the p99 from the log."""
    case = case_of(rec)
    wd = Path(work) / case.name
    r = xv.run_mqsim(Path(binary), case, wd, None, log_period_ns=1, timeout_s=MQSIM_TIMEOUT_S)
    # MQSim's log, one line a request (a 1 ns period): completion times, and the responses run_mqsim read
    times, resp = xv.parse_response_log(wd / "workload.IO_Flow.No_0.log", 0), r["response_log"]
    flow = r["flows"][0]
    drive = case.drive_params()
    return {"flow": flow, "mean_us": flow[case.response_field()],
            "p99_us": float(np.percentile(resp, 99)) if resp.size else None, "log": log_stats(times, resp),
            "ftl": r["ftl"], "flash_per_request": xv.flash_per_request(r["ftl"], r["requests"],
                                                                        drive["Plane_No_Per_Die"]),
            "cpu_s": r["cpu_s"], "wall_s": r["wall_s"]}


def mqsim_utilisation(rec: Mapping[str, Any], m: Mapping[str, Any]) -> dict[str, float]:
    """:func:`utilisation` of an MQSim record ``m`` of :func:`run_mqsim_case` for the case ``rec``."""
    case = case_of(rec)
    flow = m["flow"]
    return utilisation(case.drive_params(), m["ftl"], float(flow["Bytes_Transferred"] or 0.0),
                       float(m["log"]["span_us"]) * 1e-6, float(flow["Write_Request_Count"] or 0.0),
                       case.size_sectors * SECTOR)


# ----------------------------------------------------------------------------------------------------
# ssdx's side, in process
# ----------------------------------------------------------------------------------------------------


def run_ssdx_case(rec: Mapping[str, Any], work: str, requests: int,
                  overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """ssdx on one case's XML files, composed as ``ssdx experiment=mqsim`` composes them (with the further
    Hydra ``overrides``), at most ``requests`` per flow: its first flow's figures and its flash work per
    request."""
    from ssdx.models.engine import mqsim_job

    case = case_of(rec)
    wd = Path(work) / case.name
    xv.write_case_files(case, wd, None)
    cfg = xv.compose_mqsim(wd, [*xv.count_overrides(requests), *overrides])
    t0 = time.perf_counter()
    sources: dict[str, Any] = {}
    given = frozenset(o.split("=", 1)[0].lstrip("+") for o in overrides)  # they win over the files' values
    run_cfg, scenarios, over, warnings = mqsim_job.load(cfg, given, sources)
    mqsim_job.check_loaded(run_cfg, scenarios, over, sources, wd / "ssdconfig.xml")
    sc = mqsim_job.run_scenario(run_cfg, scenarios[0], 0, warnings)
    f = sc["flows"][0]
    n = sum(int(x["requests"]) for x in sc["flows"])
    fl = sc["flash"]
    return {"mean_us": f["device_response_time_us"], "p99_us": f["p99_response_time_us"], "iops": f["iops"],
            "read_us": f["read_response_time_us"], "write_us": f["write_response_time_us"],
            "requests": n, "span_s": sc["simulated_time_s"],
            "flash_per_request": {k: fl[k] / n for k in ("page_programs", "program_commands",
                                                         "translation_reads", "translation_programs")},
            "wall_s": time.perf_counter() - t0}


# ----------------------------------------------------------------------------------------------------
# Driving the cases, resumably
# ----------------------------------------------------------------------------------------------------


def _write(path: Path, doc: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def run_all(todo: Iterable[dict[str, Any]], fn: Callable[..., dict[str, Any]], args: tuple,
            results: dict[str, Any], path: Path, workers: int, tag: str) -> None:
    """Run ``fn(rec, *args)`` for every record of ``todo`` not yet in ``results`` on ``workers`` processes,
    writing ``results`` to ``path`` after each case (a failure is recorded as ``{"error": ...}``)."""
    todo = [r for r in todo if r["name"] not in results]
    total = len(todo)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futs = {pool.submit(fn, rec, *args): rec for rec in todo}
        for k, fut in enumerate(as_completed(futs), 1):
            rec = futs[fut]
            try:
                results[rec["name"]] = fut.result()
            except Exception as exc:  # noqa: BLE001 - one case's failure is recorded, the others run
                results[rec["name"]] = {"error": f"{type(exc).__name__}: {exc}"[-800:]}
            _write(path, results)
            el = time.perf_counter() - t0
            print(f"{tag} {k}/{total} {rec['name']} ({el:.0f} s, about {el / k * (total - k):.0f} s left)",
                  file=sys.stderr, flush=True)


def _mqsim_fn(rec: dict[str, Any], binary: str, work: str) -> dict[str, Any]:
    return run_mqsim_case(binary, rec, work)


def _ssdx_fn(rec: dict[str, Any], work: str, overrides: tuple[str, ...]) -> dict[str, Any]:
    return run_ssdx_case(rec, work, int(rec["mqsim_requests"]), overrides)


# ----------------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------------


def compare(cases: list[dict[str, Any]], mq: Mapping[str, Any],
            sx: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per case with both sides: relative errors of the mean and p99 response, whether MQSim's
    checks pass, the geometry and load classes and the dominant mechanism."""
    rows = []
    for rec in cases:
        m, s = mq.get(rec["name"]), sx.get(rec["name"])
        if not m or not s or "error" in m or "error" in s:
            rows.append({"name": rec["name"], "label": rec["label"],
                         "error": (m or {}).get("error") or (s or {}).get("error") or "not run"})
            continue
        case = case_of(rec)
        util = mqsim_utilisation(rec, m)
        ck = checks(case, m["mean_us"], m["log"], util)
        ok = all(v["pass"] in (True, None) for v in ck.values())
        rel = lambda a, b: (a - b) / b if a is not None and b else None  # noqa: E731
        rows.append({"name": rec["name"], "label": rec["label"], "checks_pass": ok,
                     "failed": [k for k, v in ck.items() if v["pass"] is False],
                     "geometry": geometry_class(rec["drive_overrides"]), "load": load_class(rec),
                     "dominant": dominant(util), "mqsim_mean_us": m["mean_us"], "ssdx_mean_us": s["mean_us"],
                     "rel_mean": rel(s["mean_us"], m["mean_us"]), "mqsim_p99_us": m["p99_us"],
                     "ssdx_p99_us": s["p99_us"], "rel_p99": rel(s["p99_us"], m["p99_us"]),
                     "utilisation": util, "flash": {"mqsim": m["flash_per_request"],
                                                     "ssdx": s["flash_per_request"]}})
        rows[-1]["cause"] = cause(rec, m, rows[-1])
    return rows


def cause(rec: Mapping[str, Any], m: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """The cause a disagreement's counters point to, first match (each with the counter that shows it):

    * ``GC in MQSim``: MQSim collected garbage (``Total_GC_Executions`` > 0: its preconditioning leaves the
      drive at its GC threshold), moving valid pages ssdx's request engine does not move;
    * ``multi-plane programs``: the program commands per request differ by more than 25 % (the same pages
      joined into multi-plane programs differently);
    * ``translation reads``: the translation reads per request differ by more than 25 % (and 0.1): the
      mapping cache's state (MQSim's preconditioning fills its CMT) or its misses on long writes;
    * ``channel arbitration``: channel transfers dominate MQSim's run and ssdx is faster (MQSim's channel
      serves waiting read data before new commands, ``bench.mqsim_des``);
    * ``TLC page types``: a TLC drive not preconditioned, where MQSim's fresh blocks are written and read
      from their first pages, which its page-type rule makes LSB pages (``Flash_Chip.h``), and ssdx times
      every page at the mean of the three types;
    * ``DRAM writes``: the data cache's DRAM dominates MQSim's run;
    * ``unexplained`` otherwise."""
    fm, fs = row["flash"]["mqsim"], row["flash"]["ssdx"]
    if (m["ftl"].get("Total_GC_Executions") or 0) > 0:
        return "GC in MQSim"
    pm, ps = fm.get("program_commands") or 0.0, fs.get("program_commands") or 0.0
    if max(pm, ps) > 0.05 and abs(ps - pm) > 0.25 * max(pm, ps):
        return "multi-plane programs"
    tm, ts = fm.get("translation_reads") or 0.0, fs.get("translation_reads") or 0.0
    if abs(ts - tm) > max(0.1, 0.25 * max(tm, ts)):
        return "translation reads"
    if row["dominant"] == "channel transfers" and row["rel_mean"] < 0:
        return "channel arbitration"
    if rec["drive_overrides"]["Flash_Technology"] == "TLC" and not rec["precondition"]:
        return "TLC page types"
    if row["dominant"] == "DRAM writes":
        return "DRAM writes"
    return "unexplained"


def distribution(rows: list[dict[str, Any]], key: str = "rel_mean") -> dict[str, Any]:
    """Median and 90th percentile of |error|, and the shares within 10 % and 25 %, of ``rows``."""
    e = [abs(r[key]) for r in rows if r.get(key) is not None]
    if not e:
        return {"cases": 0}
    return {"cases": len(e), "median": statistics.median(e), "p90": float(np.percentile(e, 90)),
            "within_10": sum(x <= 0.10 for x in e) / len(e), "within_25": sum(x <= 0.25 for x in e) / len(e)}


def report(cases: list[dict[str, Any]], mq: Mapping[str, Any], sx: Mapping[str, Any]) -> tuple[str, dict]:
    """The Markdown report (distribution overall, by geometry class, by load and by dominant mechanism;
    every valid case outside 25 %) and its numbers."""
    rows = compare(cases, mq, sx)
    valid = [r for r in rows if r.get("checks_pass")]
    flagged = [r for r in rows if "error" not in r and not r.get("checks_pass")]
    errors = [r for r in rows if "error" in r]
    doc: dict[str, Any] = {"cases": len(rows), "valid": len(valid), "flagged": len(flagged),
                           "errors": len(errors), "overall": distribution(valid),
                           "overall_p99": distribution(valid, "rel_p99")}
    lines = [f"{len(rows)} cases; {len(valid)} pass MQSim's closed-form checks; {len(flagged)} flagged "
             f"(a check failed: not compared); {len(errors)} not run to the end by MQSim.", "",
             "| group | cases | median abs error of the mean | 90th pct | within 10 % | within 25 % |",
             "|---|---:|---:|---:|---:|---:|"]

    def line(name: str, d: Mapping[str, Any]) -> str:
        if not d.get("cases"):
            return f"| {name} | 0 | — | — | — | — |"
        return (f"| {name} | {d['cases']} | {d['median']:.1%} | {d['p90']:.1%} | {d['within_10']:.0%} | "
                f"{d['within_25']:.0%} |")

    lines.append(line("**all (mean)**", doc["overall"]))
    lines.append(line("all (p99)", doc["overall_p99"]))
    for key in ("geometry", "load", "dominant"):
        groups = sorted({r[key] for r in valid})
        doc[f"by_{key}"] = {g: distribution([r for r in valid if r[key] == g]) for g in groups}
        lines += [line(f"{key}: {g}", doc[f"by_{key}"][g]) for g in groups]
    out = sorted((r for r in valid if abs(r["rel_mean"]) > 0.25), key=lambda r: -abs(r["rel_mean"]))
    lines += ["", f"Valid cases outside 25 % ({len(out)}):", "",
              "| case | drive and load | dominant | MQSim mean µs | ssdx mean µs | Δ | program cmds/req "
              "MQSim / ssdx | translation reads/req MQSim / ssdx | cause (counters) |",
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in out:
        fm, fs = r["flash"]["mqsim"], r["flash"]["ssdx"]
        lines.append(f"| {r['name']} | {r['label']} | {r['dominant']} | {r['mqsim_mean_us']:.0f} | "
                     f"{r['ssdx_mean_us']:.1f} | {r['rel_mean']:+.0%} | "
                     f"{fm.get('program_commands', 0):.2f} / {fs.get('program_commands', 0):.2f} | "
                     f"{fm.get('translation_reads', 0):.2f} / {fs.get('translation_reads', 0):.2f} | "
                     f"{r['cause']} |")
    doc["outside_25"] = {r["name"]: r["cause"] for r in out}
    causes = sorted({r["cause"] for r in out})
    lines += ["", "Causes of the cases outside 25 %: " + ", ".join(
        f"{c} {sum(r['cause'] == c for r in out)}" for c in causes) + "."]
    lines += ["", f"Flagged: MQSim's run fails a closed-form check ({len(flagged)}):", "",
              "| case | drive and load | failed |", "|---|---|---|"]
    lines += [f"| {r['name']} | {r['label']} | {', '.join(r['failed'])} |" for r in flagged]
    lines += ["", f"Not run to the end by MQSim ({len(errors)}):", "", "| case | drive and load | MQSim's "
              "last words |", "|---|---|---|"]
    lines += [f"| {r['name']} | {r['label']} | {_last_words(r['error'])} |" for r in errors]
    doc["flagged"] = {r["name"]: r["failed"] for r in flagged}
    return "\n".join(lines) + "\n", doc


FIGURE = Path(__file__).resolve().parents[1] / "docs" / "img" / "mqsim_random.png"
#: colour of each dominant mechanism in the figure
COLOURS = {"DRAM writes": "tab:red", "programs": "tab:orange", "channel transfers": "tab:blue",
           "flash reads": "tab:green", "translation reads": "tab:purple", "erases (GC)": "tab:brown",
           "unloaded": "0.55"}


def plot(cases: list[dict[str, Any]], mq: Mapping[str, Any], runs: list[tuple[str, Mapping[str, Any]]],
         path: Path) -> None:
    """ssdx's mean response against MQSim's over every case that passes MQSim's checks, one panel per ssdx
    run of ``runs`` (title, results), the ±10 % band shaded, each case coloured by the mechanism that
    dominates MQSim's run; and the cumulative share of cases within each error, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 2
    rows_n = (len(runs) + 2) // cols
    fig, grid = plt.subplots(rows_n, cols, figsize=(5.6 * cols, 5.0 * rows_n), squeeze=False)
    axes = list(grid.ravel())
    for ax in axes[len(runs) + 1:]:
        ax.set_visible(False)
    for ax, (title, sx) in zip(axes, runs):
        rows = [r for r in compare(cases, mq, sx) if r.get("checks_pass")]
        x = np.array([r["mqsim_mean_us"] for r in rows])
        y = np.array([r["ssdx_mean_us"] for r in rows])
        lo, hi = 0.7 * min(x.min(), y.min()), 1.4 * max(x.max(), y.max())
        g = np.geomspace(lo, hi, 50)
        ax.fill_between(g, 0.9 * g, 1.1 * g, color="0.85", lw=0)
        ax.plot(g, g, color="0.4", lw=0.8)
        for mech, col in COLOURS.items():
            k = [i for i, r in enumerate(rows) if r["dominant"] == mech]
            if k:
                ax.scatter(x[k], y[k], s=12, color=col, label=f"{mech} ({len(k)})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        d = distribution(rows)
        ax.set_title(f"{title}\n{d['within_10']:.0%} within 10 %, {d['within_25']:.0%} within 25 % "
                     f"of {d['cases']} cases", fontsize=9)
        ax.set_xlabel("MQSim mean response (µs)")
        ax.set_ylabel("ssdx mean response (µs)")
        ax.legend(fontsize=7, loc="upper left", title="dominant in MQSim's run", title_fontsize=7)
    cx = axes[len(runs)]
    worst = 0.0
    for title, sx in runs:
        e = np.sort([abs(r["rel_mean"]) for r in compare(cases, mq, sx) if r.get("checks_pass")])
        cx.step(100 * e, np.arange(1, len(e) + 1) / len(e), where="post", label=title.split("\n")[0])
        worst = max(worst, 100 * float(e[-1]))
    cx.axvline(10, color="0.6", lw=0.8, ls="--")
    cx.axvline(25, color="0.6", lw=0.8, ls=":")
    cx.set_xscale("symlog", linthresh=10)
    cx.set_xlim(0, 1.2 * worst)
    cx.set_xlabel("|ssdx − MQSim| / MQSim, mean response (%)")
    cx.set_ylabel("share of cases")
    cx.set_title("Cumulative share of cases within each error", fontsize=9)
    cx.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _last_words(error: str) -> str:
    """The last line of an MQSim failure that says something (its ``ERROR:`` line where there is one)."""
    lines = [x.strip() for x in error.splitlines() if x.strip()]
    said = [x for x in lines if "ERROR" in x] or lines[-1:]
    return (said[-1] if said else error)[:160].replace("|", "/")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mqsim", type=Path, help="MQSim's binary (built from its repository with make)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ssdx_mqsim_random")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--suffix", default="", help="ssdx's results go to ssdx{suffix}.json")
    ap.add_argument("--ssdx-only", action="store_true", help="run ssdx only (MQSim's results must exist)")
    ap.add_argument("--report", action="store_true", help="write the report from the results only")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--override", action="append", default=[], help="a Hydra override for ssdx")
    ap.add_argument("--plot", default="", help="draw the figure from ssdx's results: comma-separated "
                    "suffix=title pairs (an empty suffix for ssdx.json)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cases_path = args.out / "cases.json"
    if cases_path.is_file():
        cases = json.loads(cases_path.read_text())["cases"]
    else:
        cases = draw_cases()
        _write(cases_path, {"seed": SEED, "n": N_CASES, "generator": "bench.mqsim_random.draw_cases",
                            "cases": cases})
    if args.plot:
        mq = json.loads((args.out / "mqsim.json").read_text())
        runs = []
        for item in args.plot.split(","):
            suffix, title = item.split("=", 1)
            runs.append((title, json.loads((args.out / f"ssdx{suffix}.json").read_text())))
        plot(cases, mq, runs, FIGURE)
        print(f"wrote {FIGURE}")
        return 0
    only = set(filter(None, args.only.split(",")))
    todo = [c for c in cases if not only or c["name"] in only]
    mq_path = args.out / "mqsim.json"
    mq = json.loads(mq_path.read_text()) if mq_path.is_file() else {}
    if only and not (args.ssdx_only or args.report):  # the named cases run again
        for k in only:
            mq.pop(k, None)
    if not (args.ssdx_only or args.report):
        if args.mqsim is None or not args.mqsim.is_file():
            ap.error("--mqsim PATH: MQSim's binary is needed (or --ssdx-only / --report)")
        run_all(todo, _mqsim_fn, (str(args.mqsim.resolve()), str(args.work / "mqsim")), mq, mq_path,
                args.workers, "MQSim")
    sx_path = args.out / f"ssdx{args.suffix}.json"
    sx = json.loads(sx_path.read_text()) if sx_path.is_file() else {}
    if not args.report:
        for k in only:
            sx.pop(k, None)
    if not args.report:
        # ssdx runs as many requests as MQSim served
        ok = [{**c, "mqsim_requests": int(mq[c["name"]]["flow"]["Request_Count"] or c["total_requests"])}
              for c in todo if c["name"] in mq and "error" not in mq[c["name"]]]
        run_all(ok, _ssdx_fn, (str(args.work / "ssdx"), tuple(args.override)), sx, sx_path, args.workers,
                "ssdx")
    text, doc = report(cases, mq, sx)
    (args.out / f"report{args.suffix}.md").write_text(text)
    _write(args.out / f"summary{args.suffix}.json", doc)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
