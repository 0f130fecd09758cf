"""``experiment=mqsim``: MQSim's ``ssdconfig.xml`` and ``workload.xml`` run on ssdx's request engine.

The drive comes from :func:`ssdx.workloads.mqsim_xml.parse_ssdconfig` (its overrides are applied to the
composed config), the scenarios from :func:`~ssdx.workloads.mqsim_xml.parse_workload`.  Each scenario is
simulated on a fresh drive (MQSim runs each ``IO_Scenario`` as a separate simulation).

**Request streams.**  MQSim gives each of a scenario's ``n`` flows its own slice of the logical space:
flow ``i`` owns sectors ``[i·S/n, (i+1)·S/n)`` of the ``S`` user sectors (``Host_System``), of which it
uses the first ``Working_Set_Percentage`` (``IO_Flow_Synthetic``).  A synthetic flow's requests are
drawn as MQSim's generator draws them (``IO_Flow_Synthetic::Generate_next_request``):

* type: read with probability ``Read_Percentage``/100;
* size: ``FIXED`` = ``Average_Request_Size`` sectors; ``NORMAL`` = ⌈N(mean, σ)⌉ with
  σ = ``Variance_Request_Size`` (MQSim passes the "variance" field to its normal generator as the
  standard deviation), at least 1 sector and at most ``mqsim_xml.MAX_REQUEST_SECTORS`` (65,535: the
  16-bit count MQSim's NVMe command carries to its device); a request larger than the drive is refused;
* start: ``RANDOM_UNIFORM`` uniform over the working set (a request that would cross its end starts at
  its start); ``RANDOM_HOTCOLD`` with ``h`` = ``Percentage_of_Hot_Region``/100: with probability ``h`` a
  uniform start in the upper ``1 − h`` of the working set, else in the lower ``h`` (MQSim's "(100−hot)%
  of requests going to hot% of the address space"); ``STREAMING`` consecutive from a uniform first
  address, wrapping at the end; aligned down to ``Address_Alignment_Unit`` sectors when
  ``Generated_Aligned_Addresses``.
* count: ``Total_Requests_To_Generate``; with ``Stop_Time`` instead, a BANDWIDTH flow's arrivals before
  ``Stop_Time`` ns; a QUEUE_DEPTH flow cannot know its count before the simulation, so it gets
  ``mqsim.timed_requests`` (a warning says so).

A trace flow reads MQSim's ASCII trace (``ssdx.workloads.traces``, format ``mqsim``) with its
``Time_Unit``, keeps the first ``Percentage_To_Be_Executed`` percent of its requests and replays them
``Relay_Count`` times, each replay after the previous one's last arrival (MQSim's relay).

Every flow runs what MQSim runs of it — a trace whole, a BANDWIDTH flow every arrival before its
``Stop_Time`` — unless ``mqsim.requests_per_flow`` caps it (a warning names each flow it cut).  A flow of
more than :data:`MAX_REQUESTS` requests is refused unless capped (it is built whole in memory).

**Sharing the drive.**  ssdx's engine serves one stream in one loop.  A scenario whose flows are all
QUEUE_DEPTH runs closed loop with the sum of their queue depths outstanding; the flows' requests are
interleaved in proportion to their rates: first QD_i, then (up to ``mqsim.closed_loop_passes`` passes,
until every flow's mean outstanding count is within 2 % of its QD) the geometric mean of the previous
rate and QD_i / L_i, L_i the flow's mean response time of the previous pass — the rate Little's law gives a
flow keeping QD_i requests outstanding — so each flow holds on average about its own queue depth.  The
merged stream stops where its first flow runs out (past that point the engine would hand that flow's
slots to the others); the other flows' requests past it are not run, and a warning says how many ran.
A scenario whose flows are all open loop (BANDWIDTH, trace) runs open loop: arrivals merged by time
(BANDWIDTH gaps exponential with MQSim's mean, ``Flow.mean_interarrival_s``), at most
``IO_Queue_Depth`` outstanding.  A scenario mixing both is refused (:class:`ssdx.params.ConfigError`):
the engine cannot run a closed and an open loop on one drive.

**Figures** (MQSim's ``IO_Flow_Base``), per flow, from the engine's per-request latencies with the flow
id kept per request: ``requests`` (read/write), ``iops`` = requests / simulated time (MQSim divides the
generated count by the simulation's end time; here the scenario's makespan), ``mb_s`` = bytes /
simulated time / 10^6, ``device_response_time_us`` = mean from the request's entry into the submission
queue to its completion (closed loop: its issue; open loop: its arrival, which with MQSim's 65,535-entry
queues is its enqueue), per direction, and ``p99_response_time_us`` (the per-request 99th percentile);
``mean_outstanding`` = iops × mean response time (Little's law: the flow's mean number in the device,
about its queue depth for a QUEUE_DEPTH flow).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import catalog, params, paths
from ssdx.core import io
from ssdx.core.fields import Field, check
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import replay
from ssdx.models.engine.conf import MAX_FLOW_REQUESTS, MqsimConf
from ssdx.models.engine.jobs import capacity_bytes, oversized
from ssdx.workloads import mqsim_rng, mqsim_xml, traces
from ssdx.workloads.mqsim_xml import (
    MAX_REQUEST_SECTORS,
    SECTOR_BYTES,
    TIME_UNITS,
    Flow,
    MqsimXmlError,
    Scenario,
)
from ssdx.workloads.traces import READ, WRITE, Chunk

EXAMPLES = paths.examples_dir() / "mqsim"
#: the ``mqsim.*`` options' defaults, as :class:`~ssdx.models.engine.conf.MqsimConf` declares them
DEFAULTS = {f.name: f.default for f in dataclasses.fields(MqsimConf)}
#: the most requests of one flow (``mqsim.requests_per_flow``'s upper bound)
MAX_REQUESTS = MAX_FLOW_REQUESTS
SECTION = {"drive", "nand", "engine", "workload"}


def _conf(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``mqsim.<key>`` of ``cfg``; where it is absent or null, ``default`` if given, else its declared
    default (:data:`DEFAULTS`)."""
    v = (cfg.get("mqsim") or {}).get(key)
    return v if v is not None else (DEFAULTS[key] if default is None else default)


def apply_overrides(cfg: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``cfg`` with the dotted ``overrides`` (``drive.channels`` ...) set."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in cfg.items()}
    for key, value in overrides.items():
        sec, name = key.split(".", 1)
        if sec not in SECTION:
            raise ValueError(f"override {key!r} outside {sorted(SECTION)}")
        out.setdefault(sec, {})
        out[sec] = dict(out[sec] or {})
        out[sec][name] = value
    return out


def _synthetic(fl: Flow, lo: int, hi: int, cap: int | None, timed: int, warnings: list[str],
               tag: str) -> Chunk:
    """Requests of one synthetic flow over sectors ``[lo, hi)`` (module docstring), at most ``cap`` (None:
    all of them), ``timed`` for a QUEUE_DEPTH flow given by ``Stop_Time``; times are the arrival times
    (s) of a BANDWIDTH flow, NaN for a QUEUE_DEPTH flow."""
    n_max = MAX_REQUESTS if cap is None else cap
    rng = np.random.default_rng(fl.seed % 2**32)  # MQSim's int seed (a negative one too) as unsigned
    end = lo + max(int((hi - lo) * fl.working_set_pct / 100.0), 1)  # exclusive
    if fl.generator == "BANDWIDTH":
        gap = fl.mean_interarrival_s  # finite and positive: parse_workload refuses any other Bandwidth
        if fl.stop_time_ns > 0:
            n_est = int(fl.stop_time_ns * 1e-9 / gap * 1.2 + 50)
            t = np.cumsum(rng.exponential(gap, min(n_est, n_max + 1)))
            t = t[t <= fl.stop_time_ns * 1e-9]
        else:
            t = np.cumsum(rng.exponential(gap, min(fl.total_requests, n_max)))
        n = len(t)
    else:
        t = None
        n = fl.total_requests if fl.stop_time_ns == 0 else timed
        if fl.stop_time_ns > 0:
            warnings.append(f"{tag}: QUEUE_DEPTH flow with Stop_Time: its count is mqsim.timed_requests "
                            f"= {timed} (ssdx cannot stop a closed loop at a time)")
    n = _capped(n, cap, warnings, tag)
    t = t[:n] if t is not None else None
    is_read = rng.uniform(0.0, 1.0, n) <= fl.read_pct / 100.0
    if fl.size_distribution == "FIXED":
        size = np.full(n, fl.mean_size_sectors, np.int64)
    else:
        # MQSim (IO_Flow_Synthetic::Generate_next_request, src/host/IO_Flow_Synthetic.cpp): ceil of the normal
        # draw, a count <= 0 made 1; its NVMe command carries the count in 16 bits (mqsim_xml.
        # MAX_REQUEST_SECTORS, src/host/IO_Flow_Base.cpp), so no request reaching its device is larger:
        # clamped there (MQSim's device would take the count modulo 65,536, an artefact not reproduced)
        draw = np.ceil(rng.normal(fl.mean_size_sectors, fl.variance_size_sectors, n))
        size = np.clip(draw, 1, MAX_REQUEST_SECTORS).astype(np.int64)
        over = int(np.count_nonzero(draw > MAX_REQUEST_SECTORS))
        if over:
            warnings.append(f"{tag}: {over} of its {n} NORMAL request sizes drawn above "
                            f"{MAX_REQUEST_SECTORS} sectors, the most MQSim's NVMe command carries: made "
                            "that size")
    last = end - 1
    if fl.address_distribution == "RANDOM_UNIFORM":
        start = rng.integers(lo, last + 1, n)
        start = np.where(start + size > last, lo, start)
    elif fl.address_distribution == "RANDOM_HOTCOLD":
        h = fl.hot_region_pct / 100.0
        hot_end = lo + int((last - lo) * h)
        cold = rng.uniform(0.0, 1.0, n) < h
        start = np.where(cold, rng.integers(min(hot_end + 1, last), last + 1, n),
                         rng.integers(lo, hot_end + 1, n))
    else:  # STREAMING
        start = np.empty(n, np.int64)
        nxt = int(rng.integers(lo, last + 1))
        a = fl.alignment_sectors if fl.aligned else 1
        nxt -= nxt % a if fl.aligned else 0
        for k in range(n):
            s = nxt if nxt + size[k] <= last else lo
            start[k] = s
            nxt = s + int(size[k])
            if nxt > last:
                nxt = lo
            if fl.aligned and nxt % a:
                nxt += a - nxt % a
    if fl.aligned:
        start = start - start % fl.alignment_sectors
    time_s = np.full(n, np.nan) if t is None else np.asarray(t, np.float64)
    return Chunk(time_s=time_s, op=np.where(is_read, READ, WRITE).astype(np.int8),
                 offset=start.astype(np.int64) * SECTOR_BYTES, size=size * SECTOR_BYTES,
                 line=np.zeros(n, np.int64))


def _capped(n: int, cap: int | None, warnings: list[str], tag: str) -> int:
    """A flow's count ``n`` under ``mqsim.requests_per_flow`` = ``cap`` (None: no cap, and a flow of more
    than :data:`MAX_REQUESTS` refused), a warning where it cuts the flow."""
    if cap is None:
        if n > MAX_REQUESTS:
            raise params.ConfigError("mqsim.requests_per_flow", None,
                                     f"{tag} has {n} requests, more than the {MAX_REQUESTS} a flow may run "
                                     "whole: set mqsim.requests_per_flow to run its first ones")
        return n
    if n > cap:
        warnings.append(f"{tag}: {n} requests capped at mqsim.requests_per_flow = {cap}")
        return cap
    return n


def _trace(fl: Flow, lo: int, hi: int, cap: int | None, timed: int, warnings: list[str],
           tag: str) -> Chunk:
    """Requests of one trace flow: its unit, percentage and relays (module docstring), at most ``cap``
    (None: all of them; ``timed`` is not used); sectors shifted into the flow's slice ``[lo, hi)`` modulo
    its size."""
    path = Path(fl.file_path or "")
    if not path.is_file():
        raise params.ConfigError("mqsim.workload", str(path),
                                 f"{tag}: File_Path must be an existing MQSim trace")
    try:
        c = traces.read(path, "mqsim")
    except traces.TraceError as e:
        raise params.ConfigError("mqsim.workload", str(path), f"{tag}: malformed trace: {e}") from None
    keep = int(len(c) * fl.percentage_to_execute / 100.0)
    if keep == 0:  # (a Relay_Count below 1 is refused as the file is read)
        raise params.ConfigError("mqsim.workload", str(path), f"{tag}: the trace flow selects no request "
                                 f"({len(c)} requests in the file, Percentage_To_Be_Executed "
                                 f"{fl.percentage_to_execute:g}, Relay_Count {fl.relay_count}): at least one "
                                 "is needed")
    scale = TIME_UNITS[fl.time_unit] / 1e-9  # the reader takes the times as ns
    t = (c.time_s[:keep] - c.time_s[0]) * scale
    time_s = np.concatenate([t + r * float(t[-1]) for r in range(fl.relay_count)])
    tile = lambda a: np.tile(a[:keep], fl.relay_count)  # noqa: E731
    sectors = tile(c.offset) // SECTOR_BYTES
    sectors = lo + sectors % max(hi - lo, 1)
    sl = slice(0, _capped(len(time_s), cap, warnings, tag))
    return Chunk(time_s=time_s[sl], op=tile(c.op)[sl], offset=(sectors * SECTOR_BYTES)[sl],
                 size=tile(c.size)[sl], line=tile(c.line)[sl])


def _merge_timed(chunks: list[Chunk]) -> tuple[Chunk, np.ndarray]:
    """Open loop: all flows' requests in arrival order, and the flow id of each."""
    flow = np.concatenate([np.full(len(c), i, np.int32) for i, c in enumerate(chunks)])
    t = np.concatenate([c.time_s for c in chunks])
    order = np.argsort(t, kind="stable")
    cat = lambda k: np.concatenate([getattr(c, k) for c in chunks])[order]  # noqa: E731
    return Chunk(time_s=t[order], op=cat("op"), offset=cat("offset"), size=cat("size"),
                 line=cat("line")), flow[order]


def _merge_closed(chunks: list[Chunk], rates: np.ndarray) -> tuple[Chunk, np.ndarray, np.ndarray]:
    """Closed loop: the flows' requests interleaved in proportion to ``rates`` (request k of flow i at
    virtual time (k + 1/2) / rate_i), cut where the first flow runs out (past it the engine would give
    that flow's queue slots to the others); the merged chunk, the flow id of each request and the count
    kept of each flow."""
    end = min(len(c) / rates[i] for i, c in enumerate(chunks))
    keep = [min(len(c), max(int(np.floor(end * rates[i] + 0.5)), 1)) for i, c in enumerate(chunks)]
    v = np.concatenate([(np.arange(k) + 0.5) / rates[i] for i, k in enumerate(keep)])
    flow = np.concatenate([np.full(k, i, np.int32) for i, k in enumerate(keep)])
    order = np.argsort(v, kind="stable")
    cat = lambda a: np.concatenate([getattr(c, a)[:k] for c, k in zip(chunks, keep)])[order]  # noqa: E731
    return (Chunk(time_s=np.full(len(order), np.nan), op=cat("op"), offset=cat("offset"), size=cat("size"),
                  line=cat("line")), flow[order], np.asarray(keep))


def flow_figures(lat_s: np.ndarray, op: np.ndarray, size: np.ndarray, makespan_s: float,
                 name: str) -> dict[str, Any]:
    """MQSim's per-flow figures (module docstring) from one flow's per-request latencies (s), types and
    sizes (bytes) over the scenario's simulated time ``makespan_s`` (s)."""
    rd, wr = op == READ, op == WRITE
    mean = lambda m: float(np.mean(lat_s[m]) * 1e6) if np.any(m) else 0.0  # noqa: E731
    n = len(lat_s)
    return {"name": name, "requests": int(n), "read_requests": int(rd.sum()), "write_requests": int(wr.sum()),
            "iops": n / makespan_s, "read_iops": float(rd.sum()) / makespan_s,
            "write_iops": float(wr.sum()) / makespan_s, "mb_s": float(size.sum()) / makespan_s / 1e6,
            "device_response_time_us": mean(np.ones(n, bool)), "read_response_time_us": mean(rd),
            "write_response_time_us": mean(wr),
            "p99_response_time_us": float(np.percentile(lat_s, 99) * 1e6) if n else 0.0,
            "mean_outstanding": n / makespan_s * float(np.mean(lat_s)) if n else 0.0}


def scenario_streams(cfg: Mapping[str, Any], sc: Scenario, index: int,
                     warnings: list[str]) -> tuple[dict[str, Any], list[Chunk], bool]:
    """A scenario's engine configuration (loop, queue depth, pre-fill set) and its flows' request streams.

    Returns ``(run_cfg, chunks, closed)``: one chunk per flow, on its own slice of the logical space;
    ``closed`` when every flow is QUEUE_DEPTH (closed loop; otherwise every flow is open loop).
    """
    closed = _closed(sc)
    check_conf(cfg)
    cap_given = (cfg.get("mqsim") or {}).get("requests_per_flow")
    cap = None if cap_given is None else int(cap_given)
    timed = int(_conf(cfg, "timed_requests"))
    capacity = capacity_bytes(cfg)
    sectors = int(capacity // SECTOR_BYTES)
    per = sectors // len(sc.flows)
    chunks = []
    for i, fl in enumerate(sc.flows):
        tag = f"scenario {index} flow {i} (line {fl.line})"
        make = _synthetic if fl.kind == "synthetic" else _trace
        chunks.append(make(fl, i * per, (i + 1) * per, cap, timed, warnings, tag))
        _fits(fl, chunks[-1].size, chunks[-1].line, capacity)
        warnings.extend(f"{tag}: {w}" for w in fl.warnings)
    run_cfg = apply_overrides(cfg, {
        "workload.prefill_fraction": float(np.mean([f.initial_occupancy_pct for f in sc.flows])) / 100.0})
    if all(closed):
        run_cfg["engine"]["loop"] = "closed"
        run_cfg["workload"]["queue_depth"] = int(sum(f.queue_depth for f in sc.flows))
    else:  # on NVMe each flow is a stream with a window of its own (mqsim_xml: Queue_Fetch_Size)
        run_cfg["engine"]["loop"] = "open"
        per_flow = int(cfg["workload"]["queue_depth"])
        nvme = not catalog.interface(str(cfg["drive"]["interface"])).sata
        run_cfg["workload"]["queue_depth"] = min(per_flow * (len(sc.flows) if nvme else 1),
                                                 engine_params.MAX_SLOTS)
    return run_cfg, chunks, all(closed)


def _closed(sc: Scenario) -> list[bool]:
    """Whether each flow of ``sc`` is closed loop (QUEUE_DEPTH); a scenario mixing closed and open flows
    is refused (:class:`ssdx.params.ConfigError`)."""
    closed = [f.kind == "synthetic" and f.generator == "QUEUE_DEPTH" for f in sc.flows]
    if any(closed) and not all(closed):
        raise params.ConfigError("mqsim.workload", f"IO_Scenario at line {sc.line}",
                                 "a scenario mixing QUEUE_DEPTH flows with BANDWIDTH or trace flows: ssdx's "
                                 "engine runs one loop (closed or open) per stream")
    return closed


def _fits(fl: Flow, size: np.ndarray, line: np.ndarray, capacity: float) -> None:
    """Refuse a flow with a request larger than the drive's ``capacity`` (bytes, ``jobs.oversized``), naming
    its largest request, at the element (or trace line) that sets its size; ``size`` (bytes) and ``line``
    (trace lines) are the flow's requests'."""
    over = oversized(size, capacity)
    if not over.size:
        return
    k = int(over[np.argmax(np.asarray(size)[over])])  # the first of the largest
    big = int(size[k])
    drive = f"larger than the drive's capacity of {capacity:.0f} bytes"
    if fl.kind == "trace":
        raise fl.error("File_Path", f"the request of line {int(line[k])} of {fl.file_path} is {big} "
                       f"bytes, {drive}")
    if fl.size_distribution == "FIXED":
        raise fl.error("Average_Request_Size", f"requests of {fl.mean_size_sectors} sectors ({big} bytes) "
                       f"are {drive}")
    raise fl.error("Variance_Request_Size",
                   f"a NORMAL size of mean {fl.mean_size_sectors} and standard deviation "
                   f"{fl.variance_size_sectors} sectors (Average_Request_Size at line "
                   f"{fl.lines.get('Average_Request_Size', fl.line)}) drew a request of {big} bytes, {drive}")


def conf_fields() -> list[Field]:
    """The ranges of the ``mqsim`` block's numeric fields, as :class:`~ssdx.models.engine.conf.MqsimConf`
    declares them (its fields' ``lo``/``hi``/``doc`` metadata; ``hi`` None: no upper bound)."""
    out = []
    for f in dataclasses.fields(MqsimConf):
        if "lo" not in f.metadata:
            continue
        lo, hi, doc = f.metadata["lo"], f.metadata["hi"], f.metadata.get("doc", "")
        integer = f.type in (int, "int", "Optional[int]")
        unbounded = f"{'integer ' if integer else ''}x >= {lo:g} ({doc})"
        out.append(Field(f"mqsim.{f.name}", "", lo, math.inf if hi is None else hi, integer=integer, doc=doc,
                         optional=True, rule=unbounded if hi is None else None))
    return out


def check_conf(cfg: Mapping[str, Any]) -> None:
    """Refuse a value of the ``mqsim`` block outside the range ``MqsimConf`` declares
    (:func:`conf_fields`), naming the field, the value and the rule (:class:`ssdx.params.ConfigError`)."""
    m = cfg.get("mqsim") or {}
    cols = {f"mqsim.{k}": np.asarray([v]) for k, v in m.items() if v is not None}
    check(conf_fields(), cols)


def cmt_warm(cfg: Mapping[str, Any], run_cfg: Mapping[str, Any], sc: Scenario, chunks: list[Chunk],
             entries: int, index: int, warnings: list[str]) -> np.ndarray | None:
    """``mqsim.arithmetic = mqsim``: the logical pages MQSim's preconditioning leaves in its mapping cache
    (CMT) for a single flow of uniformly random addresses, or None.

    MQSim prepares the preconditioned addresses by replaying the flow's own generator with the flow's own
    seeds until ``Initial_Occupancy_Percentage`` of its logical pages are set, so they are ordered as the
    run will first touch them; it then walks them with a random step, bringing every step-th into the CMT
    until it is full (``FTL::Perform_precondition``, ``RANDOM_UNIFORM``; the step from the generator seeded
    with the drive file's ``Seed``, :func:`ssdx.workloads.mqsim_rng.cmt_step`).  With step 0 the CMT holds
    the first addresses the run touches, and ssdx's entry cache (``entries`` entries) starts with the first
    logical pages of its own stream for the flow, as many as the CMT holds.  Any other step is left cold:
    it spreads the CMT's entries over the run's pages so thinly that a request of several pages finds all
    of them rarely (and the walk's turns are not reproduced).  Named in a warning either way.  Not
    physical — a drive's cache cannot know the addresses a run will touch — so only with MQSim's
    arithmetic."""
    if str(_conf(cfg, "arithmetic")) != "mqsim" or len(sc.flows) != 1:
        return None
    fl, eng = sc.flows[0], run_cfg["engine"]
    if (fl.kind != "synthetic" or fl.address_distribution != "RANDOM_UNIFORM" or fl.initial_occupancy_pct <= 0
            or eng.get("map_cache") != "entries"):
        return None
    on, seed = mqsim_xml.preconditioning(_paths(cfg)[0])
    if not on:
        return None
    page = int(round(float(run_cfg["nand"]["page_kib"]) * 1024))
    capacity = capacity_bytes(run_cfg)
    logical = int(capacity // page)
    steady = int(fl.initial_occupancy_pct / 100.0 * logical)
    span = int(fl.working_set_pct / 100.0 * logical)
    if span < 1.1 * steady:  # MQSim keeps the preconditioned set below its address range
        steady = int(span * 0.9)
    step = mqsim_rng.cmt_step(seed, steady, entries)
    tag = f"scenario {index} flow 0 (line {fl.line})"
    if step != 0:
        warnings.append(f"{tag}: mqsim.arithmetic = mqsim: MQSim's preconditioning fills its CMT with every "
                        f"{step}-th of the addresses it prepared (its random step for Seed {seed}); ssdx's "
                        "entry cache starts empty")
        return None
    ch = chunks[0]
    page_4k = page // engine_params.MAP_UNIT_BYTES
    cap_4k = int(capacity // engine_params.MAP_UNIT_BYTES)
    o4 = (np.asarray(ch.offset, np.int64) // engine_params.MAP_UNIT_BYTES) % cap_4k
    k = np.maximum(((o4 % page_4k) * engine_params.MAP_UNIT_BYTES + np.asarray(ch.size, np.int64) + page - 1)
                   // page, 1)
    pages = np.repeat(o4 // page_4k, k) + (np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k))
    _, first = np.unique(pages, return_index=True)
    warm = pages[np.sort(first)][:min(entries, steady)]
    warnings.append(f"{tag}: mqsim.arithmetic = mqsim: MQSim's preconditioning fills its CMT with the first "
                    f"addresses the run will touch (its random step for Seed {seed} is 0): the entry cache "
                    f"starts with the flow's first {len(warm)} logical pages")
    return warm


def run_scenario(cfg: Mapping[str, Any], sc: Scenario, index: int, warnings: list[str],
                 progress: bool = False) -> dict[str, Any]:
    """Simulate one scenario on the configured drive (overrides already applied); its per-flow figures."""
    run_cfg, chunks, closed = scenario_streams(cfg, sc, index, warnings)
    dtype = io.dtype(cfg.get("precision", "float32"))
    backend = engine_backends.select(run_cfg["engine"])
    qd = [f.queue_depth for f in sc.flows]
    rates = np.asarray(qd, np.float64)
    passes = int(_conf(cfg, "closed_loop_passes")) if closed and len(sc.flows) > 1 else 1
    if passes < 1:  # check_conf (scenario_streams) refuses it first; the loop below must run at least once
        raise params.ConfigError("mqsim.closed_loop_passes", passes, "integer x >= 1")
    _, trees = engine_params.build_from_config(run_cfg, dtype=dtype)
    warm = cmt_warm(cfg, run_cfg, sc, chunks, int(np.asarray(trees[2].map_entries).reshape(-1)[0]), index,
                    warnings)
    for _ in range(passes):
        if closed:
            merged, flow_id, kept = _merge_closed(chunks, rates)
        else:
            merged, flow_id = _merge_timed(chunks)
        res = replay.replay(trees, [merged], chunk_len=min(replay.DEFAULT_CHUNK, len(merged)),
                            keep_latency=True, progress=progress, desc=f"scenario {index}", backend=backend,
                            warm_map=warm)
        lat = np.asarray(res.latencies, np.float64)[0]
        if closed:
            mean_lat = np.array([lat[flow_id == i].mean() for i in range(len(sc.flows))])
            held = kept / float(res.metrics["makespan_s"][0]) * mean_lat  # Little: mean outstanding
            if np.allclose(held, qd, rtol=0.02):
                break
            # damped (geometric mean of the old rate and the Little's-law one): a flow's latency moves
            # with the others' load, and the undamped update can oscillate
            rates = np.sqrt(rates * np.asarray(qd, np.float64) / mean_lat)
    if closed:
        for i, (k, c) in enumerate(zip(kept, chunks)):
            if k < len(c):
                warnings.append(f"scenario {index} flow {i} (line {sc.flows[i].line}): {k} of its {len(c)} "
                                "requests run: a closed-loop scenario stops when its first flow runs out, so "
                                "that every flow keeps its own queue depth")
    span = float(res.metrics["makespan_s"][0])
    flows = [flow_figures(lat[flow_id == i], merged.op[flow_id == i], merged.size[flow_id == i], span,
                          fl.name) for i, fl in enumerate(sc.flows)]
    return {"line": sc.line, "loop": run_cfg["engine"]["loop"],
            "queue_depth": run_cfg["workload"]["queue_depth"],
            "simulated_time_s": span, "flows": flows, "flash": flash_counts(res.extra["sums"])}


def flash_counts(sums: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The drive's flash work over a scenario, in the terms of MQSim's ``SSDDevice.FTL`` statistics: NAND
    pages read and programmed for host data, program commands (a multi-plane program counted once),
    translation pages read (mapping-cache misses) and
    programmed (dirty translation pages written back), erases.  ``sums`` are the engine's summed
    accumulators of the scenario's one configuration (``replay.Result.extra["sums"]``)."""
    one = lambda k: float(np.asarray(sums[k]).reshape(-1)[0])  # noqa: E731
    return {"page_reads": one("read_pages"), "page_programs": one("prog_pages"),
            "program_commands": one("programs"),
            "translation_reads": one("map_misses"), "translation_programs": one("map_writebacks"),
            "erases": one("erases")}


def _paths(cfg: Mapping[str, Any]) -> tuple[Path, Path]:
    return (Path(_conf(cfg, "ssdconfig", EXAMPLES / "ssdconfig.xml")),
            Path(_conf(cfg, "workload", EXAMPLES / "workload.xml")))


def load(cfg: Mapping[str, Any], given: frozenset[str] = frozenset(),
         sources: dict[str, list[mqsim_xml.Source]] | None = None) -> tuple[
        dict[str, Any], list[Scenario], dict[str, Any], list[str]]:
    """Read ``mqsim.ssdconfig`` and ``mqsim.workload``: the configuration with the drive file's overrides
    applied, the scenarios, the overrides and the warnings.  A field named in ``given`` (set on the
    command line, :func:`ssdx.core.io.command_line_keys`) keeps the configuration's value, and a warning
    names the file's value it replaced: ``ssdx experiment=mqsim engine.suspension=none`` runs the file's drive
    without read suspension.  ``sources``, where given, is filled with the elements of the drive file each
    override came from (``mqsim_xml.parse_ssdconfig``), for :func:`check_loaded`.  The ``mqsim`` block's
    values are checked first (:func:`check_conf`)."""
    check_conf(cfg)
    ssdconfig, workload = _paths(cfg)
    chip_as_die = bool(_conf(cfg, "chip_as_die"))
    arithmetic = str(_conf(cfg, "arithmetic"))
    if arithmetic not in mqsim_xml.ARITHMETICS:
        raise params.ConfigError("mqsim.arithmetic", arithmetic,
                                 f"must be one of {list(mqsim_xml.ARITHMETICS)}")
    overrides, warnings = mqsim_xml.parse_ssdconfig(ssdconfig, chip_as_die, sources, arithmetic)
    page_only = {"nand.page_kib", "nand.write_unit_kib"} & given == {"nand.page_kib"}
    if page_only and "nand.write_unit_kib" in overrides:
        # the file's write unit is its page: with the page from the command line, so is the write unit
        overrides["nand.write_unit_kib"] = (cfg.get("nand") or {}).get("page_kib")
    for key in sorted(given & set(overrides)):
        sec, name = key.split(".", 1)
        mine, file_value = (cfg.get(sec) or {}).get(name), overrides.pop(key)
        warnings.append(f"{key} = {mine} from the command line, not {file_value} from {ssdconfig.name}")
    scenarios = mqsim_xml.parse_workload(workload)
    run_cfg = apply_overrides(cfg, overrides)
    run_cfg["drive"].pop("defaults", None)
    return run_cfg, scenarios, overrides, warnings


def check_loaded(run_cfg: Mapping[str, Any], scenarios: list[Scenario], overrides: Mapping[str, Any],
                 sources: Mapping[str, list[mqsim_xml.Source]], ssdconfig: Path) -> None:
    """ssdx's rules on what :func:`load` made of the two files, before any scenario runs: the drive's
    configuration (``run_cfg``, a whole composed config) through the request engine's checks — a value the
    drive file produced (in ``overrides``) that breaks one is reported at the element(s) and line(s) it was
    computed from (``sources``, :func:`from_ssdconfig`) — then :func:`check_scenarios`."""
    try:
        engine_params.build_from_config(run_cfg, dtype=io.dtype(run_cfg.get("precision", "float32")))
    except params.ConfigError as e:
        if e.field not in overrides or not sources.get(e.field):
            raise
        raise from_ssdconfig(e, ssdconfig, sources[e.field]) from None
    check_scenarios(run_cfg, scenarios)


def from_ssdconfig(e: params.ConfigError, path: Path, sources: list[mqsim_xml.Source]) -> MqsimXmlError:
    """``e``, raised by ssdx's rules on an override that ``ssdconfig.xml`` produced, as an error of the file:
    at the first element the override was computed from (``sources``), the others named with it."""
    first, rest = sources[0], sources[1:]
    given = f"(absent: MQSim's default {first.text!r})" if first.default else repr(first.text)
    if rest:
        given += f" with {', '.join(s.describe() for s in rest)}"
    return MqsimXmlError(
        path, first.line, first.element,
        f"{given} gives ssdx's {e.field} = {e.value!r}, which breaks its rule: {e.rule}; change the file, or "
        f"set {e.field} on the command line to replace the file's value", field=mqsim_xml.SSDCONFIG_FIELD)


def check_scenarios(cfg: Mapping[str, Any], scenarios: list[Scenario]) -> None:
    """What can be refused of the scenarios before any runs, on the configured drive (``cfg``, overrides
    applied): a scenario mixing closed- and open-loop flows, a FIXED request size larger than the drive.
    (A NORMAL size is refused where it is drawn, :func:`scenario_streams`.)"""
    capacity = capacity_bytes(cfg)
    for sc in scenarios:
        _closed(sc)
        for fl in sc.flows:
            if fl.kind == "synthetic" and fl.size_distribution == "FIXED":
                _fits(fl, np.asarray([fl.mean_size_sectors * SECTOR_BYTES]), np.zeros(1, np.int64), capacity)


def run_mqsim(cfg: Mapping, out_dir: Path, progress: bool = True) -> dict:
    """Run every scenario of ``mqsim.workload`` on the drive of ``mqsim.ssdconfig`` (both default to
    ``examples/mqsim``); writes and returns ``summary.json``: ``scenarios`` (each with ``flows`` of
    :func:`flow_figures`), ``warnings`` (fields not modelled, caps) and ``overrides`` (from the XML)."""
    sources: dict[str, list[mqsim_xml.Source]] = {}
    run_cfg, scenarios, overrides, warnings = load(cfg, io.command_line_keys(), sources)
    ssdconfig, workload = _paths(cfg)
    check_loaded(run_cfg, scenarios, overrides, sources, ssdconfig)
    out = [run_scenario(run_cfg, sc, i, warnings, progress) for i, sc in enumerate(scenarios)]
    summary = {"ssdconfig": str(ssdconfig), "workload": str(workload), "scenarios": out,
               "warnings": warnings, "overrides": overrides}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    return summary
