"""What the pages read from a run directory (its ``summary.json`` and Hydra's record of its configuration)
and the parts a sweep's and an experiment's page share: the summary's tables, the PNGs, a menu figure and
the command that reruns one design."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ssdx import loggers
from ssdx.core import io
from ssdx.report import html

#: the summary tables a page shows open; the others are folded under their titles
OPEN_TABLES = 3


def read_json(path: Path) -> Any:
    """The JSON document at ``path``."""
    return json.loads(path.read_text(encoding="utf-8"))


def _hydra_file(out_dir: Path, name: str) -> Any:
    """The YAML document ``.hydra/NAME`` of a run directory (None where absent), read with libyaml where
    PyYAML has it."""
    import yaml

    path = Path(out_dir) / ".hydra" / name
    if not path.is_file():
        return None
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


#: the file in a run's ``.hydra/`` that holds the arguments its job was run with (:func:`save_args`)
ARGS_FILE = "ssdx_args.yaml"


def save_args(out_dir: Path, args: list[str]) -> None:
    """Record the arguments a run's job was given (``ssdx.cli.main.job_args``: its own overrides, a
    ``sweep_file`` by its path) in ``.hydra/`` beside Hydra's own record, for the commands its pages show."""
    import yaml

    (Path(out_dir) / ".hydra").mkdir(parents=True, exist_ok=True)
    io.write_text(Path(out_dir) / ".hydra" / ARGS_FILE, yaml.safe_dump([str(a) for a in args]))


def read_overrides(out_dir: Path) -> list[str]:
    """The arguments a run was given: those ssdx recorded (:func:`save_args`) or, for a run without that
    record, Hydra's overrides (``.hydra/overrides.yaml``, where a ``sweep_file`` run names its sweep as
    registered, not its file); empty where neither is there."""
    saved = _hydra_file(out_dir, ARGS_FILE)
    return [str(o) for o in (saved if saved is not None else _hydra_file(out_dir, "overrides.yaml")) or []]


def read_config(out_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The run's composed configuration and its command-line overrides, as Hydra saved them in
    ``.hydra/`` (empty where absent; interpolations left as written)."""
    cfg = _hydra_file(out_dir, "config.yaml")
    return (cfg if isinstance(cfg, dict) else {}), read_overrides(out_dir)


def rerun_command(args: list[str]) -> str:
    """The ``ssdx`` command line that reruns one design of the sweep run with the arguments ``args``: the
    same arguments (Hydra's own, ``-m`` and any ``sweep.only`` left out, a ``sweep_file`` made absolute,
    each quoted for a POSIX shell) plus ``++sweep.only={INDEX}`` (added or replaced) and a run directory of
    its own; ``{INDEX}`` stands for the design's ``config_index``."""
    out = []
    for a in args:
        key, _, value = a.partition("=")
        name = key.lstrip("+")
        if name.startswith("hydra.") or name == "sweep.only" or a in ("-m", "--multirun"):
            continue
        if name == "sweep_file" and value:
            a = f"{key}={Path(value).expanduser().resolve()}"
        out.append(shlex.quote(a))
    return " ".join(["ssdx", *out, "++sweep.only={INDEX}", "hydra.run.dir=out/design_{INDEX}"])


def png_sections(out_dir: Path) -> list[html.Section]:
    """Every PNG the run drew, as an image section."""
    return [
        html.Section(
            p.stem.replace("_", " "),
            "image",
            {"png_base64": base64.b64encode(p.read_bytes()).decode("ascii")},
            f"{p.name}",
        )
        for p in sorted(out_dir.glob("*.png"))
    ]


def records_table(records: list[Mapping[str, Any]], columns: list[str] | None = None) -> dict[str, Any]:
    """A table section's spec of a list of flat records (nested values as JSON text)."""
    cols = columns or list(dict.fromkeys(k for r in records for k in r))
    rows = [
        [
            r.get(c)
            if isinstance(r.get(c), str | int | float | bool | None)
            else json.dumps(io.jsonable(r.get(c)))
            for c in cols
        ]
        for r in records
    ]
    return {"columns": cols, "rows": io.jsonable(rows)}


def summary_tables(summary: Mapping[str, Any], skip: tuple[str, ...] = ()) -> list[html.Section]:
    """The summary's tabular entries (``ssdx.loggers.tables``: lists of records and mappings of records, at
    any depth, as W&B gets them) as sortable tables, but for the keys in ``skip``; past the first
    :data:`OPEN_TABLES`, folded."""
    out: list[html.Section] = []
    for key, df in loggers.tables({k: v for k, v in summary.items() if not k.startswith("_")}).items():
        if key in skip or not len(df):
            continue
        df = df.astype(object).where(df.notna(), None)
        out.append(
            html.Section(
                key.replace("_", " "),
                "table",
                {"columns": [str(c) for c in df.columns], "rows": io.jsonable(df.to_numpy().tolist())},
                folded=len(out) >= OPEN_TABLES,
            )
        )
    return out


def menu_figure(data: list[dict], shapes: list[list[dict]], names: list[str], y_title: str) -> dict[str, Any]:
    """A figure of ``data`` (one trace per name) showing one trace at a time, with a menu to pick it."""
    buttons = [
        {
            "label": n,
            "method": "update",
            "args": [
                {"visible": [j == i for j in range(len(names))]},
                {"shapes": shapes[i], "xaxis.title.text": n},
            ],
        }
        for i, n in enumerate(names)
    ]
    return {
        "data": data,
        "layout": {
            "shapes": shapes[0] if shapes else [],
            "xaxis": {"title": {"text": names[0] if names else ""}},
            "yaxis": {"title": {"text": y_title}},
            "bargap": 0.02,
            "updatemenus": [{"buttons": buttons, "x": 1.0, "xanchor": "right", "y": 1.15, "yanchor": "top"}],
        },
    }
