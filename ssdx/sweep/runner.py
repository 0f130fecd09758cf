"""Chunked ``jit(vmap(model))`` runner.

Configurations are processed in chunks of ``chunk_size``; the last chunk is padded by repeating its
final row so every chunk has the same shape and the model compiles once.  Each configuration's
result depends only on its own parameters, so results are identical whatever the chunk size or the
order in which chunks run (tested).  In the fluid engine no array shape depends on a parameter (die
count, capacity and NAND type only scale rates and capacities), so nothing needs masks; the one
static choice is whether the step must split at idle gaps (about 7x the work per step on CPU), so
configurations are grouped by it and each group runs the kernel specialised for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path

import jax
import numpy as np
import pyarrow as pa

from ssdx import params
from ssdx.models import fluid
from ssdx.sweep import store


def fluid_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory of the per-configuration function a sweep vmaps, given the static ``idle_gaps`` flag:
    (Drive, Workload) -> dict of scalars."""
    return lambda idle_gaps: partial(fluid.metrics, n_steps=n_steps, idle_gaps=idle_gaps)


def thermal_model(n_steps: int) -> Callable[[bool], Callable]:
    """Factory for the coupled write/power/thermal model: (Drive, Workload, Power, Thermal) -> scalars."""
    from ssdx.models import coupled

    return lambda _flag: partial(coupled.metrics, n_steps=n_steps)


def idle_gap_groups(workload) -> list[tuple[bool, np.ndarray]]:
    """``(idle_gaps, indices)`` for the configurations without and with idle gaps (non-empty groups)."""
    has = (np.asarray(workload.burst_bytes) > 0) & (np.asarray(workload.idle_s) > 0)
    return [(flag, np.flatnonzero(has == flag)) for flag in (False, True) if np.any(has == flag)]


def _take(tree, idx: np.ndarray):
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


def run(
    cols: Mapping[str, np.ndarray],
    model: Callable[[bool], Callable],
    chunk_size: int,
    out_dir: Path | None = None,
    dtype=np.float32,
    progress: bool = True,
    order: Sequence[int] | None = None,
    desc: str = "sweep",
    trees: tuple | None = None,
    groups: list[tuple[bool, np.ndarray]] | None = None,
) -> pa.Table:
    """Run ``model(idle_gaps)`` over every configuration in ``cols``; one row per configuration.

    Chunks are cut within each :func:`idle_gap_groups` group (configurations without idle gaps
    first), numbered in that order.  The table holds ``config_id``, every column of ``cols`` and
    every metric.  With ``out_dir`` each chunk is checkpointed atomically to ``out_dir/chunks/`` and
    the merged table is written to ``out_dir/results.parquet``.  ``order`` permutes the chunk
    processing order (for tests).  ``trees`` are the stacked parameter pytrees ``model(flag)`` takes
    (default: ``params.build(cols)``, i.e. (Drive, Workload)); ``groups`` the static-flag groups
    (default: :func:`idle_gap_groups` of the workload).
    """
    from tqdm.auto import tqdm

    n = len(next(iter(cols.values())))
    if trees is None:
        trees = params.build(cols, dtype=dtype)
    if groups is None:
        groups = idle_gap_groups(trees[1])
    chunk_size = max(1, min(int(chunk_size), n))
    plan = [(flag, idx[lo:lo + chunk_size]) for flag, idx in groups for lo in range(0, len(idx), chunk_size)]
    n_chunks = len(plan)
    compiled = {flag: jax.jit(jax.vmap(model(flag))) for flag in {f for f, _ in plan}}
    order = list(range(n_chunks)) if order is None else list(order)
    if sorted(order) != list(range(n_chunks)):
        raise ValueError(f"order must be a permutation of range({n_chunks})")
    pieces: dict[int, pa.Table] = {}
    bar = tqdm(total=n, desc=desc, unit="cfg", disable=not progress, mininterval=0.5)
    t0 = time.perf_counter()
    for c in order:
        flag, idx = plan[c]
        size = len(idx)
        padded = np.concatenate([idx, np.full(chunk_size - size, idx[-1])])  # one shape, one compile
        res = jax.device_get(compiled[flag](*_take(trees, padded)))
        data = {"config_id": idx.astype(np.int64)}
        data.update({k: np.asarray(v)[idx] for k, v in cols.items()})
        data.update({k: np.asarray(v, dtype=np.float64)[:size] for k, v in res.items()})
        table = pa.table(data)
        if out_dir is not None:
            store.write_atomic(table, store.chunk_path(Path(out_dir), c))
        pieces[c] = table
        bar.update(size)
    bar.close()
    elapsed = time.perf_counter() - t0
    if out_dir is not None:
        table = store.merge(Path(out_dir), n_chunks)
    else:
        table = pa.concat_tables([pieces[i] for i in range(n_chunks)]).sort_by("config_id")
    return table.replace_schema_metadata({"elapsed_s": f"{elapsed:.3f}", "chunks": str(n_chunks)})
