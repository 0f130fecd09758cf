"""``ssdx`` console entry point (Hydra).  Thin: compose config -> call ``ssdx.tasks`` -> print.

Contract (kept stable for checks):
* ``ssdx`` — the default small sweep (``sweeps/quick.yaml``), prints a table of the best designs.
* ``ssdx experiment=aldrin_pro_fill hydra.run.dir=DIR`` — ``DIR/summary.json`` + ``fill_curve.png``.
* ``ssdx sweep=NAME hydra.run.dir=DIR [sweep.chunk_size=N]`` — ``DIR/results.parquet`` + ``summary.json``.
* A bad value exits with status 2 and a one-paragraph message naming field, value and rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from ssdx.cli import schema
from ssdx.params import ConfigError
from ssdx.paths import conf_dir, sweeps_dir


def register_sweeps() -> None:
    """Make every ``sweeps/NAME.yaml`` selectable as ``sweep=NAME``."""
    cs = ConfigStore.instance()
    for path in sorted(sweeps_dir().glob("*.yaml")):
        cs.store(group="sweep", name=path.stem, node=OmegaConf.load(path))


def _out_dir(cfg: DictConfig) -> Path:
    if cfg.get("out_dir"):
        return Path(cfg.out_dir)
    return Path(HydraConfig.get().runtime.output_dir)


def run(cfg: DictConfig) -> None:
    """Dispatch on ``cfg.task``; turn configuration errors into exit status 2."""
    from ssdx import tasks

    out = _out_dir(cfg)
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
        if cfg.task == "fill":
            s = tasks.run_fill(container, out)
            print(f'{s["drive"]} ({s["slc_mode"]}, pre-fill {s["prefill_gb"]:.0f} GB): '
                  f'{s["written_gb"]:.0f} GB in {s["time_s"]:.0f} s, mean {s["mean_mb_s"]:.0f} MB/s')
            for p in s["phases"]:
                print(f'  {p["name"]:<14} {p["start_gb"]:8.1f} -> {p["end_gb"]:8.1f} GB  '
                      f'{p["mean_mb_s"]:8.1f} MB/s')
            print(f"outputs: {out / 'summary.json'}, {out / 'fill_curve.png'}, {out / 'fill_curve.csv'}")
        elif cfg.task == "sweep":
            chunk = cfg.runner.get("chunk_size")
            s = tasks.run_sweep(container["sweep"], container, out, chunk_size=chunk,
                                progress=not cfg.get("quiet", False))
            print(f'sweep {s["sweep"]}: {s["n_configs"]} configurations '
                  f'({s["n_dropped"]} infeasible dropped) in {s["wall_s"]:.1f} s')
            print(f'best by {s["best_by"]["metric"]} per {", ".join(s["best_by"]["group_by"]) or "run"}:')
            print(s["_table"])
            print(f"outputs: {out / 'results.parquet'}, {out / 'summary.json'}")
        else:
            raise ConfigError("task", cfg.task, "must be 'sweep' or 'fill'")
    except ConfigError as e:
        print(f"ssdx: {e}", file=sys.stderr)
        sys.exit(2)


def main() -> None:
    """Console script ``ssdx``."""
    schema.register()
    register_sweeps()
    hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")(run)()


if __name__ == "__main__":
    main()
