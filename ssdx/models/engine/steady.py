"""fio's steady-state detection on a replay (fio HOWTO ``steadystate``; fio's ``steadystate.c``).

fio samples a running job every check interval: the requests it completed in the interval per second
(``iops``), the bytes per second (``bw``) or the mean completion latency (``lat``).  Recording starts at
the first check at least one interval after ``steadystate_ramp_time``; once the last ``duration /
interval`` samples fill the rolling window, each check judges the window: the largest deviation of a
sample from the window's mean (``iops``, ``bw``, ``lat``) or the least-squares slope of the samples
against their position in the window (``*_slope``), as a share of the mean where the limit is given in %.
At the first check where it is below the limit, fio ends the job: nothing more is issued, what is in
flight completes.

fio's ``ramp_time`` (:func:`replay_after_ramp`) is cut the same way: the requests issued before it run
uncounted, and the rest go on from the state they left.

Here the samples come from one replay of the stream with every request's latency: each request's issue
and completion times are rebuilt from them (:func:`times`: the closed loop's slots, or the open loop's
arrivals), the checks are taken while the job is still issuing (a stream cut by ``workload.requests``
says nothing about the time after it), and :func:`detect` finds the instant.  The job's figures are then
those of the requests issued up to that instant, replayed again from the same drive state
(``ssdx.models.engine.jobs.replay_groups``): a causal engine gives them exactly as if the stream had
stopped there.
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from ssdx.workloads.fio_timing import SteadyState


def times(lat_s: np.ndarray, queue_depth: int, arrival_s: np.ndarray | None = None) -> tuple[np.ndarray,
                                                                                             np.ndarray]:
    """Issue and completion times (s, from the group's start) of requests in stream order with latencies
    ``lat_s``: in the open loop (``arrival_s`` given) a latency counts from the arrival; in the closed
    loop from the issue, each request issued when the earliest of ``queue_depth`` slots frees, as the
    engine issues them."""
    lat = np.asarray(lat_s, np.float64)
    if arrival_s is not None:
        arrival = np.asarray(arrival_s, np.float64)
        return arrival, arrival + lat
    slots = [0.0] * int(queue_depth)
    issue = np.empty(len(lat))
    for i, x in enumerate(lat.tolist()):
        t = heapq.heappop(slots)
        issue[i] = t
        heapq.heappush(slots, t + x)
    return issue, issue + lat


@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found: ``attained`` and when (``at_s``, a check instant), the number of
    samples recorded and checks judged, and at the last check judged the criterion's value (in % of the
    mean where the limit is) and the window's mean."""

    attained: bool
    at_s: float | None
    samples: int
    checks: int
    criterion: float | None
    window_mean: float | None

    def summary(self, spec: SteadyState) -> dict[str, Any]:
        """The ``steady_state`` block of a summary."""
        return {"criterion": spec.criterion, "limit": spec.limit, "percent": spec.percent,
                "duration_s": spec.duration_s, "ramp_s": spec.ramp_s, "interval_s": spec.interval_s,
                "attained": self.attained, "attained_at_s": self.at_s, "samples": self.samples,
                "checks": self.checks, "last_criterion": self.criterion, "window_mean": self.window_mean}


def samples(spec: SteadyState, done_s: np.ndarray, lat_s: np.ndarray, size: np.ndarray,
            end_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The check instants and samples of :data:`spec.metric` over the completions ``done_s`` (their
    latencies ``lat_s`` and sizes ``size``), every check up to ``end_s`` from the first one at least one
    interval after the ramp."""
    dt = spec.interval_s
    k_last = int(np.floor(end_s / dt + 1e-9))
    k_first = int(np.ceil((spec.ramp_s + dt) / dt - 1e-9))
    if k_last < k_first:
        return np.zeros(0), np.zeros(0)
    k = np.ceil(np.asarray(done_s, np.float64) / dt - 1e-12).astype(np.int64)  # done in ((k-1)dt, k dt]
    k = np.clip(k, 0, k_last + 1)
    n = k_last + 2
    count = np.bincount(k, minlength=n)[k_first:k_last + 1].astype(np.float64)
    if spec.metric == "iops":
        value = count / dt
    elif spec.metric == "bw":
        value = np.bincount(k, weights=np.asarray(size, np.float64), minlength=n)[k_first:k_last + 1] / dt
    else:
        total = np.bincount(k, weights=np.asarray(lat_s, np.float64), minlength=n)[k_first:k_last + 1]
        value = np.where(count > 0, total / np.maximum(count, 1.0), 0.0)
    return np.arange(k_first, k_last + 1) * dt, value


def criterion(spec: SteadyState, window: np.ndarray) -> np.ndarray:
    """The criterion of each rolling window (rows of ``window``, samples oldest first), as fio computes it:
    the largest absolute deviation from the window's mean, or the least-squares slope per sample; in % of
    the mean where the limit is; the absolute value."""
    n = window.shape[-1]
    mean = window.mean(-1)
    if spec.slope:
        x = np.arange(n, dtype=np.float64)
        sx, sxx = x.sum(), (x * x).sum()
        value = ((window * x).sum(-1) - sx * window.sum(-1) / n) / (sxx - sx * sx / n) if n > 1 else 0 * mean
    else:
        value = np.abs(window - mean[..., None]).max(-1)
    if spec.percent:
        value = 100.0 * value / np.where(mean != 0, mean, np.nan)
    return np.abs(value)


def detect(spec: SteadyState, issue_s: np.ndarray, done_s: np.ndarray, lat_s: np.ndarray,
           size: np.ndarray) -> Detection:
    """When fio would end the job (module docstring): checks while the job issues (up to its last issue)."""
    t, v = samples(spec, done_s, lat_s, size, float(np.max(issue_s)) if len(issue_s) else 0.0)
    n = spec.samples
    if len(v) < n:
        return Detection(False, None, len(v), 0, None, None)
    windows = np.lib.stride_tricks.sliding_window_view(v, n)
    c = criterion(spec, windows)
    hit = np.flatnonzero(c < spec.limit)
    last = int(hit[0]) if hit.size else len(c) - 1
    return Detection(bool(hit.size), float(t[last + n - 1]) if hit.size else None, len(v), last + 1,
                     float(c[last]) if np.isfinite(c[last]) else None, float(windows[last].mean()))


def group_spec(jobs: list) -> SteadyState | None:
    """The steady-state detection of a group of jobs that run together (``ssdx.workloads.fio.FioWorkload``
    ``.jobs``): fio judges a reporting group as one, so its jobs must share it (or none has it); a group
    whose jobs differ is refused naming the first that does."""
    specs = [j.steady for j in jobs]
    if all(s is None for s in specs):
        return None
    for j, s in zip(jobs, specs, strict=True):
        if s != specs[0]:
            j.fail("steadystate_duration", "the jobs of a group (jobs that run together) are judged as one: "
                   "give them the same steadystate options, or separate them with stonewall")
    return specs[0]


def replay_until_steady(trees: tuple, chunks: list, spec: SteadyState, queue_depth: int, open_loop: bool,
                        time_scale: float, carry: Any = None, **kw) -> tuple[Any, Detection]:
    """Replay ``chunks`` (the group's whole stream, materialised) on one configuration ``trees`` from
    ``carry`` with every latency kept, find when fio would end the job (:func:`detect`) and, where it
    would, replay the requests issued until then again from the same state: the result
    (``ssdx.models.engine.replay.Result``, its ``extra["carry"]`` the drive after them) and the detection.
    ``kw`` goes to ``replay.replay``."""
    from ssdx.models.engine import replay

    full, issue, done = _timed_replay(trees, chunks, queue_depth, open_loop, time_scale, carry, **kw)
    size = np.concatenate([np.asarray(c.size) for c in chunks])
    found = detect(spec, issue, done, full.latencies[0], size)
    if not found.attained:
        return full, found
    n = int(np.searchsorted(issue, found.at_s, side="right"))  # issued up to the check that ended the job
    return replay.replay(trees, split_at(chunks, n)[0], carry=carry, **kw), found


def _timed_replay(trees: tuple, chunks: list, queue_depth: int, open_loop: bool, time_scale: float,
                  carry: Any, **kw) -> tuple[Any, np.ndarray, np.ndarray]:
    """A replay of ``chunks`` from a copy of ``carry`` (which stays as it was, for a second replay from the
    same state) with every latency kept, and its requests' issue and completion times (:func:`times`)."""
    import copy

    from ssdx.models.engine import replay

    full = replay.replay(trees, chunks, keep_latency=True, carry=copy.deepcopy(carry), **kw)
    arrival = None
    if open_loop:
        t = np.concatenate([np.asarray(c.time_s, np.float64) for c in chunks])
        arrival = (t - t[0]) / time_scale
    issue, done = times(full.latencies[0], queue_depth, arrival)
    return full, issue, done


def group_ramp(jobs: list) -> float:
    """The ``ramp_time`` of a group of jobs that run together, s (0: none); the jobs of a group are reported
    as one, so they must share it, and a group does not take it with steady-state detection (both decide
    which requests count) — each refused naming the job."""
    ramps = [j.ramp_s for j in jobs]
    for j, r in zip(jobs, ramps, strict=True):
        if r != ramps[0]:
            j.fail("ramp_time", "the jobs of a group (jobs that run together) are reported as one: give them "
                   "the same ramp_time, or separate them with stonewall")
        if r and j.steady is not None:
            j.fail("ramp_time", "ramp_time with steady-state detection: use ss_ramp, the detection's own "
                   "ramp")
    return float(ramps[0])


def split_at(chunks: list, n: int) -> tuple[list, list]:
    """The first ``n`` requests of ``chunks`` and the rest, as chunks."""
    head, tail, left = [], [], n
    for c in chunks:
        take = min(max(left, 0), len(c))
        cut = {f.name: np.asarray(getattr(c, f.name)) for f in dataclasses.fields(c)}
        if take:
            head.append(dataclasses.replace(c, **{k: v[:take] for k, v in cut.items()}))
        if take < len(c):
            tail.append(dataclasses.replace(c, **{k: v[take:] for k, v in cut.items()}))
        left -= take
    return head, tail


def replay_after_ramp(trees: tuple, chunks: list, ramp_s: float, queue_depth: int, open_loop: bool,
                      time_scale: float, carry: Any = None, **kw) -> tuple[Any, int]:
    """fio's ``ramp_time``: the group's requests issued in its first ``ramp_s`` seconds run on the drive but
    are not counted.  The stream is replayed once with its latencies (the issue times, :func:`times`), then
    its first requests up to the ramp's end, then the rest going on from there as the same stream (no
    barrier): the result of the rest and the number of ramp requests.  Refused when the ramp holds every
    request."""
    from ssdx.core.fields import ConfigError
    from ssdx.models.engine import replay

    full, issue, _ = _timed_replay(trees, chunks, queue_depth, open_loop, time_scale, carry, **kw)
    n = int(np.searchsorted(issue, ramp_s, side="left"))
    if n >= len(issue):
        raise ConfigError("workload.requests", len(issue), f"every request is issued within ramp_time "
                          f"({ramp_s:g} s), so nothing would be counted: raise workload.requests")
    if n == 0:
        return full, 0
    head, tail = split_at(chunks, n)
    ramp = replay.replay(trees, head, carry=carry, **kw)
    go_on = dataclasses.replace(ramp.extra["carry"], barrier=False)
    return replay.replay(trees, tail, carry=go_on, **kw), n
