"""Writing outputs whole, and the run settings every job reads the same way.

* :func:`replace_atomic` — write a file through a temporary name and ``os.replace``, so a reader or a crash
  sees the old file or the new one, never half of one; :func:`write_json` (strict JSON: NaN and inf
  become ``null``) and :func:`write_parquet` are built on it.
* :func:`dtype` — the array type of ``precision`` (``float32`` or ``float64``; the latter switches JAX to
  64-bit).
* :func:`scan_steps` — a fluid model's scan length, checked.
* :func:`trace_reader` — a streaming reader of the configured block trace, its fields checked.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ssdx.params import ConfigError

if TYPE_CHECKING:
    import pyarrow as pa

    from ssdx.workloads.traces import Reader


def temp_path(path: Path) -> Path:
    """The temporary file a write of ``path`` fills before it is renamed into place: hidden, beside it,
    named for this process and thread (two writers never share one); ``.NAME.tmp-*`` finds them all."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")


def replace_atomic(path: str | os.PathLike, write: Callable[[Path], object]) -> None:
    """Write ``path`` whole: ``write(tmp)`` fills a temporary file beside it, named for this process and
    thread (two writers never share one), then ``os.replace`` puts it in place, so a reader or a crash
    sees the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` whole (:func:`replace_atomic`)."""
    replace_atomic(path, lambda tmp: tmp.write_text(text))


def jsonable(x: Any) -> Any:
    """``x`` with NumPy scalars and arrays turned into Python numbers and lists, mapping keys into strings
    and non-finite floats into ``None``."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind in "fiub":  # a column: one conversion
        if x.dtype.kind != "f":
            return x.tolist()
        return [v if math.isfinite(v) else None for v in x.tolist()]
    if isinstance(x, list | tuple | np.ndarray):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Strict JSON of ``obj`` (:func:`jsonable`: NaN becomes null), indented, written whole."""
    write_text(path, json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n")


def write_parquet(table: pa.Table, path: str | os.PathLike, compression: str = "snappy") -> None:
    """Write an Arrow ``table`` to ``path`` as Parquet, whole (:func:`replace_atomic`)."""
    import pyarrow.parquet as pq

    replace_atomic(path, lambda tmp: pq.write_table(table, tmp, compression=compression))


def dtype(precision: str) -> type:
    """The NumPy float type of ``precision``: ``float32``, or ``float64`` (which also enables JAX's 64-bit
    mode for the rest of the process)."""
    if precision == "float64":
        import jax

        jax.config.update("jax_enable_x64", True)
        return np.float64
    if precision != "float32":
        raise ConfigError("precision", precision, "must be float32 or float64")
    return np.float32


def scan_steps(value: Any, field: str) -> int:
    """A scan length (steps per fill of the fluid model), checked: an integer 8 <= x <= 1,000,000."""
    if not isinstance(value, int | np.integer) or not 8 <= int(value) <= 1_000_000:
        raise ConfigError(field, value, "integer 8 <= x <= 1000000 (scan steps per fill)")
    return int(value)


def trace_reader(w: Mapping[str, Any], limit: int | None = None) -> Reader:
    """A streaming reader of ``workload.trace_path`` in ``workload.format``, of at most ``limit`` requests
    (None: all); bad fields raise :class:`~ssdx.params.ConfigError` naming them."""
    from ssdx.workloads import traces

    path, fmt, on_error = w.get("trace_path"), w.get("format", "msr"), w.get("on_error", "raise")
    if not path:
        raise ConfigError("workload.trace_path", path, "required: the block trace to read")
    if not Path(path).is_file():
        raise ConfigError("workload.trace_path", path, "must be an existing file")
    if fmt not in traces.FORMATS:
        raise ConfigError("workload.format", fmt, f"must be one of {list(traces.FORMATS)}")
    if on_error not in ("raise", "skip"):
        raise ConfigError("workload.on_error", on_error, "must be 'raise' or 'skip'")
    return traces.Reader(Path(path), fmt, on_error=on_error, limit=limit)


def trace_limit(w: Mapping[str, Any]) -> int | None:
    """``workload.requests`` as the number of a trace's first requests to read (None: unset, the whole
    trace); a value outside ``1 <= x <= fio.MAX_REQUESTS`` raises :class:`~ssdx.params.ConfigError`."""
    from ssdx.workloads import fio

    n = w.get("requests")
    if n is None:
        return None
    if not 1 <= int(n) <= fio.MAX_REQUESTS:
        raise ConfigError("workload.requests", n, f"integer 1 <= x <= {fio.MAX_REQUESTS:.0e}")
    return int(n)


def command_line_keys() -> frozenset[str]:
    """The dotted keys set on the command line of the running ``ssdx`` (Hydra's task overrides, ``+``
    stripped); empty outside a Hydra run."""
    try:
        from hydra.core.hydra_config import HydraConfig

        task = HydraConfig.get().overrides.task
    except (ImportError, ValueError):  # ValueError: no Hydra run in progress
        return frozenset()
    return frozenset(o.split("=", 1)[0].lstrip("+") for o in task if "=" in o and not o.startswith("~"))


class NotUtf8(ValueError):
    """A file that is not UTF-8 text: ``line`` (1-based) holds its first bad ``byte``."""

    def __init__(self, path: Path, line: int, byte: int):
        self.path, self.line, self.byte = path, line, byte
        super().__init__(f"{path}, line {line}: not UTF-8 text (byte 0x{byte:02x})")


def utf8_text(path: Path) -> str:
    """The file as text: UTF-8 with a leading byte-order mark (as spreadsheet programs write it) skipped;
    :class:`NotUtf8` names the line of the first byte that is not UTF-8."""
    import codecs

    data = Path(path).read_bytes()
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = bom + e.start
        raise NotUtf8(Path(path), data[:at].count(b"\n") + 1, data[at]) from None
