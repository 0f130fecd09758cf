"""The sweep report's best rows and their ties."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ssdx.report.tables import TIE_FRACTION, best_per_group


def test_best_row_per_group_counts_the_rows_tied_with_it():
    # group a: three drives at their interface's rate (one a hair below, within the tie fraction), one slower
    rate = 7010.0
    df = pd.DataFrame({"mode": ["a", "a", "a", "a", "b", "b"],
                       "mb_s": [rate, rate * (1 - TIE_FRACTION / 2), 3000.0, rate, 900.0, 800.0],
                       "config_id": [5, 1, 2, 3, 4, 0]})
    best = best_per_group(df, ["mode"], "mb_s", ascending=False)
    assert list(best["mode"]) == ["a", "b"]
    assert list(best["config_id"]) == [3, 4]  # of equals, the first in sweep order
    assert list(best["ties"]) == [3, 1]
    slow = best_per_group(df, ["mode"], "mb_s", ascending=True)
    assert list(slow["mb_s"]) == [3000.0, 800.0] and list(slow["ties"]) == [1, 1]


def test_ungrouped_best_rows_each_count_their_equals():
    df = pd.DataFrame({"t": [2.0, 1.0, 1.0, 3.0], "config_id": [0, 1, 2, 3]})
    best = best_per_group(df, [], "t")
    assert list(best["config_id"]) == [1, 2, 0, 3]
    assert list(best["ties"]) == [2, 2, 1, 1]


def test_a_null_group_key_is_a_group_and_nan_values_tie_with_each_other():
    # drive.static_slc_gb null means the catalog value: those rows form their own group
    df = pd.DataFrame({"slc": [24.0, 24.0, np.nan, np.nan], "v": [np.nan, np.nan, 1.0, 1.0],
                       "config_id": [0, 1, 2, 3]})
    best = best_per_group(df, ["slc"], "v", ascending=False)
    assert len(best) == 2 and list(best["ties"]) == [2, 2] and best["ties"].dtype == np.int64
