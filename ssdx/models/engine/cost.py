"""The bill-of-materials cost of a drive design, US dollars: NAND, memory and controller.

What a design sweep of the request engine puts on the x axis of "p99 latency against cost"
(``model: engine`` sweeps, ``ssdx.models.engine.sweep``).  Three parts, each from the design's columns:

* **NAND**: the raw NAND the design holds (``drive.channels x drive.dies_per_channel x drive.die_gbit``,
  binary Gbit) at a price per GiB that depends on the bits a cell stores.  The anchor is TLC's contract
  price (:data:`PRICES` ``nand_tlc_usd_per_gib``).  Other cell types are priced by wafer area: a die of
  the same area stores ``bits`` bits a cell, so a GiB of ``bits``-bit NAND costs ``3 / bits`` times a GiB
  of TLC (SLC 3x, MLC 1.5x, QLC 0.75x).  MKW Ventures' NAND cost model puts QLC 22-23 % below TLC
  ("What are Actual NAND Costs Today and in 2030?", Nov 2020); the area rule gives 25 %.  Market prices
  of MLC and SLC are higher still (legacy, low-volume parts); the area rule prices what the silicon
  costs, not a supplier's margin on a niche part.
* **Memory**: every byte of DRAM or SRAM the design asks for, priced as DRAM (``dram_usd_per_gib``,
  DDR4 contract price): the whole mapping table where the drive holds it (``drive.dram: true`` with
  ``engine.map_cache: auto``; 4 bytes per 4 KiB of user capacity, a page-level map of 32-bit physical
  addresses, about 1 GiB per TiB), else the mapping cache (``engine.map_cache_mib``, SRAM or host memory
  through HMB: priced as DRAM, a lower bound for SRAM); plus the write buffer
  (``engine.write_buffer_mib``).
* **Controller**: ``controller_usd_per_channel`` per NAND channel.  Phison put the average price of an
  SSD controller IC at about 4 US dollars (2020); no published figure splits it by channel count, so it
  is taken as proportional to the channels, with the average controller a 4-channel part (assumed).

The prices are market figures of a given quarter (:data:`PRICES`, with their sources); a sweep may set its
own (``sweep.cost``, :func:`prices`).  The cost ranks designs; it is not a quote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ssdx import params
from ssdx.core.fields import ConfigError
from ssdx.units import GIB, MIB

#: default prices, US dollars (sources in the module docstring and ``docs/engine_sweeps.md``):
#: ``nand_tlc_usd_per_gib``: 1 Tb TLC at 6.70 USD (CFM / memorymarket.com contract prices, 2025);
#: ``dram_usd_per_gib``: DDR4 8 Gb at 3.90 USD (DRAMeXchange, July 2025, reported by SemiMedia, 5 Aug 2025);
#: ``controller_usd_per_channel``: Phison's ~4 USD average controller IC (2020) over 4 channels (assumed)
PRICES: dict[str, float] = {"nand_tlc_usd_per_gib": 6.70 / 128.0, "dram_usd_per_gib": 3.90,
                            "controller_usd_per_channel": 1.0}
#: bytes of a full mapping table per byte of user capacity: a 4-byte physical address per 4 KiB unit
TABLE_BYTES_PER_BYTE = 4.0 / 4096.0


def prices(given: Any = None, field: str = "sweep.cost") -> dict[str, float]:
    """:data:`PRICES` with the overrides of the mapping ``given`` (None: none); an unknown key or a value
    that is not a number >= 0 raises :class:`ConfigError` naming ``field.KEY``."""
    out = dict(PRICES)
    if given is None:
        return out
    if not isinstance(given, Mapping):
        raise ConfigError(field, given, f"must be a mapping of prices: {', '.join(PRICES)}")
    for key, value in given.items():
        if key not in PRICES:
            raise ConfigError(f"{field}.{key}", value, f"unknown price; known: {', '.join(PRICES)}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0 \
                or not np.isfinite(value):
            raise ConfigError(f"{field}.{key}", value, "must be a number >= 0 (US dollars)")
        out[key] = float(value)
    return out


def memory_bytes(cols: Mapping[str, np.ndarray]) -> np.ndarray:
    """DRAM or SRAM bytes of every design (module docstring): the mapping table or cache, plus the write
    buffer."""
    n = len(np.atleast_1d(cols["engine.loop"]))
    dram = np.broadcast_to(np.asarray(cols["drive.dram"]).astype(bool), (n,))
    whole = dram & (np.broadcast_to(np.asarray(cols.get("engine.map_cache", "auto")).astype(str), (n,))
                    == "auto")
    user = params.num(cols, "drive.user_capacity_gb") * 1e9
    table = np.where(whole, user * TABLE_BYTES_PER_BYTE, params.num(cols, "engine.map_cache_mib") * MIB)
    return table + params.num(cols, "engine.write_buffer_mib") * MIB


def cost(cols: Mapping[str, np.ndarray], price: Mapping[str, float] | None = None) -> dict[str, np.ndarray]:
    """Every design's cost, US dollars: ``cost_usd`` and its parts ``nand_usd``, ``memory_usd``,
    ``controller_usd``; with ``raw_gib`` (raw NAND) and ``memory_mib``."""
    p = dict(PRICES) if price is None else dict(price)
    channels = params.num(cols, "drive.channels")
    raw_gib = channels * params.num(cols, "drive.dies_per_channel") * params.num(cols, "drive.die_gbit") / 8.0
    bits = params.nand_value(cols, "bits_per_cell")
    nand = raw_gib * p["nand_tlc_usd_per_gib"] * 3.0 / bits
    mem = memory_bytes(cols)
    memory = mem / GIB * p["dram_usd_per_gib"]
    ctrl = channels * p["controller_usd_per_channel"]
    return {"cost_usd": nand + memory + ctrl, "nand_usd": nand, "memory_usd": memory, "controller_usd": ctrl,
            "raw_gib": raw_gib, "memory_mib": mem / MIB}
