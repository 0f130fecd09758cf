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
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.workloads.traces import READ, TRIM, WRITE, Chunk

PAGE = 4096
TYPES = {"read": READ, "write": WRITE, "trim": TRIM}


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


def fit(profile: Mapping[str, Any]) -> Fitted:
    """Generator parameters of ``profile`` (the analyser's summary); ValueError naming a missing or bad
    entry."""
    try:
        per_type = profile["per_type"]
        hist = profile["size_bytes"]["histogram"]
        footprint = float(profile["footprint_bytes"]) / PAGE
    except (KeyError, TypeError) as e:
        raise ValueError(f"not an analysed trace profile (missing {e}); use the summary.json of "
                         "ssdx experiment=trace_analyse") from None
    counts = {t: float(per_type.get(t, {}).get("commands", 0)) for t in TYPES}
    if sum(counts.values()) <= 0:
        raise ValueError("the profile counts no commands")
    cont = {t: min(float(per_type[t].get("sequential_commands", 0)) / counts[t], 0.999) if counts[t] else 0.0
            for t in TYPES}
    heads = {t: counts[t] * (1.0 - cont[t]) for t in TYPES}
    total = sum(heads.values())
    sizes = {int(k): float(v) for k, v in hist.items() if float(v) > 0}
    if not sizes or any(k <= 0 for k in sizes):
        raise ValueError("size_bytes.histogram must map positive sizes to counts")
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
    gaps = profile.get("interarrival_s") or {}
    mean = gaps.get("mean")
    cv = gaps.get("cv")
    return Fitted(head_weights={t: h / total for t, h in heads.items()}, continue_prob=cont, sizes=sizes,
                  span_pages=max(int(round(span)), 1), gap_mean_s=float(mean) if mean else None,
                  gap_cv=float(cv) if cv is not None else None)


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
    """A profile from a ``summary.json`` file."""
    return json.loads(Path(path).read_text())
