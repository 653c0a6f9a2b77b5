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
broadcastable to ``(..., T, S)`` with **True = may attend**; float32 stays float32.
``block_q`` and ``block_k`` are the tile sizes (>= 1; they need not divide ``T`` or ``S``).
"""

from __future__ import annotations

import math

import numpy as np

from .attention import check_attention_inputs


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
    """Attention tile by tile with an online softmax: ``(..., T, d_v)``, equal up to
    rounding to ``scaled_dot_product_attention(q, k, v, mask)[0]`` (same shapes, mask
    and dtypes) in ``O(block_q * block_k)`` extra memory instead of ``O(T * S)``. No
    weights are returned: they are never formed as one matrix. A query whose mask
    allows no key gets a zero output."""
    q, k, v, mask = _check_flash_inputs(q, k, v, mask, block_q, block_k)  # mask: a (..., T, S) view
    output = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)  # (..., T, d_v)
    for rows in block_slices(q.shape[-2], block_q):
        q_i = q[..., rows, :]  # (..., Bq, d_k)
        m = np.full(q_i.shape[:-1] + (1,), -np.inf, dtype=q.dtype)  # running max, (..., Bq, 1)
        l = np.zeros_like(m)  # running denominator sum_j exp(s_j - m), (..., Bq, 1)
        acc = np.zeros(q_i.shape[:-1] + v.shape[-1:], dtype=q.dtype)  # sum_j exp(s_j - m) v_j
        for cols in block_slices(k.shape[-2], block_k):
            scores = q_i @ np.swapaxes(k[..., cols, :], -1, -2) / math.sqrt(q.shape[-1])  # (..., Bq, Bk)
            scores = np.where(mask[..., rows, cols], scores, -np.inf)  # a blocked key scores -inf
            m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # (..., Bq, 1)
            shift = np.where(np.isfinite(m_new), m_new, 0)  # no key allowed yet: shift by 0
            p = np.exp(scores - shift)  # (..., Bq, Bk), entries in [0, 1]
            alpha = np.exp(m - shift)  # exp(m_old - m_new): rescales what was summed so far
            l = alpha * l + p.sum(axis=-1, keepdims=True)
            acc = alpha * acc + p @ v[..., cols, :]  # (..., Bq, Bk) @ (..., Bk, d_v)
            m = m_new
        output[..., rows, :] = acc / np.where(l > 0, l, 1)  # softmax(scores) @ v; l = 0: no key, 0
    return output


def _check_flash_inputs(q, k, v, mask, block_q, block_k):
    """Check shapes and block sizes; return float ``q, k, v`` broadcast to one batch
    shape and the mask as a read-only ``(..., T, S)`` view (all True when ``mask`` is
    None: a view of one value, no ``T * S`` buffer)."""
    block_slices(1, block_q), block_slices(1, block_k)  # each raises on a bad block size
    q, k, v, mask = check_attention_inputs(q, k, v, mask)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k, v = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (q, k, v))  # views, no copies
    mask = np.broadcast_to(True if mask is None else mask, batch + (q.shape[-2], k.shape[-2]))  # a view
    return q, k, v, mask
