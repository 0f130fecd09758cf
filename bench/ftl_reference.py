"""A page-by-page page-mapped FTL in plain Python: the reference for :mod:`ssdx.models.gc.model`.

It follows the FTL that ``ssdx.models.gc.model`` describes, one NAND page at a time with Python lists
(no JAX, no batching of a block's host writes): a block is filled from the never-written pool while
it lasts (the last block is kept as the first spare), afterwards the policy's victim among the closed
blocks other than the spare has its valid pages copied, in page order, into the spare, is erased and
becomes the next spare, and the host's pages fill the rest of the block.  The tests compare the model's
per-cycle outputs and final maps with it exactly, and ``bench.gc`` times it as the per-configuration
Python baseline.

Policies (the model's tie-breaks): ``greedy`` (fewest valid pages, lowest block), ``fifo`` (oldest
closed block), ``cost_benefit`` (largest ``age·(1 − u)/(2u)``, Rosenblum & Ousterhout, "The Design and
Implementation of a Log-Structured File System", ACM TOCS 1992), ``d_choices`` (fewest valid among
``d`` blocks drawn with the model's random stream, Van Houdt, "A Mean Field Model for a Class of Garbage
Collection Algorithms in Flash-based Solid State Drives", SIGMETRICS 2013).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class PageFTL:
    """A drive of ``n_blocks`` blocks of ``b`` used pages each, ``m`` ≥ ``b`` page slots per block
    (physical page ``p`` lies in block ``p // m``); secure-erased at construction."""

    def __init__(self, n_blocks: int, b: int, m: int):
        if not 2 <= b <= m or n_blocks < 3:
            raise ValueError(f"PageFTL needs 2 <= b <= m and n_blocks >= 3 (got n_blocks={n_blocks}, b={b}, "
                             f"m={m})")
        self.n, self.b, self.m = n_blocks, b, m
        self.l2p = [-1] * (n_blocks * m)
        self.p2l = [-1] * (n_blocks * m)
        self.valid = [0] * n_blocks
        self.closed = [-1] * n_blocks
        self.spare, self.next_fresh, self.host, self.cycle = n_blocks - 1, 0, 0, 0

    def victim(self, policy: str, d: int = 1, seed: int = 0) -> int:
        """The block the policy cleans next (a closed block other than the spare)."""
        ok = [i for i in range(self.n) if i != self.spare and self.closed[i] >= 0]
        if policy == "greedy":
            return min((self.valid[i], i) for i in ok)[1]
        if policy == "fifo":
            return min((self.closed[i], i) for i in ok)[1]
        if policy == "cost_benefit":
            def score(i: int) -> float:
                u = self.valid[i] / self.b
                age = self.cycle - self.closed[i] + 1.0
                return np.inf if u == 0 else age * (1 - u) / (2 * u)
            best = max(score(i) for i in ok)
            return min(i for i in ok if score(i) == best)
        if policy == "d_choices":
            # the candidates come from the model's counter-based stream (a stream, not policy logic)
            import jax.numpy as jnp

            from ssdx.models.gc import model as gc
            from ssdx.models.gc.params import D_MAX
            j = np.arange(D_MAX, dtype=np.uint32)
            u = np.asarray(gc.uniform(jnp.uint32(seed), jnp.uint32(self.cycle * D_MAX) + j, 2))
            cand = np.minimum((u * self.n).astype(np.int64), self.n - 1)[:d]
            allowed = set(ok)
            cand = [int(c) for c in cand if int(c) in allowed]
            if not cand:  # no candidate is eligible: the model falls back to greedy
                return self.victim("greedy")
            return min((self.valid[c], k, c) for k, c in enumerate(cand))[2]
        raise ValueError(f"unknown GC policy {policy!r}")

    def write(self, lpn: int, ppn: int) -> None:
        """Map logical page ``lpn`` to physical page ``ppn``, invalidating its old copy."""
        old = self.l2p[lpn]
        if old >= 0:
            self.valid[old // self.m] -= 1
            self.p2l[old] = -1
        self.p2l[ppn], self.l2p[lpn] = lpn, ppn
        self.valid[ppn // self.m] += 1

    def step(self, lpns: Sequence[int], policy: str, d: int = 1, seed: int = 0) -> tuple[int, int]:
        """Fill one block; ``lpns[n]`` is the logical page of host write ``n``.  Returns (host pages,
        pages copied by GC)."""
        m, b = self.m, self.b
        if self.next_fresh < self.n - 1:
            blk, k = self.next_fresh, 0
            self.next_fresh += 1
        else:
            v = self.victim(policy, d, seed)
            blk, k = self.spare, 0
            for off in range(b):
                lpn = self.p2l[v * m + off]
                if lpn >= 0:
                    self.write(lpn, blk * m + k)
                    k += 1
            for off in range(m):
                self.p2l[v * m + off] = -1
            self.valid[v], self.closed[v], self.spare = 0, -1, v
        for i in range(b - k):
            self.write(int(lpns[self.host + i]), blk * m + k + i)
        self.closed[blk] = self.cycle
        self.host += b - k
        self.cycle += 1
        return b - k, k
