"""Experiment loggers: ``logger=none`` (default) and ``logger=wandb`` (Weights & Biases).

A logger sees a job twice, outside any jitted code: :meth:`start` with the composed config before the job
runs, and :meth:`finish` with the job's summary and output directory after it wrote its files.  The W&B
logger then records

* the composed config (the run's config);
* the summary's scalars, flattened with ``/`` (``best_by/metric``, ``findings/pearson``, ...);
* every list of records or mapping of rows in the summary as a table (``best``: the best configuration
  per group; ``relative_iops``; ``drives``; ``streams``; ...);
* ``results.parquet`` as the table ``results`` — all rows up to ``max_table_rows``, beyond that a
  uniform random sample of that many rows (seeded), with the sampling stated in the summary under
  ``results_table``;
* every PNG the job wrote (fill curves, Pareto fronts, TMT landscapes, relative-IOPS bars) as an image.

W&B runs offline by default: files go to ``<run dir>/wandb/offline-run-*`` and ``wandb sync`` uploads them
later; ``logger.mode=online`` logs live.  ``wandb`` is imported only when this logger is chosen.
:func:`read_offline_run` reads an offline run's records back (the tests use it).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.params import ConfigError


class NullLogger:
    """``logger=none``: records nothing."""

    name = "none"

    def start(self, cfg: Mapping[str, Any], out_dir: Path) -> None:
        """Nothing to start."""

    def finish(self, summary: Mapping[str, Any] | None, out_dir: Path) -> None:
        """Nothing to record."""

    def abort(self) -> None:
        """Nothing to close."""


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalars of a nested mapping, keys joined with ``/`` (lists and tables left out)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "/"))
        elif isinstance(v, np.generic):
            out[key] = v.item()
        elif isinstance(v, bool | int | float | str) or v is None:
            out[key] = v
    return out


def tables(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The summary's tabular entries as DataFrames, found at any depth (keys joined with ``/``): lists of
    records, and mappings whose values are all mappings of scalars (one row per key, in column ``key``)."""
    import pandas as pd

    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, list) and v and all(isinstance(r, Mapping) for r in v):
            out[key] = pd.DataFrame([flatten(r) for r in v])
        elif isinstance(v, Mapping):
            rows = [flatten(r) if isinstance(r, Mapping) else {} for r in v.values()]
            if v and all(r and len(r) == len(r0) for r, r0 in zip(rows, v.values(), strict=True)):
                out[key] = pd.DataFrame([{"key": str(name), **r} for name, r in zip(v, rows, strict=True)])
            else:
                out.update(tables(v, key + "/"))
    return out


def sample_rows(df, max_rows: int, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """``df`` itself when it has at most ``max_rows`` rows, else a uniform random sample of ``max_rows``
    rows (without replacement, ``seed``), kept in the original order; and a statement of what was done."""
    n = len(df)
    if n <= max_rows:
        return df, {"rows_logged": n, "rows_total": n, "sampling": "all rows"}
    pick = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    return df.iloc[pick], {"rows_logged": int(max_rows), "rows_total": n,
                           "sampling": f"uniform random sample without replacement (seed {seed})"}


class WandbLogger:
    """``logger=wandb``: one W&B run per job (see the module docstring for what it records)."""

    name = "wandb"

    def __init__(self, project: str = "ssdx", entity: str | None = None, mode: str | None = "offline",
                 dir: str | None = None, run_name: str | None = None, group: str | None = None,
                 tags: list[str] | tuple[str, ...] = (), max_table_rows: int = 10_000, seed: int = 0):
        mode = mode or os.environ.get("WANDB_MODE") or "offline"
        if mode not in ("offline", "online", "disabled"):
            raise ConfigError("logger.mode", mode, "must be 'offline' (default), 'online' or 'disabled'")
        if not isinstance(max_table_rows, int) or isinstance(max_table_rows, bool) or max_table_rows < 1:
            raise ConfigError("logger.max_table_rows", max_table_rows, "an integer >= 1")
        if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
            raise ConfigError("logger.tags", tags, "a list of strings, e.g. logger.tags=[design,v2]")
        for field, value in (("project", project), ("entity", entity), ("dir", dir), ("run_name", run_name),
                             ("group", group)):
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"logger.{field}", value, "a string or null")
        self.project, self.entity, self.mode, self.dir = project, entity, mode, dir
        self.run_name, self.group, self.tags = run_name, group, list(tags or [])
        self.max_table_rows, self.seed = max_table_rows, seed
        self.run = None

    def start(self, cfg: Mapping[str, Any], out_dir: Path) -> None:
        """Open the run (offline files under ``out_dir`` unless ``logger.dir`` says otherwise).  A missing
        ``wandb`` package, a ``logger.dir`` that cannot be made, and a run W&B refuses to start (no API key
        online, a project name it does not take) raise :class:`ConfigError` before the job computes."""
        try:
            import wandb
        except ImportError as e:
            raise ConfigError("logger.name", "wandb", f"needs the 'wandb' package ({e}); pip install wandb, "
                              "or logger=none") from None
        root = Path(self.dir) if self.dir else Path(out_dir)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConfigError("logger.dir" if self.dir else "hydra.run.dir", str(root),
                              f"must be a directory that can be made ({e})") from None
        try:
            self.run = wandb.init(project=self.project, entity=self.entity, mode=self.mode, dir=str(root),
                                  name=self.run_name or Path(out_dir).name, group=self.group, tags=self.tags,
                                  job_type=str(cfg.get("task", "sweep")), config=dict(cfg),
                                  reinit="create_new", settings=wandb.Settings(silent=True, console="off"))
        except wandb.errors.Error as e:
            raise ConfigError("logger", {"mode": self.mode, "project": self.project, "entity": self.entity},
                              f"W&B did not start the run: {e}",
                              fix="Fix logger.mode, logger.project or logger.entity, or log in to W&B") \
                from None

    def finish(self, summary: Mapping[str, Any] | None, out_dir: Path) -> None:
        """Record the summary, its tables, the (sampled) results table, the plots and ``report.html``; close
        the run."""
        import pandas as pd
        import wandb

        if self.run is None:
            return
        run = self.run  # an error below leaves self.run set, so the caller's abort() closes it as failed
        summary = {k: v for k, v in dict(summary or {}).items() if not k.startswith("_")}
        payload: dict[str, Any] = {}
        for key, df in tables(summary).items():
            payload[f"tables/{key}"] = wandb.Table(dataframe=df.astype(object).where(df.notna(), None))
        results = Path(out_dir) / "results.parquet"
        if results.exists():
            df, stated = sample_rows(pd.read_parquet(results), self.max_table_rows, self.seed)
            payload["tables/results"] = wandb.Table(dataframe=df.reset_index(drop=True))
            run.summary["results_table"] = stated
        for png in sorted(Path(out_dir).glob("*.png")):
            payload[f"plots/{png.stem}"] = wandb.Image(str(png), caption=png.name)
        page = Path(out_dir) / "report.html"
        if page.is_file():  # the run's page (ssdx.report.pages), interactive in W&B's media panel too
            payload["report"] = wandb.Html(page.read_text(encoding="utf-8"), inject=False)
        if payload:
            run.log(payload)
        for k, v in flatten(summary).items():
            run.summary[k] = v
        run.summary["outputs"] = str(out_dir)
        run.finish()
        self.run = None

    def abort(self) -> None:
        """Close a run whose job failed (marked failed, exit code 1)."""
        if self.run is not None:
            self.run.finish(exit_code=1)
            self.run = None


def from_config(logger: Mapping[str, Any] | None, seed: int = 0) -> NullLogger | WandbLogger:
    """The logger a ``logger`` config group names; unknown fields name themselves."""
    logger = dict(logger or {})
    name = logger.pop("name", "none")
    if name == "none":
        return NullLogger()
    if name != "wandb":
        raise ConfigError("logger.name", name, "must be 'none' or 'wandb'")
    known = {"project", "entity", "mode", "dir", "run_name", "group", "tags", "max_table_rows"}
    unknown = sorted(set(logger) - known)
    if unknown:
        raise ConfigError(f"logger.{unknown[0]}", logger[unknown[0]],
                          f"unknown field; known: {sorted(known)}")
    return WandbLogger(**logger, seed=seed)


# ----------------------------------------------------------------------------- reading offline runs
def _records(path: Path) -> Iterator[bytes]:
    """Payloads of a ``.wandb`` file: a 7-byte header (``:W&B``, magic, version), then 32 KiB blocks of
    records each framed as crc32 (4 bytes), length (2, little-endian), type (1: full, 2/3/4: first,
    middle, last piece), as in LevelDB's log format."""
    data = path.read_bytes()
    if data[:4] != b":W&B":
        raise ValueError(f"{path}: not a W&B run file")
    block, pos, buf = 32768, 7, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        payload = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            pos += block - pos % block if pos % block else 0
            continue
        if kind == 1:
            yield payload
        elif kind == 2:
            buf = payload
        elif kind == 3:
            buf += payload
        elif kind == 4:
            yield buf + payload


def _set(d: dict, keys: list[str], value: Any) -> None:
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


def read_offline_run(run_dir: Path) -> dict[str, Any]:
    """Config, final summary, logged keys, files and exit code (None: never closed) of an offline run
    directory (``.../offline-run-*``)."""
    from wandb.proto import wandb_internal_pb2 as pb

    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("run-*.wandb"))
    if not files:
        raise FileNotFoundError(f"{run_dir}: no run-*.wandb file")
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    logged: set[str] = set()
    saved: list[str] = []
    exit_code = None
    for payload in _records(files[0]):
        rec = pb.Record()
        rec.ParseFromString(payload)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            for item in rec.run.config.update:
                config[item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                config[item.key] = json.loads(item.value_json)
        elif kind == "summary":
            for item in rec.summary.update:
                _set(summary, list(item.nested_key) or [item.key], json.loads(item.value_json))
        elif kind == "history":
            for item in rec.history.item:
                logged.add((list(item.nested_key) or [item.key])[0])
        elif kind == "files":
            saved += [f.path for f in rec.files.files]
        elif kind == "exit":
            exit_code = int(rec.exit.exit_code)
    config = {k: (v["value"] if isinstance(v, dict) and set(v) == {"value"} else v)
              for k, v in config.items()}
    return {"config": config, "summary": summary, "logged": sorted(logged), "files": saved,
            "exit_code": exit_code}
