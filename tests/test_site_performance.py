"""What book/_ext/performance.py promises about the built site (_build/html).

The figures themselves (Lighthouse, page weight) are measured by `make bench`
(benchmarks/bench_site.py); these checks keep the changes that produce them in place.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from conftest import HTML, html_page

pytestmark = pytest.mark.book


def soup(doc: str) -> BeautifulSoup:
    return BeautifulSoup(html_page(doc).read_text(), "html.parser")


def test_every_page_has_a_description_title_and_language(html_dir, toc_files):
    problems = []
    for doc in toc_files:
        s = soup(doc)
        meta = s.select('meta[name="description"]')
        if len(meta) != 1 or len(meta[0].get("content", "")) < 40:
            problems.append(f"{doc}: no meta description of 40+ characters: {meta}")
        elif len(meta[0]["content"]) > 160:
            problems.append(f"{doc}: description longer than 160 characters")
        if not (s.title and s.title.get_text(strip=True)):
            problems.append(f"{doc}: no <title>")
        if s.html.get("lang") != "en":
            problems.append(f"{doc}: <html> has no lang='en'")
    assert not problems, "\n".join(problems)


def test_mathjax_only_where_there_is_math(html_dir, toc_files):
    for doc in toc_files:
        s = soup(doc)
        has_math = bool(s.select("article .math"))
        loads = any("mathjax" in (tag.get("src") or "") for tag in s.select("script"))
        assert loads == has_math, f"{doc}: math on the page: {has_math}, loads MathJax: {loads}"


def test_no_fontawesome_js_and_subset_icon_fonts(html_dir, toc_files):
    for doc in toc_files:
        assert "fontawesome.js" not in html_page(doc).read_text(), f"{doc} still loads fontawesome.js"
    css = (HTML / "_static" / "styles" / "pydata-sphinx-theme.css").read_text()
    fonts = re.findall(r"url\(([^)]*webfonts/[^)]*)\)", css)
    assert fonts and all(f.endswith(".subset.woff") for f in fonts), fonts
    for font in fonts:
        path = HTML / "_static" / "styles" / font
        assert path.exists() and path.stat().st_size < 20_000, f"{font}: missing or not subset"


def test_head_scripts_do_not_block_rendering(html_dir, toc_files):
    for doc in toc_files:
        head = soup(doc).head
        blocking = [
            tag["src"]
            for tag in head.select("script[src]")
            if not tag.has_attr("defer") and not tag.has_attr("async") and "documentation_options" not in tag["src"]
        ]
        assert not blocking, f"{doc}: render-blocking scripts in <head>: {blocking}"


def test_images_have_their_size(html_dir, toc_files):
    for doc in toc_files:
        for img in soup(doc).select("article img"):
            if img["src"].endswith((".png", ".jpg", ".jpeg", ".gif")):
                assert img.get("width") and img.get("height"), f"{doc}: {img['src']} has no width/height"


def test_search_page_keeps_its_scripts_in_order(html_dir):
    """search.html runs searchtools.js as it parses, and searchtools.js needs doctools.js."""
    s = BeautifulSoup((HTML / "search.html").read_text(), "html.parser")
    scripts = [tag for tag in s.select("script[src]")]
    names = [tag["src"].split("?")[0].rsplit("/", 1)[-1] for tag in scripts]
    assert "searchtools.js" in names and "doctools.js" in names
    doctools = scripts[names.index("doctools.js")]
    assert not doctools.has_attr("defer") and not doctools.has_attr("async")
