"""fio job files as ssdx workloads: ``workload.fio=PATH.fio`` (``workload.fio_job``, ``fio_unknown``).

Written from fio's own documentation — the HOWTO and the fio(1) man page ("Job file format",
"Environment variables", "Parameter types" and the options named below).  Where the HOWTO and fio's
parser read a form differently, the form is refused with the reason instead of guessed.

**Syntax** (fio HOWTO, "Job file format").  INI sections: ``[name]`` starts a job; a section whose name
begins with ``global`` (fio compares the first six letters) sets defaults for the jobs *below* it —
later ``[global]`` sections add to and override earlier ones, and a job keeps what was set above it.  A
line whose first non-blank character is ``;`` or ``#`` is a comment, and fio cuts any line at its first
``;`` or ``#``.  ``key=value`` or a bare ``key`` (a flag: ``time_based``, ``norandommap``);
``include FILE`` pulls in a file of options (no sections; relative to the working directory, else to the
including file; at most 8 deep).  ``${VAR}`` in a value is replaced by the environment variable, the
empty string when it is unset (fio's rule).  Aliases: ``readwrite`` = ``rw``, ``blocksize`` = ``bs``,
``blocksize_range`` = ``bsrange``, ``ba`` = ``blockalign``, ``io_limit`` = ``io_size``.

**Numbers** (fio HOWTO, "int" and ``kb_base``).  Whole numbers (decimal or ``0x`` hex) with an optional
unit, not case sensitive.  With ``kb_base=1024`` (fio's default) ``k``/``kb``, ``m``/``mb``, ``g``,
``t``, ``p`` are powers of 1024 and ``KiB``/``MiB``/``GiB``/``TiB``/``PiB`` powers of *1000* (fio keeps
old scripts working by inverting the standards); ``kb_base=1000`` swaps the two — for every value of
the section that sets it, and, from a [global] section, of the sections after it (values already read
keep their reading, as fio parses each section when it reads it).  ``b`` means bytes.
``size``, ``offset`` and ``offset_increment`` also take ``N%`` (1-100) of the drive's user capacity.
Times: ``d``, ``h``, ``m`` (minutes), ``s``, ``ms``/``msec``, ``us``/``usec``; without a unit
``runtime`` is in seconds and ``thinktime``/``thinktime_spin`` in microseconds.

*Refused forms*: fractions (``1.5g``: fio reads integers and would take ``1``), ``ki``/``mi``/``gi``/
``ti``/``pi`` without ``b`` and the time unit ``sec`` (the HOWTO and fio's parser read them differently),
arithmetic in parentheses and the reserved keywords ``$pagesize``/``$mb_memory``/``$ncpus`` (they
depend on the machine fio runs on), ``z`` zone units.

**Supported options** (:data:`SUPPORTED`): ``rw`` (read, write, randread, randwrite, rw/readwrite,
randrw; ``:N`` — random: a new offset every N requests, the others continuing sequentially or, with
``rw_sequencer=identical``, repeating it; sequential: N bytes skipped after each request),
``rw_sequencer``, ``rwmixread``/``rwmixwrite`` (the later one wins), ``bs`` (``r,w,t`` forms, a value
not ending in a comma applying to the types after it), ``bsrange``, ``bssplit`` (blank percentages share
the rest; the percentages must add up to 100), ``blockalign``, ``iodepth``, ``numjobs``, ``size``,
``offset``, ``offset_align``, ``offset_increment``, ``io_size``, ``number_ios``, ``loops``, ``runtime``,
``time_based``, ``rate``, ``rate_iops``, ``rate_process`` (linear, poisson), ``random_distribution``
(random, zipf[:θ[:c]], pareto[:h[:c]], normal[:d[:c]], zoned:…, zoned_abs:…; one set for all
directions), ``norandommap``, ``randseed``, ``thinktime``, ``thinktime_blocks``, ``thinktime_spin``,
``kb_base``.

**Ignored by design** (:data:`IGNORED_BY_DESIGN`, each with its reason): options that do not change the
requests the drive sees in ssdx's model — naming and files (``name``, ``filename``, ...), reporting and
logs (``group_reporting``, ``write_lat_log``, ...), how the host issues I/O (``ioengine``, ``direct``,
``thread``, CPU affinity, batching; the engine models the device, every request reaching it as with
``direct=1``), data content (``zero_buffers``, ``buffer_compress_percentage``, ...; ssdx models no
data) and ``randrepeat`` (ssdx is always repeatable).  They are accepted and named in the summary's
``fio_ignored_by_design``.

**Any other option is refused**: :class:`FioError` (a :class:`ssdx.params.ConfigError`: exit status 2)
naming the option and its ``file:line`` — e.g. ``verify``, ``fsync``, ``ramp_time``, ``startdelay``,
``stonewall``, ``exitall``, ``percentage_random``, ``nrfiles``, ``filesize``, ``zonemode``.  With
``workload.fio_unknown=warn`` each is named in a :class:`FioIgnoredWarning` and in the summary's
``fio_ignored`` and the run goes on without it.  Malformed files (a line that is no section, option or
comment, a bad number or unit, an unknown ``rw``, a missing file, no job, an unknown ``fio_job``) name
the file and the line.  Files are read as text only (no evaluation), at most 1 MiB, lines and expanded
values at most 4096 characters, at most 256 jobs of at most 1024 clones each.

**Streams** (``ssdx.workloads.synthetic.Pattern``/``PatternStream``, which ``synthetic.fio_like`` also
uses).  Each job is ``numjobs`` clones; clone ``k`` works on ``[offset + k·offset_increment, + size)``
(capped at the drive's end; no ``size``: to the end; a ``%`` offset is aligned up to ``offset_align``,
else the smallest block size, as fio does).  Random offsets follow ``random_distribution`` — the
formulas are ``synthetic.Distribution``'s: Gray et al.'s zipf generator, fio's pareto power law and its
12-sample normal, all hashed over the blocks as fio hashes them, and contiguous zones.  A uniform one
keeps fio's *random map* (each block once per pass, here a keyed permutation; with several block sizes
over the smallest, larger requests overlapping) unless ``norandommap`` or ``blockalign`` is given.
``bsrange`` sizes are drawn as fio draws them (multiples of the smallest, uniform).  Clone ``k`` of the
job in section order ``j`` draws from ``(randseed or the config seed, j, k)``: deterministic, and a job
picked with ``fio_job`` gives the stream it has among all.

**How many requests.**  A clone stops after ``number_ios`` requests, or once it has moved ``io_size``
(else its region's size in whole blocks) × ``loops`` bytes — unless ``time_based`` — or, in the open
loop, at ``runtime``.  A closed-loop ``time_based`` job runs for a time, which ssdx cannot turn into a count
before simulating it: its count is ``workload.requests``.  The merged stream is at most
``workload.requests`` long (default 100,000; at most 10^8): the summary's ``fio_truncated`` says when
the jobs held more and each job's ``bound`` says what ended it.  Streams are generated lazily (2,048
requests per clone at a time, merged into chunks of 65,536), so a long stream costs no memory.

**Jobs share the drive.**  All selected jobs and clones merge into one stream on one drive.  Closed loop
(no ``rate``, ``rate_iops`` or ``thinktime``): the queue depth is the sum of the clones' ``iodepth``
(``workload.queue_depth`` and ``engine.loop`` are overridden) and request ``i`` of a clone is ordered at
``(i + ½)/iodepth`` — each clone issues in proportion to its share of the queue; a clone that ends
leaves the queue to the others.  Open loop (any of those options; every job must then have one):
requests arrive at their clone's times and at most the summed depths are outstanding.

**Timing** (open loop, fio HOWTO ``rate``, ``rate_iops``, ``rate_process``, ``thinktime``).  A
direction with ``rate`` B (bytes/s; or ``rate_iops`` × its smallest block size, as fio converts it)
issues a request once the direction's earlier bytes ÷ B have elapsed (``poisson``: exponential gaps of
mean ``1/IOPS``, IOPS = B ÷ smallest size); an unrated direction follows the request before it.  fio
may switch to the other direction while one is ahead of its rate (skewing the mix, its HOWTO warns);
ssdx keeps ``rwmixread``'s mix and issues in order.  ``thinktime`` T after every ``thinktime_blocks`` B
requests: request ``i`` is issued no earlier than the one before it plus T at each multiple of B, and
no earlier than its rate allows (fio catches up with its rate after a stall) — the schedule fio
produces when the drive serves each group instantly; a real run is slower by the groups' service
time.  ``thinktime`` caps a clone's depth at ``thinktime_blocks`` (fio HOWTO).  ``runtime`` cuts the
clone's requests at that time.

**Fluid fills** (:meth:`FioWorkload.fill`, ``task=fill``).  The fluid model writes new data: one write
size, no address space.  A write job (``write``/``randwrite``, or a mixed one with ``rwmixread=0``)
maps to ``pattern`` (sequential/random), ``block_kib`` (its single write size), ``queue_depth`` (summed
``iodepth``, capped by ``thinktime_blocks``), ``fill_fraction`` (the clones' bytes — ``io_size`` or the
region's bytes (the fluid model is continuous), × ``loops``, at most ``number_ios`` × size — over the
capacity the config's ``workload.prefill_fraction`` leaves free: fio has no notion of data already on
the drive, so the pre-fill stays the config's), and with ``thinktime`` (one clone only) ``burst_gb`` =
``thinktime_blocks`` × size and ``idle_s`` = ``thinktime``.  ``offset`` places the region only.
Refused with the reason: reads, several write sizes, jobs of different patterns or sizes,
``time_based``/``runtime``, ``rate``/``rate_iops``, rewrites (``io_size`` or ``loops`` beyond the region,
overlapping clones — give them ``offset_increment`` — random writes without fio's random map:
``norandommap``, a non-uniform ``random_distribution``, ``blockalign``, ``randwrite:N``), ``rw=write:N``
holes, more bytes than are free.
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.engine_params import MAX_SLOTS
from ssdx.params import ConfigError
from ssdx.workloads import synthetic
from ssdx.workloads.traces import READ, SECTOR, WRITE, Chunk

MAX_FILE_BYTES = 1 << 20
MAX_LINE = 4096
MAX_INCLUDE_DEPTH = 8
MAX_JOBS = 256
MAX_NUMJOBS = 1024
MAX_QUEUE_DEPTH = MAX_SLOTS  # outstanding commands the engine tracks
MAX_BLOCK = 1 << 28  # 256 MiB
MAX_BYTES = 1 << 62
MAX_SPLIT = 64  # bssplit entries per direction (fio's BSSPLIT_MAX)
MAX_ZONES = 256  # zoned entries (fio's ZONESPLIT_MAX)
MAX_RANGE_SIZES = 1 << 16  # distinct sizes of one bsrange
MAX_REQUESTS = 100_000_000
BLOCK = 65_536  # requests per emitted chunk
GEN_BLOCK = 2048  # requests a clone generates at a time (memory: clones x this)
DEFAULT_BS = 4096

#: Options ssdx models, with what it does with them (module docstring).
SUPPORTED: dict[str, str] = {
    "rw": "I/O type and mix: read, write, randread, randwrite, rw, readwrite, randrw; ':N' suffix",
    "rw_sequencer": "sequential | identical: what the requests between random offsets of rw=rand*:N do",
    "rwmixread": "percentage of reads of a mixed job",
    "rwmixwrite": "percentage of writes of a mixed job (the later of the two wins)",
    "bs": "block size, bytes; r,w[,t] forms",
    "bsrange": "block size range lo-hi (or lo:hi), multiples of lo drawn uniformly; r,w forms",
    "bssplit": "block size weights bs/perc:bs/perc; r,w forms",
    "blockalign": "alignment of random offsets; turns fio's random map off",
    "iodepth": "outstanding requests per clone",
    "numjobs": "clones of the job, sharing the drive",
    "size": "region per clone, bytes or % of the drive",
    "offset": "start of the region, bytes or % of the drive",
    "offset_align": "alignment of a % offset",
    "offset_increment": "clone k starts k x this later",
    "io_size": "bytes per clone (default: the region)",
    "number_ios": "requests per clone at most",
    "loops": "passes over the job's bytes",
    "runtime": "open loop: the end of the clone's requests; seconds by default",
    "time_based": "run for runtime rather than for size",
    "rate": "bytes/s per direction: open-loop arrival times",
    "rate_iops": "requests/s per direction (x the smallest block size, as fio): arrival times",
    "rate_process": "linear | poisson arrivals",
    "random_distribution": "random | zipf | pareto | normal | zoned | zoned_abs",
    "norandommap": "draw random offsets with replacement",
    "randseed": "seed of the job's stream",
    "thinktime": "pause after thinktime_blocks requests; microseconds by default; open loop",
    "thinktime_blocks": "requests between pauses (default 1); caps the depth",
    "thinktime_spin": "part of thinktime spent spinning: the pause is still thinktime",
    "kb_base": "1024 | 1000: how unit prefixes read",
}
ALIASES = {"readwrite": "rw", "blocksize": "bs", "blocksize_range": "bsrange", "ba": "blockalign",
           "io_limit": "io_size"}
_HOST = "how fio issues I/O on the host; the engine models the device (as direct=1)"
_REPORT = "fio's reporting and logs; ssdx writes its own summary"
_DATA = "data content; ssdx models no data"
_NAME = "names and files; every job runs on the one modelled drive"
#: Options accepted without effect, with the reason.
IGNORED_BY_DESIGN: dict[str, str] = {
    **dict.fromkeys(("name", "description", "filename", "directory", "filename_format", "unique_filename",
                     "file_service_type", "openfiles", "create_serialize", "create_fsync", "create_on_open",
                     "allow_file_create", "allow_mounted_write", "fallocate", "unlink", "unlink_each_loop",
                     "invalidate", "lockfile"), _NAME),
    **dict.fromkeys(("group_reporting", "new_group", "stats", "per_job_logs", "write_bw_log",
                     "write_lat_log", "write_iops_log", "write_hist_log", "log_avg_msec", "log_hist_msec",
                     "log_hist_coarseness", "log_max_value", "log_offset", "log_compression",
                     "log_unix_epoch", "log_alternate_epoch", "log_prio", "log_issue_time",
                     "percentile_list", "clat_percentiles", "lat_percentiles", "slat_percentiles",
                     "unified_rw_reporting", "disable_lat", "disable_clat", "disable_slat",
                     "disable_bw_measurement", "gtod_reduce", "gtod_cpu", "clocksource", "unit_base",
                     "significant_figures", "bwavgtime", "iopsavgtime"), _REPORT),
    **dict.fromkeys(("ioengine", "direct", "buffered", "thread", "iodepth_batch_submit", "iodepth_batch",
                     "iodepth_batch_complete_min", "iodepth_batch_complete", "iodepth_batch_complete_max",
                     "iodepth_low", "hipri", "fixedbufs", "registerfiles", "sqthread_poll",
                     "sqthread_poll_cpu", "nonvectored", "cpus_allowed", "cpus_allowed_policy", "cpumask",
                     "numa_cpu_nodes", "numa_mem_policy", "nice", "iomem", "mem", "iomem_align", "mem_align",
                     "hugepage-size", "userspace_reap", "continue_on_error", "ignore_error",
                     "error_dump"), _HOST),
    **dict.fromkeys(("zero_buffers", "refill_buffers", "scramble_buffers", "buffer_pattern",
                     "buffer_compress_percentage", "buffer_compress_chunk", "dedupe_percentage"), _DATA),
    "randrepeat": "ssdx streams are always repeatable",
    "allrandrepeat": "ssdx streams are always repeatable",
    "random_generator": "fio's generator; ssdx draws its own (random map: a keyed permutation)",
}
_RW = {"read": (False, 1.0), "write": (False, 0.0), "randread": (True, 1.0), "randwrite": (True, 0.0),
       "rw": (False, None), "readwrite": (False, None), "randrw": (True, None)}
_TRIM = ("trim", "randtrim", "trimwrite", "randtrimwrite")
_TIME = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_ENV = re.compile(r"\$\{([^}]*)\}")
_RESERVED = re.compile(r"\$(pagesize|mb_memory|ncpus)")
_NUM = re.compile(r"(?P<num>0[xX][0-9a-fA-F]+|\d+)(?P<suf>[A-Za-z%]*)\Z")


class FioError(ConfigError):
    """A fio job file problem: ``path``, ``line`` (1-based; 0 for the whole file), what is wrong.  A
    :class:`~ssdx.params.ConfigError` (exit status 2) of ``field`` (``workload.fio`` or
    ``workload.fio_job``)."""

    def __init__(self, path: os.PathLike | str, line: int, problem: str, field: str = "workload.fio",
                 value: Any = None):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}:{line}" if line else str(path)
        super().__init__(field, str(path) if value is None else value, f"{where}: {problem}")


class FioIgnoredWarning(UserWarning):
    """An option ssdx does not model, skipped under ``workload.fio_unknown=warn``."""


@dataclass(frozen=True)
class Setting:
    """One ``key[=value]`` line: the key as written, the expanded value (None: a flag), where, its order
    in the file and the section (``scope``) it was written in."""

    key: str
    value: str | None
    path: str
    line: int
    seq: int
    scope: int = 0

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Section:
    """A job section with the options it holds, [global] ones included (keyed by canonical name).
    ``kb_bases``: the ``kb_base`` setting each section (scope) of the file read its values with — fio
    parses a [global] section's values when it reads the section, so a later ``kb_base`` does not
    change them, and a section's own ``kb_base`` applies to all of its values (fio parses it first)."""

    name: str
    path: str
    line: int
    index: int
    options: dict[str, Setting] = field(default_factory=dict)
    kb_bases: dict[int, Setting | None] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------- parse

def _text(path: Path) -> list[str]:
    if not path.is_file():
        raise FioError(path, 0, "no such file (the fio job file)")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise FioError(path, 0, f"larger than {MAX_FILE_BYTES} bytes: not a fio job file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FioError(path, data[:e.start].count(b"\n") + 1, "not UTF-8 text") from None
    return text.splitlines()


def _clean(raw: str, path: Path, line: int) -> str:
    """The line without blanks and comments (fio cuts at the first ``;`` or ``#``)."""
    if len(raw) > MAX_LINE:
        raise FioError(path, line, f"line longer than {MAX_LINE} characters")
    cut = [i for i in (raw.find(";"), raw.find("#")) if i >= 0]
    return (raw[:min(cut)] if cut else raw).strip()


def _expand(value: str, env: Mapping[str, str], path: Path, line: int) -> str:
    out = _ENV.sub(lambda m: env.get(m.group(1), "") if m.group(1) else "", value)
    if len(out) > MAX_LINE:
        raise FioError(path, line, f"value longer than {MAX_LINE} characters after ${{VAR}} expansion")
    if m := _RESERVED.search(out):
        raise FioError(path, line, f"fio's reserved keyword ${m.group(1)} depends on the machine fio runs "
                                   "on: write its value")
    return out


def _settings(s: str, path: Path, line: int, env: Mapping[str, str], seq: Iterator[int],
              stack: tuple[Path, ...], scope: int) -> list[Setting]:
    """The setting(s) of one cleaned, non-empty, non-section line (an ``include`` gives its file's)."""
    if m := re.fullmatch(r"include\s+(\S.*)", s):
        return _include(m.group(1).strip(), path, line, env, seq, stack, scope)
    key, sep, value = s.partition("=")
    key = key.strip()
    if not _KEY.match(key):
        raise FioError(path, line, "not a [section], an option (key=value or a flag) or a comment: "
                                   f"{s[:80]!r}")
    if not sep:
        return [Setting(key, None, str(path), line, next(seq), scope)]
    return [Setting(key, _expand(value.strip(), env, path, line), str(path), line, next(seq), scope)]


def _include(name: str, path: Path, line: int, env: Mapping[str, str], seq: Iterator[int],
             stack: tuple[Path, ...], scope: int) -> list[Setting]:
    inc = Path(name)
    if not inc.is_absolute() and not inc.exists():  # fio: as given, else next to the including file
        inc = path.parent / name
    if not inc.is_file():
        raise FioError(path, line, f"include: no such file {name!r}")
    if len(stack) >= MAX_INCLUDE_DEPTH or inc.resolve() in stack:
        raise FioError(path, line, f"include {name!r}: nested more than {MAX_INCLUDE_DEPTH} deep or circular")
    out: list[Setting] = []
    for number, raw in enumerate(_text(inc), start=1):
        s = _clean(raw, inc, number)
        if not s:
            continue
        if s.startswith("["):
            raise FioError(inc, number, "an included file may not hold [sections]")
        out += _settings(s, inc, number, env, seq, (*stack, inc.resolve()), scope)
    return out


def parse_file(path: os.PathLike | str, env: Mapping[str, str] | None = None) -> list[Section]:
    """The job sections of a fio job file, each with the [global] options set above it (module docstring).
    ``env`` (default ``os.environ``) expands ``${VAR}``."""
    path = Path(path)
    env = os.environ if env is None else env
    seq = itertools.count()
    sections: list[Section] = []
    defaults: dict[str, Setting] = {}
    current: dict[str, Setting] | None = None
    kb_bases: dict[int, Setting | None] = {}
    scope = 0
    for number, raw in enumerate(_text(path), start=1):
        s = _clean(raw, path, number)
        if not s:
            continue
        if s.startswith("["):
            name = s[1:-1].strip() if s.endswith("]") else ""
            if not name or len(name) > 255 or "[" in name or "]" in name:
                raise FioError(path, number, f"malformed section header {s[:80]!r} (expected [name])")
            if current is not None:
                kb_bases[scope] = current.get("kb_base")
            scope += 1
            if name.startswith("global"):
                current = defaults
            else:
                if len(sections) >= MAX_JOBS:
                    raise FioError(path, number, f"more than {MAX_JOBS} jobs")
                sections.append(Section(name, str(path), number, len(sections), dict(defaults), kb_bases))
                current = sections[-1].options
            continue
        if current is None:
            raise FioError(path, number, f"option outside of a [job] section: {s[:80]!r}")
        for st in _settings(s, path, number, env, seq, (path.resolve(),), scope):
            current[ALIASES.get(st.key, st.key)] = st
    if current is not None:
        kb_bases[scope] = current.get("kb_base")
    return sections


# --------------------------------------------------------------------------------------------- values

def _split_rwt(value: str) -> list[str | None]:
    """fio's ``r,w,t`` lists: a value not ending in a comma applies to the types after it."""
    parts = value.split(",")
    if parts[-1] == "" and len(parts) > 1:
        given = parts[:-1]
        out = given + [""] * (3 - len(given))
    else:
        out = parts + [parts[-1]] * (3 - len(parts))
    return [p.strip() or None for p in out[:3]] if len(parts) <= 3 or parts[3:] == [""] else []


class _Job:
    """Reads one section's options into values, naming the option's file and line on any error."""

    def __init__(self, sec: Section):
        self.sec = sec
        for kb in [*sec.kb_bases.values(), sec.options.get("kb_base")]:
            if kb is not None and (kb.value or "").strip() not in ("1000", "1024"):
                self.fail(kb, f"kb_base must be 1000 or 1024, got {kb.value!r}")

    def kb_base(self, st: Setting) -> int:
        """The ``kb_base`` the section that holds ``st`` reads its values with (``Section.kb_bases``)."""
        kb = self.sec.kb_bases.get(st.scope)
        return 1024 if kb is None else int(kb.value.strip())  # type: ignore[union-attr]

    def get(self, name: str) -> Setting | None:
        return self.sec.options.get(name)

    def fail(self, st: Setting | None, problem: str) -> None:
        if st is None:
            raise FioError(self.sec.path, self.sec.line, f"job [{self.sec.name}]: {problem}")
        raise FioError(st.path, st.line, f"{st.key}: {problem}")

    def value(self, st: Setting) -> str:
        if st.value is None or st.value.strip() == "":
            self.fail(st, "needs a value")
        return st.value.strip()

    def size(self, st: Setting, text: str, percent: bool = False, zero: bool = False,
             limit: int = MAX_BYTES) -> int | float:
        """Bytes (an int), or with ``percent`` a ``N%`` as the float fraction N/100."""
        t = text.strip()
        if t.startswith("("):
            self.fail(st, "arithmetic expressions in parentheses are not supported: write the value")
        m = _NUM.match(t)
        if not m:
            if re.fullmatch(r"\d*\.\d+[A-Za-z%]*", t):
                self.fail(st, f"{t!r}: fio reads whole numbers only (it would take the part before the "
                              "point); write e.g. 1536k for 1.5m")
            self.fail(st, f"{t!r} is not a whole number with an optional unit")
        num, suf = m["num"], m["suf"].lower()
        value = int(num, 16) if num.lower().startswith("0x") else int(num)
        if suf == "%":
            if not percent:
                self.fail(st, "a percentage is not allowed here")
            if not (0 if zero else 1) <= value <= 100:
                self.fail(st, f"a percentage must lie in {0 if zero else 1}-100, got {value}")
            return value / 100.0
        if num.lower().startswith("0x") and suf:
            self.fail(st, f"{t!r}: a hexadecimal value takes no unit")
        if suf in ("ki", "mi", "gi", "ti", "pi"):
            self.fail(st, f"{t!r}: fio's HOWTO and its parser read '{suf}' differently; write {num}{suf}b "
                          f"(see kb_base) or {num}{suf[0]}")
        mult = self._mult(suf, self.kb_base(st))
        if mult is None:
            self.fail(st, f"{t!r}: unknown unit {suf!r} (b, k, m, g, t, p with an optional b; KiB ... PiB)")
        v = value * mult
        if v > limit or (v == 0 and not zero):
            self.fail(st, f"{t!r} must lie in {0 if zero else 1} .. {limit}")
        return v

    @staticmethod
    def _mult(suf: str, kb_base: int) -> int | None:
        if suf in ("", "b"):
            return 1
        pre = "kmgtp"
        if suf[0] in pre and suf[1:] in ("", "b"):
            return kb_base ** (pre.index(suf[0]) + 1)
        if suf[0] in pre and suf[1:] == "ib":
            return (1024 if kb_base == 1000 else 1000) ** (pre.index(suf[0]) + 1)
        return None

    def count(self, name: str, lo: int, hi: int, default: int | None = None) -> int | None:
        st = self.get(name)
        if st is None:
            return default
        v = self.size(st, self.value(st), zero=True, limit=max(hi, 1))
        if not lo <= v <= hi:
            self.fail(st, f"must lie in {lo} .. {hi}, got {v}")
        return int(v)

    def seconds(self, name: str, default_unit: float) -> float:
        st = self.get(name)
        if st is None:
            return 0.0
        t = self.value(st)
        m = re.fullmatch(r"(\d+)([A-Za-z]*)", t)
        if not m:
            if t.startswith("("):
                self.fail(st, "arithmetic expressions in parentheses are not supported: write the value")
            self.fail(st, f"{t!r} is not a whole number with an optional time unit (d, h, m, s, ms, us)")
        unit = m.group(2).lower()
        if unit == "sec":
            self.fail(st, f"{t!r}: fio's HOWTO reads 'sec' as seconds, its parser as microseconds; write "
                          f"{m.group(1)}s")
        if unit and unit not in _TIME:
            self.fail(st, f"{t!r}: unknown time unit {unit!r} (d, h, m, s, ms, msec, us, usec)")
        return int(m.group(1)) * (_TIME[unit] if unit else default_unit)

    def flag(self, name: str) -> bool:
        st = self.get(name)
        if st is None:
            return False
        if st.value is None or st.value.strip() in ("", "1"):
            return True
        if st.value.strip() == "0":
            return False
        self.fail(st, f"a flag takes no value, 1 or 0, got {st.value!r}")
        return False

    def per_direction(self, name: str) -> tuple[Setting | None, list[str | None]]:
        st = self.get(name)
        if st is None:
            return None, [None, None, None]
        parts = _split_rwt(self.value(st))
        if not parts:
            self.fail(st, "at most three comma-separated values (reads, writes, trims)")
        return st, parts

    def block(self, st: Setting, text: str) -> int:
        v = int(self.size(st, text, limit=MAX_BLOCK))
        if v % SECTOR:
            hint = " (under fio's default kb_base=1024, KiB/MiB are powers of 1000)" \
                if "ib" in text.lower() else ""
            self.fail(st, f"{text!r} = {v} bytes is not a multiple of {SECTOR}{hint}")
        return v


def _bsrange(job: _Job, st: Setting, text: str) -> dict[int, float]:
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


def _bssplit(job: _Job, st: Setting, text: str) -> dict[int, float]:
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


def _distribution(job: _Job, st: Setting | None) -> synthetic.Distribution:
    if st is None:
        return synthetic.Distribution()
    text = job.value(st)
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    if kind == "random":
        if rest:
            job.fail(st, "random takes no value")
        return synthetic.Distribution()
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
    if kind == "sequence":
        job.fail(st, "the 'sequence' distribution is not modelled")
    hint = " (write zoned_abs:...)" if kind.startswith("zoned_abs=") else ""
    job.fail(st, f"unknown distribution {kind!r}{hint}: random, zipf, pareto, normal, zoned, zoned_abs")
    raise AssertionError  # unreachable


def _zones(job: _Job, st: Setting, text: str, absolute: bool) -> tuple[tuple[float, float], ...]:
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
    j = _Job(sec)
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
        else:
            hole = int(j.size(rw_st, post, zero=True))
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
        size=amount("size", False), offset=amount("offset", True) or 0,
        offset_align=j.count("offset_align", 1, MAX_BYTES),
        offset_increment=amount("offset_increment", True) or 0,
        io_size=j.count("io_size", 1, MAX_BYTES), number_ios=j.count("number_ios", 0, MAX_BYTES) or None,
        loops=j.count("loops", 1, 1_000_000, 1),  # type: ignore[arg-type]
        runtime_s=runtime, time_based=time_based, rates=(rates[READ], rates[WRITE]),
        poisson=proc is not None and j.value(proc).lower() == "poisson", distribution=dist,
        random_map=random and dist.uniform and not norandommap and ba_st is None,
        randseed=j.count("randseed", 0, (1 << 64) - 1), thinktime_s=thinktime,
        thinktime_blocks=j.count("thinktime_blocks", 1, MAX_BYTES, 1),  # type: ignore[arg-type]
    )
    return job


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

    def __init__(self, job: Job, clone: int, capacity: int, seed: int, cap: int, open_loop: bool):
        self.job, self.open_loop = job, open_loop
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

    def next(self) -> dict[str, np.ndarray] | None:
        """The next block (op, offset, size, time_s, key), or None when the clone is done."""
        if self.done or self.n >= self.max_requests:
            self.done = True
            return None
        k = min(GEN_BLOCK, self.max_requests - self.n)
        try:
            ch = self.stream.take(k)
        except ValueError as e:
            self.job.fail("random_distribution", str(e))
        keep = k
        if self.max_bytes is not None:
            cum = self.bytes + np.cumsum(ch.size)
            hit = int(np.searchsorted(cum, self.max_bytes, side="left"))
            if hit < k:
                keep, self.done = hit + 1, True
        op, size = ch.op[:keep], ch.size[:keep]
        t = self._times(op, size) if self.open_loop else np.full(keep, np.nan)
        if self.max_time is not None:
            cut = int(np.searchsorted(t, self.max_time, side="left"))
            if cut < keep:
                keep, self.done = cut, True
        self._block += 1
        if keep == 0:
            self.done = True
            return None
        idx = self.n + np.arange(keep, dtype=np.float64)
        self.n += keep
        self.bytes += int(size[:keep].sum())
        if self.n >= self.max_requests:
            self.done = True
        key = t[:keep] if self.open_loop else (idx + 0.5) / self.job.depth
        return {"op": op[:keep], "offset": ch.offset[:keep], "size": size[:keep], "time_s": t[:keep],
                "key": key}

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
        i = self.n + np.arange(len(op))
        pause = job.thinktime_s * (i // job.thinktime_blocks) if job.thinktime_s else np.zeros(len(op))
        u = np.maximum.accumulate(np.maximum(due - pause, self._u))
        self._u = float(u[-1])
        return u + pause


class FioStream:
    """The merged request stream of a :class:`FioWorkload` on one drive (iterate for :class:`Chunk`\\ s of
    at most 65,536 requests).  After iteration: ``requests`` emitted, ``truncated`` (the jobs held more
    than ``max_requests``)."""

    def __init__(self, workload: FioWorkload, capacity: int, max_requests: int, seed: int):
        self.workload, self.capacity, self.max_requests, self.seed = workload, capacity, max_requests, seed
        self.requests, self.truncated = 0, False
        for job in workload.jobs:  # region errors before any compute
            for k in range(job.numjobs):
                region(job, k, capacity)

    def __iter__(self) -> Iterator[Chunk]:
        wl = self.workload
        srcs = [_Source(job, k, self.capacity, self.seed, self.max_requests, wl.open_loop)
                for job in wl.jobs for k in range(job.numjobs)]
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


@dataclass
class FioWorkload:
    """The selected jobs of a fio job file (:func:`load`) and what was left out."""

    path: str
    jobs: list[Job]
    ignored: list[dict[str, Any]]
    ignored_by_design: list[str]

    @property
    def name(self) -> str:
        """The job's name, or the merged jobs' names joined by '+'."""
        return "+".join(j.name for j in self.jobs)

    @property
    def open_loop(self) -> bool:
        return self.jobs[0].timed

    @property
    def queue_depth(self) -> int:
        """Outstanding requests of the merged stream: every clone's depth, summed."""
        return sum(j.depth * j.numjobs for j in self.jobs)

    def describe(self) -> list[dict[str, Any]]:
        """Per job: name, where, rw, read fraction, clones, depth, loop and what ends it."""
        return [{"name": j.name, "where": f"{j.path}:{j.line}", "rw": j.rw, "read_fraction": j.read_fraction,
                 "numjobs": j.numjobs, "depth": j.depth, "open_loop": j.timed, "bound": j.bound(j.timed)}
                for j in self.jobs]

    def stream(self, capacity_bytes: float, max_requests: int, seed: int = 0) -> FioStream:
        """The merged stream on a drive of ``capacity_bytes``, at most ``max_requests`` long."""
        if not 1 <= max_requests <= MAX_REQUESTS:
            raise ConfigError("workload.requests", max_requests, f"integer 1 <= x <= {MAX_REQUESTS:.0e}")
        return FioStream(self, int(capacity_bytes), int(max_requests), int(seed))

    def fill(self, capacity_bytes: float, prefill_fraction: float) -> dict[str, Any]:
        """The fluid fill's workload fields (``pattern``, ``block_kib``, ``queue_depth``, ``fill_fraction``,
        ``burst_gb``, ``idle_s``) of write jobs; jobs it cannot represent are refused (module docstring)."""
        capacity = int(capacity_bytes)
        pattern = block = None
        regions: list[tuple[int, int, Job]] = []
        written = 0
        clones = sum(j.numjobs for j in self.jobs)
        burst_gb = idle_s = 0.0
        for job in self.jobs:
            if job.read_fraction > 0:
                job.fail(next((o for o in ("rwmixread", "rwmixwrite") if o in job.options), "rw"),
                         f"rw={job.rw} reads ({100 * job.read_fraction:g} %): a fill models host writes only")
            for opt, bad in (("time_based", job.time_based), ("runtime", job.runtime_s > 0),
                             ("rate" if "rate" in job.options else "rate_iops", job.rates[WRITE] > 0)):
                if bad:
                    job.fail(opt, f"{opt}: a fill writes a byte amount at the drive's pace (no time limit or "
                                  "host rate in the fluid model); give size or io_size instead")
            if len(job.write_sizes) != 1:
                job.fail("bssplit" if "bssplit" in job.options else "bsrange",
                         "several write sizes: the fluid fill has one command size")
            if job.hole_bytes:
                job.fail("rw", "rw=write:N leaves holes: the fluid fill writes contiguous new data")
            if job.random and not job.random_map or job.run_length > 1:
                why = next(o for o, bad in (("norandommap", "norandommap" in job.options),
                                            ("random_distribution", not job.distribution.uniform),
                                            ("blockalign", "blockalign" in job.options), ("rw", True)) if bad)
                job.fail(why, f"{why}: random writes that repeat blocks (fio's random map off, or "
                              "randwrite:N runs); the fluid fill writes new data only")
            bs = next(iter(job.write_sizes))
            pat = "random" if job.random else "sequential"
            if pattern is not None and (pat, bs) != (pattern, block):
                job.fail("rw", f"{pat} {bs}-byte writes next to {pattern} {block}-byte ones: the fluid fill "
                               "has one pattern and one command size")
            pattern, block = pat, bs
            for k in range(job.numjobs):
                start, span = region(job, k, capacity)
                nbytes = (job.io_size or span) * job.loops
                if nbytes > span:
                    job.fail("io_size" if job.io_size else "loops",
                             f"clone {k} writes {nbytes} bytes over a {span}-byte region: rewrites; "
                             "the fluid fill writes new data only")
                if job.number_ios:
                    nbytes = min(nbytes, job.number_ios * bs)
                for s0, l0, other in regions:
                    if start < s0 + l0 and s0 < start + span:
                        job.fail("offset_increment" if job.numjobs > 1 else "offset",
                                 f"clone {k}'s region overlaps job [{other.name}]'s: rewrites; give the "
                                 "clones disjoint regions (offset, offset_increment)")
                regions.append((start, span, job))
                written += nbytes
            if job.thinktime_s:
                if clones > 1:
                    job.fail("thinktime", "thinktime with several clones: their pauses interleave, the fluid "
                                          "fill has one idle pattern")
                burst_gb, idle_s = job.thinktime_blocks * bs / 1e9, job.thinktime_s
        free = capacity * (1.0 - prefill_fraction)
        if written > free * (1 + 1e-9):
            j = self.jobs[0]
            j.fail("size", f"the jobs write {written} bytes, more than the {free:.0f} bytes free after "
                           f"workload.prefill_fraction={prefill_fraction:g}")
        return {"pattern": pattern, "block_kib": block / 1024, "queue_depth": self.queue_depth,
                "fill_fraction": min(written / free, 1.0), "burst_gb": burst_gb, "idle_s": idle_s}


def load(path: os.PathLike | str, job: str | None = None, unknown: str = "raise",
         env: Mapping[str, str] | None = None) -> FioWorkload:
    """Read a fio job file: every job merged, or the sections named ``job`` (``workload.fio_job``).

    ``unknown``: ``raise`` (default) refuses an option ssdx neither models nor ignores by design, naming
    it and its file:line; ``warn`` names it in a :class:`FioIgnoredWarning` and in ``ignored``."""
    if unknown not in ("raise", "warn"):
        raise ConfigError("workload.fio_unknown", unknown, "must be 'raise' or 'warn'")
    sections = parse_file(path, env)
    if not sections:
        raise FioError(path, 0, "holds no job (only [global] sections, or nothing)")
    if job is not None:
        chosen = [s for s in sections if s.name == str(job)]
        if not chosen:
            raise FioError(path, 0, f"no job named {job!r}; its jobs: {', '.join(s.name for s in sections)}",
                           field="workload.fio_job", value=job)
        sections = chosen
    ignored: dict[tuple[str, int], dict[str, Any]] = {}
    by_design: set[str] = set()
    for sec in sections:
        for name, st in list(sec.options.items()):
            if name in SUPPORTED:
                continue
            if name in IGNORED_BY_DESIGN:
                by_design.add(name)
                continue
            if unknown == "raise":
                raise FioError(st.path, st.line, f"option '{st.key}' is not modelled by ssdx (supported: "
                                                 "ssdx.workloads.fio.SUPPORTED); remove it, or set "
                                                 "workload.fio_unknown=warn to run without it")
            del sec.options[name]
            if (st.path, st.line) not in ignored:
                ignored[(st.path, st.line)] = {"option": st.key, "value": st.value, "where": st.where}
                warnings.warn(f"{st.where}: fio option '{st.key}' ignored: not modelled by ssdx "
                              "(workload.fio_unknown=warn)", FioIgnoredWarning, stacklevel=2)
    jobs = [read_job(s) for s in sections]
    timed = [j for j in jobs if j.timed]
    if timed and len(timed) != len(jobs):
        closed = next(j for j in jobs if not j.timed)
        raise FioError(closed.path, closed.line,
                       f"job [{closed.name}] has no rate, rate_iops or thinktime but job [{timed[0].name}] "
                       "has: the merged jobs run in one loop; pick one with workload.fio_job or time both")
    depth = sum(j.depth * j.numjobs for j in jobs)
    if depth > MAX_QUEUE_DEPTH:
        raise FioError(jobs[0].path, jobs[0].line, f"iodepth x numjobs summed over the jobs is {depth}, more "
                                                   f"than the {MAX_QUEUE_DEPTH} outstanding requests the "
                                                   "engine tracks")
    return FioWorkload(str(path), jobs, list(ignored.values()), sorted(by_design))
