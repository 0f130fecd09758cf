"""The findings of the SCM/NAND hybrid SSD study (Fukuchi et al.) checked on the model
(``ssdx.models.hybrid.jobs.run_validate``): the checks themselves on hand-made numbers, then the model on
three
MSR presets at a small size (the full size is ``ssdx experiment=hybrid_validate``)."""

from __future__ import annotations

import pytest

from ssdx.models.hybrid import jobs as tasks_hybrid
from ssdx.models.hybrid import params as hybrid_params

NANDS = ("2d_fg_mlc", "2d_fg_tlc", "3d_fg_tlc", "3d_ct_tlc")


def _rel(ct: float, fg2: float = 0.55, fg3: float = 0.62) -> dict[str, float]:
    return {"2d_fg_mlc": 1.0, "2d_fg_tlc": fg2, "3d_fg_tlc": fg3, "3d_ct_tlc": ct}


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
    found = {f["name"]: f for f in tasks_hybrid.validation_findings(rel, change, rw)}
    assert len(found) == 8
    assert all(f["holds"] for n, f in found.items() if n != "table2_signs_agree_on_at_least_6_of_7")
    assert found["table2_signs_agree_on_at_least_6_of_7"]["holds"]  # 6 of 7: src2_1 differs
    assert "differing: src2_1" in found["table2_signs_agree_on_at_least_6_of_7"]["detail"]

    tie = {**rel, "prxy_0": _rel(1.0, 1.0, 1.0)}
    util = {"prxy_0": {n: {"die": 0.3, "channel": 0.1, "scm": 0.7, "link": 1.0, "bottleneck": "link"}
                       for n in NANDS}}
    found = {f["name"]: f for f in tasks_hybrid.validation_findings(tie, change, rw, util)}
    for name in ("3d_ct_tlc_best_on_write_intensive", "2d_fg_tlc_worst_on_write_intensive"):
        assert not found[name]["holds"]
        assert "prxy_0" in found[name]["detail"] and "bound by link 1.00" in found[name]["detail"]
    big = {**change, "block_size": {**change["block_size"], "hm_0": -7.0}}
    found = {f["name"]: f for f in tasks_hybrid.validation_findings(rel, big, rw)}
    assert not found["block_size_changes_iops_little"]["holds"]
    assert not found["latency_matters_most"]["holds"]
    far = {**rel, "web_1": _rel(1.06, 0.5, 0.3)}
    assert not {f["name"]: f for f in tasks_hybrid.validation_findings(far, change, rw)}[
        "3d_fg_tlc_loss_at_most_about_54_percent"]["holds"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    # scaled down: an SCM of 2 % of the footprint fills and turns over in a few thousand requests
    cfg = {"hybrid": {**hybrid_params.defaults(), "scm_ratio": 0.02},
           "workload": {}, "seed": 0,
           "validate": {"workloads": ["proj_0", "hm_0", "proj_3"], "requests": 3000}}
    return tasks_hybrid.run_validate(cfg, tmp_path_factory.mktemp("validate"), progress=False)


@pytest.mark.validation
def test_the_model_reproduces_the_papers_findings_where_the_dies_limit(small):
    """proj_0 and hm_0 (write-intensive) and proj_3 (read-intensive) keep the dies busy: 3D CT TLC wins
    the write-intensive two, 2D FG TLC loses everywhere, 3D FG TLC loses less than ~54 %, latency moves IOPS
    most, block size and write unit little, and the gain falls as NAND reads per program rise."""
    found = {f["name"]: f for f in small["findings"]}
    for name, f in found.items():
        if name != "table2_signs_agree_on_at_least_6_of_7":
            assert f["holds"], (name, f["detail"])
    assert small["relative_iops"]["proj_0"]["3d_ct_tlc"] > 1.03
    assert small["relative_iops"]["hm_0"]["3d_ct_tlc"] > 1.03
    for w in ("proj_0", "hm_0"):
        assert small["utilisation"][w]["2d_fg_mlc"]["bottleneck"] == "die"
    assert small["nand_read_write_ratio"]["proj_3"] > tasks_hybrid.balance_ratio(hybrid_params.defaults())


@pytest.mark.validation
def test_a_disagreement_with_table_2_names_its_cause(small):
    """proj_3's preset (95 % reads: an assumption) reads NAND more per page programmed than the die-time
    balance of 3D CT TLC against 2D FG MLC, so MLC's faster read wins where the paper has +1.9 %; the
    summary says so with the bottleneck's utilisation."""
    t2 = next(f for f in small["findings"] if f["name"] == "table2_signs_agree_on_at_least_6_of_7")
    differing = t2["detail"].split("differing:")[-1]
    assert small["relative_iops"]["proj_3"]["3d_ct_tlc"] < 1.0  # MLC's faster read wins
    assert not t2["holds"] and "proj_3" in differing and "bound by" in differing
    assert "proj_0" not in differing and "hm_0" not in differing
    assert small["steady_state"]["runs"] == 3 * 7
