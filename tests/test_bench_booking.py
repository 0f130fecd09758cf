"""``bench/booking.py``: the booking with ``READ_GAPS`` gaps per die follows the event-ordered reference
where the one-gap booking (the engine's before) had lost its capacity, and the engine's row is filled."""

import json
import math

from bench import booking
from ssdx.models.engine.params import READ_GAPS


def test_booking_bench_small(tmp_path):
    out = tmp_path / "booking.json"
    booking.main(["--requests", "4000", "--busy", "0.85", "--json", str(out)])
    d = json.loads(out.read_text())
    assert d["read_gaps"] == READ_GAPS and d["machine"] and d["chips"] == booking.CHIPS
    (row,) = d["rows"]
    assert row["rate_per_s"] == booking.rate_of(0.85)
    assert abs(row[f"booked_{READ_GAPS}_gaps_rel"]) < 0.10
    assert row["booked_1_gaps_rel"] > 1.0  # more than twice the first-come-first-served mean
    assert math.isfinite(row["engine_mean_us"]) and row["engine_iops"] > 0
