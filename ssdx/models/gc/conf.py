"""The config schemas of the block-level GC run (``gc``) and the timed fill sets (``fill``): Hydra structured
configs, so a wrongly typed override is refused naming its key when the config is composed.  The registry
(``ssdx.core.registry.CONF_SCHEMAS``) lists them; the CLI stores them beside the drive, NAND and workload
schemas (``ssdx.cli.schema``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class GcConf:
    """Block-level GC run (``ssdx.models.gc.params``): scaled drive, policy, write pattern, SNIA rounds."""

    n_blocks: int = 1024
    pages_per_block: Optional[int] = None  # noqa: UP045 (None: the drive's NAND block / page)
    spare_factor: float = 0.1
    policy: str = "greedy"
    d: int = 10
    pattern: str = "uniform"
    hot_fraction: float = 0.1
    hot_share: float = 0.9
    trim_fraction: float = 0.0
    compressibility: float = 1.0
    precondition: float = 2.0
    round_fraction: float = 1.0
    rounds: int = 25
    seed: int = 0


@dataclass
class FillConf:
    """Timed write sets of the GC fill experiment (``task=gc_fill``, ``ssdx.models.gc.jobs.run_gc_fill``;
    IOMeter-style sets as in the THNSNS120GBSP test): stored as ``fill/base``."""

    set_s: float = 15.0  # seconds per set
    sets: int = 40  # sets before the secure erase
    sets_after_erase: int = 4  # sets after it
    random_fill: float = 0.0  # x user capacity of uniform random 4 KiB writes before the test (0: none)
    lifetime_limit_mb_s: float = 0.0  # life-time throttling: bytes allowed per power-on second, MB/s (0: off)
    lifetime_credit_gb: float = 0.0  # allowance before it applies, GB
