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
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ssdx import params
from ssdx.core.io import replace_atomic, temp_path
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
    files without a manifest (nothing says which sweep wrote them).  Once the run may go on, the partial
    chunk files a killed run left (``.chunk_*.tmp-*``, never renamed into place) are removed."""
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
            _remove_partial(out_dir / "chunks")
            return True
    stale = sorted((out_dir / "chunks").glob("chunk_*.*")) if (out_dir / "chunks").exists() else []
    if stale:
        raise ConfigError("hydra.run.dir", str(out_dir),
                          f"has {len(stale)} chunk files but no {MANIFEST}, so nothing says which sweep "
                          f"wrote them; choose a new hydra.run.dir or delete {out_dir / 'chunks'}")
    _remove_partial(out_dir / "chunks")
    text = json.dumps(dict(fp), indent=1, sort_keys=True) + "\n"
    replace_atomic(path, lambda tmp: tmp.write_text(text))
    return False


def _remove_partial(chunks: Path) -> None:
    """Remove the temporary chunk files (:func:`ssdx.core.io.temp_path`) a killed run left in ``chunks``."""
    if chunks.is_dir():
        for partial in chunks.glob(".chunk_*.tmp-*"):
            partial.unlink(missing_ok=True)


def is_fresh(out_dir: Path) -> bool:
    """Whether ``out_dir`` holds neither a manifest nor a chunk file, so :func:`open_run` has nothing to
    check and only writes the manifest (which may then be done in the background, before any chunk)."""
    chunks = out_dir / "chunks"
    return not (chunks / MANIFEST).exists() and not any(chunks.glob("chunk_*.*"))


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


def write_chunk(table: pa.Table, path: Path) -> None:
    """Checkpoint a chunk's rows (``config_id`` + metrics) whole (:func:`replace_atomic`): uncompressed and
    without dictionaries, as the file is read back only on a resume."""
    replace_atomic(path, lambda tmp: pq.write_table(table, tmp, compression="none", use_dictionary=False))


def with_info(table: pa.Table, info: Mapping[str, Any]) -> pa.Table:
    """``table`` with ``info`` (worker, seconds, ...) stored as JSON in its schema metadata."""
    meta = dict(table.schema.metadata or {})
    meta[CHUNK_META] = json.dumps(dict(info), default=str).encode()
    return table.replace_schema_metadata(meta)


def chunk_info(table: pa.Table) -> dict[str, Any]:
    """The ``info`` a chunk file was written with (empty when none)."""
    raw = (table.schema.metadata or {}).get(CHUNK_META)
    return json.loads(raw) if raw else {}


def config_table(cols: Mapping[str, Any]) -> pa.Table:
    """The configuration columns of a results table as Arrow, one row per configuration in id order: every
    column of ``cols`` with the NAND override columns holding the value each configuration ran with
    (``params.effective_columns``), not NaN for "the catalog's".  Built once per run and sliced.  A long
    string column is factorised (``params.Codes``) and its few distinct values taken by index, rather
    than each entry converted from NumPy's fixed-width form: the same Arrow column."""
    data = {}
    for k, v in params.effective_columns(cols).items():
        a = np.asarray(v)
        if a.dtype.kind in "US" and a.size > 4096:
            c = params.Codes(a)
            data[k] = pa.array(c.uniq).take(pa.array(c.inv.astype(np.int32)))
        else:
            data[k] = a
    return pa.table(data)


def _rows(config: pa.Table, metrics: pa.Table) -> pa.Table:
    """``config_id``, the configuration columns ``config`` (the same rows), then the metrics."""
    data = {"config_id": metrics.column("config_id")}
    data.update({k: config.column(k) for k in config.column_names})
    data.update({k: metrics.column(k) for k in metrics.column_names if k != "config_id"})
    return pa.table(data)


def assemble(cols: Mapping[str, Any], pieces: list[pa.Table], config: pa.Table | None = None) -> pa.Table:
    """The results table: ``config_id``, every configuration column of ``cols``, then the other columns of
    the chunk tables ``pieces`` (``config_id`` + metrics each), one row per configuration in id order.
    The configuration columns come from ``cols`` (fingerprinted), never from the files, so a resumed
    sweep's table has this run's column types; ``config`` is :func:`config_table` of ``cols`` when the
    caller has built it already."""
    metrics = pa.concat_tables([p.replace_schema_metadata(None) for p in pieces])
    ids = metrics.column("config_id").to_numpy()
    if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        metrics = metrics.sort_by("config_id")
        ids = metrics.column("config_id").to_numpy()
    n = len(next(iter(cols.values())))
    if not np.array_equal(ids, np.arange(n)):
        raise RuntimeError(f"the chunks hold {len(ids)} rows for {n} configurations "
                           "(missing or repeated ids)")
    return _rows(config_table(cols) if config is None else config, metrics)


RESULTS = "results.parquet"
ROW_GROUP_ROWS = 65536


def _parquet_options(config_names: list[str]) -> dict[str, Any]:
    """How a results file is written: snappy, dictionaries for the configuration columns only (a sweep's
    values repeat; its metrics mostly do not, and trying dictionaries on them costs time)."""
    return {"compression": "snappy", "use_dictionary": [k for k in config_names if k != "config_id"]}


def write_results(table: pa.Table, path: Path, config_names: list[str]) -> None:
    """Write a whole results table (:func:`ssdx.core.io.replace_atomic`), as :class:`ResultsStream` does;
    ``config_names``: its configuration columns."""
    replace_atomic(path, lambda tmp: pq.write_table(table, tmp, **_parquet_options(config_names)))


def in_id_order(units: Sequence[np.ndarray], n: int) -> bool:
    """Whether the chunks ``units`` (configuration ids), taken in index order, are ``0 .. n-1`` in order:
    then their rows can be written as they arrive (:class:`ResultsStream`)."""
    return sum(len(u) for u in units) == n and np.array_equal(
        np.concatenate([np.asarray(u) for u in units]) if units else np.zeros(0, np.int64), np.arange(n))


class ResultsStream:
    """``results.parquet`` written while a sweep runs, as row groups in configuration-id order.

    For a sweep whose chunks, in index order, hold the ids ``0 .. n-1`` in order (:func:`in_id_order`).
    Chunks may finish in any order (several devices, Ray, a resume); each is held until those before it
    have arrived, then rows are written in groups of at least :data:`ROW_GROUP_ROWS` (fewer only at the
    end).  The file grows under a temporary name and is renamed into place by :meth:`close` once every
    chunk has been written, so a reader or a crash sees the finished file or none; :meth:`abort` removes
    the partial file, and a partial file a killed run left is removed when the next run starts.  The
    file holds the same rows and columns as :func:`assemble`'s table.

    Not thread-safe: call every method from one thread (the sweep's background writer)."""

    def __init__(self, path: Path, config: Callable[[], pa.Table], sizes: Sequence[int]):
        self.path = Path(path)
        self._config = config  # called on first use, in the writer's thread
        self.offsets = np.concatenate([[0], np.cumsum(np.asarray(sizes, np.int64))])
        self.next = 0
        self.pending: dict[int, pa.Table] = {}
        self.buffered: list[pa.Table] = []
        for stale in self.path.parent.glob(f".{self.path.name}.tmp-*"):  # left by a killed run
            stale.unlink(missing_ok=True)
        self.tmp = temp_path(self.path)
        self.writer: pq.ParquetWriter | None = None

    def add(self, index: int, metrics: pa.Table) -> None:
        """Chunk ``index``'s rows (``config_id`` + metrics); written once every earlier chunk has come."""
        lo, hi = int(self.offsets[index]), int(self.offsets[index + 1])
        if not np.array_equal(metrics.column("config_id").to_numpy(), np.arange(lo, hi)):
            raise RuntimeError(f"chunk {index} should hold configurations {lo}..{hi - 1}; it holds others")
        self.pending[index] = metrics.replace_schema_metadata(None)
        while self.next in self.pending:
            self.buffered.append(self.pending.pop(self.next))
            self.next += 1
            if self.offsets[self.next] - self.offsets[self.next - len(self.buffered)] >= ROW_GROUP_ROWS:
                self._flush()

    def _flush(self) -> None:
        if not self.buffered:
            return
        lo, hi = int(self.offsets[self.next - len(self.buffered)]), int(self.offsets[self.next])
        metrics = pa.concat_tables(self.buffered)
        config = self._config()
        table = _rows(config.slice(lo, hi - lo), metrics)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, table.schema, **_parquet_options(config.column_names))
        self.writer.write_table(table, row_group_size=len(table))
        self.buffered = []

    def close(self) -> None:
        """Write what is buffered and put the file in place; every chunk must have been added."""
        n_chunks = len(self.offsets) - 1
        if self.next != n_chunks:
            missing = [i for i in range(self.next, n_chunks) if i not in self.pending]
            raise RuntimeError(f"{RESULTS}: chunks {missing[:10]} of {n_chunks} never arrived")
        try:
            self._flush()
            if self.writer is None:
                raise RuntimeError(f"{RESULTS}: no rows to write")
            writer, self.writer = self.writer, None
            writer.close()
            os.replace(self.tmp, self.path)
        finally:
            self.abort()

    def abort(self) -> None:
        """Stop writing and remove the partial file (the finished file, if any, is left)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.tmp.unlink(missing_ok=True)
