"""Scaled dot-product attention in NumPy (Vaswani et al., 2017, section 3.2.1).

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
"""

from __future__ import annotations

import math

import numpy as np


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Subtracting the maximum of each slice before ``exp`` leaves the result
    unchanged (softmax is shift invariant) but keeps every exponent <= 0, so
    finite scores of any magnitude never overflow. Entries equal to ``-inf``
    get weight exactly 0; a slice that is entirely ``-inf`` (nothing may be
    attended to) gets all-zero weights instead of NaN.

    Args:
        x: array of scores, any shape.
        axis: the axis that is normalised to sum to 1.

    Returns:
        An array of the same shape and floating dtype as ``x``.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    return _softmax_into(x, np.empty_like(x), axis)


def _softmax_into(x: np.ndarray, out: np.ndarray, axis: int) -> np.ndarray:
    """Write ``softmax(x)`` into ``out`` (which may be ``x`` itself) and return it.

    Every step runs in the one buffer ``out``: for attention scores of shape
    ``(..., T, S)`` such buffers are most of the memory and much of the time.
    """
    row_max = np.max(x, axis=axis, keepdims=True)
    # A slice that is all -inf has max -inf; shifting by it would give nan.
    row_max = np.where(np.isfinite(row_max), row_max, 0.0).astype(x.dtype)
    with np.errstate(over="ignore"):  # x - max may overflow to -inf, whose exp is the right 0
        np.subtract(x, row_max, out=out)
        np.exp(out, out=out)
    total = np.sum(out, axis=axis, keepdims=True)
    has_weight = total > 0
    np.divide(out, total, out=out, where=has_weight)
    if not has_weight.all():  # a slice with nothing to attend to gets all-zero weights
        np.copyto(out, 0.0, where=~has_weight)
    return out


def _check_inputs(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    for name, arr in (("q", q), ("k", k), ("v", v)):
        if arr.ndim < 2:
            raise ValueError(
                f"{name} must have at least 2 dimensions (..., length, features); "
                f"got shape {arr.shape}"
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
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"leading (batch) dimensions do not broadcast: q {q.shape}, k {k.shape}, v {v.shape}"
        ) from None


def _check_mask(mask: np.ndarray, scores_shape: tuple) -> np.ndarray:
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


def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention, equation (1) of Vaswani et al. (2017).

    Args:
        q: queries, ``(..., T, d_k)``.
        k: keys, ``(..., S, d_k)``.
        v: values, ``(..., S, d_v)``.
        mask: optional boolean array broadcastable to ``(..., T, S)``;
            True = the query may attend to that key.

    Returns:
        ``(output, weights)`` with ``output`` of shape ``(..., T, d_v)`` and
        ``weights`` of shape ``(..., T, S)``. Each row of ``weights`` sums to 1,
        except a row whose mask allows no key: it is all zeros, and so is its output.
        The floating dtype of the inputs is kept (float32 stays float32).

    Raises:
        ValueError: if the shapes do not fit together; the message names them.
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_inputs(q, k, v)
    dtype = np.result_type(q, k, v, np.float32)  # ints -> float64; float32 stays float32
    q, k, v = q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False)

    d_k = q.shape[-1]
    # math.sqrt gives a Python float, which does not promote float32 to float64.
    scores = q @ np.swapaxes(k, -1, -2)  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    scores /= math.sqrt(d_k)  # in place: the (..., T, S) buffers dominate time and memory
    if mask is not None:
        mask = _check_mask(mask, scores.shape)
        np.copyto(scores, -np.inf, where=~mask)  # blocked keys score -inf
    weights = softmax(scores, axis=-1)  # (..., T, S)
    output = weights @ v  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return output, weights


def causal_mask(seq_len: int) -> np.ndarray:
    """Boolean ``(seq_len, seq_len)`` mask, True on and below the diagonal.

    Position ``t`` may attend to positions ``0..t`` only (True = may attend).
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))
