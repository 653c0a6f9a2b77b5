"""The concept diagrams: the shapes written on them are the shapes the library produces."""

import re

import matplotlib
import numpy as np
import pytest
import torch

from transformer_lessons import (
    MultiHeadAttention,
    TransformerEncoderLayer,
    diagrams,
    example,
    plots,
    positional_encoding,
    scaled_dot_product_attention,
)

matplotlib.use("Agg")

SHAPE = re.compile(r"\((\d+(?:, \d+)*)\)")


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def shapes_written(fig) -> set[tuple[int, ...]]:
    """Every (a, b, ...) written anywhere on the figure."""
    return {tuple(int(n) for n in m.split(", ")) for t in texts(fig) for m in SHAPE.findall(t)}


def self_attention_shapes(t, d_model, d_k):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(t, d_model))
    w = rng.normal(size=(d_model, d_k))
    q = k = v = x @ w
    out, weights = scaled_dot_product_attention(q, k, v)
    return {"X": x.shape, "W_Q": w.shape, "Q": q.shape, "K": k.shape, "V": v.shape, "scores": (t, t),
            "weights": weights.shape, "output": out.shape}


@pytest.mark.parametrize("sizes", [(6, 16, 4), (3, 8, 2), (10, 32, 8)])
def test_self_attention_shapes_are_the_library_shapes(sizes):
    fig = diagrams.self_attention(*sizes)
    assert fig.shapes == self_attention_shapes(*sizes)
    written = shapes_written(fig)
    assert written == set(fig.shapes.values()), "a shape on the diagram that the library did not produce, or one missing"
    for name in ("X", "Q", "K", "V", "scores", "weights", "output"):
        assert any(t.startswith(name) and diagrams.shape_label(fig.shapes[name]) in t for t in texts(fig)), name


def test_running_example_self_attention_labels():
    fig = diagrams.self_attention()
    labels = texts(fig)
    t, e, d = len(example.tokens()), example.D_MODEL, example.D_K
    for expected in [f"X ({t}, {e})", f"Q ({t}, {d})", f"K ({t}, {d})", f"V ({t}, {d})", f"scores ({t}, {t})",
                     f"weights ({t}, {t})", f"output ({t}, {d})"]:
        assert expected in labels
    assert f"X, {t} by {e}," in fig.alt and f"the output, {t} by {d}." in fig.alt  # alt text from the same sizes


@pytest.mark.parametrize("sizes", [(6, 16, 4), (5, 12, 3), (4, 8, 1)])
def test_multi_head_shapes_are_the_module_shapes(sizes):
    t, e, h = sizes
    fig = diagrams.multi_head(t, e, h)
    mha = MultiHeadAttention(e, h).eval()
    x = torch.randn(1, t, e)
    with torch.no_grad():
        out, w = mha(x, x, x)
    d_k = mha.head_dim
    assert fig.shapes["X"] == fig.shapes["Q"] == fig.shapes["concat"] == tuple(out.shape[1:]) == (t, e)
    assert fig.shapes["weights"] == tuple(w.shape[1:]) == (h, t, t)
    assert fig.shapes["Q_heads"] == fig.shapes["heads"] == (h, t, d_k)
    assert fig.shapes["W_Q"] == fig.shapes["W_O"] == (e, e)
    assert shapes_written(fig) == set(fig.shapes.values())
    assert sum(bool(re.fullmatch(r"head \d+", t)) for t in texts(fig)) == h
    # the two rows of per-head blocks say what they are: the weights, then each head's output
    rows = [t for t in texts(fig) if t.startswith(("attention\nweights", "head outputs"))]
    assert [r.splitlines()[-1] for r in rows] == [diagrams.shape_label(fig.shapes["weights"]),
                                                 diagrams.shape_label(fig.shapes["heads"])]


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_shapes_are_the_layer_shapes(norm_first):
    t, e, h, ff = 6, example.D_MODEL, example.NUM_HEADS, example.D_FF
    fig = diagrams.encoder_layer(t, e, h, ff)
    layer = TransformerEncoderLayer(e, h, ff, norm_first=norm_first).eval()
    x = torch.randn(1, t, e)
    with torch.no_grad():
        out = layer(x)
        hidden = layer.linear1(x)
    key = "pre" if norm_first else "post"
    assert fig.shapes[f"{key}_output"] == tuple(out.shape[1:]) == (t, e)
    assert fig.shapes[f"{key}_hidden"] == tuple(hidden.shape[1:]) == (t, ff)
    assert shapes_written(fig) == set(fig.shapes.values())
    labels = texts(fig)
    assert "post-norm (the paper)" in labels and "pre-norm" in labels
    # post-norm: 2 layer norms after the sums; pre-norm: 2 before the sub-layers
    assert labels.count("layer norm") == 4 and labels.count("+") == 4


@pytest.mark.parametrize("sizes", [(6, 5, 16, 4, 64), (3, 7, 8, 2, 16)])
def test_decoder_layer_shapes_are_the_layer_shapes(sizes):
    from transformer_lessons.decoder import TransformerDecoderLayer

    t, s, e, h, ff = sizes
    fig = diagrams.decoder_layer(t, s, e, h, ff)
    layer = TransformerDecoderLayer(e, h, ff, dropout=0.0).eval()
    x, memory = torch.randn(1, t, e), torch.randn(1, s, e)
    with torch.no_grad():
        out = layer(x, memory)
    assert fig.shapes["output"] == tuple(out.shape[1:]) == (t, e)
    assert fig.shapes["cross_weights"] == tuple(layer.cross_attention_weights.shape[1:]) == (h, t, s)
    assert fig.shapes["self_weights"] == tuple(layer.self_attention_weights.shape[1:]) == (h, t, t)
    assert fig.shapes["hidden"] == tuple(layer.linear1(x).shape[1:]) == (t, ff)
    assert shapes_written(fig) == set(fig.shapes.values())
    labels = texts(fig)
    assert labels.count("layer norm") == 3 and labels.count("+") == 3


def test_positional_input_shapes():
    fig = diagrams.positional_input()
    t, e = len(example.tokens()), example.D_MODEL
    assert fig.shapes == {"X": example.embeddings().shape, "PE": positional_encoding(t, e).shape, "sum": (t, e)}
    labels = texts(fig)
    for word in example.tokens():
        assert word in labels
    assert f"X + PE ({t}, {e})" in labels
    assert f"X plus PE, {t} by {e}," in fig.alt
    # the PE block shows the encoding's own values
    image = fig.axes[0].images[0]
    np.testing.assert_allclose(image.get_array(), positional_encoding(t, e))


@pytest.mark.parametrize("make", [diagrams.self_attention, diagrams.multi_head, diagrams.encoder_layer,
                                  diagrams.positional_input, diagrams.decoder_layer])
def test_diagrams_light_and_dark_say_the_same(make):
    fig = make()
    assert texts(fig) == texts(fig.dark)
    assert fig.get_facecolor() != fig.dark.get_facecolor()
    bundle = fig._repr_mimebundle_()
    themed = bundle[plots.THEMED_MIME]
    assert themed["mime"] == "image/svg+xml"
    for theme in ("light", "dark"):
        svg = themed[theme]
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg
        assert len(svg.encode()) < 60_000, f"{make.__name__} {theme}: {len(svg.encode())} bytes of SVG"
    assert plots.THEMES["dark"]["background"] in themed["dark"] and plots.THEMES["dark"]["background"] not in themed["light"]
    import base64

    assert base64.b64decode(bundle["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"  # the PDFs' copy


def test_diagram_text_readable_on_a_phone():
    for make in (diagrams.self_attention, diagrams.multi_head, diagrams.encoder_layer, diagrams.positional_input,
                 diagrams.decoder_layer):
        fig = make()
        assert fig.get_size_inches()[0] <= diagrams.WIDTH
        sizes = [min(plots.text_sizes_pt(t)) for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
        assert min(plots.phone_text_px(fig, s, svg=True) for s in sizes) >= plots.MIN_PHONE_TEXT_PX, make.__name__


def test_multi_head_heads_differ_in_greyscale():
    """Printed in greyscale, each head's block looks different from every other's (the
    Okabe-Ito orange and green tints alone come out nearly the same grey)."""
    import io

    from matplotlib.patches import Rectangle
    from PIL import Image

    fig = diagrams.multi_head()
    dpi = 100
    grey = np.asarray(Image.open(io.BytesIO(fig.image_bytes("light", "png", dpi=dpi))).convert("L"), float) / 255
    fig.set_dpi(dpi)
    fig.canvas.draw()
    # the attention-weight blocks: one square band per head, in the head's colour
    squares = [p for p in fig.axes[0].patches if isinstance(p, Rectangle) and p.get_fill()
               and abs(p.get_width() - p.get_height()) < 1e-9 and p.get_facecolor()[:3] != (1, 1, 1)]
    crops = []
    for patch in squares:
        box = patch.get_window_extent()
        top = grey.shape[0] - box.y1
        crops.append(grey[int(top) + 2:int(top + box.height) - 2, int(box.x0) + 2:int(box.x1) - 2])
    assert len(crops) == example.NUM_HEADS
    for i in range(len(crops)):
        for j in range(i):
            a, b = crops[i], crops[j]
            h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
            assert np.abs(a[:h, :w] - b[:h, :w]).mean() > 0.05, f"heads {j} and {i} print alike"
