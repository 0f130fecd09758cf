"""``report.html``: one page per run directory, written by every experiment and sweep.

A sweep's page is built by ``ssdx.report.sweep_page``, an experiment's by ``ssdx.report.experiment_page``,
from what ``ssdx.report.run_dir`` reads of the run; ``ssdx.report.html`` writes it as one file.
"""

from __future__ import annotations

from pathlib import Path

from ssdx.report import experiment_page, html, sweep_page
from ssdx.report.run_dir import read_config, read_json


def write_report(out_dir: str | Path) -> Path:
    """Write ``report.html`` into the run directory ``out_dir`` (which holds ``summary.json``) and return
    its path; its commands are built from the arguments the run directory records
    (``ssdx.report.run_dir.read_overrides``).  Raises ``FileNotFoundError`` where there is no
    ``summary.json``."""
    from ssdx.core import io

    out_dir = Path(out_dir)
    summary = read_json(out_dir / "summary.json")
    cfg, overrides = read_config(out_dir)
    is_sweep = "n_configs" in summary and ("sweep" in summary or "results" in summary)
    page = sweep_page.sweep_page if is_sweep else experiment_page.experiment_page
    title, subtitle, sections, rows = page(out_dir, summary, cfg, overrides)
    text = html.render(title, subtitle, sections, rows)
    path = out_dir / "report.html"
    io.write_text(path, text)
    return path
