"""CLI contract of the hybrid studies: ``ssdx sweep=nand_per_workload`` and ``experiment=hybrid_sensitivity``
(small streams: a short warm-up and few measured requests)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from test_cli import ssdx_here
from test_cli_engine import _msr_file

from ssdx.paths import sweeps_dir
from ssdx.sweep import config_of

NANDS = ["2d_fg_mlc", "2d_fg_tlc", "3d_fg_tlc", "3d_ct_tlc"]
WORKLOADS = ["prxy_0", "proj_0", "hm_0", "web_1", "prxy_1", "proj_3", "src2_1"]


@pytest.mark.validation  # the 56-configuration study's contract runs longest: in the full tier
def test_nand_per_workload_sweep_contract(tmp_path):
    r = ssdx_here("sweep=nand_per_workload", "sweep.requests=1500", "hybrid.warmup_fills=0.02",
                  f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert list(s["relative_iops"]) == WORKLOADS
    for w in WORKLOADS:
        assert sorted(s["relative_iops"][w]) == sorted(NANDS)
        assert s["relative_iops"][w]["2d_fg_mlc"] == 1.0
        assert s["best_nand"][w] in NANDS
        assert s["best_nand"][w] in s["best_nand_ties"][w] and set(s["best_nand_ties"][w]) <= set(NANDS)
        for n in NANDS:
            c = s["nand_counts"][w][n]
            assert c["nand_reads"] > 0 and c["nand_writes"] >= 0  # a cold SCM misses its first reads
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == 7 * 4 * 2 and (df["requests"] == 1500).all()
    assert {"nand_reads", "nand_writes", "scm_hit_rate", "iops"} <= set(df.columns)
    # every row names its configuration, and config_of decodes the same one from the sweep file
    sweep = yaml.safe_load((sweeps_dir() / "nand_per_workload.yaml").read_text())
    assert sorted(df["config_index"]) == list(range(len(df)))
    for _, row in df.sample(5, random_state=0).iterrows():
        one = config_of(sweep, int(row["config_index"]))
        for key in ("workload.msr", "hybrid.nand", "hybrid.scm_ratio", "hybrid.channels"):
            assert one[key][0] == row[key], key
    assert (tmp_path / "relative_iops.png").stat().st_size > 0
    assert "best" in r.stdout and "outputs:" in r.stdout


def test_hybrid_sensitivity_contract(tmp_path):
    r = ssdx_here("experiment=hybrid_sensitivity", "sensitivity.requests=1500", "hybrid.warmup_fills=0.02",
                  "sensitivity.workloads=[prxy_0,proj_3]", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert sorted(s["sensitivity"]) == ["block_size", "latency", "write_unit"]
    for case, worst in s["sensitivity"].items():
        assert worst == pytest.approx(max(abs(v) for v in s["change_percent"][case].values()))
    assert s["sensitivity"]["latency"] > 0.5  # MLC's latencies change IOPS on both workloads


@pytest.mark.parametrize("override, field", [
    ("sensitivity.requests=-5", "sensitivity.requests"), ("sensitivity.requests=10", "sensitivity.requests"),
    ("sensitivity.workloads=[]", "sensitivity.workloads"), ("validate.requests=999", "validate.requests")])
def test_bad_study_settings_exit_2_before_any_compute(tmp_path, override, field):
    experiment = "hybrid_validate" if field.startswith("validate") else "hybrid_sensitivity"
    r = ssdx_here(f"experiment={experiment}", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2, r.stderr
    assert field in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "summary.json").exists()


def test_bad_hybrid_value_exits_2_naming_the_field(tmp_path):
    r = ssdx_here("experiment=hybrid_sensitivity", "hybrid.victim=random", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2
    assert "hybrid.victim" in r.stderr and "random" in r.stderr


def test_real_trace_directory_replaces_the_preset(tmp_path):
    """``workload.trace_path`` naming a directory of ``<volume>.csv`` files: the study reads the trace."""
    traces = tmp_path / "msr"
    traces.mkdir()
    ch = _msr_file(traces / "hm_0.csv", n=4000)
    out = tmp_path / "run"
    r = ssdx_here("experiment=hybrid_sensitivity", "sensitivity.requests=2000", "hybrid.warmup_fills=0.05",
                  "sensitivity.workloads=[hm_0]", f"workload.trace_path={traces}", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    st = json.loads((out / "summary.json").read_text())["streams"][0]
    assert st["source"].endswith("hm_0.csv")
    assert st["measured_requests"] + st["warmup_requests"] <= len(ch)
    r = ssdx_here("experiment=hybrid_sensitivity", "sensitivity.workloads=[proj_0]",
                  f"workload.trace_path={traces}", f"hydra.run.dir={out}")
    assert r.returncode == 2 and "proj_0.csv" in r.stderr


@pytest.mark.validation  # the paper's seven volumes on four NAND types: in the full tier
def test_hybrid_validate_contract(tmp_path):
    r = ssdx_here("experiment=hybrid_validate", "validate.requests=1500", "hybrid.warmup_fills=0.02",
                  "hybrid.settle_fills=0.05", "validate.workloads=[prxy_0,proj_3,src2_1]",
                  f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    names = [f["name"] for f in s["findings"]]
    assert len(names) == 8 and len(set(names)) == 8  # no prxy_1: no tie to check
    for f in s["findings"]:
        assert isinstance(f["holds"], bool) and f["detail"]
    assert s["holds"] == sum(f["holds"] for f in s["findings"])
    assert sorted(s["relative_iops"]) == ["proj_3", "prxy_0", "src2_1"]
    assert sorted(s["sensitivity_percent"]) == ["block_size", "latency", "write_unit"]
    assert s["setup"]["interface"] == "none" and s["staging_percent"]["staging"] == "whole"
    for w in ("prxy_0", "proj_3", "src2_1"):
        u = s["utilisation"][w]["3d_ct_tlc"]
        assert u["bottleneck"] in ("die", "channel", "scm", "link")
        assert u["link"] == 0.0  # the paper setup has no host link
        v = s["volumes"][w]
        assert v["balance_point"] == pytest.approx(s["balance_read_write_ratio"])
        assert v["die_time_predicts"] in ("+", "-", None)
    for w, why in s["excluded"].items():  # a short warm-up: whatever is left out says why
        assert w in s["relative_iops"] and ("not warmed" in why or "not steady" in why)
    assert s["steady_state"]["runs"] == 3 * 9
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == 27 and "whole:3d_fg_tlc" in set(df["case"])
    assert (tmp_path / "validation.png").stat().st_size > 0
    assert "findings of the hybrid SSD study" in r.stdout


def test_sweep_sizes_scm_by_footprint_and_by_nand(tmp_path):
    """One sweep with both SCM bases: results are grouped per (basis, ratio), the NAND basis sizes the SCM
    from hybrid.nand_capacity_gib (3 % of 16 GiB = 0.48 GiB, above 10 % of web_1's 1.5 GiB footprint)."""
    from ssdx.models.hybrid import jobs as tasks_hybrid
    from ssdx.models.hybrid import params as hybrid_params
    cfg = {"hybrid": {**hybrid_params.defaults(), "warmup_fills": 0.05, "settle_fills": 0.0,
                      "nand_capacity_gib": 16.0}, "workload": {}, "seed": 0}
    sweep = {"name": "bases", "model": "hybrid", "requests": 1000,
             "space": [{"grid": {"workload.msr": ["web_1"], "hybrid.nand": ["2d_fg_mlc", "3d_ct_tlc"],
                                 "hybrid.scm_ratio": [0.1]}},
                       {"grid": {"workload.msr": ["web_1"], "hybrid.nand": ["2d_fg_mlc", "3d_ct_tlc"],
                                 "hybrid.scm_basis": ["nand"], "hybrid.scm_ratio": [0.03]}}]}
    s = tasks_hybrid.run_sweep(sweep, cfg, tmp_path, progress=False)
    assert sorted(s["by_scm_ratio"]) == ["0.03 x nand", "0.1"]
    assert s["scm_basis"] == "footprint" and s["scm_ratio"] == 0.1
    df = pd.read_parquet(tmp_path / "results.parquet")
    lines = df.set_index("hybrid.scm_basis")["scm_lines"]
    assert lines["nand"].iloc[0] == pytest.approx(0.03 * 16 * 2**30 / 4096, rel=1e-3)
    assert lines["footprint"].iloc[0] < lines["nand"].iloc[0]
    for key in s["by_scm_ratio"]:
        assert s["by_scm_ratio"][key]["relative_iops"]["web_1"]["2d_fg_mlc"] == 1.0
