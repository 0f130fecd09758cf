"""Jobs of the request-level engine: trace replay and the QD1 / OS-boot study (seeds/003).

Each takes a composed config as plain mappings and an output directory, writes its files there and
returns the summary it wrote (as ``ssdx.tasks`` does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ssdx import engine_params, params, presets, replay
from ssdx.models import engine
from ssdx.tasks import _dtype, _write_json, trace_reader
from ssdx.workloads import synthetic
from ssdx.workloads.traces import READ, WRITE, Chunk, TraceError

BOOT_DRIVES = ("sata_tlc_500", "generic_tlc_1tb", "sn8e_1920", "aldrin_pro_2tb")


def _columns(cfg: Mapping[str, Any], drives: list[dict] | None = None) -> dict[str, np.ndarray]:
    """Columns of the configured drive (or of each of ``drives``) with the workload and engine fields."""
    rows = []
    for d in drives or [cfg["drive"]]:
        c = params.columns_from_config(d, cfg["workload"], cfg.get("nand"))
        c.update(engine_params.columns(cfg["engine"]))
        rows.append(c)
    return params.concat_columns(rows)


def _requests(w: Mapping[str, Any]) -> int:
    """``workload.requests`` of a generated stream (default 100,000)."""
    n = int(w.get("requests", 100_000))
    if not 1 <= n <= 100_000_000:
        raise params.ConfigError("workload.requests", n, "integer 1 <= x <= 1e8")
    return n


def stream(cfg: Mapping[str, Any]) -> tuple[Iterable[Chunk], Any, str]:
    """The configured request stream: ``workload.trace_path`` (streamed), else ``workload.synthetic``
    (``windows11_boot``, ``msr:<volume>`` or ``profile:<summary.json>``, a stream fitted to an analysed
    trace, ``ssdx.workloads.profile``).  Returns (chunks, reader or None, label)."""
    w = cfg["workload"]
    if w.get("trace_path"):
        reader = trace_reader(w)
        return reader, reader, str(reader.path)
    name = w.get("synthetic")
    seed, open_loop = int(cfg.get("seed", 0)), cfg["engine"].get("loop") == "open"
    if name == "windows11_boot":
        return [synthetic.windows11_boot(seed)], None, name
    if isinstance(name, str) and name.startswith("msr:"):
        from ssdx.workloads import msr

        vol = name[4:]
        if vol not in msr.VOLUMES:
            raise params.ConfigError("workload.synthetic", name,
                                     f"MSR volume must be one of {sorted(msr.VOLUMES)}")
        return [msr.generate(vol, _requests(w), seed=seed, timed=open_loop)], None, name
    if isinstance(name, str) and name.startswith("profile:"):
        from ssdx.workloads import profile

        path = Path(name[len("profile:"):])
        if not path.is_file():
            raise params.ConfigError("workload.synthetic", name, "profile:PATH needs an existing "
                                     "summary.json of experiment=trace_analyse")
        try:
            fitted = profile.fit(profile.load(path))
        except ValueError as e:
            raise params.ConfigError("workload.synthetic", name, str(e)) from None
        return [profile.generate(fitted, _requests(w), seed=seed, timed=open_loop)], None, name
    raise params.ConfigError("workload.trace_path", None, "a trace file is required (or workload.synthetic: "
                             "windows11_boot | msr:<volume> | profile:<summary.json>)")


def _latency_block(m: Mapping[str, np.ndarray], i: int, prefix: str = "") -> dict[str, float]:
    return {"mean": float(m[f"{prefix}latency_mean_us"][i]), "p50": float(m[f"{prefix}latency_p50_us"][i]),
            "p99": float(m[f"{prefix}latency_p99_us"][i]), "p999": float(m[f"{prefix}latency_p999_us"][i])}


def run_replay(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Replay a trace (or synthetic stream) through the configured drive: ``summary.json`` and
    ``latency_cdf.png``.  A malformed trace line stops with the file and the line (exit 2), or with
    ``workload.on_error=skip`` is skipped and counted."""
    dtype = _dtype(cfg.get("precision", "float32"))
    cols = _columns(cfg)
    trees = engine_params.build(cols, dtype=dtype)
    backend = engine_params.backend(cfg["engine"])
    chunks, reader, label = stream(cfg)
    try:
        res = replay.replay(trees, chunks, progress=progress, desc="replay", backend=backend)
    except TraceError as e:
        raise params.ConfigError("workload.trace_path", label, f"malformed trace: {e}") from None
    m = res.metrics
    summary = {
        "trace": label, "format": cfg["workload"].get("format") if reader else "synthetic",
        "drive": cfg["drive"].get("name", "custom"), "loop": cfg["engine"]["loop"], "backend": backend,
        "queue_depth": int(cfg["workload"]["queue_depth"]),
        "requests": int(m["requests"][0]), "read_fraction": float(m["read_fraction"][0]),
        "iops": float(m["iops"][0]), "mb_s": float(m["mb_s"][0]), "makespan_s": float(m["makespan_s"][0]),
        "latency_us": _latency_block(m, 0),
        "read_latency_us": _latency_block(m, 0, "read_"), "write_latency_us": _latency_block(m, 0, "write_"),
        "queue_share": float(m["queue_share"][0]),
        "die_utilisation": {"mean": float(m["die_utilisation_mean"][0]),
                            "max": float(m["die_utilisation_max"][0])},
        "nand": {k: float(m[k][0]) for k in ("nand_read_pages", "nand_program_pages", "erases", "map_misses",
                                             "pslc_bytes", "native_bytes", "folding_bytes")},
        "skipped_lines": reader.skipped if reader else 0,
        "skipped_examples": reader.skipped_examples if reader else [],
        "unsorted_requests": reader.unsorted if reader else 0,
        "compile_s": res.compile_s, "run_s": res.run_s,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out_dir / "summary.json", summary)
    _plot_cdf({summary["drive"]: res.extra["sums"]["hist"][0]}, out_dir / "latency_cdf.png",
              f"{label} on {summary['drive']} ({summary['loop']} loop, QD {summary['queue_depth']})")
    return summary


def _plot_cdf(hists: Mapping[str, np.ndarray], path: Path, title: str) -> None:
    """Latency CDFs (read and write) from the engine's log histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    edges = 10.0 ** (engine.LOG_MIN + np.arange(engine.N_BINS + 1) / engine.BINS_PER_DECADE) * 1e6
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, h in hists.items():
        for op, style in ((READ, "-"), (WRITE, "--")):
            c = np.cumsum(h[op])
            if c[-1] > 0:
                ax.step(edges[1:], c / c[-1], style, where="post", label=f"{name} {engine.OPS[op]}")
    ax.set_xscale("log")
    ax.set_xlabel("latency (µs)")
    ax.set_ylabel("fraction of requests")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------- boot

def qd1_probe(op: int, n: int, seed: int) -> Chunk:
    """``n`` 4 KiB random commands of one type over 64 GB (CrystalDiskMark-style 4K Q1T1 probe)."""
    return synthetic.fio_like(n, read_fraction=1.0 if op == READ else 0.0, span_bytes=64e9, seed=seed)


def run_boot(cfg: Mapping[str, Any], out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """QD1 latencies and the Windows 11 boot replay per preset drive (seeds/003, REFERENCE §4).

    Every drive runs in one batch (one compiled kernel, padded die layout).  ``boot_storage_time_s`` is
    the time the storage needs for the boot log at QD1: the makespan of the closed-loop replay, i.e.
    the sum of the 45,491 latencies.  ``model_difference_s`` is SATA minus PCIe 4.0.
    """
    dtype = _dtype(cfg.get("precision", "float32"))
    b = cfg.get("boot") or {}
    names = list(b.get("drives") or BOOT_DRIVES)
    sata, pcie4 = b.get("sata", "sata_tlc_500"), b.get("pcie4", "aldrin_pro_2tb")
    for key, v in (("boot.sata", sata), ("boot.pcie4", pcie4)):
        if v not in names:
            raise params.ConfigError(key, v, f"must be one of boot.drives {names}")
    try:
        drives = [presets.drive(n) for n in names]
    except KeyError as e:
        raise params.ConfigError("boot.drives", names, str(e)) from None
    w = dict(cfg["workload"], queue_depth=1)
    run_cfg = dict(cfg, workload=w, engine=dict(cfg["engine"], loop="closed"))
    cols = _columns(run_cfg, drives)
    trees = engine_params.build(cols, dtype=dtype)
    backend = engine_params.backend(cfg["engine"])
    seed = int(cfg.get("seed", 0))
    n_probe = int(b.get("probe_requests", 2000))
    boot_chunk = synthetic.windows11_boot(seed)
    probes = {}
    for op, name in ((READ, "read"), (WRITE, "write")):
        probes[name] = replay.replay(trees, [qd1_probe(op, n_probe, seed)], chunk_len=n_probe,
                                     backend=backend).metrics
    res = replay.replay(trees, [boot_chunk], chunk_len=len(boot_chunk), progress=progress, desc="boot",
                        backend=backend)
    m = res.metrics
    per = {}
    for i, name in enumerate(names):
        d = drives[i]
        per[name] = {
            "interface": d["interface"], "nand": d["nand"], "dram": bool(d["dram"]),
            "qd1_read_4k_us": float(probes["read"]["read_latency_mean_us"][i]),
            "qd1_write_4k_us": float(probes["write"]["write_latency_mean_us"][i]),
            "qd1_read_4k_mb_s": float(probes["read"]["mb_s"][i]),
            "boot_storage_time_s": float(m["makespan_s"][i]),
            "boot_read_time_s": float(res.extra["sums"]["lat_sum"][i, READ]),
            "boot_write_time_s": float(res.extra["sums"]["lat_sum"][i, WRITE]),
            "boot_read_latency_mean_us": float(m["read_latency_mean_us"][i]),
            "boot_write_latency_mean_us": float(m["write_latency_mean_us"][i]),
        }
    s, p = per[sata], per[pcie4]
    read_diff = s["qd1_read_4k_us"] - p["qd1_read_4k_us"]
    write_diff = s["qd1_write_4k_us"] - p["qd1_write_4k_us"]
    counts = synthetic.BOOT
    summary = {
        "workload": "windows11_boot (seeds/003)", "backend": backend,
        "reads": counts[READ]["commands"], "writes": counts[WRITE]["commands"],
        "read_mb": counts[READ]["bytes_mb"], "write_mb": counts[WRITE]["bytes_mb"],
        "seed_method_difference_s": synthetic.seed_method_difference_s(),
        "seed_method": "40,000 reads x 30 us + 5,000 writes x 200 us (seeds/003's stated assumptions)",
        "drives": per,
        "sata_drive": sata, "pcie4_drive": pcie4,
        "model_difference_s": s["boot_storage_time_s"] - p["boot_storage_time_s"],
        "seed_method_with_model_latencies_s": synthetic.seed_method_difference_s(
            read_diff_us=read_diff, write_diff_us=write_diff),
        "model_qd1_read_4k_difference_us": read_diff, "model_qd1_write_4k_difference_us": write_diff,
        "press_measurement": "less than 2 s difference SATA vs PCIe (seeds/003)",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(out_dir / "summary.json", summary)
    _plot_boot(per, out_dir / "boot_qd1.png")
    return summary


def _plot_boot(per: Mapping[str, Mapping[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(per)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
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
    fig.suptitle("Windows 11 boot log (seeds/003) replayed at QD1")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
