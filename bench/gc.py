"""Benchmark of the block-level GC model (``ssdx.models.gc.model``): NAND page writes per second, many drives.

What is timed
-------------
``jax_vmap``: ``jax.jit(jax.vmap(gc.run))`` over ``N`` configurations (uniform random writes, greedy,
spare factors spread over 0.07-0.28, distinct seeds) for ``C`` cycles each (one cycle = one block of
``b`` NAND pages programmed, host pages plus GC copies).  ``compile_s`` (lower + XLA compile, ahead of
time) is kept apart from ``run_s``, the median of ``--repeats`` timed calls, each ending in
``jax.block_until_ready``.  Throughput: NAND page writes (host + copies) per second, summed over the
configurations, and host page writes per second.

Baselines (per-configuration loops, named)
------------------------------------------
``python_loop``: the FTL page by page in plain Python (``bench.ftl_reference``: lists, one
configuration at a time; the same greedy policy and the same address stream as the model), timed on
``--loop-configs`` configurations for ``--loop-cycles`` cycles and extrapolated per NAND page write.
It is checked to produce exactly the model's copies on what it ran.
``jax_single``: the jitted model on one configuration per call (no ``vmap``), ``--single-configs`` of
them run back to back: JAX used the way one-configuration simulators are used.

``jax_metrics``: ``gc.metrics`` on one configuration (the first, ``--metrics-blocks`` blocks,
preconditioning twice over then ``--metrics-rounds`` SNIA rounds): the ``while_loop`` over cycles that
the CLI's GC experiments and sweeps run, in cycles (blocks filled) per second, compile apart.

Reference point (not run here): public C simulators of page-mapped greedy cleaning report about 10
million flash page writes per second on one core.

Usage: ``python -m bench.gc [--configs N] [--cycles C] [--blocks B] [--pages b] [--repeats R]
[--json FILE]``; ``--sizes 64,256,1024`` runs only the JAX path at several batch sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bench.ftl_reference import PageFTL
from ssdx import params
from ssdx.models.gc import model as gc
from ssdx.models.gc import params as gc_params
from ssdx.report.machine import machine


def configs(n: int, pages: int, blocks: int, precondition: float = 0.0) -> gc_params.GcParams:
    """``n`` uniform-random greedy runs: spare factors 0.07-0.28 (golden-ratio sequence), seeds 0..n-1;
    ``precondition``: sequential fills of the written space before the pattern."""
    spare = 0.07 + 0.21 * ((np.arange(n) * 0.6180339887) % 1.0)
    cols = {f"gc.{k}": np.full(n, v, dtype=object) for k, v in dict(
        n_blocks=blocks, pages_per_block=pages, policy="greedy", d=10, pattern="uniform", hot_fraction=0.1,
        hot_share=0.9, trim_fraction=0.0, compressibility=1.0, precondition=precondition,
        round_fraction=1.0).items()}
    cols["gc.spare_factor"] = spare
    cols["gc.seed"] = np.arange(n)
    return gc_params.build(cols)


def python_loop(gp_one, blocks: int, pages: int, cycles: int) -> tuple[int, int]:
    """The FTL page by page in plain Python for one configuration (:class:`bench.ftl_reference.PageFTL`,
    greedy): (host pages, copies)."""
    n = np.arange(cycles * pages, dtype=np.int32)
    lpns = np.asarray(jax.jit(jax.vmap(lambda k: gc.logical_page(gp_one, gc.geometry(gp_one, blocks), k)))(n))
    lpns = lpns.tolist()
    ftl = PageFTL(blocks, int(gp_one.pages_per_block), pages)
    copies = 0
    for _ in range(cycles):
        copies += ftl.step(lpns, "greedy")[1]
    return ftl.host, copies


def time_metrics(gp_one, blocks: int, pages: int, rounds: int) -> dict[str, Any]:
    """``gc.metrics`` (the SNIA-rounds loop the CLI and sweeps run) on one configuration: cycles/s."""
    z = np.float32(1e-6)
    tm = gc.Timing(prog_s=z, read_s=z, erase_s=z, bus_s=z, host_s=z, page_bytes=np.float32(16384.0))
    fn = jax.jit(gc.metrics, static_argnums=(2, 3, 4, 5, 6))
    t0 = time.perf_counter()
    compiled = fn.lower(gp_one, tm, blocks, pages, rounds, 10_000_000, "greedy").compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(gp_one, tm))
    run_s = time.perf_counter() - t0
    return {"compile_s": compile_s, "run_s": run_s, "cycles": int(out["cycles"]),
            "write_amplification": float(out["write_amplification"])}


def _compiled(n_cfg: int, blocks: int, pages: int, cycles: int):
    def f(gp):
        _, out = gc.run(gp, blocks, pages, cycles, policy="greedy")
        return out.host.sum(-1), out.copies.sum(-1)

    fn = jax.jit(jax.vmap(f)) if n_cfg else jax.jit(f)
    return fn


def time_jax(gp, blocks: int, pages: int, cycles: int, repeats: int, batched: bool = True) -> dict[str, Any]:
    fn = _compiled(1 if batched else 0, blocks, pages, cycles)
    t0 = time.perf_counter()
    compiled = fn.lower(gp).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(gp))  # warm-up
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        host, copies = jax.block_until_ready(compiled(gp))
        runs.append(time.perf_counter() - t0)
    host, copies = np.asarray(host), np.asarray(copies)
    return {"compile_s": compile_s, "run_s": float(np.median(runs)), "runs_s": runs,
            "host_pages": int(host.sum()), "copies": int(copies.sum()), "host": host, "copies_each": copies}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=256, help="configurations N (default 256)")
    ap.add_argument("--cycles", type=int, default=4000, help="cycles (blocks written) per run (default 4000)")
    ap.add_argument("--blocks", type=int, default=256, help="blocks per scaled drive (default 256)")
    ap.add_argument("--pages", type=int, default=64, help="pages per block b (default 64)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median reported (default 3)")
    ap.add_argument("--loop-configs", type=int, default=2, help="python_loop sample (default 2)")
    ap.add_argument("--loop-cycles", type=int, default=1500, help="python_loop cycles (default 1500)")
    ap.add_argument("--single-configs", type=int, default=8, help="jax_single sample (default 8)")
    ap.add_argument("--metrics-blocks", type=int, default=1024, help="jax_metrics blocks (default 1024)")
    ap.add_argument("--metrics-rounds", type=int, default=16, help="jax_metrics SNIA rounds (default 16)")
    ap.add_argument("--sizes", default=None, help="comma list of N: JAX batch sizes only")
    ap.add_argument("--json", default=None, help="JSON path (default bench/results/gc_<platform>.json)")
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    result: dict[str, Any] = {
        "benchmark": "ssdx.models.gc.model NAND page writes per second", "machine": machine(),
        "device": {"kind": dev.device_kind, "platform": dev.platform, "count": jax.device_count(),
                   "jax": jax.__version__},
        "sizes": {"configs": a.configs, "cycles": a.cycles, "blocks": a.blocks, "pages_per_block": a.pages},
        "reference_c_simulator_pages_per_s": 1e7,
    }
    rows = []
    if a.sizes:
        for n in (int(x) for x in a.sizes.split(",")):
            r = time_jax(configs(n, a.pages, a.blocks), a.blocks, a.pages, a.cycles, a.repeats)
            nand = r["host_pages"] + r["copies"]
            rows.append({"engine": "jax_vmap", "configs": n, "compile_s": r["compile_s"],
                         "run_s": r["run_s"], "nand_pages_per_s": nand / r["run_s"],
                         "host_pages_per_s": r["host_pages"] / r["run_s"]})
    else:
        gp = configs(a.configs, a.pages, a.blocks)
        r = time_jax(gp, a.blocks, a.pages, a.cycles, a.repeats)
        nand = r["host_pages"] + r["copies"]
        jax_rate = nand / r["run_s"]
        rows.append({"engine": "jax_vmap", "configs": a.configs, "compile_s": r["compile_s"],
                     "run_s": r["run_s"], "nand_pages_per_s": jax_rate,
                     "host_pages_per_s": r["host_pages"] / r["run_s"]})
        # jax_single: one configuration per call
        k = min(a.single_configs, a.configs)
        one = params.index(gp, 0)
        rs = time_jax(one, a.blocks, a.pages, a.cycles, 1, batched=False)
        single = _compiled(0, a.blocks, a.pages, a.cycles).lower(one).compile()
        t0 = time.perf_counter()
        for i in range(k):
            jax.block_until_ready(single(params.index(gp, i)))
        single_s = (time.perf_counter() - t0) / k
        nand_one = a.cycles * a.pages
        rows.append({"engine": "jax_single", "configs": k, "compile_s": rs["compile_s"],
                     "run_s": single_s * a.configs, "nand_pages_per_s": nand_one / single_s,
                     "host_pages_per_s": None, "extrapolated_from": k})
        # python_loop: page by page, checked against the model
        m = min(a.loop_configs, a.configs)
        t0 = time.perf_counter()
        agree = True
        loop_pages = 0
        for i in range(m):
            gi = params.index(gp, i)
            host, copies = python_loop(gi, a.blocks, a.pages, a.loop_cycles)
            _, out = jax.jit(gc.run, static_argnums=(1, 2, 3, 5))(gi, a.blocks, a.pages, a.loop_cycles, None,
                                                                 "greedy")
            agree &= host == int(out.host.sum()) and copies == int(out.copies.sum())
            loop_pages += host + copies
        loop_s = time.perf_counter() - t0
        loop_rate = loop_pages / loop_s
        rows.append({"engine": "python_loop", "configs": m, "compile_s": 0.0, "run_s": nand / loop_rate,
                     "nand_pages_per_s": loop_rate, "host_pages_per_s": None, "extrapolated_from": m,
                     "exact_vs_model": bool(agree)})
        # jax_metrics: the SNIA-rounds loop on one configuration
        mr = time_metrics(params.index(configs(1, a.pages, a.metrics_blocks, precondition=2.0), 0),
                          a.metrics_blocks, a.pages, a.metrics_rounds)
        rows.append({"engine": "jax_metrics", "configs": 1, "compile_s": mr["compile_s"],
                     "run_s": mr["run_s"],
                     "nand_pages_per_s": mr["cycles"] * a.pages / mr["run_s"], "host_pages_per_s": None,
                     "blocks": a.metrics_blocks, "rounds": a.metrics_rounds, "cycles": mr["cycles"],
                     "us_per_cycle": 1e6 * mr["run_s"] / mr["cycles"],
                     "write_amplification": mr["write_amplification"]})
        for row in rows:
            row["jax_vmap_speedup"] = jax_rate / row["nand_pages_per_s"]
        wa = (r["host"] + r["copies_each"]) / r["host"]
        result["write_amplification_range"] = [float(wa.min()), float(wa.max())]
    result["rows"] = rows
    print(f"ssdx.models.gc.model: device {dev.platform}/{dev.device_kind}; jax {jax.__version__}; "
          f"{os.cpu_count()} CPUs; {a.blocks} blocks x {a.pages} pages, {a.cycles} cycles per run")
    print(f"{'engine':<12} {'configs':>8} {'compile_s':>10} {'run_s':>10} {'NAND pages/s':>14} {'vmap x':>8}")
    for row in rows:
        print(f"{row['engine']:<12} {row['configs']:>8} {row['compile_s']:>10.2f} {row['run_s']:>10.3f} "
              f"{row['nand_pages_per_s']:>14.3e} {row.get('jax_vmap_speedup', float('nan')):>8.1f}"
              + ("  (extrapolated)" if "extrapolated_from" in row else ""))
    out = Path(a.json or Path(__file__).with_name("results") / f"gc_{dev.platform}.json")
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    print(f"wrote {out}")
    return result


if __name__ == "__main__":
    main()
