"""Plain-text tables for terminal reports."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def best_per_group(df: pd.DataFrame, group_by: Sequence[str], sort_by: str,
                   ascending: bool = True) -> pd.DataFrame:
    """The best row of each group by ``sort_by`` (all rows' best if ``group_by`` is empty)."""
    if sort_by not in df.columns:
        raise KeyError(f"report.sort_by {sort_by!r} is not a result column; have {sorted(df.columns)}")
    ordered = df.sort_values([sort_by, "config_id"], ascending=[ascending, True], kind="stable")
    if not group_by:
        return ordered.head(10).reset_index(drop=True)
    best = ordered.groupby(list(group_by), sort=True).head(1)
    return best.sort_values(list(group_by)).reset_index(drop=True)


def format_table(df: pd.DataFrame, columns: Sequence[str] | None = None, floatfmt: str = "{:.4g}") -> str:
    """Fixed-width text of ``df`` restricted to ``columns`` (those that exist), floats to 4 digits."""
    cols = [c for c in dict.fromkeys(columns or df.columns) if c in df.columns]
    view = df[cols].copy()
    for c in cols:
        if pd.api.types.is_float_dtype(view[c]):
            view[c] = view[c].map(floatfmt.format)
    view.columns = [c.split(".")[-1] for c in cols]
    return view.to_string(index=False)
