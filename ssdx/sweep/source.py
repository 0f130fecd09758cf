"""Sweep definitions from any file: ``ssdx sweep_file=PATH.yaml``.

The file has the keys of ``sweeps/NAME.yaml`` (:func:`keys`: ``name``, ``space``, ``base``, ``report``,
``keep``, ...).  A relative path is resolved against the current directory.  A missing file, YAML that does
not parse (named with its line), a document that is not a mapping and a key that is none of :func:`keys`
(a misspelt ``kep:`` would otherwise be dropped without a word) are refused with :class:`ConfigError`.
:func:`check_keys` is the same check for any block of keys (``ssdx.sweep.job.run_sweep`` applies it to every
sweep, however it was selected, and ``ssdx.sweep.reduce.parse`` to the ``keep`` blocks).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ssdx.core.fields import did_you_mean
from ssdx.params import ConfigError

FIELD = "sweep_file"

#: the keys of a sweep definition that do not depend on its model (``generate``, ``keep`` and ``only``, one
#: configuration alone, are the chunked runner's); the models' own keys are in their registry lines
#: (``SweepModelSpec.sweep_keys``: ``n_steps`` of the fluid model, ``rounds`` of the GC model, ...)
COMMON_KEYS = ("name", "model", "space", "base", "drive", "workload", "on_invalid", "chunk_size", "generate",
               "keep", "report", "only")


def keys() -> tuple[str, ...]:
    """Every key a sweep definition may have: :data:`COMMON_KEYS` and each model's own."""
    from ssdx.core import registry

    return COMMON_KEYS + tuple(registry.model_keys())


def check_keys(block: Mapping[str, Any], field: str, allowed: Iterable[str], where: str = "") -> None:
    """Refuse a key of the mapping ``block`` (the config block ``field``, e.g. ``sweep.keep.pareto``) that is
    none of ``allowed``: :class:`ConfigError` naming ``field.KEY``, its value, the closest allowed key and
    every allowed one (``where``, e.g. the file, is quoted in the rule)."""
    allowed = list(allowed)
    unknown = [k for k in block if k not in allowed]
    if not unknown:
        return
    key = unknown[0]
    near = did_you_mean(str(key), allowed, prefix=field)
    more = f" (also unknown: {', '.join(map(str, unknown[1:]))})" if len(unknown) > 1 else ""
    hint = f"; {near} Allowed keys: " if near else "; allowed keys: "
    raise ConfigError(f"{field}.{key}", block[key], f"not a key of the '{field}' block"
                      + (f" ({where})" if where else "") + hint + ", ".join(allowed) + more)


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
    check_keys(doc, "sweep", keys(), str(p))
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
