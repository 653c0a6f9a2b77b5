"""What the pages declare about themselves (transformer_classroom.book) is well-formed, and the tools
find the pages they need by declaration."""

from __future__ import annotations

import pytest

from book_build import sync_notebooks
from tests.book_files import ROOT
from transformer_classroom import book


@pytest.mark.parametrize("page", book.names())
def test_declarations_are_valid(page):
    book.kind(page)
    book.edition(page)  # a time is checked by tests/site/test_pacing.py


@pytest.mark.parametrize("kind", ["glossary", "exercises", "cheat-sheet", "pacing-plan", "run-sheet"])
def test_one_page_of_each_kind_the_tools_need(kind):
    assert book.the(kind)


def test_every_declared_page_is_in_the_book():
    toc = {f.split("/")[-1] for f in book.toc_files()}
    declared = {p for p in book.names() if book.kind(p) or book.edition(p) != "both" or book.time(p)}
    assert declared <= toc, sorted(declared - toc)


def test_a_bad_declaration_is_named(tmp_path, monkeypatch):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "x.md").write_text("---\nkind: quizz\nedition: teachers\n---\n# X\n")
    monkeypatch.setenv(book.ROOT_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="quizz"):
        book.kind("x")
    with pytest.raises(ValueError, match="teachers"):
        book.edition("x")
    (tmp_path / "book" / "x.md").unlink()
    (tmp_path / "book" / "y.md").write_text("---\nkind: quiz\n---\n# Y\n")
    with pytest.raises(ValueError, match="exactly one page"):
        book.the("glossary")


def test_colab_install_comes_from_the_page():
    extra = [p for p in book.names() if book.front_matter(p).get("colab-install")]
    assert extra, "no page declares colab-install"
    for page in extra:
        assert book.front_matter(page)["colab-install"] in sync_notebooks.install_source(page)
    assert "%pip install --quiet --" not in sync_notebooks.install_source("foundations")


def test_a_link_to_a_heading_with_maths_has_its_own_text():
    """A ``{ref}`label``` without a text shows the heading's title as Sphinx stores it, plain
    text, so a formula there reads as its TeX source ("Why divide by \\sqrt{d_k}"). Such a
    link is written ``[Why divide by $\\sqrt{d_k}$](#label)``, whose text MyST parses, maths
    included."""
    import re

    sources = {p: (ROOT / "book" / f"{p}.md").read_text() for p in book.names()}
    with_maths = {m[1] for text in sources.values() for m in re.finditer(r"^\(([\w-]+)\)=\n#+ [^\n]*\$", text, re.M)}
    assert with_maths, "no heading with maths found: the pattern above is out of date"
    refs = [(p, label) for p, text in sources.items() for label in re.findall(r"\{ref\}`([\w-]+)`", text)]
    bare = [(p, label) for p, label in refs if label in with_maths]
    assert not bare, f"links showing a formula as TeX (write [title with $maths$](#label)): {bare}"
