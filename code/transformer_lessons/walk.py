"""The illustrated walk: one token through self-attention, step by step, with its real numbers.

:func:`attention_walk` follows one token of a sentence (on the foundations page, "cat" of
the running example, with that page's own ``X``, ``W_Q``, ``W_K``, ``W_V``) from its
embedding ``x`` to its output row: its query, key and value (a row times a matrix), its
scores against every key, divided by ``sqrt(d_k)``, the softmax, the weighted sum of the
values. :func:`walk_steps` computes the numbers of each step (a :class:`Step`), and checks
them against :func:`~transformer_lessons.attention.scaled_dot_product_attention`'s weights
and output before anything is drawn: the frames cannot show other numbers than the
library's. Every number on a frame, in its alt text and in its caption is formatted from
these arrays; none is typed.

Decisions (issue 40, part 1):

* **One frame per step, 7 in all**, each a :class:`~transformer_lessons.plots.ThemedFigure`
  drawn as an SVG for a light and a dark page, all of the same size (the stepper's box does
  not change height from step to step), with text of at least 11 pt on a 5.2 inch figure:
  9.4 CSS px on a 390 px phone, like the concept diagrams (:mod:`.diagrams`). A number is
  written in a tinted box; a matrix whose entries are not written (``W^Q`` is 16 x 4) is
  drawn as a grid of coloured cells (``cividis``, the book's signed map, which reads in
  greyscale), so a row times a matrix is drawn as such.
* **Numbers have two decimals** and a real minus sign, as the explorables write them.
* **One display bundle** (:class:`Walk`), of the explorables' type
  :data:`~transformer_lessons.explorables.EXPLORABLE_MIME` with ``kind: "walk"``: the site's
  builder already has a renderer for that type, found through an entry point of the build
  package (:class:`book_build.site.ExplorableHtml`), which hands a walk to
  :class:`book_build.site.WalkHtml`: a ``<div class="tl-walk">`` with one
  ``<figure data-step="k">`` per frame (both themes, alt text with the frame's numbers, a
  caption "Step k of n: ..."), all shown as a numbered sequence without JavaScript;
  ``walk.js`` turns it into a stepper. A type of its own would need a new entry point,
  that is a reinstall of the build package, for no gain.
* **Jupyter, Colab, Binder and the PDFs** get ``image/png``: all frames in a grid of two
  columns, in order, each with its step number, drawn for a light page.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from . import diagrams, plots
from .attention import scaled_dot_product_attention, softmax
from .diagrams import FILL, OP_FILL, projection
from .explorables import EXPLORABLE_MIME

WIDTH, HEIGHT = 5.2, 2.5  # inches, every frame: shown 320-342 px wide on a 390 px phone
FONT, SMALL = 12, 11  # pt: 10.2 and 9.4 CSS px at 320 px
DIGITS = 2
MINUS = "\u2212"


def fmt(x: float) -> str:
    """A number as the walk writes it: two decimals, a real minus sign (never "-0.00")."""
    s = f"{float(x):.{DIGITS}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", MINUS)


def vec(values) -> str:
    return "[" + ", ".join(fmt(x) for x in np.ravel(values)) + "]"


@dataclass(frozen=True)
class Step:
    """One frame: its title, its caption (one or two sentences) and the numbers it shows."""

    title: str
    caption: str
    values: dict = field(default_factory=dict)  # name -> 1-D array, the numbers drawn


@dataclass(frozen=True)
class WalkNumbers:
    """Everything the walk computes, full precision (the steps show them rounded)."""

    tokens: list
    index: int
    x: np.ndarray  # (d_model,)
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    K: np.ndarray  # (T, d_k)
    V: np.ndarray  # (T, d_v)
    q: np.ndarray  # (d_k,)
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray  # (T,) q . k_j
    scaled: np.ndarray  # (T,) divided by sqrt(d_k)
    weights: np.ndarray  # (T,)
    output: np.ndarray  # (d_v,)
    steps: list


def _check_shapes(tokens, X, W_Q, W_K, W_V, index) -> None:
    X, W_Q, W_K, W_V = (np.asarray(a) for a in (X, W_Q, W_K, W_V))
    shapes = f"X {X.shape}, W_Q {W_Q.shape}, W_K {W_K.shape}, W_V {W_V.shape}"
    if X.ndim != 2 or any(w.ndim != 2 for w in (W_Q, W_K, W_V)):
        raise ValueError(f"X must be (T, d_model) and each W (d_model, d_k), 2-D; got {shapes}")
    if len(tokens) != X.shape[0]:
        raise ValueError(f"{len(tokens)} tokens for X of shape {X.shape}: one row of X per token")
    if not (W_Q.shape[0] == W_K.shape[0] == W_V.shape[0] == X.shape[1]):
        raise ValueError(f"each W must have d_model = {X.shape[1]} rows (X's columns); got {shapes}")
    if W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(f"W_Q and W_K must give the same d_k (queries meet keys); got {shapes}")
    if not isinstance(index, (int, np.integer)) or not 0 <= index < len(tokens):
        raise IndexError(f"token index {index!r} out of range for {len(tokens)} tokens {list(tokens)}")


def walk_steps(tokens: Sequence[str], X, W_Q, W_K, W_V, index: int) -> WalkNumbers:
    """The numbers of the walk of token ``index`` through self-attention on ``X (T, d_model)``
    with projections ``W_Q, W_K (d_model, d_k)`` and ``W_V (d_model, d_v)``.

    Raises ``ValueError`` naming the shapes when they do not fit, ``IndexError`` for a token
    index outside the sentence, and ``RuntimeError`` if a step disagrees with
    :func:`scaled_dot_product_attention` (the frames would then show other numbers)."""
    tokens = [str(t) for t in tokens]
    _check_shapes(tokens, X, W_Q, W_K, W_V, index)
    X, W_Q, W_K, W_V = (np.asarray(a, dtype=float) for a in (X, W_Q, W_K, W_V))
    i, word, d_k = int(index), tokens[index], W_Q.shape[1]
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    x = X[i]
    q, k, v = x @ W_Q, x @ W_K, x @ W_V  # the row times the matrix
    scores = K @ q  # (T,): q . k_j for every key
    scaled = scores / np.sqrt(d_k)
    weights = softmax(scaled)
    output = weights @ V  # sum_j w_j v_j
    out_lib, w_lib = scaled_dot_product_attention(Q, K, V)  # the library, all tokens at once
    for name, ours, lib in (("q", q, Q[i]), ("k", k, K[i]), ("v", v, V[i]), ("weights", weights, w_lib[i]),
                            ("output", output, out_lib[i])):
        if not np.allclose(ours, lib, rtol=1e-10, atol=1e-12):
            raise RuntimeError(f"the walk's {name} for {word!r} differs from scaled_dot_product_attention's")
    T, d_model, d_v = len(tokens), X.shape[1], W_V.shape[1]
    root = f"\u221a{d_k}"
    steps = [
        Step("The embedding x", f'"{word}" (token {i}) enters as its embedding x, row {i} of X: '
             f"a row of d_model = {d_model} numbers.", {"x": x}),
        Step("Its query q = x W_Q", f"x (1 \u00d7 {d_model}) times W_Q ({d_model} \u00d7 {d_k}) gives the query q, "
             f'{d_k} numbers: what "{word}" looks for.', {"q": q}),
        Step("Its key k and value v", f"The same x times W_K and W_V gives its key k (what it offers) and value v "
             f"(what it hands over). Every token gets its k and v this way: the rows of K and V.",
             {"k": k, "v": v}),
        Step("Scores: q \u00b7 k for every key", f'q is compared with the key of every token, "{word}" included, by '
             f"a dot product: q times the transposed keys gives {T} scores.", {"scores": scores}),
        Step(f"Divided by {root}", f"Each score is divided by {root} = {np.sqrt(d_k):g}, so that the scores "
             f"keep a variance near 1 whatever d_k is.", {"scaled": scaled}),
        Step("Softmax: the weights", f'The softmax makes the scaled scores positive weights that sum to 1: how '
             f'much "{word}" attends to each token.', {"weights": weights}),
        Step("Weighted sum of the values", f'The output of "{word}" is the weights times the value rows, '
             f"summed: {d_v} numbers, row {i} of the attention output.", {"output": output}),
    ]
    return WalkNumbers(tokens, i, x, W_Q, W_K, W_V, K, V, q, k, v, scores, scaled, weights, output, steps)


# --- drawing ---------------------------------------------------------------------------


class _Frame:
    """An axes in inches (origin bottom left) with the few shapes a frame uses."""

    def __init__(self, fig, theme: str):
        from matplotlib.patches import Rectangle

        self.Rectangle = Rectangle
        self.ax = fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, WIDTH)
        self.ax.set_ylim(0, HEIGHT)
        self.ax.set_axis_off()
        self.theme, self.fg, self.muted = theme, plots.THEMES[theme]["text"], plots.THEMES[theme]["muted"]

    def text(self, x, y, s, size=SMALL, **kw):
        kw.setdefault("ha", "center")
        kw.setdefault("va", "center")
        kw.setdefault("color", self.fg)
        if "$" in s:  # mathtext draws sub- and superscripts at 70 %: as diagrams' labels
            size = max(size, diagrams.SCRIPTED)
        return self.ax.text(x, y, s, fontsize=size, **kw)

    def numbers(self, x0, y, values, w=0.6, h=0.3, fill=None, labels=None):
        """A row of boxes from x0, centred at height y, each with its number; ``labels`` above."""
        for j, val in enumerate(np.ravel(values)):
            cx = x0 + (j + 0.5) * w
            self.ax.add_patch(self.Rectangle((x0 + j * w, y - h / 2), w, h, facecolor=fill or FILL[self.theme],
                                             edgecolor=self.fg, linewidth=0.7))
            self.text(cx, y, fmt(val))
            if labels is not None:
                self.text(cx, y + h / 2 + 0.13, labels[j], color=self.muted)
        return x0 + len(np.ravel(values)) * w

    def grid(self, x0, y0, values, cw, ch):
        """``values`` (rows, cols) as coloured cells (cividis over [-m, m], m its largest
        magnitude), from (x0, y0) up and to the right."""
        values = np.atleast_2d(values)
        vmax = float(np.abs(values).max()) or 1.0
        rows, cols = values.shape
        self.ax.imshow(values, cmap=plots.SIGNED_CMAP, vmin=-vmax, vmax=vmax, interpolation="nearest",
                       extent=(x0, x0 + cols * cw, y0, y0 + rows * ch), aspect="auto")
        self.ax.add_patch(self.Rectangle((x0, y0), cols * cw, rows * ch, fill=False, edgecolor=self.fg, linewidth=0.8))
        return x0 + cols * cw


def _title(c: _Frame, k: int, n: int, step: Step) -> None:
    c.text(0.08, HEIGHT - 0.2, f"Step {k} of {n}: {step.title}", size=FONT, ha="left", weight="bold")


def _draw(c: _Frame, k: int, w: WalkNumbers) -> None:
    n, step, word = len(w.steps), w.steps[k - 1], w.tokens[w.index]
    _title(c, k, n, step)
    d_model, d_k = w.W_Q.shape
    if k == 1:  # x: the row (coloured), then its numbers in two lines
        c.text(0.08, 1.95, f'x = X[{w.index}], "{word}", 1 \u00d7 {d_model}', ha="left")
        c.grid(0.3, 1.55, w.x[None, :], 4.6 / d_model, 0.18)
        half = (d_model + 1) // 2
        for line, (lo, hi) in enumerate(((0, half), (half, d_model))):
            y = 1.05 - line * 0.62
            c.numbers(0.3, y, w.x[lo:hi], w=4.6 / half, labels=[f"x{j}" for j in range(lo, hi)])
        return
    if k in (2, 3):  # row times matrix
        rows = [("q", w.W_Q, w.q, "Q")] if k == 2 else [("k", w.W_K, w.k, "K"), ("v", w.W_V, w.v, "V")]
        cell = 0.06 if k == 2 else 0.05
        for r, (name, W, vec_, letter) in enumerate(rows):
            top = 1.95 if k == 2 else 1.95 - r * 1.0
            mid = top - d_model * cell / 2
            end = c.grid(0.15, mid - cell / 2, w.x[None, :], cell, cell)
            c.text(0.15 + d_model * cell / 2, mid - 0.22, "x", ha="center")
            c.text(end + 0.14, mid, "\u00d7", size=FONT)
            wx = end + 0.28
            end = c.grid(wx, top - d_model * cell, W, cell * 1.6, cell)
            c.text(end + 0.08, mid, projection(letter), ha="left")
            c.text(end + 0.58, mid, "=", size=FONT)
            end = c.numbers(end + 0.76, mid, vec_, w=0.6)
            c.text(end + 0.12, mid, name, ha="left", size=FONT)
        if k == 2:
            c.text(0.15, 0.22, f"(1 \u00d7 {d_model}) \u00d7 ({d_model} \u00d7 {d_k}) = (1 \u00d7 {d_k})", ha="left",
                   color=c.muted)
        return
    T, labels = len(w.tokens), w.tokens
    cw = 0.6
    x0 = WIDTH - 0.12 - T * cw
    if k == 4:  # q . K^T: q as coloured cells, K^T with one column per token, the scores below
        c.grid(0.15, 1.15, w.q[None, :], 0.2, 0.2)
        c.text(0.15 + 0.4, 0.95, "q", size=FONT)
        c.text(x0 - 0.16, 1.25, "\u00d7", size=FONT)
        for j, t in enumerate(labels):
            c.text(x0 + (j + 0.5) * cw, 1.82, t, color=c.muted)
        c.grid(x0, 0.95, w.K.T, cw, 0.15)
        c.text(x0 - 0.16, 1.6, r"$K^\top$", ha="right", size=FONT)
        c.text(x0 - 0.16, 0.55, "=", size=FONT)
        c.numbers(x0, 0.55, w.scores, w=cw)
        c.text(x0 - 0.35, 0.55, r"$q \cdot k_j$", ha="right")
        return
    if k in (5, 6):
        before, after = (w.scores, w.scaled) if k == 5 else (w.scaled, w.weights)
        op = f"\u00f7 \u221a{d_k}" if k == 5 else "softmax"
        names = (r"$q \cdot k_j$", "scaled") if k == 5 else ("scaled", "weights")
        c.numbers(x0, 1.45, before, w=cw, labels=labels)
        c.text(x0 - 0.1, 1.45, names[0], ha="right")
        c.text(x0 - 0.1, 0.95, f"\u2193 {op}", ha="right", color=c.muted)
        c.numbers(x0, 0.5, after, w=cw, fill=OP_FILL[c.theme] if k == 6 else None)
        c.text(x0 - 0.1, 0.5, names[1], ha="right")
        if k == 6:
            c.text(WIDTH - 0.12, 0.15, f"sum = {fmt(w.weights.sum())}", ha="right", color=c.muted)
        return
    # k == 7: the weights as a column beside V's rows, then the output row
    ch = 0.22
    top = 1.85
    for j, t in enumerate(labels):
        y = top - (j + 0.5) * ch
        c.text(0.62, y, t, ha="right", color=c.muted)
        c.ax.add_patch(c.Rectangle((0.7, y - ch / 2), 0.6, ch, facecolor=OP_FILL[c.theme], edgecolor=c.fg,
                                   linewidth=0.7))
        c.text(1.0, y, fmt(w.weights[j]))
    c.text(1.0, top + 0.13, "w", size=SMALL)
    end = c.grid(1.48, top - T * ch, w.V, 0.18, ch)
    c.text(1.48 + w.V.shape[1] * 0.09, top + 0.13, "V", size=SMALL)
    c.text(1.39, top - T * ch / 2, "\u00d7", size=SMALL)
    mid = top - T * ch / 2
    c.text(end + 0.2, mid, r"$\sum_j w_j v_j$ =", ha="left")
    out_x = WIDTH - 0.12 - w.output.size * 0.6
    c.numbers(out_x, mid - 0.42, w.output, w=0.6, fill=OP_FILL[c.theme])
    c.text(out_x + w.output.size * 0.3, mid - 0.8, f'output of "{word}"', color=c.muted)


def _alt(k: int, w: WalkNumbers) -> str:
    """The frame's alt text: what it shows, with its numbers."""
    step, n, word = w.steps[k - 1], len(w.steps), w.tokens[w.index]
    d_model, d_k = w.W_Q.shape
    pairs = lambda a: "; ".join(f"{t} {fmt(s)}" for t, s in zip(w.tokens, a))  # noqa: E731
    body = {
        1: f'The embedding x of "{word}", row {w.index} of X, {d_model} numbers: {vec(w.x)}.',
        2: f"x, 1 by {d_model}, times W Q, {d_model} by {d_k}, drawn as coloured cells, gives q = {vec(w.q)}.",
        3: f"x times W K gives k = {vec(w.k)}; x times W V gives v = {vec(w.v)}.",
        4: f"q times K transposed, one column per token, gives the scores: {pairs(w.scores)}.",
        5: f"The scores divided by the square root of {d_k}: {pairs(w.scaled)}.",
        6: f"The softmax of the scaled scores gives the weights: {pairs(w.weights)}; they sum to 1.",
        7: f"The weights times the rows of V, summed, give the output of \"{word}\": {vec(w.output)}.",
    }[k]
    return f"Step {k} of {n}: {step.title}. {body}"


def _frame(k: int, w: WalkNumbers) -> plots.ThemedFigure:
    fig = plots.themed((WIDTH, HEIGHT), lambda f, theme: _draw(_Frame(f, theme), k, w), svg=True, layout=None)
    fig.alt = _alt(k, w)
    return fig


class Walk:
    """The walk of one token: its numbers (:attr:`numbers`), one frame per step
    (:attr:`frames`, ThemedFigures with their alt text) and the display bundle."""

    kind = "walk"

    def __init__(self, numbers: WalkNumbers):
        self.numbers = numbers
        self.steps = numbers.steps
        self.frames = [_frame(k, numbers) for k in range(1, len(numbers.steps) + 1)]
        word = numbers.tokens[numbers.index]
        self.label = f'Self-attention step by step for "{word}"'

    def data(self) -> dict:
        """The numbers for the page (full precision): a test recomputes them."""
        n = self.numbers
        return {"tokens": n.tokens, "index": n.index,
                **{key: np.asarray(getattr(n, key), dtype=float).tolist()
                   for key in ("x", "q", "k", "v", "scores", "scaled", "weights", "output")}}

    def grid_png(self, columns: int = 2, dpi: int = plots.PRINT_DPI) -> bytes:
        """All frames (light), in order, in a grid: what a notebook and the PDFs show."""
        import matplotlib.image
        from PIL import Image

        images = [matplotlib.image.imread(io.BytesIO(f.image_bytes("light", "png", dpi))) for f in self.frames]
        h, w_ = images[0].shape[:2]
        gap = dpi // 10
        rows = -(-len(images) // columns)
        canvas = np.ones((rows * h + (rows - 1) * gap, columns * w_ + (columns - 1) * gap, 3))
        for n, img in enumerate(images):
            r, col = divmod(n, columns)
            canvas[r * (h + gap): r * (h + gap) + h, col * (w_ + gap): col * (w_ + gap) + w_] = img[..., :3]
        buf = io.BytesIO()
        Image.fromarray((canvas * 255).round().astype(np.uint8)).save(buf, format="png")
        return buf.getvalue()

    def _repr_mimebundle_(self, include=None, exclude=None):
        n = len(self.steps)
        frames = [{"step": k, "title": s.title, "caption": s.caption, "alt": f.alt,
                   "figure": f._repr_mimebundle_()[plots.THEMED_MIME]}
                  for k, (s, f) in enumerate(zip(self.steps, self.frames), start=1)]
        plain = f"{self.label}, {n} steps:\n" + "\n".join(
            f"{k}. {s.title}: {s.caption}" for k, s in enumerate(self.steps, start=1))
        return {"text/plain": plain, "image/png": base64.b64encode(self.grid_png()).decode(),
                EXPLORABLE_MIME: {"kind": self.kind, "label": self.label, "data": self.data(), "frames": frames}}


def attention_walk(tokens: Sequence[str], X, W_Q, W_K, W_V, index: int) -> Walk:
    """The illustrated walk of token ``index`` through self-attention (see the module's
    docstring): ``X (T, d_model)``, ``W_Q, W_K (d_model, d_k)``, ``W_V (d_model, d_v)``."""
    return Walk(walk_steps(tokens, X, W_Q, W_K, W_V, index))
