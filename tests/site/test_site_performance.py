"""What the built site (_build/html) keeps of its performance and math set-up.

The figures themselves (Lighthouse, page weight, layout shift) are measured by `make bench`
(benchmarks/bench_site.py) and, for layout shift, by tests/browser/test_browser.py; these checks
keep in place what produces them: math rendered at build time (no math script, KaTeX's
stylesheet and fonts served by the site), the lighter layout of code/build/book_build/speed/templates/layout.html,
a meta description on every page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from tests.book_files import HTML, html_page

pytestmark = pytest.mark.book

KATEX_CSS = HTML / "_static" / "katex" / "katex.min.css"
MATH_SCRIPT = re.compile(r"mathjax|katex[^/]*\.js|auto-render", re.IGNORECASE)


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
        elif re.search(r"[$\\{}]", meta[0]["content"]):
            problems.append(f"{doc}: TeX in the description: {meta[0]['content']!r}")
        if not (s.title and s.title.get_text(strip=True)):
            problems.append(f"{doc}: no <title>")
        if s.html.get("lang") != "en":
            problems.append(f"{doc}: <html> has no lang='en'")
    assert not problems, "\n".join(problems)


def test_no_page_loads_a_math_script(html_dir, toc_files):
    for doc in toc_files + ["search"]:
        scripts = [tag.get("src") or tag.get_text()[:80] for tag in soup(doc).select("script")]
        math = [s for s in scripts if MATH_SCRIPT.search(s) or "MathJax" in s]
        assert not math, f"{doc} loads math scripts: {math}"


def _stylesheets(doc: str) -> list[str]:
    """Every stylesheet the page links, in <head> or in its body (where one holds back the
    parsing of all that follows it)."""
    return [link["href"] for link in soup(doc).select('link[rel="stylesheet"]')]


def _bundle(doc: str) -> str:
    """The text of the page's one stylesheet (code/build/book_build/speed/first_paint.py)."""
    (href,) = _stylesheets(doc)
    return (html_page(doc).parent / href.split("?")[0]).read_text()


def test_katex_stylesheet_and_fonts_are_served_by_the_site(html_dir, toc_files):
    assert KATEX_CSS.is_file(), f"{KATEX_CSS} missing: `make vendor` copies it from node_modules/katex"
    fonts = re.findall(r"url\((fonts/[^)]+\.woff2)\)", KATEX_CSS.read_text())
    missing = [f for f in fonts if not (KATEX_CSS.parent / f).is_file()]
    assert fonts and not missing, f"KaTeX fonts missing from the site: {missing}"
    for doc in toc_files:
        links = _stylesheets(doc)
        assert not any("://" in h for h in links), f"{doc}: a stylesheet not from the site: {links}"
        assert ".katex-display" in _bundle(doc), f"{doc}: KaTeX's rules are not in the page's stylesheet"


TO_TTF = """const fs = require("fs"), path = require("path"), { convert } = require("fontverter");
(async () => { for (const [src, out] of JSON.parse(process.argv[1]))
  fs.writeFileSync(out, await convert(fs.readFileSync(src), "sfnt")); })();"""


def test_katex_fonts_are_cut_to_the_formulas_and_never_swap(html_dir, toc_files, tmp_path):
    """code/build/book_build/speed/first_paint.py cuts KaTeX's fonts to the characters of the site's pages:
    every character a formula shows (a page's .katex-html text) that KaTeX's own font holds
    is still in the site's copy of that font, and the copies are at least 20% smaller; every KaTeX
    @font-face of the bundle says font-display: optional (a formula readable before its font,
    and no re-wrapped paragraph when a late font would have swapped in).
    The woff2 files are read through npm's fontverter (subset-font's converter, in
    node_modules) as TrueType, whose cmap fontTools reads."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from fontTools.ttLib import TTFont

    originals = sorted((HTML.parent.parent / "book" / "_static" / "katex" / "fonts").glob("*.woff2"))
    assert originals, "book/_static/katex/fonts is empty: `make vendor`"
    pairs = [(str(f), str(tmp_path / f"orig-{f.stem}.ttf")) for f in originals]
    pairs += [(str(KATEX_CSS.parent / "fonts" / f.name), str(tmp_path / f"site-{f.stem}.ttf")) for f in originals]
    venv_node = Path(sys.executable).with_name("node")  # the Makefile links it into .venv/bin
    node = str(venv_node) if venv_node.exists() else shutil.which("node")
    assert node, "no node: `make venv` links Node.js into .venv/bin"
    subprocess.run([node, "-e", TO_TTF, json.dumps(pairs)], check=True, cwd=HTML.parent.parent)
    chars = set()
    for doc in toc_files:
        chars |= {c for el in soup(doc).select(".katex-html") for c in el.get_text()}
    assert len(chars) > 20, f"too few characters in the site's formulas: {sorted(chars)}"
    problems = []
    for f in originals:
        orig = set(TTFont(tmp_path / f"orig-{f.stem}.ttf").getBestCmap())
        site = set(TTFont(tmp_path / f"site-{f.stem}.ttf").getBestCmap())
        if lost := sorted(chr(c) for c in orig - site if chr(c) in chars):
            problems.append(f"{f.name}: lost characters the formulas show: {lost}")
    assert not problems, "\n".join(problems)
    before = sum(f.stat().st_size for f in originals)
    after = sum((KATEX_CSS.parent / "fonts" / f.name).stat().st_size for f in originals)
    assert after < 0.8 * before, f"KaTeX's fonts not cut: {after:,} of {before:,} bytes"
    faces = re.findall(r"@font-face\{[^}]*KaTeX_[^}]*\}", _bundle(toc_files[0]))
    assert faces and all("font-display:optional" in face for face in faces), faces[:2]


def test_one_stylesheet_and_no_blocking_script(html_dir, toc_files):
    """code/build/book_build/speed/first_paint.py: every page links one stylesheet, the bundle of all the
    theme's and extensions' ones and of its interactive boxes' (whose outputs link them in the
    body), and no script in <head> blocks the first paint (each script file is deferred or
    async); every url() of the bundle names a file of the site."""
    checked = set()
    boxes = {".tl-explorable": "explorables.css", ".tl-box": "box.css", ".charlm": "charlm.css",
             ".headview": "headview.css", ".minilm": "minilm.css", ".tl-walk": "walk.css"}  # book/_site_extra/interactive/
    interactive = Path(__file__).resolve().parents[2] / "book" / "_site_extra" / "interactive"
    seen_boxes = set()
    for doc in toc_files:
        links = _stylesheets(doc)
        assert len(links) == 1 and "/bundle-" in links[0], f"{doc}: stylesheets {links}"
        page = soup(doc)
        css_text = _bundle(doc).replace('"', "")
        for box, sheet in boxes.items():
            if page.select_one(f"div{box}"):
                seen_boxes.add(box)
                # the sheet's first class selector, as Lightning CSS writes it
                first = re.search(r"^([.a-z][^{,]*?)\s*[{,]", (interactive / sheet).read_text(), re.M).group(1)
                assert " ".join(first.split()) in css_text, f"{doc}: {sheet}'s {first!r} not in its stylesheet"
        head = page.select_one("head")
        blocking = [t["src"] for t in head.select("script[src]")
                    if not (t.has_attr("defer") or t.has_attr("async") or t.get("type") == "module")]
        assert not blocking, f"{doc}: scripts that block the first paint: {blocking}"
        css_path = (html_page(doc).parent / links[0].split("?")[0]).resolve()
        if css_path in checked:
            continue
        checked.add(css_path)
        css = css_path.read_text()
        # a rule of each stylesheet the site uses, and states that only scripts create
        for selector in (".bd-header", ".toggle-button", ".toggle-hidden", ".copybtn", ".katex-display",
                         ".highlight .k", "html[data-theme=dark]", "div.cell_output", ".solution",
                         ".dropdown-menu.show"):
            assert selector in css.replace('"', ""), f"{css_path.name} lacks {selector!r}"
        urls = {u.strip("'\"") for u in re.findall(r"url\(([^)]+)\)", css)}
        local = [u.split("?")[0].split("#")[0] for u in urls if not re.match(r"(data:|[a-z]+://|#)", u)]
        # KaTeX's CSS lists .woff and .ttf after .woff2, which every current browser takes:
        # the site serves the woff2 files only (Makefile, vendor)
        local = [u for u in local if not (u.startswith("katex/fonts/") and not u.endswith(".woff2"))]
        missing = sorted(u for u in local if not (css_path.parent / u).is_file())
        assert local and not missing, f"{css_path.name}: url()s naming no file: {missing[:10]}"
    assert seen_boxes == set(boxes), f"no page shows {sorted(set(boxes) - seen_boxes)}: is the test's list current?"


def test_every_formula_is_rendered_with_mathml(html_dir, toc_files):
    """Every formula is KaTeX HTML (what is seen) plus MathML (what a screen reader reads),
    with no error element; no raw TeX delimiters are left in the text."""
    problems, formulas = [], 0
    for doc in toc_files:
        art = soup(doc).select_one("article")
        for math in art.select(".math"):
            formulas += 1
            if not math.select_one(".katex .katex-mathml math annotation[encoding='application/x-tex']"):
                problems.append(f"{doc}: a formula without KaTeX MathML: {str(math)[:120]}")
        if errors := art.select(".katex-error"):
            problems.append(f"{doc}: KaTeX could not parse {[e.get('title', e.get_text())[:80] for e in errors]}")
        for tag in art.select(".katex, pre, code, script"):
            tag.decompose()
        text = art.get_text()
        problems += [f"{doc}: raw TeX {d!r} left in the text" for d in ("$", "\\frac", "\\(", "\\[") if d in text]
    assert formulas, "no formula anywhere in the book"
    assert not problems, "\n".join(problems)


def test_display_equations_are_numbered_focusable_and_referenced(html_dir, toc_files):
    """A labelled equation keeps its number, every {eq} reference points at an equation
    that exists, and every display equation can be reached from the keyboard (it scrolls
    sideways on a phone)."""
    problems, numbered, refs = [], 0, 0
    ids = {}
    for doc in toc_files:
        art = soup(doc).select_one("article")
        ids[doc] = {e["id"] for e in art.select("div.math[id]")}
        for eq in art.select("div.math[id^='equation-']"):
            numbered += 1
            if not re.fullmatch(r"\(\d+(\.\d+)*\)", eq.select_one(".eqno").get_text(strip=True).rstrip("#")):
                problems.append(f"{doc}: equation {eq['id']} has no number")
        for display in art.select(".katex-display"):
            if display.get("tabindex") != "0":
                problems.append(f"{doc}: a display equation without tabindex=0")
    for doc in toc_files:
        for a in soup(doc).select("article a[href*='#equation-']"):
            refs += 1
            target, _, anchor = a["href"].partition("#")
            target_doc = doc if not target else re.sub(r"\.html$", "", (html_page(doc).parent / target).resolve().relative_to(HTML.resolve()).as_posix())
            if anchor not in ids.get(target_doc, set()):
                problems.append(f"{doc}: reference {a['href']} points at no equation")
    assert numbered, "no numbered equation in the book"
    assert not problems, "\n".join(problems)


def test_light_layout(html_dir, toc_files):
    """code/build/book_build/speed/templates/layout.html: no fontawesome.js, and the search scripts only on search.html."""
    search_scripts = ("searchtools.js", "language_data.js", "searchindex.js")
    for doc in toc_files:
        srcs = [tag["src"] for tag in soup(doc).select("script[src]")]
        assert not [s for s in srcs if "fontawesome" in s], f"{doc} loads fontawesome.js"
        assert not [s for s in srcs if s.split("?")[0].endswith(search_scripts)], f"{doc} loads the search scripts"
    srcs = [tag["src"].split("?")[0].rsplit("/", 1)[-1] for tag in soup("search").select("script[src]")]
    assert set(search_scripts) <= set(srcs), f"search.html lacks its search scripts: {srcs}"


def test_first_paint_waits_for_the_article(html_dir, toc_files):
    """layout.html's <link rel="expect" blocking="render"> names a marker right after the
    article: a first paint can no longer catch the article half parsed (the header's buttons,
    a title's "#" link or a table's later rows arriving after the paint moved what was
    painted: CLS up to 0.015 on a slow CPU or a busy machine)."""
    problems = []
    for doc in toc_files:
        s = soup(doc)
        links = s.select('head link[rel="expect"][blocking="render"]')
        if [link.get("href") for link in links] != ["#tl-after-article"]:
            problems.append(f"{doc}: render-blocking expect links {links}")
            continue
        marker = s.select("#tl-after-article")
        article = s.select_one("article.bd-article")
        if len(marker) != 1 or article is None or marker[0].find_previous("article") is not article:
            problems.append(f"{doc}: the marker is not after the article: {marker}")
        elif marker[0].find_previous(class_="bd-header-article") is None:
            problems.append(f"{doc}: the marker comes before the header row")
    assert not problems, "\n".join(problems)


def test_every_image_of_a_page_body_is_lazy(html_dir, toc_files):
    """code/build/book_build/speed/performance.py: every image of the article that the browser would fetch is
    loading="lazy" (real_model's three cell-output figures were eager, 62 KiB requested before
    the first paint on a phone). An inline data: image costs no request and may stay as it is."""
    fetched = [(doc, img) for doc in toc_files for img in soup(doc).select("article.bd-article img")
               if not img.get("src", "").startswith("data:")]
    assert len(fetched) > 20, f"only {len(fetched)} article images found: has the theme's article markup changed?"
    eager = [f"{doc}: {img['src'][:60]}" for doc, img in fetched if img.get("loading") != "lazy"]
    assert not eager, "eager images, fetched by the parser before the first paint:\n" + "\n".join(eager)

