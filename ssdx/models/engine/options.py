"""The request engine's options (``engine.*``) declared once each: the choices of its categorical options
with the numeric leaf each becomes, the fields a configuration must give (:data:`FIELDS`), the ones it may
leave out with their defaults (:data:`OPTIONAL`), and every numeric field's unit, range and meaning
(:data:`RANGES`).  How they become the engine's arrays is :mod:`ssdx.models.engine.params`; what each does,
its module docstring."""

from __future__ import annotations

from typing import Any

from ssdx.core.fields import Field, table

LOOPS = ("closed", "open")
#: engine.map_cache -> the numeric leaf ``map_policy``
MAP_CACHES = {"auto": 0, "direct": 1, "lru": 2, "entries": 3}
#: engine.suspension -> (a read may suspend a program, an erase); MQSim's CMD_Suspension_Support values
SUSPENSIONS = {"program_erase": (1, 1), "program": (1, 0), "erase": (0, 1), "none": (0, 0)}
#: engine.write_back -> the numeric leaf ``eager``
WRITE_BACKS = {"gather": 0, "eager": 1}
#: engine.buffer_dram_formula -> the numeric leaf ``dram_mqsim``
DRAM_FORMULAS = {"rows": 0, "mqsim": 1}
#: engine.page_types -> whether a program's time follows its page type (the numeric leaf ``page_rule``)
PAGE_TYPES = {"mean": 0, "mqsim": 1}
#: engine.back_pressure -> the numeric leaf ``bp_programs``
BACK_PRESSURES = {"fluid": 0, "programs": 1}
BACKENDS = ("auto", "jax", "cpu", "cuda")
FIELDS = ("loop", "write_buffer_mib", "map_cache_mib", "map_hit_us", "ctrl_kiops", "time_scale")
#: fields a config may leave out, with the defaults that keep the engine's original behaviour
OPTIONAL: dict[str, Any] = {
    "suspension": "program_erase", "suspend_program_us": 0.0, "suspend_erase_us": 0.0,
    "suspend_min_program_us": 0.0, "suspend_min_erase_us": 0.0, "map_cache": "auto",
    "buffer_dram_mts": 0.0, "buffer_dram_row_bytes": 8192.0, "buffer_dram_burst_bytes": 4.0,
    "buffer_dram_trcd_ns": 13.0, "buffer_dram_tcl_ns": 13.0, "buffer_dram_trp_ns": 13.0,
    "write_back": "gather", "inflight_kib": 0.0, "map_entry_bytes": 8.0, "map_read_bytes": 4096.0,
    "cache_read": True, "cmd_us": None, "host_gb_s": None, "rewrite_window_s": 0.0, "plane_merge": False,
    "merge_dies": 1, "back_pressure": "fluid", "buffer_dram_formula": "rows", "page_types": "mean",
    "prog_lsb_factor": 1.0, "prog_csb_factor": 1.0, "prog_msb_factor": 1.0}
#: the numeric fields, their ranges and meanings (those of :data:`OPTIONAL` may be absent from a batch)
RANGES: dict[str, Field] = table(
    Field("engine.write_buffer_mib", "MiB", 0.0, 65536.0, doc="write-back buffer, MiB"),
    Field("engine.map_cache_mib", "MiB", 0.0, 65536.0, doc="mapping-table cache of a DRAM-less drive, MiB"),
    Field("engine.map_hit_us", "us", 0.0, 1e4, doc="lookup time of a cached mapping entry, us"),
    Field("engine.ctrl_kiops", "kIOPS", 1.0, 1e6, doc="controller command rate, thousands per second"),
    Field("engine.time_scale", "", 1e-6, 1e9, doc="open-loop time compression"),
    Field("engine.suspend_program_us", "us", 0.0, 1e5, optional=True,
          default=OPTIONAL["suspend_program_us"], doc="overhead of a read that suspends a program, us"),
    Field("engine.suspend_erase_us", "us", 0.0, 1e5, optional=True,
          default=OPTIONAL["suspend_erase_us"], doc="overhead of a read that suspends an erase, us"),
    Field("engine.suspend_min_program_us", "us", 0.0, 1e6, optional=True,
          default=OPTIONAL["suspend_min_program_us"],
          doc="least program time left for a read to suspend it, us"),
    Field("engine.suspend_min_erase_us", "us", 0.0, 1e6, optional=True,
          default=OPTIONAL["suspend_min_erase_us"], doc="least erase time left for a read to suspend it, us"),
    Field("engine.buffer_dram_mts", "MT/s", 0.0, 1e5, optional=True,
          default=OPTIONAL["buffer_dram_mts"], doc="write-buffer DRAM data rate, MT/s (0: no DRAM timing)"),
    Field("engine.buffer_dram_row_bytes", "B", 64.0, 1e6, optional=True,
          default=OPTIONAL["buffer_dram_row_bytes"], doc="write-buffer DRAM row, bytes"),
    Field("engine.buffer_dram_burst_bytes", "B", 1.0, 1024.0, optional=True,
          default=OPTIONAL["buffer_dram_burst_bytes"], doc="write-buffer DRAM bytes per transfer"),
    Field("engine.buffer_dram_trcd_ns", "ns", 0.0, 1e4, optional=True,
          default=OPTIONAL["buffer_dram_trcd_ns"], doc="write-buffer DRAM tRCD, ns"),
    Field("engine.buffer_dram_tcl_ns", "ns", 0.0, 1e4, optional=True,
          default=OPTIONAL["buffer_dram_tcl_ns"], doc="write-buffer DRAM tCL, ns"),
    Field("engine.buffer_dram_trp_ns", "ns", 0.0, 1e4, optional=True,
          default=OPTIONAL["buffer_dram_trp_ns"], doc="write-buffer DRAM tRP, ns"),
    *(Field(f"engine.prog_{t}_factor", "", 0.01, 100.0, optional=True, default=OPTIONAL[f"prog_{t}_factor"],
            doc=f"engine.page_types = mqsim: the {t.upper()} page's program time over nand.t_prog_us")
      for t in ("lsb", "csb", "msb")),
    Field("engine.inflight_kib", "KiB", 0.0, 1e8, optional=True, default=OPTIONAL["inflight_kib"],
          doc="eager write-back: data in flight to flash before writes wait, KiB (0: a page per plane)"),
    Field("engine.rewrite_window_s", "s", 0.0, 1e6, optional=True, default=OPTIONAL["rewrite_window_s"],
          doc="eager write-back: a page written again within this window stays in the buffer, s (0: none)"),
    Field("engine.merge_dies", "", 1.0, 8.0, optional=True, default=OPTIONAL["merge_dies"], integer=True,
          doc="plane_merge: dies of a chip modelled as one die, of which a multi-plane program takes one"),
    Field("engine.map_entry_bytes", "B", 1.0, 64.0, optional=True, default=OPTIONAL["map_entry_bytes"],
          doc="bytes one cached mapping entry takes (map_cache = entries)"),
    Field("engine.map_read_bytes", "B", 1.0, 1 << 20, optional=True, default=OPTIONAL["map_read_bytes"],
          doc="bytes of a translation page moved over the channel on a mapping-cache miss"),
    Field("engine.cmd_us", "us", 0.0, 1e5, optional=True, nullable=True, default=OPTIONAL["cmd_us"],
          doc="host and controller command processing per command, us"),
    Field("engine.host_gb_s", "GB/s", 0.0, 1e4, lo_open=True, optional=True, nullable=True,
          default=OPTIONAL["host_gb_s"], doc="host link payload rate each way, GB/s"),
)
