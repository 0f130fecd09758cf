"""fio job files, part 1: the file syntax (sections, ``[global]`` inheritance, ``include``, ``${VAR}``).

:func:`parse_file` reads a job file into :class:`Section` objects of :class:`Setting` lines, as
``ssdx.workloads.fio`` documents ("Syntax"); the options' meaning is ``ssdx.workloads.fio_job``'s.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssdx.params import ConfigError

MAX_FILE_BYTES = 1 << 20
MAX_LINE = 4096
MAX_INCLUDE_DEPTH = 8
MAX_JOBS = 256

ALIASES = {"readwrite": "rw", "blocksize": "bs", "blocksize_range": "bsrange", "ba": "blockalign",
           "io_limit": "io_size", "timeout": "runtime", "ratemin": "rate_min", "ratecycle": "rate_cycle",
           "wait_for_previous": "stonewall", "ss": "steadystate", "ss_dur": "steadystate_duration",
           "ss_ramp": "steadystate_ramp_time", "ss_interval": "steadystate_check_interval",
           "fill_fs": "fill_device"}
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
_ENV = re.compile(r"\$\{([^}]*)\}")
_RESERVED = re.compile(r"\$(pagesize|mb_memory|ncpus)")


class FioError(ConfigError):
    """A fio job file problem: ``path``, ``line`` (1-based; 0 for the whole file), what is wrong.  A
    :class:`~ssdx.params.ConfigError` (exit status 2) of ``field`` (``workload.fio`` or
    ``workload.fio_job``)."""

    def __init__(self, path: os.PathLike | str, line: int, problem: str, field: str = "workload.fio",
                 value: Any = None):
        self.path, self.line, self.problem = str(path), line, problem
        where = f"{path}:{line}" if line else str(path)
        super().__init__(field, str(path) if value is None else value, f"{where}: {problem}")


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
