"""Fitting a drive to its measured fill curve: readers, recovery of known parameters, the CLI contract."""

import json

import jax
import numpy as np
import pytest

from ssdx import params, presets
from ssdx.models.fluid import fit as fit_fill
from ssdx.models.fluid import fit_model as fit_fill_model
from ssdx.models.fluid import model as fluid
from ssdx.models.fluid import plots as fill_report
from ssdx.workloads import fill_curve
from tests.test_cli import ssdx

# A small die-limited TLC drive: 8 dies x 4 planes x 16 KiB, PCIe 4.0 x4 and a 4.3 GB/s bus above the
# 1.87 GB/s pSLC die rate, so every fitted speed is the dies' (and so determined by the curve).
SMALL = {"user_capacity_gb": 500.0, "channels": 4, "dies_per_channel": 2, "interface": "pcie4x4",
         "bus_mts": 1200}
SMALL_ARGS = ["drive=generic_tlc_1tb", *(f"drive.{k}={v}" for k, v in SMALL.items())]
N_STEPS = 128
FIT = {"adam_steps": 200, "lbfgs_steps": 100, "grid_points": 32}
LO = np.arange(0.0, 500.0, 2.0)  # samples every 2 GB, 250 of them
HI = LO + 2.0
BASE = {"t_prog_slc_us": 280.0, "t_prog_us": 1200.0, "fold_efficiency": 0.55}
TRUTHS = {
    "dynamic": {**BASE, "reserve_fraction": 0.02},
    "capped": {**BASE, "reserve_fraction": 0.02, "max_dynamic_slc_gb": 60.0},
    "static": {**BASE, "slc_mode": "static", "static_slc_gb": 10.0},
    "hybrid": {**BASE, "slc_mode": "hybrid", "static_slc_gb": 6.0},  # + the uncapped U/b dynamic region
}
# the behaviours one fill cannot tell from a simpler rule by its error alone (folding while writing is a
# post-cache speed, as a direct native one is): their own rule recovers them; the choice among them is
# the published bounds' (tests/test_fit_bounds.py)
TRUTHS_BY_OWN_RULE = {
    # the curve sets t_prog / η past the cache; the rule keeps the base drive's η (0.6)
    "static_through": {**BASE, "fold_efficiency": 0.6, "slc_mode": "static", "static_slc_gb": 10.0,
                       "fold_while_writing": True},
    "two_speed": {**BASE, "reserve_fraction": 0.02, "max_dynamic_slc_gb": 60.0, "first_slc_gb": 20.0,
                  "first_slc_t_prog_us": 180.0},
    # one speed past the cache, set by t_prog with the base drive's η and reserve (0.6, 1 %), which the
    # paced rules keep; the cap is past the 22 GB the over-provisioning holds, so the drive folds
    "capped_paced": {"t_prog_slc_us": 280.0, "t_prog_us": 1200.0, "max_dynamic_slc_gb": 80.0,
                     "paced_folding": True},
}


def build(**over):
    nand = {k: over.pop(k) for k in list(over) if k.startswith("t_")}
    d = presets.drive("generic_tlc_1tb", **{**SMALL, **over})
    drive, workload = params.build(params.columns_from_config(d, presets.workload("seq_fill"), nand))
    return params.index(drive, 0), params.index(workload, 0)


def truth_curve(truth):
    """The model's own curve for ``truth``, as a measurement averaging over each 2 GB sample reports it."""
    drive, workload = build(**truth)
    return np.array(fit_fill_model.speed(drive, workload, np.stack([LO, HI]), N_STEPS))


def fill_phases(**cfg):
    drive, workload = build(**cfg)
    out = jax.tree_util.tree_map(np.asarray, fluid.simulate(drive, workload, N_STEPS))
    return fill_report.phases(out)


def write_curve(path, mb_s):
    return fill_curve.write_csv(path, 0.5 * (LO + HI), mb_s)


# --------------------------------------------------------------------------------------------- readers


def test_fio_bw_log_integrates_the_bandwidth(tmp_path):
    p = tmp_path / "job_bw.1.log"
    p.write_text("1000, 1024000, 1, 131072, 0\n"
                 "1000, 2048, 0, 4096, 0\n"  # a read: ignored
                 "2000, 1024000, 1, 131072, 0\n"
                 "3000, 512000, 1, 131072, 0, 0\n"  # with the priority column
                 "4000, 512000, 1, 131072, 0\n"
                 + "".join(f"{t}, 256000, 1, 131072, 0\n" for t in (5000, 6000, 7000, 8000)))
    c = fill_curve.read(p)
    assert c.format == "fio_bw_log" and len(c) == 8 and c.line.tolist() == [1, 3, 4, 5, 6, 7, 8, 9]
    # 1,024,000 KiB/s = 1,048.576 MB/s for 1 s = 1.048576 GB; then 2 x 0.524288 GB, 4 x 0.262144 GB
    np.testing.assert_allclose(c.mb_s, [1048.576] * 2 + [524.288] * 2 + [262.144] * 4)
    np.testing.assert_allclose(c.gb_hi, [1.048576, 2.097152, 2.62144, 3.145728, 3.407872, 3.670016,
                                         3.93216, 4.194304])
    np.testing.assert_allclose(c.gb[0], 0.524288)
    np.testing.assert_allclose(c.time_s, 1.0)
    assert "1 read" in c.notes[0]


def test_per_second_and_csv_readers(tmp_path):
    p = tmp_path / "speed.txt"
    p.write_text("mb_s\n1000\n1000\n500\n500\n" + "250\n" * 4)
    c = fill_curve.read(p)
    assert c.format == "per_second"
    np.testing.assert_allclose(c.gb_hi, [1.0, 2.0, 2.5, 3.0, 3.25, 3.5, 3.75, 4.0])  # MB/s x 1 s / 1000
    np.testing.assert_allclose(c.gb, [0.5, 1.5, 2.25, 2.75, 3.125, 3.375, 3.625, 3.875])
    m = c.merged(4)  # pairs: 2 GB in 2 s, 1 GB in 2 s, 0.5 GB in 2 s twice
    np.testing.assert_allclose(m.gb_hi, [2.0, 3.0, 3.5, 4.0])
    np.testing.assert_allclose(m.mb_s, [1000.0, 500.0, 250.0, 250.0])
    assert m.line.tolist() == [2, 4, 6, 8] and "merged every 2" in m.notes[-1] and c.merged(8) is c
    q = tmp_path / "no_header.txt"
    q.write_text("# one value a second\n" + "100\n" * 8)
    assert fill_curve.read(q).format == "per_second" and fill_curve.read(q).gb_hi[-1] == pytest.approx(0.8)
    r = tmp_path / "curve.csv"
    r.write_text("gb,mb_s\n" + "".join(f"{g},{v}\n" for g, v in zip(range(1, 9), [900] * 4 + [300] * 4)))
    c = fill_curve.read(r)
    assert c.format == "csv"
    np.testing.assert_allclose(c.gb_lo, [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])
    np.testing.assert_allclose(c.gb_hi, c.gb_lo + 1.0)
    np.testing.assert_allclose(c.time_s, [1e3 / 900] * 4 + [1e3 / 300] * 4)


GOOD_FIO = "".join(f"{t}, 1000, 1, 4096, 0\n" for t in range(1000, 9000, 1000))


@pytest.mark.parametrize("fmt, text, line, problem", [
    ("auto", "gb,mb_s\n1,100\n2,abc\n", 3, "mb_s is not a number"),
    ("auto", "gb,mb_s\n1,100\n2,100,5\n", 3, "expected 2 comma-separated fields"),
    ("auto", "gb,mb_s\n1,100\n2,-5\n", 3, "mb_s is negative"),
    ("auto", "gb,mb_s\n1,100\n2,nan\n", 3, "mb_s is not finite"),
    ("auto", "gb,mb_s\n1,100\ninf,5\n", 3, "gb is not finite"),
    ("auto", "gb,mb_s\n1,100\n2,100\n2,100\n", 4, "gb must increase"),
    ("auto", "gb,mb_s\n", 1, "no samples"),
    ("auto", "", 1, "the file is empty"),
    ("auto", "# nothing\n\n", 2, "the file is empty"),
    ("auto", "1,100\n2,100\n", 1, "cannot tell the format"),
    ("csv", "1,100\n", 1, "needs the header 'gb,mb_s'"),
    ("auto", "gb,mb_s\n" + "".join(f"{g},100\n" for g in range(1, 4)), 4, "too few samples"),
    ("auto", "mb_s\n100\nfast\n", 3, "mb_s is not a number"),
    ("per_second", "100\n100,5\n", 2, "expected one speed"),
    ("fio_bw_log", "1000, 5, 1\n", 1, "expected 4 to 7 comma-separated fields"),
    ("auto", "1000, 5, 1, 4096, 0\n2000, 5, 3, 4096, 0\n", 2, "data direction must be"),
    ("auto", "1000, 5, 1, 4096, 0\n3000, 5, 1, 4096, 0\n2000, 5, 1, 4096, 0\n", 3, "time must increase"),
    ("auto", "1000, 5, 1, 4096, 0\n2000, -5, 1, 4096, 0\n", 2, "bandwidth (KiB/s) is negative"),
    ("auto", GOOD_FIO.replace("1, 4096, 0", "0, 4096, 0"), 8, "no write entries"),
    ("auto", GOOD_FIO.replace("7000, 1000,", "7000, x,"), 7, "bandwidth (KiB/s) is not a number"),
])
def test_malformed_curves_name_the_file_and_line(tmp_path, fmt, text, line, problem):
    p = tmp_path / "bad_curve.txt"
    p.write_text(text)
    with pytest.raises(fill_curve.CurveError) as e:
        fill_curve.read(p, fmt)
    assert e.value.path == str(p) and e.value.line == line
    assert str(p) in str(e.value) and f"line {line}:" in str(e.value) and problem in str(e.value)


# ------------------------------------------------------------------------------------ fit on the model


@pytest.fixture(scope="module")
def base():
    return build()


# the dynamic and capped caches' fits run longest: they are validated in the full tier, the static and
# hybrid ones in the fast one
@pytest.mark.parametrize("rule", [pytest.param(r, marks=pytest.mark.validation) if r in ("dynamic", "capped")
                                  else r for r in TRUTHS])
def test_fit_recovers_the_models_own_parameters(base, rule):
    truth = TRUTHS[rule]
    mb_s = truth_curve(truth)
    phases = fit_fill.segment(LO, HI, mb_s, (HI - LO) * 1e3 / mb_s)
    fitter = fit_fill.Fitter(LO, HI, mb_s, *base, N_STEPS, phases)
    # the four cache-size rules an error alone tells apart (the behaviours only the published bounds tell
    # from them are recovered by their own rule below, and chosen in tests/test_fit_bounds.py)
    fits = {r: fitter.fit(fit_fill.RULES[r], **FIT) for r in TRUTHS}
    assert fit_fill.choose(fits, 0.02, fit_fill.RMSE_FLOOR * np.mean(mb_s)) == rule
    f = fits[rule]
    assert f.rmse_mb_s < 0.01 * np.mean(mb_s) and f.rmse_mb_s <= f.initial_rmse_mb_s + 1e-6
    # program times, fold efficiency, reserve, cache sizes: within 2 % (hybrid: a single fill determines
    # only its cache, static + dynamic part, checked through the phases below)
    checked = [k for k in f.values if k.split(".", 1)[1] in truth
               and not (rule == "hybrid" and k in (fit_fill.STATIC, fit_fill.CAP))]
    assert len(checked) >= 3
    for key in checked:
        assert f.values[key] == pytest.approx(truth[key.split(".", 1)[1]], rel=0.02), key
    # each of them is determined by the curve: a standard error, however the phase boundaries land on
    # the scan's steps (a zero automatic derivative there is replaced by a finite difference)
    assert all(f.std_error_pct[k] is not None for k in checked), f.std_error_pct
    # the fitted drive's phases (cache size, direct-native end) match the truth's within 2 %
    got = fill_phases(**{k.split(".", 1)[1]: v for k, v in {**f.fixed, **f.values}.items()},
                      slc_mode=f.slc_mode)
    want = fill_phases(**truth)
    assert [p["name"] for p in got] == [p["name"] for p in want]
    for g, w in zip(got, want):
        assert g["end_gb"] == pytest.approx(w["end_gb"], rel=0.02)
        assert g["mean_mb_s"] == pytest.approx(w["mean_mb_s"], rel=0.02)
    # the measured plateaus are found where the truth's phases are
    assert len(phases) == len(want)
    for m, w in zip(phases, want):
        assert abs(m["end_gb"] - w["end_gb"]) <= 2.0
        assert m["mean_mb_s"] == pytest.approx(w["mean_mb_s"], rel=0.02)


@pytest.mark.validation
@pytest.mark.parametrize("rule", list(TRUTHS_BY_OWN_RULE))
def test_new_behaviours_are_recovered_by_their_own_rule(base, rule):
    truth = TRUTHS_BY_OWN_RULE[rule]
    mb_s = truth_curve(truth)
    phases = fit_fill.segment(LO, HI, mb_s, (HI - LO) * 1e3 / mb_s)
    f = fit_fill.Fitter(LO, HI, mb_s, *base, N_STEPS, phases).fit(fit_fill.RULES[rule], **FIT)
    assert f.rmse_mb_s < 0.01 * np.mean(mb_s)
    checked = [k for k in f.values if k.split(".", 1)[1] in truth]
    assert len(checked) >= 3
    for key in checked:
        assert f.values[key] == pytest.approx(truth[key.split(".", 1)[1]], rel=0.02), key


def test_a_zero_derivative_column_becomes_a_central_difference(base):
    """Where a fitted parameter's automatic derivative is zero (a phase boundary snapped to a scan step),
    the Jacobian column comes from a central difference: checked against the automatic column of
    parameters whose derivative is smooth, and a parameter the curve never reaches stays at zero."""
    truth = TRUTHS["capped"]
    mb_s = truth_curve(truth)
    phases = fit_fill.segment(LO, HI, mb_s, (HI - LO) * 1e3 / mb_s)
    fitter = fit_fill.Fitter(LO, HI, mb_s, *base, N_STEPS, phases)
    pb, _, _ = fitter.problem(fit_fill.RULES["capped"])
    args = fitter._args(pb)
    values = {k: truth[k.split(".", 1)[1]] for k in fitter.keys if pb.mask[fitter.keys.index(k)] > 0}
    th, _, jac, _ = fitter._assess(pb, args, values)
    for key in ("nand.t_prog_us", "nand.t_prog_slc_us"):  # plateau speeds: smooth in the parameter
        i = fitter.keys.index(key)
        zeroed = jac.copy()
        zeroed[:, i] = 0.0
        col = fitter._difference_columns(pb, args, th, zeroed)[:, i]
        assert np.linalg.norm(col) > 0
        assert np.linalg.norm(col - jac[:, i]) < 0.02 * np.linalg.norm(jac[:, i]), key
    # a curve that ends inside the pSLC phase does not reach the folding efficiency: still zero
    short = LO < 40.0
    fitter = fit_fill.Fitter(LO[short], HI[short], mb_s[short], *base, N_STEPS,
                             fit_fill.segment(LO[short], HI[short], mb_s[short], 2e3 / mb_s[short]))
    pb, _, _ = fitter.problem(fit_fill.RULES["capped"])
    args = fitter._args(pb)
    th, _, jac, se = fitter._assess(pb, args, values)
    assert np.all(jac[:, fitter.keys.index(fit_fill.FOLD)] == 0.0) and se[fit_fill.FOLD] is None


def test_a_curve_the_model_cannot_follow_is_flagged(tmp_path):
    from ssdx.models.fluid.fit_job import run_fit_fill

    mb_s = truth_curve(TRUTHS["capped"])
    bump = (LO >= 200) & (LO < 300)
    mb_s[bump] = 1000.0  # a mid-fill speed-up no cache rule produces
    path = write_curve(tmp_path / "bump.csv", mb_s)
    cfg = {"drive": presets.drive("generic_tlc_1tb", **SMALL), "workload": presets.workload("seq_fill"),
           "nand": {}, "precision": "float32",
           "fit": {"curve": str(path), "rules": ["dynamic", "capped"], "n_steps": N_STEPS, **FIT}}
    s = run_fit_fill(cfg, tmp_path / "out")
    assert s["poor_fit"] and "poor fit" in s["warning"]
    assert s["rmse_mb_s"] > 0.1 * s["mean_measured_mb_s"]
    top = s["residual_regions"][0]
    assert 190 <= top["start_gb"] <= 210 and 290 <= top["end_gb"] <= 310 and top["mean_residual_mb_s"] < 0


# ------------------------------------------------------------------------------------------------- CLI


def fit_cli(tmp_path, truth, *args):
    """``ssdx experiment=fit_fill`` on the model's own curve for ``truth`` on the small drive: the
    completed process, ``summary.json``, the curve file and the run directory."""
    curve = write_curve(tmp_path / "measured.csv", truth_curve(truth))
    out = tmp_path / "fit"
    r = ssdx("experiment=fit_fill", f"fit.curve={curve}", *SMALL_ARGS, f"fit.n_steps={N_STEPS}", *args,
             f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    return r, json.loads((out / "summary.json").read_text()), curve, out


def test_fit_fill_cli_contract_reproduction_and_preset(tmp_path):
    r, s, curve, out = fit_cli(tmp_path, TRUTHS["capped"], "fit.rules=[dynamic,capped]", "fit.name=my_fit")
    assert "rule capped" in r.stdout and "apply: ssdx experiment=aldrin_pro_fill" in r.stdout
    assert set(s) >= {"phases", "measured_phases", "rmse_mb_s", "overrides", "preset_path"}
    assert s["rule"] == "capped" and not s["poor_fit"] and s["rmse_mb_s"] < 5.0
    assert s["fitted"]["drive.max_dynamic_slc_gb"] == pytest.approx(60.0, rel=0.02)
    assert s["fitted"]["nand.t_prog_us"] == pytest.approx(1200.0, rel=0.02)
    assert [p["name"] for p in s["phases"]] == ["pslc", "direct_native", "folding"]
    assert (out / "fit_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert s["preset_path"] == str((out / "conf" / "drive" / "my_fit.yaml").resolve())
    text = (out / "conf" / "drive" / "my_fit.yaml").read_text()
    assert text.startswith("# Fitted by `ssdx experiment=fit_fill`") and str(curve) in text and "RMSE" in text
    assert "defaults:\n- base\n- _self_" in text

    # the overrides appended to the fill experiment on the base drive give the fitted phases
    rep = tmp_path / "reproduce"
    r = ssdx("experiment=aldrin_pro_fill", "drive=generic_tlc_1tb", *s["overrides"], f"hydra.run.dir={rep}")
    assert r.returncode == 0, r.stderr
    phases = json.loads((rep / "summary.json").read_text())["phases"]
    assert [p["name"] for p in phases] == [p["name"] for p in s["phases"]]
    for a, b in zip(phases, s["phases"]):
        for k in ("start_gb", "end_gb", "mean_mb_s"):
            assert a[k] == pytest.approx(b[k], rel=1e-4, abs=1e-3)

    # the presets load from the run's conf directory as a user's own config directory
    pre = tmp_path / "preset"
    r = ssdx("experiment=aldrin_pro_fill", f"hydra.searchpath=[file://{out / 'conf'}]", "drive=my_fit",
             "nand=my_fit", f"hydra.run.dir={pre}")
    assert r.returncode == 0, r.stderr
    p = json.loads((pre / "summary.json").read_text())
    assert p["drive"] == "my_fit" and p["slc_mode"] == "dynamic"
    for a, b in zip(p["phases"], s["phases"]):
        assert a["end_gb"] == pytest.approx(b["end_gb"], rel=1e-4) and a["mean_mb_s"] == pytest.approx(
            b["mean_mb_s"], rel=1e-4)


def test_fit_fill_cli_refuses_a_bad_curve(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("gb,mb_s\n1,100\n2,oops\n")
    r = ssdx("experiment=fit_fill", f"fit.curve={bad}", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 2
    assert "fit.curve" in r.stderr and f"{bad}, line 3: mb_s is not a number" in r.stderr
    r = ssdx("experiment=fit_fill", f"hydra.run.dir={tmp_path / 'out'}")
    assert r.returncode == 2 and "fit.curve" in r.stderr and "required" in r.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_fit_settings_are_checked(tmp_path):
    from ssdx.models.fluid.fit_job import fit_settings

    curve = tmp_path / "c.txt"
    curve.write_text("100\n" * 8)
    for bad, field in (({"rules": ["nope"]}, "fit.rules"), ({"format": "xlsx"}, "fit.format"),
                       ({"n_steps": 4}, "fit.n_steps"), ({"name": "a/b"}, "fit.name"),
                       ({"poor_fit_fraction": 0}, "fit.poor_fit_fraction")):
        with pytest.raises(params.ConfigError) as e:
            fit_settings({"fit": {"curve": str(curve), **bad}})
        assert e.value.field == field


def test_the_fio_job_that_measured_the_curve_sets_the_fits_workload(tmp_path):
    """``workload.fio``: the fit runs the fluid fill under the job's pattern, block size and depth (a 1 MiB
    QD1 job, as TechPowerUp's single-thread file-copy fill), and its overrides carry them."""
    from ssdx.models.fluid.fit_job import run_fit_fill

    job = tmp_path / "fill.fio"
    job.write_text("[copy]\nioengine=libaio\ndirect=1\nrw=write\nbs=1m\niodepth=1\n")
    path = write_curve(tmp_path / "m.csv", truth_curve(TRUTHS["capped"]))
    cfg = {"drive": presets.drive("generic_tlc_1tb", **SMALL),
           "workload": {**presets.workload("seq_fill"), "fio": str(job), "fio_job": None,
                        "fio_unknown": "raise", "requests": 100_000},
           "nand": {}, "precision": "float32", "seed": 0,
           "fit": {"curve": str(path), "rules": ["capped"], "n_steps": N_STEPS, **FIT}}
    s = run_fit_fill(cfg, tmp_path / "out")
    assert s["fio_job"] == "copy" and s["fio_ignored"] == []
    assert "workload.block_kib=1024" in s["overrides"] and "workload.queue_depth=1" in s["overrides"]


@pytest.mark.validation
def test_fit_fill_tries_paced_folding_when_the_rules_leave_a_phase_the_curve_lacks(tmp_path):
    """A drive that folds from its cache's end shows two phases; the capped rule explains the curve with
    three (direct, then folding), so the job fits its paced variant and keeps it, naming the policy."""
    _, s, _, _ = fit_cli(tmp_path, TRUTHS_BY_OWN_RULE["capped_paced"], "fit.rules=[capped]",
                         "fit.other_die_counts=false")
    assert s["paced_rules_tried"] == ["capped_paced"]
    assert s["rule"] == "capped_paced" and s["policy"]["paced_folding"] and s["phase_count"]["match"]
    assert [p["name"] for p in s["phases"]] == ["pslc", "direct_native_paced"]
    assert s["fitted"]["nand.t_prog_us"] == pytest.approx(1200.0, rel=0.02)
    assert "drive.paced_folding=true" in s["overrides"]
    assert s["runner_up"]["rule"] == "capped" and s["runner_up"]["phases"] == 3
