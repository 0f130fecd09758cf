"""Garbage-collection parameters (``gc.*``): the scaled drive, the victim policy and the write pattern.

A GC run simulates a page-mapped FTL on a drive **scaled down in block count** but keeping the two
numbers that decide write amplification: the spare factor ``S_f = (physical − logical) / physical``
and the pages per block ``b`` (Desnoyers, "Analytic models of SSD write performance", ACM TOS 10(2),
2014; Van Houdt, "A mean field model for a class of garbage collection algorithms in flash-based SSDs",
SIGMETRICS 2013).  Every leaf below is dynamic (swept by ``vmap`` without recompiling) except the array sizes
``n_blocks`` and ``max_pages_per_block`` and the scan lengths, which are static.

Fields (config ``gc:``):

* ``n_blocks`` (static) — blocks of the scaled drive; one is the GC destination at any time.
* ``pages_per_block`` — ``b``, ≥ 2; ``max_pages_per_block`` (static, default ``b``) sizes the arrays
  so that several ``b`` share one compiled program.
* ``spare_factor`` — ``S_f`` in (0, 1): logical pages ``U = floor((1 − S_f)·n_blocks·b)``.
* ``policy`` — ``greedy`` | ``fifo`` | ``cost_benefit`` | ``d_choices`` (``ssdx.models.gc.model.POLICIES``);
  ``d`` the sample size of d-choices (≤ ``D_MAX``).
* ``pattern`` — ``sequential`` | ``uniform`` | ``hot_cold``; ``hot_fraction`` f of the written space
  takes ``hot_share`` r of the writes.
* ``trim_fraction`` — the top fraction of the logical space is trimmed (never written): the workload
  covers ``(1 − t)·U`` pages.
* ``compressibility`` — NAND bytes per host byte after data reduction (SandForce DuraWrite), in (0, 1].
* ``precondition`` — SNIA PTS: before the pattern, sequential writes of ``precondition`` × the written
  space (2 = the PTS's two user capacities of 128 KiB sequential writes; 0 = none).
* ``round_fraction`` — host writes per SNIA round, as a fraction of the written space.
* ``seed`` — the workload's random stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ssdx.core.fields import ConfigError, Field, check, check_rule, num, table
from ssdx.params import _choice, _pytree

POLICIES = ("greedy", "fifo", "cost_benefit", "d_choices")
PATTERNS = ("sequential", "uniform", "hot_cold")
D_MAX = 32
FIELDS = ("n_blocks", "pages_per_block", "spare_factor", "policy", "d", "pattern", "hot_fraction",
          "hot_share", "trim_fraction", "compressibility", "precondition", "round_fraction", "seed")

#: the numeric fields, their ranges and meanings
RANGES: dict[str, Field] = table(
    Field("gc.n_blocks", "blocks", 8, 1 << 20, integer=True, doc="blocks of the scaled drive"),
    Field("gc.pages_per_block", "pages", 2, 4096, integer=True, doc="pages per block b"),
    Field("gc.spare_factor", "", 0.0, 1.0, lo_open=True, hi_open=True,
          doc="spare factor (physical - logical) / physical, strictly between 0 and 1"),
    Field("gc.d", "blocks", 1, D_MAX, integer=True, doc="blocks sampled by d-choices"),
    Field("gc.hot_fraction", "", 0.0, 1.0, lo_open=True, hi_open=True,
          doc="fraction of the written space that is hot"),
    Field("gc.hot_share", "", 0.0, 1.0, doc="fraction of the writes that go to the hot space"),
    Field("gc.trim_fraction", "", 0.0, 1.0, hi_open=True, doc="fraction of the logical space trimmed"),
    Field("gc.compressibility", "", 0.0, 1.0, lo_open=True,
          doc="NAND bytes per host byte after data reduction"),
    Field("gc.precondition", "", 0.0, 100.0, doc="sequential preconditioning, x the written space"),
    Field("gc.round_fraction", "", 0.001, 100.0, doc="host writes per round, x the written space"),
    Field("gc.seed", "", 0, 2**31 - 1, integer=True, doc="random seed"),
)


@_pytree
class GcParams:
    """Dynamic GC parameters of one or many runs (leaves shaped ``()`` or ``(n,)``)."""

    pages_per_block: Any
    spare_factor: Any
    policy: Any  # index into POLICIES
    d: Any
    pattern: Any  # index into PATTERNS
    hot_fraction: Any
    hot_share: Any
    trim_fraction: Any
    compressibility: Any
    precondition: Any
    round_fraction: Any
    seed: Any


#: SNIA rounds of a run (static: the scan length); SNIA PTS judges steady state over a 5-round window
ROUNDS = Field("gc.rounds", "rounds", 5, 10_000, integer=True, doc="SNIA needs a 5-round window")


def n_rounds(value: Any, field: str = "gc.rounds") -> int:
    """The number of SNIA rounds ``value`` (config ``gc.rounds``, or a sweep's ``rounds`` with ``field``
    ``sweep.rounds``), checked against :data:`ROUNDS`."""
    check([dataclasses.replace(ROUNDS, name=field)], {field: np.asarray([value])})
    return int(value)


def columns(gc: Mapping) -> dict[str, np.ndarray]:
    """One-row ``gc.*`` columns from a config mapping (every field required)."""
    cols = {}
    for f in FIELDS:
        if f not in gc:
            raise ConfigError(f"gc.{f}", None, "the field is required (see conf/gc/default.yaml)")
        cols[f"gc.{f}"] = np.asarray([gc[f]])
    return cols


def validate(cols: Mapping, report: list | None = None) -> None:
    """Check ranges and the combinations a GC run needs (raise :class:`ConfigError` or report)."""
    _choice(cols, "gc.policy", lambda x: x in POLICIES, list(POLICIES), report)
    _choice(cols, "gc.pattern", lambda x: x in PATTERNS, list(PATTERNS), report)
    check(RANGES, cols, report)
    n, b, s = num(cols, "gc.n_blocks"), num(cols, "gc.pages_per_block"), num(cols, "gc.spare_factor")
    with np.errstate(invalid="ignore"):
        written = np.floor((1.0 - s) * n * b) * (1.0 - num(cols, "gc.trim_fraction")) \
            * num(cols, "gc.compressibility")
    # one block is the GC destination and greedy needs a block with an invalid page: U <= (n - 2)·b
    check_rule(cols, "gc.spare_factor", ~(s < 2.0 / np.maximum(n, 1)),
               "at least 2 blocks' worth of spare: spare_factor >= 2 / gc.n_blocks (one block is the GC "
               "destination, and a victim must hold an invalid page)", report=report)
    check_rule(cols, "gc.trim_fraction", ~(written < 2 * b),
               "the written space (1 - trim_fraction)·compressibility·U must span at least 2 blocks",
               report=report)
    if "gc.max_pages_per_block" in cols:
        check_rule(cols, "gc.pages_per_block", ~(b > num(cols, "gc.max_pages_per_block")),
                   "pages_per_block <= gc.max_pages_per_block (the array size)", report=report)


def build(cols: Mapping, dtype=np.float32) -> GcParams:
    """Validate and turn ``gc.*`` columns into a :class:`GcParams` (leaves shaped ``(n,)``)."""
    validate(cols)
    f = lambda k: np.asarray(num(cols, f"gc.{k}"), dtype=dtype)  # noqa: E731
    i = lambda k: np.asarray(num(cols, f"gc.{k}"), dtype=np.int32)  # noqa: E731
    return GcParams(
        pages_per_block=i("pages_per_block"), spare_factor=f("spare_factor"),
        policy=np.asarray([POLICIES.index(str(x)) for x in np.asarray(cols["gc.policy"])], np.int32),
        d=i("d"),
        pattern=np.asarray([PATTERNS.index(str(x)) for x in np.asarray(cols["gc.pattern"])], np.int32),
        hot_fraction=f("hot_fraction"), hot_share=f("hot_share"), trim_fraction=f("trim_fraction"),
        compressibility=f("compressibility"), precondition=f("precondition"),
        round_fraction=f("round_fraction"), seed=np.asarray(num(cols, "gc.seed"), np.uint32),
    )
