"""Every plot returns a Figure with the promised labels, colour bar and colour map, in a
light and a dark variant, readable on a 390 px phone."""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from book_build import site

from transformer_lessons import plots, positional_encoding
from transformer_lessons.stability import saturation_stats

matplotlib.use("Agg")


def _no_pyplot_figures():
    import matplotlib.pyplot as plt

    return plt.get_fignums() == []


def test_attention_heatmap_has_token_labels_and_colorbar():
    tokens = ["the", "cat", "sat"]
    w = np.full((3, 3), 1 / 3)
    fig = plots.attention_heatmap(w, tokens, title="t")
    assert isinstance(fig, Figure)
    ax, cbar = fig.axes  # the heatmap and its colour bar
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert [t.get_text() for t in ax.get_yticklabels()] == tokens
    assert ax.images[0].get_cmap().name == "viridis"
    assert cbar.get_ylabel() == "attention weight"
    assert _no_pyplot_figures()


def test_attention_heatmap_cross_attention_labels_and_annotation():
    fig = plots.attention_heatmap(np.eye(2, 4), ["a", "b"], ["w", "x", "y", "z"], annotate=True)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    assert len(ax.texts) == 8


def test_attention_heatmap_rejects_wrong_labels():
    with pytest.raises(ValueError, match="2 query labels"):
        plots.attention_heatmap(np.eye(3), ["a", "b"])
    with pytest.raises(ValueError, match="weights must be"):
        plots.attention_heatmap(np.ones((2, 3, 3)))


def test_attention_grid_one_panel_per_head():
    w = np.random.default_rng(0).random((3, 4, 4))
    fig = plots.attention_grid(w, list("abcd"), ncols=2)
    heat = [ax for ax in fig.axes if ax.images]
    assert len(heat) == 3  # three heads; the empty fourth panel and the colour bar hold no image
    assert [ax.get_title() for ax in heat] == ["head 0", "head 1", "head 2"]
    assert any(ax.get_ylabel() == "attention weight" for ax in fig.axes)
    assert fig.get_supylabel() == "query (attending)" and fig.get_supxlabel() == "key (attended to)"


def test_positional_plots():
    pe = positional_encoding(20, 16)
    fig = plots.positional_encoding_heatmap(pe)
    assert fig.axes[0].images[0].get_cmap().name == "cividis"
    fig = plots.positional_encoding_curves(pe, dims=(0, 1, 4))
    ax = fig.axes[0]
    curves, markers = ax.lines[0::2], ax.lines[1::2]
    assert len(curves) == len(markers) == 3
    for line, d in zip(markers, (0, 1, 4)):  # markers: the table's values at the integer positions
        np.testing.assert_array_equal(line.get_xdata(), np.arange(20))
        np.testing.assert_allclose(line.get_ydata(), pe[:, d])
        assert line.get_linestyle() == "None" and line.get_marker() != "None"
    for line, d in zip(curves, (0, 1, 4)):  # curves: the continuous sinusoid, finely sampled
        x = np.asarray(line.get_xdata())
        assert len(x) >= 20 * 20 and np.diff(x).max() < 0.1
        fn = np.sin if d % 2 == 0 else np.cos
        np.testing.assert_allclose(line.get_ydata(), fn(x / 10000 ** ((d - d % 2) / 16)), atol=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        plots.positional_encoding_curves(pe, dims=(16,))
    with pytest.raises(ValueError, match="not the sinusoid"):
        plots.positional_encoding_curves(pe * 2, dims=(0,))


def _lightness(cmap_name: str, values) -> np.ndarray:
    """CIE L* of the colour map at ``values`` in [0, 1]."""
    rgb = matplotlib.colormaps[cmap_name](np.asarray(values))[:, :3]
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    y = lin @ np.array([0.2126, 0.7152, 0.0722])
    return np.where(y > 216 / 24389, 116 * np.cbrt(y) - 16, y * 24389 / 27)


@pytest.mark.parametrize("cmap", [plots.WEIGHTS_CMAP, plots.SIGNED_CMAP])
def test_colour_maps_encode_the_value_in_lightness(cmap):
    """In greyscale print every value keeps its own grey: -1 and +1 differ, and the
    lightness rises steadily with the value (a red-blue map fails both)."""
    lightness = _lightness(cmap, np.linspace(0, 1, 11))
    assert np.all(np.diff(lightness) > 2), lightness.round(1)
    assert lightness[-1] - lightness[0] > 60
    assert np.ptp(_lightness("RdBu_r", [0.0, 1.0])) < 15  # the old map: +1 and -1 nearly the same grey


def _all_figures():
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    w = np.random.default_rng(0).dirichlet(np.ones(6), size=(4, 6))  # (H, T, T), rows sum to 1
    pe = positional_encoding(64, 32)
    d_ks = [4, 64]
    return {
        "heatmap": plots.attention_heatmap(w[0], tokens, annotate=True),
        "grid": plots.attention_grid(w, tokens),
        "pe_heatmap": plots.positional_encoding_heatmap(pe),
        "pe_curves": plots.positional_encoding_curves(pe),
        "saturation": plots.saturation_plot(d_ks, [saturation_stats(d, False) for d in d_ks],
                                             [saturation_stats(d, True) for d in d_ks]),
        "loss": plots.loss_curve([3.0, 1.0]),
        "gradient": plots.gradient_distance_plot(np.logspace(-6, 0, 5), np.ones(5)),
        "scaling": plots.scaling_plot([1, 2, 4], {"a": [1, 4, 16]}, ylabel="s"),
    }


def test_every_plot_has_a_dark_variant_with_the_same_content():
    for name, fig in _all_figures().items():
        assert isinstance(fig, plots.ThemedFigure), name
        light_texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        dark_texts = [t.get_text() for t in fig.dark.findobj(matplotlib.text.Text)]
        assert light_texts == dark_texts, name
        for a, b in zip(fig.axes, fig.dark.axes):  # same colour scale meaning in both
            for im_a, im_b in zip(a.images, b.images):
                assert im_a.get_cmap().name == im_b.get_cmap().name
                assert im_a.get_clim() == im_b.get_clim()
                np.testing.assert_array_equal(im_a.get_array(), im_b.get_array())
        assert matplotlib.colors.to_hex(fig.dark.get_facecolor()) == plots.THEMES["dark"]["background"]
        assert matplotlib.colors.to_hex(fig.get_facecolor()) == plots.THEMES["light"]["background"]


def test_text_is_readable_on_a_phone():
    """At 390 px, numbers inside heatmap cells and axis text are at least 9 CSS px tall."""
    for name, fig in _all_figures().items():
        for t in fig.findobj(matplotlib.text.Text):
            if t.get_text().strip():
                px = plots.phone_text_px(fig, min(plots.text_sizes_pt(t)))  # a mathtext script: 70 %
                assert px >= plots.MIN_PHONE_TEXT_PX, f"{name}: {t.get_text()!r} is {px:.1f} px on a phone"


def test_annotations_are_dropped_when_they_would_not_fit():
    w = np.full((12, 12), 1 / 12)
    fig = plots.attention_heatmap(w, annotate=True)
    assert len(fig.axes[0].texts) == 0  # 12 columns: the numbers would be too small to read on a phone
    fig = plots.attention_heatmap(np.full((6, 6), 1 / 6), annotate=True)
    assert len(fig.axes[0].texts) == 36


def test_four_heads_make_a_two_by_two_grid():
    fig = plots.attention_grid(np.full((4, 6, 6), 1 / 6), list("abcdef"))
    heat = [ax for ax in fig.axes if ax.images]
    positions = {(round(ax.get_position().x0, 2), round(ax.get_position().y0, 2)) for ax in heat}
    assert len({x for x, _ in positions}) == 2 and len({y for _, y in positions}) == 2


def test_themed_output_for_the_web_and_for_print():
    import base64

    fig = plots.loss_curve([2.0, 1.0])
    bundle = fig._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    themed = bundle[plots.THEMED_MIME]
    assert themed["mime"] == "image/png"
    light, dark = (base64.b64decode(themed[k]) for k in ("light", "dark"))
    assert light != dark and light == base64.b64decode(bundle["image/png"])


def test_themed_images_renderer_gives_two_images_with_the_theme_classes():
    from docutils import nodes
    from myst_nb.core.render import MimeData

    fig = plots.loss_curve([2.0, 1.0])
    bundle = fig._repr_mimebundle_()
    seen = []

    class Renderer:  # the part of myst-nb's NbElementRenderer the plugin uses
        def render_image(self, data):
            seen.append((data.mime_type, data.cell_metadata))
            return [nodes.image(uri=f"{len(seen)}.png", alt="a line plot of the loss falling")]

    meta = {"mystnb": {"image": {"alt": "a line plot of the loss falling"}}}
    data = MimeData(plots.THEMED_MIME, bundle[plots.THEMED_MIME], cell_metadata=meta)
    [box] = site.ThemedImages.handle_mime(Renderer(), data, False)
    assert box["classes"] == ["themed-figure"]  # one box: no .only-dark right before the figcaption
    assert [n["classes"] for n in box.children] == [["only-light"], ["only-dark"]]
    assert seen == [("image/png", meta), ("image/png", meta)]  # the cell's alt text goes to both
    assert site.ThemedImages.handle_mime(Renderer(), MimeData("image/png", "x"), False) is None
    assert ("html", plots.THEMED_MIME, 1) in site.ThemedImages.mime_priority_overrides


def test_saturation_and_loss_plots():
    d_ks = [4, 64]
    fig = plots.saturation_plot(d_ks, [saturation_stats(d, False) for d in d_ks], [saturation_stats(d, True) for d in d_ks])
    assert len(fig.axes) == 2 and all(len(ax.lines) == 2 for ax in fig.axes)
    fig = plots.loss_curve([3.0, 1.0, 0.1])
    assert fig.axes[0].get_yscale() == "log"


@pytest.mark.parametrize("figure", ["themed", "plain"])
def test_figures_display_as_png_in_a_notebook(figure):
    """Both kinds of figure show as a PNG in IPython with nothing registered beforehand."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    if figure == "themed":
        fig = plots.loss_curve([1.0, 0.5])
    else:
        fig = plots.PngFigure(figsize=(2, 1))
        fig.add_subplot().plot([0, 1])
    data, _ = shell.display_formatter.format(fig)
    assert "image/png" in data
    png = data["image/png"]
    assert (png if isinstance(png, bytes) else png.encode())[:8] in (b"\x89PNG\r\n\x1a\n", b"iVBORw0K")


def test_scaling_plot_log_log_with_slopes_in_legend():
    sizes = [128, 256, 512, 1024]
    fig = plots.scaling_plot(sizes, {"quadratic": [s**2 for s in sizes], "linear": [3 * s for s in sizes]},
                             ylabel="bytes", title="t")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["quadratic (slope 2.00)", "linear (slope 1.00)"]
    assert ax.get_ylabel() == "bytes" and ax.get_xlabel() == "sequence length T"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "256", "512", "1024"]
    assert _no_pyplot_figures()


def test_scaling_plot_rejects_mismatched_series():
    with pytest.raises(ValueError, match="one per size"):
        plots.scaling_plot([1, 2, 4], {"a": [1.0, 2.0]}, ylabel="s")
    with pytest.raises(ValueError, match="at least 2"):
        plots.scaling_plot([1], {"a": [1.0]}, ylabel="s")


def test_numbers_in_cells_have_aa_contrast():
    for value in np.linspace(0, 1, 101):
        ink = plots.annotation_colour(value, 1.0)
        cell = plots._luminance(matplotlib.colormaps[plots.WEIGHTS_CMAP](value))
        text = 0.0 if ink == "black" else 1.0
        ratio = (max(cell, text) + 0.05) / (min(cell, text) + 0.05)
        assert ratio >= 4.5, (value, ink, ratio)


def test_html_takes_both_variants_and_latex_the_light_png():
    """myst-nb's choice among a figure's outputs, with this package's renderers installed
    (entry points in pyproject.toml): the HTML builder takes the themed images (or the
    explorable), the LaTeX builder (both PDFs) the PNG."""
    from myst_nb.core.render import get_mime_priority

    from transformer_lessons.explorables import EXPLORABLE_MIME

    figure = set(plots.loss_curve([2.0, 1.0])._repr_mimebundle_())
    explorable = figure - {plots.THEMED_MIME} | {EXPLORABLE_MIME}
    for builder, bundle, expected in (("html", figure, plots.THEMED_MIME), ("html", explorable, EXPLORABLE_MIME),
                                      ("latex", figure, "image/png"), ("latex", explorable, "image/png")):
        chosen = next(m for m in get_mime_priority(builder, []) if m in bundle)
        assert chosen == expected, (builder, chosen)
