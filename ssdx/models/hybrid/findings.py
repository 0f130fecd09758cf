"""The findings of Fukuchi et al. (SCM/NAND hybrid SSD with four NAND types; full version ISCAS 2018)
as figures of the hybrid model's results, and each finding checked on them.

IOPS relative to the 2D FG MLC drive per workload (:func:`relative`), the busiest resource of each run
(:func:`utilisation`), the steady-state check (:func:`steady_state`), the summary figures of the paper's
findings (:func:`findings`), the read/program ratio at which two NAND types cost a die the same
(:func:`balance_ratio`), and the findings checked one by one (:func:`validation_findings`).  The paper's
Table 2 (:data:`PAPER_TABLE2`) is the check, never an input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ssdx import catalog, params
from ssdx.models.hybrid import model as hybrid

TABLE1 = catalog.TABLE1_NAND
BASELINE = "2d_fg_mlc"
#: Fukuchi et al. Table 2: IOPS of SCM/3D CT TLC relative to SCM/2D FG MLC, percent
PAPER_TABLE2 = {"prxy_0": 6.7, "proj_0": 7.1, "hm_0": 5.3, "web_1": 6.4, "prxy_1": -0.1, "proj_3": 1.9,
                "src2_1": 3.6}
WRITE_INTENSIVE = ("prxy_0", "proj_0", "hm_0", "web_1")


def relative(df, value: str = "iops", by: Sequence[str] = ("workload.msr",),
             baseline: str = BASELINE) -> dict[str, dict[str, float]]:
    """``{workload: {nand: value / value of the baseline NAND}}`` for rows already at one SCM ratio."""
    out: dict[str, dict[str, float]] = {}
    for w, g in df.groupby(list(by)[0], sort=False):
        base = g.loc[g["hybrid.nand"] == baseline, value]
        if base.empty:
            raise params.ConfigError("sweep.space: hybrid.nand", sorted(set(g["hybrid.nand"])),
                                     f"must include the baseline {baseline} for relative IOPS")
        out[str(w)] = {str(r["hybrid.nand"]): float(r[value] / base.iloc[0]) for _, r in g.iterrows()}
    return out


def utilisation(df) -> dict[str, dict[str, dict[str, Any]]]:
    """``{workload: {nand: {die, channel, scm, link, bottleneck}}}``: busy shares of each resource over the
    measured window and the busiest one, for rows at one SCM size."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for w, g in df.groupby("workload.msr", sort=False):
        out[str(w)] = {str(r["hybrid.nand"]): {
            **{res: float(r[f"{res}_utilisation"]) for res in hybrid.RESOURCES},
            "bottleneck": hybrid.RESOURCES[int(r["bottleneck"])]} for _, r in g.iterrows()}
    return out


def steady_state(df) -> dict[str, Any]:
    """Whether every run's two measured halves agree within ``hybrid.STEADY_TOLERANCE`` in IOPS; the runs
    that do not, with the change from the first half to the second."""
    bad = df[df["steady"] < 0.5]
    cols = [c for c in ("workload.msr", "hybrid.nand", "hybrid.scm_ratio", "hybrid.scm_basis") if c in df]
    return {"tolerance": hybrid.STEADY_TOLERANCE, "all_steady": bool(bad.empty), "runs": len(df),
            "max_abs_change": float(np.abs(df["steady_change"]).max()) if len(df) else 0.0,
            "not_steady": [{**{c.split(".")[-1]: _plain(r[c]) for c in cols},
                            "change": float(r["steady_change"])} for _, r in bad.iterrows()]}


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


def findings(rel: Mapping[str, Mapping[str, float]],
             counts: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The paper's findings as summary figures of ``rel`` (Fukuchi et al. §3; :func:`validation_findings`
    checks them)."""
    ws = [w for w in rel if all(n in rel[w] for n in TABLE1)]
    if not ws:
        return {}
    ct = {w: 100 * (rel[w]["3d_ct_tlc"] - 1) for w in ws}
    worst = {w: min(TABLE1, key=lambda n: rel[w][n]) for w in ws}
    rw = [counts[w][BASELINE]["read_write_ratio"] for w in ws]
    x = np.log10(np.maximum(rw, 1e-6))
    y = np.array([ct[w] for w in ws])
    r = float(np.corrcoef(x, y)[0, 1]) if len(ws) > 2 and np.std(x) > 0 and np.std(y) > 0 else None
    return {
        "ct_tlc_vs_mlc_percent": ct,
        "paper_table2_percent": {w: PAPER_TABLE2[w] for w in ws if w in PAPER_TABLE2},
        "ct_tlc_best_on": [w for w in ws if max(TABLE1, key=lambda n: rel[w][n]) == "3d_ct_tlc"],
        "worst_nand": worst,
        "fg_tlc_3d_min_percent": float(min(100 * (rel[w]["3d_fg_tlc"] - 1) for w in ws)),
        "pearson_ct_gain_vs_log_nand_read_write_ratio": r,
    }


def balance_ratio(h: Mapping[str, Any], a: str = "3d_ct_tlc", b: str = BASELINE) -> float:
    """NAND page reads per page programmed at which NAND ``a`` and ``b`` cost a die the same time:
    ``(t_page,b − t_page,a) / (t_read,a − t_read,b)`` with ``t_page`` the program + GC die time per page
    (``ssdx.models.hybrid.model.die_seconds_per_page``).  Where the die array limits IOPS, ``a`` wins below
    it."""
    def cost(name: str) -> tuple[float, float]:
        m = catalog.nand(name)
        t, _ = hybrid.die_seconds_per_page(m.t_prog_us, m.t_read_us, m.t_erase_us, m.block_pages,
                                           float(h["nand_utilisation"]))
        return t, m.t_read_us * 1e-6

    (pa_, ra), (pb, rb) = cost(a), cost(b)
    return float((pb - pa_) / (ra - rb))


#: a characteristic "matters little" when it moves IOPS by at most this many percent
LITTLE_PERCENT = 3.0
#: "3D FG TLC falls up to 54 % below 2D FG MLC": held when its largest loss is within this many points
LOSS_MARGIN = 6.0
#: IOPS within this many percent count as a tie (Table 2's prxy_1, -0.1 %, is one)
TIE_PERCENT = 0.5


def _bound(util: Mapping[str, Mapping[str, Mapping[str, Any]]] | None, w: str, nands: Sequence[str]) -> str:
    """What limits workload ``w`` on the drives ``nands``: ``"link 1.00 / 1.00"``-style text."""
    if not util or w not in util:
        return ""
    u = [util[w][n] for n in nands if n in util[w]]
    if not u:
        return ""
    return " (bound by " + " / ".join(f'{x["bottleneck"]} {x[x["bottleneck"]]:.2f}' for x in u) + ")"


def validation_findings(rel: Mapping[str, Mapping[str, float]], change: Mapping[str, Mapping[str, float]],
                        rw_ratio: Mapping[str, float], util: Mapping[str, Any] | None = None
                        ) -> list[dict[str, Any]]:
    """The qualitative findings of Fukuchi et al. checked on the model's results: ``rel`` relative IOPS
    ``{workload: {nand: IOPS / IOPS of 2D FG MLC}}``, ``change`` the sensitivity cases ``{case: {workload:
    percent}}``, ``rw_ratio`` the NAND page reads per page programmed of each workload (2D FG MLC drive),
    ``util`` (optional) the utilisation table of :func:`utilisation`, quoted where a finding fails.
    Each finding: ``{name, holds, detail}``; the thresholds are :data:`LITTLE_PERCENT`,
    :data:`LOSS_MARGIN` and :data:`TIE_PERCENT`, fixed before any result was seen."""
    ws = list(rel)
    wi = [w for w in WRITE_INTENSIVE if w in rel]
    pct = {w: {n: 100 * (rel[w][n] - 1) for n in rel[w]} for w in ws}

    def strictly(w: str, nand: str, better: bool) -> bool:
        others = [pct[w][n] for n in pct[w] if n != nand]
        if better:
            return pct[w][nand] > max(others) + TIE_PERCENT
        return pct[w][nand] < min(others) - TIE_PERCENT

    def gains(nand: str) -> str:
        return ", ".join(f"{w} {pct[w][nand]:+.1f} %" for w in wi)

    def spread(w: str) -> str:
        return f"{w}: " + ", ".join(f"{n} {pct[w][n]:+.1f} %" for n in TABLE1 if n in pct[w]) + _bound(
            util, w, (BASELINE, "3d_ct_tlc"))

    out = []
    miss = [w for w in wi if not strictly(w, "3d_ct_tlc", True)]
    out.append({"name": "3d_ct_tlc_best_on_write_intensive", "holds": not miss,
                "detail": "3D CT TLC vs 2D FG MLC: " + gains("3d_ct_tlc")
                + (f"; not strictly best (by > {TIE_PERCENT:g} %) on " + "; ".join(spread(w) for w in miss)
                   if miss else "")})
    miss = [w for w in wi if not strictly(w, "2d_fg_tlc", False)]
    out.append({"name": "2d_fg_tlc_worst_on_write_intensive", "holds": not miss,
                "detail": "2D FG TLC vs 2D FG MLC: " + gains("2d_fg_tlc")
                + ("; not strictly worst on " + "; ".join(spread(w) for w in miss) if miss else "")})
    loss = {w: -pct[w]["3d_fg_tlc"] for w in ws}
    top = max(loss, key=loss.get)
    out.append({"name": "3d_fg_tlc_loss_at_most_about_54_percent", "holds": loss[top] <= 54.0 + LOSS_MARGIN,
                "detail": f"largest loss of 3D FG TLC against 2D FG MLC {loss[top]:.1f} % ({top}); paper: up "
                          f"to 54 %; held within {LOSS_MARGIN:g} points"})

    def ex(c: str, skip: Sequence[str] = ()) -> float:
        return max((abs(v) for w, v in change[c].items() if w not in skip), default=0.0)

    fmt = lambda d: ", ".join(f"{k} {v:+.2f} %" for k, v in d.items())  # noqa: E731
    out.append({"name": "block_size_changes_iops_little", "holds": ex("block_size") <= LITTLE_PERCENT,
                "detail": f"largest |change| {ex('block_size'):.2f} % (little: <= {LITTLE_PERCENT:g} %); "
                          + fmt(change["block_size"])})
    out.append({"name": "write_unit_changes_iops_little_except_proj_3",
                "holds": ex("write_unit", ("proj_3",)) <= LITTLE_PERCENT,
                "detail": f"largest |change| without proj_3 {ex('write_unit', ('proj_3',)):.2f} %; "
                          + fmt(change["write_unit"])})
    out.append({"name": "latency_matters_most",
                "holds": ex("latency") > max(ex("block_size"), ex("write_unit")),
                "detail": f"largest |change|: latency {ex('latency'):.2f} %, block size "
                          f"{ex('block_size'):.2f} %, write unit {ex('write_unit'):.2f} % (paper: latency up "
                          "to 6.0 %)"})
    xs = [w for w in ws if rw_ratio.get(w) is not None and np.isfinite(rw_ratio[w]) and rw_ratio[w] > 0]
    r = float("nan")
    if len(xs) > 2:
        x = np.log10([rw_ratio[w] for w in xs])
        y = np.array([pct[w]["3d_ct_tlc"] for w in xs])
        if np.std(x) > 0 and np.std(y) > 0:
            r = float(np.corrcoef(x, y)[0, 1])
    out.append({"name": "relative_iops_falls_as_nand_read_write_ratio_rises", "holds": bool(r < 0),
                "detail": f"Pearson r between log10(NAND reads / programs) and 3D CT TLC's gain = {r:.2f} "
                          f"over {len(xs)} workloads with NAND programs; ratios: "
                          + ", ".join(f"{w} {rw_ratio[w]:.3g}" for w in xs)})

    def sign(x: float) -> int:
        return 0 if abs(x) < TIE_PERCENT else int(np.sign(x))

    paper = [w for w in ws if w in PAPER_TABLE2]
    agree = [w for w in paper if sign(pct[w]["3d_ct_tlc"]) == sign(PAPER_TABLE2[w])]
    off = [w for w in paper if w not in agree]
    out.append({"name": "table2_signs_agree_on_at_least_6_of_7",
                "holds": bool(paper) and len(agree) >= min(6, len(paper)),
                "detail": f"{len(agree)} of {len(paper)} volumes (|x| < {TIE_PERCENT:g} % counts as a tie); "
                          "model vs paper: "
                          + ", ".join(f"{w} {pct[w]['3d_ct_tlc']:+.1f} / {PAPER_TABLE2[w]:+.1f} %"
                                      for w in paper)
                          + ("; differing: " + "; ".join(spread(w) for w in off) if off else "")})
    return out
