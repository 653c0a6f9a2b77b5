import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Fixed seeds for every test."""
    np.random.seed(0)
    torch.manual_seed(0)


# Inputs of the wrong shape for an attention function (q, k, v, mask shapes) and the
# shape its ValueError must name; shared by test_attention and test_flash.
BAD_SHAPES = [
    ((4, 8), (5, 7), (5, 3), None, "(5, 7)"),  # d_k of q vs k
    ((4, 8), (5, 8), (6, 3), None, "(6, 3)"),  # S of k vs v
    ((8,), (5, 8), (5, 3), None, "(8,)"),  # below 2-D
    ((4, 8), (5, 8), (5, 3), (4, 4), "(4, 4)"),  # mask does not broadcast
    ((2, 4, 8), (3, 5, 8), (3, 5, 3), None, "(2, 4, 8)"),  # batch dims do not broadcast
]


# --- the built book: shared by test_book_site, test_notebooks, test_pdf, test_browser --
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
PLACEHOLDER = re.compile(r"^Placeholder\.\s*$", re.MULTILINE)


def _toc_files(toc: dict) -> list[str]:
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


@pytest.fixture(scope="session")
def book_config() -> dict:
    """_config.yml."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.fixture(scope="session")
def toc_files() -> list[str]:
    """Every document of _toc.yml, root first, as 'book/name' (no suffix)."""
    return _toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))


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


@pytest.fixture(scope="session")
def html_dir() -> Path:
    """_build/html, or a clear failure telling how to build it."""
    if not (HTML / "index.html").exists():
        pytest.fail("_build/html is missing: run `make book` first (`make test` does it for you)", pytrace=False)
    return HTML


def html_page(docname: str) -> Path:
    return HTML / (docname + ".html")


def is_executable(docname: str) -> bool:
    """Whether a toc page is a MyST notebook (jupytext header): it executes, and has
    Binder/Colab launch buttons opening book/<page>.ipynb."""
    text = source(docname).read_text()
    return text.startswith("---") and "jupytext:" in text.split("\n---", 1)[0]


# --- the built site served on 127.0.0.1: shared by every browser test module ----------
import socket
import subprocess
import sys
import time
from urllib.request import urlopen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(html_dir):
    """Base URL of _build/html served by http.server; stopped after the module."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(html_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urlopen(base + "/index.html", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("http.server did not start")
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)
