"""Three parts of today's decoder-only models, next to the 2017 ones: RMSNorm, SwiGLU and
grouped-query attention (the parts Llama and its successors use), in NumPy.

Weights are in the book's ``X @ W`` layout (``nn.Linear`` stores the transpose).

* :func:`rms_norm` (Zhang and Sennrich, 2019) rescales each vector by its root mean square,
  with no mean subtracted and no bias:
  ``x / sqrt(mean(x**2, last axis) + eps) * weight``.
* :func:`swiglu` (Shazeer, 2020) is the gated feed-forward block:
  ``(silu(x @ W_gate) * (x @ W_up)) @ W_down``, ``silu(z) = z * sigmoid(z)``.
* :func:`grouped_query_attention` (Ainslie et al., 2023): ``H`` query heads share
  ``H_kv`` key/value heads; key/value head ``g`` serves the query heads
  ``g * H / H_kv ... (g + 1) * H / H_kv - 1``, as in Llama (``repeat_kv``). With ``H_kv = H``
  it is multi-head attention, with ``H_kv = 1`` multi-query attention.

``tests/library/test_modern.py`` checks them against ``transformers``' ``LlamaRMSNorm`` and
``LlamaMLP`` and against PyTorch's ``F.scaled_dot_product_attention(..., enable_gqa=True)``.
"""

from __future__ import annotations

import numpy as np

from .attention import softmax


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """``x (..., E)``, ``weight (E,)`` -> ``(..., E)``: each vector divided by its root mean square, times ``weight``."""
    x, weight = np.asarray(x, dtype=np.float64), np.asarray(weight, dtype=np.float64)
    if x.ndim < 1 or weight.shape != x.shape[-1:]:
        raise ValueError(f"rms_norm needs x (..., E) and weight (E,); got x {x.shape} and weight {weight.shape}")
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * weight


def silu(z: np.ndarray) -> np.ndarray:
    """``z * sigmoid(z)`` (also called swish), written to stay finite for large ``|z|``."""
    z = np.asarray(z, dtype=np.float64)
    return z * np.exp(-np.logaddexp(0.0, -z))  # sigmoid(z) = exp(-log(1 + exp(-z)))


def swiglu(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:
    """``x (..., E)``, ``w_gate, w_up (E, F)``, ``w_down (F, E)`` -> ``(..., E)``."""
    x = np.asarray(x, dtype=np.float64)
    e = x.shape[-1]
    if w_gate.shape != w_up.shape or w_gate.shape[0] != e or w_down.shape != w_gate.shape[::-1]:
        raise ValueError(f"swiglu needs x (..., E), W_gate and W_up (E, F), W_down (F, E); got x {x.shape}, "
                         f"W_gate {w_gate.shape}, W_up {w_up.shape}, W_down {w_down.shape}")
    return (silu(x @ w_gate) * (x @ w_up)) @ w_down


def repeat_kv(kv: np.ndarray, group: int) -> np.ndarray:
    """``(B, H_kv, T, d_k)`` -> ``(B, H_kv * group, T, d_k)``: each key/value head repeated
    ``group`` times in a row (head ``g`` becomes heads ``g * group ... (g + 1) * group - 1``)."""
    return np.repeat(kv, group, axis=1)


def grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads: int, num_kv_heads: int, mask=None):
    """Grouped-query self-attention.

    ``x (B, T, E)``, ``w_q (E, E)``, ``w_k, w_v (E, H_kv * d_k)``, ``w_o (E, E)`` with
    ``d_k = E / H``; ``mask`` (T, T) or broadcastable to (B, H, T, T), True = may attend.
    Returns ``(output (B, T, E), weights (B, H, T, T))``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"grouped_query_attention needs x of shape (B, T, E); got {x.shape}")
    b, t, e = x.shape
    if e % num_heads or num_heads % num_kv_heads:
        raise ValueError(f"E = {e} must split into H = {num_heads} heads, and H into H_kv = {num_kv_heads} groups")
    d_k, group = e // num_heads, num_heads // num_kv_heads
    for name, w, cols in (("W_q", w_q, e), ("W_k", w_k, num_kv_heads * d_k), ("W_v", w_v, num_kv_heads * d_k),
                          ("W_o", w_o, e)):
        if np.shape(w) != (e, cols):
            raise ValueError(f"{name} must be (E, {cols}) = ({e}, {cols}) for H = {num_heads}, "
                             f"H_kv = {num_kv_heads}; got {np.shape(w)}")

    def heads(m, n):  # (B, T, n * d_k) -> (B, n, T, d_k)
        return m.reshape(b, t, n, d_k).transpose(0, 2, 1, 3)

    q = heads(x @ w_q, num_heads)  # (B, H, T, d_k)
    k = repeat_kv(heads(x @ w_k, num_kv_heads), group)  # (B, H_kv, T, d_k) -> (B, H, T, d_k)
    v = repeat_kv(heads(x @ w_v, num_kv_heads), group)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)  # (B, H, T, T)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, e)  # (B, H, T, d_k) -> (B, T, E)
    return out @ w_o, weights
