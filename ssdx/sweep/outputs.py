"""A sweep's report block checked before it runs, and its plots and quantile table made after
(``ssdx.sweep.job.run_sweep``): the ``report`` keys and the columns they name, ``pareto.png``,
``heatmap.png``, a reduced sweep's ``histograms.png`` and ``front.png``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import params
from ssdx.core import registry
from ssdx.report.tables import format_table
from ssdx.sweep import source

#: the keys of a sweep's ``report`` block (models run in the chunked runner), and of its plots' blocks
REPORT_KEYS = ("group_by", "sort_by", "ascending", "columns", "constraint", "pareto", "heatmap")
PLOT_KEYS = {"pareto": ("x", "y", "x_better", "y_better", "color"),
             "heatmap": ("x", "y", "value", "better", "facet")}
#: the columns each plot must name (the others may be left out)
PLOT_AXES = {"pareto": ("x", "y"), "heatmap": ("x", "y", "value")}


def default_sort(model: str) -> tuple[str, bool]:
    """The metric a ``model`` sweep's report ranks by when its ``report`` sets no ``sort_by``, and whether
    lower is better (the model's registry line, ``SweepModelSpec.sort``: the fill's time for the fluid
    model, the data written in the run for the thermal one, the write amplification for GC, the p99
    latency for the engine)."""
    spec = registry.SWEEP_MODELS.get(model, registry.SWEEP_MODELS[registry.DEFAULT_SWEEP_MODEL])
    return spec.sort


def check_report(rep: Any, base: Mapping[str, np.ndarray], model: str, metrics: tuple[str, ...],
                  table: bool) -> None:
    """Check a sweep's ``report`` block ``rep`` against its result columns (``base``: the configuration
    columns, ``metrics``: the model's) before it runs (``ssdx.sweep.job.check_outputs``; ``table``: the whole
    table is kept, so the report is made): its keys, its plots' keys and ``min``/``max`` choices, every
    column it names and its ``constraint``, run on an empty table of those columns.  A breach raises
    :class:`ssdx.params.ConfigError` naming the field."""
    import pandas as pd

    from ssdx.report import sweep as sweep_report
    from ssdx.sweep import reduce

    if rep is None:  # no report block: the table's report still sorts by the default sort_by
        rep = {}
    if not isinstance(rep, Mapping):
        raise params.ConfigError("sweep.report", rep,
                                 f"must be a mapping with the keys {', '.join(REPORT_KEYS)}")
    source.check_keys(rep, "sweep.report", REPORT_KEYS)
    def column(field: str, name: Any, note: str = "") -> None:
        reduce.check_column(field, name, list(base), metrics, model, note, also=("config_id",))

    for key in ("group_by", "columns"):
        names = rep.get(key)
        if names is None:
            continue
        if isinstance(names, str) or not isinstance(names, list | tuple):
            raise params.ConfigError(f"sweep.report.{key}", names, "must be a list of column names")
        for name in names:
            column(f"sweep.report.{key}", name)
    if "sort_by" in rep or table:
        default = default_sort(model)[0]
        column("sweep.report.sort_by", rep.get("sort_by", default),
               "" if "sort_by" in rep else f" ({default} is a {model} sweep's default: set report.sort_by)")
    if not isinstance(rep.get("ascending", True), bool):
        raise params.ConfigError("sweep.report.ascending", rep["ascending"], "must be true or false")
    for plot, keys in PLOT_KEYS.items():
        block = rep.get(plot)
        if block is None or block is False:
            continue
        field = f"sweep.report.{plot}"
        if not isinstance(block, Mapping):
            raise params.ConfigError(field, block, f"must be a mapping with the keys {', '.join(keys)}")
        source.check_keys(block, field, keys)
        for key in keys:
            if key.endswith("better"):
                sweep_report.better(block, key, plot)  # the plot's own rule, before the sweep runs
            elif key in PLOT_AXES[plot] or block.get(key) is not None:
                column(f"{field}.{key}", block.get(key))
    constraint = rep.get("constraint")
    if constraint is None or constraint == "":
        return
    if not isinstance(constraint, str):
        raise params.ConfigError("sweep.report.constraint", constraint,
                                 "must be a pandas query over result columns (a string)")
    empty = pd.DataFrame({"config_id": np.zeros(0, np.int64),
                          **{k: np.asarray(v)[:0] for k, v in base.items()},
                          **{m: np.zeros(0) for m in metrics}})
    try:
        empty.query(constraint)
    except Exception as e:  # pandas raises many types for a bad expression
        raise params.ConfigError("sweep.report.constraint", constraint,
                                 f"must be a pandas query over result columns ({e})") from None


def reduced_plots(keep: Mapping[str, Any], out_dir: Path, title: str) -> dict[str, str]:
    """The plots of a reduced sweep's outputs (``ssdx.report.sweep``): ``histograms.png`` (every group's
    histogram of each metric, quantiles marked) and ``front.png`` (the Pareto front's rows).  Returns
    their paths."""
    import pyarrow.parquet as pq

    from ssdx.report import sweep as sweep_report

    out: dict[str, str] = {}
    if "histograms" in keep:
        sweep_report.histograms(json.loads((out_dir / "histograms.json").read_text()),
                                out_dir / "histograms.png", title)
        out["histograms_png"] = str(out_dir / "histograms.png")
    if "pareto" in keep:
        sweep_report.front(pq.read_table(out_dir / "pareto.parquet").to_pandas(), keep["pareto"],
                           out_dir / "front.png", title)
        out["front_png"] = str(out_dir / "front.png")
    return out


def quantile_table(keep: Mapping[str, Any] | None, out_dir: Path) -> str:
    """The quantiles of ``out_dir/histograms.json`` as text, "" when ``keep`` asks for none: a row per
    group, metric and quantile (estimate and bracket; ``<`` / ``>`` where the quantile is outside the
    histogram's range)."""
    import pandas as pd

    if not (keep or {}).get("histograms", {}).get("quantiles"):
        return ""
    doc = json.loads((out_dir / "histograms.json").read_text())
    rows = []
    for g in doc["groups"]:
        for m, entries in g["quantiles"].items():
            for e in entries:
                where = (f"< {e['high']:.4g}" if e["low"] is None and e["high"] is not None
                         else f"> {e['low']:.4g}" if e["high"] is None and e["low"] is not None
                         else f"[{e['low']:.4g}, {e['high']:.4g}]" if e["low"] is not None else "no values")
                rows.append({**g["group"], "metric": m, "q": e["q"], "value": e["value"], "bracket": where})
    df = pd.DataFrame(rows)
    return format_table(df, [*doc["group_by"], "metric", "q", "value", "bracket"])


def sweep_plots(df, eligible, rep: Mapping[str, Any], out_dir: Path, name: Any) -> dict[str, Any]:
    """The plots a sweep's ``report`` asks for (``ssdx.report.sweep``): ``pareto.png`` (every configuration,
    the front drawn through; the front's rows, at most 50, under ``pareto``) and ``heatmap.png`` (best
    value per cell over the configurations meeting the constraint).  Returns their paths."""
    from ssdx.report import sweep as sweep_report

    out: dict[str, Any] = {}
    if rep.get("pareto"):
        spec = dict(rep["pareto"])
        front = sweep_report.pareto(df, spec, out_dir / "pareto.png",
                                    title=f"{name}: {len(df)} configurations")
        keep = list(rep.get("group_by") or []) + list(rep.get("columns") or []) + [spec["x"], spec["y"]]
        keep = [c for c in keep if c in front.columns]
        out["pareto"] = {"x": spec["x"], "y": spec["y"], "n_front": len(front),
                         "front": front[list(dict.fromkeys(keep))].head(50).to_dict(orient="records")}
        out["pareto_png"] = str(out_dir / "pareto.png")
    if rep.get("heatmap") and len(eligible):
        sweep_report.heatmap(eligible, dict(rep["heatmap"]), out_dir / "heatmap.png",
                             title=f"{name}: best {rep['heatmap'].get('value')} per cell"
                             + (f" ({rep.get('constraint')})" if rep.get("constraint") else ""))
        out["heatmap_png"] = str(out_dir / "heatmap.png")
    return out
