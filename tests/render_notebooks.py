"""Store the notebooks executed at the test suite's small sizes, with their figures.

``python -m tests.render_notebooks [NAME ...]`` runs each notebook (default: all of
``tests.test_notebooks.NOTEBOOKS``) as the suite does and writes it back with its outputs, so that a
reader of the repository sees its tables and figures without running it.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time

import nbformat

from tests.test_notebooks import NOTEBOOKS, ROOT, execute


def tidy(nb) -> None:
    """Outputs a reader can use anywhere: paths of the machine that ran them made relative (the
    repository) or generic (temporary directories), and library warnings on stderr left out."""
    tmp = re.compile(re.escape(tempfile.gettempdir()) + r"/[^/\s'\"\]]+")

    def clean(text: str) -> str:
        return tmp.sub("<temporary directory>", text.replace(str(ROOT) + "/", ""))

    for c in nb.cells:
        if c.cell_type != "code":
            continue
        outs = []
        for o in c.outputs:
            if o.get("output_type") == "stream":
                if o.get("name") == "stderr" and "site-packages" in o.get("text", ""):
                    continue
                o["text"] = clean(o["text"])
            for key in ("text/plain", "text/html", "text/markdown"):
                if key in o.get("data", {}):
                    o["data"][key] = clean(o["data"][key])
            outs.append(o)
        c.outputs = outs


def main(argv: list[str]) -> int:
    names = argv or sorted(NOTEBOOKS)
    unknown = [n for n in names if n not in NOTEBOOKS]
    if unknown:
        print(f"unknown notebook(s): {', '.join(unknown)}; known: {', '.join(sorted(NOTEBOOKS))}")
        return 2
    for name in names:
        t0 = time.perf_counter()
        nb = execute(name)
        tidy(nb)
        nbformat.write(nb, ROOT / "notebooks" / name)
        print(f"{name}: executed in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
