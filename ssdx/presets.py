"""Named drive and workload presets (the YAML files under ``conf/``) and their calibration.

``aldrin_pro_2tb`` (seeds/002, REFERENCE §1) — how its fitted numbers were obtained
------------------------------------------------------------------------------------
Known hardware: 32 dies (8 channels x 4 CE) x 4 planes x 16 KiB pages, 512 Gbit dies, 1200 MT/s bus,
PCIe 4.0 x4, 2000 GB user capacity.  Three numbers are fitted, one per measured speed, and nothing
else; every phase *boundary* then follows from capacity accounting (``ssdx.models.fluid``):

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


def drive(name: str = "aldrin_pro_2tb", **overrides: Any) -> dict[str, Any]:
    """A drive preset (``conf/drive/NAME.yaml``) as a dict, with field overrides."""
    return {**_load("drive", name), **overrides}


def workload(name: str = "seq_fill", **overrides: Any) -> dict[str, Any]:
    """A workload preset (``conf/workload/NAME.yaml``) as a dict, with field overrides."""
    return {**_load("workload", name), **overrides}


def fit_program_time_us(speed_mb_s: float, dies: int, planes: int, page_bytes: float) -> float:
    """Per-page program time (us) at which ``dies x planes`` programming ``page_bytes`` give ``speed``."""
    return dies * planes * page_bytes / (speed_mb_s * 1e6) * 1e6
