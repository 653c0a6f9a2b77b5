"""Explorables: small interactive figures for the web site, with their data computed here.

Each function computes what the figure shows with the library, at build time, and
returns an :class:`Explorable`. On the web site the book's builder turns it into a few
dozen lines of plain JavaScript and SVG served by the site itself, over a static figure
that stays in place without JavaScript (:class:`book_build.site.ExplorableHtml`);
the PDFs, Jupyter, Colab and Binder show the static figure (a PNG).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import plots
from .attention import scaled_dot_product_attention, softmax
from .positional import positional_encoding

EXPLORABLE_MIME = "application/vnd.transformer-lessons.explorable+json"
DIGITS = 3


def _round(a) -> list:
    return np.round(np.asarray(a, dtype=float), DIGITS).tolist()


class Explorable:
    """An interactive figure (``kind`` + ``data`` for the script) over a static figure."""

    def __init__(self, kind: str, data: dict, static: plots.ThemedFigure, label: str):
        self.kind, self.data, self.static, self.label = kind, data, static, label

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.static._repr_mimebundle_()
        payload = {"kind": self.kind, "label": self.label, "data": self.data, "static": bundle[plots.THEMED_MIME]}
        return {"text/plain": f"<{self.kind} explorable; static figure below>", "image/png": bundle["image/png"],
                EXPLORABLE_MIME: payload}


def _hex(cmap_name: str, values, vmin: float, vmax: float) -> list:
    import matplotlib

    cmap = matplotlib.colormaps[cmap_name]
    norm = (np.asarray(values, dtype=float) - vmin) / (vmax - vmin)
    return [[matplotlib.colors.to_hex(cmap(v)) for v in row] for row in np.atleast_2d(norm)]


def attention(tokens: Sequence[str], q, k, v) -> Explorable:
    """Heatmap of the attention weights of ``q (T, d_k)`` on ``k``, ``v (T, d_v)``; picking a
    query token shows its row of weights and its output, the weighted sum of the rows of ``v``."""
    tokens = [str(t) for t in tokens]
    out, weights = scaled_dot_product_attention(q, k, v)  # (T, d_v), (T, T)
    if weights.shape != (len(tokens), len(tokens)):
        raise ValueError(f"{len(tokens)} tokens for attention weights of shape {weights.shape}")
    vmax = float(weights.max())
    data = {"tokens": tokens, "weights": _round(weights), "output": _round(out),
            "q": np.asarray(q, dtype=float).tolist(), "k": np.asarray(k, dtype=float).tolist(),
            "v": np.asarray(v, dtype=float).tolist(),  # the inputs, exactly: tests recompute from them
            "colours": _hex(plots.WEIGHTS_CMAP, weights, 0.0, vmax),
            "ink": [[plots.annotation_colour(x, vmax) for x in row] for row in weights]}
    static = plots.attention_heatmap(weights, tokens, annotate=True)
    return Explorable("attention", data, static, "Attention weights: pick a query token")


def dk_slider(d_ks: Sequence[int] = tuple(2**i for i in range(11)), n_keys: int = 8, n_queries: int = 500,
              seed: int = 0) -> Explorable:
    """The softmax of ``q . k_j`` over ``n_keys`` random keys, for each ``d_k``, with and
    without the ``1 / sqrt(d_k)`` scale.

    Entries of ``q`` and ``k`` are standard normal, so the dot products have variance
    ``d_k``. For each ``d_k``, ``n_queries`` queries (seeded): the figure shows the first
    query's weights and the mean over all queries of the largest weight.
    """
    rng = np.random.default_rng(seed)
    unscaled, scaled, mean_max_unscaled, mean_max_scaled = [], [], [], []
    for d_k in d_ks:
        q = rng.normal(size=(n_queries, d_k))
        keys = rng.normal(size=(n_keys, d_k))
        scores = q @ keys.T  # (n_queries, n_keys): variance d_k
        w_unscaled, w_scaled = softmax(scores, axis=-1), softmax(scores / np.sqrt(d_k), axis=-1)
        unscaled.append(w_unscaled[0])
        scaled.append(w_scaled[0])
        mean_max_unscaled.append(w_unscaled.max(axis=-1).mean())
        mean_max_scaled.append(w_scaled.max(axis=-1).mean())
    data = {"d_ks": list(map(int, d_ks)), "unscaled": _round(unscaled), "scaled": _round(scaled),
            "mean_max_unscaled": _round(mean_max_unscaled), "mean_max_scaled": _round(mean_max_scaled),
            "n_queries": int(n_queries)}
    static = plots.dk_weights_plot(d_ks, mean_max_unscaled, mean_max_scaled, n_keys=n_keys, n_queries=n_queries)
    return Explorable("dk", data, static, "Softmax weights as d_k grows")


def pe_explorer(seq_len: int = 64, d_model: int = 32, position: int = 10) -> Explorable:
    """Pick a position: its encoding (``d_model`` values) and its dot product with the
    encoding of every position, ``PE[pos] . PE[j]``."""
    pe = positional_encoding(seq_len, d_model)  # (T, d_model)
    similarity = pe @ pe.T  # (T, T): row pos = PE[pos] . PE[j] for every j
    data = {"pe": _round(pe), "similarity": _round(similarity), "position": int(position)}
    static = plots.pe_similarity_plot(pe, position)
    return Explorable("pe", data, static, "Positional encoding: pick a position")
