"""Every font a page draws is preloaded, and every preload is drawn (code/build/book_build/speed/performance.py).

A font that only the stylesheet names is fetched when the first layout meets text that needs
it, after the page has been laid out and painted in a fallback font; when it arrives the
page is laid out again (the whole of a long page: total blocking time on a slow phone) and
painted again (speed index). So each page of _toc.yml is opened in a fresh browser context
(nothing cached) at the phone width, its quiz answers and solutions opened (the formulas
inside them count), and, once ``document.fonts.ready`` says every font in use has loaded,
the faces Chromium loaded (``document.fonts``, status "loaded") are compared with the
page's ``<link rel="preload" as="font">`` files, both ways: a face drawn but not preloaded
arrived late; a preload not drawn is bytes for nothing. The face's file is named from its
family, weight and style the way KaTeX's and Font Awesome's stylesheets name them.

katex_faces() itself, the build-time reading of a page's formulas, is checked on HTML that
KaTeX writes, without a browser.
"""

from __future__ import annotations

import pytest
from book_build.speed.performance import katex_faces
from tests.browser.test_browser import OPEN_ANSWERS_JS, PHONE, browser  # noqa: F401 (browser is a fixture)

FACES_JS = """async () => {
  await document.fonts.ready;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await document.fonts.ready;
  return {
    loaded: [...document.fonts].filter(f => f.status === 'loaded')
      .map(f => ({family: f.family.replace(/["']/g, ''), weight: String(f.weight), style: f.style})),
    preloaded: [...document.querySelectorAll('link[rel=preload][as=font]')]
      .map(l => new URL(l.href).pathname.split('/').pop()),
  };
}"""


def font_file(family: str, weight: str, style: str) -> str:
    """The woff2 file of a face: KaTeX_Main-BoldItalic.woff2, fa-solid-900.woff2."""
    bold = weight in ("bold", "700")
    if family.startswith("KaTeX_"):
        variant = ("Bold" if bold else "") + ("Italic" if style == "italic" else "")
        return f"{family}-{variant or 'Regular'}.woff2"
    if family.startswith("Font Awesome") and "Brands" in family:
        return "fa-brands-400.woff2"
    if family.startswith("Font Awesome"):
        return "fa-solid-900.woff2" if weight == "900" else "fa-regular-400.woff2"
    return f"{family} {weight} {style}"  # a face of neither: never preloaded, so reported


def font_problems(loaded: list[dict], preloaded: list[str]) -> list[str]:
    drawn = {font_file(**f) for f in loaded}
    problems = [f"{f} is drawn but not preloaded" for f in sorted(drawn - set(preloaded))]
    problems += [f"{f} is preloaded but not drawn" for f in sorted(set(preloaded) - drawn)]
    return problems


def test_font_check_can_fail():
    loaded = [{"family": "KaTeX_Main", "weight": "400", "style": "normal"},
              {"family": "KaTeX_Math", "weight": "400", "style": "italic"},
              {"family": "Font Awesome 6 Free", "weight": "900", "style": "normal"}]
    assert font_problems(loaded, ["KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2", "fa-solid-900.woff2"]) == []
    assert font_problems(loaded, ["KaTeX_Main-Regular.woff2", "fa-solid-900.woff2", "KaTeX_Size2-Regular.woff2"]) == [
        "KaTeX_Math-Italic.woff2 is drawn but not preloaded", "KaTeX_Size2-Regular.woff2 is preloaded but not drawn"]


def test_katex_faces_reads_the_classes_katex_writes():
    # what KaTeX 0.16 writes for $x$ and for \left(\frac{a}{b}\right) (abridged)
    x = ('<span class="math notranslate nohighlight"><span class="katex"><span class="katex-mathml"><math>'
         '<mi>x</mi></math></span><span class="katex-html" aria-hidden="true"><span class="base">'
         '<span class="strut"></span><span class="mord mathnormal">x</span></span></span></span></span>')
    big = ('<span class="katex"><span class="katex-html" aria-hidden="true"><span class="base">'
           '<span class="minner"><span class="mopen delimcenter"><span class="delimsizing size2">(</span></span>'
           '<span class="mord"><span class="mfrac"><span class="vlist"><span class="sizing reset-size6 size3 mtight">'
           '<span class="mord mathbf mtight">a</span></span></span></span></span></span></span></span>')
    assert katex_faces("<p>No formula.</p>") == []
    assert katex_faces(x) == ["Main-Regular", "Math-Italic"]
    # "sizing ... size3" is a font size, not the Size3 face; "delimsizing size2" is Size2
    assert katex_faces(big) == ["Main-Regular", "Main-Bold", "Size2-Regular"]
    # MathML (read by screen readers, not drawn) names no face
    assert katex_faces('<span class="katex"><span class="katex-mathml"><span class="mathcal">L</span></span></span>') \
        == ["Main-Regular"]


@pytest.mark.browser
def test_every_font_a_page_draws_is_preloaded(site, browser, toc_files):  # noqa: F811
    problems = []
    for doc in toc_files:
        context = browser.new_context(viewport=PHONE)  # fresh: nothing cached
        try:
            page = context.new_page()
            page.set_default_timeout(60000)
            page.goto(f"{site}/{doc}.html", wait_until="load")
            page.evaluate(OPEN_ANSWERS_JS)
            faces = page.evaluate(FACES_JS)
        finally:
            context.close()
        problems += [f"{doc}: {p}" for p in font_problems(faces["loaded"], faces["preloaded"])]
    assert not problems, "\n".join(problems)
