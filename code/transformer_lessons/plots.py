"""Figures for the book. Each function returns a :class:`ThemedFigure` (a
:class:`matplotlib.figure.Figure`, drawn for a light page, that carries a second copy
drawn for a dark page) and never calls ``plt.show()``: a page displays the returned
figure.

Colour maps encode the value in their lightness, so a figure also reads in greyscale
print and with any colour-vision deficiency: ``viridis`` for attention weights in
[0, 1] and ``cividis`` for values in [-1, 1] (a red-blue diverging map would print
+1 and -1 as the same grey). Both variants use the same maps, so a colour means the
same value on a light and on a dark page; only the background, text and axes change.
Line plots use the Okabe-Ito palette plus distinct line styles and markers.

On the web site both variants are shown, each with the theme's ``only-light`` or
``only-dark`` class (:class:`book_build.site.ThemedImages`); the PDFs, Jupyter,
Colab and Binder get the light one as an ordinary PNG. A plain :class:`PngFigure` (the
pretrained model's pictures) shows as a PNG in a notebook by itself.
"""

from __future__ import annotations

import base64
import contextlib
import io
import textwrap
from typing import Callable, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

WEIGHTS_CMAP = "viridis"
SIGNED_CMAP = "cividis"
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
LINESTYLES = ["-", "--", "-.", ":"]
MARKERS = "os^D"
PNG_DPI = 120  # the site's PNG figures; the PDFs get diagrams at PRINT_DPI
PRINT_DPI = 200
# The width the figures are designed for: on a 390 CSS px phone the theme's article column
# is 342 px wide, and a figure inside an exercise's solution box gets 320 px, the narrowest
# (measured by tests/browser/test_browser_layout.py; tests/library/test_figure_layout.py checks every
# figure's text sizes against it).
PHONE_CONTENT_PX = 320
MIN_PHONE_TEXT_PX = 9

# Page colours of the theme (--pst-color-background: sphinx-book-theme's #121212 in dark
# mode; --pst-color-text-base: pydata-sphinx-theme's #ced6dd), so a figure is no card
THEMES = {
    "light": {"background": "#ffffff", "text": "#000000", "muted": "#555555", "grid": "#b0b0b0"},
    "dark": {"background": "#121212", "text": "#ced6dd", "muted": "#a0a9b2", "grid": "#4a525c"},
}
THEMED_MIME = "application/vnd.transformer-lessons.themed-figure+json"


def _rc(theme: str) -> dict:
    c = THEMES[theme]
    return {
        "font.size": 11,  # 9.2 CSS px on a 5.3 inch figure shown 320 px wide
        "figure.facecolor": c["background"], "axes.facecolor": c["background"],
        "savefig.facecolor": c["background"], "savefig.edgecolor": c["background"],
        "text.color": c["text"], "axes.labelcolor": c["text"], "axes.edgecolor": c["text"],
        "xtick.color": c["text"], "ytick.color": c["text"], "grid.color": c["grid"],
        "legend.facecolor": c["background"], "legend.edgecolor": c["grid"], "legend.labelcolor": c["text"],
        "svg.fonttype": "none",  # SVG text stays text: small, crisp, selectable
        "svg.hashsalt": "transformer-lessons",  # the same figure gives the same file
        "font.family": ["DejaVu Sans", "sans-serif"],
    }


@contextlib.contextmanager
def theme_context(theme: str):
    """matplotlib settings for drawing (and saving) a figure for a light or a dark page."""
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {sorted(THEMES)}, got {theme!r}")
    with matplotlib.rc_context(_rc(theme)):
        yield


def palette(theme: str) -> list[str]:
    """Okabe-Ito line colours; black becomes the page's text colour on a dark page."""
    return OKABE_ITO[:-1] + [THEMES[theme]["text"]]


class ThemedFigure(Figure):
    """A figure drawn for a light page, with a copy drawn for a dark page in ``.dark``.

    It is an ordinary :class:`~matplotlib.figure.Figure` (the light one), so code that
    inspects ``fig.axes`` keeps working. In a notebook it displays as the light PNG,
    plus one more output type that the book's builder turns into both variants.
    """

    dark: Figure
    svg: bool = False
    alt: str | None = None  # alt text the figure brings (a diagram describes its own sizes)

    def image_bytes(self, theme: str = "light", fmt: str = "png", dpi: int = PNG_DPI) -> bytes:
        fig = self if theme == "light" else self.dark
        buf = io.BytesIO()
        with theme_context(theme):
            metadata = {"Date": None} if fmt == "svg" else (png_metadata(fig, dpi) if fmt == "png" else None)
            fig.savefig(buf, format=fmt, dpi=dpi, metadata=metadata)
        return buf.getvalue()

    def _repr_mimebundle_(self, include=None, exclude=None):
        web_fmt, web_mime = ("svg", "image/svg+xml") if self.svg else ("png", "image/png")

        def web(theme):
            data = self.image_bytes(theme, web_fmt)
            return data.decode() if self.svg else base64.b64encode(data).decode()

        width, height = (round(v) for v in self.get_size_inches() * (96 if self.svg else PNG_DPI))
        themed = {"mime": web_mime, "light": web("light"), "dark": web("dark"), "width": width, "height": height}
        if self.alt:
            themed["alt"] = self.alt
        print_png = self.image_bytes("light", "png", PRINT_DPI if self.svg else PNG_DPI)
        return {"text/plain": f"<{type(self).__name__} {width}x{height}>",
                "image/png": base64.b64encode(print_png).decode(), THEMED_MIME: themed}


def themed(figsize, draw: Callable[[Figure, str], None], *, svg: bool = False, layout="constrained",
           fit: Callable[[Figure], object] | None = None) -> ThemedFigure:
    """Draw ``draw(fig, theme)`` twice, once per theme, into a :class:`ThemedFigure`.

    ``fit(fig)``, if given, may resize the light figure once it is drawn (square heatmap
    cells); the dark one is then drawn at that size."""
    with theme_context("light"):
        fig = ThemedFigure(figsize=figsize, layout=layout)
        draw(fig, "light")
        _plain_log_ticks(fig)
        if fit is not None:
            fit(fig)
    figsize = tuple(fig.get_size_inches())
    with theme_context("dark"):
        dark = Figure(figsize=figsize, layout=layout)
        draw(dark, "dark")
        _plain_log_ticks(dark)
        if fit is not None:  # laid out like the light one (tick labels are formatted then)
            dark.draw_without_rendering()
    fig.dark, fig.svg = dark, svg
    return fig


def _plain_log_ticks(fig: Figure) -> None:
    """Every log-scaled axis of ``fig`` labelled in plain numbers ("0.01", "64", "1e-08"):
    matplotlib's default writes 10^-2 with the exponent at 70 % of the label's size, 6.9 CSS
    px on a 390 px phone. matplotlib's plain LogFormatter, with the same rules as the default
    for which ticks get a label (minor ones too on an axis spanning less than a decade)."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:g}" if 1e-3 <= abs(x) < 1e5 else f"{x:.0e}".replace("e+0", "e").replace("e-0", "e-")

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                base = axis.get_transform().base
                axis.set_major_formatter(Plain(base))
                axis.set_minor_formatter(Plain(base, labelOnlyBase=False))


class PngFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that a notebook cell shows as a PNG when it
    ends with one. The figures are built without pyplot, so nothing is drawn twice and no
    global state is touched; IPython calls ``_repr_png_`` (its documented display protocol)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight", dpi=PNG_DPI, metadata=png_metadata(self, PNG_DPI))
        return buf.getvalue()


# The PNG text chunk that carries a figure's smallest font size in image pixels: the browser
# tests (tests/browser/test_browser_layout.py) multiply it by the width the page shows the
# image at over its natural width, so a phone's text size is measured, not assumed.
SMALLEST_TEXT_KEY = "Smallest text px"


def smallest_text_px(fig: Figure, dpi: float) -> float:
    """The smallest font size of ``fig``'s visible texts, in pixels of an image saved at ``dpi``."""
    from matplotlib.text import Text

    sizes = [text_sizes_pt(t) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return round(min(min(s) for s in sizes) / 72 * dpi, 2) if sizes else 0.0


def text_sizes_pt(text) -> list[float]:
    """The font sizes (pt) a matplotlib ``Text`` draws its glyphs at: its font size, and for
    mathtext (``$d_k$``) each glyph's own size, sub- and superscripts at 70 % of it."""
    from matplotlib.mathtext import MathTextParser

    sizes = []
    for line in text.get_text().split("\n"):  # matplotlib lays out (and parses) each line apart
        s, math = text._preprocess_math(line)
        if math:
            sizes += [g[1] for g in MathTextParser("path").parse(s, 72, text.get_fontproperties()).glyphs]
    return sizes or [text.get_fontsize()]


def png_metadata(fig: Figure, dpi: float) -> dict:
    """A PNG's metadata: no software version (the same figure gives the same file), and the
    smallest text size (:data:`SMALLEST_TEXT_KEY`)."""
    fig.draw_without_rendering()  # tick labels exist once the figure is laid out
    return {"Software": None, SMALLEST_TEXT_KEY: f"{smallest_text_px(fig, dpi):.2f}"}


def phone_text_px(fig: Figure, fontsize_pt: float, svg: bool = False) -> float:
    """CSS pixel height of ``fontsize_pt`` text in ``fig`` on a 390 px wide phone.

    The site shows a PNG at one CSS pixel per image pixel (an SVG at 96 per inch),
    narrowed to the column's width when it is wider.
    """
    per_inch = 96 if svg else PNG_DPI
    natural_width = fig.get_size_inches()[0] * per_inch
    return fontsize_pt / 72 * per_inch * min(1.0, PHONE_CONTENT_PX / natural_width)


def _fit_fontsize(fig_width_in: float, preferred: float = 11.0) -> float:
    """The smallest font size (pt) that is MIN_PHONE_TEXT_PX tall on a phone, or ``preferred``."""
    needed = MIN_PHONE_TEXT_PX * 72 * PNG_DPI * fig_width_in / PHONE_CONTENT_PX / PNG_DPI
    return max(preferred, round(needed + 0.05, 1))


def _checked(weights, shape: str, query_labels, key_labels):
    """``weights`` as floats of the ``shape`` named ("(T, S)" or "(H, T, S)") with labels
    that fit it; square weights without key labels take the query labels."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != shape.count(",") + 1:
        raise ValueError(f"weights must be {shape}, got shape {weights.shape}")
    t, s = weights.shape[-2:]
    if key_labels is None and t == s:
        key_labels = query_labels
    if query_labels is not None and len(query_labels) != t:
        raise ValueError(f"{len(query_labels)} query labels for weights of shape {weights.shape} (T={t})")
    if key_labels is not None and len(key_labels) != s:
        raise ValueError(f"{len(key_labels)} key labels for weights of shape {weights.shape} (S={s})")
    return weights, key_labels


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour (components in [0, 1])."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def annotation_colour(value: float, vmax: float, cmap: str = WEIGHTS_CMAP, vmin: float = 0.0) -> str:
    """Black or white, whichever contrasts more with the cell's colour (at least 4.5:1,
    WCAG AA for text, on any colour)."""
    colour = matplotlib.colormaps[cmap]((value - vmin) / (vmax - vmin) if vmax > vmin else 0.0)
    lum = _luminance(colour)
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"


# --- heatmaps: square cells, and every label readable on a phone -----------------------
# A heatmap is drawn with square cells (a (T, S) matrix looks T by S, not stretched into a
# strip), as wide as the figure allows. Its tick labels then get what room there is: the
# panels of a grid go on fewer columns, the colour bar moves under the heatmap, and, as a
# last resort, only every k-th row and column is labelled, so that no two labels overlap.
FIG_WIDTH = 5.3  # inches: the width of every plot (636 px at PNG_DPI, 358 px on a phone)
TICK_PT = 11.0  # the tick labels' font size (the rc's font.size)
LINE = 1.2  # two tick labels side by side need this many times their font size from centre to centre
CHAR = 0.62  # the width of an average character of DejaVu Sans, in font sizes


def _line_in(fontsize: float = TICK_PT) -> float:
    """Inches from one tick label's centre to the next's, for labels that do not touch."""
    return LINE * fontsize / 72


def fit_square_cells(fig: Figure, rows: int = 1, rounds: int = 5) -> float:
    """Give ``fig`` the height at which its heatmaps, drawn with ``imshow(aspect="auto")``
    (the image fills its axes), have square cells, and return the cell size in inches.

    ``imshow(aspect="equal")`` would keep the cells square by shrinking the image inside
    the box the layout made for it, which leaves empty bands, and constrained layout then
    misplaces the axis labels (it measures them from the shrunk axes); here the box itself
    gets the image's proportions. ``rows``: how many heatmaps are stacked (a grid's rows)."""
    width, height = fig.get_size_inches()
    cell = 0.0
    for _ in range(rounds):
        fig.draw_without_rendering()
        ax = next(a for a in fig.axes if a.images)
        box = ax.get_position(original=True)  # the box constrained layout gave the axes
        t, s = ax.images[0].get_array().shape[:2]
        cell = box.width * width / s
        missing = cell * t - box.height * height  # inches the box is short of t square cells
        if abs(missing) < 0.003:
            break
        height = max(1.0, height + rows * missing)
        fig.set_size_inches(width, height)
    return cell


def _heatmaps(weights: np.ndarray, query_labels, key_labels, titles, ncols: int, suptitle=None,
              annotate: bool = False, axis_labels=("key (attended to)", "query (attending)")) -> ThemedFigure:
    """``weights (H, T, S)`` as H heatmaps with square cells on one colour scale; see the
    comment above for how the labels are given room."""
    h, t, s = weights.shape
    keys = [str(lab) for lab in key_labels] if key_labels is not None else [str(j) for j in range(s)]
    queries = [str(lab) for lab in query_labels] if query_labels is not None else [str(i) for i in range(t)]
    vmax = float(weights.max())

    def layout(cols, cbar, step=1, rotation=90, wrap=None, annotate_fs=None):
        rows = -(-h // cols)

        def draw(fig, theme):
            axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True).ravel()
            image = None
            for i, ax in enumerate(axes):
                if i >= h:
                    ax.set_axis_off()
                    continue
                image = ax.imshow(weights[i], cmap=WEIGHTS_CMAP, vmin=0.0, vmax=vmax, aspect="auto",
                                  interpolation="nearest")
                ax.set_xticks(range(0, s, step), keys[::step], rotation=rotation,
                              ha="center" if rotation == 0 else "right", rotation_mode="anchor" if rotation else "default",
                              va="top" if rotation == 0 else "center")
                ax.set_yticks(range(0, t, step), queries[::step])
                ax.tick_params(labelbottom=i + cols >= h, labelleft=i % cols == 0)
                title = titles[i] if titles is not None else (f"head {i}" if h > 1 else None)
                if title:
                    ax.set_title(textwrap.fill(title, wrap) if wrap else title)
                if annotate_fs:
                    for r in range(t):
                        for c in range(s):
                            ax.text(c, r, f"{weights[i, r, c]:.2f}", ha="center", va="center", fontsize=annotate_fs,
                                    color=annotation_colour(weights[i, r, c], vmax))
            if h > 1:
                fig.supxlabel(axis_labels[0], fontsize=TICK_PT)
                fig.supylabel(axis_labels[1], fontsize=TICK_PT)
            else:
                axes[0].set_xlabel(axis_labels[0])
                axes[0].set_ylabel(axis_labels[1])
            live = axes[:h].tolist()
            fig.colorbar(image, ax=live if h > 1 else live[0], label="attention weight", location=cbar,
                         shrink=0.8 if h > 1 else 1.0)
            if suptitle:
                fig.suptitle(textwrap.fill(suptitle, int(FIG_WIDTH * 72 / (CHAR * 12))))

        return draw, rows

    def probe(*args, **kw) -> float:  # the cell size this layout gives, in inches
        draw, rows = layout(*args, **kw)
        with theme_context("light"):
            fig = Figure(figsize=(FIG_WIDTH, 4.0), layout="constrained")
            draw(fig, "light")
            return fit_square_cells(fig, rows)

    # The first layout whose cells leave room for a label per row and column; else the roomiest.
    tried = []
    for option in [(cols, "right") for cols in range(min(ncols, h), 0, -1)] + [(1, "bottom")]:
        tried.append((option, probe(*option)))
        if tried[-1][1] >= _line_in():
            break
    (cols, cbar), cell = max(tried, key=lambda p: p[1]) if tried[-1][1] < _line_in() else tried[-1]
    step = max(1, int(np.ceil(_line_in() / cell - 1e-9)))
    rotation = 0 if max(map(len, keys)) * CHAR * TICK_PT / 72 <= 0.9 * step * cell else 90
    wrap = max(8, int(cell * s * 72 / (CHAR * 12)))  # title characters per line of the panel's width
    annotate_fs = _fit_fontsize(FIG_WIDTH)
    annotate = annotate and cell >= 4 * CHAR * annotate_fs / 72  # "0.23": four characters must fit
    draw, rows = layout(cols, cbar, step, rotation, wrap, annotate_fs if annotate else None)
    return themed((FIG_WIDTH, 4.0), draw, fit=lambda fig: fit_square_cells(fig, rows))


def attention_heatmap(
    weights,
    query_labels: Sequence | None = None,
    key_labels: Sequence | None = None,
    title: str | None = None,
    annotate: bool = False,
) -> ThemedFigure:
    """Heatmap of one attention matrix, with square cells.

    Args:
        weights: ``(T, S)`` attention weights (rows = queries).
        query_labels: ``T`` labels for the rows; key_labels: ``S`` for the columns
            (default: the query labels, for self-attention).
        annotate: write each weight in its cell, in a font at least 9 CSS px tall on a
            390 px phone; with cells too small for that the numbers are left out.

    With many columns the colour bar goes under the heatmap, and when even then a label
    per row would not fit, every k-th row and column is labelled.
    """
    weights, key_labels = _checked(weights, "(T, S)", query_labels, key_labels)
    return _heatmaps(weights[None], query_labels, key_labels, [title] if title else None, 1, annotate=annotate)


def attention_grid(
    weights,
    query_labels: Sequence | None = None,
    key_labels: Sequence | None = None,
    titles: Sequence[str] | None = None,
    ncols: int = 2,
    suptitle: str | None = None,
) -> ThemedFigure:
    """One heatmap per head on a shared colour scale, square cells, at most ``ncols``
    per row (4 heads: 2x2).

    Args:
        weights: ``(H, T, S)``.
        titles: ``H`` panel titles (default ``head 0``, ``head 1``, ...), wrapped to the
            panel's width.
        ncols: the most panels side by side; fewer when that many would leave cells too
            small for a token label per row (one label's line height), one below the other.
    """
    weights, key_labels = _checked(weights, "(H, T, S)", query_labels, key_labels)
    if titles is not None and len(titles) != weights.shape[0]:
        raise ValueError(f"{len(titles)} titles for weights of shape {weights.shape} (H={weights.shape[0]})")
    if ncols < 1:
        raise ValueError(f"ncols must be at least 1, got {ncols}")
    return _heatmaps(weights, query_labels, key_labels, titles, ncols, suptitle=suptitle)


def positional_encoding_heatmap(pe) -> ThemedFigure:
    """Heatmap of a positional-encoding table ``pe (T, d_model)``, one square cell per value.

    ``cividis`` runs from dark blue (-1) through grey (0) to yellow (+1), so the value is
    also the lightness: a sine near 0 is mid-grey, a cosine near 1 is bright.
    """
    pe = np.asarray(pe, dtype=float)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (T, d_model), got shape {pe.shape}")

    def draw(fig, theme):
        ax = fig.add_subplot()
        image = ax.imshow(pe, cmap=SIGNED_CMAP, vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xlabel("dimension (even: sin, odd: cos)")
        ax.set_ylabel("position")
        ax.set_title(f"{pe.shape[0]} positions x {pe.shape[1]} dimensions")
        fig.colorbar(image, ax=ax, label="value")

    # narrower than the other plots: a 64 x 32 table with square cells is twice as tall as wide
    return themed((4.4, 4.0), draw, fit=fit_square_cells)


def positional_encoding_curves(pe, dims: Sequence[int] = (0, 1, 6, 7), base: float = 10000.0) -> ThemedFigure:
    """Selected columns of ``pe (T, d_model)`` over position.

    Each column is drawn as the continuous sine or cosine it samples (so a fast one is
    not a jagged line between far-apart points), with a marker at every integer
    position: the markers are the values in ``pe``.
    """
    pe = np.asarray(pe, dtype=float)
    if pe.ndim != 2:
        raise ValueError(f"pe must be (T, d_model), got shape {pe.shape}")
    t, d_model = pe.shape
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dims {bad} out of range for pe of shape {pe.shape}")
    positions = np.arange(t)
    smooth = np.linspace(0, t - 1, 40 * t)
    curves = {}
    for d in dims:
        fn = np.sin if d % 2 == 0 else np.cos
        inv_freq = base ** (-(d - d % 2) / d_model)  # 1 / 10000^(2i / d_model)
        if not np.allclose(fn(positions * inv_freq), pe[:, d], atol=1e-9):
            raise ValueError(f"column {d} of pe (shape {pe.shape}) is not the sinusoid of base {base}")
        curves[d] = fn(smooth * inv_freq)

    def draw(fig, theme):
        ax = fig.add_subplot()
        colours = palette(theme)
        for n, d in enumerate(dims):
            kind = "sin" if d % 2 == 0 else "cos"
            style = dict(color=colours[n % len(colours)])
            ax.plot(smooth, curves[d], linestyle=LINESTYLES[n % len(LINESTYLES)], linewidth=1.3, **style,
                    label=f"dim {d} ({kind}, i={d // 2})")
            ax.plot(positions, pe[:, d], linestyle="none", marker=MARKERS[n % len(MARKERS)], markersize=3, **style)
        ax.set_xlabel("position (markers: the integer positions)")
        ax.set_ylabel("PE value")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize=11, ncols=min(len(dims), 2), frameon=False)
        ax.set_title("A pair (2i, 2i+1) shares one frequency")

    return themed((5.3, 3.6), draw)


def saturation_plot(d_ks: Sequence[int], unscaled: Sequence[dict], scaled: Sequence[dict]) -> ThemedFigure:
    """Two panels over ``d_k``, one above the other: the largest softmax weight, and the gradient norm.

    ``unscaled``/``scaled`` are lists of dicts from
    :func:`transformer_lessons.pitfalls.saturation_stats`, one per ``d_k``.
    """

    def draw(fig, theme):
        ax_w, ax_g = fig.subplots(2, 1, sharex=True)
        colours = palette(theme)
        for stats, label, n in ((unscaled, "QK^T (unscaled)", 1), (scaled, "QK^T / sqrt(d_k)", 0)):
            style = dict(color=colours[n], linestyle=LINESTYLES[n], marker=MARKERS[n], label=label)
            ax_w.plot(d_ks, [s["max_weight"] for s in stats], **style)
            ax_g.plot(d_ks, [s["grad_norm"] for s in stats], **style)
        for ax in (ax_w, ax_g):
            ax.set_xscale("log", base=2)
            ax.legend(fontsize=11)
        ax_g.set_xlabel("d_k")
        ax_w.set_ylabel("mean largest weight")
        ax_w.set_ylim(0, 1.05)
        ax_w.set_title("Softmax saturates without scaling")
        ax_g.set_ylabel("median |d loss / d q|")
        ax_g.set_yscale("log")
        ax_g.set_title("...and its gradient vanishes")

    return themed((5.3, 5.4), draw)


def loss_curve(losses: Sequence[float], title: str = "Training loss") -> ThemedFigure:
    """Training loss per step on a log scale."""

    def draw(fig, theme):
        ax = fig.add_subplot()
        ax.plot(np.arange(1, len(losses) + 1), losses, color=palette(theme)[0])
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel("cross-entropy loss")
        ax.set_title(title)

    return themed((5.3, 3.0), draw)


def gradient_distance_plot(rnn_norms, attention_norms) -> ThemedFigure:
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

    def draw(fig, theme):
        ax = fig.add_subplot()
        colours = palette(theme)
        ax.plot(distance, rnn_norms, color=colours[1], linestyle=LINESTYLES[1], marker="s", markersize=4,
                label="RNN (tanh)")
        ax.plot(distance, attention_norms, color=colours[0], linestyle=LINESTYLES[0], marker="o", markersize=4,
                label="self-attention")
        ax.set_yscale("log")
        ax.set_xlabel("distance from the last position (steps)")
        ax.set_ylabel("|d output[T-1] / d input[j]|")
        ax.set_title("Gradient reaching each input from the last output")
        ax.legend(fontsize=11)

    return themed((5.3, 3.4), draw)


def scaling_plot(sizes: Sequence[float], series: dict, ylabel: str, title: str | None = None,
                 xlabel: str = "sequence length T") -> ThemedFigure:
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
    slopes = {label: loglog_slope(sizes, costs) for label, costs in series.items()}

    def draw(fig, theme):
        ax = fig.add_subplot()
        colours = palette(theme)
        for n, (label, costs) in enumerate(series.items()):
            ax.plot(sizes, costs, color=colours[n % len(colours)], linestyle=LINESTYLES[n % len(LINESTYLES)],
                    marker=MARKERS[n % 4], label=f"{label} (slope {slopes[label]:.2f})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.legend(fontsize=11)
        ax.grid(True, which="major", alpha=0.3)

    return themed((5.3, 3.8), draw)


def dk_weights_plot(d_ks: Sequence[int], max_unscaled, max_scaled, n_keys: int, n_queries: int) -> ThemedFigure:
    """The mean largest softmax weight of a query over ``n_keys`` keys, against ``d_k``.

    Args:
        d_ks: ``(n,)`` key sizes; max_unscaled, max_scaled: ``(n,)`` mean over ``n_queries``
            queries of the largest weight of ``softmax(q . k_j)`` and of
            ``softmax(q . k_j / sqrt(d_k))``.
    """
    max_unscaled, max_scaled = np.asarray(max_unscaled, dtype=float), np.asarray(max_scaled, dtype=float)
    if max_unscaled.shape != (len(d_ks),) or max_scaled.shape != (len(d_ks),):
        raise ValueError(f"expected two ({len(d_ks)},) arrays, got {max_unscaled.shape} and {max_scaled.shape}")

    def draw(fig, theme):
        ax = fig.add_subplot()
        colours = palette(theme)
        for values, label, n in ((max_unscaled, "q·k (unscaled)", 1), (max_scaled, "q·k / sqrt(d_k)", 0)):
            ax.plot(d_ks, values, color=colours[n], linestyle=LINESTYLES[n], marker=MARKERS[n], label=label)
        ax.axhline(1 / n_keys, color=THEMES[theme]["muted"], linewidth=0.8, linestyle=":")
        ax.text(d_ks[-1], 1 / n_keys - 0.03, f"uniform: 1/{n_keys}", color=THEMES[theme]["muted"], fontsize=11,
                ha="right", va="top")
        ax.set_xscale("log", base=2)
        ax.set_xticks(d_ks, [str(d) if i % 2 == 0 else "" for i, d in enumerate(d_ks)])
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("d_k")
        ax.set_ylabel("largest weight (mean)")
        ax.set_title(f"{n_keys} keys, mean over {n_queries} queries")
        ax.legend(fontsize=11, loc="center left")

    return themed((5.3, 3.4), draw)


def pe_similarity_plot(pe, position: int) -> ThemedFigure:
    """Two panels: the encoding of ``position`` (one bar per dimension), and its dot
    product with the encoding of every position, ``pe[position] @ pe.T``."""
    pe = np.asarray(pe, dtype=float)
    if pe.ndim != 2 or not 0 <= position < pe.shape[0]:
        raise ValueError(f"position {position} out of range for pe of shape {pe.shape}")
    similarity = pe @ pe[position]  # (T,)

    def draw(fig, theme):
        ax_e, ax_s = fig.subplots(2, 1)
        colours = palette(theme)
        ax_e.bar(np.arange(pe.shape[1]), pe[position], color=colours[0])
        ax_e.axhline(0, color=THEMES[theme]["text"], linewidth=0.6)
        ax_e.set_ylim(-1.05, 1.05)
        ax_e.set_xlabel("dimension (even: sin, odd: cos)")
        ax_e.set_ylabel("value")
        ax_e.set_title(f"PE of position {position}")
        ax_s.plot(np.arange(pe.shape[0]), similarity, color=colours[1], marker="o", markersize=3)
        ax_s.plot([position], [similarity[position]], linestyle="none", marker="D", markersize=7,
                  color=colours[0])
        ax_s.set_xlabel("position j")
        ax_s.set_ylabel(f"PE[{position}] · PE[j]")
        ax_s.set_title(f"Similarity to position {position} (largest at j = {position}: {similarity[position]:.0f})")

    return themed((5.3, 5.0), draw)
