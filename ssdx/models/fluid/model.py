"""Fluid write-stream engine: host writes through the pSLC cache, direct native writes and folding.

One drive per call (no vmap inside); sweeps ``vmap`` :func:`simulate` / :func:`metrics`.

The scan runs over **host bytes**: step ``k`` writes ``Δ = total / n_steps`` bytes.  Within a step
the bytes are split *exactly* between the three write modes in the order the firmware uses them,
so phase boundaries fall where the capacity accounting puts them, independent of ``n_steps``:

1. **pSLC** — while the cache has room (below), at ``min(host, bus, dies·planes·page / t_prog_slc)``.
2. **direct native** — while free native blocks remain, at ``min(host, bus, dies·planes·page / t_prog)``.
3. **folding** (dynamic and hybrid modes) — no free blocks: each host byte is programmed natively and
   the firmware folds ``f = 1/(b-1)`` bytes of pSLC data into native blocks to free the raw space it
   needs (a pSLC byte occupies ``b`` raw bytes of a ``b``-bit die, so folding ``f`` frees
   ``(b-1)·f``).  Die time per host byte is ``(1+f)/(die_native·η_fold) + f·t_read + b·f·t_erase``
   per byte, the bus carries ``1 + 2f`` bytes (fold data goes out through the controller's ECC and
   back).  ``η_fold`` (``drive.fold_efficiency``) lumps fold scheduling and controller re-encoding
   overheads we do not model one by one.

Capacity accounting (all in bytes: ``b`` = bits per cell, ``U`` = user capacity, ``R`` = raw NAND,
``ρ`` = reserve fraction, ``A = R(1-ρ)`` usable raw, ``s``/``n`` = host bytes held in pSLC / native
blocks; raw use = ``b·s + n``; ``S`` = ``drive.static_slc_bytes``; ``C`` =
``drive.max_dynamic_slc_bytes``, host bytes the dynamic pSLC region may hold, ``+inf`` when 0):

* ``dynamic``: pSLC blocks are lent from the user-capacity zone only — a pSLC write is admitted while
  ``b·s + n + b·Δ <= U`` and ``s + Δ <= C``; the over-provisioning ``A - U`` is kept for native
  writes.  pSLC room ``min((U - b·s - n)/b, C - s)``.  An empty drive therefore caches ``min(U/b, C)``;
  at pre-fill ``p`` it caches ``min((1-p)·U/b, C)``.  Direct native writes continue while
  ``b·s + n < A`` (room ``A - b·s - n``); after that every write folds.  With a cap that binds the
  cache ends at ``C`` and direct native writes take the raw space the firmware did not lend
  (``A - pU - b·C`` from pre-fill ``p``); a cap ``C <= (A - U)/(b-1)`` means the drive never folds.
* ``static``: a fixed pSLC region of ``S`` bytes (``b·S`` raw) outside the native region: pSLC room
  ``S - s``, native room ``A - b·S - n``; never folds (``U + b·S <= A``).
* ``pure_slc``: the whole drive formatted as pSLC; capacity ``U/b``; never folds.
* ``pure_native``: no pSLC; capacity ``U``.
* ``hybrid`` (static + dynamic, e.g. Samsung's Intelligent TurboWrite; see ``ssdx.params``): a static
  region of ``S`` bytes (``b·S`` raw outside the native region, as ``static``) plus a dynamic region
  lent from the user-capacity zone (as ``dynamic``), holding at most ``C``.  With ``s_st = min(s, S)``
  static and ``s_dyn = s - s_st`` dynamic pSLC data, the native zone's raw use is
  ``n + b·s_dyn = b·s + n - b·s_st``.  The static region is filled first and emptied last: writes go
  to it while it has room, and folding (under a full drive or while idle) empties the dynamic region
  first — it is borrowed user space, and only folding it frees native-zone raw.  So the split follows
  from ``s`` alone and the room is again affine under a cap: pSLC room
  ``(S - s_st) + min((U - n - b·s_dyn)/b, C - s_dyn) = min(S + (U - b·s - n)/b, S + C - s)`` (the
  dynamic term is >= 0 while ``s < S``, since ``n <= U - s``).  Cache at pre-fill ``p``:
  ``S + min((1-p)·U/b, C)`` — the dynamic part shrinks with ``p``, the static part stays.  Direct
  native writes then use the native zone's remaining raw, ``A - b·S - (n + b·s_dyn) = A - b·s - n``
  (once the static region is full; while it is not, the pSLC room is at least ``S - s`` and no byte
  goes native).  When that runs out every write folds ``f`` bytes of *dynamic* pSLC data, the only
  folding that frees native-zone raw; the accounting always leaves enough (while folding, raw use is
  ``A`` and host data at most ``U``, so ``(b-1)·s_dyn >= A - U - (b-1)·S >= S``, from
  ``U + b·S <= A``).  The static region's data is folded only while the host is idle.

Idle gaps: after every ``burst_bytes`` of host writes the host is idle ``idle_s``; the firmware folds
pSLC data to native at the idle fold rate (``drive.idle_fold_bytes_per_s`` when set, else the die-
and bus-limited rate of :func:`rates`), which frees pSLC room (cache recovery): an idle gap of ``t``
seconds recovers ``min(s, rate·t)`` bytes (in ``hybrid``: from the dynamic region first, then the
static one; in ``dynamic``, from the data past the first region first).  Idle time is applied at the end
of the step in which the burst boundary falls.

**A cache with two speeds** (``drive.first_slc_t_prog_us``, ``drive.first_slc_gb``).  Reviews measure
caches whose speed changes part-way: "almost 5 GB/s ... sustained until 54 GB have been written, after
that speeds drop slightly to 3.5 GB/s" until the cache ends at 460 GB (TechPowerUp, "HP FX700 2 TB
Review", pSLC cache page).  The cache's *first region* — the static region of ``static`` and ``hybrid``,
or the first ``first_slc_gb`` of a ``dynamic`` cache — is written first, at its own page program time;
the rest at ``t_prog_slc``.  The accounting is unchanged: the first region holds ``min(s, S1)`` of the
pSLC data ``s`` (``S1`` its size), so a step's pSLC bytes split at ``S1 - s`` and their time is
``a_1/r_1 + (a - a_1)/r_slc``.  The model states the speeds, not why they differ (a static region of
dedicated blocks, a first region spread over more planes, a controller limit); the fit holds both
program times to the published pSLC bounds (``ssdx.models.fluid.bounds``).

**Folding while writing** (``drive.fold_while_writing``).  A drive whose pSLC cache is full may keep
writing the host's data into pSLC blocks and fold pSLC data to native blocks at the same time, instead
of writing natively: AnandTech describes the Intel 660p's cache leaving "a large backlog of work" to
move into QLC, TechPowerUp's reviews a drive that "will probably juggle some out of its write cache at
the same time", and Intel lists "SLC-write-through" among the features of its 5-bit/cell die ("A 1.67Tb,
5b/Cell Flash Memory Fabricated in 192-Layer Floating Gate 3D-NAND Technology ...", IEEE Solid-State
Circuits Letters, 2023).  Past the cache each host byte is then one pSLC program plus one folded byte
(read, native program at ``η_fold``, erase of the ``b`` raw bytes freed): die time
``t_slc/(P·page) + t_prog/(η·P·page) + t_read_slc/(P·page) + b·t_erase/(P·block)`` per byte (``P``
planes of all dies; the first region's pSLC time where the cache has one), and three bytes on the
channels (the host's in, the fold's out to the controller and back).  The bytes move as a direct native
write does (``+b`` raw for the pSLC byte, ``-(b-1)`` for the one folded), so the cache, direct and
folding boundaries stay where the accounting puts them; only the rate of the regime past the cache
changes, from ``P·page/t_prog`` to the reciprocal of that sum.  Its cost is derived from the NAND's
times, not a parameter.

**Folding paced from the cache's end** (``drive.paced_folding``, ``dynamic`` and ``hybrid``).  The
accounting above folds only once free raw NAND runs out, which gives a drive two speeds past its cache:
direct writes, then folding.  Many reviews measure one: TechPowerUp's write-intensity pages describe a
drive that, its cache full, "will have to write data directly to flash, and it will probably juggle some
out of its write cache at the same time", and report one post-cache speed to the end of the fill (e.g.
"Samsung 980 1 TB Review", "Crucial T500 2 TB Review").  A firmware that starts folding at the cache's
end must fold, before the drive is full, the pSLC data whose raw space the rest of the user capacity
needs.  With ``h = U - s - n`` host bytes still free and native room ``r_n`` (above), that is
``D/(b-1)`` bytes, ``D = max(h - r_n, 0)``, and paced evenly over the ``h`` bytes each host byte folds
``g = D/((b-1)·h)`` pSLC bytes.  ``g`` is a function of the state alone and stays constant along the
fill (``D`` and ``h`` fall in proportion), so the drive reaches its capacity exactly as raw NAND runs
out: one regime past the cache at ``min(host, bus/(β + 2g), 1/(t_past + g·t_fold))`` (``β`` = 1 byte on
the channels per host byte, 3 when folding while writing; ``t_past`` the die time per byte past the cache,
``t_fold`` per folded byte as idle folding), the same total work as folding at the end.  An idle gap that
folds data lowers ``g`` for the bytes after it.  A cap that leaves ``D = 0`` folds nothing, as before.

Host ceiling: ``min(usable link rate, QD · block / t_cmd)``, ``t_cmd = overhead + block/link
(+ one pSLC map-page read for random writes on a DRAM-less drive)`` (Little's law).

All quantities SI: bytes, seconds, bytes/s.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ssdx.core.stats import percentile_low
from ssdx.params import Drive, Workload

DYNAMIC, STATIC, PURE_SLC, PURE_NATIVE, HYBRID = 0, 1, 2, 3, 4  # indices into params.SLC_MODES
PHASES = ("pslc", "direct_native", "folding")


class Rates(NamedTuple):
    """Sustained rates, bytes/s.  ``fold`` is in host bytes/s; ``idle_fold`` in folded bytes/s (the
    drive's ``idle_fold_bytes_per_s`` when set, else the die- and bus-limited rate); ``slc`` is the
    pSLC rate (all of ``pure_slc``'s), ``slc_first`` the cache's first region's
    (:func:`first_region_bytes`); ``native`` is the rate past the cache: direct native programs, or
    writes through pSLC folded at once (``drive.fold_while_writing``)."""

    host: jax.Array
    slc: jax.Array
    native: jax.Array
    fold: jax.Array
    idle_fold: jax.Array
    slc_first: jax.Array


class State(NamedTuple):
    slc_bytes: jax.Array  # host data held in pSLC blocks
    native_bytes: jax.Array  # host data held in native blocks
    raw_used_bytes: jax.Array  # b·s + n, carried so folding (which leaves it unchanged) adds no rounding
    written_bytes: jax.Array  # host bytes written in this run
    time_s: jax.Array  # elapsed time, idle included
    mode_bytes: tuple  # 3 x cumulative host bytes written in pSLC / direct native / folding mode
    mode_time_s: tuple  # 3 x cumulative busy seconds in each mode (tuples: no minor axis of 3 in a batch)
    paced_bytes: jax.Array  # pSLC bytes folded paced since the last idle gap (drive.paced_folding)


class StepOut(NamedTuple):
    written_bytes: jax.Array  # cumulative host bytes at the end of the step
    time_s: jax.Array  # cumulative time at the end of the step
    speed: jax.Array  # host bytes/s over the busy time of the step
    slc_bytes: jax.Array
    native_bytes: jax.Array
    mode_bytes: jax.Array  # (3,) bytes written in pSLC / direct native / folding mode
    mode_time_s: jax.Array  # (3,) busy seconds in each mode
    idle_folded_bytes: jax.Array
    first_bytes: jax.Array  # of the pSLC bytes, those written to the cache's first region (written first)
    first_time_s: jax.Array  # busy seconds of those (part of mode_time_s[0])


def fold_ratio(drive: Drive) -> jax.Array:
    """Bytes of pSLC data folded per host byte once free blocks are exhausted: 1/(b-1)."""
    b = drive.nand.bits_per_cell
    return 1.0 / jnp.maximum(b - 1.0, 1.0)


class DieTime(NamedTuple):
    """Seconds of the whole die array's time per host byte in each mode (all dies busy).

    ``slc``/``native``: one program; ``fold``: the native program of the host byte plus folding
    ``f`` pSLC bytes (read, re-program at ``η_fold``, erase); ``idle_fold``: per folded byte;
    ``slc_first``: one program in the cache's first region; ``through``: a host byte written through
    pSLC and folded at once (``drive.fold_while_writing``): its pSLC program plus one folded byte.
    The reciprocal is the die-limited rate; ``ssdx.models.thermal.power`` charges die energy per second of it.
    """

    slc: jax.Array
    native: jax.Array
    fold: jax.Array
    idle_fold: jax.Array
    slc_first: jax.Array
    through: jax.Array


def first_region_bytes(drive: Drive) -> jax.Array:
    """Host bytes of the cache's first region, written first at ``drive.first_slc_t_prog_us``: the static
    region in ``static`` and ``hybrid``, ``drive.first_slc_bytes`` of a ``dynamic`` cache, else 0."""
    mode = drive.slc_mode
    return jnp.where((mode == STATIC) | (mode == HYBRID), drive.static_slc_bytes,
                     jnp.where(mode == DYNAMIC, drive.first_slc_bytes, 0.0))


def has_first_region(drive: Drive) -> jax.Array:
    """Whether the drive's cache has a first region (:func:`first_region_bytes` > 0)."""
    return first_region_bytes(drive) > 0


def die_time(drive: Drive) -> DieTime:
    """Die-array seconds per host byte of each write mode, from NAND timing and parallelism."""
    nand = drive.nand
    planes = drive.dies * drive.planes_per_die
    read_s_per_byte = nand.t_read_slc_us * 1e-6 / (planes * nand.page_bytes)
    erase_s_per_raw_byte = nand.t_erase_us * 1e-6 / (planes * nand.block_bytes)
    native_s = nand.t_prog_us * 1e-6 / (planes * nand.page_bytes)
    b = nand.bits_per_cell
    f = fold_ratio(drive)
    slc = nand.t_prog_slc_us * 1e-6 / (planes * nand.page_bytes)
    t_first = jnp.where(drive.first_slc_t_prog_us > 0, drive.first_slc_t_prog_us, nand.t_prog_slc_us)
    slc_first = t_first * 1e-6 / (planes * nand.page_bytes)
    idle_fold = native_s / drive.fold_efficiency + read_s_per_byte + b * erase_s_per_raw_byte
    return DieTime(
        slc=slc,
        native=native_s,
        fold=((1.0 + f) * native_s / drive.fold_efficiency + f * read_s_per_byte
              + b * f * erase_s_per_raw_byte),
        idle_fold=idle_fold,
        slc_first=slc_first,
        through=jnp.where(has_first_region(drive), slc_first, slc) + idle_fold,
    )


def rates(drive: Drive, workload: Workload) -> Rates:
    """Host-visible write rates of each mode from NAND timing, parallelism and ceilings, bytes/s.

    ``idle_fold``: a set ``drive.idle_fold_bytes_per_s`` (> 0) is taken as given (firmware recovers its
    cache at a rate of its choosing); 0 selects the limit of the dies and the bus.
    """
    nand = drive.nand
    bs = workload.block_bytes
    t_cmd = (drive.cmd_overhead_s + bs / drive.host_bytes_per_s
             + workload.random * (1.0 - drive.dram) * nand.t_read_slc_us * 1e-6)
    host = jnp.minimum(drive.host_bytes_per_s, workload.queue_depth * bs / t_cmd)
    bus = drive.bus_bytes_per_s
    f = fold_ratio(drive)
    die = die_time(drive)
    native = jnp.minimum(jnp.minimum(host, bus), 1.0 / die.native)
    # through pSLC: the host byte in, the folded byte out to the controller and back in
    through = jnp.minimum(jnp.minimum(host, bus / 3.0), 1.0 / die.through)
    return Rates(
        host=host,
        slc=jnp.minimum(jnp.minimum(host, bus), 1.0 / die.slc),
        native=jnp.where(fold_through(drive), through, native),
        fold=jnp.minimum(jnp.minimum(host, bus / (1.0 + 2.0 * f)), 1.0 / die.fold),
        idle_fold=jnp.where(drive.idle_fold_bytes_per_s > 0, drive.idle_fold_bytes_per_s,
                            jnp.minimum(bus / 2.0, 1.0 / die.idle_fold)),
        slc_first=jnp.minimum(jnp.minimum(host, bus), 1.0 / die.slc_first),
    )


def fold_through(drive: Drive) -> jax.Array:
    """Whether writes past the cache go through pSLC with foreground folding: ``fold_while_writing`` set
    on a mode that has a pSLC region and native blocks (not ``pure_slc`` or ``pure_native``)."""
    return ((drive.fold_while_writing > 0) & (drive.slc_mode != PURE_SLC)
            & (drive.slc_mode != PURE_NATIVE))


def capacity_bytes(drive: Drive) -> jax.Array:
    """User-visible capacity: ``U/b`` in pure_slc mode, else ``U``."""
    return jnp.where(drive.slc_mode == PURE_SLC, drive.user_bytes / drive.nand.bits_per_cell,
                     drive.user_bytes)


def usable_raw_bytes(drive: Drive) -> jax.Array:
    """Raw NAND less the reserve (firmware, mapping journal, minimum free-block pool)."""
    return drive.raw_bytes * (1.0 - drive.reserve_fraction)


def init(drive: Drive, workload: Workload) -> State:
    """Pre-filled data sits in native blocks (pSLC blocks in pure_slc mode), folded long ago."""
    pre = workload.prefill_fraction * capacity_bytes(drive)
    pure_slc = drive.slc_mode == PURE_SLC
    zero = jnp.zeros_like(pre)
    s0, n0 = jnp.where(pure_slc, pre, zero), jnp.where(pure_slc, zero, pre)
    return State(slc_bytes=s0, native_bytes=n0, raw_used_bytes=drive.nand.bits_per_cell * s0 + n0,
                 written_bytes=zero, time_s=zero, mode_bytes=(zero, zero, zero),
                 mode_time_s=(zero, zero, zero), paced_bytes=zero)


def total_bytes(drive: Drive, workload: Workload) -> jax.Array:
    """Host bytes this run writes: ``fill_fraction`` of the capacity left free by the pre-fill."""
    return workload.fill_fraction * capacity_bytes(drive) * (1.0 - workload.prefill_fraction)


class Plan(NamedTuple):
    """Per-drive constants of a run, computed once outside the scan.

    Rooms (bytes) are affine in the state, under a cap: ``room_slc = min(slc_a - slc_cs·s -
    slc_craw·raw, cap_a - cap_cs·s)`` and ``room_native = nat_c - nat_dn·n - nat_draw·raw``
    (``raw = b·s + n``); the coefficients encode the pSLC mode (module docstring), so the scan body has
    no per-mode branches.  ``cap_a`` is ``+inf`` without a dynamic-region cap, which keeps the ``min``
    exact (see :func:`slc_room`, :func:`native_room`).
    """

    rates: Rates
    delta: jax.Array  # host bytes per step
    tol: jax.Array  # rounding slack, bytes (see rounding_tolerance)
    bits: jax.Array
    fold: jax.Array  # pSLC bytes folded per host byte in folding mode, 1/(b-1)
    slc_a: jax.Array
    slc_cs: jax.Array
    slc_craw: jax.Array
    cap_a: jax.Array  # host bytes; +inf when the dynamic region is uncapped (or absent)
    cap_cs: jax.Array
    nat_c: jax.Array
    nat_dn: jax.Array
    nat_draw: jax.Array
    can_idle_fold: jax.Array
    first_cap: jax.Array  # host bytes of the cache's first region (first_region_bytes), written first
    paced: jax.Array  # 1.0 when folding is paced from the cache's end (drive.paced_folding, dynamic/hybrid)
    host_cap: jax.Array  # host bytes the drive holds (user capacity), for the paced fold ratio
    past_s: jax.Array  # die seconds per host byte past the cache (direct native, or through pSLC)
    past_bus: jax.Array  # channel bytes per host byte past the cache (1, or 3 through pSLC)
    fold_s: jax.Array  # die seconds per folded byte (DieTime.idle_fold)
    bus: jax.Array  # channel bytes/s


def rounding_tolerance(drive: Drive, delta: jax.Array) -> jax.Array:
    """Rounding slack in bytes (float32 on terabytes): ``min(1e-5·U, 1e-3·Δ)``.

    A room under it counts as full; a room short of the bytes to place by less than it takes them
    all, so a phase that ends on a step boundary leaves no stray bytes for the next mode.  Being under
    a thousandth of a step, it never lets a full mode take a step.  (Raw use is carried in the state
    and folding adds exactly zero to it, so the folding steady state does not drift out of "full".)
    """
    return jnp.minimum(1e-5 * drive.user_bytes, 1e-3 * delta)


def plan(drive: Drive, workload: Workload, n_steps: int) -> Plan:
    """Rates, step size, tolerance and the room coefficients of this drive's pSLC mode."""
    b, u, mode = drive.nand.bits_per_cell, drive.user_bytes, drive.slc_mode
    usable, static = usable_raw_bytes(drive), drive.static_slc_bytes
    dyn, sta, psl, pna = (mode == DYNAMIC), (mode == STATIC), (mode == PURE_SLC), (mode == PURE_NATIVE)
    hyb = mode == HYBRID
    one, zero = jnp.ones_like(u), jnp.zeros_like(u)
    cap = drive.max_dynamic_slc_bytes
    lends = dyn | hyb  # modes with a dynamic region
    capped = lends & (cap > 0)
    delta = total_bytes(drive, workload) / n_steps
    die = die_time(drive)
    return Plan(
        rates=rates(drive, workload),
        delta=delta,
        tol=rounding_tolerance(drive, delta),
        bits=b,
        fold=fold_ratio(drive),
        slc_a=jnp.select([dyn | psl, sta, hyb], [u / b, static, static + u / b], zero),
        slc_cs=jnp.where(sta | psl, one, zero),
        slc_craw=jnp.where(lends, 1.0 / b, zero),
        cap_a=jnp.where(capped, jnp.where(hyb, static, zero) + cap, jnp.inf),
        cap_cs=jnp.where(lends, one, zero),
        nat_c=jnp.select([dyn | pna | hyb, sta], [usable, usable - b * static], zero),
        nat_dn=jnp.where(sta | pna, one, zero),
        nat_draw=jnp.where(lends, one, zero),
        can_idle_fold=jnp.where(dyn | sta | hyb, one, zero),
        first_cap=first_region_bytes(drive) + zero,
        paced=jnp.where(lends & (drive.paced_folding > 0), one, zero),
        host_cap=u + zero,
        past_s=jnp.where(fold_through(drive), die.through, die.native),
        past_bus=jnp.where(fold_through(drive), 3.0 * one, one),
        fold_s=die.idle_fold + zero,
        bus=drive.bus_bytes_per_s + zero,
    )


def slc_room(p: Plan, s: jax.Array, raw: jax.Array, paced: jax.Array | float = 0.0) -> jax.Array:
    """Host bytes the pSLC cache can still take, from pSLC data ``s`` and raw use ``raw`` (bytes; may be
    negative: full).  ``min`` with the cap term, ``+inf`` when uncapped, is exact (no rounding).  The
    cap counts the bytes folded paced since the last idle gap (``paced``) as still held: folding from the
    cache's end frees raw NAND for the writes past the cache, it does not reopen the cache."""
    return jnp.minimum(p.slc_a - p.slc_cs * s - p.slc_craw * raw, p.cap_a - p.cap_cs * (s + paced))


def native_room(p: Plan, n: jax.Array, raw: jax.Array) -> jax.Array:
    """Host bytes direct native writes can still take, from native data ``n`` and raw use ``raw``
    (bytes; may be negative: full)."""
    return p.nat_c - p.nat_dn * n - p.nat_draw * raw


def _admit(room: jax.Array, amount: jax.Array, tol: jax.Array) -> jax.Array:
    """Bytes of ``amount`` that a mode with ``room`` takes, with the rounding slack ``tol``."""
    room = jnp.where(room > tol, room, 0.0)
    return jnp.where((room > 0) & (room >= amount - tol), amount, jnp.minimum(room, amount))


def paced_ratio(p: Plan, s: jax.Array, n: jax.Array, raw: jax.Array) -> jax.Array:
    """pSLC bytes folded per host byte written past the cache under paced folding (module docstring):
    ``g = max(h - r_n, 0)/((b-1)·h)``, ``h`` the host bytes still free; 0 when not paced or full."""
    h = p.host_cap - s - n
    has_room = h > p.tol
    deficit = jnp.maximum(h - native_room(p, n, raw), 0.0)
    g = deficit / (jnp.maximum(p.bits - 1.0, 1.0) * jnp.where(has_room, h, 1.0))
    return jnp.where((p.paced > 0) & has_room, g, 0.0)


def past_cache_rate(p: Plan, g: jax.Array) -> jax.Array:
    """Host bytes/s past the cache while folding ``g`` pSLC bytes per host byte; ``rates.native`` at
    ``g = 0`` (exactly: the paced formula is taken only where ``g > 0``)."""
    r = p.rates
    paced = jnp.minimum(jnp.minimum(r.host, p.bus / (p.past_bus + 2.0 * g)), 1.0 / (p.past_s + g * p.fold_s))
    return jnp.where(g > 0, paced, r.native)


def _write(p: Plan, s: jax.Array, n: jax.Array, raw: jax.Array, pf: jax.Array,
           amount: jax.Array) -> tuple[jax.Array, ...]:
    """Place ``amount`` host bytes: pSLC first (its first region before the rest), then direct
    native (with paced folding where ``drive.paced_folding``), then folding.

    Returns the new ``(s, n, raw_used, paced_bytes)``, the bytes and busy seconds of each mode, shape (3,),
    and the pSLC bytes that went to the cache's first region with their busy seconds.  Folding
    ``f = 1/(b-1)`` bytes per host byte leaves raw use unchanged: ``1 + f - b·f = 0``.  Writing through
    pSLC and folding at once (``drive.fold_while_writing``) moves the same bytes as a direct native write
    (one pSLC byte written, one folded: raw use ``+b - (b-1) = +1``, native data ``+1``), so it is the
    direct mode at its own rate.  Paced folding moves ``g`` pSLC bytes per byte past the cache to native
    blocks (raw use ``-(b-1)·g``; :func:`paced_ratio`), at :func:`past_cache_rate`.
    """
    a_slc = _admit(slc_room(p, s, raw, pf), amount, p.tol)
    a_st = jnp.minimum(a_slc, jnp.maximum(p.first_cap - s, 0.0))  # the first region holds min(s, cap)
    raw = raw + p.bits * a_slc  # the pSLC bytes just placed use raw space too
    s = s + a_slc
    rest = amount - a_slc
    room = native_room(p, n, raw)
    g = paced_ratio(p, s, n, raw)
    # paced, each byte past the cache frees (b-1)·g raw as it goes: the room is the free host bytes
    a_dir = _admit(jnp.where(g > 0, p.host_cap - s - n, room), rest, p.tol)
    paced = jnp.minimum(g * a_dir, s)
    a_fold = rest - a_dir
    folded = jnp.minimum(p.fold * a_fold, s - paced)  # the accounting guarantees enough pSLC data
    s = s - paced - folded
    n = n + a_dir + paced + a_fold + folded
    r = p.rates
    t_st = a_st / r.slc_first
    # the first region's extra time over the rest's: exactly 0 when the two regions share a speed
    t = (a_slc / r.slc + a_st * (1.0 / r.slc_first - 1.0 / r.slc), a_dir / past_cache_rate(p, g),
         a_fold / r.fold)
    return s, n, raw + a_dir - (p.bits - 1.0) * paced, pf + paced, (a_slc, a_dir, a_fold), t, (a_st, t_st)


def step(p: Plan, workload: Workload, state: State, k: jax.Array,
         idle_gaps: bool = True) -> tuple[State, StepOut]:
    """Write step ``k``'s ``Δ`` host bytes, with the idle gap at the burst boundary inside it.

    The step is split at its first burst boundary: bytes before it, then the idle time (the firmware
    folds pSLC data back to native blocks), then the rest.  Exact when ``Δ <= burst_bytes``; with
    several boundaries in one step their idle time is taken together at the first.  ``idle_gaps=False``
    (static) drops the split for batches in which no configuration has idle gaps.
    """
    delta = p.delta
    w0, w1 = k * delta, (k + 1.0) * delta  # from the step index: no accumulated rounding
    s, n, raw, pf = state.slc_bytes, state.native_bytes, state.raw_used_bytes, state.paced_bytes
    if idle_gaps:
        burst = workload.burst_bytes
        has_burst = burst > 0
        safe = jnp.where(has_burst, burst, 1.0)
        gaps = jnp.where(has_burst, jnp.floor(w1 / safe + 1e-6) - jnp.floor(w0 / safe + 1e-6), 0.0)
        boundary = (jnp.floor(w0 / safe + 1e-6) + 1.0) * safe
        first = jnp.where(gaps > 0, jnp.clip(boundary - w0, 0.0, delta), delta)
        s, n, raw, pf, b1, t1, st1 = _write(p, s, n, raw, pf, first)
        idle = gaps * workload.idle_s
        idle_fold = p.can_idle_fold * jnp.minimum(s, p.rates.idle_fold * idle)
        s, n, raw = s - idle_fold, n + idle_fold, raw - (p.bits - 1.0) * idle_fold
        pf = jnp.where(idle > 0, 0.0, pf)  # an idle gap gives the cache back
        s, n, raw, pf, b2, t2, st2 = _write(p, s, n, raw, pf, delta - first)
        mode_bytes = tuple(x + y for x, y in zip(b1, b2))
        times = tuple(x + y for x, y in zip(t1, t2))
        first = (st1[0] + st2[0], st1[1] + st2[1])
    else:
        s, n, raw, pf, mode_bytes, times, first = _write(p, s, n, raw, pf, delta)
        idle = idle_fold = jnp.zeros_like(delta)
    busy = times[0] + times[1] + times[2]  # explicit order: no reduction whose order could vary
    time_s = state.time_s + busy + idle
    new = State(slc_bytes=s, native_bytes=n, raw_used_bytes=raw, written_bytes=w1, time_s=time_s,
                mode_bytes=tuple(x + y for x, y in zip(state.mode_bytes, mode_bytes)),
                mode_time_s=tuple(x + y for x, y in zip(state.mode_time_s, times)), paced_bytes=pf)
    out = StepOut(written_bytes=w1, time_s=time_s, speed=delta / jnp.maximum(busy, 1e-30),
                  slc_bytes=s, native_bytes=n, mode_bytes=jnp.stack(mode_bytes),
                  mode_time_s=jnp.stack(times), idle_folded_bytes=idle_fold, first_bytes=first[0],
                  first_time_s=first[1])
    return new, out


def run(drive: Drive, workload: Workload, n_steps: int = 512) -> tuple[State, StepOut]:
    """Scan :func:`step` over ``n_steps`` equal slices of the run's host bytes: (final state, outputs)."""
    p = plan(drive, workload, n_steps)

    def body(state, k):
        return step(p, workload, state, k)

    return jax.lax.scan(body, init(drive, workload), jnp.arange(n_steps, dtype=p.delta.dtype))


def simulate(drive: Drive, workload: Workload, n_steps: int = 512) -> StepOut:
    """Per-step outputs of :func:`run`.  Leaves have leading axis ``n_steps``."""
    return run(drive, workload, n_steps)[1]


def metrics(drive: Drive, workload: Workload, n_steps: int = 512,
            idle_gaps: bool = True) -> dict[str, jax.Array]:
    """Scalar figures of one run (for sweeps): GB = 1e9 bytes, MB/s = 1e6 bytes/s, seconds.

    Scans :func:`step` keeping only the per-step speed; totals and the cache size are carried
    (sequential sums, so a configuration's figures are bit-identical whatever batch computes them).
    ``cache_gb`` is the host data written before the first byte that did not go to pSLC.
    ``idle_gaps=False`` (static) is valid only when no configuration has idle gaps (see :func:`step`).
    """
    p = plan(drive, workload, n_steps)
    r, delta = p.rates, p.delta

    def body(carry, k):
        state, cache, found = carry
        new, out = step(p, workload, state, k, idle_gaps)
        non_slc = out.mode_bytes[1] + out.mode_bytes[2]
        hit = (non_slc > p.tol) & ~found
        cache = jnp.where(hit, out.written_bytes - non_slc, cache)
        return (new, cache, found | hit), out.speed

    zero = jnp.zeros_like(delta)
    carry0 = (init(drive, workload), zero, jnp.zeros((), bool))
    (final, cache, found), speed = jax.lax.scan(body, carry0, jnp.arange(n_steps, dtype=delta.dtype))
    mode_bytes = final.mode_bytes
    busy = final.mode_time_s[0] + final.mode_time_s[1] + final.mode_time_s[2]
    written = final.written_bytes
    cache = jnp.where(found, cache, written)
    return {
        "capacity_gb": capacity_bytes(drive) / 1e9,
        "raw_gb": drive.raw_bytes / 1e9,
        "written_gb": written / 1e9,
        "time_s": final.time_s,
        "mean_mb_s": written / busy / 1e6,
        "min_mb_s": jnp.min(speed) / 1e6,
        "p5_mb_s": percentile_low(speed, 5.0) / 1e6,
        "cache_gb": cache / 1e9,
        "pslc_gb": mode_bytes[0] / 1e9,
        "direct_gb": mode_bytes[1] / 1e9,
        "folding_gb": mode_bytes[2] / 1e9,
        "pslc_mb_s": r.slc / 1e6,
        "native_mb_s": r.native / 1e6,
        "folding_mb_s": r.fold / 1e6,
        "host_mb_s": r.host / 1e6,
    }
