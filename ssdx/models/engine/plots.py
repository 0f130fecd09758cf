"""Request-engine reports: a replay's latency CDFs and the QD1 / OS-boot study's bars (OS-boot article)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ssdx import report
from ssdx.core import stats
from ssdx.workloads.traces import READ, WRITE

#: Names of the op codes (``ssdx.workloads.traces``: read 0, write 1, trim 2).
OPS = ("read", "write", "trim")


def plot_latency_cdf(hists: Mapping[str, np.ndarray], path: Path, title: str) -> None:
    """Latency CDFs (read and write) from the engine's log histograms (``ssdx.core.stats`` bins, in s;
    plotted in µs), one pair of curves per name of ``hists``; the curves also go to a CSV beside the PNG
    (``latency_us``, the bins' upper edges, then a column ``NAME OP`` per curve: the fraction of requests
    at or below it), which the run's page draws."""

    edges = stats.bin_edges() * 1e6
    fig, ax = report.subplots(figsize=(7, 4))
    columns = {"latency_us": edges[1:]}
    for name, h in hists.items():
        for op, style in ((READ, "-"), (WRITE, "--")):
            c = np.cumsum(h[op])
            if c[-1] > 0:
                ax.step(edges[1:], c / c[-1], style, where="post", label=f"{name} {OPS[op]}")
                columns[f"{name} {OPS[op]}"] = c / c[-1]
    import pandas as pd

    pd.DataFrame(columns).to_csv(Path(path).with_suffix(".csv"), index=False, float_format="%.6g")
    ax.set_xscale("log")
    ax.set_xlabel("latency (µs)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def plot_boot(per: Mapping[str, Mapping[str, float]], path: Path) -> None:
    """Per drive: the boot log's storage time at QD1 (reads and writes stacked, s) and the QD1 4 KiB read
    and write latencies (µs), from the boot study's per-drive summary
    (``ssdx.models.engine.jobs.run_boot``)."""
    names = list(per)
    fig, (a1, a2) = report.subplots(1, 2, figsize=(10, 4))
    x = np.arange(len(names))
    r = [per[n]["boot_read_time_s"] for n in names]
    w = [per[n]["boot_write_time_s"] for n in names]
    a1.bar(x, r, label="reads")
    a1.bar(x, w, bottom=r, label="writes")
    a1.set_xticks(x, [f"{n}\n({per[n]['interface']})" for n in names], fontsize=7)
    a1.set_ylabel("storage time of the boot log at QD1 (s)")
    a1.legend()
    a2.bar(x - 0.2, [per[n]["qd1_read_4k_us"] for n in names], 0.4, label="4K read")
    a2.bar(x + 0.2, [per[n]["qd1_write_4k_us"] for n in names], 0.4, label="4K write")
    a2.set_xticks(x, names, fontsize=7)
    a2.set_ylabel("QD1 latency (µs)")
    a2.legend()
    fig.suptitle("Windows 11 boot log (OS-boot article) replayed at QD1")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
