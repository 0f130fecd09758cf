"""``report.html`` and ``ssdx dashboard`` without a browser: what the pages carry (rows, Pareto front,
commands, importances, samples) and how bad directories are named.  The pages drawn in a real browser:
``test_pages_browser.py``."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from test_cli import ssdx

from ssdx.core import io
from ssdx.report import dashboard, html, pages, run_dir, sweep_page


def page_data(path) -> dict:
    """The ``window.SSDX`` document of a page (its file, or its text)."""
    text = path if isinstance(path, str) else path.read_text(encoding="utf-8")
    m = re.search(r"<script>window\.SSDX = (.*?);</script>", text, re.S)
    assert m, "no page data"
    return json.loads(m.group(1).replace("<\\/", "</"))


def front_of(x, y, x_max: bool, y_max: bool) -> set[int]:
    """Indices of the 2-D Pareto front by the definition (no point at least as good on both, better on
    one), O(n^2): the reference for the page's own front."""
    sx, sy = (-1 if x_max else 1), (-1 if y_max else 1)
    pts = [(sx * a, sy * b) for a, b in zip(x, y, strict=True)]
    return {
        i for i, (a, b) in enumerate(pts) if not any(c <= a and d <= b and (c < a or d < b) for c, d in pts)
    }


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    r = ssdx(f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    assert f"report: {out / 'report.html'}" in r.stdout
    return out


def test_the_default_sweeps_page_carries_every_design_its_knobs_and_its_front(quick):
    summary = json.loads((quick / "summary.json").read_text())
    df = pd.read_parquet(quick / "results.parquet")
    d = page_data(quick / "report.html")
    rows = d["rows"]
    assert rows["n_rows"] == rows["n_total"] == 144 == len(df)
    # the sweep's four knobs, not the NAND timings that follow from drive.nand
    assert sorted(rows["params"]) == sorted(
        ["drive.slc_mode", "drive.nand", "drive.dies_per_channel", "workload.prefill_fraction"]
    )
    assert rows["columns"]["config_index"] == df["config_index"].tolist()
    scatter = next(s for s in d["sections"] if s["spec"].get("view") == "scatter")
    assert (scatter["spec"]["x"], scatter["spec"]["y"]) == (summary["pareto"]["x"], summary["pareto"]["y"])
    assert (scatter["spec"]["x_better"], scatter["spec"]["y_better"]) == ("min", "max")
    # the front the page starts from is summary.json's
    x, y = (
        np.asarray(rows["columns"][scatter["spec"]["x"]]),
        np.asarray(rows["columns"][scatter["spec"]["y"]]),
    )
    want = {(r[summary["pareto"]["x"]], r[summary["pareto"]["y"]]) for r in summary["pareto"]["front"]}
    assert {(x[i], y[i]) for i in front_of(x, y, False, True)} == want
    assert rows["command"] == "ssdx ++sweep.only={INDEX} hydra.run.dir=out/design_{INDEX}"
    kinds = [s["title"] for s in d["sections"]]
    for title in (
        "Parallel coordinates",
        "Best design per group",
        "Histograms",
        "Infeasible designs",
        "Which parameters matter",
    ):
        assert title in kinds
    best = next(s for s in d["sections"] if s["title"] == "Best design per group")["spec"]
    assert len(best["rows"]) == len(summary["best"]) == 12


def test_the_command_a_design_shows_reruns_that_design(quick, tmp_path):
    df = pd.read_parquet(quick / "results.parquet")
    row = df.iloc[77]
    cmd = page_data(quick / "report.html")["rows"]["command"].replace("{INDEX}", str(row["config_index"]))
    args = cmd.split()[1:]
    r = ssdx(*args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    one = pd.read_parquet(tmp_path / f"out/design_{row['config_index']}" / "results.parquet")
    assert len(one) == 1 and one["config_index"].iloc[0] == row["config_index"]
    for m in ("mean_mb_s", "cache_gb", "time_s"):
        np.testing.assert_allclose(one[m].iloc[0], row[m], rtol=1e-5, err_msg=m)


def test_importance_is_the_main_effect_share_of_a_known_sum():
    # y = 3 a + b on a full 4 x 5 grid: Var(3a) / Var(y) and Var(b) / Var(y) exactly, nothing for c
    a, b, c = np.meshgrid(np.arange(4.0), np.arange(5.0), [0.0, 1.0], indexing="ij")
    df = pd.DataFrame({"a": a.ravel(), "b": b.ravel(), "c": c.ravel()})
    df["y"] = 3 * df["a"] + df["b"]
    s = sweep_page.importances(df, ["a", "b", "c"], ["y"]).get("y", {})
    var_a, var_b = 9 * np.var(np.arange(4.0)), np.var(np.arange(5.0))
    assert s["a"] == pytest.approx(var_a / (var_a + var_b)) and s["b"] == pytest.approx(
        var_b / (var_a + var_b)
    )
    assert s["c"] == pytest.approx(0.0, abs=1e-12)
    # an interaction alone (y = a * sign) is no main effect of either
    df["z"] = (df["a"] - 1.5) * np.where(df["c"] > 0, 1, -1)
    s = sweep_page.importances(df, ["a", "c"], ["z"]).get("z", {})
    assert s["a"] == pytest.approx(0.0, abs=1e-12) and s["c"] == pytest.approx(0.0, abs=1e-12)
    assert (
        sweep_page.importances(df.assign(k=1.0), ["a"], ["k"]).get("k", {}) == {}
    )  # a constant metric: nothing to share


def _fake_sweep(tmp_path, n: int) -> None:
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "config_id": np.arange(n),
            "config_index": np.arange(n) * 2,
            "drive.channels": rng.choice([4, 8, 16], n),
            "engine.loop": rng.choice(["open", "closed"], n),
            "iops": rng.random(n),
            "cost_usd": rng.random(n),
        }
    )
    df.to_parquet(tmp_path / "results.parquet")
    best = df.nlargest(2, "iops").to_dict(orient="records")
    (tmp_path / "summary.json").write_text(
        json.dumps(
            io.jsonable(
                {
                    "sweep": "fake",
                    "n_configs": n,
                    "n_defined": n,
                    "metrics": {"iops": {}, "cost_usd": {}},
                    "best": best,
                    "best_by": {"metric": "iops", "ascending": False, "group_by": []},
                    "kept": "all",
                    "n_infeasible_by_rule": {"drive.channels: must be a power of two": 3},
                }
            )
        )
    )


def test_a_large_table_is_sampled_for_the_views_and_the_page_says_so(tmp_path):
    _fake_sweep(tmp_path, 12_000)
    pages.write_report(tmp_path)
    d = page_data(tmp_path / "report.html")
    rows = d["rows"]
    best = {r["config_index"] for r in json.loads((tmp_path / "summary.json").read_text())["best"]}
    n = sweep_page.MAX_ROWS
    assert rows["n_total"] == 12_000 and n <= rows["n_rows"] <= n + len(best)
    assert best <= set(rows["columns"]["config_index"])
    assert "uniform random sample of 5,000" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert rows["params"] == ["drive.channels", "engine.loop"]
    infeasible = next(s for s in d["sections"] if s["title"] == "Infeasible designs")["spec"]
    assert infeasible["rows"] == [["drive.channels: must be a power of two", 3]]


def test_a_reduced_sweep_is_drawn_from_what_it_kept(tmp_path):
    sweep = tmp_path / "reduced.yaml"
    sweep.write_text("""name: reduced
chunk_size: 36
n_steps: 64
space:
  grid:
    drive.nand: [ymtc_cdt1b, tlc, qlc]
    drive.dies_per_channel: [4, 8, 16]
    workload.prefill_fraction: [0.0, 0.3, 0.6, 0.9]
keep:
  top_k: {k: 3, by: mean_mb_s, ascending: false}
  pareto: {x: time_s, x_better: min, y: mean_mb_s, y_better: max}
  histograms: {metrics: [mean_mb_s], bins: 16, quantiles: [0.5]}
""")
    out = tmp_path / "run"
    r = ssdx(f"sweep_file={sweep}", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    d = page_data(out / "report.html")
    kept = set(pd.read_parquet(out / "top_k.parquet")["config_index"]) | set(
        pd.read_parquet(out / "pareto.parquet")["config_index"]
    )
    assert set(d["rows"]["columns"]["config_index"]) == kept and len(kept) < 36
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "reduced in the runner" in text and "Which parameters matter" not in text
    assert (
        d["rows"]["command"]
        == f"ssdx sweep_file={sweep} ++sweep.only={{INDEX}} hydra.run.dir=out/design_{{INDEX}}"
    )
    hist = next(s for s in d["sections"] if s["title"] == "Histograms")["spec"]
    counts = json.loads((out / "histograms.json").read_text())["groups"][0]["counts"]["mean_mb_s"]
    assert sum(hist["data"][0]["y"][:-1]) + counts[0] + counts[-2] + counts[-1] == 36
    median = json.loads((out / "histograms.json").read_text())["groups"][0]["quantiles"]["mean_mb_s"][0]
    line = [m for m in hist["layout"]["shapes"] if m["type"] == "line"]
    assert [m["x0"] for m in line] == [median["value"]] and median["q"] == 0.5


def test_an_experiments_page_holds_its_figures_tables_and_pngs(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    d = page_data(tmp_path / "report.html")
    titles = [s["title"] for s in d["sections"]]
    assert "Fill curve" in titles and "phases" in titles and "fill curve" in titles  # the PNG, as an image
    phases = next(s for s in d["sections"] if s["title"] == "phases")["spec"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [row[0] for row in phases["rows"]] == [p["name"] for p in summary["phases"]]
    fill = next(s for s in d["sections"] if s["title"] == "Fill curve")["spec"]
    assert len(fill["layout"]["shapes"]) == len(summary["phases"])


def test_script_json_cannot_close_the_script_element():
    text = html.script_json({"a": "</script><script>alert(1)</script>", "b": float("nan")})
    assert "</script>" not in text and json.loads(text.replace("<\\/", "</"))["b"] is None


def test_dashboard_lists_runs_names_what_is_missing_and_exits_2_with_none(quick, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "summary.json").write_text('{"sweep": "x",\n "n_')
    (tmp_path / "stopped" / "chunks").mkdir(parents=True)
    (tmp_path / "stopped" / "chunks" / "chunk_000000.parquet").write_bytes(b"")
    out = tmp_path / "dash.html"
    dirs = [str(quick), *(str(tmp_path / n) for n in ("empty", "cut", "stopped"))]
    assert dashboard.main([*dirs, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "empty: no summary.json and no .hydra/" in err
    assert "cut: summary.json is not valid JSON (line 2" in err
    assert "stopped: no summary.json: a sweep that stopped after 1 checkpointed chunk" in err
    d = page_data(out)
    runs = d["sections"][0]["spec"]
    assert len(runs["rows"]) == 1 and runs["rows"][0][0]["href"].endswith("report.html")
    assert (out.parent / runs["rows"][0][0]["href"]).resolve() == (quick / "report.html").resolve()
    assert len(d["sections"][-1]["spec"]["rows"]) == 3
    assert dashboard.main([str(tmp_path / "empty"), "-o", str(tmp_path / "none.html")]) == 2
    assert "no directory holds a finished run" in capsys.readouterr().err
    assert not (tmp_path / "none.html").exists()


def test_a_thermal_runs_page_draws_its_trace_against_tmt1_and_tmt2(tmp_path):
    t = np.arange(1.0, 6.0)
    pd.DataFrame(
        {
            "time_s": t,
            "composite_k": 340 + t,
            "nand_k": 338 + t,
            "speed_mb_s": [2000, 2000, 900, 900, 0],
            "level": [0, 0, 1, 1, 0],
        }
    ).to_csv(tmp_path / "thermal.csv", index=False)
    (tmp_path / "summary.json").write_text(
        json.dumps({"tmt1_k": 353.0, "tmt2_k": 358.0, "max_composite_c": 71.85})
    )
    pages.write_report(tmp_path)
    d = page_data(tmp_path / "report.html")
    fig = next(s for s in d["sections"] if s["title"] == "Temperature, speed and throttling")["spec"]
    assert [tr["name"] for tr in fig["data"]] == ["composite", "NAND", "write speed", "throttle level"]
    np.testing.assert_allclose(fig["data"][0]["y"], 340 + t - 273.15)
    assert [round(s["y0"], 2) for s in fig["layout"]["shapes"]] == [79.85, 84.85]


def test_the_rerun_command_is_the_jobs_own_arguments_quoted():
    cmd = run_dir.rerun_command(
        ["-m", "hydra.run.dir=x", "sweep.only=3", "+sweep.only=4", "drive.nand=it's", "sweep_file=rel/s.yaml"]
    )
    assert (
        cmd.startswith("ssdx 'drive.nand=it'\"'\"'s' sweep_file=/")
        and "rel/s.yaml ++sweep.only={INDEX}" in cmd
    )
    assert "-m" not in cmd.split() and "hydra.run.dir=x" not in cmd and "sweep.only=3" not in cmd


def test_importances_take_a_parameter_with_missing_values():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x.knob": rng.random(50), "y": rng.random(50)})
    df.loc[3, "x.knob"] = np.nan
    shares = sweep_page.importances(df, ["x.knob"], ["y"])["y"]
    assert 0.0 <= shares["x.knob"] <= 1.0


def test_dashboard_links_cannot_be_a_scheme_and_bad_records_are_named(quick, tmp_path, capsys):
    import shutil

    odd = tmp_path / "javascript:alert(1);0#x"
    shutil.copytree(quick, odd)
    (odd / "report.html").unlink()
    bad_text = tmp_path / "bad_text"
    bad_text.mkdir()
    (bad_text / "summary.json").write_bytes(b"\xff\xfe{}")
    bad_yaml = tmp_path / "bad_yaml"
    shutil.copytree(quick, bad_yaml)
    (bad_yaml / ".hydra" / run_dir.ARGS_FILE).write_text("a: [")
    out = tmp_path / "dash.html"
    assert dashboard.main([str(odd), str(bad_text), str(bad_yaml), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "bad_text: summary.json is not UTF-8 text" in err
        and "bad_yaml: its .hydra/ record cannot be read" in err
    )
    href = page_data(out)["sections"][0]["spec"]["rows"][0][0]["href"]
    assert href == "./javascript%3Aalert%281%29%3B0%23x/report.html"


def test_a_served_dashboard_takes_in_runs_that_finish_later(quick, tmp_path):
    import shutil
    import threading
    import urllib.request

    runs = tmp_path / "out"
    runs.mkdir()
    shutil.copytree(quick, runs / "a")
    server, page = dashboard.make_server([str(runs / "*")], tmp_path / "dash.html", port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"

        def shown() -> int:
            text = urllib.request.urlopen(url + "/", timeout=30).read().decode()  # redirected to the page
            assert '<meta http-equiv="refresh" content="10">' in text
            return len(page_data(text)["sections"][0]["spec"]["rows"])

        assert page == "/dash.html" and shown() == 1
        shutil.copytree(quick, runs / "b")  # a run that finished after the server started
        assert shown() == 2
        assert (
            urllib.request.urlopen(url + "/out/b/report.html", timeout=30).status == 200
        )  # its page, linked
    finally:
        server.shutdown()
        server.server_close()
