"""The build helpers in tools/: stale-output guard and the PDF tables of contents."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def guard(tmp_path, monkeypatch):
    """tools/cache_guard.py pointed at a tiny project in tmp_path."""
    module = _load("cache_guard")
    (tmp_path / "code" / "pkg").mkdir(parents=True)
    (tmp_path / "code" / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "BUILD", tmp_path / "_build")
    monkeypatch.setattr(module, "STAMP", tmp_path / "_build" / ".inputs-sha256")
    return module, tmp_path


def test_cache_guard_keeps_build_while_code_is_unchanged(guard):
    module, root = guard
    module.main()
    (root / "_build" / "page.html").write_text("cached")
    module.main()
    assert (root / "_build" / "page.html").exists()


@pytest.mark.parametrize("changed", ["code/pkg/mod.py", "requirements.txt", "pyproject.toml", "code/pkg/new.py"])
def test_cache_guard_wipes_build_when_an_input_changes(guard, changed):
    module, root = guard
    module.main()
    (root / "_build" / "page.html").write_text("stale")
    (root / changed).write_text("# edited\n")
    module.main()
    assert not (root / "_build" / "page.html").exists()
    assert (root / "_build" / ".inputs-sha256").exists()


def test_pdf_tables_of_contents():
    module = _load("pdf_toc")
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
    """Both editions share every page before the instructor pages (tools/pdf_toc.py)."""
    module = _load("pdf_toc")
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
