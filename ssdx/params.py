"""Parameter pytrees and host-side validation.

Two representations of a configuration:

* **columns** — ``dict[str, np.ndarray]`` keyed by dotted names (``drive.channels``,
  ``workload.prefill_fraction``), one entry per configuration, catalog choices as strings.
  This is what Hydra configs and sweep spaces produce and what ``results.parquet`` stores.
* **Params pytrees** — frozen dataclasses registered with ``jax.tree_util.register_dataclass``
  whose leaves are numbers (scalars for one drive, stacked arrays for a sweep).  Catalog names are
  resolved into numbers here, so sweeping the NAND type or the pSLC mode never recompiles.

Validation runs once, on the host, on the columns, before any compute.  A violation raises
:class:`ConfigError`, whose message names the field, the offending value and the rule.

pSLC write-cache fields (the accounting of each mode is in ``ssdx.models.fluid.model``):

* ``drive.slc_mode`` — one of :data:`SLC_MODES`: ``dynamic`` (pSLC lent from free user space),
  ``static`` (a fixed pSLC region outside the native region), ``pure_slc``, ``pure_native`` and
  ``hybrid`` (a static region plus a dynamic one: Samsung's Intelligent TurboWrite, a fixed 6 GB
  buffer and, on the 4 TB 870 QVO, up to 72 GB more when needed — Samsung's figures as quoted by
  KitGuru, "Samsung SSD 870 QVO 4TB Review", 2020; the extra region is used once the fixed one is
  exceeded, per The SSD Review, "Samsung 860 QVO SSD Review (1TB/2TB) – Every Little Bit Counts",
  2018, on the same scheme of the 860 QVO).  The integer code of a mode is its index in
  :data:`SLC_MODES`; ``hybrid`` was appended last so older codes are unchanged.
* ``drive.static_slc_gb`` — host GB (1e9 bytes) the static region holds (``static`` and ``hybrid``;
  it costs ``bits x`` as much raw NAND, which must fit next to the user capacity).
* ``drive.max_dynamic_slc_gb`` — host GB the *dynamic* pSLC region may hold at most (``dynamic`` and
  ``hybrid``; the firmware never lends more than ``bits x`` this much raw space); ``0`` = uncapped,
  the default.  Ignored by the modes without a dynamic region, as ``static_slc_gb`` is by ``dynamic``.
* ``drive.idle_fold_mb_s`` — MB/s (1e6 bytes/s) of pSLC data the firmware folds to native blocks
  while the host is idle (cache recovery); ``0`` = the die- and bus-limited rate
  ``ssdx.models.fluid.model.rates`` derives, the default.  A set rate is taken as given.

* ``drive.first_slc_t_prog_us`` — page program time (us) of the cache's *first region*; ``0`` = the
  NAND's ``t_prog_slc_us``, the default.  A cache with two speeds (``ssdx.models.fluid.model``): the first
  region is the static one in ``static`` and ``hybrid`` (written first), faster or slower than the dynamic
  one, and in ``dynamic`` the first ``drive.first_slc_gb`` of pSLC data (a cache whose speed steps down, or
  up, as it fills);
* ``drive.first_slc_gb`` — host GB of the first region of a ``dynamic`` cache (``0``, the default: none;
  ignored by the other modes, whose first region is the static one);
* ``drive.fold_while_writing`` — ``true`` when host writes past the pSLC cache still go through pSLC
  blocks and the firmware folds them to native blocks as it goes (foreground folding); ``false``, the
  default, writes them natively.
* ``drive.paced_folding`` — ``true`` when the firmware starts folding the cache's data as soon as the
  cache is full, paced so the raw NAND lasts to the end of the user capacity (one post-cache speed);
  ``false``, the default, folds only once free raw NAND runs out (``ssdx.models.fluid.model``).

The last six are optional in a config mapping (:data:`DRIVE_DEFAULTS`), so older presets and
configs load unchanged.

NAND overrides (config group ``nand:``, columns ``nand.<field>``; null in a config, NaN in a column = the
catalog value of the configuration's NAND type, ``nand.name`` where set, else ``drive.nand``; a NaN given
as a config value is refused, :func:`nand_columns`):

* timings (:data:`NAND_TIMINGS`), us: ``t_prog_us`` and ``t_read_us`` per page, ``t_erase_us`` per block,
  ``t_prog_slc_us`` and ``t_read_slc_us`` per page in pSLC mode;
* geometry (:data:`NAND_GEOMETRY`): ``bits_per_cell`` (integer 1-4), ``page_kib`` (page size, KiB: 1024
  bytes), ``block_pages`` (pages per block) and ``write_unit_kib`` (KiB one program operation of a plane
  takes at once — a page, a word line of ``bits_per_cell`` pages or a whole block: Fukuchi et al.'s
  Table 1 "write unit", ``ssdx.catalog.NandType.write_unit_bytes``).  The fluid and request-level models
  program page by page (one page per plane of a die); the write unit sizes the SCM gathering of
  ``ssdx.models.hybrid.params`` and is recorded.

Together with ``drive.channels``, ``drive.dies_per_channel``, ``drive.planes_per_die`` and
``drive.die_gbit`` they express a drive from a datasheet or from MQSim's ``ssdconfig.xml``.
:func:`nand_value` gives the effective value of a field for every configuration; every model reads its
NAND numbers through it (:func:`build` and the ``*_params`` modules), and :func:`effective_columns`
replaces the NaN of the override columns with it for the record of a run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ssdx import catalog
from ssdx.core.fields import ConfigError, Field, check, check_rule, null_or_value, num, table
from ssdx.units import GB, KIB, MB, gbit_die_to_bytes

#: pSLC cache policies; a mode's integer code is its index (append new modes at the end)
SLC_MODES = ("dynamic", "static", "pure_slc", "pure_native", "hybrid")
PATTERNS = ("sequential", "random")
#: NAND timings a config may override, us: program and read per page, erase per block
NAND_TIMINGS = ("t_prog_us", "t_read_us", "t_erase_us", "t_prog_slc_us", "t_read_slc_us")
#: NAND geometry a config may override: bits per cell, page KiB, pages per block, write unit KiB
NAND_GEOMETRY = ("bits_per_cell", "page_kib", "block_pages", "write_unit_kib")
#: every ``nand.<field>`` override column (null / NaN = the catalog value)
NAND_OVERRIDES = NAND_TIMINGS + NAND_GEOMETRY
#: the ranges of the override fields (null / NaN: the catalog value), by field name
NAND_RANGES: dict[str, Field] = table(
    *(Field(f, "us", 0.01, 1e6, nullable=True, doc="us", rule="0.01 <= x <= 1e6 us") for f in NAND_TIMINGS),
    Field("bits_per_cell", "bits", 1, 4, integer=True, nullable=True, doc="bits per cell"),
    Field("page_kib", "KiB", 0.5, 1024.0, nullable=True, doc="page size, KiB, a whole number of bytes",
          also=lambda a: a * KIB == np.round(a * KIB)),
    Field("block_pages", "pages", 1, 65536, integer=True, nullable=True, doc="pages per block"),
    Field("write_unit_kib", "KiB", 0.5, 65536.0 * 1024.0, nullable=True, doc="program unit of a plane, KiB",
          rule="0.5 <= x <= 67108864 (program unit of a plane, KiB)"),
)
#: override field -> (catalog attribute of ``ssdx.catalog.NandType``, attribute units per field unit)
_NAND_COLUMN: dict[str, tuple[str, float]] = {
    **{f: (f, 1.0) for f in NAND_TIMINGS},
    "bits_per_cell": ("bits_per_cell", 1.0), "page_kib": ("page_bytes", KIB),
    "block_pages": ("block_pages", 1.0), "write_unit_kib": ("write_unit_bytes", KIB),
}
#: catalog byte size -> (its override field, bytes per field unit)
_BYTES_COLUMN: dict[str, tuple[str, float]] = {"page_bytes": ("page_kib", KIB),
                                               "write_unit_bytes": ("write_unit_kib", KIB)}


def _pytree(cls):
    """Frozen dataclass registered as a pytree whose fields are all leaves."""
    cls = dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])


@_pytree
class Nand:
    """NAND medium as numbers.  Times in us (program/read per page, erase per block), sizes bytes."""

    bits_per_cell: Any
    page_bytes: Any
    t_prog_us: Any
    t_read_us: Any
    t_erase_us: Any
    block_bytes: Any
    write_unit_bytes: Any
    t_prog_slc_us: Any
    t_read_slc_us: Any


@_pytree
class Drive:
    """One drive as numbers (SI units: bytes, bytes/s, seconds).

    ``slc_mode`` is an integer code into :data:`SLC_MODES`; ``dram`` is 1.0 or 0.0.
    ``host_bytes_per_s`` is the interface's usable payload rate; ``bus_bytes_per_s`` the summed
    NAND channel rate after ``bus_efficiency``.  ``static_slc_bytes``: host bytes of the static pSLC
    region; ``max_dynamic_slc_bytes``: host bytes the dynamic pSLC region may hold (0 = uncapped);
    ``idle_fold_bytes_per_s``: idle cache-recovery rate, bytes/s (0 = derived,
    ``ssdx.models.fluid.model.rates``); ``first_slc_t_prog_us``: page program time of the cache's first
    region, us (0 = the NAND's pSLC time), ``first_slc_bytes`` that region's host bytes in ``dynamic``;
    ``fold_while_writing``: 1.0 when host writes past the cache go through pSLC and are folded in the
    foreground, else 0.0; ``paced_folding``: 1.0 when the cache's data is folded from the cache's end on,
    paced to the capacity left, else 0.0.  All plain float leaves (differentiable).
    """

    nand: Nand
    user_bytes: Any
    raw_bytes: Any
    reserve_fraction: Any
    channels: Any
    dies: Any
    planes_per_die: Any
    bus_bytes_per_s: Any
    host_bytes_per_s: Any
    cmd_overhead_s: Any
    dram: Any
    slc_mode: Any
    static_slc_bytes: Any
    fold_efficiency: Any
    max_dynamic_slc_bytes: Any
    idle_fold_bytes_per_s: Any
    first_slc_t_prog_us: Any
    first_slc_bytes: Any
    fold_while_writing: Any
    paced_folding: Any


@_pytree
class Workload:
    """A host write stream: pattern code (0 sequential, 1 random), sizes in bytes, times in s."""

    random: Any
    block_bytes: Any
    queue_depth: Any
    prefill_fraction: Any
    fill_fraction: Any
    burst_bytes: Any
    idle_s: Any


# ----------------------------------------------------------------------------- columns
#: Every ``drive.*`` field once (its ``power`` block aside): the value the CLI's schema gives a drive preset
#: that leaves it out (``ssdx.cli.schema.DriveConf`` is built from this) and what it is; a number's unit
#: and range are its :data:`RANGES` Field.  Defaults describe a generic TLC client drive (representative,
#: not calibrated): presets set them all.
DRIVE_DECLARED: dict[str, tuple[Any, str]] = {
    "name": ("custom", "preset name"),
    "nand": ("tlc", "NAND type (ssdx.catalog)"),
    "interface": ("pcie4x4", "host interface (ssdx.catalog)"),
    "user_capacity_gb": (1000.0, "user capacity, GB"),
    "die_gbit": (512.0, "die density, binary Gbit"),
    "channels": (8, "number of NAND channels"),
    "dies_per_channel": (4, "dies (chip enables) per channel"),
    "planes_per_die": (4, "planes per die"),
    "bus_mts": (1200.0, "NAND bus transfer rate, MT/s"),
    "bus_efficiency": (0.9, "usable share of the NAND bus"),
    "dram": (True, "the drive holds its whole mapping table in DRAM"),
    "slc_mode": ("dynamic", "pSLC cache policy (ssdx.models.fluid)"),
    "static_slc_gb": (0.0, "static pSLC size, GB"),
    "reserve_fraction": (0.005, "fraction of raw NAND reserved"),
    "fold_efficiency": (0.6, "share of the die time folding spends on useful programs"),
    "max_dynamic_slc_gb": (0.0, "GB the dynamic pSLC region may hold (dynamic, hybrid); 0 = uncapped"),
    "idle_fold_mb_s": (0.0, "idle cache-recovery rate, MB/s; 0 = derived from the dies and bus"),
    "first_slc_t_prog_us": (0.0, "first pSLC region's page program time, us; 0 = the NAND's pSLC time"),
    "first_slc_gb": (0.0, "GB of a dynamic cache's first region (its own speed); 0 = none"),
    "fold_while_writing": (False, "past the cache, host writes go through pSLC and are folded at once"),
    "paced_folding": (False, "fold the cache's data from the cache's end on, paced to the capacity left"),
}
DRIVE_FIELDS = tuple(k for k in DRIVE_DECLARED if k != "name")
WORKLOAD_FIELDS = (
    "pattern", "block_kib", "queue_depth", "prefill_fraction", "fill_fraction", "burst_gb", "idle_s",
)
#: Plausible physical ranges of the numeric drive and workload fields (they also keep float32 finite).
RANGES: dict[str, Field] = table(
    Field("drive.channels", "", 1, 64, integer=True, doc=DRIVE_DECLARED["channels"][1]),
    Field("drive.dies_per_channel", "", 1, 64, integer=True, doc=DRIVE_DECLARED["dies_per_channel"][1]),
    Field("drive.planes_per_die", "", 1, 16, integer=True, doc=DRIVE_DECLARED["planes_per_die"][1]),
    Field("drive.user_capacity_gb", "GB", 1.0, 1e6, doc=DRIVE_DECLARED["user_capacity_gb"][1]),
    Field("drive.die_gbit", "Gibit", 1.0, 1e5, doc=DRIVE_DECLARED["die_gbit"][1]),
    Field("drive.bus_mts", "MT/s", 10.0, 1e5, doc=DRIVE_DECLARED["bus_mts"][1]),
    Field("drive.static_slc_gb", "GB", 0.0, 1e6, doc=DRIVE_DECLARED["static_slc_gb"][1]),
    Field("drive.max_dynamic_slc_gb", "GB", 0.0, 1e6, default=DRIVE_DECLARED["max_dynamic_slc_gb"][0],
          doc="cap on the dynamic pSLC region, GB; 0 = uncapped"),
    Field("drive.idle_fold_mb_s", "MB/s", 0.0, 1e6, default=DRIVE_DECLARED["idle_fold_mb_s"][0],
          doc="idle cache-recovery rate, MB/s; 0 = derived"),
    Field("drive.first_slc_t_prog_us", "us", 0.0, 1e6, default=DRIVE_DECLARED["first_slc_t_prog_us"][0],
          doc="first pSLC region's page program time, us; 0 = the NAND's pSLC time"),
    Field("drive.first_slc_gb", "GB", 0.0, 1e6, default=DRIVE_DECLARED["first_slc_gb"][0],
          doc="GB of a dynamic cache's first region; 0 = none"),
    Field("workload.block_kib", "KiB", 0.5, 1e6, doc="host command size, KiB"),
    Field("workload.queue_depth", "", 1, 65536, integer=True, doc="outstanding commands"),
    Field("workload.burst_gb", "GB", 0.0, 1e6, doc="GB between idle gaps; 0 = none"),
    Field("workload.idle_s", "s", 0.0, 1e9, doc="seconds of each idle gap"),
    Field("drive.reserve_fraction", "", 0.0, 0.5, hi_open=True, doc=DRIVE_DECLARED["reserve_fraction"][1],
          rule="0 <= x < 0.5: fraction of raw NAND reserved"),
    Field("workload.prefill_fraction", "", 0.0, 1.0, hi_open=True,
          doc="fraction of user capacity already used",
          rule="0 <= x < 1: fraction of user capacity already used"),
    Field("drive.bus_efficiency", "", 0.0, 1.0, lo_open=True, rule="0 < x <= 1"),
    Field("drive.fold_efficiency", "", 0.0, 1.0, lo_open=True, rule="0 < x <= 1"),
    Field("workload.fill_fraction", "", 0.0, 1.0, lo_open=True,
          doc="fraction of the free capacity to write",
          rule="0 < x <= 1: fraction of the free capacity to write"),
)


#: Drive fields a config mapping may omit, with the value they then take (older presets lack them): the
#: drive fields of :data:`RANGES` with a default.
DRIVE_DEFAULTS: dict[str, Any] = {**{k.split(".", 1)[1]: f.default for k, f in RANGES.items()
                                     if k.startswith("drive.") and f.default is not None},
                                  "fold_while_writing": DRIVE_DECLARED["fold_while_writing"][0],
                                  "paced_folding": DRIVE_DECLARED["paced_folding"][0]}


def columns_from_config(drive: Mapping, workload: Mapping, nand: Mapping | None = None) -> dict:
    """Flatten config mappings (Hydra nodes or dicts) into one-row columns.

    Every field is required except the drive fields of :data:`DRIVE_DEFAULTS`, which take their default.
    """
    cols: dict[str, np.ndarray] = {}
    for prefix, node, fields in (("drive", drive, DRIVE_FIELDS), ("workload", workload, WORKLOAD_FIELDS)):
        for f in fields:
            if prefix == "drive" and f not in node and f in DRIVE_DEFAULTS:
                cols[f"{prefix}.{f}"] = np.asarray([DRIVE_DEFAULTS[f]])
                continue
            if f not in node:
                raise ConfigError(f"{prefix}.{f}", None, "the field is required")
            cols[f"{prefix}.{f}"] = np.asarray([node[f]])
    cols.update(nand_columns(nand))
    return cols


def nand_columns(nand: Mapping | None = None) -> dict[str, np.ndarray]:
    """One-row ``nand.name`` and ``nand.<field>`` override columns of a ``nand:`` config mapping
    (a missing or null field is NaN: the catalog value; a NaN given as a value is refused with
    :class:`ConfigError`, ``ssdx.core.fields.null_or_value``)."""
    nand = nand or {}
    cols = {"nand.name": np.asarray([nand.get("name") or ""])}
    for f in NAND_OVERRIDES:
        v = null_or_value(nand.get(f), NAND_RANGES[f], f"nand.{f}")
        cols[f"nand.{f}"] = np.asarray([v], dtype=float)
    return cols


class Codes:
    """A column factorised once: its distinct values and each entry's index into them."""

    def __init__(self, values: Any):
        a = np.asarray(values)
        if a.dtype.kind in "US" and a.size > 4096:  # hashing beats sorting strings; the same result
            got = _factorize_fixed_width(a)
            if got is None:
                import pandas as pd

                inv, uniq = pd.factorize(a, sort=True)
                got = np.asarray(uniq, dtype=a.dtype), inv.astype(np.intp)
            self.uniq, self.inv = got
        else:
            self.uniq, self.inv = np.unique(a, return_inverse=True)

    def map(self, fn: Callable[[Any], Any], dtype: Any = float) -> np.ndarray:
        """``fn`` of every entry, calling it once per distinct value (sweeps repeat few)."""
        vals = [fn(u.item() if isinstance(u, np.generic) else u) for u in self.uniq]
        return np.asarray(vals, dtype=dtype)[self.inv]


#: one odd 64-bit multiplier per 8-byte word of a fixed-width string (a fixed seed: the same every run)
_WORD_WEIGHTS = np.random.default_rng(0x55D).integers(1, 2**63, 64, dtype=np.uint64) * 2 + 1


def _factorize_fixed_width(a: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``np.unique(a, return_inverse=True)`` of a fixed-width string array, computed by hashing each
    entry's bytes to one 64-bit number (a weighted sum of its 8-byte words, wrapping) and factorising the
    numbers; exact, because every entry is compared with the distinct value its hash chose (a collision
    returns None and the caller factorises the strings themselves).  Skips converting the entries to
    Python strings, which is most of the time of factorising them."""
    import pandas as pd

    width = a.dtype.itemsize
    n_words = -(-width // 8)
    if width == 0 or n_words > len(_WORD_WEIGHTS):
        return None
    flat = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, width)
    if width % 8:  # zero-padded to whole words
        flat = np.concatenate([flat, np.zeros((a.size, n_words * 8 - width), np.uint8)], axis=1)
    words = flat.view(np.uint64)
    h = np.zeros(a.size, np.uint64)
    for j in range(words.shape[1]):  # a column at a time: a row sum over a few words is slow in NumPy
        h += words[:, j] * _WORD_WEIGHTS[j]
    codes, _ = pd.factorize(h)  # numbered in order of first appearance
    new = np.empty(codes.size, bool)
    new[0] = True
    np.greater(codes[1:], np.maximum.accumulate(codes[:-1]), out=new[1:])
    first_words = words[new]
    for j in range(words.shape[1]):  # each entry's bytes against its code's first entry's
        if not np.array_equal(first_words[:, j][codes], words[:, j]):
            return None  # two different strings with one hash
    firsts = a[new]  # each distinct value's first entry, in code order
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(order.size, np.intp)
    rank[order] = np.arange(order.size)
    return firsts[order], rank[codes]


def lookup(values: Any, fn: Callable[[Any], Any], dtype: Any = float) -> np.ndarray:
    """``fn`` of every entry of ``values``, calling it once per distinct value."""
    return Codes(values).map(fn, dtype)


#: the memo key of the NAND type of every configuration (:func:`nand_names`)
_NAMES = "nand names"


def _codes(cols: Mapping, key: str, memo: dict | None) -> Codes:
    """The :class:`Codes` of column ``key`` as strings (:data:`_NAMES`: of :func:`nand_names`), taken
    from ``memo`` when it holds them (:func:`build` factorises each column once for its two passes)."""
    if memo is not None and key in memo:
        return memo[key]
    c = Codes(nand_names(cols) if key == _NAMES else np.asarray(cols[key]).astype(str))
    if memo is not None:
        memo[key] = c
    return c


def _choice(cols: Mapping, key: str, known: Callable[[str], bool], names: list[str],
            report: list | None = None, memo: dict | None = None) -> np.ndarray:
    a = np.asarray(cols[key]).astype(str)
    check_rule(cols, key, _codes(cols, key, memo).map(known, bool), f"must be one of {names}", a, report)
    return a


def validate(cols: Mapping, report: list | None = None, memo: dict | None = None) -> None:
    """Check every rule on every configuration; raise :class:`ConfigError` on the first breach.

    With a ``report`` list, nothing is raised: each rule appends ``(field, rule, ok-mask)``
    (see :func:`valid_rows`).  ``memo`` (a dict) keeps the columns it factorises for :func:`assemble`.
    """
    n = len(next(iter(cols.values())))
    for k, v in cols.items():
        if len(v) != n:
            raise ConfigError(k, f"{len(v)} values", f"every column must have {n} values")
    _choice(cols, "drive.nand", lambda x: x in catalog.NAND, sorted(catalog.NAND), report, memo)
    _choice(cols, "nand.name", lambda x: x == "" or x in catalog.NAND, sorted(catalog.NAND), report, memo)
    _choice(cols, "drive.interface", lambda x: x in catalog.INTERFACES, sorted(catalog.INTERFACES), report,
            memo)
    mode = _choice(cols, "drive.slc_mode", lambda x: x in SLC_MODES, list(SLC_MODES), report, memo)
    _choice(cols, "workload.pattern", lambda x: x in PATTERNS, list(PATTERNS), report, memo)

    check(RANGES, cols, report)
    check_nand_overrides(cols, "nand.", report)
    for key in ("drive.dram", "drive.fold_while_writing", "drive.paced_folding"):
        flag = np.asarray(cols[key])
        check_rule(cols, key, np.isin(flag.astype(object), [True, False, 0, 1]), "must be true or false",
                   report=report)
    names = _codes(cols, _NAMES, memo)
    page, unit = nand_value(cols, "page_bytes", names), nand_value(cols, "write_unit_bytes", names)
    with np.errstate(invalid="ignore", divide="ignore"):
        pages = unit / page
    check_rule(cols, "nand.write_unit_kib",
               (np.abs(pages - np.round(pages)) <= 1e-9 * pages) & (pages >= 1)
               & (unit <= nand_value(cols, "block_bytes", names)),
               "the write unit (one program operation of a plane: a page, a word line or a block) must be a "
               "whole number of pages (nand.page_kib) and at most one block (nand.block_pages pages); "
               "null keeps "
               "the catalog type's, so set it when a page or block override no longer fits that",
               unit / KIB, report)

    bits = np.nan_to_num(nand_value(cols, "bits_per_cell", names), nan=0.0)  # 0: an unknown type (above)
    needs_multibit = np.isin(mode, ["dynamic", "static", "pure_slc", "hybrid"])
    check_rule(cols, "drive.slc_mode", ~needs_multibit | (bits >= 2),
               "pSLC modes need a multi-bit NAND (bits per cell >= 2, nand.bits_per_cell or the catalog "
               "type's); use pure_native for SLC", mode, report)
    static = num(cols, "drive.static_slc_gb")
    has_static = np.isin(mode, ["static", "hybrid"])
    check_rule(cols, "drive.static_slc_gb", ~has_static | (static > 0),
               "static and hybrid modes need a static pSLC size > 0", report=report)
    raw = _raw_bytes(cols)
    usable = raw * (1 - num(cols, "drive.reserve_fraction"))
    user = num(cols, "drive.user_capacity_gb") * GB
    static_raw = np.where(has_static, static * GB * bits, 0.0)
    check_rule(cols, "drive.user_capacity_gb", user + static_raw <= usable * (1 + 1e-9),
               "user capacity (+ bits x static pSLC size) must fit in raw NAND x (1 - reserve); raw = "
               "channels x dies_per_channel x die_gbit", report=report)


def valid_rows(cols: Mapping,
               check: Callable[..., None] | None = None) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Per-configuration validity and, for each broken rule, how many configurations break it.

    Used by sweeps that set ``on_invalid: drop``; a non-numeric value in a numeric field still
    raises, since it is a typo in the definition rather than an infeasible combination.  ``check`` is
    the rule set (default :func:`validate`; ``ssdx.models.thermal.params.validate`` for the thermal rules).
    """
    report: list = []
    (check or validate)(cols, report)
    ok = np.logical_and.reduce([m for _, _, m in report])
    broken = [{"field": k, "rule": r, "configurations": int((~m).sum())} for k, r, m in report if not m.all()]
    return ok, broken


def check_nand_overrides(cols: Mapping, prefix: str = "nand.", report: list | None = None) -> None:
    """Range rules of the NAND override columns ``<prefix><field>`` present in ``cols`` (NaN = the catalog
    value, always allowed): :data:`NAND_RANGES` (a page of a whole number of bytes)."""
    check([dataclasses.replace(f, name=prefix + f.name, optional=True) for f in NAND_RANGES.values()], cols,
          report)


def nand_value(cols: Mapping, field: str, names: Any = None, prefix: str = "nand.") -> np.ndarray:
    """Every configuration's effective NAND value of ``field`` (float64, shape ``(n,)``): the override
    column ``<prefix><field>`` where set (not NaN), else the catalog value of its NAND type.

    ``field`` is an override field (:data:`NAND_OVERRIDES`, in its own units: us, KiB, pages, bits), a
    byte size — ``page_bytes``, ``write_unit_bytes`` (from ``page_kib``/``write_unit_kib``) or
    ``block_bytes`` (effective ``block_pages`` x effective ``page_bytes``) — or any other attribute of
    ``ssdx.catalog.NandType`` (catalog only, e.g. ``die_active_w``, W).  ``names`` are the NAND types (default
    :func:`nand_names`: ``nand.name`` where set, else ``drive.nand``; or their :class:`Codes`, to factorise
    them once for several fields); an unknown name gives NaN.  The hybrid model passes ``hybrid.nand`` and
    ``prefix="hybrid."``.  One catalog look-up per distinct name.
    """
    raw = names if isinstance(names, Codes) else Codes(
        nand_names(cols) if names is None else np.asarray(names).astype(str))  # factorised once per call
    if field == "block_bytes":
        return nand_value(cols, "block_pages", raw, prefix) * nand_value(cols, "page_bytes", raw, prefix)
    if field in _NAND_COLUMN:  # an override field, in its own units
        attr, per = _NAND_COLUMN[field]
        column, scale = field, 1.0
    else:  # a catalog attribute; the byte sizes have a KiB override
        attr, per = field, 1.0
        column, scale = _BYTES_COLUMN.get(field, (None, 1.0))
    base = raw.map(lambda x: getattr(catalog.NAND.get(x), attr, np.nan))
    if per != 1.0:
        base = base / per
    if column is not None and prefix + column in cols:
        over = num(cols, prefix + column) * scale
        base = np.where(np.isnan(over), base, over)
    return base


def effective_columns(cols: Mapping) -> dict[str, np.ndarray]:
    """``cols`` with every NAND override column holding the value a run used instead of NaN: the
    ``nand.<field>`` columns (:data:`NAND_OVERRIDES`) where ``drive.nand`` is a column, the ``hybrid.<field>``
    ones where ``hybrid.nand`` is (:func:`nand_value`).  What a results table records; the models read the
    original columns, so no metric changes.  Other columns are the same arrays."""
    out = dict(cols)
    families = (("nand.", "drive.nand" in cols and "nand.name" in cols), ("hybrid.", "hybrid.nand" in cols))
    for prefix, present in families:
        if not present:
            continue
        names = Codes(nand_names(cols) if prefix == "nand." else np.asarray(cols["hybrid.nand"]).astype(str))
        for f in NAND_OVERRIDES:
            if prefix + f in cols:
                out[prefix + f] = nand_value(cols, f, names, prefix)
    return out


def nand_record(cols: Mapping, i: int = 0) -> dict[str, float]:
    """The effective NAND values of configuration ``i`` (:data:`NAND_OVERRIDES`, their units), for a
    summary: ``{"t_prog_us": ..., "page_kib": ..., ...}``."""
    return {f: float(nand_value(cols, f)[i]) for f in NAND_OVERRIDES}


def nand_names(cols: Mapping) -> np.ndarray:
    """Every configuration's NAND type: ``nand.name`` where set, else ``drive.nand``."""
    override = np.asarray(cols["nand.name"]).astype(str)
    return np.where(override != "", override, np.asarray(cols["drive.nand"]).astype(str))


def _raw_bytes(cols: Mapping) -> np.ndarray:
    return (num(cols, "drive.channels") * num(cols, "drive.dies_per_channel")
            * gbit_die_to_bytes(num(cols, "drive.die_gbit")))


def build(cols: Mapping, dtype=np.float32) -> tuple[Drive, Workload]:
    """Validate columns and turn them into (Drive, Workload) pytrees of ``dtype`` arrays, shape (n,)."""
    memo: dict[str, Codes] = {}  # each column factorised once for both passes
    validate(cols, memo=memo)
    return assemble(cols, dtype, memo)


#: the columns every catalog NAND value depends on (type, override type, override fields)
NAND_COLUMNS = ("drive.nand", "nand.name", *(f"nand.{f}" for f in NAND_OVERRIDES))
#: the columns each leaf of :func:`assemble` reads, by its path (``drive.nand.page_bytes``,
#: ``workload.idle_s``); a superset is harmless.  ``ssdx.sweep.device`` tabulates each leaf over the
#: sweep factors holding these columns only, so a missing column here would be a wrong table: the
#: tests perturb every undeclared column and check the leaf does not move.
LEAF_COLUMNS: dict[str, tuple[str, ...]] = {
    **{f"drive.nand.{f.name}": NAND_COLUMNS for f in dataclasses.fields(Nand)},
    "drive.user_bytes": ("drive.user_capacity_gb",),
    "drive.raw_bytes": ("drive.channels", "drive.dies_per_channel", "drive.die_gbit"),
    "drive.reserve_fraction": ("drive.reserve_fraction",),
    "drive.channels": ("drive.channels",),
    "drive.dies": ("drive.channels", "drive.dies_per_channel"),
    "drive.planes_per_die": ("drive.planes_per_die",),
    "drive.bus_bytes_per_s": ("drive.channels", "drive.bus_mts", "drive.bus_efficiency"),
    "drive.host_bytes_per_s": ("drive.interface",),
    "drive.cmd_overhead_s": ("drive.interface",),
    "drive.dram": ("drive.dram",),
    "drive.slc_mode": ("drive.slc_mode",),
    "drive.static_slc_bytes": ("drive.static_slc_gb",),
    "drive.fold_efficiency": ("drive.fold_efficiency",),
    "drive.max_dynamic_slc_bytes": ("drive.max_dynamic_slc_gb",),
    "drive.idle_fold_bytes_per_s": ("drive.idle_fold_mb_s",),
    "drive.first_slc_t_prog_us": ("drive.first_slc_t_prog_us",),
    "drive.first_slc_bytes": ("drive.first_slc_gb",),
    "drive.fold_while_writing": ("drive.fold_while_writing",),
    "drive.paced_folding": ("drive.paced_folding",),
    "workload.random": ("workload.pattern",),
    "workload.block_bytes": ("workload.block_kib",),
    "workload.queue_depth": ("workload.queue_depth",),
    "workload.prefill_fraction": ("workload.prefill_fraction",),
    "workload.fill_fraction": ("workload.fill_fraction",),
    "workload.burst_bytes": ("workload.burst_gb",),
    "workload.idle_s": ("workload.idle_s",),
}
#: the columns the rules :func:`validate` reports under a field read besides the field itself
RULE_COLUMNS: dict[str, tuple[str, ...]] = {
    "nand.write_unit_kib": NAND_COLUMNS,
    "drive.slc_mode": ("drive.slc_mode", *NAND_COLUMNS),
    "drive.static_slc_gb": ("drive.static_slc_gb", "drive.slc_mode"),
    "drive.user_capacity_gb": ("drive.user_capacity_gb", "drive.static_slc_gb", "drive.slc_mode",
                               "drive.channels", "drive.dies_per_channel", "drive.die_gbit",
                               "drive.reserve_fraction", *NAND_COLUMNS),
}


def assemble(cols: Mapping, dtype=np.float32, memo: dict | None = None) -> tuple[Drive, Workload]:
    """(Drive, Workload) pytrees of ``dtype`` arrays, shape (n,), from columns :func:`validate` accepted
    (:func:`build` without the check; each leaf reads only its :data:`LEAF_COLUMNS`; ``memo``: the columns
    :func:`validate` factorised)."""
    names = _codes(cols, _NAMES, memo)
    med = lambda f: nand_value(cols, f, names)  # noqa: E731
    iface, mode = _codes(cols, "drive.interface", memo), _codes(cols, "drive.slc_mode", memo)
    c = lambda a: np.asarray(a, dtype=dtype)  # noqa: E731
    nand = Nand(
        bits_per_cell=c(med("bits_per_cell")), page_bytes=c(med("page_bytes")),
        t_prog_us=c(med("t_prog_us")), t_read_us=c(med("t_read_us")), t_erase_us=c(med("t_erase_us")),
        block_bytes=c(med("block_bytes")),
        write_unit_bytes=c(med("write_unit_bytes")),
        t_prog_slc_us=c(med("t_prog_slc_us")), t_read_slc_us=c(med("t_read_slc_us")),
    )
    channels = num(cols, "drive.channels")
    drive = Drive(
        nand=nand,
        user_bytes=c(num(cols, "drive.user_capacity_gb") * GB),
        raw_bytes=c(_raw_bytes(cols)),
        reserve_fraction=c(num(cols, "drive.reserve_fraction")),
        channels=c(channels),
        dies=c(channels * num(cols, "drive.dies_per_channel")),
        planes_per_die=c(num(cols, "drive.planes_per_die")),
        # ONFI/Toggle buses are 8 bits wide: MB/s = MT/s per channel (Open NAND Flash Interface
        # specification).
        bus_bytes_per_s=c(channels * num(cols, "drive.bus_mts") * 1e6 * num(cols, "drive.bus_efficiency")),
        host_bytes_per_s=c(iface.map(lambda x: catalog.interface(x).usable_bytes_per_s)),
        cmd_overhead_s=c(iface.map(lambda x: catalog.interface(x).cmd_overhead_us * 1e-6)),
        dram=c(np.asarray(cols["drive.dram"]).astype(bool).astype(float)),
        slc_mode=c(mode.map(SLC_MODES.index)),
        static_slc_bytes=c(num(cols, "drive.static_slc_gb") * GB),
        fold_efficiency=c(num(cols, "drive.fold_efficiency")),
        max_dynamic_slc_bytes=c(num(cols, "drive.max_dynamic_slc_gb") * GB),
        idle_fold_bytes_per_s=c(num(cols, "drive.idle_fold_mb_s") * MB),
        first_slc_t_prog_us=c(num(cols, "drive.first_slc_t_prog_us")),
        first_slc_bytes=c(num(cols, "drive.first_slc_gb") * GB),
        fold_while_writing=c(np.asarray(cols["drive.fold_while_writing"]).astype(bool).astype(float)),
        paced_folding=c(np.asarray(cols["drive.paced_folding"]).astype(bool).astype(float)),
    )
    workload = Workload(
        random=c(np.asarray(cols["workload.pattern"]).astype(str) == "random"),
        block_bytes=c(num(cols, "workload.block_kib") * KIB),
        queue_depth=c(num(cols, "workload.queue_depth")),
        prefill_fraction=c(num(cols, "workload.prefill_fraction")),
        fill_fraction=c(num(cols, "workload.fill_fraction")),
        burst_bytes=c(num(cols, "workload.burst_gb") * GB),
        idle_s=c(num(cols, "workload.idle_s")),
    )
    return drive, workload


def index(tree, i: int):
    """Configuration ``i`` of a stacked pytree (leaves become scalars)."""
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def concat_columns(rows: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack column sets (same keys) into one set, rows in order."""
    return {k: np.concatenate([np.asarray(r[k]) for r in rows]) for k in rows[0]}


def broadcast_columns(base: Mapping, n: int) -> dict:
    """Repeat one-row columns ``n`` times."""
    return {k: np.repeat(np.asarray(v), n) for k, v in base.items()}
