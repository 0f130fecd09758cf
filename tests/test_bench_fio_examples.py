"""bench/fio_examples.py on job files written here: a job that runs, one refused naming its option, one of a
network engine, one in two stonewall groups and one written for a drive larger than the default."""

import json

from bench import fio_examples


def test_each_file_is_run_refused_or_named_as_no_block_device_job(tmp_path):
    ex = tmp_path / "examples"
    ex.mkdir()
    (ex / "a-read.fio").write_text("[r]\nioengine=libaio\nrw=randread\nbs=4k\nsize=1g\niodepth=4\n")
    (ex / "b-zoned.fio").write_text("[w]\nrw=write\nbs=4k\nsize=1g\nzonemode=zbd\n")
    (ex / "c-net.fio").write_text("[n]\nioengine=net\nhostname=localhost\nport=8888\nrw=write\n")
    (ex / "d-groups.fio").write_text("[global]\nbs=4k\nsize=1g\n[w]\nrw=write\n[r]\nrw=read\nstonewall\n")
    (ex / "e-large.fio").write_text("[r]\nrw=read\nbs=4k\noffset=3000g\nsize=1g\n")  # past 2 TB
    out = tmp_path / "r.json"
    fio_examples.main(["--examples", str(ex), "--requests", "200", "--json", str(out)])
    d = json.loads(out.read_text())
    rows = {r["file"]: r for r in d["rows"]}
    assert d["counts"] == {"runs": 3, "refused": 1, "not a block-device job": 1}
    assert rows["a-read.fio"]["drive"] == fio_examples.DRIVE
    assert rows["e-large.fio"]["drive"] == fio_examples.LARGE_DRIVE  # written for a larger drive
    assert rows["a-read.fio"]["groups"] == 1 and rows["d-groups.fio"]["groups"] == 2
    assert rows["b-zoned.fio"]["option"] == "zonemode" and "b-zoned.fio:5" in rows["b-zoned.fio"]["why"]
    assert rows["d-groups.fio"]["phases"] == ["run", "run"]
    assert rows["c-net.fio"]["engines"] == ["net"] and "network" in rows["c-net.fio"]["why"]
