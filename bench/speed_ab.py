"""A/B of the request engine's speed on MQSim's files: two source trees, the same machine, alternating.

Each round runs ``bench.mqsim_xval.ssdx_speed`` (the engine on ``SPEED_CASES``' XML files, ``--configs``
copies of the drive per batch, compile time apart) once with tree A and once with tree B, each in a
fresh process whose ``ssdx`` and ``bench`` come from that tree (``PYTHONPATH``); rounds alternate so
that a slow spell of a shared machine falls on both.  Prints a table of the median configuration-
requests per second of each side and the ratio B / A, and writes it as JSON.

Usage::

    git worktree add /tmp/before <commit>
    python -m bench.speed_ab --a /tmp/before --b . --rounds 3 --json bench/results/mqsim_xval/speed_ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the child: one side's speed on every speed case, as JSON on its last line
CHILD = """
import json, sys, tempfile
from pathlib import Path
import ssdx
from bench import mqsim_xval as xv
assert ssdx.__file__.startswith(sys.argv[1]), ssdx.__file__
ref = json.loads(Path(sys.argv[2]).read_text())
tmp = Path(tempfile.mkdtemp())
out = {}
for name in xv.SPEED_CASES:
    rec = ref["cases"][name]
    xv.write_case_files(xv.Case(**rec["case"]), tmp / name, Path(sys.argv[4]))
    row = xv.ssdx_speed(tmp / name, xv.ssdx_requests(rec), (int(sys.argv[3]),), backend="cpu")[0]
    out[name] = {"config_requests_per_s": row["config_requests_per_s"], "compile_s": row["compile_s"],
                 "requests": row["requests"]}
print(json.dumps(out))
"""


def run_side(tree: Path, configs: int, mqsim_src: Path) -> dict:
    """One side's speeds (a fresh process with ``tree`` first on the path)."""
    ref = ROOT / "bench" / "results" / "mqsim_xval" / "mqsim_reference.json"
    env = {**os.environ, "PYTHONPATH": str(tree), "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tree.resolve()), str(ref), str(configs),
                               str(mqsim_src)], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: exit {proc.returncode}: {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, required=True, help="tree A (the baseline)")
    ap.add_argument("--b", type=Path, default=ROOT, help="tree B (default: this tree)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", type=int, default=256)
    ap.add_argument("--mqsim-src", type=Path, required=True, help="MQSim's source tree (its traces/)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    runs: dict[str, list[dict]] = {"a": [], "b": []}
    for r in range(args.rounds):
        for side in ("a", "b"):
            runs[side].append(run_side(getattr(args, side), args.configs, args.mqsim_src))
            print(f"round {r + 1} {side}: " + ", ".join(f"{k} {v['config_requests_per_s']:.3g}"
                                                       for k, v in runs[side][-1].items()), flush=True)
    cases = list(runs["a"][0])
    table = {}
    print(f"{'case':16s} {'A median':>10s} {'B median':>10s} {'B / A':>6s}")
    for c in cases:
        a = statistics.median(x[c]["config_requests_per_s"] for x in runs["a"])
        b = statistics.median(x[c]["config_requests_per_s"] for x in runs["b"])
        table[c] = {"a_median": a, "b_median": b, "ratio_b_over_a": b / a,
                    "a_runs": [x[c]["config_requests_per_s"] for x in runs["a"]],
                    "b_runs": [x[c]["config_requests_per_s"] for x in runs["b"]]}
        print(f"{c:16s} {a:10.3g} {b:10.3g} {b / a:6.3f}")
    doc = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform()}, "device": "cpu",
           "configs": args.configs, "rounds": args.rounds, "backend": "cpu (ssdx.models.engine.cpu)",
           "baseline": "tree A", "a": str(args.a), "b": str(args.b), "cases": table,
           "unit": "configuration-requests per second, compile time apart (bench.mqsim_xval.ssdx_speed)"}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
