"""The config schemas of the cooling and host thermal management (``thermal``), the RC fit (``fit``) and the
TMT optimisation (``optimize``): Hydra structured configs, so a wrongly typed override is refused naming
its key when the config is composed.  The registry (``ssdx.core.registry.CONF_SCHEMAS``) lists them; the
CLI stores them beside the drive, NAND and workload schemas (``ssdx.cli.schema``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class RCConf:
    """RC values replacing the cooling preset's (``thermal.rc.*``; J/K, W/K; None keeps the preset)."""

    c_ctrl: Optional[float] = None  # noqa: UP045 (OmegaConf needs typing.Optional)
    c_nand: Optional[float] = None  # noqa: UP045
    c_case: Optional[float] = None  # noqa: UP045
    g_ctrl_nand: Optional[float] = None  # noqa: UP045
    g_ctrl_case: Optional[float] = None  # noqa: UP045
    g_nand_case: Optional[float] = None  # noqa: UP045
    g_case_amb: Optional[float] = None  # noqa: UP045
    g_ctrl_amb: Optional[float] = None  # noqa: UP045
    g_nand_amb: Optional[float] = None  # noqa: UP045


@dataclass
class ThermalConf:
    """Cooling environment and host HCTM settings (``thermal.*`` columns).  TMTs in whole Kelvin, 0 = off."""

    cooling: str = "bare"
    ambient_c: float = 25.0
    tmt1_k: float = 0.0
    tmt2_k: float = 0.0
    dt_s: float = 1.0
    duration_s: float = 600.0
    #: RC values replacing the cooling preset's (J/K, W/K), e.g. from ``ssdx experiment=fit_rc``.
    rc: RCConf = field(default_factory=RCConf)


@dataclass
class FitRcConf:
    """Fit of the thermal RC network to a measured series (``ssdx experiment=fit_rc``;
    ``ssdx.models.thermal.jobs.run_fit_rc``, ``ssdx.models.thermal.fit_rc``): stored as ``fit/rc_base``."""

    series: Optional[str] = None  # noqa: UP045 (required: JSON-lines smart-log capture or CSV series)
    format: Optional[str] = None  # noqa: UP045 (jsonl | csv; None: from the file name)
    fields: list[str] = field(default_factory=lambda: ["g_case_amb", "c_case"])  # of thermal_params.RC_FIELDS


@dataclass
class OptimizeConf:
    """Host TMT optimisation (``task=tmt_optimize``, ``ssdx.models.thermal.jobs.run_tmt_optimize``): stored as
    ``optimize/base``.  Temperatures in Kelvin; the grid is of integer Kelvin as Set Features carries them."""

    temp_limit_k: float = 351.15  # the composite temperature never to exceed (78 C)
    tmt1_range: list[int] = field(default_factory=lambda: [330, 362])  # grid [low, high], TMT2 > TMT1 kept
    tmt2_range: list[int] = field(default_factory=lambda: [331, 372])
    init: list[float] = field(default_factory=lambda: [335.0, 345.0])  # optimiser start (TMT1, TMT2)
    steps: int = 60  # Adam steps on the relaxed model
    learning_rate: float = 0.5  # K per Adam step
    sharpness: float = 1.0  # K: width of the logistic relaxation of the throttle thresholds
