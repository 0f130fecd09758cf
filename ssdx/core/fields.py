"""One declaration per numeric configuration field, and one loop that checks them.

A :class:`Field` holds what a field is (dotted column name, unit, meaning, default) and the range a value
must lie in; :func:`check` tests every field of a table on every configuration of a batch of columns and
raises :class:`ConfigError` naming the first breach — or, with a ``report`` list, records each rule's
per-configuration mask so that a sweep with ``on_invalid: drop`` can drop the configurations that break it.
The parameter modules (``ssdx.params``, ``ssdx.models.engine.params``, ``ssdx.models.gc.params``,
``ssdx.models.hybrid.params``,
``ssdx.models.thermal.params``) declare their numeric fields here; their categorical fields and the rules
that tie
several fields together stay with them.

:class:`ConfigError` is the one error a wrong configuration value raises (the CLI turns it into exit
status 2 with its message); ``ssdx.params.ConfigError`` is the same class.  :func:`did_you_mean` writes
the suggestion a refused key or column name carries (the CLI's key check, ``ssdx.sweep.source.check_keys``,
``ssdx.sweep.reduce.check_column``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


class ConfigError(ValueError):
    """A configuration value breaks a rule.  ``field``, ``value`` and ``rule`` are attributes; ``fix`` says
    how to fix it where a Hydra override is not the way (an environment variable)."""

    def __init__(self, field: str, value: Any, rule: str, row: int | None = None, n: int = 1,
                 fix: str | None = None):
        self.field, self.value, self.rule, self.row = field, value, rule, row
        where = "" if row is None or n == 1 else f" (configuration {row} of {n})"
        fix = fix or f"Fix the value (Hydra override e.g. {field}=...) or the sweep definition"
        super().__init__(
            f"Invalid configuration{where}: field '{field}' = {value!r} breaks the rule: {rule}. "
            f"{fix}; nothing was computed."
        )


def did_you_mean(name: Any, known: Iterable[str], prefix: str = "") -> str:
    """The suggestion a refused key or column name carries: ``did you mean 'PREFIX.NEAR'?``, NEAR being the
    entry of ``known`` closest to ``name`` (``difflib.get_close_matches``, its default cutoff 0.6), or ``""``
    where none is close enough or ``name`` is not a string.  ``prefix`` (e.g. the block ``drive``) is joined
    to NEAR with a dot; each caller places the text in its own message."""
    if not isinstance(name, str):
        return ""
    near = difflib.get_close_matches(name, list(known), n=1)
    if not near:
        return ""
    return f"did you mean '{prefix + '.' if prefix else ''}{near[0]}'?"


@dataclass(frozen=True)
class Field:
    """A numeric configuration field: column ``name`` (``group.field``), ``unit``, range ``lo``..``hi``
    (inclusive unless ``lo_open`` / ``hi_open``), whole numbers only where ``integer``, its ``default``
    (``None``: required, or the catalog value where ``nullable``) and ``doc``, the meaning quoted in the
    rule a breach reports.

    ``nullable`` — NaN (a null in the config) is allowed: the catalog value.  ``optional`` — the column may
    be absent from a batch (the field's default then applies).  ``rule`` — the rule text, where it is not
    the one :meth:`rule_text` writes.  ``also`` — a further test of the values (``ndarray -> bool mask``),
    reported under the same rule."""

    name: str
    unit: str
    lo: float
    hi: float
    integer: bool = False
    default: Any = None
    doc: str = ""
    lo_open: bool = False
    hi_open: bool = False
    nullable: bool = False
    optional: bool = False
    rule: str | None = None
    also: Callable[[np.ndarray], np.ndarray] | None = None

    def rule_text(self) -> str:
        """The rule a breach reports: e.g. ``integer 1 <= x <= 64 (NAND channels)``."""
        if self.rule is not None:
            text = self.rule
        else:
            text = (f"{'integer ' if self.integer else ''}{self.lo:g} {'<' if self.lo_open else '<='} x "
                    f"{'<' if self.hi_open else '<='} {self.hi:g}" + (f" ({self.doc})" if self.doc else ""))
        return text + (", or null for the catalog value" if self.nullable else "")

    def ok(self, a: np.ndarray) -> np.ndarray:
        """Which values of ``a`` (float) satisfy the field: NaN and inf fail unless ``nullable``."""
        with np.errstate(invalid="ignore"):
            above = a > self.lo if self.lo_open else a >= self.lo
            ok = above & (a < self.hi if self.hi_open else a <= self.hi)
            if self.integer:
                ok &= a == np.round(a)
            if self.also is not None:
                ok &= self.also(a)
        return np.isnan(a) | ok if self.nullable else ok


def table(*fields: Field) -> dict[str, Field]:
    """Fields by column name (declaration order is checking order)."""
    return {f.name: f for f in fields}


def check(fields: Mapping[str, Field] | Iterable[Field], cols: Mapping[str, Any],
          report: list | None = None) -> None:
    """Check every field of ``fields`` present in ``cols`` (an ``optional`` one may be absent; any other
    absent one is a ``KeyError``): raise :class:`ConfigError` on the first breach, or with ``report``
    append ``(field, rule, ok-mask)`` per field and go on."""
    for f in fields.values() if isinstance(fields, Mapping) else fields:
        if f.optional and f.name not in cols:
            continue
        check_rule(cols, f.name, f.ok(num(cols, f.name)), f.rule_text(), report=report)


def num(cols: Mapping, key: str) -> np.ndarray:
    """Column ``key`` as float64; a value that is not a number raises :class:`ConfigError`."""
    a = np.asarray(cols[key])
    if a.dtype.kind not in "biuf":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            bad = next(v for v in a if not _is_number(v))
            raise ConfigError(key, _py(bad), "must be a number") from None
    return a.astype(float)


def null_or_value(value: Any, field: Field, key: str | None = None) -> Any:
    """The column entry of a ``nullable`` field's config ``value``: NaN (the catalog value) for null, else
    the value.  A NaN given as the value is refused with :class:`ConfigError` naming ``key`` (default the
    field's name) and the field's rule: only null means the catalog value, so that a NaN computed or typed
    by mistake is not silently replaced by it."""
    if value is None:
        return np.nan
    try:
        nan = bool(np.isnan(float(value)))
    except (TypeError, ValueError):  # not a number: the range check names it
        nan = False
    if nan:
        raise ConfigError(key or field.name, _py(value), field.rule_text())
    return value


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def check_rule(cols: Mapping, key: str, ok: np.ndarray, rule: str, values: np.ndarray | None = None,
               report: list | None = None) -> None:
    """Raise :class:`ConfigError` on the first configuration where ``ok`` is false (its value from
    ``values``, default column ``key``), or, with ``report``, append ``(key, rule, ok-mask)`` and go on."""
    ok = np.asarray(ok, dtype=bool)
    if report is not None:
        report.append((key, rule, ok))
        return
    if not ok.all():
        i = int(np.argmin(ok))
        v = (np.asarray(cols[key]) if values is None else values)[i]
        raise ConfigError(key, _py(v), rule, row=i, n=len(ok))


def existing_file(value: Any, key: str, what: str) -> str:
    """``value``, the path of an input file given at config key ``key``: refused with :class:`ConfigError`
    when missing (``what`` says what the file must be) or not an existing file."""
    if not value:
        raise ConfigError(key, value, f"required: {what}")
    if not Path(str(value)).is_file():
        raise ConfigError(key, value, "must be an existing file")
    return str(value)
