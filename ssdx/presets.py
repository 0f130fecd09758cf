"""Named drive and workload presets (the YAML files under ``conf/``) and their calibration.

``aldrin_pro_2tb`` — how its fitted numbers were obtained
---------------------------------------------------------
The review: "O impacto do SLC Cache no desempenho de um SSD NVMe – Testes e resultados!" (Portuguese-language
test of the Pichau Aldrin Pro 2 TB with its pSLC cache enabled and disabled, 2024). Known hardware: 32 dies (8
channels x 4 CE) x 4 planes x 16 KiB pages, 512 Gbit dies, 1200 MT/s bus, PCIe 4.0 x4, 2000 GB user capacity.
Three numbers are fitted, one per measured speed, and nothing else; every phase *boundary* then follows from
capacity accounting (``ssdx.models.fluid.model``):

* pSLC page program time: ``t = 32·4·16 KiB / 6579 MB/s = 318.76 us`` (the die limit; the PCIe link,
  ~7.0 GB/s usable, and the bus, 8 x 1200 MT/s x 0.9, are both faster);
* native TLC page program time: ``32·4·16 KiB / 2159 MB/s = 971.4 us`` per page (2.91 ms per
  one-shot word line of 3 pages);
* fold efficiency ``η_fold = 0.6074``: with ``f = 1/(3-1) = 0.5`` folded bytes per host byte, the
  folding phase runs at ``η·2159/1.5`` less read and erase time = 863 MB/s.

What the accounting then gives, against the review: pSLC cache ``U/3 = 666.7 GB`` (review ~691 GB,
-3.5 %); direct-TLC end ``666.7 + 2199·(1-0.005) - 2000 = 854.7 GB`` (review ~868 GB, -1.5 %);
pure-SLC capacity ``U/3 = 666.7 GB`` (review ~640 GB, +4.2 %).  The review's own numbers are not
mutually consistent with one-third pSLC density: 691 GB of pSLC data plus 177 GB of native data
needs 3·691 + 177 = 2250 GB of raw NAND, more than the 2199 GB the 32 dies hold, so no single
accounting meets all three exactly; we keep the physical one.

Power of ``aldrin_pro_2tb`` (Quarch PPM, the same review): > 7.3 W peak in the pSLC region, ~5 W with
pSLC disabled writing at ~1900-2100 MB/s.  Both phases are die-limited, so all 32 dies are busy in
both and draw the same ``32 x 62.5 mW = 2.0 W`` (catalog); the difference is per-byte energy::

    e_host + e_io = (7.3 - 5.0) W / (6579 - 2159) MB/s = 0.520 nJ/byte
    idle + ctrl   = 5.0 - 2.0 - 0.520 x 2.159 = 1.876 W

With the link (5 pJ/bit = 0.040 nJ/B) and NAND I/O (5 pJ/bit) assumed and idle 1.0 W assumed,
:func:`fit_power` gives ``datapath_nj_per_byte = 0.440`` and ``ctrl_active_w = 0.876``.  MB/s per W
then falls from 901 (pSLC) to 432 (TLC direct): -52 %, the review's "sharp" fall.

``sn8e_1920`` (KIOXIA, "How thermal throttling of NVMe SSDs works" (Japanese technical article, revised from a
Qiita post of January 2020)): the article reports behaviour, not hardware; the drive is a representative 1.92
TB M.2 (32 dies of generic TLC, 2.1 GB/s sequential write, ~6.6 W) on the ``bare`` cooling preset at 25 deg C.
Its light-throttle action keeps 95 % of the throughput (-105 MB/s, the article's "at most ~100 MB/s") and
drops to a lower controller power state (40 % of active controller power); the 5 K hysteresis is the article's
80 -> 75 deg C.  With these, 80 deg C is reached after ~270 s and the drive cycles every ~170 s; the heatsink
preset peaks at ~57 deg C.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from omegaconf import OmegaConf

from ssdx.paths import conf_dir


@cache
def _load(group: str, name: str) -> dict[str, Any]:
    path = conf_dir() / group / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in (conf_dir() / group).glob("*.yaml") if not p.stem.startswith("_"))
        raise KeyError(f"unknown {group} preset {name!r}; known: {known}")
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    node.pop("defaults", None)
    return node


@cache
def default_name(group: str) -> str:
    """The option ``conf/config.yaml``'s defaults list selects for a config ``group`` (what ``ssdx``
    composes without an override of it); a group the list does not name raises ``KeyError``."""
    root = OmegaConf.to_container(OmegaConf.load(conf_dir() / "config.yaml"), resolve=False)
    for entry in root.get("defaults", []):
        if isinstance(entry, dict) and group in entry:
            return str(entry[group])
    raise KeyError(f"conf/config.yaml selects no default for the group {group!r}")


def group_default(group: str) -> dict[str, Any]:
    """The settings of a config ``group`` as ``ssdx`` composes them without overrides
    (``conf/GROUP/<default_name(group)>.yaml``)."""
    return dict(_load(group, default_name(group)))


def drive(name: str = "aldrin_pro_2tb", **overrides: Any) -> dict[str, Any]:
    """A drive preset (``conf/drive/NAME.yaml``) as a dict, with field overrides."""
    return {**_load("drive", name), **overrides}


def workload(name: str = "seq_fill", **overrides: Any) -> dict[str, Any]:
    """A workload preset (``conf/workload/NAME.yaml``) as a dict, with field overrides."""
    return {**_load("workload", name), **overrides}


def engine(name: str = "default", **overrides: Any) -> dict[str, Any]:
    """The request engine's settings (``conf/engine/NAME.yaml``) as a dict, with field overrides."""
    return {**_load("engine", name), **overrides}


def fit_program_time_us(speed_mb_s: float, dies: int, planes: int, page_bytes: float) -> float:
    """Per-page program time (us) at which ``dies x planes`` programming ``page_bytes`` give ``speed``."""
    return dies * planes * page_bytes / (speed_mb_s * 1e6) * 1e6


def fit_power(p_pslc_w: float, p_native_w: float, slc_mb_s: float, native_mb_s: float, dies: int,
              die_w: float, idle_w: float, link_pj_per_bit: float, io_pj_per_bit: float) -> dict[str, float]:
    """Controller active power (W) and datapath energy (nJ/byte) from two die-limited operating points.

    Both points keep every die busy (``dies x die_w``), so ``P = idle + ctrl + dies·die_w + e·x`` with
    ``e = datapath + link + io`` per byte; two measured (speed, power) pairs fix ``ctrl`` and ``e``.
    """
    e = (p_pslc_w - p_native_w) / ((slc_mb_s - native_mb_s) * 1e6)  # J/byte
    fixed = p_native_w - dies * die_w - e * native_mb_s * 1e6
    return {"ctrl_active_w": fixed - idle_w,
            "datapath_nj_per_byte": (e - (link_pj_per_bit + io_pj_per_bit) * 8e-12) * 1e9}
