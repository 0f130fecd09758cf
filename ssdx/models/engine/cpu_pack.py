"""How the CPU loop (:mod:`ssdx.models.engine.cpu`) and the CUDA kernel (:mod:`ssdx.models.engine.cuda`) hold
the engine's plan, state and accumulators: flat float64 matrices whose columns (or rows) are named by the
tuples below, packed from and unpacked to the JAX engine's ``Plan``, ``State`` and ``Acc``
(:mod:`ssdx.models.engine.state`).  Host side only: nothing here is compiled."""

from __future__ import annotations

import numpy as np

from ssdx.core.stats import N_BINS
from ssdx.models.engine.model import PE, Acc, Plan, Requests, Server, State, to_host
from ssdx.models.engine.params import MERGE_RING as RING_SIZE
from ssdx.models.engine.params import Layout

# ---------------------------------------------------------------------------------------------- packing
#: the plan's fields that are not one column each: the die mask and ids (the loop walks its dies in order
#: and counts its channels, ``n_ch``), the program times by mode and the fluid coefficients (spread over
#: columns below) and the queue depth (the free slots)
_NOT_COLUMNS = ("mask", "die_id", "t_unit", "coef", "queue_depth")
#: the fluid plan's coefficients the loop reads (``Plan.coef``, ``ssdx.models.fluid.model.Plan``)
_COEF = ("slc_cs", "slc_craw", "bits", "nat_dn", "nat_draw", "fold", "cap_cs")
#: per-configuration constants, columns of the (B, len(PLAN)) float64 matrix the loop reads: the plan's
#: fields (:class:`~ssdx.models.engine.state.Plan`), then those derived from it (:func:`pack_plan`); the
#: loop reads column ``name`` at the index ``NAME`` (upper case, set below)
PLAN = (*(f for f in Plan._fields if f not in _NOT_COLUMNS), "n_ch", "t_unit0", "t_unit1", "t_unit2", *_COEF,
        "merge_ring")
globals().update({name.upper(): i for i, name in enumerate(PLAN)})
#: per-configuration scalar state, columns of (B, len(SCALARS)) float64
SCALARS = ("ctrl_free", "link_rx", "link_tx", "free_max", "last_arrival", "last_done", "wptr", "wpartial",
           "ds", "dn", "draw", "dram_free", "map_tp", "map_end")
#: per-die state, rows of (B, len(DIES) + 2 K, D): these, then the read booking's gap starts
#: (K = ``Layout.read_gaps`` rows from :data:`GAP`) and gap ends (as many after them), oldest first
DIES = ("die_free", "r_end", "die_units", "pe_start", "pe_end", "er_end", "er_len", "t_op")
#: per-configuration accumulator scalars, columns of (B, len(SUMS))
SUMS = ("count0", "count1", "count2", "bytes0", "bytes1", "bytes2", "lat0", "lat1", "lat2", "queue_sum",
        "read_pages", "prog_pages", "erases", "map_misses", "mode0", "mode1", "mode2", "idle_folded",
        "elapsed", "susp_program", "susp_erase", "map_writebacks", "programs")

(CTRL_FREE, LINK_RX, LINK_TX, FREE_MAX, LAST_ARRIVAL, LAST_DONE, WPTR, WPARTIAL, DS, DN, DRAW,
 DRAM_FREE, MAP_TP, MAP_END) = range(len(SCALARS))
DIE_FREE, R_END, DIE_UNITS, PE_START, PE_END, ER_END, ER_LEN, T_OP = range(len(DIES))
GAP = len(DIES)  # the first row of the read booking's gaps
(COUNT, BYTES, LAT, QUEUE_SUM, READ_PAGES, PROG_PAGES, ERASES, MAP_MISSES, MODE, IDLE_FOLDED,
 ELAPSED, SUSP, MAP_WBS) = (SUMS.index(k) for k in (
     "count0", "bytes0", "lat0", "queue_sum", "read_pages", "prog_pages", "erases", "map_misses", "mode0",
     "idle_folded", "elapsed", "susp_program", "map_writebacks"))
PROGRAMS = SUMS.index("programs")
TAG, AGE, DIRTY = range(3)  # rows of a configuration's mapping cache (3, M): page held, last use, dirty


def pack_plan(p: Plan, lay: Layout) -> np.ndarray:
    """The batched plan as the (B, len(PLAN)) float64 matrix the loop reads."""
    mask = to_host(p.mask, lay, dies=True) > 0.5  # (B, ways, channels)
    t_unit = to_host(p.t_unit, None)  # (B, 3)
    cols = {
        "n_ch": mask.any(1).sum(1), **{f"t_unit{i}": t_unit[:, i] for i in range(3)},
        # read at run time, so a compiled (cached) loop never holds a stale ring size
        "merge_ring": np.full(t_unit.shape[0], float(RING_SIZE)),
        **{k: to_host(getattr(p.coef, k), None) for k in ("slc_cs", "slc_craw", "bits", "nat_dn", "nat_draw",
                                                            "fold", "cap_cs")},
    }
    return np.stack([cols[k] if k in cols else to_host(getattr(p, k), None) for k in PLAN], axis=1)



# ------------------------------------------------------------------------------------------- host side
def pack_state(s: State) -> tuple[np.ndarray, ...]:
    """The state as the loop's arrays, configurations last (fresh copies: the loop writes them):
    scalars ``(len(SCALARS), B)``, dies ``(len(DIES) + 2 K, D, B)``, channels ``(2, C, B)``
    (all work, reads), slots ``(S, B)`` float64 and the mapping cache ``(3, M, B)`` int64 (page held,
    last use, dirty)."""
    f = lambda x: np.asarray(x, np.float64)  # noqa: E731
    r = s.die_r
    return (np.stack([f(getattr(s, k)) for k in SCALARS]),
            np.concatenate([np.stack([f(x) for x in (s.die_free, r.end, s.die_units, *s.pe)]), f(r.gap),
                            f(r.win)]),
            np.stack([f(s.chan_free), f(s.chan_r)]), np.array(s.slots, np.float64),
            np.stack([np.asarray(x, np.int64) for x in (s.tags, s.map_age, s.map_dirty)]))


def pack_merge(s: State) -> np.ndarray:
    """The multi-plane state (``State.merge``) as the loop's float64 array ``(Layout.merge_rows, D, B)``
    (a fresh copy)."""
    return np.array(s.merge, np.float64)


def pack_flight(s: State) -> np.ndarray:
    """The pages in flight to flash (``State.flight``) as the loop's float64 array ``(3, Layout.flight_slots,
    B)`` (a fresh copy): when each page's program ends, the bytes it carries and its die position."""
    return np.array(s.flight, np.float64)


def request_arrays(req: Requests) -> tuple[np.ndarray, ...]:
    """The chunk's requests as the loop reads them: op, off4k (int64), size, gap_s (float64), valid, and
    the entry cache's map_miss, wb_tpage (int64), wb_count (float64), and the pages kept in the buffer
    (``kept``) and the pages each read reads first (``first_read``), int64 bit masks."""
    return (np.asarray(req.op, np.int64), np.asarray(req.off4k, np.int64), np.asarray(req.size, np.float64),
            np.asarray(req.gap_s, np.float64), np.asarray(req.valid, np.bool_),
            np.asarray(req.map_miss, np.bool_), np.asarray(req.wb_tpage, np.int64),
            np.asarray(req.wb_count, np.float64), np.asarray(req.kept, np.int64),
            np.asarray(req.first_read, np.int64))


def new_sums(b: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zeroed accumulators, configurations last: sums ``(len(SUMS), B)``, hist ``(3, N_BINS, B)`` int32,
    busy ``(D, B)``."""
    return np.zeros((len(SUMS), b)), np.zeros((3, N_BINS, b), np.int32), np.zeros((d, b))


def unpack(sc, die, chan, slots, tags, a, hist, busy, mg, fl, dt) -> tuple[State, Acc]:
    """The loop's arrays (configurations last, as :func:`pack_state` and :func:`new_sums` give them) as
    the engine's ``State`` and ``Acc`` in the dtype ``dt``."""
    c = lambda x, t=dt: np.ascontiguousarray(x, dtype=t)  # noqa: E731
    k_n = (die.shape[0] - GAP) // 2
    state = State(
        slots=c(slots), ctrl_free=c(sc[CTRL_FREE]), link_rx=c(sc[LINK_RX]), link_tx=c(sc[LINK_TX]),
        dram_free=c(sc[DRAM_FREE]),
        die_free=c(die[DIE_FREE]), free_max=c(sc[FREE_MAX]),
        die_r=Server(end=c(die[R_END]), win=c(die[GAP + k_n:]), gap=c(die[GAP:GAP + k_n])),
        chan_free=c(chan[0]), chan_r=c(chan[1]), last_arrival=c(sc[LAST_ARRIVAL]), last_done=c(sc[LAST_DONE]),
        wptr=c(sc[WPTR], np.int32), wpartial=c(sc[WPARTIAL]), die_units=c(die[DIE_UNITS]), ds=c(sc[DS]),
        dn=c(sc[DN]), draw=c(sc[DRAW]), tags=c(tags[TAG], np.int32), map_age=c(tags[AGE], np.int32),
        map_dirty=c(tags[DIRTY], np.int32), map_tp=c(sc[MAP_TP], np.int32), map_end=c(sc[MAP_END]),
        pe=PE(*(c(die[k]) for k in (PE_START, PE_END, ER_END, ER_LEN, T_OP))), merge=c(mg), flight=c(fl))
    acc = Acc(elapsed=c(a[ELAPSED]), elapsed_c=np.zeros(a.shape[1], dt), count=c(a[COUNT:COUNT + 3]),
              bytes=c(a[BYTES:BYTES + 3]), lat_sum=c(a[LAT:LAT + 3]), queue_sum=c(a[QUEUE_SUM]),
              hist=c(hist, np.int32), busy=c(busy), read_pages=c(a[READ_PAGES]), prog_pages=c(a[PROG_PAGES]),
              erases=c(a[ERASES]), map_misses=c(a[MAP_MISSES]), mode_bytes=c(a[MODE:MODE + 3]),
              idle_folded=c(a[IDLE_FOLDED]), suspensions=c(a[SUSP:SUSP + 2]), map_writebacks=c(a[MAP_WBS]),
              programs=c(a[PROGRAMS]))
    return state, acc


#: what ``from ssdx.models.engine.cpu_pack import *`` gives the loop: the column and row indices above
__all__ = sorted(k for k, v in dict(globals()).items() if k.isupper() and type(v) is int)
