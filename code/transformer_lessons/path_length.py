"""How strongly does the last output depend on each earlier input?

Vaswani et al. (2017, section 4, Table 1) compare layer types by the *maximum path
length* between two positions: a recurrent layer needs ``O(n)`` sequential steps
to carry a signal across ``n`` positions, a self-attention layer ``O(1)``. A short
path matters for learning because the gradient has to travel it.

:func:`input_gradient_norms` measures this directly on an untrained, seeded layer:
the size of ``d output[T-1] / d x[j]`` for every input position ``j`` (the Frobenius
norm of that ``(width, width)`` Jacobian: the square root of the sum of its squared entries).
"""

from __future__ import annotations

import torch
from torch import nn

from .multihead import MultiHeadAttention


def input_gradient_norms(kind: str, seq_len: int = 30, width: int = 16, num_heads: int = 2, seed: int = 0):
    """Frobenius norm of the Jacobian ``d y[T-1] / d x[j]`` for every input position ``j``.

    ``kind``: ``"rnn"`` (one ``nn.RNN`` layer, tanh) or ``"attention"`` (one
    :class:`~transformer_lessons.multihead.MultiHeadAttention` as self-attention), both
    ``width`` wide, seeded by ``seed``, on a random ``x (1, seq_len, width)``.
    Returns a ``(seq_len,)`` float64 tensor; input ``j`` is ``seq_len - 1 - j`` steps
    from the last position.
    """
    if kind not in ("rnn", "attention"):
        raise ValueError(f"kind must be 'rnn' or 'attention', got {kind!r}")
    torch.manual_seed(seed)
    rnn = kind == "rnn"
    layer = nn.RNN(width, width, batch_first=True) if rnn else MultiHeadAttention(width, num_heads)
    layer = layer.double()
    x = torch.randn(1, seq_len, width, dtype=torch.float64)

    def last_output(inp: torch.Tensor) -> torch.Tensor:
        y = layer(inp)[0] if rnn else layer(inp, inp, inp)[0]  # (1, T, width): hidden states or outputs
        return y[0, -1]  # (width,)

    jac = torch.autograd.functional.jacobian(last_output, x)  # (width, 1, T, width)
    return jac[:, 0].pow(2).sum(dim=(0, 2)).sqrt()  # (T,)
