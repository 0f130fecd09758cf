"""Sweep definitions from any file: ``ssdx sweep_file=PATH.yaml``.

The file has the keys of ``sweeps/NAME.yaml`` (``name``, ``space``, ``base``, ``report``, ``keep``, ...).
A relative path is resolved against the current directory.  A missing file, YAML that does not parse
(named with its line) or a document that is not a mapping is refused with :class:`ConfigError`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ssdx.params import ConfigError

FIELD = "sweep_file"


def load(path: str | Path) -> dict[str, Any]:
    """The sweep definition in the YAML file ``path`` (relative to the current directory)."""
    p = Path(path).expanduser()
    p = p if p.is_absolute() else Path.cwd() / p
    if not p.is_file():
        raise ConfigError(FIELD, str(path), f"must name an existing YAML file ({p} does not exist)")
    try:
        doc = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        what = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(FIELD, str(p), f"must be valid YAML ({p}{where}: {what})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(FIELD, str(p), f"must be a readable text file ({e})") from None
    if not isinstance(doc, dict) or "space" not in doc:
        raise ConfigError(FIELD, str(p), "must hold a sweep definition: a mapping with a 'space' "
                                         "(as in the package's sweeps/NAME.yaml)")
    doc.setdefault("name", p.stem)
    return doc


def split_argv(argv: list[str]) -> tuple[list[str], dict[str, Any] | None]:
    """``argv`` without its ``sweep_file=PATH`` argument, and the definition it names (None without one).

    ``sweep_file`` together with ``sweep=NAME`` is refused (they name two different sweeps)."""
    files = [a for a in argv if a.split("=", 1)[0].lstrip("+") == FIELD and "=" in a]
    if not files:
        return argv, None
    if len(files) > 1:
        raise ConfigError(FIELD, [f.split("=", 1)[1] for f in files], "may be given once")
    if any(a.split("=", 1)[0].lstrip("+") == "sweep" for a in argv if "=" in a):
        raise ConfigError(FIELD, files[0].split("=", 1)[1],
                          "cannot be combined with sweep=NAME: give one or the other")
    return [a for a in argv if a not in files], load(files[0].split("=", 1)[1])


def store_name(doc: dict[str, Any]) -> str:
    """The name a file's sweep is registered under in the ``sweep`` config group."""
    return "file_" + re.sub(r"[^A-Za-z0-9_]", "_", str(doc.get("name", "sweep")))
