"""Reductions in the runner (``keep:``): top-k, Pareto and histograms merged chunk by chunk."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ssdx import params, presets
from ssdx.core import registry
from ssdx.params import ConfigError
from ssdx.sweep import config_of, executors, reduce, runner
from ssdx.sweep.job import run_sweep

BASE = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
        "model": {"n_steps": 64}, "precision": "float32"}

KEEP = {"top_k": {"k": 3, "by": "mean_mb_s", "group_by": ["drive.nand"], "ascending": False},
        "pareto": {"x": "drive.dies_per_channel", "x_better": "min", "y": "mean_mb_s", "y_better": "max"},
        "histograms": {"metrics": ["mean_mb_s"], "bins": 8, "group_by": ["drive.slc_mode"],
                       "range": {"mean_mb_s": [100.0, 3000.0]}, "log": ["mean_mb_s"],
                       "quantiles": [0.0, 0.5, 0.9, 1.0]}}


def _sweep(chunk: int, keep=KEEP) -> dict:
    return {"name": "k", "chunk_size": chunk, "on_invalid": "drop", "keep": keep,
            "space": {"grid": {"drive.user_capacity_gb": [500.0, 3000.0],
                               "drive.nand": ["tlc", "qlc", "3d_ct_tlc"],
                               "drive.slc_mode": ["dynamic", "pure_native"],
                               "drive.dies_per_channel": [2, 4]},
                      "random": {"n": 2, "seed": 5, "params": {"workload.prefill_fraction": {"low": 0.0,
                                                                                              "high": 0.8}}}}}


def _expected(df: pd.DataFrame) -> tuple[pd.DataFrame, set, dict]:
    """The reductions computed independently from the whole table with pandas."""
    top = (df.sort_values(["mean_mb_s", "config_index"], ascending=[False, True])
           .groupby("drive.nand", sort=True).head(3).sort_values(["drive.nand", "mean_mb_s", "config_index"],
                                                                  ascending=[True, False, True]))
    x, y = df["drive.dies_per_channel"].to_numpy(), df["mean_mb_s"].to_numpy()
    front = {int(df["config_index"].iloc[i]) for i in range(len(df))
             if not np.any((x <= x[i]) & (y >= y[i]) & ((x < x[i]) | (y > y[i])))}
    edges = np.geomspace(100.0, 3000.0, 9)
    hist = {}
    for mode, g in df.groupby("drive.slc_mode"):
        v = g["mean_mb_s"].to_numpy()
        inside = np.histogram(v[(v >= 100.0) & (v <= 3000.0)], bins=edges)[0]
        hist[mode] = [int((v < 100.0).sum()), *inside.tolist(), int((v > 3000.0).sum()), 0]
    return top, front, hist


def test_reductions_match_the_whole_table_and_any_chunking(tmp_path):
    full = run_sweep(_sweep(48, "all"), BASE, tmp_path / "all", progress=False)
    df = pq.read_table(tmp_path / "all" / "results.parquet").to_pandas()
    assert full["kept"] == "all" and full["n_configs"] == 24 and full["n_defined"] == 48
    # 3000 GB fits none of these die counts: 24 configurations broken by one capacity rule
    assert list(full["n_infeasible_by_rule"].values()) == [24]
    ok = np.flatnonzero(np.repeat([True, False], 24))  # capacity is the slowest grid axis
    assert df["config_index"].tolist() == ok[df["config_id"].to_numpy()].tolist()
    top, front, hist = _expected(df)
    got = {}
    for chunk in (48, 5, 3):
        d = tmp_path / f"c{chunk}"
        s = run_sweep(_sweep(chunk), BASE, d, progress=False)
        assert not (d / "results.parquet").exists()
        assert s["n_configs"] == 24 and s["n_infeasible_by_rule"] == full["n_infeasible_by_rule"]
        assert not list((d / "chunks").glob("*.parquet"))  # only reduction states were checkpointed
        # pictures of what was kept: every group's histogram (quantiles marked) and the front's rows
        assert s["plots"] == {"histograms_png": str(d / "histograms.png"), "front_png": str(d / "front.png")}
        assert all((d / f).stat().st_size > 10_000 for f in ("histograms.png", "front.png"))
        got[chunk] = ({f: pq.read_table(d / f).to_pandas() for f in ("top_k.parquet", "pareto.parquet")},
                      json.loads((d / "histograms.json").read_text()))
    t = got[48][0]["top_k.parquet"]
    assert t["config_index"].tolist() == top["config_index"].tolist()
    assert t["mean_mb_s"].tolist() == top["mean_mb_s"].tolist()
    assert t["rank"].tolist() == [1, 2, 3] * 3
    assert set(got[48][0]["pareto.parquet"]["config_index"]) == front
    h = {g["group"]["drive.slc_mode"]: g["counts"]["mean_mb_s"] for g in got[48][1]["groups"]}
    assert h == hist and sum(map(sum, h.values())) == 24
    # each quantile's bracket holds the order statistic pandas finds in the whole table
    for g in got[48][1]["groups"]:
        v = np.sort(df.loc[df["drive.slc_mode"] == g["group"]["drive.slc_mode"], "mean_mb_s"].to_numpy())
        for e in g["quantiles"]["mean_mb_s"]:
            exact = v[max(1, int(np.ceil(e["q"] * len(v)))) - 1]
            assert e["n"] == len(v) and (e["low"] is None or e["low"] <= exact)
            assert e["high"] is None or exact <= e["high"]
    for chunk in (5, 3):
        for f in ("top_k.parquet", "pareto.parquet"):
            pd.testing.assert_frame_equal(got[chunk][0][f], got[48][0][f], check_exact=True)
        assert got[chunk][1] == got[48][1]


def test_a_kept_configuration_rerun_alone_gives_the_same_metrics(tmp_path):
    sweep = _sweep(7)
    run_sweep(sweep, BASE, tmp_path, progress=False)
    t = pq.read_table(tmp_path / "top_k.parquet").to_pandas()
    row = t.iloc[4]
    cols = config_of(sweep, int(row["config_index"]), BASE)
    assert cols["workload.prefill_fraction"][0] == row["workload.prefill_fraction"]
    alone = runner.run(cols, registry.fluid_model(64), chunk_size=1, progress=False).to_pandas()
    for m in ("mean_mb_s", "time_s", "cache_gb"):
        assert alone[m].iloc[0] == row[m]
    with pytest.raises(ConfigError, match="index"):
        config_of(sweep, 48, BASE)


def test_every_row_of_a_whole_table_carries_its_index_in_the_space(tmp_path):
    # with on_invalid: drop the rows of results.parquet are the feasible configurations, numbered by
    # config_id; config_index is each one's position in the space, what the reduced outputs carry and
    # config_of decodes: the infeasible 3000 GB half comes first here, so the two differ by 24
    sweep = _sweep(5, "all")
    sweep["space"]["grid"]["drive.user_capacity_gb"] = [3000.0, 500.0]
    run_sweep(sweep, BASE, tmp_path, progress=False)
    df = pq.read_table(tmp_path / "results.parquet").to_pandas()
    assert len(df) == 24
    assert (df["config_index"] - df["config_id"]).tolist() == [24] * 24
    for _, row in df.iloc[[0, 9, 23]].iterrows():
        cols = params.effective_columns(config_of(sweep, int(row["config_index"]), BASE))
        for k, v in cols.items():
            assert row[k] == v[0], k


def test_resume_of_a_reduced_sweep_gives_the_same_reductions(tmp_path):
    class CrashAfter(executors.LocalExecutor):
        def map(self, jobs):
            for i, item in enumerate(super().map(jobs)):
                if i == 3:
                    raise RuntimeError("simulated crash")
                yield item

    ref = tmp_path / "ref"
    run_sweep(_sweep(4), BASE, ref, progress=False)
    d = tmp_path / "crashed"
    with pytest.raises(RuntimeError, match="simulated"):
        run_sweep(_sweep(4), BASE, d, progress=False, executor=CrashAfter(1))
    assert len(list((d / "chunks").glob("chunk_*.json"))) == 3
    s = run_sweep(_sweep(4), BASE, d, progress=False)
    assert s["resumed_chunks"] == 3
    for f in ("top_k.parquet", "pareto.parquet"):
        pd.testing.assert_frame_equal(pq.read_table(d / f).to_pandas(), pq.read_table(ref / f).to_pandas())
    assert (d / "histograms.json").read_text() == (ref / "histograms.json").read_text()


@pytest.mark.parametrize("log", [True, False])
def test_quantiles_bracket_the_order_statistic_and_the_estimate_keeps_its_bound(log):
    """Against numpy's lower (``inverted_cdf``) quantile of the raw values: the bracket holds it, the
    estimate is within the stated error (relative on log bins: (g - 1) / (g + 1) for edges g apart), and
    values out of the range or NaN are never placed in a bin."""
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.lognormal(np.log(300.0), 1.0, 5000), [np.nan] * 7, [1.0, 2.0, 9e3]])
    lo, hi, bins = 10.0, 5000.0, 200
    spec = reduce.parse({"histograms": {"metrics": ["m"], "bins": bins, "range": {"m": [lo, hi]},
                                        "log": ["m"] if log else [],
                                        "quantiles": [0.0, 0.001, 0.25, 0.5, 0.99, 0.9999, 1.0]}})
    h = spec["histograms"]
    r = reduce.Reducer(spec, {})
    st = r.merge(r.chunk({"config_id": np.arange(2000), "m": v[:2000]}),
                 r.chunk({"config_id": np.arange(2000, len(v)), "m": v[2000:]}))
    got = reduce.quantiles_of(st["histograms"]["[]"]["m"], h["edges"]["m"], h["quantiles"], log)
    finite = v[~np.isnan(v)]
    g = (hi / lo) ** (1 / bins)
    for e in got:
        exact = float(np.quantile(finite, e["q"], method="inverted_cdf"))
        assert e["n"] == len(finite) and e["rank"] == max(1, int(np.ceil(e["q"] * len(finite) - 1e-9)))
        if exact < lo:
            assert e["low"] is None and e["high"] == lo and e["value"] is None
        elif exact > hi:
            assert e["low"] == hi and e["high"] is None and e["value"] is None
        else:
            assert e["low"] <= exact <= e["high"]
            if log:
                assert e["error"] == pytest.approx((g - 1) / (g + 1), rel=1e-9)
                assert abs(e["value"] - exact) <= e["error"] * exact * (1 + 1e-12)
            else:
                assert e["error"] == pytest.approx((hi - lo) / bins / 2, rel=1e-9)
                assert abs(e["value"] - exact) <= e["error"] * (1 + 1e-12)
    assert got[0]["high"] == lo and got[-1]["low"] == hi  # the sample spills over both ends
    assert reduce.quantiles_of([0] * (bins + 2) + [3], h["edges"]["m"], [0.5], log)[0]["value"] is None
    for bad in ([1.5], "0.5", [True], [-0.1]):
        with pytest.raises(ConfigError, match="quantiles"):
            reduce.parse({"histograms": {"metrics": ["m"], "range": {"m": [1.0, 2.0]}, "quantiles": bad}})


def test_merge_is_associative_and_histograms_keep_out_of_range_values():
    spec = reduce.parse({"top_k": {"k": 2, "by": "m"}, "pareto": {"x": "m", "y": "q", "y_better": "max"},
                         "histograms": {"metrics": ["m"], "bins": 2, "range": {"m": [0.0, 2.0]}}})
    cols = {"g": np.zeros(6)}
    r = reduce.Reducer(spec, cols)
    m = np.array([-1.0, 0.5, 1.0, 2.0, 5.0, np.nan])
    q = np.array([0.0, 1.0, 3.0, 2.0, 4.0, 1.0])
    parts = [r.chunk({"config_id": np.arange(i, i + 2), "m": m[i:i + 2], "q": q[i:i + 2]}) for i in (0, 2, 4)]
    a = r.merge(r.merge(parts[0], parts[1]), parts[2])
    b = r.merge(parts[0], r.merge(parts[2], parts[1]))
    assert reduce.dumps(a) == reduce.dumps(b)
    assert [e[1] for e in a["top_k"]["[]"]] == [4, 3]  # descending, NaN never ranks
    # (m, q): (-1, 0) (0.5, 1) (1, 3) (2, 2) (5, 4); min m, max q: (-1,0) (0.5,1) (1,3) (5,4)? (5,4) is worse
    # in m than (1,3) but better in q, so it stays; (2,2) is dominated by (1,3)
    assert sorted(e[2] for e in a["pareto"]) == [0, 1, 2, 4]
    # under (-1), [0,1): 0.5, [1,2]: 1 and 2, over: 5, nan: 1
    assert a["histograms"]["[]"]["m"] == [1, 1, 2, 1, 1]
    with pytest.raises(ConfigError, match="range.m"):
        reduce.parse({"histograms": {"metrics": ["m"], "range": {"m": [1.0]}}})
    with pytest.raises(ConfigError, match="lo > 0"):
        reduce.parse({"histograms": {"metrics": ["m"], "range": {"m": [0.0, 1.0]}, "log": ["m"]}})
    assert reduce.parse({"histograms": {"metrics": ["m"]}})["histograms"]["auto"] == ["m"]  # a pilot sets it
    with pytest.raises(ConfigError, match="x_better"):
        reduce.parse({"pareto": {"x": "a", "y": "b", "x_better": "least"}})


@pytest.mark.validation
def test_sigkill_mid_reduced_sweep_then_rerun_gives_the_uninterrupted_reductions(tmp_path):
    """kill -9 a reduction-only sweep through the CLI, run it again: the same files as an uninterrupted
    run, and the full run's keep: all table gives the same top-k."""
    import os
    import signal
    import subprocess
    import sys
    import time

    keep = ("sweep.keep={top_k: {k: 2, by: mean_mb_s, group_by: [drive.slc_mode]}, histograms: "
            "{metrics: [mean_mb_s], bins: 16, range: {mean_mb_s: [50, 5000]}, log: [mean_mb_s], "
            "quantiles: [0.5]}, "
            "pareto: {x: drive.dies_per_channel, y: mean_mb_s, y_better: max}}")

    def cmd(run_dir, *extra):
        return [sys.executable, "-m", "ssdx.cli.main", f"hydra.run.dir={run_dir}", "sweep.chunk_size=4",
                "sweep.n_steps=25000", "runner.devices=1", *extra]  # ~0.05 s a chunk: killed mid-sweep

    env = dict(os.environ, TQDM_DISABLE="1")
    killed, full = tmp_path / "killed", tmp_path / "full"
    proc = subprocess.Popen(cmd(killed, keep), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (killed / "chunks").exists() and len(list((killed / "chunks").glob("chunk_*.json"))) >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    done = len(list((killed / "chunks").glob("chunk_*.json")))
    assert 3 <= done < 36 and not (killed / "top_k.parquet").exists()
    r = subprocess.run(cmd(killed, keep), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"resumed: {done} of 36 chunks" in r.stdout
    r = subprocess.run(cmd(full, keep.replace("{top_k", "{all: true, top_k")), env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # the table and its reductions: the quantiles printed and the histograms drawn as for a reduced sweep
    assert "quantiles (value: estimate;" in r.stdout and (full / "histograms.png").stat().st_size > 10_000
    for f in ("top_k.parquet", "pareto.parquet"):
        pd.testing.assert_frame_equal(pq.read_table(killed / f).to_pandas(),
                                      pq.read_table(full / f).to_pandas())
    assert (killed / "histograms.json").read_text() == (full / "histograms.json").read_text()
    df = pq.read_table(full / "results.parquet").to_pandas()
    want = (df.sort_values(["mean_mb_s", "config_id"], ascending=[False, True])
            .groupby("drive.slc_mode").head(2))
    assert sorted(pq.read_table(killed / "top_k.parquet").column("config_index").to_pylist()) == \
        sorted(want["config_id"])


def test_a_keep_naming_no_column_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="mean_mbs"):
        run_sweep(_sweep(48, {"top_k": {"k": 1, "by": "mean_mbs"}}), BASE, tmp_path, progress=False)
    with pytest.raises(ConfigError, match="sweep.keep.speed"):
        run_sweep(_sweep(48, {"speed": {}}), BASE, tmp_path / "b", progress=False)


def test_config_of_decodes_every_index_as_the_expanded_space_has_it():
    from ssdx.sweep.job import sweep_space

    sweep = {"base": {"drive.user_capacity_gb": 500.0}, "on_invalid": "drop",
             "space": [{"grid": {"drive.slc_mode": ["dynamic", "static"],
                                 "drive.dies_per_channel": [2, 4, 8]},
                        "random": {"n": 3, "seed": 7, "params": {
                            "drive.static_slc_gb": {"low": 4.0, "high": 24.0, "log": True},
                            "drive.nand": {"choices": ["tlc", "qlc", "3d_ct_tlc"]}}},
                        "sobol": {"n": 4, "seed": 2, "params": {
                            "workload.prefill_fraction": {"low": 0, "high": 0.8},
                            "drive.channels": {"low": 2, "high": 8, "integer": True}}}},
                       {"list": [{"drive.slc_mode": "pure_slc"}, {"drive.slc_mode": "pure_native"}],
                        "grid": {"drive.fold_efficiency": [0.5, 1.0]}}]}
    cols, _, _, n = sweep_space(sweep, BASE)
    assert n == 2 * 3 * 3 * 4 + 2 * 2
    for i in range(n):
        one = config_of(sweep, i, BASE)
        for k, v in cols.items():
            assert one[k].dtype == v.dtype, k
            assert one[k].tolist() == v[[i]].tolist() or (np.isnan(v[i]) and np.isnan(one[k][0])), (i, k)
    with pytest.raises(ConfigError, match="index"):
        config_of(sweep, n, BASE)


def test_a_pilot_smaller_than_the_sweep_loses_no_configuration(tmp_path, monkeypatch):
    """With a pilot of 5 of the 48 indices (2 of them feasible) most values fall outside its range: they
    are counted under and over it, the same on every chunking, and every configuration is counted."""
    monkeypatch.setattr(reduce, "PILOT", 5)
    keep = {"histograms": {"metrics": ["mean_mb_s"], "bins": 4, "group_by": ["drive.slc_mode"],
                           "quantiles": [0.0, 1.0]}}
    got = []
    for chunk in (48, 5):
        run_sweep(_sweep(chunk, keep), BASE, tmp_path / f"c{chunk}", progress=False)
        got.append(json.loads((tmp_path / f"c{chunk}" / "histograms.json").read_text()))
    assert got[0] == got[1] and got[0]["range_from"]["mean_mb_s"] == "pilot sample of 2 configurations"
    counts = np.array([g["counts"]["mean_mb_s"] for g in got[0]["groups"]])
    assert counts.sum() == 24 and counts[:, -1].sum() == 0  # every configuration, none NaN
    assert counts[:, 0].sum() + counts[:, -2].sum() > 0  # some below or above the pilot's range
    q = [e for g in got[0]["groups"] for e in g["quantiles"]["mean_mb_s"]]
    assert any(e["low"] is None or e["high"] is None for e in q)  # such a quantile says where it lies


def test_auto_ranges_come_from_a_pilot_fixed_by_the_sweep_and_lose_nothing(tmp_path):
    """Histograms without a declared range take their edges from the pilot sample (the model run on
    configurations spread evenly over the space, before the sweep): the same edges and counts whatever the
    chunking, every configuration counted (in a bin or out of range), and the range the pilot's least and
    greatest values widened by the margin."""
    keep = {"histograms": {"metrics": ["mean_mb_s", "drive.dies_per_channel"], "bins": 8,
                           "group_by": ["drive.slc_mode"], "log": ["mean_mb_s"], "quantiles": [0.5]}}
    got = {}
    for chunk in (48, 5):
        d = tmp_path / f"c{chunk}"
        s = run_sweep(_sweep(chunk, keep), BASE, d, progress=False)
        got[chunk] = json.loads((d / "histograms.json").read_text())
        assert s["n_configs"] == 24
    assert got[5] == got[48]
    h = got[48]
    assert h["range_from"] == {m: "pilot sample of 24 configurations" for m in ("mean_mb_s",
                                                                                 "drive.dies_per_channel")}
    full = run_sweep(_sweep(48, "all"), BASE, tmp_path / "all", progress=False)
    assert full["n_configs"] == 24
    df = pq.read_table(tmp_path / "all" / "results.parquet").to_pandas()
    v = df["mean_mb_s"].to_numpy()  # 24 feasible configurations: the pilot took every one
    r = (v.max() / v.min()) ** reduce.PILOT_MARGIN
    assert h["edges"]["mean_mb_s"][0] == pytest.approx(v.min() / r, rel=1e-12)
    assert h["edges"]["mean_mb_s"][-1] == pytest.approx(v.max() * r, rel=1e-12)
    e = h["edges"]["drive.dies_per_channel"]  # a configuration column: 2 or 4 dies, span 2
    assert (e[0], e[-1]) == pytest.approx((2 - 0.1 * 2, 4 + 0.1 * 2), rel=1e-12)
    total = sum(sum(g["counts"]["mean_mb_s"][:-1]) for g in h["groups"])
    assert total == 24 and all(g["counts"]["mean_mb_s"][0] == g["counts"]["mean_mb_s"][-2] == 0
                               for g in h["groups"])
    lin = reduce.parse({"histograms": {"metrics": ["m"], "bins": 4}})
    reduce.set_auto_ranges(lin, {"m": np.array([1.0, 10.0, np.nan])}, 3)
    assert lin["histograms"]["edges"]["m"] == pytest.approx([0.1, 2.8, 5.5, 8.2, 10.9], rel=1e-12)  # +-0.9
    reduce.set_auto_ranges(lin, {"m": np.array([5.0])}, 1)
    assert lin["histograms"]["edges"]["m"][0] == pytest.approx(0.1, rel=1e-12)  # fixed once: left as it is
    lin = reduce.parse({"histograms": {"metrics": ["m"], "bins": 4}})
    reduce.set_auto_ranges(lin, {"m": np.array([0.5, 10.0])}, 2)
    assert lin["histograms"]["edges"]["m"][0] == 0.0  # the margin stops at zero for values >= 0
    with pytest.raises(ConfigError, match="range.mean_mbs.*names no histogram metric"):
        reduce.parse({"histograms": {"metrics": ["mean_mb_s"], "range": {"mean_mbs": [1.0, 2.0]}}})
    with pytest.raises(ConfigError, match="pilot sample"):
        reduce.set_auto_ranges(reduce.parse({"histograms": {"metrics": ["m"], "log": ["m"]}}),
                               {"m": np.array([0.0, -1.0, np.nan])}, 3)


@pytest.mark.parametrize("name", ["quick", "tmt_grid", "wa_spare", "engine_design", "nand_per_workload"])
def test_a_configuration_is_decoded_on_the_composed_defaults_without_a_base(name):
    # config_of without a base config decodes on what `ssdx sweep=NAME` composes without overrides: the
    # default drive and workload and each block the sweep's model reads (thermal, gc, engine, hybrid)
    from conftest import compose_config

    composed = compose_config(f"sweep={name}")
    sweep = composed["sweep"]
    for index in (0, 3):
        alone, on_composed = config_of(sweep, index), config_of(sweep, index, composed)
        assert sorted(alone) == sorted(on_composed)
        for key, value in on_composed.items():
            np.testing.assert_array_equal(np.asarray(alone[key]), np.asarray(value), err_msg=key)
