"""Where the packaged configuration lives (``conf/`` and ``sweeps/``) and the example inputs
(``examples/``: MQSim's default drive and workload files, fio jobs, review curves); ``ssdx.core.io`` writes
outputs.

In a source checkout (editable install) these sit beside the package; a wheel carries copies inside the
package (``ssdx/conf``, ``ssdx/sweeps``, ``ssdx/examples``; see ``pyproject.toml``).
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for cand in (_PKG / name, _PKG.parent / name):
        if cand.is_dir():
            return cand
    raise FileNotFoundError(f"cannot find the '{name}' directory beside or inside {_PKG}")


def conf_dir() -> Path:
    """The Hydra config directory."""
    return _find("conf")


def sweeps_dir() -> Path:
    """The directory of sweep definitions ``NAME.yaml``."""
    return _find("sweeps")


def examples_dir() -> Path:
    """The example input files (``mqsim/``, ``fio/``, ``curves/``)."""
    return _find("examples")
