"""fio job files, part 3: what the options of a job mean (sizes, mixes, distributions, rates, limits).

:func:`read_job` turns a :class:`~ssdx.workloads.fio_ini.Section` into a :class:`Job`, refusing what
ssdx does not model with its name and line, as ``ssdx.workloads.fio`` documents ("Options").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ssdx.models.engine.params import MAX_SLOTS
from ssdx.workloads import synthetic
from ssdx.workloads.fio_ini import FioError, Section, Setting
from ssdx.workloads.fio_timing import (
    LatencyTarget,
    SteadyState,
    check_pacing,
    read_latency_target,
    read_start_delay,
    read_steady_state,
)
from ssdx.workloads.fio_values import MAX_BYTES, OptionReader
from ssdx.workloads.traces import READ, WRITE

MAX_NUMJOBS = 1024
FLOW_MAX_WEIGHT = 1000  # fio's flow.h
MAX_QUEUE_DEPTH = MAX_SLOTS  # outstanding commands the engine tracks
MAX_SPLIT = 64  # bssplit entries per direction (fio's BSSPLIT_MAX)
MAX_ZONES = 256  # zoned entries (fio's ZONESPLIT_MAX)
MAX_RANGE_SIZES = 1 << 16  # distinct sizes of one bsrange
DEFAULT_BS = 4096

_RW = {"read": (False, 1.0), "write": (False, 0.0), "randread": (True, 1.0), "randwrite": (True, 0.0),
       "rw": (False, None), "readwrite": (False, None), "randrw": (True, None)}
_TRIM = ("trim", "randtrim", "trimwrite", "randtrimwrite")


def _bsrange(job: OptionReader, st: Setting, text: str) -> dict[int, float]:
    """fio's draw: ``lo + ⌊hi·u⌋`` rounded down to a multiple of lo, capped at hi (``get_next_buflen``):
    the multiples ``k·lo ≤ hi`` with probability lo/hi each, hi the rest."""
    m = re.fullmatch(r"(.+?)[-:](.+)", text)
    if not m:
        job.fail(st, f"{text!r} is not a range lo-hi (or lo:hi)")
    lo, hi = sorted((job.block(st, m.group(1)), job.block(st, m.group(2))))
    kmax = hi // lo
    if kmax > MAX_RANGE_SIZES:
        job.fail(st, f"{text!r} spans more than {MAX_RANGE_SIZES} sizes")
    table = {k * lo: lo / hi for k in range(1, kmax + 1)}
    if hi % lo:
        table[hi] = table.get(hi, 0.0) + 1.0 - kmax * lo / hi
    return table


def _bssplit(job: OptionReader, st: Setting, text: str) -> dict[int, float]:
    entries = text.split(":")
    if len(entries) > MAX_SPLIT:
        job.fail(st, f"more than {MAX_SPLIT} block sizes")
    sizes, percs = [], []
    for e in entries:
        b, _, p = e.partition("/")
        sizes.append(job.block(st, b))
        p = p.strip()
        try:
            percs.append(float(p) if p else None)
        except ValueError:
            job.fail(st, f"{e!r}: the percentage {p!r} is not a number")
        if percs[-1] is not None and not 0 <= percs[-1] <= 100:
            job.fail(st, f"{e!r}: a percentage must lie in 0-100")
    known = sum(x for x in percs if x is not None)
    missing = percs.count(None)
    if known > 100 + 1e-9:
        job.fail(st, f"the percentages add up to {known:g}, more than 100")
    if not missing and abs(known - 100) > 1e-6:
        job.fail(st, f"the percentages add up to {known:g}, not 100 (leave one blank to take the rest)")
    share = (100.0 - known) / missing if missing else 0.0
    table: dict[int, float] = {}
    for b, p in zip(sizes, percs):
        w = share if p is None else p
        if w > 0:
            table[b] = table.get(b, 0.0) + w
    if not table:
        job.fail(st, "no block size has a share")
    return table


def _distribution(job: OptionReader, st: Setting | None) -> synthetic.Distribution:
    if st is None:
        return synthetic.Distribution()
    text = job.value(st)
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind == "random":
        if rest:
            job.fail(st, "random takes no value")
        return synthetic.Distribution()
    if kind == "sequence":
        parts = [x.strip() for x in rest.split(",")]
        if not all(re.fullmatch(r"\d+", x) for x in parts):
            job.fail(st, f"sequence:{rest}: block indices, whole numbers separated by ','")
        stride = job.get("random_sequence_stride")
        try:
            return synthetic.Distribution("sequence", sequence=tuple(int(x) for x in parts),
                                          stride=job.flag("random_sequence_stride") if stride else False)
        except ValueError as e:
            job.fail(st, str(e))
    if "," in rest:
        job.fail(st, "one distribution for all directions only (no per-direction ',' sets)")
    try:
        if kind in ("zipf", "pareto", "normal"):
            vals = [v.strip() for v in rest.split(":")] if rest else []
            if len(vals) > 2:
                job.fail(st, f"{kind} takes at most a value and a center")
            value = float(vals[0]) if vals and vals[0] else {"zipf": 1.1, "pareto": 0.2, "normal": 0.0}[kind]
            center = float(vals[1]) if len(vals) > 1 else None
            return synthetic.Distribution(kind, value, center)
        if kind in ("zoned", "zoned_abs"):
            return synthetic.Distribution(kind, zones=_zones(job, st, rest, kind == "zoned_abs"))
    except ValueError as e:
        job.fail(st, str(e))
    hint = " (write zoned_abs:...)" if kind.startswith("zoned_abs=") else ""
    job.fail(st, f"unknown distribution {kind!r}{hint}: random, zipf, pareto, normal, zoned, zoned_abs, "
                 "sequence")
    raise AssertionError  # unreachable


def _zones(job: OptionReader, st: Setting, text: str, absolute: bool) -> tuple[tuple[float, float], ...]:
    entries = [e for e in text.split(":") if e.strip()]
    if not entries or len(entries) > MAX_ZONES:
        job.fail(st, f"zoned needs 1 to {MAX_ZONES} access/size entries")
    access: list[float | None] = []
    sizes: list[float | None] = []
    for e in entries:
        a, sep, s = e.partition("/")
        if not sep:
            job.fail(st, f"{e!r} is not access/size")
        try:
            access.append(float(a) if a.strip() else None)
        except ValueError:
            job.fail(st, f"{e!r}: the access percentage is not a number")
        if absolute:
            sizes.append(float(job.size(st, s)))
        else:
            try:
                sizes.append(float(s) if s.strip() else None)
            except ValueError:
                job.fail(st, f"{e!r}: the size percentage is not a number")

    def fill(vals: list[float | None], what: str, exact: bool) -> list[float]:
        known = sum(v for v in vals if v is not None)
        missing = vals.count(None)
        if known > 100 + 1e-9 or (exact and not missing and abs(known - 100) > 1e-6):
            job.fail(st, f"the {what} percentages add up to {known:g}, not 100")
        share = (100.0 - known) / missing if missing else 0.0
        return [share if v is None else v for v in vals]

    acc = fill(access, "access", True)
    size = sizes if absolute else fill(sizes, "size", False)  # type: ignore[arg-type]
    return tuple((a / 100.0, s if absolute else s / 100.0) for a, s in zip(acc, size))


@dataclass(frozen=True)
class Job:
    """One job section's workload, read from its options (sizes in bytes, times in seconds).

    ``size``/``offset``/``offset_increment``: bytes (int), or a float fraction of the drive (``N%``).
    ``rates``: bytes/s per direction (0: none), ``rate_iops`` already multiplied by the direction's
    smallest size."""

    name: str
    path: str
    line: int
    index: int
    options: Mapping[str, Setting]
    rw: str
    random: bool
    read_fraction: float
    run_length: int
    identical: bool
    hole_bytes: int
    read_sizes: Mapping[int, float]
    write_sizes: Mapping[int, float]
    read_align: int | None
    write_align: int | None
    iodepth: int
    numjobs: int
    size: int | float | None
    offset: int | float
    offset_align: int | None
    offset_increment: int | float
    io_size: int | None
    number_ios: int | None
    loops: int
    runtime_s: float
    time_based: bool
    rates: tuple[float, float]
    poisson: bool
    distribution: synthetic.Distribution
    random_map: bool
    randseed: int | None
    thinktime_s: float
    thinktime_blocks: int
    stonewall: bool = False
    #: ``wait_for``: the job whose clones must all be done before this one starts
    wait_for: str | None = None
    steady: SteadyState | None = None
    verify: bool = False
    ramp_s: float = 0.0
    #: ``startdelay``: the clone's start, s, or a range (lo, hi) each clone draws from
    start_delay: tuple[float, float] = (0.0, 0.0)
    #: ``flow``/``flow_id``: the weight (0: no flow control) and the flow it shares
    flow: int = 0
    flow_id: int = 0
    #: ``verify_backlog``/``verify_backlog_batch``: verify while writing (0: after the writes)
    verify_backlog: int = 0
    verify_batch: int = 0
    latency: LatencyTarget | None = None

    @property
    def timed(self) -> bool:
        """Open loop: arrival times from ``rate``/``rate_iops`` (of a direction in use) or ``thinktime``."""
        return any(self.rates[d] > 0 for d in self.directions) or self.thinktime_s > 0

    @property
    def depth(self) -> int:
        """Outstanding requests per clone: ``iodepth``, capped by ``thinktime_blocks`` under thinktime."""
        return min(self.iodepth, self.thinktime_blocks) if self.thinktime_s > 0 else self.iodepth

    @property
    def directions(self) -> list[int]:
        return [d for d, used in ((READ, self.read_fraction > 0), (WRITE, self.read_fraction < 1)) if used]

    def sizes(self, d: int) -> Mapping[int, float]:
        return self.read_sizes if d == READ else self.write_sizes

    @property
    def min_block(self) -> int:
        return min(min(self.sizes(d)) for d in self.directions)

    @property
    def max_block(self) -> int:
        return max(max(self.sizes(d)) for d in self.directions)

    def at(self, option: str) -> tuple[str, int]:
        """Where ``option`` was set, else the job's section header."""
        st = self.options.get(option)
        return (st.path, st.line) if st else (self.path, self.line)

    def fail(self, option: str, problem: str) -> None:
        path, line = self.at(option)
        raise FioError(path, line, f"job [{self.name}]: {problem}")

    def bound(self, open_loop: bool) -> str:
        """What ends a clone's requests (before ``workload.requests``)."""
        parts = [f"number_ios={self.number_ios}"] if self.number_ios else []
        if not self.time_based:
            parts.append("io_size" if self.io_size else "size")
        if open_loop and self.runtime_s:
            parts.append("runtime")
        if not parts:
            parts.append("workload.requests (a closed-loop time_based job runs for a time)")
        return ", ".join(parts)


def read_job(sec: Section) -> Job:
    """The :class:`Job` of a section (supported options only; the others are the caller's concern)."""
    j = OptionReader(sec)
    rw_st = j.get("rw")
    mode, post = "read", ""
    if rw_st is not None:
        mode, _, post = j.value(rw_st).partition(":")
        mode = mode.strip().lower()
    if mode in _TRIM:
        j.fail(rw_st, f"rw={mode}: trims are not modelled (the engine does not model deallocation)")
    if mode not in _RW:
        j.fail(rw_st, f"unknown rw value {mode!r}: read, write, randread, randwrite, rw, readwrite, randrw")
    random, read_fraction = _RW[mode]
    for key in ("rwmixread", "rwmixwrite"):  # fio checks both percentages whatever the mode
        j.count(key, 0, 100)
    if read_fraction is None:
        mixes = [st for st in (j.get("rwmixread"), j.get("rwmixwrite")) if st is not None]
        read_fraction = 0.5
        if mixes:  # the later of the two wins (fio HOWTO, rwmixwrite)
            last = max(mixes, key=lambda st: st.seq)
            pct = j.count(last.key, 0, 100)
            read_fraction = pct / 100 if last.key == "rwmixread" else 1 - pct / 100
    run_length, hole = 1, 0
    if rw_st is not None and ":" in (rw_st.value or ""):
        if not post.strip():
            j.fail(rw_st, "':' needs a number after it")
        if random:
            run_length = int(j.size(rw_st, post))
        else:  # a negative number steps back (fio HOWTO, rw; examples/backwards-read.fio)
            back = post.strip().startswith("-")
            hole = int(j.size(rw_st, post.strip().removeprefix("-").strip(), zero=True)) * (-1 if back else 1)
    seq_st = j.get("rw_sequencer")
    identical = False
    if seq_st is not None:
        v = j.value(seq_st).lower()
        if v not in ("sequential", "identical"):
            j.fail(seq_st, f"must be sequential or identical, got {v!r}")
        identical = v == "identical"

    tables: list[dict[int, float]] = []
    split_st, split = j.per_direction("bssplit")
    bs_st, bs = j.per_direction("bs")
    br_st, br = j.per_direction("bsrange")
    for d in (READ, WRITE):
        if split[d]:
            tables.append(_bssplit(j, split_st, split[d]))  # type: ignore[arg-type]
            continue
        cands = [(st, parts[d]) for st, parts in ((bs_st, bs), (br_st, br)) if st is not None and parts[d]]
        if not cands:
            tables.append({DEFAULT_BS: 1.0})
            continue
        st, text = max(cands, key=lambda c: c[0].seq)  # the later of bs and bsrange
        tables.append({j.block(st, text): 1.0} if st.key in ("bs", "blocksize") else _bsrange(j, st, text))
    ba_st, ba = j.per_direction("blockalign")
    aligns = [None if ba[d] is None else j.block(ba_st, ba[d]) for d in (READ, WRITE)]  # type: ignore[arg-type]

    def amount(name: str, zero: bool) -> int | float | None:
        st = j.get(name)
        return None if st is None else j.size(st, j.value(st), percent=True, zero=zero)

    rates = [0.0, 0.0]
    rate_st, rate = j.per_direction("rate")
    iops_st, iops = j.per_direction("rate_iops")
    for d in (READ, WRITE):
        if rate[d]:
            rates[d] = float(j.size(rate_st, rate[d], zero=True))  # type: ignore[arg-type]
        elif iops[d]:
            rates[d] = float(j.size(iops_st, iops[d], zero=True)) * min(tables[d])  # type: ignore[arg-type]
    proc = j.get("rate_process")
    if proc is not None and j.value(proc).lower() not in ("linear", "poisson"):
        j.fail(proc, f"must be linear or poisson, got {proc.value!r}")
    dist = _distribution(j, j.get("random_distribution"))
    norandommap = j.flag("norandommap")
    time_based = j.flag("time_based")
    runtime = j.seconds("runtime", 1.0)
    if time_based and not runtime:
        j.fail(j.get("time_based"), "time_based needs a runtime")
    thinktime = j.seconds("thinktime", 1e-6)
    j.seconds("thinktime_spin", 1e-6)  # checked; the pause is thinktime either way
    job = Job(
        name=sec.name, path=sec.path, line=sec.line, index=sec.index, options=dict(sec.options), rw=mode,
        random=random, read_fraction=float(read_fraction), run_length=run_length, identical=identical,
        hole_bytes=hole, read_sizes=tables[READ], write_sizes=tables[WRITE], read_align=aligns[READ],
        write_align=aligns[WRITE], iodepth=j.count("iodepth", 1, MAX_QUEUE_DEPTH, 1),  # type: ignore[arg-type]
        numjobs=j.count("numjobs", 1, MAX_NUMJOBS, 1),  # type: ignore[arg-type]
        size=None if j.flag("fill_device") else amount("size", False), offset=amount("offset", True) or 0,
        offset_align=j.count("offset_align", 1, MAX_BYTES),
        offset_increment=amount("offset_increment", True) or 0,
        io_size=j.count("io_size", 1, MAX_BYTES), number_ios=j.count("number_ios", 0, MAX_BYTES) or None,
        loops=j.count("loops", 1, 1_000_000, 1),  # type: ignore[arg-type]
        runtime_s=runtime, time_based=time_based, rates=(rates[READ], rates[WRITE]),
        poisson=proc is not None and j.value(proc).lower() == "poisson", distribution=dist,
        random_map=random and dist.uniform and not norandommap and ba_st is None,
        randseed=j.count("randseed", 0, (1 << 64) - 1), thinktime_s=thinktime,
        thinktime_blocks=j.count("thinktime_blocks", 1, MAX_BYTES, 1),  # type: ignore[arg-type]
        stonewall=j.flag("stonewall"),
        wait_for=j.value(j.get("wait_for")) if j.get("wait_for") is not None else None,  # type: ignore[arg-type]
        steady=read_steady_state(j),
        verify=_verifies(j, read_fraction),
        ramp_s=j.seconds("ramp_time", 1.0),
        start_delay=read_start_delay(j),
        flow=j.count("flow", 0, FLOW_MAX_WEIGHT, 0),  # type: ignore[arg-type]
        flow_id=j.count("flow_id", 0, (1 << 31) - 1, 0),  # type: ignore[arg-type]
        verify_backlog=j.count("verify_backlog", 0, MAX_BYTES, 0) if _verifies(j, read_fraction) else 0,
        verify_batch=j.count("verify_backlog_batch", 0, MAX_BYTES, 0),  # type: ignore[arg-type]
        latency=read_latency_target(j),
    )
    check_pacing(j, job.flow, job.timed, job.verify_backlog)
    if job.wait_for == job.name:  # fio's init.c, wait_for_ok
        j.fail(j.get("wait_for"), "a job cannot wait for itself")
    cmd = j.get("cmd_type")
    if cmd is not None and j.value(cmd).lower() != "nvme":
        j.fail(cmd, f"cmd_type={cmd.value}: SCSI commands through the bsg driver, whose write variants the "
                    "engine does not model; nvme (the same reads and writes) is taken")
    return job


def _verifies(j: OptionReader, read_fraction: float) -> bool:
    """Whether the job reads back what it writes (``verify`` set to a method other than ``0``, ``do_verify``
    not 0, and writes to verify): fio logs the written blocks only then (``backend.c``, ``log_io_piece``),
    for its verify phase after the writes or, with ``verify_backlog``, while writing."""
    st = j.get("verify")
    if st is None or j.value(st).lower() == "0":
        return False
    do = j.get("do_verify")
    if do is not None and j.value(do) not in ("0", "1"):
        j.fail(do, f"must be 0 or 1, got {do.value!r}")
    return (do is None or j.value(do) == "1") and read_fraction < 1
