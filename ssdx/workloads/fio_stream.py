"""fio job files, part 5: the request streams of a job file's jobs on one drive (``ssdx.workloads.fio``
documents the rules: *Streams*, *How many requests*, *Pacing*, *Jobs share the drive*, *Timing*).

:class:`FioStream` merges the clones' streams (:class:`_Source`: offsets from
``ssdx.workloads.synthetic.PatternStream``, arrival times, ``verify_backlog``'s reads) into chunks;
:class:`VerifyStream` is a verify phase's reads; :func:`flow_shares` the closed loop's shares of fio's
flows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ssdx.workloads import synthetic
from ssdx.workloads.fio_job import Job
from ssdx.workloads.traces import READ, WRITE, Chunk

BLOCK = 65_536  # requests per emitted chunk
GEN_BLOCK = 2048  # requests a clone generates at a time (memory: clones x this)


# ----------------------------------------------------------------------------------------------- plan

def _fraction_bytes(job: Job, option: str, value: int | float, capacity: int) -> int:
    """A ``N%`` (float) of the drive as bytes, aligned up to ``offset_align`` (else the smallest block
    size) for the offsets (fio HOWTO ``offset``); bytes (int) as they are."""
    if isinstance(value, int):
        return value
    b = int(capacity * value)
    if option != "size":
        a = job.offset_align or job.min_block
        b = -(-b // a) * a
    return b


def region(job: Job, clone: int, capacity: int) -> tuple[int, int]:
    """Start and length (bytes) of clone ``clone``'s region on a drive of ``capacity`` bytes."""
    start = _fraction_bytes(job, "offset", job.offset, capacity) \
        + clone * _fraction_bytes(job, "offset_increment", job.offset_increment, capacity)
    if start >= capacity:
        job.fail("offset_increment" if clone and job.offset_increment else "offset",
                 f"clone {clone} starts at byte {start}, beyond the drive's {capacity} bytes")
    size = capacity - start if job.size is None else _fraction_bytes(job, "size", job.size, capacity)
    span = min(size, capacity - start)  # fio: the offset caps the size at the device's end
    if span < job.max_block:
        job.fail("size", f"clone {clone}'s region of {span} bytes cannot hold a {job.max_block}-byte request")
    return start, span


class _Source:
    """The requests of one clone, in blocks, with their merge keys (arrival times, or ``(i + ½)/depth``)."""

    def __init__(self, job: Job, clone: int, capacity: int, seed: int, cap: int, open_loop: bool,
                 share: float | None = None):
        self.job, self.open_loop = job, open_loop
        self.share = float(share or job.depth)  # the clone's share of the closed loop's issues
        start, span = region(job, clone, capacity)
        base = job.randseed if job.randseed is not None else seed
        self._key = [int(base), job.index, clone]
        pattern = synthetic.Pattern(
            read_fraction=job.read_fraction, read_sizes=job.read_sizes, write_sizes=job.write_sizes,
            random=job.random, span_bytes=span, offset_bytes=start, distribution=job.distribution,
            read_align=job.read_align, write_align=job.write_align, run_length=job.run_length,
            identical=job.identical, hole_bytes=job.hole_bytes, random_map=job.random_map)
        map_key = int(np.random.SeedSequence([*self._key, 1 << 20]).generate_state(1, np.uint64)[0])
        try:
            self.stream = synthetic.PatternStream(
                pattern, lambda b: np.random.default_rng([*self._key, b]), map_key=map_key)
        except ValueError as e:
            job.fail("random_distribution", str(e))
        self.max_requests = min(job.number_ios or cap + 1, cap + 1)  # one more than the cap: truncation shows
        whole = span // self.stream.unit_bytes * self.stream.unit_bytes  # fio stops where a block won't fit
        self.max_bytes = None if job.time_based else (job.io_size or whole) * job.loops
        self.max_time = job.runtime_s if open_loop and job.runtime_s else None
        self.n = self.bytes = self._block = 0
        self.done = False
        self._rate_bytes = [0, 0]
        self._poisson_t = [0.0, 0.0]
        self._u = 0.0
        self._min_bs = [min(job.read_sizes), min(job.write_sizes)]
        lo, hi = job.start_delay
        self.delay_s = lo if hi == lo else float(np.random.default_rng([*self._key, 2]).uniform(lo, hi))
        self.taken = 0  # the job's own requests (verify reads aside)
        self._backlog = _Backlog(job.verify_backlog, job.verify_batch) if job.verify_backlog else None

    def next(self) -> dict[str, np.ndarray] | None:
        """The next block (op, offset, size, time_s, key), or None when the clone is done."""
        if self.done or self.taken >= self.max_requests:
            self.done = True
            return None
        k = min(GEN_BLOCK, self.max_requests - self.taken)
        try:
            ch = self.stream.take(k)
        except ValueError as e:
            self.job.fail("random_distribution", str(e))
        keep = k
        if self.stream.ended_at is not None:  # a sequence block past the region ends fio's job
            keep, self.done = self.stream.ended_at, True
            ch = Chunk(**{f: getattr(ch, f)[:keep] for f in ("time_s", "op", "offset", "size", "line")})
        if self.max_bytes is not None:
            cum = self.bytes + np.cumsum(ch.size)
            hit = int(np.searchsorted(cum, self.max_bytes, side="left"))
            if hit < k:
                keep, self.done = hit + 1, True
        op, size = ch.op[:keep], ch.size[:keep]
        t = self._times(op, size) + self.delay_s if self.open_loop else np.full(keep, np.nan)
        if self.max_time is not None:
            cut = int(np.searchsorted(t, self.max_time + self.delay_s, side="left"))
            if cut < keep:
                keep, self.done = cut, True
        self._block += 1
        self.taken += keep
        self.bytes += int(size[:keep].sum())
        if self.taken >= self.max_requests:
            self.done = True
        out = {"op": op[:keep], "offset": ch.offset[:keep], "size": size[:keep], "time_s": t[:keep]}
        if self._backlog is not None:
            out = self._backlog.interleave(out, final=self.done)
        n = len(out["op"])
        if n == 0:
            self.done = True
            return None
        idx = self.n + np.arange(n, dtype=np.float64)
        self.n += n
        out["key"] = out["time_s"] if self.open_loop else (idx + 0.5) / self.share
        return out

    def _times(self, op: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Issue times, s (module docstring, *Timing*), carrying the rate and pause state."""
        job = self.job
        due = np.zeros(len(op))
        trng = np.random.default_rng([*self._key, self._block, 1])
        for d in (READ, WRITE):
            bps = job.rates[d]
            idx = np.flatnonzero(op == d)
            if not bps or not len(idx):
                continue
            if job.poisson:
                gaps = trng.exponential(self._min_bs[d] / bps, len(idx))
                due[idx] = self._poisson_t[d] + np.cumsum(gaps)
                self._poisson_t[d] = float(due[idx[-1]])
            else:
                s = size[idx]
                due[idx] = (self._rate_bytes[d] + np.cumsum(s) - s) / bps
                self._rate_bytes[d] += int(s.sum())
        i = self.taken + np.arange(len(op))
        pause = job.thinktime_s * (i // job.thinktime_blocks) if job.thinktime_s else np.zeros(len(op))
        u = np.maximum.accumulate(np.maximum(due - pause, self._u))
        self._u = float(u[-1])
        return u + pause


def flow_shares(jobs: list[Job]) -> dict[int, float]:
    """Each flow-controlled job's (``flow`` > 0) share of its closed loop's issues, per clone (keyed by
    ``id(job)``).  fio (``flow.c``) holds each clone's count of issued requests to at most its weight's
    share of all issued by the clones of its ``flow_id``; here the flow's clones together keep the share of
    the loop their summed ``iodepth`` gives them, split among them by weight.  A clone that ends leaves
    the flow, as in fio."""
    flows: dict[int, list[Job]] = {}
    for j in jobs:
        if j.flow:
            flows.setdefault(j.flow_id, []).append(j)
    out = {}
    for members in flows.values():
        depth = sum(j.depth * j.numjobs for j in members)
        weight = sum(j.flow * j.numjobs for j in members)
        out.update({id(j): depth * j.flow / weight for j in members})
    return out


class _Backlog:
    """fio's ``verify_backlog`` N and ``verify_backlog_batch`` B (default N) for one clone (fio's
    ``io_u.c`` ``check_get_verify``, ``verify.c`` ``get_next_verify``): each write joins the clone's history
    of unverified blocks; when the history holds a multiple of N after a write, a batch of B reads of its
    oldest blocks starts, in the order written — a batch larger than the history goes on reading each new
    write back as it is written, until B are read; at the clone's end the blocks still unverified are read
    back (fio's verify phase)."""

    def __init__(self, backlog: int, batch: int):
        self.backlog, self.batch = backlog, batch or backlog
        self.hist: list[tuple[int, int]] = []  # (offset, size), oldest first
        self.head = 0
        self.pending = 0  # reads left of the batch in progress

    def interleave(self, c: dict[str, np.ndarray], final: bool) -> dict[str, np.ndarray]:
        """The requests ``c`` with the verify reads they trigger (and with ``final`` the history left)."""
        ops, offs, sizes, times = [], [], [], []

        def read(n: int) -> int:
            n = min(n, len(self.hist) - self.head)
            for off, sz in self.hist[self.head:self.head + n]:
                ops.append(READ), offs.append(off), sizes.append(sz), times.append(np.nan)
            self.head += n
            return n

        for o, off, sz, t in zip(c["op"].tolist(), c["offset"].tolist(), c["size"].tolist(),
                                 c["time_s"].tolist(), strict=True):
            ops.append(o), offs.append(off), sizes.append(sz), times.append(t)
            if o == WRITE:
                self.hist.append((off, sz))
                if not self.pending and (len(self.hist) - self.head) % self.backlog == 0:
                    self.pending = self.batch
                if self.pending:
                    self.pending -= read(self.pending)
        if final:
            read(len(self.hist) - self.head)
        if self.head > 4096:  # drop what is verified
            self.hist, self.head = self.hist[self.head:], 0
        return {"op": np.asarray(ops, np.int8), "offset": np.asarray(offs, np.int64),
                "size": np.asarray(sizes, np.int64), "time_s": np.asarray(times, np.float64)}


class VerifyStream:
    """The verify phase of a :class:`FioStream`'s jobs (fio's ``verify``): its writes, in the order
    written, as reads of the same offsets and sizes.  ``requests`` and ``truncated`` as the stream's."""

    def __init__(self, stream: FioStream):
        self.stream = stream
        self.requests, self.truncated = 0, False

    def __iter__(self) -> Iterator[Chunk]:
        n = 0
        for c in self.stream:
            w = np.asarray(c.op) == WRITE
            if w.any():
                yield Chunk(time_s=np.full(int(w.sum()), np.nan), op=np.full(int(w.sum()), READ, np.int8),
                            offset=c.offset[w], size=c.size[w], line=np.arange(n + 1, n + int(w.sum()) + 1))
                n += int(w.sum())
        self.requests, self.truncated = n, self.stream.truncated


class FioStream:
    """The merged request stream of the jobs ``jobs`` of a job file on one drive, in the open or the closed
    loop (iterate for :class:`Chunk`\\ s of at most 65,536 requests).  After iteration: ``requests``
    emitted, ``truncated`` (the jobs held more than ``max_requests``)."""

    def __init__(self, jobs: list[Job], open_loop: bool, capacity: int, max_requests: int, seed: int):
        self.jobs, self.open_loop = jobs, open_loop
        self.capacity, self.max_requests, self.seed = capacity, max_requests, seed
        self.requests, self.truncated = 0, False
        for job in jobs:  # region errors before any compute
            for k in range(job.numjobs):
                region(job, k, capacity)

    def __iter__(self) -> Iterator[Chunk]:
        share = flow_shares(self.jobs)
        srcs = [_Source(job, k, self.capacity, self.seed, self.max_requests, self.open_loop,
                        share.get(id(job))) for job in self.jobs for k in range(job.numjobs)]
        bufs: list[dict[str, np.ndarray] | None] = [None] * len(srcs)
        pending: list[dict[str, np.ndarray]] = []
        n_pending = emitted = 0
        while emitted < self.max_requests:
            for i, s in enumerate(srcs):
                if bufs[i] is None and not s.done:
                    bufs[i] = s.next()
            live = [i for i, b in enumerate(bufs) if b is not None]
            if not live:
                break
            threshold = min(bufs[i]["key"][-1] for i in live)  # type: ignore[index]
            parts, src = [], []
            for i in live:
                b = bufs[i]
                c = int(np.searchsorted(b["key"], threshold, side="right"))  # type: ignore[index]
                parts.append({k: v[:c] for k, v in b.items()})  # type: ignore[union-attr]
                src.append(np.full(c, i))
                bufs[i] = {k: v[c:] for k, v in b.items()} if c < len(b["key"]) else None  # type: ignore
            merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
            order = np.lexsort((np.concatenate(src), merged["key"]))
            if len(order) > self.max_requests - emitted:
                order, self.truncated = order[: self.max_requests - emitted], True
            piece = {k: v[order] for k, v in merged.items()}
            emitted += len(order)
            pending.append(piece)
            n_pending += len(order)
            while n_pending >= BLOCK:
                chunk, pending, n_pending = self._emit(pending, BLOCK, emitted - n_pending)
                yield chunk
        if n_pending:
            chunk, pending, n_pending = self._emit(pending, n_pending, emitted - n_pending)
            yield chunk
        self.requests = emitted
        self.truncated = self.truncated or emitted >= self.max_requests and (
            any(b is not None for b in bufs) or any(not s.done and s.next() is not None for s in srcs))

    @staticmethod
    def _emit(pending: list[dict[str, np.ndarray]], n: int,
              first: int) -> tuple[Chunk, list[dict[str, np.ndarray]], int]:
        allp = {k: np.concatenate([p[k] for p in pending]) for k in pending[0]}
        rest = {k: v[n:] for k, v in allp.items()}
        chunk = Chunk(time_s=allp["time_s"][:n].astype(np.float64), op=allp["op"][:n].astype(np.int8),
                      offset=allp["offset"][:n].astype(np.int64), size=allp["size"][:n].astype(np.int64),
                      line=np.arange(first + 1, first + n + 1, dtype=np.int64))
        left = len(rest["key"])
        return chunk, ([rest] if left else []), left
