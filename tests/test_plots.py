"""Every plot returns a Figure with the promised labels, colour bar and colour map."""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

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


def test_positional_plots():
    pe = positional_encoding(20, 16)
    fig = plots.positional_encoding_heatmap(pe)
    assert fig.axes[0].images[0].get_cmap().name == "RdBu_r"
    fig = plots.positional_encoding_curves(pe, dims=(0, 1, 4))
    assert len(fig.axes[0].lines) == 3
    with pytest.raises(ValueError, match="out of range"):
        plots.positional_encoding_curves(pe, dims=(16,))


def test_saturation_and_loss_plots():
    d_ks = [4, 64]
    fig = plots.saturation_plot(d_ks, [saturation_stats(d, False) for d in d_ks], [saturation_stats(d, True) for d in d_ks])
    assert len(fig.axes) == 2 and all(len(ax.lines) == 2 for ax in fig.axes)
    fig = plots.loss_curve([3.0, 1.0, 0.1])
    assert fig.axes[0].get_yscale() == "log"


def test_figures_display_as_png_in_a_notebook():
    import importlib

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    importlib.reload(plots)  # registers the PNG formatter now that a shell exists
    data, _ = shell.display_formatter.format(plots.loss_curve([1.0, 0.5]))
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
