"""One contract over every sweep model the registry runs in the chunked runner, and a toy model added with
one registry entry.

For each model of ``ssdx.core.registry.SWEEP_MODELS`` with a ``build`` (fluid, thermal, gc), on a few
configurations of its shipped sweep file:

* the configurations validate, and every numeric Field of the model's own parameter table, set out of its
  range in one configuration, is refused naming that field and that configuration;
* ``vmap`` of the per-configuration function equals the function called on each configuration alone;
* the result does not depend on how the configurations are chunked;
* float32 agrees with float64 (the model's arithmetic is not at the edge of single precision).

The toy model shows what adding a model takes: a parameter table of two Fields, a ``build`` and one
``SweepModelSpec`` line; ``ssdx.tasks.run_sweep`` then runs it like any other (checked against its
closed form).
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from conftest import compose_config, x64

from ssdx import tasks
from ssdx.core import fields, registry
from ssdx.core.fields import ConfigError, Field

#: per model: its shipped sweep (with a short run) and the module whose Fields it validates
CASES = {
    "fluid": ("quick", {"n_steps": 24}, "ssdx.params"),
    "thermal": ("tmt_grid", {}, "ssdx.models.thermal.params"),
    "gc": ("wa_spare", {"rounds": 5}, "ssdx.models.gc.params"),
}
BASE_OVERRIDES = {"thermal": ["thermal.duration_s=60", "thermal.dt_s=1.0"], "gc": ["gc.n_blocks=64"]}
ROWS = 4  # configurations taken from the start of each sweep's space


def test_every_vmapped_model_is_covered() -> None:
    assert sorted(CASES) == sorted(n for n, s in registry.SWEEP_MODELS.items() if s.build)


@pytest.fixture(scope="module", params=sorted(CASES))
def model_case(request):
    name = request.param
    sweep_name, short, _ = CASES[name]
    cfg = compose_config(f"sweep={sweep_name}", *BASE_OVERRIDES.get(name, []))
    sweep = {**cfg["sweep"], **short}
    cols, ok, _, _ = tasks.sweep_space(sweep, cfg)  # ok: the feasible ones (a sweep may drop others)
    cols = {k: np.asarray(v)[ok][:ROWS] for k, v in cols.items()}
    return name, sweep, cfg, cols


def _outputs(name, sweep, cfg, cols, dtype=np.float32, split: int | None = None) -> dict[str, np.ndarray]:
    """Every scalar metric of every configuration, vmapped per static group (in two chunks at ``split``)."""
    spec = registry.SWEEP_MODELS[name]
    trees, groups, factory, _ = registry.resolve(spec.build)(cols, sweep, cfg, dtype)
    out: dict[str, np.ndarray] = {}
    n = len(cols["drive.nand"])
    for flag, idx in groups:
        fn = jax.jit(jax.vmap(factory(flag)))
        parts = [idx] if split is None else [idx[:split], idx[split:]]
        for part in (p for p in parts if len(p)):
            res = fn(*jax.tree_util.tree_map(lambda x, p=part: jnp.asarray(x)[p], trees))
            for k, v in res.items():
                v = np.asarray(v)
                if v.ndim == 1:  # scalars per configuration (per-round arrays are not in the table)
                    out.setdefault(k, np.full(n, np.nan))[part] = v
    return out


def test_configurations_validate_and_each_field_is_named_when_broken(model_case) -> None:
    name, sweep, cfg, cols = model_case
    spec = registry.SWEEP_MODELS[name]
    checks = [registry.resolve(c) for c in ("ssdx.params:validate", *spec.checks)]
    for check in checks:
        check(cols)  # the shipped configurations are valid
    table: dict[str, Field] = importlib.import_module(CASES[name][2]).RANGES
    tested = 0
    for f in table.values():
        if f.name not in cols or f.also is not None:
            continue
        bad = {k: np.array(v, copy=True) for k, v in cols.items()}
        bad[f.name] = bad[f.name].astype(float)
        bad[f.name][1] = f.hi * 2 + 1 if math.isfinite(f.hi) else f.lo - 1
        with pytest.raises(ConfigError) as e:
            for check in checks:
                check(bad)
        assert e.value.field == f.name and e.value.row == 1, (f.name, str(e.value))
        tested += 1
    assert tested >= 2


def test_vmap_equals_each_configuration_alone(model_case) -> None:
    name, sweep, cfg, cols = model_case
    batch = _outputs(name, sweep, cfg, cols)
    for i in (0, ROWS - 1):
        one = _outputs(name, sweep, cfg, {k: v[i:i + 1] for k, v in cols.items()})
        for k, v in one.items():
            np.testing.assert_allclose(v[0], batch[k][i], rtol=2e-6, atol=1e-9, err_msg=f"{name}.{k}[{i}]")


def test_chunking_does_not_change_results(model_case) -> None:
    name, sweep, cfg, cols = model_case
    whole = _outputs(name, sweep, cfg, cols)
    split = _outputs(name, sweep, cfg, cols, split=1)
    for k in whole:
        np.testing.assert_allclose(split[k], whole[k], rtol=2e-6, atol=1e-9, err_msg=f"{name}.{k}")


def test_float32_agrees_with_float64(model_case) -> None:
    name, sweep, cfg, cols = model_case
    single = _outputs(name, sweep, cfg, cols)
    with x64():
        double = _outputs(name, sweep, cfg, cols, dtype=np.float64)
    for k, v in double.items():
        finite = np.abs(v[np.isfinite(v)])
        scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0  # NaN: undefined in both
        np.testing.assert_allclose(single[k], v, rtol=2e-3, atol=2e-3 * scale, err_msg=f"{name}.{k}")


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
    tasks.run_sweep(sweep, cfg, tmp_path, progress=False)
    df = pd.read_parquet(tmp_path / "results.parquet")
    assert len(df) == 6
    np.testing.assert_allclose(df["time_s"], df["toy.size_gb"] * 1e3 / df["toy.rate_mb_s"], rtol=1e-6)
    sweep["space"]["grid"]["toy.rate_mb_s"] = [100.0, -5.0]
    with pytest.raises(ConfigError) as e:
        tasks.run_sweep(sweep, cfg, tmp_path / "bad", progress=False)
    assert e.value.field == "toy.rate_mb_s" and "write rate, MB/s" in str(e.value)
