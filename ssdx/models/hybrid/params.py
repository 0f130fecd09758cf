"""SCM/NAND hybrid drive parameters (``hybrid.*``) and the static layout of a batch.

The hybrid model (``ssdx.models.hybrid.model``) puts a storage-class-memory tier in front of a NAND array of
any
catalog type, after the SCM/NAND hybrid SSD study of Fukuchi, Sakaki, Matsui and Takeuchi (Chuo Univ.;
full version at ISCAS 2018, "Fukuchi et al." below).  Every number below is a column ``hybrid.<field>``
(config group ``hybrid:``, defaults in ``conf/hybrid/default.yaml``); the resolved leaves of
:class:`HybridParams` are dynamic (swept by ``vmap``), while the associativity, the largest set, die,
channel, bank and queue counts form the static :class:`Layout`.

Fields:

* ``nand`` — catalog NAND type of the array (Fukuchi et al. Table 1 types: ``2d_fg_mlc``, ``2d_fg_tlc``,
  ``3d_fg_tlc``, ``3d_ct_tlc``).  ``t_prog_us``, ``t_read_us``, ``t_erase_us`` (µs per page, per page, per
  block), ``block_pages`` and ``write_unit_kib`` replace the catalog value when set (NaN/null keeps it):
  the sensitivity study changes one of them at a time.  ``page_kib`` (a whole number of 4 KiB lines) and
  ``bits_per_cell`` (1-4) may be added the same way (optional columns; absent or null = the catalog value).
  Effective values come from ``ssdx.params.nand_value``, the helper every model shares.
* ``channels``, ``dies_per_channel``, ``bus_mts`` (MT/s of an 8-bit ONFI/Toggle bus, so MB/s per
  channel; die ``d`` sits on channel ``d mod channels``), ``interface`` (``none``: no host link, as in
  Fukuchi et al., who describe none; or a catalog host interface — usable rate per direction and command
  overhead — whose reads and writes are booked on the link's two directions, PCIe being full duplex).
* ``scm_ratio`` and ``scm_basis`` — SCM capacity as a fraction of the workload's footprint (distinct bytes
  it touches; ``scm_basis: footprint``) or of the NAND tier's capacity ``nand_capacity_gib``
  (``scm_basis: nand``; 1.5-10 % of the NAND is a range other SCM/NAND hybrid SSD studies of the same
  group are said to use, not checked here against a specific paper).
* ``scm_banks`` — independently busy SCM banks; 4 KiB lines interleave over them by address.  Table 1
  gives one access time (100 ns per 512 B sector) and no organisation.  The default, one bank per NAND die
  (32), is an assumption made so that the SCM is never what limits the study's drives (each run reports
  ``scm_utilisation``); a single bank caps a volume that hits SCM at 5.12 GB/s for every NAND type, which
  hides the NAND the study compares.  The knob stays for a sensitivity case.
* ``threshold`` — NV-WB trigger: data moves from SCM to NAND while free SCM space is at or below this
  fraction of its capacity (Fukuchi et al.: 20 %).
* ``block_staging`` — how dirty data leaves SCM for a NAND whose write unit is a block: ``progressive``
  (default) programs it word line by word line (``bits_per_cell`` pages, or the write unit if smaller)
  into an open block on each die in turn, so only data not yet programmed waits in SCM; ``whole`` gathers
  a whole write unit in SCM and programs it on one die.  The two agree for page and word-line units.
* ``ways`` — associativity of the SCM table (static, one value per batch; see ``ssdx.models.hybrid.model``).
* ``victim`` — which SCM entry leaves: ``lru`` (least recently used; the paper does not name NV-WB's
  victim rule, so this is an assumption), ``fifo`` (oldest insertion) or ``cflru`` (clean-first LRU,
  Park et al., CASES 2006: a clean entry costs no NAND program).
* ``read_priority`` — reads go ahead of queued programs and may suspend the one in progress (Wu & He,
  FAST 2012), or wait in FIFO order behind all of them (false).
* ``max_suspends`` — how many times one program operation (a unit's pages × ``t_prog``: a page, or a word
  line programmed one-shot; GC's copies are operations of their own) may be suspended for reads; after
  that, reads wait for it to end (0: reads wait for the operation in progress but still go before queued
  ones, Wu & He's read-priority scheduling).  Default null: once per ISPP step, the points where Wu & He
  (FAST 2012) suspend a program — between a pulse (20 µs) and its verify (24 µs for MLC) — so an
  operation of ``t`` µs allows ``ceil(t / 44)`` (:data:`ISPP_STEP_US`).  A smaller count is a vendor's
  choice (e.g. the tiered limit of US patent 10,956,081, whose numbers are not published; MQSim,
  Tavakkol et al., FAST 2018, lets a chip hold one suspended command at a time).  Unbounded suspension
  (the first versions of this model) let reads push programs back without limit, so a read-heavy run
  booked more die work than its window held.
* ``suspend_resume_us`` — die time one suspension adds to the program, µs: the program is suspended between
  an ISPP pulse and its verify, and resuming repeats the verify (Wu & He, FAST 2012: 24 µs for MLC).
* ``nand_utilisation`` — valid data / physical NAND; the spare ``1 - u`` sets the NAND tier's garbage
  collection cost through greedy write amplification with the block's page count
  (``ssdx.models.gc.wa_analytic.greedy_wa``).
* ``queue_depth`` — closed-loop host queue depth (the trace is replayed as fast as the drive serves it).

The warm-up of the stream (``hybrid.warmup_fills`` and ``hybrid.settle_fills`` in the config, not
columns: one stream serves a whole batch) is handled by ``ssdx.models.hybrid.jobs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ssdx import catalog, params
from ssdx.core.fields import ConfigError, Field, check, check_rule, null_or_value, num, table
from ssdx.params import _pytree
from ssdx.units import KIB

UNIT_BYTES = 4096  # SCM line and mapping unit (page-level FTL granularity), bytes
SECTOR_BYTES = 512
VICTIMS = ("lru", "fifo", "cflru")
STAGING = ("whole", "progressive")
SCM_BASES = ("footprint", "nand")
#: ``hybrid.interface`` value for a drive without a host link (Fukuchi et al. describe none)
NO_INTERFACE = "none"
FIELDS = ("nand", "channels", "dies_per_channel", "bus_mts", "interface", "scm_ratio", "scm_basis",
          "nand_capacity_gib", "scm_banks", "threshold", "ways", "victim", "read_priority", "max_suspends",
          "suspend_resume_us", "block_staging",
          "nand_utilisation", "queue_depth", "t_prog_us", "t_read_us", "t_erase_us", "block_pages",
          "write_unit_kib")
#: one ISPP step, µs: a program pulse (20 µs) and its verify (24 µs, MLC), Wu & He (FAST 2012); a program
#: may be suspended between the two, so ``max_suspends: null`` allows one suspension per step
ISPP_STEP_US = 44.0
OVERRIDES = ("t_prog_us", "t_read_us", "t_erase_us", "block_pages", "write_unit_kib")
#: NAND geometry overrides a config may add (absent or null = the catalog value)
OPTIONAL_OVERRIDES = ("page_kib", "bits_per_cell")
#: the numeric fields, their ranges and meanings; the NAND overrides (null / NaN: the catalog value) may be
#: absent from a batch
RANGES: dict[str, Field] = table(
    Field("hybrid.channels", "", 1, 64, integer=True, doc="NAND channels"),
    Field("hybrid.dies_per_channel", "", 1, 64, integer=True, doc="dies per channel"),
    Field("hybrid.bus_mts", "MT/s", 10.0, 1e5, doc="NAND bus transfer rate, MT/s"),
    Field("hybrid.scm_ratio", "", 1e-4, 4.0, doc="SCM capacity / footprint or NAND capacity (scm_basis)"),
    Field("hybrid.nand_capacity_gib", "GiB", 1.0, 1e6, doc="NAND tier capacity, GiB"),
    Field("hybrid.scm_banks", "", 1, 256, integer=True, doc="independently busy SCM banks"),
    Field("hybrid.max_suspends", "", 0, 10_000, integer=True, nullable=True,
          doc="times one program may be suspended for reads (null: once per ISPP step)"),
    Field("hybrid.suspend_resume_us", "us", 0.0, 1e4, doc="die time one suspension adds to the program, us"),
    Field("hybrid.ways", "", 1, 1024, integer=True, doc="SCM table associativity"),
    Field("hybrid.nand_utilisation", "", 0.0, 0.95, doc="valid data / physical NAND"),
    Field("hybrid.queue_depth", "", 1, 1024, integer=True, doc="outstanding host commands"),
    Field("hybrid.threshold", "", 0.0, 1.0, lo_open=True, hi_open=True, doc="free-space fraction of the SCM"),
    Field("hybrid.t_prog_us", "us", 0.01, 1e6, nullable=True, optional=True),
    Field("hybrid.t_read_us", "us", 0.01, 1e6, nullable=True, optional=True),
    Field("hybrid.t_erase_us", "us", 0.01, 1e7, nullable=True, optional=True),
    Field("hybrid.block_pages", "pages", 2, 65536, nullable=True, optional=True),
    Field("hybrid.write_unit_kib", "KiB", 4, 1 << 20, nullable=True, optional=True),
    Field("hybrid.page_kib", "KiB", 4, 1024, nullable=True, optional=True),
    Field("hybrid.bits_per_cell", "bits", 1, 4, integer=True, nullable=True, optional=True),
)
#: NAND numbers of a configuration (:func:`nand_values`): us, pages, KiB, bytes, bits
NAND_FIELDS = ("t_prog_us", "t_read_us", "t_erase_us", "block_pages", "write_unit_kib", "page_bytes",
               "bits_per_cell")


@_pytree
class HybridParams:
    """One hybrid drive as numbers (seconds, 4 KiB units; integer leaves int32)."""

    sets: Any  # active SCM sets; capacity = sets x ways lines of 4 KiB
    limit: Any  # lines: resident + gathering data above this moves data to NAND
    unit: Any  # gathering unit (write unit, or word line under progressive staging), 4 KiB lines
    page_units: Any  # 4 KiB lines per NAND page
    n_dies: Any
    n_channels: Any
    n_banks: Any  # SCM banks
    policy: Any  # index into VICTIMS
    read_priority: Any  # 0/1
    max_suspends: Any  # suspensions one program allows (int32; -1: one per ISPP step)
    t_resume: Any  # die seconds one suspension adds to the program
    queue_depth: Any
    t_sector: Any  # SCM seconds per 512 B sector
    t_read: Any  # NAND page read, s
    t_prog: Any  # NAND page program, s (one program operation: a unit's pages x t_prog)
    t_page: Any  # die seconds per flushed page: program + GC copies + erases (ssdx.models.hybrid.model)
    chan_unit: Any  # seconds per 4 KiB over one channel
    host_rate: Any  # bytes/s
    cmd_s: Any  # command overhead, s
    drain: Any  # lines/s the die array programs (fluid rate of the flush backlog)
    wa: Any  # NAND-tier write amplification (reported)
    block_pages: Any


class Layout(NamedTuple):
    """Static sizes: SCM table ``sets x ways`` (+ ``gways`` gathering slots per set), dies, channels, SCM
    banks, host slots."""

    sets: int
    ways: int
    gways: int
    dies: int
    slots: int
    channels: int = 1
    banks: int = 1


def defaults() -> dict[str, Any]:
    """The field defaults (``conf/hybrid/default.yaml`` holds the same)."""
    return {"nand": "3d_ct_tlc", "channels": 8, "dies_per_channel": 4, "bus_mts": 400.0,
            "interface": NO_INTERFACE, "scm_ratio": 0.1, "scm_basis": "footprint", "nand_capacity_gib": 256.0,
            "scm_banks": 32, "threshold": 0.2, "ways": 16, "victim": "lru", "read_priority": True,
            "max_suspends": None, "suspend_resume_us": 24.0,
            "block_staging": "progressive", "nand_utilisation": 0.5, "queue_depth": 32,
            "warmup_fills": 1.0, "settle_fills": 4.0,
            "t_prog_us": None, "t_read_us": None, "t_erase_us": None, "block_pages": None,
            "write_unit_kib": None}


def columns(hybrid: Mapping) -> dict[str, np.ndarray]:
    """One-row ``hybrid.*`` columns from a config mapping (every field required; null overrides → NaN, the
    catalog value; a NaN given as an override is refused, ``ssdx.core.fields.null_or_value``)."""
    cols = {}
    for f in FIELDS:
        if f not in hybrid:
            raise ConfigError(f"hybrid.{f}", None, "the field is required (see conf/hybrid/default.yaml)")
        v = hybrid[f]
        if f in OVERRIDES or f == "max_suspends":
            v = null_or_value(v, RANGES[f"hybrid.{f}"])
        cols[f"hybrid.{f}"] = np.asarray([v])
    for f in OPTIONAL_OVERRIDES:
        if f in hybrid:
            v = null_or_value(hybrid[f], RANGES[f"hybrid.{f}"])
            cols[f"hybrid.{f}"] = np.asarray([v], dtype=float)
    return cols


def nand_table(cols: Mapping) -> dict[str, np.ndarray]:
    """Every configuration's NAND numbers (:data:`NAND_FIELDS`; us, pages, KiB, bytes, bits): the catalog
    values of ``hybrid.nand`` with the ``hybrid.*`` overrides applied (``ssdx.params.nand_value``)."""
    names = np.asarray(cols["hybrid.nand"]).astype(str)
    return {f: params.nand_value(cols, f, names, prefix="hybrid.") for f in NAND_FIELDS}


def nand_values(cols: Mapping, i: int) -> dict[str, float]:
    """The NAND numbers of configuration ``i``: catalog values with the overrides applied."""
    return {f: float(v[i]) for f, v in nand_table(cols).items()}


def _nand_rows(cols: Mapping) -> list[dict[str, float]]:
    """:func:`nand_values` of every configuration (one catalog look-up per distinct NAND type)."""
    table = nand_table(cols)
    return [{f: float(v[i]) for f, v in table.items()} for i in range(len(cols["hybrid.nand"]))]


def validate(cols: Mapping, footprint_bytes: np.ndarray, report: list | None = None) -> None:
    """Check every ``hybrid.*`` rule (``footprint_bytes`` per configuration sizes the SCM)."""
    names = np.asarray(cols["hybrid.nand"]).astype(str)
    check_rule(cols, "hybrid.nand", np.isin(names, list(catalog.NAND)),
               f"must be one of {sorted(catalog.NAND)}", names, report)
    iface = np.asarray(cols["hybrid.interface"]).astype(str)
    check_rule(cols, "hybrid.interface", np.isin(iface, [NO_INTERFACE, *catalog.INTERFACES]),
               f"must be {NO_INTERFACE!r} (no host link) or one of {sorted(catalog.INTERFACES)}", iface,
               report)
    vic = np.asarray(cols["hybrid.victim"]).astype(str)
    check_rule(cols, "hybrid.victim", np.isin(vic, VICTIMS), f"must be one of {list(VICTIMS)}", vic, report)
    for key, allowed in (("hybrid.block_staging", STAGING), ("hybrid.scm_basis", SCM_BASES)):
        a = np.asarray(cols[key]).astype(str)
        check_rule(cols, key, np.isin(a, allowed), f"must be one of {list(allowed)}", a, report)
    rp = np.asarray(cols["hybrid.read_priority"])
    check_rule(cols, "hybrid.read_priority", np.isin(rp.astype(object), [True, False, 0, 1]),
               "must be true or false", report=report)
    check(RANGES, cols, report)
    thr = num(cols, "hybrid.threshold")
    if report is None and (np.unique(num(cols, "hybrid.ways")).size != 1):
        raise ConfigError("hybrid.ways", np.unique(num(cols, "hybrid.ways")).tolist(),
                          "one value per batch (it sizes the SCM table)")
    if not np.isin(names, list(catalog.NAND)).all():
        return
    nv = _nand_rows(cols)
    wu = np.array([v["write_unit_kib"] * KIB for v in nv])
    check_rule(cols, "hybrid.write_unit_kib", wu % UNIT_BYTES == 0,
               f"the write unit must be a whole number of {UNIT_BYTES // KIB} KiB lines", wu / KIB, report)
    page = np.array([v["page_bytes"] for v in nv])
    check_rule(cols, "hybrid.page_kib", page % UNIT_BYTES == 0,
               f"the page must be a whole number of {UNIT_BYTES // KIB} KiB lines", page / KIB, report)
    if not np.isin(np.asarray(cols["hybrid.block_staging"]).astype(str), STAGING).all():
        return
    unit = gathering_unit_bytes(cols, nv)
    cap = capacity_lines(cols, footprint_bytes)
    check_rule(cols, "hybrid.scm_ratio", thr * cap * UNIT_BYTES >= unit,
               "the SCM's threshold space (threshold x capacity) must hold one gathering unit "
               "(the write unit, "
               "or a word line under progressive staging), which waits there until it is programmed",
               report=report)


def gathering_unit_bytes(cols: Mapping, nv: Sequence[Mapping[str, float]]) -> np.ndarray:
    """Bytes gathered in SCM before one NAND program, per configuration (``nv``: :func:`nand_values` of each):
    the write unit under ``whole`` staging; under ``progressive`` one word line (``bits_per_cell`` pages:
    one-shot programming) or the write unit if smaller — a block-unit NAND fills an open block per die word
    line by word line."""
    wu = np.array([v["write_unit_kib"] * KIB for v in nv])
    wl = np.array([max(v["bits_per_cell"] * v["page_bytes"], UNIT_BYTES) for v in nv])
    progressive = np.asarray(cols["hybrid.block_staging"]).astype(str) == "progressive"
    return np.where(progressive, np.minimum(wu, wl), wu)


def capacity_lines(cols: Mapping, footprint_bytes: np.ndarray) -> np.ndarray:
    """SCM capacity in 4 KiB lines, rounded up to whole sets: ``scm_ratio`` times the footprint or the NAND
    capacity (``scm_basis``)."""
    ways = num(cols, "hybrid.ways")
    nand = np.asarray(cols["hybrid.scm_basis"]).astype(str) == "nand"
    basis = np.where(nand, num(cols, "hybrid.nand_capacity_gib") * 2.0**30,
                     np.asarray(footprint_bytes, float))
    lines = np.ceil(num(cols, "hybrid.scm_ratio") * basis / UNIT_BYTES)
    return (np.ceil(np.maximum(lines, 1) / ways) * ways).astype(np.int64)


def build(cols: Mapping, footprint_bytes: Sequence[float], t_page_s: Sequence[float], wa: Sequence[float],
          dtype=np.float32, *, checked: bool = False,
          floor: Mapping[str, int] | None = None) -> tuple[HybridParams, Layout]:
    """Validate and resolve the columns into a :class:`HybridParams` pytree (leaves ``(n,)``) and layout.

    ``footprint_bytes`` (bytes, one per configuration) sizes the SCM.  ``t_page_s`` (die seconds per host
    page flushed to NAND, program plus garbage collection) and ``wa`` (the NAND tier's write amplification),
    one per configuration, are the model's: this module builds parameters and runs no model
    (``ssdx.models.hybrid.model.build`` computes them and calls this).  ``checked``: the caller has run
    :func:`validate` on these ``cols`` and ``footprint_bytes`` already (the model must, before it computes
    ``t_page_s``), so it is not run twice.  ``floor``: :data:`SIZES` (as :func:`sizes` gives them) that the
    layout takes where they are larger, so that the batches of one sweep share one compiled program (the
    results are the same)."""
    footprint_bytes = np.asarray(footprint_bytes, float)
    if not checked:
        validate(cols, footprint_bytes)
    n = len(cols["hybrid.nand"])
    nv = _nand_rows(cols)
    ways = int(num(cols, "hybrid.ways")[0])
    cap = capacity_lines(cols, footprint_bytes)
    sets = cap // ways
    page_units = np.array([v["page_bytes"] / UNIT_BYTES for v in nv])
    unit = gathering_unit_bytes(cols, nv) / UNIT_BYTES
    dies = num(cols, "hybrid.channels") * num(cols, "hybrid.dies_per_channel")
    t_page = np.asarray(t_page_s, float)
    ifaces = [None if str(x) == NO_INTERFACE else catalog.interface(str(x))
              for x in np.asarray(cols["hybrid.interface"])]
    i32 = lambda a: np.asarray(np.round(a), np.int32)  # noqa: E731
    c = lambda a: np.asarray(a, dtype)  # noqa: E731
    hp = HybridParams(
        sets=i32(sets), limit=i32(np.floor((1.0 - num(cols, "hybrid.threshold")) * cap)), unit=i32(unit),
        page_units=i32(page_units), n_dies=i32(dies), n_channels=i32(num(cols, "hybrid.channels")),
        n_banks=i32(num(cols, "hybrid.scm_banks")),
        policy=i32([VICTIMS.index(str(v)) for v in np.asarray(cols["hybrid.victim"])]),
        read_priority=c(np.asarray(cols["hybrid.read_priority"]).astype(bool)),
        max_suspends=i32(np.nan_to_num(num(cols, "hybrid.max_suspends").astype(float), nan=-1.0)),
        t_resume=c(num(cols, "hybrid.suspend_resume_us") * 1e-6),
        queue_depth=i32(num(cols, "hybrid.queue_depth")),
        t_sector=c(np.full(n, catalog.Scm().t_write_ns_per_sector * 1e-9)),
        t_read=c([v["t_read_us"] * 1e-6 for v in nv]), t_prog=c([v["t_prog_us"] * 1e-6 for v in nv]),
        t_page=c(t_page),
        chan_unit=c(UNIT_BYTES / (num(cols, "hybrid.bus_mts") * 1e6)),
        host_rate=c([np.inf if i is None else i.usable_bytes_per_s for i in ifaces]),
        cmd_s=c([0.0 if i is None else i.cmd_overhead_us * 1e-6 for i in ifaces]),
        drain=c(dies * page_units / t_page), wa=c(np.asarray(wa, float)),
        block_pages=c([v["block_pages"] for v in nv]),
    )
    # gathering slots per set: the write unit spread over the sets, with room for its fluctuation
    g = int(min(max(ways, int(np.ceil(3 * (unit / sets).max())) + 4), 4096))
    lay = Layout(ways=ways, gways=g, **sizes(cols, footprint_bytes))
    if floor is not None:
        lay = lay._replace(**{k: max(getattr(lay, k), int(floor[k])) for k in SIZES if k in floor})
    return hp, lay


#: the layout's sizes that only bound per-configuration counts (active sets, dies, host slots, channels,
#: banks): a larger one gives the same results (the model masks each configuration to its own counts)
SIZES = ("sets", "dies", "slots", "channels", "banks")


def sizes(cols: Mapping, footprint_bytes: Sequence[float]) -> dict[str, int]:
    """The :data:`SIZES` of a batch's layout: the largest over its configurations (``footprint_bytes``:
    bytes, one per configuration)."""
    sets = capacity_lines(cols, np.asarray(footprint_bytes, float)) // int(num(cols, "hybrid.ways")[0])
    return {"sets": int(sets.max()),
            "dies": int((num(cols, "hybrid.channels") * num(cols, "hybrid.dies_per_channel")).max()),
            "slots": int(num(cols, "hybrid.queue_depth").max()),
            "channels": int(num(cols, "hybrid.channels").max()),
            "banks": int(num(cols, "hybrid.scm_banks").max())}
