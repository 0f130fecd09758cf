"""Catalog of NAND media, storage-class memory and host interfaces.

Latencies follow the convention of Table 1 of Fukuchi, Sakaki, Matsui and Takeuchi, "Performance evaluation
of SCM/NAND flash hybrid SSD with four types of NAND flash" (Chuo Univ., in Japanese; full version ISCAS
2018; "Fukuchi et al." below):
program and read latency **per page**, erase latency **per block**.  A multi-bit die programs a
word line of ``bits_per_cell`` pages at once (one-shot programming), so its per-plane program
bandwidth is ``page_bytes / t_prog_us``.

Sources
-------
* ``2d_fg_mlc``, ``2d_fg_tlc``, ``3d_fg_tlc``, ``3d_ct_tlc``: Fukuchi et al. Table 1, exactly (latencies,
  block size, write unit).  The paper prints block sizes in MB; they equal a power-of-two page count
  of 16 KiB pages (4.2 MB = 256 pages, 9.4 MB = 576 pages, 25 MB = 1536 pages), which is what we store.
* Generic ``slc``/``mlc``/``tlc``/``qlc``: representative datasheet-class values, not a specific part.
  ``mlc`` uses MQSim's default flash timing (Tavakkol et al., FAST 2018: 75 us read, 750 us program,
  3.8 ms erase).  Override any field from a datasheet for a real design study.
* pSLC timings of multi-bit dies (``t_prog_slc_us``/``t_read_slc_us``) are not in Table 1; we use
  representative SLC-mode values (SLC-mode program is several times faster than a multi-bit page).
* ``ymtc_cdt1b``: YMTC 128-layer 512 Gbit TLC (Xtacking, charge trap) of the Pichau Aldrin Pro 2 TB ("O
  impacto do SLC Cache no desempenho de um SSD NVMe – Testes e resultados!" (Portuguese-language test of the
  Pichau Aldrin Pro 2 TB with its pSLC cache enabled and disabled, 2024)).  No datasheet is public: its
  program times are **fitted** to the review's measured pSLC (6579 MB/s) and pure-TLC (2159 MB/s) speeds over
  32 dies x 4 planes x 16 KiB pages (see ``ssdx.presets``).  Read/erase/block values are taken from Table 1's
  3D CT TLC.
* Interfaces: lane rate x lanes x line-code efficiency, times a protocol efficiency of 0.89 for PCIe (TLP
  header, framing and LCRC on 256 B payloads plus DLLP traffic) and 0.92 for SATA (FIS and primitives).  Line
  rates and codes: SATA-IO, Serial ATA Revision 3.0 (2009: 6 Gb/s, 8b/10b); PCI-SIG, PCI Express Base
  Specification 3.0 (2010: 8 GT/s) and 4.0 (2017: 16 GT/s), 128b/130b.  The results are the usable rates
  drives on these links reach: SATA III ~550 MB/s, PCIe 3.0 x4 ~3.5 GB/s, PCIe 4.0 x4 ~7 GB/s.
* Power (``die_active_w``): ONFI-class NAND datasheets give the array read, program and erase supply
  currents (ICC1-ICC3) as about 25 mA typical each; at VCC 3.3 V (planar parts) that is 82.5 mW per
  busy die, at the 2.5 V VCC of 3D parts 62.5 mW.  Representative, not one part's figure; one value
  for read, program and erase, since the datasheets give the same typical current for all three.
* Link energy (``link_pj_per_bit``): serial-link PHYs at 6-32 GT/s spend a few pJ per bit; we use
  5 pJ/bit for PCIe and 10 pJ/bit for SATA's older PHY (representative).
* SCM: 100 ns per 512 B sector read and write (Fukuchi et al. Table 1); an Optane-class SSD answers in
  about 10 us (Intel Optane SSD DC P4800X product brief, 2017).
"""

from __future__ import annotations

from dataclasses import dataclass

from ssdx.units import KIB

PAGE_16K = 16 * KIB


@dataclass(frozen=True)
class NandType:
    """One NAND medium.  Times in microseconds, sizes in bytes."""

    name: str
    bits_per_cell: int
    page_bytes: float
    t_prog_us: float  # per page (one-shot word line programs bits_per_cell pages in bits*t)
    t_read_us: float  # per page
    t_erase_us: float  # per block
    block_pages: int
    write_unit_bytes: float
    t_prog_slc_us: float  # per page in pSLC mode (== t_prog_us for native SLC)
    t_read_slc_us: float
    source: str
    die_active_w: float = 0.0625  # W while a die reads, programs or erases (module docstring)

    @property
    def block_bytes(self) -> float:
        """Block size in bytes (pages per block x page size)."""
        return self.block_pages * self.page_bytes


@dataclass(frozen=True)
class Interface:
    """Host interface.  ``link_bytes_per_s`` is the raw rate after line coding."""

    name: str
    lanes: int
    gt_per_s: float
    encoding: float
    protocol_efficiency: float
    cmd_overhead_us: float  # host + controller command processing per command
    source: str
    link_pj_per_bit: float = 5.0  # PHY energy per payload bit moved over the link (module docstring)

    @property
    def link_bytes_per_s(self) -> float:
        """Raw link bandwidth after line coding, bytes/s."""
        return self.lanes * self.gt_per_s * 1e9 * self.encoding / 8.0

    @property
    def sata(self) -> bool:
        """A SATA link: half duplex, one command queue (AHCI); the others are PCIe links with NVMe's
        full-duplex lanes and a queue per stream."""
        return self.name.startswith("sata")

    @property
    def usable_bytes_per_s(self) -> float:
        """Payload bandwidth after protocol overhead, bytes/s."""
        return self.link_bytes_per_s * self.protocol_efficiency


@dataclass(frozen=True)
class Scm:
    """Storage-class memory tier (Fukuchi et al. Table 1)."""

    name: str = "scm"
    t_read_ns_per_sector: float = 100.0
    t_write_ns_per_sector: float = 100.0
    sector_bytes: float = 512.0
    source: str = "Fukuchi et al. Table 1 (SCM/NAND hybrid SSD, Chuo Univ.; ISCAS 2018)"


T1 = "Fukuchi et al. Table 1 (SCM/NAND hybrid SSD, Chuo Univ.; ISCAS 2018)"
REP = "representative datasheet-class value; override for a specific part"
W2D = 0.0825  # W: 25 mA x 3.3 V, planar ONFI NAND

NAND: dict[str, NandType] = {
    n.name: n
    for n in (
        NandType("2d_fg_mlc", 2, PAGE_16K, 1185.0, 44.0, 3300.0, 256, PAGE_16K, 250.0, 30.0, T1, W2D),
        NandType("2d_fg_tlc", 3, PAGE_16K, 2180.0, 87.0, 3200.0, 256, 256 * PAGE_16K, 300.0, 40.0, T1, W2D),
        NandType("3d_fg_tlc", 3, PAGE_16K, 1900.0, 102.0, 7500.0, 1536, 1536 * PAGE_16K, 300.0, 40.0, T1),
        NandType("3d_ct_tlc", 3, PAGE_16K, 1083.0, 76.0, 4300.0, 576, 3 * PAGE_16K, 300.0, 40.0, T1),
        NandType("slc", 1, PAGE_16K, 200.0, 25.0, 2000.0, 256, PAGE_16K, 200.0, 25.0, REP, W2D),
        NandType("mlc", 2, PAGE_16K, 750.0, 75.0, 3800.0, 256, PAGE_16K, 250.0, 30.0,
                 "MQSim default flash timing (Tavakkol et al., FAST 2018)", W2D),
        NandType("tlc", 3, PAGE_16K, 1000.0, 80.0, 5000.0, 576, 3 * PAGE_16K, 300.0, 40.0, REP),
        NandType("qlc", 4, PAGE_16K, 2000.0, 120.0, 10000.0, 768, 4 * PAGE_16K, 350.0, 45.0, REP),
        NandType("ymtc_cdt1b", 3, PAGE_16K, 971.4, 76.0, 4300.0, 576, 3 * PAGE_16K, 318.76, 40.0,
                 "Pichau Aldrin Pro 2 TB pSLC review, 2024 (fitted program times; see ssdx.presets)"),
    )
}

INTERFACES: dict[str, Interface] = {
    i.name: i
    for i in (
        Interface("sata3", 1, 6.0, 8 / 10, 0.92, 15.0, "SATA 3.x; ~550 MB/s usable", 10.0),
        Interface("pcie3x4", 4, 8.0, 128 / 130, 0.89, 6.0, "PCIe 3.0 x4; ~3.5 GB/s usable"),
        Interface("pcie4x4", 4, 16.0, 128 / 130, 0.89, 6.0, "PCIe 4.0 x4; ~7 GB/s usable"),
        Interface("pcie5x4", 4, 32.0, 128 / 130, 0.89, 6.0, "PCIe 5.0 x4 (same efficiency)"),
    )
}

SCM = Scm()


@dataclass(frozen=True)
class Cooling:
    """Thermal environment of an M.2 2280 drive: a three-node RC network (``ssdx.models.thermal.rc``).

    Nodes: 0 controller package, 1 NAND packages, 2 case (the PCB, plus the heatsink when fitted).
    Heat capacities in J/K, conductances in W/K between nodes and to ambient.
    """

    name: str
    c_ctrl: float
    c_nand: float
    c_case: float
    g_ctrl_nand: float
    g_ctrl_case: float
    g_nand_case: float
    g_case_amb: float
    g_ctrl_amb: float
    g_nand_amb: float
    source: str


#: Cooling presets.  Heat capacities from masses: an M.2 2280 PCB (~3.5 g FR4 + copper, ~1.1 J/gK) plus the
#: connector and mounting, four NAND BGA packages (~1 g each, mould compound + die + substrate) and a ~2 g
#: controller package with its local copper; an aluminium M.2 heatsink of ~22 g (0.9 J/gK).  Conductances from
#: surface areas: natural convection plus radiation ~12 W/m^2K on the ~35 cm^2 of the bare board's two faces,
#: forced air at ~2 m/s ~40 W/m^2K, a finned heatsink ~150 cm^2 of fins; board conduction through the M.2
#: connector and standoff screw ~0.03 W/K.  Chosen so the bare drive's total resistance to ambient is ~8 K/W,
#: the heatsink's ~4 K/W and the forced-air case's ~2.5 K/W, the range M.2 drives show in published thermal
#: tests; NAND surfaces run > 10 K cooler with a heatsink (KIOXIA's thermal-throttling article,
#: ``ssdx.models.thermal.hctm``).  Representative values: fit them to a measured series with
#: ``ssdx.models.thermal.fit_rc``
#: for a specific chassis.
COOLING: dict[str, Cooling] = {
    c.name: c
    for c in (
        Cooling("bare", 2.0, 4.0, 5.0, 0.3, 0.6, 1.2, 0.075, 0.010, 0.035,
                "bare M.2 2280 in still air (representative)"),
        Cooling("heatsink", 2.0, 4.0, 25.0, 0.3, 1.0, 2.5, 0.22, 0.0, 0.0,
                "M.2 2280 with a ~22 g finned aluminium heatsink on thermal pads (representative)"),
        Cooling("airflow", 2.0, 4.0, 5.0, 0.3, 0.6, 1.2, 0.25, 0.04, 0.12,
                "bare M.2 2280 under case fans, ~2 m/s (representative)"),
    )
}

#: Table 1 NAND types, in the paper's order.
TABLE1_NAND = ("2d_fg_mlc", "2d_fg_tlc", "3d_fg_tlc", "3d_ct_tlc")


def nand(name: str) -> NandType:
    """Look up a NAND type; the error lists the known names."""
    try:
        return NAND[name]
    except KeyError:
        raise KeyError(f"unknown NAND type {name!r}; known: {sorted(NAND)}") from None


def interface(name: str) -> Interface:
    """Look up a host interface; the error lists the known names."""
    try:
        return INTERFACES[name]
    except KeyError:
        raise KeyError(f"unknown interface {name!r}; known: {sorted(INTERFACES)}") from None


def cooling(name: str) -> Cooling:
    """Look up a cooling preset; the error lists the known names."""
    try:
        return COOLING[name]
    except KeyError:
        raise KeyError(f"unknown cooling preset {name!r}; known: {sorted(COOLING)}") from None


def pslc(base: NandType) -> NandType:
    """The pSLC operation of a multi-bit die: one bit per cell, SLC-mode timing, same blocks.

    A block in pSLC mode holds ``1/bits_per_cell`` of its native data (one bit per cell instead of
    ``bits_per_cell``: a TLC block used as pSLC holds one third).
    """
    return NandType(
        name=f"pslc({base.name})",
        bits_per_cell=1,
        page_bytes=base.page_bytes,
        t_prog_us=base.t_prog_slc_us,
        t_read_us=base.t_read_slc_us,
        t_erase_us=base.t_erase_us,
        block_pages=base.block_pages // base.bits_per_cell,
        write_unit_bytes=base.page_bytes,
        t_prog_slc_us=base.t_prog_slc_us,
        t_read_slc_us=base.t_read_slc_us,
        source=base.source + "; pSLC mode",
        die_active_w=base.die_active_w,
    )
