"""Compile (or load from Numba's cache) the request engine's CPU loop and the workload readers' Numba
kernels once, so that the test processes that need them load them from the cache instead of each compiling
them at the same time (on a cold cache the CPU loop alone costs about half a minute of one core).

Started by ``tests/conftest.py`` on the pytest-xdist controller, with ``NUMBA_CACHE_DIR`` set and the
controller's exclusive lock on a file inherited as an open descriptor: the lock is held until this
process exits, and the workers wait for it (shared) before their first test that may run a
kernel."""

from __future__ import annotations

import numpy as np


def warm() -> None:
    """One replay of a few requests in the CPU loop (every ``cache=True`` function it calls is compiled
    and cached), and the Numba kernels of the workload readers."""
    from ssdx import presets
    from ssdx.models.engine import replay
    from ssdx.workloads import lru, msr, synthetic

    cfg = {"drive": presets.drive("aldrin_pro_2tb"), "nand": {},
           "workload": {"pattern": "random", "block_kib": 4, "queue_depth": 4, "prefill_fraction": 0.5,
                        "fill_fraction": 1.0, "burst_gb": 0.0, "idle_s": 0.0},
           "engine": {"loop": "closed", "write_buffer_mib": 16, "map_cache_mib": 2, "map_hit_us": 0.5,
                      "ctrl_kiops": 1000, "time_scale": 1.0, "backend": "cpu"}}
    replay.replay_config(cfg, synthetic.fio_like(64, 0.5, seed=0))
    lru.stack_distances(np.arange(8, dtype=np.int64) % 3)
    msr.generate("proj_0", 64)


if __name__ == "__main__":
    warm()
