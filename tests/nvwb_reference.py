"""Exact NV-WB reference (plain Python, one line at a time) for ``ssdx.models.hybrid.model``.

Same rules as the model's module docstring, written the obvious way: each SCM set is a dict of its
lines, the gathering unit a dict of lines, the NAND a set of the lines programmed into it.  With one
set it is the fully associative NV-WB cache of Fukuchi et al. (global LRU victim, global threshold); with the
model's sets and hash it must agree with the vectorised model line for line.
"""

from __future__ import annotations

import math

import numpy as np

READ, WRITE = 0, 1
HASH = 2654435761


def set_of(line: int, sets: int) -> int:
    return ((line * HASH) % (1 << 32)) % sets


class NvWb:
    def __init__(self, sets: int, ways: int, limit: int, unit: int, page_units: int = 4,
                 gways: int | None = None, policy: str = "lru"):
        self.sets, self.ways, self.limit, self.unit, self.page_units = sets, ways, limit, unit, page_units
        self.gways = gways if gways is not None else ways
        self.policy = policy
        self.rows: list[dict[int, list]] = [{} for _ in range(sets)]  # line -> [stamp, dirty]
        self.gathering: dict[int, int] = {}  # line -> set
        self.nand: set[int] = set()
        self.clock = 0
        self.req_miss = 0
        self.counts = dict(hits_r=0, hits_w=0, nand_reads=0, nand_programs=0, flushes=0, partial_flushes=0,
                           skipped=0)

    @property
    def resident(self) -> int:
        return sum(len(r) for r in self.rows)

    def _key(self, item):
        line, (stamp, dirty) = item
        return stamp + ((1 << 30) if (self.policy == "cflru" and dirty) else 0)

    def _flush(self, partial: bool) -> None:
        n = len(self.gathering)
        self.nand.update(self.gathering)
        self.gathering.clear()
        self.counts["nand_programs"] += math.ceil(n / self.page_units)
        self.counts["flushes"] += 1
        self.counts["partial_flushes"] += partial

    def access(self, op: int, line: int, first: bool) -> None:
        if first:
            self.req_miss = 0
        self.clock += 1
        row = self.rows[set_of(line, self.sets)]
        if line in row:
            self.counts["hits_r" if op == READ else "hits_w"] += 1
            if op == WRITE:
                row[line][1] = True
            if self.policy != "fifo":
                row[line][0] = self.clock
            return
        if line in self.gathering:  # still in SCM, waiting for its write unit: served (and updated) there
            self.counts["hits_r" if op == READ else "hits_w"] += 1
            return
        if op == READ:
            self.counts["nand_reads"] += self.req_miss % self.page_units == 0
            self.req_miss += 1
        need = self.resident + len(self.gathering) >= self.limit or len(row) == self.ways
        if need and row:
            victim, (_, dirty) = min(row.items(), key=self._key)
            del row[victim]
            if dirty:
                s = set_of(victim, self.sets)
                if sum(1 for v in self.gathering.values() if v == s) == self.gways:
                    self._flush(partial=True)
                self.gathering[victim] = s
                if len(self.gathering) >= self.unit:
                    self._flush(partial=False)
        elif need:
            self.counts["skipped"] += 1
        row[line] = [self.clock, op == WRITE]


def replay(ref: NvWb, lines: dict[str, np.ndarray]) -> NvWb:
    for op, line, first in zip(lines["op"], lines["line"], lines["first"], strict=True):
        ref.access(int(op), int(line), bool(first))
    return ref
