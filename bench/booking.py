"""The die booking of the request engine under load, held to an event-ordered first-come-first-served
simulation: two-phase reads (a translation read, then the data read when it is in) at rising die
utilisation, booked with one idle gap per die (the engine's booking before it kept several, but for
keeping its gap when work comes as the booking ends) and with ``READ_GAPS``, and the whole engine
(``ssdx experiment=mqsim``) on MQSim's default drive at the same rates.

The reference is ``bench.mqsim_des.two_phase_fcfs``, written from MQSim's source and independently of the
engine: every chip serves the work waiting on it in the order it became ready.  The work is MQSim's
default drive's (32 chips, each serialised as MQSim's scheduler serialises them; a translation read of
one 512-byte sector and a 4 KiB data read, each holding its chip until its data is out).  The booking
rows replay the same random requests through ``ssdx.models.engine.cpu_ops._book`` alone; the engine row runs
MQSim's BANDWIDTH generator at that rate through ``experiment=mqsim`` (front end, channels and host link
included, which the reference leaves out).  Means in µs, after the first tenth of the requests.

Usage: ``python -m bench.booking [--requests N] [--busy 0.5,0.62,...] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import mqsim_des, mqsim_xval
from ssdx.models.engine.cpu_ops import _book
from ssdx.models.engine.cpu_pack import GAP
from ssdx.models.engine.params import READ_GAPS
from ssdx.report.machine import machine

BUSY = (0.5, 0.62, 0.75, 0.85, 0.92, 0.96)
CHIPS = 32  # MQSim's default drive: 8 channels x 4 chips, each chip one server (mqsim.chip_as_die)


def per_second(busy: float) -> int:
    """The requests/s (a whole number, as a BANDWIDTH flow's ``Bandwidth`` gives them) that keep the chips
    busy ``busy`` of the time."""
    return int(busy * CHIPS / ((mqsim_des.T_MAP + mqsim_des.T_DATA) * 1e-6))


def rate_of(busy: float) -> float:
    """The mean arrival rate (requests/s) MQSim's BANDWIDTH generator draws for :func:`per_second`: a
    whole-nanosecond mean gap."""
    return 1e9 / (1e9 // per_second(busy))


def booked_mean(rate: float, dies: int, n: int, seed: int, gaps: int = READ_GAPS) -> float:
    """Mean latency (µs) of two-phase reads booked in issue order with the engine's ``_book`` keeping
    ``gaps`` idle gaps per die: each request's translation read on a random die at its arrival, then its
    data read on a random die when the translation read ends (the random numbers of
    ``mqsim_des.two_phase_fcfs`` with the same seed)."""
    t_map, t_data = mqsim_des.T_MAP * 1e-6, mqsim_des.T_DATA * 1e-6
    rnd = random.Random(seed)
    die = np.full((GAP + 2 * gaps, dies), -1e9)
    t, lat = 0.0, []
    for _ in range(n):
        t += rnd.expovariate(rate)
        a, b = rnd.randrange(dies), rnd.randrange(dies)
        s1 = _book(die, a, t, t_map, True)
        s2 = _book(die, b, s1 + t_map, t_data, True)
        lat.append(s2 + t_data - t)
    return float(np.mean(lat[n // 10:])) * 1e6


def engine_run(busy: float, n: int, workdir: Path) -> dict:
    """``ssdx experiment=mqsim`` on MQSim's default drive, open-loop 4 KiB random reads at :func:`rate_of`
    ``busy`` (the cross-validation harness's files and run): its IOPS and mean device response (µs)."""
    case = mqsim_xval.Case(name=f"booking_{busy}", generator="BANDWIDTH", qd=0,
                           bandwidth_bps=per_second(busy) * 8 * mqsim_xval.SECTOR, stop_time_s=0,
                           total_requests=n)
    mqsim_xval.write_case_files(case, workdir, None)
    f = mqsim_xval.run_ssdx(workdir)["flow"]
    return {"iops": f["iops"], "mean_us": f["device_response_time_us"]}


def run(n: int, busy_levels: Sequence[float], engine: bool = True) -> list[dict]:
    """One row per utilisation: the reference's mean, the booking's with one gap and with ``READ_GAPS``
    (and their differences), and the engine's IOPS and mean."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="ssdx_booking_") as tmp:
        for busy in busy_levels:
            rate = rate_of(busy)
            fcfs = mqsim_des.two_phase_fcfs(rate * 1e-6, CHIPS, mqsim_des.T_MAP, mqsim_des.T_DATA, n, 1)
            row = {"busy": busy, "rate_per_s": rate, "fcfs_mean_us": fcfs}
            for gaps in (1, READ_GAPS):
                b = booked_mean(rate, CHIPS, n, 1, gaps)
                row[f"booked_{gaps}_gaps_mean_us"] = b
                row[f"booked_{gaps}_gaps_rel"] = b / fcfs - 1.0
            if engine:
                e = engine_run(busy, n, Path(tmp) / f"busy_{busy}")
                row.update({"engine_iops": e["iops"], "engine_mean_us": e["mean_us"],
                            "engine_rel": e["mean_us"] / fcfs - 1.0,
                            "engine_iops_over_offered": e["iops"] / rate})
            rows.append(row)
            line = (f"busy {busy:4.2f} ({rate:9.0f} req/s): first come first served {fcfs:8.1f} us; "
                    f"booked, 1 gap {row['booked_1_gaps_rel']:+8.1%}, "
                    f"{READ_GAPS} gaps {row[f'booked_{READ_GAPS}_gaps_rel']:+6.1%}")
            if engine:
                line += f"; engine {row['engine_mean_us']:8.1f} us ({row['engine_rel']:+6.1%}), " \
                        f"{row['engine_iops_over_offered']:.3f} of the offered rate"
            print(line, flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--busy", default=",".join(map(str, BUSY)), help="comma list of chip utilisations")
    ap.add_argument("--no-engine", action="store_true", help="the booking alone (no ssdx run)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = run(args.requests, [float(b) for b in args.busy.split(",")], engine=not args.no_engine)
    if args.json:
        out = {"benchmark": "booking", "machine": machine(), "requests": args.requests, "chips": CHIPS,
               "read_gaps": READ_GAPS, "t_map_us": mqsim_des.T_MAP, "t_data_us": mqsim_des.T_DATA,
               "baseline": "bench.mqsim_des.two_phase_fcfs (event-ordered, first come first served per chip)",
               "rows": rows, "command": "python -m bench.booking " + " ".join(argv or sys.argv[1:])}
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
