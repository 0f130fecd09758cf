"""Plain-text tables for terminal reports."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: rows whose ``sort_by`` value is within this fraction of a best row's count as tied with it
TIE_FRACTION = 1e-3


def best_per_group(
    df: pd.DataFrame, group_by: Sequence[str], sort_by: str, ascending: bool = True
) -> pd.DataFrame:
    """The best row of each group by ``sort_by`` (the 10 best rows if ``group_by`` is empty), with
    ``ties``: how many rows of its group (of all rows, ungrouped) have a ``sort_by`` value within
    :data:`TIE_FRACTION` of the row's, itself included.  A best row with ties is the first in sweep
    order (lowest ``config_id``) of equals, e.g. drives that all run at their host interface's rate."""
    if sort_by not in df.columns:
        raise KeyError(f"report.sort_by {sort_by!r} is not a result column; have {sorted(df.columns)}")
    ordered = df.sort_values([sort_by, "config_id"], ascending=[ascending, True], kind="stable")
    if not group_by:
        best = ordered.head(10).reset_index(drop=True)
        values = ordered[sort_by].to_numpy(float)
        best["ties"] = [_ties(values, v) for v in best[sort_by].to_numpy(float)]
        return best
    keys = [ordered[g] for g in group_by]
    groups = ordered.groupby(keys, sort=True, dropna=False)  # a null group key (a catalog value) is a group
    first = groups[sort_by].transform("first").to_numpy(float)
    near = _near(ordered[sort_by].to_numpy(float), first)
    best = groups.head(1).copy()
    best["ties"] = (
        pd.Series(near.astype(np.int64), index=ordered.index)
        .groupby(keys, sort=False, dropna=False)
        .transform("sum")
        .loc[best.index]
        .astype(np.int64)
    )
    return best.sort_values(list(group_by)).reset_index(drop=True)


def _near(values: np.ndarray, v: np.ndarray | float) -> np.ndarray:
    """Whether each value is within :data:`TIE_FRACTION` of ``v`` (NaN ties with NaN)."""
    return (np.abs(values - v) <= TIE_FRACTION * np.abs(v)) | (np.isnan(values) & np.isnan(v))


def _ties(values: np.ndarray, v: float) -> int:
    return int(np.count_nonzero(_near(values, v)))


def format_table(df: pd.DataFrame, columns: Sequence[str] | None = None, floatfmt: str = "{:.4g}") -> str:
    """Fixed-width text of ``df`` restricted to ``columns`` (those that exist), floats to 4 digits."""
    cols = [c for c in dict.fromkeys(columns or df.columns) if c in df.columns]
    view = df[cols].copy()
    for c in cols:
        if pd.api.types.is_float_dtype(view[c]):
            view[c] = view[c].map(floatfmt.format)
    view.columns = [c.split(".")[-1] for c in cols]
    return view.to_string(index=False)
