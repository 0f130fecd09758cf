"""Where the packaged configuration lives (``conf/`` and ``sweeps/``), and how outputs are written whole.

In a source checkout (editable install) the configuration sits beside the package; a wheel carries
copies inside the package (``ssdx/conf``, ``ssdx/sweeps``; see ``pyproject.toml``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
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


def replace_atomic(path: str | os.PathLike, write: Callable[[Path], object]) -> None:
    """Write ``path`` whole: ``write(tmp)`` fills a temporary file beside it, named for this process and
    thread (two writers never share one), then ``os.replace`` puts it in place, so a reader or a crash
    sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
