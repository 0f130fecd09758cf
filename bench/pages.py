"""The run pages and the dashboard: size, time to write, and time until drawn in headless Chromium.

Cases (each a real run of ``ssdx`` in a fresh process, then its page):

``default``: the README's first command, the 144-design ``quick`` sweep (every row kept).
``slc_design``: the shipped 15,448-design sweep (every row kept: its views show a sample of
``ssdx.report.pages.MAX_ROWS`` rows, its histograms and importances every row).
``reduced_1e6``: a fluid sweep of 10^6 designs (4 NAND types x a random sample of 250,000 over pre-fill,
fold efficiency and static pSLC size) reduced in the runner to a top-k, a Pareto front and histograms.
``dashboard_100``: ``ssdx dashboard`` over 100 run directories (copies of the ``default`` run; the first
dashboard writes their 100 pages too, timed apart).  The docs' screenshot of a dashboard is of the distinct
runs above.

For each: the page's size with Plotly's script inlined, the time to write it (``pages.write_report`` or the
dashboard's, median of ``--repeats``; the baseline it is held to is the run's own wall time: the target is
max(5 % of it, 1 s)), and the time from navigation until the page reports every figure drawn
(``window.ssdxReady``) in headless Chromium (median of ``--repeats`` fresh pages), target 2 s.  With
``--screenshots DIR`` it also saves the tops of the pages the docs show (``docs/img``).

Usage: ``python -m bench.pages [--repeats 3] [--json bench/results/pages_cpu.json] [--screenshots DIR]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ssdx.core import io
from ssdx.report import dashboard, html, pages
from ssdx.report.machine import machine

#: Chromium's switches for a headless run with no network and no GPU
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: the cases whose pages the docs show (``--screenshots``: ``pages_CASE.png``, and ``pages_dashboard.png``)
SHOWN = ("slc_design",)
TARGETS = {"page_mb": 10.0, "draw_s": 2.0, "write_share_of_run": 0.05, "write_floor_s": 1.0}

REDUCED = """name: reduced_1e6
chunk_size: 250000
n_steps: 128
space:
  grid:
    drive.nand: [ymtc_cdt1b, 3d_ct_tlc, tlc, qlc]
  random:
    n: 250000
    seed: 7
    params:
      workload.prefill_fraction: {low: 0.0, high: 0.9}
      drive.fold_efficiency: {low: 0.5, high: 1.0}
      drive.static_slc_gb: {low: 0.0, high: 64.0}
keep:
  top_k: {k: 10, by: mean_mb_s, group_by: [drive.nand], ascending: false}
  pareto: {x: workload.prefill_fraction, x_better: max, y: mean_mb_s, y_better: max}
  histograms: {metrics: [mean_mb_s, cache_gb, time_s], bins: 64, group_by: [drive.nand]}
"""


def run_ssdx(args: list[str], cwd: Path) -> float:
    """Run ``ssdx ARGS`` in a fresh process; its wall time in seconds."""
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "ssdx.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )
    if r.returncode != 0:
        raise RuntimeError(f"ssdx {' '.join(args)} failed:\n{r.stderr[-2000:]}")
    return time.perf_counter() - t


def median_time(fn, repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def draw_times(browser, path: Path, repeats: int, shot: Path | None = None) -> tuple[list[float], list[str]]:
    """Seconds from navigation to ``window.ssdxReady`` for ``repeats`` fresh pages, and console errors."""
    times, errors = [], []
    for i in range(repeats):
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        t = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_function("window.ssdxReady === true", timeout=120_000, polling=20)
        times.append(time.perf_counter() - t)
        if shot is not None and i == 0:  # the top of the page, as a reader first sees it
            page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1300, "height": 1350})
        page.close()
    return times, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--screenshots", type=Path, default=None)
    ap.add_argument("--cases", default="default,slc_design,reduced_1e6,dashboard_100")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("bench.pages: no Chromium on this machine (Debian: apt-get install chromium)")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="ssdx-pages-"))
    (work / "reduced.yaml").write_text(REDUCED)
    runs = {
        "default": [],
        "slc_design": ["sweep=slc_design"],
        "reduced_1e6": [f"sweep_file={work / 'reduced.yaml'}"],
    }
    wanted = args.cases.split(",")
    rows: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        for name in [c for c in runs if c in wanted or (c == "default" and "dashboard_100" in wanted)]:
            out = work / "out" / name
            wall = run_ssdx([*runs[name], f"hydra.run.dir=out/{name}"], work)
            write_s = median_time(lambda out=out: pages.write_report(out), args.repeats)
            page = out / "report.html"
            shot = args.screenshots / f"pages_{name}.png" if args.screenshots and name in SHOWN else None
            times, errors = draw_times(browser, page, args.repeats, shot)
            doc = json.loads((out / "summary.json").read_text())
            rows.append(
                {
                    "case": name,
                    "designs": doc.get("n_configs"),
                    "run_wall_s": wall,
                    "page_mb": page.stat().st_size / 1e6,
                    "write_s": write_s,
                    "draw_s": statistics.median(times),
                    "draw_s_all": times,
                    "console_errors": errors,
                }
            )
        if "dashboard_100" in wanted:
            dirs = []
            for i in range(100):
                d = work / "many" / f"run_{i:03d}"
                shutil.copytree(
                    work / "out" / "default", d, ignore=shutil.ignore_patterns("report.html", "chunks")
                )
                dirs.append(d)
            out = work / "dashboard.html"
            t = time.perf_counter()
            assert dashboard.main([*map(str, dirs), "-o", str(out)]) == 0  # writes each run's page too
            first_s = time.perf_counter() - t
            write_s = median_time(lambda: dashboard.main([*map(str, dirs), "-o", str(out)]), args.repeats)
            times, errors = draw_times(browser, out, args.repeats)
            rows.append(
                {
                    "case": "dashboard_100",
                    "designs": None,
                    "runs": 100,
                    "run_wall_s": None,
                    "page_mb": out.stat().st_size / 1e6,
                    "write_s": write_s,
                    "write_s_with_100_run_pages": first_s,
                    "draw_s": statistics.median(times),
                    "draw_s_all": times,
                    "console_errors": errors,
                }
            )
        if args.screenshots:  # the docs' dashboard: the distinct runs above, named as a user names them
            here = Path.cwd()
            try:
                os.chdir(work)
                dashboard.main(
                    [f"out/{n}" for n in runs if (work / "out" / n).is_dir()] + ["-o", "dashboard.html"]
                )
            finally:
                os.chdir(here)
            draw_times(browser, work / "dashboard.html", 1, args.screenshots / "pages_dashboard.png")
        browser.close()
    for r in rows:
        budget = max(TARGETS["write_share_of_run"] * (r["run_wall_s"] or 0.0), TARGETS["write_floor_s"])
        r["write_budget_s"] = budget
        r["meets"] = {
            "page_mb": r["page_mb"] <= TARGETS["page_mb"],
            "draw_s": r["draw_s"] <= TARGETS["draw_s"],
            "write_s": r["write_s"] <= budget,
            "no_console_errors": not r["console_errors"],
        }
    print(
        f"{'case':<15}{'designs':>9}{'run s':>8}{'page MB':>9}{'write s':>9}{'budget s':>9}"
        f"{'draw s':>8}  meets"
    )
    for r in rows:
        print(
            f"{r['case']:<15}{r['designs'] or '':>9}{(r['run_wall_s'] or 0):>8.1f}{r['page_mb']:>9.2f}"
            f"{r['write_s']:>9.2f}{r['write_budget_s']:>9.2f}{r['draw_s']:>8.2f}  "
            f"{'all' if all(r['meets'].values()) else [k for k, v in r['meets'].items() if not v]}"
        )
    record = {
        "benchmark": "pages",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "browser": version,
        "plotly": html.plotly_version(),
        "repeats": args.repeats,
        "targets": TARGETS,
        "baseline": "write time: the run's own wall time (target max(5 % of it, 1 s)); draw time: 2 s",
        "cases": rows,
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(io.jsonable(record), indent=2) + "\n")
        print(f"wrote {args.json}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
