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
BACK_PRESSURES = {"fluid": 0, "programs": 1, "pages": 2}
BACKENDS = ("auto", "jax", "cpu", "cuda")
FIELDS = ("loop", "write_buffer_mib", "map_cache_mib", "map_hit_us", "ctrl_kiops", "time_scale")

#: Every ``engine.*`` option once: its default and what it means (with its source), in the order the
#: shipped ``conf/engine/default.yaml`` lists them.  The schema (``ssdx.models.engine.conf.EngineConf``),
#: that YAML (:func:`yaml_text`, held equal to the file by a test) and :data:`OPTIONAL` are derived from it;
#: a number's unit and range are its :data:`RANGES` Field, a choice's values the tables above.
DECLARED: dict[str, tuple[Any, str]] = {
    "loop": ("closed", "closed: workload.queue_depth outstanding (fio iodepth); open: trace timestamps"),
    "write_buffer_mib": (16.0, "write-back buffer (assumed; DRAM drives buffer tens of MB, DRAM-less a few)"),
    "map_cache_mib": (2.0, "DRAM-less mapping cache: controller SRAM (+ HMB), MiB (assumed, 2 MiB SRAM)"),
    "map_hit_us": (0.5, "cached mapping lookup, us (assumed: DRAM/SRAM access plus FTL code)"),
    "ctrl_kiops": (1000.0, "controller front end, thousand commands/s (assumed; ~1 M IOPS class)"),
    "time_scale": (1.0, "open loop: trace time divided by this"),
    "suspension": ("program_erase",
        "which die operations a host read may suspend (Wu & He, FAST 2012; MQSim's "
        "CMD_Suspension_Support, Tavakkol et al., FAST 2018): program_erase | program | erase | none "
        "(none: the read waits for the operation in progress, then goes ahead of the queued ones)"),
    "suspend_program_us": (0.0,
        "a read that suspends a program takes this much longer, us (MQSim default 100)"),
    "suspend_erase_us": (0.0, "a read that suspends an erase takes this much longer, us (MQSim default 700)"),
    "suspend_min_program_us": (0.0,
        "a program with less left is not suspended, us (MQSim's preferred time: 100)"),
    "suspend_min_erase_us": (0.0,
        "an erase with less left is not suspended, us (MQSim's preferred time: 700)"),
    "map_cache": ("auto",
        "auto: drive.dram true holds the whole table, DRAM-less a direct-mapped cache of map_cache_mib; "
        "direct | lru: the table in flash on every drive, map_cache_mib of translation pages cached "
        "direct-mapped or LRU, dirty pages written back on eviction (MQSim's CMT, Tavakkol et al., FAST "
        "2018; DFTL, Gupta et al., ASPLOS 2009); entries: MQSim's CMT exactly, map_cache_mib / "
        "map_entry_bytes entries, LRU, an evicted dirty entry writes back its translation page with all "
        "its dirty entries"),
    "buffer_dram_mts": (0.0,
        "write-buffer DRAM data rate, MT/s (MQSim's Data_Cache_DRAM_* fields and "
        "estimate_dram_access_time: a write is acknowledged once written into the DRAM through one memory"
        " channel; 0: no DRAM timing; MQSim's code default 800, its example XML 100)"),
    "buffer_dram_row_bytes": (8192.0, "write-buffer DRAM row, bytes (MQSim default)"),
    "buffer_dram_burst_bytes": (4.0,
        "write-buffer DRAM bytes per transfer (MQSim's code default 4; its example XML 1)"),
    "buffer_dram_trcd_ns": (13.0, "write-buffer DRAM tRCD, ns (MQSim default)"),
    "buffer_dram_tcl_ns": (13.0, "write-buffer DRAM tCL, ns (MQSim default)"),
    "buffer_dram_trp_ns": (13.0, "write-buffer DRAM tRP, ns (MQSim default)"),
    "write_back": ("gather",
        "when write data goes to flash: gather (full multi-plane units over a round-robin frontier) or "
        "eager (each logical page at once, as its own program on the die of its address: MQSim's data "
        "cache managers, Tavakkol et al., FAST 2018); eager writes wait while more than inflight_kib is "
        "in flight to flash"),
    "inflight_kib": (0.0,
        "eager: KiB in flight before writes wait; 0: one page per plane (MQSim's back pressure)"),
    "map_entry_bytes": (8.0,
        "bytes per cached entry (map_cache = entries): 4-byte logical + 4-byte physical number"),
    "map_read_bytes": (4096.0, "bytes a map-cache miss moves over the channel (MQSim: one 512-byte sector)"),
    "cache_read": (True,
        "true: a die starts its next array read while its last page goes out over the channel (ONFI read "
        "cache); false: a read keeps its die until its data is out (plain page read; MQSim's chips)"),
    "cmd_us": (None,
        "host + controller command processing per command, us; null: the interface's (ssdx.catalog); "
        "MQSim's NVMe interface: its PCIe message transfers only"),
    "host_gb_s": (None,
        "host link payload rate each way, GB/s; null: the interface's usable rate (ssdx.catalog)"),
    "rewrite_window_s": (0.0,
        "eager: a page written again within this window stays in the buffer (MQSim: 1 s); 0: none"),
    "plane_merge": (False,
        "eager: a page program joins a queued one of another plane with its page number (MQSim)"),
    "merge_dies": (1, "plane_merge: dies of a chip one modelled die stands for (mqsim.chip_as_die)"),
    "fresh_blocks": (False,
        "true: blocks free at the start are erased (out of the box; MQSim erases only in GC); false: every "
        "block programmed costs its erase (steady state)"),
    "back_pressure": ("fluid",
        "eager: fluid (the backlog drains evenly), programs (a write waits for programs to end) or pages "
        "(its pages let in one by one as programs end, each looked up as it goes to flash: MQSim)"),
    "buffer_dram_formula": ("rows",
        "rows: each row opened once; mqsim: MQSim's estimate_dram_access_time past one row"),
    "page_types": ("mean",
        "plane_merge: mean (every program at nand.t_prog_us) or mqsim (each at its page type's time, "
        "t_prog times the LSB/CSB/MSB factor, the type by the page's index in its block as MQSim types "
        "it)"),
    "prog_lsb_factor": (1.0, "page_types = mqsim: the LSB page's program time over nand.t_prog_us"),
    "prog_csb_factor": (1.0, "the CSB page's"),
    "prog_msb_factor": (1.0, "the MSB page's"),
    "backend": ("auto",
        "jax: batched scan; cpu: compiled per-configuration loop; cuda: that loop, a GPU thread per "
        "configuration; auto: cpu on a CPU, else jax"),
}
#: fields a config may leave out, with the defaults that keep the engine's original behaviour
OPTIONAL: dict[str, Any] = {k: v for k, (v, _) in DECLARED.items() if k not in FIELDS and k != "backend"}


def yaml_text() -> str:
    """The shipped ``conf/engine/default.yaml``: every option of :data:`DECLARED` at its default, its meaning
    as the comment above it."""
    import textwrap

    out = ["# Request-level engine (ssdx.models.engine): controller-side numbers.  Written from the options'",
           "# one declaration, ssdx.models.engine.options.DECLARED (python -m ssdx.models.engine.options).",
           "defaults:", "  - base", "  - _self_", ""]
    for name, (value, doc) in DECLARED.items():
        out += textwrap.wrap(doc, 106, initial_indent="# ", subsequent_indent="# ")
        text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"{name}: {text}")
    return "\n".join(out) + "\n"


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


if __name__ == "__main__":
    print(yaml_text(), end="")
