"""``report.html`` and ``dashboard.html`` in a real browser: headless Chromium driven by Playwright.

Every plot drawn with no JavaScript error, the Pareto front drawn equal to ``summary.json``'s, hovering a
design shows its configuration, clicking it shows the command that reruns it, and that command, run,
reproduces the design's metrics.  Where Playwright or Chromium is missing, these tests say so (skipped
with the reason) and the rest of the suite runs; ``.ci/run`` installs both."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from test_cli import ssdx
from test_pages import front_of

from bench.pages import ARGS  # Chromium's switches for a headless run with no network and no GPU
from ssdx.report import dashboard

pytestmark = pytest.mark.validation


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip(
        "playwright.sync_api",
        reason="no Playwright: the browser tests need it (pip install -e '.[validation]')",
    )
    exe = chromium_path()
    if exe is None:
        pytest.skip(
            "no Chromium on this machine: the browser tests need it (Debian: apt-get install chromium)"
        )
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=ARGS, headless=True)
        yield b
        b.close()


def open_page(browser, path):
    """The page at ``path``, drawn (``window.ssdxReady``), and the list its console errors go to."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function("window.ssdxReady === true", timeout=60_000)
    return page, errors


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    r = ssdx(f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    return out


def drawn_plots(page) -> list[dict]:
    """Each plot of the page: its section's title, its Plotly traces' types (none for the parallel
    coordinates, drawn on a canvas) and its drawn SVG/canvas layers."""
    return page.evaluate("""() => [...document.querySelectorAll('[data-kind=plot]')].map(div => {
        const gd = div.querySelector('.js-plotly-plot');
        return {title: div.closest('section').querySelector('h2').textContent,
                traces: gd && gd.data ? gd.data.map(t => t.type) : [],
                layers: div.querySelectorAll('svg.main-svg, canvas').length};
    })""")


def inked(page, selector: str) -> int:
    """How many pixels of the canvas at ``selector`` are drawn (alpha > 0)."""
    return page.evaluate(
        """(sel) => { const c = document.querySelector(sel), g = c.getContext('2d');
        const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }""",
        selector,
    )


def test_the_sweep_page_draws_every_plot_and_summarys_front(browser, quick):
    page, errors = open_page(browser, quick / "report.html")
    plots = drawn_plots(page)
    assert {p["title"] for p in plots} == {
        "Designs: any two metrics, and their Pareto front",
        "Parallel coordinates",
        "Histograms",
        "Which parameters matter",
    }
    assert all(p["layers"] > 0 and (p["traces"] or p["title"] == "Parallel coordinates") for p in plots), (
        plots
    )
    by = {p["title"]: p["traces"] for p in plots}
    assert by["Designs: any two metrics, and their Pareto front"] == ["scattergl", "scatter"]
    assert inked(page, "[data-kind=plot] canvas:not(.gl-canvas)") > 10_000  # the parallel coordinates' lines
    front = page.evaluate("""() => { const gd = document.querySelector('[data-kind=plot] .js-plotly-plot');
        return gd.data[1].x.map((x, i) => [x, gd.data[1].y[i]]); }""")
    summary = json.loads((quick / "summary.json").read_text())
    p = summary["pareto"]
    assert set(map(tuple, front)) == {(r[p["x"]], r[p["y"]]) for r in p["front"]}
    # every design on the front by the definition, designs equal on both metrics included
    df = pd.read_parquet(quick / "results.parquet")
    assert len(front) == len(front_of(df[p["x"]], df[p["y"]], x_max=False, y_max=True)) > len(p["front"])
    assert page.locator("table").count() >= 2 and page.locator("img.fig").count() == 1  # pareto.png
    assert errors == []
    page.close()


def _point_on_screen(page, trace: int, i: int) -> tuple[float, float]:
    """Where point ``i`` of trace ``trace`` of the scatter is on the page, in CSS pixels."""
    return tuple(
        page.evaluate(
            """([t, i]) => { const gd = document.querySelector('[data-kind=plot] .js-plotly-plot');
        const L = gd._fullLayout, r = gd.getBoundingClientRect();
        return [r.left + L.xaxis._offset + L.xaxis.d2p(gd.data[t].x[i]),
                r.top + L.yaxis._offset + L.yaxis.d2p(gd.data[t].y[i])]; }""",
            [trace, i],
        )
    )


def test_hovering_shows_a_design_and_clicking_gives_the_command_that_reruns_it(browser, quick, tmp_path):
    page, errors = open_page(browser, quick / "report.html")
    plot = page.locator("[data-kind=plot]").first
    plot.scroll_into_view_if_needed()
    x, y = _point_on_screen(page, 1, 0)  # the front's first design
    page.mouse.move(x, y)
    page.wait_for_selector(".hovertext", timeout=10_000)
    assert "drive.slc_mode = " in page.locator(".hovertext").first.text_content()
    page.mouse.click(x, y)
    cmd = page.locator("pre.cmd")
    cmd.wait_for(timeout=10_000)
    index = int(cmd.get_attribute("data-config-index"))
    text = cmd.text_content()
    assert text == f"ssdx ++sweep.only={index} hydra.run.dir=out/design_{index}"
    assert errors == []
    page.close()
    r = ssdx(*text.split()[1:], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    one = pd.read_parquet(tmp_path / f"out/design_{index}" / "results.parquet")
    row = pd.read_parquet(quick / "results.parquet").set_index("config_index").loc[index]
    for m in ("mean_mb_s", "cache_gb", "time_s", "pslc_mb_s"):
        np.testing.assert_allclose(one[m].iloc[0], row[m], rtol=1e-5, err_msg=m)


def test_brushing_an_axis_keeps_the_designs_inside_its_range(browser, quick):
    page, errors = open_page(browser, quick / "report.html")
    pc = page.locator("[data-kind=plot]").nth(1)
    pc.scroll_into_view_if_needed()
    assert pc.get_attribute("data-kept") == "144"
    hit = page.locator("rect[data-brush-axis='mean_mb_s']")
    box = hit.bounding_box()
    x = box["x"] + box["width"] / 2
    page.mouse.move(x, box["y"] + 0.1 * box["height"])
    page.mouse.down()
    page.mouse.move(x, box["y"] + 0.6 * box["height"], steps=5)
    page.mouse.up()
    lo, hi = json.loads(pc.get_attribute("data-brush"))["mean_mb_s"]
    df = pd.read_parquet(quick / "results.parquet")
    want = int(((df["mean_mb_s"] >= lo) & (df["mean_mb_s"] <= hi)).sum())
    assert 0 < want < 144 and int(pc.get_attribute("data-kept")) == want
    assert f"{want} of 144 designs" in pc.locator(".pc-count").text_content()
    assert errors == []
    page.close()


def test_the_dashboard_draws_and_links_each_runs_page(browser, quick, tmp_path):
    fill = tmp_path / "fill"
    assert ssdx("experiment=aldrin_pro_fill", f"hydra.run.dir={fill}").returncode == 0
    out = tmp_path / "dashboard.html"
    assert dashboard.main([str(quick), str(fill), "-o", str(out)]) == 0
    page, errors = open_page(browser, out)
    assert page.locator("tbody tr").count() == 2
    assert all(p["layers"] > 0 for p in drawn_plots(page))
    page.locator("a", has_text=str(fill)).click()
    page.wait_for_function("window.ssdxReady === true", timeout=60_000)
    assert page.title() == "ssdx aldrin_pro_fill" and drawn_plots(page)[0]["title"] == "Fill curve"
    # a table sorts numbers as numbers, text after them
    page.locator("section", has_text="Figures").locator("th", has_text="value").click()
    cells = (
        page.locator("section", has_text="Figures").locator("tbody tr td:nth-child(2)").all_text_contents()
    )
    numbers = [float(c) for c in cells if c.replace(".", "", 1).replace("e+", "").replace("-", "").isdigit()]
    assert (
        len(numbers) > 5
        and numbers == sorted(numbers)
        and cells[: len(numbers)]
        == [c for c in cells if c.replace(".", "", 1).replace("e+", "").replace("-", "").isdigit()]
    )
    assert errors == []
    page.close()
