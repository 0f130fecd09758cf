"""The config schemas of the SCM/NAND hybrid drive (``hybrid``) and its two studies' workloads
(``sensitivity``, ``validate``): Hydra structured configs, so a wrongly typed override is refused naming
its key when the config is composed.  The registry (``ssdx.core.registry.CONF_SCHEMAS``) lists them; the
CLI stores them beside the drive, NAND and workload schemas (``ssdx.cli.schema``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class HybridConf:
    """SCM/NAND hybrid drive (``ssdx.models.hybrid.params``); null NAND overrides keep the catalog value."""

    nand: str = "3d_ct_tlc"
    channels: int = 8
    dies_per_channel: int = 4
    bus_mts: float = 400.0
    interface: str = "none"
    scm_ratio: float = 0.1
    scm_basis: str = "footprint"
    nand_capacity_gib: float = 256.0
    scm_banks: int = 32
    threshold: float = 0.2
    ways: int = 16
    victim: str = "lru"
    read_priority: bool = True
    max_suspends: Optional[int] = None  # noqa: UP045
    suspend_resume_us: float = 24.0
    block_staging: str = "progressive"
    nand_utilisation: float = 0.5
    queue_depth: int = 32
    warmup_fills: float = 1.0
    settle_fills: float = 4.0
    t_prog_us: Optional[float] = None  # noqa: UP045
    t_read_us: Optional[float] = None  # noqa: UP045
    t_erase_us: Optional[float] = None  # noqa: UP045
    block_pages: Optional[int] = None  # noqa: UP045
    write_unit_kib: Optional[float] = None  # noqa: UP045


@dataclass
class HybridStudyConf:
    """Workloads of the hybrid SSD studies (``task=hybrid_sensitivity`` / ``hybrid_validate``,
    ``ssdx.models.hybrid.jobs``; Fukuchi et al.'s seven MSR Cambridge volumes): stored as ``sensitivity/base``
    and ``validate/base``."""

    workloads: list[str] = field(default_factory=lambda: ["prxy_0", "proj_0", "hm_0", "web_1", "prxy_1",
                                                          "proj_3", "src2_1"])
    requests: int = 100_000  # measured requests per workload (after the SCM warm-up)
