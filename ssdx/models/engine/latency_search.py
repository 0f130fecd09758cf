"""fio's latency-target search on a replay (fio HOWTO ``latency_target``, ``latency_window``,
``latency_percentile``, ``latency_run``; fio's ``io_u.c``, ``lat_target_*``).

fio runs the job in windows of ``latency_window`` at a queue depth it moves.  It starts at depth 1 with
the bounds ``low = 1`` and ``high = iodepth``.  After a window in which at least ``latency_percentile`` %
of the completed requests took no longer than ``latency_target`` (a *success*) it sets ``low`` to the
depth and raises the depth: doubling it while ``high`` is still ``iodepth``, else halfway to ``high``
(capped at ``iodepth``); three successes in a row just below ``high`` raise ``high`` by one.  After a
window that misses (a *failure*) it sets ``high`` to the depth and moves halfway down to ``low`` (one
below it where the depth already is ``low``), after letting the requests in flight complete.  With a
percentile of 100 a single request over the target is a failure at once, and one at depth 1 ends the
job with an error (``ETIMEDOUT``).  Without ``latency_run``, once a success leaves the depth where it
was, fio resets the job's figures, runs one more window at that depth and ends the job: the figures
reported are that window's.  With ``latency_run`` it keeps moving the depth until the job's requests end,
every window counted.

Here each window is a replay of the next requests of the group's stream at the window's depth from the
drive the previous window left (``replay.Carry``): the requests are first replayed with their latencies
kept to find their issue and completion times (``steady.times``), and the window is the requests issued
before it ends — ``latency_window`` after its start, or, with a percentile of 100, the completion of the
first request over the target; those requests are then replayed again from the same state, which a
causal engine gives exactly as if the stream had stopped there.  Each window starts once the previous
window's requests have completed (fio waits for them only when it moves the depth down; the difference
is at most the previous depth's requests).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ssdx.workloads.fio_timing import LatencyTarget

#: requests a window's first replay holds at least, per unit of queue depth
MIN_PER_SLOT = 16


@dataclass
class Search:
    """fio's search state (``td->latency_qd``, ``_low``, ``_high``, ``latency_stable_count``,
    ``latency_end_run``) and the windows run so far."""

    iodepth: int
    depth: int = 1
    low: int = 1
    high: int = 0
    stable: int = 0
    end_run: bool = False
    done: bool = False
    error: str | None = None
    windows: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.high = self.high or self.iodepth

    def success(self, run: bool) -> bool:
        """A window met the target (fio's ``lat_target_success``); True where the figures restart."""
        qd = self.depth
        self.low = qd
        if qd + 1 == self.high:
            self.stable += 1
            if self.stable >= 3:
                self.high += 1
                self.stable = 0
        self.depth = (qd + self.high) // 2 if self.high != self.iodepth else qd * 2
        self.depth = min(self.depth, self.iodepth)
        if not run and self.depth == qd:
            if self.end_run:
                self.done = True
            else:
                self.end_run = True
                return True
        return False

    def failure(self, percentile: float) -> None:
        """A window missed the target (fio's ``__lat_target_failed``)."""
        if self.depth == 1:
            if percentile == 100.0:  # fio's lat_fatal: the job ends with ETIMEDOUT
                self.error = ("a request took longer than latency_target at queue depth 1 (fio ends the "
                              "job: ETIMEDOUT)")
                self.done = True
            return
        self.high = self.depth
        if self.depth == self.low:
            self.low -= 1
        self.depth = (self.depth + self.low) // 2
        self.stable = 0

    def summary(self, spec: LatencyTarget) -> dict[str, Any]:
        """The ``latency_target`` block of a group's figures."""
        return {"target_us": spec.target_s * 1e6, "window_s": spec.window_s, "percentile": spec.percentile,
                "latency_run": spec.run, "depth": self.depth, "error": self.error,
                "windows": self.windows}


def window_end(spec: LatencyTarget, issue: np.ndarray, done: np.ndarray,
               lat: np.ndarray) -> tuple[int, str | None]:
    """The number of requests (in stream order) the window holds and what ended it: the requests issued
    before ``window_s`` (``"window"``) or, with a percentile of 100, before the first completion over the
    target (``"over"``), whichever is first (module docstring).  Where every request was issued before
    that end, more requests could have been: the end is ``None`` unless a request over the target fixed
    it (``"over"``)."""
    end, why = spec.window_s, "window"
    if spec.percentile == 100.0:
        over = lat > spec.target_s
        if over.any() and float(done[over].min()) < end:
            end, why = float(done[over].min()), "over"
    n = max(int(np.searchsorted(issue, end, side="left")), 1)
    if n < len(issue):
        return n, why
    return n, "over" if why == "over" else None


def replay_search(trees_at: Callable[[int], tuple], chunks: list, spec: LatencyTarget, iodepth: int,
                  carry: Any = None, **kw) -> tuple[list, Search]:
    """Run fio's search (module docstring) over the group's stream ``chunks`` (materialised) from
    ``carry``; ``trees_at(depth)`` gives the configuration at a queue depth (one layout for all).  Returns
    the replays whose figures count (``replay.Result``; the last one's ``extra["carry"]`` is the drive
    after the job) and the search.  ``kw`` goes to ``replay.replay``."""
    from ssdx.models.engine import replay, steady

    search = Search(iodepth)
    counted: list = []
    rest = chunks
    rate = None  # requests per second per unit of depth, from the last window
    last = None
    while rest and not search.done:
        qd = search.depth
        trees = trees_at(qd)
        left = sum(len(c) for c in rest)
        want = MIN_PER_SLOT * qd if rate is None else math.ceil(1.5 * rate * qd * spec.window_s) + 2 * qd
        while True:
            n_try = min(max(want, MIN_PER_SLOT * qd), left)
            head = steady.split_at(rest, n_try)[0]
            full = replay.replay(trees, head, keep_latency=True, carry=copy.deepcopy(carry), **kw)
            lat = np.asarray(full.latencies[0], np.float64)
            issue, done = steady.times(lat, qd)
            n, why = window_end(spec, issue, done, lat)
            if (why is not None and n < len(issue)) or n_try == left:
                break
            want = 4 * n_try
        head, rest = steady.split_at(rest, n)
        res = replay.replay(trees, head, carry=carry, **kw)
        carry = res.extra["carry"]
        last = res
        span = float(done[:n].max())
        rate = n / max(span, 1e-12) / qd
        met = 100.0 * float(np.mean(lat[:n] <= spec.target_s))
        entry = {"queue_depth": qd, "requests": n, "span_s": span, "within_target_pct": met}
        counted.append(res)
        if why is None:  # the stream ended inside the window: no check (fio: the job ends)
            entry["decision"] = "end"
        elif met >= spec.percentile and why == "window":
            restart = search.success(spec.run)
            entry["decision"] = ("final" if search.done else "hold" if restart or search.depth == qd
                                 else "up")
            if restart:  # fio resets the figures: only the windows after count
                counted = []
        else:
            search.failure(spec.percentile)
            entry["decision"] = "error" if search.error else "down"
        search.windows.append(entry)
    if not counted and last is not None:
        counted = [last]
    return counted, search
