"""``bench/fluid.py``'s baselines stay faithful ports of :mod:`ssdx.models.fluid.model` (no timing here)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest

from bench import fluid as bench_fluid

BENCH = Path(__file__).resolve().parents[1] / "bench" / "fluid.py"
STEPS = 64
N_CONFIGS = 20
STRIDE = 23  # coprime with the grid size: the 20 configurations mix every pSLC mode, NAND, workload,
# die count and pre-fill.  (Configurations whose cache ends exactly on a step boundary are excluded by
# this choice: there the float32 engine's rounding decides whether a ~1e5-byte remainder is written
# natively, which moves ``cache_gb`` by a whole step; in float64 the ports match exactly, see below.)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_fluid


@pytest.fixture(scope="module")
def configs(bench: ModuleType):
    index = np.arange(N_CONFIGS) * STRIDE % bench.GRID_SIZE
    return index, bench.build_configs(index)


@pytest.fixture(scope="module")
def ports(bench: ModuleType, configs) -> dict[str, dict[str, np.ndarray]]:
    _, (drive, workload) = configs
    p = bench.flatten(drive, workload)
    return {"numpy_vectorised": bench.numpy_vectorised(p, STEPS),
            "python_loop": bench.python_loop(bench.rows(p), STEPS)}


def test_configs_mix_modes(bench: ModuleType, configs) -> None:
    index, _ = configs
    cols = bench.config_columns(index)
    assert set(cols["drive.slc_mode"]) == set(bench.SLC_MODES)
    assert set(cols["drive.nand"]) == set(bench.NANDS)
    assert set(cols["workload.pattern"]) == {"sequential", "random"}
    assert (cols["workload.burst_gb"] > 0).any() and (cols["workload.burst_gb"] == 0).any()
    assert set(cols["drive.dies_per_channel"]) == set(bench.DIES_PER_CHANNEL)
    assert len(set(cols["workload.prefill_fraction"])) > 1
    bench.build_configs(np.arange(bench.GRID_SIZE))  # the whole grid is valid (build validates)


@pytest.mark.parametrize("baseline", ["numpy_vectorised", "python_loop"])
def test_baseline_matches_jax_float32(bench: ModuleType, configs, ports, baseline: str) -> None:
    _, (drive, workload) = configs
    jx = bench.gather([bench.jax_metrics_fn(STEPS)(drive, workload)], N_CONFIGS)
    diff = bench.max_rel_diff(jx, ports[baseline], bench.CHECK_KEYS)
    assert max(diff.values()) <= 1e-3, diff


@pytest.mark.parametrize("baseline", ["numpy_vectorised", "python_loop"])
def test_baseline_is_exact_port_in_float64(bench: ModuleType, configs, ports, baseline: str) -> None:
    _, (drive, workload) = configs
    ref = bench.jax_metrics_x64(drive, workload, STEPS)
    assert np.asarray(jax.numpy.zeros(1)).dtype == np.float32  # x64 switched back off
    assert set(ref) == set(ports[baseline])
    diff = bench.max_rel_diff(ref, ports[baseline], sorted(ref))
    assert max(diff.values()) <= 1e-9, diff


def test_main_writes_json(bench: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    bench.main(["--configs", "6", "--steps", "16", "--chunk", "4", "--loop-configs", "3",
                "--repeats", "1", "--json", str(path)])
    out = json.loads(path.read_text())
    assert out["sizes"] == {"configs": 6, "steps": 16, "chunk": 4, "chunks": 2, "loop_configs": 3,
                            "numpy_configs": 6, "repeats": 1}
    assert out["baselines"] == ["numpy_vectorised", "python_loop"]
    assert set(out["run_s"]) == {"jax_vmap", "numpy_vectorised", "python_loop"}
    assert {"jax/python_loop", "jax/numpy_vectorised"} <= set(out["ratios"])
    assert out["agreement"]["x64_port_check"]["python_loop"] <= 1e-9
    assert out["machine"]["cpu_count"] >= 1 and out["device"]["platform"]
