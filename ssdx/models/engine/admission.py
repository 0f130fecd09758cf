"""When the request engine lets a write in (:mod:`ssdx.models.engine.model`, its step 7): the eager
write-back's back pressure, as a fluid backlog (``engine.back_pressure = bytes``) or by counting the
programs in flight (``programs``, MQSim's ``back_pressure_buffer_max_depth``), and the time a write takes
into the write buffer's DRAM.  Times in s from the request's issue."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ssdx.models.engine.state import Plan


def _admission(h_end: jax.Array, backlog: jax.Array, n_dies: jax.Array, inflight: jax.Array,
               t_unit: jax.Array, per_op: jax.Array) -> jax.Array:
    """When the eager write-back's back pressure lets a write in (s from its issue): once ``backlog`` s of
    program work summed over ``n_dies`` dies has drained to what ``inflight`` bytes in flight allow at
    ``per_op`` bytes a program of ``t_unit`` s (MQSim's ``back_pressure_buffer_max_depth``, a fluid
    backlog); never before its host data is in at ``h_end``."""
    return jnp.maximum(h_end, backlog / n_dies - inflight * t_unit / (n_dies * per_op))


#: a die's backlog ending within this share of a program past an instant counts that program as ended
#: then, and a program starting within it before a page is ready takes the page (``engine.plane_merge``):
#: so rounding in times kept two ways (absolute in float64 on the CPU, from the issue in the batch's dtype
#: here, float32 by default: about 1e-7 of the few ms a backlog spans) does not split a program's end
#: between the back ends.  7.5 ns of a 750 us program
END_SLACK = 1e-5


def _bp_limit(inflight: jax.Array, size: jax.Array, pages: jax.Array, n_pages: jax.Array) -> jax.Array:
    """``engine.back_pressure = programs``: the most programs of one page of a write (``size`` bytes over
    ``pages`` pages) that may still be in flight when the write, ``n_pages`` of its pages written back,
    is let in: ``N`` with ``(N + n_pages - 1) · size / pages < inflight`` (MQSim's
    ``write_to_destage_buffer`` sends a request's transaction to flash while the sectors in flight, those
    of the request sent before it included, are below its ``back_pressure_buffer_max_depth``).  Written
    as ``inflight · pages / size``, exact where that is a whole number.  A write whose own pages fill the
    limit waits for every program in flight (MQSim lets it in page by page)."""
    room = inflight * pages / size - jnp.maximum(n_pages - 1.0, 0.0)
    return jnp.maximum(jnp.ceil(room) - 1.0, 0.0)


def _admission_programs(h_end: jax.Array, die_free: jax.Array, mask: jax.Array, t_unit: jax.Array,
                        limit: jax.Array) -> jax.Array:
    """``engine.back_pressure = programs``: the first instant from ``h_end`` on (s from the issue) at
    which at most ``limit`` programs are still queued or running, each die's backlog ``die_free`` (D, B)
    taken as back-to-back programs of ``t_unit`` s ending where it ends.

    A die with ``n`` programs left at ``h_end`` ends its first at its phase ``x - (n - 1) t_unit`` (``x``
    its backlog past ``h_end``) and one each ``t_unit`` after, so the ends fall in rounds.  The instant is
    the ``m``-th end, ``m`` the programs above ``limit``.  Its round ``r`` is the least with ``S(r + 1) >=
    m``, ``S(R) = sum(min(n, R))``: with the ``n`` sorted, ``S`` is linear between consecutive ones, so
    the first sorted ``n_j`` with ``S(n_j) >= m`` gives ``r + 1 = ceil((m - sum_{i<j} n_i) / (D - j))``.
    Within the round it is the ``(m - S(r))``-th smallest phase of the dies with programs left."""
    dt = die_free.dtype
    x = jnp.where(mask, die_free - h_end[None], 0.0)
    n = jnp.maximum(jnp.ceil(x * (1.0 / t_unit)[None] - END_SLACK), 0.0)
    phase = jnp.where(n > 0, x - (n - 1.0) * t_unit[None], jnp.inf)
    m = jnp.sum(n, axis=0) - limit
    d = n.shape[0]
    ns = jnp.sort(n, axis=0)
    before = jnp.cumsum(ns, axis=0) - ns  # sum of the smaller n
    j = jnp.argmax(before + ns * (d - jnp.arange(d, dtype=dt))[:, None] >= m[None], axis=0)
    r = jnp.ceil((m - jnp.take_along_axis(before, j[None], 0)[0]) / (d - j).astype(dt)) - 1.0
    k = (m - jnp.sum(jnp.minimum(n, r[None]), axis=0)).astype(jnp.int32) - 1
    left = jnp.sort(jnp.where(n > r[None], phase, jnp.inf), axis=0)
    sel = jnp.take_along_axis(left, jnp.clip(k, 0, d - 1)[None], 0)[0]
    return jnp.where(m > 0, h_end + r * t_unit + sel, h_end)


def _dram_time(p: Plan, size: jax.Array) -> jax.Array:
    """Seconds to write ``size`` bytes into the write buffer's DRAM (``buffer_dram_*``): ``tRCD + tCL``
    for each row opened, ``tRP`` between rows, and ``floor(size / burst / 2)`` transfers of ``1 / rate``.
    One row is MQSim's ``estimate_dram_access_time`` exactly (Data_Cache_Manager_Base); for more, MQSim
    multiplies by half the row count and divides the remainder by the transfer time, which this does not
    follow unless ``engine.buffer_dram_formula = mqsim`` asks for it: each row is opened, read out and
    precharged once.  (MQSim's remainder term is bytes / (bytes x ns) read as ns: ``rem * rate / burst``
    in units of 10^-18 s here.)"""
    rows = jnp.maximum(jnp.ceil(size / p.dram_row), 1.0)
    rate = jnp.where(p.dram_rate > 0, p.dram_rate, 1.0)
    each_row = (rows * (p.dram_trcd + p.dram_tcl) + (rows - 1.0) * p.dram_trp
                + jnp.floor(size / p.dram_burst / 2.0) / rate)
    # engine.buffer_dram_formula = mqsim: MQSim's arithmetic past one row (params: buffer_dram_formula)
    open_row = p.dram_trcd + p.dram_tcl
    mqsim = ((open_row + jnp.floor(p.dram_row / p.dram_burst / 2.0) / rate + p.dram_trp)
             * jnp.floor(size / p.dram_row / 2.0) + open_row
             + jnp.mod(size, p.dram_row) * rate / p.dram_burst * 1e-18)
    return jnp.where(p.dram_mqsim & (size > p.dram_row), mqsim, each_row)
