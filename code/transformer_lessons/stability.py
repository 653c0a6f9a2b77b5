"""Numerical stability of softmax and attention: deliberately broken versions and
the saturation measurement. Nothing here should be used in a model.

* :func:`softmax_unstable` -- softmax without the max subtraction: overflows.
* :func:`attention_unscaled` -- attention without the ``1 / sqrt(d_k)``.
* :func:`saturation_stats` -- how much softmax saturates as ``d_k`` grows,
  with and without the scaling, and what that does to the gradient.

Why the scaling: for ``q`` and ``k`` with independent components of mean 0 and
variance 1, the score ``q . k`` is a sum of ``d_k`` such products and has mean 0 and
variance ``d_k``: its spread grows like ``sqrt(d_k)`` unless it is divided by
``sqrt(d_k)`` (Vaswani et al., 2017, footnote 4). Large scores push the softmax
towards one-hot, where its gradient vanishes.

:func:`saturation_stats` measures the gradient that reaches the query, and through it
``W^Q`` (``d loss / d W^Q = x^T d loss / d q``), for a random loss on the output. It
reports the median over queries, because without scaling the few rows that are not
saturated get very large gradients while most get almost none: the mean hides the
collapse; ``grad_p90_p10`` shows that spread.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .attention import softmax


def softmax_unstable(x, axis: int = -1) -> np.ndarray:
    """Textbook softmax, ``exp(x) / sum(exp(x))``, with no max subtraction.

    ``exp`` overflows to ``inf`` for scores above ~709 (float64) or ~88
    (float32), and ``inf / inf`` is ``nan``.
    """
    exp = np.exp(x)
    return exp / np.sum(exp, axis=axis, keepdims=True)


def attention_unscaled(q, k, v):
    """Attention that forgets to divide the scores by ``sqrt(d_k)``.

    Shapes as :func:`~transformer_lessons.scaled_dot_product_attention`.
    Returns ``(output, weights)``.
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    scores = q @ np.swapaxes(k, -1, -2)  # (..., T, S), variance ~ d_k
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def saturation_stats(d_k: int, scaled: bool, num_queries: int = 256, seq_len: int = 16, seed: int = 0) -> dict:
    """Softmax saturation for random queries and keys ``~ N(0, I)`` of size ``d_k``.

    Returns a dict: ``score_std`` (spread of the scores fed to the softmax),
    ``max_weight`` (mean largest weight: 1 = one-hot, ``1 / seq_len`` = uniform),
    ``grad_norm`` (median over queries of ``|d loss / d q|``, the ``1 / sqrt(d_k)``
    included when ``scaled``) and ``grad_p90_p10`` (90th over 10th percentile of it).
    """
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_queries, 1, d_k, generator=gen, dtype=torch.float64, requires_grad=True)
    k = torch.randn(num_queries, seq_len, d_k, generator=gen, dtype=torch.float64)
    v = torch.randn(num_queries, seq_len, 1, generator=gen, dtype=torch.float64)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (N, 1, d_k) @ (N, d_k, S) -> (N, S)
    scores = scores / math.sqrt(d_k) if scaled else scores
    weights = torch.softmax(scores, dim=-1)  # (N, S)
    out = (weights.unsqueeze(-1) * v).sum(1)  # (N, 1)
    out.sum().backward()
    grad = q.grad.squeeze(1).norm(dim=-1)  # (N,): |d loss / d q| per query
    p10, p50, p90 = torch.quantile(grad, torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)).tolist()
    return {"score_std": scores.detach().std().item(), "max_weight": weights.detach().max(-1).values.mean().item(),
            "grad_norm": p50, "grad_p90_p10": p90 / p10}
