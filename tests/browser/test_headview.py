"""The interactive head view of book/real_model (book/_site_extra/interactive/headview.js)
in a real browser: Debian's chromium driven by Playwright, offline, the built site served
from _build/html on 127.0.0.1 (the server and browser fixtures of test_browser.py).

It must: replace its fallback image with the explorer; answer the layer, head and
sentence pickers and a hover, a tap (click), the keyboard (Tab, arrows, Enter) and a touch
tap; make no request to another host and log no console error; pass axe-core (no serious
or critical WCAG 2.1 A/AA violation) at 1280 and 390 px, without the page scrolling
sideways at 390 px. Without JavaScript, the fallback image shows. The head view's data and
script together stay under 250 KB gzip.
"""

from __future__ import annotations

import gzip
import re

import pytest
from bs4 import BeautifulSoup
from tests.book_files import ROOT, html_page
from tests.browser.test_browser import DESKTOP, PHONE, Tab, axe_path, browser, check_requests, run_axe  # noqa: F401

pytestmark = pytest.mark.browser

PAGE = "book/real_model"
SCRIPTS = [ROOT / "book/_site_extra/interactive" / name for name in ("headview.js", "headview.css", "box.css")]
BUDGET_GZIP = 250_000


def _svg_lines(tab: Tab) -> int:
    return tab.page.locator("div.headview svg.headview-lines line").count()


def _readout(tab: Tab) -> str:
    return tab.page.locator("div.headview .headview-readout").inner_text()


@pytest.fixture(scope="module")
def tab(browser, site):  # noqa: F811
    t = Tab(browser)
    t.open(f"{site}/{PAGE}.html")
    t.page.wait_for_selector("div.headview.headview-ready")
    yield t
    t.close()


def test_the_script_replaces_the_fallback(tab):
    page = tab.page
    assert not page.locator("img.headview-fallback").is_visible()
    assert page.locator(".headview-controls select").count() == 3
    assert page.locator("button.headview-token").count() >= 10
    assert _svg_lines(tab) > 0


def test_hover_tap_and_pickers_change_the_view(tab):
    page = tab.page
    buttons = page.locator("button.headview-token")
    all_lines = _svg_lines(tab)
    it = buttons.filter(has_text=re.compile(r"^it$"))
    it.hover()
    hovered = _readout(tab)
    assert '"it"' in hovered and "attends most to" in hovered
    assert 0 < _svg_lines(tab) < all_lines  # only the lines of "it"
    it.click()  # a tap/click keeps it selected
    assert it.get_attribute("aria-pressed") == "true"
    before = _readout(tab)
    page.select_option("#headview0-layer", value="0")
    page.select_option("#headview0-head", value="2")  # values count from 0, like the labels
    after = _readout(tab)
    assert after != before and "layer 0, head 2" in after
    assert page.locator("#headview0-layer option").first.inner_text() == "0"  # the book's convention
    page.select_option("#headview0-head", value="all")
    assert "all heads (mean)" in _readout(tab)
    page.select_option("#headview0-sentence", value="2")  # the subject-verb sentence
    assert page.locator("button.headview-token").filter(has_text=re.compile(r"^keys$")).count() == 1
    assert page.locator("button.headview-token[aria-pressed=true]").count() == 0


def test_keyboard(tab):
    page = tab.page
    page.mouse.move(0, 0)  # the pointer is left over a token by the tests before: keyboard only
    page.select_option("#headview0-sentence", value="0")
    first = page.locator("button.headview-token").first
    first.focus()
    assert '"[CLS]" (token 0)' in _readout(tab)  # tokens count from 0, as in the code
    page.keyboard.press("ArrowDown")
    assert '"the"' in _readout(tab)
    page.keyboard.press("Enter")
    assert page.locator("button.headview-token").nth(1).get_attribute("aria-pressed") == "true"
    page.keyboard.press("End")
    assert '"[SEP]"' in _readout(tab)
    page.keyboard.press("Tab")  # leaves the tokens: the selection stays
    assert page.locator("button.headview-token[aria-pressed=true]").count() == 1


def test_touch(browser, site):  # noqa: F811
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(f"{site}/{PAGE}.html", wait_until="networkidle")
    page.wait_for_selector("div.headview.headview-ready")
    token = page.locator("button.headview-token").nth(3)
    token.scroll_into_view_if_needed()
    token.tap()
    assert token.get_attribute("aria-pressed") == "true"
    assert "attends most to" in page.locator(".headview-readout").inner_text()
    assert not errors
    context.close()


def test_offline_no_console_errors_and_axe_at_both_widths(tab, axe_path):  # noqa: F811
    problems = []
    problems += run_axe(tab, axe_path, "1280")
    tab.resize(PHONE)
    problems += run_axe(tab, axe_path, "390")
    width = tab.page.evaluate("() => document.documentElement.scrollWidth")
    if width > PHONE["width"]:
        problems.append(f"the page scrolls sideways at 390 px: {width} px wide")
    tab.resize(DESKTOP)
    problems += check_requests(tab)
    assert any(u.endswith("/interactive/headview.js") for u in tab.requests)
    # the pickers' style (box.css) comes in the page's one stylesheet (code/build/book_build/speed/first_paint.py)
    assert not any(u.endswith(".css") and "/interactive/" in u for u in tab.requests)
    radius = tab.page.evaluate("() => getComputedStyle(document.querySelector('.headview select')).borderTopLeftRadius")
    assert radius == "4px", radius  # box.css: no other rule rounds the pickers
    assert not problems, "\n".join(problems)


def test_without_javascript_the_fallback_image_shows(browser, site):  # noqa: F811
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site}/{PAGE}.html")
    img = page.locator("div.headview img.headview-fallback")
    assert img.is_visible()
    assert page.evaluate("() => document.querySelector('img.headview-fallback').naturalWidth") > 0
    assert len(img.get_attribute("alt").split()) >= 5
    context.close()


def test_head_view_data_and_script_within_budget(html_dir):
    soup = BeautifulSoup(html_page(PAGE).read_text(), "html.parser")
    data = soup.select_one("div.headview script.headview-data").string.encode()
    size = len(gzip.compress(data, 9)) + sum(len(gzip.compress(p.read_bytes(), 9)) for p in SCRIPTS)
    assert size <= BUDGET_GZIP, f"head view data + script: {size} bytes gzip > {BUDGET_GZIP}"
