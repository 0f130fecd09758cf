"""Measured fill curves: write speed against host data written, read from three file formats.

A fill curve is what a reviewer or a drive engineer records while a whole drive is written
sequentially: the write speed at each point of the fill.  ``ssdx experiment=fit_fill`` fits the fluid
model to one (``ssdx.models.fluid.fit``).  Units: GB = 1e9 bytes, MB/s = 1e6 bytes/s, KiB = 1024 bytes.

Formats (``fmt``; ``"auto"`` decides from the first line that is neither blank nor a ``#`` comment):

* ``csv`` — a header ``gb,mb_s`` then one sample per line: host data written in this run (GB) and the
  write speed there (MB/s).  GB must increase strictly.  Each sample stands for the GB interval
  between the midpoints to its neighbours (the first and last reach out by half a spacing, the first
  no lower than 0).
* ``fio_bw_log`` — fio's bandwidth log (``write_bw_log``), one entry per line,
  ``time (ms), value (KiB/s), data direction, block size (bytes), offset (bytes)[, priority]``, as the
  "Log File Formats" section of fio's HOWTO gives it (data direction 0 read, 1 write, 2 trim).  Lines
  of 4 to 7 comma-separated fields are read; only the first three are used.  Write entries (direction
  1) make the curve; read and trim entries are ignored and counted in :attr:`Curve.notes`.  A write
  entry's bandwidth is taken to hold from the previous write entry's time up to its own (fio's
  windowed logging, ``log_avg_msec``, records the average over the window that ends at the entry's
  time); the first entry covers its own time since the job started, or the second entry's interval
  when its time is 0 or more than twice that interval (logs with ``log_unix_epoch``).  GB written is
  the integral of the bandwidth over time.  Times must increase strictly (logs of several jobs that
  share one file interleave: fit one job's log).
* ``per_second`` — one speed (MB/s) per line, optionally under a header ``mb_s``; sample ``i`` covers
  second ``i`` of the run, so GB written is the running sum of the speeds / 1000.

Each sample's :attr:`Curve.gb` is the middle of the GB interval it covers (``gb_lo`` .. ``gb_hi``).
Anything the reader cannot use — a non-numeric or non-finite value, a negative speed or time, a speed
above :data:`MAX_MB_S`, a zero speed in the csv format, a wrong number of fields, GB or time not
increasing, an unknown data direction, a file without samples — raises :class:`CurveError` naming the
file and the 1-based line.  Files are read as UTF-8; a leading byte-order mark (as spreadsheet programs
write) is skipped.

**Zero speeds.**  A csv sample stands for a GB interval of non-zero width, and writing that many bytes
at 0 MB/s would take forever: a csv speed of 0 is not a measurement a fill can have and is refused.  In
a per-second or fio log a 0 is a stall — a second or a logging window in which nothing completed — and
covers no bytes but takes time: its seconds are folded into the sample before it, whose speed becomes
its bytes over its time with the stall (counted in :attr:`Curve.notes`), so the curve keeps every byte
and every second.  A log whose speeds are all 0 wrote nothing and is refused.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ssdx import catalog
from ssdx.core import io

FORMATS = ("auto", "csv", "fio_bw_log", "per_second")
KIB_S_TO_MB_S = 1024.0 / 1e6
#: Fewest samples a curve must hold to be fitted.
MIN_SAMPLES = 8
#: Plausibility bound on a write speed, MB/s: 10x the raw link rate of the fastest host interface in
#: ``ssdx.catalog.INTERFACES`` (PCIe 5.0 x4, ~15.75 GB/s).  No drive writes faster than its host link
#: delivers data; the factor 10 leaves room for interfaces not in the catalog, so only a value that no
#: drive can have (a unit mix-up, a corrupt cell, 1e300) is refused — before it overflows the fit.
MAX_MB_S = 10.0 * max(i.link_bytes_per_s for i in catalog.INTERFACES.values()) / 1e6


def implausible_speed(mb_s: float, shown: str, what: str) -> str | None:
    """What is wrong with a speed of ``mb_s`` MB/s above :data:`MAX_MB_S` (``shown``, e.g. ``'mb_s' = 1e+300
    MB/s``, is how the reader quotes the value; ``what`` names the quantity, e.g. ``write speed``), or None
    where it is at most :data:`MAX_MB_S`.  Each reader raises it with its own error type and location (the
    fill-curve files here, ``ssdx.models.thermal.nvme``'s series)."""
    if mb_s > MAX_MB_S:
        return (f"{shown} is above {MAX_MB_S:.0f} MB/s, 10x the fastest host interface's link rate "
                f"(ssdx.catalog.INTERFACES): not a plausible {what}")
    return None


class CurveError(ValueError):
    """A fill-curve file that cannot be read: ``path``, ``line`` (1-based) and what is wrong."""

    def __init__(self, path: os.PathLike | str, line: int, problem: str, text: str = ""):
        self.path, self.line, self.problem = str(path), line, problem
        shown = f": {text.strip()[:120]!r}" if text else ""
        super().__init__(f"{path}, line {line}: {problem}{shown}")


@dataclass(frozen=True)
class Curve:
    """A measured fill curve (module docstring).

    ``gb``: position of each sample, GB written in this run (middle of ``gb_lo`` .. ``gb_hi``);
    ``mb_s``: write speed, MB/s; ``time_s``: seconds the sample covers (csv: its GB interval at its
    speed; :func:`read` keeps no 0 MB/s sample); ``line``: the source line of each sample; ``notes``:
    what the reader left out and why.
    """

    path: str
    format: str
    gb: np.ndarray
    mb_s: np.ndarray
    gb_lo: np.ndarray
    gb_hi: np.ndarray
    time_s: np.ndarray
    line: np.ndarray
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.gb)

    def merged(self, max_samples: int) -> Curve:
        """The curve with runs of ``k = ceil(n / max_samples)`` consecutive samples merged into one (its
        GB interval the runs', its speed their bytes over their time), or itself when ``n <= max_samples``.
        For logs of one entry per I/O, whose millions of samples the fit does not need."""
        n = len(self)
        if n <= max_samples:
            return self
        k = -(-n // max_samples)
        starts = np.arange(0, n, k)
        lo, hi = self.gb_lo[starts], self.gb_hi[np.minimum(starts + k, n) - 1]
        t = np.add.reduceat(self.time_s, starts)
        mean = np.add.reduceat(self.mb_s, starts) / np.diff(np.append(starts, n))
        speed = np.where(t > 0, (hi - lo) * 1e3 / np.where(t > 0, t, 1.0), mean)
        note = f"merged every {k} consecutive samples into one ({n} -> {len(starts)}): bytes over time"
        return Curve(self.path, self.format, 0.5 * (lo + hi), speed, lo, hi, t, self.line[starts],
                     [*self.notes, note])


def _lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, stripped text) of every line that is neither blank nor a ``#`` comment."""
    try:
        text = io.utf8_text(path)  # a byte-order mark skipped
    except io.NotUtf8 as e:
        raise CurveError(path, e.line, "not a text file (UTF-8)") from None
    out = []
    for i, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if s and not s.startswith("#"):
            out.append((i, s))
    return out


def _fields(s: str) -> list[str]:
    return [f.strip() for f in s.split(",")]


def _number(path: Path, line: int, text: str, value: str, what: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise CurveError(path, line, f"{what} is not a number ({value!r})", text) from None
    if not math.isfinite(v):
        raise CurveError(path, line, f"{what} is not finite ({value!r})", text)
    if v < 0:
        raise CurveError(path, line, f"{what} is negative ({value!r})", text)
    return v


def _speed(path: Path, line: int, text: str, value: str, what: str, to_mb_s: float = 1.0) -> float:
    """A write speed (``value`` in the file's unit, ``to_mb_s`` MB/s each), checked against
    :data:`MAX_MB_S`; returned in the file's unit."""
    v = _number(path, line, text, value, what)
    problem = implausible_speed(v * to_mb_s, f"{what} = {value}", "write speed")
    if problem:
        raise CurveError(path, line, problem, text)
    return v


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def detect(path: os.PathLike | str) -> str:
    """The format of ``path`` from its first line that is neither blank nor a comment (module docstring).

    ``gb,mb_s`` -> csv; ``mb_s`` -> per_second; one number -> per_second; 4 to 7 numbers -> fio_bw_log.
    """
    p = Path(path)
    lines = _lines(p)
    if not lines:
        raise CurveError(p, max(_count_lines(p), 1), "no samples: the file is empty")
    n, s = lines[0]
    f = [x.lower() for x in _fields(s)]
    if f == ["gb", "mb_s"]:
        return "csv"
    if f == ["mb_s"]:
        return "per_second"
    if all(_is_number(x) for x in f):
        if len(f) == 1:
            return "per_second"
        if 4 <= len(f) <= 7:
            return "fio_bw_log"
    raise CurveError(p, n, "cannot tell the format from this line: expected the header 'gb,mb_s' (csv), "
                     "the header 'mb_s' or one number (per_second), or 4-7 numbers of a fio bandwidth log; "
                     "or set fit.format", s)


def _count_lines(p: Path) -> int:
    return len(p.read_text(encoding="utf-8-sig", errors="replace").splitlines())


def read(path: os.PathLike | str, fmt: str = "auto") -> Curve:
    """Read a fill curve in ``fmt`` (``"auto"``: :func:`detect`); :class:`CurveError` on a bad line."""
    p = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown fill-curve format {fmt!r}; use one of {list(FORMATS)}")
    if fmt == "auto":
        fmt = detect(p)
    lines = _lines(p)
    reader = {"csv": _read_csv, "fio_bw_log": _read_fio, "per_second": _read_per_second}[fmt]
    curve = _without_stalls(p, lines, reader(p, lines))
    if len(curve) < MIN_SAMPLES:
        last = lines[-1][0] if lines else max(_count_lines(p), 1)
        raise CurveError(p, last, f"too few samples to fit: {len(curve)} (at least {MIN_SAMPLES})")
    return curve


def _without_stalls(p: Path, lines: list[tuple[int, str]], curve: Curve) -> Curve:
    """``curve`` with its 0 MB/s samples (stalls of a per-second or fio log: module docstring) folded into
    the sample before them (the first sample's, for stalls at the start): their seconds join its time and
    its speed becomes its bytes over that time, so no sample is 0 MB/s while the curve keeps every byte and
    every second (:meth:`Curve.merged` averages bytes over time).  :class:`CurveError` when every sample
    is 0."""
    stall = curve.mb_s <= 0.0
    if not stall.any():
        return curve
    if stall.all():
        raise CurveError(p, lines[-1][0], f"every speed is 0 MB/s ({len(curve)} samples): nothing was "
                         "written")
    keep = np.flatnonzero(~stall)
    # each stall goes to the last kept sample before it, or to the first kept one for leading stalls
    owner = np.maximum(np.searchsorted(keep, np.flatnonzero(stall), side="right") - 1, 0)
    time_s = curve.time_s[keep].astype(np.float64)
    np.add.at(time_s, owner, curve.time_s[stall])
    mb_s = (curve.gb_hi[keep] - curve.gb_lo[keep]) * 1e3 / time_s
    note = (f"folded {int(stall.sum())} samples of 0 MB/s (stalls: time without bytes) into the samples "
            f"before them (leading ones into the first), the first on line {int(curve.line[stall][0])}")
    return Curve(curve.path, curve.format, curve.gb[keep], mb_s, curve.gb_lo[keep], curve.gb_hi[keep],
                 time_s, curve.line[keep], [*curve.notes, note])


def _no_samples(p: Path, lines: list[tuple[int, str]]) -> CurveError:
    last = lines[-1][0] if lines else max(_count_lines(p), 1)
    return CurveError(p, last, "no samples" + ("" if lines else ": the file is empty"))


def _read_csv(p: Path, lines: list[tuple[int, str]]) -> Curve:
    if not lines:
        raise _no_samples(p, lines)
    n0, head = lines[0]
    if [x.lower() for x in _fields(head)] != ["gb", "mb_s"]:
        raise CurveError(p, n0, "the csv format needs the header 'gb,mb_s'", head)
    gb, v, ln = [], [], []
    for n, s in lines[1:]:
        f = _fields(s)
        if len(f) != 2:
            raise CurveError(p, n, f"expected 2 comma-separated fields (gb, mb_s), found {len(f)}", s)
        g = _number(p, n, s, f[0], "gb")
        if gb and g <= gb[-1]:
            raise CurveError(p, n, f"gb must increase: {g:g} after {gb[-1]:g}", s)
        gb.append(g)
        v.append(_speed(p, n, s, f[1], "mb_s"))
        if v[-1] == 0.0:  # module docstring: a GB interval cannot be written at 0 MB/s
            raise CurveError(p, n, "mb_s is 0: a csv sample covers a GB interval, which cannot be written "
                             "at 0 MB/s (leave the line out)", s)
        ln.append(n)
    if not gb:
        raise _no_samples(p, lines)
    x = np.asarray(gb, float)
    if len(x) == 1:
        lo, hi = x.copy(), x.copy()
    else:
        mid = 0.5 * (x[1:] + x[:-1])
        lo = np.concatenate([[max(0.0, x[0] - (mid[0] - x[0]))], mid])
        hi = np.concatenate([mid, [x[-1] + (x[-1] - mid[-1])]])
    speed = np.asarray(v, float)
    time_s = (hi - lo) * 1e3 / speed  # every csv speed is > 0 (a zero is refused at its line)
    return Curve(str(p), "csv", x, speed, lo, hi, time_s, np.asarray(ln, int))


def _read_per_second(p: Path, lines: list[tuple[int, str]]) -> Curve:
    if lines and lines[0][1].strip().lower() == "mb_s":
        lines = lines[1:]
    v, ln = [], []
    for n, s in lines:
        f = _fields(s)
        if len(f) != 1:
            raise CurveError(p, n, f"expected one speed (MB/s) per line, found {len(f)} fields", s)
        v.append(_speed(p, n, s, f[0], "mb_s"))
        ln.append(n)
    if not v:
        raise _no_samples(p, lines)
    speed = np.asarray(v, float)
    hi = np.cumsum(speed) / 1e3  # MB/s x 1 s = MB; / 1000 = GB
    lo = hi - speed / 1e3
    return Curve(str(p), "per_second", 0.5 * (lo + hi), speed, lo, hi, np.ones_like(speed),
                 np.asarray(ln, int))


def _read_fio(p: Path, lines: list[tuple[int, str]]) -> Curve:
    t, bw, ln = [], [], []
    skipped = {0: 0, 2: 0}
    for n, s in lines:
        f = _fields(s)
        if not 4 <= len(f) <= 7:
            raise CurveError(p, n, "expected 4 to 7 comma-separated fields (time ms, KiB/s, data direction, "
                             f"block size, offset[, priority]), found {len(f)}", s)
        time_ms = _number(p, n, s, f[0], "time (ms)")
        kib_s = _speed(p, n, s, f[1], "bandwidth (KiB/s)", KIB_S_TO_MB_S)
        direction = _number(p, n, s, f[2], "data direction")
        if direction not in (0.0, 1.0, 2.0):
            raise CurveError(p, n, f"data direction must be 0 (read), 1 (write) or 2 (trim), not {f[2]!r}", s)
        for k, what in ((3, "block size"), (4, "offset")):
            if len(f) > k:
                _number(p, n, s, f[k], what)
        if direction != 1.0:
            skipped[int(direction)] += 1
            continue
        if t and time_ms <= t[-1]:
            raise CurveError(p, n, f"time must increase between write entries: {time_ms:g} ms after "
                             f"{t[-1]:g} ms (several jobs in one log? fit one job's log)", s)
        t.append(time_ms)
        bw.append(kib_s)
        ln.append(n)
    if not t:
        raise _no_samples(p, lines) if not any(skipped.values()) else CurveError(
            p, lines[-1][0], f"no write entries (data direction 1); {skipped[0]} read and {skipped[2]} trim "
            "entries")
    ms = np.asarray(t, float)
    dt = np.diff(ms, prepend=0.0)
    if len(ms) > 1 and (ms[0] <= 0 or ms[0] > 2 * dt[1]):
        dt[0] = dt[1]
    speed = np.asarray(bw, float) * KIB_S_TO_MB_S
    hi = np.cumsum(speed * dt / 1e3) / 1e3  # MB/s x s = MB; / 1000 = GB
    lo = hi - speed * dt / 1e6
    notes = []
    if skipped[0] or skipped[2]:
        notes.append(f"ignored {skipped[0]} read and {skipped[2]} trim entries (data direction 0 / 2): "
                     "the curve is the write entries")
    return Curve(str(p), "fio_bw_log", 0.5 * (lo + hi), speed, lo, hi, dt / 1e3, np.asarray(ln, int), notes)


def write_csv(path: os.PathLike | str, gb: np.ndarray, mb_s: np.ndarray) -> Path:
    """Write a ``gb,mb_s`` curve that :func:`read` reads back.  Returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{g:.6f},{v:.3f}\n" for g, v in zip(np.asarray(gb, float), np.asarray(mb_s, float)))
    p.write_text("gb,mb_s\n" + rows, encoding="utf-8")
    return p
