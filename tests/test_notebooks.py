"""Execute the shipped notebooks end to end at small sizes; their ``assert`` cells make them tests.

Each notebook has a code cell tagged ``parameters`` holding its run sizes; we insert a cell right
after it with smaller values (so the override wins) and run every cell in a fresh ``python3``
kernel (registered by ipykernel) started in the repository root with the repository on
``PYTHONPATH``.  Any cell that raises fails the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FAST_COMPILE_FLAG

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
    # the clean curve is fitted exactly with less search (the coordinate search keeps its 32 points: with
    # 16 the nine rules' capped fit stops 0.2 % short on the reserve); 4 GB fill steps still split the
    # 64 GB copies
    "06_fit_your_drive.ipynb": "FIT = {'n_steps': 128, 'adam_steps': 100, 'lbfgs_steps': 50, "
                               "'grid_points': 32}; N_STEPS = 128; PREFILLS = 4; "
                               "GAPS_S = [0, 30, 90, 300, 900]; DURATION_S = 600.0",
}


RENDERED_NOTE = ("# The stored copy of this notebook was run at these small sizes (the test suite's);\n"
                 "# delete this cell to run the study at the sizes of the cell above.\n")


def prepare(nb, name: str) -> None:
    import nbformat

    """Put the small sizes of ``name`` in the cell after the one tagged ``parameters`` (replacing the
    stored copy's cell of small sizes, or inserting one), so they win over the study's own sizes."""
    tags = lambda c: c.get("metadata", {}).get("tags", [])  # noqa: E731
    nb.cells[:] = [c for c in nb.cells if "injected-parameters" not in tags(c)]
    tagged = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "parameters" in tags(c)]
    assert len(tagged) == 1, "the notebook needs exactly one code cell tagged 'parameters'"
    cell = nbformat.v4.new_code_cell(RENDERED_NOTE + NOTEBOOKS[name],
                                     metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(tagged[0] + 1, cell)


def execute(name: str):
    """``notebooks/name`` run end to end at its small sizes in a fresh ``python3`` kernel started in the
    repository root with the repository on ``PYTHONPATH``; the executed notebook (raises
    ``CellExecutionError`` on the first failing cell).  Needs the ``validation`` extra (nbclient,
    nbformat and ipykernel)."""
    import nbclient
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    prepare(nb, name)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "MPLBACKEND", "XLA_FLAGS")}
    old = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = str(ROOT) if not old else os.pathsep.join([str(ROOT), old])
    os.environ.pop("MPLBACKEND", None)  # the kernel's own (inline) backend, so figures are outputs
    # the kernel compiles as a reader's would, with XLA's default emitters, not the suite's faster-compiling
    # ones (a fit's last digits depend on the code XLA generates; the notebook holds its fit to 1e-3)
    flags = (saved["XLA_FLAGS"] or "").replace(FAST_COMPILE_FLAG, "").strip()
    if flags:
        os.environ["XLA_FLAGS"] = flags
    else:
        os.environ.pop("XLA_FLAGS", None)
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(ROOT)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


@pytest.mark.validation
@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_executes(name: str) -> None:
    execute(name)


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_is_stored_executed_with_its_figures(name: str) -> None:
    """A reader of the repository sees the stored run: every code cell executed, in order, at the small
    sizes of the suite, with at least one figure (``python -m tests.render_notebooks`` writes them)."""
    nb = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))  # nbformat 4's JSON
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        f"{name} is not stored executed in order: run python -m tests.render_notebooks {name}"
    small = [c for c in code if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    text = lambda c: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]  # noqa: E731
    assert len(small) == 1 and text(small[0]) == RENDERED_NOTE + NOTEBOOKS[name], \
        f"{name} was stored at other sizes than the suite's: run python -m tests.render_notebooks {name}"
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"])
    assert any("image/png" in o.get("data", {}) for c in code for o in c["outputs"]), f"{name}: no figure"
