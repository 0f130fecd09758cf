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

from ssdx import gc_params, params
from ssdx.models import gc, wa_analytic
from ssdx.tasks import _dtype, _write_json


def gc_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gc`` block with ``pages_per_block`` resolved (null: the drive NAND's block / page)."""
    g = dict(cfg["gc"])
    if g.get("pages_per_block") is None:
        from ssdx import catalog

        nand = catalog.nand(cfg["drive"]["nand"])
        g["pages_per_block"] = int(round(nand.block_bytes / nand.page_bytes))
    return g


def setup(cfg: Mapping[str, Any], dtype=np.float32) -> tuple[gc_params.GcParams, gc.Timing, dict]:
    """Scalar :class:`GcParams`, the drive's :class:`gc.Timing` and the static sizes of one run."""
    g = gc_config(cfg)
    cols = gc_params.columns(g)
    gp = params.index(gc_params.build(cols, dtype=dtype), 0)
    dcols = params.columns_from_config(cfg["drive"], cfg["workload"], cfg.get("nand"))
    drive, workload = (params.index(x, 0) for x in params.build(dcols, dtype=dtype))
    rounds = int(g["rounds"])
    if not 5 <= rounds <= 10_000:
        raise params.ConfigError("gc.rounds", rounds, "integer 5 <= x <= 10000 (SNIA needs a 5-round window)")
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
    dtype = _dtype(cfg.get("precision", "float32"))
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
    _write_json(out_dir / "summary.json", summary)
    _plot_rounds(summary, out_dir / "wa_rounds.png")
    return summary


def _plot_rounds(s: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = np.arange(1, len(s["wa_rounds"]) + 1)
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True, layout="constrained")
    a1.plot(r, s["wa_rounds"], "o-", ms=3, label="simulated, per round")
    if s["analytic_write_amplification"]:
        a1.axhline(s["analytic_write_amplification"], color="k", ls="--", lw=1,
                   label=f'{s["analytic_model"]}: {s["analytic_write_amplification"]:.3f}')
    a1.set_ylabel("write amplification")
    a1.legend(fontsize=8)
    a2.plot(r, s["mb_s_rounds"], "o-", ms=3, color="tab:green")
    a2.set_ylabel("host write MB/s")
    a2.set_xlabel("SNIA round (after preconditioning)")
    if s["steady_state_round"]:
        for ax in (a1, a2):
            ax.axvspan(s["steady_state_round"] - 4 - 0.5, s["steady_state_round"] + 0.5, color="tab:orange",
                       alpha=0.15, label="first steady-state window")
        a2.legend(fontsize=8)
    a1.set_title(f'{s["policy"]}, {s["pattern"]}, S_f = {s["spare_factor"]:g}, b = {s["pages_per_block"]}, '
                 f'{s["n_blocks"]} blocks')
    fig.savefig(path, dpi=120)
    plt.close(fig)
