"""Synthetic stand-ins for the seven MSR Cambridge volumes of the SCM/NAND hybrid-SSD study.

The study (Fukuchi et al., "Performance evaluation of SCM/NAND flash hybrid SSD with four NAND types",
ISCAS 2018) replays seven MSR Cambridge block traces (SNIA IOTTA; Narayanan, Donnelly, Rowstron, "Write
Off-Loading: Practical Power Management for Enterprise Storage", FAST 2008: 36 volumes on 13 servers,
one week) and sorts them into write-intensive ``prxy_0``, ``proj_0``, ``hm_0``, ``web_1`` and
read-intensive ``prxy_1``, ``proj_3``, ``src2_1``; it gives no per-volume statistics.  The traces are
not available offline, so :func:`generate` draws request streams whose read fraction, mean read and write
sizes, sequential fraction, footprint, number of distinct offsets, LRU miss-ratio curve and mean arrival
rate follow a per-volume preset (:data:`VOLUMES`).  Every preset number is cited or labelled *assumed*
in the volume's ``source`` string.  Sources:

* [WU17] S. Wu, B. Mao, Y. Lin, H. Jiang, "Improving Performance for Flash-Based Storage Systems through
  GC-Aware Cache Management", IEEE TPDS 28(10), 2017, Table 4: Prxy_0 97.1 % writes, 6.8 KB mean
  request; Hm_0 64.5 % writes, 3,993,300 I/Os, 9.2 KB mean request.
* [SAL] R. Salkhordeh, M. Hadizadeh, H. Asadi, "An Efficient Hybrid I/O Caching Architecture Using
  Heterogeneous SSDs", IEEE TPDS, Table 2: Prxy_0 383,524 reads and 12,135,444 writes (12,518,968
  requests, read fraction 0.0306), 61.03 GB in total (~4.9 KB per request, below [WU17]'s 6.8 KB; the
  two tables disagree and [WU17]'s size is used).
* [LCS] libCacheSim (github.com/1a1a11a/libCacheSim) ``libCacheSim/bin/cachesim/params/msr.h``,
  ``get_msr_wss``: working-set bytes (sum of the sizes of the distinct request offsets, taken here as
  the footprint) and distinct offsets: prxy_0 2,181,521,263 B / 155,681; hm_0 5,627,588,273 B /
  439,187; proj_0 11,714,738,048 B / 286,228; prxy_1 16,482,259,120 B / 390,226.
* [S3F] J. Yang, Y. Zhang, Z. Qiu, Y. Yue, R. Vinayak, "FIFO queues are all you need for cache
  eviction", SOSP 2023, artifact github.com/Thesys-lab/sosp23-s3fifo,
  ``result/cachesim/MSR/<vol>.IQI.bin.txt``: whole-trace request counts (prxy_0 12,518,968; proj_0
  4,224,524; hm_0 3,993,316; prxy_1 168,638,964), distinct offsets (as [LCS]) and LRU miss ratios by
  request count (cold misses included; object = distinct offset, sizes ignored) at caches of 0.1, 0.3,
  1, 3, 10, 20, 40 and 80 % of the distinct offsets (:data:`S3F_LRU`).  The go-sieve benchmark
  (github.com/opencoff/go-sieve, ``bench/results/all_trace.txt``) gives the same 10 % figures.
* [SNIA] the SNIA IOTTA MSR Cambridge README: one week per volume → 604,800 s.

Nothing per volume was found for web_1, proj_3 and src2_1 (request counts, sizes, footprint, reuse), nor
for any volume's sequential fraction or separate read and write sizes: those are **assumed**.

Preset table (KiB = 1024 B, GiB = 2**30 B; c = cited, f = fitted to a cited curve, a = assumed):

| volume | requests | keys | read frac | read KiB | write KiB | footprint GiB | seq frac | LRU curve |
|---|---|---|---|---|---|---|---|---|
| prxy_0 | 12,518,968 c | 155,681 c | 0.0306 c | 6.8 c* | 6.8 c* | 2.03 c | 0.10 a | f [S3F] |
| proj_0 | 4,224,524 c | 286,228 c | 0.125 a | 16 a | 32 a | 10.91 c | 0.20 a | f [S3F] |
| hm_0 | 3,993,316 c | 439,187 c | 0.355 c | 9.2 c* | 9.2 c* | 5.24 c | 0.15 a | f [S3F] |
| web_1 | 160,981 a | 40,000 a | 0.30 a | 8 a | 12 a | 1.5 a | 0.15 a | a |
| prxy_1 | 168,638,964 c | 390,226 c | 0.65 a | 12 a | 8 a | 15.35 c | 0.02 a | f [S3F] |
| proj_3 | 2,244,642 a | 200,000 a | 0.95 a | 8 a | 12 a | 4.0 a | 0.25 a | a |
| src2_1 | 657,996 a | 100,000 a | 0.90 a | 48 a | 8 a | 8.0 a | 0.35 a | a |

(*) the cited figure is the mean over all requests ("KB", read as KiB); the read/write split is not
published, so both are set to it (assumed).  The request counts of web_1, proj_3 and src2_1 are
assumptions of plausible size (used only for the mean arrival rate).

How a stream is drawn (assumptions of the generator; deterministic per seed and volume):

* **objects**: a fixed population of ``keys`` objects (4 KiB-aligned offsets) per volume, the same for
  every seed.  Object ``k`` starts ``gap_k`` pages after object ``k - 1``; the gaps are geometric with a
  mean of the smaller of the two mean request sizes; the objects lie in extents of :data:`EXTENT`
  consecutive objects, and the rest of the footprint is spread as holes between the extents, so the
  objects cover the whole footprint.
* **reuse** (the LRU stack model: Mattson et al., IBM Syst. J. 9(2), 1970; Spirn, "Program Behavior",
  1977): the objects sit in an LRU stack, initially in a random order (the stream starts in steady
  state).  The first request of each run takes the object at stack depth ``d`` (0 = most recent), drawn
  from the preset survival curve ``P(d >= C)`` (``lru_curve``: pairs of cache size as a fraction of
  ``keys`` and probability, log-log interpolated, ``P(d >= 1) = 1``, falling linearly to 0 at ``keys``).
  An LRU cache of ``C`` objects then misses a run's first request with probability ``P(d >= C)``, so any
  miss-ratio curve, knees included, can be produced.  The curve is fitted by
  ``bench/msr_calibrate.py`` so that the generated stream's LRU miss ratio (continuations included, cold
  misses included at the published length) matches [S3F].
* **sequential**: exactly ``round(sequential_fraction · n)`` requests, at positions drawn uniformly among
  1 … n-1, continue the request before them (same type, next object in address order, starting where
  the request before ended: the sequential rule of :mod:`ssdx.workloads.analyse`), so continuations
  revisit the same neighbours and are reused like the first requests.  A request with its continuations
  forms a *run*; a run that would pass the end of its extent starts lower in it.
* **type**: whole runs are reads or writes; runs are taken in random order as reads until the read count
  reaches ``round(read_fraction · n)`` (filled exactly with single-request runs when there are enough).
* **sizes**: whole 4 KiB pages.  A request that a continuation follows is exactly as long as the gap to
  the next object; every other request is geometric (memoryless), at most reaching the footprint's end,
  with single pages added/removed at random so each type's total is ``round(count · mean / 4 KiB)``
  pages: the mean is exact to half a page over the count.  Real MSR size histograms are multi-modal
  (4 KiB dominant, 64 KiB peaks); the geometric shape is an assumption.  A request whose end would by
  chance touch the start of the next (same-type) run's object swaps its size with another request of its
  type, so exactly the chosen requests are sequential.
* **time**: with ``timed=True`` Poisson arrivals at the trace's *mean* rate ``requests / duration_s``
  times ``time_scale`` (``time_scale`` > 1 compresses time).  The real MSR traces are bursty (FAST 2008
  analyses long idle periods between bursts), so this matches the mean rate only.  With ``timed=False``
  ``time_s`` is NaN (closed-loop replay).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numba
import numpy as np

from ssdx.workloads.lru import compact_slots, fenwick_add, fenwick_prefix
from ssdx.workloads.traces import READ, WRITE, Chunk

PAGE = 4096
KIB = 1024
GIB = 1 << 30
WEEK_S = 7 * 24 * 3600.0  # 604,800 s: one week per FAST 2008 / SNIA README
EXTENT = 32  # objects per extent of the layout (assumed)
S3F_FRACTIONS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.2, 0.4, 0.8)  # cache sizes of [S3F], fraction of keys

# [S3F] LRU miss ratio (cold misses included) at int(fraction · keys) objects, S3F_FRACTIONS order
S3F_LRU: dict[str, tuple[float, ...]] = {
    "prxy_0": (0.9288, 0.9031, 0.3629, 0.0853, 0.0476, 0.0261, 0.0163, 0.0124),
    "proj_0": (0.7748, 0.7166, 0.5235, 0.3977, 0.2375, 0.1557, 0.0936, 0.0684),
    "hm_0": (0.5263, 0.4835, 0.4287, 0.3874, 0.3188, 0.2538, 0.1793, 0.1213),
    "prxy_1": (0.7070, 0.6983, 0.6494, 0.2373, 0.0037, 0.0025, 0.0024, 0.0023),
}


@dataclass(frozen=True)
class MsrVolume:
    """Published (or assumed) characteristics of one MSR Cambridge volume; ``source`` says which."""

    name: str
    requests: int            # total requests in the one-week trace
    keys: int                # distinct request offsets (objects) of the trace
    read_fraction: float     # of requests
    read_kib: float          # mean read size, KiB
    write_kib: float         # mean write size, KiB
    footprint_gib: float     # working-set bytes (sum of the sizes of the distinct offsets), GiB
    sequential_fraction: float  # share of requests that continue the previous one (ssdx.workloads.analyse)
    lru_curve: tuple[tuple[float, float], ...]  # (cache / keys, P(run-start stack depth >= cache))
    duration_s: float        # trace duration (one week = 604800 s for MSR)
    source: str              # citations and labelled assumptions for each number

    def __post_init__(self) -> None:
        if self.requests < 1 or self.duration_s <= 0:
            raise ValueError(f"{self.name}: requests and duration_s must be positive")
        if not 0.0 <= self.read_fraction <= 1.0:
            raise ValueError(f"{self.name}: read_fraction must lie in [0, 1]")
        if min(self.read_kib, self.write_kib) < PAGE / KIB:
            raise ValueError(f"{self.name}: mean sizes must be at least 4 KiB (whole-page sizes)")
        if not 0.0 <= self.sequential_fraction < 1.0:
            raise ValueError(f"{self.name}: sequential_fraction must lie in [0, 1)")
        if self.keys < 2:
            raise ValueError(f"{self.name}: keys must be >= 2")
        if self.footprint_bytes < 1024 * PAGE:
            raise ValueError(f"{self.name}: footprint must hold at least 1024 pages")
        if self.keys * self.gap_pages > self.footprint_bytes // PAGE:
            raise ValueError(f"{self.name}: {self.keys} objects {self.gap_pages:.2f} pages apart exceed the "
                             "footprint")
        x = np.asarray([f for f, _ in self.lru_curve])
        p = np.asarray([q for _, q in self.lru_curve])
        if (len(x) < 1 or np.any(np.diff(x) <= 0) or x[0] <= 0 or x[-1] >= 1 or np.any(np.diff(p) > 0)
                or p[0] > 1 or p[-1] < 0):
            raise ValueError(f"{self.name}: lru_curve must have increasing fractions in (0, 1) and "
                             "non-increasing probabilities in [0, 1]")

    @property
    def footprint_bytes(self) -> int:
        """Footprint in bytes, whole 4 KiB pages (offsets + sizes stay below it)."""
        return int(self.footprint_gib * GIB) // PAGE * PAGE

    @property
    def gap_pages(self) -> float:
        """Mean spacing of neighbouring objects inside an extent, 4 KiB pages (the smaller mean size)."""
        return min(self.read_kib, self.write_kib) * KIB / PAGE

    @property
    def mean_interarrival_s(self) -> float:
        """Mean inter-arrival time of the whole trace, s (``duration_s / requests``)."""
        return self.duration_s / self.requests


def _curve(*p: float) -> tuple[tuple[float, float], ...]:
    return tuple(zip(S3F_FRACTIONS, p))


VOLUMES: dict[str, MsrVolume] = {v.name: v for v in (
    MsrVolume("prxy_0", 12_518_968, 155_681, 383_524 / 12_518_968, 6.8, 6.8, 2_181_521_263 / GIB, 0.10,
              _curve(0.9241, 0.9002, 0.3199, 0.0412, 0.0191, 0.0062, 0.0027, 0.0026), WEEK_S,
              "requests: [S3F] / [SAL] Table 2 (383,524 R + 12,135,444 W); keys: [S3F] / [LCS] 155,681; "
              "read_fraction: [SAL] Table 2 = 0.0306 ([WU17] Table 4: 97.1 % writes); read/write KiB: "
              "[WU17] Table 4 6.8 KB mean over all requests, split assumed equal; footprint: [LCS] "
              "2,181,521,263 B; sequential_fraction 0.10: assumed; lru_curve: fitted to [S3F] LRU by "
              "bench/msr_calibrate.py; duration: one week [SNIA]."),
    MsrVolume("proj_0", 4_224_524, 286_228, 0.125, 16.0, 32.0, 11_714_738_048 / GIB, 0.20,
              _curve(0.7346, 0.6690, 0.4490, 0.3151, 0.1551, 0.0829, 0.0375, 0.0327), WEEK_S,
              "requests: [S3F] / [LCS]; keys: [S3F] / [LCS] 286,228; read_fraction 0.125: assumed "
              "(write-intensive class per Fukuchi et al.); read 16 KiB / write 32 KiB: assumed; footprint: "
              "[LCS] 11,714,738,048 B; sequential_fraction 0.20: assumed; lru_curve: fitted to [S3F] LRU "
              "by bench/msr_calibrate.py; duration: one week [SNIA]."),
    MsrVolume("hm_0", 3_993_316, 439_187, 0.355, 9.2, 9.2, 5_627_588_273 / GIB, 0.15,
              _curve(0.4650, 0.4183, 0.3595, 0.3174, 0.2508, 0.1889, 0.1217, 0.0803), WEEK_S,
              "requests: [S3F] / [LCS] ([WU17]: 3,993,300); keys: [S3F] / [LCS] 439,187; read_fraction: "
              "[WU17] Table 4 (64.5 % writes); read/write KiB: [WU17] Table 4 9.2 KB mean over all "
              "requests, split assumed equal; footprint: [LCS] 5,627,588,273 B; sequential_fraction 0.15: "
              "assumed; lru_curve: fitted to [S3F] LRU by bench/msr_calibrate.py; duration: one week "
              "[SNIA]."),
    MsrVolume("web_1", 160_981, 40_000, 0.30, 8.0, 12.0, 1.5, 0.15,
              _curve(0.60, 0.55, 0.50, 0.42, 0.30, 0.20, 0.10, 0.02), WEEK_S,
              "requests 160,981: assumed; keys 40,000: assumed; read_fraction 0.30 with read 8 KiB / write "
              "12 KiB: assumed (write-intensive class per Fukuchi et al.: more bytes written than read); "
              "footprint 1.5 GiB: assumed; sequential_fraction 0.15: assumed; lru_curve: assumed (no "
              "per-volume figure found; moderate reuse like hm_0); duration: one week [SNIA]."),
    MsrVolume("prxy_1", 168_638_964, 390_226, 0.65, 12.0, 8.0, 16_482_259_120 / GIB, 0.02,
              _curve(0.7014, 0.6931, 0.6452, 0.2305, 0.0000, 0.0000, 0.0000, 0.0000), WEEK_S,
              "requests: [S3F] / [LCS]; keys: [S3F] / [LCS] 390,226; read_fraction 0.65: assumed "
              "(read-intensive class per Fukuchi et al.); read 12 KiB / write 8 KiB: assumed; footprint: "
              "[LCS] 16,482,259,120 B; sequential_fraction 0.02: assumed, lowered from 0.10 because "
              "continuations, reused less often than their run starts, put a floor of ~0.01 under the "
              "miss ratio at 10 % of the keys where [S3F] has 0.0037; lru_curve: fitted to [S3F] LRU "
              "(steady state: the trace is too long to generate whole) by bench/msr_calibrate.py; "
              "duration: one week [SNIA]."),
    MsrVolume("proj_3", 2_244_642, 200_000, 0.95, 8.0, 12.0, 4.0, 0.25,
              _curve(0.80, 0.75, 0.65, 0.55, 0.40, 0.30, 0.18, 0.05), WEEK_S,
              "requests 2,244,642: assumed; keys 200,000: assumed; read_fraction 0.95: assumed "
              "(read-intensive class per Fukuchi et al.); read 8 KiB / write 12 KiB: assumed; footprint "
              "4 GiB: assumed; sequential_fraction 0.25: assumed; lru_curve: assumed (no per-volume figure "
              "found; weak reuse like proj_0); duration: one week [SNIA]."),
    MsrVolume("src2_1", 657_996, 100_000, 0.90, 48.0, 8.0, 8.0, 0.35,
              _curve(0.75, 0.70, 0.60, 0.50, 0.35, 0.25, 0.15, 0.04), WEEK_S,
              "requests 657,996: assumed; keys 100,000: assumed; read_fraction 0.90: assumed "
              "(read-intensive class per Fukuchi et al.); read 48 KiB / write 8 KiB: assumed "
              "(source-control server reading whole files); footprint 8 GiB: assumed; sequential_fraction "
              "0.35: assumed; lru_curve: assumed (no per-volume figure found); duration: one week [SNIA]."),
)}

WRITE_INTENSIVE = ("prxy_0", "proj_0", "hm_0", "web_1")
READ_INTENSIVE = ("prxy_1", "proj_3", "src2_1")


def volume(name: str) -> MsrVolume:
    """The preset of one volume; ``KeyError`` naming the known volumes otherwise."""
    try:
        return VOLUMES[name]
    except KeyError:
        raise KeyError(f"unknown MSR volume {name!r}; known: {list(VOLUMES)}") from None


def _pages(rng: np.random.Generator, count: int, mean_bytes: float) -> np.ndarray:
    """``count`` sizes in 4 KiB pages: geometric with mean ``mean_bytes``, then corrected page by page
    so the total is ``round(count · mean_bytes / 4 KiB)`` (module docstring)."""
    cap = np.full(count, np.iinfo(np.int64).max // max(count, 1), np.int64)
    return _fill(rng, cap, max(int(round(count * mean_bytes / PAGE)), count))


def _fill(rng: np.random.Generator, cap: np.ndarray, total: int) -> np.ndarray:
    """Sizes in pages, ``1 <= size <= cap``, geometric with mean ``total / len(cap)`` and then corrected
    page by page to sum to ``total`` (clamped to what the caps allow)."""
    count = len(cap)
    if count == 0:
        return np.zeros(0, np.int64)
    total = int(min(max(total, count), cap.sum()))
    pages = np.minimum(rng.geometric(min(1.0, count / total), count).astype(np.int64), cap)
    while (diff := total - int(pages.sum())) != 0:
        if diff > 0:
            can = np.flatnonzero(pages < cap)
            np.add.at(pages, can[rng.integers(0, len(can), diff)], 1)
            pages = np.minimum(pages, cap)
        else:
            can = np.flatnonzero(pages > 1)
            pages[rng.choice(can, size=min(-diff, len(can)), replace=False)] -= 1
    return pages


def layout(v: MsrVolume) -> np.ndarray:
    """Offsets of the volume's ``keys`` objects in 4 KiB pages, increasing, the same for every seed
    (module docstring: gaps inside extents of :data:`EXTENT` objects, holes between extents)."""
    rng = np.random.default_rng([zlib.crc32(v.name.encode()), 1])
    foot = v.footprint_bytes // PAGE
    gaps = _pages(rng, v.keys, v.gap_pages * PAGE)           # gap after object k, inside its extent
    n_ext = -(-v.keys // EXTENT)
    holes = rng.multinomial(foot - int(gaps.sum()), np.full(n_ext, 1.0 / n_ext))
    gaps[np.minimum(np.arange(1, n_ext + 1) * EXTENT, v.keys) - 1] += holes  # after each extent's last
    return np.cumsum(gaps) - gaps


def depth_survival(v: MsrVolume) -> np.ndarray:
    """``P(d >= c)`` for ``c = 0 .. keys`` of a run's first request's stack depth ``d`` (module
    docstring): log-log interpolation of ``lru_curve`` from ``P(d >= 1) = 1``, linear to 0 at ``keys``."""
    k = v.keys
    x = np.r_[1.0, [f * k for f, _ in v.lru_curve]]
    p = np.r_[1.0, [q for _, q in v.lru_curve]]
    c = np.arange(k + 1, dtype=np.float64)
    lo = np.maximum(c, 1.0)
    s = np.exp(np.interp(np.log(lo), np.log(x), np.log(np.maximum(p, 1e-12))))
    tail = c > x[-1]
    s[tail] = p[-1] * (k - c[tail]) / (k - x[-1])
    s[0] = 1.0
    return np.minimum.accumulate(np.clip(s, 0.0, 1.0))


@numba.njit(cache=True)
def _walk(order: np.ndarray, head_depth: np.ndarray, run_len: np.ndarray, is_head: np.ndarray,
          ext_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Objects of the stream and their LRU stack depth (0 = most recent) before each request.

    ``order``: the initial stack, least recent first; ``head_depth``/``run_len``: per request, used at
    run starts (``is_head``); a continuation takes the next object.  The stack is a Fenwick tree over
    slots ordered by last use (one mark per object), renumbered when the slots run out."""
    n = head_depth.shape[0]
    k_obj = order.shape[0]
    cap = 4 * k_obj
    tree = np.zeros(cap + 1, np.int64)
    slot_key = np.full(cap, -1, np.int64)
    slot = np.empty(k_obj, np.int64)
    for i in range(k_obj):
        slot_key[i] = order[i]
    top = 1
    while top * 2 <= cap:
        top *= 2
    nxt = compact_slots(tree, slot_key, slot)  # slots 0 .. k_obj-1 in the initial order, one mark each
    obj = np.empty(n, np.int64)
    depth = np.empty(n, np.int64)
    prev = 0
    for t in range(n):
        if nxt == cap:
            nxt = compact_slots(tree, slot_key, slot)
        if is_head[t]:
            rank = k_obj - min(head_depth[t], k_obj - 1)  # 1-based rank from the least recent
            pos = 0
            step = top
            while step > 0:  # largest pos with prefix(pos) < rank
                if pos + step <= cap and tree[pos + step] < rank:
                    pos += step
                    rank -= tree[pos]
                step //= 2
            o = slot_key[pos]
            length = run_len[t]
            if o + length - 1 > ext_end[o]:  # the run stays inside the extent: start lower
                o = max(ext_end[o] - (length - 1), ext_end[o] - (ext_end[o] % EXTENT))
            o = min(o, k_obj - length)
        else:
            o = prev + 1
        p = slot[o]
        depth[t] = k_obj - fenwick_prefix(tree, p + 1)
        fenwick_add(tree, p + 1, -1)
        slot_key[p] = -1
        fenwick_add(tree, nxt + 1, 1)
        slot_key[nxt] = o
        slot[o] = nxt
        nxt += 1
        obj[t] = o
        prev = o
    return obj, depth


def _read_runs(rng: np.random.Generator, run_len: np.ndarray, target: int) -> np.ndarray:
    """Boolean per run: read runs whose lengths sum to ``target`` (exact when enough single runs)."""
    order = rng.permutation(len(run_len))
    cs = np.cumsum(run_len[order])
    take = cs <= target
    is_read = np.zeros(len(run_len), bool)
    is_read[order[take]] = True
    rest = target - (int(cs[take][-1]) if take.any() else 0)
    singles = order[~take & (run_len[order] == 1)]
    is_read[singles[:rest]] = True
    return is_read


def _draw(v: MsrVolume, n: int, seed: int) -> tuple[Chunk, np.ndarray, np.ndarray, np.random.Generator]:
    """The untimed stream, the object of each request, the stack depth before it (module docstring), and
    the generator (for the arrival times)."""
    rng = np.random.default_rng([seed, zlib.crc32(v.name.encode())])
    k = v.keys

    # sequential continuations and runs
    seq = np.zeros(n, bool)
    m = min(int(round(v.sequential_fraction * n)), n - 1)
    seq[1 + rng.choice(n - 1, m, replace=False)] = True
    run = np.cumsum(~seq) - 1
    run_len = np.bincount(run)
    if run_len.max() > k:
        raise ValueError(f"{v.name}: a run of {run_len.max()} requests exceeds the {k} objects")

    # types: whole runs
    is_read = _read_runs(rng, run_len, int(round(v.read_fraction * n)))[run]
    op = np.where(is_read, READ, WRITE).astype(np.int8)

    # objects: run starts from the LRU stack model, continuations the next object
    surv = depth_survival(v)
    head_depth = np.zeros(n, np.int64)  # #{c >= 1: S(c) >= u}, u uniform, at run starts
    head_depth[~seq] = np.searchsorted(-surv[1:k], -rng.random(n - m), side="right")
    ext_end = np.minimum((np.arange(k) // EXTENT + 1) * EXTENT, k) - 1
    obj, depth = _walk(rng.permutation(k).astype(np.int64), head_depth, run_len[run].astype(np.int64),
                       ~seq, ext_end.astype(np.int64))

    # sizes: a request a continuation follows reaches the next object; the others fill each type's total
    start = layout(v)
    foot = v.footprint_bytes // PAGE
    gap = np.r_[np.diff(start), foot - start[-1]]
    pages = np.zeros(n, np.int64)
    fixed = np.r_[seq[1:], False]
    pages[fixed] = gap[obj[fixed]]
    room = foot - start[obj]
    for kind, kib in ((True, v.read_kib), (False, v.write_kib)):
        sel = is_read == kind
        free = np.flatnonzero(sel & ~fixed)
        target = int(round(int(sel.sum()) * kib * KIB / PAGE)) - int(pages[sel & fixed].sum())
        pages[free] = _fill(rng, room[free], target)

    # a free request ending exactly where the next run starts (same type) would read as sequential
    heads = np.flatnonzero(~seq[1:]) + 1
    pools = {READ: np.flatnonzero(is_read & ~fixed), WRITE: np.flatnonzero(~is_read & ~fixed)}
    for _ in range(100):
        b = heads - 1
        clash = b[(op[b] == op[heads]) & (start[obj[b]] + pages[b] == start[obj[heads]])]
        if len(clash) == 0:
            break
        for i in clash:
            pool = pools[int(op[i])]
            for j in pool[rng.integers(0, len(pool), 64)]:
                if pages[j] != pages[i] and pages[j] <= room[i] and pages[i] <= room[j]:
                    pages[i], pages[j] = pages[j], pages[i]
                    break
    chunk = Chunk(time_s=np.full(n, np.nan), op=op, offset=start[obj] * PAGE, size=pages * PAGE,
                  line=np.arange(1, n + 1, dtype=np.int64))
    return chunk, obj, depth, rng


def generate(name: str, n: int, seed: int = 0, timed: bool = True, time_scale: float = 1.0) -> Chunk:
    """``n`` requests shaped like MSR volume ``name`` (module docstring for the method and assumptions).

    ``time_s``: Poisson arrivals, s, at the trace's mean rate × ``time_scale`` (> 1 compresses time), or
    NaN with ``timed=False``; ``op`` READ/WRITE; ``offset``/``size`` bytes (4 KiB multiples, inside the
    footprint; ``offset`` is one of the volume's ``keys`` object offsets).  Deterministic for a given
    ``(name, n, seed, timed, time_scale)``.
    """
    v = volume(name)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not time_scale > 0:
        raise ValueError(f"time_scale must be > 0, got {time_scale}")
    if n == 0:
        return Chunk(*(np.zeros(0, d) for d in (np.float64, np.int8, np.int64, np.int64, np.int64)))
    c, _, _, rng = _draw(v, n, seed)
    if timed:
        c.time_s[:] = np.cumsum(rng.exponential(v.mean_interarrival_s / time_scale, n))
    return c


def steady_depths(name: str, n: int, seed: int = 0) -> np.ndarray:
    """Stack depth of each of ``n`` generated requests in the generator's LRU stack (which starts full, in
    a random order): the exact LRU stack distance of the stream replayed after the initial stack, so an
    LRU cache of ``C`` objects in steady state misses ``mean(depth >= C)`` (no cold misses)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return _draw(volume(name), n, seed)[2]
