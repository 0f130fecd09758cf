"""RC-parameter fit (ssdx.models.thermal.fit_rc): forward model, powers, and recovery from a noisy series.

Synthetic measurement: sn8e_1920 on the bare preset with TMT1/TMT2 = 353.15/358.15 K (KIOXIA thermal
article), so the composite cycles through throttling (rich excitation), then cools once the fill ends
(~950 s); 1,200 s at 1 s, 0.3 K Gaussian noise.  The truth is the preset; the fit starts 20-40 % away from it
in every fitted parameter and must land within 5 %.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from ssdx import api
from ssdx.models.thermal import fit_rc, nvme

NOISE_K = 0.3
TRUTH = {"g_case_amb": 0.075, "c_case": 5.0}  # ssdx.catalog.COOLING["bare"]
STARTS = ({"g_case_amb": 0.075 * 1.3, "c_case": 5.0 * 0.7},
          {"g_case_amb": 0.075 * 0.75, "c_case": 5.0 * 1.35})


@pytest.fixture(scope="module")
def run():
    (drive, workload, power, th), n = api.thermal_one("sn8e_1920", "seq_fill", "bare", tmt1_k=353.0,
                                                      tmt2_k=358.0, duration_s=1200.0)
    truth = fit_rc.with_params(th, TRUTH)
    assert all(float(getattr(th, k)) == pytest.approx(v) for k, v in TRUTH.items())
    out, p = fit_rc.simulate_with_powers(drive, workload, power, truth, n)
    noisy = out.composite_k + np.random.default_rng(0).normal(0.0, NOISE_K, n)
    return dict(drive=drive, power=power, truth=truth, out=out, p=p, noisy=noisy, n=n)


def test_forward_model_reproduces_the_coupled_model(run):
    out, p, power = run["out"], run["p"], run["power"]
    assert p.shape == (run["n"], 2)
    drive, workload, power_, th = api.thermal_one("sn8e_1920", "seq_fill", "bare", tmt1_k=353.0,
                                                  tmt2_k=358.0, duration_s=1200.0)[0]
    np.testing.assert_array_equal(fit_rc.power_trace(drive, workload, power_, run["truth"], run["n"]), p)
    np.testing.assert_allclose(p.sum(axis=1), out.power_w, rtol=1e-5)
    assert np.abs(np.diff(out.level)).sum() >= 8 and out.writing[-1] == 0  # throttle cycles, then cooling
    trace = fit_rc.composite_trace(run["truth"], p, power.sensor_ctrl_weight, jnp.stack([power.idle_w, 0.0]))
    np.testing.assert_allclose(np.asarray(trace), out.composite_k, atol=1e-3)


def test_powers_from_throughput_match_the_model(run):
    out, p, power = run["out"], run["p"], run["power"]
    frac = np.choose(out.level.astype(int), [1.0, float(power.light_ctrl), float(power.heavy_ctrl)])
    q = fit_rc.powers_from_throughput(run["drive"], power, out.speed, ctrl_fraction=frac)
    # sn8e_1920 writes direct-native throughout; only the last writing step is partly idle (busy < 1)
    last = int(np.flatnonzero(out.writing > 0)[-1])
    keep = np.arange(run["n"]) != last
    np.testing.assert_allclose(q[keep], p[keep], rtol=1e-5, atol=1e-5)


def test_fit_recovers_case_parameters_within_5_percent(run):
    power = run["power"]
    start = fit_rc.with_params(run["truth"], STARTS[0])
    res = fit_rc.fit(start, run["p"], run["noisy"], power.sensor_ctrl_weight,
                     initial_power_w=jnp.stack([power.idle_w, 0.0]))
    assert set(res.params) == set(fit_rc.DEFAULT_FIELDS) == set(TRUTH)
    for k, v in TRUTH.items():
        assert abs(res.initial[k] / v - 1.0) >= 0.2  # started 20-40 % away
        assert abs(res.params[k] / v - 1.0) < 0.05, (k, res.params[k], v)
    assert res.iterations == res.adam_iterations + res.lbfgs_iterations
    assert len(res.loss_history) == res.iterations + 1
    assert res.loss_history[-1] < 1e-2 * res.loss_history[0]
    assert 0.8 * NOISE_K < res.rmse_k < 1.2 * NOISE_K  # residual is the noise
    assert float(res.thermal.g_case_amb) == pytest.approx(res.params["g_case_amb"])
    assert float(res.thermal.g_nand_case) == float(run["truth"].g_nand_case)  # others kept


def test_fit_series_from_jsonl_end_to_end(run, tmp_path):
    """Model -> nvme-style JSON lines (throughput, TMT counters) -> read -> fit from throughput alone."""
    out, dt = run["out"], 1.0
    t = out.time_s - dt  # composite_k is sampled at the start of each step
    in_light = np.concatenate([[0.0], np.cumsum(out.level == 1)[:-1]]) * dt
    in_heavy = np.concatenate([[0.0], np.cumsum(out.level == 2)[:-1]]) * dt
    series = nvme.Series(time_s=t, composite_k=run["noisy"], throughput_mb_s=out.speed / 1e6,
                         counters={"thm_temp1_total_time": in_light, "thm_temp2_total_time": in_heavy})
    back = nvme.read_series(nvme.write_jsonl(tmp_path / "run.jsonl", series))
    res = fit_rc.fit_series(back, run["drive"], run["power"], fit_rc.with_params(run["truth"], STARTS[1]))
    for k, v in TRUTH.items():
        assert abs(res.params[k] / v - 1.0) < 0.05, (k, res.params[k], v)


def test_fit_input_checks(run):
    with pytest.raises(KeyError, match="not fittable"):
        fit_rc.with_params(run["truth"], {"ambient_k": 300.0})
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        fit_rc.fit(run["truth"], run["p"][:, :1], run["noisy"], 0.5)
    with pytest.raises(ValueError, match="no throughput"):
        fit_rc.fit_series(nvme.Series(np.arange(3.0), np.full(3, 300.0)), run["drive"], run["power"],
                          run["truth"])
    assert dataclasses.is_dataclass(fit_rc.FitResult)
