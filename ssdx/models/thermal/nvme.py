"""nvme-cli commands for Host Controlled Thermal Management, and measured temperature series.

**Commands** (strings to paste into a root shell; nothing here touches a device).  HCTM is Set Features,
Feature ID 0x10, Dword 11 = TMT1 << 16 | TMT2 in Kelvin (NVM Express Base Specification, revision 1.3d (NVM
Express, March 2019), Host Controlled Thermal Management), encoded by
:func:`ssdx.models.thermal.params.nvme_value`.
Syntax checked against linux-nvme/nvme-cli:

* ``nvme set-feature <device> -f 0x10 --value=0x01610166 [--save]`` (``Documentation/nvme-set-feature.txt``).
  The long ``--value=`` form is used on purpose: nvme-cli 1.x spells the short option ``-v``, 2.x
  spells it ``-V`` (``-v`` became ``--verbose`` with the common ``NVME_ARGS`` of nvme.c), so
  ``-v 0x…`` means different things on different versions; ``--value=`` works on both.
* ``nvme get-feature <device> -f 0x10 -H`` reads it back, decoded (``Documentation/nvme-get-feature.txt``;
  ``-H`` = ``--human-readable``); :func:`decode_value` decodes the raw Dword 11.
* ``nvme feat hctm <device> --tmt1=<K> --tmt2=<K> [--save]`` — the ``feat`` plugin shipped with newer
  nvme-cli (``plugins/feat/feat-nvme.h``: ``ENTRY("hctm", …, feat_hctm)``;
  ``Documentation/nvme-feat-hctm.txt``: ``'nvme' 'feat hctm' <device> [--tmt1=<tmt1> | -t <tmt1>]
  [--tmt2=<tmt2> | -T <tmt2>] [--sel=<select> | -S <select>] [--save | -s]``, thresholds in Kelvin;
  with neither ``--tmt1`` nor ``--tmt2`` it prints the current setting).
* ``nvme smart-log <device> -o json`` — the Health log (02h); nvme-cli's ``json_smart_log``
  (``nvme-print-json.c``) prints ``"temperature"`` (composite, Kelvin, integer), ``"warning_temp_time"``
  and ``"critical_comp_time"`` (minutes above WCTEMP / CCTEMP), ``"thm_temp1_trans_count"``,
  ``"thm_temp2_trans_count"`` (transitions into the TMT1 / TMT2 state) and ``"thm_temp1_total_time"``,
  ``"thm_temp2_total_time"`` (seconds in each).

**Series files** (:func:`read_series`), for ``ssdx.models.thermal.fit_rc`` and comparisons with the model:

* JSON lines (``.jsonl``/``.ndjson``/``.json``): one ``nvme smart-log -o json`` object per line plus a
  time — ``"time_s"`` (seconds) or ``"timestamp"`` (seconds since the epoch, or an ISO-8601 string;
  without a zone it is taken as UTC) — optionally ``"throughput_mb_s"`` or ``"write_mb_s"``
  (1 MB/s = 1e6 bytes/s); the object may also sit under ``"smart_log"``.  A capture loop::

      while sleep 1; do
        nvme smart-log /dev/nvme0 -o json | jq -c --arg t "$(date +%s.%N)" '. + {timestamp: ($t|tonumber)}'
      done >> run.jsonl

* CSV with a header: ``time_s`` and one of ``composite_k``, ``temp_k``, ``temp_c`` (first found, in
  that order), optionally ``throughput_mb_s`` (or ``write_mb_s``) and the counter columns above.
  Blank lines and lines starting with ``#`` are skipped.

Times are returned relative to the first sample and must increase strictly.  Files are UTF-8 (a leading
byte-order mark is skipped).  Any malformed line raises ``ValueError`` naming the file, the 1-based line
number and the problem; so does a value no drive can report: a temperature outside
[:data:`MIN_PLAUSIBLE_K`, :data:`MAX_PLAUSIBLE_K`] or a throughput below 0 or above
``ssdx.workloads.fill_curve.MAX_MB_S`` (10x the fastest host interface's link rate).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ssdx.core import io as core_io
from ssdx.models.thermal.params import nvme_value
from ssdx.units import ZERO_C_IN_K
from ssdx.workloads.fill_curve import implausible_speed

HCTM_FEATURE_ID = 0x10
DEFAULT_DEVICE = "/dev/nvme0"
#: Thermal counters of the Health log as nvme-cli's JSON names them (module docstring).
COUNTERS = ("warning_temp_time", "critical_comp_time", "thm_temp1_trans_count", "thm_temp2_trans_count",
            "thm_temp1_total_time", "thm_temp2_total_time")
THROUGHPUT_KEYS = ("throughput_mb_s", "write_mb_s")
CSV_TEMPERATURE = (("composite_k", 0.0), ("temp_k", 0.0), ("temp_c", ZERO_C_IN_K))  # column, K offset
MIN_PLAUSIBLE_K = 150.0  # below this a "Kelvin" reading is almost surely deg C
#: Highest plausible temperature reading, K: 490 K (217 deg C) is the melting point of SAC305, the lead-free
#: solder that holds a drive's controller and NAND packages to the board.  Above it the drive is no longer
#: a drive, so no working one reports it (the Health log's 16-bit Kelvin field could say up to 65535 K);
#: a reading above it is a unit mix-up or a corrupt value.
MAX_PLAUSIBLE_K = 490.0


# --------------------------------------------------------------------------------------------------
# Commands


def _check_tmts(tmt1_k: float, tmt2_k: float) -> tuple[int, int]:
    t1, t2 = int(round(tmt1_k)), int(round(tmt2_k))
    if t1 and t2 and t2 <= t1:
        raise ValueError(f"TMT2 ({t2} K) must be greater than TMT1 ({t1} K) when both are non-zero "
                         "(NVMe HCTM; the drive answers Invalid Field in Command)")
    return t1, t2


def set_feature_command(tmt1_k: float, tmt2_k: float, device: str = DEFAULT_DEVICE,
                        save: bool = False) -> str:
    """``nvme set-feature`` line setting TMT1/TMT2 (Kelvin, rounded to integers; 0 disables a level).

    Example: TMT1 = 80 °C, TMT2 = 85 °C -> 353 K, 358 K -> ``nvme set-feature /dev/nvme0 -f 0x10
    --value=0x01610166``.  ``save`` adds ``--save`` (persist across resets).  Why ``--value=`` and not
    ``-v``: module docstring.
    """
    t1, t2 = _check_tmts(tmt1_k, tmt2_k)
    cmd = (f"nvme set-feature {shlex.quote(device)} -f 0x{HCTM_FEATURE_ID:02x} "
           f"--value=0x{nvme_value(t1, t2):08x}")
    return cmd + (" --save" if save else "")


def hctm_command(tmt1_k: float, tmt2_k: float, device: str = DEFAULT_DEVICE, save: bool = False) -> str:
    """The same setting with nvme-cli's ``feat`` plugin: ``nvme feat hctm DEV --tmt1=K --tmt2=K [--save]``.

    Source: linux-nvme/nvme-cli ``Documentation/nvme-feat-hctm.txt`` (module docstring).
    """
    t1, t2 = _check_tmts(tmt1_k, tmt2_k)
    nvme_value(t1, t2)  # 16-bit range check
    cmd = f"nvme feat hctm {shlex.quote(device)} --tmt1={t1} --tmt2={t2}"
    return cmd + (" --save" if save else "")


def get_feature_command(device: str = DEFAULT_DEVICE) -> str:
    """``nvme get-feature DEV -f 0x10 -H``: read back the current TMT1/TMT2, human-readable."""
    return f"nvme get-feature {shlex.quote(device)} -f 0x{HCTM_FEATURE_ID:02x} -H"


def smart_log_command(device: str = DEFAULT_DEVICE) -> str:
    """``nvme smart-log DEV -o json``: one Health-log snapshot (composite temperature in Kelvin)."""
    return f"nvme smart-log {shlex.quote(device)} -o json"


def decode_value(value: int | str) -> tuple[int, int]:
    """Set/Get Features 0x10 Dword 11 -> ``(tmt1_k, tmt2_k)``, integer Kelvin (0 = level disabled).

    ``value``: an integer or a string such as ``"0x01610166"`` (as ``nvme get-feature`` prints it).
    """
    v = int(value, 0) if isinstance(value, str) else int(value)
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"Dword 11 must be a 32-bit unsigned value, got {value!r}")
    return v >> 16, v & 0xFFFF


# --------------------------------------------------------------------------------------------------
# Series


@dataclasses.dataclass(frozen=True, eq=False)
class Series:
    """A measured (or simulated) run: NumPy arrays of one length ``n``.

    ``time_s``: seconds since the first sample; ``composite_k``: composite temperature at that time,
    K; ``throughput_mb_s``: host write throughput, MB/s (1e6 bytes/s), or None — sample ``i`` is the
    mean over ``[time_s[i], time_s[i+1])``, the step that starts there, as in the coupled model;
    ``counters``: Health-log thermal counters by nvme-cli name (:data:`COUNTERS`; minutes, counts or
    seconds as the log defines), cumulative values read at ``time_s``; ``line``: the 1-based line of the
    file each sample was read from, or None (not read from a file).
    """

    time_s: np.ndarray
    composite_k: np.ndarray
    throughput_mb_s: np.ndarray | None = None
    counters: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    line: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.time_s)
        arrays = {"composite_k": self.composite_k, "throughput_mb_s": self.throughput_mb_s, **self.counters,
                  "line": self.line}
        for name, a in arrays.items():
            if a is not None and len(a) != n:
                raise ValueError(f"Series.{name} has {len(a)} samples, time_s has {n}")


def _where(path: Path, line: int) -> str:
    return f"{path}, line {line}"


def _number(x: Any, key: str, path: Path, line: int) -> float:
    if isinstance(x, bool) or x is None:
        raise ValueError(f"{_where(path, line)}: non-numeric value for {key!r}: {x!r}")
    if isinstance(x, str):
        try:
            v = float(x.strip())
        except ValueError:
            raise ValueError(f"{_where(path, line)}: non-numeric value for {key!r}: {x!r}") from None
    elif isinstance(x, int | float):
        v = float(x)
    else:
        raise ValueError(f"{_where(path, line)}: non-numeric value for {key!r}: {x!r}")
    if not math.isfinite(v):
        raise ValueError(f"{_where(path, line)}: non-finite value for {key!r}: {x!r}")
    return v


def _timestamp(x: Any, key: str, path: Path, line: int) -> float:
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            pass
        try:
            t = datetime.fromisoformat(x.strip())
        except ValueError:
            raise ValueError(f"{_where(path, line)}: {key!r} is neither seconds nor an ISO-8601 time: "
                             f"{x!r}") from None
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
    return _number(x, key, path, line)


def _temperature(v: float, key: str, path: Path, line: int) -> float:
    """``v`` (K) checked against [:data:`MIN_PLAUSIBLE_K`, :data:`MAX_PLAUSIBLE_K`]; ``key`` ``temp_c``
    was read in deg C and is shown so."""
    celsius = key == "temp_c"
    shown = f"{v - ZERO_C_IN_K:g} deg C ({v:g} K)" if celsius else f"{v:g} K"
    if v < MIN_PLAUSIBLE_K:
        hint = ("below absolute zero" if v < 0 else "a cryogenic reading no drive reports") if celsius else \
            "nvme-cli prints Kelvin; was it deg C?"
        raise ValueError(f"{_where(path, line)}: {key!r} = {shown} is not a plausible drive temperature: "
                         f"below {MIN_PLAUSIBLE_K:g} K ({hint})")
    if v > MAX_PLAUSIBLE_K:
        raise ValueError(f"{_where(path, line)}: {key!r} = {shown} is not a plausible drive temperature: "
                         f"above {MAX_PLAUSIBLE_K:g} K, where the board's solder melts (a unit mix-up or a "
                         "corrupt value?)")
    return v


def _throughput(v: float, key: str, path: Path, line: int) -> float:
    """``v`` (MB/s) checked to be >= 0 and plausible (``fill_curve.implausible_speed``)."""
    if v < 0:
        raise ValueError(f"{_where(path, line)}: {key!r} = {v:g} MB/s is negative: a throughput is >= 0")
    problem = implausible_speed(v, f"{key!r} = {v:g} MB/s", "throughput")
    if problem:
        raise ValueError(f"{_where(path, line)}: {problem}")
    return v


class _Columns:
    """Accumulates rows; checks that optional fields appear on every row or on none."""

    def __init__(self, path: Path):
        self.path = path
        self.t: list[float] = []
        self.temp: list[float] = []
        self.lines: list[int] = []
        self.optional: dict[str, list[float]] | None = None

    def add(self, line: int, t: float, temp: float, optional: dict[str, float]) -> None:
        p = self.path
        if self.optional is None:
            self.optional = {k: [] for k in optional}
        elif set(optional) != set(self.optional):
            missing = sorted(set(self.optional) - set(optional))
            extra = sorted(set(optional) - set(self.optional))
            what = f"missing field(s) {missing}" if missing else f"field(s) {extra} absent from earlier lines"
            raise ValueError(f"{_where(p, line)}: {what}; every line must carry the same optional fields")
        if self.t and t <= self.t[-1]:
            raise ValueError(f"{_where(p, line)}: non-increasing timestamp ({t - self.t[0]:.6g} s after the "
                             f"first sample, previous {self.t[-1] - self.t[0]:.6g} s)")
        self.t.append(t)
        self.temp.append(temp)
        self.lines.append(line)
        for k, v in optional.items():
            self.optional[k].append(v)

    def series(self) -> Series:
        if not self.t:
            raise ValueError(f"{self.path}: no samples")
        opt = {k: np.asarray(v, float) for k, v in (self.optional or {}).items()}
        thr = next((opt.pop(k) for k in THROUGHPUT_KEYS if k in opt), None)
        t = np.asarray(self.t, float)
        return Series(time_s=t - t[0], composite_k=np.asarray(self.temp, float), throughput_mb_s=thr,
                      counters=opt, line=np.asarray(self.lines, int))


def read_jsonl(path: str | os.PathLike) -> Series:
    """Read JSON lines of ``nvme smart-log -o json`` snapshots with a time (module docstring)."""
    p = Path(path)
    cols = _Columns(p)
    # universal newlines, as a file opened in text mode
    with io.StringIO(core_io.utf8_text(p), newline=None) as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{_where(p, line)}: bad JSON ({e.msg} at column {e.colno})") from None
            except RecursionError:
                raise ValueError(f"{_where(p, line)}: bad JSON (nested too deeply to read)") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{_where(p, line)}: expected a JSON object, got {type(rec).__name__}")
            nested = rec.get("smart_log")
            if isinstance(nested, dict):
                rec = {**nested, **{k: v for k, v in rec.items() if k != "smart_log"}}
            key = "time_s" if "time_s" in rec else "timestamp" if "timestamp" in rec else None
            if key is None:
                raise ValueError(f"{_where(p, line)}: missing field 'timestamp' (or 'time_s')")
            t = _timestamp(rec[key], key, p, line)
            if "temperature" not in rec:
                raise ValueError(f"{_where(p, line)}: missing field 'temperature' (composite, Kelvin)")
            temp = _temperature(_number(rec["temperature"], "temperature", p, line), "temperature", p, line)
            optional = {}
            thr = [k for k in THROUGHPUT_KEYS if k in rec]
            if thr:
                optional[thr[0]] = _throughput(_number(rec[thr[0]], thr[0], p, line), thr[0], p, line)
            for k in COUNTERS:
                if k in rec:
                    optional[k] = _number(rec[k], k, p, line)
            cols.add(line, t, temp, optional)
    return cols.series()


def read_csv(path: str | os.PathLike) -> Series:
    """Read a CSV series with a header (module docstring)."""
    p = Path(path)
    cols = _Columns(p)
    with io.StringIO(core_io.utf8_text(p), newline="") as f:
        rows = csv.reader(f)
        header: list[str] | None = None
        for row in rows:
            line = rows.line_num
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if header is None:
                header = [h.strip() for h in row]
                if "time_s" not in header:
                    raise ValueError(f"{_where(p, line)}: header has no 'time_s' column: {header}")
                temp_col = next(((c, off) for c, off in CSV_TEMPERATURE if c in header), None)
                if temp_col is None:
                    raise ValueError(f"{_where(p, line)}: header needs one of "
                                     f"{[c for c, _ in CSV_TEMPERATURE]}: {header}")
                thr = next((c for c in THROUGHPUT_KEYS if c in header), None)
                wanted = ([thr] if thr else []) + [c for c in COUNTERS if c in header]
                continue
            if len(row) != len(header):
                raise ValueError(f"{_where(p, line)}: expected {len(header)} fields, got {len(row)}")
            rec = dict(zip(header, row))
            t = _number(rec["time_s"], "time_s", p, line)
            name, off = temp_col
            temp = _temperature(_number(rec[name], name, p, line) + off, name, p, line)
            opt = {c: _number(rec[c], c, p, line) for c in wanted}
            if thr:
                opt[thr] = _throughput(opt[thr], thr, p, line)
            cols.add(line, t, temp, opt)
    if header is None:
        raise ValueError(f"{p}: no header line")
    return cols.series()


def read_series(path: str | os.PathLike, fmt: str | None = None) -> Series:
    """Read a series as JSON lines or CSV: ``fmt`` ``"jsonl"``/``"csv"``, or from the file name, else
    from the first non-blank character (``{`` -> JSON lines)."""
    p = Path(path)
    if fmt is None:
        suffix = p.suffix.lower()
        if suffix in (".jsonl", ".ndjson", ".json"):
            fmt = "jsonl"
        elif suffix == ".csv":
            fmt = "csv"
        else:
            first = next((s.lstrip() for s in core_io.utf8_text(p).splitlines() if s.strip()), "")
            fmt = "jsonl" if first.startswith("{") else "csv"
    if fmt == "jsonl":
        return read_jsonl(p)
    if fmt == "csv":
        return read_csv(p)
    raise ValueError(f"unknown series format {fmt!r}; use 'jsonl' or 'csv'")


def _records(series: Series) -> list[dict[str, float]]:
    out = []
    for i in range(len(series.time_s)):
        rec = {"time_s": float(series.time_s[i]), "temperature": float(series.composite_k[i])}
        if series.throughput_mb_s is not None:
            rec["throughput_mb_s"] = float(series.throughput_mb_s[i])
        for k, v in series.counters.items():
            x = float(v[i])
            rec[k] = int(x) if x.is_integer() else x
        out.append(rec)
    return out


def write_jsonl(path: str | os.PathLike, series: Series) -> Path:
    """Write ``series`` as JSON lines that :func:`read_jsonl` reads back (``time_s``, ``temperature``
    in K as floats, ``throughput_mb_s``, counters).  Returns the path."""
    p = Path(path)
    with p.open("w", encoding="utf-8") as f:
        for rec in _records(series):
            f.write(json.dumps(rec) + "\n")
    return p


def write_csv(path: str | os.PathLike, series: Series) -> Path:
    """Write ``series`` as CSV (``time_s``, ``composite_k``, ``throughput_mb_s``, counters); the path."""
    p = Path(path)
    recs = _records(series)
    extra = [k for k in recs[0] if k not in ("time_s", "temperature")] if recs else []
    header = ["time_s", "composite_k", *extra]
    with p.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in recs:
            w.writerow([repr(r["time_s"]), repr(r["temperature"])] + [r[k] for k in header[2:]])
    return p
