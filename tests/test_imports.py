"""The package's import graph: no module reaches itself again through its imports, lazy ones included.

A cycle that only closes through an import inside a function does not fail at import time, but it
ties two modules together (neither can be understood, moved or tested without the other) and fails
as soon as one of them moves that import to the top.  The graph is read from the source with
``ast``: every ``import ssdx...`` and ``from ssdx... import`` anywhere in a module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ssdx

PKG = Path(ssdx.__file__).resolve().parent


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for p in PKG.rglob("*.py"):
        parts = ("ssdx", *p.relative_to(PKG).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The ``ssdx`` modules ``path`` imports anywhere in its body (``from a import b`` is ``a.b`` when that
    is a module, else ``a``)."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            out |= {f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in known else n.module for a in n.names}
    return {m for m in out if m in known}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_a_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(g) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def graph() -> dict[str, set[str]]:
    """Every module's imports, with the packages a module's import runs first: importing ``a.b.c`` executes
    ``a/__init__`` and ``a/b/__init__``, so a package ``__init__`` that imports (even lazily) a module
    which imports back into the package closes a cycle.  A package's imports of its own submodules are left
    out: Python has the package in ``sys.modules`` before its ``__init__`` runs them."""
    mods = modules()
    out = {}
    for m, path in mods.items():
        parts = m.split(".")
        parents = {".".join(parts[:i]) for i in range(2, len(parts))} & set(mods)
        own = path.name == "__init__.py"
        edges = {x for x in imports(path, set(mods)) if not (own and x.startswith(m + "."))}
        out[m] = (edges | parents) - {m}
    return out


def test_the_package_has_no_import_cycle():
    g = graph()
    assert "ssdx.models.engine.cuda" in g["ssdx.models.engine.backends"]  # the graph sees lazy imports
    assert "ssdx.sweep" in g["ssdx.sweep.runner"]  # and the package a submodule's import runs first
    assert cycles(g) == []


def test_a_package_init_that_imports_back_is_a_cycle():
    # a package __init__ (p) importing a job (t) that imports one of the package's modules (p.r)
    g = {"p": {"t"}, "t": {"p.r"}, "p.r": {"p"}}
    assert cycles(g) == [["p", "p.r", "t"]]


def test_parameter_modules_import_no_model_or_job():
    """The parameter modules (and the option declarations they read) build numbers from a configuration:
    they import neither a model nor a job (a fresh interpreter, so nothing is already loaded)."""
    code = ("import sys\n"
            "import ssdx.models.engine.params, ssdx.models.gc.params, ssdx.models.hybrid.params\n"
            "import ssdx.models.thermal.params\n"
            "names = ('engine', 'fluid', 'gc', 'hybrid', 'thermal')\n"
            "pkgs = {'ssdx.models'} | {'ssdx.models.' + n for n in names}\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ssdx.models', 'ssdx.tasks', 'numba'))\n"
            "             and m not in pkgs and not m.endswith(('.params', '.options'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_parameter_modules_run_no_model():
    """A parameter module builds numbers from a configuration; a model (the analytic WA of the hybrid
    drive's NAND tier, the engine's back-end probe) runs elsewhere — not even a lazy import of one."""
    mods = modules()
    for name in ("ssdx.params", "ssdx.models.engine.params", "ssdx.models.gc.params",
                 "ssdx.models.hybrid.params", "ssdx.models.thermal.params"):
        used = imports(mods[name], set(mods))
        assert not [m for m in used if m.startswith(("ssdx.models", "ssdx.tasks"))
                    and not m.endswith(".options")], name
