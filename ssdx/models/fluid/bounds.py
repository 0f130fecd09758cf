"""Published physical bounds of the numbers a fill fit may choose (:mod:`ssdx.models.fluid.fit`).

A fit that explains a curve with a value no NAND die has shown answers every what-if wrongly, so each
fitted number is checked against what has been published — not against the curve it was fitted to.

**Program speed per die.**  The fluid model writes ``dies · planes · page / t`` bytes/s in a mode whose
page program time is ``t`` (``ssdx.models.fluid.model.die_time``), so what a fit determines is the
*per-die* write throughput ``planes · page / t``, whatever page size and plane count the base drive
assumes.  Bounds in MB/s (10^6 B/s) per die, all planes, channel transfers excluded:

* **TLC native**: 40–200 MB/s.  The slowest 3D TLC published at ISSCC writes 57 MB/s (Toshiba/WD,
  "A 512Gb 3b/Cell 3D Flash Memory on a 96-Word-Line-Layer Technology", ISSCC 2018; Samsung's 64-layer
  512 Gb TLC, 700 us per 16 kB page over two planes, about 47 MB/s, as tabulated by AnandTech,
  "The Samsung 983 ZET (Z-NAND) SSD Review", 2019); the fastest, 194 MB/s (SK hynix, "A High-Performance
  1Tb 3b/Cell 3D-NAND Flash with a 194MB/s Write Throughput on over 300 Layers", ISSCC 2023).  Samsung's
  6th-generation V-NAND writes 82 MB/s (ISSCC 2019), Kioxia/WD's 128-layer 132 MB/s and SK hynix's
  176-layer 168 MB/s (both as tabulated by B. Tallis, "2021 NAND Flash Updates from ISSCC: The Leaning
  Towers of TLC and QLC", AnandTech, 2021).
* **QLC native**: 10–80 MB/s.  "A 1Tb 4b/cell 64-Stacked-WL 3D NAND Flash Memory with 12MB/s Program
  Throughput" (ISSCC 2018); "A 1Tb 4b/Cell 96-Stacked-WL 3D NAND Flash Memory with 30MB/s Program
  Throughput ..." (ISSCC 2020); Khakifirooz et al., "A 1Tb 4b/cell 144-Tier Floating-Gate 3D-NAND Flash
  Memory with 40MB/s Program Throughput ...", ISSCC 2021.  The upper end allows the doubling announced
  for the 2024 generations (Samsung's 9th-generation QLC V-NAND release, 2024: "doubled write
  performance").
* **MLC native**: 15–100 MB/s.  Planar MLC: two planes of 16 KiB in 1.6 ms, 20 MB/s (Micron
  MT29F128G08CBECB datasheet, "PROGRAM PAGE 1600 us typ."); 3D MLC: 50 MB/s (Park et al.,
  "Three-Dimensional 128Gb MLC Vertical NAND Flash-Memory with 24-WL Stacked Layers and 50MB/s
  High-Speed Programming", ISSCC 2014); twice that as the upper end.
* **pSLC** (one bit per cell in a multi-bit die): from the die's native lower bound — one coarse program
  step per word line is never slower per byte than the native program of the same cells — to
  1,000 MB/s: the fastest published SLC program, 100 us per page (Samsung Z-NAND, in the AnandTech
  review above), over six planes of 16 KiB (Micron's 232-layer TLC, the first six-plane production die,
  2022), 983 MB/s.
* the **first region** of a cache with its own program time (``drive.first_slc_t_prog_us``) has the
  pSLC bound.
* **pSLC against native on one die**: a pSLC page program is at least :data:`SLC_OVER_NATIVE` (1.5) times
  faster than the native page program the same fit finds.  The smallest published ratio of a multi-bit
  page program to an SLC one is 2 (planar MLC 600–900 us against SLC 200–300 us, TLC 900–1350 us: HP,
  "Solid State Drive Technology: Differences between SLC, MLC and TLC NAND", technical white paper,
  Table 1); a 3D die programs a word line of ``b`` pages at once, which narrows the per-page gap, hence
  the margin.  A fit that makes part of a cache as slow as native writes (to stand in for a phase the
  accounting cannot place) is refused by it.

**Die densities** (binary Gbit per die) in production, for the die counts a fit may try
(:func:`die_counts`): TLC 128–1024 (Samsung 32-layer 128 Gb, 2014, to the 1 Tb TLC dies of Kioxia/WD
(ISSCC 2021), Micron 232-layer and Samsung 8th generation, 2022); QLC 768–2048 (Toshiba's 64-layer
768 Gb, 2018; IMFT's 64-layer 1 Tb, 2018; Toshiba/WD's 96-layer 1.33 Tb, ISSCC 2019; Kioxia BiCS8 2 Tb,
2024); MLC 64–256 (planar and early 3D).

**The rest** are bounds by construction, not publications: ``fold_efficiency`` in (0, 1] (a share of die
time), the reserve below the raw NAND the user capacity leaves, the static region within the raw NAND
beside the user capacity, the dynamic cap and a dynamic cache's first region at most ``U/b``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

#: per-die native program throughput bounds, MB/s, by bits per cell (module docstring)
NATIVE_MB_S: dict[int, tuple[float, float]] = {2: (15.0, 100.0), 3: (40.0, 200.0), 4: (10.0, 80.0)}
#: the upper bound of a pSLC program's per-die throughput, MB/s (the lower is the native lower bound)
SLC_MAX_MB_S = 1000.0
#: a pSLC page program is at least this many times faster than the native one of the same die
SLC_OVER_NATIVE = 1.5
#: die densities in production, binary Gbit, by bits per cell (module docstring)
DIE_GBIT: dict[int, tuple[float, ...]] = {2: (64.0, 128.0, 256.0), 3: (128.0, 256.0, 512.0, 1024.0),
                                          4: (768.0, 1024.0, 1365.0, 2048.0)}
CELL = {1: "SLC", 2: "MLC", 3: "TLC", 4: "QLC"}

#: the fitted program times and what they program (``ssdx.models.fluid.fit_model.PARAMS`` keys)
PROGRAM_TIMES = {"nand.t_prog_us": "native", "nand.t_prog_slc_us": "pslc",
                 "drive.first_slc_t_prog_us": "pslc"}


@dataclasses.dataclass(frozen=True)
class Check:
    """One fitted value against its bound: ``value`` in config units; ``per_die_mb_s`` (program times
    only) the per-die throughput it means; ``bound`` in the unit of the quantity compared (MB/s per die for
    program times, config units otherwise); ``basis``: where the bound comes from."""

    key: str
    value: float
    per_die_mb_s: float | None
    bound: tuple[float, float]
    inside: bool
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value, "per_die_mb_s": self.per_die_mb_s,
                "bound": list(self.bound), "bound_unit": "MB/s per die" if self.per_die_mb_s is not None
                else "config units", "inside": self.inside, "basis": self.basis}


def bits(drive: Any) -> int:
    return int(round(float(np.asarray(drive.nand.bits_per_cell))))


def per_die_mb_s(drive: Any, t_us: float) -> float:
    """Per-die program throughput (MB/s) of a page program time ``t_us`` on ``drive``'s planes and pages."""
    planes = float(np.asarray(drive.planes_per_die))
    page = float(np.asarray(drive.nand.page_bytes))
    return planes * page / max(t_us, 1e-9)


def program_bound(kind: str, b: int) -> tuple[tuple[float, float], str]:
    """Per-die throughput bound (MB/s) of a ``native`` or ``pslc`` program on a ``b``-bit die, and its
    basis (module docstring)."""
    if b not in NATIVE_MB_S:
        return (0.0, np.inf), f"no published bound for {b}-bit dies"
    lo, hi = NATIVE_MB_S[b]
    if kind == "native":
        return (lo, hi), f"published {CELL[b]} native program throughput per die"
    return (lo, SLC_MAX_MB_S), f"{CELL[b]} native lower bound .. fastest published SLC program"


def check(drive: Any, values: Mapping[str, float]) -> list[Check]:
    """Each fitted value of ``values`` (config units, ``fit_model.PARAMS`` keys) against its bound on
    ``drive`` (the base drive: geometry and NAND)."""
    b = bits(drive)
    u = float(np.asarray(drive.user_bytes)) / 1e9
    raw = float(np.asarray(drive.raw_bytes)) / 1e9
    rho = float(np.asarray(drive.reserve_fraction))
    out = []
    for key, v in values.items():
        if key in PROGRAM_TIMES:
            if key == "drive.first_slc_t_prog_us" and v <= 0:
                continue  # 0 = the NAND's pSLC time, checked under its own key
            mb_s = per_die_mb_s(drive, v)
            (lo, hi), basis = program_bound(PROGRAM_TIMES[key], b)
            out.append(Check(key, v, mb_s, (lo, hi), lo <= mb_s <= hi, basis))
            continue
        if key == "drive.fold_efficiency":
            bound, basis = (0.0, 1.0), "a share of die time: (0, 1]"
        elif key == "drive.reserve_fraction":
            bound, basis = (0.0, 1.0 - u / raw), "the raw NAND the user capacity leaves"
        elif key == "drive.static_slc_gb":
            bound, basis = (0.0, (raw * (1 - rho) - u) / b), "raw NAND beside the user data, 1 bit/cell"
        elif key in ("drive.max_dynamic_slc_gb", "drive.first_slc_gb"):
            bound, basis = (0.0, u / b), "the user capacity at one bit per cell"
        else:
            continue
        out.append(Check(key, v, None, bound, bound[0] <= v <= bound[1] * (1 + 1e-6), basis))
    native = values.get("nand.t_prog_us")
    for key in ("nand.t_prog_slc_us", "drive.first_slc_t_prog_us"):
        v = values.get(key)
        if native is None or v is None or v <= 0:
            continue
        ratio = native / v  # how much faster per page the pSLC program is
        out.append(Check(f"{key} / nand.t_prog_us", v / native, None, (0.0, 1.0 / SLC_OVER_NATIVE),
                         ratio >= SLC_OVER_NATIVE,
                         f"a pSLC program at least {SLC_OVER_NATIVE:g}x faster than the native one"))
    return out


def outside(checks: list[Check]) -> list[str]:
    """One line per value outside its bound: key, value, what it means and the bound."""
    lines = []
    for c in checks:
        if c.inside:
            continue
        if c.per_die_mb_s is not None:
            lines.append(f"{c.key} = {c.value:.4g} us is {c.per_die_mb_s:.3g} MB/s per die, outside "
                         f"{c.bound[0]:g}..{c.bound[1]:g} ({c.basis})")
        else:
            lines.append(f"{c.key} = {c.value:.4g} outside {c.bound[0]:.4g}..{c.bound[1]:.4g} ({c.basis})")
    return lines


def die_counts(raw_gbit: float, b: int) -> list[int]:
    """Die counts a drive of ``raw_gbit`` raw NAND (binary Gbit) may have with the production densities of
    ``b``-bit dies (:data:`DIE_GBIT`), fewest first; densities that do not divide it into at least one
    whole die are skipped."""
    out = set()
    for g in DIE_GBIT.get(b, ()):
        n = raw_gbit / g
        if n >= 1 and abs(n - round(n)) < 1e-6 * n:
            out.add(int(round(n)))
    return sorted(out)
