"""The committed write tails against MQSim (``bench/mqsim_tails.py``, ``tails.json``): MQSim's side is its
response-time log, the same one ``mqsim_p99.json`` summarises; ssdx's side with the back pressure page by
page is the configuration the cross-validation ran (``xval.json``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import mqsim_tails

RESULTS = mqsim_tails.RESULTS


@pytest.fixture(scope="module")
def tails():
    return json.loads((RESULTS / "tails.json").read_text())


def test_mqsims_side_is_the_log_the_p99_table_reads(tails):
    p99 = json.loads((RESULTS / "mqsim_p99.json").read_text())["cases"]
    for name, row in tails["cases"].items():
        assert row["mqsim"]["requests"] == p99[name]["lines"] == p99[name]["requests"]
        assert mqsim_tails.at(row, "mqsim", 99) == pytest.approx(p99[name]["p99_us"], rel=1e-12)
        assert row["mqsim"]["mean_us"] == pytest.approx(p99[name]["log_mean_us"], rel=1e-12)


def test_ssdx_page_by_page_is_the_cross_validations_run(tails):
    xval = json.loads((RESULTS / "xval.json").read_text())
    for name, row in tails["cases"].items():
        s = xval[name]["ssdx"]
        assert mqsim_tails.at(row, "pages", 99) == pytest.approx(s["p99_us"], rel=1e-5)
        assert row["pages"]["mean_us"] == pytest.approx(s["mean_us"], rel=1e-5)


def test_counting_waits_follows_mqsims_write_tails_where_the_fluid_drain_does_not(tails):
    # at QD1 and QD4 the writes wait for the back pressure: page by page or counted in programs, ssdx's
    # 90th, 95th and 99th percentiles are each within 15 % of MQSim's; the fluid drain's p99 was 35 % or
    # more short
    for name in ("randwrite_qd1", "randwrite_qd4"):
        row = tails["cases"][name]
        for q in (90, 95, 99):
            mq = mqsim_tails.at(row, "mqsim", q)
            for mode in ("pages", "programs"):
                assert abs(mqsim_tails.at(row, mode, q) / mq - 1) < 0.15, (name, q, mode)
        assert mqsim_tails.at(row, "fluid", 99) < 0.65 * mqsim_tails.at(row, "mqsim", 99)


def test_percentiles_refuse_what_has_none():
    with pytest.raises(ValueError):
        mqsim_tails.percentiles(np.array([]))
    with pytest.raises(ValueError):
        mqsim_tails.percentiles(np.array([1.0, np.nan]))
    p = mqsim_tails.percentiles(np.arange(1.0, 201.0))
    assert len(p) == len(mqsim_tails.LEVELS) and p[0] == 1.0 and p[-1] == 200.0
    with pytest.raises(ValueError, match="not kept"):
        mqsim_tails.at({"mqsim": {"percentiles_us": p}}, "mqsim", 99.9)


def test_the_figures_titles_give_mqsims_logged_and_the_cross_validations_p99(tails, tmp_path):
    titled = mqsim_tails.plot(tails, tmp_path / "t.png")
    assert list(titled) == list(mqsim_tails.CASES)
    p99 = json.loads((RESULTS / "mqsim_p99.json").read_text())["cases"]
    xval = json.loads((RESULTS / "xval.json").read_text())
    for name, got in titled.items():
        assert got["mqsim"] == pytest.approx(p99[name]["p99_us"], rel=1e-12)
        assert got["pages"] == pytest.approx(xval[name]["ssdx"]["p99_us"], rel=1e-5)
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
