"""The illustrated walk (transformer_lessons.walk): its numbers are the library's, its frames
say the same in light and dark mode, bad input fails clearly, and the site's renderer writes
the stepper's markup (one figure per step, all visible without JavaScript)."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from tests.book_files import ROOT

from transformer_lessons import example, explorables, scaled_dot_product_attention, softmax, walk

INTERACTIVE = ROOT / "book" / "_site_extra" / "interactive"


def foundations_inputs():
    """X and the projections exactly as book/foundations.md draws them."""
    rng = np.random.default_rng(example.SEED)
    d_model, d_k = example.D_MODEL, example.D_K
    X = example.embeddings(rng)
    W_Q, W_K, W_V = (rng.normal(size=(d_model, d_k)) / np.sqrt(d_model) for _ in range(3))
    return example.tokens(), X, W_Q, W_K, W_V


@pytest.fixture(scope="module")
def cat_walk():
    tokens, X, W_Q, W_K, W_V = foundations_inputs()
    return walk.attention_walk(tokens, X, W_Q, W_K, W_V, tokens.index("cat"))


def test_numbers_are_the_library_intermediate_values(cat_walk):
    tokens, X, W_Q, W_K, W_V = foundations_inputs()
    i = tokens.index("cat")
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    out, w = scaled_dot_product_attention(Q, K, V)
    scores = Q @ K.T
    n = cat_walk.numbers
    np.testing.assert_allclose(n.x, X[i])
    np.testing.assert_allclose(n.q, Q[i])
    np.testing.assert_allclose(n.k, K[i])
    np.testing.assert_allclose(n.v, V[i])
    np.testing.assert_allclose(n.scores, scores[i])
    np.testing.assert_allclose(n.scaled, scores[i] / np.sqrt(example.D_K))
    np.testing.assert_allclose(n.weights, w[i])
    np.testing.assert_allclose(n.weights, softmax(scores / np.sqrt(example.D_K), axis=-1)[i])
    np.testing.assert_allclose(n.output, out[i])
    # what each step shows is those arrays
    shown = {k: v for s in cat_walk.steps for k, v in s.values.items()}
    for key in ("x", "q", "k", "v", "scores", "scaled", "weights", "output"):
        np.testing.assert_array_equal(shown[key], getattr(n, key))
    # the page's data, full precision
    data = cat_walk.data()
    assert data["tokens"] == tokens and data["index"] == i
    np.testing.assert_allclose(data["output"], out[i], rtol=1e-12)


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def test_frames_show_the_numbers_and_say_the_same_in_both_themes(cat_walk):
    n = cat_walk.numbers
    assert len(cat_walk.frames) == len(cat_walk.steps) == 7
    for k, (step, fig) in enumerate(zip(cat_walk.steps, cat_walk.frames), start=1):
        light, dark = _texts(fig), _texts(fig.dark)
        assert light == dark, f"step {k}: light and dark frames differ"
        assert f"Step {k} of 7: {step.title}" in light
        assert fig.alt.startswith(f"Step {k} of 7: {step.title}.")
        assert fig.svg and tuple(fig.get_size_inches()) == tuple(cat_walk.frames[0].get_size_inches())
        for name, values in step.values.items():  # every number drawn, and in the alt text
            for x in np.ravel(values):
                assert walk.fmt(x) in light, f"step {k}: {name} {walk.fmt(x)} not drawn"
                assert walk.fmt(x) in fig.alt, f"step {k}: {name} {walk.fmt(x)} not in the alt text"
    assert walk.fmt(n.output[0]) in cat_walk.frames[-1].alt


def test_bad_input_is_refused_with_the_shapes():
    tokens, X, W_Q, W_K, W_V = foundations_inputs()
    with pytest.raises(IndexError, match=r"token index 6 out of range for 6 tokens"):
        walk.attention_walk(tokens, X, W_Q, W_K, W_V, 6)
    with pytest.raises(IndexError, match="out of range"):
        walk.walk_steps(tokens, X, W_Q, W_K, W_V, -1)
    with pytest.raises(ValueError, match=r"X \(6, 16\), W_Q \(15, 4\)"):
        walk.walk_steps(tokens, X, W_Q[:15], W_K, W_V, 1)
    with pytest.raises(ValueError, match=r"W_Q \(16, 4\), W_K \(16, 3\)"):
        walk.walk_steps(tokens, X, W_Q, W_K[:, :3], W_V, 1)
    with pytest.raises(ValueError, match=r"5 tokens for X of shape \(6, 16\)"):
        walk.walk_steps(tokens[:5], X, W_Q, W_K, W_V, 1)
    with pytest.raises(ValueError, match=r"2-D; got X \(16,\)"):
        walk.walk_steps(tokens, X[0], W_Q, W_K, W_V, 1)


def test_fmt():
    assert walk.fmt(-0.004) == "0.00" and walk.fmt(-1.234) == "\u22121.23" and walk.fmt(0.5) == "0.50"


def test_bundle_for_notebooks_and_pdfs(cat_walk):
    bundle = cat_walk._repr_mimebundle_()
    png = base64.b64decode(bundle["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > height / 2, (width, height)  # two columns of frames, not one long strip
    assert "text/html" not in bundle
    assert all(f"{k}. {s.title}" in bundle["text/plain"] for k, s in enumerate(cat_walk.steps, start=1))
    payload = bundle[explorables.EXPLORABLE_MIME]
    assert payload["kind"] == "walk" and [f["step"] for f in payload["frames"]] == list(range(1, 8))
    assert all(f["figure"]["mime"] == "image/svg+xml" for f in payload["frames"])


def test_renderer_writes_one_figure_per_step(cat_walk):
    from docutils import nodes
    from myst_nb.core.render import MimeData

    from book_build import site

    class Renderer:
        def render_image(self, data):
            return [nodes.image(uri="x.svg", alt=data.cell_metadata["mystnb"]["image"]["alt"])]

    data = MimeData(explorables.EXPLORABLE_MIME, cat_walk._repr_mimebundle_()[explorables.EXPLORABLE_MIME],
                    cell_metadata={})
    out = site.ExplorableHtml.handle_mime(Renderer(), data, False)
    html = "".join(n.astext() for n in out if isinstance(n, nodes.raw))
    assert '<div class="tl-walk" role="group"' in html and 'data-steps="7"' in html
    assert re.findall(r'data-step="(\d)"', html) == [str(k) for k in range(1, 8)]
    assert html.count("<figcaption>") == 7 and "Step 7 of 7:</span> Weighted sum" in html
    assert 'aria-live="polite">Step 1 of 7<' in html and f'src="{site.WalkHtml.SCRIPT}" defer' in html
    numbers = json.loads(re.search(r'class="tl-walk-data">(.*?)</script>', html).group(1))
    assert numbers == json.loads(json.dumps(cat_walk.data()))
    images = [n for box in out if isinstance(box, nodes.container) for n in box.children]
    assert len(images) == 14 and [i["classes"] for i in images[:2]] == [["only-light"], ["only-dark"]]
    assert images[0]["alt"] == cat_walk.frames[0].alt


def test_script_uses_no_network():
    js = (INTERACTIVE / "walk.js").read_text()
    assert not re.search(r"\b(fetch|XMLHttpRequest|import\s*\(|WebSocket)\b|https?://", js)
    css = (INTERACTIVE / "walk.css").read_text()
    assert "url(" not in css and "@import" not in css
