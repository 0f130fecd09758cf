"""Results store and resume: one Parquet file per finished chunk (atomic), merged into ``results.parquet``.

Resume rules (``ssdx sweep=NAME hydra.run.dir=DIR`` run again on the same DIR):

* ``DIR/chunks/manifest.json`` is the sweep's fingerprint: a hash of every configuration column, the
  number of configurations, the chunking and the model definition (model, steps, precision, ...).  A
  re-run with a different fingerprint is refused, naming what changed, instead of mixing results.
* A chunk counts as finished only if its file exists, reads as Parquet and holds exactly the
  configuration ids the plan gives it.  Files are written to a temporary name and renamed
  (``os.replace``), so a crash leaves either the whole file or none; a damaged file is recomputed.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ssdx import params
from ssdx.core.io import replace_atomic
from ssdx.params import ConfigError

MANIFEST = "manifest.json"
CHUNK_META = b"ssdx.chunk"


def chunk_path(out_dir: Path, index: int) -> Path:
    """Where chunk ``index`` of a sweep is checkpointed."""
    return out_dir / "chunks" / f"chunk_{index:06d}.parquet"


def state_path(out_dir: Path, index: int) -> Path:
    """Where chunk ``index`` of a reduction-only sweep (``keep`` without ``all``) is checkpointed: its
    reduction state, no rows."""
    return out_dir / "chunks" / f"chunk_{index:06d}.json"


def ids_digest(config_ids: np.ndarray) -> str:
    """A hash of a chunk's configuration ids (order-free), recorded with its reduction state."""
    return hashlib.sha256(np.sort(np.asarray(config_ids, dtype=np.int64)).tobytes()).hexdigest()[:16]


def write_state(path: Path, state_text: str, config_ids: np.ndarray, info: Mapping[str, Any]) -> None:
    """Write a chunk's reduction state (JSON text) whole, with its ids' count and hash and its info."""
    text = json.dumps({"n": int(len(config_ids)), "ids": ids_digest(config_ids), "info": dict(info)},
                      default=str)[:-1] + ', "state": ' + state_text + "}\n"
    replace_atomic(path, lambda tmp: tmp.write_text(text))


def finished_state(out_dir: Path, index: int, config_ids: np.ndarray) -> tuple[dict, dict] | None:
    """The reduction state and info of chunk ``index`` if its checkpoint is complete and holds exactly
    ``config_ids`` (count and hash); None otherwise (then the chunk is recomputed)."""
    path = state_path(out_dir, index)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        ok = doc["n"] == len(config_ids) and doc["ids"] == ids_digest(config_ids) and "state" in doc
    except (OSError, ValueError, KeyError, TypeError) as e:
        warnings.warn(f"{path}: unreadable checkpoint ({e}); recomputing chunk {index}", stacklevel=2)
        return None
    if not ok:
        warnings.warn(f"{path}: holds other configurations than chunk {index}; recomputing it", stacklevel=2)
        return None
    return doc["state"], doc.get("info", {})


def _column_hash(values: Any) -> str:
    a = np.asarray(values)
    if a.dtype.kind == "U":  # fixed-width UTF-32 at the width of the longest value: equal values agree
        width = int(np.char.str_len(a).max()) if a.size else 1
        data = np.ascontiguousarray(a.astype(f"<U{max(width, 1)}")).tobytes()
    elif a.dtype.kind in "SO":
        data = "\x1f".join(map(str, a.tolist())).encode()
    else:
        data = np.ascontiguousarray(a.astype(np.float64)).tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def fingerprint(cols: Mapping[str, Any], definition: Mapping[str, Any]) -> dict[str, Any]:
    """What identifies a sweep's results: per-column hashes, the configuration count and ``definition``
    (JSON-able: model, static sizes, precision, chunking)."""
    from ssdx import __version__

    n = len(next(iter(cols.values()))) if cols else 0
    return {"n_configs": int(n), "columns": {k: _column_hash(v) for k, v in cols.items()},
            "definition": json.loads(json.dumps({"ssdx": __version__, **dict(definition)}, sort_keys=True,
                                                default=str))}


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    if old.get("n_configs") != new.get("n_configs"):
        out.append(f"{old.get('n_configs')} -> {new.get('n_configs')} configurations")
    oc, nc = old.get("columns", {}), new.get("columns", {})
    changed = [k for k in nc if k in oc and oc[k] != nc[k]]
    if changed:
        out.append("values of " + ", ".join(changed[:6]) + (" ..." if len(changed) > 6 else ""))
    if set(nc) - set(oc):
        out.append("new columns " + ", ".join(sorted(set(nc) - set(oc))))
    if set(oc) - set(nc):
        out.append("removed columns " + ", ".join(sorted(set(oc) - set(nc))))
    od, nd = old.get("definition", {}), new.get("definition", {})
    for k in sorted(set(od) | set(nd)):
        if od.get(k) != nd.get(k):
            out.append(f"{k} {od.get(k)!r} -> {nd.get(k)!r}")
    return out or ["the manifest differs"]


def open_run(out_dir: Path, fp: Mapping[str, Any]) -> bool:
    """Start or resume the sweep whose fingerprint is ``fp`` in ``out_dir``; True when resuming.

    Raises :class:`ConfigError` when ``out_dir`` holds chunks of a different sweep definition, or chunk
    files without a manifest (nothing says which sweep wrote them)."""
    path = out_dir / "chunks" / MANIFEST
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = None
        if old is None:
            raise ConfigError("hydra.run.dir", str(out_dir),
                              f"{path} is unreadable; remove {out_dir / 'chunks'} to start this sweep afresh")
        if old != dict(fp) and not list((out_dir / "chunks").glob("chunk_*.*")):
            old = None  # nothing finished under the old definition: start this one afresh
        elif old != dict(fp):
            raise ConfigError(
                "hydra.run.dir", str(out_dir),
                "holds results of a different sweep definition (" + "; ".join(_differences(old, fp))
                + "); re-run with the original definition to resume, or choose a new hydra.run.dir "
                  f"(or delete {out_dir / 'chunks'})")
        if old is not None:
            return True
    stale = sorted((out_dir / "chunks").glob("chunk_*.*")) if (out_dir / "chunks").exists() else []
    if stale:
        raise ConfigError("hydra.run.dir", str(out_dir),
                          f"has {len(stale)} chunk files but no {MANIFEST}, so nothing says which sweep "
                          f"wrote them; choose a new hydra.run.dir or delete {out_dir / 'chunks'}")
    text = json.dumps(dict(fp), indent=1, sort_keys=True) + "\n"
    replace_atomic(path, lambda tmp: tmp.write_text(text))
    return False


def finished(out_dir: Path, index: int, config_ids: np.ndarray) -> pa.Table | None:
    """The checkpoint of chunk ``index`` if it is complete (reads back, holds exactly ``config_ids``)."""
    path = chunk_path(out_dir, index)
    if not path.exists():
        return None
    try:
        table = pq.read_table(path)
        ok = np.array_equal(np.sort(table.column("config_id").to_numpy()), np.sort(np.asarray(config_ids)))
    except Exception as e:  # damaged file: pyarrow raises several types
        warnings.warn(f"{path}: unreadable checkpoint ({e}); recomputing chunk {index}", stacklevel=2)
        return None
    if not ok:
        warnings.warn(f"{path}: holds other configurations than chunk {index}; recomputing it", stacklevel=2)
        return None
    return table


def with_info(table: pa.Table, info: Mapping[str, Any]) -> pa.Table:
    """``table`` with ``info`` (worker, seconds, ...) stored as JSON in its schema metadata."""
    meta = dict(table.schema.metadata or {})
    meta[CHUNK_META] = json.dumps(dict(info), default=str).encode()
    return table.replace_schema_metadata(meta)


def chunk_info(table: pa.Table) -> dict[str, Any]:
    """The ``info`` a chunk file was written with (empty when none)."""
    raw = (table.schema.metadata or {}).get(CHUNK_META)
    return json.loads(raw) if raw else {}


def assemble(cols: Mapping[str, Any], pieces: list[pa.Table]) -> pa.Table:
    """The results table: ``config_id``, every configuration column of ``cols``, then the other columns of
    the chunk tables ``pieces`` (``config_id`` + metrics each), one row per configuration in id order.
    The configuration columns come from ``cols`` (fingerprinted), never from the files, so a resumed
    sweep's table has this run's column types.  NAND override columns record the value each
    configuration ran with (``params.effective_columns``), not NaN for "the catalog's"."""
    metrics = pa.concat_tables([p.replace_schema_metadata(None) for p in pieces]).sort_by("config_id")
    ids = metrics.column("config_id").to_numpy()
    n = len(next(iter(cols.values())))
    if not np.array_equal(ids, np.arange(n)):
        raise RuntimeError(f"the chunks hold {len(ids)} rows for {n} configurations "
                           "(missing or repeated ids)")
    data = {"config_id": metrics.column("config_id")}
    data.update({k: np.asarray(v) for k, v in params.effective_columns(cols).items()})
    data.update({k: metrics.column(k) for k in metrics.column_names if k != "config_id"})
    return pa.table(data)

