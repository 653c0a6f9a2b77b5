"""The illustrated walk on the built foundations page (book_build.site.WalkHtml, walk.js), in
Debian's chromium: one frame at a time with JavaScript, moved by the buttons and the arrow
keys, "Step k of n" announced, the library's numbers, no sideways scrolling at 390 px, no
serious axe-core violation in light and dark mode at 1280 and 390 px; without JavaScript
every frame, numbered. Screenshots go to _build/screenshots/walk-*.png."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.library.test_explorables import NO_STICKY, SCREENSHOTS, WIDTHS, Visit, browser  # noqa: F401 (a fixture)
from tests.library.test_walk import foundations_inputs

from transformer_lessons import scaled_dot_product_attention, walk

pytestmark = pytest.mark.browser
DOC = "book/foundations"
STEPS = 7


def _shown(root) -> list[str]:
    """The data-step of every frame that is visible."""
    return root.locator("figure[data-step]").evaluate_all(
        "fs => fs.filter(f => f.offsetParent !== null && getComputedStyle(f).display !== 'none')"
        ".map(f => f.dataset.step)")


def _library():
    tokens, X, W_Q, W_K, W_V = foundations_inputs()
    i = tokens.index("cat")
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    out, w = scaled_dot_product_attention(Q, K, V)
    scores = Q @ K.T
    return tokens, i, {"x": X[i], "q": Q[i], "k": K[i], "v": V[i], "scores": scores[i],
                       "scaled": scores[i] / np.sqrt(K.shape[1]), "weights": w[i], "output": out[i]}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_walk_steps_through_the_library_numbers(scheme, width, site, browser):
    visit = Visit(browser, site, DOC, WIDTHS[width], scheme)
    problems = []
    try:
        page = visit.page
        root = page.locator(".tl-walk")
        assert root.count() == 1, "no .tl-walk on the foundations page"
        assert root.locator("figure[data-step]").count() == STEPS == int(root.get_attribute("data-steps"))
        status = root.locator(".tl-walk-status")
        root.scroll_into_view_if_needed()
        page.wait_for_function("() => document.querySelector('.tl-walk').dataset.current === '1'")

        def expect(k: int, how: str):
            shown = _shown(root)
            if shown != [str(k)]:
                problems.append(f"{how}: frames {shown} visible, only step {k} expected")
            if status.text_content() != f"Step {k} of {STEPS}":
                problems.append(f"{how}: indicator reads {status.text_content()!r}, 'Step {k} of {STEPS}' expected")

        expect(1, "at load")
        assert status.get_attribute("aria-live") == "polite"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        img = root.locator("figure[data-step='1'] img:visible")
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
        root.screenshot(path=str(SCREENSHOTS / f"walk-{width}-{scheme}.png"), style=NO_STICKY)
        nxt, prev = root.locator(".tl-walk-next"), root.locator(".tl-walk-prev")
        if not prev.is_disabled():
            problems.append("Previous is enabled at step 1")
        for k in (2, 3):
            (nxt.tap if WIDTHS[width]["width"] < 600 else nxt.click)()
            expect(k, "Next")
        prev.click()
        expect(2, "Previous")
        nxt.focus()
        page.keyboard.press("ArrowRight")
        expect(3, "ArrowRight")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        expect(1, "ArrowLeft")
        page.keyboard.press("End")
        expect(STEPS, "End")
        if not nxt.is_disabled():
            problems.append("Next is enabled at the last step")
        root.locator(f"figure[data-step='{STEPS}'] img:visible").wait_for()
        root.screenshot(path=str(SCREENSHOTS / f"walk-{width}-{scheme}-last.png"), style=NO_STICKY)
        # arrow keys outside the walk do nothing to it
        page.locator("article h1").first.click()
        page.keyboard.press("ArrowLeft")
        expect(STEPS, "ArrowLeft outside the walk")
        # the numbers in the page are the library's
        data = json.loads(root.locator("script.tl-walk-data").text_content())
        tokens, i, ref = _library()
        assert data["tokens"] == tokens and data["index"] == i
        for key, values in ref.items():
            if not np.allclose(data[key], values, rtol=1e-12, atol=1e-14):
                problems.append(f"{key}: page {data[key]}, library {values.tolist()}")
        alts = root.locator("figure[data-step] img.only-light").evaluate_all("is => is.map(i => i.alt)")
        for key, k in (("x", 1), ("q", 2), ("k", 3), ("v", 3), ("scores", 4), ("scaled", 5), ("weights", 6),
                       ("output", 7)):
            missing = [walk.fmt(x) for x in ref[key] if walk.fmt(x) not in alts[k - 1]]
            if missing or not alts[k - 1].startswith(f"Step {k} of {STEPS}"):
                problems.append(f"step {k}'s alt text lacks {key} {missing}: {alts[k - 1]!r}")
        scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.querySelector('.tl-walk')"
                               ".scrollWidth, document.querySelector('.tl-walk').clientWidth]")
        mids = root.locator(".tl-walk-controls > *").evaluate_all(
            "es => es.map(e => { const r = e.getBoundingClientRect(); return r.top + r.height / 2; })")
        if max(mids) - min(mids) > 2:
            problems.append(f"the controls do not sit on one line: their middles at {mids}")
        if scroll[0] > WIDTHS[width]["width"] or scroll[1] > scroll[2]:
            problems.append(f"sideways scrolling (page, walk, walk's box): {scroll}")
        problems += visit.problems(".tl-walk")
        assert not problems, "\n".join(problems)
    finally:
        visit.close()


def test_walk_without_javascript_is_a_numbered_sequence(site, browser):
    context = browser.new_context(java_script_enabled=False, viewport=WIDTHS["phone-390"])
    try:
        page = context.new_page()
        page.goto(f"{site}/{DOC}.html")
        root = page.locator(".tl-walk")
        assert _shown(root) == [str(k) for k in range(1, STEPS + 1)]
        captions = root.locator("figcaption").all_text_contents()
        assert [c.split(":")[0].strip() for c in captions] == [f"Step {k} of {STEPS}" for k in range(1, STEPS + 1)]
        assert not root.locator(".tl-walk-controls").is_visible()
        light = root.locator("img.only-light")
        alts = light.evaluate_all("is => is.map(i => i.alt)")
        assert light.count() == STEPS and all(len(a.split()) >= 10 for a in alts)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    finally:
        context.close()
