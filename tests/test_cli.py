"""The CLI contract, run as a user would: the `ssdx` console script in a subprocess."""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from ssdx.params import ConfigError

REVIEW = [("pslc", 691.0, 6579.0), ("direct_native", 868.0, 2159.0), ("folding", 2000.0, 863.0)]


#: environment variables read as a process starts (XLA's devices and flags, the platform): a run that sets
#: one needs a process of its own
STARTUP_ENV = ("SSDX_HOST_DEVICES", "XLA_FLAGS", "JAX_PLATFORMS", "JAX_ENABLE_X64")


def ssdx(*args, cwd=None, env_extra=None, fresh: bool = False) -> subprocess.CompletedProcess:
    """``ssdx ARGS`` as a user runs it: exit status, standard output and error.  Run in this process
    (:func:`ssdx_here`) unless ``fresh`` or ``env_extra`` sets a variable read at start-up
    (:data:`STARTUP_ENV`); then in a subprocess, as the console script."""
    if fresh or any(k in STARTUP_ENV for k in env_extra or {}):
        cmd = [sys.executable, "-m", "ssdx.cli.main", *args]
        env = dict(os.environ, TQDM_DISABLE="1", **(env_extra or {}))
        return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    return ssdx_here(*args, cwd=cwd, env_extra=env_extra)


def ssdx_here(*args, cwd=None, env_extra=None) -> subprocess.CompletedProcess:
    """``ssdx ARGS`` run by calling the console script's ``main()`` in this process, with its output
    captured: the exit status ``main`` leaves (0, 2 for a refusal, 1 for an uncaught error, whose traceback
    goes to the captured error output as Python's would), without a new interpreter's start-up (importing
    JAX and the models, about 2 s of CPU a run) and with this process's compiled kernels.  What a run
    changes in the process is put back: the working directory, the environment, ``sys.argv``, JAX's 64-bit
    mode (``precision=float64`` turns it on for the rest of a process) and the root logger's handlers (which
    Hydra's logging set-up would close)."""
    import contextlib
    import io
    import logging
    import traceback
    import warnings

    import jax

    from ssdx.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_argv, saved_cwd = dict(os.environ), list(sys.argv), os.getcwd()
    x64 = bool(jax.config.jax_enable_x64)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    # Hydra configures logging for each run (logging.config.dictConfig), which closes every handler the
    # process has, pytest's capturing ones included: hide them from it, and give them back after
    known = logging._handlerList[:]  # noqa: SLF001 - weak references to every handler made
    del logging._handlerList[:]
    code = 0
    try:
        os.environ.update({"TQDM_DISABLE": "1", **(env_extra or {})})
        sys.argv = ["ssdx", *args]
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            # warnings printed to the captured error output, once per place, as a fresh interpreter does
            warnings.resetwarnings()
            warnings.simplefilter("default")
            for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", quiet)
            warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(m, c, f, n, line))
            try:
                cli.main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int | None):
                    print(e.code, file=sys.stderr)
            except Exception:  # noqa: BLE001 - what the interpreter would print, and its status
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        jax.config.update("jax_enable_x64", x64)
        root.handlers[:], root.level = handlers, level
        logging._handlerList[:0] = known
        from hydra.core.global_hydra import GlobalHydra
        GlobalHydra.instance().clear()
    return subprocess.CompletedProcess(["ssdx", *args], code, out.getvalue(), err.getvalue())


def test_aldrin_fill_contract(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [p["name"] for p in s["phases"]] == [n for n, _, _ in REVIEW]
    for p, (_, end, speed) in zip(s["phases"], REVIEW):
        assert set(p) >= {"name", "start_gb", "end_gb", "mean_mb_s"}
        assert p["end_gb"] == pytest.approx(end, rel=0.05)
        assert p["mean_mb_s"] == pytest.approx(speed, rel=0.05)
    assert s["capacity_gb"] == pytest.approx(2000.0)
    assert s["mean_mb_s"] > 863
    png = tmp_path / "fill_curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "summary.json" in r.stdout
    curve = np.loadtxt(tmp_path / "fill_curve.csv", delimiter=",", skiprows=1)
    assert curve.shape == (512, 5)
    assert curve[-1, 0] == pytest.approx(2000.0, rel=1e-5)
    assert (curve[:, 4] == 0).all()  # no idle gaps: nothing folded back


@pytest.mark.parametrize("override, check", [
    ("drive.slc_mode=pure_native", lambda s: s["min_mb_s"] >= 2100 and s["max_mb_s"] <= 1.05 * s["min_mb_s"]),
    ("drive.slc_mode=pure_slc", lambda s: abs(s["capacity_gb"] - 640) / 640 < 0.05
     and [p["name"] for p in s["phases"]] == ["pslc"]),
    # phases count from the start of the run: the 333 GB cache ends 333 GB into it
    ("workload.prefill_fraction=0.5", lambda s: abs(s["phases"][0]["end_gb"] - 2000 / 6) < 1.0
     and abs(s["prefill_gb"] - 1000.0) < 1e-3),
])
def test_fill_overrides(tmp_path, override, check):
    r = ssdx("experiment=aldrin_pro_fill", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert check(json.loads((tmp_path / "summary.json").read_text()))


def test_sweep_contract_with_chunk_size(tmp_path):
    r = ssdx("sweep=quick", "sweep.chunk_size=50", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    t = pq.read_table(tmp_path / "results.parquet")
    s = json.loads((tmp_path / "summary.json").read_text())
    assert t.num_rows == s["n_configs"] == 144
    assert s["chunk_size"] == 50
    assert len(list((tmp_path / "chunks").glob("*.parquet"))) == 3
    assert "best by" in r.stdout and "results.parquet" in r.stdout


def test_bad_value_exits_nonzero_naming_the_field(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", "drive.channels=-1", f"hydra.run.dir={tmp_path}")
    assert r.returncode != 0
    assert "drive.channels" in r.stderr and "-1" in r.stderr and "integer 1 <= x <= 64" in r.stderr
    assert not (tmp_path / "summary.json").exists()
    r = ssdx("sweep=quick", "drive.planes_per_die=0", f"hydra.run.dir={tmp_path}")
    assert r.returncode != 0 and "drive.planes_per_die" in r.stderr and "configuration 0 of 144" in r.stderr
    assert not (tmp_path / "results.parquet").exists()


def test_default_job_runs_the_quick_sweep_and_prints_a_table(tmp_path):
    r = ssdx(f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert "sweep quick: 144 configurations" in r.stdout
    assert "slc_mode" in r.stdout and "mean_mb_s" in r.stdout
    s = json.loads((tmp_path / "summary.json").read_text())  # strict JSON: NaN would not parse
    assert len(s["best"]) == 12


@pytest.mark.parametrize("override, field", [
    ("model.n_steps=0", "model.n_steps"),
    ("nand.t_prog_us=inf", "nand.t_prog_us"),
    ("nand.t_prog_us=nan", "nand.t_prog_us"),
    ("nand.page_kib=nan", "nand.page_kib"),
    ("drive.die_gbit=inf", "drive.die_gbit"),
])
def test_more_bad_values_stop_before_compute(tmp_path, override, field):
    r = ssdx("experiment=aldrin_pro_fill", override, f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and field in r.stderr, r.stderr
    assert not (tmp_path / "summary.json").exists()
    r = ssdx("sweep=quick", "sweep.chunk_size=0", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "sweep.chunk_size" in r.stderr


def test_a_nan_nand_override_is_refused_not_read_as_the_catalog_value(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", "nand.t_prog_us=nan", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and not (tmp_path / "summary.json").exists()
    assert "field 'nand.t_prog_us' = nan breaks the rule: 0.01 <= x <= 1e6 us, or null for the catalog " \
        "value" in r.stderr


def test_nand_override_is_reported_and_review_curve_not_drawn_over_it(tmp_path):
    r = ssdx("experiment=aldrin_pro_fill", "nand=qlc", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["nand"] == "qlc"
    assert s["phases"][0]["end_gb"] == pytest.approx(2000 / 4, rel=1e-3)  # QLC: pSLC holds U/4


def test_a_mistyped_config_name_is_refused_in_every_group(tmp_path):
    """``experiment`` is optional in the defaults list, so Hydra ignored a wrong name there and ran the
    default sweep; now every group refuses one with its valid names, exit 2, before any compute."""
    r = ssdx("experiment=aldrin_fill", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2
    assert "'experiment'" in r.stderr and "aldrin_fill" in r.stderr and "aldrin_pro_fill" in r.stderr
    assert not list(tmp_path.iterdir())


def test_check_choices_reads_group_overrides():
    from ssdx.cli.main import check_choices, group_options

    opts = group_options()
    assert "aldrin_pro_fill" in opts["experiment"] and "nand_per_workload" in opts["sweep"]
    check_choices(["experiment=aldrin_pro_fill", "drive.channels=4", "+thermal=heatsink", "-m",
                   "sweep=quick,slc_design", "experiment=null", "hydra.run.dir=x=y"], opts)
    for bad in ("sweep=quick,slc_desing", "+thermal=heatsnk", "nand=qcl", "runner=rayy"):
        with pytest.raises(ConfigError) as e:
            check_choices([bad], opts)
        assert bad.split("=")[0].lstrip("+") in str(e.value)


def test_a_mistyped_key_of_a_typed_block_exits_2_naming_it(tmp_path):
    """``fit``, ``fill``, ``optimize``, ``boot``, ``sensitivity`` and ``validate`` have schemas as the
    groups do (``ssdx.cli.schema``): a key none of their fields holds stops before Hydra composes."""
    r = ssdx("experiment=fit_fill", "fit.curv=x.csv", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2, r.stderr
    assert "'fit.curv'" in r.stderr and "did you mean 'fit.curve'" in r.stderr
    r = ssdx("experiment=thnsns120_fill", "fill.set_seconds=3", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "'fill.set_seconds'" in r.stderr and "FillConf" in r.stderr, r.stderr
    assert not list(tmp_path.iterdir())


def test_an_error_after_a_progress_bar_starts_on_its_own_line(tmp_path):
    # bars shown (the other tests hide them): the replay's bar is open when the bad trace line stops it
    trace = tmp_path / "bad.csv"
    trace.write_text("128166372000000000,hm,0,Read,notanumber,4096,1000\n")
    env = dict(os.environ, TQDM_DISABLE="0", CI="0")
    r = subprocess.run([sys.executable, "-m", "ssdx.cli.main", "experiment=trace_replay",
                        f"workload.trace_path={trace}", f"hydra.run.dir={tmp_path / 'out'}"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2
    assert "replay: 0req" in r.stderr  # the bar was drawn
    assert any(line.startswith("ssdx: Invalid configuration") for line in r.stderr.splitlines()), r.stderr
    assert "req/s]ssdx" not in r.stderr


def test_close_open_ends_the_open_bars_with_a_newline(monkeypatch, capsys):
    from ssdx import progress

    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    b = progress.bar(None, "replay", unit="req")
    b.update(3)
    quiet = progress.bar(None, "hidden", enabled=False)
    b.refresh()
    assert not capsys.readouterr().err.endswith("\n")  # a bar's line stays open while it runs
    progress.close_open()
    err = capsys.readouterr().err
    assert err.endswith("\n") and "replay: 3req" in err and "hidden" not in err
    progress.close_open()  # nothing left open: nothing printed
    assert capsys.readouterr().err == ""
    quiet.close()


def test_help_is_ssdxs_own_and_lists_the_experiments_and_sweeps(tmp_path):
    # `ssdx --help` is what a new user types first: it names ssdx and what it does, lists the experiments
    # and the sweeps (registered at start-up) with the other groups, and shows how to run and override,
    # instead of Hydra's generic "powered by Hydra" page and the whole composed config
    r = ssdx("--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("ssdx: design-space exploration for SSDs") and "powered by Hydra" not in out
    groups = dict(line.split(": ", 1) for line in out.splitlines() if line.split(": ")[0] in
                  ("experiment", "sweep", "drive"))
    assert {"boot_qd1", "mqsim", "tmt_optimize"} <= set(groups["experiment"].split(", "))
    assert {"quick", "slc_design"} <= set(groups["sweep"].split(", "))
    assert "aldrin_pro_2tb" in groups["drive"]
    # only what a user can pick: the typed schemas stored as `base` are not choices (drive=base is refused)
    listed = [line.split(": ", 1) for line in out.split("==\n", 1)[1].split("\n\n")[0].splitlines()]
    assert {"drive", "nand", "workload", "sweep", "thermal"} <= {g for g, _ in listed}
    assert all("base" not in choices.split(", ") for _, choices in listed), listed
    # a drive of the user's own config directory is a choice too
    (tmp_path / "mine" / "drive").mkdir(parents=True)
    (tmp_path / "mine" / "drive" / "my_drive.yaml").write_text("defaults:\n  - sata_tlc_500\n")
    r = ssdx("--config-dir", str(tmp_path / "mine"), "--help", cwd=tmp_path)
    assert "my_drive" in dict(line.split(": ", 1) for line in r.stdout.splitlines()
                              if line.startswith("drive: "))["drive"]
    assert "experiment=aldrin_pro_fill" in out and "docs/commands.md" in out
    assert "user_capacity_gb" not in out  # not the whole config
