"""The CUDA back end of the request-level engine (``ssdx.models.engine.cuda``): the kernel, run thread by
thread by Numba's CUDA simulator, gives the CPU back end's results exactly; its PTX compiles for the
H100; the back end is refused with a clear error without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ssdx.models.engine import backends as engine_backends
from ssdx.models.engine import params as engine_params
from ssdx.params import ConfigError

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> dict[str, np.ndarray]:
    out = tmp_path_factory.mktemp("cudasim") / "res.npz"
    env = os.environ | {"NUMBA_ENABLE_CUDASIM": "1", "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu",
                        "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent),
                                                       os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(HERE / "cudasim_run.py"), str(out)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(np.load(out))


def _pairs(res: dict, prefix: str):
    keys = sorted(k.removeprefix("cpu/") for k in res if k.startswith(f"cpu/{prefix}"))
    assert keys and all(f"cuda/{k}" in res for k in keys)
    return [(k, res[f"cpu/{k}"], res[f"cuda/{k}"]) for k in keys]


def test_kernel_replays_like_the_cpu_loop(simulated):
    assert (str(simulated["cpu/backend"]), str(simulated["cuda/backend"])) == ("cpu", "cuda")
    lat = simulated["cpu/latencies"]
    assert lat.shape == (8, 260) and np.isfinite(lat).all() and (lat > 0).all()
    np.testing.assert_allclose(simulated["cuda/latencies"], lat, rtol=1e-12)
    for k, a, b in _pairs(simulated, "sums/"):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=k)
    np.testing.assert_array_equal(simulated["cuda/sums/hist"], simulated["cpu/sums/hist"])
    assert (simulated["cpu/sums/map_misses"][1::4] > 0).all()  # the DRAM-less drives missed


def test_kernel_chunk_state_matches_field_by_field(simulated):
    # one chunk of the raw functions on drives that erase and fold, launched as blocks of 3 threads
    # (a partial last block), every state field and accumulator compared
    pairs = _pairs(simulated, "chunk/")
    assert len(pairs) == 25 + 3 + 4 + 17 + 1  # state (die_r as 3, pe as 5), accumulators, latencies
    for k, a, b in pairs:
        assert a.shape == b.shape and a.dtype == b.dtype, k
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=k)
    mode = simulated["cpu/chunk/acc/mode_bytes"]
    assert (mode[0] > 0).any() and (mode[1] > 0).any() and (mode[2] > 0).all()  # pSLC, direct, folding
    assert (simulated["cpu/chunk/acc/erases"] > 0).all()


def test_kernel_suspends_reads_and_caches_the_map_like_the_cpu_loop(simulated):
    # engine.suspension = erase with MQSim's suspend overheads, engine.map_cache = lru: the kernel shares
    # the loop's code
    pairs = _pairs(simulated, "suspension/")
    assert len(pairs) == 1 + 6 + 5 + 3
    assert simulated["cpu/suspension/suspensions"][1].sum() > 0  # reads suspended erases
    assert (simulated["cpu/suspension/map_writebacks"] > 0).all()  # dirty translation pages written back
    for k, a, b in pairs:
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=k)


def test_kernel_takes_the_entry_caches_events_like_the_cpu_loop(simulated):
    pairs = _pairs(simulated, "entries/")
    assert len(pairs) == 5
    assert (simulated["cpu/entries/map_writebacks"] > 0).all()  # 2 KB of entries: evictions write back
    for k, a, b in pairs:
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=k)


def test_kernel_keeps_rewrites_and_merges_planes_like_the_cpu_loop(simulated):
    # engine.rewrite_window_s and engine.plane_merge (MQSim's write-back) on 4,000 pages, open loop, the
    # back pressure fluid, counted in programs and page by page
    pairs = _pairs(simulated, "merge/")
    assert len(pairs) == 5
    pages, programs = simulated["cpu/merge/prog_pages"], simulated["cpu/merge/programs"]
    assert (programs < pages).all()  # programs of two planes joined
    lat = simulated["cpu/merge/latencies"]
    assert not np.allclose(lat[:, 0], lat[:, 1])  # the back pressures differ
    assert not np.allclose(lat[:, 1], lat[:, 2])
    for k, a, b in pairs:
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=k)


@pytest.mark.validation
def test_kernel_compiles_to_ptx_for_the_h100():
    # no GPU needed: the dev extra installs numba-cuda with CUDA 13's NVVM, so a change to the loop shared
    # with the CPU back end that CUDA cannot compile fails here
    from ssdx.models.engine import cuda as engine_cuda
    code = engine_cuda.ptx((9, 0))
    assert ".target sm_90" in code and ".entry" in code
    assert ".local" in code  # the per-thread channel scratch


def test_cuda_backend_refused_without_a_gpu(monkeypatch):
    from ssdx.models.engine import cuda as engine_cuda
    monkeypatch.setattr(engine_cuda, "unavailable", lambda: "needs a CUDA GPU that Numba can use")
    with pytest.raises(ConfigError, match="engine.backend.*CUDA GPU.*use auto, jax or cpu"):
        engine_backends.select({"backend": "cuda"})
    if not engine_cuda.available():  # this machine: the real check refuses too, naming what is missing
        monkeypatch.undo()
        with pytest.raises(ConfigError, match="engine.backend.*needs"):
            engine_backends.select({"backend": "cuda"})
    assert "cuda" in engine_params.BACKENDS
    assert engine_backends.select({"backend": "auto"}) in ("cpu", "jax")  # auto never picks cuda


def test_a_cuda_target_that_fails_to_import_is_refused_not_a_crash(monkeypatch):
    """A ``numba-cuda`` built for another NumPy raises AttributeError on import (seen on a GPU machine's
    image with NumPy 2.5): ``engine.backend=cuda`` is then refused with the reason, exit 2, and the
    benchmark leaves out its cuda row instead of dying."""
    import builtins

    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "ssdx.models.engine" and args and args[2] and "cuda" in args[2]:
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    why = engine_backends.cuda_unavailable()
    assert why is not None and "does not import" in why and "row_stack" in why
    with pytest.raises(ConfigError, match="engine.backend.*does not import.*use auto, jax or cpu"):
        engine_backends.select({"backend": "cuda"})
