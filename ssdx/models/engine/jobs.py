"""Jobs of the request-level engine: trace replay and the QD1 / OS-boot study (``run_boot``).

Each takes a composed config as plain mappings and an output directory, writes its files there and
returns the summary it wrote (as ``ssdx.sweep.job`` does).

A replay's workload is one of: ``workload.fio`` (a fio job file, ``ssdx.workloads.fio``: it also sets
``workload.queue_depth`` and ``engine.loop``), ``workload.trace_path`` (a block trace) or
``workload.synthetic`` (a generated stream, :data:`SYNTHETIC_FORMS`); more than one is refused
(:func:`source`), as the run would leave all but one unused.

Besides ssdx's own figures a replay's ``summary.json`` carries fio's names (fio's JSON output and its
HOWTO): ``bw`` in KiB/s (fio's JSON ``bw``; 1 KiB = 1024 bytes) and ``bw_bytes`` in bytes/s, ``iops``,
and ``clat_us`` — ``mean``, ``p50``, ``p99``, ``p99.9`` in µs (fio's "clat percentiles (usec)"); the same
per direction under ``read`` and ``write`` with ``io_bytes``.  All are over the makespan.  ``clat_us``
is the engine's latency: issue to completion in the closed loop (fio's clat, its submission latency
being ~0 for an asynchronous engine); in the open loop it counts from the arrival time, so it also holds
any wait for a free queue slot, which fio's clat leaves out (fio falls behind its rate instead).
``fio_job`` (the job's name, merged jobs joined by '+'; null without ``workload.fio``) and
``fio_ignored`` (the options skipped under ``workload.fio_unknown=warn``; empty otherwise) are always
there; a fio run (``format`` ``"fio"``) adds ``fio_jobs`` (per job: loop, depth, what ends it),
``fio_ignored_by_design`` and ``fio_truncated`` (the jobs held more than ``workload.requests`` requests).
A trace is replayed whole unless ``workload.requests`` is set; then its first ``workload.requests``
requests, and a trace replay's ``trace_truncated`` says whether the trace held more.
``requests_past_capacity`` counts the requests whose offset lies past the end of the drive's user
capacity; the engine wraps them onto the drive modulo its capacity (a trace from a larger drive still
replays), and ``warnings`` says so, with the first one's trace line (:class:`Beyond`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import params, presets
from ssdx.core import io, stats
from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import latency_search, replay, steady
from ssdx.models.engine import params as engine_params
from ssdx.models.engine import plots as engine_report
from ssdx.models.fluid import model as fluid
from ssdx.workloads import fio, synthetic
from ssdx.workloads.traces import READ, WRITE, Chunk, TraceError, no_requests

BOOT_DRIVES = ("sata_tlc_500", "generic_tlc_1tb", "sn8e_1920", "aldrin_pro_2tb")
#: a replay's workload sources (module docstring), ``workload.<field>``
SOURCES = ("fio", "trace_path", "synthetic")
#: the forms of ``workload.synthetic`` (:func:`stream`)
SYNTHETIC_FORMS = "windows11_boot | msr:<volume> | profile:<summary.json>"
#: trace formats without timestamps (``ssdx.workloads.traces``): they replay in the closed loop only
UNTIMED_FORMATS = ("fio2",)


#: requests of a generated stream or a fio job when ``workload.requests`` is unset (null)
DEFAULT_REQUESTS = 100_000


def _requests(w: Mapping[str, Any]) -> int:
    """``workload.requests`` of a generated stream, a fio job or a trace (:data:`DEFAULT_REQUESTS` when
    unset; a trace is then replayed whole)."""
    n = w.get("requests")
    n = DEFAULT_REQUESTS if n is None else int(n)
    if not 1 <= n <= fio.MAX_REQUESTS:
        raise params.ConfigError("workload.requests", n, f"integer 1 <= x <= {fio.MAX_REQUESTS:.0e}")
    return n


def source(w: Mapping[str, Any]) -> str | None:
    """The one workload source the ``workload`` block ``w`` sets (:data:`SOURCES`; an empty string is
    unset), or None; two or more raise :class:`ConfigError` naming them (a replay reads only one)."""
    given = [f for f in SOURCES if w.get(f) is not None and w.get(f) != ""]
    if len(given) > 1:
        others = ", ".join(f"workload.{f} = {w[f]!r}" for f in given[1:])
        raise params.ConfigError(f"workload.{given[0]}", w[given[0]], f"one workload source at a time: "
                                 f"{others} is set too, and a replay reads only one of "
                                 f"{', '.join(f'workload.{f}' for f in SOURCES)}",
                                 fix=f"Keep one of them and unset the other{'s' if len(given) > 2 else ''}")
    return given[0] if given else None


def fio_workload(cfg: Mapping[str, Any]) -> fio.FioWorkload | None:
    """The jobs of ``workload.fio`` (``workload.fio_job``, ``workload.fio_unknown``), or None."""
    w = cfg["workload"]
    if not w.get("fio"):
        return None
    job = w.get("fio_job")
    return fio.load(str(w["fio"]), job=None if job is None else str(job),
                    unknown=w.get("fio_unknown") or "raise")


def with_fio(cfg: Mapping[str, Any], jobs: fio.FioWorkload) -> dict[str, Any]:
    """``cfg`` with the fio jobs' queue depth (every clone's iodepth, summed) and loop (open when they are
    timed by rate, rate_iops or thinktime)."""
    return dict(cfg, workload=dict(cfg["workload"], queue_depth=jobs.queue_depth),
                engine=dict(cfg["engine"], loop="open" if jobs.open_loop else "closed"))


def capacity_bytes(cfg: Mapping[str, Any]) -> float:
    """User-visible capacity of the configured drive, bytes: ``fluid.capacity_bytes`` in float64 on the
    host (the size fio's ``size=N%`` and a job without ``size`` refer to)."""
    cols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    drive, _ = params.build(cols, dtype=np.float64)
    user = np.asarray(drive.user_bytes, np.float64)
    pure_slc = np.asarray(drive.slc_mode) == fluid.PURE_SLC
    return float(np.where(pure_slc, user / np.asarray(drive.nand.bits_per_cell, np.float64), user)[0])


def with_fio_fill(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], Any]:
    """``cfg`` with the fluid workload a fio write job sets (``workload.fio``; ``workload.fio_job``,
    ``workload.fio_unknown``): ``pattern``, ``block_kib``, ``queue_depth``, ``fill_fraction``,
    ``burst_gb`` and ``idle_s`` (``ssdx.workloads.fio.FioWorkload.fill``, which refuses what the fluid
    model cannot represent), and the parsed jobs; ``(cfg, None)`` without ``workload.fio``."""
    if not cfg["workload"].get("fio"):
        return cfg, None
    jobs = fio_workload(cfg)
    if jobs is None:
        return cfg, None
    fields = jobs.fill(capacity_bytes(cfg), float(cfg["workload"]["prefill_fraction"]))
    return dict(cfg, workload=dict(cfg["workload"], **fields)), jobs


def stream(cfg: Mapping[str, Any], fio_jobs: fio.FioWorkload | None = None,
           capacity: float | None = None) -> tuple[Iterable[Chunk], Any, str]:
    """The configured request stream, from the one source set: ``workload.fio`` (``fio_jobs`` if already
    loaded; ``capacity`` of the drive in bytes for its % sizes, else computed), ``workload.trace_path``
    (streamed) or ``workload.synthetic`` (``windows11_boot``, ``msr:<volume>`` or
    ``profile:<summary.json>``, a stream fitted to an analysed trace, ``ssdx.workloads.profile``). Returns
    (chunks, reader or None, label); a fio stream is a ``fio.FioStream``. A fio job's queue depth and loop
    are :func:`with_fio`'s. Two sources, or none, or a ``workload.synthetic`` of another form raise
    :class:`ConfigError`."""
    w = cfg["workload"]
    source(w)
    if w.get("fio"):
        jobs = fio_jobs or fio_workload(cfg)
        assert jobs is not None
        cap = capacity_bytes(cfg) if capacity is None else capacity
        return jobs.stream(cap, _requests(w), seed=int(cfg.get("seed", 0))), None, str(w["fio"])
    open_loop = cfg["engine"].get("loop") == "open"
    if w.get("trace_path"):
        reader = io.trace_reader(w, io.trace_limit(w))
        if open_loop and reader.fmt in UNTIMED_FORMATS:
            raise params.ConfigError("engine.loop", "open", f"the trace format {reader.fmt!r} carries no "
                                     "arrival times, so an open loop has none to follow: use "
                                     "engine.loop=closed")
        return reader, reader, str(reader.path)
    name = w.get("synthetic")
    seed = int(cfg.get("seed", 0))
    if name == "windows11_boot":
        if w.get("requests") is not None:
            raise params.ConfigError("workload.requests", w["requests"], "not read by workload.synthetic="
                                     "windows11_boot, the boot log's own commands (leave it unset)")
        return [synthetic.windows11_boot(seed)], None, name
    if isinstance(name, str) and name.startswith("msr:"):
        from ssdx.workloads import msr

        vol = name[4:]
        if vol not in msr.VOLUMES:
            raise params.ConfigError("workload.synthetic", name,
                                     f"MSR volume must be one of {sorted(msr.VOLUMES)}")
        return [msr.generate(vol, _requests(w), seed=seed, timed=open_loop)], None, name
    if isinstance(name, str) and name.startswith("profile:"):
        from ssdx.workloads import profile

        path = Path(name[len("profile:"):])
        if not path.is_file():
            raise params.ConfigError("workload.synthetic", name, "profile:PATH needs an existing "
                                     "summary.json of experiment=trace_analyse")
        n = _requests(w)
        try:
            fitted = profile.fit(profile.load(path))
        except (ValueError, OverflowError) as e:
            raise params.ConfigError("workload.synthetic", name, str(e)) from None
        if open_loop and not fitted.gap_mean_s:  # none, or every request at the same instant
            raise params.ConfigError("engine.loop", "open", f"the profile {path} carries no inter-arrival "
                                     "times, so an open loop has none to follow: use engine.loop=closed")
        try:
            chunk = profile.generate(fitted, n, seed=seed, timed=open_loop)
        except (ValueError, OverflowError) as e:
            raise params.ConfigError("workload.synthetic", name, str(e)) from None
        return [chunk], None, name
    if name is not None and name != "":
        raise params.ConfigError("workload.synthetic", name, f"a generated stream: {SYNTHETIC_FORMS} "
                                 f"(MSR volumes: {', '.join(msr_volumes())})")
    raise params.ConfigError("workload.trace_path", None, "a trace file is required (or workload.synthetic: "
                             f"{SYNTHETIC_FORMS}; or workload.fio)")


def msr_volumes() -> list[str]:
    """The MSR Cambridge volume presets ``workload.synthetic=msr:<volume>`` takes."""
    from ssdx.workloads import msr

    return sorted(msr.VOLUMES)


def _latency_block(m: Mapping[str, np.ndarray], i: int, prefix: str = "") -> dict[str, float]:
    return {"mean": float(m[f"{prefix}latency_mean_us"][i]), "p50": float(m[f"{prefix}latency_p50_us"][i]),
            "p99": float(m[f"{prefix}latency_p99_us"][i]), "p999": float(m[f"{prefix}latency_p999_us"][i])}


def fio_figures(m: Mapping[str, np.ndarray], sums: Mapping[str, np.ndarray], i: int = 0) -> dict[str, Any]:
    """fio's names for configuration ``i``'s figures (module docstring): ``bw`` (KiB/s), ``bw_bytes``,
    ``clat_us`` and per direction ``read``/``write`` (``io_bytes``, ``bw``, ``bw_bytes``, ``iops``,
    ``clat_us``), over the makespan."""
    span = float(m["makespan_s"][i])

    def clat(prefix: str) -> dict[str, float]:
        lat = _latency_block(m, i, prefix)
        return {"mean": lat["mean"], "p50": lat["p50"], "p99": lat["p99"], "p99.9": lat["p999"]}

    def direction(op: int, prefix: str) -> dict[str, Any]:
        nbytes = float(sums["bytes"][i, op])
        return {"io_bytes": int(nbytes), "bw": nbytes / span / 1024, "bw_bytes": nbytes / span,
                "iops": float(sums["count"][i, op]) / span, "clat_us": clat(prefix)}

    total = float(sums["bytes"][i, READ] + sums["bytes"][i, WRITE])
    return {"bw": total / span / 1024, "bw_bytes": total / span, "clat_us": clat(""),
            "read": direction(READ, "read_"), "write": direction(WRITE, "write_")}


def oversized(size: np.ndarray, capacity: float) -> np.ndarray:
    """The positions, ascending, of the requests of ``size`` (bytes) larger than the drive's user capacity
    (``capacity`` bytes): the engine maps an offset beyond the drive back onto it, but no mapping fits a
    request that is larger than the drive itself (a block device refuses it).  The one test of
    :func:`within` (trace replay) and ``mqsim_job``'s flows."""
    return np.flatnonzero(np.asarray(size) > capacity)


@dataclass
class Beyond:
    """The requests of a stream whose offset lies past the end of the drive's user capacity (at or beyond
    its last whole 4 KiB mapping unit): the engine wraps them onto the drive modulo its capacity, as a trace
    recorded on a larger drive needs.  ``count`` requests, the first at ``first_line`` (the trace line, or
    the request's number in a generated stream)."""

    count: int = 0
    first_line: int | None = None

    def add(self, c: Chunk, capacity: float) -> None:
        """Count the requests of chunk ``c`` past ``capacity`` (bytes)."""
        units = int(capacity // engine_params.MAP_UNIT_BYTES)
        past = np.flatnonzero(np.asarray(c.offset, np.int64) // engine_params.MAP_UNIT_BYTES >= units)
        if past.size:
            if self.first_line is None:
                self.first_line = int(c.line[past[0]])
            self.count += int(past.size)

    def warning(self, capacity: float, label: str, lines: bool = True) -> str | None:
        """What a summary says about them (None when there are none): how many, the first one's line of
        ``label`` (``lines``: a trace file; else its request number) and the wrapping on a drive of
        ``capacity`` bytes."""
        if not self.count:
            return None
        first = f"line {self.first_line} of {label}" if lines else f"request {self.first_line} of {label}"
        return (f"{self.count} requests lay past the end of the drive's user capacity ({capacity:.6g} "
                f"bytes), the first at {first}: they were wrapped onto the drive modulo its capacity (offset "
                "mod capacity, in 4 KiB units), as for a trace recorded on a larger drive")


def within(chunks: Iterable[Chunk], capacity: float, label: str,
           beyond: Beyond | None = None) -> Iterator[Chunk]:
    """``chunks`` as they come, refusing (at its trace line) the first request larger than the drive's user
    capacity (``capacity`` bytes, :func:`oversized`); ``beyond`` counts the requests that start past the
    end of the drive (:class:`Beyond`)."""
    for c in chunks:
        big = oversized(c.size, capacity)
        if big.size:
            i = int(big[0])
            raise TraceError(label, int(c.line[i]), f"a request of {int(c.size[i])} bytes is larger than the "
                             f"drive's user capacity ({capacity:.6g} bytes)")
        if beyond is not None:
            beyond.add(c, capacity)
        yield c


def histogram_warning(n: int) -> str:
    """What a summary says when ``n`` requests fell in the latency histogram's top bin (``ssdx.core.stats``:
    it ends at 100 s and holds every latency above)."""
    top = float(stats.bin_edges()[-2])
    return (f"{n} requests took {top:.3g} s or longer, the top of the latency histogram (0.1 µs to 100 s, "
            "longer latencies counted in its last bin): a percentile that falls there says only "
            f"{top:.3g} s or more; the means are exact")


def run_replay(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Replay a fio job file, a trace or a synthetic stream through the configured drive: ``summary.json``
    (module docstring for the fio fields) and ``latency_cdf.png``.  A malformed trace line stops with the
    file and the line (exit 2), or with ``workload.on_error=skip`` is skipped and counted; a problem of a
    fio job file stops with the file and the line (``ssdx.workloads.fio.FioError``, exit 2).  Two workload
    sources are refused (:func:`source`) before the fio job is read."""
    source(cfg["workload"])
    jobs = fio_workload(cfg)
    if jobs is not None:
        cfg = with_fio(cfg, jobs)
    dtype = io.dtype(cfg.get("precision", "float32"))
    cols = engine_params.columns_from_config(cfg)
    trees = engine_params.build(cols, dtype=dtype, warn=False)  # the summary's warnings say it
    backend = engine_backends.select(cfg["engine"])
    capacity = capacity_bytes(cfg)
    groups = jobs.groups() if jobs is not None else []
    by_group = jobs is not None and (len(groups) > 1
                                     or any(j.steady or j.ramp_s or j.latency for j in jobs.jobs))
    if by_group:  # streamed group by group (replay_groups)
        chunks, reader, label = None, None, str(cfg["workload"]["fio"])
    else:
        chunks, reader, label = stream(cfg, jobs, capacity if jobs is not None else None)
    field = "workload.fio" if jobs is not None else "workload.trace_path" if reader else "workload.synthetic"
    beyond = Beyond()
    per_group: list[dict[str, Any]] = []
    truncated = False
    try:
        if by_group:  # stonewall groups, or a job that ends at steady state
            res, per_group, truncated = replay_groups(cfg, groups, dtype, backend, capacity, label, beyond,
                                                      progress)
        else:
            res = replay.replay(trees, within(chunks, capacity, label, beyond), progress=progress,
                                desc="replay", backend=backend)
    except TraceError as e:
        raise params.ConfigError(field, label, f"malformed trace: {e}") from None
    except replay.EmptyStream:
        rule = no_requests("replay", reader.skipped if reader else 0)
        raise params.ConfigError(field, label, rule) from None
    m = res.metrics
    over = int(res.extra["sums"]["hist"][0][..., -1].sum())
    wrapped = beyond.warning(capacity, label, lines=field == "workload.trace_path")
    summary = {
        "trace": label,
        "format": "fio" if jobs else cfg["workload"].get("format") if reader else "synthetic",
        "drive": cfg["drive"].get("name", "custom"), "loop": cfg["engine"]["loop"], "backend": backend,
        "queue_depth": int(cfg["workload"]["queue_depth"]),
        "requests": int(m["requests"][0]), "read_fraction": float(m["read_fraction"][0]),
        "iops": float(m["iops"][0]), "mb_s": float(m["mb_s"][0]), "makespan_s": float(m["makespan_s"][0]),
        "latency_us": _latency_block(m, 0),
        "read_latency_us": _latency_block(m, 0, "read_"), "write_latency_us": _latency_block(m, 0, "write_"),
        "queue_share": float(m["queue_share"][0]),
        "die_utilisation": {"mean": float(m["die_utilisation_mean"][0]),
                            "max": float(m["die_utilisation_max"][0])},
        "nand": {k: float(m[k][0]) for k in ("nand_read_pages", "nand_program_pages", "erases", "map_misses",
                                             "pslc_bytes", "native_bytes", "folding_bytes")},
        "skipped_lines": reader.skipped if reader else 0,
        "skipped_examples": reader.skipped_examples if reader else [],
        "unsorted_requests": reader.unsorted if reader else 0,
        "compile_s": res.compile_s, "run_s": res.run_s,
        **fio_figures(m, res.extra["sums"]),
        "fio_job": jobs.name if jobs else None, "fio_ignored": jobs.ignored if jobs else [],
        "latency_beyond_histogram": over,
        "requests_past_capacity": beyond.count,
        "warnings": [w for w in (engine_params.address_warning(capacity), wrapped,
                                 histogram_warning(over) if over else None) if w],
    }
    if jobs is not None:
        summary.update({"fio_jobs": jobs.describe(), "fio_ignored_by_design": jobs.ignored_by_design,
                        "fio_truncated": truncated or bool(getattr(chunks, "truncated", False)),
                        "fio_groups": per_group})
    if reader is not None:
        summary["trace_truncated"] = reader.truncated
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    engine_report.plot_latency_cdf({summary["drive"]: res.extra["sums"]["hist"][0]},
                                   out_dir / "latency_cdf.png",
                                   f"{label} on {summary['drive']} ({summary['loop']} loop, "
                                   f"QD {summary['queue_depth']})")
    return summary


def replay_groups(cfg: Mapping[str, Any], groups: list[fio.FioWorkload], dtype, backend: str, capacity: float,
                  label: str, beyond: Beyond,
                  progress: bool) -> tuple[replay.Result, list[dict[str, Any]], bool]:
    """Replay fio's ``stonewall`` groups one after another on one drive: each group's jobs together at
    their own queue depth and loop (:func:`with_fio`), starting once every request of the group before has
    completed, on the drive state it left (``replay.Carry``).  ``workload.requests`` caps each group.

    Returns the whole run's result (the groups' sums added, the makespan their sum, die utilisation over
    it), each group's figures (fio's per-group report: ``group``, ``jobs``, ``queue_depth``, ``loop``,
    ``requests``, ``makespan_s``, ``iops``, ``mb_s``, ``latency_us``, ``read_latency_us``,
    ``write_latency_us``, ``die_utilisation_mean``, ``nand`` (page and pSLC counts), ``truncated`` and
    fio's ``bw``/``clat_us`` per direction) and whether any group was truncated."""
    cfgs = [with_fio(cfg, g) for g in groups]
    cols = [engine_params.columns_from_config(c) for c in cfgs]
    lay = engine_params.layout(params.concat_columns(cols))  # one layout: the drive state passes on
    carry = None
    results, out = [], []
    truncated = False
    for i, (g, c, gcfg) in enumerate(zip(groups, cols, cfgs, strict=True)):
        trees = engine_params.build(c, dtype=dtype, warn=False)[:3] + (lay,)
        stream_g = g.stream(capacity, _requests(cfg["workload"]), seed=int(cfg.get("seed", 0)))
        spec = steady.group_spec(g.jobs)
        ramp_s = steady.group_ramp(g.jobs) if g.phase != "verify" else 0.0
        target = g.jobs[0].latency if g.phase != "verify" else None
        found, ramped, search = None, None, None
        if target is not None:  # fio's latency-target search: windows at the depths it moves to
            def trees_at(qd: int, gcfg=gcfg) -> tuple:
                c_qd = engine_params.columns_from_config(dict(gcfg, workload=dict(gcfg["workload"],
                                                                                  queue_depth=qd)))
                return engine_params.build(c_qd, dtype=dtype, warn=False)[:3] + (lay,)

            parts, search = latency_search.replay_search(
                functools.lru_cache(maxsize=None)(trees_at), list(within(stream_g, capacity, label, beyond)),
                target, g.queue_depth, carry, progress=False, backend=backend)
            res = combine(parts)
        elif ramp_s:  # fio's ramp_time: the requests issued before it run, uncounted
            res, ramped = steady.replay_after_ramp(
                trees, list(within(stream_g, capacity, label, beyond)), ramp_s, g.queue_depth, g.open_loop,
                float(gcfg["engine"]["time_scale"]), carry, progress=progress, desc=f"group {i}",
                backend=backend)
        elif spec is None:
            res = replay.replay(trees, within(stream_g, capacity, label, beyond), progress=progress,
                                desc=f"group {i}", backend=backend, carry=carry)
        else:  # fio's steady-state detection: the group ends when the criterion is met
            res, found = steady.replay_until_steady(
                trees, list(within(stream_g, capacity, label, beyond)), spec, g.queue_depth, g.open_loop,
                float(gcfg["engine"]["time_scale"]), carry, progress=progress, desc=f"group {i}",
                backend=backend)
        carry = res.extra["carry"]
        results.append(res)
        m = res.metrics
        truncated = truncated or stream_g.truncated
        out.append({"group": i, "jobs": [j.name for j in g.jobs], "phase": g.phase or "run",
                    "queue_depth": search.depth if search else g.queue_depth,
                    "loop": gcfg["engine"]["loop"], "requests": int(m["requests"][0]),
                    "makespan_s": float(m["makespan_s"][0]), "iops": float(m["iops"][0]),
                    "mb_s": float(m["mb_s"][0]), "latency_us": _latency_block(m, 0),
                    "read_latency_us": _latency_block(m, 0, "read_"),
                    "write_latency_us": _latency_block(m, 0, "write_"),
                    "die_utilisation_mean": float(m["die_utilisation_mean"][0]),
                    "nand": {k: float(m[k][0]) for k in ("nand_read_pages", "nand_program_pages",
                                                         "pslc_bytes", "native_bytes", "folding_bytes")},
                    "truncated": bool(stream_g.truncated) and not (found and found.attained)
                    and not (search and search.done),
                    **({"steady_state": found.summary(spec)} if found else {}),
                    **({"latency_target": search.summary(target)} if search else {}),
                    **({"ramp": {"ramp_s": ramp_s, "ramp_requests": ramped}} if ramp_s else {}),
                    **fio_figures(m, res.extra["sums"])})
    return combine(results), out, truncated


def combine(results: list[replay.Result]) -> replay.Result:
    """Replays run one after another on the same drives as one result: their sums added, the makespan
    their sum, die utilisation over it; the last one's carry (the drive after them all)."""
    sums = {k: sum(r.extra["sums"][k] for r in results) for k in results[0].extra["sums"]}
    makespan = sum(np.asarray(r.metrics["makespan_s"], np.float64) for r in results)
    busy_end = makespan - results[-1].metrics["makespan_s"] + results[-1].extra["horizon_s"]
    from ssdx.models.engine import model as engine

    metrics = engine.metrics(sums, makespan, results[-1].extra["mask"], busy_end_s=busy_end)
    return replay.Result(metrics=metrics, compile_s=sum(r.compile_s for r in results),
                         run_s=sum(r.run_s for r in results),
                         extra={"sums": sums, "backend": results[-1].extra["backend"], "horizon_s": busy_end,
                                "mask": results[-1].extra["mask"], "carry": results[-1].extra.get("carry")})


# ------------------------------------------------------------------------------------------- boot

def qd1_probe(op: int, n: int, seed: int) -> Chunk:
    """``n`` 4 KiB random commands of one type over 64 GB (CrystalDiskMark-style 4K Q1T1 probe)."""
    return synthetic.fio_like(n, read_fraction=1.0 if op == READ else 0.0, span_bytes=64e9, seed=seed)


def run_boot(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """QD1 latencies and the Windows 11 boot replay per preset drive, after "Storage requirements suited to
    an OS installation (2/3)" (Qiita, in Japanese, posted 2022-03-15).

    With ``workload.fio`` the study also replays the fio job on every drive (``_boot_fio``): each drive's
    ``fio`` block holds fio's figures (``iops``, ``bw``, ``clat_us``) at the job's own depth and loop.

    Every drive runs in one batch (one compiled kernel, padded die layout).  ``boot_storage_time_s`` is
    the time the storage needs for the boot log at QD1: the makespan of the closed-loop replay, i.e.
    the sum of the 45,491 latencies.  ``model_difference_s`` is SATA minus PCIe 4.0.
    """
    dtype = io.dtype(cfg.get("precision", "float32"))
    b = cfg.get("boot") or {}
    drives_cfg = b.get("drives")
    if drives_cfg is not None and (isinstance(drives_cfg, str) or len(list(drives_cfg)) == 0):
        raise params.ConfigError("boot.drives", drives_cfg, "a non-empty list of drive presets (conf/drive); "
                                 f"null for the default {list(BOOT_DRIVES)}")
    names = list(drives_cfg or BOOT_DRIVES)
    probe = b.get("probe_requests", 2000)
    if isinstance(probe, bool) or not isinstance(probe, int | float) or probe != int(probe) \
            or not 1 <= probe <= fio.MAX_REQUESTS:
        raise params.ConfigError("boot.probe_requests", probe, f"integer 1 <= x <= {fio.MAX_REQUESTS:.0e} "
                                 "(QD1 probe commands per type; the bound of workload.requests)")
    n_probe = int(probe)
    sata, pcie4 = b.get("sata", "sata_tlc_500"), b.get("pcie4", "aldrin_pro_2tb")
    for key, v in (("boot.sata", sata), ("boot.pcie4", pcie4)):
        if v not in names:
            raise params.ConfigError(key, v, f"must be one of boot.drives {names}")
    try:
        drives = [presets.drive(n) for n in names]
    except KeyError as e:
        raise params.ConfigError("boot.drives", names, str(e)) from None
    w = dict(cfg["workload"], queue_depth=1)
    run_cfg = dict(cfg, workload=w, engine=dict(cfg["engine"], loop="closed"))
    cols = engine_params.columns_from_config(run_cfg, drives)
    trees = engine_params.build(cols, dtype=dtype)
    backend = engine_backends.select(cfg["engine"])
    seed = int(cfg.get("seed", 0))
    boot_chunk = synthetic.windows11_boot(seed)
    probes = {}
    for op, name in ((READ, "read"), (WRITE, "write")):  # device memory: at most DEFAULT_CHUNK per step
        probes[name] = replay.replay(trees, [qd1_probe(op, n_probe, seed)],
                                     chunk_len=min(n_probe, replay.DEFAULT_CHUNK), backend=backend).metrics
    res = replay.replay(trees, [boot_chunk], chunk_len=len(boot_chunk), progress=progress, desc="boot",
                        backend=backend)
    m = res.metrics
    per = {}
    for i, name in enumerate(names):
        d = drives[i]
        per[name] = {
            "interface": d["interface"], "nand": d["nand"], "dram": bool(d["dram"]),
            "qd1_read_4k_us": float(probes["read"]["read_latency_mean_us"][i]),
            "qd1_write_4k_us": float(probes["write"]["write_latency_mean_us"][i]),
            "qd1_read_4k_mb_s": float(probes["read"]["mb_s"][i]),
            "boot_storage_time_s": float(m["makespan_s"][i]),
            "boot_read_time_s": float(res.extra["sums"]["lat_sum"][i, READ]),
            "boot_write_time_s": float(res.extra["sums"]["lat_sum"][i, WRITE]),
            "boot_read_latency_mean_us": float(m["read_latency_mean_us"][i]),
            "boot_write_latency_mean_us": float(m["write_latency_mean_us"][i]),
        }
    fio_summary = None
    jobs = fio_workload(cfg)
    if jobs is not None:  # the same QD study on a fio job of the user's
        fio_summary = _boot_fio(cfg, jobs, drives, names, dtype, backend, progress)
        for name in names:
            per[name]["fio"] = fio_summary.pop(name)
    s, p = per[sata], per[pcie4]
    read_diff = s["qd1_read_4k_us"] - p["qd1_read_4k_us"]
    write_diff = s["qd1_write_4k_us"] - p["qd1_write_4k_us"]
    counts = synthetic.BOOT
    summary = {
        "workload": "windows11_boot (Qiita, 2022-03-15)", "backend": backend,
        "reads": counts[READ]["commands"], "writes": counts[WRITE]["commands"],
        "read_mb": counts[READ]["bytes_mb"], "write_mb": counts[WRITE]["bytes_mb"],
        "seed_method_difference_s": synthetic.seed_method_difference_s(),
        "seed_method": "40,000 reads x 30 us + 5,000 writes x 200 us (the Qiita article's stated "
                       "assumptions)",
        "drives": per,
        "sata_drive": sata, "pcie4_drive": pcie4,
        "model_difference_s": s["boot_storage_time_s"] - p["boot_storage_time_s"],
        "seed_method_with_model_latencies_s": synthetic.seed_method_difference_s(
            read_diff_us=read_diff, write_diff_us=write_diff),
        "model_qd1_read_4k_difference_us": read_diff, "model_qd1_write_4k_difference_us": write_diff,
        "press_measurement": "less than 2 s difference SATA vs PCIe (PC Watch, 2022-02-08, as quoted by "
                             "the Qiita article)",
        "fio_job": jobs.name if jobs is not None else None,
        "fio_ignored": jobs.ignored if jobs is not None else [],
        **(fio_summary or {}),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    engine_report.plot_boot(per, out_dir / "boot_qd1.png")
    return summary


def _boot_fio(cfg: Mapping[str, Any], jobs: fio.FioWorkload, drives: list[dict], names: list[str], dtype,
              backend: str, progress: bool) -> dict[str, Any]:
    """Replay the fio jobs on every drive of the boot study, in one batch: per drive fio's figures
    (:func:`fio_figures`) and ``latency_us``; plus ``fio_capacity_gb``, ``fio_truncated`` and
    ``fio_jobs``.  One stream for all drives: the job's ``N%`` sizes and a job without ``size`` refer to
    the smallest drive's capacity, so every drive sees the same requests (a comparison of drives)."""
    caps = [capacity_bytes(dict(cfg, drive=d)) for d in drives]
    run_cfg = with_fio(dict(cfg, drive=drives[0]), jobs)
    trees = engine_params.build(engine_params.columns_from_config(run_cfg, drives), dtype=dtype)
    chunks = jobs.stream(min(caps), _requests(cfg["workload"]), seed=int(cfg.get("seed", 0)))
    res = replay.replay(trees, chunks, progress=progress, desc="fio", backend=backend)
    m = res.metrics
    out: dict[str, Any] = {name: {**fio_figures(m, res.extra["sums"], i), "latency_us": _latency_block(m, i),
                                  "requests": int(m["requests"][i]), "iops": float(m["iops"][i]),
                                  "mb_s": float(m["mb_s"][i])}
                           for i, name in enumerate(names)}
    out.update({"fio_capacity_gb": min(caps) / 1e9, "fio_loop": run_cfg["engine"]["loop"],
                "fio_queue_depth": int(run_cfg["workload"]["queue_depth"]), "fio_jobs": jobs.describe(),
                "fio_ignored_by_design": jobs.ignored_by_design,
                "fio_truncated": bool(getattr(chunks, "truncated", False))})
    return out
