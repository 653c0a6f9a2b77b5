"""Sinusoidal positional encoding (Vaswani et al., 2017, section 3.5).

.. math::

    PE_{(pos, 2i)} = \\sin\\!\\left(pos / 10000^{2i / d_{model}}\\right), \\qquad
    PE_{(pos, 2i+1)} = \\cos\\!\\left(pos / 10000^{2i / d_{model}}\\right)

Column ``2i`` (a sine) and column ``2i + 1`` (a cosine) share one frequency, so
each pair is a point on a circle that turns at its own speed as ``pos`` grows.
With an odd ``d_model`` the last column is a sine whose cosine partner is cut off.

:func:`permutation_demo` shows why the encoding is needed: self-attention without it
is blind to order (permuting the inputs only permutes the outputs).
"""

from __future__ import annotations

import numpy as np


def _check_sizes(seq_len: int, d_model: int) -> None:
    if int(seq_len) != seq_len or seq_len < 1:
        raise ValueError(f"seq_len must be a positive integer, got {seq_len!r}")
    if int(d_model) != d_model or d_model < 1:
        raise ValueError(f"d_model must be a positive integer, got {d_model!r}")


def positional_encoding(seq_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """Sinusoidal positional encoding, all positions and columns at once.

    Args:
        seq_len: number of positions ``T`` (>= 1).
        d_model: embedding size (>= 1; odd values are allowed).
        base: the constant 10000 of the paper.

    Returns:
        ``pe`` of shape ``(seq_len, d_model)``, float64.
    """
    _check_sizes(seq_len, d_model)
    pos = np.arange(seq_len)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2)  # (ceil(d_model / 2),): 0, 2, 4, ...
    angles = pos / base ** (two_i / d_model)  # (T, ceil(d_model / 2)): one frequency per pair
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles)  # even columns 2i
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])  # odd columns 2i + 1: the same frequencies
    return pe


def positional_encoding_loop(seq_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The same encoding written as two loops, for the live demo.

    Slower (``seq_len * d_model / 2`` Python steps) but reads like the formula;
    tests check it equals :func:`positional_encoding`.
    """
    _check_sizes(seq_len, d_model)
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for col in range(0, d_model, 2):  # col = 2i
            angle = pos / base ** (col / d_model)  # one frequency for the pair
            pe[pos, col] = np.sin(angle)
            if col + 1 < d_model:
                pe[pos, col + 1] = np.cos(angle)
    return pe


def permutation_demo(x: np.ndarray, perm: np.ndarray, attend) -> tuple[np.ndarray, np.ndarray]:
    """Self-attention output of ``x`` and of ``x[perm]``, un-permuted.

    Without positional information the two are equal: permuting the inputs
    only permutes the outputs (permutation equivariance).

    Args:
        x: ``(T, d)`` token vectors; perm: a permutation of ``range(T)``;
        attend: ``x -> output`` self-attention function.

    Returns:
        ``(attend(x), attend(x[perm])[inverse(perm)])``, both ``(T, d)``.
    """
    inverse = np.argsort(perm)
    return attend(x), attend(x[perm])[inverse]
