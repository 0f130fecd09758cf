"""``ssdx.core.fields``: one declaration per numeric field, one checking loop, the rule texts it reports."""

from __future__ import annotations

import numpy as np
import pytest

from ssdx import params
from ssdx.core.fields import ConfigError, Field, check, table
from ssdx.models.engine import params as engine_params
from ssdx.models.gc import params as gc_params
from ssdx.models.hybrid import params as hybrid_params
from ssdx.models.thermal import params as thermal_params


def test_rule_texts():
    channels = Field("a.n", "", 1, 64, integer=True, doc="channels")
    assert channels.rule_text() == "integer 1 <= x <= 64 (channels)"
    assert Field("a.s", "", 0.0, 1.0, lo_open=True, hi_open=True).rule_text() == "0 < x < 1"
    assert Field("a.t", "us", 0.01, 1e7, nullable=True).rule_text() == \
        "0.01 <= x <= 1e+07, or null for the catalog value"
    assert Field("a.r", "", 0.0, 0.5, hi_open=True, rule="0 <= x < 0.5: reserve").rule_text() == \
        "0 <= x < 0.5: reserve"


def test_check_names_the_first_breach_or_reports_every_rule():
    fields = table(Field("g.a", "", 0.0, 1.0, lo_open=True), Field("g.b", "", 2, 8, integer=True),
                   Field("g.c", "", 0.0, 1.0, nullable=True, optional=True))
    cols = {"g.a": np.array([0.5, 0.0, 1.0]), "g.b": np.array([2, 8, 2.5])}
    with pytest.raises(ConfigError) as e:
        check(fields, cols)
    assert (e.value.field, e.value.value, e.value.row) == ("g.a", 0.0, 1)
    assert "configuration 1 of 3" in str(e.value) and "0 < x <= 1" in str(e.value)
    report: list = []
    check(fields, cols, report)  # g.c is optional and absent: not checked
    assert [(k, m.tolist()) for k, _, m in report] == [("g.a", [True, False, True]),
                                                        ("g.b", [True, True, False])]
    report.clear()
    check(fields, {**cols, "g.c": np.array([np.nan, 1.0, np.inf])}, report)
    assert report[-1][2].tolist() == [True, True, False]  # NaN is the catalog value; inf is out of range
    with pytest.raises(ConfigError, match="must be a number"):
        check(fields, {"g.a": np.array(["x"]), "g.b": np.array([2])})


def test_every_parameter_module_declares_its_ranges_as_fields():
    tables = {"drive.": params.RANGES, "nand.": params.NAND_RANGES, "engine.": engine_params.RANGES,
              "gc.": gc_params.RANGES, "hybrid.": hybrid_params.RANGES, "power.": thermal_params.RANGES}
    for prefix, t in tables.items():
        assert t and all(isinstance(f, Field) and f.name == k for k, f in t.items()), prefix
        assert all(f.lo < f.hi for f in t.values()), prefix
    assert all(k.startswith(("drive.", "workload.")) for k in params.RANGES)
    assert all(k.startswith(("power.", "thermal.")) for k in thermal_params.RANGES)
    # the defaults a config may leave out come from the declarations
    assert params.DRIVE_DEFAULTS == {"max_dynamic_slc_gb": 0.0, "idle_fold_mb_s": 0.0}
    assert all(engine_params.RANGES[f"engine.{k}"].default == v for k, v in engine_params.OPTIONAL.items()
               if f"engine.{k}" in engine_params.RANGES)


def test_rc_overrides_are_fields_too():
    ok = {"thermal.rc.g_case_amb": np.array([0.0]), "thermal.rc.c_ctrl": np.array([2.0])}
    check(thermal_params.RC_RANGES, ok)  # no conductance to ambient is allowed, an absent field is skipped
    with pytest.raises(ConfigError, match=r"thermal\.rc\.c_ctrl.*finite, 0 < x <= 1e6 \(J/K"):
        check(thermal_params.RC_RANGES, {**ok, "thermal.rc.c_ctrl": np.array([0.0])})
    with pytest.raises(ConfigError, match=r"thermal\.rc\.g_case_amb.*finite, 0 <= x <= 1e6 \(W/K"):
        check(thermal_params.RC_RANGES, {**ok, "thermal.rc.g_case_amb": np.array([np.inf])})
