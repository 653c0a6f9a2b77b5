"""What a phone reader sees of equations, figures and captions, measured in Chromium.

* At 390 px every display equation is whole: its formula fits the box it is shown in (no
  sideways scrolling needed to read it) and does not run under its equation number.
* At 390 px the smallest text of every figure image is at least 9 CSS px: the width the
  browser shows the image at, over its natural width, times the smallest font size in the
  image (a PNG records it, an SVG's text elements carry it), solutions opened; text drawn
  by the interactive figures (SVG in the page) is at least 9 px too.
* At 390 px, in both themes, every SVG diagram fills its box: the box's proportions are
  the drawing's (its viewBox), so no empty bands letterbox it when the column narrows it.
* Captions: the text colour against the background actually behind it (the first opaque
  ancestor background, with semi-transparent ones composited) is at least 4.5:1 (WCAG AA
  for body text), in the light and in the dark theme.

Pages are opened once per width and theme; the site fixture (tests/conftest.py) serves
_build/html on 127.0.0.1.
"""

from __future__ import annotations

import io
import re
from urllib.parse import urlparse
from urllib.request import urlopen

import numpy as np
import pytest
from PIL import Image
from tests.book_files import html_page
from tests.browser.test_browser import DESKTOP, OPEN_ANSWERS_JS, PHONE, Tab, _has_math, browser  # noqa: F401 (browser is a fixture)

from transformer_lessons import plots

pytestmark = pytest.mark.browser

AA = 4.5

EQUATIONS_JS = """() => [...document.querySelectorAll('article div.math')].map(div => {
  const display = div.querySelector('.katex-display');
  const bases = [...div.querySelectorAll('.katex-html .base')].map(b => b.getBoundingClientRect())
      .filter(r => r.width > 0);
  const eqno = div.querySelector('.eqno');
  let number = null;
  if (eqno) {
    const range = document.createRange();
    range.selectNodeContents(eqno.firstChild || eqno);
    const r = range.getBoundingClientRect();
    number = {left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: eqno.textContent.trim()};
  }
  const box = display.getBoundingClientRect();
  return {
    id: div.id || div.textContent.slice(0, 40),
    scroll: display.scrollWidth - display.clientWidth,
    box: {left: box.left, right: box.right},
    formula: bases.length ? {left: Math.min(...bases.map(r => r.left)), right: Math.max(...bases.map(r => r.right)),
                             top: Math.min(...bases.map(r => r.top)), bottom: Math.max(...bases.map(r => r.bottom))}
                          : null,
    number};
})"""


def equation_problems(equations: list[dict]) -> list[str]:
    problems = []
    for eq in equations:
        f, n, box = eq["formula"], eq["number"], eq["box"]
        if f is None:
            problems.append(f"{eq['id']}: no part of the formula has a size (not laid out?)")
            continue
        if eq["scroll"] > 1:
            problems.append(f"{eq['id']}: {eq['scroll']:.0f} px wider than its box (must be scrolled to read)")
        if (f["left"] < box["left"] - 1 or f["right"] > box["right"] + 1):
            problems.append(f"{eq['id']}: formula {f['left']:.0f}-{f['right']:.0f} px outside its box "
                            f"{box['left']:.0f}-{box['right']:.0f} px")
        if n and n["right"] > f["left"] and n["left"] < f["right"] and n["bottom"] > f["top"] \
                and n["top"] < f["bottom"]:
            problems.append(f"{eq['id']}: the formula runs under its number {n['text']}")
    return problems


def test_equation_check_can_fail():
    wide = {"id": "e", "scroll": 40, "box": {"left": 0, "right": 100},
            "formula": {"left": 0, "right": 140, "top": 0, "bottom": 20},
            "number": {"left": 90, "right": 100, "top": 5, "bottom": 15, "text": "(1)"}}
    assert len(equation_problems([wide])) == 3
    fits = {**wide, "scroll": 0, "formula": {"left": 10, "right": 80, "top": 0, "bottom": 20}}
    assert equation_problems([fits]) == []
    below = {**wide, "scroll": 0, "formula": {"left": 0, "right": 100, "top": 0, "bottom": 20},
             "number": {"left": 90, "right": 100, "top": 22, "bottom": 34, "text": "(1)"}}
    assert equation_problems([below]) == []
    assert equation_problems([{**fits, "formula": None}])  # nothing drawn is not a pass


@pytest.fixture(scope="module")
def tab(browser):  # noqa: F811
    t = Tab(browser)
    yield t
    t.close()


def test_display_equations_are_whole_at_phone_width(site, tab, toc_files):
    problems = []
    pages = [doc for doc in toc_files if _has_math(doc)]
    assert pages, "no page with math"
    for doc in pages:
        tab.open(f"{site}/{doc}.html", viewport=PHONE)
        tab.page.evaluate(OPEN_ANSWERS_JS)  # the formulas of the answers and solutions too
        problems += [f"{doc}: {p}" for p in equation_problems(tab.page.evaluate(EQUATIONS_JS))]
    assert not problems, "\n".join(problems)


# Every shown figure image of the article (solutions and quiz answers opened first), scrolled
# into view and decoded (lazy images have no size before), with the width the page shows it at.
FIGURES_JS = """async () => {
  const imgs = [...document.querySelectorAll('article figure img, article .cell_output img')]
    .filter(i => i.checkVisibility());
  for (const i of imgs) { i.scrollIntoView({block: 'center'}); await i.decode().catch(() => null); }
  return {
    images: imgs.map(i => ({src: i.currentSrc || i.src, natural: i.naturalWidth,
                            shown: i.getBoundingClientRect().width})),
    svg_text: [...document.querySelectorAll('article svg text')].filter(t => t.checkVisibility()
        && t.textContent.trim()).map(t => ({text: t.textContent.trim().slice(0, 30),
        px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a}))};
}"""

SVG_FONT = re.compile(r"font(?:-size)?\s*:\s*(?:[a-z-]+\s+)*([\d.]+)(px|pt)?")


def image_text_px(data: bytes, src: str) -> tuple[float, float] | None:
    """(the smallest font size in the image's own units, the image's width in those units), or
    None when the image does not say: a PNG from the figures carries its smallest font size in
    image pixels (plots.SMALLEST_TEXT_KEY); an SVG's text elements have their sizes in its
    viewBox's units (matplotlib's SVGs keep their text as text)."""
    if urlparse(src).path.lower().endswith(".svg"):
        text = data.decode()
        box = re.search(r'<svg[^>]*\sviewBox="([^"]+)"', text)
        sizes = [float(m.group(1)) for m in SVG_FONT.finditer(text)]
        return (min(sizes), float(box.group(1).split()[2])) if box and sizes else None
    info = Image.open(io.BytesIO(data))
    value = info.text.get(plots.SMALLEST_TEXT_KEY) if hasattr(info, "text") else None
    return (float(value), float(info.width)) if value else None


def test_image_text_px_reads_both_formats():
    from transformer_lessons import diagrams

    fig = plots.attention_grid(np.full((2, 3, 3), 1 / 3), list("abc"))
    assert image_text_px(fig.image_bytes("light"), "x.png") == (pytest.approx(11 / 72 * plots.PNG_DPI, abs=0.01),
                                                              fig.get_size_inches()[0] * plots.PNG_DPI)
    svg = diagrams.self_attention()
    size, width = image_text_px(svg.image_bytes("light", "svg"), "x.svg")
    assert width == pytest.approx(svg.get_size_inches()[0] * 72) and 8 <= size <= 14
    assert image_text_px(b"<svg viewBox='0 0 1 1'></svg>", "y.svg") is None


def test_the_smallest_text_of_every_figure_is_9_css_px_at_phone_width(site, tab, toc_files):
    """Measured, not assumed: the width Chromium shows each figure at on a 390 px phone (inside
    an opened solution too) over the image's natural width, times the smallest font size in
    the image. Before, the check assumed the width (plots.PHONE_CONTENT_PX) and the font size
    (the figure's nominal size in inches; a PngFigure is saved with a tight bounding box)."""
    problems, measured = [], 0
    for doc in toc_files:
        if "<figure" not in html_page(doc).read_text() and "cell_output" not in html_page(doc).read_text():
            continue
        tab.open(f"{site}/{doc}.html", viewport=PHONE)
        tab.page.evaluate(OPEN_ANSWERS_JS)
        tab.page.wait_for_timeout(300)  # the explorables draw after DOMContentLoaded
        found = tab.page.evaluate(FIGURES_JS)
        for img in found["images"]:
            name = urlparse(img["src"]).path.rsplit("/", 1)[-1][-16:]
            text = image_text_px(urlopen(img["src"], timeout=10).read(), img["src"])
            if text is None:
                problems.append(f"{doc}: {name} does not record its text size")
                continue
            measured += 1
            px = text[0] * img["shown"] / text[1]
            if px < plots.MIN_PHONE_TEXT_PX - 0.05:
                problems.append(f"{doc}: {name} shown {img['shown']:.0f} px wide: its smallest text is {px:.1f} px")
        for t in found["svg_text"]:
            if t["px"] < plots.MIN_PHONE_TEXT_PX - 0.05:
                problems.append(f"{doc}: SVG text {t['text']!r} is {t['px']:.1f} px")
    assert measured, "no figure measured"
    assert not problems, "\n".join(problems)


SVG_BOXES_JS = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('article img')) {
    const src = img.currentSrc || img.src;
    if (!/\\.svg$/i.test(new URL(src).pathname) || !img.checkVisibility()) continue;
    const text = await (await fetch(src)).text();
    const vb = text.match(/<svg[^>]*\\sviewBox="([^"]+)"/);
    const box = img.getBoundingClientRect();
    out.push({src: src.slice(-50), viewBox: vb ? vb[1].trim().split(/[\\s,]+/).map(Number) : null,
              width: box.width, height: box.height});  // loaded or not (lazy): the box is what the reader sees
  }
  return out; }"""


def letterbox_problems(doc: str, boxes: list[dict], tolerance: float = 0.01) -> list[str]:
    """An SVG image whose box's height/width differs from its viewBox's by more than ``tolerance``."""
    problems = []
    for b in boxes:
        if not b["viewBox"] or b["width"] <= 0:
            problems.append(f"{doc}: {b['src']}: no viewBox or an empty box")
            continue
        drawn = b["viewBox"][3] / b["viewBox"][2]
        shown = b["height"] / b["width"]
        if abs(shown / drawn - 1) > tolerance:
            problems.append(f"{doc}: {b['src']}: box {b['width']:.0f}x{b['height']:.0f} px has the proportions "
                            f"{shown:.3f}, the drawing {drawn:.3f} (empty bands)")
    return problems


def test_letterbox_check_can_fail():
    drawing = {"src": "d.svg", "viewBox": [0, 0, 374.4, 528.984]}
    assert letterbox_problems("p", [{**drawing, "width": 358, "height": 705}])  # the fixed height kept
    assert not letterbox_problems("p", [{**drawing, "width": 358, "height": 358 * 528.984 / 374.4}])


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_svg_diagrams_fill_their_box_at_phone_width(site, tab, toc_files, theme):
    problems, seen = [], 0
    for doc in toc_files:
        if ".svg" not in html_page(doc).read_text().replace("logo_binder.svg", ""):
            continue
        tab.open(f"{site}/{doc}.html", viewport=PHONE)
        if theme == "dark":
            tab.dark()
        boxes = [b for b in tab.page.evaluate(SVG_BOXES_JS) if "logo" not in b["src"]]
        seen += len(boxes)
        problems += letterbox_problems(doc, boxes)
    assert seen, "no SVG diagram found"
    assert not problems, "\n".join(problems)


CAPTIONS_JS = """() => {
  const rgba = s => { const m = s.match(/rgba?\\(([^)]+)\\)/); if (!m) return [0, 0, 0, 0];
    const p = m[1].split(',').map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => { const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const background = el => {  // composite the backgrounds from the page up to el
    const chain = []; for (let e = el; e; e = e.parentElement) chain.push(rgba(getComputedStyle(e).backgroundColor));
    let colour = [255, 255, 255, 1];  // the canvas
    for (const c of chain.reverse()) colour = over(c, colour);
    return colour; };
  const out = [];
  for (const cap of document.querySelectorAll('article figcaption')) {
    for (const el of [cap, ...cap.querySelectorAll('*')]) {
      const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
      if (!own || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
      const bg = background(el);
      out.push({text: el.textContent.trim().slice(0, 40), colour: over(rgba(getComputedStyle(el).color), bg), bg});
    }
  }
  return out; }"""


def _luminance(rgb) -> float:
    return plots._luminance([c / 255 for c in rgb[:3]])


def contrast(a, b) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_contrast_formula():
    assert contrast([0, 0, 0], [255, 255, 255]) == pytest.approx(21.0)
    assert contrast([118, 118, 118], [255, 255, 255]) == pytest.approx(4.54, abs=0.01)  # #767676, the AA grey


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_captions_meet_wcag_aa_contrast(site, tab, toc_files, theme):
    problems, seen = [], 0
    for doc in toc_files:
        if "<figcaption" not in html_page(doc).read_text():
            continue
        tab.open(f"{site}/{doc}.html", viewport=DESKTOP)
        if theme == "dark":
            tab.dark()
        for c in tab.page.evaluate(CAPTIONS_JS):
            seen += 1
            ratio = contrast(c["colour"], c["bg"])
            if ratio < AA:
                problems.append(f"{doc}: {c['text']!r} {ratio:.2f}:1 (text {c['colour'][:3]} on {c['bg'][:3]})")
    assert seen, "no caption text found"
    assert not problems, f"{len(problems)} caption texts below {AA}:1 in the {theme} theme:\n" + "\n".join(problems[:20])
