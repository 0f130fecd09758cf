"""``bench/thermal.py`` runs end to end at a tiny size, and its baselines are faithful ports of
:mod:`ssdx.models.thermal.coupled` (no timing assertions)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest

from bench import thermal as bench_thermal

BENCH = Path(__file__).resolve().parents[1] / "bench" / "thermal.py"
N_CONFIGS, STEPS = 64, 60
PORT_CONFIGS, STEPS_PORT = 24, 300  # long enough for throttling, so the HCTM branches are exercised


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_thermal


@pytest.fixture(scope="module")
def result(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = tmp_path_factory.mktemp("bench") / "thermal.json"
    bench.main(["--configs", str(N_CONFIGS), "--steps", str(STEPS), "--chunk", "40", "--loop-configs", "6",
                "--step-loop-configs", "2", "--repeats", "2", "--baseline-repeats", "1",
                "--sizes", "16,32", "--out", str(path)])
    return json.loads(path.read_text())


def _positive(x: float) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


@pytest.mark.validation
def test_json_fields(result: dict) -> None:
    assert result["sizes"] == {"configs": N_CONFIGS, "steps": STEPS, "dt_s": 1.0, "chunk": 40, "chunks": 2,
                               "loop_configs": 6, "step_loop_configs": 2, "numpy_configs": N_CONFIGS,
                               "repeats": 2, "baseline_repeats": 1}
    assert result["machine"]["cpu_count"] >= 1 and result["device"]["platform"]
    assert result["baselines"] == ["numpy_vectorised", "python_loop", "jax_step_loop"]
    assert result["baseline"] in result["baselines"]
    engines = {"jax_vmap", *result["baselines"]}
    assert set(result["run_s"]) == engines == set(result["config_steps_per_s"]) == set(result["rows"])
    assert set(result["ratios"]) == {f"jax/{b}" for b in result["baselines"]}
    assert result["speedup_vs_baseline"] == result["ratios"][f"jax/{result['baseline']}"]
    assert _positive(result["compile_s"]) and result["compile"]["compile_s"] == result["compile_s"]
    for name in engines:
        assert _positive(result["run_s"][name]) and _positive(result["config_steps_per_s"][name])
        assert result["config_steps_per_s"][name] == pytest.approx(N_CONFIGS * STEPS / result["run_s"][name])
    for name in result["baselines"]:
        assert _positive(result["ratios"][f"jax/{name}"])
    jx = result["rows"]["jax_vmap"]
    assert len(jx["times_s"]) == 2 and jx["run_s"] == pytest.approx(float(np.median(jx["times_s"])))
    rows = result["rows"]
    assert rows["python_loop"]["extrapolated"] and not rows["numpy_vectorised"]["extrapolated"]
    assert any("python_loop" in note for note in result["notes"])


@pytest.mark.validation
def test_ports_agree_in_the_run(result: dict) -> None:
    ag = result["agreement"]
    assert ag["tolerance"] == {"written_rel": 1e-3, "temp_abs_k": 0.05,
                               "keys": ["written_gb", "max_composite_k", "max_nand_k"]}
    for name in result["baselines"]:
        assert ag[name]["ok"], ag[name]
        assert ag[name]["written_max_rel_diff"] <= 1e-3
        assert max(ag[name]["temp_max_abs_diff_k"].values()) <= 0.05
    assert ag["x64_port_check"]["ok"]
    assert ag["x64_port_check"]["numpy_vectorised"] <= 1e-9 and ag["x64_port_check"]["python_loop"] <= 1e-9


@pytest.mark.validation
def test_sizes_list(result: dict) -> None:
    sw = result["sizes_sweep"]
    assert sw["mode"] == "list" and [r["configs"] for r in sw["rows"]] == [16, 32]
    for r in sw["rows"]:
        assert r["ok"] and _positive(r["config_steps_per_s"]) and _positive(r["compile_s"])
    assert sw["largest_ran"]["configs"] == 32


@pytest.mark.validation
def test_sizes_double_stops_at_the_limit(bench: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "sizes.json"
    out = bench.main(["--sizes-only", "--sizes", "double", "--size-start", "8", "--max-configs", "32",
                      "--steps", "20", "--repeats", "1", "--out", str(path)])
    assert json.loads(path.read_text())["sizes_sweep"] == json.loads(json.dumps(out["sizes_sweep"]))
    sw = out["sizes_sweep"]
    assert [r["configs"] for r in sw["rows"]] == [8, 16, 32]
    assert sw["largest_ran"]["configs"] == 32 and "max-configs" in sw["stop"]
    assert "run_s" not in out  # --sizes-only


def test_configs_vary_every_axis(bench: ModuleType) -> None:
    cols = bench.config_columns(np.arange(bench.GRID_SIZE), steps=STEPS)
    assert set(cols["drive.nand"]) == {"tlc", "ymtc_cdt1b"}
    assert set(cols["drive.slc_mode"]) == {"pure_native", "dynamic"}
    assert set(cols["thermal.cooling"]) == set(bench.COOLINGS)
    assert set(cols["power.policy"]) == set(bench.POLICIES)
    assert set(cols["power.hysteresis_k"]) == set(bench.HYSTERESIS_K)
    assert set(cols["workload.pattern"]) == {"sequential", "random"}
    assert len(set(zip(cols["thermal.tmt1_k"], cols["thermal.tmt2_k"]))) == len(bench.TMT_C)
    amb = cols["thermal.ambient_c"]
    assert amb.min() >= 15.0 and amb.max() <= 45.0 and len(np.unique(amb)) > bench.GRID_SIZE // 2
    (drive, *_), n = bench.build_configs(np.arange(bench.GRID_SIZE), steps=STEPS)  # all valid
    assert n == STEPS and np.asarray(drive.user_bytes).shape == (bench.GRID_SIZE,)


@pytest.fixture(scope="module")
def port_case(bench: ModuleType):
    index = np.arange(PORT_CONFIGS) * 37 % bench.GRID_SIZE  # mixes drives, coolings, TMTs, policies
    trees, n = bench.build_configs(index, steps=STEPS_PORT)
    k = bench.constants(*trees)
    jx = bench.gather([bench.jax_metrics_fn(n)(*trees)], PORT_CONFIGS)
    ports = {"numpy_vectorised": bench.numpy_vectorised(k, n),
             "python_loop": bench.python_loop(bench.scalar_configs(k), k, n)}
    return trees, n, k, jx, ports


def test_port_case_throttles(port_case) -> None:
    *_, jx, _ = port_case
    assert (jx["throttled_s"] > 0).any() and (jx["throttled_s"] == 0).any()
    assert (jx["time_tmt2_s"] > 0).any()


@pytest.mark.parametrize("baseline", ["numpy_vectorised", "python_loop"])
def test_port_matches_jax_float32(bench: ModuleType, port_case, baseline: str) -> None:
    *_, jx, ports = port_case
    ag = bench.agreement(jx, ports[baseline], np.arange(PORT_CONFIGS))
    assert ag["ok"], ag


@pytest.mark.parametrize("baseline", ["numpy_vectorised", "python_loop"])
def test_port_is_exact_in_float64(bench: ModuleType, port_case, baseline: str) -> None:
    trees, n, _, _, ports = port_case
    ref = bench.jax_metrics_x64(trees, n)
    assert np.asarray(jax.numpy.zeros(1)).dtype == np.float32  # x64 switched back off
    assert set(ref) == set(ports[baseline])
    worst = max(float(np.max(bench.rel_diff(ref[key], ports[baseline][key]))) for key in ref)
    assert worst <= 1e-9


def test_step_loop_matches(bench: ModuleType, port_case) -> None:
    trees, n, k, jx, _ = port_case
    sub = bench.take_tree(trees, slice(0, 2))
    res = bench.jax_step_loop(sub, n, bench.take_k(k, slice(0, 2)))
    assert bench.agreement({key: v[:2] for key, v in jx.items()}, res, np.arange(2))["ok"]


def test_outliers_are_rerun_in_float64(bench: ModuleType, port_case) -> None:
    trees, n, _, jx, ports = port_case
    broken = {key: v.copy() for key, v in ports["numpy_vectorised"].items()}
    broken["written_gb"][3] *= 1.01  # a port that is wrong on one configuration
    agree = {"numpy_vectorised": bench.agreement(jx, broken, np.arange(PORT_CONFIGS))}
    assert agree["numpy_vectorised"]["outside_tolerance_configs"] == [3]
    bench.explain_outliers(agree, trees, n, jx, {"numpy_vectorised": broken})
    ex = agree["numpy_vectorised"]["outside_tolerance_vs_x64"]
    assert ex["configs"] == [3] and not ex["explained_by_float32_rounding"]
    assert ex["port_max_rel_diff_all_metrics"] > 1e-3


def test_is_oom(bench: ModuleType) -> None:
    assert bench.is_oom(RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate"))
    assert not bench.is_oom(ValueError("shapes do not match"))
