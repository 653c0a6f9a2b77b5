"""The Colab/Binder notebooks (book/*.ipynb) and the Binder environment.

Marker ``notebooks``: the notebooks are in sync with their .md sources, carry the hidden
install cell, and each runs top to bottom in a fresh kernel of this environment (what a
reader gets with only the requirements installed). The Binder checks are fast and
unmarked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT

BOOK = ROOT / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
INSTALL_TAG = "remove-cell"


def _executable_sources() -> list[Path]:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import sync_notebooks
    finally:
        sys.path.pop(0)
    return sync_notebooks.executable_pages()


@pytest.mark.notebooks
def test_notebooks_in_sync_with_sources():
    result = subprocess.run(
        [sys.executable, "tools/sync_notebooks.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, f"notebooks out of date, run `make notebooks`:\n{result.stdout}{result.stderr}"


@pytest.mark.notebooks
def test_every_executable_page_has_a_notebook_and_back():
    sources = {p.stem for p in _executable_sources()}
    notebooks = {p.stem for p in NOTEBOOKS}
    assert sources, "no executable page (MyST notebook with a jupytext header) in book/"
    assert sources == notebooks, f"pages without notebook: {sources - notebooks}; notebooks without page: {notebooks - sources}"


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_outputs_and_an_install_cell(path, book_config):
    nb = nbformat.read(path, as_version=4)
    with_outputs = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not with_outputs, f"{path.name}: cells {with_outputs} carry outputs (commit it output-free)"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert INSTALL_TAG in first.metadata.get("tags", []), f"{path.name}: the first code cell is not tagged {INSTALL_TAG}"
    url, branch = book_config["repository"]["url"].rstrip("/"), book_config["repository"]["branch"]
    assert f"git+{url}@{branch}" in first.source, f"{path.name}: install cell does not install from {url}@{branch}"
    assert "google.colab" in first.source, f"{path.name}: install cell must do nothing outside Colab"


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom(path, monkeypatch):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # the kernel imports this checkout's transformer_lessons, installed or not
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "code"), os.environ.get("PYTHONPATH")])))
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(BOOK)}},  # cwd book/, as in the build
        allow_errors=False,  # a cell tagged raises-exception may still raise (nbclient honours the tag)
    )
    client.execute()
    tagged = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    for cell in tagged:
        assert any(o.output_type == "error" for o in cell.outputs), (
            f"{path.name}: a cell tagged raises-exception did not raise:\n{cell.source[:200]}"
        )


# --- Binder ------------------------------------------------------------------------

PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s#;]+)")


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_binder_pins_match_requirements():
    binder, project = _pins(ROOT / "binder/requirements.txt"), _pins(ROOT / "requirements.txt")
    for name in ("torch", "numpy", "matplotlib"):  # what transformer_lessons imports
        assert name in binder, f"binder/requirements.txt does not pin {name}"
    mismatched = {
        name: (version, project[name])
        for name, version in binder.items()
        if name in project and version.split("+")[0] != project[name]
    }
    assert not mismatched, f"binder/requirements.txt and requirements.txt disagree (binder, project): {mismatched}"
    extra = set(binder) - set(project)
    assert not extra, f"binder/requirements.txt pins packages the project does not: {extra}"


def test_binder_takes_the_cpu_build_of_torch():
    text = (ROOT / "binder/requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text
    assert _pins(ROOT / "binder/requirements.txt")["torch"].endswith("+cpu")


def test_binder_installs_the_package():
    post = ROOT / "binder/postBuild"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable (git update-index --chmod=+x)"
    lines = [line.strip() for line in post.read_text().splitlines() if not line.strip().startswith("#")]
    assert any(re.fullmatch(r"pip install( --no-cache-dir)? --no-deps -e \.", line) for line in lines), lines
