"""Synthetic workloads (ssdx.workloads.synthetic): the seeds/003 boot log, its back-of-envelope estimate."""

import numpy as np
import pytest

from ssdx.workloads import analyse, synthetic


@pytest.mark.parametrize("seed", [0, 7])
def test_windows11_boot_matches_the_seed_log(seed):
    c = synthetic.windows11_boot(seed)
    s = analyse.analyse([c])
    table = {"read": (40_553, 6, 40_547, 1029.5, 0.14, 1029.36),
             "write": (4_938, 2, 4_936, 96.2, 0.02, 96.18)}
    for kind, (n, sq, rnd, mb, sq_mb, rnd_mb) in table.items():
        p = s["per_type"][kind]
        assert (p["commands"], p["sequential_commands"], p["random_commands"]) == (n, sq, rnd)
        for got, want in ((p["bytes"], mb), (p["sequential_bytes"], sq_mb), (p["random_bytes"], rnd_mb)):
            assert abs(got / 1e6 - want) < 0.005  # the log's two-decimal precision
    assert s["per_type"]["trim"]["commands"] == 0
    assert np.all(c.size % 512 == 0) and np.mean(c.size % 4096 == 0) > 0.999
    assert s["size_bytes"]["p50"] == 4096
    assert np.all(np.isnan(c.time_s))


def test_windows11_boot_is_seeded():
    a, b, c = synthetic.windows11_boot(1), synthetic.windows11_boot(1), synthetic.windows11_boot(2)
    np.testing.assert_array_equal(a.offset, b.offset)
    assert not np.array_equal(a.offset, c.offset)


def test_seed_method_gives_2_2_s():
    assert synthetic.seed_method_difference_s() == pytest.approx(2.2)
    assert synthetic.seed_method_difference_s(40_553, 4_938) == pytest.approx(2.2042, abs=1e-4)
