"""MSR Cambridge volume generators (ssdx.workloads.msr): every preset is reproduced by its stream."""

import numpy as np
import pytest

from ssdx.workloads import analyse, msr
from ssdx.workloads.synthetic import _scatter, _zeta
from ssdx.workloads.traces import READ

N = 20_000
NAMES = ("prxy_0", "proj_0", "hm_0", "web_1", "prxy_1", "proj_3", "src2_1")


@pytest.fixture(scope="module", params=NAMES)
def stream(request):
    name = request.param
    c = msr.generate(name, N, seed=1)
    return msr.volume(name), c, analyse.analyse([c])


def test_the_seven_volumes_and_their_classes():
    assert tuple(msr.VOLUMES) == NAMES
    assert set(msr.WRITE_INTENSIVE) | set(msr.READ_INTENSIVE) == set(NAMES)
    assert not set(msr.WRITE_INTENSIVE) & set(msr.READ_INTENSIVE)
    for name in msr.WRITE_INTENSIVE:
        assert msr.volume(name).read_fraction < 0.5
    for name in msr.READ_INTENSIVE:
        assert msr.volume(name).read_fraction > 0.5
    for v in msr.VOLUMES.values():
        assert v.duration_s == 604_800.0
        for field in ("requests", "read_fraction", "footprint", "sequential_fraction", "zipf_theta",
                      "duration"):
            assert field in v.source  # every number is cited or labelled


def test_cited_figures():
    """The numbers REFERENCE §2 and the cited tables give."""
    assert msr.volume("prxy_0").requests == 12_518_968
    assert msr.volume("hm_0").requests == 3_993_316
    assert msr.volume("proj_0").requests == 4_224_524
    assert msr.volume("prxy_1").requests == 168_638_964
    assert msr.volume("prxy_0").read_fraction == pytest.approx(0.03, abs=0.005)
    assert msr.volume("hm_0").read_fraction == pytest.approx(0.355)
    assert msr.volume("prxy_0").read_kib == msr.volume("prxy_0").write_kib == 6.8
    assert msr.volume("hm_0").read_kib == msr.volume("hm_0").write_kib == 9.2


def test_unknown_volume_names_the_known_ones():
    with pytest.raises(KeyError) as e:
        msr.volume("usr_9")
    for name in NAMES:
        assert name in str(e.value)
    with pytest.raises(KeyError):
        msr.generate("usr_9", 10)


def test_mix_sizes_and_sequentiality_match_the_preset(stream):
    v, c, s = stream
    assert len(c) == N and s["requests"] == N
    assert s["read_fraction"] == pytest.approx(v.read_fraction, abs=0.01)
    pt = s["per_type"]
    assert pt["read"]["bytes"] / pt["read"]["commands"] / 1024 == pytest.approx(v.read_kib, rel=0.05)
    assert pt["write"]["bytes"] / pt["write"]["commands"] / 1024 == pytest.approx(v.write_kib, rel=0.05)
    assert s["sequential_fraction"] == pytest.approx(v.sequential_fraction, abs=0.02)
    assert pt["trim"]["commands"] == 0
    # the generated class agrees with seeds/001's
    assert (s["read_fraction"] < 0.5) == (v.name in msr.WRITE_INTENSIVE)


def test_offsets_aligned_and_inside_the_footprint(stream):
    v, c, _ = stream
    assert np.all(c.offset >= 0)
    assert np.all(c.offset + c.size <= int(v.footprint_gib * 2**30))
    assert np.all(c.size > 0)
    assert np.all(c.offset % 512 == 0) and np.all(c.size % 512 == 0)
    assert np.all(c.offset % 4096 == 0) and np.all(c.size % 4096 == 0)


def test_poisson_arrivals_at_the_mean_rate(stream):
    v, c, s = stream
    mean = v.duration_s / v.requests
    assert s["interarrival_s"]["mean"] == pytest.approx(mean, rel=0.05)
    assert s["interarrival_s"]["cv"] == pytest.approx(1.0, abs=0.05)  # exponential gaps
    assert np.all(np.diff(c.time_s) >= 0)


def test_random_offsets_have_the_preset_skew(stream):
    """Share of run starts on the hottest 1 % of slots equals the Zipf(θ) share of the top 1 % of ranks."""
    v, c, _ = stream
    prev_end = np.r_[-1, (c.offset + c.size)[:-1]]
    prev_op = np.r_[-1, c.op[:-1]]
    head = ~((c.op == prev_op) & (c.offset == prev_end))
    slots = v.footprint_bytes // 4096
    k = slots // 100
    hot = np.zeros(slots, bool)
    hot[_scatter(np.arange(k), slots)] = True
    share = hot[c.offset[head] // 4096].mean()
    expected = _zeta(k, v.zipf_theta) / _zeta(slots, v.zipf_theta)
    assert share == pytest.approx(expected, abs=0.03)
    assert share > 0.05  # every preset is skewed: uniform offsets would put ~1 % there


def test_time_scale_and_untimed():
    a = msr.generate("hm_0", 5000, seed=2)
    b = msr.generate("hm_0", 5000, seed=2, time_scale=10.0)
    np.testing.assert_allclose(b.time_s, a.time_s / 10.0)
    np.testing.assert_array_equal(a.offset, b.offset)
    u = msr.generate("hm_0", 5000, seed=2, timed=False)
    assert np.all(np.isnan(u.time_s))
    np.testing.assert_array_equal(u.op, a.op)
    with pytest.raises(ValueError):
        msr.generate("hm_0", 10, time_scale=0.0)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_a_seed(name):
    a, b = msr.generate(name, 3000, seed=5), msr.generate(name, 3000, seed=5)
    for f in ("time_s", "op", "offset", "size", "line"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    c = msr.generate(name, 3000, seed=6)
    assert not np.array_equal(a.offset, c.offset)


def test_small_and_empty_streams():
    assert len(msr.generate("src2_1", 0)) == 0
    c = msr.generate("prxy_0", 1, seed=0)
    assert len(c) == 1 and c.op[0] in (0, 1)
    c = msr.generate("proj_3", 200, seed=0)
    assert np.sum(c.op == READ) == 190


@pytest.mark.parametrize("name", NAMES)
def test_mean_sizes_are_exact_not_just_close(name):
    """Each type's total is whole pages of round(count x mean): the mean is exact to half a page / count."""
    v = msr.volume(name)
    c = msr.generate(name, 2000, seed=3)
    for kind, kib in ((READ, v.read_kib), (1 - READ, v.write_kib)):
        s = c.size[c.op == kind]
        if len(s):
            assert abs(s.mean() - kib * 1024) <= 2048 / len(s) + 1e-9


def test_runs_stay_inside_a_small_footprint(monkeypatch):
    """With a footprint of 1024 pages many runs start near its end: they are moved down, not cut."""
    tiny = msr.MsrVolume("tiny", 1000, 0.5, 32.0, 16.0, 1024 * 4096 / 2**30, 0.4, 0.9, 1000.0, "test")
    monkeypatch.setitem(msr.VOLUMES, "tiny", tiny)
    c = msr.generate("tiny", 20_000, seed=0)
    assert np.all(c.offset >= 0) and np.all(c.offset + c.size <= tiny.footprint_bytes)
    assert (c.offset + c.size).max() == tiny.footprint_bytes  # the end is reachable
    s = analyse.analyse([c])
    # exactly the chosen continuations: run starts that would continue by chance were moved
    pt = s["per_type"]
    assert pt["read"]["sequential_commands"] + pt["write"]["sequential_commands"] == 8000
