"""bench/engine_floor.py: the byte count behind the GPU memory floor of the batched engine step."""

import json

import pytest

from bench import engine_floor


def test_floor_counts_the_dense_carry_twice_and_the_plan_once(tmp_path):
    out = tmp_path / "floor.json"
    res = engine_floor.main(["--configs", "24", "--json", str(out)])
    floor = res["floor_bytes_per_config_request"]
    assert json.loads(out.read_text())["floor_bytes_per_config_request"] == floor
    b = res["bytes_per_config"]
    assert floor == 2 * (b["state_dense"] + b["acc_dense"]) + b["plan"]
    # the largest leaves hold at least one float32 per die position (4 ways x 8 channels)
    dies = res["layout"]["ways"] * res["layout"]["channels"]
    assert res["largest_leaves"][0]["bytes"] >= dies * 4
    # the sparse leaves (map tables, histogram) are left out of the dense count, not dropped
    assert b["state"] > b["state_dense"] and b["acc"] > b["acc_dense"]
    for d, (bw, _) in engine_floor.DEVICES.items():
        assert res["jax_batch_max_config_requests_per_s"][d] == pytest.approx(bw / floor)
