"""Synthetic request streams in the trace array form (``ssdx.workloads.traces.Chunk``).

**windows11_boot** — the Windows 11 cold-boot command log of "Storage requirements suited to an OS
installation (2/3)" (Qiita, in Japanese, posted 2022-03-15), regenerated with its published totals exactly (MB
= 1e6 bytes, sizes in whole 512-byte sectors, so a total is exact to the log's 0.01 MB precision):

| | commands | sequential / random commands | bytes | sequential / random bytes |
|---|---|---|---|---|
| read | 40,553 | 6 / 40,547 | 1029.5 MB | 0.14 / 1029.36 MB |
| write | 4,938 | 2 / 4,936 | 96.2 MB | 0.02 / 96.18 MB |

"Sequential" is the article's rule (``ssdx.workloads.analyse``): the same type as the command before and
LBA-contiguous and increasing.  What the log does not give is assumed and labelled:

* command sizes: a 4 KiB-granular distribution (half of the commands 4 KiB, the rest 8 KiB … 1 MiB,
  geometric), scaled by whole sectors so each type's byte total is exact (assumption: boot I/O is
  dominated by 4 KiB page-ins with larger file reads; the log gives only totals);
* order: writes interleaved uniformly at random among the reads;
* addresses: uniformly random 4 KiB-aligned offsets in a 240 GB drive (the article's logging drive),
  redrawn wherever they would accidentally continue the previous command; the 6 + 2 sequential
  commands continue the command before them;
* timing: none (a boot is dependency-bound, replayed at QD1).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ssdx.workloads.traces import READ, SECTOR, WRITE, Chunk

MB = 1e6
BOOT = {  # the boot log's totals (module docstring)
    READ: {"commands": 40_553, "sequential": 6, "bytes_mb": 1029.5, "sequential_mb": 0.14},
    WRITE: {"commands": 4_938, "sequential": 2, "bytes_mb": 96.2, "sequential_mb": 0.02},
}
DRIVE_BYTES = 240e9


def _sizes(rng: np.random.Generator, n: int, total_sectors: int) -> np.ndarray:
    """``n`` command sizes in sectors summing to ``total_sectors``: whole 4 KiB units (8 sectors) drawn
    from the docstring's distribution and scaled to the total, the sub-4 KiB remainder on one command."""
    k = np.where(rng.random(n) < 0.5, 0, 1 + rng.geometric(0.45, n).clip(max=8))  # 4 KiB x 2**k
    units = 2 ** k
    target = total_sectors // 8
    scaled = np.maximum(np.round(units * target / units.sum()), 1).astype(np.int64)
    while (diff := target - int(scaled.sum())) != 0:  # move whole units until the total is exact
        can = np.flatnonzero(scaled > 1) if diff < 0 else np.arange(n)
        idx = rng.choice(can, size=min(abs(diff), len(can)), replace=False)
        scaled[idx] += np.sign(diff)
    sectors = 8 * scaled
    sectors[rng.integers(n)] += total_sectors - 8 * target
    return sectors


def windows11_boot(seed: int = 0) -> Chunk:
    """The Windows 11 boot log as a request stream (module docstring); ``time_s`` is NaN (QD1 replay)."""
    rng = np.random.default_rng(seed)
    n_r, n_w = BOOT[READ]["commands"], BOOT[WRITE]["commands"]
    n = n_r + n_w
    op = np.full(n, READ, np.int8)
    op[rng.choice(n, n_w, replace=False)] = WRITE
    size = np.zeros(n, np.int64)
    seq = np.zeros(n, bool)
    for kind, spec in BOOT.items():
        idx = np.flatnonzero(op == kind)
        # sequential commands: ones whose predecessor has the same type
        cand = idx[(idx > 0) & (op[np.maximum(idx - 1, 0)] == kind)]
        pick = np.sort(rng.choice(cand, spec["sequential"], replace=False))
        seq[pick] = True
        seq_total = int(round(spec["sequential_mb"] * MB / SECTOR))
        rand_total = int(round(spec["bytes_mb"] * MB / SECTOR)) - seq_total
        size[pick] = _sizes(rng, len(pick), seq_total)
        rest = idx[~seq[idx]]
        size[rest] = _sizes(rng, len(rest), rand_total)
    size *= SECTOR
    slots = int(DRIVE_BYTES // 4096)
    offset = rng.integers(0, slots, n).astype(np.int64) * 4096
    for i in range(n):
        end_prev = offset[i - 1] + size[i - 1] if i else -1
        if seq[i]:
            offset[i] = end_prev
        else:
            while i and op[i] == op[i - 1] and offset[i] == end_prev:
                offset[i] = int(rng.integers(0, slots)) * 4096
    return Chunk(time_s=np.full(n, np.nan), op=op, offset=offset, size=size, line=np.arange(1, n + 1))


def seed_method_difference_s(read_commands: int = 40_000, write_commands: int = 5_000,
                             read_diff_us: float = 30.0, write_diff_us: float = 200.0) -> float:
    """The boot-log article's back-of-envelope SATA-vs-PCIe boot-time difference, s (module docstring).

    Its assumptions: a boot is dependency-bound (QD1); a 4 KB random QD1 read takes ~40 µs on SATA
    (100 MB/s) and a third of that on PCIe, "take a 30 µs difference"; QD1 random writes are ~10× slower
    than reads, "take a 200 µs difference"; ~40,000 reads and ~5,000 writes.  Defaults reproduce its
    2.2 s; with the log's exact counts (40,553 and 4,938) it is 2.20 s.
    """
    return read_commands * read_diff_us * 1e-6 + write_commands * write_diff_us * 1e-6


# ------------------------------------------------------------------------------------------ fio-like
#
# The spatial side of a fio job (fio HOWTO, "I/O type", "Block size" and random_distribution): which
# requests, of what size, where.  Timing, job merging and the job file are ``ssdx.workloads.fio``'s.

@functools.lru_cache(maxsize=64)
def _zeta(n: int, theta: float) -> float:
    """``Σ_{i=1..n} i^-θ``: exact to 10^6 terms, then Euler–Maclaurin for the tail."""
    m = min(n, 1_000_000)
    s = float(np.sum(np.arange(1, m + 1, dtype=np.float64) ** -theta))
    if n > m:  # ∫_m^n x^-θ dx + (f(n) - f(m))/2 + (f'(n) - f'(m))/12
        a, b = float(m), float(n)
        integral = np.log(b / a) if theta == 1.0 else (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
        s += integral + (b ** -theta - a ** -theta) / 2 - theta * (b ** (-theta - 1) - a ** (-theta - 1)) / 12
    return s


def zipf_ranks(rng: np.random.Generator, count: int, n: int, theta: float) -> np.ndarray:
    """``count`` ranks in ``[0, n)`` with P(rank k) ≈ (k + 1)^-θ / ζ(n, θ), 0 ≤ θ < 1 (θ = 0 uniform).

    Gray et al., "Quickly generating billion-record synthetic databases", SIGMOD 1994 — the generator
    behind fio's ``random_distribution=zipf:θ``: exact for the two hottest ranks and a continuous
    approximation beyond (rank 3 of 1,000 at θ = 0.9 comes out ~13 % too frequent); the share of the
    hottest 10 % of ranks is within ~1 point of the exact Zipf share (tested).  fio uses the same formula
    for θ > 1 (:class:`Distribution` allows it)."""
    if theta == 0.0:
        return rng.integers(0, n, count)
    if not 0.0 < theta < 1.0:
        raise ValueError(f"zipf theta must lie in [0, 1), got {theta}")
    return _gray_zipf(rng, count, n, theta)


def _gray_zipf(rng: np.random.Generator, count: int, n: int, theta: float) -> np.ndarray:
    """Gray et al.'s Zipf generator (:func:`zipf_ranks`) for any θ > 0, θ ≠ 1, as fio's ``zipf_next``."""
    zetan, zeta2 = _zeta(n, theta), _zeta(2, theta)
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    u = rng.random(count)
    uz = u * zetan
    tail = (n * (eta * u - eta + 1.0) ** alpha).astype(np.int64)
    ranks = np.where(uz < 1.0, 0, np.where(uz < 1.0 + 0.5**theta, 1, np.minimum(tail, n - 1)))
    return ranks.astype(np.int64)


def pareto_ranks(rng: np.random.Generator, count: int, n: int, h: float) -> np.ndarray:
    """``count`` ranks in ``[0, n)`` of fio's ``random_distribution=pareto:h`` (0 < h < 1): rank
    ``⌊(n - 1)·u^p⌋`` with u uniform in [0, 1) and ``p = ln h / ln(1 - h)`` (fio ``pareto_next``).

    Closed form: the hottest fraction x of the ranks draws ``x^(ln(1-h) / ln h)`` of the accesses, so the
    hottest fraction h draws 1 - h — h = 0.2 is the 80/20 rule; h = 0.5 is uniform."""
    if not 0.0 < h < 1.0:
        raise ValueError(f"pareto h must lie in (0, 1), got {h}")
    p = np.log(h) / np.log(1.0 - h)
    return np.minimum(((n - 1) * rng.random(count) ** p).astype(np.int64), n - 1)


def normal_ranks(rng: np.random.Generator, count: int, n: int, deviation: float = 0.0) -> np.ndarray:
    """``count`` ranks in ``[0, n)`` of fio's ``random_distribution=normal[:d]`` (fio ``gauss_next``).

    The mean of 12 uniform integers in ``[0, n]``, rounded up (Irwin–Hall: mean n/2, standard deviation
    ≈ n/12); with ``d`` (0 ≤ d < 100, % of the slots) a uniform integer in ``[-s/2, s/2)``,
    ``s = ⌈n·d/100⌉`` (at most n/2), is added and halved until the sum lies below n."""
    if not 0.0 <= deviation < 100.0:
        raise ValueError(f"normal deviation must lie in [0, 100), got {deviation}")
    total = np.zeros(count, np.int64)
    for _ in range(12):
        total += rng.integers(0, n + 1, count)
    ranks = (total + 11) // 12
    if deviation:
        s = min(int(np.ceil(n * deviation / 100.0)), n // 2)
        dev = (s * rng.random(count)).astype(np.int64) - s // 2
        for _ in range(64):
            over = dev + ranks >= n
            if not over.any():
                break
            dev[over] = np.trunc(dev[over] / 2).astype(np.int64)
        ranks = ranks + dev
    return np.clip(ranks, 0, n - 1)


def _scatter(rank: np.ndarray, n: int) -> np.ndarray:
    """Spread ranks over ``[0, n)`` with a 64-bit mixing hash, as fio hashes its zipf values (hot
    blocks are not all at the start of the device)."""
    x = rank.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    return (x % np.uint64(n)).astype(np.int64)


def _mix64(x: int) -> int:
    """SplitMix64's finaliser of one integer (keys of :func:`permute`)."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def permute(i: np.ndarray, n: int, key: int) -> np.ndarray:
    """A keyed permutation of ``[0, n)`` evaluated at ``i`` (each value once as ``i`` runs over ``[0, n)``).

    Four rounds of multiply-by-odd, xor-shift and add modulo the next power of two, each a bijection of
    ``[0, 2^bits)``; values that land at or above ``n`` are permuted again until they fall below it
    (cycle walking).  fio's random map serves the same purpose: every block once per pass."""
    i = np.asarray(i, np.int64)
    if n <= 1:
        return np.zeros_like(i)
    bits = int(n - 1).bit_length()
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(max(1, bits // 2))
    rounds = []
    k = key & 0xFFFFFFFFFFFFFFFF
    for _ in range(4):
        k = _mix64(k)
        rounds.append((np.uint64(k | 1), np.uint64(_mix64(k ^ 0x5851F42D4C957F2D))))

    def once(x: np.ndarray) -> np.ndarray:
        for a, c in rounds:
            x = (x * a) & mask
            x ^= x >> shift
            x = (x + c) & mask
        return x

    out = once(i.astype(np.uint64))
    todo = np.flatnonzero(out >= np.uint64(n))
    while len(todo):
        out[todo] = once(out[todo])
        todo = todo[out[todo] >= np.uint64(n)]
    return out.astype(np.int64)


DISTRIBUTIONS = ("random", "zipf", "pareto", "normal", "zoned", "zoned_abs", "sequence")
MAX_SEQUENCE = 64  # fio's sequence distribution: at most 64 block indices


@dataclass(frozen=True)
class Distribution:
    """How random offsets spread over a region's ``n`` slots (fio ``random_distribution``, its HOWTO).

    * ``random`` — uniform.
    * ``zipf`` (``value`` θ ≥ 0, θ ≠ 1) — :func:`zipf_ranks` (θ > 1 by the same formula, as fio), ranks
      hashed over the slots (fio hashes them too, so the hot blocks are scattered).  θ = 0 is uniform.
    * ``pareto`` (``value`` h, 0 < h < 1) — :func:`pareto_ranks`, hashed.
    * ``normal`` (``value`` deviation d, 0 ≤ d < 100) — :func:`normal_ranks`, hashed.
    * ``zoned`` — ``zones``: (access fraction, size fraction) per zone, in order from the region's start;
      a zone is drawn by its access share, then a uniform slot inside it (not hashed).  Access fractions
      sum to 1, size fractions to at most 1 (the rest of the region is not accessed).
    * ``zoned_abs`` — the same with zone sizes in bytes (:meth:`slots` needs the slot size).

    * ``sequence`` — ``sequence``: block indices (of the smallest block size) taken in turn, per direction
      (fio's ``__get_next_rand_offset_sequence``: index ``i mod len`` of the direction's ``i``-th request);
      with ``stride`` the ``g``-th pass adds ``g × len`` (fio's ``random_sequence_stride``), and a block
      past the region ends the stream (:meth:`PatternStream.take`'s ``ended_at``) as it ends fio's job.

    ``center`` (zipf, pareto, normal; 0-1) is fio's second float: the hashed slots are rotated by
    ``⌊n·center⌋`` (normal: ``⌊n·(center - 0.5)⌋``), as fio adds it after its hash.  Without it fio rotates
    by a random amount, which after the hash only relabels slots; it is left out.
    """

    kind: str = "random"
    value: float = 0.0
    center: float | None = None
    zones: tuple[tuple[float, float], ...] = ()
    sequence: tuple[int, ...] = ()
    stride: bool = False

    def __post_init__(self) -> None:
        if self.kind not in DISTRIBUTIONS:
            raise ValueError(f"distribution must be one of {list(DISTRIBUTIONS)}, got {self.kind!r}")
        if self.kind == "sequence" and not (1 <= len(self.sequence) <= MAX_SEQUENCE
                                            and min(self.sequence) >= 0):
            raise ValueError(f"a sequence takes 1 to {MAX_SEQUENCE} block indices >= 0, got {self.sequence}")
        numbers = [self.value, *([] if self.center is None else [self.center]),
                   *(x for z in self.zones for x in z)]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError(f"distribution parameters must be finite numbers, got {numbers}")
        if self.kind == "zipf" and (self.value < 0 or self.value == 1.0):
            raise ValueError(f"zipf theta must be >= 0 and != 1, got {self.value}")
        if self.kind == "pareto" and not 0.0 < self.value < 1.0:
            raise ValueError(f"pareto h must lie in (0, 1), got {self.value}")
        if self.kind == "normal" and not 0.0 <= self.value < 100.0:
            raise ValueError(f"normal deviation must lie in [0, 100), got {self.value}")
        if self.center is not None and not 0.0 <= self.center <= 1.0:
            raise ValueError(f"distribution center must lie in [0, 1], got {self.center}")
        if self.kind.startswith("zoned"):
            if not self.zones:
                raise ValueError("a zoned distribution needs at least one zone")
            access = [a for a, _ in self.zones]
            sizes = [s for _, s in self.zones]
            if min(access) < 0 or abs(sum(access) - 1.0) > 1e-9:
                raise ValueError(f"zone access fractions must be >= 0 and sum to 1, got {access}")
            if min(sizes) <= 0 or (self.kind == "zoned" and sum(sizes) > 1.0 + 1e-9):
                raise ValueError(f"zone sizes must be > 0 (fractions summing to at most 1), got {sizes}")

    @property
    def uniform(self) -> bool:
        """Uniform over the slots (fio keeps its random map only for these)."""
        return self.kind == "random"

    def sequence_slots(self, first: int, count: int) -> np.ndarray:
        """The ``sequence`` slots of a direction's requests ``first`` .. ``first + count - 1`` (unbounded)."""
        i = first + np.arange(count, dtype=np.int64)
        seq = np.asarray(self.sequence, np.int64)
        return seq[i % len(seq)] + (i // len(seq) * len(seq) if self.stride else 0)

    def slots(self, rng: np.random.Generator, count: int, n: int, unit_bytes: int = 1) -> np.ndarray:
        """``count`` slots in ``[0, n)``; ``unit_bytes`` the slot size (``zoned_abs`` zones are bytes)."""
        if self.kind == "sequence":
            raise ValueError("a sequence's slots depend on the requests before: sequence_slots")
        if self.kind == "random":
            return rng.integers(0, n, count)
        if self.kind.startswith("zoned"):
            return self._zoned(rng, count, n, unit_bytes)
        if self.kind == "zipf":
            if self.value == 0.0 or 0.0 < self.value < 1.0:
                ranks = zipf_ranks(rng, count, n, self.value)
            else:
                ranks = _gray_zipf(rng, count, n, self.value)
        elif self.kind == "pareto":
            ranks = pareto_ranks(rng, count, n, self.value)
        else:
            ranks = normal_ranks(rng, count, n, self.value)
        slot = _scatter(ranks, n)
        if self.center is not None:
            rot = int(np.floor(n * (self.center - 0.5 if self.kind == "normal" else self.center)))
            slot = (slot + rot) % n
        return slot

    def _zoned(self, rng: np.random.Generator, count: int, n: int, unit_bytes: int) -> np.ndarray:
        access = np.asarray([a for a, _ in self.zones], float)
        if self.kind == "zoned":
            edges = np.floor(np.concatenate([[0.0], np.cumsum([s for _, s in self.zones])]) * n)
        else:
            edges = np.concatenate([[0], np.cumsum([int(s) for _, s in self.zones])]) // unit_bytes
            if edges[-1] > n:
                raise ValueError(f"zoned_abs zones span {int(edges[-1]) * unit_bytes} bytes, more than the "
                                 f"region's {n * unit_bytes}")
        start = edges[:-1].astype(np.int64)
        length = np.maximum(np.diff(edges), 1).astype(np.int64)
        zone = rng.choice(len(access), count, p=access / access.sum())
        return np.minimum(start[zone] + (rng.random(count) * length[zone]).astype(np.int64), n - 1)


def _size_table(sizes: Mapping[int, float], what: str) -> tuple[np.ndarray, np.ndarray]:
    vals = np.asarray(list(sizes), np.int64)
    weights = np.asarray(list(sizes.values()), float)
    if (len(vals) == 0 or np.any(vals <= 0) or np.any(vals % SECTOR) or np.any(weights < 0)
            or weights.sum() <= 0):
        raise ValueError(f"{what} must map positive multiples of {SECTOR} bytes to weights >= 0")
    return vals, weights / weights.sum()


@dataclass(frozen=True)
class Pattern:
    """Where and how large the requests of a fio-like stream are (fio option in brackets; bytes).

    ``read_fraction`` (``rwmixread``/100); ``read_sizes``/``write_sizes`` block size → weight (``bs``,
    ``bssplit``, ``bsrange``; ``write_sizes`` None: the read table); ``random`` (``rw=rand*``) or
    sequential; the region ``[offset_bytes, offset_bytes + span_bytes)`` (``offset``, ``size``);
    ``distribution`` of random offsets; ``read_align``/``write_align`` (``blockalign``; None: the
    direction's smallest size); ``run_length`` (``rw=randread:N``: a new random offset every N requests,
    the ones between continue sequentially, or repeat it with ``identical``, ``rw_sequencer``);
    ``hole_bytes`` (``rw=write:N``: N bytes skipped after each sequential request; negative,
    ``rw=read:-8k``, a step back: the next request starts N bytes before the end of the last, and the first
    one past the region's start moves to N bytes before its end, as fio's ``get_next_seq_offset`` does);
    ``random_map`` (fio's
    default: each slot once per pass of the region, :func:`permute`; off with ``norandommap`` or a
    non-uniform distribution); ``shared_sequence``: sequential reads and writes share one position
    (fio keeps one per direction).

    Random offsets: slot ``s`` of the region's ``⌊span / unit⌋`` slots, ``unit`` the smallest size of the
    directions in use (fio's ``range_size``), is ``s·unit``, aligned down to the request's alignment and
    moved down to keep the request inside the region.  Sequential positions wrap modulo the slots' span
    (a request that would cross its end starts at the region's start); so do runs of ``run_length``.
    """

    read_fraction: float = 0.0
    read_sizes: Mapping[int, float] = field(default_factory=lambda: {4096: 1.0})
    write_sizes: Mapping[int, float] | None = None
    random: bool = True
    span_bytes: float = 1e9
    offset_bytes: int = 0
    distribution: Distribution = field(default_factory=Distribution)
    read_align: int | None = None
    write_align: int | None = None
    run_length: int = 1
    identical: bool = False
    hole_bytes: int = 0
    random_map: bool = False
    shared_sequence: bool = False


class PatternStream:
    """The requests of a :class:`Pattern`, block after block (:meth:`take`); ``time_s`` is NaN.

    Block ``b`` draws from ``rng(b)``; sequential positions, runs and the random map's pass carry over
    from one block to the next.  ``map_key`` keys the random map's permutations.  ``line`` counts the
    requests from 1."""

    def __init__(self, pattern: Pattern, rng: Callable[[int], np.random.Generator], map_key: int = 0):
        p = pattern
        if not 0.0 <= p.read_fraction <= 1.0:
            raise ValueError(f"read_fraction must lie in [0, 1], got {p.read_fraction}")
        self.p, self._rng, self._map_key = p, rng, map_key
        self._r_vals, self._r_p = _size_table(p.read_sizes, "block_sizes")
        self._w_vals, self._w_p = (None, None) if p.write_sizes is None else _size_table(p.write_sizes,
                                                                                       "write_sizes")
        w_vals = self._r_vals if self._w_vals is None else self._w_vals
        used = ([self._r_vals] if p.read_fraction > 0 or self._w_vals is None else []) \
            + ([w_vals] if p.read_fraction < 1 and self._w_vals is not None else [])
        self._unit = int(min(v.min() for v in used))
        largest = int(max(v.max() for v in used))
        self._span = int(p.span_bytes)
        self._slots = int(p.span_bytes // self._unit)
        if self._slots < 1 or p.span_bytes < largest:
            raise ValueError("span_bytes must hold the largest block size")
        self._align = {READ: int(p.read_align or self._r_vals.min()),
                       WRITE: int(p.write_align or w_vals.min())}
        if min(self._align.values()) <= 0 or p.run_length < 1 or -p.hole_bytes >= self._slots * self._unit:
            raise ValueError("alignments and run_length must be >= 1, a negative hole_bytes within the span")
        self._block = self._issued = self._anchors = 0
        self._pos: dict[Any, int] = {READ: 0, WRITE: 0, "shared": 0}
        self._end: dict[Any, int | None] = {READ: None, WRITE: None, "shared": None}  # backwards: last end
        self._last: dict[int, tuple[int, int]] = {READ: (0, 0), WRITE: (0, 0)}  # (start, end) in the region
        self._seq = {READ: 0, WRITE: 0}  # requests per direction so far (the sequence distribution)
        #: the first request of the last chunk whose ``sequence`` block lies past the region (None: none)
        self.ended_at: int | None = None
        #: blocks of the region per direction, of the direction's smallest size (fio: io_size / min_bs)
        self._blocks = {READ: self._span // int(self._r_vals.min()), WRITE: self._span // int(w_vals.min())}
        if p.random and p.distribution.kind == "sequence":
            for d, on in ((READ, p.read_fraction > 0), (WRITE, p.read_fraction < 1)):
                if on and max(p.distribution.sequence) >= self._blocks[d]:
                    raise ValueError(f"sequence block {max(p.distribution.sequence)} lies past the region's "
                                     f"{self._blocks[d]} blocks of {'reads' if d == READ else 'writes'}")

    @property
    def unit_bytes(self) -> int:
        """Slot size: the smallest block size of the directions in use."""
        return self._unit

    def take(self, k: int) -> Chunk:
        """The next ``k`` requests."""
        p = self.p
        rng = self._rng(self._block)
        self._block += 1
        rs = rng.choice(self._r_vals, k, p=self._r_p)
        op = np.where(rng.random(k) < p.read_fraction, READ, WRITE).astype(np.int8)
        if self._w_vals is None:
            size = rs
        else:
            size = np.where(op == READ, rs, rng.choice(self._w_vals, k, p=self._w_p))
        offset = self._random(rng, op, size) if p.random else self._sequential(op, size)
        line = np.arange(self._issued + 1, self._issued + k + 1, dtype=np.int64)
        self._issued += k
        return Chunk(time_s=np.full(k, np.nan), op=op, offset=offset + int(p.offset_bytes), size=size,
                     line=line)

    def _sequential(self, op: np.ndarray, size: np.ndarray) -> np.ndarray:
        span = self._slots * self._unit
        step = size + self.p.hole_bytes
        offset = np.zeros(len(op), np.int64)
        groups = [("shared", slice(None))] if self.p.shared_sequence else \
            [(d, np.flatnonzero(op == d)) for d in (READ, WRITE)]
        if self.p.hole_bytes < 0:  # fio's backwards steps, request by request
            for key, idx in groups:
                offset[idx] = self._backwards(key, size[idx], span)
            return offset
        for key, idx in groups:
            st = step[idx]
            if not len(st):
                continue
            off = (self._pos[key] + np.cumsum(st) - st) % span
            offset[idx] = np.where(off + size[idx] > span, 0, off)
            self._pos[key] = int((self._pos[key] + int(st.sum())) % span)
        return offset

    def _backwards(self, key: Any, size: np.ndarray, span: int) -> np.ndarray:
        """Offsets of sequential requests with a negative ``hole_bytes`` (fio's ``get_next_seq_offset``): the
        first at the region's start, each next one ``hole_bytes`` after the end of the one before; one that
        would start before the region or end past it starts ``-hole_bytes`` before the region's end."""
        add, end = int(self.p.hole_bytes), self._end[key]
        out = np.empty(len(size), np.int64)
        for i, s in enumerate(np.asarray(size, np.int64).tolist()):
            pos = 0 if end is None else end + add
            if pos < 0 or pos + s > span:
                pos = min(span + add, span - s)
            out[i] = pos
            end = pos + s
        self._end[key] = end
        return out

    def _random(self, rng: np.random.Generator, op: np.ndarray, size: np.ndarray) -> np.ndarray:
        p, n, unit = self.p, self._slots, self._unit
        k = len(op)
        run = p.run_length
        anchor = np.ones(k, bool) if run == 1 else (self._issued + np.arange(k)) % run == 0
        na = int(anchor.sum())
        if p.random_map:
            j = self._anchors + np.arange(na, dtype=np.int64)
            slot = np.empty(na, np.int64)
            for pss in np.unique(j // n):
                sel = j // n == pss
                slot[sel] = permute(j[sel] % n, n, _mix64(self._map_key ^ _mix64(int(pss))))
        elif p.distribution.kind == "sequence":
            return self._sequence(op, size, anchor)
        else:
            slot = p.distribution.slots(rng, na, n, unit)
        self._anchors += na
        align = np.where(op == READ, self._align[READ], self._align[WRITE])
        a_align, a_size = align[anchor], size[anchor]
        a_off = slot * unit
        a_off -= a_off % a_align
        a_off = np.minimum(a_off, self._span - a_size)  # keep every request inside the span
        a_off -= a_off % a_align
        return self._runs(op, size, anchor, a_off)

    def _sequence(self, op: np.ndarray, size: np.ndarray, anchor: np.ndarray) -> np.ndarray:
        """Offsets of the ``sequence`` distribution (fio's ``__get_next_rand_offset_sequence``): the anchor
        that is a direction's ``i``-th request (every request of the direction counted, those of a run
        too) takes block ``sequence_slots(i)`` of the direction's alignment (``blockalign``, else its
        smallest size); a block past the region's blocks of that direction ends the stream there
        (``ended_at``)."""
        a_off = np.empty(int(anchor.sum()), np.int64)
        a_op, end = op[anchor], len(op)
        for d in (READ, WRITE):
            idx = np.flatnonzero(op == d)
            at = np.flatnonzero(anchor[idx])  # the direction's anchors, by their place among its requests
            b = self.p.distribution.sequence_slots(self._seq[d], len(idx))[at]
            past = np.flatnonzero(b >= self._blocks[d])
            if past.size:
                end = min(end, int(idx[at[past[0]]]))
            a_off[a_op == d] = np.minimum(b, self._blocks[d] - 1) * self._align[d]
            self._seq[d] += len(idx)
        self.ended_at = end if end < len(op) else None
        self._anchors += len(a_off)
        a_off = np.minimum(a_off, self._span - size[anchor])
        return self._runs(op, size, anchor, a_off)

    def _runs(self, op: np.ndarray, size: np.ndarray, anchor: np.ndarray, a_off: np.ndarray) -> np.ndarray:
        """The offsets of every request: the anchors' ``a_off``, the requests between them continuing their
        anchor's run (sequentially, or repeating it with ``identical``)."""
        p, n, unit, k, run = self.p, self._slots, self._unit, len(op), self.p.run_length
        if run == 1:
            return a_off
        offset = np.zeros(k, np.int64)
        offset[anchor] = a_off
        span = n * unit
        for d in (READ, WRITE):
            idx = np.flatnonzero(op == d)
            if not len(idx):
                continue
            an, s = anchor[idx], size[idx]
            seg = np.cumsum(an)  # 0: continues the previous block's run
            first = np.concatenate([[0], np.flatnonzero(an)])
            start, end = self._last[d]
            base = np.concatenate([[start if p.identical else end], offset[idx][an]])
            if p.identical:
                off = base[seg]
            else:
                excl = np.cumsum(s) - s
                off = (base[seg] + excl - excl[first][seg]) % span
                off = np.where(off + s > self._span, 0, off)
            offset[idx] = off
            self._last[d] = (int(off[-1]), int(off[-1] + s[-1]))
        return offset


def fio_like(n: int, read_fraction: float = 0.0, block_sizes: dict[int, float] | None = None,
             random: bool = True, span_bytes: float = 1e9, zipf_theta: float = 0.0, seed: int = 0,
             offset_bytes: int = 0) -> Chunk:
    """``n`` requests of a fio-like job (closed loop: ``time_s`` NaN; the queue depth is the replayer's).

    ``read_fraction`` (fio ``rwmixread``/100); ``block_sizes`` bytes → weight (fio ``bssplit``; default
    4 KiB); ``random`` or sequential; ``span_bytes`` the region (fio ``size``) from ``offset_bytes``;
    ``zipf_theta`` the skew of random offsets over ``block``-aligned slots (fio ``zipf:θ``; 0 uniform,
    hashed like the skewed ones).  Sequential jobs walk the region in order, wrapping, one stream for
    reads and writes together.  Draws with replacement (fio ``norandommap``); a whole fio job, with its
    other options, is :class:`PatternStream` (``ssdx.workloads.fio``).
    """
    pattern = Pattern(read_fraction=read_fraction, read_sizes=block_sizes or {4096: 1.0}, random=random,
                      span_bytes=span_bytes, offset_bytes=int(offset_bytes),
                      distribution=Distribution("zipf", zipf_theta), shared_sequence=True)
    rng = np.random.default_rng(seed)
    return PatternStream(pattern, lambda _block: rng).take(n)
