"""``ssdx dashboard DIR... [-o dashboard.html]``: one page over many run directories.

The page holds a table of the runs (experiment or sweep, what was overridden from the defaults, start
and wall time, headline figures, a link to each run's ``report.html``, written where a run has none yet)
and a comparison of any one figure across the runs.  A directory that holds no run, or a run that stopped
before its summary was written, is named with what is missing, and the others are still drawn; with no
run at all the command exits 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import sys
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ssdx.core import io
from ssdx.report import html, pages, run_dir


@dataclass
class Run:
    """One run directory as the dashboard shows it."""

    path: Path
    kind: str  # "sweep" or "experiment"
    name: str
    overrides: list[str]
    started: dt.datetime | None
    wall_s: float | None
    figures: dict[str, float] = field(default_factory=dict)
    page: Path | None = None


def problem_of(path: Path) -> str | None:
    """Why ``path`` is not a finished run (None where it is one)."""
    if not path.is_dir():
        return "not a directory"
    summary = path / "summary.json"
    if not summary.is_file():
        chunks = list((path / "chunks").glob("*.parquet")) if (path / "chunks").is_dir() else []
        if chunks:
            return (
                f"no summary.json: a sweep that stopped after {len(chunks)} checkpointed chunk(s); run its "
                "command again to resume it"
            )
        if (path / ".hydra").is_dir():
            return "no summary.json: the run stopped before writing its results"
        return "no summary.json and no .hydra/: not an ssdx run directory"
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        return f"summary.json is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}): truncated?"
    except UnicodeDecodeError as e:
        return f"summary.json is not UTF-8 text (byte {e.start}: {e.reason})"
    except OSError as e:
        return f"summary.json cannot be read ({e.strerror})"
    if not isinstance(doc, dict):
        return "summary.json holds no object"
    return None


def headline(summary: dict[str, Any]) -> dict[str, float]:
    """The run's headline figures: its summary's top-level numbers and, for a sweep, the first best
    design's metric it is ranked by."""
    out = {
        k: float(v)
        for k, v in summary.items()  # wall_s has its own column
        if isinstance(v, int | float) and not isinstance(v, bool) and not k.startswith("_") and k != "wall_s"
    }
    best_by = summary.get("best_by") or {}
    best = summary.get("best") or []
    if best and isinstance(best_by, dict) and isinstance(best[0].get(best_by.get("metric")), int | float):
        out[f"best {best_by['metric']}"] = float(best[0][best_by["metric"]])
    return out


def read_run(path: Path, write_pages: bool = True) -> Run:
    """The :class:`Run` of a finished run directory (its ``report.html`` written if missing)."""
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    overrides = run_dir.read_overrides(path)
    is_sweep = "n_configs" in summary
    name = str(
        summary.get("sweep")
        or next((o.split("=", 1)[1] for o in overrides if o.startswith(("experiment=", "sweep="))), "default")
    )
    started = None
    if (path / ".hydra" / "config.yaml").is_file():
        started = dt.datetime.fromtimestamp((path / ".hydra" / "config.yaml").stat().st_mtime)
    wall = summary.get("wall_s")
    if not isinstance(wall, int | float) and started is not None:
        wall = (path / "summary.json").stat().st_mtime - started.timestamp()
    page = path / "report.html"
    if write_pages and not page.is_file():
        try:
            page = pages.write_report(path)
        except Exception as e:  # noqa: BLE001 - the run is still listed; its page is named as missing
            print(
                f"ssdx dashboard: {path}: report.html not written ({type(e).__name__}: {e})", file=sys.stderr
            )
    return Run(
        path,
        "sweep" if is_sweep else "experiment",
        name,
        [o for o in overrides if not o.startswith("hydra.")],
        started,
        float(wall) if isinstance(wall, int | float) else None,
        headline(summary),
        page if page.is_file() else None,
    )


def collect(dirs: Sequence[str | Path], write_pages: bool = True) -> tuple[list[Run], list[tuple[Path, str]]]:
    """The runs among ``dirs`` and, for every other directory, why it is not one."""
    runs, problems = [], []
    for d in dirs:
        path = Path(d)
        why = problem_of(path)
        if why is None:
            try:
                runs.append(read_run(path, write_pages))
                continue
            except (ValueError, OSError, yaml.YAMLError) as e:  # a run's record of its arguments
                why = f"its .hydra/ record cannot be read ({type(e).__name__}: {str(e).splitlines()[0]})"
        problems.append((path, why))
    return runs, problems


def page_link(page: Path, where: Path) -> str:
    """A link from a page in the directory ``where`` to ``page``: relative (the pages move together),
    percent-encoded and starting with ``./`` or ``../``, so that no directory name reads as a URL scheme,
    a fragment or an escape.  Both paths are made absolute without resolving links, as a browser sees
    them."""
    rel = os.path.relpath(os.path.abspath(page), os.path.abspath(where))
    rel = urllib.parse.quote(Path(rel).as_posix())
    return rel if rel.startswith("../") else f"./{rel}"


def page_text(
    runs: list[Run], problems: list[tuple[Path, str]], where: Path, refresh_s: int | None = None
) -> str:
    """The dashboard's HTML: a table of ``runs`` (links relative to ``where``, the page's directory), a
    comparison of each figure shared by two or more runs, and the directories that hold no run; reloaded
    by the browser every ``refresh_s`` seconds where given."""
    common = sorted({k for r in runs for k in r.figures if sum(k in s.figures for s in runs) >= 2})
    first = [k for k in common if k.startswith("best ")] + [k for k in ("n_configs",) if k in common]
    shown = list(dict.fromkeys(first + common))[:10]
    cols = ["run", "kind", "name", "overrides", "started", "wall (s)", *shown]
    rows = []
    for r in runs:
        link = {"href": page_link(r.page, where), "text": str(r.path)} if r.page is not None else str(r.path)
        rows.append(
            [
                link,
                r.kind,
                r.name,
                " ".join(r.overrides) or "(defaults)",
                r.started.strftime("%Y-%m-%d %H:%M:%S") if r.started else None,
                r.wall_s,
                *[r.figures.get(k) for k in shown],
            ]
        )
    sections = [
        html.Section(
            "Runs",
            "table",
            {"columns": cols, "rows": io.jsonable(rows)},
            f"{len(runs)} runs. Click a run to open its page; click a column to sort.",
        )
    ]
    labels = [f"{r.path.name} ({r.name})" for r in runs]
    data, names = [], []
    for k in common:
        data.append(
            {
                "type": "bar",
                "x": labels,
                "y": [r.figures.get(k) for r in runs],
                "name": k,
                "visible": not names,
                "marker": {"color": "#2a9d8f"},
            }
        )
        names.append(k)
    if names:
        fig = run_dir.menu_figure(data, [[] for _ in names], names, "")
        fig["layout"]["xaxis"] = {"title": {"text": "run"}, "automargin": True}
        fig["layout"]["yaxis"] = {"title": {"text": "value"}}
        sections.append(
            html.Section(
                "Compare one figure across runs",
                "plot",
                fig,
                "Pick the figure in the menu; runs without it are left blank.",
            )
        )
    if problems:
        sections.append(
            html.Section(
                "Directories that hold no run",
                "table",
                {"columns": ["directory", "what is missing"], "rows": [[str(p), why] for p, why in problems]},
            )
        )
    return html.render("ssdx dashboard", f"{len(runs)} runs", sections, refresh_s=refresh_s)


def expand(args: Sequence[str]) -> list[str]:
    """The directories ``args`` name: a quoted glob (``'out/*'``) expanded here, each time, so that a
    served dashboard takes in the runs that start after it; others as given."""
    out: list[str] = []
    for a in args:
        out += sorted(glob.glob(a)) if any(c in a for c in "*?[") else [a]
    return list(dict.fromkeys(out))


def write(
    args: Sequence[str], out: Path, refresh_s: int | None = None, quiet: bool = False, empty: bool = False
) -> int:
    """Collect the runs among ``args`` (:func:`expand`) and write the dashboard to ``out``; the number of
    runs (with none, nothing is written unless ``empty``)."""
    runs, problems = collect(expand(args))
    if not quiet:
        for path, why in problems:
            print(f"ssdx dashboard: {path}: {why}", file=sys.stderr)
    if runs or empty:
        io.write_text(out, page_text(runs, problems, Path(os.path.abspath(out)).parent, refresh_s))
    return len(runs)


def make_server(args: Sequence[str], out: Path, port: int = 8765, refresh_s: int = 10):
    """A local HTTP server (``http.server`` from Python's standard library, on 127.0.0.1 only) of the
    dashboard ``out`` over ``args``: each request of the page collects the runs again and rewrites it,
    and the page reloads itself every ``refresh_s`` seconds, so runs show up as they finish.  It serves
    the files under the common directory of the page and the runs (the run pages it links), nothing
    above it.  Returns the server, not yet serving, and the page's URL path."""
    import functools
    import http.server

    dirs = [os.path.abspath(d) for d in expand(args)] or [os.getcwd()]
    root = os.path.commonpath([os.path.dirname(os.path.abspath(out)), *dirs])
    page = "/" + urllib.parse.quote(Path(os.path.relpath(os.path.abspath(out), root)).as_posix())

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            if self.path == "/":
                self.send_response(302)
                self.send_header("Location", page)
                self.end_headers()
                return
            if self.path.split("?")[0] == page:
                write(args, out, refresh_s, quiet=True, empty=True)
            super().do_GET()

        def log_message(self, *a: Any) -> None:  # requests are not news
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=root))
    return server, page


def main(argv: Sequence[str]) -> int:
    """``ssdx dashboard``: returns the exit status (0, or 2 when no directory holds a run)."""
    ap = argparse.ArgumentParser(
        prog="ssdx dashboard", description="One page over many ssdx run directories."
    )
    ap.add_argument("dirs", nargs="+", help="run directories (a shell glob such as out/* works)")
    ap.add_argument("-o", "--out", default="dashboard.html", help="the page to write (default: %(default)s)")
    ap.add_argument(
        "--serve",
        nargs="?",
        const=8765,
        type=int,
        metavar="PORT",
        help="serve the page on 127.0.0.1:PORT (default 8765), collecting the runs again on each "
        "load and reloading every 10 s; quote a glob ('out/*') to take in new runs",
    )
    args = ap.parse_args(list(argv))
    out = Path(args.out)
    n = write(args.dirs, out)
    if not n and args.serve is None:
        print("ssdx dashboard: no directory holds a finished run; nothing written", file=sys.stderr)
        return 2
    if args.serve is None:
        print(f"dashboard: {out} ({n} runs)")
        return 0
    server, page = make_server(args.dirs, out, args.serve)
    print(f"dashboard: http://127.0.0.1:{server.server_port}{page} ({n} runs so far; Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
