"""Exact LRU stack distances (ssdx.workloads.lru) against a brute-force LRU and a closed form."""

from collections import OrderedDict

import numpy as np
import pytest

from ssdx.workloads import lru


def _brute_misses(keys, c):
    cache, misses = OrderedDict(), 0
    for k in keys:
        if k in cache:
            cache.move_to_end(k)
            if c == 0:
                raise AssertionError
        else:
            misses += 1
            if c > 0:
                cache[k] = None
                if len(cache) > c:
                    cache.popitem(last=False)
    return misses / len(keys)


def _brute_distances(keys):
    stack, out = [], []
    for k in keys:
        if k in stack:
            i = stack.index(k)
            out.append(len(stack) - 1 - i)
            stack.pop(i)
        else:
            out.append(-1)
        stack.append(k)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_matches_a_brute_force_lru_exactly(seed):
    rng = np.random.default_rng(seed)
    n_keys = int(rng.integers(2, 60))
    keys = rng.zipf(1.3, int(rng.integers(1, 800))) % n_keys
    assert lru.stack_distances(keys).tolist() == _brute_distances(keys.tolist())
    sizes = [0, 1, 2, 3, 5, 8, 13, 40, 100]
    got = lru.miss_ratio(keys, sizes)
    for c, g in zip(sizes, got):
        assert g == _brute_misses(keys.tolist(), c), c


def test_string_keys_and_edge_cases():
    assert lru.stack_distances(np.array(["a", "b", "a", "a", "c", "b"])).tolist() == [-1, -1, 1, 0, -1, 2]
    assert len(lru.stack_distances(np.zeros(0, np.int64))) == 0
    assert np.isnan(lru.miss_ratio(np.zeros(0, np.int64), [1])).all()
    with pytest.raises(ValueError):
        lru.miss_ratio(np.arange(3), [-1])


def test_uniform_irm_has_the_closed_form_miss_ratio():
    """Independent uniform references over N keys: the LRU stack is a uniformly random order, so a
    request hits with probability C/N in steady state."""
    rng = np.random.default_rng(0)
    n_keys, n = 1000, 400_000
    keys = rng.integers(0, n_keys, n)
    d = lru.stack_distances(keys)[50_000:]  # after every key was seen (steady state)
    assert (d >= 0).all()
    for c in (100, 250, 500, 900):
        assert lru.miss_ratio_from_distances(d, [c])[0] == pytest.approx(1 - c / n_keys, abs=0.005)


def _write_back_reference(keys, is_write, capacity):
    """A write-back LRU cache as an ordered dict: the flags of the requests that push a dirty key out."""
    cache: OrderedDict = OrderedDict()
    out = []
    for k, w in zip(keys.tolist(), is_write.tolist(), strict=True):
        flag = False
        if k in cache:
            cache[k] = cache.pop(k) or w
        else:
            if len(cache) >= capacity:
                _, flag = cache.popitem(last=False)
            cache[k] = w
        out.append(bool(flag))
    return np.array(out)


@pytest.mark.parametrize("capacity", [1, 7, 50, 400])
def test_dirty_evictions_match_a_write_back_cache(capacity):
    """Each flag is a dirty object pushed out: equal to an ordered-dict write-back LRU on skewed keys, and
    a read-only stream never flushes."""
    rng = np.random.default_rng(capacity)
    keys = (1000 * rng.random(20_000) ** 3).astype(np.int64)
    w = rng.random(20_000) < 0.3
    np.testing.assert_array_equal(lru.dirty_evictions(keys, w, capacity),
                                  _write_back_reference(keys, w, capacity))
    assert not lru.dirty_evictions(keys, np.zeros_like(w), capacity).any()
    with pytest.raises(ValueError, match="capacity"):
        lru.dirty_evictions(keys, w, 0)
