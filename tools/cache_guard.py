"""Wipe _build/ when the code the pages import has changed.

jupyter-cache (execute_notebooks: cache) re-executes a page only when the page's own
code cells change; it does not see a change under code/ or in the pinned packages,
so the site would keep outputs computed by old code. This script hashes those
inputs and, when the hash differs from the one stored at the last build, removes
the whole _build/ folder (removing only part of it can crash the next build).
Run by `make book` and `make pdf` before building.

It also wipes _build/ when pages were executed and cached but the weights of the models
that run in the pages are gone: the language-model and real-model pages write them, when
they execute, beside the site's scripts (``_build/html/interactive/charlm/`` and
``.../minilm/``); ``jupyter-book clean`` removes _build/html and keeps the cache, and a
cached page would not execute again to write them.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
STAMP = BUILD / ".inputs-sha256"
EXPORTS = ["html/interactive/charlm/charlm.json", "html/interactive/minilm/minilm.json"]  # under BUILD, written by executing pages


def inputs_hash() -> str:
    files = sorted((ROOT / "code").rglob("*.py")) + [ROOT / "requirements.txt", ROOT / "pyproject.toml"]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def main() -> int:
    current = inputs_hash()
    previous = STAMP.read_text().strip() if STAMP.exists() else None
    if BUILD.exists() and previous != current:
        print("cache_guard: code/ or the requirements changed since the last build: removing _build/")
        shutil.rmtree(BUILD)
    elif (BUILD / ".jupyter_cache").exists() and not all((BUILD / p).exists() for p in EXPORTS):
        print("cache_guard: pages are cached but the weights they export are missing: removing _build/")
        shutil.rmtree(BUILD)
    BUILD.mkdir(exist_ok=True)
    STAMP.write_text(current + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
