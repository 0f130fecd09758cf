"""Where a request's pages go in the request engine's batched step (:mod:`ssdx.models.engine.model`, its
steps 4 and 5): the dies a request's pages are dealt to, the pages a write keeps in its buffer, the plane,
page number and page type of each program under ``engine.plane_merge`` (MQSim's allocator and multi-plane
scheduler, Tavakkol et al., USENIX FAST 2018), and how host bytes split into pSLC, direct native and
folding bytes (the fluid model's room coefficients).  The CPU loop's scalar forms are in
:mod:`ssdx.models.engine.cpu_ops`."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ssdx.models.engine.params import MAP_UNIT_BYTES, MASK_PAGES, MERGE_RING, Layout
from ssdx.models.engine.state import Plan


def _per_die(p: Plan, start: jax.Array, count: jax.Array) -> jax.Array:
    """Items ``start, start+1, … start+count-1`` (``0 <= start < dies``) dealt round-robin over the dies:
    how many land on each die position, ``(D, B)`` int32.  Die ``start + r`` gets ``q + (r < m)`` where
    ``count = q·dies + m`` (one division per configuration, none per die)."""
    q = count // p.n_dies
    # computed once per configuration: without the barrier XLA repeats the division for every die
    q, m, start = q[None], (count - q * p.n_dies)[None], start[None]
    r = p.die_id - start
    r = jnp.where(r < 0, r + p.n_dies[None], r)
    return jnp.where(p.mask, q + (r < m).astype(jnp.int32), 0)


def _pages(p: Plan, off4k: jax.Array, size: jax.Array) -> tuple[jax.Array, jax.Array]:
    """4: the NAND pages a request at ``off4k`` (4 KiB units) of ``size`` bytes touches, ``k`` (int32,
    at least 1), and how many of them lie on each die, ``(D, B)`` (logical page ``j`` on die ``j mod D``)."""
    k = _page_count(p, off4k, size)
    return k, _per_die(p, jnp.mod(off4k // p.page_4k, p.n_dies), k)


def _kept_per_die(p: Plan, start: jax.Array, k: jax.Array, kept: jax.Array) -> jax.Array:
    """Of a write's ``k`` pages dealt round-robin from die ``start``, how many each die position keeps in
    the buffer, ``(D, B)`` int32: page ``j`` (below ``k`` and :data:`~ssdx.models.engine.params.MASK_PAGES`)
    is kept where bit ``j`` of ``kept`` is set (``Requests.kept``)."""
    j = jnp.arange(MASK_PAGES, dtype=jnp.int32)[:, None]  # (J, 1)
    bit = ((kept >> j) & 1) * (j < k[None])  # (J, B)
    on = jnp.mod(j, p.n_dies[None])[:, None] == _deal_place(p, start)[None]  # (J, D, B)
    return jnp.where(p.mask, jnp.sum(jnp.where(on, bit[:, None], 0), axis=0), 0)


def _deal_place(p: Plan, start: jax.Array) -> jax.Array:
    """Each die position's place in a deal of pages starting at die ``start``, ``(D, B)`` int32."""
    r = p.die_id - start[None]
    return jnp.where(r < 0, r + p.n_dies[None], r)


def _row(merge: jax.Array, row: jax.Array) -> jax.Array:
    """``merge[row[d, b], d, b]`` for a row index per die position (``State.merge``)."""
    return jnp.take_along_axis(merge, row[None].astype(jnp.int32), axis=0)[0]


def _set_row(merge: jax.Array, row: jax.Array, value: jax.Array, on: jax.Array) -> jax.Array:
    """``merge`` with ``merge[row[d, b], d, b] = value[d, b]`` where ``on``."""
    rows = jnp.arange(merge.shape[0])[:, None, None]
    return jnp.where((rows == row[None]) & on[None], value[None], merge)


def _plane_slot(p: Plan, n: jax.Array) -> jax.Array:
    """The first ``State.merge`` row of the plane that the ``n``-th page dealt to a die lies on (plane
    ``(n div merge_dies) mod planes`` of the die's ``n mod merge_dies``-th die: MQSim's CWDP)."""
    sub = p.merge_dies.astype(jnp.int32)[None]
    planes = p.planes.astype(jnp.int32)[None]
    return (jnp.mod(n, sub) * planes + jnp.mod(n // sub, planes)) * (1 + MERGE_RING)


def _allocate_reads(p: Plan, merge: jax.Array, off4k: jax.Array, k: jax.Array, first: jax.Array) -> jax.Array:
    """``engine.plane_merge``: a read's pages read before they were ever written (``Requests.first_read``)
    each take their plane's next page number, as MQSim places them, no program holding it
    (``cpu_ops._allocate``)."""
    page0 = off4k // p.page_4k
    place = _deal_place(p, jnp.mod(page0, p.n_dies))
    bits = jnp.where(p.plane_merge, first, 0)
    lim = jnp.minimum(k, MASK_PAGES)

    def body(i, m):
        t = place + i * p.n_dies[None]
        on = p.mask & (t < lim[None]) & (((bits[None] >> jnp.minimum(t, MASK_PAGES - 1)) & 1) > 0)
        row = _plane_slot(p, (page0[None] + t) // p.n_dies[None])
        a = _row(m, row)
        m = _set_row(m, row + 1 + jnp.mod(a, MERGE_RING).astype(jnp.int32), jnp.full_like(a, -jnp.inf), on)
        return _set_row(m, row, a + 1.0, on)

    # as many rounds as the configuration with the fewest dies needs (each deals its pages over its own)
    return jax.lax.fori_loop(0, jnp.max(jnp.where(p.plane_merge, (lim + p.n_dies - 1) // p.n_dies, 0)), body,
                             merge)


def _merge_programs(p: Plan, lay: Layout, merge: jax.Array, off4k: jax.Array, k: jax.Array,
                    kept: jax.Array, t0: jax.Array, t_unit: jax.Array, ready: jax.Array):
    """``engine.plane_merge`` (``cpu_ops._merge_page``, page by page in the order of the write's pages): each
    page the write programs on a die joins a program of another plane of that die with its page number that
    starts at ``ready`` or later, or is a program of its own after the die's earlier ones from ``t0``.
    Returns the programs each die position runs, ``(D, B)``, and the new ``State.merge``."""
    ring = MERGE_RING
    page0 = off4k // p.page_4k
    place = _deal_place(p, jnp.mod(page0, p.n_dies))
    n_slots = lay.merge_rows // (1 + ring)
    ppb = p.units_per_block[None]

    def body(carry):
        i, m, ops, durf = carry
        t = place + i * p.n_dies[None]
        kept_t = (t < MASK_PAGES) & (((kept[None] >> jnp.minimum(t, MASK_PAGES - 1)) & 1) > 0)
        on = p.mask & p.plane_merge[None] & (t < k[None]) & ~kept_t
        n = (page0[None] + t) // p.n_dies[None]
        base = _plane_slot(p, n)
        a_new = _row(m, base)
        m = _set_row(m, base, a_new + 1.0, on)
        q_ = jnp.mod(n // p.merge_dies.astype(jnp.int32)[None], p.planes.astype(jnp.int32)[None])
        sub0 = base - q_ * (1 + ring)  # the first plane's row of the same die
        found = jnp.zeros_like(on)
        st_found = jnp.zeros_like(t0)
        for q2 in range(n_slots):
            b2 = sub0 + q2 * (1 + ring)
            ok = on & (q2 != q_) & (q2 < p.planes[None])
            f2 = _row(m, jnp.where(ok, b2, 0))
            a2 = f2 - 1.0 - jnp.mod(f2 - 1.0 - a_new, ppb)
            ok = ok & (a2 >= 0) & (f2 - a2 <= ring)
            st = _row(m, jnp.where(ok, b2 + 1 + jnp.mod(a2, ring).astype(jnp.int32), 0))
            hit = ok & ~found & (st >= ready)
            st_found = jnp.where(hit, st, st_found)
            found = found | hit
        start = jnp.where(found, st_found, t0 + durf * t_unit[None])
        m = _set_row(m, base + 1 + jnp.mod(a_new, ring).astype(jnp.int32), start, on)
        own = on & ~found
        return (i + 1, m, ops + own.astype(ops.dtype),
                durf + jnp.where(own, _page_factor(p, jnp.mod(a_new, ppb)), 0.0))

    def more(carry):
        return jnp.any(carry[0] * p.n_dies < k)

    zero = jnp.zeros_like(t0)
    _, merge, ops, durf = jax.lax.while_loop(more, body, (jnp.int32(0), merge, zero, zero))
    return ops, durf, merge


def _page_factor(p: Plan, idx: jax.Array) -> jax.Array:
    """``engine.page_types = mqsim``: the program time of the page at index ``idx`` of its block over the
    mean (``prog_f0/1/2`` by MQSim's page type, ``cpu_ops._merge_page``); 1 where the rule is off."""
    rule = p.page_rule[None]
    tlc = jnp.where(idx <= 5.0, 0.0, jnp.where(idx <= 7.0, 1.0, jnp.mod(jnp.floor((idx - 8.0) / 2.0), 3.0)))
    typ = jnp.where(rule == 2, 2.0 * jnp.mod(idx, 2.0), jnp.where(rule == 3, tlc, 0.0))  # MLC: LSB, MSB
    f = jnp.where(typ == 0.0, p.prog_f0[None], jnp.where(typ == 1.0, p.prog_f1[None], p.prog_f2[None]))
    return jnp.where(rule > 0, f, 1.0)


def _page_count(p: Plan, off4k: jax.Array, size: jax.Array) -> jax.Array:
    """The NAND pages (int32, at least 1) a request at ``off4k`` of ``size`` bytes touches."""
    in_page = (jnp.mod(off4k, p.page_4k) * MAP_UNIT_BYTES).astype(size.dtype)
    return jnp.maximum(jnp.ceil((in_page + size) / p.page_bytes), 1.0).astype(jnp.int32)


def _place(p: Plan, ds: jax.Array, dn: jax.Array, draw: jax.Array, amount: jax.Array):
    """Split ``amount`` host bytes into pSLC, direct native and folding bytes with the fluid engine's
    room coefficients (``fluid.slc_room``/``native_room`` relative to the start); returns the new
    accounting changes ``(ds, dn, draw)`` and the three byte counts."""
    f = p.coef
    room_slc = jnp.maximum(jnp.minimum(p.room_slc0 - f.slc_cs * ds - f.slc_craw * draw,
                                       p.room_cap0 - f.cap_cs * ds), 0.0)
    a_slc = jnp.minimum(room_slc, amount)
    draw = draw + f.bits * a_slc
    room_nat = jnp.maximum(p.room_nat0 - f.nat_dn * dn - f.nat_draw * draw, 0.0)
    a_dir = jnp.minimum(room_nat, amount - a_slc)
    a_fold = amount - a_slc - a_dir
    folded = jnp.minimum(f.fold * a_fold, jnp.maximum(p.s0 + ds + a_slc, 0.0))
    new = (ds + a_slc - folded, dn + a_dir + a_fold + folded, draw + a_dir)
    return new, jnp.stack([a_slc, a_dir, a_fold])
