"""Synthetic workloads (ssdx.workloads.synthetic): the OS-boot article's boot log and its
back-of-envelope estimate."""

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


def test_zipf_ranks_skew_matches_zipf():
    rng = np.random.default_rng(0)
    n, theta = 1000, 0.9
    r = synthetic.zipf_ranks(rng, 400_000, n, theta)
    p = np.arange(1, n + 1.0) ** -theta
    p /= p.sum()
    share = np.mean(r < n // 10)
    assert share == pytest.approx(p[: n // 10].sum(), abs=0.01)  # ~65 % of accesses on 10 % of the slots
    assert np.mean(r == 0) == pytest.approx(p[0], rel=0.03)
    assert r.min() >= 0 and r.max() < n
    u = synthetic.zipf_ranks(rng, 100_000, n, 0.0)
    assert np.mean(u < n // 10) == pytest.approx(0.1, abs=0.01)
    with pytest.raises(ValueError):
        synthetic.zipf_ranks(rng, 10, n, 1.2)


def test_fio_like_job():
    c = synthetic.fio_like(20_000, read_fraction=0.7, block_sizes={4096: 3, 131072: 1}, span_bytes=1e9,
                           zipf_theta=0.8, seed=3, offset_bytes=1 << 30)
    s = analyse.analyse([c])
    assert s["read_fraction"] == pytest.approx(0.7, abs=0.015)
    assert np.mean(c.size == 4096) == pytest.approx(0.75, abs=0.015)
    assert c.offset.min() >= 1 << 30 and (c.offset + c.size).max() <= (1 << 30) + 1e9
    assert np.all(c.offset % 4096 == 0) and s["sequential_fraction"] < 0.01
    hot = synthetic.fio_like(20_000, span_bytes=1e9, zipf_theta=0.9, seed=3)
    cold = synthetic.fio_like(20_000, span_bytes=1e9, zipf_theta=0.0, seed=3)
    # skew concentrates the accesses: 20,000 uniform 4 KiB writes touch ~18,500 pages, zipf:0.9 ~10,900
    assert analyse.analyse([hot])["footprint_bytes"] < 0.7 * analyse.analyse([cold])["footprint_bytes"]
    seq = synthetic.fio_like(5_000, block_sizes={65536: 1}, random=False, span_bytes=1e8)
    s = analyse.analyse([seq])
    wraps = 5_000 * 65536 // int(1e8 // 65536 * 65536)
    assert s["per_type"]["write"]["random_commands"] == 1 + wraps  # the first command and each wrap
    with pytest.raises(ValueError):
        synthetic.fio_like(10, block_sizes={1000: 1})
