"""Fixtures shared by the test modules (pytest loads this file; no test imports it).
Plain helpers and paths are in book_files.py."""

import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import numpy as np
import pytest
import torch
import yaml
from tests.book_files import HTML, ROOT
from transformer_classroom import book


@pytest.fixture(autouse=True)
def _seed():
    """Fixed seeds for every test."""
    np.random.seed(0)
    torch.manual_seed(0)


# --- the built book: shared by test_book_site, test_notebooks, test_pdf, test_browser --


@pytest.fixture(scope="session")
def book_config() -> dict:
    """_config.yml."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())


@pytest.fixture(scope="session")
def toc_files() -> list[str]:
    """Every document of _toc.yml, root first, as 'book/name' (no suffix)."""
    return book.toc_files(ROOT)


@pytest.fixture(scope="session")
def html_dir() -> Path:
    """_build/html, or a clear failure telling how to build it."""
    if not (HTML / "index.html").exists():
        pytest.fail("_build/html is missing: run `make book` first (`make test` does it for you)", pytrace=False)
    return HTML


# --- the built site served on 127.0.0.1: shared by every browser test module ----------


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
