"""Scaled dot-product attention (Vaswani et al., 2017, section 3.2.1).

.. math::

    \\operatorname{Attention}(Q, K, V) = \\operatorname{softmax}\\!\\left(\\frac{Q K^\\top}{\\sqrt{d_k}}\\right) V

Shapes (see the notation page of the book):

* ``q``: ``(..., T, d_k)`` -- one query per output position,
* ``k``: ``(..., S, d_k)`` -- one key per input position,
* ``v``: ``(..., S, d_v)`` -- one value per input position,
* ``weights``: ``(..., T, S)``, ``output``: ``(..., T, d_v)``.

Mask convention (the one used by :func:`torch.nn.functional.scaled_dot_product_attention`):
a boolean ``mask`` broadcastable to ``(..., T, S)`` where **True means "may attend"**.
``torch.nn.MultiheadAttention``'s ``attn_mask`` uses the opposite polarity (True = blocked).

:func:`scaled_dot_product_attention` is the NumPy version the book builds;
:func:`scaled_dot_product_attention_torch` is its PyTorch twin, used by
:class:`~transformer_lessons.multihead.MultiHeadAttention`. Both give a query whose
mask allows no key all-zero weights and a zero output, never NaN.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def softmax(x, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``: ``exp(x - max) / sum(exp(x - max))``.

    Subtracting each slice's maximum leaves the result unchanged (softmax is shift
    invariant) and keeps every exponent <= 0, so no finite score overflows.
    A score of ``-inf`` (a blocked key) gets weight exactly 0. A slice that is
    *entirely* ``-inf`` (a fully masked row: nothing may be attended to) gets
    all-zero weights instead of NaN, as ``F.scaled_dot_product_attention`` does.

    Args:
        x: scores, any shape.
        axis: the axis normalised to sum to 1.

    Returns:
        An array of the shape of ``x`` (float32 stays float32; integers become float64).
    """
    row_max = np.max(x, axis=axis, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0)  # all -inf: shift by 0, not by -inf
    with np.errstate(over="ignore"):  # x - max may round to -inf; exp(-inf) = 0 is right
        e = np.exp(x - row_max)  # every exponent <= 0
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)  # a fully masked row is all 0 and stays 0


def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention, equation (1) of Vaswani et al. (2017).

    Args:
        q: queries ``(..., T, d_k)``; k: keys ``(..., S, d_k)``; v: values ``(..., S, d_v)``.
        mask: optional boolean, broadcastable to ``(..., T, S)``; True = may attend.

    Returns:
        ``(output (..., T, d_v), weights (..., T, S))``. Each row of ``weights`` sums
        to 1, except a row whose mask allows no key: it is all zeros, and so is its
        output. float32 inputs give float32 results.

    Raises:
        ValueError: if the shapes do not fit together; the message names them.
    """
    q, k, v, mask = check_attention_inputs(q, k, v, mask)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (..., T, S)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # a blocked key scores -inf: weight 0
    weights = softmax(scores, axis=-1)  # (..., T, S), each row sums to 1
    return weights @ v, weights  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)


def scaled_dot_product_attention_torch(q, k, v, mask=None, dropout_p: float = 0.0):
    """The PyTorch twin of :func:`scaled_dot_product_attention`.

    Args:
        q: ``(..., T, d_k)``; k: ``(..., S, d_k)``; v: ``(..., S, d_v)`` tensors.
        mask: optional boolean tensor, broadcastable to ``(..., T, S)``, True = may attend.
        dropout_p: dropout on the weights before they mix the values (0 = off).

    Returns:
        ``(output (..., T, d_v), weights (..., T, S))``, the weights taken before
        dropout. A row whose mask allows no key gets zero weights and a zero output,
        never NaN (in the backward pass too). Inputs are not checked: the caller
        (:class:`~transformer_lessons.multihead.MultiHeadAttention`) does it.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # a blocked key scores -inf: weight 0
    weights = torch.softmax(scores, dim=-1)  # (..., T, S); a row with no allowed key is NaN
    if mask is not None:
        weights = weights.masked_fill(~mask.any(-1, keepdim=True), 0.0)  # such a row gets zeros
    out = F.dropout(weights, dropout_p) @ v  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return out, weights


def causal_mask(seq_len: int) -> np.ndarray:
    """Boolean ``(seq_len, seq_len)`` mask, True on and below the diagonal.

    Position ``t`` may attend to positions ``0..t`` only (True = may attend).
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))


# ---------------------------------------------------------------- input checks


def check_attention_inputs(q, k, v, mask=None):
    """Check the shapes of attention's inputs and convert them to float arrays.

    Shared by :func:`scaled_dot_product_attention` and
    :func:`~transformer_lessons.flash.flash_attention`.

    Returns:
        ``(q, k, v, mask)`` as NumPy arrays: the three of one floating dtype
        (float32 stays float32, integers become float64), ``mask`` boolean or None.

    Raises:
        ValueError: naming the shapes, if ``q``, ``k``, ``v`` do not fit together or
            ``mask`` is not boolean or does not broadcast to ``(..., T, S)``.
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    for name, arr in (("q", q), ("k", k), ("v", v)):
        if arr.ndim < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., length, features); got shape {arr.shape}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share the feature size d_k: q has shape {q.shape} "
            f"(d_k={q.shape[-1]}), k has shape {k.shape} (d_k={k.shape[-1]})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions S: k has shape {k.shape} "
            f"(S={k.shape[-2]}), v has shape {v.shape} (S={v.shape[-2]})"
        )
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"leading (batch) dimensions do not broadcast: q {q.shape}, k {k.shape}, v {v.shape}"
        ) from None
    if mask is not None:
        mask = _check_mask(mask, batch + (q.shape[-2], k.shape[-2]))
    dtype = np.result_type(q, k, v, np.float32)  # integers -> float64; float32 stays float32
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False), mask


def _check_mask(mask, scores_shape: tuple) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(
            f"mask must be boolean (True = may attend); got dtype {mask.dtype} with shape {mask.shape}"
        )
    try:
        broadcast = np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        broadcast = None
    if broadcast != tuple(scores_shape):
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the attention scores' "
            f"shape {tuple(scores_shape)} (..., T, S)"
        )
    return mask
