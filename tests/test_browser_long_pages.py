"""Long pages laid out as they are read (book/_static/custom.css, long_pages.js), in Chromium.

* The sections of a chapter are skipped until they come near the screen
  (content-visibility: auto), so the skipping these tests rely on is really in effect.
* A reader who reloads the page comes back to the paragraph they were reading, though the
  sections they had not reached counted as an estimate when they scrolled.
* Keyboard access: after scrolling through the page, and after the window changed width,
  every box that scrolls (code, outputs, tables) takes the focus and no box that fits does;
  a box in a section the browser has not laid out again is never taken out of reach.

The site fixture (tests/conftest.py) serves _build/html on 127.0.0.1.
"""

from __future__ import annotations

import pytest
from test_browser import DESKTOP, PHONE, Tab, browser  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.browser

LONG_PAGE = "book/foundations"  # the longest chapter: most sections, most formulas
SECTIONS = ".bd-article > section > section"  # custom.css's rule, long_pages.js's SECTIONS
BOXES = "pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon, .pst-scrollable-table-container"

SKIPPED_JS = f"""() => [...document.querySelectorAll('{SECTIONS}')].map(s => ({{
  cv: getComputedStyle(s).contentVisibility,
  shown: s.firstElementChild.checkVisibility({{contentVisibilityAuto: true}})}}))"""  # a section is skipped when its content (its heading) is

# Every box of the article with a part on screen and not inside a closed <details>: does it
# take the focus (tabindex 0), and does it scroll?
TAB_STOPS_JS = f"""() => [...document.querySelectorAll('#main-content :is({BOXES})')].filter(b => {{
  const r = b.getBoundingClientRect();
  return r.bottom > 0 && r.top < innerHeight && r.width > 0
      && !b.closest('details:not([open])') && b.checkVisibility({{contentVisibilityAuto: true}});
}}).map(b => ({{
  name: b.nodeName.toLowerCase() + '.' + [...b.classList].slice(0, 2).join('.') + ' ' + JSON.stringify(b.textContent.trim().slice(0, 40)),
  focusable: b.tabIndex === 0,
  scrolls: b.scrollWidth > b.clientWidth || b.scrollHeight > b.clientHeight}}))"""

# The first text of the article below the sticky header: what the reader is reading
READING_JS = """() => {
  const article = document.querySelector('article.bd-article').getBoundingClientRect();
  for (let y = 120; y < innerHeight; y += 8) {
    const el = document.elementFromPoint(article.left + 24, y);
    if (el && el.closest('article') && el.textContent.trim()) {
      const block = el.closest('p, li, pre, h2, h3, .math, figure, table') || el;
      return block.textContent.trim().slice(0, 80);
    }
  }
  return null;
}"""


def _scroll_through(page, check) -> list[str]:
    """Scroll the page from top to bottom with the mouse wheel, a screen at a time, and
    collect what `check` reports at each stop (the sections come into view as a reader's do)."""
    page.evaluate("window.scrollTo(0, 0)")
    page.mouse.move(200, 400)
    problems: list[str] = []
    for _ in range(400):
        problems += check()
        before = page.evaluate("scrollY")
        page.mouse.wheel(0, page.viewport_size["height"] * 0.8)
        page.wait_for_timeout(150)
        if page.evaluate("scrollY") == before:
            return problems
    raise AssertionError("the page never reached its end")


def _tab_stop_problems(page, where: str) -> list[str]:
    return [f"{where}: {b['name']} {'is focusable but fits' if b['focusable'] else 'scrolls but takes no focus'}"
            for b in page.evaluate(TAB_STOPS_JS) if b["focusable"] != b["scrolls"]]


def test_sections_are_skipped_until_they_come_near(site, browser):
    tab = Tab(browser)
    try:
        tab.open(f"{site}/{LONG_PAGE}.html", PHONE)
        sections = tab.page.evaluate(SKIPPED_JS)
        assert len(sections) >= 5, f"{LONG_PAGE} has {len(sections)} sections: has the theme's article markup changed?"
        assert all(s["cv"] == "auto" for s in sections), sections
        assert sections[0]["shown"] and not sections[-1]["shown"], sections
    finally:
        tab.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1280px"])
def test_a_reload_keeps_the_readers_place(site, browser, viewport):
    """Scrolled two thirds of the way down a cold page (the sections on the way counted as
    the estimate until reached), the reader reloads: the same text is at the top again."""
    tab = Tab(browser)
    try:
        page = tab.page
        tab.open(f"{site}/{LONG_PAGE}.html", viewport)
        page.mouse.move(200, 400)
        height = page.evaluate("document.documentElement.scrollHeight")
        while page.evaluate("scrollY") < height * 2 / 3:
            page.mouse.wheel(0, viewport["height"] * 0.8)
            page.wait_for_timeout(100)
        page.wait_for_timeout(500)
        before = page.evaluate(READING_JS)
        assert before, "found no text below the header"
        page.reload(wait_until="load")
        page.evaluate("document.fonts.ready.then(() => true)")
        page.wait_for_timeout(1000)
        assert page.evaluate("document.documentElement.classList.contains('long-pages-whole')")
        after = page.evaluate(READING_JS)
        assert after == before, f"before the reload: {before!r}\nafter it: {after!r}"
    finally:
        tab.close()


def test_boxes_that_scroll_and_only_they_take_the_focus(site, browser):
    """At 390 px while scrolling down, then after the window widened to 1280 px (the boxes of
    sections skipped at that moment are measured when they come into view), then after it
    narrowed again."""
    tab = Tab(browser)
    try:
        page = tab.page
        tab.open(f"{site}/{LONG_PAGE}.html", PHONE)
        problems = _scroll_through(page, lambda: _tab_stop_problems(page, "390 px"))
        assert page.evaluate(f"document.querySelectorAll('#main-content :is({BOXES})[tabindex=\"0\"]').length") > 0
        for viewport in (DESKTOP, PHONE):
            tab.resize(viewport)
            width = f"resized to {viewport['width']} px"
            problems += _tab_stop_problems(page, width)  # the boxes on screen when it changed
            problems += _scroll_through(page, lambda w=width: _tab_stop_problems(page, w))
        assert not problems, "\n".join(sorted(set(problems)))
    finally:
        tab.close()
