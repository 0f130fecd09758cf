"""The host side of the hybrid's replay: requests cut into the 4 KiB lines the model steps through
(:func:`lines_from_requests`), a chunk padded to its compiled length (:func:`pad_lines`), and the NAND
page operations the same lines cost a drive without SCM (:func:`no_scm_pages`).  Host NumPy arrays only."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ssdx.models.hybrid.params import SECTOR_BYTES, UNIT_BYTES
from ssdx.models.hybrid.state import Lines
from ssdx.workloads.traces import READ, WRITE


def lines_from_requests(op: np.ndarray, offset: np.ndarray, size: np.ndarray, measure_from: int = 0,
                        half_from: int | None = None) -> dict[str, np.ndarray]:
    """Cut requests into 4 KiB lines (host arrays).  Zero-size requests and other op codes are dropped;
    requests with index ``>= measure_from`` are measured, and those with index ``>= half_from`` (default:
    the middle of the measured requests) form the second half of the steady-state check."""
    op, offset, size = (np.asarray(a) for a in (op, offset, size))
    keep = ((op == READ) | (op == WRITE)) & (size > 0)
    idx = np.flatnonzero(keep)
    op, offset, size = op[keep].astype(np.int32), offset[keep].astype(np.int64), size[keep].astype(np.int64)
    first_line = offset // UNIT_BYTES
    last_line = (offset + size - 1) // UNIT_BYTES
    k = (last_line - first_line + 1).astype(np.int64)
    req = np.repeat(np.arange(len(op)), k)
    pos = np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
    line = first_line[req] + pos
    lo = np.maximum(offset[req], line * UNIT_BYTES)
    hi = np.minimum(offset[req] + size[req], (line + 1) * UNIT_BYTES)
    sectors = np.ceil((hi - lo) / SECTOR_BYTES).astype(np.int32)
    if half_from is None:
        n_measured = int(np.sum(idx >= measure_from))
        half_from = int(idx[len(idx) - n_measured + n_measured // 2]) if n_measured else 0
    return {"op": op[req], "line": (line % (1 << 31)).astype(np.int32), "sectors": sectors,
            "first": pos == 0, "last": pos == k[req] - 1, "measure": idx[req] >= measure_from,
            "half": idx[req] >= half_from, "valid": np.ones(len(req), bool)}


def pad_lines(chunk: dict[str, np.ndarray], length: int) -> Lines:
    """Pad a host chunk of lines to ``length`` (padding is invalid and touches nothing)."""
    n = len(chunk["op"])
    if n > length:
        raise ValueError(f"chunk of {n} lines exceeds the padded length {length}")
    f = lambda a, fill: np.concatenate([a, np.full(length - n, fill, a.dtype)])  # noqa: E731
    return Lines(op=f(chunk["op"], 0), line=f(chunk["line"], 0), sectors=f(chunk["sectors"], 0),
                 first=f(chunk["first"], False), last=f(chunk["last"], False),
                 measure=f(chunk["measure"], False), half=f(chunk["half"], False),
                 valid=f(chunk["valid"], False))


def no_scm_pages(lines: Mapping[str, np.ndarray], page_units: np.ndarray) -> np.ndarray:
    """NAND page operations of the measured lines on a drive without SCM, per configuration: a read request
    costs one page read per ``page_units`` of its lines (the model's charging of consecutive misses), and
    every written line is programmed once (``lines / page_units`` pages)."""
    idx = np.arange(len(lines["op"]))
    pos = idx - np.maximum.accumulate(np.where(lines["first"], idx, 0))
    m = lines["measure"] & lines["valid"]
    rd, wr = m & (lines["op"] == READ), m & (lines["op"] == WRITE)
    return np.array([np.sum(rd & (pos % int(u) == 0)) + np.sum(wr) / u for u in np.asarray(page_units)])
