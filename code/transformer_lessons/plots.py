"""Figures for the book. Each function returns a :class:`matplotlib.figure.Figure`
and never calls ``plt.show()``: a page displays the returned figure.

Colour maps are colour-blind safe: ``viridis`` (sequential) for attention
weights, ``RdBu_r`` (ColorBrewer's colour-blind-safe diverging map) for values
in [-1, 1]; line plots use the Okabe-Ito palette plus distinct line styles,
so they also read in black and white print.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

WEIGHTS_CMAP = "viridis"
SIGNED_CMAP = "RdBu_r"
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
LINESTYLES = ["-", "--", "-.", ":"]
PNG_DPI = 120


def _register_notebook_display() -> None:
    """Let a notebook cell that ends with a Figure show it as a PNG.

    The figures are built with :class:`~matplotlib.figure.Figure`, not pyplot, so
    nothing is drawn twice and no global state is touched; IPython only needs to be
    told how to render them.
    """
    try:
        from IPython import get_ipython
        from IPython.core.pylabtools import print_figure
    except ImportError:  # plain Python: nothing to register
        return
    shell = get_ipython()
    if shell is None:
        return
    png = shell.display_formatter.formatters["image/png"]
    png.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight", dpi=PNG_DPI))


_register_notebook_display()


def _draw_heatmap(fig, ax, weights, query_labels, key_labels, title, vmax=None, colorbar=True):
    t, s = weights.shape
    image = ax.imshow(weights, cmap=WEIGHTS_CMAP, vmin=0.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(s), [str(lab) for lab in key_labels] if key_labels is not None else range(s), rotation=45, ha="right")
    ax.set_yticks(range(t), [str(lab) for lab in query_labels] if query_labels is not None else range(t))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    if colorbar:
        fig.colorbar(image, ax=ax, label="attention weight")
    return image


def _check_labels(weights: np.ndarray, query_labels, key_labels) -> None:
    t, s = weights.shape[-2:]
    if query_labels is not None and len(query_labels) != t:
        raise ValueError(f"{len(query_labels)} query labels for weights of shape {weights.shape} (T={t})")
    if key_labels is not None and len(key_labels) != s:
        raise ValueError(f"{len(key_labels)} key labels for weights of shape {weights.shape} (S={s})")


def attention_heatmap(
    weights,
    query_labels: Sequence | None = None,
    key_labels: Sequence | None = None,
    title: str | None = None,
    annotate: bool = False,
) -> Figure:
    """Heatmap of one attention matrix.

    Args:
        weights: ``(T, S)`` attention weights (rows = queries).
        query_labels: ``T`` labels for the rows; key_labels: ``S`` for the columns
            (default: the query labels, for self-attention).
        annotate: write each weight in its cell (for small matrices).
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2:
        raise ValueError(f"weights must be (T, S), got shape {weights.shape}")
    if key_labels is None and weights.shape[0] == weights.shape[1]:
        key_labels = query_labels
    _check_labels(weights, query_labels, key_labels)
    t, s = weights.shape
    fig = Figure(figsize=(1.2 + 0.55 * s, 0.9 + 0.45 * t), layout="constrained")
    ax = fig.add_subplot()
    _draw_heatmap(fig, ax, weights, query_labels, key_labels, title)
    if annotate:
        for i in range(t):
            for j in range(s):
                colour = "black" if weights[i, j] > 0.6 * weights.max() else "white"
                ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=8, color=colour)
    return fig


def attention_grid(
    weights,
    query_labels: Sequence | None = None,
    key_labels: Sequence | None = None,
    titles: Sequence[str] | None = None,
    ncols: int = 4,
    suptitle: str | None = None,
) -> Figure:
    """One heatmap per head on a shared colour scale.

    Args:
        weights: ``(H, T, S)``.
        titles: ``H`` panel titles (default ``head 0``, ``head 1``, ...).
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3:
        raise ValueError(f"weights must be (H, T, S), got shape {weights.shape}")
    if key_labels is None and weights.shape[1] == weights.shape[2]:
        key_labels = query_labels
    _check_labels(weights, query_labels, key_labels)
    h, t, s = weights.shape
    ncols = min(ncols, h)
    nrows = -(-h // ncols)
    fig = Figure(figsize=(0.6 + ncols * (0.9 + 0.35 * s), 0.6 + nrows * (0.9 + 0.35 * t)), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    vmax = float(weights.max())
    image = None
    for i, ax in enumerate(axes):
        if i >= h:
            ax.set_axis_off()
            continue
        title = titles[i] if titles is not None else f"head {i}"
        image = _draw_heatmap(fig, ax, weights[i], query_labels, key_labels, title, vmax=vmax, colorbar=False)
        if i % ncols:
            ax.set_ylabel("")
    fig.colorbar(image, ax=axes.tolist(), label="attention weight", shrink=0.8)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def positional_encoding_heatmap(pe) -> Figure:
    """Heatmap of a positional-encoding table ``pe (T, d_model)``."""
    pe = np.asarray(pe, dtype=float)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (T, d_model), got shape {pe.shape}")
    fig = Figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(pe, cmap=SIGNED_CMAP, vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("encoding dimension (even = sin, odd = cos)")
    ax.set_ylabel("position")
    ax.set_title(f"Sinusoidal positional encoding, {pe.shape[0]} positions x {pe.shape[1]} dimensions")
    fig.colorbar(image, ax=ax, label="value")
    return fig


def positional_encoding_curves(pe, dims: Sequence[int] = (0, 1, 6, 7)) -> Figure:
    """Selected columns of ``pe (T, d_model)`` as curves over position."""
    pe = np.asarray(pe, dtype=float)
    bad = [d for d in dims if not 0 <= d < pe.shape[1]]
    if bad:
        raise ValueError(f"dims {bad} out of range for pe of shape {pe.shape}")
    fig = Figure(figsize=(7, 3.2), layout="constrained")
    ax = fig.add_subplot()
    for n, d in enumerate(dims):
        kind = "sin" if d % 2 == 0 else "cos"
        ax.plot(pe[:, d], color=OKABE_ITO[n % len(OKABE_ITO)], linestyle=LINESTYLES[n % len(LINESTYLES)],
                label=f"dim {d} ({kind}, i={d // 2})")
    ax.set_xlabel("position")
    ax.set_ylabel("PE value")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, ncols=min(len(dims), 4), frameon=False)  # below the axes: never over the curves
    ax.set_title("Each pair (2i, 2i+1) shares one frequency; frequency falls as i grows")
    return fig


def saturation_plot(d_ks: Sequence[int], unscaled: Sequence[dict], scaled: Sequence[dict]) -> Figure:
    """Two panels over ``d_k``: the largest softmax weight, and the gradient norm.

    ``unscaled``/``scaled`` are lists of dicts from
    :func:`transformer_lessons.pitfalls.saturation_stats`, one per ``d_k``.
    """
    fig = Figure(figsize=(8, 3.2), layout="constrained")
    ax_w, ax_g = fig.subplots(1, 2)
    for stats, label, n in ((unscaled, "QK^T (unscaled)", 1), (scaled, "QK^T / sqrt(d_k)", 0)):
        style = dict(color=OKABE_ITO[n], linestyle=LINESTYLES[n], marker="os"[n], label=label)
        ax_w.plot(d_ks, [s["max_weight"] for s in stats], **style)
        ax_g.plot(d_ks, [s["grad_norm"] for s in stats], **style)
    for ax in (ax_w, ax_g):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.legend(fontsize=8)
    ax_w.set_ylabel("mean largest weight")
    ax_w.set_ylim(0, 1.05)
    ax_w.set_title("Softmax saturates without scaling")
    ax_g.set_ylabel("median |d loss / d q|")
    ax_g.set_yscale("log")
    ax_g.set_title("...and its gradient vanishes")
    return fig


def loss_curve(losses: Sequence[float], title: str = "Training loss") -> Figure:
    """Training loss per step on a log scale."""
    fig = Figure(figsize=(6, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(np.arange(1, len(losses) + 1), losses, color=OKABE_ITO[0])
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    return fig


def gradient_distance_plot(rnn_norms, attention_norms) -> Figure:
    """How the last output's gradient depends on the distance to each input.

    Args:
        rnn_norms, attention_norms: ``(T,)`` arrays from
            :func:`transformer_lessons.paths.input_gradient_norms`; entry ``j``
            belongs to input position ``j``, at distance ``T - 1 - j`` from the last.
    """
    rnn_norms = np.asarray(rnn_norms, dtype=float)
    attention_norms = np.asarray(attention_norms, dtype=float)
    if rnn_norms.ndim != 1 or rnn_norms.shape != attention_norms.shape:
        raise ValueError(f"expected two (T,) arrays, got {rnn_norms.shape} and {attention_norms.shape}")
    distance = np.arange(len(rnn_norms))[::-1]  # position j is T - 1 - j steps from the last
    fig = Figure(figsize=(7, 3.2), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(distance, rnn_norms, color=OKABE_ITO[1], linestyle=LINESTYLES[1], marker="s", markersize=4,
            label="RNN (tanh)")
    ax.plot(distance, attention_norms, color=OKABE_ITO[0], linestyle=LINESTYLES[0], marker="o", markersize=4,
            label="self-attention")
    ax.set_yscale("log")
    ax.set_xlabel("distance from the last position (steps)")
    ax.set_ylabel("|d output[T-1] / d input[j]|")
    ax.set_title("Gradient reaching each input from the last output")
    ax.legend(fontsize=8)
    return fig


def scaling_plot(sizes: Sequence[float], series: dict, ylabel: str, title: str | None = None,
                 xlabel: str = "sequence length T") -> Figure:
    """Costs against size on log-log axes, each line labelled with its fitted slope.

    On log-log axes a cost proportional to ``size ** p`` is a straight line of
    slope ``p`` (see :func:`transformer_lessons.cost.loglog_slope`).

    Args:
        sizes: ``(n,)`` positive sizes (the x axis), e.g. sequence lengths.
        series: ``{label: (n,) positive costs}``, one line each.
        ylabel: what the costs are, with their unit.
    """
    from .cost import loglog_slope

    sizes = np.asarray(sizes, dtype=float)
    if sizes.ndim != 1 or len(sizes) < 2:
        raise ValueError(f"sizes must be 1-D with at least 2 entries, got shape {sizes.shape}")
    bad = {label: np.shape(costs) for label, costs in series.items() if np.shape(costs) != sizes.shape}
    if bad:
        raise ValueError(f"each series needs {sizes.shape} values, one per size; got {bad}")
    fig = Figure(figsize=(6, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for n, (label, costs) in enumerate(series.items()):
        slope = loglog_slope(sizes, costs)
        ax.plot(sizes, costs, color=OKABE_ITO[n % len(OKABE_ITO)], linestyle=LINESTYLES[n % len(LINESTYLES)],
                marker="os^D"[n % 4], label=f"{label} (slope {slope:.2f})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return fig
