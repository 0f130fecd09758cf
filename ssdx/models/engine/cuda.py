"""The request-level engine's per-configuration loop as a CUDA kernel: one GPU thread per configuration.

Why a kernel of its own.  The batched JAX step (:mod:`ssdx.models.engine.model`) books every die position of
every configuration with masks and runs as a ``lax.scan``: XLA launches a handful of kernels per request
and round-trips the whole state through GPU memory between them, which caps its rate on a GPU (measured
in docs/performance.md).  The CPU back end (:mod:`ssdx.models.engine.cpu`) showed the cheaper formulation:
each configuration walks its chunk of requests alone and touches only the dies and channels a request
uses.  Here each GPU thread does exactly that for one configuration, over the whole chunk, in one launch.

The same source, not a port: the loop body is :func:`ssdx.models.engine.cpu._config` and its helpers,
compiled a second time by Numba's CUDA target from their Python code (:func:`_device`), so the CPU and GPU
back ends cannot drift apart.  Only the outer loop differs: a thread per configuration instead of
``prange``, scratch in thread-local arrays, and arrays with configurations on the last axis (the engine's
batched layout), so that the threads of a warp touching the same die position read adjacent addresses.
Arithmetic is float64 as on the CPU; the state handed back is in the batch's dtype.

Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) runs this module on a CPU: the tests use it to check
the kernel against the CPU back end, and compile its PTX for ``sm_90`` where a CUDA toolkit is installed.
"""

from __future__ import annotations

import types

import numpy as np
from numba import cuda, float64

from ssdx.models.engine import cpu as engine_cpu
from ssdx.models.engine import cpu_ops, cpu_pack
from ssdx.models.engine.model import Acc, Requests, State
from ssdx.models.engine.params import Layout
from ssdx.params import RANGES

#: scratch size per thread: the most channels a configuration can have (``params.RANGES``)
MAX_CH = int(RANGES["drive.channels"].hi)
#: threads per block; small blocks spread 10^4 configurations over every multiprocessor of an H100
THREADS = 64


def _namespace() -> dict:
    """Globals for the kernel (:func:`_thread`): :func:`engine_cpu._config` and the helpers it calls
    (:mod:`~ssdx.models.engine.cpu_ops`) as CUDA device functions compiled from their Python code, every call
    resolved to the device version, with the loop's indices (:mod:`~ssdx.models.engine.cpu_pack`)."""
    ns = (dict(vars(cpu_pack)) | dict(vars(cpu_ops)) | dict(vars(engine_cpu))
          | {"cuda": cuda, "float64": float64, "MAX_CH": MAX_CH})
    for name in ("_book", "_heap_replace_min", "_shift", "_div", "_mod", "_pos", "_kept_on", "_plane_row",
                 "_merge_page", "_allocate", "_erases", "_dram_s", "_admit", "_select", "_kth", "_kth_phase",
                 "_admit_programs", "_bp_limit", "_nth_die", "_suspend", "_read_on_die", "_ahead",
                 "_map_read_first", "_flight_push", "_write_pages", "_config"):
        py = ns[name].py_func
        ns[name] = cuda.jit(device=True)(types.FunctionType(py.__code__, ns, name, py.__defaults__))
    return ns


def _thread(pf, sc, die, chan, slots, tags, a, hist, busy, op, off4k, size, gap_s, valid, map_miss, wb_tpage,
            wb_count, kept, first_read, lat, keep, C, mg, wk, fl):
    """Kernel body: thread ``b`` runs configuration ``b`` through the chunk (arrays configurations last;
    ``wk`` (2, D, B) is the threads' scratch over the dies)."""
    b = cuda.grid(1)
    if b < pf.shape[1]:
        x_c = cuda.local.array(MAX_CH, float64)
        first_c = cuda.local.array(MAX_CH, float64)
        last_c = cuda.local.array(MAX_CH, float64)
        end_c = cuda.local.array(MAX_CH, float64)
        _config(pf[:, b], sc[:, b], die[:, :, b], chan[:, :, b], slots[:, b], tags[:, :, b], a[:, b],  # noqa: F821
                hist[:, :, b], busy[:, b], x_c, first_c, last_c, end_c, op, off4k, size, gap_s, valid,
                map_miss, wb_tpage, wb_count, kept, first_read, lat, keep, b, C, mg[:, :, b], wk[:, :, b],
                fl[:, :, b])


def _kernel_function(ns: dict) -> types.FunctionType:
    """:func:`_thread` with the globals ``ns`` (its ``_config`` the device version)."""
    return types.FunctionType(_thread.__code__, ns, "_kernel")


_kernel = cuda.jit(_kernel_function(_namespace()))


def unavailable() -> str | None:
    """Why this back end cannot run here, or None: it needs a CUDA GPU that Numba sees (or Numba's
    simulator) and the NVIDIA-maintained ``numba-cuda`` target (the ``cuda`` extra): the CUDA target
    built into Numba is deprecated, and with Numba 0.68 it failed to compile ``max`` of two floats to PTX
    here."""
    from numba.core import config

    if config.ENABLE_CUDASIM:
        return None
    if getattr(cuda, "implementation", "") != "NVIDIA":
        return "needs numba-cuda (pip install 'ssdx[cuda]')"
    try:
        ok = bool(cuda.is_available())
    except Exception:  # a driver that fails to load reads as none
        ok = False
    return None if ok else "needs a CUDA GPU that Numba can use (none found)"


def available() -> bool:
    """Whether this back end can run here (:func:`unavailable`)."""
    return unavailable() is None


def device_plan(pf: np.ndarray):
    """The packed plan (:func:`engine_cpu.pack_plan`, configurations first) on the GPU, configurations
    last, copied once per batch."""
    return cuda.to_device(np.ascontiguousarray(pf.T))


def run_chunk(pf_dev, s: State, req: Requests, lay: Layout, keep_latency: bool = False,
              threads: int | None = None) -> tuple[State, Acc, np.ndarray | None]:
    """:func:`ssdx.models.engine.model.run_chunk` on a CUDA GPU for the device plan ``pf_dev``
    (:func:`device_plan`): the state goes to the GPU, one kernel launch runs the chunk, and the state,
    accumulators and latencies come back as numpy arrays (configurations last, the state's dtype);
    ``threads`` per block, default :data:`THREADS`."""
    threads = threads or THREADS
    if lay.channels > MAX_CH:
        raise ValueError(f"{lay.channels} channels exceed the kernel's scratch of {MAX_CH}")
    dt = np.asarray(s.ctrl_free).dtype
    b = pf_dev.shape[1]
    host = (*engine_cpu.pack_state(s), *engine_cpu.new_sums(b, lay.ways * lay.channels),
            engine_cpu.pack_merge(s), engine_cpu.pack_flight(s))
    dev = [cuda.to_device(x) for x in host]
    reqs = [cuda.to_device(x) for x in engine_cpu.request_arrays(req)]
    n_req = np.shape(req.op)[0]
    lat = cuda.device_array((n_req, b) if keep_latency else (1, 1), np.float64)
    wk = cuda.device_array((2, lay.ways * lay.channels, b), np.float64)
    _kernel[(b + threads - 1) // threads, threads](pf_dev, *dev[:-2], *reqs, lat, keep_latency, lay.channels,
                                                   dev[-2], wk, dev[-1])
    state, acc = engine_cpu.unpack(*(x.copy_to_host() for x in dev), dt)
    return state, acc, (lat.copy_to_host().astype(dt) if keep_latency else None)


def ptx(cc: tuple[int, int] = (9, 0)) -> str:
    """The kernel's PTX for compute capability ``cc`` (default ``sm_90``, the H100), compiled here without
    a GPU, for the argument types :func:`run_chunk` passes; needs Numba to find a CUDA toolkit's NVVM
    (``CUDA_HOME``).  Numba compiles device functions for the current device's capability, so while this
    runs it is told ``cc`` (fresh device functions, not the ones :func:`run_chunk` launches)."""
    from types import SimpleNamespace
    from unittest import mock

    from numba import types as nt

    f2, f3 = nt.float64[:, ::1], nt.float64[:, :, ::1]
    sig = (f2, f2, f3, f3, f2, nt.int64[:, :, ::1], f2, nt.int32[:, :, ::1], f2, nt.int64[::1], nt.int64[::1],
           nt.float64[::1], nt.float64[::1], nt.boolean[::1], nt.boolean[::1], nt.int64[::1], nt.float64[::1],
           nt.int64[::1], nt.int64[::1], f2, nt.boolean, nt.int64, f3, f3, f3)
    told = SimpleNamespace(compute_capability=cc)
    with mock.patch("numba.cuda.dispatcher.get_current_device", lambda: told):
        code, _ = cuda.compile_ptx(_kernel_function(_namespace()), nt.void(*sig), cc=cc)
    return code
