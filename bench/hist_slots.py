"""Histogram slots on the device: a compare per edge, the binary search, and the estimate from the edges'
spacing (checked, with the compares as its fallback), timed over bin counts and both scales.

``ssdx.sweep.device_run.edges_at_or_below`` counts, for each float32 metric value of a chunk, the histogram
edges at or below it.  This benchmark jits each of the three forms alone over a chunk of values spread
over the range (and 2 % outside it) and reports nanoseconds per value, the least of ``--reps`` calls
after a warm-up call (compile time apart), so that the threshold ``COMPARED_EDGES`` is read off a
measurement.  Every form's slots are checked against NumPy's
``searchsorted`` before it is timed.

Usage: ``python -m bench.hist_slots [--values N] [--reps R] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bench import timed_calls
from ssdx.report.machine import machine
from ssdx.sweep import device_run
from ssdx.sweep.device import edges_f32
from ssdx.sweep.reduce import bin_edges

BINS = (8, 16, 32, 48, 64, 80, 96, 112, 128, 256, 1024)
FORMS = ("compare", "search", "estimate")


def _forms(edges: np.ndarray, log: bool) -> dict:
    """The jitted forms for ``edges``: the estimate whatever the threshold says (the threshold is what this
    benchmark informs), the binary search, and the compares up to ``UNROLLED_EDGES``."""
    out = {"estimate": jax.jit(lambda v: device_run.estimated_or_compared(v, edges, log)),
           "search": jax.jit(lambda v: jnp.searchsorted(jnp.asarray(edges), v, side="right"))}
    if len(edges) <= device_run.UNROLLED_EDGES:
        out["compare"] = jax.jit(lambda v: device_run._edges_compared(v, edges))
    return out


def run(n_values: int, reps: int, bins_list: Sequence[int] = BINS) -> list[dict]:
    """One row per scale and bin count: each form's least ns per value (None where it is not built),
    its first call's seconds, and the form the threshold chooses."""
    rng = np.random.default_rng(0)
    rows = []
    for log in (False, True):
        lo, hi = (0.1, 1e4) if log else (0.0, 100.0)
        for bins in bins_list:
            edges = edges_f32(bin_edges("m", lo, hi, bins, log))
            u = rng.uniform(-0.02, 1.02, n_values)
            v = (lo * (hi / lo) ** u if log else lo + (hi - lo) * u).astype(np.float32)
            want = np.searchsorted(edges, v, side="right")
            x = jax.device_put(v)
            row: dict = {"scale": "log" if log else "linear", "bins": bins,
                         **{f"{k}_ns": None for k in FORMS}}
            for name, fn in _forms(edges, log).items():
                np.testing.assert_array_equal(np.asarray(fn(x)), want, err_msg=f"{name}, {bins} bins, {log=}")
                least, _, first = timed_calls(fn, x, reps)
                row[f"{name}_ns"], row[f"{name}_compile_s"] = least / n_values * 1e9, first
            row["chosen"] = "compare" if bins + 1 <= device_run.COMPARED_EDGES else "estimate"
            if row["compare_ns"] is not None:
                row["estimate_over_compare"] = row["estimate_ns"] / row["compare_ns"]
            row["estimate_over_search"] = row["estimate_ns"] / row["search_ns"]
            rows.append(row)
            print(f"{row['scale']:>6} {bins:5d} bins: " + "  ".join(
                f"{k} {row[f'{k}_ns']:.2f}" if row[f"{k}_ns"] is not None else f"{k} -" for k in FORMS)
                + f" ns/value (chosen: {row['chosen']})", flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1 << 20)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--bins", default=",".join(map(str, BINS)), help="comma list of bin counts")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = run(args.values, args.reps, [int(b) for b in args.bins.split(",")])
    if args.json:
        out = {"benchmark": "hist_slots", "machine": machine(), "device": str(jax.devices()[0]),
               "jax": jax.__version__, "values": args.values, "reps": args.reps,
               "baseline": "compare (one compare per edge), used for every bin count before the estimate",
               "thresholds": {"COMPARED_EDGES": device_run.COMPARED_EDGES}, "rows": rows}
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
