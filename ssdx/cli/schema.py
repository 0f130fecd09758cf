"""Structured-config schemas (Hydra ConfigStore): types are checked when the config is composed.

Each ``conf/<group>/*.yaml`` names its schema in its defaults list (``- base``); a wrongly typed
override such as ``drive.channels=abc`` is then refused by Hydra naming the full key.  Value rules
(ranges, capacity fits) are checked by :func:`ssdx.params.validate` before any compute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore


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
class DriveConf:
    name: str = "custom"
    nand: str = "tlc"
    interface: str = "pcie4x4"
    user_capacity_gb: float = 1000.0
    die_gbit: float = 512.0
    channels: int = 8
    dies_per_channel: int = 4
    planes_per_die: int = 4
    bus_mts: float = 1200.0
    bus_efficiency: float = 0.9
    dram: bool = True
    slc_mode: str = "dynamic"
    static_slc_gb: float = 0.0
    reserve_fraction: float = 0.005
    fold_efficiency: float = 0.6
    max_dynamic_slc_gb: float = 0.0  # GB the dynamic pSLC region may hold (dynamic, hybrid); 0 = uncapped
    idle_fold_mb_s: float = 0.0  # idle cache-recovery rate, MB/s; 0 = derived from the dies and bus
    power: PowerConf = field(default_factory=PowerConf)


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


@dataclass
class ModelConf:
    name: str = "fluid"
    n_steps: int = 512


@dataclass
class EngineConf:
    """Request-level engine (``ssdx.models.engine.params``): controller-side numbers."""

    loop: str = "closed"
    write_buffer_mib: float = 16.0
    map_cache_mib: float = 2.0
    map_hit_us: float = 0.5
    ctrl_kiops: float = 1000.0
    time_scale: float = 1.0
    backend: str = "auto"
    suspension: str = "program_erase"
    suspend_program_us: float = 0.0
    suspend_erase_us: float = 0.0
    suspend_min_program_us: float = 0.0
    suspend_min_erase_us: float = 0.0
    map_cache: str = "auto"
    buffer_dram_mts: float = 0.0
    buffer_dram_row_bytes: float = 8192.0
    buffer_dram_burst_bytes: float = 4.0
    buffer_dram_trcd_ns: float = 13.0
    buffer_dram_tcl_ns: float = 13.0
    buffer_dram_trp_ns: float = 13.0
    buffer_dram_formula: str = "rows"  # rows | mqsim (MQSim's estimate_dram_access_time arithmetic)
    page_types: str = "mean"  # mean | mqsim: a program takes its page type's time (with plane_merge)
    prog_lsb_factor: float = 1.0  # page_types = mqsim: the LSB page's program time over nand.t_prog_us
    prog_csb_factor: float = 1.0
    prog_msb_factor: float = 1.0
    write_back: str = "gather"
    inflight_kib: float = 0.0
    rewrite_window_s: float = 0.0
    plane_merge: bool = False
    merge_dies: int = 1
    back_pressure: str = "fluid"
    map_entry_bytes: float = 8.0
    map_read_bytes: float = 4096.0
    cache_read: bool = True
    cmd_us: Optional[float] = None  # noqa: UP045 (None: the interface's command processing, ssdx.catalog)
    host_gb_s: Optional[float] = None  # noqa: UP045 (None: the interface's usable rate, ssdx.catalog)


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
class FitFillConf:
    """Fit of the fluid model to a measured fill curve (``ssdx experiment=fit_fill``;
    ``ssdx.models.fluid.fit_job``,
    ``ssdx.models.fluid.fit``): stored as ``fit/fill_base``, which that experiment loads at ``fit``."""

    curve: Optional[str] = None  # noqa: UP045 (the measured curve; ssdx.workloads.fill_curve)
    format: str = "auto"  # auto | csv | fio_bw_log | per_second
    rules: list[str] = field(default_factory=lambda: ["dynamic", "capped", "static", "hybrid"])
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


@dataclass
class FitRcConf:
    """Fit of the thermal RC network to a measured series (``ssdx experiment=fit_rc``;
    ``ssdx.models.thermal.jobs.run_fit_rc``, ``ssdx.models.thermal.fit_rc``): stored as ``fit/rc_base``."""

    series: Optional[str] = None  # noqa: UP045 (required: JSON-lines smart-log capture or CSV series)
    format: Optional[str] = None  # noqa: UP045 (jsonl | csv; None: from the file name)
    fields: list[str] = field(default_factory=lambda: ["g_case_amb", "c_case"])  # of thermal_params.RC_FIELDS


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


@dataclass
class BootConf:
    """QD1 / OS-boot study (``task=boot``, ``ssdx.models.engine.jobs.run_boot``; OS-boot article): stored as
    ``boot/base``.  Drives are preset names (``conf/drive``)."""

    drives: list[str] = field(default_factory=lambda: ["sata_tlc_500", "generic_tlc_1tb", "sn8e_1920",
                                                       "aldrin_pro_2tb"])
    sata: str = "sata_tlc_500"  # the SATA drive of the comparison (one of drives)
    pcie4: str = "aldrin_pro_2tb"  # the PCIe 4.0 drive of the comparison (one of drives)
    probe_requests: int = 2000  # 4 KiB random QD1 probe commands per type


@dataclass
class HybridStudyConf:
    """Workloads of the hybrid SSD studies (``task=hybrid_sensitivity`` / ``hybrid_validate``,
    ``ssdx.models.hybrid.jobs``; Fukuchi et al.'s seven MSR Cambridge volumes): stored as ``sensitivity/base``
    and ``validate/base``."""

    workloads: list[str] = field(default_factory=lambda: ["prxy_0", "proj_0", "hm_0", "web_1", "prxy_1",
                                                          "proj_3", "src2_1"])
    requests: int = 100_000  # measured requests per workload (after the SCM warm-up)


@dataclass
class MqsimConf:
    """MQSim's input files run on the request engine (``ssdx experiment=mqsim``;
    ``ssdx.models.engine.mqsim_job``):
    stored as ``mqsim/base``, which that experiment loads at ``mqsim``."""

    ssdconfig: Optional[str] = None  # noqa: UP045 (MQSim's ssdconfig.xml; None: examples/mqsim)
    workload: Optional[str] = None  # noqa: UP045 (MQSim's workload.xml; None: examples/mqsim)
    # the numeric fields' ranges are in their metadata ("lo"/"hi", inclusive; "doc" says what the value is),
    # checked before anything is read or run (ssdx.models.engine.mqsim_job.check_conf).
    # requests_per_flow's and timed_requests' 10^8 is a cap of this project's choosing (the same as
    # fio.MAX_REQUESTS and the hybrid model's requests), not an MQSim or format limit: each flow is
    # built whole in memory as a traces.Chunk (float64 times, int8 ops, int64 offsets, sizes and lines:
    # 33 bytes a request, about 3.3 GB at 10^8) before the replay, and a flow's count stays far below
    # the 2^31 - 1 its int32 latency histogram counters hold
    requests_per_flow: Optional[int] = field(default=None, metadata={  # noqa: UP045
        "lo": 1, "hi": 10**8, "doc": "cap on each flow's requests (null: every flow as MQSim runs it)"})
    timed_requests: int = field(default=20_000, metadata={
        "lo": 1, "hi": 10**8, "doc": "the count of a QUEUE_DEPTH flow given by Stop_Time"})
    closed_loop_passes: int = field(default=6, metadata={
        "lo": 1, "hi": None, "doc": "closed-loop scenarios of several flows: rate re-weighting passes; "
                                    "1 runs the queue-depth interleave once"})
    chip_as_die: bool = True  # each MQSim chip as one die: MQSim's one busy status per chip
    arithmetic: str = "physical"  # physical | mqsim: MQSim's integer arithmetic (channel period, DRAM time)


#: Every schema as ``(group, name) -> dataclass``, stored under that group and name: the groups of
#: ``conf/`` name ``base`` in their defaults list, an experiment names its blocks' (``- /fit: rc_base``).
SCHEMAS: dict[tuple[str, str], type] = {
    ("drive", "base"): DriveConf,
    ("nand", "base"): NandConf,
    ("workload", "base"): WorkloadConf,
    ("model", "base"): ModelConf,
    ("thermal", "base"): ThermalConf,
    ("gc", "base"): GcConf,
    ("engine", "base"): EngineConf,
    ("hybrid", "base"): HybridConf,
    ("fit", "fill_base"): FitFillConf,
    ("fit", "rc_base"): FitRcConf,
    ("fill", "base"): FillConf,
    ("optimize", "base"): OptimizeConf,
    ("boot", "base"): BootConf,
    ("sensitivity", "base"): HybridStudyConf,
    ("validate", "base"): HybridStudyConf,
    ("mqsim", "base"): MqsimConf,
}


def register() -> None:
    """Store every schema of :data:`SCHEMAS` in Hydra's ConfigStore."""
    cs = ConfigStore.instance()
    for (group, name), node in SCHEMAS.items():
        cs.store(group=group, name=name, node=node)
