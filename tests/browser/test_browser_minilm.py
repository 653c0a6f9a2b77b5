"""The real model's text box (book/_site_extra/interactive/minilm.js on nn.js and headview.js)
in a real browser: Debian's chromium driven by Playwright, offline, the built site served
from _build/html on 127.0.0.1 (the server and browser fixtures of test_browser.py).

Through ``window.transformerLessons.minilm.run(text)``, on sentences chosen here, the page's
WordPiece tokens must equal the Python tokenizer's (the same tokenizer.json), and its
attention and sentence embedding must equal the book's Python model: within 1e-4 of the
exported (int8/fp16) weights read back in Python (``web_export.load_minilm_export``; the
JavaScript is float32 arithmetic), and within what docs/instructors.md states of the full-precision
model (attention 2e-2, embedding cosine >= 0.999). The model is fetched only on the
reader's click, with its size shown before; the typed sentence gets a head view (every
layer and head, mouse, keyboard and touch) and the similarity of two sentences; bad
input (an empty box, emoji, more than 64 pieces, 10,000 characters) gets a clear message.
No request to another host, no console error, axe-core clean at 1280 and 390 px in light
and dark mode; without JavaScript the box stays hidden. Screenshots go to _build/screenshots/.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from tests.book_files import HTML
from tests.browser.test_browser import DESKTOP, PHONE, Tab, axe_path, browser, widget_sweep  # noqa: F401

pytestmark = pytest.mark.browser

PAGE = "book/real_model"
EXPORT = HTML / "interactive" / "minilm"
SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "Naïve café owners' résumé-writing, in 2024!",  # accents stripped, punctuation split
    "Unbelievably, antidisestablishmentarianism isn't in every dictionary.",  # ## pieces
    "東京 is big; see [SEP] here\tand\u00a0there",  # CJK, a special token typed, odd spaces
    "I love 🍕 and ☕",  # [UNK]
]


@pytest.fixture(scope="module")
def models():
    from transformer_lessons.pretrained import load_minilm
    from book_build.web_export import load_minilm_export

    return load_minilm(), load_minilm_export(EXPORT)


@pytest.fixture(scope="module")
def tab(browser, site):  # noqa: F811
    t = Tab(browser)
    t.open(f"{site}/{PAGE}.html")
    t.page.wait_for_selector("div.minilm:not([hidden]) button.minilm-run")
    yield t
    t.close()


def _message(tab) -> str:
    return tab.page.locator("div.minilm .minilm-message").inner_text()


def _click_and_wait(tab, timeout=120_000) -> None:
    page = tab.page
    page.click("button.minilm-run")
    page.wait_for_function("() => !document.querySelector('button.minilm-run').disabled", timeout=timeout)


def test_nothing_is_fetched_before_the_click_and_the_size_is_shown(tab):
    assert not any("/interactive/minilm/" in u for u in tab.requests)
    size = sum((EXPORT / f).stat().st_size for f in ("minilm.bin", "tokenizer.json"))
    assert f"({size / 1e6:.0f} MB)" in tab.page.locator("button.minilm-run").inner_text()
    assert size <= 30_000_000


def test_the_frame_comes_from_the_shared_stylesheet(tab):
    # box.css, in the page's one stylesheet (code/build/book_build/speed/first_paint.py), not fetched on its own
    assert not any(u.endswith(".css") and "/interactive/" in u for u in tab.requests)
    style = tab.page.evaluate("() => getComputedStyle(document.querySelector('div.minilm')).borderTopStyle")
    assert style == "solid"  # box.css: no other rule draws the box's border


def test_tokens_attention_and_embedding_equal_the_python_model(tab, models):
    full, web = models
    page = tab.page
    page.evaluate("() => window.transformerLessons.minilm.load()")
    for s in SENTENCES:
        r = page.evaluate("(s) => window.transformerLessons.minilm.run(s)", s)
        assert r["tokens"] == full.tokenize(s), s
        a = np.array(r["attentions"])
        assert a.shape == (6, 12, len(r["tokens"]), len(r["tokens"]))
        np.testing.assert_allclose(a, web.attention(s), rtol=0, atol=1e-4, err_msg=s)
        np.testing.assert_allclose(a, full.attention(s), rtol=0, atol=2e-2, err_msg=s)
        e = np.array(r["embedding"])
        np.testing.assert_allclose(e, web.embed([s])[0], rtol=0, atol=1e-4, err_msg=s)
        assert float(e @ full.embed([s])[0]) >= 0.999, s
    assert not tab.errors, tab.errors


def test_typing_a_sentence_gives_its_head_view_and_similarity(tab):
    page = tab.page
    page.fill("#minilm0-a", "The trophy didn't fit in the suitcase because it was too big.")
    page.fill("#minilm0-b", "The suitcase was too small for the trophy.")
    _click_and_wait(tab)
    assert "word pieces" in _message(tab), _message(tab)
    assert "Cosine similarity" in page.locator(".minilm-similarity").inner_text()
    view = page.locator("div.minilm div.headview.headview-ready")
    assert view.count() == 1
    tokens = view.locator("button.headview-token")
    assert tokens.count() == len("[CLS] the trophy didn ' t fit in the suitcase because it was too big . [SEP]".split())
    it = tokens.filter(has_text=re.compile(r"^it$"))
    it.hover()
    readout = view.locator(".headview-readout").inner_text()
    assert '"it"' in readout and "attends most to" in readout
    it.focus()
    page.keyboard.press("ArrowDown")
    assert '"was"' in view.locator(".headview-readout").inner_text()
    page.select_option("#headview100-layer", value="5")
    page.select_option("#headview100-head", value="11")
    assert "layer 5, head 11" in view.locator(".headview-readout").inner_text()
    assert not tab.errors, tab.errors


def test_bad_input_gets_a_clear_message(tab):
    page = tab.page
    page.fill("#minilm0-b", "")
    for text, expected in [("", "box is empty"), ("   \n ", "box is empty"), ("😀😀😀", "[UNK]"),
                           ("word " * 70, "more than 64 word pieces"), ("x" * 10_000, "[UNK]"),
                           ("a, " * 5_000, "more than 64 word pieces")]:
        page.fill("#minilm0-a", text)
        _click_and_wait(tab)
        assert expected in _message(tab), (text[:12], _message(tab))
    err = page.evaluate("() => window.transformerLessons.minilm.run('').then(() => 'resolved', e => e.message)")
    assert "empty" in err
    assert not tab.errors, tab.errors


def test_touch(browser, site):  # noqa: F811
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.goto(f"{site}/{PAGE}.html", wait_until="networkidle")
    page.wait_for_selector("div.minilm:not([hidden])")
    page.fill("#minilm0-a", "A cat sat.")
    page.tap("button.minilm-run")
    page.wait_for_selector("div.minilm div.headview.headview-ready", timeout=120_000)
    token = page.locator("div.minilm button.headview-token").nth(2)
    token.scroll_into_view_if_needed()
    token.tap()
    assert token.get_attribute("aria-pressed") == "true"
    assert not errors, errors
    context.close()


def test_offline_axe_and_screenshots_after_typing(tab, axe_path):  # noqa: F811
    page = tab.page
    page.fill("#minilm0-a", "The animal didn't cross the street because it was too tired.")
    page.fill("#minilm0-b", "The dog was too exhausted to walk across the road.")
    _click_and_wait(tab)
    problems = widget_sweep(tab, axe_path, "div.minilm", "minilm")
    assert any(u.endswith("/interactive/minilm/minilm.bin") for u in tab.requests)
    assert not problems, "\n".join(problems)


def test_licence_and_credit_are_served_beside_the_weights(site):
    from urllib.request import urlopen

    licence = urlopen(f"{site}/interactive/minilm/LICENSE").read().decode()
    notice = urlopen(f"{site}/interactive/minilm/NOTICE.txt").read().decode()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert "all-MiniLM-L6-v2" in notice and "LICENSE" in notice
    assert "apache-2.0" in urlopen(f"{site}/interactive/minilm/MODEL_CARD.md").read().decode().lower()


def test_without_javascript_the_box_stays_hidden(browser, site):  # noqa: F811
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site}/{PAGE}.html")
    assert not page.locator("div.minilm").is_visible()
    assert page.locator("img.headview-fallback").first.is_visible()
    context.close()
