"""The cross-validation against MQSim in one figure, drawn from the committed results.

``python -m bench.mqsim_plot`` reads ``bench/results/mqsim_xval/xval.json`` (every case of the matrix,
MQSim's figures beside ssdx's, written by ``bench.mqsim_xval``) and ``des.json`` (the event-ordered
simulations of ``bench.mqsim_des``) and writes ``docs/img/mqsim_xval.png``:

* left: every case's mean response, ssdx against MQSim, on log axes, with the ±10 % band of the goal;
  the cases outside the band are named, and the cases whose MQSim figures fail a closed-form check
  (Little's law, the read floor, the drive's capacity) are drawn hollow;
* middle: the same for the 99th percentile, MQSim's from its response-time log (``mqsim_p99.json``),
  with the ±20 % band of the goal; the cases outside it that event-ordered simulations with MQSim's
  scheduling reproduce (``des.json``) apart from the others;
* right: the loaded reads on chips that share a channel, where ssdx and MQSim part: the mean response
  of MQSim, of the event-ordered simulation with MQSim's channel arbitration and without it, and of
  ssdx, case by case.

Nothing is computed here that the two result files do not hold; the figure is a view of them.
``bench.mqsim_xval`` draws it again whenever it writes the committed ``xval.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "mqsim_xval"
OUT = ROOT / "docs" / "img" / "mqsim_xval.png"
#: the goal's band on the mean response (relative difference to MQSim)
BAND = 0.10
#: the goal's band on the 99th percentile
BAND_P99 = 0.20

#: case families, by the prefix of the case's name (first match), and their markers
FAMILIES = (("openread", "open-loop reads", "v"), ("randread", "closed-loop reads", "o"),
            ("randwrite", "writes", "s"), ("mix70", "70/30 mix", "D"),
            ("small_occ", "preconditioned mix", "P"), ("seq", "128 KiB sequential", "^"),
            ("sata", "SATA drive", "X"), ("pair", "two flows", "*"),
            ("", "MQSim's traces", "h"))


def family(name: str) -> tuple[str, str]:
    """The family of a case (its label and marker), by its name's prefix."""
    for prefix, label, marker in FAMILIES:
        if name.startswith(prefix):
            return label, marker
    raise AssertionError("the last family matches every name")


def outside(rows: dict[str, Any]) -> list[str]:
    """The cases whose mean response or IOPS is more than :data:`BAND` from MQSim's, in name order."""
    return sorted(n for n, r in rows.items()
                  if any(r.get(k) is not None and abs(r[k]) > BAND for k in ("rel_mean", "rel_iops")))


def shared_channel_rows(des: dict[str, Any], rows: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """The shared-channel cases of ``des`` with each source's mean response (µs): MQSim, the event-ordered
    simulation with and without the arbitration, ssdx (from ``rows``, the cross-validation's cases)."""
    out = []
    for group in ("closed_loop", "shared_channels"):
        for name, rec in des.get(group, {}).items():
            if rec.get("chips_per_channel", 2) < 2 or name.startswith("seq") or name not in rows:
                continue  # a channel of its own, or the sequential reads (another matter: read merging)
            if not (rec.get("arbitration") and rec.get("no_arbitration")):
                continue
            out.append((name, {"MQSim": rec["mqsim"]["mean_us"],
                               "event-ordered, MQSim's arbitration": rec["arbitration"]["mean_us"],
                               "event-ordered, commands at once": rec["no_arbitration"]["mean_us"],
                               "ssdx": rows[name]["ssdx"]["mean_us"]}))
    return out


def explained_p99(des: dict[str, Any], rows: dict[str, Any]) -> set[str]:
    """The cases whose p99 an event-ordered simulation with MQSim's scheduling lands within
    :data:`BAND_P99` of MQSim's: the shared-channel reads with MQSim's channel arbitration and translation
    reads first (``des["shared_channels"]``), the reads on chips with a channel each with translation reads
    first (``des["tails_own_channels"]``), and the ideal-map closed loops with the arbitration
    (``des["closed_loop"]``)."""
    out = set()
    for group, key in (("shared_channels", "arbitration"), ("tails_own_channels", "translation_first"),
                       ("closed_loop", "arbitration")):
        for name, rec in des.get(group, {}).items():
            sim = (rec.get(key) or {}).get("p99_us")
            mq = ((rows.get(name) or {}).get("mqsim") or {}).get("p99_us")
            if sim and mq and abs(sim / mq - 1.0) <= BAND_P99:
                out.add(name)
    return out


def outside_p99(rows: dict[str, Any]) -> list[str]:
    """The cases whose p99 is more than :data:`BAND_P99` from MQSim's (where MQSim's log gives one)."""
    return sorted(n for n, r in rows.items() if r.get("rel_p99") is not None and abs(r["rel_p99"]) > BAND_P99)


def _scatter(ax, rows: dict[str, Any], key: str, band: float, out: set[str], shaded: set[str],
             offsets: dict[str, tuple[int, int]]) -> set[str]:
    """ssdx's figure ``key`` (``mean_us``, ``p99_us``) against MQSim's on log axes with the ±``band``
    band: blue within, outside orange where in ``shaded`` (unnamed) and red elsewhere (named); hollow
    where MQSim fails a closed-form check.  Returns the families drawn."""
    import numpy as np

    pts = [(n, r["mqsim"].get(key), r["ssdx"].get(key)) for n, r in sorted(rows.items())]
    pts = [(n, mx, sx) for n, mx, sx in pts if mx and sx]
    v = [mx for _, mx, _ in pts] + [sx for _, _, sx in pts]
    lo, hi = min(v) / 1.6, max(v) * 1.6
    x = np.geomspace(lo, hi, 50)
    ax.fill_between(x, x * (1 - band), x * (1 + band), color="0.85")
    ax.plot(x, x, color="0.4", lw=0.8)
    seen: set[str] = set()
    for name, mx, sx in pts:
        label, marker = family(name)
        color = ("tab:orange" if name in shaded else "tab:red") if name in out else "tab:blue"
        face = "none" if not rows[name].get("mqsim_checks_pass", True) else color
        ax.scatter(mx, sx, marker=marker, s=36, edgecolors=color, facecolors=face)
        seen.add(label)
        if name in out and name not in shaded:
            ax.annotate(name, (mx, sx), fontsize=6.5, xytext=offsets.get(name, (4, 2)),
                        textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    return seen


def plot(rows: dict[str, Any], des: dict[str, Any], path: Path) -> dict[str, int]:
    """Draw the figure (module docstring) from the cross-validation ``rows`` (``xval.json``) and the
    event-ordered simulations ``des`` (``des.json``) into ``path``; returns the counts its titles give
    (cases MQSim's checks pass, within the mean/IOPS band, with a p99, within the p99 band)."""
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ssdx import report

    fig, (ax, px, bx) = report.subplots(1, 3, figsize=(19, 5.8), layout="constrained",
                                        gridspec_kw={"width_ratios": [1.0, 1.0, 1.2]})
    cases = shared_channel_rows(des, rows)
    arbitration = {n for n, _ in cases}
    out = set(outside(rows))
    seen = _scatter(ax, rows, "mean_us", BAND, out, arbitration,
                    {"seqread128k_qd8_ideal_map": (4, -9), "pair_qd16_qd2_count": (4, -9)})
    ax.set_xlabel("MQSim mean response (µs)")
    ax.set_ylabel("ssdx mean response (µs)")
    checked = [n for n, r in rows.items() if r.get("mqsim_checks_pass", True)]
    n_in = sum(n not in out for n in checked)
    ax.set_title(f"Mean: {n_in} of the {len(checked)} cases MQSim's closed-form checks pass are within 10 %\n"
                 "(mean and IOPS). Blue: within; orange: outside, shared channels (right); red: outside, "
                 "named;\nhollow: MQSim fails a check", fontsize=8)
    handles = [Patch(color="0.85", label="the goal's band")] + [
        Line2D([], [], ls="", marker=mk, color="0.45", label=lb) for _, lb, mk in FAMILIES if lb in seen]
    ax.legend(handles=handles, fontsize=7, loc="upper left")

    out99 = set(outside_p99(rows))
    _scatter(px, rows, "p99_us", BAND_P99, out99, explained_p99(des, rows),
             {"seqread128k_qd8": (4, -10), "mix70_qd16_susp_prog_erase": (4, 3),
              "seqread128k_qd8_ideal_map": (4, -9)})
    px.set_xlabel("MQSim p99 response (µs, from its response-time log)")
    px.set_ylabel("ssdx p99 response (µs)")
    with99 = [n for n in checked if rows[n].get("rel_p99") is not None]
    n99 = sum(n not in out99 for n in with99)
    px.set_title(f"p99: {n99} of the {len(with99)} cases within 20 %. Orange: outside, where event-ordered "
                 "simulations\nwith MQSim's scheduling (channel arbitration; translation reads served first) "
                 "reproduce MQSim;\nred: outside, named", fontsize=8)

    keys = ("MQSim", "event-ordered, MQSim's arbitration", "event-ordered, commands at once", "ssdx")
    colors = ("0.2", "tab:orange", "tab:green", "tab:blue")
    w = 0.8 / len(keys)
    for i, (k, c) in enumerate(zip(keys, colors, strict=True)):
        bx.bar(np.arange(len(cases)) + (i - (len(keys) - 1) / 2) * w, [v[k] for _, v in cases], w, color=c,
               label=k)
    bx.set_xticks(np.arange(len(cases)), [n.replace("randread_", "").replace("openread_", "open ")
                                          .replace("_", " ") for n, _ in cases], rotation=25, ha="right",
                  fontsize=7.5)
    bx.set_yscale("log")
    bx.set_ylabel("mean response (µs)")
    bx.set_title("Loaded reads on chips that share a channel: MQSim is its channel arbitration,\n"
                 "ssdx is the same drive without it (event-ordered simulations, bench.mqsim_des)",
                 fontsize=8.5)
    bx.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    return {"checked": len(checked), "mean_within": n_in, "p99_checked": len(with99), "p99_within": n99}


def main(argv: list[str] | None = None) -> int:
    """Draw the figure from the results folder (``--results``) into ``--out``; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of xval.json and des.json")
    ap.add_argument("--out", type=Path, default=OUT, help="the PNG to write")
    args = ap.parse_args(argv)
    rows = json.loads((args.results / "xval.json").read_text())
    des = json.loads((args.results / "des.json").read_text())
    plot(rows, des, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
