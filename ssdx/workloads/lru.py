"""Exact LRU stack distances and miss-ratio curves of request streams (Mattson et al., "Evaluation
techniques for storage hierarchies", IBM Systems Journal 9(2), 1970).

The *stack distance* of a request is the number of distinct objects referenced since the previous
request to the same object (0 for an immediate repeat), or -1 for the first request to an object.  An
LRU cache holding ``C`` objects hits a request exactly when its distance is ``0 <= d < C``, so one pass
gives the miss ratio at every cache size.  The pass keeps one mark per object at the time of its last
request in a Fenwick (binary indexed) tree: the distance is the number of marks after that time,
``O(log n)`` per request, ``O(n log n)`` in all (compiled with numba).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import pandas as pd


@numba.njit(cache=True)
def fenwick_prefix(tree: np.ndarray, i: int) -> int:  # pragma: no cover - compiled
    """Sum of the first ``i`` entries of the Fenwick tree (1-based) ``tree``."""
    s = 0
    while i > 0:
        s += tree[i]
        i -= i & -i
    return s


@numba.njit(cache=True)
def fenwick_add(tree: np.ndarray, i: int, delta: int) -> None:  # pragma: no cover - compiled
    """Add ``delta`` to entry ``i`` (1-based) of the Fenwick tree ``tree``."""
    cap = tree.shape[0] - 1
    while i <= cap:
        tree[i] += delta
        i += i & -i


@numba.njit(cache=True)
def compact_slots(tree: np.ndarray, slot_key: np.ndarray, slot: np.ndarray) -> int:  # pragma: no cover
    """Renumber the live slots (``slot_key >= 0``) to ``0 .. j-1`` keeping their order, point ``slot`` of
    each key at its new slot and rebuild the Fenwick tree (1-based) with one mark per live slot in O(len);
    returns ``j``, the next free slot.  Shared by :func:`stack_distances` and the LRU stack generator of
    ``ssdx.workloads.msr``."""
    cap = slot_key.shape[0]
    j = 0
    for i in range(cap):
        k = slot_key[i]
        if k >= 0:
            slot_key[i] = -1
            slot_key[j] = k
            slot[k] = j
            j += 1
    for i in range(1, cap + 1):
        tree[i] = 1 if i <= j else 0
    for i in range(1, cap + 1):
        m = i + (i & -i)
        if m <= cap:
            tree[m] += tree[i]
    return j


@numba.njit(cache=True)
def _distances(dense: np.ndarray, n_keys: int) -> np.ndarray:  # pragma: no cover - compiled
    """Distances of the dense keys ``0 .. n_keys-1``.  Every key seen so far holds one mark, in a slot
    ordered by the time of its last request; slots are renumbered (order kept) when they run out, so the
    tree spans ~4 x the distinct keys, not the whole stream, and stays in cache."""
    n = dense.shape[0]
    cap = max(4 * n_keys, 1024)
    tree = np.zeros(cap + 1, np.int64)
    slot_key = np.full(cap, -1, np.int64)
    slot = np.full(n_keys, -1, np.int64)
    out = np.empty(n, np.int64)
    marks = 0
    nxt = 0  # next free slot (the newest)
    for t in range(n):
        if nxt == cap:  # renumber the live slots 0 .. marks-1 in their order
            nxt = compact_slots(tree, slot_key, slot)
        k = dense[t]
        p = slot[k]
        if p < 0:
            out[t] = -1
        else:
            out[t] = marks - fenwick_prefix(tree, p + 1)  # marks after p: distinct keys requested since
            fenwick_add(tree, p + 1, -1)
            slot_key[p] = -1
            marks -= 1
        fenwick_add(tree, nxt + 1, 1)
        slot_key[nxt] = k
        slot[k] = nxt
        nxt += 1
        marks += 1
    return out


def stack_distances(keys: np.ndarray) -> np.ndarray:
    """LRU stack distance of every request of ``keys`` (any integer or hashable-array keys, one per
    request): int64, in distinct objects, ``-1`` for the first request to a key."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {keys.shape}")
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    dense, uniq = pd.factorize(keys)
    return _distances(dense.astype(np.int64), len(uniq))


def miss_ratio_from_distances(d: np.ndarray, cache_objects: Sequence[int]) -> np.ndarray:
    """Miss ratio by request count for LRU caches of ``cache_objects`` objects, from the distances of
    :func:`stack_distances` (first requests, ``d = -1``, are misses)."""
    d = np.asarray(d)
    c = np.asarray(cache_objects, np.int64)
    if np.any(c < 0):
        raise ValueError("cache sizes must be >= 0 objects")
    if len(d) == 0:
        return np.full(c.shape, np.nan)
    warm = np.sort(d[d >= 0])
    misses = len(d) - np.searchsorted(warm, c, side="left")  # cold + distances >= C
    return misses / len(d)


def miss_ratio(keys: np.ndarray, cache_objects: Sequence[int]) -> np.ndarray:
    """Miss ratio (misses / requests, cold misses included) of an LRU cache holding ``C`` objects, for
    every ``C`` in ``cache_objects``, replaying ``keys`` from an empty cache."""
    return miss_ratio_from_distances(stack_distances(keys), cache_objects)


@numba.njit(cache=True)
def _write_back(dense: np.ndarray, is_write: np.ndarray, n_keys: int, capacity: int
                ) -> np.ndarray:  # pragma: no cover - compiled
    """Dirty evictions of a write-back LRU cache of ``capacity`` objects, one flag per request: a doubly
    linked recency list over the dense keys (``O(1)`` per request)."""
    n = dense.shape[0]
    prev = np.full(n_keys, -1, np.int64)
    nxt = np.full(n_keys, -1, np.int64)
    inside = np.zeros(n_keys, np.bool_)
    dirty = np.zeros(n_keys, np.bool_)
    out = np.zeros(n, np.bool_)
    head, tail, size = -1, -1, 0  # head: most recent; tail: least recent
    for t in range(n):
        k = dense[t]
        if inside[k]:  # hit: unlink, then push to the head below
            p, q = prev[k], nxt[k]
            if p >= 0:
                nxt[p] = q
            else:
                head = q
            if q >= 0:
                prev[q] = p
            else:
                tail = p
            dirty[k] = dirty[k] or is_write[t]
        else:
            if size >= capacity and tail >= 0:  # the least recent object leaves
                v = tail
                out[t] = dirty[v]
                tail = prev[v]
                if tail >= 0:
                    nxt[tail] = -1
                else:
                    head = -1
                inside[v] = False
                dirty[v] = False
                size -= 1
            inside[k] = True
            dirty[k] = is_write[t]
            size += 1
        prev[k] = -1
        nxt[k] = head
        if head >= 0:
            prev[head] = k
        head = k
        if tail < 0:
            tail = k
    return out


def dirty_evictions(keys: np.ndarray, is_write: np.ndarray, capacity: int) -> np.ndarray:
    """Which requests push a dirty object out of a write-back LRU cache of ``capacity`` objects (a write
    inserts or marks its object dirty, a read miss inserts it clean): bool, one per request.  Each flag is
    one object of write-back work (a flush) created at that request."""
    keys = np.asarray(keys)
    w = np.asarray(is_write, bool)
    if keys.shape != w.shape or keys.ndim != 1:
        raise ValueError(f"keys and is_write must be one-dimensional of one length, got {keys.shape} and "
                         f"{w.shape}")
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1 object, got {capacity}")
    if len(keys) == 0:
        return np.zeros(0, bool)
    dense, uniq = pd.factorize(keys)
    return _write_back(dense.astype(np.int64), w, len(uniq), int(capacity))
