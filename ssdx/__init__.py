"""ssdx — GPU-accelerated design-space explorer for SSDs.

Every physical model is a pure JAX function of one drive configuration; sweeps ``vmap`` it over
stacked configurations.  See ``README.md`` and the module docstrings for units and sources.
"""

__version__ = "0.1.0"
