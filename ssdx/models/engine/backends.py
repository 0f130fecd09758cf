"""Which back end runs the request-level engine: ``engine.backend`` resolved on this machine.

The name is a configuration value (``ssdx.models.engine.params.BACKENDS``, checked there); what it means here
depends on the hardware, so it is resolved at run time, outside the parameter module:

* ``jax`` — the batched ``lax.scan`` of ``ssdx.models.engine.model`` (every configuration of a batch stepped
  together; the GPU path);
* ``cpu`` — the compiled per-configuration loop of ``ssdx.models.engine.cpu`` (the same model, touching only
  the dies a request uses);
* ``cuda`` — that loop as a CUDA kernel, one GPU thread per configuration (``ssdx.models.engine.cuda``);
  refused, naming what is missing, when Numba sees no usable GPU;
* ``auto`` — ``cpu`` when JAX's default device is a CPU and Numba is installed, else ``jax``.  ``auto`` does
  not pick ``cuda``: its speed on a GPU has not been measured against ``jax``.

``engine.back_pressure = pages`` (a write's pages let into flash one by one, ``cpu_ops._write_pages``) is
in the per-configuration loop only: ``auto`` picks ``cpu`` for it, and ``jax`` refuses it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from ssdx.models.engine.params import backend_name
from ssdx.params import ConfigError


def cuda_unavailable() -> str | None:
    """Why the ``cuda`` back end cannot run here, or None (``ssdx.models.engine.cuda.unavailable``); also
    when Numba's CUDA target fails to import at all, as a ``numba-cuda`` built for an older NumPy does."""
    try:
        from ssdx.models.engine import cuda as engine_cuda
    except Exception as e:  # not only ImportError: a broken install raises what its imports raise
        return f"Numba's CUDA target does not import here ({type(e).__name__}: {e})"
    return engine_cuda.unavailable()


def select(engine: Mapping[str, Any], pages: bool = False) -> str:
    """The back end a run with the ``engine`` config mapping uses: ``jax``, ``cpu`` or ``cuda`` (``auto``
    resolved on JAX's default device; ``cuda`` checked against the GPUs Numba sees).  ``pages``: some
    configuration lets writes in page by page (``engine.back_pressure = pages``, also read from
    ``engine``), which ``auto`` runs on ``cpu`` and ``jax`` refuses.  A name outside
    ``ssdx.models.engine.params.BACKENDS``, an unavailable ``cuda`` or ``jax`` with ``pages`` raises
    :class:`~ssdx.params.ConfigError`."""
    value = backend_name(engine)
    pages = pages or engine.get("back_pressure") == "pages"
    if pages and value == "jax":
        raise ConfigError("engine.backend", value, "engine.back_pressure = pages runs in the "
                          "per-configuration loop only; use auto, cpu or cuda")
    if pages and value == "auto":
        if importlib.util.find_spec("numba") is None:
            raise ConfigError("engine.back_pressure", "pages", "needs Numba (the cpu back end); use programs")
        return "cpu"
    if value == "cuda":
        why = cuda_unavailable()
        if why is not None:
            raise ConfigError("engine.backend", value, f"{why}; use auto, jax or cpu")
    if value == "auto":
        import jax

        on_cpu = jax.default_backend() == "cpu" and importlib.util.find_spec("numba") is not None
        return "cpu" if on_cpu else "jax"
    return value
