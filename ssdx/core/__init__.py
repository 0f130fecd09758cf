"""Helpers every job and model of ssdx shares: output writing (:mod:`ssdx.core.io`), running sums and
latency statistics (:mod:`ssdx.core.stats`) and the declaration of configuration fields
(:mod:`ssdx.core.fields`).

Nothing here imports a job module (``ssdx.tasks``, ``ssdx.sweep``, a model's ``jobs``), so any of them
may import from here without an import cycle.
"""
