"""nvme-cli command strings for HCTM (Set Features 0x10) and the measured-series readers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ssdx.models.thermal import nvme
from ssdx.models.thermal.params import nvme_value
from ssdx.units import ZERO_C_IN_K

SEED_T1, SEED_T2 = 80.0 + ZERO_C_IN_K, 85.0 + ZERO_C_IN_K  # KIOXIA thermal article: TMT1 = 80 C, TMT2 = 85 C


def smart_log(temperature: int, **over) -> dict:
    """One ``nvme smart-log -o json`` object as nvme-cli's json_smart_log prints it (non-verbose)."""
    d = {"critical_warning": 0, "temperature": temperature, "avail_spare": 100, "spare_thresh": 10,
         "percent_used": 1, "endurance_grp_critical_warning_summary": 0, "data_units_read": 1234,
         "data_units_written": 5678, "host_read_commands": 11, "host_write_commands": 22,
         "controller_busy_time": 3, "power_cycles": 4, "power_on_hours": 5, "unsafe_shutdowns": 0,
         "media_errors": 0, "num_err_log_entries": 0, "warning_temp_time": 0, "critical_comp_time": 0,
         "temperature_sensor_1": temperature + 2, "thm_temp1_trans_count": 0, "thm_temp2_trans_count": 0,
         "thm_temp1_total_time": 0, "thm_temp2_total_time": 0}
    d.update(over)
    return d


def write_lines(path, lines) -> str:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------------------------
# Commands


def test_seed_thresholds_encode_to_0x01610166():
    assert nvme_value(SEED_T1, SEED_T2) == 0x01610166 == (353 << 16) | 358
    assert nvme.set_feature_command(SEED_T1, SEED_T2) == (
        "nvme set-feature /dev/nvme0 -f 0x10 --value=0x01610166")
    assert nvme.set_feature_command(SEED_T1, SEED_T2, device="/dev/nvme1", save=True) == (
        "nvme set-feature /dev/nvme1 -f 0x10 --value=0x01610166 --save")
    assert nvme.hctm_command(SEED_T1, SEED_T2) == "nvme feat hctm /dev/nvme0 --tmt1=353 --tmt2=358"
    assert nvme.hctm_command(SEED_T1, SEED_T2, "/dev/nvme2", save=True) == (
        "nvme feat hctm /dev/nvme2 --tmt1=353 --tmt2=358 --save")
    assert nvme.get_feature_command() == "nvme get-feature /dev/nvme0 -f 0x10 -H"
    assert nvme.smart_log_command("/dev/nvme1") == "nvme smart-log /dev/nvme1 -o json"


def test_decode_round_trip():
    assert nvme.decode_value(0x01610166) == (353, 358)
    assert nvme.decode_value("0x01610166") == (353, 358)
    rng = np.random.default_rng(1)
    for t1, t2 in rng.integers(0, 0x10000, size=(50, 2)):
        assert nvme.decode_value(nvme_value(int(t1), int(t2))) == (int(t1), int(t2))
    cmd = nvme.set_feature_command(0, 358.15)  # 0 disables TMT1
    assert nvme.decode_value(cmd.rsplit("=", 1)[1]) == (0, 358)


def test_command_rules():
    with pytest.raises(ValueError, match="TMT2 .* greater than TMT1"):
        nvme.set_feature_command(358.15, 353.15)
    with pytest.raises(ValueError, match="TMT2 .* greater than TMT1"):
        nvme.hctm_command(353.0, 353.0)
    with pytest.raises(ValueError, match="16 bits"):
        nvme.set_feature_command(0, 70000)
    with pytest.raises(ValueError, match="32-bit"):
        nvme.decode_value(1 << 32)
    assert "'/dev/my disk'" in nvme.get_feature_command("/dev/my disk")  # quoted for the shell


# ------------------------------------------------------------------------------------------------
# Readers


def test_jsonl_smart_log_snapshots(tmp_path):
    lines = [
        json.dumps({"timestamp": 1_700_000_000.0, **smart_log(311), "throughput_mb_s": 0.0}),
        "",  # blank lines are skipped
        json.dumps({"timestamp": 1_700_000_001.5, **smart_log(340, thm_temp1_total_time=1),
                    "throughput_mb_s": 2097.2}),
        json.dumps({"timestamp": "1700000003", **smart_log(353, thm_temp1_trans_count=1,
                                                           thm_temp1_total_time=3, warning_temp_time=1),
                    "throughput_mb_s": "1992.3"}),
    ]
    s = nvme.read_series(write_lines(tmp_path / "run.jsonl", lines))
    np.testing.assert_allclose(s.time_s, [0.0, 1.5, 3.0])
    np.testing.assert_allclose(s.composite_k, [311, 340, 353])
    np.testing.assert_allclose(s.throughput_mb_s, [0.0, 2097.2, 1992.3])
    assert set(s.counters) == set(nvme.COUNTERS)
    np.testing.assert_allclose(s.counters["thm_temp1_total_time"], [0, 1, 3])
    np.testing.assert_allclose(s.counters["thm_temp1_trans_count"], [0, 0, 1])
    np.testing.assert_allclose(s.counters["warning_temp_time"], [0, 0, 1])


def test_jsonl_iso_timestamps_time_s_and_nesting(tmp_path):
    lines = [json.dumps({"timestamp": "2024-05-01T12:00:00Z", "smart_log": smart_log(320)}),
             json.dumps({"timestamp": "2024-05-01T14:00:02+02:00", "smart_log": smart_log(321)}),
             json.dumps({"timestamp": "2024-05-01T12:00:04.5", "smart_log": smart_log(322)})]  # naive = UTC
    s = nvme.read_jsonl(write_lines(tmp_path / "iso.jsonl", lines))
    np.testing.assert_allclose(s.time_s, [0.0, 2.0, 4.5])
    assert s.throughput_mb_s is None
    s2 = nvme.read_series(write_lines(tmp_path / "log.txt", [json.dumps({"time_s": 5, "temperature": 300,
                                                                          "write_mb_s": 10}),
                                                              json.dumps({"time_s": 6, "temperature": 301,
                                                                          "write_mb_s": 12})]))
    np.testing.assert_allclose(s2.time_s, [0.0, 1.0])
    np.testing.assert_allclose(s2.throughput_mb_s, [10, 12])
    assert s2.counters == {}


def test_csv_reader(tmp_path):
    path = write_lines(tmp_path / "run.csv", ["# logged at 1 Hz",
                                              "time_s,temp_c,throughput_mb_s,thm_temp1_total_time",
                                              "10,38.0,0,0", "", "11,40.5,2000,0", "12,80.0,1900,1"])
    s = nvme.read_series(path)
    np.testing.assert_allclose(s.time_s, [0, 1, 2])
    np.testing.assert_allclose(s.composite_k, np.array([38.0, 40.5, 80.0]) + ZERO_C_IN_K)
    np.testing.assert_allclose(s.throughput_mb_s, [0, 2000, 1900])
    np.testing.assert_allclose(s.counters["thm_temp1_total_time"], [0, 0, 1])
    s = nvme.read_csv(write_lines(tmp_path / "k.csv", ["time_s,composite_k", "0,300", "1,301"]))
    np.testing.assert_allclose(s.composite_k, [300, 301])
    assert s.throughput_mb_s is None


@pytest.mark.parametrize("writer", [nvme.write_jsonl, nvme.write_csv])
def test_write_read_round_trip(tmp_path, writer):
    rng = np.random.default_rng(0)
    t = np.arange(20) * 1.0
    s = nvme.Series(time_s=t, composite_k=320 + rng.normal(0, 1, 20),
                    throughput_mb_s=rng.uniform(0, 2e3, 20),
                    counters={"thm_temp1_total_time": np.floor(t / 3),
                              "thm_temp1_trans_count": (t > 5) * 1.0})
    path = writer(tmp_path / ("s.jsonl" if writer is nvme.write_jsonl else "s.csv"), s)
    r = nvme.read_series(path)
    np.testing.assert_array_equal(r.time_s, s.time_s)
    np.testing.assert_array_equal(r.composite_k, s.composite_k)
    np.testing.assert_array_equal(r.throughput_mb_s, s.throughput_mb_s)
    assert set(r.counters) == set(s.counters)
    for k in s.counters:
        np.testing.assert_array_equal(r.counters[k], s.counters[k])


GOOD = json.dumps({"timestamp": 0, "temperature": 310, "throughput_mb_s": 1.0})


@pytest.mark.parametrize("bad, line, problem", [
    ('{"timestamp": 1, "temperature": 311', 2, "bad JSON"),
    ('[1, 2]', 2, "expected a JSON object"),
    ('{"temperature": 311, "throughput_mb_s": 1}', 2, "missing field 'timestamp'"),
    ('{"timestamp": 1, "throughput_mb_s": 1}', 2, "missing field 'temperature'"),
    ('{"timestamp": 1, "temperature": "hot", "throughput_mb_s": 1}', 2, "non-numeric value for 'temp"),
    ('{"timestamp": 1, "temperature": true, "throughput_mb_s": 1}', 2, "non-numeric value for 'temp"),
    ('{"timestamp": 1, "temperature": 311, "throughput_mb_s": null}', 2, "non-numeric value for 'throughput"),
    ('{"timestamp": 1, "temperature": NaN, "throughput_mb_s": 1}', 2, "non-finite value for 'temperature'"),
    ('{"timestamp": "yesterday", "temperature": 311, "throughput_mb_s": 1}', 2, "neither seconds nor an ISO"),
    ('{"timestamp": 0, "temperature": 311, "throughput_mb_s": 1}', 2, "non-increasing timestamp"),
    ('{"timestamp": 1, "temperature": 311}', 2, r"missing field\(s\) \['throughput_mb_s'\]"),
    ('{"timestamp": 1, "temperature": 311, "throughput_mb_s": 1, "thm_temp1_total_time": 3}', 2,
     "absent from earlier lines"),
    ('{"timestamp": 1, "temperature": 38, "throughput_mb_s": 1}', 2, "was it deg C"),
])
def test_jsonl_errors_name_file_and_line(tmp_path, bad, line, problem):
    path = write_lines(tmp_path / "bad.jsonl", [GOOD, bad, GOOD])
    with pytest.raises(ValueError, match=rf"bad\.jsonl, line {line}: .*{problem}"):
        nvme.read_series(path)


def test_jsonl_error_line_counts_blank_lines(tmp_path):
    path = write_lines(tmp_path / "gap.jsonl", [GOOD, "", "   ", "{oops"])
    with pytest.raises(ValueError, match=r"gap\.jsonl, line 4: bad JSON"):
        nvme.read_jsonl(path)
    with pytest.raises(ValueError, match="no samples"):
        nvme.read_jsonl(write_lines(tmp_path / "empty.jsonl", ["", ""]))


@pytest.mark.parametrize("lines, line, problem", [
    (["time_s,temp_k", "0,300", "1,abc"], 3, "non-numeric value for 'temp_k'"),
    (["time_s,temp_k", "0,300", "1"], 3, "expected 2 fields, got 1"),
    (["time_s,temp_k", "0,300", "0,301"], 3, "non-increasing timestamp"),
    (["time_s,temp_k,throughput_mb_s", "0,300,1", "1,301,"], 3, "non-numeric value for 'throughput_mb_s'"),
    (["# comment", "t,temp_k", "0,300"], 2, "no 'time_s' column"),
    (["time_s,pressure", "0,300"], 1, "header needs one of"),
])
def test_csv_errors_name_file_and_line(tmp_path, lines, line, problem):
    path = write_lines(tmp_path / "bad.csv", lines)
    with pytest.raises(ValueError, match=rf"bad\.csv, line {line}: .*{re.escape(problem)}"):
        nvme.read_series(path)


def test_series_length_check_and_format_errors(tmp_path):
    with pytest.raises(ValueError, match="composite_k has 2 samples"):
        nvme.Series(time_s=np.zeros(3), composite_k=np.zeros(2))
    with pytest.raises(ValueError, match="unknown series format"):
        nvme.read_series(write_lines(tmp_path / "x.csv", ["time_s,temp_k"]), fmt="xml")
    with pytest.raises(ValueError, match="no samples"):
        nvme.read_series(write_lines(tmp_path / "header_only.csv", ["time_s,temp_k"]))
