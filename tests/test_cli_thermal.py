"""The thermal CLI contract and the TMT sweep/optimiser, run as a user would."""

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf
from test_cli import ssdx

from ssdx import api, catalog, presets
from ssdx.models.thermal import console
from ssdx.models.thermal import params as thermal_params
from ssdx.paths import sweeps_dir
from ssdx.sweep import job as sweep_job
from ssdx.units import ZERO_C_IN_K

PNG = b"\x89PNG\r\n\x1a\n"


def _summary(path):
    return json.loads((path / "summary.json").read_text())


def test_sn8e_thermal_bare_and_heatsink(tmp_path):
    bare, hs = tmp_path / "bare", tmp_path / "hs"
    r = ssdx("experiment=sn8e_thermal", f"hydra.run.dir={bare}")
    assert r.returncode == 0, r.stderr
    r2 = ssdx("experiment=sn8e_thermal", "thermal=heatsink", f"hydra.run.dir={hs}")
    assert r2.returncode == 0, r2.stderr
    b, h = _summary(bare), _summary(hs)
    for s in (b, h):
        assert set(s) >= {"max_composite_k", "smart", "unthrottled_mean_mb_s", "throttled_mean_mb_s"}
        assert set(s["smart"]) >= {"tmt1_transitions", "tmt2_transitions", "time_tmt1_s", "time_tmt2_s"}
        for name in ("thermal.png",):
            assert (bare / name).read_bytes()[:8] == PNG
    # KIOXIA thermal article: bare reaches TMT1 = 80 C, throttles ~100 MB/s, recovers at ~75 C and cycles.
    assert b["tmt1_k"] == 353 and b["tmt2_k"] == 358
    assert b["max_composite_k"] >= 353 - 0.1 and b["max_composite_k"] < 358
    assert b["smart"]["tmt1_transitions"] >= 2 and b["smart"]["tmt2_transitions"] == 0
    assert 50 <= b["unthrottled_mean_mb_s"] - b["throttled_mean_mb_s"] <= 150
    assert all(abs(c - 75.0) < 1.0 for c in b["release_composite_c"])
    # with a heatsink, the same load for the same duration never reaches 80 C nor throttles
    assert h["max_composite_k"] < 353 and h["smart"]["tmt1_transitions"] == 0
    assert h["smart"]["time_tmt1_s"] == 0 and h["throttled_mean_mb_s"] is None
    assert b["max_nand_c"] - h["max_nand_c"] > 10.0
    assert "never throttled" in r2.stdout and "nan" not in r2.stdout
    assert f'throttled {b["throttled_mean_mb_s"]:.0f} MB/s' in r.stdout and "never throttled" not in r.stdout
    assert b["nvme_command"] == "nvme set-feature /dev/nvme0 -f 0x10 --value=0x01610166"
    assert b["nvme_hctm_command"] == "nvme feat hctm /dev/nvme0 --tmt1=353 --tmt2=358"
    csv = np.loadtxt(bare / "thermal.csv", delimiter=",", skiprows=1)
    assert csv.shape == (1200, 11)
    assert csv[:, 2].max() + ZERO_C_IN_K == pytest.approx(b["max_composite_k"], abs=0.5)


@pytest.mark.parametrize("throttled", [None, float("nan")])
def test_a_run_that_never_throttles_says_so_not_nan(throttled):
    s = {"drive": "d", "cooling": "heatsink", "ambient_c": 25.0, "tmt1_k": 353, "tmt2_k": 358,
         "max_composite_k": 340.0, "max_composite_c": 66.85, "written_gb": 100.0,
         "smart": {"tmt1_transitions": 0, "tmt2_transitions": 0, "time_tmt1_s": 0, "time_tmt2_s": 0},
         "unthrottled_mean_mb_s": 3000.0, "throttled_mean_mb_s": throttled}
    line = console.thermal(s, Path("out"))[1]
    assert line.endswith("unthrottled 3000 MB/s, never throttled") and "nan" not in line
    line = console.thermal({**s, "throttled_mean_mb_s": 1234.4}, Path("out"))[1]
    assert line.endswith("unthrottled 3000 MB/s, throttled 1234 MB/s")


def test_tmt2_not_above_tmt1_exits_naming_fields(tmp_path):
    r = ssdx("experiment=sn8e_thermal", "thermal.tmt1_k=358", "thermal.tmt2_k=353",
             f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2
    assert "thermal.tmt2_k" in r.stderr and "thermal.tmt1_k" in r.stderr
    assert not (tmp_path / "summary.json").exists()
    r = ssdx("experiment=sn8e_thermal", "thermal.tmt1_k=500", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "thermal.tmt1_k" in r.stderr and "MXTMT" in r.stderr


def test_a_fractional_tmt_exits_2_naming_it(tmp_path):
    """Set Features 0x10 takes whole Kelvin: 343.5 K is refused, not simulated and then sent as 344 K."""
    r = ssdx("experiment=sn8e_thermal", "thermal.tmt1_k=343.5", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2, r.stderr
    assert "field 'thermal.tmt1_k' = 343.5" in r.stderr and "whole Kelvin" in r.stderr
    assert not (tmp_path / "summary.json").exists()


def test_tmt_optimize_contract(tmp_path):
    r = ssdx("experiment=tmt_optimize", "quiet=true", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = _summary(tmp_path)
    assert set(s) >= {"tmt1_k", "tmt2_k", "objective", "grid_best_objective", "evaluations",
                      "grid_evaluations", "nvme_command"}
    assert s["objective"] >= 0.99 * s["grid_best_objective"]
    assert s["max_composite_k"] <= s["temp_limit_k"]
    assert s["evaluations"] * 5 < s["grid_evaluations"]
    assert s["tmt2_k"] > s["tmt1_k"]
    value = (int(s["tmt1_k"]) << 16) | int(s["tmt2_k"])
    assert s["nvme_command"].endswith(f"--value=0x{value:08x}")
    assert s["nvme_hctm_command"].endswith(f"--tmt1={int(s['tmt1_k'])} --tmt2={int(s['tmt2_k'])}")
    assert (tmp_path / "tmt_landscape.png").read_bytes()[:8] == PNG


def _sweep_base(duration_s: float) -> dict:
    """The composed config a thermal sweep runs on: a bare drive at 25 deg C, no thresholds set."""
    return {"drive": presets.drive("aldrin_pro_2tb"), "workload": presets.workload("seq_fill"),
            "thermal": {"cooling": "bare", "ambient_c": 25.0, "tmt1_k": 0, "tmt2_k": 0, "dt_s": 1.0,
                        "duration_s": duration_s},
            "model": {"n_steps": 8}, "precision": "float32"}


def test_tmt_grid_sweep_small(tmp_path):
    """The tmt_grid definition at reduced size: drops TMT2 <= TMT1, best per group meets the limit."""
    sweep = OmegaConf.to_container(OmegaConf.load(sweeps_dir() / "tmt_grid.yaml"))
    grid = sweep["space"]["grid"]
    n_full = np.prod([len(v) for v in grid.values()])
    assert n_full >= 10_000
    grid["thermal.tmt1_k"] = [345, 350, 355]
    grid["thermal.tmt2_k"] = [0, 350, 358]
    grid["power.hysteresis_k"] = [5.0]
    grid["thermal.ambient_c"] = [25.0, 45.0]
    s = sweep_job.run_sweep(sweep, _sweep_base(duration_s=120.0), tmp_path, progress=False)
    df = pq.read_table(tmp_path / "results.parquet").to_pandas()
    # 3 x 3 x 2 policies x 3 coolings x 2 ambients, less the TMT2 <= TMT1 pairs (350/350, 355/350)
    assert s["n_defined"] == 108 and len(df) == 108 - 2 * 12
    assert ((df["thermal.tmt2_k"] == 0) | (df["thermal.tmt2_k"] > df["thermal.tmt1_k"])).all()
    assert set(df["drive.nand"]) == {"tlc"}  # the sweep's own drive preset (sn8e_1920)
    for row in s["best"]:
        assert row["max_composite_k"] <= 351.15
    assert len(s["best"]) == 6


def test_a_thermal_sweep_without_a_report_ranks_by_the_data_written(tmp_path):
    """No ``report`` block: a thermal sweep has no ``time_s``; its report ranks by ``written_gb``, most
    first (before, the fluid default was refused)."""
    sweep = {"name": "bare_tmt", "model": "thermal", "drive": "sn8e_1920", "base": {},
             "space": {"grid": {"thermal.tmt1_k": [340, 350, 360], "thermal.cooling": ["bare"]}}}
    s = sweep_job.run_sweep(sweep, _sweep_base(duration_s=400.0), tmp_path, progress=False)
    df = pq.read_table(tmp_path / "results.parquet").to_pandas()
    assert s["best_by"]["metric"] == "written_gb" and s["best_by"]["ascending"] is False
    assert s["best"][0]["written_gb"] == df["written_gb"].max()
    assert df["written_gb"].nunique() > 1  # the thresholds matter in this run: the ranking is not a tie
    assert {"written_gb", "tmt1_k", "ties"} <= set(s["_table"].split("\n")[0].split())  # every column


def test_harsh_throttle_experiment_cuts_to_a_tenth(tmp_path):
    """KIOXIA thermal article: "another product throttled so hard performance fell to nearly 1/10"
    (SSD A preset)."""
    r = ssdx("experiment=harsh_throttle", "quiet=true", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = _summary(tmp_path)
    assert s["policy"] == "ssd_a" and s["smart"]["tmt1_transitions"] >= 2
    assert s["throttled_mean_mb_s"] / s["unthrottled_mean_mb_s"] == pytest.approx(0.1, rel=0.2)
    # SSD A releases "well down": 10 K of hysteresis below TMT1 = 80 C
    assert all(abs(c - 70.0) < 1.0 for c in s["release_composite_c"])


def _measured_series(path, truth: dict) -> None:
    """A 'measurement': the coupled model of sn8e_1920 (bare, TMT 80/85 C) with the case RC values set to
    ``truth``, composite read as nvme-cli prints it (integer Kelvin), throughput and TMT1 time counters."""
    from ssdx import api
    from ssdx.models.thermal import fit_rc, nvme
    (d, w, p, th), n = api.thermal_one("sn8e_1920", "seq_fill", "bare", tmt1_k=353.0, tmt2_k=358.0,
                                       duration_s=900.0)
    out, _ = fit_rc.simulate_with_powers(d, w, p, fit_rc.with_params(th, truth), n)
    noisy = out.composite_k + np.random.default_rng(3).normal(0.0, 0.3, n)
    in_light = np.concatenate([[0.0], np.cumsum(out.level == 1)[:-1]])
    nvme.write_jsonl(path, nvme.Series(time_s=out.time_s - 1.0, composite_k=np.round(noisy),
                                       throughput_mb_s=out.speed / 1e6,
                                       counters={"thm_temp1_total_time": in_light,
                                                 "thm_temp2_total_time": np.zeros(n)}))


def test_fit_rc_contract_recovers_and_its_overrides_apply(tmp_path):
    truth = {"g_case_amb": 0.09, "c_case": 6.5}  # the bare preset has 0.075 W/K and 5.0 J/K
    series = tmp_path / "run.jsonl"
    _measured_series(series, truth)
    out = tmp_path / "fit"
    r = ssdx("experiment=fit_rc", f"fit.series={series}", "thermal.tmt1_k=353", "thermal.tmt2_k=358",
             f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    s = _summary(out)
    for k, v in truth.items():
        assert s["fitted"][k] == pytest.approx(v, rel=0.05), (k, s["fitted"])
    assert s["rmse_k"] < 0.6 < 2.0 < s["preset_rmse_k"]  # noise 0.3 K plus integer rounding
    assert (out / "fit_rc.png").read_bytes()[:8] == PNG
    assert s["overrides"] in r.stdout
    # the printed overrides are accepted and change the model: the fitted drive runs cooler than the preset
    cols = api.thermal_columns(presets.drive("sn8e_1920"), presets.workload("seq_fill"),
                               api.thermal_preset("bare", rc=s["fitted"]))
    _, th = thermal_params.build(cols)
    assert float(th.g_case_amb[0]) == pytest.approx(s["fitted"]["g_case_amb"], rel=1e-6)
    assert float(th.g_nand_case[0]) == pytest.approx(catalog.cooling("bare").g_nand_case)  # others kept
    r = ssdx("experiment=sn8e_thermal", *s["overrides"].split(), "quiet=true",
             f"hydra.run.dir={tmp_path / 'a'}")
    assert r.returncode == 0, r.stderr
    assert _summary(tmp_path / "a")["max_composite_k"] < 353.0  # g = 0.09 W/K: the plateau is below 80 C


@pytest.mark.parametrize("override,field", [("thermal.rc.g_case_amb=-1", "thermal.rc.g_case_amb"),
                                            ("thermal.rc.c_case=0", "thermal.rc.c_case")])
def test_rc_override_rules(tmp_path, override, field):
    r = ssdx("experiment=sn8e_thermal", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and field in r.stderr and "cooling preset" in r.stderr


def test_fit_rc_bad_series_names_file_and_line(tmp_path):
    r = ssdx("experiment=fit_rc", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "fit.series" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"time_s": 0, "temperature": 300, "throughput_mb_s": 1}\n'
                   '{"time_s": 1, "temperature": }\n')
    r = ssdx("experiment=fit_rc", f"fit.series={bad}", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and f"{bad}, line 2" in r.stderr
