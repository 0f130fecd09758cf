"""How the request engine's batched step (:mod:`ssdx.models.engine.model`) books reads on the dies: with
read priority and the suspension policy (:func:`_read_book`), on only the dies a read touches
(:func:`_read_book_at`), translation-page reads (:func:`_map_read`, its step 3) and, with
``engine.cache_read = false``, how long a die is held until its data is out (:func:`_hold`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ssdx.models.engine.book import book, pe_push, pick, suspend
from ssdx.models.engine.params import Layout
from ssdx.models.engine.state import PE, Plan, Server


def _read_book(p: Plan, lay: Layout, pe: PE, sv: Server, ready: jax.Array, dur: jax.Array):
    """:func:`~.book.suspend` where a configuration of the batch tracks suspension
    (``lay.suspension``); else :func:`~.book.book`, which gives every configuration that does not
    track it the same start, booking and die time, with no suspension and no cost."""
    if lay.suspension:
        return suspend(p, pe, sv, ready, dur)
    start, new = book(sv, ready, dur)
    none = jnp.zeros(start.shape, bool)
    return start, new, jnp.broadcast_to(dur, start.shape), none, none


def _push_runs(p: Plan, lay: Layout, pe: PE, on: jax.Array, start: jax.Array, dur: jax.Array) -> PE:
    """:func:`~.book.pe_push`, skipped where no configuration of the batch tracks suspension."""
    return pe_push(p, pe, on, start, dur) if lay.suspension else pe


#: the batched step's read branches that book only the dies a read touches: a read whose pages lie on at
#: most this many dies in every configuration of the batch takes the smallest that fits (:func:`step`);
#: a read on more dies books every die position.  Branches for 2, 4 and 8 dies as well were no faster on
#: the 2-core CPU of ``bench/engine.py`` and doubled the step's compile time (each is a read path of its
#: own), so one die only: a 4 KiB read, and every translation read (:func:`_map_read`)
READ_DIES = (1,)


def _read_book_at(p: Plan, lay: Layout, pe: PE, sv: Server, pos: jax.Array, on: jax.Array, ready: jax.Array,
                  dur: jax.Array):
    """:func:`_read_book` of the die positions ``pos`` (M, B) only, where ``on`` (M, B) (distinct
    positions where on), ``dur`` (D, B) the work of each die: the same arithmetic as booking every die,
    at an M-th of the dies' share of the cost.  The results have :func:`_read_book`'s shapes: the
    booking of the other dies unchanged, their start, die time and suspensions zero (the callers read
    them only where a die works).  They are put back by a scatter, which XLA does not fuse into the
    (K, D, B) arrays that read them: an elementwise put-back would have the booking recomputed for every
    die and gap."""
    take = lambda x: jnp.take_along_axis(x, jnp.broadcast_to(pos, x.shape[:-2] + pos.shape), axis=-2)  # noqa: E731
    at = lambda t: type(t)(*(take(x) for x in t))  # noqa: E731
    start, new, dur_m, s_p, s_e = _read_book(p, lay, at(pe) if lay.suspension else pe, at(sv), ready,
                                             take(dur))
    where = jnp.where(on, pos, dur.shape[-2])  # off: out of range, dropped
    put = lambda x, v: jnp.put_along_axis(  # noqa: E731
        x, jnp.broadcast_to(where, v.shape), v, axis=-2, inplace=False, mode="drop")
    zero = lambda v: put(jnp.zeros(dur.shape, v.dtype), jnp.broadcast_to(v, pos.shape))  # noqa: E731
    return (zero(start), Server(*(put(x, v) for x, v in zip(sv, new, strict=True))), zero(dur_m),
            zero(s_p), zero(s_e))


def _positions(p: Plan, first: jax.Array, count: jax.Array, m: int) -> tuple[jax.Array, jax.Array]:
    """The die positions (m, B) of the dies ``first, first + 1, …`` (mod the dies) and whether each is
    among the first ``count`` (B,)."""
    ids = jnp.mod(first[None] + jnp.arange(m)[:, None], p.n_dies[None])
    pos = jnp.stack([jnp.argmax((p.die_id == x[None]) & p.mask, axis=0) for x in ids])
    return pos, jnp.arange(m)[:, None] < count[None]


def _map_read(p: Plan, lay: Layout, t_cmd, tpage, miss, die_r: Server, die_free, busy, pe: PE):
    """3: a missed translation page is read from die ``tpage mod dies`` (SLC timing), booked with read
    priority under the suspension policy (:func:`suspend`); returns the die state, busy time, the
    program/erase runs, the read's start, when its entries are in the controller (its end, plus the
    ``map_read_bytes`` transfer unless the die was held for it; -inf where none) and the suspensions
    (2, B).  Only that die's booking is computed (gathered, booked, put back): the same arithmetic as
    booking every die and keeping that one, at a die's share of the cost."""
    on = (p.die_id == jnp.mod(tpage, p.n_dies)[None]) & p.mask & miss[None]
    t_die = p.t_map_read + jnp.where(p.hold_read, p.t_map_xfer, 0.0)  # cache_read false: held until out
    ms, die_r_m, m_dur, s_p, s_e = _read_book_at(p, lay, pe, die_r, jnp.argmax(on, axis=0)[None],
                                                 jnp.any(on, axis=0)[None], t_cmd[None],
                                                 jnp.broadcast_to(t_die[None], on.shape))
    m_start = jnp.max(jnp.where(on, ms, -jnp.inf), axis=0)
    m_end = jnp.max(jnp.where(on, ms + m_dur, -jnp.inf), axis=0)
    m_in = m_end + jnp.where(p.hold_read, 0.0, p.t_map_xfer)
    die_r = pick(on, die_r_m, die_r)
    die_free = jnp.where(on, jnp.maximum(die_free, m_start[None]) + m_dur, die_free)
    sus = jnp.stack([jnp.sum(on & s_p, axis=0), jnp.sum(on & s_e, axis=0)]).astype(busy.dtype)
    pe = _push_runs(p, lay, pe, on, m_start[None], m_dur)
    return die_r, die_free, busy + on * m_dur, pe, m_start, m_in, sus


def _hold(p: Plan, lay: Layout, chan_r, die_r: Server, ready, dur, xfer, active) -> jax.Array:
    """``engine.cache_read: false``: how long each die (D, B) keeps a read past its array time ``dur`` —
    until its data is out.  Where the read would be booked (:func:`~.book.book`) gives when the array
    read ends; the request's transfers on each channel start when its first die is done or the channel's
    backlog ``chan_r`` is through (the fluid booking of :func:`_read`), in no set order, so a die's own
    transfer ends on average after its own and half of the others' on that channel (or when it would
    alone, if later)."""
    est, _ = book(die_r, ready[None], dur)
    r_end = est + dur
    first_c = jnp.min(_by_channel(jnp.where(active, r_end, jnp.inf), lay), axis=0)
    x_c = jnp.sum(_by_channel(xfer, lay), axis=0)
    c_start = jnp.broadcast_to(jnp.maximum(first_c, chan_r)[None], (lay.ways,) + first_c.shape)
    x_c = jnp.broadcast_to(x_c[None], c_start.shape).reshape(r_end.shape)
    own_end = c_start.reshape(r_end.shape) + 0.5 * (x_c + xfer)
    out = jnp.maximum(own_end, r_end + xfer) - r_end
    return jnp.where(active & p.hold_read[None], out, 0.0)


def _by_channel(x: jax.Array, lay: Layout) -> jax.Array:
    """(D, B) die positions -> (W, C, B): channel ``c`` is the last-but-one axis."""
    return x.reshape(lay.ways, lay.channels, x.shape[-1])
