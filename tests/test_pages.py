"""What the pages declare about themselves (tools/pages.py) is well-formed, and the tools
find the pages they need by declaration."""

from __future__ import annotations

import pages
import pytest
import sync_notebooks
import yaml
from book_files import ROOT, toc_files as _toc_files


@pytest.mark.parametrize("page", pages.names())
def test_declarations_are_valid(page):
    pages.kind(page)
    pages.edition(page)  # a time is checked by tests/test_pacing.py


@pytest.mark.parametrize("kind", ["glossary", "exercises", "cheat-sheet", "pacing-plan", "run-sheet"])
def test_one_page_of_each_kind_the_tools_need(kind):
    assert pages.the(kind)


def test_every_declared_page_is_in_the_book():
    toc = {f.split("/")[-1] for f in _toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))}
    declared = {p for p in pages.names() if pages.kind(p) or pages.edition(p) != "both" or pages.time(p)}
    assert declared <= toc, sorted(declared - toc)


def test_a_bad_declaration_is_named(tmp_path, monkeypatch):
    (tmp_path / "x.md").write_text("---\nkind: quizz\nedition: teachers\n---\n# X\n")
    monkeypatch.setattr(pages, "BOOK", tmp_path)
    monkeypatch.setattr(pages, "ROOT", tmp_path)
    with pytest.raises(ValueError, match="quizz"):
        pages.kind("x")
    with pytest.raises(ValueError, match="teachers"):
        pages.edition("x")
    (tmp_path / "x.md").unlink()
    (tmp_path / "y.md").write_text("---\nkind: quiz\n---\n# Y\n")
    with pytest.raises(ValueError, match="exactly one page"):
        pages.the("glossary")


def test_colab_install_comes_from_the_page():
    extra = [p for p in pages.names() if pages.front_matter(p).get("colab-install")]
    assert extra, "no page declares colab-install"
    for page in extra:
        assert pages.front_matter(page)["colab-install"] in sync_notebooks.install_source(page)
    assert "%pip install --quiet --" not in sync_notebooks.install_source("foundations")


def test_a_link_to_a_heading_with_maths_has_its_own_text():
    """A ``{ref}`label``` without a text shows the heading's title as Sphinx stores it, plain
    text, so a formula there reads as its TeX source ("Why divide by \\sqrt{d_k}"). Such a
    link is written ``[Why divide by $\\sqrt{d_k}$](#label)``, whose text MyST parses, maths
    included."""
    import re

    sources = {p: (ROOT / "book" / f"{p}.md").read_text() for p in pages.names()}
    with_maths = {m[1] for text in sources.values() for m in re.finditer(r"^\(([\w-]+)\)=\n#+ [^\n]*\$", text, re.M)}
    assert with_maths, "no heading with maths found: the pattern above is out of date"
    refs = [(p, label) for p, text in sources.items() for label in re.findall(r"\{ref\}`([\w-]+)`", text)]
    bare = [(p, label) for p, label in refs if label in with_maths]
    assert not bare, f"links showing a formula as TeX (write [title with $maths$](#label)): {bare}"
