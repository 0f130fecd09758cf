"""fio job files, part 2: reading a section's option values — whole numbers with fio's units and
``kb_base``, times, flags, ``r,w,t`` lists and block sizes — naming the option's file and line on any error
(fio HOWTO, "Parameter types" and ``kb_base``; ``ssdx.workloads.fio`` documents the rules)."""

from __future__ import annotations

import re

from ssdx.workloads.fio_ini import FioError, Section, Setting
from ssdx.workloads.traces import SECTOR

MAX_BLOCK = 1 << 28  # 256 MiB
MAX_BYTES = 1 << 62
_TIME = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6}
_NUM = re.compile(r"(?P<num>0[xX][0-9a-fA-F]+|\d+)(?P<suf>[A-Za-z%]*)\Z")


def split_rwt(value: str) -> list[str | None]:
    """fio's ``r,w,t`` lists: a value not ending in a comma applies to the types after it."""
    parts = value.split(",")
    if parts[-1] == "" and len(parts) > 1:
        given = parts[:-1]
        out = given + [""] * (3 - len(given))
    else:
        out = parts + [parts[-1]] * (3 - len(parts))
    return [p.strip() or None for p in out[:3]] if len(parts) <= 3 or parts[3:] == [""] else []


class OptionReader:
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
        return 0.0 if st is None else self.time(st, self.value(st), default_unit)

    def time(self, st: Setting, t: str, default_unit: float) -> float:
        """Seconds of ``t`` (a value of ``st``, or a part of one), ``default_unit`` s without a unit."""
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
        parts = split_rwt(self.value(st))
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
