"""The test suite's slowest tests and files, from pytest's JUnit XML reports (``--junitxml``).

The test suite runs in two tiers (``docs/testing.md``): the fast tier, ``python -m pytest -q``, and the
full validation, ``python -m pytest -q -m validation``.  Each tier is timed twice on the 2-core machine:
*cold* (a fresh clone: no JAX compilation cache, no Numba cache) and *warm* (the same command again, both
caches filled by the cold run).  This script reads the four reports and writes, for each, the wall time,
the test count, the summed test time and the slowest tests and files (a test's time is pytest's: set-up,
call and tear-down; a file's is the sum of its tests').  With pytest-xdist the tests of a file run in one
worker, so a file's time is also what it costs that worker.

Usage::

    python -m bench.test_durations --report fast_cold=FAST_COLD.xml --wall fast_cold=312 \\
        --report fast_warm=... --wall fast_warm=... [--top 30] [--out bench/results/test_durations.json]

It prints one markdown table a report (``--markdown FILE`` writes them to a file too); ``--merge`` keeps
the reports already in ``--out`` that this run does not give, so one tier can be timed again alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def read_junit(path: Path) -> list[tuple[str, str, float]]:
    """``(file, test, seconds)`` for every test case of a pytest JUnit XML report.

    pytest writes the test's module as ``classname`` (``tests.test_gc``) and its function (with its
    parameters) as ``name``; ``time`` is seconds.  The report is pytest's own output, parsed with the
    standard library's XML reader (it expands no external entities)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise SystemExit(f"{path}: not a JUnit XML report ({err})") from None
    cases = []
    for case in root.iter("testcase"):
        module = case.get("classname", "")
        file = module.split(".")[1] + ".py" if module.startswith("tests.") else module
        cases.append((file, case.get("name", ""), float(case.get("time", 0.0))))
    return cases


def summarise(cases: list[tuple[str, str, float]], top: int) -> dict:
    """Counts, the summed test time and the ``top`` slowest tests and files of one report."""
    files: dict[str, float] = defaultdict(float)
    for file, _, t in cases:
        files[file] += t
    tests = sorted(cases, key=lambda c: -c[2])[:top]
    return {"tests": len(cases), "files": len(files), "test_s": round(sum(t for *_, t in cases), 1),
            "slowest_tests": [{"file": f, "test": n, "s": round(t, 2)} for f, n, t in tests],
            "slowest_files": [{"file": f, "s": round(t, 1)}
                              for f, t in sorted(files.items(), key=lambda kv: -kv[1])[:top]]}


def markdown(name: str, s: dict) -> str:
    """One report's tables as markdown."""
    wall = f", wall {s['wall_s']:.0f} s" if s.get("wall_s") is not None else ""
    lines = [f"### {name}: {s['tests']} tests in {s['files']} files, {s['test_s']:.0f} s of test time{wall}",
             "", "| test | s |", "|---|---|"]
    lines += [f"| `{t['file']}::{t['test']}` | {t['s']:.1f} |" for t in s["slowest_tests"]]
    lines += ["", "| file | s |", "|---|---|"]
    lines += [f"| `{f['file']}` | {f['s']:.1f} |" for f in s["slowest_files"]]
    return "\n".join(lines) + "\n"


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SystemExit(f"--{what} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", action="append", default=[], help="NAME=JUNIT.xml (repeatable)")
    ap.add_argument("--wall", action="append", default=[], help="NAME=SECONDS: the tier's wall time")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--note", default="", help="how the reports were made (written into the JSON)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/test_durations.json"))
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument("--merge", action="store_true",
                    help="keep the reports already in --out that this run does not give (another tier's)")
    args = ap.parse_args(argv)
    reports, walls = _pairs(args.report, "report"), _pairs(args.wall, "wall")
    if not reports:
        ap.error("give at least one --report NAME=JUNIT.xml")
    result = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                          "python": sys.version.split()[0]}, "note": args.note, "top": args.top,
              "reports": {}}
    if args.merge and args.out.exists():
        result["reports"] = json.loads(args.out.read_text(encoding="utf-8")).get("reports", {})
    text = []
    for name, path in reports.items():
        s = summarise(read_junit(Path(path)), args.top)
        s["wall_s"] = float(walls[name]) if name in walls else None
        result["reports"][name] = s
        text.append(markdown(name, s))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = [markdown(name, s) for name, s in result["reports"].items()]
    print("\n".join(text))
    if args.markdown is not None:
        args.markdown.write_text("\n".join(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
