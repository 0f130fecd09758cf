"""Event-ordered simulations of the flash-side scheduling MQSim does, to tell its mechanisms apart by
measurement.

Two small discrete-event simulations, written from MQSim's source (Tavakkol et al., "MQSim: A Framework
for Enabling Realistic Studies of Modern Multi-Queue SSD Devices", USENIX FAST 2018; CMU-SAFARI/MQSim
commit ``7ec40e3``) and independent of ssdx's engine.  Both hold a chip until its read data is out
(MQSim's ``WAIT_FOR_DATA_OUT``) and serve one command per chip at a time (``TSU_OutOfOrder`` issues only
to an idle chip, and ``TSU_Base::issue_command_to_chip`` to one die of it).

* :func:`two_phase_fcfs` — open-loop (Poisson) reads that each read a translation page on a uniformly
  random chip and then their data on another; every chip serves what waits on it in the order it became
  ready.  No channel is modelled: it is the chips' queueing alone, the exact answer for a drive whose
  chips each own a channel.
* :func:`closed_loop_channels` — closed-loop random reads without translation reads on ``C`` channels of
  ``K`` chips.  A data out needs its channel; with ``arbitration`` a command needs it too, and only when
  no read data waits on it: after each transfer the channel first serves waiting read data
  (``NVM_PHY_ONFI_NVDDR2::Execute_simulator_event``), and only then is one command issued to the next
  chip in round-robin order with work queued (``TSU_Base::handle_channel_idle_signal``).  Without it a
  command goes to an idle chip at once.

``python -m bench.mqsim_des --json PATH`` runs both against MQSim's committed figures
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

from bench.mqsim_xval import DEFAULT_DRIVE

T_R = DEFAULT_DRIVE["Page_Read_Latency"] / 1e3  # µs, MQSim's default drive (its ssdconfig.xml)
CHANNEL_B_PER_US = DEFAULT_DRIVE["Channel_Transfer_Rate"] * DEFAULT_DRIVE["Flash_Channel_Width"]  # B/µs
T_MAP = T_R + 512 / CHANNEL_B_PER_US  # a translation read moves one 512-byte sector
T_DATA = T_R + 4096 / CHANNEL_B_PER_US  # a 4 KiB data read
#: µs, a one-plane read command on the channel: MQSim's ONFI_Channel_NVDDR2::ReadCommandTime[1] =
#: t_CS + 6 t_WC + t_WB + t_RR with its default timings (20, 25, 100 and 20 ns)
T_CMD = (20 + 6 * 25 + 100 + 20) / 1e3
REFERENCE = Path(__file__).resolve().parent / "results" / "mqsim_xval" / "mqsim_reference.json"


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
                         t_read: float = T_R, t_out: float = 4096 / CHANNEL_B_PER_US, t_cmd: float = T_CMD,
                         seed: int = 1) -> dict[str, float]:
    """``qd`` closed-loop random reads on ``channels × chips_per_channel`` chips (chip ``c`` on channel
    ``c mod channels``) until ``n`` complete: IOPS and mean latency (µs) by Little's law over the last
    nine tenths."""
    rnd = random.Random(seed)
    chips = channels * chips_per_channel
    events: list = []
    seq = 0
    chip_busy = [False] * chips
    queued = [deque() for _ in range(chips)]
    chan_busy = [False] * channels
    data_waiting = [deque() for _ in range(channels)]
    turn = [0] * channels
    arrival: dict[int, float] = {}
    lat: list[float] = []
    next_id = 0

    def at(t: float, kind: int, what: tuple) -> None:
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, what))
        seq += 1

    def issue(ch: int, now: float) -> None:
        if arbitration:  # one command, to the next chip in turn with work, when no data waits
            if chan_busy[ch] or data_waiting[ch]:
                return
            for i in range(chips_per_channel):
                c = ch + channels * ((turn[ch] + i) % chips_per_channel)
                if not chip_busy[c] and queued[c]:
                    turn[ch] = (turn[ch] + i + 1) % chips_per_channel
                    chip_busy[c] = chan_busy[ch] = True
                    at(now + t_cmd, 1, (ch, c, queued[c].popleft()))
                    return
            return
        for i in range(chips_per_channel):  # every idle chip with work starts at once
            c = ch + channels * i
            if not chip_busy[c] and queued[c]:
                chip_busy[c] = True
                at(now + t_read, 2, (ch, c, queued[c].popleft()))

    def request(now: float) -> None:
        nonlocal next_id
        c = rnd.randrange(chips)
        arrival[next_id] = now
        queued[c].append(next_id)
        next_id += 1
        issue(c % channels, now)

    def channel_free(ch: int, now: float) -> None:
        chan_busy[ch] = False
        if data_waiting[ch]:  # waiting read data first
            chan_busy[ch] = True
            at(now + t_out, 3, data_waiting[ch].popleft())
        issue(ch, now)  # with arbitration, only if no data went out

    for _ in range(qd):
        request(0.0)
    while len(lat) < n:
        now, _, kind, what = heapq.heappop(events)
        ch, c, r = what
        if kind == 1:  # command transferred: the chip reads
            at(now + t_read, 2, what)
            channel_free(ch, now)
        elif kind == 2:  # array read done: the data goes out when the channel is free
            if chan_busy[ch]:
                data_waiting[ch].append(what)
            else:
                chan_busy[ch] = True
                at(now + t_out, 3, what)
        else:  # data out: the chip is free, the request done, the next one issued
            chip_busy[c] = False
            lat.append(now - arrival.pop(r))
            request(now)
            channel_free(ch, now)
    mean = sum(lat[n // 10:]) / (n - n // 10)
    return {"iops": qd / mean * 1e6, "mean_us": mean}


def _mqsim(ref: dict[str, Any], case: str) -> dict[str, float] | None:
    rec = ref["cases"].get(case, {})
    if "mqsim" not in rec:
        return None
    f = rec["mqsim"]["flows"][0]
    return {"iops": f["IOPS"], "mean_us": f["Device_Response_Time"], "offered_iops": rec.get("offered_iops")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--requests", type=int, default=120_000)
    args = ap.parse_args(argv)
    ref = json.loads(REFERENCE.read_text())
    out: dict[str, Any] = {"benchmark": "mqsim_des", "requests": args.requests,
                           "mqsim_commit": ref["mqsim"]["commit"], "open_loop": {}, "closed_loop": {}}
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
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
