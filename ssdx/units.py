"""Unit constants and conversions.  SI inside the models; conversions only at the edges.

Storage vendors' decimal units are used for reported capacities and speeds
(GB = 1e9 bytes, MB = 1e6 bytes); NAND die densities are binary (a "512 Gbit" die holds
512 * 2**30 bits).
"""

from __future__ import annotations

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KIB = 1024.0
MIB = 1024.0**2
GIB = 1024.0**3
US = 1e-6  # seconds per microsecond
NS = 1e-9
ZERO_C_IN_K = 273.15


def gbit_die_to_bytes(gbit: float) -> float:
    """Bytes of data area in a NAND die of ``gbit`` binary gigabits (e.g. 512 Gbit -> 68.7 GB)."""
    return gbit * GIB / 8.0

