"""Issue 40, part 2: every table, figure and control readable on a phone, measured in Chromium.

* At 390 px, on every page (quiz answers and solutions open): no table is wider than its
  container, and nothing inside a table reaches out of it or hides in a box that scrolls
  (code/build/book_build/ext/phone.py and custom.css stack the cells); no figure or image is
  wider than the article.
* Inline code names break only after "_", ".", "(", "/", "," or a space, never inside a word
  ("scaled_dot_/product_atte/ntion" was the bug).
* The language model's prompt box: its knobs on a CSS grid at 390 and 1280 px, every knob
  starting on one of the first row's column lines, every control inside the box.
* The theme's "Back to top" button never covers the article: not displayed while scrolled back
  up, at 390 and 1280 px.

The site fixture (tests/conftest.py) serves _build/html; screenshots of what these check go to
_build/screenshots/ (phone-*.png) for a person to look at.
"""

from __future__ import annotations

import pytest
from tests.browser.test_browser import DESKTOP, OPEN_ANSWERS_JS, PHONE, SCREENSHOTS, browser  # noqa: F401 (a fixture)
from tests.browser.test_browser_layout import tab  # noqa: F401 (a fixture: one tab for the module)

pytestmark = pytest.mark.browser

TABLES_JS = """() => {
  const problems = [];
  const article = document.querySelector('article').getBoundingClientRect();
  for (const t of document.querySelectorAll('article table')) {
    if (!t.checkVisibility()) continue;
    const r = t.getBoundingClientRect(), c = t.parentElement;
    const name = t.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40);
    if (r.width > c.clientWidth + 1 || r.right > article.right + 1)
      problems.push(`table "${name}" is ${r.width.toFixed(0)} px wide in a ${c.clientWidth} px container`);
    if (c.scrollWidth > c.clientWidth + 1)
      problems.push(`table "${name}": its container scrolls (${c.scrollWidth} px in ${c.clientWidth} px)`);
    for (const e of t.querySelectorAll('*')) {
      if (e.closest('.katex-mathml, svg, thead')) continue;
      const b = e.getBoundingClientRect();
      if (b.width === 0) continue;
      if (b.right > r.right + 1 || b.left < r.left - 1) {
        problems.push(`table "${name}": ${e.tagName.toLowerCase()} "${e.textContent.trim().slice(0, 30)}" reaches out of it`);
        break;
      }
      // KaTeX's struts (.vlist-s, 2 px wide on purpose) make a formula's box report 2 px more
      if (e.scrollWidth > e.clientWidth + 2.5 && e.clientWidth > 0 && getComputedStyle(e).overflowX !== 'visible') {
        problems.push(`table "${name}": ${e.tagName.toLowerCase()} "${e.textContent.trim().slice(0, 30)}" hides `
                      + `${e.scrollWidth - e.clientWidth} px (scrolls or clips)`);
        break;
      }
    }
  }
  for (const i of document.querySelectorAll('article img, article svg, article canvas, article video')) {
    if (!i.checkVisibility() || i.closest('.katex')) continue;
    const b = i.getBoundingClientRect();
    if (b.right > article.right + 1 || b.left < article.left - 1)
      problems.push(`${i.tagName.toLowerCase()} ${(i.currentSrc || i.src || '').toString().slice(-30)} is `
                    + `${b.width.toFixed(0)} px wide, the article ${article.width.toFixed(0)} px`);
  }
  return problems;
}"""

# Where each wrapped inline code name breaks: the character before each line break.
CODE_BREAKS_JS = """() => {
  const out = [];
  for (const code of document.querySelectorAll('article code.literal')) {
    if (!code.checkVisibility() || code.getClientRects().length < 2) continue;
    const chars = [];
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const range = document.createRange();
        range.setStart(n, i); range.setEnd(n, i + 1);
        const rect = range.getClientRects()[0];  // none for a space collapsed at a line's end
        chars.push({c: n.data[i], rect});
      }
    }
    let last = null;  // the index of the last character drawn
    for (let i = 0; i < chars.length; i++) {
      if (!chars[i].rect || !chars[i].rect.width) continue;
      if (last !== null && chars[i].rect.top >= chars[last].rect.bottom - 1)
        out.push({code: code.textContent.slice(0, 60), before: chars.slice(Math.max(0, i - 12), i).map(x => x.c).join(''),
                  after: chars.slice(i, i + 12).map(x => x.c).join('')});
      last = i;
    }
  }
  return out;
}"""

SENSIBLE = "_.(/, "


def bad_breaks(breaks: list[dict]) -> list[str]:
    """Breaks inside a word: the character before the break is a letter, digit or other
    character that is not one of SENSIBLE."""
    return [f"{b['code']!r} breaks as {b['before']!r} / {b['after']!r}" for b in breaks
            if b["before"] and b["before"][-1] not in SENSIBLE and not b["before"][-1].isspace()]


def test_break_check_can_fail():
    assert bad_breaks([{"code": "scaled_dot_product_attention", "before": "scaled_dot_product_atte", "after": "ntion"}])
    assert not bad_breaks([{"code": "scaled_dot_product_attention", "before": "scaled_dot_", "after": "product"}])


def test_tables_and_figures_fit_a_phone_and_code_breaks_between_words(site, tab, toc_files):
    problems, tables = [], 0
    for doc in toc_files:
        tab.open(f"{site}/{doc}.html", viewport=PHONE)
        tab.page.evaluate(OPEN_ANSWERS_JS)
        tab.page.wait_for_timeout(200)
        tables += tab.page.evaluate("() => document.querySelectorAll('article table').length")
        problems += [f"{doc}: {p}" for p in tab.page.evaluate(TABLES_JS)]
        problems += [f"{doc}: {p}" for p in bad_breaks(tab.page.evaluate(CODE_BREAKS_JS))]
        width = tab.page.evaluate("() => document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            problems.append(f"{doc}: the page is {width} px wide")
    assert tables, "no table found: the check would pass on nothing"
    assert not problems, f"{len(problems)} problems at 390 px:\n" + "\n".join(problems)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_screenshots_of_the_phone_tables(site, tab, theme):
    """For a person to look at: the pitfalls page's mask table and the cheat sheet's equations."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for doc in ("pitfalls", "cheat_sheet"):
        tab.open(f"{site}/book/{doc}.html", viewport=PHONE)
        if theme == "dark":
            tab.dark()
        table = tab.page.locator("article table").first
        table.scroll_into_view_if_needed()
        table.screenshot(path=str(SCREENSHOTS / f"phone-{doc}-table-{theme}.png"))


KNOBS_JS = """() => {
  const box = document.querySelector('div.charlm').getBoundingClientRect();
  const knobs = document.querySelector('div.charlm .charlm-knobs');
  const fields = [...knobs.querySelectorAll(':scope > .charlm-field')].map(f => {
    const r = f.getBoundingClientRect(), input = f.querySelector('input, select').getBoundingClientRect();
    return {left: r.left, top: r.top, inputLeft: input.left, inputTop: input.top};
  });
  const controls = [...document.querySelectorAll('div.charlm label, div.charlm input, div.charlm select, '
                                                + 'div.charlm textarea, div.charlm button')]
    .filter(e => e.checkVisibility()).map(e => {
      const r = e.getBoundingClientRect();
      return {name: e.tagName.toLowerCase() + ' ' + (e.id || e.textContent.trim().slice(0, 20)),
              left: r.left, right: r.right, overflows: e.scrollWidth > e.clientWidth + 1 && e.tagName === 'BUTTON'};
    });
  return {display: getComputedStyle(knobs).display, fields, controls, box: {left: box.left, right: box.right}};
}"""


def knob_problems(found: dict) -> list[str]:
    problems = []
    if found["display"] != "grid":
        problems.append(f"the knobs are laid out with display: {found['display']}, not a grid")
    for c in found["controls"]:
        if c["left"] < found["box"]["left"] - 0.5 or c["right"] > found["box"]["right"] + 0.5:
            problems.append(f"{c['name']} ({c['left']:.0f}-{c['right']:.0f} px) leaves the box "
                            f"({found['box']['left']:.0f}-{found['box']['right']:.0f} px)")
        if c["overflows"]:
            problems.append(f"{c['name']}: its text overflows the button")
    fields = found["fields"]
    first_top = min(f["top"] for f in fields)
    columns = sorted(f["left"] for f in fields if abs(f["top"] - first_top) < 1)
    rows: dict[int, list] = {}
    for f in fields:
        rows.setdefault(round(f["top"]), []).append(f)
        if not any(abs(f["left"] - x) < 1 for x in columns):
            problems.append(f"a knob starts at {f['left']:.0f} px, on none of the columns {columns}")
    for top, row in rows.items():
        if len({round(f["inputTop"]) for f in row}) > 1:
            problems.append(f"the inputs of the row at {top} px are not level: {[f['inputTop'] for f in row]}")
    return problems


def test_knob_check_can_fail():
    ragged = {"display": "flex", "box": {"left": 0, "right": 100},
              "controls": [{"name": "button write", "left": 0, "right": 120, "overflows": False}],
              "fields": [{"left": 0, "top": 0, "inputLeft": 50, "inputTop": 0},
                         {"left": 60, "top": 0, "inputLeft": 90, "inputTop": 0},
                         {"left": 30, "top": 30, "inputLeft": 60, "inputTop": 40},
                         {"left": 0, "top": 30, "inputLeft": 40, "inputTop": 30}]}
    assert len(knob_problems(ragged)) == 4


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390", "1280"])
def test_the_prompt_box_controls_are_on_a_grid(site, tab, viewport):
    tab.open(f"{site}/book/language_model.html", viewport=viewport)
    tab.page.wait_for_selector("div.charlm:not([hidden]) .charlm-knobs")
    found = tab.page.evaluate(KNOBS_JS)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.page.locator("div.charlm").screenshot(path=str(SCREENSHOTS / f"phone-charlm-{viewport['width']}.png"))
    problems = knob_problems(found)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390", "1280"])
def test_back_to_top_never_covers_the_article(site, tab, viewport):
    """Scrolled down and a little way back up (when the theme shows the button): either the
    button is not displayed, or its box meets no text, code, caption or figure of the article."""
    tab.open(f"{site}/book/foundations.html", viewport=viewport)
    page = tab.page
    page.mouse.move(200, 400)
    for dy in (2000, 2000, -300):
        page.mouse.wheel(0, dy)
        page.wait_for_timeout(400)
    covered = page.evaluate("""() => {
      const b = document.querySelector('#pst-back-to-top');
      if (!b || !b.checkVisibility()) return [];
      const r = b.getBoundingClientRect();
      return [...document.querySelectorAll('article p, article pre, article figcaption, article img, article li, '
                                           + 'article h1, article h2, article h3, article .math')]
        .filter(e => { const q = e.getBoundingClientRect();
          return q.width > 0 && q.left < r.right && q.right > r.left && q.top < r.bottom && q.bottom > r.top; })
        .map(e => e.tagName.toLowerCase() + ' ' + e.textContent.trim().slice(0, 30)); }""")
    assert not covered, f"'Back to top' covers: {covered}"
