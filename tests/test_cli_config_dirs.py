"""The user's own config directories: a drive preset and a sweep that live outside the package."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ssdx.cli.main import check_choices, group_options, user_config_dirs
from ssdx.params import ConfigError
from tests.test_cli import ssdx

DRIVE = """\
defaults:
  - base
  - _self_
name: my_tlc
nand: tlc
interface: pcie4x4
user_capacity_gb: 500.0
die_gbit: 512
channels: 4
dies_per_channel: 4
planes_per_die: 4
bus_mts: 1600
dram: true
slc_mode: dynamic
"""

SWEEP = """\
name: mine
n_steps: 64
space:
  grid:
    drive.dies_per_channel: [4, 8]
report:
  group_by: []
  sort_by: mean_mb_s
  ascending: false
  columns: [drive.dies_per_channel, mean_mb_s]
"""


@pytest.fixture
def user_dir(tmp_path) -> Path:
    d = tmp_path / "my_conf"
    (d / "drive").mkdir(parents=True)
    (d / "sweep").mkdir()
    (d / "drive" / "my_tlc.yaml").write_text(DRIVE)
    (d / "sweep" / "mine.yaml").write_text(SWEEP)
    return d


def test_user_config_dirs_reads_every_spelling():
    argv = ["--config-dir", "/a", "-cd", "/b", "--config-dir=/c",
            "hydra.searchpath=[file:///d,pkg://some.pkg,'file:///e']", "drive=x"]
    assert user_config_dirs(argv) == [Path(p) for p in ("/a", "/b", "/c", "/d", "/e")]
    assert user_config_dirs(["drive=x", "sweep=quick"]) == []


def test_group_options_include_the_user_directory(user_dir):
    opts = group_options([user_dir])
    assert "my_tlc" in opts["drive"] and "aldrin_pro_2tb" in opts["drive"]
    assert "mine" in opts["sweep"] and "quick" in opts["sweep"]
    check_choices(["drive=my_tlc", f"hydra.searchpath=[file://{user_dir}]"])  # accepted
    with pytest.raises(ConfigError, match="my_tlc"):
        check_choices(["drive=my_tlc"])  # without the directory the name is unknown
    with pytest.raises(ConfigError, match="existing config directory"):
        check_choices(["drive=my_tlc", f"hydra.searchpath=[file://{user_dir / 'missing'}]"])


def test_a_preset_from_the_user_directory_runs(tmp_path, user_dir):
    out = tmp_path / "run"
    r = ssdx("experiment=aldrin_pro_fill", "drive=my_tlc", "model.n_steps=64",
             f"hydra.searchpath=[file://{user_dir}]", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["drive"] == "my_tlc"
    assert s["capacity_gb"] == pytest.approx(500.0)
    # dynamic TLC cache lends the whole user space at one bit per cell: U/3
    assert s["phases"][0]["name"] == "pslc"
    assert s["phases"][0]["end_gb"] == pytest.approx(500.0 / 3, rel=1e-3)


def test_a_sweep_from_the_user_directory_runs(tmp_path, user_dir):
    out = tmp_path / "sweep"
    r = ssdx("--config-dir", str(user_dir), "sweep=mine", "drive=my_tlc", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr
    t = pq.read_table(out / "results.parquet").to_pandas()
    assert sorted(t["drive.dies_per_channel"]) == [4, 8]
    assert set(t["drive.nand"]) == {"tlc"}
    # twice the dies, at least as fast (die-limited phases double, ceilings cap them)
    by = t.set_index("drive.dies_per_channel")["mean_mb_s"]
    assert by[8] >= by[4]
