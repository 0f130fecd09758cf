"""Trace analyser: the figures an SSD engineer reads off a block trace, streamed chunk by chunk.

* **Mix**: commands and bytes per type (read, write, trim), the read fraction of read+write commands.
* **Sequential / random** by the rule of "Storage requirements suited to an OS installation (2/3)" (Qiita, in
  Japanese, posted 2022-03-15): a command is sequential when it has the same type as the command before it and
  starts where that one ended (LBA-contiguous and increasing); every other command is random.  The rule is
  carried across chunk boundaries.
* **Sizes**: exact histogram in 512-byte sectors (sizes above 32 MiB share the last bin), mean, p50, p99.
* **Footprint**: distinct 4 KiB pages touched (all commands, and written), i.e. the union of extents, kept
  as merged page intervals and counted arithmetically (a 1 TB request is one interval, not 250 M pages).
* **Inter-arrival**: mean, coefficient of variation (exact running sums) and p50/p99 from a histogram
  of log10(Δt) with 0.005-decade bins (±0.6 %), over consecutive timestamps; absent for fio v2 logs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ssdx.workloads.traces import READ, SECTOR, TRIM, WRITE, Chunk

PAGE = 4096
MAX_SECTORS = 1 << 16  # 32 MiB
_LOG_LO, _LOG_HI, _LOG_BIN = -9.0, 5.0, 0.005


def _extents(offset: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The 4 KiB page intervals ``[first, end)`` the extents cover, shape ``(n, 2)``."""
    offset, size = np.asarray(offset, np.int64), np.asarray(size, np.int64)
    # the last byte's page + 1, not (offset + size + PAGE - 1) // PAGE: that sum passes int64 for an extent
    # ending near the 2^63-byte bound traces accept
    return np.stack([offset // PAGE, (offset + size - 1) // PAGE + 1], axis=1)


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Union of two sets of page intervals (``(n, 2)``, ``[first, end)``) as sorted, disjoint, non-adjacent
    intervals: memory grows with the number of extents, never with the pages they cover."""
    iv = np.concatenate([a, b])
    if len(iv) == 0:
        return np.zeros((0, 2), np.int64)
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    reach = np.maximum.accumulate(iv[:, 1])
    head = np.r_[True, iv[1:, 0] > reach[:-1]]  # an interval that starts past every earlier end opens a run
    at = np.flatnonzero(head)
    return np.stack([iv[at, 0], np.maximum.reduceat(iv[:, 1], at)], axis=1)


def _count(iv: np.ndarray) -> int:
    """Pages in disjoint intervals."""
    return int((iv[:, 1] - iv[:, 0]).sum())


def _hist_quantile(counts: np.ndarray, edges_value, q: float) -> float:
    total = counts.sum()
    if total == 0:
        return float("nan")
    i = int(np.searchsorted(np.cumsum(counts), q * total, side="left"))
    return float(edges_value(min(i, len(counts) - 1)))


class Analysis:
    """Accumulates chunks (:meth:`add`) and reports (:meth:`summary`)."""

    def __init__(self) -> None:
        self.n = np.zeros(3, np.int64)
        self.bytes = np.zeros(3, np.int64)
        self.seq = np.zeros(3, np.int64)
        self.seq_bytes = np.zeros(3, np.int64)
        self.sizes = np.zeros(MAX_SECTORS + 1, np.int64)
        self.footprint = np.zeros((0, 2), np.int64)  # merged page intervals (_union)
        self.write_footprint = np.zeros((0, 2), np.int64)
        self.prev: tuple[int, int] | None = None  # (op, end offset) of the last command seen
        self.prev_t = np.nan
        self.min_t = np.inf  # earliest and latest timestamps: a trace need not be sorted
        self.max_t = -np.inf
        self.gap_n, self.gap_sum, self.gap_sq = 0, 0.0, 0.0
        self.gap_hist = np.zeros(int(round((_LOG_HI - _LOG_LO) / _LOG_BIN)) + 1, np.int64)

    def add(self, c: Chunk) -> None:
        if len(c) == 0:
            return
        op, off, size = c.op.astype(np.int64), c.offset, c.size
        prev_op = np.r_[self.prev[0] if self.prev else -1, op[:-1]]
        prev_end = np.r_[self.prev[1] if self.prev else -1, (off + size)[:-1]]
        seq = (op == prev_op) & (off == prev_end)
        self.prev = (int(op[-1]), int(off[-1] + size[-1]))
        for k in (READ, WRITE, TRIM):
            m = op == k
            self.n[k] += int(m.sum())
            self.bytes[k] += int(size[m].sum())
            self.seq[k] += int((m & seq).sum())
            self.seq_bytes[k] += int(size[m & seq].sum())
        sectors = np.minimum((size + SECTOR - 1) // SECTOR, MAX_SECTORS)
        self.sizes += np.bincount(sectors, minlength=MAX_SECTORS + 1)
        data = op != TRIM
        self.footprint = _union(self.footprint, _extents(off[data], size[data]))
        w = op == WRITE
        self.write_footprint = _union(self.write_footprint, _extents(off[w], size[w]))
        t = c.time_s
        if np.all(np.isnan(t)):
            return
        finite = t[np.isfinite(t)]
        if len(finite):
            self.min_t = min(self.min_t, float(finite.min()))
            self.max_t = max(self.max_t, float(finite.max()))
        gaps = np.diff(np.r_[self.prev_t, t]) if not np.isnan(self.prev_t) else np.diff(t)
        gaps = gaps[np.isfinite(gaps) & (gaps >= 0)]
        self.prev_t = float(t[-1])
        self.gap_n += len(gaps)
        self.gap_sum += float(gaps.sum())
        self.gap_sq += float((gaps * gaps).sum())
        lg = np.log10(np.maximum(gaps, 10.0 ** _LOG_LO))
        idx = np.clip(np.round((lg - _LOG_LO) / _LOG_BIN).astype(np.int64), 0, len(self.gap_hist) - 1)
        self.gap_hist += np.bincount(idx, minlength=len(self.gap_hist))

    def summary(self) -> dict[str, Any]:
        rw = int(self.n[READ] + self.n[WRITE])
        total = int(self.n.sum())
        names = {READ: "read", WRITE: "write", TRIM: "trim"}
        per_type = {names[k]: {"commands": int(self.n[k]), "bytes": int(self.bytes[k]),
                               "sequential_commands": int(self.seq[k]),
                               "random_commands": int(self.n[k] - self.seq[k]),
                               "sequential_bytes": int(self.seq_bytes[k]),
                               "random_bytes": int(self.bytes[k] - self.seq_bytes[k])} for k in names}
        nz = np.flatnonzero(self.sizes)
        size_hist = {int(s) * SECTOR: int(self.sizes[s]) for s in nz}
        mean_size = float((self.sizes * np.arange(len(self.sizes)) * SECTOR).sum() / max(total, 1))
        out: dict[str, Any] = {
            "requests": total,
            "read_fraction": float(self.n[READ] / rw) if rw else None,
            "read_bytes_fraction": float(self.bytes[READ] / max(self.bytes[READ] + self.bytes[WRITE], 1)),
            "per_type": per_type,
            "sequential_fraction": float(self.seq.sum() / max(total, 1)),
            "size_bytes": {"mean": mean_size,
                           "p50": _hist_quantile(self.sizes, lambda i: i * SECTOR, 0.5),
                           "p99": _hist_quantile(self.sizes, lambda i: i * SECTOR, 0.99),
                           "histogram": size_hist},
            "footprint_bytes": _count(self.footprint) * PAGE,
            "write_footprint_bytes": _count(self.write_footprint) * PAGE,
        }
        if self.gap_n:
            mean = self.gap_sum / self.gap_n
            var = max(self.gap_sq / self.gap_n - mean * mean, 0.0)
            to_s = lambda i: 10.0 ** (_LOG_LO + i * _LOG_BIN)  # noqa: E731
            out["duration_s"] = self.max_t - self.min_t  # unsorted times: the span, never negative
            out["iops"] = total / out["duration_s"] if out["duration_s"] > 0 else None
            out["interarrival_s"] = {"mean": mean, "cv": float(np.sqrt(var) / mean) if mean > 0 else None,
                                     "p50": _hist_quantile(self.gap_hist, to_s, 0.5),
                                     "p99": _hist_quantile(self.gap_hist, to_s, 0.99)}
        return out


def analyse(chunks: Iterable[Chunk]) -> dict[str, Any]:
    """Summary of a stream of chunks (module docstring)."""
    a = Analysis()
    for c in chunks:
        a.add(c)
    return a.summary()
