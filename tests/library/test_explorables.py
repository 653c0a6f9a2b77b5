"""The three explorables: their data is the library's, and in a real browser they respond to
mouse, touch and keyboard with the library's numbers, offline and accessibly.

Unmarked tests check the data each explorable embeds (and the claims of their captions and
alt text). The ``browser`` tests open the built site (_build/html, served on 127.0.0.1) in
Debian's chromium, at 1280 px and 390 px, light and dark, and check that each explorable
has replaced its static figure, responds to input with the numbers the library computes,
logs no console error, requests nothing from another host, and has no serious or critical
axe-core violation. Screenshots of each explorable and each concept diagram, at both
widths and in both modes, go to _build/screenshots/ for a person to look at.
"""

from __future__ import annotations

import gzip
import json
import re
from urllib.parse import urlparse

import numpy as np
from book_build import chromium
import pytest
from tests.book_files import ROOT

from book_build import site

from transformer_lessons import explorables, plots, positional_encoding, scaled_dot_product_attention, softmax

INTERACTIVE = ROOT / "book" / "_site_extra" / "interactive"
WIDTHS = {"desktop-1280": {"width": 1280, "height": 900}, "phone-390": {"width": 390, "height": 844}}
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SCREENSHOTS = ROOT / "_build" / "screenshots"
# where each explorable lives: (page, figure name)
PLACES = {"attention": ("book/foundations", "fig-foundations-weights"),
          "pe": ("book/foundations", "fig-foundations-pe-explorer"),
          "dk": ("book/debugging", "fig-debugging-dk-explorer")}
DIAGRAMS = {"fig-foundations-self-attention-diagram": "book/foundations",
            "fig-foundations-multihead-diagram": "book/foundations",
            "fig-foundations-pe-input-diagram": "book/foundations",
            "fig-encoder-layer-diagram": "book/encoder"}
BUDGET_GZIP = 60_000
# the theme's sticky header bars would cover the top of an element screenshot
NO_STICKY = ".bd-header, .bd-header-article, .header-article { visibility: hidden !important; }"


def fmt(x: float) -> str:
    """How explorables.js writes a number: two decimals, a real minus sign."""
    return ("\u2212" if x < 0 else "") + f"{abs(x):.2f}"


# --- the data (no browser) -------------------------------------------------------------


def test_attention_data_is_the_library_output():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 5, 4))
    e = explorables.attention(list("abcde"), q, k, v)
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(e.data["weights"], w, atol=5e-4)
    np.testing.assert_allclose(e.data["output"], out, atol=5e-4)
    np.testing.assert_array_equal(e.data["q"], q)
    assert len(e.data["colours"]) == 5 and all(len(r) == 5 for r in e.data["colours"])
    with pytest.raises(ValueError, match="4 tokens"):
        explorables.attention(list("abcd"), q, k, v)


def test_dk_data_and_the_caption_claims():
    e = explorables.dk_slider(n_keys=8)
    d = e.data
    assert d["d_ks"] == [2**i for i in range(11)]
    rng = np.random.default_rng(0)  # the same draws, recomputed
    for i, d_k in enumerate(d["d_ks"]):
        q, keys = rng.normal(size=(500, d_k)), rng.normal(size=(8, d_k))
        s = q @ keys.T
        np.testing.assert_allclose(d["unscaled"][i], softmax(s)[0], atol=5e-4)
        np.testing.assert_allclose(d["scaled"][i], softmax(s / np.sqrt(d_k))[0], atol=5e-4)
        np.testing.assert_allclose(d["mean_max_scaled"][i], softmax(s / np.sqrt(d_k)).max(-1).mean(), atol=5e-4)
    # debugging.md's caption and alt text: unscaled from about 0.3 to nearly 1, rising;
    # scaled between about 0.3 and 0.4 at every d_k, above 1/8
    unscaled, scaled = np.array(d["mean_max_unscaled"]), np.array(d["mean_max_scaled"])
    assert 0.25 < unscaled[0] < 0.35 and unscaled[-1] > 0.95 and np.all(np.diff(unscaled) > 0)
    assert np.all((scaled > 0.25) & (scaled < 0.4)) and scaled.min() > 1 / 8


def test_pe_data_and_the_caption_claims():
    e = explorables.pe_explorer(seq_len=64, d_model=32, position=10)
    pe = positional_encoding(64, 32)
    np.testing.assert_allclose(e.data["pe"], pe, atol=5e-4)
    np.testing.assert_allclose(e.data["similarity"], pe @ pe.T, atol=5e-4)
    sim = pe @ pe[10]
    assert sim.argmax() == 10  # the peak is the position itself
    assert sim[10] > sim[9] > sim[8] and sim[10] > sim[11] > sim[12]  # and falls off on both sides


def test_static_figure_for_print_and_notebooks():
    import base64

    for e in (explorables.dk_slider(), explorables.pe_explorer()):
        bundle = e._repr_mimebundle_()
        assert base64.b64decode(bundle["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
        assert "text/html" not in bundle  # Jupyter, Colab and Binder show the PNG
        payload = bundle[explorables.EXPLORABLE_MIME]
        assert payload["static"]["mime"] == "image/png" and payload["kind"] == e.kind


def test_renderer_puts_the_script_over_the_static_figure():
    from docutils import nodes
    from myst_nb.core.render import MimeData

    class Renderer:
        def render_image(self, data):
            return [nodes.image(uri="x.png", alt=data.cell_metadata["mystnb"]["image"]["alt"])]

    e = explorables.pe_explorer(seq_len=8, d_model=4, position=2)
    meta = {"mystnb": {"image": {"alt": "two charts of one position's encoding"}}}
    data = MimeData(explorables.EXPLORABLE_MIME, e._repr_mimebundle_()[explorables.EXPLORABLE_MIME],
                    cell_metadata=meta)
    raw, static = site.ExplorableHtml.handle_mime(Renderer(), data, False)
    html = raw.astext()
    assert '<div class="tl-explorable" data-kind="pe" hidden>' in html
    assert f'<script src="{site.ExplorableHtml.SCRIPT}" defer></script>' in html
    assert json.loads(re.search(r'<script type="application/json" class="tl-data">(.*?)</script>', html).group(1))["data"] == e.data
    assert static["classes"] == ["tl-static"]
    assert [img["classes"] for img in static.children] == [["only-light"], ["only-dark"]]
    assert all(img["alt"] == "two charts of one position's encoding" for img in static.children)


def test_each_explorable_within_its_page_weight_budget():
    """Script + style + embedded data, gzipped, per explorable (the static figure is the
    page's figure either way)."""
    shared = sum(len(gzip.compress(p.read_bytes())) for p in (INTERACTIVE / "explorables.js", INTERACTIVE / "explorables.css"))
    rng = np.random.default_rng(0)
    for e in (explorables.attention(list("abcdef"), *rng.normal(size=(3, 6, 4))), explorables.dk_slider(),
              explorables.pe_explorer()):
        data = len(gzip.compress(json.dumps({"kind": e.kind, "data": e.data}).encode()))
        assert shared + data <= BUDGET_GZIP, f"{e.kind}: {shared + data} bytes gzipped"


def test_script_uses_no_network_and_no_framework():
    js = (INTERACTIVE / "explorables.js").read_text()
    assert not re.search(r"\b(fetch|XMLHttpRequest|import\s*\(|WebSocket)\b|https?://(?!www\.w3\.org/2000/svg)", js)
    css = (INTERACTIVE / "explorables.css").read_text()
    assert "url(" not in css and "@import" not in css


# --- in the browser -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = chromium.launch(p)  # code/build/book_build/chromium.py: fails clearly when chromium is missing
        yield b
        b.close()


class Visit:
    """One page at one width and colour scheme, recording requests and console errors."""

    def __init__(self, browser, base: str, doc: str, viewport: dict, scheme: str):
        self.context = browser.new_context(viewport=viewport, color_scheme=scheme, has_touch=viewport["width"] < 600)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20000)
        self.requests, self.errors = [], []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(f"{base}/{doc}.html", wait_until="networkidle")
        self.page.wait_for_function(f"() => document.documentElement.dataset.theme === '{scheme}'", timeout=5000)

    def foreign(self) -> list[str]:
        return sorted({u for u in self.requests
                       if urlparse(u).scheme not in ("data", "blob", "about") and urlparse(u).hostname != "127.0.0.1"})

    def axe(self, selector: str) -> list[str]:
        if not self.page.evaluate("() => typeof window.axe !== 'undefined'"):
            self.page.add_script_tag(path=str(AXE))
        found = self.page.evaluate(
            "async ([sel, tags]) => (await axe.run(document.querySelector(sel), {runOnly: {type: 'tag', values: tags},"
            " resultTypes: ['violations']})).violations.map(v => ({id: v.id, impact: v.impact,"
            " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))", [selector, AXE_TAGS])
        return [f"{v['impact']} {v['id']}: {v['nodes']}" for v in found if v["impact"] in ("serious", "critical")]

    def problems(self, selector: str) -> list[str]:
        """axe-core's serious and critical findings in ``selector``, requests to other hosts and
        console errors so far."""
        found = self.axe(selector)
        if foreign := self.foreign():
            found.append(f"requests to other hosts: {foreign}")
        return found + [f"console: {e}" for e in self.errors]

    def close(self):
        self.context.close()


def _embedded(visit: Visit, name: str) -> dict:
    text = visit.page.locator(f"#{name} script.tl-data").text_content()
    return json.loads(text)["data"]


def _check_attention(visit: Visit, name: str) -> list[str]:
    page, problems = visit.page, []
    root = page.locator(f"#{name} .tl-explorable")
    d = _embedded(visit, name)
    out, w = scaled_dot_product_attention(np.array(d["q"]), np.array(d["k"]), np.array(d["v"]))  # the library
    buttons = root.locator("tbody th button")
    tokens = d["tokens"]
    for i, how in ((2, "click"), (4, "hover"), (0, "keyboard")):
        if how == "click":
            if page.viewport_size["width"] < 600:
                buttons.nth(i).tap()  # a touch screen at the phone width
            else:
                buttons.nth(i).click()
        elif how == "hover":
            root.locator("tbody tr").nth(i).locator("td").nth(0).hover()
        else:
            buttons.nth(1).focus()
            page.keyboard.press("Shift+Tab")  # Tab order: the buttons in row order
            if page.evaluate("() => document.activeElement.dataset.row") != "0":
                problems.append("keyboard: Shift+Tab from row 1 does not reach row 0's button")
                buttons.nth(0).focus()
        if root.get_attribute("data-row") != str(i):
            problems.append(f"{how}: row {i} ({tokens[i]}) not selected (data-row={root.get_attribute('data-row')})")
            continue
        hi = root.locator("tbody tr.tl-row-hi")
        if hi.count() != 1 or hi.locator("th").text_content().split()[0] != tokens[i]:
            problems.append(f"{how}: the highlighted row is not {tokens[i]!r}")
        cells = [c.strip() for c in hi.locator("td").all_text_contents()]
        if cells != [fmt(x) for x in w[i]]:
            problems.append(f"{how}: row {i} shows {cells}, the library gives {[fmt(x) for x in w[i]]}")
        shown = root.locator(".tl-out").text_content()
        expected = "= [" + ", ".join(fmt(x) for x in out[i]) + "]"
        if shown != expected:
            problems.append(f"{how}: weighted sum shown {shown!r}, the library gives {expected!r}")
        if buttons.nth(i).get_attribute("aria-pressed") != "true":
            problems.append(f"{how}: row {i}'s button is not aria-pressed")
    return problems


def _check_dk(visit: Visit, name: str) -> list[str]:
    page, problems = visit.page, []
    root = page.locator(f"#{name} .tl-explorable")
    ref = explorables.dk_slider(n_keys=8).data  # the library, recomputed
    slider = root.locator("input[type=range]")
    slider.focus()
    page.keyboard.press("End")
    for steps, expect in ((0, 1024), (3, 128), (10, 1)):
        for _ in range(steps):
            page.keyboard.press("ArrowLeft")
        i = ref["d_ks"].index(expect)
        if root.get_attribute("data-dk") != str(expect):
            problems.append(f"keyboard: d_k {root.get_attribute('data-dk')} shown, {expect} expected")
            continue
        for cls, key in (("unscaled", "unscaled"), ("scaled", "scaled")):
            text = root.locator(f".tl-max-{cls}").text_content()
            want = f"largest weight {fmt(max(ref[key][i]))}; mean over 500 queries {fmt(ref['mean_max_' + key][i])}"
            if text != want:
                problems.append(f"d_k={expect} {cls}: shows {text!r}, the library gives {want!r}")
        heights = root.locator("svg.tl-bars").nth(0).locator("rect").evaluate_all("rs => rs.map(r => +r.getAttribute('height'))")
        if np.argmax(heights) != int(np.argmax(ref["unscaled"][i])):
            problems.append(f"d_k={expect}: the tallest unscaled bar is not the largest weight")
    return problems


def _check_pe(visit: Visit, name: str) -> list[str]:
    page, problems = visit.page, []
    root = page.locator(f"#{name} .tl-explorable")
    pe = positional_encoding(64, 32)  # the library
    sim = pe @ pe.T
    slider = root.locator("input[type=range]")
    slider.focus()
    for key, expect in (("ArrowRight", 11), ("ArrowRight", 12), ("Home", 0), ("End", 63)):
        page.keyboard.press(key)
        if root.get_attribute("data-position") != str(expect):
            problems.append(f"{key}: position {root.get_attribute('data-position')}, {expect} expected")
            continue
        others = [j for j in range(64) if j != expect]
        best = max(others, key=lambda j: sim[expect, j])
        text = root.locator(".tl-live").text_content()
        want = (f"Position {expect}: PE[{expect}]\u00b7PE[{expect}] = {fmt(sim[expect, expect])}; the most similar other"
                f" position is {best} ({fmt(sim[expect, best])})")
        if not text.startswith(want):
            problems.append(f"position {expect}: {text!r} does not start with {want!r}")
        heights = np.array(root.locator("svg.tl-bars rect").evaluate_all("rs => rs.map(r => +r.getAttribute('height'))"))
        scale = heights.max() / np.abs(pe[expect]).max()
        if not np.allclose(heights, scale * np.abs(pe[expect]), atol=0.5):
            problems.append(f"position {expect}: bar heights are not proportional to |PE[{expect}]|")
    # touch: a tap on the track moves the slider
    box = slider.bounding_box()
    if visit.page.viewport_size["width"] < 600:
        page.touchscreen.tap(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    else:
        page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    pos = int(root.get_attribute("data-position"))
    if not 5 <= pos <= 26:
        problems.append(f"a tap a quarter along the slider gave position {pos}")
    return problems


CHECK = {"attention": _check_attention, "dk": _check_dk, "pe": _check_pe}


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("kind", PLACES)
def test_explorable_in_the_browser(kind, scheme, width, site, browser):
    doc, name = PLACES[kind]
    visit = Visit(browser, site, doc, WIDTHS[width], scheme)
    try:
        page = visit.page
        fig = page.locator(f"#{name}")
        assert fig.count() == 1, f"no figure #{name} on {doc}"
        root = fig.locator(".tl-explorable")
        assert root.is_visible(), "the explorable did not replace its static figure"
        assert not fig.locator(".tl-static").is_visible(), "the static figure is still shown"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        fig.scroll_into_view_if_needed()
        fig.screenshot(path=str(SCREENSHOTS / f"explorable-{kind}-{width}-{scheme}.png"), style=NO_STICKY)
        problems = CHECK[kind](visit, name)
        scroll = page.evaluate(f"() => {{const f = document.getElementById('{name}');"
                               " return [f.scrollWidth, f.clientWidth, document.documentElement.scrollWidth]}")
        if scroll[2] > WIDTHS[width]["width"]:
            problems.append(f"the page scrolls sideways: {scroll}")
        problems += visit.problems(f"#{name}")
        assert not problems, "\n".join(problems)
    finally:
        visit.close()


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_diagrams_in_both_modes(scheme, width, site, browser):
    """Each diagram shows exactly its variant for the mode (an SVG), with alt text; screenshots."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    problems = []
    for doc in sorted(set(DIAGRAMS.values())):
        visit = Visit(browser, site, doc, WIDTHS[width], scheme)
        try:
            for name, page_doc in DIAGRAMS.items():
                if page_doc != doc:
                    continue
                fig = visit.page.locator(f"#{name}")
                if fig.count() != 1:
                    problems.append(f"no figure #{name} on {doc}")
                    continue
                fig.scroll_into_view_if_needed()  # the figures load lazily, as a reader scrolls to them
                try:
                    visit.page.wait_for_function(
                        "fig => [...fig.querySelectorAll('img')].filter(i => i.offsetParent !== null)"
                        ".every(i => i.complete && i.naturalWidth > 0)", arg=fig.element_handle(), timeout=60_000)
                except PlaywrightTimeout:
                    problems.append(f"{name}: its {scheme} image did not load within 60 s of scrolling to it")
                shown = fig.locator("img").evaluate_all(
                    "imgs => imgs.filter(i => i.offsetParent !== null).map(i => ({src: i.currentSrc, alt: i.alt,"
                    " cls: i.className, w: i.getBoundingClientRect().width, ok: i.complete && i.naturalWidth > 0}))")
                if len(shown) != 1:
                    problems.append(f"{name}: {len(shown)} images visible in {scheme} mode, expected 1")
                    continue
                img = shown[0]
                if f"only-{scheme}" not in img["cls"] or not img["src"].endswith(".svg") or not img["ok"]:
                    problems.append(f"{name}: visible image {img}")
                if len(img["alt"].split()) < 20:
                    problems.append(f"{name}: alt text too short: {img['alt']!r}")
                if not fig.locator("figcaption").is_visible():
                    problems.append(f"{name}: the caption is hidden in {scheme} mode")
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                fig.screenshot(path=str(SCREENSHOTS / f"diagram-{name.removeprefix('fig-')}-{width}-{scheme}.png"),
                               style=NO_STICKY)
            problems += [f"{doc}: console: {e}" for e in visit.errors]
            problems += [f"{doc}: requests to other hosts: {u}" for u in visit.foreign()]
        finally:
            visit.close()
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_static_figures_stay_without_javascript(site, browser):
    """With JavaScript off, each explorable's static figure (with its alt text) is what shows."""
    context = browser.new_context(java_script_enabled=False, viewport=WIDTHS["desktop-1280"])
    try:
        page = context.new_page()
        for kind, (doc, name) in PLACES.items():
            page.goto(f"{site}/{doc}.html")
            fig = page.locator(f"#{name}")
            assert not fig.locator(".tl-explorable").is_visible(), kind
            light = fig.locator(".tl-static img.only-light")
            assert light.count() == 1 and len(light.get_attribute("alt").split()) >= 10, kind
            assert fig.locator("figcaption").text_content().strip(), kind
    finally:
        context.close()
