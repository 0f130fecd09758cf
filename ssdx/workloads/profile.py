"""A synthetic stream fitted to a trace's analysed profile (``ssdx experiment=trace_analyse``'s summary).

:func:`fit` turns a profile into generator parameters, :func:`generate` draws a stream from them, and
the stream's own profile matches the original in what the analyser measures (tested):

* **Command mix** — read / write / trim counts (``per_type.*.commands``).
* **Sequentiality by the boot-log article's rule** (same command type, consecutive, LBA-contiguous and
  increasing, ``ssdx.workloads.analyse``).  The stream is a sequence of runs: a run opens with a random
  command of type ``t`` and continues with probability ``c_t`` by a command of the same type starting where
  the last one ended.  A type-``t`` command is then sequential with probability ``c_t``, so ``c_t`` is that
  type's sequential fraction, and run heads are drawn with weights ``n_t (1 - c_t)``.
* **Sizes** — drawn from the profile's size histogram (one distribution for every type: the analyser
  keeps one histogram; the per-type byte totals are not matched separately).
* **Footprint** (distinct 4 KiB pages) — run heads land uniformly on 4 KiB-aligned offsets of a span of
  ``S`` pages; with ``B`` pages touched in all, about ``S (1 - exp(-B/S))`` are distinct (each page
  missed with probability ``exp(-B/S)``), solved for ``S`` by bisection.  A profile with no reuse gets
  a span of 1000 ``B``.
* **Arrivals** — inter-arrival gaps from a gamma distribution with the profile's mean and coefficient of
  variation (shape ``1/cv²``; cv = 1 is Poisson); with no timing in the profile, a closed-loop stream.

Use: ``ssdx experiment=trace_replay workload.synthetic=profile:DIR/summary.json workload.requests=N``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.core import io
from ssdx.workloads.analyse import MAX_SECTORS
from ssdx.workloads.traces import MAX_BYTE, READ, SECTOR, TRIM, WRITE, Chunk

PAGE = 4096
TYPES = {"read": READ, "write": WRITE, "trim": TRIM}
#: the largest request size a profile may hold: the analyser's size histogram ends there
#: (``ssdx.workloads.analyse``: larger sizes share its last bin)
MAX_SIZE = MAX_SECTORS * SECTOR
#: run heads land below half the largest byte address a request can have (``ssdx.workloads.traces.MAX_BYTE``),
#: so that a run continuing from its head stays addressable
MAX_SPAN_PAGES = (MAX_BYTE // 2) // PAGE


@dataclass(frozen=True)
class Fitted:
    """Generator parameters fitted to a profile (see the module docstring)."""

    head_weights: dict[str, float]  # run heads per command type (normalised)
    continue_prob: dict[str, float]  # c_t: the type's sequential fraction
    sizes: dict[int, float]  # bytes -> probability
    span_pages: int  # 4 KiB pages run heads land on
    gap_mean_s: float | None  # inter-arrival mean (None: closed loop)
    gap_cv: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _covered(span: float, touched: float) -> float:
    return span * -math.expm1(-touched / span)


def _number(value: Any, entry: str, rule: str, ok: Callable[[float], bool], whole: bool = False) -> float:
    """``value`` of profile ``entry`` as a float; ValueError naming the entry, the value and ``rule``."""
    bad = ValueError(f"entry {entry} = {value!r} breaks the rule: {rule}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise bad
    try:
        x = float(value)
    except (ValueError, OverflowError):
        raise bad from None
    if not math.isfinite(x) or not ok(x) or (whole and x != int(x)):
        raise bad
    return x


def _mapping(value: Any, entry: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"entry {entry} = {value!r} breaks the rule: must be a mapping ({what})")
    return value


def fit(profile: Mapping[str, Any]) -> Fitted:
    """Generator parameters of ``profile`` (the analyser's summary); ValueError naming a missing or bad
    entry (``per_type.read.commands``, ``size_bytes.histogram``, ...), its value and the rule, before any
    drawing.  Sizes are whole bytes up to the analyser's last histogram bin (``MAX_SIZE``, 32 MiB); run
    heads land on at most ``MAX_SPAN_PAGES`` pages."""
    if not isinstance(profile, Mapping):
        raise ValueError(f"not an analysed trace profile (a {type(profile).__name__}, not a mapping); "
                         "use the summary.json of ssdx experiment=trace_analyse")
    try:
        per_type = profile["per_type"]
        hist = profile["size_bytes"]["histogram"]
        footprint_raw = profile["footprint_bytes"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"not an analysed trace profile (missing {e}); use the summary.json of "
                         "ssdx experiment=trace_analyse") from None
    _mapping(per_type, "per_type", "command type -> counts")
    counts, cont = {}, {}
    for t in TYPES:
        entry = _mapping(per_type.get(t, {}), f"per_type.{t}", "commands, sequential_commands, ...")
        counts[t] = _number(entry.get("commands", 0), f"per_type.{t}.commands",
                            "a whole number of commands >= 0", lambda x: x >= 0, whole=True)
        seq = _number(entry.get("sequential_commands", 0), f"per_type.{t}.sequential_commands",
                      f"a whole number 0 <= x <= per_type.{t}.commands ({counts[t]:g})",
                      lambda x, n=counts[t]: 0 <= x <= n, whole=True)
        cont[t] = min(seq / counts[t], 0.999) if counts[t] else 0.0
    if sum(counts.values()) <= 0:
        raise ValueError("the profile counts no commands (per_type.*.commands are all 0)")
    footprint = _number(footprint_raw, "footprint_bytes", f"a number of bytes 0 <= x <= {MAX_BYTE}",
                        lambda x: 0 <= x <= MAX_BYTE) / PAGE
    heads = {t: counts[t] * (1.0 - cont[t]) for t in TYPES}
    total = sum(heads.values())
    _mapping(hist, "size_bytes.histogram", "request size in bytes -> count")
    sizes = {}
    for k, v in hist.items():
        size = _number(k, "size_bytes.histogram (a key)",
                       f"a whole number of bytes 1 <= x <= {MAX_SIZE} (the analyser's last size bin, 32 MiB)",
                       lambda x: 1 <= x <= MAX_SIZE, whole=True)
        n = _number(v, f"size_bytes.histogram[{k!r}]", "a count >= 0", lambda x: x >= 0)
        if n > 0:
            sizes[int(size)] = sizes.get(int(size), 0.0) + n
    if not sizes:
        raise ValueError("entry size_bytes.histogram breaks the rule: must map positive sizes to counts, "
                         "one count at least > 0")
    norm = sum(sizes.values())
    sizes = {k: v / norm for k, v in sorted(sizes.items())}
    mean_pages = sum(p * math.ceil(k / PAGE) for k, p in sizes.items())
    touched = sum(counts.values()) * mean_pages
    if footprint >= 0.999 * touched or footprint <= 0:
        span = 1000.0 * touched
    else:  # S (1 - exp(-B/S)) grows with S from 0 towards B: bisect on log S
        lo, hi = max(footprint, 1.0), 1000.0 * touched
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            if _covered(mid, touched) < footprint:
                lo = mid
            else:
                hi = mid
        span = math.sqrt(lo * hi)
    gaps = _mapping(profile.get("interarrival_s") or {}, "interarrival_s", "mean, cv, ...")
    mean, cv = gaps.get("mean"), gaps.get("cv")
    if mean is not None:
        mean = _number(mean, "interarrival_s.mean", "null or a time in seconds >= 0", lambda x: x >= 0)
    if cv is not None:
        cv = _number(cv, "interarrival_s.cv", "null or a coefficient of variation >= 0", lambda x: x >= 0)
    return Fitted(head_weights={t: h / total for t, h in heads.items()}, continue_prob=cont, sizes=sizes,
                  span_pages=min(max(int(round(span)), 1), MAX_SPAN_PAGES), gap_mean_s=mean or None,
                  gap_cv=cv)


def generate(f: Fitted, n: int, seed: int = 0, timed: bool = True) -> Chunk:
    """``n`` requests drawn from ``f`` (run heads, continuations, sizes, offsets, arrival times)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    names = list(TYPES)
    codes = np.asarray([TYPES[t] for t in names], np.int8)
    head_p = np.asarray([f.head_weights[t] for t in names])
    cont_p = np.asarray([f.continue_prob[t] for t in names])
    # runs: a head of type t, then Geometric(1 - c_t) - 1 continuations (c_t <= 0.999, fit caps it)
    kind = rng.choice(len(names), n, p=head_p)
    length = rng.geometric(1.0 - cont_p[kind])
    ends = np.cumsum(length)
    runs = int(np.searchsorted(ends, n)) + 1  # the runs that reach n requests; the last one is cut
    kind, length = kind[:runs], length[:runs]
    length[-1] -= int(ends[runs - 1]) - n
    run = np.repeat(np.arange(runs), length)
    size = rng.choice(np.asarray(list(f.sizes), np.int64), n, p=np.asarray(list(f.sizes.values())))
    before = np.cumsum(size) - size  # bytes of the stream before each request
    run_start = np.concatenate([[0], np.cumsum(length)[:-1]])
    head_off = rng.integers(0, f.span_pages, runs) * PAGE
    offset = head_off[run] + before - before[run_start][run]  # each continuation starts where the last ended
    op = codes[kind][run]
    if timed and f.gap_mean_s:
        cv = f.gap_cv if f.gap_cv else 0.0
        if cv > 1e-6:
            shape = 1.0 / (cv * cv)
            gaps = rng.gamma(shape, f.gap_mean_s / shape, n)
        else:
            gaps = np.full(n, f.gap_mean_s)
        gaps[0] = 0.0
        time_s = np.cumsum(gaps)
    else:
        time_s = np.full(n, np.nan)
    return Chunk(time_s=time_s, op=op, offset=offset, size=size, line=np.arange(1, n + 1))


def load(path: Path | str) -> dict[str, Any]:
    """A profile from a ``summary.json`` file; ValueError naming the file and, for broken JSON, the line."""
    try:  # a byte that is not UTF-8 is named with its line (io.NotUtf8, a ValueError)
        data = json.loads(io.utf8_text(Path(path)))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}, line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not an analysed trace profile (a JSON {type(data).__name__}, not an "
                         "object); use the summary.json of ssdx experiment=trace_analyse")
    return data
