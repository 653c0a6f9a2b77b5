"""One Transformer encoder layer (Vaswani et al., 2017, section 3.1).

Two sub-layers, each wrapped in a residual connection and layer normalisation:

.. math::

    x' = \\operatorname{LayerNorm}(x + \\operatorname{MultiHead}(x, x, x)), \\qquad
    y = \\operatorname{LayerNorm}(x' + \\operatorname{FFN}(x'))

with the position-wise feed-forward network
:math:`\\operatorname{FFN}(x) = \\max(0, x W_1 + b_1) W_2 + b_2` (equation 2).
That is the paper's *post-norm* order. ``norm_first=True`` gives the *pre-norm*
order ``x + Sublayer(LayerNorm(x))`` used by most models trained today, because
it is easier to train deep stacks with it (Xiong et al., 2020).

Shapes: ``x (B, T, d_model)`` in and out.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(nn.Module):
    """Self-attention + feed-forward, each with residual and LayerNorm.

    Args:
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dim_feedforward: hidden width of the feed-forward network (the paper: 4 * d_model).
        dropout: dropout after each sub-layer, inside the FFN and on the attention weights.
        norm_first: False = post-norm (the paper), True = pre-norm.
        activation: ``"relu"`` (the paper) or ``"gelu"``.
        layer_norm_eps: epsilon of both LayerNorms (PyTorch's default).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dim_feedforward: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)  # W_1, b_1
        self.linear2 = nn.Linear(dim_feedforward, d_model)  # W_2, b_2
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)  # inside the FFN
        self.dropout1 = nn.Dropout(dropout)  # on the attention sub-layer's output
        self.dropout2 = nn.Dropout(dropout)  # on the FFN sub-layer's output
        self.norm_first = norm_first
        self.activation = activation
        self.last_attention: torch.Tensor | None = None  # (B, H, T, T), kept for plotting

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x (B, T, d_model)`` -> ``(B, T, d_model)``; ``mask`` boolean, True = may
        attend (see :class:`~transformer_lessons.multihead.MultiHeadAttention`)."""
        if self.norm_first:  # pre-norm: x + Sublayer(LayerNorm(x))
            x = x + self._self_attention(self.norm1(x), mask)
            x = x + self._feed_forward(self.norm2(x))
        else:  # post-norm, the paper (section 3.1): LayerNorm(x + Sublayer(x))
            x = self.norm1(x + self._self_attention(x, mask))
            x = self.norm2(x + self._feed_forward(x))
        return x

    def _self_attention(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """Sub-layer 1: multi-head self-attention, (B, T, d_model) -> (B, T, d_model)."""
        out, weights = self.self_attn(x, x, x, mask=mask)
        self.last_attention = weights.detach()  # (B, H, T, T), kept for plotting
        return self.dropout1(out)  # dropout on the sub-layer's output, before the add (section 5.4)

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """Sub-layer 2: FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (equation 2), per position."""
        hidden = _ACTIVATIONS[self.activation](self.linear1(x))  # (B, T, d_ff)
        return self.dropout2(self.linear2(self.dropout(hidden)))  # (B, T, d_model)

    @classmethod
    def from_torch(cls, m: nn.TransformerEncoderLayer) -> "TransformerEncoderLayer":
        """Copy the weights of a ``nn.TransformerEncoderLayer(batch_first=True)``."""
        if not isinstance(m, nn.TransformerEncoderLayer):
            raise ValueError(f"expected nn.TransformerEncoderLayer, got {type(m).__name__}")
        names = {F.relu: "relu", F.gelu: "gelu"}
        activation = names.get(m.activation)
        if activation is None:
            raise ValueError(f"unsupported activation {m.activation!r}; use 'relu' or 'gelu'")
        if m.norm1.bias is None:
            raise ValueError("LayerNorm without bias (bias=False) is not supported")
        ours = cls(**torch_layer_settings(m), activation=activation)
        ours.self_attn = MultiHeadAttention.from_torch(m.self_attn)
        return copy_torch_weights(ours, m, ("linear1", "linear2", "norm1", "norm2"))


def torch_layer_settings(m: nn.Module) -> dict:
    """The sizes and options of a ``nn.TransformerEncoderLayer`` or ``nn.TransformerDecoderLayer``,
    as the arguments of this book's layer of the same kind (both ``from_torch``)."""
    return {
        "d_model": m.linear1.in_features,
        "num_heads": m.self_attn.num_heads,
        "dim_feedforward": m.linear1.out_features,
        "dropout": m.dropout.p,
        "norm_first": m.norm_first,
        "layer_norm_eps": m.norm1.eps,
    }


def copy_torch_weights(ours: nn.Module, m: nn.Module, names: tuple[str, ...]) -> nn.Module:
    """``ours`` in ``m``'s dtype and device, with ``m``'s weights in the sub-modules ``names``
    (linears and layer norms; the attention is copied by ``MultiHeadAttention.from_torch``)
    and ``m``'s training mode."""
    ref = m.linear1.weight
    ours = ours.to(dtype=ref.dtype, device=ref.device)
    with torch.no_grad():
        for name in names:
            getattr(ours, name).load_state_dict(getattr(m, name).state_dict())
    ours.train(m.training)
    return ours
