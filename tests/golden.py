"""Golden outputs: run every experiment and sweep of the CLI at small sizes, and compare two such runs.

A refactoring that must not change a number (moving modules, generating schemas, changing how jobs are
dispatched) is checked by recording the outputs before it and after it::

    python -m tests.golden record OUT_BEFORE        # on the commit before the change
    python -m tests.golden record OUT_AFTER         # after it
    python -m tests.golden compare OUT_BEFORE OUT_AFTER

``record`` runs each case of :data:`CASES` as ``ssdx <args> hydra.run.dir=OUT/<case>`` from the repository
root (the example files are named relative to it), in a subprocess, and keeps its ``summary.json``, every
``.parquet`` file (the results table and any reduction), every ``.csv`` and ``.json`` file, and its standard
output.  ``compare`` reports every difference: JSON values compared exactly (floats bit for bit) except
the keys of :data:`VOLATILE` (wall-clock times and this machine's paths, which differ between two runs of
the same code); Parquet tables by schema and values; CSV files byte for byte.  Exit status 1 when anything
differs or a case failed, 0 otherwise.  ``--only NAME[,NAME]`` restricts either command to some cases.

This is a tool, not a test: the cases take several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: Case name -> CLI arguments (``{trace}`` and ``{series}`` are files :func:`inputs` writes).
CASES: dict[str, list[str]] = {
    "default": [],
    "fill": ["experiment=aldrin_pro_fill"],
    "fill_prefilled_bursty": [
        "experiment=aldrin_pro_fill",
        "workload=bursty_copy",
        "workload.prefill_fraction=0.5",
        "model.n_steps=128",
    ],
    "fill_pure_native": ["experiment=aldrin_pro_fill", "drive.slc_mode=pure_native"],
    "fill_fio": ["experiment=aldrin_pro_fill", "workload.fio=examples/fio/seq_fill.fio"],
    "fill_preset_970evo": [
        "experiment=aldrin_pro_fill",
        "drive=samsung_970evo_500gb",
        "nand=samsung_970evo_500gb",
    ],
    "fit_fill": [
        "experiment=fit_fill",
        "fit.curve=examples/curves/xpg_atom50_1tb.csv",
        "drive=generic_tlc_1tb",
        "drive.interface=pcie4x4",
        "drive.bus_mts=1600",
        "fit.n_steps=128",
        "fit.adam_steps=40",
        "fit.lbfgs_steps=20",
        "fit.grid_points=8",
    ],
    "thermal_bare": ["experiment=sn8e_thermal", "thermal.duration_s=120", "quiet=true"],
    "thermal_heatsink": [
        "experiment=sn8e_thermal",
        "thermal=heatsink",
        "thermal.duration_s=120",
        "quiet=true",
    ],
    "harsh_throttle": ["experiment=harsh_throttle", "quiet=true"],
    "tmt_optimize": ["experiment=tmt_optimize", "quiet=true"],
    "fit_rc": ["experiment=fit_rc", "fit.series={series}", "thermal.tmt1_k=353", "thermal.tmt2_k=358"],
    "wa_uniform": [
        "experiment=wa_uniform",
        "gc.spare_factor=0.2",
        "gc.policy=greedy",
        "gc.pages_per_block=32",
    ],
    "thnsns120_fill": ["experiment=thnsns120_fill", "fill.sets=8", "fill.sets_after_erase=2"],
    "trace_analyse": ["experiment=trace_analyse", "workload.trace_path={trace}"],
    "replay_trace": ["experiment=trace_replay", "workload.trace_path={trace}"],
    "replay_msr": ["experiment=trace_replay", "workload.synthetic=msr:prxy_0", "workload.requests=3000"],
    "replay_open": [
        "experiment=trace_replay",
        "workload.synthetic=msr:hm_0",
        "workload.requests=3000",
        "engine.loop=open",
        "engine.time_scale=50",
        "drive.dram=false",
    ],
    "replay_fio": [
        "experiment=trace_replay",
        "workload.fio=examples/fio/mixed_70_30.fio",
        "workload.requests=3000",
    ],
    "boot_qd1": ["experiment=boot_qd1"],
    "mqsim_files": ["experiment=mqsim", "mqsim.requests_per_flow=3000"],
    "mqsim_arithmetic": [
        "experiment=mqsim",
        "mqsim.requests_per_flow=2000",
        "mqsim.arithmetic=mqsim",
        "mqsim.chip_as_die=false",
    ],
    "hybrid_sensitivity": [
        "experiment=hybrid_sensitivity",
        "sensitivity.requests=1500",
        "hybrid.warmup_fills=0.02",
        "sensitivity.workloads=[proj_0]",
    ],
    "hybrid_validate": ["experiment=hybrid_validate", "validate.requests=1500", "hybrid.warmup_fills=0.02"],
    "sweep_quick": ["sweep=quick"],
    "sweep_slc_design": ["sweep=slc_design"],
    "sweep_tmt_grid": ["sweep=tmt_grid"],
    "sweep_wa_spare": ["sweep=wa_spare", "sweep.rounds=5", "gc.n_blocks=128"],
    "sweep_engine_design": ["sweep=engine_design", "sweep.requests=500"],
    "sweep_nand_per_workload": ["sweep=nand_per_workload", "sweep.requests=1500", "hybrid.warmup_fills=0.02"],
    "sweep_nand_per_workload_nand": [
        "sweep=nand_per_workload_nand",
        "sweep.requests=1500",
        "hybrid.warmup_fills=0.02",
    ],
}

#: JSON keys whose values differ between two runs of the same code (wall-clock times; any key ending in
#: ``wall_s`` too); compared by presence only.  Paths under the recorded directory are compared with that
#: directory replaced by ``<OUT>``.
VOLATILE = {"compile_s", "run_s", "elapsed_s", "seconds", "configs_per_s"}
KEPT_SUFFIXES = (".json", ".parquet", ".csv")


def inputs(out: Path) -> dict[str, str]:
    """The input files some cases read: an MSR Cambridge-format trace (deterministic mix of 4-64 KiB
    reads and writes) and a smart-log series of the thermal model (as ``tests/test_cli_thermal`` makes)."""
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "trace_msr.csv"
    rng = np.random.default_rng(7)
    n = 4000
    t = np.cumsum(rng.exponential(2e-4, n)) * 1e7  # Windows filetime ticks (100 ns)
    kinds = np.where(rng.random(n) < 0.6, "Read", "Write")
    sizes = 4096 * rng.choice([1, 2, 4, 8, 16], n)
    offsets = 4096 * rng.integers(0, 2**20, n)
    trace.write_text(
        "".join(
            f"{int(1.28e17 + ti)},host,0,{k},{o},{s},100\n" for ti, k, o, s in zip(t, kinds, offsets, sizes)
        )
    )
    series = out / "smart_series.jsonl"
    sys.path.insert(0, str(ROOT / "tests"))  # the test modules import each other by file name
    from test_cli_thermal import _measured_series

    _measured_series(series, {"g_case_amb": 0.09, "c_case": 6.5})
    return {"trace": str(trace), "series": str(series)}


def record(out: Path, only: list[str] | None = None) -> int:
    """Run the cases into ``out/<case>``; returns the number of failed cases."""
    files = inputs(out / "_inputs")
    failed = 0
    for name, args in CASES.items():
        if only and name not in only:
            continue
        run_dir = out / name
        argv = [a.format(**files) for a in args] + [f"hydra.run.dir={run_dir}"]
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "ssdx.cli.main", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=dict(os.environ, TQDM_DISABLE="1"),
        )
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "_stdout.txt").write_text(r.stdout)
        (run_dir / "_status.json").write_text(json.dumps({"returncode": r.returncode, "args": args}))
        status = "ok" if r.returncode == 0 else f"FAILED ({r.returncode}): {r.stderr.strip()[-400:]}"
        failed += r.returncode != 0
        print(f"{name:<32} {time.perf_counter() - t0:6.1f} s  {status}", flush=True)
    return failed


def _walk(a: Any, b: Any, where: str) -> Iterator[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                yield f"{where}.{k}: only in {'the second' if k not in a else 'the first'}"
            elif k not in VOLATILE and not str(k).endswith("wall_s"):
                yield from _walk(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{where}: {len(a)} items vs {len(b)}"
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                yield from _walk(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return
    elif type(a) is not type(b) or a != b:
        yield f"{where}: {a!r} vs {b!r}"


def _parquet_diff(a: Path, b: Path) -> list[str]:
    import pyarrow.parquet as pq

    ta, tb = pq.read_table(a), pq.read_table(b)
    if ta.schema.remove_metadata() != tb.schema.remove_metadata():
        return [f"schema: {ta.schema.names} vs {tb.schema.names}"]
    out = []
    for name in ta.column_names:
        ca, cb = (t.column(name).to_numpy(zero_copy_only=False) for t in (ta, tb))
        same = np.array_equal(ca, cb, equal_nan=True) if ca.dtype.kind == "f" else np.array_equal(ca, cb)
        if not same:
            out.append(f"column {name} differs")
    return out


def _kept(d: Path) -> set[Path]:
    return {
        p.relative_to(d)
        for p in d.rglob("*")
        if p.suffix in KEPT_SUFFIXES
        and p.name != "_status.json"
        and ".hydra" not in p.parts
        and "chunks" not in p.parts
    }


def compare(a: Path, b: Path, only: list[str] | None = None) -> int:
    """Print every difference between the recorded runs ``a`` and ``b``; returns how many there are."""
    n = 0
    for name in CASES:
        if only and name not in only:
            continue
        da, db = a / name, b / name
        if not (da / "_status.json").exists() or not (db / "_status.json").exists():
            print(f"{name}: not recorded in both")
            n += 1
            continue
        problems: list[str] = []
        sa, sb = (json.loads((d / "_status.json").read_text())["returncode"] for d in (da, db))
        if sa or sb:
            problems.append(f"exit status {sa} vs {sb}")
        fa, fb = _kept(da), _kept(db)
        for rel in sorted(fa ^ fb):
            problems.append(f"{rel}: only in {'the first' if rel in fa else 'the second'}")
        for rel in sorted(fa & fb):
            pa, pb = da / rel, db / rel
            if rel.suffix == ".json":
                ja, jb = (json.loads(p.read_text().replace(json.dumps(str(r.resolve()))[1:-1], "<OUT>"))
                          for p, r in ((pa, a), (pb, b)))
                problems += [f"{rel}{d}" for d in _walk(ja, jb, "")]
            elif rel.suffix == ".parquet":
                problems += [f"{rel}: {d}" for d in _parquet_diff(pa, pb)]
            elif pa.read_bytes() != pb.read_bytes():
                problems.append(f"{rel}: bytes differ")
        print(f"{name:<32} {'identical' if not problems else f'{len(problems)} differences'}")
        for p in problems[:20]:
            print(f"    {p}")
        n += len(problems)
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    for p in (r, c):
        p.add_argument("--only", type=lambda s: s.split(","), default=None)
    ns = ap.parse_args(argv)
    if ns.cmd == "record":
        return 1 if record(ns.out.resolve(), ns.only) else 0
    return 1 if compare(ns.a, ns.b, ns.only) else 0


if __name__ == "__main__":
    sys.exit(main())
