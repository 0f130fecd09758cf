"""Write tails against MQSim, request by request: MQSim's response-time log beside ssdx's latencies with
its back pressure fluid, counted in programs and page by page (the one ``experiment=mqsim`` sets).

``python -m bench.mqsim_tails --mqsim PATH`` runs, for each case of :data:`CASES` (from the committed
``mqsim_reference.json``):

* MQSim on the case's XML files with its response-time log at one line a request (``IO_Flow_Base``, whole
  µs, truncated; ``bench.mqsim_xval.run_mqsim``), and
* ssdx's engine on the same files as ``experiment=mqsim`` composes them, with ``engine.back_pressure``
  ``fluid``, ``programs`` and ``pages`` (three configurations of one batch), keeping every request's
  latency,

and writes ``bench/results/mqsim_xval/tails.json`` (each source's percentiles 0, 0.5, ..., 100 of its
responses, µs, numpy's linear interpolation) and ``docs/img/mqsim_write_tails.png`` (the share of requests
slower than each response, down to the 99.5th percentile).
``--plot-only`` redraws the figure from the committed JSON.  The figure shows what the p99 column of the
cross-validation only summarises: how MQSim's back pressure spreads the writes' waits (most none, some a
whole program), which a fluid drain does not.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "mqsim_xval"
OUT = ROOT / "docs" / "img" / "mqsim_write_tails.png"
#: the cases compared: random writes at QD1 and QD4, where the fluid back pressure was furthest off MQSim's
#: p99 with the mean right, QD16, and MQSim's tpcc trace
CASES = ("randwrite_qd1", "randwrite_qd4", "randwrite_qd16", "tpcc")
#: the percentiles kept of each source's responses
LEVELS = np.linspace(0.0, 100.0, 201)
MODES = ("fluid", "programs", "pages")


def percentiles(values: np.ndarray) -> list[float]:
    """The responses' percentiles at :data:`LEVELS` (µs, linear interpolation, as ``mqsim_p99.json``)."""
    v = np.asarray(values, float)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("responses must be a non-empty array of finite values")
    return [float(x) for x in np.percentile(v, LEVELS)]


def summary(values: np.ndarray) -> dict[str, Any]:
    """A source's requests, mean and :func:`percentiles` (µs)."""
    v = np.asarray(values, float)
    return {"requests": int(v.size), "mean_us": float(v.mean()) if v.size else None,
            "percentiles_us": percentiles(v)}


def at(doc_case: dict[str, Any], source: str, level: float) -> float:
    """A source's response at percentile ``level`` (one of :data:`LEVELS`) from a case of ``tails.json``."""
    i = int(np.argmin(np.abs(LEVELS - level)))
    if abs(LEVELS[i] - level) > 1e-9:
        raise ValueError(f"percentile {level} is not kept (every 0.5 from 0 to 100)")
    return doc_case[source]["percentiles_us"][i]


def ssdx_latencies_us(workdir: Path, requests: int) -> dict[str, np.ndarray]:
    """ssdx's latency of every request (µs) on a case's XML files in ``workdir``, with each back pressure
    of :data:`MODES` (the configuration ``experiment=mqsim`` composes, ``engine.back_pressure`` set)."""
    from bench.mqsim_xval import ssdx_stream
    from ssdx import params
    from ssdx.models.engine import params as engine_params
    from ssdx.models.engine import replay

    cfg, stream = ssdx_stream(workdir, requests)
    rows = [engine_params.columns_from_config({**cfg, "engine": {**cfg["engine"], "back_pressure": mode}})
            for mode in MODES]  # one batch: a configuration a back pressure
    trees = engine_params.build(params.concat_columns(rows), dtype=np.float64)
    res = replay.replay(trees, [stream], chunk_len=min(replay.DEFAULT_CHUNK, len(stream)), keep_latency=True,
                        backend=cfg["engine"].get("backend", "auto"))
    return {mode: np.asarray(res.latencies[i], float) * 1e6 for i, mode in enumerate(MODES)}


def run(binary: Path, ref: dict[str, Any], cases: tuple[str, ...] = CASES) -> dict[str, Any]:
    """The tails of ``cases``: MQSim's log and ssdx's latencies, each as :func:`percentiles`."""
    from bench.mqsim_xval import LOG_PERIOD_NS, Case, mqsim_commit, run_mqsim, ssdx_requests

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mqsim_tails_") as tmp:
        for name in cases:
            rec = ref["cases"][name]
            case = Case(**rec["case"])
            work = Path(tmp) / name
            mq = run_mqsim(binary, case, work, binary.parent, LOG_PERIOD_NS)["response_log"]
            row = {"mqsim": summary(mq)}
            for mode, lat in ssdx_latencies_us(work, ssdx_requests(rec)).items():
                row[mode] = summary(lat)
            out[name] = row
            print(f"{name:16s} p50 / p99 us: MQSim {at(row, 'mqsim', 50):7.0f} {at(row, 'mqsim', 99):7.0f}   "
                  + "   ".join(f"{m} {at(row, m, 50):7.0f} {at(row, m, 99):7.0f}" for m in MODES), flush=True)
    return {"mqsim": {"repository": "CMU-SAFARI/MQSim", "commit": mqsim_commit(binary)},
            "levels": [float(x) for x in LEVELS],
            "note": "MQSim: its response-time log at one line a request (whole us, truncated); ssdx: every "
                    "request's latency with engine.back_pressure fluid, programs and pages; percentiles "
                    "linear",
            "command": "python -m bench.mqsim_tails --mqsim PATH", "cases": out}


def plot(doc: dict[str, Any], path: Path) -> dict[str, dict[str, float]]:
    """Each case's response distributions (MQSim, ssdx fluid, programs, pages) as the fraction of requests
    slower than a response, both axes logarithmic so that the tail shows (down to the 99.5th
    percentile); returns the p99 each panel's title gives, per case and source."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    cases = doc["cases"]
    slower = 1.0 - np.asarray(doc["levels"]) / 100.0
    keep = slower > 0
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 3.6), squeeze=False)
    style = {"mqsim": ("MQSim (response-time log)", "black", "-"),
             "fluid": ("ssdx, back pressure fluid", "tab:orange", "--"),
             "programs": ("ssdx, back pressure in programs", "tab:blue", ":"),
             "pages": ("ssdx, page by page (experiment=mqsim)", "tab:green", "-")}
    titled: dict[str, dict[str, float]] = {}
    for ax, (name, row) in zip(axes[0], cases.items(), strict=True):
        titled[name] = {src: at(row, src, 99) for src in style}
        for src, (label, colour, ls) in style.items():
            x = np.maximum(row[src]["percentiles_us"], 1.0)
            ax.plot(x[keep], slower[keep], ls, color=colour, label=label, lw=1.4, drawstyle="steps-post")
        ax.set_xscale("log")
        ax.set_yscale("log")
        lo, hi = ax.get_xlim()  # labels at 1, 2 and 5 where the axis spans two decades or less
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if hi / lo <= 100 else (1.0,)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(0.01, color="grey", lw=0.6, ls=":")
        p99 = titled[name]
        ax.set_title(f"{name}: p99 MQSim {p99['mqsim']:,.0f} µs,\nfluid {p99['fluid']:,.0f}, "
                     f"programs {p99['programs']:,.0f}, pages {p99['pages']:,.0f}", fontsize=9)
        ax.set_xlabel("response (µs)")
        ax.set_ylim(4e-3, 1.05)
    axes[0][0].set_ylabel("fraction of requests slower")
    axes[0][0].legend(fontsize=8, loc="lower left")
    fig.suptitle("Write responses against MQSim: its back pressure holds a write until a write-back ends "
                 "(page by page, or counted in programs) or drains evenly (fluid)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return titled


def main(argv: list[str] | None = None) -> int:
    """Run the cases (``--mqsim``) or redraw (``--plot-only``); returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mqsim", type=Path, help="MQSim binary (its source tree holds traces/)")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="folder of mqsim_reference.json and tails.json")
    ap.add_argument("--out", type=Path, default=OUT, help="the PNG to write")
    ap.add_argument("--plot-only", action="store_true", help="redraw the figure from tails.json")
    args = ap.parse_args(argv)
    path = args.results / "tails.json"
    if not args.plot_only:
        if args.mqsim is None or not args.mqsim.is_file():
            ap.error("--mqsim must name MQSim's binary (or give --plot-only)")
        ref = json.loads((args.results / "mqsim_reference.json").read_text())
        path.write_text(json.dumps(run(args.mqsim, ref), indent=1) + "\n")
        print(f"wrote {path}")
    plot(json.loads(path.read_text()), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
