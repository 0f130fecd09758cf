"""The GC jobs behind the CLI: steady-state write amplification (``task=wa``) and fill curves (``gc_fill``).

Each takes a composed config as plain containers and an output directory, writes its files there and
returns the summary it wrote (see ``ssdx.cli.main`` for the contract).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ssdx import params
from ssdx.core import io
from ssdx.models.gc import model as gc
from ssdx.models.gc import params as gc_params
from ssdx.models.gc import plots as gc_report
from ssdx.models.gc import wa_analytic


def gc_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gc`` block with ``pages_per_block`` resolved (null: the drive NAND's effective pages per block,
    ``nand.block_pages`` where overridden, else the catalog's)."""
    g = dict(cfg["gc"])
    if g.get("pages_per_block") is None:
        cols = {"drive.nand": np.asarray([cfg["drive"]["nand"]]), **params.nand_columns(cfg.get("nand"))}
        g["pages_per_block"] = int(round(params.nand_value(cols, "block_pages")[0]))
    return g


def setup(cfg: Mapping[str, Any], dtype=np.float32) -> tuple[gc_params.GcParams, gc.Timing, dict]:
    """Scalar :class:`GcParams`, the drive's :class:`gc.Timing` and the static sizes of one run."""
    g = gc_config(cfg)
    cols = gc_params.columns(g)
    gp = params.index(gc_params.build(cols, dtype=dtype), 0)
    dcols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    drive, workload = (params.index(x, 0) for x in params.build(dcols, dtype=dtype))
    rounds = gc_params.n_rounds(g["rounds"])
    static = {"n_blocks": int(g["n_blocks"]), "max_pages": int(g["pages_per_block"]), "n_rounds": rounds,
              "max_cycles": max_cycles(g, rounds)}
    return gp, gc.timing(drive, workload), static


def max_cycles(g: Mapping[str, Any], rounds: int) -> int:
    """A safe bound on the cycles a run needs: host pages × (FIFO WA of the effective spare, ×2) / b."""
    s_eff = wa_analytic.effective_spare(float(g["spare_factor"]), float(g["trim_fraction"]),
                                        float(g["compressibility"]))
    wa = wa_analytic.fifo_wa(min(max(s_eff, 1e-3), 0.999))
    b = int(g["pages_per_block"])
    written = (1 - float(g["spare_factor"])) * int(g["n_blocks"]) * b
    host = written * (float(g["precondition"]) + rounds * float(g["round_fraction"]))
    return int(math.ceil(host * 2.0 * max(wa, 1.0) / b)) + 4 * int(g["n_blocks"])


def sweep_model(cols: Mapping[str, np.ndarray], sweep: Mapping[str, Any], base_cfg: Mapping[str, Any],
                dtype=np.float32):
    """Trees, policy groups and model factory for ``ssdx.sweep.runner.run`` (sweeps with ``model: gc``).

    Configurations are grouped by GC policy (a static choice: one scan of the blocks per cycle instead
    of four); ``gc.n_blocks`` must be one value (it sizes the arrays), ``max_pages`` is the largest
    ``gc.pages_per_block``; ``rounds`` comes from ``sweep.rounds`` or the ``gc`` config.  Metrics are
    :func:`ssdx.models.gc.model.metrics`' scalars (per-round arrays are left out of the table).
    Returns ``(trees, groups, model, n_rounds)``.
    """
    blocks = np.unique(np.asarray(cols["gc.n_blocks"]).astype(int))
    if len(blocks) != 1:
        raise params.ConfigError("gc.n_blocks", blocks.tolist(), "one value per sweep (it sizes the arrays)")
    n_blocks = int(blocks[0])
    max_pages = int(np.max(np.asarray(cols["gc.pages_per_block"]).astype(int)))
    n_rounds = gc_params.n_rounds(sweep.get("rounds", base_cfg["gc"]["rounds"]), "sweep.rounds")
    n = len(cols["gc.policy"])
    keys = [k[3:] for k in cols if k.startswith("gc.")]
    bound = max(max_cycles({k: np.asarray(cols[f"gc.{k}"])[i] for k in keys}, n_rounds) for i in range(n))
    gp = gc_params.build(cols, dtype=dtype)
    drive, workload = params.build(cols, dtype=dtype)
    policies = np.asarray(cols["gc.policy"]).astype(str)
    groups = [(name, np.flatnonzero(policies == name)) for name in gc_params.POLICIES
              if np.any(policies == name)]

    def model(policy: str):
        def f(g, d, w):
            m = gc.metrics(g, gc.timing(d, w), n_blocks, max_pages, n_rounds, bound, policy)
            return {k: v for k, v in m.items() if v.ndim == 0}
        return f

    return (gp, drive, workload), groups, model, n_rounds


def analytic(g: Mapping[str, Any]) -> tuple[float | None, str]:
    """The closed-form WA that applies to this run (uniform greedy/FIFO, hot/cold FIFO), or None."""
    c = float(g["compressibility"])
    s_c = wa_analytic.effective_spare(float(g["spare_factor"]), float(g["trim_fraction"]), c)
    if g["pattern"] == "uniform" and g["policy"] == "greedy":
        return c * wa_analytic.greedy_wa(s_c, int(g["pages_per_block"])), "greedy mean field (Van Houdt 2013)"
    if g["pattern"] == "uniform" and g["policy"] == "fifo":
        return c * wa_analytic.fifo_wa(s_c), "FIFO/LRU, Lambert W (Desnoyers 2014)"
    if g["pattern"] == "hot_cold" and g["policy"] == "fifo":
        return c * wa_analytic.hot_cold_fifo_wa(s_c, float(g["hot_fraction"]), float(g["hot_share"])), \
            "hot/cold FIFO (Desnoyers 2014)"
    if g["pattern"] == "sequential":
        return c * 1.0, "sequential overwrite: whole blocks invalidate in write order"
    return None, "no closed form for this policy and pattern"


def run_wa(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """Steady-state write amplification of one configuration: ``summary.json`` and ``wa_rounds.png``."""
    dtype = io.dtype(cfg.get("precision", "float32"))
    gp, tm, st = setup(cfg, dtype)
    f = jax.jit(gc.metrics, static_argnames=("n_blocks", "max_pages", "n_rounds", "max_cycles"))
    m = jax.tree_util.tree_map(np.asarray, f(gp, tm, **st))
    g = gc_config(cfg)
    ana, ana_name = analytic(g)
    first = int(m["steady_state_round"])
    wa = float(m["write_amplification"])
    summary = {
        "drive": cfg["drive"].get("name", "custom"),
        **{k: g[k] for k in ("policy", "pattern", "spare_factor", "pages_per_block", "n_blocks",
                             "trim_fraction", "compressibility", "hot_fraction", "hot_share", "rounds",
                             "round_fraction", "precondition")},
        "write_amplification": wa,
        "steady_state_round": first if first > 0 else None,
        "steady_state_reached": first > 0,
        "analytic_write_amplification": ana,
        "analytic_model": ana_name,
        "relative_error": (wa / ana - 1.0) if ana else None,
        "precondition_wa": float(m["precondition_wa"]),
        "mb_s": float(m["mb_s"]),
        "wa_rounds": m["wa_rounds"].tolist(),
        "mb_s_rounds": m["mb_s_rounds"].tolist(),
        "erases_per_host_page": float(m["erases_per_host_page"]),
        "complete": bool(m["complete"]),
        "cycles": int(m["cycles"]),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    gc_report.plot_wa_rounds(summary, out_dir / "wa_rounds.png")
    return summary


# ---------------------------------------------------------------------------------------------- fill

def lifetime_throttle(duration_s: np.ndarray, host_bytes: np.ndarray, limit_b_s: float,
                      credit_bytes: float, t0: float = 0.0, written0: float = 0.0) -> np.ndarray:
    """End times of consecutive writes under a lifetime write limit (SandForce "life-time performance
    throttling", a reader's comment on "On the write slowdown of the TOSHIBA THNSNS120GBSP" (a Japanese blog
    post and its reader comments)): by power-on time ``t`` the drive accepts at most ``credit + limit·t``
    bytes in its life, so a write ends no earlier than its physics allows nor before its bytes fit the
    allowance.  ``limit_b_s`` 0 disables it.  Secure erase does not reset it (callers carry ``t0`` and
    ``written0`` across erases).  Returns the end time of each write, s.
    """
    ends = np.empty(len(duration_s))
    t, w = t0, written0
    for i, (d, h) in enumerate(zip(duration_s, host_bytes)):
        w += h
        t = t + d if limit_b_s <= 0 else max(t + d, (w - credit_bytes) / limit_b_s)
        ends[i] = t
    return ends


def _drive(cfg: Mapping[str, Any], dtype):
    dcols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    return tuple(params.index(x, 0) for x in params.build(dcols, dtype=dtype))


def run_gc_fill(cfg: Mapping[str, Any], out_dir: Path) -> dict[str, Any]:
    """IOMeter-style timed write sets on a drive whose GC is simulated (module ``gc``), after "On the write
    slowdown of the TOSHIBA THNSNS120GBSP" (a Japanese blog post and its reader comments).

    The drive (``drive``) is scaled down to ``gc.n_blocks`` blocks with its own spare factor
    ``1 − user / (raw·(1 − reserve))`` and NAND pages per block; bytes and seconds scale back by the
    block ratio (speeds are unchanged by the scaling).  Phases: secure erase; optionally
    ``fill.random_fill`` × the user capacity of uniform random writes (untimed preconditioning);
    ``fill.sets`` sets of ``fill.set_s`` seconds of the workload (``workload.pattern``, block size); then
    a secure erase and ``fill.sets_after_erase`` more sets.  Writes ``summary.json`` and
    ``fill_sets.png`` (speed and total written against time, the blog post's figure).  The summary's
    ``gc_onset_gib`` is the host GiB the test had written when GC first erased a block: 0.0 when it
    erased from the test's first cycle (a preconditioning that left no free blocks), null when it never
    erased during the test.
    """
    dtype = io.dtype(cfg.get("precision", "float32"))
    drive, workload = _drive(cfg, dtype)
    fill = dict(cfg["fill"])
    page = float(drive.nand.page_bytes)
    b = int(round(float(drive.nand.block_bytes) / page))
    usable = float(drive.raw_bytes) * (1.0 - float(drive.reserve_fraction))
    user = float(drive.user_bytes)
    n_blocks = int(cfg["gc"]["n_blocks"])
    scale = usable / (n_blocks * b * page)
    spare = 1.0 - user / usable
    g = {**gc_config({**cfg, "gc": {**cfg["gc"], "pages_per_block": b}}), "spare_factor": spare,
         "precondition": 0.0}
    pattern = "sequential" if cfg["workload"]["pattern"] == "sequential" else "uniform"
    gp_test = params.index(gc_params.build(gc_params.columns({**g, "pattern": pattern})), 0)
    gp_rand = params.index(gc_params.build(gc_params.columns({**g, "pattern": "uniform"})), 0)
    tm = gc.timing(drive, workload)
    policy = str(g["policy"])
    chunk, max_chunks = 256, 20_000

    @jax.jit
    def step(gp, state):
        state, out = gc.run(gp, n_blocks, b, chunk, state=state, policy=policy)
        return state, out, gc.cycle_time(tm, gp, out)

    def run_for(gp, state, until):
        """Cycles from ``state`` until ``until(host_pages_total, seconds_total)``; per-cycle arrays."""
        outs, t_sim = [], 0.0
        while not outs or not until(int(state.host), t_sim * scale):
            if len(outs) == max_chunks:
                raise RuntimeError(f"the fill did not reach its target within {max_chunks * chunk} cycles "
                                   "(a drive that cannot free space: check gc.spare_factor)")
            state, out, dur = jax.device_get(step(gp, state))
            outs.append((out.host, out.copies, out.erases, dur))
            t_sim += float(dur.sum())
        return state, [np.concatenate(x) for x in zip(*outs)]

    comp = float(g["compressibility"])
    st = gc.init(n_blocks, b)
    if float(fill["random_fill"]) > 0:
        target = float(fill["random_fill"]) * gc.geometry(gp_rand, n_blocks).written
        st, _ = run_for(gp_rand, st, lambda h, t: h >= target)
    set_s, sets, after = float(fill["set_s"]), int(fill["sets"]), int(fill["sets_after_erase"])
    st, (h1, c1, e1, d1) = run_for(gp_test, st, lambda h, t: t >= sets * set_s)
    _, (h2, c2, e2, d2) = run_for(gp_test, gc.init(n_blocks, b), lambda h, t: t >= after * set_s)
    limit, credit = float(fill["lifetime_limit_mb_s"]) * 1e6, float(fill["lifetime_credit_gb"]) * 1e9
    # phase 1, then phase 2 on its own clock after the erase; the lifetime allowance runs on through both
    b1, b2 = h1 / comp * page * scale, h2 / comp * page * scale
    ends1 = lifetime_throttle(d1 * scale, b1, limit, credit)
    ends2 = lifetime_throttle(d2 * scale, b2, limit, credit, t0=ends1[-1], written0=b1.sum()) - ends1[-1]

    def sets_of(ends, host_bytes, n):
        edges = np.arange(n + 1) * set_s
        at = np.interp(edges, np.r_[0.0, ends], np.r_[0.0, np.cumsum(host_bytes)])
        return np.diff(at) / set_s / 1e6, at[1:]

    sp1, at1 = sets_of(ends1, b1, sets)
    sp2, at2 = sets_of(ends2, b2, after)
    speed = np.r_[sp1, sp2]
    total_gib = np.r_[at1, at1[-1] + at2] / 2**30
    first_gc = int(np.argmax(e1 > 0)) if np.any(e1 > 0) else None
    gc_onset_gib = None  # host GiB written when GC first erases: None if it never did, 0.0 from the start
    if first_gc is not None:
        gc_onset_gib = float(np.cumsum(b1)[first_gc - 1] / 2**30) if first_gc else 0.0
    fresh = float(sp1[0])
    slow = np.flatnonzero(sp1 < 0.9 * fresh)
    onset_set = int(slow[0]) if len(slow) else None
    if onset_set is not None:
        after_sets = sp1[onset_set + 1:]
    elif first_gc:
        after_sets = sp1[int(np.searchsorted(total_gib[:sets], gc_onset_gib)) + 1:]
    else:
        after_sets = np.array([])
    wa1 = comp * (h1.sum() + c1.sum()) / max(h1.sum(), 1)
    summary = {
        "drive": cfg["drive"].get("name", "custom"),
        "pattern": pattern,
        "block_kib": float(cfg["workload"]["block_kib"]),
        "random_fill": float(fill["random_fill"]),
        "spare_factor": spare,
        "scale_blocks": scale,
        "fresh_mb_s": fresh,
        "after_drop_mb_s": float(after_sets.mean()) if len(after_sets) else None,
        "drop_onset_gib": float(total_gib[onset_set - 1]) if onset_set else None,  # end of the last fast set
        "gc_onset_gib": gc_onset_gib,
        "restored_mb_s": float(sp2[0]) if after else None,
        "write_amplification": float(wa1),
        "user_gib": user / 2**30,
        "usable_physical_gib": usable / 2**30,
        "set_s": set_s,
        "set_mb_s": speed.tolist(),
        "set_total_gib": total_gib.tolist(),
        "erase_at_set": sets,
        "lifetime_limit_mb_s": float(fill["lifetime_limit_mb_s"]),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    io.write_json(out_dir / "summary.json", summary)
    gc_report.plot_fill_sets(summary, out_dir / "fill_sets.png")
    return summary
