"""Concept diagrams drawn from sizes: what flows where, with the shape of every tensor.

Each function runs the library on random inputs of the sizes it is given and writes the
shapes that the library produced on the drawing, so a diagram and the code can never
disagree. It returns a :class:`~transformer_lessons.plots.ThemedFigure` (SVG on the web
site, light and dark; a PNG in the PDFs and notebooks) whose ``shapes`` attribute maps
each drawn tensor to its shape. Shapes are per sentence: the batch dimension ``B = 1`` of
the PyTorch modules is left out.

Every tensor is drawn as a grid of rows x columns cells, so a ``(6, 16)`` matrix looks
four times as wide as a ``(6, 4)`` one.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.patches import FancyBboxPatch, Rectangle

from . import example
from .attention import scaled_dot_product_attention
from .decoder import TransformerDecoderLayer
from .encoder import TransformerEncoderLayer
from .multihead import MultiHeadAttention
from .plots import OKABE_ITO, SIGNED_CMAP, THEMES, ThemedFigure, themed
from .positional import positional_encoding

WIDTH = 5.2  # inches: shown 320-342 px wide on a 390 px phone, about 0.65 scale
FONT = 12
SMALL = 11  # 9.4 CSS px at 320 px
# A label with a superscript (W^Q): mathtext draws the script at 70 % of the label's size, so
# at SMALL the Q was 7.7 pt, 7.0 CSS px on a 390 px phone (the figure checks read only the
# label's size until issue 40; plots.text_sizes_pt reads each glyph's). At 15.5 pt the
# script is 10.85 pt: 9.3 CSS px at 320 px, 9.9 at the column's 342 px.
SCRIPTED = 15.5
# Box fill per theme: a pale tint on a light page, a dark one on a dark page.
FILL = {"light": "#e9eef6", "dark": "#253040"}
OP_FILL = {"light": "#fdf0dc", "dark": "#3d3222"}
HEAD_ALPHA = {"light": 0.45, "dark": 0.7}
# One stripe pattern per head beside its colour: printed in greyscale, Okabe-Ito's orange
# and green tints come out nearly the same grey, and the bands of Q, K, V and the
# concatenation carry no name; the stripes tell the heads apart on paper. A pattern is the
# slopes of its lines (matplotlib's own hatches made the SVG five times larger).
HEAD_STRIPES = ((), (1,), (-1,), (1, -1))
SEQ_LEN = len(example.tokens())  # T = 6


def projection(name: str) -> str:
    """``$W^{\\mathbf{Q}}$``: a projection matrix as the diagrams write it. Its letter is a
    superscript, drawn at 70% of an already small label: in a regular face, Q's short tail
    vanished and W^Q read as W^O on a phone-width page; the bold letter keeps it."""
    return f"$W^{{\\mathbf{{{name}}}}}$"


def shape_label(shape) -> str:
    """``(6, 16)``: how a shape is written on a diagram."""
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"


class _Canvas:
    """An axes in inches (origin bottom left) with the few shapes the diagrams use."""

    def __init__(self, fig, theme: str, height: float):
        self.ax = fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, WIDTH)
        self.ax.set_ylim(0, height)
        self.ax.set_axis_off()
        self.theme = theme
        self.fg = THEMES[theme]["text"]
        self.muted = THEMES[theme]["muted"]

    def text(self, x, y, s, size=FONT, **kw):
        kw.setdefault("ha", "center")
        kw.setdefault("va", "center")
        kw.setdefault("color", self.fg)
        return self.ax.text(x, y, s, fontsize=size, **kw)

    def matrix(self, x, y, rows, cols, cell, name=None, shape=None, bands=None, fill=None, label_side="above",
               values=None, cmap=None, stripes=None):
        """A rows x cols grid centred at (x, y); ``bands``: colour per group of columns,
        ``stripes``: a stripe pattern per group (slopes, :data:`HEAD_STRIPES`);
        ``values``: a (rows, cols) array drawn in ``cmap`` over [-1, 1]."""
        w, h = cols * cell, rows * cell
        x0, y0 = x - w / 2, y - h / 2
        if values is not None:
            self.ax.imshow(values, cmap=cmap, vmin=-1, vmax=1, extent=(x0, x0 + w, y0, y0 + h),
                           interpolation="nearest", aspect="auto")
        elif bands:
            per = cols // len(bands)
            for b, colour in enumerate(bands):
                self.ax.add_patch(Rectangle((x0 + b * per * cell, y0), per * cell, h, facecolor=colour,
                                            alpha=HEAD_ALPHA[self.theme], linewidth=0))
                if stripes and stripes[b]:
                    self._stripes(x0 + b * per * cell, y0, per * cell, h, cell, stripes[b])
        else:
            self.ax.add_patch(Rectangle((x0, y0), w, h, facecolor=fill or FILL[self.theme], linewidth=0))
        xs, ys = [], []  # the grid as one path (a small SVG)
        for i in range(1, rows):
            xs += [x0, x0 + w, np.nan]
            ys += [y0 + i * cell] * 2 + [np.nan]
        for j in range(1, cols):
            xs += [x0 + j * cell] * 2 + [np.nan]
            ys += [y0, y0 + h, np.nan]
        self.ax.plot(xs, ys, color=self.muted, linewidth=0.3)
        self.ax.add_patch(Rectangle((x0, y0), w, h, fill=False, edgecolor=self.fg, linewidth=0.9))
        label = " ".join(p for p in (name, shape_label(shape) if shape is not None else None) if p)
        if label:
            if label_side == "above":
                self.text(x, y0 + h + 0.14, label)
            elif label_side == "below":
                self.text(x, y0 - 0.14, label)
            elif label_side == "right":
                self.text(x0 + w + 0.08, y, label, ha="left")
        return x0, y0, w, h

    def _stripes(self, x0, y0, w, h, spacing, slopes):
        """Lines of slope +1 or -1, ``spacing`` apart, across the rectangle (one path)."""
        xs, ys = [], []
        for slope in slopes:
            # the line y - y0 = slope * (x - x0) + c, for offsets c that cross the rectangle
            start = -w if slope > 0 else 0.0
            for c in np.arange(start + spacing / 2, start + w + h, spacing):
                t0, t1 = max(0.0, (0 - c) / slope), min(w, (h - c) / slope)
                if slope < 0:
                    t0, t1 = max(0.0, (h - c) / slope), min(w, (0 - c) / slope)
                if t1 > t0:
                    xs += [x0 + t0, x0 + t1, np.nan]
                    ys += [y0 + c + slope * t0, y0 + c + slope * t1, np.nan]
        self.ax.plot(xs, ys, color=self.fg, linewidth=0.5)

    def box(self, x, y, w, h, s, fill=None, size=FONT):
        self.ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.06",
                                         facecolor=fill or OP_FILL[self.theme], edgecolor=self.fg, linewidth=0.9))
        self.text(x, y, s, size=size)

    def arrow(self, start, end, label=None, label_side="right", size=SMALL):
        self.ax.annotate("", xy=end, xytext=start,
                         arrowprops=dict(arrowstyle="-|>", color=self.fg, linewidth=0.9, shrinkA=0, shrinkB=0,
                                         mutation_scale=9))
        if label:
            # Beside the arrow's middle. A slanted arrow falls away on one side of its middle:
            # the label sits above the line where the line falls towards the label's side, below
            # where it rises, so the line never runs through the text.
            mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
            dx, dy = end[0] - start[0], end[1] - start[1]
            side = 1 if label_side == "right" else -1
            rise = side * dy / dx if abs(dx) > 1e-9 else 0.0  # how the line goes on the label's side
            va, y = ("bottom", my + 0.02) if rise < 0 else ("top", my - 0.02) if rise > 0 else ("center", my)
            size = max(size, SCRIPTED) if "$" in label else size
            self.text(mx + side * 0.07, y, label, size=size, ha="left" if side > 0 else "right", va=va)

    def line(self, points, **kw):
        xs, ys = zip(*points)
        self.ax.plot(xs, ys, color=self.fg, linewidth=0.9, **kw)


def _by(shape) -> str:
    """A shape as alt text reads it: ``(6, 16)`` -> "6 by 16"."""
    return " by ".join(str(int(n)) for n in shape)


# Each diagram's alt text (what the site's image says to a screen reader): a shape's name
# in braces is written as the diagram draws it ("6 by 16"), other names are the sizes.
ALT = {
    "self_attention": """\
Flow diagram drawn as grids of cells. X, {X}, is multiplied by W Q, W K and W V, {W_Q},
giving Q, K and V, each {Q}. Q and K give the scores, Q K transposed over the square root
of {d_k}, {scores}, one row per query and one column per key. A softmax along each row
gives the weights, {weights}, each row summing to 1. The weights times V give the
output, {output}.""",
    "multi_head": """\
Flow diagram. X, {X}, is multiplied by the projections W Q, W K and W V, each {W_Q},
giving Q, K and V, {Q}, whose columns are coloured and striped in {h} bands of {d_k}, one per head.
Each head computes its own {t}-by-{t} weights, {weights} in all, and its own output,
{head}. The {h} outputs are concatenated back to {concat} and multiplied by the output
projection W O, {W_O}, giving the output, {output}.""",
    "encoder_layer": """\
Two flow diagrams side by side. On the left, post-norm, x ({post_input}) goes through
multi-head self-attention; x is added back; then layer norm; then the feed-forward
network, {d_model} to {d_ff} to {d_model}, with a hidden shape of {post_hidden}; its input is
added back; then layer norm; the output is {post_output}. On the right, pre-norm, layer
norm comes before each sub-layer instead, and the residual sums come last.""",
    "positional_input": """\
Diagram. The token embeddings X, {X}, one row per word of "{words}", plus the
positional encoding PE, {PE}, one row per position 0 to {last}, drawn as coloured
cells. Their sum, X plus PE, {sum}, goes into encoder layer 0, then layers 1 to N-1.""",
    "decoder_layer": """\
A flow diagram. x ({input}) goes through masked multi-head self-attention with weights
{self_weights}, is added back and layer-normed; then multi-head cross-attention, whose
keys and values come from the memory M ({memory}) on the right, with weights
{cross_weights}, added back and layer-normed; then the feed-forward network, {d_model} to
{d_ff} to {d_model} with a hidden shape of {hidden}, added back and layer-normed; the
output is {output}.""",
}


def _diagram(height: float, draw, shapes: dict, alt: str, **sizes) -> ThemedFigure:
    """The figure, its shapes (``fig.shapes``) and its alt text (``fig.alt``), both from the
    same sizes as the drawing."""
    fig = themed((WIDTH, height), lambda f, theme: draw(_Canvas(f, theme, height)), svg=True, layout=None)
    fig.shapes = {name: tuple(int(n) for n in shape) for name, shape in shapes.items()}
    fig.alt = " ".join(alt.format(**{name: _by(s) for name, s in fig.shapes.items()}, **sizes).split())
    return fig


def self_attention(seq_len: int = SEQ_LEN, d_model: int = example.D_MODEL,
                   d_k: int = example.D_K) -> ThemedFigure:
    """Scaled dot-product self-attention, X -> Q, K, V -> scores -> softmax -> weights x V.

    The shapes come from :func:`~transformer_lessons.attention.scaled_dot_product_attention`
    run on random ``X (seq_len, d_model)`` and projections ``(d_model, d_k)``.
    """
    rng = np.random.default_rng(0)
    x = rng.normal(size=(seq_len, d_model))
    w_q, w_k, w_v = (rng.normal(size=(d_model, d_k)) for _ in range(3))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    out, weights = scaled_dot_product_attention(q, k, v)
    shapes = {"X": x.shape, "W_Q": w_q.shape, "Q": q.shape, "K": k.shape, "V": v.shape,
              "scores": (q @ k.T).shape, "weights": weights.shape, "output": out.shape}

    cell = min(0.13, 2.4 / d_model, 0.9 / seq_len)
    height = 0.45 + 3.9 * (seq_len * cell + 0.75) + seq_len * cell + 0.15

    def draw(c: _Canvas):
        row_h = seq_len * cell + 0.75
        y = height - 0.45 - seq_len * cell / 2
        c.matrix(WIDTH / 2, y, seq_len, d_model, cell, "X", shapes["X"])
        xq, xk, xv = 0.95, 2.35, 4.1
        y2 = y - row_h
        top2 = y2 + seq_len * cell / 2 + 0.3
        for xx, name, wname in ((xq, "Q", "Q"), (xk, "K", "K"), (xv, "V", "V")):
            c.arrow((WIDTH / 2 + (xx - WIDTH / 2) * 0.25, y - seq_len * cell / 2), (xx, top2),
                    f"× {projection(wname)}\n{shape_label(shapes['W_Q'])}" if name == "Q" else f"× {projection(wname)}",
                    label_side="left" if name == "Q" else "right")
            c.matrix(xx, y2, seq_len, d_k, cell, name, shapes[name])
        # scores
        y3 = y2 - row_h
        xs = (xq + xk) / 2
        top3 = y3 + seq_len * cell / 2 + 0.3
        c.arrow((xq, y2 - seq_len * cell / 2), (xs - 0.15, top3))
        c.arrow((xk, y2 - seq_len * cell / 2), (xs + 0.15, top3))
        c.matrix(xs, y3, seq_len, seq_len, cell, "scores", shapes["scores"])
        c.text(xs + seq_len * cell / 2 + 0.12, y3, f"= Q Kᵀ / √{d_k}\nrow i: query i\ncolumn j: key j",
               size=SMALL, ha="left")
        # weights
        y4 = y3 - row_h
        top4 = y4 + seq_len * cell / 2 + 0.3
        c.arrow((xs, y3 - seq_len * cell / 2), (xs, top4), "softmax, each row", label_side="right")
        c.matrix(xs, y4, seq_len, seq_len, cell, "weights", shapes["weights"], fill=OP_FILL[c.theme])
        c.text(xs - seq_len * cell / 2 - 0.12, y4, "each row\nsums to 1", size=SMALL, ha="right")
        # output
        xo = (xs + xv) / 2 + 0.3
        y5 = y4 - row_h * 0.9
        top5 = y5 + seq_len * cell / 2 + 0.3
        c.arrow((xs + seq_len * cell / 2, y4), (xo - 0.2, top5))
        c.arrow((xv, y2 - seq_len * cell / 2 - 0.3), (xo + 0.2, top5), "weights × V")
        c.matrix(xo, y5, seq_len, d_k, cell, "output", shapes["output"])

    return _diagram(height, draw, shapes, ALT["self_attention"], d_k=d_k)


def multi_head(seq_len: int = SEQ_LEN, d_model: int = example.D_MODEL, num_heads: int = example.NUM_HEADS) -> ThemedFigure:
    """Multi-head self-attention: project, split into heads, attend per head, concatenate, W^O.

    The shapes come from :class:`~transformer_lessons.multihead.MultiHeadAttention`
    run on a random ``(1, seq_len, d_model)`` input; the head-by-head route drawn here is
    checked to give the module's output.
    """
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_model, num_heads).double().eval()
    x = torch.randn(1, seq_len, d_model, dtype=torch.float64)
    with torch.no_grad():
        out, w = mha(x, x, x)  # (B, T, E), (B, H, T, T)
        q, k, v = mha.q_proj(x), mha.k_proj(x), mha.v_proj(x)  # (B, T, E) each

        def split(t):  # (B, T, E) -> (B, T, H, d_k) -> (B, H, T, d_k)
            return t.view(1, seq_len, num_heads, mha.head_dim).transpose(1, 2)

        heads = w @ split(v)  # (B, H, T, T) @ (B, H, T, d_k) -> (B, H, T, d_k)
        concat = heads.transpose(1, 2).reshape(1, seq_len, d_model)  # (B, T, E)
        if not torch.allclose(mha.out_proj(concat), out):
            raise AssertionError("the head-by-head route does not give MultiHeadAttention's output")
    shapes = {"X": x.shape[1:], "Q": q.shape[1:], "W_Q": tuple(mha.q_proj.weight.T.shape),
              "Q_heads": split(q).shape[1:], "weights": w.shape[1:], "heads": heads.shape[1:],
              "concat": concat.shape[1:], "W_O": tuple(mha.out_proj.weight.T.shape), "output": out.shape[1:]}
    h, d_k = num_heads, mha.head_dim
    colours = [OKABE_ITO[i % 7] for i in range(h)]
    stripes = [HEAD_STRIPES[i % len(HEAD_STRIPES)] for i in range(h)]
    cell = min(0.085, 1.45 / d_model, 0.7 / seq_len)
    block_h = seq_len * cell
    height = 0.4 + 5 * (block_h + 0.72) + block_h + 0.15

    def draw(c: _Canvas):
        step = block_h + 0.72
        y = height - 0.4 - block_h / 2
        c.matrix(WIDTH / 2, y, seq_len, d_model, cell, "X", shapes["X"])
        # projections, all heads side by side, coloured by head
        y2 = y - step
        xs = (0.85, 2.6, 4.35)
        for xx, name in zip(xs, "QKV"):
            c.arrow((WIDTH / 2 + (xx - WIDTH / 2) * 0.3, y - block_h / 2), (xx, y2 + block_h / 2 + 0.28),
                    f"× {projection(name)}\n{shape_label(shapes['W_Q'])}" if name == "Q" else f"× {projection(name)}",
                    label_side="left" if name == "Q" else "right")
            c.matrix(xx, y2, seq_len, d_model, cell, name, shapes["Q"], bands=colours, stripes=stripes)
        # split into heads: H blocks of (T, d_k) per projection
        y3 = y2 - step
        c.text(WIDTH / 2, y2 - block_h / 2 - 0.29,
               f"split the columns into {h} heads of d_k = {d_k}:\nQ, K, V each {shape_label(shapes['Q_heads'])}",
               size=SMALL)
        # attention per head: one row of weights, one row of outputs, each named at the left
        left = 1.25  # the rows' names sit left of this; the heads share the rest of the width
        gap = (WIDTH - left - 0.1) / h
        centres = [left + gap * (i + 0.5) for i in range(h)]
        for i, xx in enumerate(centres):
            c.matrix(xx, y3, seq_len, seq_len, cell, f"head {i}", None, bands=[colours[i]],
                     stripes=[stripes[i]])
        c.text(0.1, y3, f"attention\nweights\n{shape_label(shapes['weights'])}", size=SMALL, ha="left")
        # head outputs
        y4 = y3 - step
        for i, xx in enumerate(centres):
            c.arrow((xx, y3 - block_h / 2 - 0.05), (xx, y4 + block_h / 2 + 0.08))
            c.matrix(xx, y4, seq_len, d_k, cell, None, None, bands=[colours[i]], stripes=[stripes[i]])
        c.text(0.1, y4, f"head outputs\nweights × V\n{shape_label(shapes['heads'])}", size=SMALL, ha="left")
        # concatenate
        y5 = y4 - step
        for xx in centres:
            c.arrow((xx, y4 - block_h / 2 - 0.05), (WIDTH / 2 + (xx - WIDTH / 2) * 0.3, y5 + block_h / 2 + 0.08))
        c.matrix(WIDTH / 2, y5, seq_len, d_model, cell, None, None, bands=colours, stripes=stripes)
        c.text(WIDTH / 2 + d_model * cell / 2 + 0.1, y5, f"concat\n{shape_label(shapes['concat'])}", size=SMALL,
               ha="left")
        # output projection
        y6 = y5 - step
        c.arrow((WIDTH / 2, y5 - block_h / 2), (WIDTH / 2, y6 + block_h / 2 + 0.28),
                f"× {projection('O')} {shape_label(shapes['W_O'])}")
        c.matrix(WIDTH / 2, y6, seq_len, d_model, cell, "output", shapes["output"])

    return _diagram(height, draw, shapes, ALT["multi_head"], h=h, d_k=d_k, t=seq_len, head=_by(shapes['heads'][1:]))


def encoder_layer(seq_len: int = SEQ_LEN, d_model: int = example.D_MODEL, num_heads: int = example.NUM_HEADS,
                  d_ff: int = example.D_FF) -> ThemedFigure:
    """One encoder layer, post-norm (the paper) and pre-norm side by side.

    The shapes come from :class:`~transformer_lessons.encoder.TransformerEncoderLayer`
    (both orders) run on a random ``(1, seq_len, d_model)`` input.
    """
    torch.manual_seed(0)
    x = torch.randn(1, seq_len, d_model)
    shapes = {}
    with torch.no_grad():
        for norm_first in (False, True):
            layer = TransformerEncoderLayer(d_model, num_heads, d_ff, norm_first=norm_first).eval()
            key = "pre" if norm_first else "post"
            shapes[f"{key}_input"] = x.shape[1:]
            shapes[f"{key}_attention"] = layer.self_attn(x, x, x)[0].shape[1:]
            shapes[f"{key}_hidden"] = layer.linear1(x).shape[1:]
            shapes[f"{key}_output"] = layer(x).shape[1:]
    height = 5.6

    def column(c: _Canvas, cx: float, key: str, title: str, order: list[str]):
        """order: the boxes top to bottom; '|' marks where a residual branch leaves, '+' where it is added."""
        c.text(cx, height - 0.25, title, size=FONT, fontweight="bold")
        y = height - 0.7
        c.text(cx, y, f"x {shape_label(shapes[key + '_input'])}")
        y -= 0.2
        box_w, box_h, step = 1.6, 0.4, 0.66
        branch = None
        for item in order:
            if item == "+":
                yy = y - step + 0.15
                c.arrow((cx, y), (cx, yy + 0.13))
                c.ax.add_patch(plt_circle(cx, yy, 0.13, c))
                c.text(cx, yy, "+", size=FONT)
                # residual: from the branch point down the left side into the sum
                bx = cx - box_w / 2 - 0.18
                c.line([(cx, branch), (bx, branch), (bx, yy)])
                c.arrow((bx, yy), (cx - 0.13, yy))
                y = yy - 0.13
                branch = None
                continue
            if item == "|":
                branch = y - 0.08
                continue
            yy = y - step + box_h / 2
            c.arrow((cx, y), (cx, yy + box_h / 2))
            label = {
                "attn": "multi-head\nself-attention",
                "ffn": f"feed-forward\n{d_model} → {d_ff} → {d_model}",
                "norm": "layer norm",
            }[item]
            fill = FILL[c.theme] if item == "norm" else None
            c.box(cx, yy, box_w, box_h, label, fill=fill, size=SMALL)
            if item == "attn":
                c.text(cx + box_w / 2 + 0.05, yy - box_h / 2 - 0.1, shape_label(shapes[key + "_attention"]),
                       size=SMALL, ha="left")
            if item == "ffn":
                c.text(cx + box_w / 2 + 0.05, yy, f"hidden\n{shape_label(shapes[key + '_hidden'])}",
                       size=SMALL, ha="left")
            y = yy - box_h / 2
        c.arrow((cx, y), (cx, y - 0.3))
        c.text(cx, y - 0.45, f"output {shape_label(shapes[key + '_output'])}")

    def draw(c: _Canvas):
        column(c, 1.2, "post", "post-norm (the paper)", ["|", "attn", "+", "norm", "|", "ffn", "+", "norm"])
        column(c, 3.7, "pre", "pre-norm", ["|", "norm", "attn", "+", "|", "norm", "ffn", "+"])
        c.ax.plot([2.5, 2.5], [0.2, height - 0.1], color=c.muted, linewidth=0.6, linestyle=":")

    return _diagram(height, draw, shapes, ALT["encoder_layer"], d_model=d_model, d_ff=d_ff)


def plt_circle(x, y, r, c: _Canvas):
    from matplotlib.patches import Circle

    return Circle((x, y), r, facecolor=THEMES[c.theme]["background"], edgecolor=c.fg, linewidth=0.9)


def positional_input(tokens=None, d_model: int = example.D_MODEL) -> ThemedFigure:
    """Positional encoding added to the token embeddings before the first layer.

    The shapes come from :func:`~transformer_lessons.example.embeddings` (for the running
    example's sentence, else random embeddings of ``len(tokens)`` rows) and
    :func:`~transformer_lessons.positional.positional_encoding`; the PE block is drawn in
    the colours of its values (``cividis``, -1 dark to +1 bright, as in the PE heatmap).
    """
    tokens = example.tokens() if tokens is None else list(tokens)
    if tokens == example.tokens() and d_model == example.D_MODEL:
        x = example.embeddings()
    else:
        x = np.random.default_rng(0).normal(size=(len(tokens), d_model))
    pe = positional_encoding(len(tokens), d_model)
    t = len(tokens)
    shapes = {"X": x.shape, "PE": pe.shape, "sum": (x + pe).shape}
    cell = min(0.16, 2.6 / d_model, 1.2 / t)
    block_h = t * cell
    height = 0.35 + 2 * (block_h + 0.45) + 1.3

    def draw(c: _Canvas):
        w = d_model * cell
        xm = WIDTH / 2 - 0.35
        y = height - 0.4 - block_h / 2
        for i, word in enumerate(tokens):
            yy = y + block_h / 2 - (i + 0.5) * cell
            c.text(xm - w / 2 - 0.08, yy, word, size=min(SMALL, cell * 72 * 0.95), ha="right")
        c.matrix(xm, y, t, d_model, cell, "token embeddings X", shapes["X"])
        y2 = y - block_h - 0.45
        c.text(xm + w / 2 + 0.15, (y + y2) / 2, "+", size=14)
        c.matrix(xm, y2, t, d_model, cell, None, None, values=pe, cmap=SIGNED_CMAP)
        c.text(xm + w / 2 + 0.1, y2, f"positional\nencoding PE\n{shape_label(shapes['PE'])}", ha="left")
        for i in range(t):
            c.text(xm - w / 2 - 0.08, y2 + block_h / 2 - (i + 0.5) * cell, f"pos {i}",
                   size=min(SMALL, cell * 72 * 0.95), ha="right")
        y3 = y2 - block_h / 2 - 0.75
        c.arrow((xm, y2 - block_h / 2 - 0.03), (xm, y3 + 0.2), f"X + PE {shape_label(shapes['sum'])}")
        c.box(xm, y3, 2.2, 0.4, "encoder layer 0", fill=FILL[c.theme])  # layers count from 0
        c.arrow((xm, y3 - 0.2), (xm, y3 - 0.55), "layers 1 ... N-1")

    return _diagram(height, draw, shapes, ALT["positional_input"], words=' '.join(tokens), last=t - 1)


def decoder_layer(seq_len: int = SEQ_LEN, memory_len: int = 5, d_model: int = example.D_MODEL,
                  num_heads: int = example.NUM_HEADS, d_ff: int = example.D_FF) -> ThemedFigure:
    """One decoder layer (post-norm, the paper): masked self-attention, cross-attention, feed-forward.

    The shapes come from :class:`~transformer_lessons.decoder.TransformerDecoderLayer` run
    on a random ``(1, seq_len, d_model)`` input and a ``(1, memory_len, d_model)`` memory.
    """
    torch.manual_seed(0)
    x, memory = torch.randn(1, seq_len, d_model), torch.randn(1, memory_len, d_model)
    layer = TransformerDecoderLayer(d_model, num_heads, d_ff, dropout=0.0).eval()
    with torch.no_grad():
        out = layer(x, memory, tgt_mask=torch.ones(seq_len, seq_len, dtype=torch.bool).tril())
        shapes = {
            "input": x.shape[1:], "memory": memory.shape[1:], "output": out.shape[1:],
            "self_weights": layer.self_attention_weights.shape[1:],  # (H, T, T)
            "cross_weights": layer.cross_attention_weights.shape[1:],  # (H, T, S)
            "hidden": layer.linear1(x).shape[1:],
        }
    height, cx, box_w, box_h, step = 6.7, 1.9, 1.9, 0.42, 0.62
    labels = {
        "self": ("masked multi-head\nself-attention", f"weights {shape_label(shapes['self_weights'])}"),
        "cross": ("multi-head\ncross-attention", f"weights {shape_label(shapes['cross_weights'])}"),
        "ffn": (f"feed-forward\n{d_model} → {d_ff} → {d_model}", f"hidden {shape_label(shapes['hidden'])}"),
    }

    def draw(c: _Canvas):
        y = height - 0.3
        c.text(cx, y, f"x {shape_label(shapes['input'])}")
        y -= 0.2
        for sub in ("self", "cross", "ffn"):
            branch = y - 0.08
            yy = y - step + box_h / 2
            c.arrow((cx, y), (cx, yy + box_h / 2))
            c.box(cx, yy, box_w, box_h, labels[sub][0], size=SMALL)
            c.text(cx + box_w / 2 + 0.08, yy + 0.08, labels[sub][1], size=SMALL, ha="left")
            if sub == "cross":  # keys and values from the encoder's output
                right, ay = cx + box_w / 2, yy - 0.12
                c.arrow((right + 0.75, ay), (right, ay))
                c.text(right + 0.38, ay - 0.13, "K, V", size=SMALL)
                c.text(right + 0.8, ay, f"memory M {shape_label(shapes['memory'])}", size=SMALL, ha="left")
            y = yy - box_h / 2
            yy = y - step + 0.15
            c.arrow((cx, y), (cx, yy + 0.13))
            c.ax.add_patch(plt_circle(cx, yy, 0.13, c))
            c.text(cx, yy, "+", size=FONT)
            bx = cx - box_w / 2 - 0.2  # the residual branch, down the left side
            c.line([(cx, branch), (bx, branch), (bx, yy)])
            c.arrow((bx, yy), (cx - 0.13, yy))
            y = yy - 0.13
            yy = y - 0.45
            c.arrow((cx, y), (cx, yy + 0.17))
            c.box(cx, yy, box_w * 0.7, 0.34, "layer norm", fill=FILL[c.theme], size=SMALL)
            y = yy - 0.17
        c.arrow((cx, y), (cx, y - 0.3))
        c.text(cx, y - 0.45, f"output {shape_label(shapes['output'])}")

    return _diagram(height, draw, shapes, ALT["decoder_layer"], d_model=d_model, d_ff=d_ff)
