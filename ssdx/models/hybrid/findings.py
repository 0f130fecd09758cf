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


def unsteady_reason(r: Mapping[str, Any]) -> str:
    """Why a run (a results row) is not steady: its busiest resource booked above
    ``hybrid.MAX_UTILISATION`` of the window, or its two halves differ; ``""`` when it is steady."""
    out = []
    if float(r.get("overbooked", 0.0)) > 0.5:
        res = hybrid.RESOURCES[int(r["bottleneck"])]
        out.append(f"{res} booked {float(r['utilisation_max']):.2f} of the window (work left at its end; "
                   f"limit {hybrid.MAX_UTILISATION:g})")
    if float(r.get("halves_agree", 1.0)) < 0.5:
        what = ("the busiest resource's share" if float(r["utilisation_max"]) >= hybrid.SATURATED
                else "IOPS")
        out.append(f"halves differ by {100 * float(r['steady_change']):+.1f} % in {what} "
                   f"(limit {100 * hybrid.STEADY_TOLERANCE:g} %)")
    return "; ".join(out)


def steady_state(df) -> dict[str, Any]:
    """Whether every run is steady (``ssdx.models.hybrid.model.metrics``: halves within
    ``hybrid.STEADY_TOLERANCE`` and no resource above ``hybrid.MAX_UTILISATION``); the runs that are not,
    with the change from the first half to the second and the reason."""
    bad = df[df["steady"] < 0.5]
    cols = [c for c in ("workload.msr", "case", "hybrid.nand", "hybrid.scm_ratio", "hybrid.scm_basis")
            if c in df]
    return {"tolerance": hybrid.STEADY_TOLERANCE, "max_utilisation": hybrid.MAX_UTILISATION,
            "all_steady": bool(bad.empty), "runs": len(df),
            "max_abs_change": float(np.abs(df["steady_change"]).max()) if len(df) else 0.0,
            "not_steady": [{**{c.split(".")[-1]: _plain(r[c]) for c in cols},
                            "change": float(r["steady_change"]), "reason": unsteady_reason(r)}
                           for _, r in bad.iterrows()]}


def excluded(rows, streams: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``{workload: reason}`` for the workloads whose Table 1 runs cannot carry a finding: a stream not
    ``warmed`` (the SCM never filled, or its threshold space never cycled, before the window) or a run not
    steady (:func:`unsteady_reason`).  ``rows``: the results of the four Table 1 NAND types."""
    out: dict[str, str] = {}
    for st in streams:
        if not st.get("warmed", True):
            fill, resident = st.get("fill_requests"), st.get("resident_lines") is not None
            why = ("its working set fits the SCM, but its first touches stayed above the resident share"
                   if resident else "the SCM never filled within the stream" if fill is None
                   else "its threshold space did not cycle once before the window")
            out[str(st["workload"])] = (f"not warmed: {why} ({st.get('warmup_requests')} warm-up requests "
                                        f"of a {st.get('lines')}-line stream)")
    for w, g in rows.groupby("workload.msr", sort=False):
        bad = [f"{r['hybrid.nand']}: {unsteady_reason(r)}" for _, r in g.iterrows() if r["steady"] < 0.5]
        if bad:
            out[str(w)] = "; ".join(filter(None, [out.get(str(w)), "not steady: " + "; ".join(bad)]))
    return out


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
#: "3D FG TLC falls up to 54 % below 2D FG MLC": held when its largest loss is within this many points of it
LOSS_MARGIN = 10.0
#: the paper's largest loss of 3D FG TLC against 2D FG MLC, percent
PAPER_FG_TLC_LOSS = 54.0
#: "prxy_1": the paper's -0.1 % is a tie; held when 3D CT TLC is within this many percent of 2D FG MLC
PRXY_1_TIE_PERCENT = 2.0
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
                        rw_ratio: Mapping[str, float], util: Mapping[str, Any] | None = None,
                        excluded: Mapping[str, str] | None = None,
                        staging: Mapping[str, Mapping[str, float]] | None = None,
                        balance: float | None = None, loss_bound: float | None = None
                        ) -> list[dict[str, Any]]:
    """The qualitative findings of Fukuchi et al. checked on the model's results: ``rel`` relative IOPS
    ``{workload: {nand: IOPS / IOPS of 2D FG MLC}}``, ``change`` the sensitivity cases ``{case: {workload:
    percent}}``, ``rw_ratio`` the NAND page reads per page programmed of each workload (2D FG MLC drive),
    ``util`` (optional) the utilisation table of :func:`utilisation`, quoted where a finding fails.
    ``excluded`` ``{workload: reason}`` (:func:`excluded`): those workloads carry no finding and are named
    with their reason.  ``staging`` ``{workload: {nand: percent}}``: the FG TLC types against 2D FG MLC with
    whole-block staging, ``balance`` the read/program ratio at which 3D CT TLC and 2D FG MLC cost a die the
    same (:func:`balance_ratio`) and ``loss_bound`` the largest loss (percent) of 3D FG TLC where the dies
    limit, quoted to explain a result.  Each finding: ``{name, holds, detail}``; the thresholds are
    :data:`LITTLE_PERCENT`, :data:`LOSS_MARGIN`, :data:`PRXY_1_TIE_PERCENT` and :data:`TIE_PERCENT`, fixed
    before any result was seen."""
    excl = dict(excluded or {})
    ws = [w for w in rel if w not in excl]
    wi = [w for w in WRITE_INTENSIVE if w in ws]
    pct = {w: {n: 100 * (rel[w][n] - 1) for n in rel[w]} for w in rel}
    note = lambda names: ("; not checked: " + "; ".join(f"{w} ({excl[w]})" for w in names)  # noqa: E731
                          if names else "")
    wi_out = [w for w in WRITE_INTENSIVE if w in excl]

    def strictly(w: str, nand: str, better: bool) -> bool:
        others = [pct[w][n] for n in pct[w] if n != nand]
        if better:
            return pct[w][nand] > max(others) + TIE_PERCENT
        return pct[w][nand] < min(others) - TIE_PERCENT

    def gains(nand: str) -> str:
        return ", ".join(f"{w} {pct[w][nand]:+.1f} %" for w in wi)

    def stats(w: str) -> str:
        r = rw_ratio.get(w)
        if balance is None or r is None or not np.isfinite(r):
            return ""
        return f"; NAND reads per page programmed {r:.3g} (3D CT TLC and 2D FG MLC cost a die the same at " \
               f"{balance:.3g})"

    def spread(w: str) -> str:
        return f"{w}: " + ", ".join(f"{n} {pct[w][n]:+.1f} %" for n in TABLE1 if n in pct[w]) + _bound(
            util, w, (BASELINE, "3d_ct_tlc")) + stats(w)

    out = []
    miss = [w for w in wi if not strictly(w, "3d_ct_tlc", True)]
    out.append({"name": "3d_ct_tlc_best_on_write_intensive", "holds": bool(wi) and not miss,
                "detail": "3D CT TLC vs 2D FG MLC: " + gains("3d_ct_tlc")
                + (f"; not strictly best (by > {TIE_PERCENT:g} %) on " + "; ".join(spread(w) for w in miss)
                   if miss else "") + note(wi_out)})
    miss = [w for w in wi if not strictly(w, "2d_fg_tlc", False)]
    out.append({"name": "2d_fg_tlc_worst_on_write_intensive", "holds": bool(wi) and not miss,
                "detail": "2D FG TLC vs 2D FG MLC: " + gains("2d_fg_tlc")
                + ("; not strictly worst on " + "; ".join(spread(w) for w in miss) if miss else "")
                + note(wi_out)})
    loss = {w: -pct[w]["3d_fg_tlc"] for w in ws}
    if loss:
        top = max(loss, key=loss.get)
        ok = abs(loss[top] - PAPER_FG_TLC_LOSS) <= LOSS_MARGIN
        why = ""
        if not ok and loss_bound is not None:
            why += (f"; where the dies limit, 3D FG TLC cannot lose more than {loss_bound:.1f} % with "
                    "progressive staging (its program and garbage collection cost a die that much more time "
                    "per page than 2D FG MLC's)")
        if staging:
            lw = {w: -v["3d_fg_tlc"] for w, v in staging.items() if w in ws and "3d_fg_tlc" in v}
            if lw:
                t2 = max(lw, key=lw.get)
                fg2 = max(-v["2d_fg_tlc"] for w, v in staging.items() if w in ws)
                why += (f"; with whole-block staging its largest loss is {lw[t2]:.1f} % ({t2}) and 2D FG "
                        f"TLC's {fg2:.1f} %")
        detail = (f"largest loss of 3D FG TLC against 2D FG MLC {loss[top]:.1f} % ({top}); paper: up to "
                  f"{PAPER_FG_TLC_LOSS:g} %; held within ±{LOSS_MARGIN:g} points" + why)
    else:
        ok, detail = False, "no workload to check"
    out.append({"name": "3d_fg_tlc_largest_loss_about_54_percent", "holds": bool(ok),
                "detail": detail + note([w for w in rel if w in excl])})

    def ex(c: str, skip: Sequence[str] = ()) -> float:
        return max((abs(v) for w, v in change[c].items() if w not in skip and w in ws), default=0.0)

    fmt = lambda d: ", ".join(f"{k} {v:+.2f} %" for k, v in d.items() if k in ws)  # noqa: E731
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
    if "prxy_1" in rel:
        g = pct["prxy_1"]["3d_ct_tlc"]
        out.append({"name": "prxy_1_a_tie", "holds": "prxy_1" not in excl and abs(g) <= PRXY_1_TIE_PERCENT,
                    "detail": f"3D CT TLC vs 2D FG MLC on prxy_1 {g:+.1f} % (paper -0.1 %; a tie: within "
                              f"{PRXY_1_TIE_PERCENT:g} %)" + note(["prxy_1"] if "prxy_1" in excl else [])})

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
                          + ("; differing: " + "; ".join(spread(w) for w in off) if off else "")
                          + note([w for w in PAPER_TABLE2 if w in rel and w in excl])})
    return out


def volume_statistics(rows, balance: float) -> dict[str, dict[str, Any]]:
    """Per workload, what decides 3D CT TLC against 2D FG MLC: NAND page reads per page programmed on both
    drives, the balance point (:func:`balance_ratio`), the busiest resource of each, the sign the die time
    predicts where the dies limit (``+`` below the balance point) and the model's gain.  ``rows``: results of
    the Table 1 runs (``workload.msr``, ``hybrid.nand`` and the metric columns)."""
    out: dict[str, dict[str, Any]] = {}
    for w, g in rows.groupby("workload.msr", sort=False):
        by = {str(r["hybrid.nand"]): r for _, r in g.iterrows()}
        if BASELINE not in by or "3d_ct_tlc" not in by:
            continue
        mlc, ct = by[BASELINE], by["3d_ct_tlc"]
        ratio = float(mlc["nand_read_write_ratio"])
        out[str(w)] = {
            "nand_reads_per_page_programmed": ratio,
            "nand_reads_per_page_programmed_3d_ct_tlc": float(ct["nand_read_write_ratio"]),
            "balance_point": balance,
            "die_time_predicts": None if not np.isfinite(ratio) else ("+" if ratio < balance else "-"),
            "bottleneck": {n: hybrid.RESOURCES[int(by[n]["bottleneck"])] for n in (BASELINE, "3d_ct_tlc")},
            "utilisation_max": {n: float(by[n]["utilisation_max"]) for n in (BASELINE, "3d_ct_tlc")},
            "ct_tlc_vs_mlc_percent": float(100 * (ct["iops"] / mlc["iops"] - 1)),
            "paper_percent": PAPER_TABLE2.get(str(w)),
            "scm_hit_rate": float(mlc["scm_hit_rate"]),
            "nand_read_waits_per_read": float(mlc["nand_read_waits"] / max(float(mlc["nand_reads"]), 1.0)),
        }
    return out


def fg_tlc_loss_bound(h: Mapping[str, Any]) -> float:
    """Largest loss, percent, of 3D FG TLC against 2D FG MLC where the dies limit and programs dominate
    their time: ``1 − t_page,MLC / t_page,FG`` (program + GC die time per page,
    ``ssdx.models.hybrid.model.die_seconds_per_page``) at ``h["nand_utilisation"]``."""
    def t(name: str) -> float:
        m = catalog.nand(name)
        return hybrid.die_seconds_per_page(m.t_prog_us, m.t_read_us, m.t_erase_us, m.block_pages,
                                           float(h["nand_utilisation"]))[0]

    return float(100 * (1 - t(BASELINE) / t("3d_fg_tlc")))
