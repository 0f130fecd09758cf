"""Results store: one Parquet file per finished chunk (atomic), merged into ``results.parquet``."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` via a temporary file and ``os.replace`` (never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def chunk_path(out_dir: Path, index: int) -> Path:
    """Where chunk ``index`` of a sweep is checkpointed."""
    return out_dir / "chunks" / f"chunk_{index:06d}.parquet"


def merge(out_dir: Path, n_chunks: int) -> pa.Table:
    """Concatenate the chunk files in index order, sort by ``config_id`` and write ``results.parquet``."""
    tables = [pq.read_table(chunk_path(out_dir, i)) for i in range(n_chunks)]
    table = pa.concat_tables(tables).sort_by("config_id")
    write_atomic(table, out_dir / "results.parquet")
    return table
