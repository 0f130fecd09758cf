"""ssdx — GPU-accelerated design-space explorer for SSDs.

Every physical model is a pure JAX function of one drive configuration; sweeps ``vmap`` it over
stacked configurations.  See ``README.md`` and the module docstrings for units and sources.
"""

from ssdx.core import heap as _heap

__version__ = "0.1.0"

# before JAX starts its CPU backend: XLA's per-call buffers are then reused rather than faulted in anew
_heap.retain_freed_memory()
