"""Paths and readers of the book's sources and of the built site, shared by the test
modules (``from tests.book_files import ROOT, html_page``). The book's structure
(``_toc.yml``, front matter) is read by :mod:`transformer_classroom.book`, never here.
Fixtures live in conftest.py, which pytest loads itself and no test imports.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # tests/ is in the repository's root
HTML = ROOT / "_build" / "html"
PLACEHOLDER = re.compile(r"^Placeholder\.\s*$", re.MULTILINE)

# Inputs of the wrong shape for an attention function (q, k, v, mask shapes) and the
# shape its ValueError must name; shared by test_attention and test_flash.
BAD_SHAPES = [
    ((4, 8), (5, 7), (5, 3), None, "(5, 7)"),  # d_k of q vs k
    ((4, 8), (5, 8), (6, 3), None, "(6, 3)"),  # S of k vs v
    ((8,), (5, 8), (5, 3), None, "(8,)"),  # below 2-D
    ((4, 8), (5, 8), (5, 3), (4, 4), "(4, 4)"),  # mask does not broadcast
    ((2, 4, 8), (3, 5, 8), (3, 5, 3), None, "(2, 4, 8)"),  # batch dims do not broadcast
]


def source(docname: str) -> Path:
    """The source file of a toc entry ('book/intro' -> book/intro.md)."""
    for suffix in (".md", ".ipynb"):
        if (ROOT / (docname + suffix)).exists():
            return ROOT / (docname + suffix)
    raise FileNotFoundError(f"no source for {docname} in _toc.yml")


def page_title(docname: str) -> str:
    """The first '# ' heading of a page's source, with MyST/Markdown markup stripped."""
    text = source(docname).read_text()
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.DOTALL)  # front matter
    for line in text.splitlines():
        if line.startswith("# "):
            title = line[2:].strip()
            title = re.sub(r"\{[a-z:]+\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", title)  # {term}`x <y>`
            return re.sub(r"[`*_]", "", title)
    raise AssertionError(f"{docname}: no '# ' title line")


def html_page(docname: str) -> Path:
    return HTML / (docname + ".html")


def is_executable(docname: str) -> bool:
    """Whether a toc page is a MyST notebook (jupytext header): it executes, and has
    Binder/Colab launch buttons opening book/<page>.ipynb."""
    text = source(docname).read_text()
    return text.startswith("---") and "jupytext:" in text.split("\n---", 1)[0]


def scratch_copy(dest: Path) -> Path:
    """A copy of the repository's committed files in ``dest``, with what `make vendor` adds
    (KaTeX's stylesheet and fonts copied, node_modules linked): a fork, or a one-file change,
    is built there without touching this checkout."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    shutil.copytree(ROOT / "book" / "_static" / "katex", dest / "book" / "_static" / "katex")
    (dest / "node_modules").symlink_to(ROOT / "node_modules")  # npm ci's (reveal.js for the slides)
    return dest


def build_steps(python: str) -> list[list[str]]:
    """What `make book` runs, as commands for ``python`` (the strict HTML build included)."""
    jb = str(Path(python).with_name("jupyter-book"))
    return [[python, "-m", "book_build.sync_notebooks"], [python, "-m", "book_build.cache_guard"],
            [python, "-m", "book_build.execute_pages"], [jb, "build", ".", "--builder", "html", "-W", "-n", "--keep-going"]]


def copy_cache(dest: Path) -> None:
    """This checkout's executed pages (the jupyter cache, its guard's stamps, the weights the
    model pages export) into the copy ``dest``, so that its build executes only what changed."""
    if not (ROOT / "_build" / ".jupyter_cache").exists():
        raise FileNotFoundError("the execution cache is missing: run `make book` first (`make test` does it for you)")
    for rel in (".jupyter_cache", ".inputs-sha256", ".classroom-build-sha256", "html/interactive/charlm",
                "html/interactive/minilm"):
        source, target = ROOT / "_build" / rel, dest / "_build" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
