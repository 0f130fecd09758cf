"""Shared fixtures: the aldrin preset as columns/pytrees and a helper to run one fill."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: Numba's cache of the tests and of the ``ssdx`` processes they start, beside JAX's compilation cache in
#: pytest's cache directory (``.pytest_cache``), so that a later run on the same checkout loads every compiled
#: kernel instead of compiling it.  Set before anything imports Numba; a directory set by the user wins.
ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".pytest_cache" / "d" / "numba-cache"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ssdx import params, presets  # noqa: E402
from ssdx.models.fluid import model as fluid  # noqa: E402

#: XLA's CPU fusion emitters (MLIR, XLA's default) generate faster code than its older loop emitters but
#: take longer to compile ssdx's kernels, and the suite is compile-bound: most tests compile a scan to run
#: it on a few configurations.  The tests run with the loop emitters (the same HLO, the same semantics;
#: measured on the compile-heaviest test files: 35 % less test time, 45 % less compile time).  Users'
#: runs and the benchmarks in bench/ keep XLA's default.  Not set where the installed XLA does not know
#: the flag (it would abort at start-up), where XLA_FLAGS already names it, or with SSDX_TEST_XLA_DEFAULTS=1.
FAST_COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"


def _compile_for_tests() -> None:
    """Put :data:`FAST_COMPILE_FLAG` into ``XLA_FLAGS`` for this process and the subprocesses (pytest-xdist
    workers, ``ssdx ...`` runs, notebook kernels), after checking in a subprocess that XLA accepts it."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_use_fusion_emitters" in flags or os.environ.get("SSDX_TEST_XLA_DEFAULTS") == "1":
        return
    candidate = f"{flags} {FAST_COMPILE_FLAG}".strip()
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.devices('cpu')"], capture_output=True,
                           env={**os.environ, "XLA_FLAGS": candidate, "JAX_PLATFORMS": "cpu"}, timeout=300)
    if probe.returncode == 0:
        os.environ["XLA_FLAGS"] = candidate


def pytest_configure(config):
    _compile_for_tests()
    _persistent_compilation_cache(config)
    _warm_numba(config)


#: the variable that tells the test processes where the Numba warm-up's lock is
NUMBA_LOCK_ENV = "SSDX_TEST_NUMBA_LOCK"
#: words in a test file's source that say it may run a Numba kernel (the engine's CPU loop, the workload
#: readers) in its process or in an ``ssdx`` subprocess: its first test waits for the warm-up.  A file the
#: words miss compiles a kernel the warm-up has not cached yet itself (slower, the same results).
NUMBA_WORDS = ("engine_cpu", "replay", "mqsim", "test_cli import ssdx", "msr", "lru", "fio", "boot_qd1")


def _warm_numba(config) -> None:
    """On the pytest-xdist controller, compile the Numba kernels once in a subprocess (``numba_warm.py``)
    while the workers start: it holds an exclusive lock on a file until it is done, and a worker's first
    test of a file that may run a kernel takes that lock (shared) first, so that the workers load the
    kernels from Numba's cache instead of each compiling them at once.  Not with ``-n 0``."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None) \
            or os.environ.get(NUMBA_LOCK_ENV):
        return
    lock = Path(os.environ["NUMBA_CACHE_DIR"]) / "warm.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # held by the child (the same open file) until it exits
    subprocess.Popen([sys.executable, str(Path(__file__).with_name("numba_warm.py"))], pass_fds=(fd,),
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(fd)
    os.environ[NUMBA_LOCK_ENV] = str(lock)  # the workers inherit it


@functools.cache
def _may_run_numba(path: Path) -> bool:
    """Whether the test file ``path`` names any of :data:`NUMBA_WORDS` (read once a file)."""
    return any(w in path.read_text(encoding="utf-8") for w in NUMBA_WORDS)


@functools.cache
def _wait_for_numba_warm_up(lock: str) -> None:
    """Block until the warm-up process has exited (its exclusive lock taken shared); once a process."""
    with open(lock) as f:
        fcntl.flock(f, fcntl.LOCK_SH)


def pytest_runtest_setup(item):
    lock = os.environ.get(NUMBA_LOCK_ENV)
    if lock and hasattr(item.config, "workerinput") and _may_run_numba(item.path):
        _wait_for_numba_warm_up(lock)


# (``ssdx ...``, which inherit the environment) compile many of the same kernels; a kernel compiled once
# is loaded from disk by the others and by later runs.  Loaded executables are the compiled binaries
# themselves, so results do not change.  A directory set by the user (JAX_COMPILATION_CACHE_DIR) wins.
def _persistent_compilation_cache(config) -> None:
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    path = cache.mkdir("jax-compilation-cache") if cache is not None \
        else Path(tempfile.gettempdir()) / f"ssdx-tests-jax-cache-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    settings = {"jax_compilation_cache_dir": str(path), "jax_persistent_cache_min_compile_time_secs": 0.2,
                "jax_persistent_cache_min_entry_size_bytes": -1}
    try:  # with filelock, JAX locks the directory (processes write and read it concurrently) and bounds it
        import filelock  # noqa: F401
        settings["jax_compilation_cache_max_size"] = 4 * 2**30
    except ImportError:  # pragma: no cover
        pass
    for name, value in settings.items():
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)  # for the subprocesses


def compose_config(*overrides: str) -> dict:
    """The configuration ``ssdx OVERRIDES`` composes (plain containers, interpolations resolved), with the
    CLI's structured schema and sweeps registered, as the command line composes it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from ssdx.cli import schema
    from ssdx.cli.main import register_sweeps
    from ssdx.paths import conf_dir

    schema.register()
    register_sweeps()
    GlobalHydra.instance().clear()  # a composition left open elsewhere would refuse this one
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


def x64():
    """Context manager enabling float64 in JAX (API moved between versions)."""
    fn = getattr(jax, "enable_x64", None)
    if fn is None:  # pragma: no cover - older JAX
        from jax.experimental import enable_x64 as fn
    return fn(True) if fn is not None else contextlib.nullcontext()


def padded_layout(lay, slots: int = 32, map_sets: int = 64):
    """``lay`` (an engine ``Layout``) widened so that the tests of a file share one compiled scan: the
    suspension, LRU, write-back, eager, held-read and program-counting mechanisms on, every read gap kept,
    and at least ``slots`` queue slots and ``map_sets`` mapping-cache sets.  A configuration that does not
    use a mechanism gets the same results with it on (``test_engine_mechanisms.py``,
    ``test_a_mechanism_no_configuration_uses_is_left_out_exactly``), so the tests' expectations hold and
    the scan is compiled once per shape instead of once per layout."""
    from ssdx.models.engine import params as engine_params

    return lay._replace(slots=max(lay.slots, slots), map_sets=max(lay.map_sets, map_sets), suspension=True,
                        map_lru=True, map_writeback=True, eager=True, hold_read=True, bp_programs=True,
                        read_gaps=engine_params.READ_GAPS)


def build_one(drive: dict | None = None, workload: dict | None = None, dtype=np.float32, **drive_over):
    d = presets.drive("aldrin_pro_2tb", **drive_over) if drive is None else drive
    w = presets.workload("seq_fill") if workload is None else workload
    D, W = params.build(params.columns_from_config(d, w), dtype=dtype)
    return params.index(D, 0), params.index(W, 0)


_sim = jax.jit(fluid.simulate, static_argnums=2)
_met = jax.jit(fluid.metrics, static_argnums=2)


def simulate(drive, workload, n_steps: int = 256):
    return jax.tree_util.tree_map(np.asarray, _sim(drive, workload, n_steps))


def metrics(drive, workload, n_steps: int = 256):
    return {k: float(v) for k, v in _met(drive, workload, n_steps).items()}


@pytest.fixture
def aldrin():
    return build_one()


def mixed_sweep_cols(dies=(2, 4)):
    """Columns of a small fluid sweep: 4 cache modes x ``dies`` x {no idle gaps, 20 GB bursts with 30 s
    idle} x 3 random pre-fills, so configurations fall in both static-flag groups of the runner."""
    from ssdx.sweep.job import sweep_columns

    base = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
            "model": {"n_steps": 64}, "precision": "float32"}
    sweep = {"space": {"grid": {"drive.slc_mode": ["dynamic", "static", "pure_slc", "pure_native"],
                                "drive.dies_per_channel": list(dies)},
                       "list": [{"workload.burst_gb": 0.0}, {"workload.burst_gb": 20.0}],
                       "random": {"n": 3, "seed": 1,
                                  "params": {"workload.prefill_fraction": {"low": 0.0, "high": 0.8}}}},
             "base": {"drive.user_capacity_gb": 400.0, "drive.static_slc_gb": 16.0, "workload.idle_s": 30.0}}
    cols, dropped, n_def = sweep_columns(sweep, base)
    assert n_def == 24 * len(dies) and not dropped
    return cols


#: the test files of the fast tier that take longest, longest first (measured on the 2-core machine: mostly
#: compiles; bench/results/test_durations.json), those that run no Numba kernel ahead of those that wait for
#: the warm-up (:func:`_warm_numba`).  The suite runs them first, so that the pytest-xdist workers, which
#: take whole files in collection order (``--dist loadfile --no-loadscope-reorder``), are not left waiting on
#: one long file at the end; the other files follow in their usual order.  A name that is no longer a test
#: file is ignored.
LONGEST_FIRST = ("test_sweep_device.py", "test_heap.py", "test_engine_mechanisms.py", "test_engine_cpu.py",
                 "test_fit_fill.py", "test_cli_hybrid.py", "test_cli_thermal.py", "test_gc.py", "test_cli.py",
                 "test_cli_engine.py", "test_hybrid.py", "test_back_pressure.py", "test_sweep_keep.py",
                 "test_resume.py", "test_model_contract.py", "test_cli_gc.py", "test_mqsim.py",
                 "test_sweep_file.py", "test_wandb.py", "test_input_errors.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's order is kept
