"""The encoder block as a function of its weights, in the book's ``X @ W`` layout.

:class:`~transformer_lessons.encoder.TransformerEncoderLayer` is the block as an
``nn.Module``; this module writes the same block as plain functions of a dictionary of
weights, the form a learner builds it in ("Build your own model"):

.. math::

    \\text{post-norm:}\\; x' = \\operatorname{LN}_1(x + \\operatorname{MHA}(x)),\\;
    y = \\operatorname{LN}_2(x' + \\operatorname{FFN}(x')) \\qquad
    \\text{pre-norm:}\\; x' = x + \\operatorname{MHA}(\\operatorname{LN}_1(x)),\\;
    y = x' + \\operatorname{FFN}(\\operatorname{LN}_2(x'))

The weights (:func:`encoder_block_weights` reads them from a
``nn.TransformerEncoderLayer``): ``W_q, W_k, W_v, W_o (E, E)`` as in the multi-head
exercise (no attention biases), ``W_1 (E, F)``, ``b_1 (F,)``, ``W_2 (F, E)``, ``b_2 (E,)``
(equation 2 of Vaswani et al., 2017) and each LayerNorm's ``gamma_i``, ``beta_i (E,)``.
The functions take NumPy arrays or torch tensors (a tensor anywhere: all in torch).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

WEIGHT_NAMES = ("W_q", "W_k", "W_v", "W_o", "W_1", "b_1", "W_2", "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2")


def _common(*arrays):
    """The arrays as they are, or all as tensors of the first tensor's dtype if any is one."""
    first = next((a for a in arrays if isinstance(a, torch.Tensor)), None)
    if first is None:
        return arrays
    return tuple(torch.as_tensor(a, dtype=first.dtype) for a in arrays)


def _softmax(scores):
    if isinstance(scores, torch.Tensor):
        return scores.softmax(-1)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _blocked_to_minus_inf(scores, mask):
    """``scores`` with -inf where the boolean ``mask`` (True = may attend) is False."""
    if isinstance(scores, torch.Tensor):
        return scores.masked_fill(~torch.as_tensor(mask, dtype=torch.bool), -torch.inf)
    return np.where(np.asarray(mask, dtype=bool), scores, -np.inf)


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Multi-head self-attention, ``X (B, T, E)``, ``W_* (E, E)`` -> ``(out (B, T, E),
    weights (B, H, T, T))``, with the signature of the book's multi-head exercise and, as
    in the graded assignment, an optional boolean ``mask (T, T)``, True = may attend."""
    X, W_q, W_k, W_v, W_o = _common(X, W_q, W_k, W_v, W_o)
    B, T, E = X.shape
    d_k = E // num_heads

    def split(M):  # (B, T, E) -> (B, T, H, d_k) -> (B, H, T, d_k)
        return M.reshape(B, T, num_heads, d_k).swapaxes(1, 2)

    Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)
    scores = Q @ K.swapaxes(-1, -2) / d_k**0.5  # (B, H, T, T)
    if mask is not None:  # a blocked score is -inf: its weight is exactly 0
        scores = _blocked_to_minus_inf(scores, mask)
    weights = _softmax(scores)  # (B, H, T, T)
    concat = (weights @ V).swapaxes(1, 2).reshape(B, T, E)  # (B, H, T, d_k) -> (B, T, E)
    return concat @ W_o, weights


def layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last axis (the biased variance, as ``nn.LayerNorm``), ``x (..., E)``."""
    x, gamma, beta = _common(x, gamma, beta)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / (var + eps) ** 0.5 * gamma + beta


def dropout_mask(shape, p, rng):
    """Inverted dropout's factors: 0 with probability ``p``, else ``1 / (1 - p)``."""
    return (rng.random(shape) >= p) / (1 - p)


def encoder_block(X, params, num_heads, attention=multi_head_attention, norm_first=False, dropout=0.0,
                  training=False, rng=None):
    """One encoder block, ``X (B, T, E)`` -> ``(B, T, E)``; ``params`` holds :data:`WEIGHT_NAMES`.

    ``attention(X, W_q, W_k, W_v, W_o, num_heads) -> (out, weights)`` is any multi-head
    attention with the multi-head exercise's signature. Dropout (rate ``dropout``) acts on
    each sub-layer's output and on the feed-forward's hidden layer, and only when
    ``training`` (``rng``, a NumPy generator, draws it).
    """
    X, *weights = _common(X, *(params[name] for name in WEIGHT_NAMES))
    p = dict(zip(WEIGHT_NAMES, weights))
    rng = np.random.default_rng() if rng is None else rng

    def drop(z):  # identity in evaluation (section 5.4 of the paper: dropout is for training)
        if not training or dropout == 0:
            return z
        return z * _common(z, dropout_mask(tuple(z.shape), dropout, rng))[1]

    def attend(z):
        return drop(attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0])

    def ffn(z):
        hidden = z @ p["W_1"] + p["b_1"]  # (B, T, F)
        return drop(drop(hidden * (hidden > 0)) @ p["W_2"] + p["b_2"])  # ReLU; (B, T, E)

    def ln1(z):
        return layer_norm(z, p["gamma_1"], p["beta_1"])

    def ln2(z):
        return layer_norm(z, p["gamma_2"], p["beta_2"])

    if norm_first:  # pre-norm: x + Sublayer(LayerNorm(x))
        X = X + attend(ln1(X))
        return X + ffn(ln2(X))
    X = ln1(X + attend(X))  # post-norm, the paper: LayerNorm(x + Sublayer(x))
    return ln2(X + ffn(X))


def encoder_block_weights(layer: nn.TransformerEncoderLayer) -> dict[str, np.ndarray]:
    """The weights of a ``nn.TransformerEncoderLayer`` in this module's layout (NumPy, its dtype).

    ``nn.Linear`` computes ``x @ weight.T``, so each matrix is transposed. The attention's
    biases are not read: the layer must have none, or zeros (:func:`zero_attention_biases`).
    """
    attn = layer.self_attn
    biases = [b for b in (attn.in_proj_bias, attn.out_proj.bias) if b is not None]
    if any(bool(b.detach().abs().max() > 0) for b in biases):
        raise ValueError("the attention has non-zero biases; this layout has none (zero_attention_biases)")

    def arr(t):
        return t.detach().cpu().numpy().copy()

    w_q, w_k, w_v = (arr(w.T) for w in attn.in_proj_weight.chunk(3))
    return {
        "W_q": w_q, "W_k": w_k, "W_v": w_v, "W_o": arr(attn.out_proj.weight.T),
        "W_1": arr(layer.linear1.weight.T), "b_1": arr(layer.linear1.bias),
        "W_2": arr(layer.linear2.weight.T), "b_2": arr(layer.linear2.bias),
        "gamma_1": arr(layer.norm1.weight), "beta_1": arr(layer.norm1.bias),
        "gamma_2": arr(layer.norm2.weight), "beta_2": arr(layer.norm2.bias),
    }


def zero_attention_biases(layer: nn.TransformerEncoderLayer) -> nn.TransformerEncoderLayer:
    """Set the attention's biases of ``layer`` to zero (in place), as this module's layout has none."""
    with torch.no_grad():
        for b in (layer.self_attn.in_proj_bias, layer.self_attn.out_proj.bias):
            if b is not None:
                b.zero_()
    return layer
