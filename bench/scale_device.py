"""Device-generated sweeps (``ssdx.sweep.device``): the whole pipeline against a bare ``jit(vmap)``.

What is timed (each in its own process, so peak memory is its own)
------------------------------------------------------------------
The fluid sweep of ``bench.scale`` (4 pSLC modes x 4 NAND types x 3 die counts x a Sobol sample of
pre-fill, fold efficiency and static pSLC size; 500 GB drives; float32), ``N`` configurations, ``S`` steps:

* ``bare`` (the baseline): ``jax.jit(jax.vmap(fluid.metrics))`` called once on all ``N`` configurations,
  their parameter pytrees built on the host beforehand (not timed), compiled ahead of time; best of ``R``.
* ``device``: ``ssdx.sweep.device_run.execute`` with a reduction-only ``keep`` (:data:`bench.scale.KEEP`:
  top-10 per NAND type, the die-count/speed Pareto front, a 64-bin histogram per pSLC mode), chunks of
  ``C``: configurations decoded from their index and reduced inside the jitted chunk.  ``run_s`` = wall -
  compile; ``device_s`` the time inside the compiled calls; ``host_s`` the rest (with several workers,
  which compile and run at once, only the wall time and the workers' summed times).  Its overhead over
  ``bare`` is ``run_s / bare run_s - 1`` (goal < 10 % at 100,000 configurations, 256 steps).
* ``host``: the same reductions through the host path (columns expanded, validated and built on the
  host, ``ssdx.sweep.runner.run``), its states compared with ``device``'s (same ids: nothing is dropped).
* ``trivial``: a model of three multiplies and an add per configuration over ``T`` configurations (grid x
  random block) with the same three reductions, chunks of 2^20: the pipeline's own rate and host cost per
  configuration; at ``T`` and ``T / 10`` for the peak memory.
* ``trivial_opposed``: the trivial model over ``T / 10`` configurations keeping only the Pareto front of two
  opposed metrics (:data:`OPPOSED_KEEP`: least static pSLC size against greatest score), whose long
  front the pivot screen must narrow twice before its sort.
* ``ray``: the fluid design (static pSLC size on a grid axis, :func:`_ray_sweep`) at ``S_ray`` steps over
  ``N_ray`` configurations on a two-node local Ray
  cluster (``ray.cluster_utils.Cluster``, one CPU per node), tasks sent index ranges, and the same sweep
  on the local runner; the merged states must be equal.
* ``big``: the same fluid design as ``ray`` over ``N_big`` configurations at ``S_big`` steps, chunks of
  ``C_big``, on the local device path with the reduction-only ``keep`` (the accelerator's end-to-end rate
  at sizes whose rows could not be held: 10^9 rows of metrics are hundreds of gigabytes); one repeat.

* ``device_each`` (only when ``--runs`` names it): the ``device`` run keeping each reduction alone, and
  keeping only :data:`LEAST_KEEP` (one ungrouped 4-bin histogram): where the chunk's time goes beyond the
  model.

* ``trivial_each`` (only when ``--runs`` names it): one chunk (at most 2^20) of the ``trivial`` sweep compiled
  five ways, keeping all three reductions, all but one of them (each in turn), and one ungrouped 4-bin
  histogram alone (decoding and the model, nearly bare); the five are called in turns, ``--reps`` x 5
  times each, in one
  process (so a machine's drift falls on all alike), and each one's median wall and CPU time per
  configuration is reported: what each reduction adds to the chunk, and what decoding and the model cost.

``--runs`` names the runs to make (default: all but ``ray``, ``big``, ``device_each`` and ``trivial_each``;
the first two run when their sizes are given).  ``--in-flight N`` sets the chunks in flight per device of
the local runs.

Usage: ``python -m bench.scale_device --json PATH [--configs N] [--steps S] [--chunk C] [--trivial T]
[--ray-configs N_ray] [--ray-steps S_ray] [--big N_big] [--big-steps S_big] [--big-chunk C_big]
[--runs bare,device,...] [--in-flight N] [--reps R]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.scale import KEEP, child_json, peak_rss_mib
from bench.scale import sweep_definition as _sweep

#: the runs made by default, in order
RUNS = ("bare", "device", "host", "trivial", "trivial_small", "trivial_opposed")
#: runs made only when ``--runs`` names them
EXTRA_RUNS = ("device_each", "trivial_each")
#: the least reduction (one ungrouped 4-bin histogram): the device path's cost without the reductions'
LEAST_KEEP = {"histograms": {"metrics": ["mean_mb_s"], "bins": 4, "range": {"mean_mb_s": [10.0, 10000.0]}}}


def _ray_sweep(n: int) -> dict:
    """The same design with the static pSLC size on a grid axis and pre-fill and fold efficiency in the
    Sobol block: the capacity rule (which reads the static size) stays a small table at 10^8
    configurations."""
    return {"space": {"grid": {"drive.slc_mode": ["dynamic", "static", "pure_slc", "pure_native"],
                               "drive.nand": ["ymtc_cdt1b", "3d_ct_tlc", "tlc", "qlc"],
                               "drive.dies_per_channel": [2, 4, 8],
                               "drive.static_slc_gb": [4.0, 6.0, 8.0, 12.0, 16.0, 24.0]},
                      "sobol": {"n": max(1, n // 288), "seed": 0, "params": {
                          "workload.prefill_fraction": {"low": 0.0, "high": 0.8},
                          "drive.fold_efficiency": {"low": 0.4, "high": 1.0}}}},
            "base": {"drive.user_capacity_gb": 500.0}}


def _trivial_sweep(n: int) -> dict:
    return {"space": {"grid": {"drive.slc_mode": ["dynamic", "static", "pure_slc", "pure_native"],
                               "drive.nand": ["ymtc_cdt1b", "3d_ct_tlc", "tlc", "qlc"],
                               "drive.dies_per_channel": [2, 4, 8],
                               "workload.prefill_fraction": [round(0.016 * i, 3) for i in range(50)]},
                      "random": {"n": max(1, n // 2400), "seed": 0, "params": {
                          "drive.fold_efficiency": {"low": 0.4, "high": 1.0},
                          "drive.static_slc_gb": {"low": 4.0, "high": 24.0, "log": True}}}},
            "base": {"drive.user_capacity_gb": 500.0}}


#: a Pareto front of two opposed metrics (the larger static pSLC size buys the larger score): a long front,
#: which the first screen's 256 buckets leave thousands of candidates of
OPPOSED_KEEP = {"pareto": {"x": "drive.static_slc_gb", "x_better": "min", "y": "score", "y_better": "max"}}
TRIVIAL_KEEP = {"top_k": {"k": 10, "by": "score", "group_by": ["drive.nand"], "ascending": False},
                "pareto": {"x": "drive.dies_per_channel", "x_better": "min", "y": "score", "y_better": "max"},
                "histograms": {"metrics": ["score"], "bins": 64, "group_by": ["drive.slc_mode"],
                               "range": {"score": [0.0, 100.0]}}}


def trivial(_idle_gaps: bool):
    """Three multiplies and an add per configuration (the pipeline's cost, not a model's)."""
    return lambda d, w: {"score": d.fold_efficiency * d.static_slc_bytes * 1e-9 + w.prefill_fraction * d.dies}


def _base(steps: int) -> dict:
    from ssdx import presets

    return {"drive": presets.drive(), "workload": presets.workload(), "nand": None,
            "model": {"n_steps": steps}, "precision": "float32"}


def _space(sweep: dict, keep: dict, metrics, steps: int):
    from ssdx.sweep import device, reduce
    from ssdx.sweep.job import sweep_base

    ds = device.DeviceSpace(sweep_base(sweep, _base(steps)), sweep, reduce.parse(keep), metrics)
    ds.prepare()
    return ds


def _rss_watch(executor):
    """``executor`` (default: the local one) recording the peak RSS after its first chunk."""
    from ssdx.sweep import executors

    inner = executor if executor is not None else executors.LocalExecutor()

    class Watch:
        name, workers, rss_first = inner.name, inner.workers, None
        concurrency = getattr(inner, "concurrency", inner.workers)

        def share(self, obj):
            return inner.share(obj)

        def map(self, jobs):
            for i, item in enumerate(inner.map(jobs)):
                if i == 0:
                    Watch.rss_first = peak_rss_mib()
                yield item
    return Watch()


def _device_run(ds, model, chunk: int, reps: int, executor=None,
                in_flight: int | None = None) -> dict[str, Any]:
    from ssdx.sweep import device_run, executors, reduce

    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        watch = _rss_watch(executor if executor is not None or in_flight is None
                           else executors.LocalExecutor(in_flight=in_flight))
        out = device_run.execute(ds, model, chunk, None, {}, executor=watch, progress=False)
        wall = time.perf_counter() - t0
        if best is None or wall - out.compile_s < best[0] - best[1].compile_s:
            best = (wall, out)
    wall, out = best
    common = {"configs": ds.n, "wall_s": wall, "configs_per_s_wall": ds.n / wall,
              "state": reduce.dumps(out.state), "rss_after_first_chunk_mib": watch.rss_first,
              "peak_rss_mib": peak_rss_mib()}
    if watch.concurrency > 1:
        # the workers (or a device's jobs in flight) compile and run at the same time: their times add up
        # to more than the wall time, so neither the time less compilation nor the host's share can be
        # told from them
        out_ = common | {"compile_s_summed": out.compile_s, "device_s_summed": out.device_s,
                         "in_flight": watch.concurrency}
        if watch.workers == 1:  # jobs in flight on one device: its one compile is waited for, not repeated
            out_ |= {"compile_s": out.compile_s, "run_s": wall - out.compile_s,
                     "configs_per_s_run": ds.n / (wall - out.compile_s)}
        return out_
    run = wall - out.compile_s
    return common | {"compile_s": out.compile_s, "run_s": run, "device_s": out.device_s,
                     "host_s": run - out.device_s, "configs_per_s_run": ds.n / run,
                     "host_ns_per_config": (run - out.device_s) / ds.n * 1e9}


def child(what: str, args: argparse.Namespace) -> dict[str, Any]:
    import jax

    from ssdx import params
    from ssdx.core import registry
    from ssdx.sweep import executors, reduce, runner, space
    from ssdx.sweep.job import sweep_base

    metrics = registry.SWEEP_MODELS["fluid"].metrics
    if what in ("bare", "host"):
        sweep = _sweep(args.configs)
        cols = space.sweep_rows(sweep_base(sweep, _base(args.steps)), sweep)
        model = registry.fluid_model(args.steps)
        if what == "host":
            best = None
            for _ in range(args.reps):
                t0 = time.perf_counter()
                out = runner.run(cols, model, args.chunk, progress=False, keep=reduce.parse(KEEP))
                wall = time.perf_counter() - t0
                best = min(best or (wall, out), (wall, out), key=lambda b: b[0] - b[1].compile_s)
            wall, out = best
            return {"configs": len(cols["drive.nand"]), "wall_s": wall, "compile_s": out.compile_s,
                    "run_s": wall - out.compile_s, "state": reduce.dumps(out.state)}
        trees = params.build(cols)
        t0 = time.perf_counter()
        fn = jax.jit(jax.vmap(model(False))).lower(*trees).compile()
        compile_s = time.perf_counter() - t0
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*trees))
            times.append(time.perf_counter() - t0)
        return {"configs": len(cols["drive.nand"]), "compile_s": compile_s, "run_s": min(times)}
    if what == "device":
        ds = _space(_sweep(args.configs), KEEP, metrics, args.steps)
        return _device_run(ds, registry.fluid_model(args.steps), args.chunk, args.reps,
                           in_flight=args.in_flight)
    if what == "trivial_each":
        return _trivial_each(args)
    if what.startswith("trivial"):
        n = args.trivial // (1 if what == "trivial" else 10)
        keep = OPPOSED_KEEP if what == "trivial_opposed" else TRIVIAL_KEEP
        ds = _space(_trivial_sweep(n), keep, ["score"], 8)
        out = _device_run(ds, trivial, 1 << 20, args.reps, in_flight=args.in_flight)
        if what == "trivial_opposed":
            out["pareto_points"] = len(reduce.loads(out["state"])["pareto"])
        return out
    if what == "device_each":
        # the device run with each reduction alone, and with the least one: where the chunk's time goes
        keeps = {"least": LEAST_KEEP, **{k: {k: v} for k, v in KEEP.items()}, "all": KEEP}
        out = {}
        for name, keep in keeps.items():
            ds = _space(_sweep(args.configs), keep, metrics, args.steps)
            r = _device_run(ds, registry.fluid_model(args.steps), args.chunk, args.reps,
                            in_flight=args.in_flight)
            out[name] = {k: v for k, v in r.items() if k != "state"}
        any_run = next(iter(out.values()))
        return {"configs": any_run["configs"], "compile_s": sum(r["compile_s"] for r in out.values()),
                "run_s": out["all"]["run_s"], "keeps": out}
    if what == "big":
        ds = _space(_ray_sweep(args.big), KEEP, metrics, args.big_steps)
        out = _device_run(ds, registry.fluid_model(args.big_steps), args.big_chunk, 1,
                          in_flight=args.in_flight)
        return out | {"steps": args.big_steps, "chunk": args.big_chunk}
    if what == "ray":
        import ray
        from ray.cluster_utils import Cluster

        ds = _space(_ray_sweep(args.ray_configs), KEEP, metrics, args.ray_steps)
        model = registry.fluid_model(args.ray_steps)
        local = _device_run(ds, model, args.ray_chunk, 1)
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        c.add_node(num_cpus=1)
        ray.init(address=c.address, log_to_driver=False, include_dashboard=False)
        c.wait_for_nodes()
        try:
            ex = executors.RayExecutor(num_cpus=1)
            remote = _device_run(ds, model, args.ray_chunk, 1, executor=ex)
        finally:
            ray.shutdown()
            c.shutdown()
        return {"configs": ds.n, "steps": args.ray_steps, "chunk": args.ray_chunk, "nodes": 2,
                "local": {k: v for k, v in local.items() if k != "state"},
                "ray": {k: v for k, v in remote.items() if k != "state"},
                "identical_to_local": remote["state"] == local["state"]}
    raise ValueError(what)


def _trivial_each(args: argparse.Namespace) -> dict[str, Any]:
    """The ``trivial_each`` run (module docstring): per variant, median wall and CPU ns per configuration."""
    import jax
    import numpy as np

    from ssdx.sweep import device_run

    least = {"histograms": {"metrics": ["score"], "bins": 4, "range": {"score": [0.0, 100.0]}}}
    variants = {"all three": TRIVIAL_KEEP,
                **{f"all but {k}": {j: v for j, v in TRIVIAL_KEEP.items() if j != k} for k in TRIVIAL_KEEP},
                "a 4-bin histogram alone": least}
    calls, chunk, compile_s = {}, None, 0.0
    for name, keep in variants.items():
        ds = _space(_trivial_sweep(args.trivial), keep, ["score"], 8)
        chunk = device_run.part_chunk(ds.parts[0].size, 1 << 20)
        inputs = (*jax.device_put((ds.parts[0].digits(0), np.int32(chunk))),
                  *device_run._device_inputs(ds, 0, None))
        t0 = time.perf_counter()
        fn = jax.jit(device_run.chunk_fn(ds, 0, trivial, chunk, device_run.first_capacity(chunk)))
        fn = fn.lower(*inputs).compile()
        jax.block_until_ready(fn(*inputs))
        compile_s += time.perf_counter() - t0
        calls[name] = (fn, inputs)
    wall: dict[str, list[float]] = {k: [] for k in calls}
    cpu: dict[str, list[float]] = {k: [] for k in calls}
    order = list(calls)
    for r in range(5 * args.reps):
        for name in order if r % 2 else order[::-1]:
            fn, inputs = calls[name]
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(fn(*inputs))
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    ns = lambda xs: float(np.median(xs)) / chunk * 1e9  # noqa: E731
    out = {k: {"wall_ns_per_config": ns(wall[k]), "cpu_ns_per_config": ns(cpu[k]), "calls": len(wall[k])}
           for k in calls}
    total = out["all three"]["cpu_ns_per_config"]
    adds = {k: total - out[f"all but {k}"]["cpu_ns_per_config"] for k in TRIVIAL_KEEP}
    # run_s: the median call keeping all three (the table's configurations/s is that chunk's rate)
    return {"configs": chunk, "chunk": chunk, "compile_s": compile_s,
            "run_s": float(np.median(wall["all three"])), "variants": out, "cpu_ns_added_by": adds}


def spawn(what: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.scale_device", "--child", what] + [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
        if k not in ("child", "json") and v is not None]
    return child_json(cmd, what)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=32_768)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--trivial", type=int, default=10_000_000)
    ap.add_argument("--ray-configs", type=int, default=0, help="0: no Ray run")
    ap.add_argument("--ray-steps", type=int, default=32)
    ap.add_argument("--ray-chunk", type=int, default=1 << 18)
    ap.add_argument("--big", type=int, default=0, help="0: no big run")
    ap.add_argument("--big-steps", type=int, default=32)
    ap.add_argument("--big-chunk", type=int, default=1 << 20)
    ap.add_argument("--in-flight", type=int, default=None,
                    help="jobs at once per device on the local runs (default: the executor's own choice)")
    ap.add_argument("--runs", default=",".join(RUNS), help="comma list of " + ", ".join(RUNS + EXTRA_RUNS))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args)))
        return
    import jax

    from ssdx.report.machine import machine

    names = tuple(w for w in args.runs.split(",") if w)
    unknown = sorted(set(names) - set(RUNS) - set(EXTRA_RUNS))
    if unknown:
        ap.error(f"--runs: unknown run(s) {unknown}; known: {', '.join(RUNS + EXTRA_RUNS)}")
    runs = {w: spawn(w, args) for w in names}
    if args.ray_configs:
        runs["ray"] = spawn("ray", args)
    if args.big:
        runs["big"] = spawn("big", args)
        runs["big"].pop("state")
    bare, dev, host = runs.get("bare"), runs.get("device"), runs.get("host")
    for r in (dev, host, *runs.get("device_each", {}).get("keeps", {}).values()):
        if r is not None and bare is not None:
            r["overhead_vs_bare"] = r["run_s"] / bare["run_s"] - 1.0
    if dev is not None and host is not None:
        dev["identical_to_host"] = dev["state"] == host["state"]
    for r in runs.values():
        r.pop("state", None)
    result = {
        "benchmark": "scale_device",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(), "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.local_devices()],
        "sizes": {"configs": next((runs[k]["configs"] for k in ("bare", "device", "host") if k in runs),
                                  args.configs),
                  "steps": args.steps, "chunk": args.chunk, "reps": args.reps,
                  "trivial": runs["trivial"]["configs"] if "trivial" in runs else args.trivial,
                  "ray_configs": args.ray_configs, "ray_steps": args.ray_steps,
                  "big": args.big, "big_steps": args.big_steps, "big_chunk": args.big_chunk,
                  "in_flight": args.in_flight},
        "baseline": "bare: one jax.jit(jax.vmap(fluid.metrics)) call on all configurations, parameter "
                    "pytrees "
                    "built on the host beforehand, AOT-compiled",
        "goal": "device-generated, reduced sweep: overhead over bare < 10 % at 100,000 configurations and "
                "256 steps; >= 1e8 configurations/s with a trivial model; memory flat in the configurations",
        "device_overhead": (dev or {}).get("overhead_vs_bare"),
        "host_path_overhead": (host or {}).get("overhead_vs_bare"),
        "trivial_configs_per_s": runs.get("trivial", {}).get("configs_per_s_run"),
        "trivial_host_ns_per_config": runs.get("trivial", {}).get("host_ns_per_config"),
        "opposed_pareto_configs_per_s": runs.get("trivial_opposed", {}).get("configs_per_s_run"),
        "big_configs_per_s_wall": runs.get("big", {}).get("configs_per_s_wall"),
        "peak_rss_mib": {str(r["configs"]): {"after_first_chunk": r["rss_after_first_chunk_mib"],
                                             "at_end": r["peak_rss_mib"]}
                         for k in ("trivial_small", "trivial", "big") if (r := runs.get(k))},
        "runs": runs,
    }
    print(f"{args.configs} configurations, {args.steps} steps ({jax.default_backend()})")
    print(f"{'run':<16}{'configs':>14}{'compile_s':>11}{'run_s':>9}{'cfg/s':>15}{'overhead':>10}")
    for name in names + (("big",) if args.big else ()):
        r = runs[name]
        ov = r.get("overhead_vs_bare")
        print(f"{name:<16}{r['configs']:>14,}{r['compile_s']:>11.2f}{r['run_s']:>9.3f}"
              f"{r['configs'] / r['run_s']:>15,.0f}{'' if ov is None else f'{ov:+.1%}':>10}")
    if dev is not None and host is not None:
        print(f"device states identical to the host path's: {dev['identical_to_host']}")
    for name, r in runs.get("device_each", {}).get("keeps", {}).items():
        extra = f", device {r['device_s']:.4f} s" if "device_s" in r else ""
        ov = f", {r['overhead_vs_bare']:+.1%} vs bare" if "overhead_vs_bare" in r else ""
        print(f"  device path keeping {name}: run {r['run_s']:.4f} s{extra}{ov}, "
              f"compile {r['compile_s']:.2f} s")
    for name, r in runs.get("trivial_each", {}).get("variants", {}).items():
        print(f"  trivial chunk, {name}: {r['wall_ns_per_config']:.2f} ns wall, "
              f"{r['cpu_ns_per_config']:.2f} ns CPU per configuration (median of {r['calls']})")
    if "host_ns_per_config" in runs.get("trivial", {}):
        print(f"trivial host cost {runs['trivial']['host_ns_per_config']:.2f} ns/configuration")
    if result["peak_rss_mib"]:
        print(f"peak RSS {result['peak_rss_mib']} MiB")
    if "ray" in runs:
        r = runs["ray"]
        print(f"ray: {r['configs']:,} configurations at {r['steps']} steps on 2 nodes: "
              f"{r['ray']['wall_s']:.1f} s "
              f"(local {r['local']['wall_s']:.1f} s), identical to local: {r['identical_to_local']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
