"""Memory-efficient attention: tiling and the online softmax (Dao et al., 2022).

:func:`transformer_lessons.attention.scaled_dot_product_attention` forms the whole
``(..., T, S)`` matrix of scores, so its memory grows with ``T * S``.
:func:`flash_attention` computes the same output one block of queries and one
block of keys at a time and never holds more than a ``(..., block_q, block_k)``
tile of scores. Each query row keeps three running quantities while the key
blocks stream past (Dao et al., 2022, Algorithm 1; Milakov and Gimelshein, 2018):

* ``m``: the largest score seen so far,
* ``l``: the softmax denominator so far, ``sum_j exp(s_j - m)``,
* ``acc``: the un-normalised output so far, ``sum_j exp(s_j - m) v_j``.

When a new block raises the maximum from ``m_old`` to ``m_new``, everything
accumulated so far was measured against the old maximum and is rescaled by
``exp(m_old - m_new)``. After the last block, ``acc / l`` equals
``softmax(scores) @ v`` (up to rounding): the two matrix products and their FLOP
count are those of the plain version; only the order of the sums changes, plus
one rescaling per key block.

This NumPy version shows the memory saving; it is not fast. The speed of
FlashAttention comes from a fused GPU kernel that keeps each tile in on-chip
memory, which Python loops cannot imitate.

Same conventions as :func:`~transformer_lessons.attention.scaled_dot_product_attention`:
``q (..., T, d_k)``, ``k (..., S, d_k)``, ``v (..., S, d_v)``, boolean ``mask``
broadcastable to ``(..., T, S)`` with **True = may attend**.
"""

from __future__ import annotations

import math

import numpy as np

from .attention import _check_inputs, _check_mask


def block_slices(length: int, block: int) -> list[slice]:
    """Cut ``range(length)`` into consecutive slices of ``block`` items.

    The last slice is shorter when ``block`` does not divide ``length``; a
    ``block`` of ``length`` or more gives a single slice.

    Args:
        length: number of positions (>= 0).
        block: block size (>= 1).

    Returns:
        A list of ``slice`` objects that together cover ``0 .. length - 1`` once.
    """
    if int(block) != block or block < 1:
        raise ValueError(f"block size must be a positive integer, got {block!r}")
    return [slice(start, min(start + block, length)) for start in range(0, length, block)]


def flash_attention(q, k, v, mask=None, block_q: int = 64, block_k: int = 64) -> np.ndarray:
    """Scaled dot-product attention computed tile by tile with an online softmax.

    Equal (up to rounding) to ``scaled_dot_product_attention(q, k, v, mask)[0]``,
    but its extra memory is ``O(block_q * block_k + block_q * d_v)`` per batch
    entry instead of ``O(T * S)``.

    Args:
        q: queries, ``(..., T, d_k)``.
        k: keys, ``(..., S, d_k)``.
        v: values, ``(..., S, d_v)``.
        mask: optional boolean array broadcastable to ``(..., T, S)``;
            True = the query may attend to that key.
        block_q: queries per tile (>= 1; need not divide ``T``).
        block_k: keys per tile (>= 1; need not divide ``S``).

    Returns:
        ``output`` of shape ``(..., T, d_v)`` only. The attention weights are
        never formed as one matrix (that is the point), so unlike
        ``scaled_dot_product_attention`` no ``weights`` are returned. A query
        whose mask allows no key gets a zero output. The floating dtype of the
        inputs is kept (float32 stays float32).

    Raises:
        ValueError: if the shapes do not fit together (the message names them),
            or a block size is not a positive integer.
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_inputs(q, k, v)
    dtype = np.result_type(q, k, v, np.float32)  # ints -> float64; float32 stays float32
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))

    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    t, s, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    if mask is not None:
        mask = _check_mask(mask, batch + (t, s))
        # a read-only view, no copy: lets us slice any (Bq, Bk) block
        mask = np.broadcast_to(mask, batch + (t, s))  # (..., T, S)
    q_blocks, k_blocks = block_slices(t, block_q), block_slices(s, block_k)
    sqrt_d_k = math.sqrt(q.shape[-1])  # a Python float: keeps float32 as float32
    k_t = np.swapaxes(k, -1, -2)  # (..., S, d_k) -> (..., d_k, S), a view

    # rows that may attend to nothing keep their zeros
    output = np.zeros(batch + (t, d_v), dtype=dtype)  # (..., T, d_v)
    for rows in q_blocks:
        q_i = q[..., rows, :]  # (..., Bq, d_k)
        n = rows.stop - rows.start
        m = np.full(batch + (n, 1), -np.inf, dtype=dtype)  # running max, (..., Bq, 1)
        l = np.zeros(batch + (n, 1), dtype=dtype)  # running denominator, (..., Bq, 1)
        acc = np.zeros(batch + (n, d_v), dtype=dtype)  # un-normalised output
        for cols in k_blocks:
            # (..., Bq, d_k) @ (..., d_k, Bk) -> (..., Bq, Bk): one tile of scores
            scores = q_i @ k_t[..., :, cols] / sqrt_d_k
            if mask is not None:
                scores = np.where(mask[..., rows, cols], scores, -np.inf)
            m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # (..., Bq, 1)
            # A row with no allowed key so far has m_new = -inf; shift it by 0
            # instead (its p is then exp(-inf) = 0, and l and acc stay 0).
            shift = np.where(np.isfinite(m_new), m_new, 0.0).astype(dtype, copy=False)
            # s - shift may overflow to -inf, whose exp is the right 0
            with np.errstate(over="ignore"):
                p = np.exp(scores - shift)  # (..., Bq, Bk), entries in [0, 1]
                alpha = np.exp(m - shift)  # exp(m_old - m_new), (..., Bq, 1)
            l = alpha * l + p.sum(axis=-1, keepdims=True)  # (..., Bq, 1)
            # (..., Bq, Bk) @ (..., Bk, d_v) -> (..., Bq, d_v)
            acc = alpha * acc + p @ v[..., cols, :]
            m = m_new
        # acc / l = softmax(scores) @ v for these rows; l = 0: nothing attended to.
        # Writes into output's (..., Bq, d_v) slice.
        np.divide(acc, l, out=output[..., rows, :], where=l > 0)
    return output
