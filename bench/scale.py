"""Large-sweep study: the sweep runner against a bare ``jit(vmap)`` call, and its scaling over workers.

What is timed
-------------
One fluid-engine sweep (``ssdx.models.fluid.model.metrics``, ``S`` steps, float32) of ``N`` configurations:
4 pSLC modes x 4 NAND types x 3 die counts, times a Sobol sample of pre-fill, fold efficiency and static
pSLC size (``space.sweep_rows`` on the ``aldrin_pro_2tb`` preset), none with idle gaps, so every
configuration runs the same kernel.

``bare``: the baseline: ``jax.jit(jax.vmap(model))`` called once on all ``N`` configurations (parameter
pytrees already built, as the runner's are), compiled ahead of time (``compile_s``); ``run_s`` is the
best of ``R`` calls, each ending in ``jax.block_until_ready``.

``bare_chunks``: the same ``jit(vmap)`` called on the runner's padded chunks one after another, nothing
else: the runner's host work alone (``overhead_vs_bare_chunks``), apart from what cutting the sweep into
chunks changes by itself (on a CPU, chunks that fit the caches run faster than one call on everything).

``local``: ``ssdx.sweep.runner.run`` as a sweep runs it: chunks of ``C``, each checkpointed to Parquet
(atomic write), merged into ``results.parquet``, on 1..K local devices (``runner.devices``).  Its
compile time is measured inside the runner (ahead-of-time compile per device) and reported apart;
``run_s`` = wall - compile.  On a CPU-only host the devices are XLA host devices
(``--xla_force_host_platform_device_count=K``), so each worker count runs in its own process.

``ray``: the same sweep through ``runner=ray`` on a local Ray with K CPUs (one task per chunk, one CPU
each); its wall time includes starting nothing (Ray is started before the clock) but every task's
compile, since each Ray worker compiles once.

``reduce``: the ``local`` run with a reduction-only ``keep`` (:data:`KEEP`: the 10 best mean write speeds
per NAND type, the Pareto front of die count against mean write speed, a 64-bin histogram of mean write
speed per pSLC mode): no row is held or written, each chunk checkpoints its reduction state.  Reported
against the ``local`` run with ``keep: all``: configurations per second and peak resident memory
(``ru_maxrss`` of the process, which holds the configuration columns either way); its top-k values are
checked identical to those computed from the ``keep: all`` table.

Reported: configurations per second (run only, and wall), the runner's overhead over ``bare``
(``run_s / bare run_s - 1``; goal < 10 % at 100,000 configurations) and the scaling efficiency
``rate(K) / (K * rate(1))``.  Values are checked identical between every runner and worker count.

Usage: ``python -m bench.scale --configs N --json PATH [--chunk C] [--steps S] [--devices 1,2]
[--ray 1,2] [--reduce 1] [--reps R]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEEP = {"top_k": {"k": 10, "by": "mean_mb_s", "group_by": ["drive.nand"], "ascending": False},
        "pareto": {"x": "drive.dies_per_channel", "x_better": "min", "y": "mean_mb_s", "y_better": "max"},
        "histograms": {"metrics": ["mean_mb_s"], "bins": 64, "group_by": ["drive.slc_mode"],
                       "range": {"mean_mb_s": [10.0, 10000.0]}, "log": ["mean_mb_s"]}}


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def _top_values(df) -> list:
    """The ``KEEP`` top-k mean write speeds per NAND type, from a whole results table."""
    df = df.sort_values(["mean_mb_s", "config_id"], ascending=[False, True]).groupby("drive.nand").head(10)
    return sorted([str(a), float(b)] for a, b in zip(df["drive.nand"], df["mean_mb_s"], strict=True))


def sweep_definition(n: int) -> dict:
    """The fluid sweep described above, ``n`` configurations rounded down to a multiple of 48."""
    return {"space": {"grid": {"drive.slc_mode": ["dynamic", "static", "pure_slc", "pure_native"],
                               "drive.nand": ["ymtc_cdt1b", "3d_ct_tlc", "tlc", "qlc"],
                               "drive.dies_per_channel": [2, 4, 8]},
                      "sobol": {"n": max(1, n // 48), "seed": 0, "params": {
                          "workload.prefill_fraction": {"low": 0.0, "high": 0.8},
                          "drive.fold_efficiency": {"low": 0.4, "high": 1.0},
                          "drive.static_slc_gb": {"low": 4.0, "high": 24.0, "log": True}}}},
            "base": {"drive.user_capacity_gb": 500.0}}


def sweep_cols(n: int) -> dict:
    """The columns of :func:`sweep_definition` (``n`` configurations)."""
    from ssdx import presets
    from ssdx.sweep.job import sweep_columns

    base = {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
            "model": {"n_steps": 64}, "precision": "float32"}
    cols, _, _ = sweep_columns(sweep_definition(n), base)
    return cols


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in this process (the parent sets XLA_FLAGS before JAX starts)."""
    import jax
    import numpy as np
    import pyarrow.parquet as pq

    from ssdx import params
    from ssdx.core import registry
    from ssdx.sweep import executors, runner

    cols = sweep_cols(args.configs)
    n = len(cols["drive.nand"])
    model = registry.fluid_model(args.steps)
    out: dict[str, Any] = {"configs": n, "devices": [str(d) for d in jax.local_devices()]}
    if args.what in ("bare", "bare_chunks"):
        trees = params.build(cols)
        calls = [trees]  # bare: one call on everything; bare_chunks: the runner's padded chunks in turn
        if args.what == "bare_chunks":
            c = min(args.chunk, n)
            pads = [np.minimum(np.arange(lo, lo + c), n - 1) for lo in range(0, n, c)]
            calls = [jax.tree_util.tree_map(lambda x, i=i: np.asarray(x)[i], trees) for i in pads]
        t0 = time.perf_counter()
        compiled = jax.jit(jax.vmap(model(False))).lower(*calls[0]).compile()
        out["compile_s"] = time.perf_counter() - t0
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            got = [np.asarray(jax.block_until_ready(compiled(*t))["mean_mb_s"]) for t in calls]
            times.append(time.perf_counter() - t0)
        out["run_s"] = min(times)
        out["run_s_all"] = times
        vals = np.concatenate(got)[:n].astype(np.float64)
    else:
        if args.what == "ray":
            import ray

            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
                     logging_level="WARNING")
            ex = executors.RayExecutor(num_cpus=1, num_gpus=0)
            # warm the workers (process start, imports) so the clock measures the sweep
            list(ex.map([executors.Job(i, _noop, (), np.zeros(0)) for i in range(args.workers)]))
        else:
            ex = executors.LocalExecutor(args.workers, in_flight=args.in_flight)
        times, compiles = [], []
        for _ in range(args.reps):
            with tempfile.TemporaryDirectory() as d:
                if args.what == "reduce":
                    from ssdx.sweep import reduce

                    t0 = time.perf_counter()
                    res = runner.run(cols, model, args.chunk, out_dir=Path(d), progress=False, executor=ex,
                                     keep=reduce.parse(KEEP))
                    times.append(time.perf_counter() - t0)
                    compiles.append(res.compile_s)
                    assert not (Path(d) / "results.parquet").exists()
                    st = res.state
                    out["top_values"] = sorted([json.loads(g)[0], e[0]] for g, es in st["top_k"].items()
                                               for e in es)
                    out["pareto_points"] = len(st["pareto"])
                    vals = np.asarray([v for _, v in out["top_values"]])
                    continue
                t0 = time.perf_counter()
                table = runner.run(cols, model, args.chunk, out_dir=Path(d), progress=False, executor=ex)
                times.append(time.perf_counter() - t0)
                compiles.append(float(table.schema.metadata[b"compile_s"]))
                assert (Path(d) / "results.parquet").exists()
                vals = pq.read_table(Path(d) / "results.parquet").column("mean_mb_s").to_numpy()
                out["top_values"] = _top_values(table.to_pandas())
        best = int(np.argmin(times))
        out.update({"wall_s": times[best], "compile_s_summed": compiles[best], "wall_s_all": times,
                    "workers": ex.workers})
        # compile runs once per worker, in parallel across workers: charge the per-worker mean
        local = args.what in ("local", "reduce")
        out["compile_s"] = compiles[best] / max(ex.workers, 1) if local else compiles[best]
        out["run_s"] = times[best] - out["compile_s"] if local else times[best]
        out["peak_rss_mib"] = peak_rss_mib()
    out["checksum"] = float(np.sum(vals))
    out["values_head"] = np.asarray(vals[:64], np.float64).tolist()
    return out


def _noop(device=None):
    return {}


def spawn(args: argparse.Namespace, what: str, workers: int, devices: int | None) -> dict[str, Any]:
    env = dict(os.environ, SSDX_HOST_DEVICES="1")
    if devices is not None:
        flag = f"--xla_force_host_platform_device_count={devices}"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    cmd = [sys.executable, "-m", "bench.scale", "--child", what, "--workers", str(workers),
           "--configs", str(args.configs), "--chunk", str(args.chunk), "--steps", str(args.steps),
           "--reps", str(args.reps)]
    cmd += [] if args.in_flight is None else ["--in-flight", str(args.in_flight)]
    return child_json(cmd, f"{what} x{workers}", env)


def child_json(cmd: list[str], what: str, env: dict | None = None) -> dict[str, Any]:
    """Run a benchmark's child process from the repository root; the JSON its last line printed."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--devices", default="1,2", help="local device counts ('all' = every accelerator)")
    ap.add_argument("--ray", default="", help="Ray worker counts, e.g. 1,2 (empty: no Ray runs)")
    ap.add_argument("--reduce", default="1",
                    help="local worker counts of the reduction-only (keep: top_k/pareto/histograms) run")
    ap.add_argument("--in-flight", type=int, default=None,
                    help="chunks at once per device on the local runs (default: the runner's own choice)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.what = args.child
        print(json.dumps(child(args)))
        return

    import jax

    from ssdx.report.machine import machine

    accel = jax.default_backend() != "cpu"
    if args.devices == "all":
        counts = [len(jax.local_devices())]
    else:
        counts = [int(k) for k in args.devices.split(",") if k]
    runs: list[dict[str, Any]] = []
    bare = spawn(args, "bare", 1, None if accel else 1)
    runs.append({"runner": "bare", "workers": 1, **bare})
    chunked = spawn(args, "bare_chunks", 1, None if accel else 1)
    runs.append({"runner": "bare_chunks", "workers": 1, **chunked})
    for k in counts:
        runs.append({"runner": "local", **spawn(args, "local", k if not accel else k, None if accel else k)})
    for k in [int(k) for k in args.ray.split(",") if k]:
        runs.append({"runner": "ray", **spawn(args, "ray", k, None if accel else 1)})
    reduced = [{"runner": "reduce", **spawn(args, "reduce", k, None if accel else k)}
               for k in [int(k) for k in args.reduce.split(",") if k]]
    n = bare["configs"]
    ref = runs[0]
    base_rate = {}
    for r in runs:
        r["configs_per_s_run"] = n / r["run_s"]
        r["configs_per_s_wall"] = n / (r.get("wall_s") or (r["run_s"] + r["compile_s"]))
        r["identical_to_bare"] = bool(r["values_head"] == ref["values_head"]
                                      and r["checksum"] == ref["checksum"])
        if not r["runner"].startswith("bare"):
            r["overhead_vs_bare"] = r["run_s"] / bare["run_s"] - 1.0
            r["overhead_vs_bare_chunks"] = r["run_s"] / chunked["run_s"] - 1.0
            base_rate.setdefault(r["runner"], r["configs_per_s_run"] / r["workers"])
            r["scaling_efficiency"] = r["configs_per_s_run"] / (r["workers"] * base_rate[r["runner"]])
    one_local = next((r for r in runs if r["runner"] == "local" and r["workers"] == 1), None)
    for r in reduced:
        same = next((x for x in runs if x["runner"] == "local" and x["workers"] == r["workers"]), None)
        r["configs_per_s_run"] = n / r["run_s"]
        r["configs_per_s_wall"] = n / r["wall_s"]
        if same is not None:
            r["keep_all"] = {"configs_per_s_wall": same["configs_per_s_wall"],
                             "peak_rss_mib": same["peak_rss_mib"]}
            r["top_k_identical_to_keep_all"] = r["top_values"] == same["top_values"]
            r["rate_vs_keep_all"] = r["configs_per_s_wall"] / same["configs_per_s_wall"]
            r["peak_rss_vs_keep_all_mib"] = r["peak_rss_mib"] - same["peak_rss_mib"]
    result = {
        "benchmark": "scale", "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(), "backend": jax.default_backend(),
        "sizes": {"configs": n, "chunk": args.chunk, "steps": args.steps, "reps": args.reps,
                  "in_flight": args.in_flight,
                  "padding_fraction": (-n % args.chunk) / n},
        "baseline": "bare: one jax.jit(jax.vmap(fluid.metrics)) call on all configurations, AOT-compiled",
        "goal": "local runner (1 worker) overhead over bare < 10 % at 100,000 configurations",
        "local_overhead": one_local["overhead_vs_bare"] if one_local else None,
        "baseline_chunks": "bare_chunks: the same compiled jit(vmap) called on the runner's padded chunks in "
                           "turn, nothing else: the runner's host work alone, without the chunking's effect",
        "local_overhead_vs_chunks": one_local["overhead_vs_bare_chunks"] if one_local else None,
        "runs": [{k: v for k, v in r.items() if k not in ("values_head", "top_values")} for r in runs],
        "reduction": {"keep": KEEP,
                      "runs": [{k: v for k, v in r.items() if k not in ("values_head", "top_values")}
                               for r in reduced]},
    }
    print(f"{n} configurations, {args.steps} steps, chunk {args.chunk} ({jax.default_backend()}); "
          f"values identical to bare: {all(r['identical_to_bare'] for r in runs)}")
    print(f"{'runner':<12}{'workers':>8}{'compile_s':>11}{'run_s':>9}{'cfg/s run':>12}{'cfg/s wall':>12}"
          f"{'overhead':>10}{'vs chunks':>10}{'efficiency':>11}")
    for r in runs:
        ov = f"{100 * r['overhead_vs_bare']:+.1f}%" if "overhead_vs_bare" in r else "-"
        oc = f"{100 * r['overhead_vs_bare_chunks']:+.1f}%" if "overhead_vs_bare_chunks" in r else "-"
        ef = f"{r['scaling_efficiency']:.2f}" if "scaling_efficiency" in r else "-"
        print(f"{r['runner']:<12}{r['workers']:>8}{r['compile_s']:>11.2f}{r['run_s']:>9.2f}"
              f"{r['configs_per_s_run']:>12.0f}{r['configs_per_s_wall']:>12.0f}{ov:>10}{oc:>10}{ef:>11}")
    for r in reduced:
        ka = r.get("keep_all")
        print(f"reduce {r['workers']} worker(s), keep top_k/pareto/histograms: {r['configs_per_s_wall']:.0f} "
              f"cfg/s wall, peak RSS {r['peak_rss_mib']:.0f} MiB"
              + (f" (keep: all {ka['configs_per_s_wall']:.0f} cfg/s, {ka['peak_rss_mib']:.0f} MiB; "
                 f"top-k identical: {r['top_k_identical_to_keep_all']})" if ka else ""))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
