"""The memory floor of the request engine on a GPU: bytes per configuration-request against HBM bandwidth.

A closed-form count, not a timing: no GPU is needed.  For the batch of ``bench.engine`` (four drive
shapes × QD 1-32, the default engine options) it sums the bytes of every leaf of the batched step's
plan (``Plan``, read each request), state (``State``) and accumulators (``Acc``) per configuration, from
the arrays the engine itself builds.  The batched JAX step (``ssdx.models.engine.model``) runs as a
``lax.scan`` whose carry stays in device memory between XLA kernels, so each request reads the dense
parts of the state and the accumulators and writes them back, and reads the plan: at least

    bytes per configuration-request = 2 × (dense state + dense accumulators) + plan

where *dense* leaves the sparse ones out (the latency histogram and, with the mechanisms off, the
mapping-cache tables: one element of each is touched per request).  Dividing HBM bandwidth by it gives
the most configuration-requests per second that layout can reach, however good the kernels.

The per-configuration loop (``ssdx.models.engine.cuda``, one GPU thread per configuration) instead
keeps one configuration's state in its own memory and visits only the dies a request uses; its whole
state for a batch is compared with the GPU's L2 cache, which it can stay in.

HBM bandwidths and L2 sizes are NVIDIA's datasheet figures (NVIDIA H100 Tensor Core GPU datasheet: H100
SXM 3.35 TB/s, H100 PCIe 2.0 TB/s, 50 MB L2; NVIDIA H200 datasheet: 4.8 TB/s).

Usage: ``python -m bench.engine_floor [--configs N] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bench.engine import columns
from ssdx.models.engine import cpu as engine_cpu
from ssdx.models.engine import model as engine
from ssdx.models.engine import params as engine_params
from ssdx.report.machine import machine

#: device -> (HBM bytes/s, L2 bytes), from the datasheets named in the module docstring
DEVICES = {"H100 SXM": (3.35e12, 50e6), "H100 PCIe": (2.0e12, 50e6), "H200": (4.8e12, 50e6)}
#: leaves touched at one element per request (not dense) with the mechanisms off
SPARSE_STATE = ("tags", "map_age", "map_dirty")
SPARSE_ACC = ("hist",)
GOAL = 1e9  # configuration-requests/s on one H100


def _per_config(tree: Any, n: int) -> dict[str, int]:
    """Bytes of each leaf of a batched tree (configurations on the last axis) per configuration."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        name = ".".join(str(getattr(k, "name", k)) for k in path)
        a = np.asarray(leaf)
        out[name] = int(a.nbytes // n)
    return out


def count(n: int) -> dict[str, Any]:
    """The byte counts of a batch of ``n`` configurations of ``bench.engine``'s columns."""
    cols = columns(n)
    drive, workload, eng, lay = engine_params.build(cols)
    p = jax.tree_util.tree_map(np.asarray, engine.plan_batch(drive, workload, eng, lay))
    s = jax.tree_util.tree_map(np.asarray, engine.init(p, lay))
    acc = jax.tree_util.tree_map(np.asarray, engine.zero_acc(p, lay))
    plan_b, state_b, acc_b = _per_config(p, n), _per_config(s, n), _per_config(acc, n)
    dense_state = sum(v for k, v in state_b.items() if k.split(".")[0] not in SPARSE_STATE)
    dense_acc = sum(v for k, v in acc_b.items() if k.split(".")[0] not in SPARSE_ACC)
    plan_total = sum(plan_b.values())
    floor = 2 * (dense_state + dense_acc) + plan_total
    loop_state = engine_cpu.pack_plan(p, lay).nbytes // n + sum(state_b.values()) * 2  # float64 copies
    rates = {d: bw / floor for d, (bw, _) in DEVICES.items()}
    return {
        "layout": lay._asdict(),
        "bytes_per_config": {"plan": plan_total, "state": sum(state_b.values()), "state_dense": dense_state,
                             "acc": sum(acc_b.values()), "acc_dense": dense_acc},
        "largest_leaves": sorted(({**{"leaf": f"state.{k}"}, "bytes": v} for k, v in state_b.items()),
                                 key=lambda r: -r["bytes"])[:6],
        "floor_bytes_per_config_request": floor,
        "jax_batch_max_config_requests_per_s": rates,
        "goal_config_requests_per_s": GOAL,
        "cuda_loop_state_bytes_per_config": int(loop_state),
        "cuda_loop_configs_in_l2": {d: int(l2 // loop_state) for d, (_, l2) in DEVICES.items()},
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--configs", type=int, default=96, help="configurations N (default 96)")
    ap.add_argument("--json", type=Path, default=None, help="where to write the JSON")
    a = ap.parse_args(argv)
    res = {"benchmark": "engine_floor", "machine": machine(), "device": "none (a count, not a timing)",
           "sizes": {"configs": a.configs}, "baseline": "HBM bandwidth of the named GPU (datasheet)",
           **count(a.configs)}
    b = res["bytes_per_config"]
    print(f"per configuration: plan {b['plan']} B, state {b['state']} B (dense {b['state_dense']} B), "
          f"accumulators {b['acc']} B (dense {b['acc_dense']} B)")
    print(f"jax_batch floor: {res['floor_bytes_per_config_request']} B per configuration-request")
    print(f"{'device':<10} {'max config-req/s':>18} {'vs 1e9 goal':>12} {'cuda_loop configs in L2':>24}")
    for d, r in res["jax_batch_max_config_requests_per_s"].items():
        print(f"{d:<10} {r:>18.3e} {r / GOAL:>12.2f} {res['cuda_loop_configs_in_l2'][d]:>24,}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=1) + "\n")
        print(f"json: {a.json}")
    return res


if __name__ == "__main__":
    main()
