"""Execute the shipped notebooks end to end at small sizes; their ``assert`` cells make them tests.

Each notebook has a code cell tagged ``parameters`` holding its run sizes; we insert a cell right
after it with smaller values (so the override wins) and run every cell in a fresh ``python3``
kernel (registered by ipykernel) started in the repository root with the repository on
``PYTHONPATH``.  Any cell that raises fails the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]

#: notebook -> source of the cell injected after its ``parameters`` cell.
NOTEBOOKS = {
    "01_slc_cache.ipynb": "N_STEPS = 128; SWEEP_N = 64",
    "02_thermal_tmt.ipynb": "DURATION_S = 600.0; GRID_STEP = 3; ALDRIN_DURATION_S = 1200.0",
    "03_steady_state.ipynb": "N_BLOCKS = 256; ROUNDS = 6; SPARES = [0.1, 0.2, 0.3]; PAGES = [16, 64]; "
                             "FILL_SETS = 24",
    "04_qd1_boot.ipynb": "PROBE = 200; QD_REQUESTS = 2000",
    # a small SCM (2 % / 4 % of the footprint) fills and turns over within a few thousand requests
    "05_hybrid_nand.ipynb": "REQUESTS = 3000; WORKLOADS = ['proj_0', 'web_1', 'proj_3']; LAT_GRID = 3; "
                            "MAP_WORKLOADS = ['web_1']; SCM_RATIOS = [0.02, 0.04]",
    # the clean curve is fitted exactly with less search; 4 GB fill steps still split the 64 GB copies
    "06_fit_your_drive.ipynb": "FIT = {'n_steps': 128, 'adam_steps': 100, 'lbfgs_steps': 50, "
                               "'grid_points': 16}; N_STEPS = 128; PREFILLS = 4; "
                               "GAPS_S = [0, 30, 90, 300, 900]; DURATION_S = 600.0",
}


def _inject_after_parameters(nb, source: str) -> None:
    tagged = [i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "the notebook needs exactly one code cell tagged 'parameters'"
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(tagged[0] + 1, cell)


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_executes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        f"{name} is stored with outputs; clear them before committing"
    _inject_after_parameters(nb, NOTEBOOKS[name])

    # The kernel inherits os.environ: make `import ssdx` work from the repo root.
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) if not old else os.pathsep.join([str(ROOT), old]))

    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()  # raises CellExecutionError on the first failing cell
