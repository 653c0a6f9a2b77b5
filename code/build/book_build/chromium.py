"""The one Chromium launch of the project: Debian's chromium, offline and quiet.

Every tool and test that drives a browser takes its executable and flags from here
(``book_build.slides`` and ``book_build.handout`` print PDFs with it, the browser tests and
``benchmarks/serve.py`` open pages with it), so a flag changes in one place. The flags keep
Chromium from any background traffic (the tests fail on a request to another host) and
from needing a GPU or a sandbox (containers, CI).

``ARGS`` are for Playwright's ``chromium.launch(executable_path=EXECUTABLE, args=ARGS)``,
which adds ``--headless`` itself; a command line without Playwright adds ``--headless``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

EXECUTABLE = shutil.which("chromium") or "/usr/bin/chromium"

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require() -> str:
    """The executable's path, or a clear error naming the make target that installs it."""
    if not Path(EXECUTABLE).exists():
        raise FileNotFoundError(f"{EXECUTABLE} is missing: run `make system-deps` (Debian's chromium)")
    return EXECUTABLE


def launch(playwright, **kwargs):
    """A Playwright browser with the project's executable and flags."""
    return playwright.chromium.launch(executable_path=require(), args=ARGS, **kwargs)
