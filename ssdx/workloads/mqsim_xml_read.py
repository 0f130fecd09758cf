"""Safe reading of an MQSim XML file into a tree of :class:`Node` elements, and its typed values.

Files are parsed with the standard library's expat with a DOCTYPE refused outright, so no entity can be
declared (no entity expansion, no external entity).  A file that is not well formed, or a value out of
its range, raises :class:`MqsimXmlError` (a :class:`ssdx.params.ConfigError`: exit status 2) naming the
file, the element and its line.  Used by :mod:`ssdx.workloads.mqsim_xml`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

from ssdx.params import ConfigError

SECTOR_BYTES = 512  # MQSim's SECTOR_SIZE_IN_BYTE
MAX_BYTES = 16 << 20


class MqsimXmlError(ConfigError):
    """A problem of an MQSim XML file: names the file, the element and the line (exit status 2).

    ``field`` is the configuration key that named the file (``mqsim.ssdconfig`` or ``mqsim.workload``), so
    that the message's hint points at it; the value reads ``FILE:LINE`` (``FILE`` alone for a problem of
    the whole file, line 0).  The parsers of :mod:`ssdx.workloads.mqsim_xml` set it (:meth:`named`) on
    every error the reading helpers here raise without one."""

    def __init__(self, path: os.PathLike | str, line: int, element: str, problem: str,
                 field: str = "mqsim.ssdconfig or mqsim.workload"):
        self.path, self.line, self.element, self.problem = str(path), line, element, problem
        super().__init__(field, f"{path}:{line}" if line > 0 else str(path), f"<{element}>: {problem}")

    def named(self, field: str) -> MqsimXmlError:
        """The same error with ``field`` as the configuration key of its file."""
        return MqsimXmlError(self.path, self.line, self.element, self.problem, field=field)


@dataclass
class Node:
    """An element: name, stripped text, line (1-based) and children."""

    name: str
    line: int
    text: str = ""
    children: list[Node] = field(default_factory=list)


def read(path: os.PathLike | str, field: str = "mqsim.ssdconfig or mqsim.workload") -> Node:
    """Parse ``path`` into a :class:`Node` tree; DOCTYPE (and so any entity) refused.  ``field``: the
    configuration key that named the file, for the errors (:class:`MqsimXmlError`)."""
    p = Path(path)
    if p.is_dir():
        raise MqsimXmlError(p, 0, "file", "is a directory, not an MQSim XML file", field=field)
    if not p.exists():
        raise MqsimXmlError(p, 0, "file", "no such file", field=field)
    if not p.is_file():
        raise MqsimXmlError(p, 0, "file", "not a regular file", field=field)
    data = p.read_bytes()
    if len(data) > MAX_BYTES:
        raise MqsimXmlError(p, 0, "file", f"larger than {MAX_BYTES} bytes", field=field)
    parser = expat.ParserCreate()
    stack: list[Node] = []
    root: list[Node] = []

    def refuse(what: str):
        def handler(*_a: Any) -> None:
            raise MqsimXmlError(p, parser.CurrentLineNumber, what,
                                "DOCTYPE and entity declarations are refused (entity expansion, "
                                "external entities)", field=field)
        return handler

    def start(name: str, _attrs: dict) -> None:
        n = Node(name, parser.CurrentLineNumber)
        (stack[-1].children if stack else root).append(n)
        stack.append(n)

    def end(_name: str) -> None:
        n = stack.pop()
        n.text = n.text.strip()

    def chars(s: str) -> None:
        if stack:
            stack[-1].text += s

    parser.StartDoctypeDeclHandler = refuse("!DOCTYPE")
    parser.EntityDeclHandler = refuse("!ENTITY")
    parser.ExternalEntityRefHandler = refuse("external entity")
    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise MqsimXmlError(p, e.lineno, stack[-1].name if stack else "document",
                            f"not well-formed XML ({expat.errors.messages[e.code]})", field=field) from None
    return root[0]


# ---------------------------------------------------------------------------------------------- values

def int_value(p: Path, n: Node, lo: float = 0, hi: float = 2**63, why: str = "") -> int:
    """The integer of ``n``, in ``[lo, hi]`` (``why``: the reason for the range, said when it is broken)."""
    try:
        v = int(n.text)
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not an integer") from None
    if not lo <= v <= hi:
        raise MqsimXmlError(p, n.line, n.name, f"{v} is outside [{lo}, {hi}]" + (f": {why}" if why else ""))
    return v


def float_value(p: Path, n: Node, lo: float = 0.0, hi: float = math.inf) -> float:
    """The number of ``n``, finite and in ``[lo, hi]``: ``inf`` and ``nan`` are refused.  MQSim reads its
    times and rates as integers (``std::stoull``/``std::stoul``, e.g. ``Flash_Parameter_Set.cpp``,
    ``Device_Parameter_Set.cpp``), which have no infinity, and its few doubles (ratios, the PCIe lane
    rate) mean nothing infinite or NaN."""
    try:
        v = float(n.text)
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not a number") from None
    if not math.isfinite(v):
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not a finite number")
    if not (lo <= v <= hi):
        raise MqsimXmlError(p, n.line, n.name, f"{v} is outside [{lo}, {hi}]")
    return v


def bool_value(p: Path, n: Node) -> bool:
    """``true`` or ``false`` (any case) of ``n``."""
    t = n.text.lower()
    if t not in ("true", "false"):
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not true or false")
    return t == "true"


def choice_value(p: Path, n: Node, allowed: tuple[str, ...]) -> str:
    """The text of ``n``, one of ``allowed``."""
    if n.text not in allowed:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not one of {', '.join(allowed)}")
    return n.text


def ids_value(p: Path, n: Node) -> tuple[int, ...]:
    """The comma-separated integers of ``n``."""
    try:
        return tuple(int(x) for x in n.text.split(",") if x.strip())
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name,
                            f"{n.text!r} is not a comma-separated list of integers") from None
