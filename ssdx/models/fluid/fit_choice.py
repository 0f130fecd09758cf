"""Which fitted behaviour explains a fill curve: physical values first, then the curve's phases, then the
error (``ssdx experiment=fit_fill``, :mod:`ssdx.models.fluid.fit_job`).

Every rule of :data:`ssdx.models.fluid.fit_model.RULES` — a cache policy with or without a second cache
speed and with or without folding while writing — is fitted on its own (:class:`ssdx.models.fluid.fit.Fitter`)
and then judged (:func:`assess`):

* **physical** — every fitted value inside its published bound (:mod:`ssdx.models.fluid.bounds`);
* **phases** — the fitted drive's regimes (``ssdx.models.fluid.plots.phases``), seen as the measured
  curve's segmentation would see them (:func:`ssdx.models.fluid.phases.visible`), are as many as the
  measured phases;
* **error** — the RMSE over the measured samples.

:func:`choose` keeps, in this order of tiers, the first tier that holds an *acceptable* fit (RMSE within
``rule_tolerance`` of the best of all, or under :data:`GOOD_FRACTION` of the mean measured speed):
physical with the curve's phase count, physical, the phase count, any.  Within the tier it takes the
simplest rule (fewest fitted parameters, then rule order) within ``rule_tolerance`` of the tier's best
RMSE, as :func:`ssdx.models.fluid.fit.choose` does.  The best fit of any other rule is the runner-up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from ssdx.models.fluid import bounds
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid import plots as fill_report
from ssdx.models.fluid.fit import RULES, Fitter, RuleFit
from ssdx.models.fluid.phases import visible

#: an RMSE under this fraction of the mean measured speed is acceptable in every tier (:func:`choose`)
GOOD_FRACTION = 0.05


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One fitted rule on one base drive (``dies``: its die count) and how it is judged."""

    label: str
    fit: RuleFit
    dies: int
    checks: list[bounds.Check]
    phases: list[dict[str, Any]]
    regimes: list[dict[str, Any]]
    n_measured: int

    @property
    def physical(self) -> bool:
        return all(c.inside for c in self.checks)

    @property
    def phase_match(self) -> bool:
        return len(self.phases) == self.n_measured

    def summary(self) -> dict[str, Any]:
        return {"label": self.label, "rule": self.fit.rule, "dies": self.dies,
                "rmse_mb_s": self.fit.rmse_mb_s, "physical": self.physical,
                "outside_bounds": bounds.outside(self.checks), "phases": len(self.phases),
                "phase_match": self.phase_match, "fitted": self.fit.values}


_sim = jax.jit(fluid.simulate, static_argnums=2)


def assess(fitter: Fitter, fit: RuleFit, label: str, n_measured: int, span_gb: float) -> Candidate:
    """Judge ``fit`` (module docstring): its values against their bounds on the fitter's base drive and
    its regimes as the measured curve's segmentation would see them."""
    drive = fitter.drive_of(fit)
    out = jax.tree_util.tree_map(np.asarray, _sim(drive, fitter.workload, fitter.n_steps))
    regimes = fill_report.phases(out, drive)
    dies = int(round(float(np.asarray(fitter.drive.dies))))
    return Candidate(label, fit, dies, bounds.check(fitter.drive, fit.values), visible(regimes, span_gb),
                     regimes, n_measured)


def _simplest(cands: Sequence[Candidate], tolerance: float, floor: float) -> Candidate:
    best = min(c.fit.rmse_mb_s for c in cands)
    ok = [c for c in cands if c.fit.rmse_mb_s <= best * (1 + tolerance) + floor]
    order = list(RULES)
    return min(ok, key=lambda c: (len(RULES[c.fit.rule].fitted), order.index(c.fit.rule), c.label))


def choose(cands: Sequence[Candidate], tolerance: float, floor_mb_s: float,
           mean_mb_s: float) -> tuple[Candidate, str, Candidate | None]:
    """The chosen candidate (module docstring), the tier it came from and the runner-up (the lowest-RMSE
    candidate of another rule or die count; ``None`` when there is none)."""
    best = min(c.fit.rmse_mb_s for c in cands)
    limit = max(best * (1 + tolerance) + floor_mb_s, GOOD_FRACTION * mean_mb_s)
    tiers = (("physical, phases match", lambda c: c.physical and c.phase_match),
             ("physical", lambda c: c.physical),
             ("phases match, not physical", lambda c: c.phase_match),
             ("best error, not physical", lambda c: True))
    tier, chosen = "best error", min(cands, key=lambda c: c.fit.rmse_mb_s)  # when nothing is acceptable
    for name, keep in tiers:
        group = [c for c in cands if keep(c) and c.fit.rmse_mb_s <= limit]
        if group:
            tier, chosen = name, _simplest(group, tolerance, floor_mb_s)
            break
    others = [c for c in cands if c.label != chosen.label]
    runner = min(others, key=lambda c: c.fit.rmse_mb_s) if others else None
    return chosen, tier, runner


def alternative_geometries(drive_cfg: Mapping[str, Any], b: int) -> list[dict[str, Any]]:
    """The drive config with each other production die count for its raw NAND (``bounds.die_counts``):
    the same raw capacity, ``die_gbit`` from the density, channels the largest divisor of the die count
    not above the config's."""
    channels = int(drive_cfg["channels"])
    dies = channels * int(drive_cfg["dies_per_channel"])
    raw_gbit = dies * float(drive_cfg["die_gbit"])
    out = []
    for n in bounds.die_counts(raw_gbit, b):
        if n == dies:
            continue
        ch = max(c for c in range(1, min(channels, n) + 1) if n % c == 0)
        out.append({**drive_cfg, "die_gbit": raw_gbit / n, "channels": ch, "dies_per_channel": n // ch})
    return out
