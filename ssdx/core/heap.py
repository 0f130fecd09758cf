"""Keep freed memory in the process's heap, so that a compiled call does not fault in fresh pages.

An XLA CPU executable allocates its intermediate buffers on every call (a few MiB each for a chunk of
2^20 configurations, and tens of MiB for its largest) and frees them when the call returns.  With
glibc's default ``malloc`` settings, freed memory goes back to the kernel, so the next call touches as
much memory as new pages: one minor page fault per 4 KiB page, about a microsecond each, for every
buffer of every call.  Two settings stop that:

* ``mallopt(M_TOP_PAD, n)`` makes ``malloc`` keep ``n`` bytes at the top of a heap when it trims it and
  take that much extra when it grows one, so the buffers of one call are reused by the next;
* ``mallopt(M_MMAP_MAX, 0)`` makes it take every block from a heap.  Otherwise a block larger than the
  mmap threshold gets its own mapping, returned to the kernel when freed; glibc raises that threshold
  as such blocks are freed, but not past 32 MiB on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX`` in
  the GNU C Library's ``malloc.c``; ``mallopt(3)``), so a larger buffer (a device sweep's chunk of 2^20
  configurations has one) was mapped and faulted in anew on every call.

Both take effect only when set before JAX starts its CPU backend (its threads' heaps are made then), so
importing ``ssdx`` sets them; a process that ran JAX computations before importing ``ssdx`` keeps its
settings.  What it costs is that up to ``n`` bytes of freed memory per heap stay resident, and that
memory freed below the top of a heap is reused by later blocks rather than returned.

The pad is :data:`DEFAULT_PAD_MIB` unless ``SSDX_HEAP_PAD_MIB`` says otherwise (0: ``malloc`` is left
alone).  Elsewhere than glibc (macOS, musl) nothing is done.  Results do not depend on it: only where
memory comes from changes, not what is computed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import warnings

#: bytes kept at the top of the heap, in MiB (``SSDX_HEAP_PAD_MIB`` overrides)
DEFAULT_PAD_MIB = 256
#: the largest pad ``mallopt`` takes (a C ``int`` of bytes), in MiB
MAX_PAD_MIB = 2047
_M_TOP_PAD = -2  # glibc's malloc.h
_M_MMAP_MAX = -4
_done: int | None = None


def retain_freed_memory(env: dict | None = None) -> int:
    """Set glibc's top pad, and take every block from a heap, once per process (idempotent); returns the
    pad in bytes, 0 when nothing was set (another C library, ``SSDX_HEAP_PAD_MIB=0``, or ``mallopt``
    refused)."""
    global _done
    if _done is not None:
        return _done
    env = os.environ if env is None else env
    raw = env.get("SSDX_HEAP_PAD_MIB", "").strip()
    mib = int(raw) if raw.isdigit() else DEFAULT_PAD_MIB
    if (raw and not raw.isdigit()) or mib > MAX_PAD_MIB:
        mib = min(mib, MAX_PAD_MIB)
        warnings.warn(f"SSDX_HEAP_PAD_MIB={raw!r}: must be a whole number of MiB from 0 to {MAX_PAD_MIB}; "
                      f"using {mib}", stacklevel=2)
    _done = 0
    if mib <= 0 or not sys.platform.startswith("linux"):
        return _done
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return _done
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(_M_TOP_PAD, mib << 20) == 1:
        _done = mib << 20
        mallopt(_M_MMAP_MAX, 0)
    return _done
