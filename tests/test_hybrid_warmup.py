"""The hybrid's warm-up of a stream whose working set fits the SCM (``ssdx.models.hybrid.jobs``): the
prefix replayed as the cache it leaves (:func:`~ssdx.models.hybrid.jobs.resident_prefix`) leaves the exact
NV-WB reference (``nvwb_reference``) in the state the whole prefix leaves it in, and such a stream is
marked warmed in the *resident* regime, its window untouched."""

from __future__ import annotations

import numpy as np
from nvwb_reference import NvWb, replay

from ssdx.models.hybrid import jobs
from ssdx.models.hybrid import model as hybrid
from ssdx.workloads.traces import READ, WRITE


def _state(ref: NvWb) -> list[list[tuple[int, bool]]]:
    """Each set's lines, least recently used first, with their dirty flags."""
    return [[(line, dirty) for line, (_, dirty) in sorted(row.items(), key=lambda kv: kv[1][0])]
            for row in ref.rows]


def test_the_resident_prefix_leaves_the_cache_the_whole_prefix_leaves():
    rng = np.random.default_rng(3)
    n = 6000
    hot = rng.integers(0, 400, n)  # 400 distinct offsets, reused many times, reads and writes mixed
    op = np.where(rng.random(n) < 0.4, WRITE, READ)
    raw = hybrid.lines_from_requests(op, hot * 4096 * 3, 4096 * rng.integers(1, 4, n))
    sets, ways = 64, 64  # room for every line: nothing is pushed out
    whole = replay(NvWb(sets, ways, limit=10**9, unit=16), raw)
    short = jobs.resident_prefix(raw, len(raw["op"]))
    fast = replay(NvWb(sets, ways, limit=10**9, unit=16), short)
    assert len(short["op"]) == len(np.unique(raw["line"])) < len(raw["op"]) / 5
    assert _state(fast) == _state(whole)
    assert whole.counts["nand_programs"] == fast.counts["nand_programs"] == 0
    # every line the prefix wrote is dirty, every other one clean
    dirty = {line for row in _state(fast) for line, d in row if d}
    assert dirty == set(np.unique(raw["line"][raw["op"] == WRITE]))


def test_a_working_set_within_the_scm_warms_in_the_resident_regime(monkeypatch):
    monkeypatch.setattr(jobs, "RESIDENT_COLD", 0.05)  # a short stream: 5 % of the window first touches
    measure = 3000
    big = 10**7  # an SCM of 10^7 lines holds prxy_1's working set, which never fills it
    st = jobs.stream("prxy_1", {}, measure, lambda fp: big, fills=1.0, settle=4.0, threshold=0.2,
                     smallest=lambda fp: big, lru=True)
    info = st.info
    assert info["warm_regime"] == "resident" and info["warmed"] and info["first_touch_share"] <= 0.05
    assert info["measured_requests"] == measure and info["resident_lines"] > 0
    window = st["measure"]
    assert int(np.sum(st["first"] & window)) == measure
    # the prefix: each line once, none measured, before the window
    pre = ~window
    assert not np.any(window[:int(pre.sum())]) and len(np.unique(st["line"][pre])) == int(pre.sum())
    # an SCM too small for the working set is not resident: the stream warms by filling it, or is flagged
    small = jobs.stream("prxy_1", {}, measure, lambda fp: 1000, fills=1.0, settle=4.0, threshold=0.2,
                        smallest=lambda fp: 1000, lru=True)
    assert small.info["warm_regime"] != "resident"
