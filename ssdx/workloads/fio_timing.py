"""fio job files, part 4: the options that time a job — ``startdelay``, ``flow``, ``verify_backlog``'s
checks, ``latency_target`` and fio's steady-state detection (``steadystate``) — read from a job's section
by ``ssdx.workloads.fio_job.read_job``, naming the option and its line on any error."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ssdx.workloads.fio_values import OptionReader


def read_start_delay(j: OptionReader) -> tuple[float, float]:
    """``startdelay`` (fio HOWTO: ``irange(time)``, seconds without a unit): one value, or a range ``lo-hi``
    (or ``lo:hi``) each clone draws its delay from."""
    st = j.get("startdelay")
    if st is None:
        return 0.0, 0.0
    parts = re.split(r"[-:]", j.value(st))
    if len(parts) > 2:
        j.fail(st, f"{st.value!r}: one time or a range lo-hi")
    lo, hi = (j.time(st, p.strip(), 1.0) for p in (parts[0], parts[-1]))
    if hi < lo:
        j.fail(st, f"{st.value!r}: the range's end is before its start")
    return lo, hi


def check_pacing(j: OptionReader, flow: int, timed: bool, backlog: int) -> None:
    """Refuse the forms of ``flow_sleep`` and ``verify_backlog`` whose timing the engine cannot hold, for a
    job of ``flow`` weight, timed (open loop) or not, with a ``verify_backlog`` of ``backlog``."""
    sleep = j.get("flow_sleep")
    if sleep is not None and j.count("flow_sleep", 0, 1 << 31) and flow:
        j.fail(sleep, "a job ahead of its flow share waits for its requests in flight and sleeps this many "
                      "microseconds (fio's flow.c): per-job pauses the closed loop cannot hold; without "
                      "flow_sleep (0, fio's default) ssdx keeps the flow's shares request by request")
    if flow and timed:
        j.fail(j.get("flow"), "flow with rate, rate_iops or thinktime: a timed job issues at its own times "
                              "here; drop one of the two")
    if backlog and timed:
        j.fail(j.get("verify_backlog"), "verify_backlog in a timed job (rate, rate_iops, thinktime): the "
                                        "verify reads would need times of their own; use it in a closed-loop "
                                        "job")


@dataclass(frozen=True)
class LatencyTarget:
    """fio's latency-target search (HOWTO ``latency_target``, ``latency_window``, ``latency_percentile``,
    ``latency_run``; fio's ``io_u.c``): the job runs window after window of ``window_s`` at a queue depth
    the search moves — up after a window where at least ``percentile`` % of the requests completed within
    ``target_s``, down after one where fewer did — between 1 and ``iodepth``."""

    target_s: float
    window_s: float
    percentile: float
    run: bool


def read_latency_target(j: OptionReader) -> LatencyTarget | None:
    """The job's :class:`LatencyTarget` (times in microseconds without a unit, fio's rule), or None."""
    target = j.seconds("latency_target", 1e-6)
    for name in ("latency_window", "latency_percentile", "latency_run"):
        if j.get(name) is not None and not target:
            j.fail(j.get(name), f"{name} needs latency_target")
    if not target:
        return None
    window = j.seconds("latency_window", 1e-6)
    if not window:
        j.fail(j.get("latency_window") or j.get("latency_target"),
               "latency_target needs a latency_window (fio checks the target once per window)")
    pct = 100.0
    st = j.get("latency_percentile")
    if st is not None:
        try:
            pct = float(j.value(st))
        except ValueError:
            j.fail(st, f"{st.value!r} is not a number")
        if not 0.0 < pct <= 100.0:
            j.fail(st, f"must lie in (0, 100], got {pct:g}")
    return LatencyTarget(target, window, pct, j.flag("latency_run"))


#: fio's steady-state criteria (HOWTO, ``steadystate``): what is sampled, and whether the slope is judged
SS_CRITERIA = {"iops": ("iops", False), "iops_slope": ("iops", True), "bw": ("bw", False),
               "bw_slope": ("bw", True), "lat": ("lat", False), "lat_slope": ("lat", True)}


@dataclass(frozen=True)
class SteadyState:
    """fio's steady-state detection of a job (HOWTO, ``steadystate`` and the ``steadystate_*`` options):
    every ``interval_s`` from one interval after ``ramp_s``, a sample of the ``metric`` (``iops``: requests
    completed per second, ``bw``: bytes per second, ``lat``: mean completion latency, s); once the last
    ``duration_s / interval_s`` samples fill the window, the job ends at the first check where the
    criterion is below ``limit`` (in % of the window's mean where ``percent``): the largest deviation of a
    sample from the window's mean, or with ``slope`` the least-squares slope per sample."""

    criterion: str
    metric: str
    slope: bool
    limit: float
    percent: bool
    duration_s: float
    ramp_s: float
    interval_s: float

    @property
    def samples(self) -> int:
        return int(round(self.duration_s / self.interval_s))


def read_steady_state(j: OptionReader) -> SteadyState | None:
    """The job's :class:`SteadyState`, or None where ``steadystate_duration`` is 0 (fio's default: none)."""
    duration = j.seconds("steadystate_duration", 1.0)
    ss = j.get("steadystate")
    ramp = j.seconds("steadystate_ramp_time", 1.0)
    interval = j.seconds("steadystate_check_interval", 1.0) if j.get("steadystate_check_interval") else 1.0
    if not duration:
        return None
    text = "iops_slope:0.01%" if ss is None else j.value(ss)
    name, _, limit = text.partition(":")
    if name.strip().lower() not in SS_CRITERIA:
        j.fail(ss, f"unknown criterion {name!r}: {', '.join(SS_CRITERIA)}")
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*", limit)
    if not m:
        j.fail(ss, f"{text!r}: the limit after ':' must be a number, with % for a share of the mean")
    if interval <= 0 or duration < interval:
        j.fail(j.get("steadystate_check_interval") or j.get("steadystate_duration"),
               f"the window ({duration:g} s) must hold at least one check interval ({interval:g} s)")
    metric, slope = SS_CRITERIA[name.strip().lower()]
    return SteadyState(name.strip().lower(), metric, slope, float(m.group(1)), m.group(2) == "%", duration,
                       ramp, interval)
