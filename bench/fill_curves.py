"""Public whole-drive fills, fitted: every curve of ``examples/curves/index.json`` through
``ssdx experiment=fit_fill``, each figure the review states against the fitted drive.

For each curve the base drive is built from the hardware its index entry gives (:func:`base_overrides`):
the user capacity, the cell type (the catalog's generic ``tlc``/``qlc``/``mlc`` die: 16 KiB pages,
4 planes), the host interface, DRAM or not, and a die count — the stated one, else the raw NAND of the
next binary size above the capacity in dies of the generation's common density (512 Gbit TLC, 1 Tbit
QLC; ``ssdx.models.fluid.bounds`` lists the published ones, and the fit tries the others when the first
needs an unpublished value).  NAND channels: 4 for a DRAM-less controller (Phison E21-class), else 8, at
a rate of the interface's generation (SATA 400, PCIe 3.0 800, PCIe 4.0 1600, PCIe 5.0 2400 MT/s: the
bus is kept from binding, since no review states it).  Nothing else is told to the fit.

Figures compared (review = the figures its CSV states; GB = 1e9 B, MB/s = 1e6 B/s):

* **cache end**: the end of the review's cache phases (``pslc`` and ``pslc_second_speed``) against the
  end of the fitted drive's pSLC regimes;
* **phase speeds**: each stated phase against the fitted drive's visible phase covering its middle;
* **average**: the whole fill's bytes over time, of the review's piecewise curve against the fitted
  drive's; and the fitted drive's phase count against the measured curve's segmentation.

Results are written after each curve (``--out``, default ``bench/results/fill_curves.json``): a run that
dies resumes where it stopped (``--fresh`` starts over).  ``--only a,b`` fits some curves.
``--predict`` fits one capacity of a family and predicts the other (:func:`predict`).

Usage::

    python -m bench.fill_curves            # fit every curve (about a minute each on 2 cores)
    python -m bench.fill_curves --report   # the table again from the JSON
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CURVES = ROOT / "examples" / "curves"
OUT = Path(__file__).resolve().parent / "results" / "fill_curves.json"
#: the figures a fit must reproduce to count as reproduced (relative error, every figure)
WITHIN = 0.05
NAND = {"MLC": "mlc", "TLC": "tlc", "QLC": "qlc"}
#: binary Gbit per die of the common density by cell type (``bounds.DIE_GBIT`` lists the published ones)
DIE_GBIT = {"MLC": 256, "TLC": 512, "QLC": 1024}
BUS_MTS = {"sata3": 400, "pcie3x4": 800, "pcie4x4": 1600, "pcie5x4": 2400}
CACHE_PHASES = ("pslc", "pslc_second_speed")


def base_overrides(entry: dict[str, Any]) -> list[str]:
    """Hydra overrides of ``drive=generic_tlc_1tb`` that give the curve's hardware (module docstring)."""
    cell = entry.get("cell") or "TLC"
    cap = float(entry["capacity_gb"])
    die_gbit = float(entry.get("die_gbit") or DIE_GBIT[cell])
    dies = entry.get("dies")
    if not dies:  # raw NAND: the next binary size above the capacity
        raw_gib = 2 ** math.ceil(math.log2(cap * 1e9 / 2**30))
        dies = max(1, int(raw_gib * 8 // die_gbit))
    channels = 4 if entry.get("dram") is False else 8
    channels = max(c for c in range(1, min(channels, dies) + 1) if dies % c == 0)
    return [f"drive.user_capacity_gb={cap:g}", f"drive.nand={NAND[cell]}", f"drive.die_gbit={die_gbit:g}",
            f"drive.channels={channels}", f"drive.dies_per_channel={dies // channels}",
            f"drive.interface={entry['interface']}", f"drive.bus_mts={BUS_MTS[entry['interface']]}",
            f"drive.dram={'false' if entry.get('dram') is False else 'true'}"]


def review_average(phases: list[dict[str, Any]]) -> float:
    """Bytes over time of the review's piecewise phases, MB/s."""
    start, t = 0.0, 0.0
    for p in phases:
        t += (p["end_gb"] - start) / p["mb_s"]
        start = p["end_gb"]
    return start / t


def compare(entry: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """Each review figure against the fitted drive (module docstring)."""
    phases = summary["phases"]
    rev = entry["phases"]
    fitted_avg = summary["written_gb"] / sum((p["end_gb"] - p["start_gb"]) / p["mean_mb_s"] for p in phases)
    rev_avg = review_average(rev)
    rows: list[dict[str, Any]] = [{"figure": "average MB/s", "review": rev_avg, "fitted": fitted_avg}]
    cache = [p for p in rev if p["what"] in CACHE_PHASES]
    if cache:
        fit_cache = [p for p in summary["model_regimes"] if p["name"].startswith("pslc")]
        rows.append({"figure": "cache end GB", "review": cache[-1]["end_gb"],
                     "fitted": fit_cache[-1]["end_gb"] if fit_cache else 0.0})
    start = 0.0
    for i, p in enumerate(rev):
        mid = 0.5 * (start + p["end_gb"])
        hit = next((q for q in phases if q["start_gb"] <= mid <= q["end_gb"]), phases[-1])
        rows.append({"figure": f"phase {i + 1} MB/s ({p['what']})", "review": p["mb_s"],
                     "fitted": hit["mean_mb_s"]})
        start = p["end_gb"]
    for r in rows:
        r["error"] = r["fitted"] / r["review"] - 1.0 if r["review"] else float("nan")
    return {"figures": rows, "max_abs_error": max(abs(r["error"]) for r in rows),
            "within": all(abs(r["error"]) <= WITHIN for r in rows)}


def run_ssdx(args: list[str]) -> dict[str, Any]:
    """``ssdx ARGS`` in a temporary run directory: its ``summary.json`` (``summary``), or the end of its error
    output (``error``); the wall time and the arguments."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "ssdx.cli.main", *args, f"hydra.run.dir={tmp}"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "MPLBACKEND": "Agg", "TQDM_DISABLE": "1"})
        out: dict[str, Any] = {"wall_s": time.perf_counter() - t0, "command": args}
        if proc.returncode != 0:
            return {**out, "error": (proc.stderr or proc.stdout)[-1500:]}
        return {**out, "summary": json.loads((Path(tmp) / "summary.json").read_text())}


def fit_one(entry: dict[str, Any], extra: list[str] | None = None) -> dict[str, Any]:
    """``ssdx experiment=fit_fill`` on the entry's curve and base drive (:func:`run_ssdx`)."""
    curve = (CURVES / entry["file"]).relative_to(ROOT)  # the run's directory is the repository
    return run_ssdx(["experiment=fit_fill", "drive=generic_tlc_1tb", f"fit.curve={curve}",
                     *base_overrides(entry),
                     # a stated die count is kept: no other is tried
                     f"fit.other_die_counts={'false' if entry.get('dies') else 'true'}", *(extra or [])])


def row(entry: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    """One curve's line of the table."""
    if "error" in res:
        return {"file": entry["file"], "error": res["error"]}
    s = res["summary"]
    cmp = compare(entry, s)
    return {"file": entry["file"], "drive": entry["drive"], "rule": s["rule"], "policy": s["policy"],
            "physical": s["physical"], "phase_count": s["phase_count"], "rmse_fraction": s["rmse_fraction"],
            "parameters": s["parameters"], "runner_up": s["runner_up"], "dies_tried": s["dies_tried"],
            "fitted_phases": s["phases"], "warning": s["warning"], **cmp, "wall_s": res["wall_s"],
            "command": " ".join(res["command"])}


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    lines = ["| curve | policy | dies | physical | phases (fit/measured) | cache end | phase speeds | average"
             " | max error |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['file']} | error | | | | | | | |")
            continue
        figs = {f["figure"]: f for f in r["figures"]}
        cache = figs.get("cache end GB")
        speeds = [f for f in r["figures"] if f["figure"].startswith("phase")]
        pc = r["phase_count"]
        lines.append(
            f"| {r['file'].removesuffix('.csv')} | {r['rule']} | {r['policy']['dies']} | "
            f"{'yes' if r['physical'] else 'no'} | {pc['fitted']}/{pc['measured']} | "
            + (f"{cache['fitted']:.0f} vs {cache['review']:.0f} GB ({100 * cache['error']:+.1f} %)" if cache
               else "—")
            + " | " + ", ".join(f"{f['fitted']:.0f} vs {f['review']:.0f} ({100 * f['error']:+.1f} %)"
                                for f in speeds)
            + f" | {figs['average MB/s']['fitted']:.0f} vs {figs['average MB/s']['review']:.0f} "
              f"({100 * figs['average MB/s']['error']:+.1f} %) | {100 * r['max_abs_error']:.1f} % |")
    return "\n".join(lines)


#: capacity predictions: fit one capacity of a family (``source``, a curve of the index), predict another
#: from physics and compare with what was published for it (each figure with its source).  The target's
#: hardware: the same NAND and controller, the die count of its capacity (``dies``, stated or assumed as
#: noted), the firmware's cache rule as a fixed fraction of capacity (the only rule one fill determines).
PREDICTIONS: list[dict[str, Any]] = [
    {"source": "sabrent_rocket4plus_2tb", "source_dies": 32,
     "target": {"drive": "Sabrent Rocket 4 Plus 4 TB", "capacity_gb": 4000, "cell": "TLC",
                "interface": "pcie4x4", "dram": None, "dies": 64, "die_gbit": 512},
     "assumed": "the 2 TB and 4 TB on 512 Gbit dies (Micron 176-layer TLC; 32 and 64 dies), not stated",
     "figures": {"cache end GB": (397.0, "TechPowerUp, 'Sabrent Rocket 4 Plus 4 TB Review', p. 6"),
                 "average MB/s": (2763.0, "TechPowerUp, same page: whole-drive fill average")}},
    {"source": "samsung_970evo_500gb", "source_dies": 16,
     "target": {"drive": "Samsung 970 EVO 1 TB", "capacity_gb": 1000, "cell": "TLC", "interface": "pcie3x4",
                "dram": True, "dies": 32, "die_gbit": 256},
     "assumed": "the 500 GB on 16 of the 256 Gbit dies the 1 TB uses (The FPS Review states the 1 TB's only)",
     "figures": {"cache end GB": (42.0, "Samsung's 6 + 36 GB TurboWrite (The FPS Review, 2020)"),
                 "after-cache MB/s": (1200.0, "PC Perspective, 2018: saturated sequential write ~1.2 GB/s"),
                 "in-cache MB/s": (2450.0, "PC Perspective, 2018: burst 'just under 2.5 GB/s'")}},
    {"source": "samsung_870qvo_4tb", "source_dies": 32,
     "target": {"drive": "Samsung 870 QVO 1 TB", "capacity_gb": 1000, "cell": "QLC", "interface": "sata3",
                "dram": True, "dies": 8, "die_gbit": 1024},
     "assumed": "8 and 32 dies of 1 Tbit (AnandTech: the 8 TB has 64 dies; the ratio derived)",
     "figures": {"cache end GB": (42.0, "AnandTech, 'The Samsung 870 QVO (1TB & 4TB) SSD Review', 2020"),
                 "average MB/s": (116.0, "TechPowerUp, 'Samsung 870 EVO 4 TB Review', p. 6: the 870 QVO's "
                                         "whole-fill average")}},
]
#: fitted values the target keeps (the same NAND and firmware) and those scaled with capacity
KEEP = ("drive.slc_mode", "drive.fold_while_writing", "drive.paced_folding", "drive.fold_efficiency",
        "drive.reserve_fraction", "drive.first_slc_t_prog_us", "nand.t_prog_us", "nand.t_prog_slc_us")
SCALE = ("drive.static_slc_gb", "drive.max_dynamic_slc_gb", "drive.first_slc_gb")


def predict(spec: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """Fill the target of ``spec`` from the source's fit (:data:`PREDICTIONS`): its figures against the
    published ones."""
    from ssdx.models.fluid.phases import visible

    summ = source["summary"]
    ov = dict(o.split("=", 1) for o in summ["overrides"])
    ov["drive.slc_mode"] = summ["policy"]["slc_mode"]
    k = spec["target"]["capacity_gb"] / summ["capacity_gb"]
    target = [f"{key}={ov[key]}" for key in KEEP if key in ov]
    target += [f"{key}={float(ov[key]) * k:g}" for key in SCALE if key in ov]
    run = run_ssdx(["experiment=aldrin_pro_fill", "drive=generic_tlc_1tb", *base_overrides(spec["target"]),
                    *target])
    if "error" in run:
        return {"error": run["error"], "command": run["command"]}
    fill = run["summary"]
    regimes = fill["phases"]
    phases = visible(regimes, fill["written_gb"])
    cache = [p for p in regimes if p["name"].startswith("pslc")]
    got = {"cache end GB": cache[-1]["end_gb"] if cache else 0.0, "average MB/s": fill["mean_mb_s"],
           "in-cache MB/s": phases[0]["mean_mb_s"],
           "after-cache MB/s": phases[1]["mean_mb_s"] if len(phases) > 1 else float("nan")}
    rows = [{"figure": f, "published": v, "source": src, "predicted": got[f], "error": got[f] / v - 1.0}
            for f, (v, src) in spec["figures"].items()]
    return {"from": spec["source"], "to": spec["target"]["drive"], "assumed": spec["assumed"],
            "figures": rows, "predicted_phases": phases, "command": " ".join(run["command"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", default="", help="comma-separated curve files (without .csv)")
    ap.add_argument("--fresh", action="store_true", help="fit every curve again")
    ap.add_argument("--report", action="store_true", help="print the table from the JSON only")
    ap.add_argument("--predict", action="store_true", help="capacity predictions from the fitted curves")
    a = ap.parse_args(argv)
    index = json.loads((CURVES / "index.json").read_text())
    doc = json.loads(a.out.read_text()) if a.out.exists() and not a.fresh else {}
    results = doc.get("results", {})
    only = {x.strip().removesuffix(".csv") for x in a.only.split(",") if x.strip()}
    if not a.report:
        for entry in index:
            key = entry["file"].removesuffix(".csv")
            if (only and key not in only) or (key in results and not only):
                continue
            print(f"fitting {entry['file']} ...", flush=True)
            res = fit_one(entry)
            results[key] = row(entry, res)
            r = results[key]
            err = 100 * r.get("max_abs_error", float("nan"))
            print(f"  {r.get('rule', 'error')}: max error {err:.1f} %, {res['wall_s']:.0f} s", flush=True)
            doc = {"benchmark": "fill_curves", "within": WITHIN,
                   "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                               "platform": platform.platform()},
                   "results": results}
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(doc, indent=1) + "\n")
    if a.predict:
        preds = []
        for spec in PREDICTIONS:
            src = results.get(spec["source"])
            if not src or "error" in src:
                print(f"{spec['source']}: fit it first (python -m bench.fill_curves --only {spec['source']})")
                continue
            entry = next(e for e in index if e["file"] == spec["source"] + ".csv")
            # the source on the target's die density (its stated or assumed die count)
            src_fit = fit_one({**entry, "dies": spec["source_dies"], "die_gbit": spec["target"]["die_gbit"]})
            pred = predict(spec, src_fit) if "summary" in src_fit else {"error": src_fit["error"]}
            preds.append(pred)
            for f in pred.get("figures", []):
                print(f"{pred['from']} -> {pred['to']}: {f['figure']} {f['predicted']:.0f} vs "
                      f"{f['published']:.0f} ({100 * f['error']:+.1f} %; {f['source']})")
        doc["predictions"] = preds
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
    keys = [e["file"].removesuffix(".csv") for e in index]
    rows = [results[k] for k in keys if k in results]
    print(table(rows))
    ok = [r for r in rows if r.get("within")]
    print(f"\n{len(ok)} of {len(rows)} curves within {100 * WITHIN:g} % on every figure; "
          f"{sum(1 for r in rows if r.get('physical'))} physical; "
          f"{sum(1 for r in rows if r.get('phase_count', {}).get('match'))} with the measured phase count")
    return 0


if __name__ == "__main__":
    sys.exit(main())
