"""One contract over every sweep model of the registry, and a toy model added with one registry entry.

For each model of ``ssdx.core.registry.SWEEP_MODELS``, on a few configurations of its shipped sweep file:

* the configurations validate, and every numeric Field of the model's own parameter table, set out of its
  range in one configuration, is refused naming that field and that configuration;
* a batch gives each configuration what it gets alone (for a vmapped model: ``vmap`` of the
  per-configuration function equals the function called on each configuration alone; for the request
  engine, whose configurations share a request stream, a batch of the CPU loop or the scan equals each
  design replayed alone; for the hybrid, one replay of a stream through the batch equals each
  configuration's own replay);
* the result does not depend on how the work is cut: configurations in chunks (fluid, thermal, gc, the
  engine), a stream in chunks of lines (the hybrid, whose state carries from one chunk to the next);
* float32 agrees with float64 (the model's arithmetic is not at the edge of single precision; the engine's
  on its batched scan, the back end with a float32 path: the CPU loop computes in float64).

The toy model shows what adding a model takes: a parameter table of two Fields, a ``build`` and one
``SweepModelSpec`` line; ``ssdx.sweep.job.run_sweep`` then runs it like any other (checked against its
closed form).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import compose_config, x64

from ssdx.core import fields, registry
from ssdx.core.fields import ConfigError, Field
from ssdx.sweep import job as sweep_job

#: per model: its shipped sweep (with a short run) and the module whose Fields it validates
CASES = {
    "fluid": ("quick", {"n_steps": 24}, "ssdx.params"),
    "thermal": ("tmt_grid", {}, "ssdx.models.thermal.params"),
    "gc": ("wa_spare", {"rounds": 5}, "ssdx.models.gc.params"),
    "engine": ("engine_design", {"requests": 400}, "ssdx.models.engine.params"),
    "hybrid": ("nand_per_workload", {"requests": 600}, "ssdx.models.hybrid.params"),
}
BASE_OVERRIDES = {"thermal": ["thermal.duration_s=60", "thermal.dt_s=1.0"], "gc": ["gc.n_blocks=64"],
                  "hybrid": ["hybrid.warmup_fills=0.02"]}
ROWS = 4  # configurations taken from each sweep's space
HYBRID_VOLUME = "web_1"  # the hybrid's configurations share one stream: those of this volume
HYBRID_CHUNK_LINES = 1024  # the hybrid's stream cut finer than its default chunk


def test_every_registered_model_is_covered() -> None:
    assert sorted(CASES) == sorted(registry.SWEEP_MODELS)


class Case:
    """A model's configurations (``cols``), how they are checked (``checks``) and run: ``run(cols, dtype,
    finer, **precise)`` gives every scalar metric of every configuration, the work cut finer where
    ``finer``; ``precise``: how the precision check runs it (the engine: on its scan); ``chunk_rtol``: how
    far cutting the work may move a metric (float32 state carried over a cut, times rebased at it)."""

    def __init__(self, name: str, cols: dict, checks: list[Callable], run: Callable,
                 precise: dict | None = None, chunk_rtol: float = 2e-6) -> None:
        self.name, self.cols, self.checks, self.run = name, cols, checks, run
        self.precise, self.chunk_rtol = precise or {}, chunk_rtol


#: models whose contract cases compile programs of their own (the engine's loop and scan, the hybrid's
#: replay at two batch sizes): in the validation tier, beside the fast tier's own checks of the same
#: invariances (test_engine_cpu: padding and chunks; test_hybrid: a larger layout and chunk)
HEAVY = ("engine", "hybrid")
TIERED = [pytest.param(n, marks=pytest.mark.validation) if n in HEAVY else n for n in sorted(CASES)]


@pytest.fixture(scope="module", params=TIERED)
def model_case(request) -> Case:
    name = request.param
    sweep_name, short, _ = CASES[name]
    cfg = compose_config(f"sweep={sweep_name}", *BASE_OVERRIDES.get(name, []))
    sweep = {**cfg["sweep"], **short}
    if name == "hybrid":
        return _hybrid_case(sweep, cfg)
    cols, ok, _, _ = sweep_job.sweep_space(sweep, cfg)  # ok: the feasible ones (a sweep may drop others)
    # spread over the space: the engine's designs then differ in cell type, channels and write-back
    pick = np.linspace(0, int(ok.sum()) - 1, ROWS).astype(int)
    cols = {k: np.asarray(v)[ok][pick] for k, v in cols.items()}
    spec = registry.SWEEP_MODELS[name]
    checks = [registry.resolve(c) for c in ("ssdx.params:validate", *spec.checks)]
    if spec.rows is not None:
        return Case(name, cols, checks, lambda c, dtype=np.float32, finer=False, backend=None:
                    _rows(sweep, cfg, c, dtype, finer, backend), precise={"backend": "jax"})
    return Case(name, cols, checks,
                lambda c, dtype=np.float32, finer=False: _vmapped(name, sweep, cfg, c, dtype, finer))


def _vmapped(name, sweep, cfg, cols, dtype, finer: bool) -> dict[str, np.ndarray]:
    """Every scalar metric of every configuration, vmapped per static group (in two chunks where
    ``finer``)."""
    spec = registry.SWEEP_MODELS[name]
    trees, groups, factory, _ = registry.resolve(spec.build)(cols, sweep, cfg, dtype)
    out: dict[str, np.ndarray] = {}
    n = len(cols["drive.nand"])
    for flag, idx in groups:
        fn = jax.jit(jax.vmap(factory(flag)))
        parts = [idx[:1], idx[1:]] if finer else [idx]
        for part in (p for p in parts if len(p)):
            res = fn(*jax.tree_util.tree_map(lambda x, p=part: jnp.asarray(x)[p], trees))
            for k, v in res.items():
                v = np.asarray(v)
                if v.ndim == 1:  # scalars per configuration (per-round arrays are not in the table)
                    out.setdefault(k, np.full(n, np.nan))[part] = v
    return out


def _rows(sweep, cfg, cols, dtype, finer: bool, backend: str | None) -> dict[str, np.ndarray]:
    """The request engine's metrics of the designs ``cols`` through its sweep runner (on ``backend``, else
    the configured one), in chunks of 3 designs where ``finer``, else one."""
    n = len(cols["drive.nand"])
    if backend is not None:
        cfg = {**cfg, "engine": {**cfg["engine"], "backend": backend}}
    table = sweep_job._run_rows(sweep, cfg, cols, dtype, 3 if finer else n, progress=False)[0]
    names = registry.SWEEP_MODELS["engine"].metric_names()
    return {m: table.column(m).to_numpy().astype(float) for m in names if m in table.column_names}


def _hybrid_case(sweep, cfg) -> Case:
    """The hybrid's first :data:`ROWS` configurations of :data:`HYBRID_VOLUME` in its sweep, replaying
    that volume's stream (one per workload) on the layout of the four, as a hybrid sweep does."""
    from ssdx.models.hybrid import jobs
    from ssdx.models.hybrid import params as hybrid_params

    cols = jobs.sweep_columns(sweep, cfg)
    idx = np.flatnonzero(np.asarray(cols["workload.msr"]).astype(str) == HYBRID_VOLUME)[:ROWS]
    cols = {k: np.asarray(v)[idx] for k, v in cols.items()}
    fp = jobs.footprint_hint(HYBRID_VOLUME, cfg["workload"])
    capacity = lambda f: int(hybrid_params.capacity_lines(cols, np.full(ROWS, f)).max())  # noqa: E731
    st = jobs.stream(HYBRID_VOLUME, cfg["workload"], int(sweep["requests"]), capacity,
                     float(cfg["hybrid"]["warmup_fills"]), threshold=float(np.max(cols["hybrid.threshold"])))
    floor = hybrid_params.sizes(cols, np.full(ROWS, fp))

    def run(c, dtype=np.float32, finer=False) -> dict[str, np.ndarray]:
        kw = {"chunk_len": HYBRID_CHUNK_LINES} if finer else {}
        res = jobs.run_group(c, fp, st, dtype=dtype, floor=floor, **kw)
        return {k: np.asarray(v, float) for k, v in res.items() if np.ndim(v) == 1}

    check = lambda c: hybrid_params.validate(c, np.full(len(c["hybrid.nand"]), fp))  # noqa: E731
    return Case("hybrid", cols, [check], run, chunk_rtol=1e-5)


@pytest.mark.parametrize("model_case", sorted(CASES), indirect=True)  # no compile: every model, fast tier
def test_configurations_validate_and_each_field_is_named_when_broken(model_case) -> None:
    case = model_case
    for check in case.checks:
        check(case.cols)  # the shipped configurations are valid
    table: dict[str, Field] = importlib.import_module(CASES[case.name][2]).RANGES
    tested = 0
    for f in table.values():
        if f.name not in case.cols or f.also is not None:
            continue
        bad = {k: np.array(v, copy=True) for k, v in case.cols.items()}
        bad[f.name] = bad[f.name].astype(float)
        bad[f.name][1] = f.hi * 2 + 1 if math.isfinite(f.hi) else f.lo - 1
        with pytest.raises(ConfigError) as e:
            for check in case.checks:
                check(bad)
        assert e.value.field == f.name and e.value.row == 1, (f.name, str(e.value))
        tested += 1
    assert tested >= 2


def test_a_batch_gives_each_configuration_what_it_gets_alone(model_case) -> None:
    case = model_case
    batch = case.run(case.cols)
    for i in (0, ROWS - 1):
        one = case.run({k: v[i:i + 1] for k, v in case.cols.items()})
        for k, v in one.items():
            np.testing.assert_allclose(v[0], batch[k][i], rtol=2e-6, atol=1e-9,
                                       err_msg=f"{case.name}.{k}[{i}]")


def test_chunking_does_not_change_results(model_case) -> None:
    case = model_case
    whole = case.run(case.cols)
    finer = case.run(case.cols, finer=True)
    for k in whole:
        np.testing.assert_allclose(finer[k], whole[k], rtol=case.chunk_rtol, atol=1e-9,
                                   err_msg=f"{case.name}.{k}")


def test_float32_agrees_with_float64(model_case) -> None:
    case = model_case
    single = case.run(case.cols, **case.precise)
    with x64():
        double = case.run(case.cols, dtype=np.float64, **case.precise)
    for k, v in double.items():
        finite = np.abs(v[np.isfinite(v)])
        scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0  # NaN: undefined in both
        np.testing.assert_allclose(single[k], v, rtol=2e-3, atol=2e-3 * scale, err_msg=f"{case.name}.{k}")


# ------------------------------------------------------------------------------------------ a toy model

#: the toy model's parameters: one declaration each (unit, range, default, meaning)
TOY_FIELDS = fields.table(
    Field("toy.size_gb", "GB", 0.0, 1e6, lo_open=True, default=100.0, doc="data to write, GB"),
    Field("toy.rate_mb_s", "MB/s", 0.0, 1e5, lo_open=True, default=500.0, doc="write rate, MB/s"),
)


def toy_columns(base_cfg) -> dict[str, np.ndarray]:
    """The toy's base columns: each Field at its default."""
    return {f.name: np.array([f.default], float) for f in TOY_FIELDS.values()}


def toy_validate(cols) -> None:
    fields.check(TOY_FIELDS, cols)


def toy_build(cols, sweep, base_cfg, dtype=np.float32):
    """Runner inputs: one tree of the two fields, one static group, the per-configuration function."""
    tree = (np.asarray(cols["toy.size_gb"], dtype), np.asarray(cols["toy.rate_mb_s"], dtype))
    model = lambda _flag: lambda size, rate: {"time_s": size * 1e3 / rate}  # noqa: E731
    return tree, [(False, np.arange(len(tree[0])))], model, 1


def test_a_toy_model_needs_one_registry_entry(tmp_path: Path, monkeypatch) -> None:
    here = __name__
    monkeypatch.setitem(registry.SWEEP_MODELS, "toy", registry.SweepModelSpec(
        "toy", "ssdx.report.console:sweep", base_columns=f"{here}:toy_columns",
        checks=(f"{here}:toy_validate",), build=f"{here}:toy_build", blocks=("drive", "workload"),
        metrics=("time_s",)))
    cfg = compose_config("sweep=quick")
    sweep = {"name": "toy", "model": "toy", "chunk_size": 3, "on_invalid": "error", "base": {},
             "space": {"grid": {"toy.size_gb": [10.0, 20.0], "toy.rate_mb_s": [100.0, 250.0, 400.0]}},
             "report": {"sort_by": "time_s", "columns": ["toy.size_gb", "toy.rate_mb_s", "time_s"]}}
    sweep_job.run_sweep(sweep, cfg, tmp_path, progress=False)
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == 6
    np.testing.assert_allclose(df["time_s"], df["toy.size_gb"] * 1e3 / df["toy.rate_mb_s"], rtol=1e-6)
    sweep["space"]["grid"]["toy.rate_mb_s"] = [100.0, -5.0]
    with pytest.raises(ConfigError) as e:
        sweep_job.run_sweep(sweep, cfg, tmp_path / "bad", progress=False)
    assert e.value.field == "toy.rate_mb_s" and "write rate, MB/s" in str(e.value)
