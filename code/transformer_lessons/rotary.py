"""Rotary position embedding, RoPE (Su et al., 2021), beside the sinusoidal encoding.

Instead of *adding* a position vector to the token embedding once, RoPE *rotates* each
query and key inside every attention layer. Features are taken in pairs
``(x[2i], x[2i+1])``; the pair is turned by the angle ``pos * theta_i`` with the same
frequencies as the sinusoidal encoding, ``theta_i = 10000^(-2i / d)``:

.. math::

    \\begin{pmatrix} x'_{2i} \\\\ x'_{2i+1} \\end{pmatrix} =
    \\begin{pmatrix} \\cos pos\\,\\theta_i & -\\sin pos\\,\\theta_i \\\\
                     \\sin pos\\,\\theta_i & \\cos pos\\,\\theta_i \\end{pmatrix}
    \\begin{pmatrix} x_{2i} \\\\ x_{2i+1} \\end{pmatrix}

Rotating a query by angle ``m theta`` and a key by ``n theta`` leaves their dot
product depending on ``m - n`` only (a rotation by ``a`` then the transpose of one by
``b`` is a rotation by ``a - b``): attention scores see *relative* positions.
"""

from __future__ import annotations

import torch


def _check_shapes(x: torch.Tensor, positions: torch.Tensor) -> None:
    if x.dim() < 2 or x.shape[-1] % 2 or positions.shape != x.shape[-2:-1]:
        raise ValueError(
            f"rope needs x of shape (..., T, d) with d even and positions of shape (T,); "
            f"got x {tuple(x.shape)} and positions {tuple(positions.shape)}"
        )


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate each feature pair of ``x`` by its position's angle.

    Args:
        x: queries or keys, ``(..., T, d)`` with ``d`` even.
        positions: ``(T,)`` positions of the ``T`` rows (integers or floats).
        base: the constant 10000 of the sinusoidal encoding.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    _check_shapes(x, positions)
    d = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)  # (d/2,) theta_i
    angles = positions.to(x.dtype)[:, None] * inv_freq[None, :]  # (T, d/2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each: the pairs
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin  # the 2-D rotation of every pair
    out[..., 1::2] = even * sin + odd * cos
    return out
