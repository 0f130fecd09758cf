"""Phases of a measured fill curve and where a fitted curve leaves it (host side, NumPy).

**Measured phases** (:func:`segment`): a running median (window :data:`SMOOTH_FRACTION` of the samples,
at least 3) smooths the speeds; binary segmentation then splits the curve where a split most reduces
the squared error of a piecewise-constant fit, as long as both parts span at least
:data:`MIN_PHASE_FRACTION` of the curve's GB and their mean speeds differ by more than
:data:`MIN_STEP_FRACTION` of the larger, up to :data:`MAX_PHASES` parts; adjacent parts whose means
then differ by less than that are merged (compared by their medians).  A part's ``mean_mb_s`` is
bytes over time, as ``ssdx.models.fluid.plots.phases`` gives the model's, of its samples less the one at each
change (it may straddle the change).

**Where the curve leaves the model** (:func:`residual_regions`): runs of samples whose running-mean
residual (same window) exceeds ``residual_fraction`` (5 %) of the mean measured speed and three
standard errors of the measurement noise over the window (the noise estimated robustly from the
changes between neighbouring samples), largest (integrated |residual| over GB) first.  The fit is
flagged poor when the RMSE exceeds ``poor_fit_fraction`` (10 %) of the mean measured speed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Measured-phase segmentation (module docstring).
SMOOTH_FRACTION = 0.01
MIN_PHASE_FRACTION = 0.01
MIN_STEP_FRACTION = 0.1
MAX_PHASES = 8


def _running(x: np.ndarray, window: int, how: str) -> np.ndarray:
    """Centred running median or mean of ``x`` over ``window`` samples (shrinking at the ends)."""
    n, h = len(x), window // 2
    if window <= 1 or n < 3:
        return x.astype(float).copy()
    pad = np.pad(x.astype(float), h, mode="edge")
    view = np.lib.stride_tricks.sliding_window_view(pad, 2 * h + 1)[:n]
    return np.median(view, axis=1) if how == "median" else view.mean(axis=1)


def smoothing_window(n: int) -> int:
    """Odd running window for ``n`` samples: :data:`SMOOTH_FRACTION` of them, at least 3 (1 below 5)."""
    if n < 5:
        return 1
    w = max(3, int(round(SMOOTH_FRACTION * n)))
    return w + 1 - w % 2


def _mean_speed(width_gb: np.ndarray, time_s: np.ndarray) -> float:
    """Bytes over time of a run of samples, MB/s."""
    t = float(np.sum(time_s))
    return float(np.sum(width_gb)) * 1e3 / t if t > 0 else 0.0


def segment(gb_lo: np.ndarray, gb_hi: np.ndarray, mb_s: np.ndarray,
            time_s: np.ndarray) -> list[dict[str, Any]]:
    """Plateaus of a measured curve (module docstring): ``[{start_gb, end_gb, mean_mb_s, first, last}]``
    with ``first``/``last`` the sample indices of each part (inclusive)."""
    n = len(mb_s)
    v = _running(np.asarray(mb_s, float), smoothing_window(n), "median")
    span = float(gb_hi[-1] - gb_lo[0])
    min_gb = MIN_PHASE_FRACTION * span
    c1 = np.concatenate([[0.0], np.cumsum(v)])
    c2 = np.concatenate([[0.0], np.cumsum(v * v)])

    def sse(a: int, b: int) -> np.ndarray | float:
        m = b - a
        return c2[b] - c2[a] - (c1[b] - c1[a]) ** 2 / m

    def best_split(a: int, b: int) -> tuple[float, int]:
        k = np.arange(a + 2, b - 1)  # both parts at least 2 samples
        if len(k) == 0:
            return -1.0, -1
        ok = (gb_hi[k - 1] - gb_lo[a] >= min_gb) & (gb_hi[b - 1] - gb_lo[k] >= min_gb)
        left = (c1[k] - c1[a]) / (k - a)
        right = (c1[b] - c1[k]) / (b - k)
        ok &= np.abs(left - right) > MIN_STEP_FRACTION * np.maximum(np.abs(left), np.abs(right))
        if not ok.any():
            return -1.0, -1
        m_l, m_r = k - a, b - k
        sse_l = c2[k] - c2[a] - (c1[k] - c1[a]) ** 2 / m_l
        sse_r = c2[b] - c2[k] - (c1[b] - c1[k]) ** 2 / m_r
        gain = sse(a, b) - sse_l - sse_r
        gain = np.where(ok, gain, -1.0)
        i = int(np.argmax(gain))
        return float(gain[i]), int(k[i])

    parts = [(0, n)]
    while len(parts) < MAX_PHASES:
        cands = [(best_split(a, b), j) for j, (a, b) in enumerate(parts)]
        (gain, k), j = max(cands, key=lambda c: c[0][0])
        if k < 0:
            break
        a, b = parts[j]
        parts[j:j + 1] = [(a, k), (k, b)]
    merged = True
    while merged and len(parts) > 1:  # merge neighbours left too close by later splits
        merged = False
        med = [float(np.median(v[a:b])) for a, b in parts]
        for j in range(len(parts) - 1):
            if abs(med[j] - med[j + 1]) <= MIN_STEP_FRACTION * max(abs(med[j]), abs(med[j + 1])):
                parts[j:j + 2] = [(parts[j][0], parts[j + 1][1])]
                merged = True
                break
    width = np.asarray(gb_hi, float) - np.asarray(gb_lo, float)
    out = []
    for a, b in parts:
        # the samples next to a change may straddle it: the speed is taken from the others
        ia, ib = a + (a > 0), b - (b < n)
        ia, ib = (ia, ib) if ib > ia else (a, b)
        out.append({"start_gb": float(gb_lo[a]), "end_gb": float(gb_hi[b - 1]),
                    "mean_mb_s": _mean_speed(width[ia:ib], np.asarray(time_s)[ia:ib]), "first": a,
                    "last": b - 1})
    return out


def visible(regimes: list[dict[str, Any]], span_gb: float) -> list[dict[str, Any]]:
    """The model's regimes (``ssdx.models.fluid.plots.phases``) as the phases :func:`segment` would see on
    its curve: a regime narrower than :data:`MIN_PHASE_FRACTION` of ``span_gb`` joins the neighbour
    nearer its speed, unless :func:`segment` would still resolve it: it fills more than half of a part of
    that minimum width (so the part's median is its speed) whose mean over GB, the rest taken from the
    neighbour, differs from the neighbour's by more than :data:`MIN_STEP_FRACTION` of the larger (a split
    :func:`segment` makes); neighbours whose speeds differ by no more than that fraction merge.  Each
    phase: ``{name, regimes, start_gb, end_gb, mean_mb_s}``, ``name`` the regimes joined by ``+``,
    ``mean_mb_s`` bytes over time."""
    parts = [{"regimes": [r["name"]], "start_gb": r["start_gb"], "end_gb": r["end_gb"],
              "_t": (r["end_gb"] - r["start_gb"]) * 1e3 / max(r["mean_mb_s"], 1e-300)} for r in regimes]

    def speed(p):
        return (p["end_gb"] - p["start_gb"]) * 1e3 / max(p["_t"], 1e-300)

    def join(j):  # parts j and j + 1 into one
        a, b = parts[j], parts[j + 1]
        names = a["regimes"] + [n for n in b["regimes"] if n not in a["regimes"]]
        parts[j:j + 2] = [{"regimes": names, "start_gb": a["start_gb"], "end_gb": b["end_gb"],
                           "_t": a["_t"] + b["_t"]}]

    while len(parts) > 1:
        min_gb = MIN_PHASE_FRACTION * span_gb
        narrow = [j for j, p in enumerate(parts)
                  if p["end_gb"] - p["start_gb"] < min_gb and not p.get("_seen")]
        if narrow:
            j = min(narrow, key=lambda i: parts[i]["end_gb"] - parts[i]["start_gb"])
            nbrs = [i for i in (j - 1, j + 1) if 0 <= i < len(parts)]
            k = min(nbrs, key=lambda i: abs(speed(parts[i]) - speed(parts[j])))
            w, a, b = parts[j]["end_gb"] - parts[j]["start_gb"], speed(parts[j]), speed(parts[k])
            blend = (w * a + (min_gb - w) * b) / min_gb  # the minimum-width part holding it
            if w > 0.5 * min_gb and abs(blend - b) > MIN_STEP_FRACTION * max(blend, b):
                parts[j]["_seen"] = True  # the segmentation resolves it: its own phase
            else:
                join(min(j, k))
            continue
        close = [j for j in range(len(parts) - 1) if abs(speed(parts[j]) - speed(parts[j + 1]))
                 <= MIN_STEP_FRACTION * max(speed(parts[j]), speed(parts[j + 1]))]
        if not close:
            break
        join(close[0])
    return [{"name": "+".join(p["regimes"]), "regimes": p["regimes"], "start_gb": p["start_gb"],
             "end_gb": p["end_gb"], "mean_mb_s": speed(p)} for p in parts]


def relative_noise(mb_s: np.ndarray) -> float:
    """Robust relative noise of a measured curve: the scaled median absolute deviation of the relative
    change between neighbouring samples, over √2 (two samples' noise in each change).  0 for a curve of
    clean plateaus (its changes are mostly exactly 0)."""
    y = np.asarray(mb_s, float)
    if len(y) < 3:
        return 0.0
    d = np.diff(y) / np.maximum(0.5 * (np.abs(y[1:]) + np.abs(y[:-1])), 1e-9)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


def residual_regions(gb_lo: np.ndarray, gb_hi: np.ndarray, measured_mb_s: np.ndarray,
                     residual_mb_s: np.ndarray, threshold_mb_s: float,
                     max_regions: int = 5) -> list[dict[str, float]]:
    """Runs of samples whose running-mean residual (model - measured, MB/s) exceeds in size both
    ``threshold_mb_s`` and three standard errors of the measurement noise over the window
    (``3·σ·speed/√window``, ``σ`` from :func:`relative_noise`, ``speed`` the smoothed measured speed
    there), largest (integrated |residual| x GB) first: ``[{start_gb, end_gb, mean_residual_mb_s,
    max_abs_residual_mb_s}]``."""
    r = np.asarray(residual_mb_s, float)
    w = smoothing_window(len(r))
    smooth = _running(r, w, "mean")
    level = np.abs(_running(np.asarray(measured_mb_s, float), w, "median"))
    limit = np.maximum(threshold_mb_s, 3.0 * relative_noise(measured_mb_s) * level / np.sqrt(w))
    over = np.abs(smooth) > limit
    width = np.asarray(gb_hi, float) - np.asarray(gb_lo, float)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], over.astype(int), [0]])))
    regions = []
    for a, b in zip(edges[::2], edges[1::2]):
        regions.append({"start_gb": float(gb_lo[a]), "end_gb": float(gb_hi[b - 1]),
                        "mean_residual_mb_s": float(np.mean(r[a:b])),
                        "max_abs_residual_mb_s": float(np.max(np.abs(r[a:b]))),
                        "_area": float(np.sum(np.abs(r[a:b]) * width[a:b])) + 1e-12 * (b - a)})
    regions.sort(key=lambda x: -x["_area"])
    return [{k: v for k, v in x.items() if k != "_area"} for x in regions[:max_regions]]
