"""Bad input files and settings of the fits (``fit_fill``, ``fit_rc``, ``tmt_optimize``): a clear error that
names the field, the file and the line, before anything is computed."""

import json

import numpy as np
import pytest
from test_cli import ssdx

from ssdx import params, presets
from ssdx.models.fluid import fit as fit_fill
from ssdx.models.thermal import jobs as thermal_jobs
from ssdx.models.thermal import nvme
from ssdx.workloads import fill_curve

GOOD_CSV = "gb,mb_s\n" + "".join(f"{g},{v}\n" for g, v in zip(range(1, 11), [900] * 5 + [300] * 5))
GOOD_SERIES = "time_s,temp_c,throughput_mb_s\n" + "".join(f"{t},{25 + t / 4:.2f},2000\n" for t in range(20))


def _curve_error(tmp_path, text: str | bytes, name: str = "curve.csv") -> fill_curve.CurveError:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(fill_curve.CurveError) as e:
        fill_curve.read(p)
    assert str(p) in str(e.value)
    return e.value


def _series_error(tmp_path, text: str | bytes, name: str = "series.csv") -> str:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError) as e:
        nvme.read_series(p)
    assert str(p) in str(e.value)
    return str(e.value)


# ------------------------------------------------------------------------------------------ fill curves


def test_zero_speeds_are_refused_at_their_line(tmp_path):
    """Defect 1: a csv speed of 0 (all rows, or the tail) names the line, not a ZeroDivisionError."""
    e = _curve_error(tmp_path, "gb,mb_s\n" + "".join(f"{g},0\n" for g in range(1, 11)))
    assert e.line == 2 and "mb_s is 0" in e.problem
    tail = GOOD_CSV + "".join(f"{g},0\n" for g in range(11, 21))
    e = _curve_error(tmp_path, tail)
    assert e.line == 12 and "mb_s is 0" in e.problem


def test_stalls_of_logs_are_folded_into_the_sample_before_and_all_zero_logs_refused(tmp_path):
    """Defect 1: in a per-second log a 0 is a stall, time without bytes: its seconds join the sample before
    it (no 0 MB/s sample is left, every byte and second is kept); all zeros refused."""
    p = tmp_path / "speed.txt"
    p.write_text("mb_s\n" + "0\n" + "1000\n" * 4 + "0\n" * 3 + "500\n" * 4)
    c = fill_curve.read(p)
    assert len(c) == 8 and (c.mb_s > 0).all() and "folded 4 samples of 0 MB/s" in c.notes[-1]
    np.testing.assert_allclose(c.gb_hi[-1], 6.0)
    np.testing.assert_allclose(c.time_s.sum(), 12.0)  # 12 seconds logged, 12 in the curve
    np.testing.assert_allclose(c.mb_s[:4], [500.0, 1000.0, 1000.0, 250.0])  # 1 GB over 2 s; over 4 s
    # bytes over time survive merging: a log repeating 1500, 1500, 0 MB/s sustains 1000 MB/s
    p.write_text("mb_s\n" + "1500\n1500\n0\n" * 1000)
    np.testing.assert_allclose(fill_curve.read(p).merged(500).mb_s, 1000.0)
    e = _curve_error(tmp_path, "mb_s\n" + "0\n" * 10, "zeros.txt")
    assert e.line == 11 and "every speed is 0 MB/s" in e.problem


def test_fold_efficiency_of_a_zero_speed_is_its_limit():
    """Defect 1: ``fold_efficiency_for`` no longer divides by zero."""
    cols = params.columns_from_config(presets.drive("generic_tlc_1tb"), presets.workload("seq_fill"))
    drive = params.index(params.build(cols)[0], 0)
    assert fit_fill.fold_efficiency_for(drive, 500.0, 0.0) == 0.05


def test_implausible_speeds_are_refused(tmp_path):
    """Defect 2: 1e300 MB/s is refused at its line, with the bound (10x the fastest host link)."""
    e = _curve_error(tmp_path, GOOD_CSV.replace("3,900", "3,1e300"))
    assert e.line == 4 and "not a plausible write speed" in e.problem
    assert 15_000 < fill_curve.MAX_MB_S < 1_000_000
    fio = "".join(f"{t}, 1000, 1, 4096, 0\n" for t in range(1000, 9000, 1000))
    fio = fio.replace("5000, 1000", "5000, 1e300")
    e = _curve_error(tmp_path, fio, "bw.log")
    assert e.line == 5 and "bandwidth (KiB/s)" in e.problem


def test_a_byte_order_mark_is_skipped(tmp_path):
    """Defect 3: fill curves and thermal series written with a UTF-8 BOM read."""
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + GOOD_CSV.encode())
    assert fill_curve.read(p).format == "csv" and len(fill_curve.read(p)) == 10
    s = tmp_path / "bom_series.csv"
    s.write_bytes(b"\xef\xbb\xbf" + GOOD_SERIES.encode())
    assert len(nvme.read_series(s).time_s) == 20
    j = tmp_path / "bom.jsonl"
    j.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps({"time_s": t, "temperature": 300 + t}) + "\n"
                                           for t in range(5)).encode())
    assert nvme.read_series(j).composite_k.tolist() == [300, 301, 302, 303, 304]


# ------------------------------------------------------------------------------------- thermal series


def test_negative_or_implausible_throughput_and_temperatures_are_refused(tmp_path):
    """Defect 5: throughput < 0, temperatures above the solder's melting point or below absolute zero."""
    msg = _series_error(tmp_path, GOOD_SERIES.replace("\n3,25.75,2000\n", "\n3,25.75,-2000\n"))
    assert "line 5" in msg and "negative" in msg
    msg = _series_error(tmp_path, GOOD_SERIES.replace("\n3,25.75,2000\n", "\n3,1000000.00,2000\n"))
    assert "line 5" in msg and "not a plausible drive temperature" in msg and "deg C" in msg
    msg = _series_error(tmp_path, GOOD_SERIES.replace("\n3,25.75,2000\n", "\n3,-300,2000\n"))
    assert "line 5" in msg and "below absolute zero" in msg
    jsonl = json.dumps({"time_s": 0, "temperature": 1e6, "throughput_mb_s": 10}) + "\n"
    msg = _series_error(tmp_path, jsonl, "hot.jsonl")
    assert "line 1" in msg and "above 490 K" in msg


def test_deeply_nested_json_names_the_line(tmp_path):
    """Defect 6: a RecursionError becomes a ValueError naming file:line."""
    good = json.dumps({"time_s": 0, "temperature": 300}) + "\n"
    msg = _series_error(tmp_path, good + "[" * 200_000 + "\n", "deep.jsonl")
    assert "line 2" in msg and "nested too deeply" in msg


def test_a_non_utf8_byte_names_the_line(tmp_path):
    """Defect 7: a 0xff byte on line 3 is reported on line 3."""
    msg = _series_error(tmp_path, b"time_s,temp_c,throughput_mb_s\n0,25,2000\n\xff\xfe\n")
    assert "line 3" in msg and "not UTF-8" in msg
    bom = _series_error(tmp_path, b"\xef\xbb\xbftime_s,temp_c,throughput_mb_s\n0,25,2000\n\xff\n", "b2.csv")
    assert "line 3" in bom
    e = _curve_error(tmp_path, b"\xef\xbb\xbfgb,mb_s\n1,100\n\xff\n")
    assert e.line == 3 and "UTF-8" in e.problem


def _fit_rc_cfg(series, **fit) -> dict:
    return {"drive": presets.drive("sn8e_1920"), "workload": presets.workload("seq_fill"),
            "thermal": {"cooling": "bare", "ambient_c": 25.0, "tmt1_k": 0, "tmt2_k": 0, "dt_s": 1.0,
                        "duration_s": 600.0},
            "fit": {"series": str(series), **fit}}


def test_fit_rc_names_the_format_the_throughput_and_the_gap(tmp_path):
    """Defects 4, 8, 9: ``fit.format`` first; a series without throughput; a gap past the longest run."""
    good = tmp_path / "good.csv"
    good.write_text(GOOD_SERIES)
    with pytest.raises(params.ConfigError) as e:
        thermal_jobs.run_fit_rc(_fit_rc_cfg(good, format="xml"), tmp_path / "out")
    assert e.value.field == "fit.format" and e.value.value == "xml"
    nothr = tmp_path / "nothr.csv"
    nothr.write_text("time_s,temp_c\n" + "".join(f"{t},25\n" for t in range(20)))
    with pytest.raises(params.ConfigError) as e:
        thermal_jobs.run_fit_rc(_fit_rc_cfg(nothr), tmp_path / "out")
    assert e.value.field == "fit.series" and "throughput" in e.value.rule
    gap = tmp_path / "gap.csv"
    gap.write_text(GOOD_SERIES + "5e6,30,2000\n")
    with pytest.raises(params.ConfigError) as e:
        thermal_jobs.run_fit_rc(_fit_rc_cfg(gap), tmp_path / "out")
    assert e.value.field == "fit.series" and f"{gap}, line 22" in e.value.rule
    assert "thermal.duration_s" not in str(e.value).split("breaks the rule")[0]
    assert not (tmp_path / "out" / "summary.json").exists()


# -------------------------------------------------------------------------------------- tmt_optimize


def _optimize_cfg(**over) -> dict:
    opt = {"temp_limit_k": 351.15, "tmt1_range": [330, 362], "tmt2_range": [331, 372], "init": [335.0, 345.0],
           "steps": 60, "learning_rate": 0.5, "sharpness": 1.0, **over}
    return {**_fit_rc_cfg("unused"), "optimize": opt}


@pytest.mark.parametrize("key, value, rule", [
    ("learning_rate", -0.5, "0 < x"),
    ("sharpness", 0, "0 < x"),
    ("steps", -1, "integer 1 <= x <= 100000"),
    ("steps", 100_000_000, "integer 1 <= x <= 100000"),
    ("steps", 2.5, "integer"),
    ("init", [-5.0, 10.0], "MNTMT"),
    ("init", [345.0, 335.0], "TMT2 > TMT1"),
    ("tmt1_range", [100, 200], "MNTMT"),
    ("tmt2_range", [331.5, 372], "whole Kelvin"),
    ("tmt2_range", [300, 320], "must reach above"),
    ("temp_limit_k", "hot", "a finite number"),
])
def test_optimize_settings_are_checked(key, value, rule):
    """Defect 10: every ``optimize.*`` field is checked before anything is computed."""
    with pytest.raises(params.ConfigError) as e:
        thermal_jobs.optimize_settings(_optimize_cfg(**{key: value}))
    assert e.value.field == f"optimize.{key}" and e.value.value == value and rule in e.value.rule


def test_good_optimize_settings_pass():
    o = thermal_jobs.optimize_settings(_optimize_cfg())
    assert o["tmt1_range"] == (330, 362) and o["steps"] == 60 and o["init"] == (335.0, 345.0)


def test_tmt_optimize_refuses_a_drive_without_power_before_its_settings(tmp_path):
    """The run is built before ``optimize_settings`` reads MNTMT and MXTMT from the power block."""
    cfg = _optimize_cfg()
    cfg["drive"] = {k: v for k, v in cfg["drive"].items() if k != "power"}
    with pytest.raises(params.ConfigError) as e:
        thermal_jobs.run_tmt_optimize(cfg, tmp_path / "out", progress=False)
    assert e.value.field == "drive.power" and "needs the drive's power block" in e.value.rule
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------------------------- CLI


def _refused(r, tmp_path, *needles):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "summary.json").exists()
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_cli_refuses_a_zero_speed_curve(tmp_path):
    curve = tmp_path / "zeros.csv"
    curve.write_text("gb,mb_s\n" + "".join(f"{g},0\n" for g in range(1, 11)))
    r = ssdx("experiment=fit_fill", f"fit.curve={curve}", "drive=generic_tlc_1tb",
             f"hydra.run.dir={tmp_path}")
    _refused(r, tmp_path, "fit.curve", f"{curve}, line 2")


def test_cli_refuses_an_optimize_setting(tmp_path):
    r = ssdx("experiment=tmt_optimize", "optimize.steps=-1", f"hydra.run.dir={tmp_path}")
    _refused(r, tmp_path, "'optimize.steps' = -1", "integer 1 <= x <= 100000")


def test_an_implausible_speed_is_refused_with_the_same_rule_by_both_readers(tmp_path):
    """The fill-curve reader and the NVMe series reader share one plausibility check (MAX_MB_S), each
    with its own error type and place."""
    bound = f"{fill_curve.MAX_MB_S:.0f}"
    e = _curve_error(tmp_path, GOOD_CSV.replace("3,900", "3,1e300"))
    assert e.problem == (f"mb_s = 1e300 is above {bound} MB/s, 10x the fastest host interface's link rate "
                         "(ssdx.catalog.INTERFACES): not a plausible write speed")
    assert fill_curve.implausible_speed(fill_curve.MAX_MB_S, "x", "y") is None
    p = tmp_path / "series.csv"
    p.write_text(GOOD_SERIES.replace("5,26.25,2000", "5,26.25,1e300"))
    with pytest.raises(ValueError) as v:
        nvme.read_series(p)
    assert not isinstance(v.value, fill_curve.CurveError)
    assert str(v.value) == (f"{p}, line 7: 'throughput_mb_s' = 1e+300 MB/s is above {bound} MB/s, 10x the "
                            "fastest host interface's link rate (ssdx.catalog.INTERFACES): not a plausible "
                            "throughput")
