"""The GC CLI contracts, run as a user would: wa_uniform and thnsns120_fill."""

import json

import pytest
from test_cli import ssdx

from ssdx.models.gc import wa_analytic as wa

PNG = b"\x89PNG\r\n\x1a\n"


def _summary(path):
    return json.loads((path / "summary.json").read_text())


@pytest.mark.parametrize("policy,spare,pages", [("greedy", 0.2, 32), ("fifo", 0.12, 64)])
def test_wa_uniform_contract(tmp_path, policy, spare, pages):
    r = ssdx("experiment=wa_uniform", f"gc.spare_factor={spare}", f"gc.policy={policy}",
             f"gc.pages_per_block={pages}", "gc.rounds=12", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = _summary(tmp_path)
    assert set(s) >= {"write_amplification", "steady_state_round"}
    ana = wa.greedy_wa(spare, pages) if policy == "greedy" else wa.fifo_wa(spare)
    assert s["write_amplification"] == pytest.approx(ana, rel=0.03)
    assert s["analytic_write_amplification"] == pytest.approx(ana)
    assert isinstance(s["steady_state_round"], int) and 5 <= s["steady_state_round"] <= 12
    assert len(s["wa_rounds"]) == 12 and s["precondition_wa"] == pytest.approx(1.0)
    assert (tmp_path / "wa_rounds.png").read_bytes()[:8] == PNG


@pytest.mark.parametrize("override,field", [("gc.spare_factor=0", "gc.spare_factor"),
                                            ("gc.spare_factor=1.0", "gc.spare_factor"),
                                            ("gc.spare_factor=-0.2", "gc.spare_factor"),
                                            ("gc.pages_per_block=1", "gc.pages_per_block")])
def test_wa_invalid_combinations_exit_naming_the_field(tmp_path, override, field):
    r = ssdx("experiment=wa_uniform", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and field in r.stderr
    assert not (tmp_path / "summary.json").exists()


def test_thnsns120_fill_contract(tmp_path):
    fresh, rnd, life = tmp_path / "fresh", tmp_path / "random", tmp_path / "life"
    r = ssdx("experiment=thnsns120_fill", f"hydra.run.dir={fresh}")
    assert r.returncode == 0, r.stderr
    s = _summary(fresh)
    assert set(s) >= {"fresh_mb_s", "after_drop_mb_s", "drop_onset_gib"}
    assert (fresh / "fill_sets.png").read_bytes()[:8] == PNG
    assert len(s["set_mb_s"]) == 40 + 4
    # GC starts once the NAND that holds data has been written once: 120 GiB (THNSNS120GBSP test:
    # "about 120 GiB", more than the 111.79 GiB user capacity)
    assert s["user_gib"] == pytest.approx(111.79, abs=0.01)
    assert s["gc_onset_gib"] == pytest.approx(120.0, rel=0.01) and s["gc_onset_gib"] > s["user_gib"]
    assert f'; GC starts at {s["gc_onset_gib"]:.1f} GiB written' in r.stdout
    # a sequential overwrite invalidates whole blocks in write order: no copies (the Marvell behaviour
    # of the THNSNS120GBSP test); only erases join the work, ~1 % here
    assert s["write_amplification"] == pytest.approx(1.0)
    assert 0.95 * s["fresh_mb_s"] < s["after_drop_mb_s"] < s["fresh_mb_s"]
    assert s["restored_mb_s"] == pytest.approx(s["fresh_mb_s"], rel=1e-3)
    # after a full random fill the same test writes far slower; secure erase restores the fresh speed
    r = ssdx("experiment=thnsns120_fill", "fill.random_fill=1.0", "fill.sets=20", f"hydra.run.dir={rnd}")
    assert r.returncode == 0, r.stderr
    sr = _summary(rnd)
    assert sr["write_amplification"] > 1.5 and max(sr["set_mb_s"][:20]) < 0.75 * s["fresh_mb_s"]
    # the preconditioning left no free block: GC erases from the test's first cycle
    assert sr["gc_onset_gib"] == 0.0
    assert "; GC active from the start (the random preconditioning filled the drive);" in r.stdout
    assert "GC starts at" not in r.stdout
    assert sr["restored_mb_s"] == pytest.approx(s["fresh_mb_s"], rel=1e-3)
    # life-time throttling: once the allowance is spent, writes are held to the limit, and a secure
    # erase does not restore them (THNSNS120GBSP test, a reader's comment)
    r = ssdx("experiment=thnsns120_fill", "fill.lifetime_limit_mb_s=100", "fill.lifetime_credit_gb=50",
             "fill.sets=20", f"hydra.run.dir={life}")
    assert r.returncode == 0, r.stderr
    sl = _summary(life)
    assert sl["set_mb_s"][0] == pytest.approx(s["fresh_mb_s"], rel=1e-3)
    assert sl["after_drop_mb_s"] == pytest.approx(100.0, rel=0.05)
    assert sl["restored_mb_s"] == pytest.approx(100.0, rel=0.05)


def test_thnsns120_fill_too_short_for_gc_says_gc_did_not_start(tmp_path):
    # 4 sets of 15 s write far less than the 120 GiB after which GC starts on a fresh drive
    r = ssdx("experiment=thnsns120_fill", "fill.sets=4", "fill.sets_after_erase=0",
             f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert _summary(tmp_path)["gc_onset_gib"] is None
    assert "; GC did not start during the test;" in r.stdout and "preconditioning" not in r.stdout
