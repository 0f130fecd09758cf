"""Synthetic request streams in the trace array form (``ssdx.workloads.traces.Chunk``).

**windows11_boot** — the Windows 11 cold-boot command log of seeds/003 (REFERENCE §4), regenerated with
its published totals exactly (MB = 1e6 bytes, sizes in whole 512-byte sectors, so a total is exact to
the log's 0.01 MB precision):

| | commands | sequential / random commands | bytes | sequential / random bytes |
|---|---|---|---|---|
| read | 40,553 | 6 / 40,547 | 1029.5 MB | 0.14 / 1029.36 MB |
| write | 4,938 | 2 / 4,936 | 96.2 MB | 0.02 / 96.18 MB |

"Sequential" is the seed's rule (``ssdx.workloads.analyse``): the same type as the command before and
LBA-contiguous and increasing.  What the log does not give is assumed and labelled:

* command sizes: a 4 KiB-granular distribution (half of the commands 4 KiB, the rest 8 KiB … 1 MiB,
  geometric), scaled by whole sectors so each type's byte total is exact (assumption: boot I/O is
  dominated by 4 KiB page-ins with larger file reads; the log gives only totals);
* order: writes interleaved uniformly at random among the reads;
* addresses: uniformly random 4 KiB-aligned offsets in a 240 GB drive (the seed's logging drive),
  redrawn wherever they would accidentally continue the previous command; the 6 + 2 sequential
  commands continue the command before them;
* timing: none (a boot is dependency-bound, replayed at QD1).
"""

from __future__ import annotations

import numpy as np

from ssdx.workloads.traces import READ, SECTOR, WRITE, Chunk

MB = 1e6
BOOT = {  # seeds/003 (REFERENCE §4)
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
    """The seeds/003 boot log as a request stream (module docstring); ``time_s`` is NaN (QD1 replay)."""
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
    """seeds/003's back-of-envelope SATA-vs-PCIe boot-time difference, s.

    Its assumptions: a boot is dependency-bound (QD1); a 4 KB random QD1 read takes ~40 µs on SATA
    (100 MB/s) and a third of that on PCIe, "take a 30 µs difference"; QD1 random writes are ~10× slower
    than reads, "take a 200 µs difference"; ~40,000 reads and ~5,000 writes.  Defaults reproduce its
    2.2 s; with the log's exact counts (40,553 and 4,938) it is 2.20 s.
    """
    return read_commands * read_diff_us * 1e-6 + write_commands * write_diff_us * 1e-6


# ------------------------------------------------------------------------------------------ fio-like

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
    hottest 10 % of ranks is within ~1 point of the exact Zipf share (tested)."""
    if theta == 0.0:
        return rng.integers(0, n, count)
    if not 0.0 < theta < 1.0:
        raise ValueError(f"zipf theta must lie in [0, 1), got {theta}")
    zetan, zeta2 = _zeta(n, theta), _zeta(2, theta)
    alpha = 1.0 / (1.0 - theta)
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
    u = rng.random(count)
    uz = u * zetan
    tail = (n * (eta * u - eta + 1.0) ** alpha).astype(np.int64)
    ranks = np.where(uz < 1.0, 0, np.where(uz < 1.0 + 0.5**theta, 1, np.minimum(tail, n - 1)))
    return ranks.astype(np.int64)


def _scatter(rank: np.ndarray, n: int) -> np.ndarray:
    """Spread ranks over ``[0, n)`` with a 64-bit mixing hash, as fio hashes its zipf values (hot
    blocks are not all at the start of the device)."""
    x = rank.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    return (x % np.uint64(n)).astype(np.int64)


def fio_like(n: int, read_fraction: float = 0.0, block_sizes: dict[int, float] | None = None,
             random: bool = True, span_bytes: float = 1e9, zipf_theta: float = 0.0, seed: int = 0,
             offset_bytes: int = 0) -> Chunk:
    """``n`` requests of a fio-like job (closed loop: ``time_s`` NaN; the queue depth is the replayer's).

    ``read_fraction`` (fio ``rwmixread``/100); ``block_sizes`` bytes → weight (fio ``bssplit``; default
    4 KiB); ``random`` or sequential; ``span_bytes`` the region (fio ``size``) from ``offset_bytes``;
    ``zipf_theta`` the skew of random offsets over ``block``-aligned slots (fio ``zipf:θ``; 0 uniform).
    Sequential jobs walk the region in order, wrapping, one stream for reads and writes together.
    """
    if not 0.0 <= read_fraction <= 1.0:
        raise ValueError(f"read_fraction must lie in [0, 1], got {read_fraction}")
    bs = block_sizes or {4096: 1.0}
    sizes = np.asarray(list(bs), np.int64)
    weights = np.asarray(list(bs.values()), float)
    if np.any(sizes <= 0) or np.any(sizes % SECTOR) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(f"block_sizes must map positive multiples of {SECTOR} bytes to weights >= 0")
    rng = np.random.default_rng(seed)
    size = rng.choice(sizes, n, p=weights / weights.sum())
    op = np.where(rng.random(n) < read_fraction, READ, WRITE).astype(np.int8)
    align = int(sizes.min())
    slots = int(span_bytes // align)
    if slots < 1 or span_bytes < sizes.max():
        raise ValueError("span_bytes must hold the largest block size")
    if random:
        slot = _scatter(zipf_ranks(rng, n, slots, zipf_theta), slots)
        offset = slot * align
        offset = np.minimum(offset, int(span_bytes) - size)  # keep every request inside the span
        offset -= offset % align
    else:
        ends = np.cumsum(size)
        offset = (ends - size) % int(slots * align)
        offset = np.where(offset + size > slots * align, 0, offset)
    return Chunk(time_s=np.full(n, np.nan), op=op, offset=offset + int(offset_bytes), size=size,
                 line=np.arange(1, n + 1))
