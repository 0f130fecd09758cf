"""``ssdx.core.fields``: one declaration per numeric field, one checking loop, the rule texts it reports."""

from __future__ import annotations

import numpy as np
import pytest

from ssdx import params
from ssdx.core.fields import ConfigError, Field, check, did_you_mean, table
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
    assert params.DRIVE_DEFAULTS == {"max_dynamic_slc_gb": 0.0, "idle_fold_mb_s": 0.0,
                                     "first_slc_t_prog_us": 0.0, "first_slc_gb": 0.0,
                                     "fold_while_writing": False, "paced_folding": False}
    assert all(engine_params.RANGES[f"engine.{k}"].default == v for k, v in engine_params.OPTIONAL.items()
               if f"engine.{k}" in engine_params.RANGES)


def test_rc_overrides_are_fields_too():
    ok = {"thermal.rc.g_case_amb": np.array([0.0]), "thermal.rc.c_ctrl": np.array([2.0])}
    check(thermal_params.RC_RANGES, ok)  # no conductance to ambient is allowed, an absent field is skipped
    with pytest.raises(ConfigError, match=r"thermal\.rc\.c_ctrl.*finite, 0 < x <= 1e6 \(J/K"):
        check(thermal_params.RC_RANGES, {**ok, "thermal.rc.c_ctrl": np.array([0.0])})
    with pytest.raises(ConfigError, match=r"thermal\.rc\.g_case_amb.*finite, 0 <= x <= 1e6 \(W/K"):
        check(thermal_params.RC_RANGES, {**ok, "thermal.rc.g_case_amb": np.array([np.inf])})


def test_did_you_mean_names_the_closest_known_name_or_nothing():
    assert did_you_mean("chanels", ["channels", "dies"]) == "did you mean 'channels'?"
    assert did_you_mean("chanels", ["channels", "dies"], prefix="drive") == "did you mean 'drive.channels'?"
    assert did_you_mean("xyz", ["channels", "dies"]) == ""
    assert did_you_mean(3, ["3", "channels"]) == ""  # not a string: no suggestion
    assert did_you_mean("kep", iter(("keep", "name"))) == "did you mean 'keep'?"  # any iterable


def test_the_three_refusals_of_an_unknown_name_keep_their_wording():
    from ssdx.cli import main
    from ssdx.sweep import reduce, source

    with pytest.raises(ConfigError) as e:
        main.check_keys(["experiment=fit_fill", "fit.curv=x.csv"])
    assert "breaks the rule: not a field of the 'fit' block (FitFillConf); did you mean 'fit.curve'? " \
           "Its fields: " in str(e.value)
    with pytest.raises(ConfigError) as e:
        source.check_keys({"kep": 1, "nme": 2}, "sweep", ["keep", "name"], "f.yaml")
    assert "breaks the rule: not a key of the 'sweep' block (f.yaml); did you mean 'sweep.keep'? " \
           "Allowed keys: keep, name (also unknown: nme). " in str(e.value)
    with pytest.raises(ConfigError) as e:
        source.check_keys({"zzz": 1}, "sweep", ["keep", "name"])
    assert "breaks the rule: not a key of the 'sweep' block; allowed keys: keep, name. " in str(e.value)
    with pytest.raises(ConfigError) as e:
        reduce.check_column("sweep.keep.pareto.x", "iop", ["drive.channels"], ["iops"], model="fluid")
    assert "breaks the rule: must name a metric of the fluid model or a configuration column of the sweep " \
           "(did you mean 'iops'?); metrics: ['iops']; configuration columns: ['drive.channels']. " \
           in str(e.value)
    with pytest.raises(ConfigError) as e:
        reduce.check_column("sweep.keep.pareto.x", 5, ["drive.channels"], ["iops"])
    assert "breaks the rule: must name a metric of the model or a configuration column of the sweep; " \
           "metrics: ['iops']; configuration columns: ['drive.channels']. " in str(e.value)


def test_only_null_means_the_catalog_value_of_a_nand_override():
    assert np.isnan(params.nand_columns({"t_prog_us": None})["nand.t_prog_us"]).all()
    assert params.nand_columns({"t_prog_us": 900.0})["nand.t_prog_us"].tolist() == [900.0]
    for f, rule in (("t_prog_us", "0.01 <= x <= 1e6 us, or null for the catalog value"),
                    ("bits_per_cell", "integer 1 <= x <= 4 (bits per cell), or null for the catalog value")):
        for nan in (float("nan"), np.float32("nan"), "nan"):
            with pytest.raises(ConfigError) as e:
                params.nand_columns({f: nan})
            assert e.value.field == f"nand.{f}" and np.isnan(float(e.value.value)) and e.value.rule == rule
    hybrid = hybrid_params.defaults()
    assert np.isnan(hybrid_params.columns(hybrid)["hybrid.t_prog_us"]).all()
    for f in ("t_prog_us", "page_kib"):
        with pytest.raises(ConfigError, match=f"field 'hybrid.{f}' = nan .*or null for the catalog value"):
            hybrid_params.columns({**hybrid, f: float("nan")})
