"""Request-level engine parameters (``engine.*``) and the static array layout of a batch.

The engine (``ssdx.models.engine.model``) takes the drive and workload pytrees of ``ssdx.params`` plus the
controller-side numbers below.  Every leaf is dynamic (swept by ``vmap`` without recompiling); the
array sizes — dies, channels, queue slots and mapping-cache sets, each the largest in the batch — form
the static :class:`Layout`, so configurations with different die counts share one padded, masked
kernel.

Fields (config ``engine:``; defaults in ``conf/engine/default.yaml``):

* ``loop`` — ``closed`` (fio-style: ``workload.queue_depth`` commands outstanding, a new one issued when
  one completes; trace timestamps ignored) or ``open`` (requests arrive at the trace's timestamps,
  divided by ``time_scale``; at most ``workload.queue_depth`` outstanding, later ones wait in the host).
* ``write_buffer_mib`` — controller write-back buffer (DRAM, or SRAM on DRAM-less parts), MiB: a write
  is acknowledged once the program backlog ahead of it fits in the buffer.
* ``map_cache_mib`` — mapping-table cache of a DRAM-less drive (SRAM plus any Host Memory Buffer), MiB;
  a drive with ``drive.dram: true`` holds the whole table and never misses.
* ``map_hit_us`` — lookup time of a cached mapping entry, µs (DRAM, SRAM or HMB across PCIe).
* ``ctrl_kiops`` — commands per second the controller's front end can process, thousands.
* ``cmd_us`` — fixed time per command for host and controller command processing, µs (added to every
  request's latency, pipelined: it does not limit the rate); ``null`` (default): the interface's
  (``ssdx.catalog``, ``drive.interface``).  MQSim's NVMe interface spends only the PCIe transfers of the
  doorbell, the command fetch and the completion entry (``experiment=mqsim`` sets that,
  ``ssdx.workloads.mqsim_xml.nvme_command_us``).
* ``host_gb_s`` — payload rate of the host link each way, GB/s (10^9 bytes/s); ``null`` (default): the
  interface's usable rate (``ssdx.catalog``).  ``experiment=mqsim`` sets MQSim's: lanes × lane rate ×
  128/156 (its 128-byte packets carry 28 bytes of overhead, ``PCIe_Link``).
* ``time_scale`` — open loop: trace time is divided by it (2 = replay twice as fast).
* ``suspension`` — which die operations a host read may suspend (step 5 of ``ssdx.models.engine.model``):
  ``program_erase`` (default) programs and erases, ``program`` programs only, ``erase`` erases only,
  ``none`` neither: the read waits for the operation in progress, then goes ahead of the queued ones.
  MQSim's ``CMD_Suspension_Support`` (``PROGRAM_ERASE``, ``PROGRAM``, ``ERASE``, ``NONE``; Tavakkol et
  al., FAST 2018); program/erase suspension after Wu & He, FAST 2012.  In MQSim's source (2022) the
  out-of-order scheduler's ``service_read_transaction`` falls through from its ``WRITING`` and
  ``ERASING`` cases to ``default: return false``, so it never issues a read to a busy chip whatever
  ``CMD_Suspension_Support`` says: ``none`` is what MQSim computes.
* ``suspend_program_us``, ``suspend_erase_us`` — time a read that suspends a program / an erase takes
  longer, µs (MQSim's ``Suspend_Program_Time`` / ``Suspend_Erase_Time``; 0 here: the presets assume
  suspension at no cost).
* ``suspend_min_program_us``, ``suspend_min_erase_us`` — a program / an erase with less than this left
  is not suspended: the read waits for it, µs (MQSim's ``Preferred_suspend_write_time_for_read`` /
  ``Preferred_suspend_erase_time_for_read``; 0 here).
* ``map_cache`` — the mapping cache (step 3 of ``ssdx.models.engine.model``): ``auto`` (default) a drive with
  ``drive.dram: true`` holds the whole table, a DRAM-less drive caches translation pages direct-mapped
  in ``map_cache_mib``; ``direct`` and ``lru`` keep the table in flash on every drive and cache
  ``map_cache_mib`` of translation pages (MQSim's cached mapping table, ``CMT_Capacity``, whatever the
  DRAM; Tavakkol et al., FAST 2018), direct-mapped or fully associative with least-recently-used
  replacement (MQSim's ``Cached_Mapping_Table``), and write a dirty translation page back when it is
  evicted (DFTL's batch update, Gupta et al., ASPLOS 2009).  MQSim's ``Ideal_Mapping_Table: true`` is
  ``auto`` on a drive with DRAM (no mapping traffic).  ``entries`` caches mapping *entries*, one per
  logical page, ``map_cache_mib / map_entry_bytes`` of them, least recently used replaced, and an evicted
  dirty entry writes back its translation page with every dirty entry of it (MQSim's CMT exactly:
  ``Cached_Mapping_Table``, ``generate_flash_writeback_request_for_mapping_data``; DFTL's batch update);
  computed on the host per chunk (``ssdx.models.engine.entries``), so a batch's configurations that use
  it share one cache size and logical geometry.  In every mode a lookup of a translation page that is
  being read waits for that read instead of reading it again.
* ``map_read_bytes`` — bytes a mapping-cache miss moves over the channel from the translation page
  (default 4096: one 4 KiB unit; MQSim reads one 512-byte sector, ``SECTOR_SIZE_IN_BYTE`` in
  ``generate_flash_read_request_for_mapping_data``).
* ``map_entry_bytes`` — bytes of one cached entry (``entries``; default 8: a 4-byte logical and a 4-byte
  physical page number).  MQSim's is ``ceil((2 log2(physical pages) + sectors per page) / 8)``.
* ``buffer_dram_mts`` — data rate of the DRAM holding the write buffer, MT/s; 0 (default): no DRAM
  timing.  Above 0 every host write is written into that DRAM through one memory channel before it is
  acknowledged, taking ``tRCD + tCL`` per row opened, ``tRP`` between rows and ``floor(bytes / burst /
  2)`` transfers of ``1 / rate`` (MQSim's ``estimate_dram_access_time`` and ``Data_Cache_DRAM_*``
  fields; Tavakkol et al., FAST 2018).  ``buffer_dram_row_bytes``, ``buffer_dram_burst_bytes``,
  ``buffer_dram_trcd_ns``, ``buffer_dram_tcl_ns``, ``buffer_dram_trp_ns``: the other fields, MQSim's
  defaults (8192 B, 4 B, 13 ns each).
* ``buffer_dram_formula`` — ``rows`` (default): the time above, each row of a write opened, read out and
  precharged once.  ``mqsim``: MQSim's ``estimate_dram_access_time`` term for term, less its truncation
  to whole nanoseconds (``Data_Cache_Manager_Base.h``, commit ``7ec40e3``), which agrees with ``rows``
  up to one row and, for a longer access, counts
  ``floor(bytes / row / 2)`` rows of ``tRCD + tCL + row transfer + tRP`` plus ``tRCD + tCL`` and the bytes
  past the last row divided by (not multiplied by) the transfer time: about half the time of ``rows``.  A
  reproduction of MQSim's arithmetic for cross-validation against it, not a DRAM model.
* ``write_back`` — when buffered write data goes to flash (step 4 of ``ssdx.models.engine.model``):
  ``gather`` (default) gathers writes into full multi-plane program units dealt round-robin over the dies
  (a log-structured FTL's write frontier); ``eager`` sends every logical page a write touches to flash at
  once as its own program on the die its address maps to, as MQSim's data cache managers do for data not
  written in the last second (``write_to_destage_buffer``: "eagerly write back cold data"; Tavakkol et
  al., FAST 2018), and a write waits, before it enters the buffer, while the written-back data not yet
  programmed exceeds ``inflight_kib``.
* ``inflight_kib`` — ``eager``: written-back data in flight (sent to flash, not yet programmed) above which
  new writes wait, KiB; 0 (default): one page per plane of the drive, MQSim's
  ``back_pressure_buffer_max_depth``.
* ``back_pressure`` — ``eager``: how the data in flight is counted when a write waits for room.
  ``fluid`` (default) takes the dies' summed program backlog as draining evenly at ``inflight_kib`` worth
  of programs: a write is let in once the backlog, its own programs included, has drained to what the
  limit holds.  That gives the mean wait, not its spread.  ``programs`` counts programs instead, each
  die's backlog taken as back-to-back programs of ``t_PROG`` ending where the backlog ends, each
  carrying one page of the write's size.  A write is let in at the first instant the programs still
  queued or running carry less than ``inflight_kib``, its own pages but the first added (at once where
  they already do).  That is MQSim's rule (``Data_Cache_Manager_Flash_Advanced::write_to_destage_buffer``:
  a transaction goes to flash while the sectors in flight, those of the request let in before it
  included, are below ``back_pressure_buffer_max_depth``; a write that does not fit waits until a write
  transaction ends), with two approximations: a program joined across planes carries more than one page
  (``plane_merge``), so the data in flight is undercounted by the share of joined pages; and a write whose
  own pages fill the limit waits for every program in flight, where MQSim lets it in page by page.
  The wait delays the write's acknowledgement, not its programs: they are booked from its host transfer
  on, as with ``fluid``.  MQSim sends a held write to flash only once it is let in, but a die's backlog
  here is one end time, read as back-to-back programs, and a program booked after an idle gap would be
  counted as the gap's worth of programs (measured in docs/mqsim_cases.md).  ``pages`` is MQSim's rule
  without these approximations, in the per-configuration loop only (``cpu`` and ``cuda`` back ends;
  ``ssdx.models.engine.cpu_ops._write_pages``): each page in flight to flash is kept with its bytes
  until its program ends (``State.flight``), and a write's pages go one by one, each when less than
  ``inflight_kib`` is in flight; each is then sent over its channel and programmed, joining a program
  not yet issued where ``plane_merge``.  With ``map_cache = entries`` a write's pages are looked up in the
  mapping table as they go to flash, as MQSim does (``Address_Mapping_Unit_Page_Level``: a page that
  misses reads its translation page unless a read of it is in flight, and waits for it; the read goes
  ahead of the reads queued on its die).  The write is acknowledged when its last page has gone.
* ``page_types`` — ``plane_merge``: ``mean`` (default) times every program at ``nand.t_prog_us``;
  ``mqsim`` at its page type's time, ``nand.t_prog_us`` times ``prog_lsb_factor``, ``prog_csb_factor`` or
  ``prog_msb_factor``, the page type given by the page's index in its block (the plane's count of pages
  programmed) as MQSim gives it (``Flash_Chip::Get_command_execution_latency``, after Yaakobi et al.,
  ICNC 2012): MLC pages alternate LSB, MSB; TLC pages 0-5 are LSB, 6-7 CSB, then pairs of LSB, CSB, MSB
  in turn.  A multi-plane program takes its page number's time.  Reads and the back pressure's estimate of
  the programs in flight keep the mean.
* ``rewrite_window_s`` — ``eager``: a logical page written again within the current window of this many
  seconds is not written back again; its data stay dirty in the buffer, not programmed, and with
  ``map_cache = entries`` not looked up in the mapping table (MQSim's hot/cold separation: the
  ``bloom_filter`` of ``write_to_destage_buffer``, emptied at the first write past each window,
  ``bloom_filter_reset_step`` = 1 s; Tavakkol et al., FAST 2018).  Computed on the host from the writes'
  arrival times (``ssdx.models.engine.rewrites``), so only in an open loop: a closed loop, whose arrival
  times come out of the simulation, keeps nothing.  0 (default): every page written back.
* ``plane_merge`` — ``eager``: a page program joins a program of another plane of the same die that is
  booked and not yet started and has the same page number in its block, as one multi-plane program of
  ``t_PROG`` (MQSim's transaction scheduler: ``TSU_Base::issue_command_to_chip`` gathers the queue's
  transactions for the die of its first one, one a plane, of equal ``PageID``; Tavakkol et al., FAST 2018).
  A page's plane and page number follow MQSim's static CWDP allocation: logical page ``g`` of die ``d``
  (``g = d + n·dies``) is on plane ``(n div merge_dies) mod planes`` of the die's ``n mod merge_dies``-th
  die and takes its plane's next page (pages programmed there, modulo the pages of a block, from a fresh
  drive).  A die remembers the start of its latest :data:`MERGE_RING` programs a plane; a later partner is
  not found.  Without it every page is its own program (the pages of one write on one die share
  ``ceil(pages / planes)`` programs).  ``false`` (default).
* ``merge_dies`` — ``plane_merge``: the dies of a chip one modelled die stands for (``mqsim.chip_as_die``):
  a multi-plane program takes the planes of one of them.  1 (default).
* ``fresh_blocks`` — ``false`` (default): every block a die programs costs its erase when the die
  reaches it, the steady state in which each block written was freed by garbage collection.  ``true``:
  the blocks not holding data at the start (the raw capacity less ``workload.prefill_fraction`` of the
  user capacity) are erased already, as on a drive out of the box (SNIA Solid State Storage Performance
  Test Specification: fresh-out-of-box state), so a die erases only once it has programmed past them.
  MQSim erases in garbage collection only (``GC_and_WL_Unit_Base``), never on a drive with free blocks.
* ``cache_read`` — whether a die starts its next array read while the page it last read is still going
  out over the channel (``true``, default: the die moves the page into its cache register and frees its
  page register, ONFI's READ CACHE operations; Open NAND Flash Interface Specification, Read Cache
  Random) or holds that read until its data is out (``false``: plain PAGE READ, the page register is
  busy until the controller has read it).  Without it a read keeps its die for ``t_read``, the wait for
  its channel and its own transfer; a translation read keeps it for its ``map_read_bytes`` transfer.
  MQSim's flash chips have no cache read: a chip stays in ``WAIT_FOR_DATA_OUT`` until its read data is
  transferred, and its scheduler issues it nothing until then (``NVM_PHY_ONFI_NVDDR2``,
  ``TSU_Priority_OutOfOrder``; Tavakkol et al., FAST 2018).
* ``backend`` — how the engine runs, not what it computes (so not a column): ``auto`` (default), ``jax``,
  ``cpu`` or ``cuda``.  This module only checks the name (:func:`backend_name`); what it means on the
  machine at hand — the hardware probe, ``auto`` resolved — is ``ssdx.models.engine.backends.select``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from ssdx import catalog, params
from ssdx.core.fields import ConfigError, check, check_rule, null_or_value, num
from ssdx.models.engine.options import (
    BACK_PRESSURES,
    BACKENDS,
    DRAM_FORMULAS,
    FIELDS,
    LOOPS,
    MAP_CACHES,
    OPTIONAL,
    PAGE_TYPES,
    RANGES,
    SUSPENSIONS,
    WRITE_BACKS,
)
from ssdx.params import _pytree
from ssdx.units import MIB

MAP_ENTRY_BYTES = 4  # one mapping entry per 4 KiB logical unit (page-level FTL)
MAP_UNIT_BYTES = 4096
#: the user capacity the engine addresses: offsets are int32 counts of 4 KiB units (8 TiB); a larger drive's
#: requests are mapped onto its first 8 TiB (:func:`address_warning`)
ADDRESSABLE_BYTES = (2**31 - 1) * MAP_UNIT_BYTES
MAX_SLOTS = 4096  # outstanding commands the engine tracks (NVMe allows more; none of our studies need it)


@_pytree
class EngineParams:
    """Controller-side numbers as leaves (SI: seconds, bytes, per second).  ``open_loop`` is 0/1,
    ``duplex`` 1 where reads and writes use separate link directions (PCIe), 0 for SATA."""

    open_loop: Any
    write_buffer_bytes: Any
    map_cache_pages: Any  # translation pages the DRAM-less cache holds (int32)
    map_hit_s: Any
    ctrl_s: Any  # controller front-end seconds per command
    cmd_s: Any  # host and controller command processing per command, s (latency only)
    host_rate: Any  # host link payload rate each way, bytes/s
    time_scale: Any
    duplex: Any
    suspend_program: Any  # 1 where a host read may suspend a program (engine.suspension), else 0
    suspend_erase: Any  # 1 where it may suspend an erase
    suspend_program_s: Any
    suspend_erase_s: Any
    suspend_min_program_s: Any
    suspend_min_erase_s: Any
    map_policy: Any  # engine.map_cache: 0 auto, 1 direct-mapped, 2 LRU (MAP_CACHES)
    dram_rate: Any  # write-buffer DRAM transfers per second (0: no DRAM timing)
    dram_row: Any  # bytes
    dram_burst: Any  # bytes per transfer
    dram_trcd: Any  # s
    dram_tcl: Any
    dram_trp: Any
    dram_mqsim: Any  # engine.buffer_dram_formula: 0 rows, 1 MQSim's estimate_dram_access_time
    eager: Any  # engine.write_back: 0 gather, 1 eager (WRITE_BACKS)
    inflight_bytes: Any  # eager: written-back bytes in flight before writes wait (0: a page per plane)
    rewrite_window_s: Any  # eager: a page written again within this window is not written back (0: off)
    plane_merge: Any  # eager: 1 where a page program joins a queued one of another plane (same page number)
    merge_dies: Any  # plane_merge: the chip's dies one modelled die stands for
    fresh_blocks: Any  # 1: the blocks free at the start are erased (engine.fresh_blocks); else 0
    bp_programs: Any  # eager, engine.back_pressure: 1 programs, 2 pages (BACK_PRESSURES); else 0
    page_rule: Any  # plane_merge, engine.page_types = mqsim: bits per cell (MQSim's page-type rule); else 0
    prog_f0: Any  # the LSB page's program time over nand.t_prog_us (engine.prog_lsb_factor)
    prog_f1: Any  # the CSB page's
    prog_f2: Any  # the MSB page's
    map_entries: Any  # engine.map_cache = entries: the cache's capacity in entries (int32), else 0
    map_read_bytes: Any  # bytes a translation read moves over the channel
    hold_read: Any  # engine.cache_read false: 1, a read keeps its die until its data is out; else 0


#: idle gaps a die's read booking keeps (``ssdx.models.engine.book.book``) where reads can become ready
#: out of issue order: under load a die holds reads booked ahead of time, each with a gap before it; with
#: 8 no gap later work could use is forgotten up to about 96 % die utilisation (``bench/booking.py``),
#: with fewer the booking loses capacity sooner
READ_GAPS = 8


class Layout(NamedTuple):
    """Static array sizes of a batch: die positions are ``ways x channels``.  Whether any configuration of
    the batch tracks read suspension (:func:`suspend_on`), uses the LRU mapping cache (``map_lru``) or
    writes dirty translation pages back (``map_writeback``) or writes back eagerly (``eager``), and whether
    any counts the programs in flight for its back pressure (``bp_programs``): where none
    does, the batched step leaves that mechanism out of its arithmetic, and the results are the same.
    ``read_gaps``: the idle gaps a die's read booking keeps, :data:`READ_GAPS` where a read of some
    configuration can become ready out of issue order, else 1 (the same bookings, a smaller state).
    ``flight_slots``: the pages in flight to flash a configuration with ``engine.back_pressure = pages``
    keeps (``State.flight``, :func:`flight_slots`); 0 where none has it."""

    ways: int
    channels: int
    slots: int
    map_sets: int
    suspension: bool = True
    map_lru: bool = True
    map_writeback: bool = True
    eager: bool = True
    map_entries: bool = True
    hold_read: bool = True
    rewrites: bool = True
    merge_rows: int = 0
    read_gaps: int = READ_GAPS
    bp_programs: bool = True
    flight_slots: int = 0


def columns(engine: Mapping) -> dict[str, np.ndarray]:
    """One-row ``engine.*`` columns from a config mapping (every field of :data:`FIELDS` required, those
    of :data:`OPTIONAL` defaulted)."""
    cols = {}
    for f in FIELDS:
        if f not in engine:
            raise ConfigError(f"engine.{f}", None, "the field is required (see conf/engine/default.yaml)")
        cols[f"engine.{f}"] = np.asarray([engine[f]])
    for f, default in OPTIONAL.items():
        v = engine.get(f)
        v = default if v is None else v
        if default is None:  # null: NaN, the catalog's value; a NaN given is refused (only null means that)
            v = null_or_value(v, RANGES[f"engine.{f}"])
        cols[f"engine.{f}"] = np.asarray([v])
    return cols


def backend_name(engine: Mapping) -> str:
    """The ``engine.backend`` of a config mapping (default ``auto``), checked against :data:`BACKENDS`.
    What the name means on this machine is resolved by ``ssdx.models.engine.backends.select``."""
    value = engine.get("backend", "auto")
    if value not in BACKENDS:
        raise ConfigError("engine.backend", value, f"must be one of {list(BACKENDS)}")
    return value


def validate(cols: Mapping, report: list | None = None) -> None:
    """Check the engine fields and the queue depth the engine can track."""
    a = np.asarray(cols["engine.loop"]).astype(str)
    check_rule(cols, "engine.loop", np.isin(a, LOOPS), f"must be one of {list(LOOPS)}", a, report)
    mc = _categorical(cols, "map_cache")
    check_rule(cols, "engine.map_cache", np.isin(mc, list(MAP_CACHES)), f"must be one of {list(MAP_CACHES)}",
               mc, report)
    for name, choices in (("write_back", WRITE_BACKS), ("back_pressure", BACK_PRESSURES),
                          ("page_types", PAGE_TYPES), ("buffer_dram_formula", DRAM_FORMULAS)):
        v = _categorical(cols, name)
        check_rule(cols, f"engine.{name}", np.isin(v, list(choices)), f"must be one of {list(choices)}", v,
                   report)
    cr = _cache_read(cols)
    check_rule(cols, "engine.cache_read", np.isin(cr, [True, False, 0, 1]), "must be true or false", cr,
               report)
    for name in ("plane_merge", "fresh_blocks"):
        v = _flag(cols, name)
        check_rule(cols, f"engine.{name}", np.isin(v, [True, False, 0, 1]), "must be true or false", v,
                   report)
    sus = _suspension(cols)
    check_rule(cols, "engine.suspension", np.isin(sus, list(SUSPENSIONS)),
               f"must be one of {list(SUSPENSIONS)}", sus, report)
    check(RANGES, cols, report)
    qd = num(cols, "workload.queue_depth")
    check_rule(cols, "workload.queue_depth", qd <= MAX_SLOTS,
               f"the request-level engine tracks at most {MAX_SLOTS} outstanding commands", report=report)
    page = params.nand_value(cols, "page_bytes")  # effective: nand.page_kib or the catalog's
    check_rule(cols, "nand.page_kib", (page >= MAP_UNIT_BYTES) & (np.mod(page, MAP_UNIT_BYTES) == 0),
               f"the request-level engine maps {MAP_UNIT_BYTES // 1024} KiB units: the page must be a whole "
               f"number of them (>= {MAP_UNIT_BYTES // 1024} KiB)", page / 1024, report)


def _categorical(cols: Mapping, field: str) -> np.ndarray:
    """A categorical optional ``engine.*`` field of every configuration (its default where a batch
    leaves it out)."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    value = np.asarray(cols.get(f"engine.{field}", OPTIONAL[field])).astype(str)
    return np.broadcast_to(value, (n,))


def _suspension(cols: Mapping) -> np.ndarray:
    """``engine.suspension`` of every configuration (the default where a batch leaves it out)."""
    return _categorical(cols, "suspension")


def map_policy(cols: Mapping) -> np.ndarray:
    """``engine.map_cache`` of every configuration as its numeric leaf (:data:`MAP_CACHES`)."""
    return np.array([MAP_CACHES[v] for v in _categorical(cols, "map_cache")], np.int32)


def eager(cols: Mapping) -> np.ndarray:
    """``engine.write_back`` of every configuration as its numeric leaf (:data:`WRITE_BACKS`)."""
    return np.array([WRITE_BACKS[v] for v in _categorical(cols, "write_back")], np.int32)


def _cache_read(cols: Mapping) -> np.ndarray:
    """``engine.cache_read`` of every configuration as given (``True`` where a batch leaves it out)."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    return np.broadcast_to(np.asarray(cols.get("engine.cache_read", OPTIONAL["cache_read"]), object), (n,))


def _flag(cols: Mapping, name: str) -> np.ndarray:
    """A boolean ``engine.<name>`` of every configuration as given (its default where a batch leaves it
    out)."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    return np.broadcast_to(np.asarray(cols.get(f"engine.{name}", OPTIONAL[name]), object), (n,))


#: pages of a request the host-side page masks cover (``Requests.kept``, ``first_read``: bits of an int32
#: below the sign bit); a write's later pages are always written back, a read's take no page number
MASK_PAGES = 31
#: program start times a modelled die remembers per plane for :func:`plane_merge` (its ring of the latest
#: programs; a page finds a partner among the last this many programs of the other plane).  MQSim searches
#: its whole queue; a partner further back than this is rare, and the figures hardly move past it (the
#: ring's sensitivity is measured in docs/mqsim_cases.md)
MERGE_RING = 8


def plane_merge(cols: Mapping) -> np.ndarray:
    """1 where a page program joins a queued program of another plane (``engine.plane_merge``, with the
    eager write-back), else 0."""
    return (_flag(cols, "plane_merge").astype(bool) & (eager(cols) > 0)).astype(np.int32)


def page_rule(cols: Mapping, bits: Any) -> np.ndarray:
    """MQSim's page-type rule for each configuration's programs (``engine.page_types = mqsim`` with
    ``engine.plane_merge``): its bits per cell ``bits`` (1 SLC, 2 MLC, 3 TLC), else 0 (every page at
    ``nand.t_prog_us``)."""
    on = np.array([PAGE_TYPES[v] for v in _categorical(cols, "page_types")]) * (plane_merge(cols) > 0)
    return np.where(on > 0, np.round(np.nan_to_num(np.asarray(bits, np.float64))), 0.0)


def bp_programs(cols: Mapping) -> np.ndarray:
    """Where the eager write-back's back pressure counts the programs in flight: 1 for
    ``engine.back_pressure = programs``, 2 for ``pages`` (with ``engine.write_back = eager``), else 0."""
    bp = _categorical(cols, "back_pressure")
    return np.array([BACK_PRESSURES[v] for v in bp], np.int32) * (eager(cols) > 0)


def merge_rows(cols: Mapping) -> int:
    """Rows of the multi-plane state a die keeps (``State.merge``): for each plane of each die it stands
    for, the pages programmed there and the start times of its latest :data:`MERGE_RING` programs; 0 where
    no configuration merges."""
    on = plane_merge(cols) > 0
    if not on.any():
        return 0
    planes = num(cols, "drive.planes_per_die")
    return int((planes * _opt(cols, "engine.merge_dies"))[on].max()) * (1 + MERGE_RING)


def hold_read(cols: Mapping) -> np.ndarray:
    """1 where a read keeps its die until its data is out (``engine.cache_read: false``), else 0."""
    return (~_cache_read(cols).astype(bool)).astype(np.int32)


def _opt(cols: Mapping, key: str) -> np.ndarray:
    """A numeric optional ``engine.*`` column (its default where a batch leaves it out)."""
    if key in cols:
        return num(cols, key)
    n = len(np.atleast_1d(cols["engine.loop"]))
    return np.broadcast_to(float(OPTIONAL[key.split(".", 1)[1]]), (n,))


def _given_or_interface(cols: Mapping, field: str, scale: float,
                        of_interface: Callable[[catalog.Interface], float]) -> np.ndarray:
    """A nullable ``engine.<field>`` of every configuration in SI units: its value times ``scale`` where set,
    else what ``of_interface`` takes (in SI units) from the configuration's ``drive.interface``
    (``ssdx.catalog``)."""
    iface = np.asarray(cols["drive.interface"]).astype(str)
    from_catalog = params.lookup(iface, lambda x: of_interface(catalog.interface(x)))
    key = f"engine.{field}"
    given = np.asarray(cols[key], float) if key in cols else np.full(len(iface), np.nan)
    return np.where(np.isnan(given), from_catalog, given * scale)


def cmd_seconds(cols: Mapping) -> np.ndarray:
    """Command processing per command of every configuration, s: ``engine.cmd_us`` where set, else the
    interface's (``ssdx.catalog``)."""
    return _given_or_interface(cols, "cmd_us", 1e-6, lambda i: i.cmd_overhead_us * 1e-6)


def host_bytes_per_s(cols: Mapping) -> np.ndarray:
    """Host link payload rate of every configuration, bytes/s: ``engine.host_gb_s`` where set, else the
    interface's usable rate (``ssdx.catalog``)."""
    return _given_or_interface(cols, "host_gb_s", 1e9, lambda i: i.usable_bytes_per_s)


def map_pages(cols: Mapping) -> np.ndarray:
    """Translation pages a DRAM-less map cache holds: cache bytes / effective NAND page bytes (>= 1)."""
    page = params.nand_value(cols, "page_bytes")
    return np.maximum(np.floor(num(cols, "engine.map_cache_mib") * MIB / page), 1).astype(np.int32)


def _suspend_fields(cols: Mapping, c: Callable = np.asarray) -> dict[str, Any]:
    """The suspension leaves of :class:`EngineParams` (``c`` converts each to its dtype)."""
    sus = _suspension(cols)
    return dict(
        suspend_program=c([SUSPENSIONS[v][0] for v in sus]),
        suspend_erase=c([SUSPENSIONS[v][1] for v in sus]),
        suspend_program_s=c(_opt(cols, "engine.suspend_program_us") * 1e-6),
        suspend_erase_s=c(_opt(cols, "engine.suspend_erase_us") * 1e-6),
        suspend_min_program_s=c(_opt(cols, "engine.suspend_min_program_us") * 1e-6),
        suspend_min_erase_s=c(_opt(cols, "engine.suspend_min_erase_us") * 1e-6),
    )


def suspend_on(e: Any) -> Any:
    """Where a configuration's suspension options leave the default (``program_erase`` at no cost and
    with no thresholds, which needs no tracking: a read starts as soon as the die is free of reads):
    then the engine tracks each die's program/erase run.  ``e`` holds the suspension leaves of
    :class:`EngineParams`, NumPy or JAX arrays."""
    return ((e.suspend_program < 0.5) | (e.suspend_erase < 0.5) | (e.suspend_program_s > 0)
            | (e.suspend_erase_s > 0) | (e.suspend_min_program_s > 0) | (e.suspend_min_erase_s > 0))


def layout(cols: Mapping) -> Layout:
    """The batch's static sizes (largest of every configuration) and whether any tracks suspension."""
    policy = map_policy(cols)
    # configs with a page cache (an entry cache lives on the host: ssdx.models.engine.entries)
    cached = (~np.asarray(cols["drive.dram"]).astype(bool) & (policy == 0)) | (policy == 1) | (policy == 2)
    sets = map_pages(cols)
    suspension = bool(np.any(suspend_on(SimpleNamespace(**_suspend_fields(cols)))))
    # a read waits for its translation read (a mapping cache that can miss) or for a program boundary
    # (suspension): only then does a read become ready before work booked earlier; otherwise reads are
    # ready in issue order, and one gap books them exactly as READ_GAPS would
    out_of_order = bool(cached.any() or np.any(policy == 3) or suspension)
    return Layout(
        ways=int(num(cols, "drive.dies_per_channel").max()),
        channels=int(num(cols, "drive.channels").max()),
        slots=int(num(cols, "workload.queue_depth").max()),
        map_sets=int(sets[cached].max()) if cached.any() else 1,
        suspension=suspension,
        map_lru=bool(np.any(policy == 2)),
        map_writeback=bool(np.any(policy > 0)),
        eager=bool(np.any(eager(cols) > 0)),
        map_entries=bool(np.any(policy == 3)),
        hold_read=bool(np.any(hold_read(cols) > 0)),
        rewrites=bool(np.any((eager(cols) > 0) & (_opt(cols, "engine.rewrite_window_s") > 0)
                             & (np.asarray(cols["engine.loop"]).astype(str) == "open"))),
        merge_rows=merge_rows(cols),
        bp_programs=bool(np.any(bp_programs(cols) > 0)),
        read_gaps=READ_GAPS if out_of_order else 1,
    )


def build(cols: Mapping, dtype=np.float32,
          warn: bool = True) -> tuple[params.Drive, params.Workload, EngineParams, Layout]:
    """Validate drive, workload and engine columns; the three pytrees (leaves ``(n,)``) and the layout.
    A drive larger than the engine addresses is named in a warning (:func:`address_warning`), unless
    ``warn`` is false (a caller that reports it itself)."""
    drive, workload = params.build(cols, dtype=dtype)
    validate(cols)
    c = lambda a: np.asarray(a, dtype=dtype)  # noqa: E731
    iface = np.asarray(cols["drive.interface"]).astype(str)
    eng = EngineParams(
        open_loop=c(np.asarray(cols["engine.loop"]).astype(str) == "open"),
        write_buffer_bytes=c(num(cols, "engine.write_buffer_mib") * MIB),
        map_cache_pages=np.where(map_policy(cols) == 3, 1, map_pages(cols)).astype(np.int32),
        map_hit_s=c(num(cols, "engine.map_hit_us") * 1e-6),
        ctrl_s=c(1.0 / (num(cols, "engine.ctrl_kiops") * 1e3)),
        cmd_s=c(cmd_seconds(cols)),
        host_rate=c(host_bytes_per_s(cols)),
        time_scale=c(num(cols, "engine.time_scale")),
        duplex=c(~params.lookup(iface, lambda x: catalog.interface(x).sata, bool)),
        **_suspend_fields(cols, c),
        map_policy=c(map_policy(cols)),
        dram_rate=c(_opt(cols, "engine.buffer_dram_mts") * 1e6),
        dram_row=c(_opt(cols, "engine.buffer_dram_row_bytes")),
        dram_burst=c(_opt(cols, "engine.buffer_dram_burst_bytes")),
        dram_trcd=c(_opt(cols, "engine.buffer_dram_trcd_ns") * 1e-9),
        dram_tcl=c(_opt(cols, "engine.buffer_dram_tcl_ns") * 1e-9),
        dram_trp=c(_opt(cols, "engine.buffer_dram_trp_ns") * 1e-9),
        dram_mqsim=c(np.array([DRAM_FORMULAS[v] for v in _categorical(cols, "buffer_dram_formula")])),
        eager=c(eager(cols)),
        inflight_bytes=c(_opt(cols, "engine.inflight_kib") * 1024.0),
        rewrite_window_s=c(_opt(cols, "engine.rewrite_window_s")),
        plane_merge=c(plane_merge(cols)),
        merge_dies=c(_opt(cols, "engine.merge_dies")),
        fresh_blocks=c(_flag(cols, "fresh_blocks")),
        bp_programs=c(bp_programs(cols)),
        page_rule=c(page_rule(cols, drive.nand.bits_per_cell)),
        prog_f0=c(_opt(cols, "engine.prog_lsb_factor")), prog_f1=c(_opt(cols, "engine.prog_csb_factor")),
        prog_f2=c(_opt(cols, "engine.prog_msb_factor")),
        map_entries=np.where(map_policy(cols) == 3, np.floor(num(cols, "engine.map_cache_mib") * MIB
                                                             / _opt(cols, "engine.map_entry_bytes")),
                             0).astype(np.int32),
        map_read_bytes=c(_opt(cols, "engine.map_read_bytes")),
        hold_read=c(hold_read(cols)),
    )
    warning = address_warning(float(np.max(user_capacity_bytes(drive)))) if warn else None
    if warning:
        warnings.warn(warning, stacklevel=2)
    return drive, workload, eng, layout(cols)._replace(flight_slots=flight_slots(drive, eng))


#: the most pages in flight to flash ``engine.back_pressure = pages`` keeps per configuration
MAX_FLIGHT_SLOTS = 1 << 16


def flight_slots(drive: params.Drive, eng: EngineParams) -> int:
    """``Layout.flight_slots``: how many pages can be in flight to flash at once where a configuration
    lets a write's pages in one by one (``engine.back_pressure = pages``), 0 where none does: the
    back pressure's bytes (``engine.inflight_kib``, else a page per plane of the drive) over a 4 KiB page,
    the least a page of a write carries to flash (one more: a page is let in while less is in flight),
    twice for pages let in ahead of a write that waits, and one slot for their count; at most
    :data:`MAX_FLIGHT_SLOTS`."""
    on = np.asarray(eng.bp_programs) > 1.5
    if not np.any(on):
        return 0
    page = np.asarray(drive.nand.page_bytes, np.float64)
    default = np.asarray(drive.dies, np.float64) * np.asarray(drive.planes_per_die, np.float64) * page
    given = np.asarray(eng.inflight_bytes, np.float64)
    limit = np.where(given > 0, given, default)
    return int(min(np.max(np.where(on, 2.0 * (np.ceil(limit / MAP_UNIT_BYTES) + 1.0) + 1.0, 1.0)),
                   MAX_FLIGHT_SLOTS))


def user_capacity_bytes(drive: params.Drive) -> np.ndarray:
    """The capacity the host addresses, bytes (float64): ``U``, or ``U / bits per cell`` in pure_slc mode
    (``ssdx.models.fluid.model.capacity_bytes``, in NumPy here: a parameter module imports no model)."""
    user = np.asarray(drive.user_bytes, np.float64)
    pure_slc = np.asarray(drive.slc_mode) == params.SLC_MODES.index("pure_slc")
    return np.where(pure_slc, user / np.asarray(drive.nand.bits_per_cell, np.float64), user)


def address_warning(capacity: float) -> str | None:
    """What a run says when a drive's user capacity (``capacity`` bytes, the largest of a batch) is more
    than the engine addresses (:data:`ADDRESSABLE_BYTES`), else None."""
    if capacity <= ADDRESSABLE_BYTES:
        return None
    return (f"the drive's user capacity ({capacity:.6g} bytes) is more than the request engine addresses "
            f"({ADDRESSABLE_BYTES:.6g} bytes, 8 TiB: offsets are int32 counts of 4 KiB units): requests are "
            "mapped onto its first 8 TiB, so a workload spread over more of the drive finds its translation "
            "pages aliased and a mapping cache's hit rate overestimated (a drive with its whole map in DRAM "
            "is not affected); the times and counts are otherwise those of the drive")


def columns_from_config(cfg: Mapping, drives: Sequence[Mapping] | None = None) -> dict[str, np.ndarray]:
    """Columns of the configured drive (``drive``, ``nand``, ``workload``, ``engine``), or one row per drive
    of ``drives`` with the same NAND overrides, workload and engine."""
    rows = []
    for d in drives or [cfg["drive"]]:
        c = params.columns_from_config(d, cfg["workload"], cfg.get("nand"))
        c.update(columns(cfg["engine"]))
        rows.append(c)
    return params.concat_columns(rows)


def build_from_config(cfg: Mapping, n: int = 1, dtype=np.float32):
    """Columns and pytrees of one configuration (``drive``, ``nand``, ``workload``, ``engine``), repeated
    ``n`` times."""
    cols = columns_from_config(cfg)
    cols = params.broadcast_columns(cols, n) if n > 1 else cols
    return cols, build(cols, dtype=dtype)
