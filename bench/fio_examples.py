"""fio's own example job files on ssdx: which run unchanged, which are refused and why (the compatibility
table of ``docs/fio_compat.md``).

For every ``*.fio`` in fio's ``examples/`` directory (``--examples DIR``; a checkout of
github.com/axboe/fio): the I/O engines its jobs name (fio's default, ``psync``, where none does) decide
whether it drives a block device or a file — the engines of :data:`BLOCK_OR_FILE` — or something else
(a network, an object store, a special engine: :data:`OTHER`, each with why).  A block-device or file job
is replayed as ``ssdx experiment=trace_replay workload.fio=FILE workload.requests=N`` would (in this
process, on the default drive): it **runs**, or it is **refused** naming the option (or the rule) and its
line.  Prints the table and the counts; writes JSON (``--json``, default
``bench/results/fio_examples.json``).

Usage: ``python -m bench.fio_examples --examples PATH/TO/fio/examples [--requests N] [--json FILE]``.
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
    cfg = {"drive": presets.drive(), "nand": None, "engine": engine, "seed": 0,
           "workload": {**presets.workload(), "fio": str(path), "requests": requests}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = engine_jobs.run_replay(cfg, out / path.stem, progress=False)
    except ConfigError as e:
        rule = str(e.rule if hasattr(e, "rule") else e)
        rule = rule.replace(str(path.parent) + "/", "")
        m = re.search(r"option '([^']+)'", rule)
        return {**row, "status": "refused", "option": m.group(1) if m else None, "why": rule}
    phases = [g["phase"] for g in s.get("fio_groups") or []] or ["run"]
    steady = [g["steady_state"]["attained"] for g in s.get("fio_groups") or [] if "steady_state" in g]
    return {**row, "status": "runs", "groups": phases.count("run"), "phases": phases, "steady_state": steady,
            "requests": s["requests"], "iops": s["iops"],
            "ignored_by_design": s.get("fio_ignored_by_design", [])}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--examples", required=True, help="fio's examples/ directory")
    ap.add_argument("--requests", type=int, default=500, help="requests per group (default 500)")
    ap.add_argument("--json", default=None, help="JSON path (default bench/results/fio_examples.json)")
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
    return res


if __name__ == "__main__":
    main()
