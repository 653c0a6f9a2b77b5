"""The Colab/Binder notebooks (book/*.ipynb), and the readers' environments they run in.

Marker ``notebooks``: the notebooks are in sync with their .md sources and carry the
hidden install cell; each runs top to bottom in a fresh kernel of an environment built
like Colab's and one built like Binder's (tests/notebooks/reader_envs.py says how, and how they are
cached), never in the project's .venv; neither environment has the book's build tools.
Unmarked and fast: every third-party import of every notebook is installed by
binder/requirements.txt + postBuild and by Colab + the notebook's install cell, and the
Binder pins agree with requirements.txt. Marker ``book``: every launch button opens one
of the notebooks these tests run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from tests.notebooks import reader_envs
from tests.book_files import ROOT, is_executable

BOOK = ROOT / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
INSTALL_TAG = "remove-cell"


def _executable_sources() -> list[Path]:
    from book_build import sync_notebooks

    return sync_notebooks.executable_pages()


@pytest.mark.notebooks
def test_notebooks_in_sync_with_sources():
    result = subprocess.run(
        [sys.executable, "-m", "book_build.sync_notebooks", "--check"], cwd=ROOT, capture_output=True, text=True
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


# --- the readers' environments (tests/notebooks/reader_envs.py) --------------------------------
# Every notebook runs top to bottom in a fresh kernel of an environment like Colab's and
# one like Binder's, never in this project's .venv: the .venv has the book's build tools
# (myst-nb, jupyter-book), which a reader's kernel lacks, and would hide an import of them.
# The first run builds both environments (minutes: see docs/testing.md); later runs reuse them.


def _raised_where_tagged(nb, name: str) -> None:
    for cell in nb.cells:
        if "raises-exception" in cell.metadata.get("tags", []):
            assert any(o.output_type == "error" for o in cell.outputs), (
                f"{name}: a cell tagged raises-exception did not raise:\n{cell.source[:200]}"
            )


@pytest.fixture(scope="session")
def colab_env():
    return reader_envs.get("colab")


@pytest.fixture(scope="session")
def binder_env():
    return reader_envs.get("binder")


@pytest.fixture(scope="session")
def colab_source(tmp_path_factory):
    """What the install cell installs instead of the repository: this checkout's files."""
    return reader_envs.snapshot(tmp_path_factory.mktemp("colab") / "transformer-lessons")


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_in_colab(path, colab_env, colab_source, tmp_path):
    try:
        reader_envs.reset_colab(colab_env)
    except RuntimeError:  # an earlier notebook's install cell replaced a preinstalled package (that test failed)
        colab_env = reader_envs.get("colab", rebuild=True)
    nb = reader_envs.for_colab(nbformat.read(path, as_version=4), colab_source)
    content = tmp_path / "content"  # Colab's working directory: no repository files beside the notebook
    content.mkdir()
    colab_env.execute(nb, cwd=content)
    _raised_where_tagged(nb, path.name)
    installed = colab_env.installed()
    assert "transformer-lessons" in installed, f"{path.name}: the install cell did not install transformer_lessons"
    base = colab_env.base()
    replaced = {name: (version, installed.get(name)) for name, version in base.items() if installed.get(name) != version}
    assert not replaced, f"{path.name}: the install cell replaced Colab's preinstalled packages (was, now): {replaced}"


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_in_binder(path, binder_env):
    copy = binder_env.repo / "book" / path.name  # the repository's copy, as Binder opens it
    nb = nbformat.read(copy, as_version=4)
    binder_env.execute(nb, cwd=copy.parent)
    _raised_where_tagged(nb, path.name)
    assert binder_env.installed() == binder_env.base(), f"{path.name}: running it changed Binder's packages"


PROBE = (
    "import sys, json, importlib.util as u\n"
    "found = {m: getattr(u.find_spec(m), 'origin', None) for m in "
    "('myst_nb', 'jupyter_book', 'pytest', 'nbclient', 'transformer_lessons')}\n"
    "print(json.dumps({'path': sys.path, 'prefix': sys.prefix, 'found': found}))\n"
)


@pytest.mark.notebooks
@pytest.mark.parametrize("name", ["colab", "binder"])
def test_reader_env_is_apart_from_the_project_venv(name, request):
    env = request.getfixturevalue(f"{name}_env")
    environ = env.environ()
    venv = str(ROOT / ".venv")
    assert venv not in environ["PATH"] and "PYTHONPATH" not in environ, environ["PATH"]
    result = subprocess.run([str(env.python), "-c", PROBE], env=environ, cwd=BOOK, capture_output=True, text=True, check=True)
    probe = json.loads(result.stdout)
    assert Path(probe["prefix"]) == env.venv, probe["prefix"]
    leaks = [p for p in probe["path"] if p.startswith(venv) or p.startswith(str(ROOT / "code"))]
    assert not leaks, f"{name}: the kernel's sys.path reaches the project: {leaks}"
    tools = {m: o for m, o in probe["found"].items() if m != "transformer_lessons" and o}
    assert not tools, f"{name}: the reader's environment has the book's build or test tools: {tools}"
    origin = probe["found"]["transformer_lessons"]
    if name == "binder":  # postBuild's editable install, of the repository's copy
        assert origin and origin.startswith(str(env.repo)), origin
    else:  # Colab has no transformer_lessons until an install cell runs
        assert origin is None or not origin.startswith(str(ROOT)), origin


def _with_build_only_import(path: Path, module: str = "myst_nb"):
    """Notebook ``path`` with ``from MODULE import glue`` added to its first visible code cell."""
    nb = nbformat.read(path, as_version=4)
    first = reader_envs.install_cell_index(nb)
    visible = next(c for c in nb.cells[first + 1:] if c.cell_type == "code")
    visible.source = f"from {module} import glue\n" + visible.source
    return nb


@pytest.mark.notebooks
def test_a_build_only_import_fails_in_binder(binder_env):
    nb = _with_build_only_import(binder_env.repo / "book" / "intro.ipynb")
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="No module named 'myst_nb'"):
        binder_env.execute(nb, cwd=binder_env.repo / "book")


# --- what the notebooks import, against what Binder and Colab install (no env needed) ---


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_binder_and_colab_provide_every_import(path):
    nb = nbformat.read(path, as_version=4)
    for where, provided in (("binder/requirements.txt + postBuild", reader_envs.binder_provides()),
                            ("Colab + the install cell", reader_envs.colab_provides(nb))):
        missing = reader_envs.missing_imports(nb, provided)
        assert not missing, f"{path.name} imports what {where} does not provide: {missing}"


def test_the_import_check_sees_the_pages_imports():
    imports = set()
    for path in NOTEBOOKS:
        imports |= set(reader_envs.third_party_imports(nbformat.read(path, as_version=4)))
    assert {"numpy", "torch"} <= imports, imports
    assert not imports & {"transformer_lessons", "sys", "math"}, imports


@pytest.mark.parametrize("module", ["myst_nb", "jupyter_book", "pytest"])
def test_the_import_check_reports_a_build_only_import(module):
    nb = _with_build_only_import(BOOK / "intro.ipynb", module)
    for provided in (reader_envs.binder_provides(), reader_envs.colab_provides(nb)):
        assert module in reader_envs.missing_imports(nb, provided)


def test_only_the_install_cell_looks_for_colab():
    """The Colab test fakes ``google.colab`` for the install cell only: nothing else may
    take a Colab-only branch that the test would then not run."""
    uses = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        install = reader_envs.install_cell_index(nb)
        uses += [f"{path.name} cell {i}" for i, c in enumerate(nb.cells) if i != install and "google.colab" in c.source]
    learner = ROOT / "code" / "transformer_lessons"  # what a reader's kernel runs (the build writes the install cell)
    uses += [str(p.relative_to(ROOT)) for p in learner.rglob("*.py") if "google.colab" in p.read_text()]
    assert not uses, f"code that looks for google.colab outside the install cell: {uses}"


@pytest.mark.book
def test_launch_buttons_open_a_tested_notebook(html_dir, toc_files):
    """Every Binder and Colab button opens one of the notebooks the tests above run."""
    from urllib.parse import parse_qs, urlparse

    from bs4 import BeautifulSoup

    tested = {f"book/{p.name}" for p in NOTEBOOKS}
    problems = []
    for doc in toc_files:
        html = BeautifulSoup((html_dir / f"{doc}.html").read_text(), "html.parser")
        opened = set()
        for a in html.select("a[href]"):
            url = urlparse(a["href"])
            if url.netloc == "colab.research.google.com":
                opened.add(("Colab", url.path.split("/blob/", 1)[1].split("/", 1)[1]))
            elif url.netloc == "mybinder.org":
                opened.add(("Binder", re.sub(r"^(lab/tree|tree|notebooks)/", "", parse_qs(url.query)["urlpath"][0])))
        if is_executable(doc):
            expected = {("Colab", f"{doc}.ipynb"), ("Binder", f"{doc}.ipynb")}
            if opened != expected:
                problems.append(f"{doc}: the launch buttons open {sorted(opened)}, not {sorted(expected)}")
        problems += [f"{doc}: {where} opens {p}, which no notebook test runs" for where, p in opened if p not in tested]
    assert not problems, "\n".join(problems)


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
