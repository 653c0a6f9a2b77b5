"""How strongly does the last output depend on each earlier input?

Vaswani et al. (2017, section 4, Table 1) compare layer types by the *maximum path
length* between two positions: a recurrent layer needs ``O(n)`` sequential steps
to carry a signal across ``n`` positions, a self-attention layer ``O(1)``. A short
path matters for learning because the gradient has to travel it.

:func:`input_gradient_norms` measures this directly on an untrained, seeded layer:
the size of ``d output[T-1] / d x[j]`` for every input position ``j``.
"""

from __future__ import annotations

import torch
from torch import nn

from .multihead import MultiHeadAttention


def input_gradient_norms(kind: str, seq_len: int = 30, width: int = 16, num_heads: int = 2, seed: int = 0):
    """Norm of the Jacobian of the last output with respect to each input position.

    Args:
        kind: ``"rnn"`` (``nn.RNN`` with tanh, one layer) or ``"attention"``
            (one :class:`~transformer_lessons.MultiHeadAttention` used as self-attention).
        seq_len: ``T``, the number of input positions.
        width: input and hidden/model size (the same for both kinds).
        num_heads: heads of the attention layer (ignored for the RNN).
        seed: seeds the layer's initial weights and the random input ``x (1, T, width)``.

    Returns:
        ``(T,)`` float64 tensor; entry ``j`` is the Frobenius norm of the
        ``(width, width)`` Jacobian ``d y[T-1] / d x[j]``, where ``y`` is the layer's
        output sequence (the RNN's hidden states). The distance from input ``j`` to
        the last position is ``T - 1 - j``.
    """
    if kind not in ("rnn", "attention"):
        raise ValueError(f"kind must be 'rnn' or 'attention', got {kind!r}")
    torch.manual_seed(seed)
    if kind == "rnn":
        layer = nn.RNN(width, width, batch_first=True).double()
    else:
        layer = MultiHeadAttention(width, num_heads).double()
    x = torch.randn(1, seq_len, width, dtype=torch.float64)

    def last_output(inp: torch.Tensor) -> torch.Tensor:
        y = layer(inp)[0] if kind == "rnn" else layer(inp, inp, inp)[0]  # (1, T, width)
        return y[0, -1]  # (width,)

    jac = torch.autograd.functional.jacobian(last_output, x)  # (width, 1, T, width)
    return jac[:, 0].pow(2).sum(dim=(0, 2)).sqrt()  # (T,)
