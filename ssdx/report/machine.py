"""The machine a benchmark ran on, for its JSON record (``bench/*.py``)."""

from __future__ import annotations

import os
import platform
from typing import Any

import numpy as np

XLA_ENV = ("XLA_FLAGS", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "JAX_PLATFORMS")


def machine() -> dict[str, Any]:
    """Host name, CPU model (from /proc/cpuinfo where there is one), core count, Python and NumPy
    versions, and the XLA/JAX environment variables that change timings."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "node": platform.node(),
        "processor": cpu,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "env": {k: os.environ[k] for k in XLA_ENV if k in os.environ},
    }
