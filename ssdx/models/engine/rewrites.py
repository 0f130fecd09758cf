"""Rewrites kept in the write buffer (``engine.rewrite_window_s``), computed on the host.

With the eager write-back (``engine.write_back = eager``) every logical page a write touches goes to
flash at once.  MQSim's data cache managers make one exception: a page written again within the current
window is not written back again; its data stay dirty in the buffer (``write_to_destage_buffer`` of
``Data_Cache_Manager_Flash_Advanced`` and ``_Simple``: the pages a window has written are kept in a set,
``bloom_filter``, "hot/cold data separation"; Tavakkol et al., "MQSim: A Framework for Enabling Realistic
Studies of Modern Multi-Queue SSD Devices", USENIX FAST 2018).  The set is emptied at the end of a write
whose time is past the window's end, and the next window ends ``rewrite_window_s`` after that write
(MQSim: ``bloom_filter_reset_step``, 1 s; the first window ends at time 0, so the first write empties
it).  A page kept in the buffer is not programmed, counts nothing against the data in flight and, with
the entry cache (``engine.map_cache = entries``), is not looked up in the mapping table (MQSim
translates only the pages it writes back).

Which pages are kept depends only on the sequence of logical pages the writes touch and on their
arrival times, the same for every configuration of a batch that shares the window, the time scale and
the drive's logical geometry: so it is computed once per chunk here, before the engine runs, and handed
to the engine as a per-request bit mask (bit ``j`` set: the request's ``j``-th page is kept;
:data:`MASK_PAGES` bits, the pages after them are always written back).  The time of a write is its
arrival on the stream's clock divided by ``engine.time_scale``; MQSim's is when its cache manager takes
it, later than its arrival by the host interface's fetch and, while writes are held back, by that wait.
A stream without arrival times (a closed loop, whose times come out of the simulation) keeps nothing:
every page is written back.
"""

from __future__ import annotations

import numba
import numpy as np

from ssdx.models.engine.entries import page_span, shared
from ssdx.models.engine.params import MASK_PAGES

WRITE = 1


@numba.njit(cache=True)
def _advance(seen, meta, op, off4k, size, valid, t, page_4k, cap_4k, window, kept):
    """Run the writes through the window's set of pages (``seen``, a typed dict page -> 1); ``meta`` =
    [end of the current window (s)]."""
    n_lpn = (cap_4k + page_4k - 1) // page_4k
    for i in range(op.shape[0]):
        kept[i] = 0
        if not valid[i] or op[i] != WRITE:
            continue
        first, k = page_span(off4k[i], size[i], page_4k, cap_4k)
        for j in range(k):
            lpn = (first + j) % n_lpn
            if lpn in seen:
                if j < MASK_PAGES:
                    kept[i] |= np.int32(1) << np.int32(j)
            else:
                seen[lpn] = 1
        if t[i] > meta[0]:  # after the write, as MQSim's check follows its pages
            seen.clear()
            meta[0] = t[i] + window


class Rewrites:
    """The rewrite window of a batch (host state carried from chunk to chunk): ``window`` s of simulated
    time, ``time_scale`` (``engine.time_scale``), the drive's user capacity ``cap_4k`` and page
    ``page_4k`` in 4 KiB units."""

    def __init__(self, window: float, time_scale: float, cap_4k: int, page_4k: int):
        self.window, self.time_scale = float(window), float(time_scale)
        self.cap_4k, self.page_4k = int(cap_4k), int(page_4k)
        self.seen = numba.typed.Dict.empty(numba.types.int64, numba.types.int64)
        self.meta = np.zeros(1, np.float64)

    def kept(self, op: np.ndarray, off4k: np.ndarray, size: np.ndarray, valid: np.ndarray,
             time_s: np.ndarray | None) -> np.ndarray:
        """Advance the window over one chunk of requests (``time_s``: arrivals on the stream's clock, s,
        or None/NaN for a closed loop); each request's mask of pages kept in the buffer (int32)."""
        n = len(op)
        out = np.zeros(n, np.int32)
        if time_s is None or n == 0 or np.isnan(np.asarray(time_s, np.float64)).any():
            return out
        _advance(self.seen, self.meta, np.asarray(op, np.int64), np.asarray(off4k, np.int64),
                 np.asarray(size, np.int64), np.asarray(valid, np.bool_),
                 np.asarray(time_s, np.float64) / self.time_scale, self.page_4k, self.cap_4k, self.window,
                 out)
        return out


def for_batch(on: np.ndarray, window: np.ndarray, time_scale: np.ndarray, cap_4k: np.ndarray,
              page_4k: np.ndarray) -> Rewrites | None:
    """The rewrite window shared by the configurations of a batch that keep rewrites (``on``: the plan's
    ``rewrites``, a window with the eager write-back in an open loop; the other arguments per
    configuration), or None where none does.  Refuses a batch whose such configurations differ in window,
    time scale or logical geometry: they would keep different pages."""
    key = shared(on, (window, time_scale, cap_4k, page_4k), "engine.rewrite_window_s",
                 sorted(set(np.asarray(window, np.float64)[np.asarray(on, bool)].tolist())),
                 "the configurations of one batch that keep rewrites in the buffer must share the window, "
                 "engine.time_scale, the user capacity and the page size (the kept pages are computed once "
                 "for the batch)")
    return None if key is None else Rewrites(key[0], key[1], int(key[2]), int(key[3]))


@numba.njit(cache=True)
def _first(seen, op, off4k, size, valid, page_4k, cap_4k, out):
    """Mark the pages the requests touch in ``seen`` (a typed dict page -> 1); a read's pages touched for
    the first time set their bits in ``out``."""
    n_lpn = (cap_4k + page_4k - 1) // page_4k
    for i in range(op.shape[0]):
        out[i] = 0
        if not valid[i] or op[i] > WRITE:
            continue
        first, k = page_span(off4k[i], size[i], page_4k, cap_4k)
        for j in range(k):
            if op[i] != WRITE and j >= MASK_PAGES:  # past the mask: not placed, so not yet touched
                break
            lpn = (first + j) % n_lpn
            if lpn not in seen:
                seen[lpn] = 1
                if op[i] != WRITE:
                    out[i] |= np.int32(1) << np.int32(j)


class FirstReads:
    """The logical pages a batch's stream has touched (host state carried from chunk to chunk), for
    ``engine.plane_merge``: MQSim gives a page read before it was ever written a physical page at once, the
    next page of its plane (``Address_Mapping_Unit_Page_Level::online_create_entry_for_reads``, which calls
    the block manager's ``Allocate_block_and_page_in_plane_for_user_write``), so such reads move the
    planes' page numbers as writes do.  The drive's user capacity ``cap_4k`` and page ``page_4k`` in 4 KiB
    units."""

    def __init__(self, cap_4k: int, page_4k: int):
        self.cap_4k, self.page_4k = int(cap_4k), int(page_4k)
        self.seen = numba.typed.Dict.empty(numba.types.int64, numba.types.int64)

    def first(self, op: np.ndarray, off4k: np.ndarray, size: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Advance over one chunk of requests; each read's mask of pages read for the first time (int32;
        bit ``j``: its ``j``-th page, :data:`MASK_PAGES` of them)."""
        out = np.zeros(len(op), np.int32)
        if len(op):
            _first(self.seen, np.asarray(op, np.int64), np.asarray(off4k, np.int64),
                   np.asarray(size, np.int64), np.asarray(valid, np.bool_), self.page_4k, self.cap_4k, out)
        return out


def first_reads_for_batch(merge: np.ndarray, cap_4k: np.ndarray, page_4k: np.ndarray) -> FirstReads | None:
    """The touched pages shared by the configurations of a batch that merge programs (``merge`` > 0), or
    None where none does; refuses a batch whose such configurations differ in logical geometry."""
    key = shared(np.asarray(merge) > 0.5, (cap_4k, page_4k), "engine.plane_merge", True,
                 "the configurations of one batch that merge programs must share the user capacity and the "
                 "page size (the pages read first are computed once for the batch)")
    return None if key is None else FirstReads(int(key[0]), int(key[1]))
