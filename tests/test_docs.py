"""The documentation a user gets: the README's set-up is the two commands CI runs, every page is in the
site's navigation, every relative link and anchor resolves, and nothing cites a file outside the
repository."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_BYTES = 12 * 1024

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (MkDocs) and GitHub give a heading, for the headings
    used here: lower case, code marks and punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return re.sub(r"[\s]+", "-", s).strip("-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    for block in _code_blocks(text):
        text = text.replace(block, "")
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_readme_is_short_and_starts_with_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= README_MAX_BYTES, f"README.md is {len(text.encode())} B"
    first = _code_blocks(text)[0].strip().splitlines()
    assert len(first) == 2, first
    install, tests = first
    assert "pip install -e '.[dev]'" in install and install.rstrip().endswith(".venv/bin/ssdx")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[dev]'" in ci
    # the README's test command (the fast tier), then the same with -m validation (the full validation)
    ci_test = [ln for ln in ci.splitlines() if "pytest" in ln and not ln.lstrip().startswith(("#", "echo"))]
    want = [shlex.split(tests), [*shlex.split(tests), "-m", "validation"]]
    assert [shlex.split(ln) for ln in ci_test] == want, (ci_test, tests)
    assert "pip install -q -e '.[validation]'" in ci


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page: Path):
    text = page.read_text(encoding="utf-8")
    for block in _code_blocks(text):
        text = text.replace(block, "")
    broken = []
    for m in _LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z]+:", target):
            continue
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_every_docs_page_is_in_the_navigation_and_nothing_else():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def leaves(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for n in node:
                yield from leaves(n)
        elif isinstance(node, dict):
            for v in node.values():
                yield from leaves(v)

    listed = sorted(leaves(nav))
    assert listed == sorted(p.name for p in DOCS.glob("*.md"))


def test_docs_index_is_the_readme_with_links_rebased():
    readme = README.read_text(encoding="utf-8").replace("](docs/", "](")
    readme = "\n".join(ln for ln in readme.splitlines() if not ln.startswith("`mkdocs serve`"))
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    assert index.strip() == readme.strip(), "regenerate docs/index.md from README.md"


_EXAMPLE = re.compile(r"\bexamples/[\w./-]+\.\w+")


@pytest.mark.parametrize("page", _pages() + [ROOT / "examples" / "README.md"], ids=lambda p: p.name)
def test_every_example_file_a_page_names_is_shipped(page: Path):
    """The commands of the docs run from a fresh clone: every ``examples/...`` file they name exists, and
    every file under ``examples/`` is described in its README."""
    text = page.read_text(encoding="utf-8")
    missing = sorted({m for m in _EXAMPLE.findall(text) if not (ROOT / m).is_file()})
    assert not missing, missing
    if page.parent.name == "examples":
        shipped = [p for p in (ROOT / "examples").rglob("*") if p.is_file() and p.name != "README.md"]
        undescribed = [p for p in shipped
                       if p.name not in text and f"{p.parent.name}/*{p.suffix}" not in text]
        assert not undescribed, undescribed


_OUTSIDE = re.compile(r"seeds/\d|REFERENCE\.md|REFERENCE §|\bissue \d+\b|this task\b|\bwas lent\b")


def test_nothing_cites_files_outside_the_repository():
    """Sources are cited by publication (docs/references.md), never by a file the user does not have."""
    roots = ["README.md", "docs", "ssdx", "conf", "sweeps", "notebooks", "bench", "examples", "tests"]
    hits = []
    for r in roots:
        base = ROOT / r
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        for f in files:
            if f.suffix not in {".md", ".py", ".yaml", ".ipynb", ".fio", ".csv", ".xml"} or f.name == Path(
                    __file__).name:
                continue
            for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if _OUTSIDE.search(line):
                    hits.append(f"{f.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert not hits, "\n".join(hits[:40])


def test_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: a broken link, a page missing from the navigation or a bad anchor fails."""
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "site" / "validation" / "index.html").exists()
