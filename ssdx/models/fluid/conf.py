"""The config schemas of the fluid write model's scan (``model``) and its fit to a measured fill curve
(``fit``): Hydra structured configs, so a wrongly typed override is refused naming its key when the config
is composed.  The registry (``ssdx.core.registry.CONF_SCHEMAS``) lists them; the CLI stores them beside
the drive, NAND and workload schemas (``ssdx.cli.schema``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class ModelConf:
    name: str = "fluid"
    n_steps: int = 512


@dataclass
class FitFillConf:
    """Fit of the fluid model to a measured fill curve (``ssdx experiment=fit_fill``;
    ``ssdx.models.fluid.fit_job``,
    ``ssdx.models.fluid.fit``): stored as ``fit/fill_base``, which that experiment loads at ``fit``."""

    curve: Optional[str] = None  # noqa: UP045 (the measured curve; ssdx.workloads.fill_curve)
    format: str = "auto"  # auto | csv | fio_bw_log | per_second
    rules: list[str] = field(default_factory=lambda: [  # ssdx.models.fluid.fit_model.RULES
        "dynamic", "capped", "static", "hybrid", "static_through", "capped_through", "two_speed",
        "two_speed_through", "hybrid_two_speed"])
    n_steps: int = 512  # fluid scan steps of each model evaluation
    adam_steps: int = 200
    lbfgs_steps: int = 100
    learning_rate: float = 0.05  # Adam step in the bounded log parameters
    grid_points: int = 32  # coordinate-search values per parameter before Adam (0: none)
    max_samples: int = 20_000  # longer curves are merged in runs of consecutive samples (bytes over time)
    rule_tolerance: float = 0.02  # the simplest rule within this fraction of the best RMSE is kept
    poor_fit_fraction: float = 0.1  # warn when RMSE > this x the mean measured speed
    residual_fraction: float = 0.05  # residual regions: running-mean residual > this x the mean speed
    name: Optional[str] = None  # noqa: UP045 (preset name; None: <base drive>_fit)
    other_die_counts: bool = True  # refit on the other production die counts when no fit is physical
    # fit the paced-folding variants of the rules (fit_model.paced_variant) when no fit is physical with
    # the curve's phase count
    paced_folding: bool = True
