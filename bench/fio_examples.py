"""fio's own example job files on ssdx: which run unchanged, which are refused and why (the compatibility
table of ``docs/fio_compat.md``).

For every ``*.fio`` in fio's ``examples/`` directory (``--examples DIR``; a checkout of
github.com/axboe/fio): the I/O engines its jobs name (fio's default, ``psync``, where none does) decide
whether it drives a block device or a file — the engines of :data:`BLOCK_OR_FILE` — or something else
(a network, an object store, a special engine: :data:`OTHER`, each with why).  A block-device or file job
is replayed as ``ssdx experiment=trace_replay workload.fio=FILE workload.requests=N`` would (in this
process, on the default drive, or where the job addresses past its end on the largest preset drive): it
**runs**, or it is **refused** naming the option (or the rule) and its line.  Prints the table and the
counts; writes JSON (``--json``, default ``bench/results/fio_examples.json``) and with ``--markdown`` the
tables of ``docs/fio_compat.md``.

Usage: ``python -m bench.fio_examples --examples PATH/TO/fio/examples [--requests N] [--json FILE]
[--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: fio I/O engines that read and write a block device or a file through the kernel or a user-space driver
BLOCK_OR_FILE = ("psync", "sync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "io_uring_cmd",
                 "posixaio", "windowsaio", "solarisaio", "mmap", "splice", "sg", "libblkio", "libzbc",
                 "ime_psync", "ime_psyncv", "ime_aio", "libcufile", "libhipfile", "xnvme", "spdk")
#: the other engines of fio's examples, with why a drive model has nothing to replay there
OTHER = {
    "net": "network sockets", "netsplice": "network sockets", "http": "an HTTP object store (S3, Swift)",
    "rdma": "RDMA transfers", "rados": "a Ceph object store", "rbd": "a Ceph block device over the network",
    "nfs": "an NFS server", "nbd": "a network block device server", "libiscsi": "an iSCSI target",
    "gfapi": "a GlusterFS volume", "libhdfs": "an HDFS cluster", "dfs": "a DAOS file system",
    "null": "no I/O (fio's overhead test)", "cpp_null": "no I/O (fio's overhead test)",
    "cpuio": "CPU load only", "exec": "runs a program", "page_fault": "page faults in memory",
    "libpmem": "persistent memory (byte-addressed)", "dev-dax": "persistent memory (byte-addressed)",
    "filecreate": "file-system metadata operations", "filestat": "file-system metadata operations",
    "filedelete": "file-system metadata operations", "dircreate": "file-system metadata operations",
    "dirstat": "file-system metadata operations", "dirdelete": "file-system metadata operations",
    "falloc": "file-system space allocation", "ftruncate": "file-system metadata operations",
    "e4defrag": "ext4 defragmentation", "mtd": "a raw MTD flash device (erase blocks by the host)",
}
#: the drive the jobs run on, and the one a job that addresses past its end runs on
DRIVE, LARGE_DRIVE = "aldrin_pro_2tb", "samsung_870qvo_4tb"
_ENGINE = re.compile(r"^\s*ioengine\s*=\s*([A-Za-z0-9_\-]+)", re.M)


def engines(text: str) -> list[str]:
    """The I/O engines a job file names (fio's default ``psync`` when none)."""
    found = _ENGINE.findall(text)
    return sorted(set(found)) or ["psync"]


def classify(path: Path, requests: int, out: Path) -> dict[str, Any]:
    """What ssdx does with one example file (module docstring)."""
    from ssdx import presets
    from ssdx.models.engine import jobs as engine_jobs
    from ssdx.params import ConfigError

    text = path.read_text(errors="replace")
    eng = engines(text)
    other = [e for e in eng if e not in BLOCK_OR_FILE]
    row: dict[str, Any] = {"file": path.name, "engines": eng}
    if other:
        why = "; ".join(f"{e}: {OTHER.get(e, 'not a block device or file engine')}" for e in other)
        return {**row, "status": "not a block-device job", "why": why}
    engine = presets.engine()
    for drive in (DRIVE, LARGE_DRIVE):
        cfg = {"drive": presets.drive(drive), "nand": None, "engine": engine, "seed": 0,
               "workload": {**presets.workload(), "fio": str(path), "requests": requests}}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = engine_jobs.run_replay(cfg, out / path.stem, progress=False)
            break
        except ConfigError as e:
            rule = str(e.rule if hasattr(e, "rule") else e)
            rule = rule.replace(str(path.parent) + "/", "")
            if "beyond the drive's" in rule and drive != LARGE_DRIVE:
                continue  # a job written for a larger drive: on the largest preset
            m = re.search(r"option '([^']+)'", rule) or re.match(r"[^:]+:\d+: ([a-z_]+): ", rule)
            return {**row, "status": "refused", "option": m.group(1) if m else None, "why": rule,
                    "drive": drive}
    row["drive"] = drive
    row["does"] = does(path, s, drive)
    phases = [g["phase"] for g in s.get("fio_groups") or []] or ["run"]
    steady = [g["steady_state"]["attained"] for g in s.get("fio_groups") or [] if "steady_state" in g]
    return {**row, "status": "runs", "groups": phases.count("run"), "phases": phases, "steady_state": steady,
            "requests": s["requests"], "iops": s["iops"],
            "ignored_by_design": s.get("fio_ignored_by_design", [])}


def does(path: Path, summary: dict[str, Any], drive: str) -> str:
    """What ssdx does with a job file that runs, in words: its groups and phases and the pacing options it
    models (as written, where none)."""
    from ssdx.workloads import fio

    jobs = fio.load(path, unknown="warn").jobs
    groups = summary.get("fio_groups") or []
    runs = sum(g["phase"] == "run" for g in groups)
    out = [f"{runs} stonewall groups, one after another"] if runs > 1 else []
    if any(g["phase"] == "verify" for g in groups):
        out.append("a verify phase after the writes")
    if any(j.verify_backlog for j in jobs):
        out.append("verify reads while writing (verify_backlog)")
    for g in groups:
        if "steady_state" in g:
            met = g["steady_state"]["attained"]
            out.append("steady-state detection (" + ("met" if met else "not met within the requests") + ")")
        if "latency_target" in g:
            lt = g["latency_target"]
            last = lt["windows"][-1]["decision"]
            out.append(f"latency-target search: depth {lt['depth']} after {len(lt['windows'])} windows"
                       + (" (the requests end inside the last)" if last == "end" else ""))
    if any(j.start_delay != (0.0, 0.0) for j in jobs):
        out.append(f"{len({j.start_delay for j in jobs})} start delays")
    if any(j.flow for j in jobs):
        out.append("flow shares " + ":".join(str(j.flow) for j in jobs if j.flow))
    if drive != DRIVE:
        out.append(f"on `{drive}`: the job addresses past {DRIVE}'s end")
    return "; ".join(out) or "as written"


#: what each option behind a refusal changes on the device (the docs' table)
REFUSED_WHY = {
    "zonemode": "zoned devices (ZNS, SMR): writes at zone write pointers and zone resets; the engine models "
                "a conventional FTL",
    "sg_write_mode": "SCSI write variants (write same, write and verify)",
    "filesize": "file sets on a file system (the job's files and their sizes)",
    "threads": "not an option fio knows either (fio matches names exactly; it has `thread`)",
    "fdp": "flexible data placement: the host tags writes with placement handles the drive separates",
    "md_per_io_size": "metadata and protection information transferred with each request",
    "pi_act": "metadata and protection information transferred with each request",
    "sprandom": "SPRandom preconditioning: the drive's whole physical capacity written to a steady-state "
                "distribution of invalid blocks",
    "writefua": "forced unit access: each write completes only once on the medium",
    "num_range": "trims (deallocation), several ranges a command; the engine does not model deallocation",
    "write_mode": "write zeroes, write uncorrectable and verify commands",
    "flow_sleep": "a job over its flow share drains its queue and sleeps (per-job pauses)",
    "rw": "a value the file leaves to the environment (`${FIO_RW}`), empty when unset",
}


def markdown(res: dict[str, Any]) -> str:
    """The docs' tables of one run (``docs/fio_compat.md``): counts, the options behind the refusals and
    the files by status."""
    rows, counts = res["rows"], res["counts"]
    lines = ["| | files |", "|---|---:|",
             f"| block-device or file jobs that run unchanged | {counts.get('runs', 0)} |",
             "| block-device or file jobs refused, naming the option and its line (why, below) | "
             f"{counts.get('refused', 0)} |",
             f"| not block-device or file jobs | {counts.get('not a block-device job', 0)} |", "",
             "| option | files | what it changes on the device |", "|---|---:|---|"]
    for opt, n in res["refused_by_option"].items():
        lines.append(f"| `{opt}` | {n} | {REFUSED_WHY.get(opt, '')} |")
    titles = {"runs": "Run unchanged", "refused": "Refused, naming the option and its line",
              "not a block-device job": "Not block-device or file jobs"}
    for status, title in titles.items():
        mine = [r for r in rows if r["status"] == status]
        lines += ["", f"### {title} ({len(mine)})", "", "| job file | I/O engine | "
                  + ("what ssdx does |" if status == "runs" else "why |"), "|---|---|---|"]
        for r in mine:
            what = r.get("does") if status == "runs" else f"`{r['option']}`" if r.get("option") else r["why"]
            lines.append(f"| `{r['file']}` | {', '.join(r['engines'])} | {what or r.get('why', '')} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--examples", required=True, help="fio's examples/ directory")
    ap.add_argument("--requests", type=int, default=500, help="requests per group (default 500)")
    ap.add_argument("--json", default=None, help="JSON path (default bench/results/fio_examples.json)")
    ap.add_argument("--markdown", default=None, help="also write the docs' tables here")
    a = ap.parse_args(argv)
    files = sorted(Path(a.examples).glob("*.fio"))
    if not files:
        print(f"no *.fio files in {a.examples}", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as d:
        rows = [classify(f, a.requests, Path(d)) for f in files]
    counts = Counter(r["status"] for r in rows)
    refused = Counter(r.get("option") or "(a rule)" for r in rows if r["status"] == "refused")
    res = {"benchmark": "fio_examples", "examples": len(rows), "counts": dict(counts),
           "refused_by_option": dict(refused.most_common()), "requests_per_group": a.requests, "rows": rows}
    for r in rows:
        detail = (" ".join(r["phases"]) if r["status"] == "runs" else r.get("option") or r.get("why", ""))
        print(f'{r["file"]:<36}{",".join(r["engines"]):<18}{r["status"]:<24}{detail}')
    print(f"{len(rows)} files: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("refused by option: " + ", ".join(f"{k} {v}" for k, v in refused.most_common()))
    path = Path(a.json or Path(__file__).parent / "results" / "fio_examples.json")
    path.write_text(json.dumps(res, indent=2) + "\n")
    print(f"json: {path}")
    if a.markdown:
        Path(a.markdown).write_text(markdown(res))
        print(f"markdown: {a.markdown}")
    return res


if __name__ == "__main__":
    main()
