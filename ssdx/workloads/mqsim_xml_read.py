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
    """A problem of an MQSim XML file: names the file, the element and the line (exit status 2)."""

    def __init__(self, path: os.PathLike | str, line: int, element: str, problem: str,
                 field: str = "mqsim"):
        self.path, self.line, self.element = str(path), line, element
        super().__init__(field, f"{path}:{line}", f"<{element}>: {problem}")


@dataclass
class Node:
    """An element: name, stripped text, line (1-based) and children."""

    name: str
    line: int
    text: str = ""
    children: list[Node] = field(default_factory=list)


def read(path: os.PathLike | str) -> Node:
    """Parse ``path`` into a :class:`Node` tree; DOCTYPE (and so any entity) refused."""
    p = Path(path)
    if not p.is_file():
        raise MqsimXmlError(p, 0, "file", "no such file")
    data = p.read_bytes()
    if len(data) > MAX_BYTES:
        raise MqsimXmlError(p, 0, "file", f"larger than {MAX_BYTES} bytes")
    parser = expat.ParserCreate()
    stack: list[Node] = []
    root: list[Node] = []

    def refuse(what: str):
        def handler(*_a: Any) -> None:
            raise MqsimXmlError(p, parser.CurrentLineNumber, what,
                                "DOCTYPE and entity declarations are refused (entity expansion, "
                                "external entities)")
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
                            f"not well-formed XML ({expat.errors.messages[e.code]})") from None
    return root[0]


# ---------------------------------------------------------------------------------------------- values

def int_value(p: Path, n: Node, lo: float = 0, hi: float = 2**63) -> int:
    try:
        v = int(n.text)
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not an integer") from None
    if not lo <= v <= hi:
        raise MqsimXmlError(p, n.line, n.name, f"{v} is outside [{lo}, {hi}]")
    return v


def float_value(p: Path, n: Node, lo: float = 0.0, hi: float = math.inf) -> float:
    try:
        v = float(n.text)
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not a number") from None
    if not (lo <= v <= hi):
        raise MqsimXmlError(p, n.line, n.name, f"{v} is outside [{lo}, {hi}]")
    return v


def bool_value(p: Path, n: Node) -> bool:
    t = n.text.lower()
    if t not in ("true", "false"):
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not true or false")
    return t == "true"


def choice_value(p: Path, n: Node, allowed: tuple[str, ...]) -> str:
    if n.text not in allowed:
        raise MqsimXmlError(p, n.line, n.name, f"{n.text!r} is not one of {', '.join(allowed)}")
    return n.text


def ids_value(p: Path, n: Node) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in n.text.split(",") if x.strip())
    except ValueError:
        raise MqsimXmlError(p, n.line, n.name,
                            f"{n.text!r} is not a comma-separated list of integers") from None
