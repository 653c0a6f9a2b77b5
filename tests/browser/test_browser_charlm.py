"""The language model's prompt box (book/_site_extra/interactive/charlm.js + nn.js) in a real
browser: Debian's chromium driven by Playwright, offline, the built site served from
_build/html on 127.0.0.1 (the server and browser fixtures of test_browser.py).

The page's own forward pass must give the Python model's next-character probabilities for
the same prompt (the weights the build exported, read back with
``book_build.web_export.load_charlm``; float32, 1e-4), with temperature, top-k
and top-p as ``language_model.next_token_probs``. Typing a prompt and clicking Write must
write characters and draw the attention; Stop must stop it; bad input (an empty box,
emoji, 10,000 characters pasted, characters outside the vocabulary, a bad temperature)
must get a clear message and no console error. The weights are fetched only on the
reader's click. No request to another host; axe-core clean at 1280 and 390 px in light
and dark mode after writing; without JavaScript the box stays hidden and the page's
static figures show. Screenshots after typing go to _build/screenshots/.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tests.book_files import HTML, ROOT
from tests.browser.test_browser import DESKTOP, Tab, axe_path, browser, widget_sweep  # noqa: F401

from transformer_lessons import language_model as lm
from book_build.web_export import load_charlm

pytestmark = pytest.mark.browser

PAGE = "book/language_model"
EXPORT = HTML / "interactive" / "charlm"
PROMPTS = ["The ", "def f(x):\n    return x", "A class may define a method named __init__(). " * 3]
SAMPLING = [{}, {"temperature": 0.7}, {"topK": 5}, {"topP": 0.8}, {"temperature": 1.3, "topK": 20, "topP": 0.9}]


@pytest.fixture(scope="module")
def python_model():
    model, tokenizer = load_charlm(EXPORT)
    return model, tokenizer


@pytest.fixture(scope="module")
def tab(browser, site):  # noqa: F811
    t = Tab(browser)
    t.open(f"{site}/{PAGE}.html")
    t.page.wait_for_selector("div.charlm:not([hidden]) button.charlm-write")
    yield t
    t.close()


def _python_probs(model, tokenizer, prompt, opts):
    ids = tokenizer.encode(prompt)[-model.cfg.context:]
    with torch.no_grad():
        logits = model(ids[None])[0, -1]
    return lm.next_token_probs(logits, opts.get("temperature", 1.0), opts.get("topK"), opts.get("topP")).numpy()


def _message(tab) -> str:
    return tab.page.locator("div.charlm .charlm-message").inner_text()


def _write(tab, prompt: str) -> None:
    page = tab.page
    page.fill("#charlm0-prompt", prompt)
    page.click("button.charlm-write")


def test_weights_are_fetched_only_on_click(browser, site):  # noqa: F811
    t = Tab(browser)
    t.open(f"{site}/{PAGE}.html")
    t.page.wait_for_selector("div.charlm:not([hidden])")
    assert not any("/interactive/charlm/" in u for u in t.requests), "the model was fetched before the click"
    size = (EXPORT / "charlm.bin").stat().st_size
    assert f"({round(size / 1024)} KB)" in t.page.locator("button.charlm-write").inner_text()
    t.close()


def test_the_frame_and_controls_come_from_the_shared_stylesheet(tab):
    # box.css, in the page's one stylesheet (code/build/book_build/speed/first_paint.py), not fetched on its own
    assert not any(u.endswith(".css") and "/interactive/" in u for u in tab.requests)
    styles = tab.page.evaluate("""() => ['div.charlm', '#charlm0-prompt'].map(
        (s) => getComputedStyle(document.querySelector(s)).borderTopStyle)""")
    assert styles == ["solid", "solid"], styles  # box.css: no other rule draws the box's border


def test_the_page_gives_the_python_models_probabilities(tab, python_model):
    model, tokenizer = python_model
    page = tab.page
    vocab = page.evaluate("async () => { await window.transformerLessons.charlm.load(); return window.transformerLessons.charlm.vocab; }")
    assert vocab == tokenizer.chars
    for prompt in PROMPTS:
        for opts in SAMPLING:
            got = np.array(page.evaluate("([p, o]) => window.transformerLessons.charlm.probs(p, o)", [prompt, opts]))
            want = _python_probs(model, tokenizer, prompt, opts)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-4, err_msg=f"{prompt!r} {opts}")
            assert ((got == 0) == (want == 0)).all(), f"{prompt!r} {opts}: a different set of characters was kept"
    # the causal attention: rows sum to 1, nothing above the diagonal, equal to the Python model's
    ids = tokenizer.encode(PROMPTS[1])
    atts = page.evaluate("(ids) => window.transformerLessons.charlm.forward(ids).attentions.map(l => l.map(h => Array.from(h)))",
                         ids.tolist())
    with torch.no_grad():
        model(ids[None])
    for layer, block in enumerate(model.blocks):
        want = block.last_attention[0].numpy()  # (H, T, T)
        got = np.array(atts[layer]).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


def test_bad_prompts_and_settings_get_a_clear_message(tab):
    page = tab.page
    page.evaluate("() => window.transformerLessons.charlm.load()")
    for prompt, expected in [("", "Type a prompt"), ("\U0001F600\U0001F680", "never seen"),
                             ("Caf\u00e9 \u00fcber", "never seen these characters"),
                             ("\U0001F600" * 10_000, "never seen this character")]:
        _write(tab, prompt)
        page.wait_for_function("() => !document.querySelector('button.charlm-write').disabled")
        assert expected in _message(tab), (prompt[:10], _message(tab))
    err = page.evaluate("() => window.transformerLessons.charlm.probs('\u00e9').then(() => 'resolved', e => e.message)")
    assert "never seen" in err
    page.fill("#charlm0-temp", "0")
    _write(tab, "The ")
    assert "temperature" in _message(tab).lower()
    page.fill("#charlm0-temp", "0.8")
    page.fill("#charlm0-topp", "2")
    _write(tab, "The ")
    assert "Top-p" in _message(tab)
    page.fill("#charlm0-topp", "0.95")
    # 10,000 characters pasted: the model reads its context, says so, and the tab stays responsive
    _write(tab, "the object " * 910)
    page.wait_for_function("() => document.querySelector('.charlm-written').textContent.length > 5")
    assert "last 64 characters" in _message(tab)
    page.click("button.charlm-stop")
    page.wait_for_function("() => document.querySelector('.charlm-message').textContent.startsWith('Stopped')")
    assert not tab.errors, tab.errors


def test_typing_writes_draws_and_stops(tab):
    page = tab.page
    page.fill("#charlm0-topk", "10")
    _write(tab, "The value of ")
    page.wait_for_function("() => document.querySelector('.charlm-written').textContent.length >= 30")
    page.click("button.charlm-stop")
    page.wait_for_function("() => !document.querySelector('button.charlm-write').disabled")
    assert _message(tab).startswith("Stopped after")
    text = page.locator(".charlm-written").inner_text()
    assert 30 <= len(text) < 200
    caption = page.locator(".charlm-caption").inner_text()
    assert caption.startswith("Layer 0, head 0") and "attends most to" in caption
    page.select_option("#charlm0-layer", value="0")
    page.select_option("#charlm0-head", value="3")
    assert page.locator(".charlm-caption").inner_text().startswith("Layer 0, head 3")
    painted = page.evaluate("""() => { const c = document.querySelector('canvas.charlm-attention');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0, upper = 0; const w = c.width;
        for (let y = 0; y < w; y++) for (let x = 0; x < w; x++) { if (d[(y * w + x) * 4 + 3] > 0) { n++; if (x > y + 8) upper++; } }
        return [n, upper]; }""")
    assert painted[0] > 1000 and painted[1] == 0, painted  # the lower triangle only: causal
    # the whole run: written to the end
    page.fill("#charlm0-prompt", "import ")
    page.click("button.charlm-write")
    page.wait_for_function("() => document.querySelector('.charlm-message').textContent.startsWith('Wrote')", timeout=120_000)
    assert len(page.locator(".charlm-written").inner_text()) == 200
    assert not tab.errors, tab.errors


def test_offline_axe_and_screenshots_after_typing(tab, axe_path):  # noqa: F811
    page = tab.page
    page.fill("#charlm0-topp", "0.95")
    page.fill("#charlm0-temp", "0.8")
    _write(tab, "The ")
    page.wait_for_function("() => document.querySelector('.charlm-message').textContent.startsWith('Wrote')", timeout=120_000)
    problems = widget_sweep(tab, axe_path, "div.charlm", "charlm")
    assert any(u.endswith("/interactive/charlm/charlm.bin") for u in tab.requests)
    assert not problems, "\n".join(problems)


def test_without_javascript_the_static_figures_show(browser, site):  # noqa: F811
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site}/{PAGE}.html")
    assert not page.locator("div.charlm").is_visible()
    assert page.locator("#fig-lm-causal img").first.is_visible()
    context.close()


def test_the_export_is_the_built_model():
    """The exported files are in the built site, not in the repository."""
    assert (EXPORT / "charlm.json").is_file() and (EXPORT / "charlm.bin").is_file()
    assert not (ROOT / "book" / "_site_extra" / "interactive" / "charlm").exists()
    assert not list((ROOT / "book" / "_site_extra" / "interactive" / "minilm").glob("*.bin"))
