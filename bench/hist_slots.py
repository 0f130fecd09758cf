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
import platform
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ssdx.sweep import device_run
from ssdx.sweep.device import edges_f32
from ssdx.sweep.reduce import bin_edges

BINS = (8, 16, 32, 48, 64, 80, 96, 112, 128, 256, 1024)


def _estimate_alone(edges, log):
    """The estimate whatever the thresholds say (they are what this benchmark informs)."""
    def fn(v):
        c, inside = device_run.estimated_slots(v, edges, log)
        return jax.lax.cond(inside.all(), lambda: c, lambda: device_run._edges_compared(v, edges))
    return jax.jit(fn)


def run(n_values: int, reps: int) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for log in (False, True):
        lo, hi = (0.1, 1e4) if log else (0.0, 100.0)
        for bins in BINS:
            edges = edges_f32(bin_edges("m", lo, hi, bins, log))
            u = rng.uniform(-0.02, 1.02, n_values)
            v = (lo * (hi / lo) ** u if log else lo + (hi - lo) * u).astype(np.float32)
            want = np.searchsorted(edges, v, side="right")
            fns = {"compare": None, "search": None, "estimate": None}
            fns["estimate"] = _estimate_alone(edges, log)
            fns["search"] = jax.jit(lambda v, e=edges: jnp.searchsorted(jnp.asarray(e), v, side="right"))
            if len(edges) <= device_run.UNROLLED_EDGES:
                fns["compare"] = jax.jit(lambda v, e=edges: device_run._edges_compared(v, e))
            x = jax.device_put(v)
            row = {"scale": "log" if log else "linear", "bins": bins}
            for name, fn in fns.items():
                if fn is None:
                    row[f"{name}_ns"] = None
                    continue
                t0 = time.perf_counter()
                got = np.asarray(fn(x))
                row[f"{name}_compile_s"] = time.perf_counter() - t0
                np.testing.assert_array_equal(got, want, err_msg=f"{name}, {bins} bins, {row['scale']}")
                times = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    jax.block_until_ready(fn(x))
                    times.append(time.perf_counter() - t0)
                row[f"{name}_ns"] = min(times) / n_values * 1e9
            row["chosen"] = "compare" if bins + 1 <= device_run.COMPARED_EDGES else "estimate"
            rows.append(row)
            print(f"{row['scale']:>6} {bins:5d} bins: " + "  ".join(
                f"{k} {row[f'{k}_ns']:.2f}" if row[f"{k}_ns"] is not None else f"{k} -"
                for k in ("compare", "search", "estimate")) + f" ns/value (chosen: {row['chosen']})",
                flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1 << 20)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = run(args.values, args.reps)
    out = {"benchmark": "hist_slots", "machine": {"platform": platform.platform(),
                                                  "processor": platform.processor() or platform.machine()},
           "device": str(jax.devices()[0]), "jax": jax.__version__, "values": args.values, "reps": args.reps,
           "baseline": "compare (one compare per edge), used for every bin count before the estimate",
           "thresholds": {"COMPARED_EDGES": device_run.COMPARED_EDGES},
           "rows": rows}
    for r in rows:
        if r["compare_ns"] is not None:
            r["estimate_over_compare"] = r["estimate_ns"] / r["compare_ns"]
        r["estimate_over_search"] = r["estimate_ns"] / r["search_ns"]
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
