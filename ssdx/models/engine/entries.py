"""A cached mapping table of entries (``engine.map_cache = entries``), computed on the host.

MQSim's cached mapping table (CMT; Tavakkol et al., FAST 2018, ``Cached_Mapping_Table`` in
``Address_Mapping_Unit_Page_Level``) holds mapping *entries*, one per logical page, least recently used
replaced, ``CMT_Capacity / CMT_entry_size`` of them.  A request whose entry is missing reads its
translation page from flash; a write makes its entry dirty.  When a dirty entry is evicted, every dirty
entry of the same translation page is written back together (the page read, merged and programmed:
DFTL's batch update, Gupta et al., ASPLOS 2009; MQSim's
``generate_flash_writeback_request_for_mapping_data``) and becomes clean.

Which requests miss and which evictions write a translation page back depends only on the sequence of
logical pages the requests touch and on the cache's capacity, not on any time: the same for every
configuration of a batch that shares the capacity and the drive's logical geometry.  So it is computed
once per chunk here, on the host, before the engine runs (the stream is shared by the batch), and
handed to the engine as three per-request arrays (:class:`Events`): whether the request missed, the
first translation page it writes back (-1: none) and how many it writes back.  The engine books the
translation read and the write-backs on the dies as for its page caches (``ssdx.models.engine.model``,
step 3).

Entries are logical pages (NAND-page sized, MQSim's LPA); a request touches every page from its first to
its last, each looked up in order; the request misses when any of them is missing.  A translation
page maps ``tpage_4k`` 4 KiB units (``ssdx.models.engine.state.Plan``).  Dirtiness is kept as stamps: an
entry is dirty when it was last written after its translation page was last written back.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ssdx.core.fields import ConfigError
from ssdx.models.engine.params import MASK_PAGES

WRITE = 1
TRIM = 2


class Events(NamedTuple):
    """Per-request outcome of the entry cache, shape ``(R,)``: ``miss`` (bool), ``wb_tpage`` (int32,
    the first translation page written back, -1 none), ``wb_count`` (float, translation pages written
    back)."""

    miss: np.ndarray
    wb_tpage: np.ndarray
    wb_count: np.ndarray


def no_events(n: int) -> Events:
    """Events of ``n`` requests where no configuration caches entries: nothing happens."""
    return Events(np.zeros(n, bool), np.full(n, -1, np.int32), np.zeros(n, np.float64))


@numba.njit(cache=True, inline="always")
def _home(lpn, bits):
    """Home bucket of ``lpn`` in a table of 2**bits buckets (Fibonacci hashing)."""
    return np.int64((np.uint64(lpn) * np.uint64(11400714819323198485)) >> np.uint64(64 - bits))


@numba.njit(cache=True, inline="always")
def page_span(off4k, size, page_4k, cap_4k):
    """The logical pages (NAND-page sized) a request at ``off4k`` (4 KiB units, wrapped to the capacity
    ``cap_4k``) of ``size`` bytes touches: its first page and how many (at least one)."""
    o4 = off4k % cap_4k
    k = max(((o4 % page_4k) * 4096 + size + page_4k * 4096 - 1) // (page_4k * 4096), 1)
    return o4 // page_4k, k


@numba.njit(cache=True)
def _find(keys, lpn, bits):
    """The bucket holding ``lpn``, or the empty bucket where it would go, and whether it was found."""
    mask = (1 << bits) - 1
    h = _home(lpn, bits)
    while keys[h] != -1:
        if keys[h] == lpn:
            return h, True
        h = (h + 1) & mask
    return h, False


@numba.njit(cache=True)
def _delete(keys, vals, i, bits):
    """Empty bucket ``i`` of the linear-probing table, shifting later entries of its run back (no
    tombstones: every run stays unbroken)."""
    mask = (1 << bits) - 1
    j = i
    while True:
        j = (j + 1) & mask
        if keys[j] == -1:
            break
        k = _home(keys[j], bits)
        if (j > i and (k <= i or k > j)) or (j < i and k <= i and k > j):
            keys[i] = keys[j]
            vals[i] = vals[j]
            i = j
    keys[i] = -1


@numba.njit(cache=True)
def _advance(keys, vals, bits, lpn_of, prev, nxt, dirty_at, wb_at, meta, op, off4k, size, valid, kept,
             page_4k, tpage_4k, cap_4k, miss, wb_tpage, wb_count):
    """Run the requests through the cache (``keys``/``vals``: logical page -> slot, a linear-probing
    table; the slots in a doubly linked list from least to most recently used); ``meta`` = [head (LRU),
    tail (MRU), used, clock].  A write's pages kept in the buffer (bit ``j`` of ``kept``,
    ``ssdx.models.engine.rewrites``) are not looked up."""
    cap = lpn_of.shape[0]
    n_lpn = (cap_4k + page_4k - 1) // page_4k
    head, tail, used, clock = meta[0], meta[1], meta[2], meta[3]
    for i in range(op.shape[0]):
        miss[i] = False
        wb_tpage[i] = -1
        wb_count[i] = 0.0
        if not valid[i] or op[i] == TRIM:
            continue
        first, k = page_span(off4k[i], size[i], page_4k, cap_4k)
        for j in range(k):
            if op[i] == WRITE and j < MASK_PAGES and (kept[i] >> j) & 1:
                continue
            lpn = (first + j) % n_lpn
            clock += 1
            h, found = _find(keys, lpn, bits)
            if found:  # hit: to the most recently used end
                s = vals[h]
                if s != tail:
                    if prev[s] >= 0:
                        nxt[prev[s]] = nxt[s]
                    else:
                        head = nxt[s]
                    prev[nxt[s]] = prev[s]
                    prev[s] = tail
                    nxt[s] = -1
                    nxt[tail] = s
                    tail = s
            else:
                miss[i] = True
                if used < cap:
                    s = used
                    used += 1
                else:  # evict the least recently used entry; a dirty one writes its translation page back
                    s = head
                    head = nxt[s]
                    if head >= 0:
                        prev[head] = -1
                    old = lpn_of[s]
                    hd, _ = _find(keys, old, bits)
                    _delete(keys, vals, hd, bits)
                    tp = old * page_4k // tpage_4k
                    if dirty_at[s] > wb_at[tp]:
                        wb_at[tp] = clock
                        if wb_tpage[i] < 0:
                            wb_tpage[i] = tp
                        wb_count[i] += 1.0
                    if s == tail:
                        tail = -1
                h, _ = _find(keys, lpn, bits)  # the bucket may have moved with the deletion
                keys[h] = lpn
                vals[h] = s
                lpn_of[s] = lpn
                dirty_at[s] = 0
                prev[s] = tail
                nxt[s] = -1
                if tail >= 0:
                    nxt[tail] = s
                else:
                    head = s
                tail = s
            if op[i] == WRITE:
                dirty_at[s] = clock
    meta[0], meta[1], meta[2], meta[3] = head, tail, used, clock


class EntryCache:
    """The entry cache of a batch (host state carried from chunk to chunk).

    ``capacity`` entries; the drive's user capacity ``cap_4k``, page ``page_4k`` and translation page
    ``tpage_4k`` in 4 KiB units (:class:`ssdx.models.engine.state.Plan`)."""

    def __init__(self, capacity: int, cap_4k: int, page_4k: int, tpage_4k: int):
        if capacity < 1:
            raise ConfigError("engine.map_cache_mib", capacity,
                              "the entry cache must hold at least one entry")
        self.page_4k, self.tpage_4k, self.cap_4k = int(page_4k), int(tpage_4k), int(cap_4k)
        self.bits = max(int(np.ceil(np.log2(2 * capacity))), 1)  # at most half the buckets in use
        self.keys = np.full(1 << self.bits, -1, np.int64)
        self.vals = np.zeros(1 << self.bits, np.int64)
        self.lpn_of = np.full(capacity, -1, np.int64)
        self.prev = np.full(capacity, -1, np.int64)
        self.nxt = np.full(capacity, -1, np.int64)
        self.dirty_at = np.zeros(capacity, np.int64)
        self.wb_at = np.zeros(self.cap_4k // self.tpage_4k + 1, np.int64)
        self.meta = np.array([-1, -1, 0, 0], np.int64)

    def warm(self, lpns: np.ndarray) -> None:
        """Bring the logical pages ``lpns`` (NAND-page numbers) into the cache clean, in that order (the
        first the least recently used), as MQSim's preconditioning brings addresses into its CMT
        (``Address_Mapping_Unit_Page_Level::Bring_to_CMT_for_preconditioning``)."""
        lpns = np.asarray(lpns, np.int64)
        n = len(lpns)
        self.events(np.zeros(n, np.int64), lpns * self.page_4k, np.full(n, self.page_4k * 4096, np.int64),
                    np.ones(n, bool))

    def events(self, op: np.ndarray, off4k: np.ndarray, size: np.ndarray, valid: np.ndarray,
               kept: np.ndarray | None = None) -> Events:
        """Advance the cache over one chunk of requests; their :class:`Events`.  ``kept``: each write's
        pages kept in the buffer, not written back (``ssdx.models.engine.rewrites``; None: none)."""
        n = len(op)
        kept = np.zeros(n, np.int64) if kept is None else np.asarray(kept, np.int64)
        ev = Events(np.zeros(n, bool), np.zeros(n, np.int32), np.zeros(n, np.float64))
        _advance(self.keys, self.vals, self.bits, self.lpn_of, self.prev, self.nxt, self.dirty_at, self.wb_at,
                 self.meta,
                 np.asarray(op, np.int64), np.asarray(off4k, np.int64), np.asarray(size, np.int64),
                 np.asarray(valid, np.bool_), kept, self.page_4k, self.tpage_4k, self.cap_4k, ev.miss,
                 ev.wb_tpage, ev.wb_count)
        return ev


def for_batch(entries: np.ndarray, cap_4k: np.ndarray, page_4k: np.ndarray,
              tpage_4k: np.ndarray) -> EntryCache | None:
    """The entry cache shared by the configurations of a batch that use one (``entries`` > 0: their
    capacity in entries; the other arguments per configuration, as the plan has them), or None where
    none does.  Refuses a batch whose entry-cache configurations differ in capacity or logical geometry:
    their caches would see different events."""
    key = shared(np.asarray(entries) > 0, (entries, cap_4k, page_4k, tpage_4k), "engine.map_cache", "entries",
                 "the configurations of one batch that cache mapping entries must share the cache size, user "
                 "capacity and page size (the cache is computed once for the batch)")
    return None if key is None else EntryCache(*(int(x) for x in key))


def shared(on: np.ndarray, columns: tuple, field: str, value, rule: str) -> tuple | None:
    """The one row of ``columns`` (per-configuration arrays) that the configurations where ``on`` share,
    or None where none is on; :class:`ConfigError` (``field``, ``value``, ``rule``) where they differ: the
    host-side state of a batch (this cache, ``ssdx.models.engine.rewrites``) is computed once for all."""
    on = np.asarray(on, bool)
    if not on.any():
        return None
    keys = set(zip(*(np.asarray(c, np.float64)[on].tolist() for c in columns)))
    if len(keys) > 1:
        raise ConfigError(field, value, rule)
    return keys.pop()
