"""The job behind the CLI that belongs to no model and no sweep: the trace analysis
(``ssdx experiment=trace_analyse``).  It takes a plain mapping (a composed Hydra config converted to
containers) and an output directory, writes ``summary.json`` there and returns it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssdx import params
from ssdx.core import io


def run_analyse(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Analyse a block trace (``workload.trace_path``, ``workload.format``): ``summary.json``.

    Streams the file (``ssdx.workloads.traces``); a malformed line stops with the file and line, or
    with ``workload.on_error=skip`` is skipped and counted (``skipped_lines``).  ``workload.requests``
    analyses the trace's first requests only (``trace_truncated`` says whether it held more).
    """
    from ssdx.workloads import analyse, traces

    reader = io.trace_reader(cfg["workload"], io.trace_limit(cfg["workload"]))
    path, fmt = reader.path, reader.fmt
    try:
        summary = analyse.analyse(reader)
    except traces.TraceError as e:
        raise params.ConfigError("workload.trace_path", str(path), f"malformed trace: {e}") from None
    if not summary["requests"]:
        rule = traces.no_requests("analyse", reader.skipped)
        raise params.ConfigError("workload.trace_path", str(path), rule)
    summary = {"trace": str(path), "format": fmt, **summary, "skipped_lines": reader.skipped,
               "skipped_examples": reader.skipped_examples, "unsorted_requests": reader.unsorted,
               "trace_truncated": reader.truncated}
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    return summary
