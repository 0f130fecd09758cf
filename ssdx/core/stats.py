"""Running sums and latency statistics shared by the request-level models.

* :func:`kahan_add` — compensated summation (Kahan, "Further remarks on reducing truncation errors",
  Communications of the ACM 8(1), 1965): a long float32 clock or total keeps the low-order bits that
  plain addition drops, so the error stays at a few units in the last place whatever the number of terms.
* Latency histograms: log-spaced bins, :data:`BINS_PER_DECADE` per decade from ``10**LOG_MIN`` s (0.1 µs)
  to 100 s (:data:`N_BINS` bins, the ends clipped), filled with :func:`latency_bin` inside a scan and
  read back with :func:`percentile_from_hist`; :func:`bin_edges` are the bins' bounds, s.
* :func:`percentile_low` and :func:`percentile_low_masked` — a low percentile of a scan's per-step values
  from its few smallest values (``jax.lax.top_k``, no sort), as ``numpy.percentile`` with linear
  interpolation computes it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

BINS_PER_DECADE = 50
LOG_MIN = -7.0  # log10 of the first bin's lower edge, s (0.1 us)
N_BINS = 9 * BINS_PER_DECADE  # up to 100 s
#: bins added before flooring: a latency on a bin edge up to rounding (10 µs of command overheads, summed
#: from absolute times on one back end and from rebased times on another) falls in the bin above it on
#: every back end; it moves the edges down by 1e-4 of a bin (5e-6 of a latency), far below the bins' width
BIN_NUDGE = 1e-4


def kahan_add(total: jax.Array, comp: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Compensated (Kahan) addition of ``x`` to ``total`` with the running compensation ``comp``; returns
    the new total and compensation (start both at zero)."""
    y = x - comp
    t = total + y
    return t, (t - total) - y


def latency_bin(lat: jax.Array) -> jax.Array:
    """Histogram bin of a latency (s): log-spaced, :data:`BINS_PER_DECADE` per decade from 0.1 µs, clipped
    to ``[0, N_BINS - 1]`` (:data:`BIN_NUDGE` for latencies on an edge)."""
    x = (jnp.log10(jnp.maximum(lat, 1e-12)) - LOG_MIN) * BINS_PER_DECADE + BIN_NUDGE
    return jnp.clip(jnp.floor(x), 0, N_BINS - 1).astype(jnp.int32)


def bin_edges() -> np.ndarray:
    """The ``N_BINS + 1`` bounds of the latency bins, s."""
    return 10.0 ** (LOG_MIN + np.arange(N_BINS + 1) / BINS_PER_DECADE)


def percentile_from_hist(hist: np.ndarray, q: float) -> np.ndarray:
    """The ``q``-quantile (0-1) of latencies from log-spaced histograms ``(..., N_BINS)``, s; geometric
    interpolation within the bin (error under half a bin, ±2.3 %).  NaN where the histogram is empty."""
    return percentiles_from_hist(hist, (q,))[0]


def percentiles_from_hist(hist: np.ndarray, qs: tuple[float, ...]) -> list[np.ndarray]:
    """:func:`percentile_from_hist` of each quantile of ``qs`` from one cumulative sum of the histograms."""
    hist = np.asarray(hist, np.float64)
    cum = np.cumsum(hist, axis=-1)
    total = cum[..., -1:]
    before = np.concatenate([np.zeros_like(cum[..., :1]), cum], -1)
    out = []
    for q in qs:
        target = q * total
        idx = np.argmax(cum >= target - 1e-9, axis=-1)
        below = np.take_along_axis(before, idx[..., None], -1)[..., 0]
        inbin = np.take_along_axis(hist, idx[..., None], -1)[..., 0]
        frac = np.where(inbin > 0, (target[..., 0] - below) / np.maximum(inbin, 1), 0.0).clip(0, 1)
        value = 10.0 ** (LOG_MIN + (idx + frac) / BINS_PER_DECADE)
        out.append(np.where(total[..., 0] > 0, value, np.nan))
    return out


def percentile_low(x: jax.Array, q: float) -> jax.Array:
    """``jnp.percentile(x, q)`` (linear interpolation) of a 1-D ``x`` from its few smallest values
    (``top_k``, no sort); ``q`` in percent, static."""
    pos = q / 100.0 * (x.shape[0] - 1)
    lo = int(pos)
    k = min(lo + 2, x.shape[0])
    smallest = -jax.lax.top_k(-x, k)[0]
    hi = min(lo + 1, k - 1)
    return smallest[lo] + (pos - lo) * (smallest[hi] - smallest[lo])


def percentile_low_masked(x: jax.Array, count: jax.Array, q: float) -> jax.Array:
    """``q``-th percentile (linear interpolation) of the ``count`` finite values of ``x``; the rest
    are ``+inf``.  Reads only the few smallest values (``top_k``, no sort); NaN when ``count`` is 0."""
    k = min(int(q / 100.0 * (x.shape[0] - 1)) + 2, x.shape[0])
    smallest = -jax.lax.top_k(-x, k)[0]
    pos = q / 100.0 * (jnp.maximum(count, 1.0) - 1.0)
    lo = jnp.floor(pos).astype(jnp.int32)
    hi = jnp.minimum(lo + 1, jnp.maximum(count.astype(jnp.int32) - 1, 0))
    value = smallest[lo] + (pos - lo) * (smallest[hi] - smallest[lo])
    return jnp.where(count > 0, value, jnp.nan)
