"""Sweep plots: the Pareto front against brute force, the heatmap's best value per cell."""

import numpy as np
import pandas as pd
import pytest

from ssdx.params import ConfigError
from ssdx.report import sweep as sweep_report


@pytest.mark.parametrize("x_max,y_max", [(True, True), (False, True), (True, False), (False, False)])
def test_pareto_mask_equals_brute_force(x_max, y_max):
    rng = np.random.default_rng(7)
    x, y = rng.integers(0, 12, 300).astype(float), rng.integers(0, 12, 300).astype(float)
    x[5] = np.nan
    got = sweep_report.pareto_mask(x, y, x_max, y_max)
    a, b = (x if x_max else -x), (y if y_max else -y)
    want = np.array([np.isfinite(a[i]) and not np.any((a >= a[i]) & (b >= b[i]) & ((a > a[i]) | (b > b[i])))
                     for i in range(len(x))])
    # ties (equal points) keep one representative: compare the sets of front values
    assert {(a[i], b[i]) for i in np.flatnonzero(got)} == {(a[i], b[i]) for i in np.flatnonzero(want)}
    assert got.sum() == len({(a[i], b[i]) for i in np.flatnonzero(want)})


def test_heatmap_cells_hold_the_best_value_and_pareto_plot_is_written(tmp_path):
    df = pd.DataFrame({"t1": [340, 340, 345, 345, 340], "t2": [0, 350, 0, 350, 350],
                       "gb": [10.0, 12.0, 11.0, 9.0, 15.0], "cooling": ["bare"] * 5})
    spec = {"x": "t1", "y": "t2", "value": "gb", "better": "max", "facet": "cooling"}
    grids = sweep_report.heatmap(df, spec, tmp_path / "h.png")
    assert grids["bare"] == {"x": [340, 345], "y": [0, 350], "value": [[10.0, 11.0], [15.0, 9.0]]}
    front = sweep_report.pareto(df, {"x": "t1", "x_better": "min", "y": "gb", "y_better": "max"},
                                tmp_path / "p.png")
    assert front["gb"].tolist() == [15.0]
    assert (tmp_path / "h.png").stat().st_size > 5000 and (tmp_path / "p.png").stat().st_size > 5000
    with pytest.raises(ConfigError, match="sweep.report.pareto.y"):
        sweep_report.pareto(df, {"x": "t1", "y": "missing"})
    with pytest.raises(ConfigError, match="sweep.report.heatmap.better"):
        sweep_report.heatmap(df, {"x": "t1", "y": "t2", "value": "gb", "better": "most"}, tmp_path / "x.png")
