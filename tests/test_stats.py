"""``ssdx.core.stats``: compensated sums and the log-spaced latency histogram."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssdx.core import stats


def test_kahan_sum_keeps_the_bits_plain_float32_addition_drops():
    x = jnp.full(100_000, 0.1, jnp.float32)

    def body(carry, v):
        total, comp, plain = carry
        total, comp = stats.kahan_add(total, comp, v)
        return (total, comp, plain + v), None

    zero = jnp.float32(0.0)
    (total, _, plain), _ = jax.lax.scan(body, (zero, zero, zero), x)
    exact = 100_000 * float(np.float32(0.1))  # the float32 value of 0.1, summed exactly
    assert abs(float(total) - exact) <= 1e-3  # a few ulps of 1e4
    assert abs(float(plain) - exact) > 1.0  # plain float32 accumulation drifts by whole units here


def test_latency_bins_follow_their_edges():
    edges = stats.bin_edges()
    assert len(edges) == stats.N_BINS + 1
    assert edges[0] == pytest.approx(1e-7) and edges[-1] == pytest.approx(100.0)
    mid = np.sqrt(edges[:-1] * edges[1:])  # geometric middle of every bin
    assert np.array_equal(np.asarray(stats.latency_bin(jnp.asarray(mid))), np.arange(stats.N_BINS))
    assert int(stats.latency_bin(jnp.asarray(1e-9))) == 0  # clipped at both ends
    assert int(stats.latency_bin(jnp.asarray(1e3))) == stats.N_BINS - 1


def test_percentile_low_is_numpys_linear_percentile():
    rng = np.random.default_rng(3)
    x = rng.normal(size=257).astype(np.float32)
    for q in (0.0, 5.0, 12.5):
        assert float(stats.percentile_low(jnp.asarray(x), q)) == pytest.approx(np.percentile(x, q), rel=1e-6)
    padded = np.concatenate([x, np.full(40, np.inf, np.float32)])
    got = stats.percentile_low_masked(jnp.asarray(padded), jnp.float32(len(x)), 5.0)
    assert float(got) == pytest.approx(np.percentile(x, 5.0), rel=1e-5)
    assert np.isnan(float(stats.percentile_low_masked(jnp.asarray(padded), jnp.float32(0.0), 5.0)))
