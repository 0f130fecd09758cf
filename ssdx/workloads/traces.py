"""Block-trace readers that stream in chunks, and one array form for all of them.

Every reader yields :class:`Chunk` objects of at most ``chunk_lines`` requests, so a multi-GB trace
never sits whole in memory.  Array form (NumPy, one entry per request): ``time_s`` (float64, seconds
as the trace states them; NaN where the format has no timestamps), ``op`` (int8: :data:`READ`,
:data:`WRITE`, :data:`TRIM`), ``offset`` and ``size`` (int64 bytes), ``line`` (int64, 1-based source
line, for error messages downstream).

Formats (``fmt``):

* ``msr`` — SNIA IOTTA / MSR Cambridge CSV without a header (Narayanan, Donnelly and Rowstron, "Write
  off-loading: practical power management for enterprise storage", FAST 2008; SNIA IOTTA repository):
  ``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``; Timestamp in Windows filetime (100 ns
  ticks), Type ``Read``/``Write``, Offset and Size in bytes.  Times are returned in seconds since the
  first request, subtracted in integer ticks (absolute filetimes, ~1.3e17 ticks, would keep only ~2 µs
  of resolution as float64 seconds).
* ``blkparse`` — blktrace's ``blkparse`` default text output:
  ``maj,min cpu seq time pid action rwbs sector + blocks [process]``; one ``action`` is kept (``D``:
  issued to the driver, by default; ``Q``: queued), 512-byte sectors, rwbs ``R``/``W``/``D`` (discard);
  flushes (``F`` without data), plain ``N`` and the per-CPU summary that ends the output are skipped.
* ``fio2`` / ``fio3`` — fio iolog version 2 (``filename action [offset length]``, no timestamps) and
  version 3 (``timestamp_ms filename action [offset length]``); the first line names the version;
  file ``add``/``open``/``close`` and ``sync``/``datasync``/``wait`` lines carry no data and are skipped.
* ``disksim`` — DiskSim ASCII: ``arrival_ms devno blkno size_blocks flags`` (512-byte blocks; flags bit
  0 set = read).
* ``mqsim`` — MQSim ASCII: ``arrival_ns device start_sector size_sectors type`` (type 1 = read, 0 = write).

A malformed line — wrong field count, a non-numeric or negative offset, a negative or zero size, an
unknown request type — raises ``TraceError`` naming the file and the line, or, with
``on_error="skip"``, is skipped and counted (:attr:`Reader.skipped`, the first few kept in
:attr:`Reader.skipped_examples`).  Decreasing timestamps are counted, not fatal
(:attr:`Reader.unsorted`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

READ, WRITE, TRIM = 0, 1, 2
FORMATS = ("msr", "blkparse", "fio2", "fio3", "disksim", "mqsim")
SECTOR = 512
FILETIME_S = 1e-7  # Windows filetime tick
Record = tuple[float, int, int, int]  # time s, op, offset bytes, size bytes


class TraceError(ValueError):
    """A malformed trace line: ``path``, ``line`` (1-based) and what is wrong."""

    def __init__(self, path: os.PathLike | str, line: int, problem: str, text: str = ""):
        self.path, self.line, self.problem = str(path), line, problem
        shown = f": {text.strip()[:120]!r}" if text else ""
        super().__init__(f"{path}, line {line}: {problem}{shown}")


def no_requests(purpose: str, skipped: int = 0) -> str:
    """The rule an empty request stream breaks (a trace with no request, or one whose lines were all
    skipped): ``holds no request to PURPOSE`` (``replay``, ``analyse``), with the number of malformed lines
    skipped (``workload.on_error=skip``) where there were any.  One wording for the trace replay, the trace
    analysis and the hybrid model's volume traces."""
    return f"holds no request to {purpose}" + (f" ({skipped} malformed lines skipped)" if skipped else "")


@dataclass
class Chunk:
    """Requests of one chunk (module docstring for the fields)."""

    time_s: np.ndarray
    op: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    line: np.ndarray

    def __len__(self) -> int:
        return len(self.op)


class _Skip(Exception):
    """A line that carries no request (comment, flush, file open ...): not an error."""


def _int(text: str, what: str) -> int:
    try:
        v = int(text, 0) if text.lower().startswith("0x") else int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            raise ValueError(f"non-numeric {what} {text!r}") from None
        if not np.isfinite(f) or f != int(f):
            raise ValueError(f"non-integer {what} {text!r}") from None
        v = int(f)
    return v


def _float(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"non-numeric {what} {text!r}") from None
    if not np.isfinite(v):
        raise ValueError(f"non-finite {what} {text!r}")
    return v


#: the largest byte address a request may reach: requests are held as signed 64-bit integers
MAX_BYTE = 2**63 - 1


def _check(offset: int, size: int, unit: int = 1) -> None:
    """An offset and a size in ``unit`` bytes (1, or a 512-byte sector) that a request can have."""
    if offset < 0:
        raise ValueError(f"negative offset {offset}")
    if size <= 0:
        raise ValueError(f"size must be positive, got {size}")
    if (offset + size) * unit > MAX_BYTE:
        raise ValueError(f"offset {offset} + size {size}" + (f" ({unit}-byte units)" if unit > 1 else "")
                         + " reaches beyond the largest byte address a request can have (2^63 - 1)")


def _msr(fields: list[str]) -> Record:
    if len(fields) != 7:
        raise ValueError(f"expected 7 comma-separated fields, got {len(fields)}")
    t = _int(fields[0].strip(), "timestamp")  # filetime ticks; the Reader makes them relative (exact)
    kind = fields[3].strip().lower()
    if kind not in ("read", "write"):
        raise ValueError(f"unknown request type {fields[3].strip()!r} (Read or Write)")
    offset, size = _int(fields[4].strip(), "offset"), _int(fields[5].strip(), "size")
    _check(offset, size)
    return t, READ if kind == "read" else WRITE, offset, size


def _blkparse(action: str) -> Callable[[list[str]], Record]:
    """The parser of blkparse's default output keeping ``action``.  Of the lines that are not events, only
    those of the summary blkparse prints after them are skipped (blktrace's blkparse.c, ``dump_io_stats``
    per CPU and in total, then throughput, events and skips: ``CPU0 (8,0):``, ``Total (8,0):``, `` Reads
    Queued: ...``, ``Throughput (R/W): ...``, ``Events (8,0): N entries``, ``Skips: ...``), and the ``Input
    file sda.blktrace.0 added`` lines it prints as it opens its inputs, and with ``-s`` each process's block
    (``dd (1234)`` then its statistics); anything else is malformed."""
    import re

    summary = re.compile(
        r"(CPU\d+|Total) \(.+\):$"
        r"|(Reads Queued|Read Dispatches|Reads Requeued|Reads Completed|Read Merges|Read depth"
        r"|PC Reads Queued|PC Read Disp\.|PC Reads Req\.|PC Reads Compl\.|IO unplugs|Allocation wait"
        r"|Dispatch wait|Completion wait|Throughput \(R/W\)|Skips):\s"
        r"|Events \(.+\): [\d,.']+ entries$"
        r"|Input file .+ added$"
        r"|.+ \(\d+(, \.\.\.)?\)$")  # a process's block of statistics (blkparse -s): 'comm (pid)'

    def parse(fields: list[str]) -> Record:
        if not fields or "," not in fields[0] or not fields[0].split(",")[0].isdigit():
            if summary.match(" ".join(fields)):
                raise _Skip  # the per-CPU / total summary blkparse prints at the end
            raise ValueError("not a blkparse event line (expected 'maj,min cpu seq time pid action rwbs "
                             "sector + blocks') nor a line of blkparse's closing summary")
        if len(fields) < 7:
            raise ValueError(f"expected at least 7 fields, got {len(fields)}")
        if fields[5] != action:
            raise _Skip
        rwbs = fields[6]
        if "D" in rwbs:
            op = TRIM
        elif "W" in rwbs:
            op = WRITE
        elif "R" in rwbs:
            op = READ
        elif rwbs.strip("FSMAN") == "":
            raise _Skip  # flush / barrier without data
        else:
            raise ValueError(f"unknown rwbs {rwbs!r}")
        if len(fields) < 10 or fields[8] != "+":
            if "F" in rwbs:
                raise _Skip
            raise ValueError("expected 'sector + blocks'")
        sector, blocks = _int(fields[7], "sector"), _int(fields[9], "block count")
        _check(sector, blocks, SECTOR)
        return _float(fields[3], "time"), op, sector * SECTOR, blocks * SECTOR
    return parse


_FIO_OPS = {"read": READ, "write": WRITE, "trim": TRIM}
_FIO_SKIP = {"add", "open", "close", "sync", "datasync", "wait"}


def _fio(version: int) -> Callable[[list[str]], Record]:
    def parse(fields: list[str]) -> Record:
        if fields and fields[0] == "fio" and "iolog" in fields:
            raise _Skip  # the header
        t = np.nan
        if version == 3:
            if not fields:
                raise ValueError("empty line")
            t = _float(fields[0], "timestamp") * 1e-3
            fields = fields[1:]
        if len(fields) < 2:
            raise ValueError(f"expected 'filename action ...', got {len(fields)} field(s)")
        action = fields[1]
        if action in _FIO_SKIP:
            raise _Skip
        if action not in _FIO_OPS:
            raise ValueError(f"unknown action {action!r} (read, write, trim, sync, ...)")
        if len(fields) != 4:
            raise ValueError(f"expected 'filename {action} offset length', got {len(fields)} fields")
        offset, size = _int(fields[2], "offset"), _int(fields[3], "length")
        _check(offset, size)
        return t, _FIO_OPS[action], offset, size
    return parse


def _disksim(fields: list[str]) -> Record:
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (time devno blkno size flags), got {len(fields)}")
    blk, size = _int(fields[2], "block number"), _int(fields[3], "size")
    _check(blk, size, SECTOR)
    flags = _int(fields[4], "flags")
    return _float(fields[0], "arrival time") * 1e-3, READ if flags & 1 else WRITE, blk * SECTOR, size * SECTOR


def _mqsim(fields: list[str]) -> Record:
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (time device sector size type), got {len(fields)}")
    sector, size = _int(fields[2], "start sector"), _int(fields[3], "size")
    _check(sector, size, SECTOR)
    kind = _int(fields[4], "type")
    if kind not in (0, 1):
        raise ValueError(f"unknown request type {kind} (1 read, 0 write)")
    op = READ if kind == 1 else WRITE
    return _float(fields[0], "arrival time") * 1e-9, op, sector * SECTOR, size * SECTOR


@dataclass
class Reader:
    """Streaming reader of one trace file (module docstring).  Iterate for :class:`Chunk` objects.

    With ``limit`` set it stops after that many requests, parsing no line past the last one it keeps, and
    ``truncated`` tells whether the file went on (any further line that is not blank, a comment or a line
    the format skips, a malformed one included).

    After iteration: ``requests`` read, ``skipped`` malformed lines skipped (``on_error="skip"``),
    ``unsorted`` requests whose timestamp is below the previous one.
    """

    path: Path
    fmt: str
    on_error: str = "raise"
    chunk_lines: int = 1 << 16  # requests per chunk: the unit the replay and the analyser stream by
    blkparse_action: str = "D"
    limit: int | None = None  # at most this many requests (None: all)
    requests: int = 0
    truncated: bool = False
    skipped: int = 0
    unsorted: int = 0
    skipped_examples: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.fmt not in FORMATS:
            raise ValueError(f"unknown trace format {self.fmt!r}; known: {list(FORMATS)}")
        if self.on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {self.on_error!r}")
        if self.chunk_lines < 1:
            raise ValueError("chunk_lines must be >= 1")

    def _parser(self) -> tuple[Callable[[list[str]], Record], Callable[[str], list[str]]]:
        split = str.split
        if self.fmt == "msr":
            return _msr, lambda s: s.split(",")
        if self.fmt == "blkparse":
            return _blkparse(self.blkparse_action), split
        if self.fmt in ("fio2", "fio3"):
            return _fio(int(self.fmt[-1])), split
        return (_disksim if self.fmt == "disksim" else _mqsim), split

    def __iter__(self) -> Iterator[Chunk]:
        parse, split = self._parser()
        t, op, off, size, line = [], [], [], [], []
        last_t = -np.inf
        origin = None
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, start=1):
                s = text.strip()
                if not s or s.startswith("#"):
                    continue
                try:
                    rec = parse(split(s))
                except _Skip:
                    continue
                except ValueError as e:
                    if self.limit is not None and self.requests + len(op) >= self.limit:
                        self.truncated = True  # past the requests kept: the file went on, whatever it holds
                        break
                    if self.on_error == "raise":
                        raise TraceError(self.path, number, str(e), text) from None
                    self.skipped += 1
                    if len(self.skipped_examples) < 5:
                        self.skipped_examples.append(f"line {number}: {e}")
                    continue
                if self.limit is not None and self.requests + len(op) >= self.limit:
                    self.truncated = True
                    break
                if self.fmt == "msr":
                    origin = rec[0] if origin is None else origin
                    rec = ((rec[0] - origin) * FILETIME_S, *rec[1:])
                if rec[0] < last_t:
                    self.unsorted += 1
                if rec[0] == rec[0]:  # not NaN
                    last_t = rec[0]
                t.append(rec[0])
                op.append(rec[1])
                off.append(rec[2])
                size.append(rec[3])
                line.append(number)
                if len(op) >= self.chunk_lines:
                    yield self._chunk(t, op, off, size, line)
                    t, op, off, size, line = [], [], [], [], []
        if op:
            yield self._chunk(t, op, off, size, line)

    def _chunk(self, t, op, off, size, line) -> Chunk:
        self.requests += len(op)
        return Chunk(time_s=np.asarray(t, np.float64), op=np.asarray(op, np.int8),
                     offset=np.asarray(off, np.int64), size=np.asarray(size, np.int64),
                     line=np.asarray(line, np.int64))


def read(path: os.PathLike | str, fmt: str, **kw) -> Chunk:
    """The whole trace as one :class:`Chunk` (small traces and tests; large ones: iterate a Reader)."""
    chunks = list(Reader(Path(path), fmt, **kw))
    if not chunks:
        return Chunk(*(np.zeros(0, d) for d in (np.float64, np.int8, np.int64, np.int64, np.int64)))
    return Chunk(*(np.concatenate([getattr(c, f) for c in chunks]) for f in ("time_s", "op", "offset",
                                                                               "size", "line")))
