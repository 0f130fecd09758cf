"""Structured-config schemas (Hydra ConfigStore): types are checked when the config is composed.

Each ``conf/<group>/*.yaml`` names its schema in its defaults list (``- base``); a wrongly typed
override such as ``drive.channels=abc`` is then refused by Hydra naming the full key.  Value rules
(ranges, capacity fits) are checked by :func:`ssdx.params.validate` before any compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import Optional

from hydra.core.config_store import ConfigStore

from ssdx import params
from ssdx.core import registry


@dataclass
class PowerConf:
    """The drive's power model and firmware thermal management (``ssdx.models.thermal.params``).

    Defaults are a generic client NVMe drive (representative, not calibrated): presets override them.
    """

    idle_w: float = 1.0
    ctrl_active_w: float = 1.0
    datapath_nj_per_byte: float = 0.45
    nand_io_pj_per_bit: float = 5.0
    policy: str = "ssd_b"
    light_rate_fraction: float = 0.8
    light_ctrl_fraction: float = 0.7
    light_power_cap_w: float = 0.0
    heavy_rate_fraction: float = 0.3
    heavy_ctrl_fraction: float = 0.4
    heavy_power_cap_w: float = 0.0
    hysteresis_k: float = 2.0
    sensor_ctrl_weight: float = 0.5
    wctemp_k: float = 353.15
    cctemp_k: float = 358.15
    mntmt_k: float = 273.15
    mxtmt_k: float = 373.15


def _drive_conf() -> type:
    """The ``drive`` block's schema: a field per entry of ``ssdx.params.DRIVE_DECLARED`` (typed by its
    default) and the ``power`` block."""
    fields = [(k, type(v), field(default=v)) for k, (v, _) in params.DRIVE_DECLARED.items()]
    cls = make_dataclass("DriveConf", [*fields, ("power", PowerConf, field(default_factory=PowerConf))])
    cls.__module__ = __name__
    cls.__doc__ = "A drive (``ssdx.params``): a field per entry of ``params.DRIVE_DECLARED``, and its power."
    return cls


DriveConf = _drive_conf()


@dataclass
class NandConf:
    """NAND type and overrides of its catalog values (``ssdx.params``: ``nand.*`` columns; None keeps the
    catalog value).  Timings in us (program/read per page, erase per block); geometry in bits, KiB, pages."""

    name: Optional[str] = None  # noqa: UP045 (OmegaConf needs typing.Optional)
    t_prog_us: Optional[float] = None  # noqa: UP045
    t_read_us: Optional[float] = None  # noqa: UP045
    t_erase_us: Optional[float] = None  # noqa: UP045
    t_prog_slc_us: Optional[float] = None  # noqa: UP045
    t_read_slc_us: Optional[float] = None  # noqa: UP045
    bits_per_cell: Optional[int] = None  # noqa: UP045 (1 SLC .. 4 QLC)
    page_kib: Optional[float] = None  # noqa: UP045 (page size, KiB)
    block_pages: Optional[int] = None  # noqa: UP045 (pages per block)
    write_unit_kib: Optional[float] = None  # noqa: UP045 (program unit of a plane: page, word line or block, KiB)


@dataclass
class WorkloadConf:
    pattern: str = "sequential"
    block_kib: float = 128.0
    queue_depth: int = 32
    prefill_fraction: float = 0.0
    fill_fraction: float = 1.0
    burst_gb: float = 0.0
    idle_s: float = 0.0
    trace_path: Optional[str] = None  # noqa: UP045 (a block trace: ssdx.workloads.traces)
    format: str = "msr"  # msr | blkparse | fio2 | fio3 | disksim | mqsim
    on_error: str = "raise"  # raise | skip (malformed trace lines)
    synthetic: Optional[str] = None  # noqa: UP045 (windows11_boot | msr:<volume> | profile:<summary.json>; a replay's one source)
    # requests of a synthetic stream or a fio job (null: 100,000); a trace's first this many (null: all)
    requests: Optional[int] = None  # noqa: UP045
    msr: str = "prxy_0"  # MSR Cambridge volume of the hybrid studies (preset, or <trace_path>/<msr>.csv)
    max_trace_requests: int = 50_000_000  # hybrid studies read at most this many requests of a real trace
    fio: Optional[str] = None  # noqa: UP045 (a fio job file, ssdx.workloads.fio; or trace_path, or synthetic)
    fio_job: Optional[str] = None  # noqa: UP045 (the job [section] to run; default: every job, merged on the drive)
    fio_unknown: str = "raise"  # raise | warn (an option ssdx does not model)


#: Every schema as ``(group, name) -> dataclass``, stored under that group and name: the groups of
#: ``conf/`` name ``base`` in their defaults list, an experiment names its blocks' (``- /fit: rc_base``).
#: The drive, NAND and workload schemas are here; each model's are in its folder, listed by the registry.
SCHEMAS: dict[tuple[str, str], type] = {
    ("drive", "base"): DriveConf,
    ("nand", "base"): NandConf,
    ("workload", "base"): WorkloadConf,
    **{key: registry.resolve(ref) for key, ref in registry.CONF_SCHEMAS.items()},
}


def register() -> None:
    """Store every schema of :data:`SCHEMAS` in Hydra's ConfigStore."""
    cs = ConfigStore.instance()
    for (group, name), node in SCHEMAS.items():
        cs.store(group=group, name=name, node=node)
