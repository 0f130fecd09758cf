"""Synthetic stand-ins for the seven MSR Cambridge volumes of the hybrid-SSD study (seeds/001, REFERENCE §2).

seeds/001 replays seven MSR Cambridge block traces (SNIA IOTTA; Narayanan, Donnelly, Rowstron, "Write
Off-Loading: Practical Power Management for Enterprise Storage", FAST 2008: 36 volumes on 13 servers,
one week): write-intensive ``prxy_0``, ``proj_0``, ``hm_0``, ``web_1``; read-intensive ``prxy_1``,
``proj_3``, ``src2_1``.  The traces themselves are not available offline, so :func:`generate` draws
request streams whose read fraction, mean read and write sizes, sequential fraction, offset skew,
footprint and mean arrival rate match a per-volume preset (:data:`VOLUMES`).  Every preset number is
either cited or labelled *assumed* in the volume's ``source`` string.  Sources:

* [REF] ``/work/shared/REFERENCE.md`` §2 (from seeds/001): prxy_0 12,518,968 requests, ~3 % reads, avg
  ~6.8 KB; hm_0 3,993,316 requests, ~35.5 % reads, avg ~9.2 KB; proj_0 4,224,524; prxy_1 168,638,964;
  the write-/read-intensive classes.
* [WU17] S. Wu, B. Mao, Y. Lin, H. Jiang, "Improving Performance for Flash-Based Storage Systems through
  GC-Aware Cache Management", IEEE TPDS 28(10), 2017, Table 4 "The Realistic Workload Characteristics":
  Prxy_0 97.1 % writes, 6.8 KB average request (first 5,000,000 requests); Hm_0 64.5 % writes,
  3,993,300 I/Os, 9.2 KB.  (REFERENCE §2's prxy_0 and hm_0 figures are these.)
* [SAL] R. Salkhordeh, M. Hadizadeh, H. Asadi, "An Efficient Hybrid I/O Caching Architecture Using
  Heterogeneous SSDs", IEEE TPDS, Table 2 "Workload Characteristics": Prxy_0 383,524 reads and
  12,135,444 writes (sum 12,518,968, read fraction 0.0306), 61.03 GB in total (i.e. ~4.9 KB per request,
  below [WU17]'s 6.8 KB: the two tables disagree; [REF]/[WU17] is used).
* [LCS] libCacheSim (github.com/1a1a11a/libCacheSim) ``libCacheSim/bin/cachesim/params/msr.h``,
  ``get_msr_wss``: working-set bytes / distinct request offsets of its MSR conversions: prxy_0
  2,181,521,263 B / 155,681; hm_0 5,627,588,273 B / 439,187; proj_0 11,714,738,048 B / 286,228; prxy_1
  16,482,259,120 B / 390,226.  "Working set" there is the sum of the sizes of the distinct request
  offsets: taken here as the footprint.  Request totals 12,518,968 / 3,993,316 / 4,224,524 /
  168,638,964 agree with [REF] (also the trace inventory of the go-sieve benchmark README, which lists
  LRU miss ratios at a cache of 10 % of distinct keys: prxy_0 0.048, proj_0 0.24, hm_0 0.32 — used only
  to order the assumed skews).
* [SNIA] the SNIA IOTTA MSR Cambridge README: 36 traces of 36 volumes on 13 servers, CSV
  ``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``; one week per [FAST08] → 604,800 s.

No per-volume figures were found offline for web_1, proj_3 and src2_1, nor for any volume's sequential
fraction, offset skew, or separate read and write sizes: those are **assumed** (stated per volume).  The
request counts given for web_1 (160,981), proj_3 (2,244,642) and src2_1 (657,996) are recalled from
per-volume tables of the MSR set and **not verified offline**.

Preset table (KiB = 1024 B, GiB = 2**30 B; c = cited, d = derived from a cited figure, a = assumed):

| volume | requests | read frac | read KiB | write KiB | footprint GiB | seq frac | zipf θ |
|---|---|---|---|---|---|---|---|
| prxy_0 | 12,518,968 c | 0.0306 c | 6.8 c* | 6.8 c* | 2.03 c | 0.10 a | 0.95 a |
| proj_0 | 4,224,524 c | 0.125 a | 16 a | 32 a | 10.91 c | 0.20 a | 0.70 a |
| hm_0 | 3,993,316 c | 0.355 c | 9.2 c* | 9.2 c* | 5.24 c | 0.15 a | 0.80 a |
| web_1 | 160,981 a | 0.45 a | 24 a | 8 a | 1.5 a | 0.15 a | 0.60 a |
| prxy_1 | 168,638,964 c | 0.65 a | 12 a | 8 a | 15.35 c | 0.10 a | 0.95 a |
| proj_3 | 2,244,642 a | 0.95 a | 8 a | 12 a | 4.0 a | 0.25 a | 0.50 a |
| src2_1 | 657,996 a | 0.90 a | 48 a | 8 a | 8.0 a | 0.35 a | 0.50 a |

(*) the cited figure is the mean over all requests ("KB", read as KiB); the read/write split is not
published, so both are set to it (assumed).

How a stream is drawn (all assumptions of the generator, vectorised NumPy, deterministic per seed and
volume):

* **sequential**: exactly ``round(sequential_fraction · n)`` requests, chosen uniformly among positions
  1 … n-1, continue the request before them (same type, offset = previous offset + size): the seeds/003
  rule of :mod:`ssdx.workloads.analyse`.  A request with its continuations forms a *run*.
* **type**: whole runs are reads or writes; runs are taken in random order as reads until the read count
  reaches ``round(read_fraction · n)`` (filled exactly with single-request runs when there are enough).
* **sizes**: whole 4 KiB pages, geometric (memoryless) with the preset mean per type, then single pages
  added/removed at random so each type's total is ``round(count · mean / 4 KiB)`` pages: the mean is
  exact to half a page over the count.  Real MSR size histograms are multi-modal (4 KiB dominant, 64 KiB
  peaks); the geometric shape is an assumption.
* **offsets**: a run starts on a 4 KiB slot of the footprint drawn with
  :func:`ssdx.workloads.synthetic.zipf_ranks` (θ = ``zipf_theta``; fio's zipf generator) and spread over
  the footprint with :func:`ssdx.workloads.synthetic._scatter`, moved down where the run would pass the
  end of the footprint; a run start that would by chance continue the request before it is moved down one
  page.  Every offset is 4 KiB-aligned and ``offset + size`` ≤ footprint.
* **time**: with ``timed=True`` Poisson arrivals at the trace's *mean* rate ``requests / duration_s``
  times ``time_scale`` (``time_scale`` > 1 compresses time).  The real MSR traces are bursty (FAST 2008
  analyses long idle periods between bursts), so this matches the mean rate only, not the burst
  structure (inter-arrival CV 1 here, far above 1 in the traces).  With ``timed=False`` ``time_s`` is NaN
  (closed-loop replay).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ssdx.workloads.synthetic import _scatter, zipf_ranks
from ssdx.workloads.traces import READ, WRITE, Chunk

PAGE = 4096
KIB = 1024
GIB = 1 << 30
WEEK_S = 7 * 24 * 3600.0  # 604,800 s: one week per FAST 2008 / SNIA README


@dataclass(frozen=True)
class MsrVolume:
    """Published (or assumed) characteristics of one MSR Cambridge volume; ``source`` says which."""

    name: str
    requests: int            # total requests in the published one-week trace
    read_fraction: float     # of requests
    read_kib: float          # mean read size, KiB
    write_kib: float         # mean write size, KiB
    footprint_gib: float     # distinct bytes touched (or the volume/working-set figure that can be cited)
    sequential_fraction: float  # share of requests that continue the previous one (seeds/003 rule)
    zipf_theta: float        # skew of random offsets (assumption unless cited)
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
        if not 0.0 <= self.zipf_theta < 1.0:
            raise ValueError(f"{self.name}: zipf_theta must lie in [0, 1)")
        if self.footprint_bytes < 1024 * PAGE:
            raise ValueError(f"{self.name}: footprint must hold at least 1024 pages")

    @property
    def footprint_bytes(self) -> int:
        """Footprint in bytes, whole 4 KiB pages (offsets + sizes stay below it)."""
        return int(self.footprint_gib * GIB) // PAGE * PAGE

    @property
    def mean_interarrival_s(self) -> float:
        """Mean inter-arrival time of the whole trace, s (``duration_s / requests``)."""
        return self.duration_s / self.requests


VOLUMES: dict[str, MsrVolume] = {v.name: v for v in (
    MsrVolume("prxy_0", 12_518_968, 383_524 / 12_518_968, 6.8, 6.8, 2_181_521_263 / GIB, 0.10, 0.95, WEEK_S,
              "requests: [REF] §2 / [LCS] / [SAL] Table 2 (383,524 R + 12,135,444 W); read_fraction: "
              "[SAL] Table 2 = 0.0306 ([WU17] Table 4: 97.1 % writes; [REF] ~3 %); read/write KiB: [WU17] "
              "Table 4 / [REF] 6.8 KB mean over all requests, split assumed equal ([SAL] implies ~4.9 KB); "
              "footprint: [LCS] 2,181,521,263 B; sequential_fraction 0.10: assumed; zipf_theta 0.95: "
              "assumed (very high reuse: LRU miss 0.048 at 10 % of distinct keys per [LCS] inventory); "
              "duration: one week [FAST08]."),
    MsrVolume("proj_0", 4_224_524, 0.125, 16.0, 32.0, 11_714_738_048 / GIB, 0.20, 0.70, WEEK_S,
              "requests: [REF] §2 / [LCS]; read_fraction 0.125: assumed (write-intensive class per "
              "seeds/001); read 16 KiB / write 32 KiB: assumed ([LCS] gives 40.0 KiB per distinct offset; "
              "hm_0/prxy_0 show 1.4-2x per-offset vs per-request means); footprint: [LCS] 11,714,738,048 B; "
              "sequential_fraction 0.20: assumed; zipf_theta 0.70: assumed (LRU miss 0.24 at 10 % of "
              "distinct keys); duration: one week [FAST08]."),
    MsrVolume("hm_0", 3_993_316, 0.355, 9.2, 9.2, 5_627_588_273 / GIB, 0.15, 0.80, WEEK_S,
              "requests: [REF] §2 / [LCS] ([WU17]: 3,993,300); read_fraction: [WU17] Table 4 (64.5 % "
              "writes) / [REF] 35.5 %; read/write KiB: [WU17] Table 4 / [REF] 9.2 KB mean over all "
              "requests, split assumed equal; footprint: [LCS] 5,627,588,273 B; sequential_fraction 0.15: "
              "assumed; zipf_theta 0.80: assumed (LRU miss 0.32 at 10 % of distinct keys); duration: one "
              "week [FAST08]."),
    MsrVolume("web_1", 160_981, 0.45, 24.0, 8.0, 1.5, 0.15, 0.60, WEEK_S,
              "requests 160,981: assumed (recalled per-volume count, not verified offline); read_fraction "
              "0.45: assumed (< 0.5: write-intensive class per seeds/001); read 24 KiB / write 8 KiB: "
              "assumed; footprint 1.5 GiB: assumed; sequential_fraction 0.15: assumed; zipf_theta 0.60: "
              "assumed; duration: one week [FAST08]."),
    MsrVolume("prxy_1", 168_638_964, 0.65, 12.0, 8.0, 16_482_259_120 / GIB, 0.10, 0.95, WEEK_S,
              "requests: [REF] §2 / [LCS]; read_fraction 0.65: assumed (> 0.5: read-intensive class per "
              "seeds/001); read 12 KiB / write 8 KiB: assumed; footprint: [LCS] 16,482,259,120 B; "
              "sequential_fraction 0.10: assumed; zipf_theta 0.95: assumed (168.6 M requests over 390,226 "
              "distinct offsets per [LCS]: extreme reuse); duration: one week [FAST08]."),
    MsrVolume("proj_3", 2_244_642, 0.95, 8.0, 12.0, 4.0, 0.25, 0.50, WEEK_S,
              "requests 2,244,642: assumed (recalled per-volume count, not verified offline); read_fraction "
              "0.95: assumed (read-intensive class per seeds/001); read 8 KiB / write 12 KiB: assumed; "
              "footprint 4 GiB: assumed; sequential_fraction 0.25: assumed; zipf_theta 0.50: assumed; "
              "duration: one week [FAST08]."),
    MsrVolume("src2_1", 657_996, 0.90, 48.0, 8.0, 8.0, 0.35, 0.50, WEEK_S,
              "requests 657,996: assumed (recalled per-volume count, not verified offline); read_fraction "
              "0.90: assumed (read-intensive class per seeds/001); read 48 KiB / write 8 KiB: assumed "
              "(source-control server reading whole files); footprint 8 GiB: assumed; sequential_fraction "
              "0.35: assumed; zipf_theta 0.50: assumed; duration: one week [FAST08]."),
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
    if count == 0:
        return np.zeros(0, np.int64)
    pages = rng.geometric(min(1.0, PAGE / mean_bytes), count).astype(np.int64)
    target = max(int(round(count * mean_bytes / PAGE)), count)
    while (diff := target - int(pages.sum())) != 0:
        if diff > 0:
            np.add.at(pages, rng.integers(0, count, diff), 1)
        else:
            can = np.flatnonzero(pages > 1)
            pages[rng.choice(can, size=min(-diff, len(can)), replace=False)] -= 1
    return pages


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


def generate(name: str, n: int, seed: int = 0, timed: bool = True, time_scale: float = 1.0) -> Chunk:
    """``n`` requests shaped like MSR volume ``name`` (module docstring for the method and assumptions).

    ``time_s``: Poisson arrivals, s, at the trace's mean rate × ``time_scale`` (> 1 compresses time), or
    NaN with ``timed=False``; ``op`` READ/WRITE; ``offset``/``size`` bytes (4 KiB multiples, inside the
    footprint).  Deterministic for a given ``(name, n, seed, timed, time_scale)``.
    """
    v = volume(name)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not time_scale > 0:
        raise ValueError(f"time_scale must be > 0, got {time_scale}")
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if n == 0:
        return Chunk(*(np.zeros(0, d) for d in (np.float64, np.int8, np.int64, np.int64, np.int64)))

    # sequential continuations and runs
    seq = np.zeros(n, bool)
    k = min(int(round(v.sequential_fraction * n)), n - 1)
    seq[1 + rng.choice(n - 1, k, replace=False)] = True
    run = np.cumsum(~seq) - 1
    run_len = np.bincount(run)

    # types: whole runs
    is_read = _read_runs(rng, run_len, int(round(v.read_fraction * n)))[run]
    op = np.where(is_read, READ, WRITE).astype(np.int8)

    # sizes: whole pages, exact mean per type
    size = np.zeros(n, np.int64)
    size[is_read] = _pages(rng, int(is_read.sum()), v.read_kib * KIB) * PAGE
    size[~is_read] = _pages(rng, int((~is_read).sum()), v.write_kib * KIB) * PAGE

    # offsets: run starts on zipf-skewed, scattered 4 KiB slots; continuations follow contiguously
    heads = np.flatnonzero(~seq)
    before = np.cumsum(size) - size                       # bytes before each request in the stream
    within = before - before[heads][run]                  # bytes before it within its run
    run_bytes = np.bincount(run, weights=size).astype(np.int64)
    span = v.footprint_bytes
    if run_bytes.max() > span:
        raise ValueError(f"{name}: a run of {run_bytes.max()} B exceeds the footprint; raise footprint_gib")
    slots = span // PAGE
    start = _scatter(zipf_ranks(rng, len(heads), slots, v.zipf_theta), slots) * PAGE
    start = np.minimum(start, (span - run_bytes) // PAGE * PAGE)
    while True:  # a run start that happens to continue the request before it is moved down one page
        end = start[run] + within + size
        h = heads[1:]
        clash = (op[h] == op[h - 1]) & (start[1:] == end[h - 1])
        if not clash.any():
            break
        start[1:][clash] -= PAGE                          # end >= 4 KiB, so the start stays >= 0
    offset = start[run] + within

    if timed:
        time_s = np.cumsum(rng.exponential(v.mean_interarrival_s / time_scale, n))
    else:
        time_s = np.full(n, np.nan)
    return Chunk(time_s=time_s, op=op, offset=offset.astype(np.int64), size=size,
                 line=np.arange(1, n + 1, dtype=np.int64))
