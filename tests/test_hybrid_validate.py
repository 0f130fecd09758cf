"""The findings of the SCM/NAND hybrid SSD study (Fukuchi et al.) checked on the model
(``ssdx.models.hybrid.studies.run_validate``): the checks themselves on hand-made numbers, then the model on
three
MSR presets at a small size (the full size is ``ssdx experiment=hybrid_validate``)."""

from __future__ import annotations

import pytest

from ssdx.models.hybrid import jobs as tasks_hybrid
from ssdx.models.hybrid import params as hybrid_params
from ssdx.models.hybrid import studies

NANDS = ("2d_fg_mlc", "2d_fg_tlc", "3d_fg_tlc", "3d_ct_tlc")


def _rel(ct: float, fg2: float = 0.45, fg3: float = 0.5) -> dict[str, float]:
    return {"2d_fg_mlc": 1.0, "2d_fg_tlc": fg2, "3d_fg_tlc": fg3, "3d_ct_tlc": ct}


def _found(*args, **kw) -> dict[str, dict]:
    return {f["name"]: f for f in tasks_hybrid.validation_findings(*args, **kw)}


def test_findings_on_hand_made_results():
    """Every check on numbers whose answer is known: the paper's own Table 2 gains hold everything; a tie on a
    write-intensive volume breaks 'best' and 'worst' and is explained by the bottleneck it is given."""
    rel = {w: _rel(1 + p / 100) for w, p in tasks_hybrid.PAPER_TABLE2.items()}
    rel["prxy_1"]["3d_ct_tlc"] = 0.999
    change = {"block_size": dict.fromkeys(rel, 0.5), "latency": dict.fromkeys(rel, -6.0),
              "write_unit": {**dict.fromkeys(rel, 0.2), "proj_3": 4.0}}
    rw = {w: r for w, r in zip(rel, (0.05, 0.1, 0.9, 0.5, 3.0, 10.0, 20.0), strict=True)}
    rw["prxy_0"] = 0.01
    rel["src2_1"]["3d_ct_tlc"] = 0.99  # the gain falls as reads per program rise
    rel["proj_3"]["3d_ct_tlc"] = 1.01
    found = _found(rel, change, rw)
    assert len(found) == 9
    assert all(f["holds"] for n, f in found.items() if n != "table2_signs_agree_on_at_least_6_of_7")
    assert found["table2_signs_agree_on_at_least_6_of_7"]["holds"]  # 6 of 7: src2_1 differs
    assert "differing: src2_1" in found["table2_signs_agree_on_at_least_6_of_7"]["detail"]

    tie = {**rel, "prxy_0": _rel(1.0, 1.0, 1.0)}
    util = {"prxy_0": {n: {"die": 0.3, "channel": 0.1, "scm": 0.7, "link": 1.0, "bottleneck": "link"}
                       for n in NANDS}}
    found = _found(tie, change, rw, util)
    for name in ("3d_ct_tlc_best_on_write_intensive", "2d_fg_tlc_worst_on_write_intensive"):
        assert not found[name]["holds"]
        assert "prxy_0" in found[name]["detail"] and "bound by link 1.00" in found[name]["detail"]
    big = {**change, "block_size": {**change["block_size"], "hm_0": -7.0}}
    found = _found(rel, big, rw)
    assert not found["block_size_changes_iops_little"]["holds"]
    assert not found["latency_matters_most"]["holds"]
    # both-sided: 70 % and 30 % losses both miss the paper's 54 % by more than 10 points; the reason is quoted
    for fg3 in (0.3, 0.7):
        f = _found({w: _rel(v["3d_ct_tlc"], 0.25, fg3) for w, v in rel.items()}, change, rw, loss_bound=30.0,
                   staging={"web_1": {"2d_fg_tlc": -95.0, "3d_fg_tlc": -98.0}}, balance=3.9)[
            "3d_fg_tlc_largest_loss_about_54_percent"]
        assert not f["holds"]
        assert "cannot lose more than 30.0 %" in f["detail"] and "whole-block staging" in f["detail"]
    assert not _found({**rel, "prxy_1": _rel(0.97)}, change, rw)["prxy_1_a_tie"]["holds"]


def test_excluded_volumes_carry_no_finding():
    """A volume whose runs are not warmed or not steady is left out of every finding and named with its
    reason: the tie on prxy_1 is then not held, and Table 2 counts only the volumes checked."""
    rel = {w: _rel(1 + p / 100) for w, p in tasks_hybrid.PAPER_TABLE2.items()}
    rel["proj_3"]["3d_ct_tlc"] = 0.5  # would differ from the paper, but is excluded
    change = {c: dict.fromkeys(rel, 0.1) for c in ("block_size", "write_unit")}
    change["latency"] = dict.fromkeys(rel, -5.0)
    rw = dict.fromkeys(rel, 1.0)
    why = {"prxy_1": "not warmed: the SCM never filled", "proj_3": "not steady: halves differ"}
    found = _found(rel, change, rw, excluded=why, balance=3.87)
    assert not found["prxy_1_a_tie"]["holds"] and "not checked: prxy_1 (not warmed" in found[
        "prxy_1_a_tie"]["detail"]
    t2 = found["table2_signs_agree_on_at_least_6_of_7"]
    assert t2["holds"] and t2["detail"].startswith("5 of 5") and "proj_3 (not steady" in t2["detail"]
    assert found["3d_ct_tlc_best_on_write_intensive"]["holds"]


def test_run_exclusion_and_volume_statistics():
    """``excluded`` names a stream that never warmed and a run whose resource was booked past its window;
    ``volume_statistics`` puts each volume's NAND reads per page programmed beside the balance point and
    says which sign the die time predicts; the loss bound is the die-time ratio of Table 1's types."""
    import pandas as pd

    from ssdx import catalog
    from ssdx.models.hybrid import model as hybrid

    def row(w, n, iops, ratio, **kw):
        return {"workload.msr": w, "hybrid.nand": n, "iops": iops, "nand_read_write_ratio": ratio,
                "bottleneck": 0.0, "utilisation_max": 0.99, "steady": 1.0, "overbooked": 0.0,
                "halves_agree": 1.0, "steady_change": 0.0, "scm_hit_rate": 0.5, "nand_read_waits": 0.0,
                "nand_reads": 10.0, **kw}

    rows = pd.DataFrame([row("hm_0", "2d_fg_mlc", 100.0, 0.8), row("hm_0", "3d_ct_tlc", 108.0, 0.8),
                         row("proj_3", "2d_fg_mlc", 100.0, 13.0),
                         row("proj_3", "3d_ct_tlc", 90.0, 13.0, steady=0.0, overbooked=1.0,
                             utilisation_max=1.3)])
    streams = [{"workload": "hm_0", "warmed": True}, {"workload": "proj_3", "warmed": True},
               {"workload": "prxy_1", "warmed": False, "fill_requests": None, "warmup_requests": 9,
                "lines": 99}]
    out = tasks_hybrid.excluded(rows, streams)
    assert set(out) == {"prxy_1", "proj_3"}
    assert "never filled" in out["prxy_1"] and "die booked 1.30 of the window" in out["proj_3"]
    bal = tasks_hybrid.balance_ratio(hybrid_params.defaults())
    stats = tasks_hybrid.volume_statistics(rows, bal)
    assert stats["hm_0"]["die_time_predicts"] == "+" and stats["proj_3"]["die_time_predicts"] == "-"
    assert stats["hm_0"]["ct_tlc_vs_mlc_percent"] == pytest.approx(8.0)
    t = {n: hybrid.die_seconds_per_page(catalog.nand(n).t_prog_us, catalog.nand(n).t_read_us,
                                        catalog.nand(n).t_erase_us, catalog.nand(n).block_pages, 0.5)[0]
         for n in ("2d_fg_mlc", "3d_fg_tlc")}
    assert tasks_hybrid.fg_tlc_loss_bound(hybrid_params.defaults()) == pytest.approx(
        100 * (1 - t["2d_fg_mlc"] / t["3d_fg_tlc"]))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    # scaled down: an SCM of 2 % of the footprint fills and turns over in a few thousand requests
    cfg = {"hybrid": {**hybrid_params.defaults(), "scm_ratio": 0.02},
           "workload": {}, "seed": 0,
           "validate": {"workloads": ["proj_0", "hm_0", "proj_3"], "requests": 3000}}
    return studies.run_validate(cfg, tmp_path_factory.mktemp("validate"), progress=False)


@pytest.mark.validation
def test_the_model_reproduces_the_papers_findings_where_the_dies_limit(small):
    """proj_0 and hm_0 (write-intensive) keep the dies busy: 3D CT TLC wins both, 2D FG TLC is the worst
    type, block size moves IOPS little and latency more; 3D FG TLC's loss there is its die-time bound (the
    measured reason it stays below the paper's 54 %), and whole-block staging loses far more."""
    found = {f["name"]: f for f in small["findings"]}
    for name in ("3d_ct_tlc_best_on_write_intensive", "2d_fg_tlc_worst_on_write_intensive",
                 "block_size_changes_iops_little"):
        assert found[name]["holds"], (name, found[name]["detail"])
    bound = small["fg_tlc_die_time_loss_bound_percent"]
    for w in ("proj_0", "hm_0"):  # 3,000 requests: a window this short may be flagged unsteady, so not asked
        assert small["relative_iops"][w]["3d_ct_tlc"] > 1.03
        assert small["utilisation"][w]["2d_fg_mlc"]["bottleneck"] == "die"
        assert small["volumes"][w]["die_time_predicts"] == "+"
        assert 100 * (1 - small["relative_iops"][w]["3d_fg_tlc"]) == pytest.approx(bound, abs=2.0)
        if w not in small["staging_percent"]["not_run"]:  # hm_0's 2 % SCM cannot hold a 24 MiB block
            assert small["staging_percent"]["vs_2d_fg_mlc"][w]["3d_fg_tlc"] < -bound - 20
    assert "cannot lose more than" in found["3d_fg_tlc_largest_loss_about_54_percent"]["detail"]
    assert small["steady_state"]["runs"] == 3 * 7 + 2 * (3 - len(small["staging_percent"]["not_run"]))


@pytest.mark.validation
def test_a_disagreement_with_table_2_names_its_cause(small):
    """proj_3's preset (95 % reads: an assumption) reads NAND more per page programmed than the die-time
    balance of 3D CT TLC against 2D FG MLC, so the die time predicts MLC's faster read wins where the paper
    has +1.9 %; the summary puts the ratio beside the balance point, and either the sign differs with the
    bottleneck named or the volume is left out with its reason."""
    v = small["volumes"]["proj_3"]
    assert v["nand_reads_per_page_programmed"] > v["balance_point"] and v["die_time_predicts"] == "-"
    t2 = next(f for f in small["findings"] if f["name"] == "table2_signs_agree_on_at_least_6_of_7")
    if "proj_3" in small["excluded"]:
        assert "not checked: " in t2["detail"] and "proj_3 (not" in t2["detail"]
    else:
        differing = t2["detail"].split("differing:")[-1]
        assert small["relative_iops"]["proj_3"]["3d_ct_tlc"] < 1.0
        assert "proj_3" in differing and "bound by" in differing and "cost a die the same" in differing
    if "differing:" in t2["detail"]:
        assert "proj_0" not in t2["detail"].split("differing:")[1].split("not checked")[0]
