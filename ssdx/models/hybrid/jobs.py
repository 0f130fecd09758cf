"""Hybrid SCM/NAND replays behind the CLI: the streams, their warm-up, the table of a batch and the
NAND-per-workload sweep (Fukuchi et al., SCM/NAND hybrid SSD with four NAND types; full version ISCAS 2018);
the paper's two studies are ``ssdx.models.hybrid.studies``.

Configurations are grouped by workload: one request stream per group is cut into 4 KiB lines and replayed
through every configuration of the group at once (``ssdx.models.hybrid.model.simulate``).  A stream is an MSR
Cambridge volume preset (``ssdx.workloads.msr``) or, when ``workload.trace_path`` names a directory holding
``<volume>.csv`` files (or one such file), the real trace.

**Warm-up.**  The SCM starts empty and the dies idle.  Metrics count only after (1) the stream has touched
``hybrid.warmup_fills`` × the group's largest SCM capacity in distinct lines (capped at 90 % of the
footprint, which a larger SCM never fills; :func:`warmup_requests`) and (2) the SCM has then created
``hybrid.settle_fills`` × its threshold space of flush work — insertions that push a dirty line out, on a
write-back LRU of that capacity (at most ``MAX_SETTLE`` × the measured requests), during which the flushed
data waiting for the dies builds up to its steady level (:func:`settle_requests`).  A synthetic stream is
generated longer until both fit (at most ``max(MAX_GROWTH × measured, MAX_STREAM)`` requests).  A stream is
``warmed`` when the SCM filled and its threshold space cycled at least once before the window (``warm_regime:
flushing``).  A synthetic stream whose working set never fills the SCM (prxy_1's at 10 % of its footprint)
has another steady state: with LRU victims nothing is ever pushed out, so nothing is programmed and the
misses left are first touches.  It is generated until those are at most ``RESIDENT_COLD`` of the window's
lines, its prefix replayed as the cache it leaves (:func:`resident_prefix`: each line once, by last use),
and it is ``warmed`` in the ``resident`` regime; ``first_touch_share`` gives that share for every stream.
A run booked past its window on some resource (its backlog still growing: flushed data arriving faster
than its dies program it, until writes wait for SCM space) settles twice as long and is replayed alone,
up to ``MAX_SETTLE_DOUBLINGS`` times; its row gives ``settle_doublings`` and its own ``warmup_requests``.
Each configuration then reports the IOPS of the two halves of its measured window and the utilisation of
every resource; ``steady`` is false where the halves differ by more than
``ssdx.models.hybrid.model.STEADY_TOLERANCE`` or a resource was booked above
``ssdx.models.hybrid.model.MAX_UTILISATION`` of the window (summaries list those runs and why).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ssdx import params
from ssdx.core import io
from ssdx.models.hybrid import model as hybrid
from ssdx.models.hybrid import params as hybrid_params
from ssdx.models.hybrid.findings import (
    BASELINE,
    PAPER_TABLE2,
    TABLE1,
    TIE_PERCENT,
    WRITE_INTENSIVE,
    balance_ratio,
    excluded,
    fg_tlc_loss_bound,
    findings,
    relative,
    steady_state,
    utilisation,
    validation_findings,
    volume_statistics,
)
from ssdx.models.hybrid.params import SECTOR_BYTES, UNIT_BYTES
from ssdx.sweep import space
from ssdx.workloads.traces import READ, WRITE

#: a synthetic stream grows to at most max(MAX_GROWTH × measured requests, MAX_STREAM) requests to warm up
MAX_GROWTH, MAX_STREAM = 10, 200_000
MAX_SETTLE = 4  # the settling part of the warm-up lasts at most this many times the measured requests
#: a run booked past its window (``overbooked``: its backlog still grew, so it was not yet in its steady
#: state) is replayed alone with the settling part and the stream's bounds doubled, at most this many times
#: (``settle_doublings`` in its row)
MAX_SETTLE_DOUBLINGS = 3
#: a stream whose working set fits the SCM (:func:`resident_prefix`) is generated until the measured
#: window's first touches fall to this share of its lines, at most MAX_RESIDENT_STREAM requests
RESIDENT_COLD, MAX_RESIDENT_STREAM = 1e-3, 32_000_000

__all__ = [
    "BASELINE", "PAPER_TABLE2", "TABLE1", "TIE_PERCENT", "WRITE_INTENSIVE", "balance_ratio", "excluded",
    "fg_tlc_loss_bound", "findings", "relative", "run_sweep", "run_table", "steady_state", "sweep_columns",
    "utilisation", "validation_findings", "volume_statistics",
]


class Stream(dict):
    """Host lines of one workload (``ssdx.models.hybrid.model.lines_from_requests``) plus ``info``."""

    info: dict[str, Any]


def warmup_requests(line: np.ndarray, first: np.ndarray, target_lines: float) -> int | None:
    """Requests before the one whose line brings the distinct lines seen to ``target_lines``; None if the
    stream never gets there."""
    if target_lines <= 0:
        return 0
    _, first_at = np.unique(line, return_index=True)
    if len(first_at) < target_lines:
        return None
    at = np.sort(first_at)[int(np.ceil(target_lines)) - 1]
    return int(np.cumsum(first)[at] - 1)


def _requests_from_trace(workload: Mapping, path: Path, limit: int):
    from ssdx.workloads import traces

    reader = io.trace_reader({**workload, "trace_path": str(path)}, limit)  # checks format and on_error
    try:
        parts = list(reader)
    except traces.TraceError as e:
        raise params.ConfigError("workload.trace_path", str(path), f"malformed trace: {e}") from None
    if not parts:
        rule = traces.no_requests("replay", reader.skipped) + ": every volume's trace needs requests"
        raise params.ConfigError("workload.trace_path", str(path), rule)
    cat = lambda attr: np.concatenate([getattr(c, attr) for c in parts])  # noqa: E731
    return cat("op"), cat("offset"), cat("size"), reader.skipped


def trace_file(workload: Mapping[str, Any], name: str) -> Path | None:
    """The real trace of volume ``name``: ``workload.trace_path`` itself, or ``<trace_path>/<name>.csv``."""
    tp = workload.get("trace_path")
    if not tp:
        return None
    p = Path(tp)
    if p.is_dir():
        f = p / f"{name}.csv"
        if not f.is_file():
            raise params.ConfigError("workload.trace_path", tp, f"the directory must hold {name}.csv")
        return f
    if not p.is_file():
        raise params.ConfigError("workload.trace_path", tp, "must be a trace file or a directory of them")
    return p


def _fill_target(fills: float, capacity_lines: int, footprint_bytes: float) -> float:
    """Distinct lines the warm-up must touch: ``fills`` SCM capacities, at most 90 % of the footprint."""
    return fills * min(float(capacity_lines), 0.9 * footprint_bytes / hybrid_params.UNIT_BYTES)


def settle_requests(line: np.ndarray, op: np.ndarray, start: int, first: np.ndarray, capacity_lines: int,
                    room_lines: float, settle: float, cap: int) -> tuple[int | None, bool]:
    """Requests after request ``start`` until the SCM has created ``settle × room_lines`` lines of flush work,
    and whether it created at least ``room_lines`` of it (its threshold space cycled once: *warmed*).

    Flush work is counted on a fully associative write-back LRU cache of ``capacity_lines`` (the lines the
    SCM holds before NV-WB moves data out; ``ssdx.workloads.lru.dirty_evictions``): only an insertion that
    pushes a dirty line out creates a program, so a read miss that replaces a clean line does not count.
    While the dies drain flushed data more slowly than it arrives, the data waiting for them grows by at
    most one line per such insertion until it fills the threshold space ``room_lines``; ``settle`` of a few
    threshold spaces lets it reach that level (the measured window's halves and utilisations check it).
    At most ``cap`` requests.  ``(None, False)`` if the stream ends before either."""
    from ssdx.workloads import lru

    req = np.cumsum(first) - 1
    at = np.flatnonzero(req >= start)
    if len(at) == 0:
        return None, False
    flushes = lru.dirty_evictions(line, op == WRITE, max(int(capacity_lines), 1))[at[0]:]
    cum = np.cumsum(flushes)
    need = int(np.ceil(settle * room_lines))
    if need <= 0:
        return 0, True
    if cum[-1] >= need:
        n = min(int(req[at[0] + int(np.searchsorted(cum, need))]) - start + 1, cap)
    elif int(req[-1]) - start + 1 >= cap:
        n = cap
    else:
        return None, False
    done = np.flatnonzero(req[at] < start + n)
    made = int(cum[done[-1]]) if len(done) else 0
    return n, made >= int(np.ceil(room_lines))


def first_touch_share(line: np.ndarray, start: int) -> float:
    """Share of the lines from index ``start`` on that touch a line for the first time in the stream."""
    if start >= len(line):
        return 0.0
    _, first_at = np.unique(line, return_index=True)
    return float(np.sum(first_at >= start)) / (len(line) - start)


def resident_prefix(raw: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
    """The lines ``raw[:start]`` replaced by the LRU cache they leave when it evicts nothing: each distinct
    line once, in the order of its last use, a write if the prefix ever wrote it (else a read), each a
    request of its own.

    An LRU cache's content after a stream is its most recently used lines, in the order of their last use,
    so replaying this instead of the prefix leaves the same lines in every set with the same recency; a
    line is dirty if it was written and never written back, which holds exactly while nothing is pushed out
    (a working set within the SCM's threshold space).  The prefix's timing is not replayed: its cold
    misses' NAND reads and SCM writes come once per line, and nothing of it is measured."""
    line = raw["line"][:start]
    uniq, last_rev = np.unique(line[::-1], return_index=True)  # sorted; last use counted from the end
    written = np.isin(uniq, line[raw["op"][:start] == WRITE])
    order = np.argsort(len(line) - 1 - last_rev, kind="stable")  # oldest last use first
    n = len(uniq)
    return {"op": np.where(written[order], WRITE, READ).astype(raw["op"].dtype),
            "line": uniq[order].astype(raw["line"].dtype),
            "sectors": np.full(n, UNIT_BYTES // SECTOR_BYTES, raw["sectors"].dtype),  # whole lines
            "first": np.ones(n, bool), "last": np.ones(n, bool), "valid": np.ones(n, bool)}


def stream(name: str, workload: Mapping[str, Any], measure: int, capacity: Callable[[float], int],
           fills: float, seed: int = 0, settle: float = 0.0, threshold: float = 0.2,
           smallest: Callable[[float], int] | None = None, lru: bool = False, reach: int = 1) -> Stream:
    """The line stream of workload ``name`` with its warm-up: ``measure`` requests counted after it.

    ``capacity(footprint_bytes)`` is the largest SCM capacity (lines) the stream serves; the warm-up fills
    it (``fills``), then lets it create ``settle`` times its threshold space (``threshold`` × capacity) of
    flush work (:func:`settle_requests`; module docstring).

    A synthetic stream that never touches enough distinct lines to fill the SCM, served by LRU SCMs
    (``lru``) whose smallest (``smallest(footprint_bytes)``, lines) holds its whole working set below the
    threshold, reaches the steady state of a *resident* working set instead: nothing is ever pushed out,
    so nothing is programmed, and the only misses left are first touches.  Its stream is generated until
    the measured window's first touches are at most :data:`RESIDENT_COLD` of its lines (at most
    :data:`MAX_RESIDENT_STREAM` requests), and the prefix is replayed as the cache it leaves
    (:func:`resident_prefix`); ``info`` says ``warm_regime: resident`` and gives the window's
    ``first_touch_share``.  ``reach`` multiplies the settling part's and the synthetic stream's bounds
    (:data:`MAX_SETTLE`, :data:`MAX_GROWTH`)."""
    from ssdx.workloads import msr

    def warmup(raw: Mapping[str, np.ndarray], cap: int, target: float
               ) -> tuple[int | None, int | None, bool]:
        """Fill requests, settling requests and whether the threshold space cycled (None: not reached)."""
        warm = warmup_requests(raw["line"], raw["first"], target)
        if warm is None:
            return None, None, False
        limit = int(np.floor((1.0 - threshold) * cap))
        extra, cycled = settle_requests(raw["line"], raw["op"], warm, raw["first"], limit, threshold * cap,
                                        settle, MAX_SETTLE * reach * measure)
        return warm, extra, cycled

    path = trace_file(workload, name)
    if path is not None:
        limit = int(workload.get("max_trace_requests") or 50_000_000)
        op, off, size, skipped = _requests_from_trace(workload, path, limit)
        raw = hybrid.lines_from_requests(op, off, size)
        footprint = float(len(np.unique(raw["line"]))) * hybrid_params.UNIT_BYTES
        cap = capacity(footprint)
        warm, extra, cycled = warmup(raw, cap, _fill_target(fills, cap, footprint))
        source = str(path)
    else:
        if name not in msr.VOLUMES:
            raise params.ConfigError("workload.msr", name, f"must be one of {sorted(msr.VOLUMES)} "
                                     "(or point workload.trace_path at the real traces)")
        n, skipped = 2 * measure, 0
        footprint = float(msr.volume(name).footprint_bytes)
        cap = capacity(footprint)
        target = _fill_target(fills, cap, footprint)
        longest = reach * max(MAX_GROWTH * measure, MAX_STREAM)
        while True:
            ch = msr.generate(name, n, seed=seed, timed=False)
            raw = hybrid.lines_from_requests(ch.op, ch.offset, ch.size)
            warm, extra, cycled = warmup(raw, cap, target)
            if (extra is not None and n - warm - extra >= measure) or n >= longest:
                break
            n = min(max(2 * n, (warm or 0) + (extra or 0) + measure), longest)
        op, off, size = ch.op, ch.offset, ch.size
        source = f"msr:{name} (synthetic, ssdx.workloads.msr)"
    regime = None
    if warm is None and path is None and lru and smallest is not None:
        limit = np.floor((1.0 - threshold) * smallest(footprint))
        resident = _resident(name, measure, seed, limit, longest)
        if resident is not None:
            raw, n, share = resident
            regime = "resident"
    n = n if regime else len(op)
    warmed = regime is not None and share <= RESIDENT_COLD or (
        regime is None and extra is not None and cycled and warm + extra + measure <= n)
    start = warm + extra if warmed and regime is None else max(n - measure, 0)
    stop = min(n, start + measure)
    req_of_line = np.cumsum(raw["first"]) - 1
    keep = req_of_line < stop
    window = keep & (req_of_line >= start)
    lines = {k: v[window] for k, v in raw.items()}
    lines["measure"] = np.ones(int(window.sum()), bool)
    lines["half"] = req_of_line[window] >= start + (stop - start) // 2
    before = keep & (req_of_line < start)
    prefix = resident_prefix(raw, int(np.sum(before))) if regime else {k: v[before] for k, v in raw.items()}
    unmeasured = np.zeros(len(prefix["op"]), bool)
    prefix = {**prefix, "measure": unmeasured, "half": unmeasured}
    out = Stream({k: np.concatenate([prefix[k], lines[k]]) for k in lines})
    out.info = {"workload": name, "source": source, "warmup_requests": int(start),
                "fill_requests": None if warm is None else int(warm),
                "settle_requests": None if extra is None else int(extra),
                "measured_requests": int(stop - start), "warmed": bool(warmed), "skipped_lines": int(skipped),
                "footprint_bytes": footprint, "warm_regime": regime or ("flushing" if warmed else None),
                "first_touch_share": first_touch_share(raw["line"][:int(np.sum(keep))], int(np.sum(before)))}
    if regime:
        out.info["resident_lines"] = int(len(prefix["op"]))
    return out


def _resident(name: str, measure: int, seed: int, limit: float, shortest: int
              ) -> tuple[dict[str, np.ndarray], int, float] | None:
    """The lines of the synthetic volume ``name`` generated long enough for a resident working set: the
    stream doubled from ``shortest`` requests until the last ``measure`` requests' first touches are at
    most :data:`RESIDENT_COLD` of their lines (at most :data:`MAX_RESIDENT_STREAM`), with its request
    count and that share; None once the lines before the window outgrow ``limit`` (the SCM would push
    lines out: not resident)."""
    from ssdx.workloads import msr

    n = max(2 * shortest, 2 * measure)
    while True:
        ch = msr.generate(name, n, seed=seed, timed=False)
        raw = hybrid.lines_from_requests(ch.op, ch.offset, ch.size)
        req = np.cumsum(raw["first"]) - 1
        start = int(np.searchsorted(req, n - measure))
        if len(np.unique(raw["line"][:start])) > limit:
            return None
        share = first_touch_share(raw["line"], start)
        if share <= RESIDENT_COLD or n >= MAX_RESIDENT_STREAM:
            return raw, n, share
        n = min(2 * n, MAX_RESIDENT_STREAM)


def run_group(cols: Mapping[str, np.ndarray], footprint: float, lines: Mapping[str, np.ndarray],
              chunk_len: int = hybrid.CHUNK_LINES, dtype=np.float32,
              progress: Callable[[int], None] | None = None, checked: bool = False,
              floor: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Replay one stream through every configuration of ``cols`` (same workload; ``footprint`` in bytes);
    metric columns.  ``checked``: the caller has validated ``cols`` with this footprint already; ``floor``:
    the smallest layout sizes (``ssdx.models.hybrid.params.sizes``)."""
    n = len(cols["hybrid.nand"])
    hp, lay = hybrid.build(cols, np.full(n, footprint), dtype=dtype, checked=checked, floor=floor)
    return hybrid.simulate(hp, lay, dict(lines), chunk_len=chunk_len, progress=progress)


def sweep_columns(sweep: Mapping[str, Any], cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``workload.msr`` and ``hybrid.*`` columns of a ``model: hybrid`` sweep: the base config, the sweep's
    ``base`` overrides, then its space."""
    return space.sweep_rows(base_columns(cfg), sweep)


def base_columns(cfg: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The one-row base of a ``model: hybrid`` sweep: the config's ``hybrid.*`` fields and its
    ``workload.msr`` (default ``prxy_0``)."""
    base = hybrid_params.columns(cfg["hybrid"])
    base["workload.msr"] = np.asarray([str((cfg.get("workload") or {}).get("msr") or "prxy_0")])
    return base


def group_job(name: str, idx: np.ndarray, sub: Mapping[str, np.ndarray], workload: Mapping[str, Any],
              measure: int, fills: float, seed: int, settle: float = 0.0,
              floor: Mapping[str, int] | None = None,
              device=None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """One workload group of a hybrid sweep: its stream replayed through the configurations ``sub``
    (row numbers ``idx``), on a layout of at least the sizes ``floor``.  Returns the table columns and the
    stream's info; module-level, so a Ray worker runs exactly this."""
    import contextlib

    import jax

    def capacity(fp: float) -> int:
        return int(hybrid_params.capacity_lines(sub, np.full(len(sub["hybrid.nand"]), fp)).max())

    def smallest(fp: float) -> int:
        return int(hybrid_params.capacity_lines(sub, np.full(len(sub["hybrid.nand"]), fp)).min())

    with jax.default_device(device) if device is not None else contextlib.nullcontext():
        thr = float(np.max(np.asarray(sub["hybrid.threshold"], float)))
        lru = bool(np.all(np.asarray(sub["hybrid.victim"]).astype(str) == "lru"))
        path = trace_file(workload, name)
        st = stream(name, workload, measure, capacity, fills, seed=seed, settle=settle, threshold=thr,
                    smallest=smallest, lru=lru)
        if path is not None:  # fits_trace runs every rule on the footprint run_group builds with
            fits_trace(sub, st.info["footprint_bytes"], path)
        res = run_group(sub, st.info["footprint_bytes"], st, progress=None, checked=path is not None,
                        floor=floor)
        warmup = np.full(len(idx), st.info["warmup_requests"])
        doublings = np.zeros(len(idx), np.int64)
        for doubling in range(1, MAX_SETTLE_DOUBLINGS + 1):
            # a run booked past its window had a backlog still growing: it settles twice as long, alone
            rows = np.flatnonzero(np.asarray(res["overbooked"]) > 0.5)
            if not len(rows) or st.info["warm_regime"] != "flushing":
                break
            sub_r = {k: np.asarray(v)[rows] for k, v in sub.items()}
            st_r = stream(name, workload, measure, capacity, fills, seed=seed, settle=settle * 2**doubling,
                          threshold=thr, smallest=smallest, lru=lru, reach=2**doubling)
            if st_r.info["warm_regime"] != "flushing":
                break
            again = run_group(sub_r, st_r.info["footprint_bytes"], st_r, progress=None,
                              checked=path is not None, floor=floor)
            for k, v in again.items():
                if k in ("compile_s", "run_s"):
                    res[k] += v
                else:
                    res[k] = np.asarray(res[k]).copy()
                    res[k][rows] = v
            warmup[rows], doublings[rows] = st_r.info["warmup_requests"], doubling
    # config_index: the row's place in the sweep's space (ssdx.sweep.config_of), which a hybrid sweep never
    # drops from, so it equals config_id
    data: dict[str, Any] = {"config_id": np.asarray(idx).astype(np.int64),
                            "config_index": np.asarray(idx).astype(np.int64)}
    data["footprint_gib"] = np.full(len(idx), st.info["footprint_bytes"] / 2**30)
    data["warmup_requests"] = warmup
    data["settle_doublings"] = doublings
    data["warmed"] = np.full(len(idx), st.info["warmed"])
    data.update({k: np.asarray(v, np.float64) for k, v in res.items() if k not in ("compile_s", "run_s")})
    info = {**st.info, "compile_s": res["compile_s"], "run_s": res["run_s"], "lines": len(st["op"])}
    return data, info


def fits_trace(sub: Mapping[str, np.ndarray], footprint_bytes: float, path: Path) -> None:
    """Refuse a real trace too small for the model: an SCM of ``hybrid.scm_ratio`` × its footprint
    (``scm_basis: footprint``) whose threshold space cannot hold one gathering unit (the rule of
    ``ssdx.models.hybrid.params.validate``) — the trace is at fault, not the ratio the user left at its
    default.  Every other rule it breaks is raised as it is, naming its field."""
    try:
        hybrid_params.validate(sub, np.full(len(sub["hybrid.nand"]), footprint_bytes))
    except params.ConfigError as e:
        row = e.row or 0
        if e.field != "hybrid.scm_ratio" or str(np.asarray(sub["hybrid.scm_basis"])[row]) != "footprint":
            raise
        ratio = float(np.asarray(sub["hybrid.scm_ratio"], float)[row])
        unit = hybrid_params.UNIT_BYTES
        raise params.ConfigError(
            "workload.trace_path", str(path),
            f"the trace is too small for the model: it touches {footprint_bytes / unit:.0f} distinct "
            f"{unit // 1024} KiB lines, so the SCM (hybrid.scm_ratio {ratio:g} x footprint) breaks the rule: "
            f"{e.rule}; use a longer trace") from None


def run_table(cols: Mapping[str, np.ndarray], cfg: Mapping[str, Any], measure: int, out_dir: Path | None,
              progress: bool = True, desc: str = "hybrid", executor=None
              ) -> tuple[pa.Table, list[dict[str, Any]]]:
    """Every configuration of ``cols``, grouped by ``workload.msr``: one row each, and the streams' info.

    Each group is one job of ``executor`` (default: the local devices).  With ``out_dir`` each finished
    group is checkpointed atomically under ``out_dir/chunks`` (``ssdx.sweep.store``); a re-run of the same
    sweep there skips the finished groups, a different sweep there is refused."""
    from ssdx.sweep import executors, runner

    fills = float(cfg["hybrid"].get("warmup_fills", 1.0))
    if not 0 <= fills <= 100:
        raise params.ConfigError("hybrid.warmup_fills", fills,
                                 "0 <= x <= 100 (SCM capacities of distinct lines)")
    settle = float(cfg["hybrid"].get("settle_fills", 0.0))
    if not 0 <= settle <= 100:
        raise params.ConfigError("hybrid.settle_fills", settle,
                                 "0 <= x <= 100 (SCM threshold spaces of new lines after the SCM fills)")
    names = np.asarray(cols["workload.msr"]).astype(str)
    order = list(dict.fromkeys(names))
    seed = int(cfg.get("seed", 0))
    workload = dict(cfg.get("workload") or {})
    groups, known = [], []
    for name in order:
        idx = np.flatnonzero(names == name)
        sub = {k: np.asarray(v)[idx] for k, v in cols.items()}
        path = trace_file(workload, name)
        if path is not None and path.stat().st_size == 0:  # before any compute: an empty volume file
            raise params.ConfigError("workload.trace_path", str(path), "the trace file is empty: every "
                                     "volume's trace needs requests to replay")
        probe_fp = footprint_hint(name, workload)
        if probe_fp is not None:  # synthetic footprints are known: refuse bad values before any compute
            hybrid_params.validate(sub, np.full(len(idx), probe_fp))
            known.append(hybrid_params.sizes(sub, np.full(len(idx), probe_fp)))
        groups.append((idx, sub))
    # every group on the largest known layout: one compiled program where the groups' sizes agree
    floor = {k: max(s[k] for s in known) for k in hybrid_params.SIZES} if known else None
    if workload.get("trace_path"):  # workers may run elsewhere: an absolute path, and its files' identity
        workload["trace_path"] = str(Path(workload["trace_path"]).resolve())
    keys = ("trace_path", "format", "on_error", "max_trace_requests")
    definition = {"sweep_model": "hybrid", "requests": measure, "warmup_fills": fills,
                  "settle_fills": settle, "seed": seed,
                  **{f"workload.{k}": workload.get(k) for k in keys},
                  "traces": _trace_identity(workload, order)}

    def make_job(g: int):
        idx, sub = groups[g]
        args = (order[g], idx, sub, workload, measure, fills, seed, settle, floor)
        return executors.Job(g, group_job, args, idx)

    out = runner.execute(cols, [idx for idx, _ in groups], make_job, lambda _g, res: res, out_dir, definition,
                         executor, progress, desc)
    return out.table, out.infos


def _trace_identity(workload: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """Size and modification time of each real trace file a sweep reads (a replaced file is a new sweep)."""
    out = {}
    for name in names:
        path = trace_file(workload, name)
        if path is not None:
            st = path.stat()
            out[name] = [st.st_size, st.st_mtime_ns]
    return out


def footprint_hint(name: str, workload: Mapping[str, Any]) -> float | None:
    from ssdx.workloads import msr

    if trace_file(workload, name) is None and name in msr.VOLUMES:
        return float(msr.volume(name).footprint_bytes)
    return None


def run_sweep(sweep: Mapping[str, Any], cfg: Mapping[str, Any], out_dir: Path,
              progress: bool = True, executor=None) -> dict[str, Any]:
    """A ``model: hybrid`` sweep: ``results.parquet``, ``summary.json``, ``relative_iops.png``."""
    if sweep.get("keep", "all") != "all":
        raise params.ConfigError("sweep.keep", sweep["keep"], "a hybrid sweep keeps its whole table: 'all'")
    cols = sweep_columns(sweep, cfg)
    given = (cfg.get("workload") or {}).get("requests")
    measure = int(sweep.get("requests", 100_000 if given is None else given))
    if not 1000 <= measure <= 100_000_000:
        raise params.ConfigError("sweep.requests", measure, "integer 1000 <= x <= 1e8 (measured requests)")
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table, infos = run_table(cols, cfg, measure, out_dir, progress, desc=str(sweep.get("name", "hybrid")),
                             executor=executor)
    wall = time.perf_counter() - t0
    df = table.to_pandas()
    basis = df["hybrid.scm_basis"].astype(str)
    sizes = sorted(set(zip(basis, df["hybrid.scm_ratio"].astype(float), strict=True)))
    rep = sweep.get("report") or {}
    want_basis = str(rep.get("scm_basis") or ("footprint" if "footprint" in set(basis) else sizes[0][0]))
    ratios = [r for b, r in sizes if b == want_basis]
    ref = float(rep.get("scm_ratio") or ratios[len(ratios) // 2])
    ref = min(ratios, key=lambda r: abs(r - ref))

    def size_key(b: str, r: float) -> str:  # "0.1" for the footprint basis (as before), "0.015 x nand" else
        return f"{r:g}" if b == "footprint" else f"{r:g} x {b}"

    def rows_at(b: str, r: float):
        return df[(basis == b) & (df["hybrid.scm_ratio"].astype(float) == r)]

    by_ratio = {}
    for b, r in sizes:
        at = rows_at(b, r)
        rel = relative(at)
        by_ratio[size_key(b, r)] = {"relative_iops": rel,
                                    "best_nand": {w: max(v, key=v.get) for w, v in rel.items()},
                                    "scm_hit_rate": {str(w): float(g["scm_hit_rate"].mean())
                                                     for w, g in at.groupby("workload.msr", sort=False)},
                                    "utilisation": utilisation(at)}
    at = rows_at(want_basis, ref)
    rel = by_ratio[size_key(want_basis, ref)]["relative_iops"]
    counts = {str(w): {str(r["hybrid.nand"]): {"nand_reads": float(r["nand_reads"]),
                                               "nand_writes": float(r["nand_writes"]),
                                               "read_write_ratio": float(r["nand_read_write_ratio"])}
                       for _, r in g.iterrows()} for w, g in at.groupby("workload.msr", sort=False)}
    summary = {
        "sweep": sweep.get("name"), "n_configs": len(df), "wall_s": wall, "scm_ratio": ref,
        "scm_basis": want_basis, "baseline": BASELINE, "nands": list(TABLE1), "relative_iops": rel,
        "best_nand": by_ratio[size_key(want_basis, ref)]["best_nand"],
        "best_nand_ties": {w: sorted(n for n, x in v.items()
                                     if x >= max(v.values()) * (1 - TIE_PERCENT / 100))
                           for w, v in rel.items()},
        "nand_counts": counts,
        "utilisation": utilisation(at), "steady_state": steady_state(df),
        "by_scm_ratio": by_ratio, "findings": {**findings(rel, counts),
                                               "balance_read_write_ratio": balance_ratio(cfg["hybrid"])},
        "streams": infos,
        "results": str(out_dir / "results.parquet"),
    }
    io.write_json(out_dir / "summary.json", summary)
    from ssdx.models.hybrid import plots as hybrid_report
    hybrid_report.plot_relative(rel, out_dir / "relative_iops.png",
                                title=f"IOPS relative to SCM/{BASELINE} (SCM = {ref:g} x {want_basis})",
                                paper=PAPER_TABLE2)
    return summary
