"""The config schemas of the request engine (``engine``), the QD1/OS-boot study (``boot``) and MQSim's files
(``mqsim``): Hydra structured configs, so a wrongly typed override is refused naming its key when the
config is composed.  The registry (``ssdx.core.registry.CONF_SCHEMAS``) lists them; the CLI stores them
beside the drive, NAND and workload schemas (``ssdx.cli.schema``)."""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import Any, Optional


def _engine_conf() -> type:
    """The ``engine`` block's schema: a field per option of ``ssdx.models.engine.options.DECLARED``, typed
    by its default (a null default: an optional number)."""
    from ssdx.models.engine.options import DECLARED

    def kind(v: Any) -> Any:
        return Optional[float] if v is None else type(v)  # noqa: UP045 (OmegaConf needs typing.Optional)

    cls = make_dataclass("EngineConf", [(k, kind(v), field(default=v)) for k, (v, _) in DECLARED.items()])
    cls.__module__ = __name__
    cls.__doc__ = ("Request-level engine (``ssdx.models.engine.params``): controller-side numbers, one field "
                   "per option of ``ssdx.models.engine.options.DECLARED``.")
    return cls


EngineConf = _engine_conf()


@dataclass
class BootConf:
    """QD1 / OS-boot study (``task=boot``, ``ssdx.models.engine.jobs.run_boot``; OS-boot article): stored as
    ``boot/base``.  Drives are preset names (``conf/drive``)."""

    drives: list[str] = field(default_factory=lambda: ["sata_tlc_500", "generic_tlc_1tb", "sn8e_1920",
                                                       "aldrin_pro_2tb"])
    sata: str = "sata_tlc_500"  # the SATA drive of the comparison (one of drives)
    pcie4: str = "aldrin_pro_2tb"  # the PCIe 4.0 drive of the comparison (one of drives)
    probe_requests: int = 2000  # 4 KiB random QD1 probe commands per type


#: the most requests of one flow: ``mqsim.requests_per_flow``'s and ``mqsim.timed_requests``' upper bound
#: (see :class:`MqsimConf`)
MAX_FLOW_REQUESTS = 10**8


@dataclass
class MqsimConf:
    """MQSim's input files run on the request engine (``ssdx experiment=mqsim``;
    ``ssdx.models.engine.mqsim_job``): stored as ``mqsim/base``, which that experiment loads at ``mqsim``.
    The one declaration of each ``mqsim.*`` option: its default, and for the numbers their range and
    meaning (the metadata), which ``mqsim_job`` reads and checks."""

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
        "lo": 1, "hi": MAX_FLOW_REQUESTS,
        "doc": "cap on each flow's requests (null: every flow as MQSim runs it, a trace whole with its "
               "relays)"})
    timed_requests: int = field(default=20_000, metadata={
        "lo": 1, "hi": MAX_FLOW_REQUESTS, "doc": "the count of a QUEUE_DEPTH flow given by Stop_Time"})
    closed_loop_passes: int = field(default=6, metadata={
        "lo": 1, "hi": None, "doc": "closed-loop scenarios of several flows: rate re-weighting passes; "
                                    "1 runs the queue-depth interleave once"})
    # each MQSim chip as one die, serialised as MQSim's scheduler serialises a chip (false: every die of a
    # chip independent, as the ONFI LUNs of a real target can be)
    chip_as_die: bool = True
    arithmetic: str = "physical"  # physical | mqsim: MQSim's integer arithmetic (channel period, DRAM time)
