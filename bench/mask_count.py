"""Counting a boolean mask on the device: XLA's sum against ``device_run.count_true`` (population counts of
the mask's bytes read as uint32 words), and finding the occupied blocks of 64 entries (``any`` over each
block against the same words), on masks of ``--values`` entries, sparse (12 set, as a chunk's Pareto
candidates) and dense (half set).

Each form is jitted alone, checked against NumPy, and timed as the least and the median of ``--reps``
calls after a warm-up call (compile time apart); the baseline is the plain ``sum`` / ``any``.

Usage: ``python -m bench.mask_count [--values N] [--reps R] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np

from bench import timed_calls
from ssdx.report.machine import machine
from ssdx.sweep import device_run


def run(n: int, reps: int) -> list[dict]:
    rng = np.random.default_rng(0)
    forms = {"sum": lambda m: m.sum(dtype=np.int32), "count_true": device_run.count_true,
             "any per 64": lambda m: m.reshape(-1, device_run.SPARSE_BLOCK).any(axis=1),
             "any per 64, by words": lambda m: (device_run._words(m.reshape(-1, device_run.SPARSE_BLOCK)) != 0
                                                ).any(axis=1)}
    rows = []
    for name, mask in (("sparse (12 set)", np.isin(np.arange(n), rng.choice(n, 12, replace=False))),
                       ("dense (half set)", rng.random(n) < 0.5)):
        x = jax.device_put(mask)
        want = {"count": int(mask.sum()), "blocks": mask.reshape(-1, device_run.SPARSE_BLOCK).any(axis=1)}
        for form, f in forms.items():
            fn = jax.jit(f)
            got = np.asarray(fn(x))
            np.testing.assert_array_equal(got, want["blocks" if form.startswith("any") else "count"])
            least, median, compile_s = timed_calls(fn, x, reps)
            rows.append({"mask": name, "form": form, "least_ms": least * 1e3, "median_ms": median * 1e3,
                         "compile_s": compile_s})
            print(f"{name:>17} {form:<21} least {least * 1e3:7.3f} ms  median {median * 1e3:7.3f} ms",
                  flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1 << 20)
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.values % device_run.SPARSE_BLOCK:
        ap.error(f"--values must be a multiple of {device_run.SPARSE_BLOCK}")
    rows = run(args.values, args.reps)
    if args.json:
        out = {"benchmark": "mask_count", "machine": machine(), "device": str(jax.devices()[0]),
               "jax": jax.__version__, "values": args.values, "reps": args.reps,
               "baseline": "sum / any per 64 (XLA's own reductions of the boolean mask)", "rows": rows}
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
