"""Event-ordered simulations of the flash-side scheduling MQSim does, to tell its mechanisms apart by
measurement.

Small discrete-event simulations, written from MQSim's source (Tavakkol et al., "MQSim: A Framework
for Enabling Realistic Studies of Modern Multi-Queue SSD Devices", USENIX FAST 2018; CMU-SAFARI/MQSim
commit ``7ec40e3``) and independent of ssdx's engine.  All hold a chip until its read data is out
(MQSim's ``WAIT_FOR_DATA_OUT``) and serve one command per chip at a time (``TSU_OutOfOrder`` issues only
to an idle chip, and ``TSU_Base::issue_command_to_chip`` to one die of it).

* :func:`two_phase_fcfs` — open-loop (Poisson) reads that each read a translation page on a uniformly
  random chip and then their data on another; every chip serves what waits on it in the order it became
  ready.  No channel is modelled: it is the chips' queueing alone, the exact answer for a drive whose
  chips each own a channel.
* :func:`reads_on_channels` — reads on ``C`` channels of ``K`` chips, open or closed loop, each after a
  translation read where it needs one (served first on its chip, shared by the requests that need the
  same page), its data then over the host link.  A data out needs its channel; with ``arbitration`` a
  command needs it too, and only when no read data waits on it: after each transfer the channel first
  serves waiting read data (``NVM_PHY_ONFI_NVDDR2::Execute_simulator_event``), and only then is one
  command issued to the next chip in round-robin order with work queued
  (``TSU_Base::handle_channel_idle_signal``).  Without it a command goes to an idle chip at once.
  :func:`closed_loop_channels` is its closed loop of random reads without translation reads.

:func:`reads_on_channels` gives the 99th percentile beside the mean; the last table of :func:`main`
compares the tails of reads on chips that each own a channel with translation reads served first
(MQSim's rule) and in one queue.

``python -m bench.mqsim_des --json PATH`` runs them against MQSim's committed figures
(``bench/results/mqsim_xval/mqsim_reference.json``) and prints a table.  Times in µs.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from bench.mqsim_xval import DEFAULT_DRIVE
from ssdx.workloads.mqsim_xml import pcie_payload_gb_s

T_R = DEFAULT_DRIVE["Page_Read_Latency"] / 1e3  # µs, MQSim's default drive (its ssdconfig.xml)
CHANNEL_B_PER_US = DEFAULT_DRIVE["Channel_Transfer_Rate"] * DEFAULT_DRIVE["Flash_Channel_Width"]  # B/µs
T_MAP = T_R + 512 / CHANNEL_B_PER_US  # a translation read moves one 512-byte sector
T_DATA = T_R + 4096 / CHANNEL_B_PER_US  # a 4 KiB data read
#: µs, a one-plane read command on the channel: MQSim's ONFI_Channel_NVDDR2::ReadCommandTime[1] =
#: t_CS + 6 t_WC + t_WB + t_RR with its default timings (20, 25, 100 and 20 ns)
T_CMD = (20 + 6 * 25 + 100 + 20) / 1e3
REFERENCE = Path(__file__).resolve().parent / "results" / "mqsim_xval" / "mqsim_reference.json"
XVAL = REFERENCE.with_name("xval.json")  # ssdx's figures for the same cases (bench.mqsim_xval)
P99 = REFERENCE.with_name("mqsim_p99.json")  # MQSim's p99 from its response-time log (bench.mqsim_xval --p99)
#: B/µs, MQSim's host link each way: its lanes' rate, 128 payload bytes in every packet of 156
HOST_B_PER_US = 1e3 * pcie_payload_gb_s(DEFAULT_DRIVE["PCIe_Lane_Bandwidth"],
                                        DEFAULT_DRIVE["PCIe_Lane_Count"])
#: the cases where chips share a channel and reads need translation reads: (case, channels, chips per
#: channel, closed loop at QD64 / QD8 or open loop at MQSim's offered rate)
_SHARED = (("randread_qd64", 8, 4, {"qd": 64}), ("randread_qd64_8chips_1die", 8, 8, {"qd": 64}),
           ("openread_70pct", 8, 4, {"rate": True}), ("openread_90pct", 8, 4, {"rate": True}),
           ("openread_110pct", 8, 4, {"rate": True}),
           ("openread_120pct", 8, 4, {"rate": True}), ("seqread128k_qd8", 8, 4, {"qd": 8}),
           ("seqread128k_qd8_ideal_map", 8, 4, {"qd": 8}))
#: the sequential case's request: 16 pages of 8 KiB (128 KiB on MQSim's default drive)
_SEQ_PAGES, _SEQ_PAGE_BYTES = 16, 8192


def seq_pages_per_tpage(xval: dict[str, Any]) -> dict[str, int]:
    """Pages per translation page that give the sequential case the translation reads per request each
    simulator measured (``flash_per_request`` of ``seqread128k_qd8`` in ``xval.json``), as
    ``{"mqsim_rate": ..., "ssdx_rate": ...}``."""
    fpr = xval["seqread128k_qd8"]["flash_per_request"]
    return {f"{who}_rate": round(_SEQ_PAGES / fpr[who]["translation_reads"]) for who in ("mqsim", "ssdx")}


def two_phase_fcfs(rate_per_us: float, chips: int, t_first: float | None, t_second: float, n: int,
                   seed: int = 1) -> float:
    """Mean latency (µs) of ``n`` Poisson arrivals at ``rate_per_us``, each a read of ``t_first`` µs on a
    uniformly random chip (none when ``None``) followed by one of ``t_second`` µs on another, every chip
    first come first served by ready time; the first tenth is left out as warm-up."""
    rnd = random.Random(seed)
    events, t = [], 0.0
    for i in range(n):
        t += rnd.expovariate(rate_per_us)
        events.append((t, i, 0, i, rnd.randrange(chips), rnd.randrange(chips)))
    heapq.heapify(events)
    seq = n
    idle = [True] * chips
    waiting: list[list] = [[] for _ in range(chips)]
    arrival, lat = [0.0] * n, [0.0] * n

    def serve(c: int, now: float) -> None:
        nonlocal seq
        if idle[c] and waiting[c]:
            _, _, phase, r, nxt = heapq.heappop(waiting[c])
            idle[c] = False
            dur = t_second if phase == 1 else t_first
            heapq.heappush(events, (now + dur, seq, phase + 1, r, c, nxt))
            seq += 1

    def wait(c: int, phase: int, r: int, nxt: int, now: float) -> None:
        nonlocal seq
        heapq.heappush(waiting[c], (now, seq, phase, r, nxt))
        seq += 1
        serve(c, now)

    while events:
        now, _, kind, r, a, b = heapq.heappop(events)
        if kind == 0:  # arrival
            arrival[r] = now
            if t_first is None:
                wait(b, 1, r, b, now)
            else:
                wait(a, 0, r, b, now)
            continue
        idle[a] = True
        if kind == 1:  # first read done: the second waits on its chip
            wait(b, 1, r, b, now)
        else:
            lat[r] = now - arrival[r]
        serve(a, now)
    kept = lat[n // 10:]
    return sum(kept) / len(kept)


def closed_loop_channels(channels: int, chips_per_channel: int, qd: int, arbitration: bool, n: int,
                         t_read: float = T_R, t_cmd: float = T_CMD, seed: int = 1) -> dict[str, float]:
    """``qd`` closed-loop random 4 KiB reads without translation reads on ``channels × chips_per_channel``
    chips (chip ``c`` on channel ``c mod channels``) until ``n`` complete: IOPS and mean latency (µs) by
    Little's law over the last nine tenths (:func:`reads_on_channels`)."""
    return reads_on_channels(channels, chips_per_channel, random_4k(channels * chips_per_channel, False),
                             arbitration, n, qd=qd, t_read=t_read, t_cmd=t_cmd, seed=seed)


def reads_on_channels(channels: int, chips_per_channel: int, request, arbitration: bool, n: int, *,
                      qd: int | None = None, rate_per_us: float | None = None, t_read: float = T_R,
                      t_cmd: float = T_CMD, host_b_per_us: float | None = None, warmup: float = 0.1,
                      map_first: bool = True, seed: int = 1) -> dict[str, float]:
    """Reads that may first need a translation read, on ``channels × chips_per_channel`` chips (chip ``c``
    on channel ``c mod channels``), closed loop at queue depth ``qd`` or open loop (Poisson arrivals at
    ``rate_per_us``), until ``n`` complete: IOPS (closed loop), the mean and the 99th percentile of the
    latency (µs) of all but the first ``warmup`` of them, and the translation reads per request.

    ``request(rnd, i)`` gives request ``i`` as ``(tpage, map_chip, pages)``: the translation page it needs
    (``None``: none), the chip that holds it, and its page reads as ``(chip, bytes out)``.  A translation
    page is read once, moving one 512-byte sector; requests that need it while it is read wait for that
    read (MQSim's ``ArrivingMappingEntries``), and it stays cached (MQSim's 2 MiB cached mapping table
    does not fill in these runs).  A chip serves its translation reads before its data reads
    (``TSU_OutOfOrder::service_read_transaction``; with ``map_first`` false, all in one queue), each in
    arrival order, one at a time, and holds each until its data is out.  With ``arbitration`` each command
    needs the channel for ``t_cmd`` and is issued only when no read data waits on it, to the next chip in
    round-robin order with work (``TSU_Base::handle_channel_idle_signal``); without it a command goes to
    an idle chip at once and takes no channel time. With ``host_b_per_us`` a request's data then crosses the
    host link, one request at a time in the order their flash reads end (MQSim's ``Host_Interface_NVMe`` sends
    a read's data once all its transactions are serviced); without it the request ends with its last data out.
    Multi-plane merging is not modelled."""
    if (qd is None) == (rate_per_us is None):
        raise ValueError("give qd (closed loop) or rate_per_us (open loop)")
    rnd = random.Random(seed)
    chips = channels * chips_per_channel
    events: list = []
    seq = 0
    chip_busy = [False] * chips
    queued = [(deque(), deque()) for _ in range(chips)]  # translation reads, data reads
    chan_busy = [False] * channels
    data_waiting = [deque() for _ in range(channels)]
    turn = [0] * channels
    cached: set = set()
    reading: dict[Any, list[int]] = {}  # translation page being read -> requests waiting for it
    arrival: dict[int, float] = {}
    pages_left: dict[int, list] = {}
    lat: list[float] = []
    link_free = 0.0
    made = 0
    map_reads = 0

    def at(t: float, kind: int, what: tuple) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, what))
        seq += 1

    def take(c: int):
        q = queued[c][0] or queued[c][1]
        return q.popleft()

    def issue(ch: int, now: float) -> None:
        if arbitration:
            if chan_busy[ch] or data_waiting[ch]:
                return
            for i in range(chips_per_channel):
                c = ch + channels * ((turn[ch] + i) % chips_per_channel)
                if not chip_busy[c] and (queued[c][0] or queued[c][1]):
                    turn[ch] = (turn[ch] + i + 1) % chips_per_channel
                    chip_busy[c] = chan_busy[ch] = True
                    at(now + t_cmd, 1, (ch, c, take(c)))
                    return
            return
        for i in range(chips_per_channel):
            c = ch + channels * i
            if not chip_busy[c] and (queued[c][0] or queued[c][1]):
                chip_busy[c] = True
                at(now + t_read, 2, (ch, c, take(c)))

    def data_reads(r: int, now: float) -> None:
        touched = set()
        for c, out in pages_left[r][1]:
            queued[c][1].append((r, out, None))
            touched.add(c % channels)
        for ch in touched:
            issue(ch, now)

    def start(now: float) -> None:
        nonlocal made, map_reads
        r = made
        made += 1
        tpage, map_chip, pages = request(rnd, r)
        arrival[r] = now
        pages_left[r] = [len(pages), pages]
        if tpage is None or tpage in cached:
            data_reads(r, now)
        elif tpage in reading:
            reading[tpage].append(r)
        else:
            reading[tpage] = [r]
            map_reads += 1
            queued[map_chip][0 if map_first else 1].append((r, 512, tpage))
            issue(map_chip % channels, now)

    def channel_free(ch: int, now: float) -> None:
        chan_busy[ch] = False
        if data_waiting[ch]:
            chan_busy[ch] = True
            c, tr = data_waiting[ch].popleft()
            at(now + tr[1] / CHANNEL_B_PER_US, 3, (ch, c, tr))
        issue(ch, now)

    def done(r: int, now: float) -> None:
        del pages_left[r]
        lat.append(now - arrival.pop(r))
        if qd is not None:
            start(now)

    if qd is not None:
        for _ in range(qd):
            start(0.0)
    else:
        at(rnd.expovariate(rate_per_us), 0, ())
    while len(lat) < n:
        now, _, kind, what = heapq.heappop(events)
        if kind == 0:  # an arrival, and the next one drawn
            start(now)
            at(now + rnd.expovariate(rate_per_us), 0, ())
            continue
        if kind == 4:  # the data is at the host
            done(what[0], now)
            continue
        ch, c, tr = what
        if kind == 1:  # command transferred: the chip reads
            at(now + t_read, 2, what)
            channel_free(ch, now)
        elif kind == 2:  # array read done: its data goes out when the channel is free
            if chan_busy[ch]:
                data_waiting[ch].append((c, tr))
            else:
                chan_busy[ch] = True
                at(now + tr[1] / CHANNEL_B_PER_US, 3, what)
        else:  # data out: the chip is free
            chip_busy[c] = False
            r, _, tpage = tr
            if tpage is not None:  # translation page in: its waiting requests read their data
                cached.add(tpage)
                for w in reading.pop(tpage):
                    data_reads(w, now)
            else:
                pages_left[r][0] -= 1
                if pages_left[r][0] == 0:
                    if host_b_per_us is None:
                        done(r, now)
                    else:  # the data crosses the host link, requests in turn
                        link_free = max(link_free, now) + sum(b for _, b in pages_left[r][1]) / host_b_per_us
                        at(link_free, 4, (r,))
            channel_free(ch, now)
    skip = int(n * warmup)
    mean = sum(lat[skip:n]) / (n - skip)
    kept = lat[skip:n]
    p99 = float(np.percentile(kept, 99)) if kept else float("nan")  # linear, as for MQSim's logged values
    out = {"mean_us": mean, "p99_us": p99, "translation_reads_per_request": map_reads / made}
    if qd is not None:
        out["iops"] = qd / mean * 1e6
    return out


def random_4k(chips: int, translation: bool = True):
    """A ``request`` for :func:`reads_on_channels`: a 4 KiB read of a uniformly random chip, after a
    translation read on another (each request its own translation page, as random reads over MQSim's
    whole drive nearly always miss its cache)."""
    def request(rnd: random.Random, i: int):
        data = rnd.randrange(chips)
        if not translation:
            return None, 0, [(data, 4096)]
        return i, rnd.randrange(chips), [(data, 4096)]
    return request


def sequential(channels: int, chips_per_channel: int, pages: int, page_bytes: int,
               pages_per_tpage: int | None, first: int = 0):
    """A ``request`` for :func:`reads_on_channels`: request ``i`` reads ``pages`` whole pages from page
    ``first + pages × i`` on, striped channel first and then chip (MQSim's CWDP order, a chip's dies
    being one), and needs translation page ``page // pages_per_tpage`` of its first page (on a chip
    drawn once per translation page; none with ``pages_per_tpage`` None)."""
    chips = channels * chips_per_channel
    homes: dict[int, int] = {}

    def request(rnd: random.Random, i: int):
        lpa = first + pages * i
        data = [((p % channels) + channels * ((p // channels) % chips_per_channel), page_bytes)
                for p in range(lpa, lpa + pages)]
        if pages_per_tpage is None:
            return None, 0, data
        tpage = lpa // pages_per_tpage
        if tpage not in homes:
            homes[tpage] = rnd.randrange(chips)
        return tpage, homes[tpage], data
    return request


def _mqsim(ref: dict[str, Any], case: str) -> dict[str, float] | None:
    rec = ref["cases"].get(case, {})
    if "mqsim" not in rec:
        return None
    f = rec["mqsim"]["flows"][0]
    return {"iops": f["IOPS"], "mean_us": f["Device_Response_Time"], "offered_iops": rec.get("offered_iops"),
            "requests": f["Request_Count"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--requests", type=int, default=120_000)
    args = ap.parse_args(argv)
    ref = json.loads(REFERENCE.read_text())
    out: dict[str, Any] = {"benchmark": "mqsim_des", "requests": args.requests,
                           "mqsim_commit": ref["mqsim"]["commit"], "open_loop": {}, "closed_loop": {},
                           "shared_channels": {}, "host_b_per_us": HOST_B_PER_US}
    print("open-loop 4 KiB reads at 90 % (110 %, 120 %) of MQSim's QD64 rate: mean µs")
    print(f"{'case':<36}{'MQSim':>8}{'event-ordered':>15}")
    for case, chips, first in (("openread_90pct_32ch_1chip", 32, T_MAP),
                               ("openread_110pct_32ch_1chip", 32, T_MAP),
                               ("openread_120pct_32ch_1chip", 32, T_MAP),
                               ("openread_90pct_8chips_1die", 64, T_MAP),
                               ("openread_90pct_ideal_map", 32, None), ("openread_90pct", 32, T_MAP)):
        m = _mqsim(ref, case)
        rate = m["offered_iops"] / 1e6
        des = two_phase_fcfs(rate, chips, first, T_DATA, args.requests)
        out["open_loop"][case] = {"mqsim_mean_us": m["mean_us"], "des_mean_us": des, "chips": chips,
                                  "translation_read": first is not None, "channels_modelled": False}
        print(f"{case:<36}{m['mean_us']:>8.0f}{des:>15.1f}")
    print("\nclosed-loop QD64 4 KiB reads, ideal map: IOPS")
    print(f"{'case':<40}{'MQSim':>9}{'arbitration':>13}{'none':>9}")
    for case, c, k in (("randread_qd64_ideal_map_32ch_1chip", 32, 1), ("randread_qd64_ideal_map", 8, 4),
                       ("randread_qd64_ideal_map_4ch_8chips", 4, 8)):
        m = _mqsim(ref, case)
        arb = closed_loop_channels(c, k, 64, True, args.requests // 2)
        free = closed_loop_channels(c, k, 64, False, args.requests // 2)
        out["closed_loop"][case] = {"channels": c, "chips_per_channel": k, "mqsim": m, "arbitration": arb,
                                    "no_arbitration": free}
        print(f"{case:<40}{m['iops']:>9,.0f}{arb['iops']:>13,.0f}{free['iops']:>9,.0f}")
    print("\nreads on MQSim's drive with translation reads and the host link: mean µs")
    cols = ("arbitration", "no_arbitration", "no_arbitration_one_queue")
    print(f"{'case':<28}{'MQSim':>8}" + "".join(f"{c:>26}" for c in cols) + f"{'ssdx':>8}")
    xval = json.loads(XVAL.read_text())
    out["sequential_pages_per_translation_page"] = tpages = seq_pages_per_tpage(xval)
    for case, c, k, loop in _SHARED:
        m = _mqsim(ref, case)
        if "qd" in loop:
            kw = {"qd": loop["qd"]}
        else:  # as many Poisson arrivals as MQSim ran, every one counted
            kw = {"rate_per_us": m["offered_iops"] / 1e6, "warmup": 0.0}
        n = args.requests // 2 if case.startswith("randread") else int(m["requests"])
        if case.endswith("ideal_map"):  # no translation reads
            requests = {"": sequential(c, k, _SEQ_PAGES, _SEQ_PAGE_BYTES, None)}
        elif case.startswith("seq"):  # at each simulator's rate of translation reads
            requests = {k_: sequential(c, k, _SEQ_PAGES, _SEQ_PAGE_BYTES, ppt) for k_, ppt in tpages.items()}
        else:
            requests = {"": random_4k(c * k)}
        runs = {}
        for col, arb, first in zip(cols, (True, False, False), (True, True, False), strict=True):
            per = {label: reads_on_channels(c, k, req, arb, n, map_first=first, host_b_per_us=HOST_B_PER_US,
                                            **kw) for label, req in requests.items()}
            runs[col] = per.get("", per)
        if case in ("openread_110pct", "openread_120pct"):  # past the arbitrated capacity: seeds' spread
            runs["arbitration_other_seeds"] = {
                str(seed): reads_on_channels(c, k, random_4k(c * k), True, n, host_b_per_us=HOST_B_PER_US,
                                             seed=seed, **kw)["mean_us"] for seed in (2, 3)}
        ssdx = (xval.get(case) or {}).get("ssdx")
        out["shared_channels"][case] = {"channels": c, "chips_per_channel": k, "mqsim": m, **runs,
                                        "ssdx": ssdx}
        means = ["/".join(f"{v['mean_us']:.0f}" for v in (r.values() if "" not in requests else [r]))
                 for r in (runs[col] for col in cols)]
        print(f"{case:<28}{m['mean_us']:>8.0f}" + "".join(f"{v:>26}" for v in means)
              + (f"{ssdx['mean_us']:>8.0f}" if ssdx else f"{'—':>8}"))
    print("\n4 KiB reads on 32 chips with a channel each, translation reads first or in one queue: p99 µs")
    print(f"{'case':<30}{'MQSim p99':>10}{'translation first':>19}{'one queue':>11}{'ssdx':>8}")
    p99_ref = json.loads(P99.read_text())["cases"] if P99.is_file() else {}
    for case, qd in (("randread_qd64_32ch_1chip", 64), ("openread_90pct_32ch_1chip", None),
                     ("openread_110pct_32ch_1chip", None), ("openread_120pct_32ch_1chip", None)):
        m = _mqsim(ref, case)
        kw = {"qd": qd} if qd else {"rate_per_us": m["offered_iops"] / 1e6, "warmup": 0.0}
        n = args.requests // 2 if qd else int(m["requests"])
        runs = {col: reads_on_channels(32, 1, random_4k(32), False, n, map_first=first,
                                       host_b_per_us=HOST_B_PER_US, **kw)
                for col, first in (("translation_first", True), ("one_queue", False))}
        m["p99_us"] = (p99_ref.get(case) or {}).get("p99_us")
        ssdx = (xval.get(case) or {}).get("ssdx")
        out.setdefault("tails_own_channels", {})[case] = {"mqsim": m, **runs, "ssdx": ssdx}
        print(f"{case:<30}{m['p99_us'] or float('nan'):>10.0f}{runs['translation_first']['p99_us']:>19.0f}"
              f"{runs['one_queue']['p99_us']:>11.0f}" + (f"{ssdx['p99_us']:>8.0f}" if ssdx else f"{'—':>8}"))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
