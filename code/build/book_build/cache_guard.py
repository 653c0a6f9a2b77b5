"""Keep the executed pages in step with the code they import.

jupyter-cache (execute_notebooks: cache) re-executes a page only when the page's own code
cells change; it does not see a change of the code a page imports or of the pinned
packages, so the site would keep outputs computed by old code. Run by ``make book`` and
``make pdf`` before building, this script compares hashes of those inputs with the ones
stored at the last build:

* the learner's package (``code/transformer_lessons``), ``requirements.txt`` and the root
  ``pyproject.toml``: every page imports them, so a change removes the whole ``_build/``
  folder (removing only part of it can crash the next build);
* the classroom (``code/classroom``) and the build (``code/build``): only the pages whose
  source imports ``transformer_classroom`` or ``book_build`` run them (in hidden cells), so a
  change removes only those pages' cache records, and touches their sources so that Sphinx
  reads them again; every other page keeps its outputs.

It also removes ``_build/`` when pages were executed and cached but the weights of the
models that run in the pages are gone: the language-model and real-model pages write them,
when they execute, beside the site's scripts (``_build/html/interactive/charlm/`` and
``.../minilm/``); ``jupyter-book clean`` removes _build/html and keeps the cache, and a
cached page would not execute again to write them.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

from transformer_classroom import book

ROOT = book.find_root()
BUILD = ROOT / "_build"
STAMP = BUILD / ".inputs-sha256"
SIDE_STAMP = BUILD / ".classroom-build-sha256"
EXPORTS = ["html/interactive/charlm/charlm.json", "html/interactive/minilm/minilm.json"]  # under BUILD, written by executing pages
SIDE_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:transformer_classroom|book_build)\b", re.MULTILINE)


def _hash(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def inputs_hash() -> str:
    """What every page runs: the learner's package and the pinned requirements."""
    return _hash(sorted((ROOT / "code" / "transformer_lessons").rglob("*.py"))
                 + [ROOT / "requirements.txt", ROOT / "pyproject.toml"])


def side_hash() -> str:
    """What only some pages run: the classroom and the build packages."""
    return _hash(sorted(p for folder in ("classroom", "build") for p in (ROOT / "code" / folder).rglob("*")
                        if p.is_file() and p.suffix in {".py", ".toml", ".mjs", ".html", ".css", ".js"}))


def side_pages() -> list[Path]:
    """The pages whose source imports the classroom or the build."""
    return [p for p in (ROOT / f"{doc}.md" for doc in book.toc_files(ROOT))
            if p.exists() and SIDE_IMPORT.search(p.read_text(encoding="utf-8"))]


def forget(pages: list[Path]) -> list[Path]:
    """Remove these pages' cache records; touch each page whose record was removed."""
    from jupyter_cache import get_cache

    from .execute_pages import config, read

    cache = get_cache(str(ROOT / config()["execute"]["cache"]))
    removed = []
    for page in pages:
        nb = read(page)
        try:
            record = cache.match_cache_notebook(nb)
        except KeyError:
            continue
        cache.remove_cache(record.pk)
        page.touch()
        removed.append(page)
    return removed


def main() -> int:
    current, side = inputs_hash(), side_hash()
    previous = STAMP.read_text().strip() if STAMP.exists() else None
    previous_side = SIDE_STAMP.read_text().strip() if SIDE_STAMP.exists() else None
    if BUILD.exists() and previous != current:
        print("cache_guard: transformer_lessons or the requirements changed since the last build: removing _build/")
        shutil.rmtree(BUILD)
    elif (BUILD / ".jupyter_cache").exists() and not all((BUILD / p).exists() for p in EXPORTS):
        print("cache_guard: pages are cached but the weights they export are missing: removing _build/")
        shutil.rmtree(BUILD)
    elif (BUILD / ".jupyter_cache").exists() and previous_side != side:
        removed = forget(side_pages())
        names = ", ".join(p.stem for p in removed) or "none cached"
        print(f"cache_guard: the classroom or the build changed: executing again only the pages that import them ({names})")
    BUILD.mkdir(exist_ok=True)
    STAMP.write_text(current + "\n")
    SIDE_STAMP.write_text(side + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
