"""Self-contained HTML pages: a run's ``report.html`` and the ``dashboard.html`` over many runs.

A page is a list of sections (figures, tables, images, notes) written into one file together with the
plotting library's script (Plotly's ``plotly.min.js``, from the ``plotly`` package, inlined: no network,
no CDN), so it opens from disk or a cluster's shared file system as it is.  Plotly was chosen because it
ships, in one script, the views a design-space explorer needs: brushable parallel coordinates
(``parcoords``), scatter plots with hover and click events, and histograms; its figures are plain JSON, so
the pages are written from Python without its figure classes, and the page redraws them in the browser
when a user picks another metric.

The page sets ``window.ssdxReady = true`` (and the attribute ``data-ready`` on ``<body>``) once every figure
reports itself drawn, which the browser tests and ``bench/pages.py`` wait for; ``window.ssdxTimes`` holds
the milliseconds each section took to build.  A figure's traces, a
table's rows and the run's sampled rows are JSON in the page (``window.SSDX``); NaN is written as null.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ssdx.core import io


@functools.cache
def plotly_js() -> str:
    """The text of Plotly's ``plotly.min.js`` as the installed ``plotly`` package ships it."""
    from importlib import resources

    return resources.files("plotly").joinpath("package_data", "plotly.min.js").read_text(encoding="utf-8")


def plotly_version() -> str:
    """The installed ``plotly`` package's version (its script's version)."""
    from importlib.metadata import version

    return version("plotly")


def script_json(obj: Any) -> str:
    """``obj`` as JSON that can sit inside a ``<script>`` element (``</`` and ``<!--`` escaped)."""
    text = json.dumps(io.jsonable(obj), allow_nan=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


@dataclass
class Section:
    """One part of a page.

    ``kind``: ``plot`` (``spec``: ``{data, layout}`` of a Plotly figure, or ``{view: NAME, ...}`` for a view
    the page's script builds from the run's rows: ``scatter``, ``parcoords``, ``importance``), ``table``
    (``spec``: ``{columns, rows}``, sortable by a click on a column's name; a cell ``{href, text}`` is a
    link), ``image`` (``spec``:
    ``{png_base64}``), ``facts`` (``spec``: ``{items: [[name, value], ...]}``) or ``note`` (``text`` only).
    ``text`` is a short paragraph under the title (plain text, escaped); a ``folded`` section shows only
    its title until clicked."""

    title: str
    kind: str
    spec: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    folded: bool = False  # shown folded (a click on its title opens it)


@functools.cache
def asset(name: str) -> str:
    """The text of the page asset ``name`` (``ssdx/report/assets/``: ``page.css``, ``page.js``)."""
    from importlib import resources

    return resources.files("ssdx.report").joinpath("assets", name).read_text(encoding="utf-8")


def render(
    title: str,
    subtitle: str,
    sections: Sequence[Section],
    rows: Mapping[str, Any] | None = None,
    refresh_s: int | None = None,
) -> str:
    """The HTML text of a page: ``title`` and ``subtitle`` in its header, then ``sections`` in order; with
    ``refresh_s``, the browser reloads it every so many seconds.

    ``rows`` (for the ``scatter``/``parcoords`` views): ``{columns: {name: values}, params, metrics,
    numeric: {name: bool}, command}``, ``command`` holding ``{INDEX}`` where a row's ``config_index`` goes."""
    body = []
    for i, s in enumerate(sections):
        head = f"<h2>{html.escape(s.title)}</h2>"
        parts = [f'<section id="s{i}">' + (f"<details><summary>{head}</summary>" if s.folded else head)]
        if s.text:
            parts.append(f'<p class="text">{html.escape(s.text)}</p>')
        if s.kind == "image":
            parts.append(
                f'<img class="fig" alt="{html.escape(s.title)}" '
                f'src="data:image/png;base64,{s.spec["png_base64"]}">'
            )
        elif s.kind == "facts":
            items = "".join(
                f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>" for k, v in s.spec["items"]
            )
            parts.append(f'<dl class="facts">{items}</dl>')
        elif s.kind in ("plot", "table"):
            parts.append(f'<div data-section="{i}" data-kind="{s.kind}"></div>')
        elif s.kind != "note":
            raise ValueError(f"unknown section kind {s.kind!r}")
        parts.append("</details></section>" if s.folded else "</section>")
        body.append("".join(parts))
    data = {
        "sections": [
            {"title": s.title, "kind": s.kind, "spec": s.spec if s.kind in ("plot", "table") else {}}
            for s in sections
        ],
        "rows": rows,
    }
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else "",
            f"<title>{html.escape(title)}</title>",
            f"<style>{asset('page.css')}</style>",
            f"<script>{plotly_js()}</script>",
            "</head><body>",
            f"<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)}</p></header>",
            "<main>",
            *body,
            "</main>",
            f"<script>window.SSDX = {script_json(data)};</script>",
            f"<script>{asset('page.js')}</script>",
            "</body></html>",
        ]
    )
