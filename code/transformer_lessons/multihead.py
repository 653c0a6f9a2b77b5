"""Multi-head attention as a PyTorch module (Vaswani et al., 2017, section 3.2.2).

.. math::

    \\operatorname{MultiHead}(Q, K, V) = \\operatorname{Concat}(\\mathrm{head}_1, \\dots, \\mathrm{head}_H) W^O,
    \\quad \\mathrm{head}_h = \\operatorname{Attention}(Q W^Q_h, K W^K_h, V W^V_h)

Batch first: ``query (B, T, E)``, ``key``/``value (B, S, E)``; ``H`` heads of
size ``d_k = E / H``. The mask convention is the one of
:func:`torch.nn.functional.scaled_dot_product_attention`: boolean, **True = may
attend** -- the opposite of ``nn.MultiheadAttention``'s ``attn_mask``.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import scaled_dot_product_attention_torch


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V projections.

    Args:
        embed_dim: model width ``E``.
        num_heads: number of heads ``H``; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights (training only).
        bias: whether the four projections have a bias.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if num_heads < 1 or embed_dim % num_heads != 0:
            raise ValueError(
                f"embed_dim={embed_dim} must be divisible by num_heads={num_heads} "
                f"(each head gets embed_dim / num_heads features)"
            )
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # all heads' W^Q side by side
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)  # W^O

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None):
        """Attend from ``query (B, T, E)`` to ``key``/``value (B, S, E)``.

        ``mask``: optional boolean, True = may attend; ``(T, S)``, ``(B, T, S)`` or
        broadcastable to ``(B, H, T, S)``. Returns ``(output (B, T, E), weights
        (B, H, T, S))``: the weights per head (not averaged), taken before dropout.
        """
        mask = self._check_inputs(query, key, value, mask)  # None or broadcastable to (B, H, T, S)
        B, T, E = query.shape
        H, d_k = self.num_heads, self.head_dim  # E = H * d_k
        # project, then split the E features into H heads of d_k:
        # (B, T, E) -> (B, T, H, d_k) -> (B, H, T, d_k)
        q = self.q_proj(query).view(B, T, H, d_k).transpose(1, 2)  # (B, H, T, d_k)
        k = self.k_proj(key).view(B, -1, H, d_k).transpose(1, 2)  # (B, H, S, d_k)
        v = self.v_proj(value).view(B, -1, H, d_k).transpose(1, 2)  # (B, H, S, d_k)
        # attend: every head at once, each with its own weights
        p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention_torch(q, k, v, mask, p)  # (B, H, T, d_k), (B, H, T, S)
        # concatenate the heads: (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, E)
        out = out.transpose(1, 2).reshape(B, T, E)
        return self.out_proj(out), weights  # project with W^O: (B, T, E)

    def _check_inputs(self, query, key, value, mask):
        """Raise ValueError naming the shapes if the inputs do not fit; return the
        mask shaped to broadcast against ``(B, H, T, S)`` (or None)."""
        if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
            raise ValueError(
                f"query, key and value must be (B, T, E), (B, S, E), (B, S, E); got "
                f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}"
            )
        (b, t, e), s = query.shape, key.size(1)
        if e != self.embed_dim or key.size(-1) != e or value.size(-1) != e:
            raise ValueError(
                f"last dimension must be embed_dim={self.embed_dim}; got query {tuple(query.shape)}, "
                f"key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        if key.shape[:2] != value.shape[:2] or key.size(0) != b:
            raise ValueError(
                f"key and value must be (B, S, E) with the query's batch size; got query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        if mask is None:
            return None
        if mask.dtype != torch.bool:
            raise ValueError(
                f"mask must be boolean (True = may attend); got dtype {mask.dtype} with shape {tuple(mask.shape)}"
            )
        scores_shape = (b, self.num_heads, t, s)
        if mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, T, S) -> (B, 1, T, S): the same mask for every head
        try:
            fits = mask.dim() in (2, 4) and torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not fit attention scores of shape "
                f"(B, H, T, S) = {scores_shape}; use (T, S), (B, T, S) or (B, H, T, S)"
            )
        return mask

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of a ``nn.MultiheadAttention(batch_first=True)``.

        PyTorch stores W^Q, W^K, W^V stacked in one ``in_proj_weight`` of shape
        ``(3E, E)``; we split it into the three projections.
        """
        if not isinstance(m, nn.MultiheadAttention):
            raise ValueError(f"expected nn.MultiheadAttention, got {type(m).__name__}")
        if not m.batch_first:
            raise ValueError("from_torch needs nn.MultiheadAttention(batch_first=True)")
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise ValueError("kdim/vdim != embed_dim, add_bias_kv and add_zero_attn are not supported")
        bias = m.in_proj_bias is not None
        ours = cls(m.embed_dim, m.num_heads, dropout=m.dropout, bias=bias)
        ours = ours.to(dtype=m.in_proj_weight.dtype, device=m.in_proj_weight.device)
        with torch.no_grad():
            w_q, w_k, w_v = m.in_proj_weight.chunk(3, dim=0)  # (3E, E) -> 3 x (E, E)
            ours.q_proj.weight.copy_(w_q)
            ours.k_proj.weight.copy_(w_k)
            ours.v_proj.weight.copy_(w_v)
            ours.out_proj.weight.copy_(m.out_proj.weight)
            if bias:
                b_q, b_k, b_v = m.in_proj_bias.chunk(3)
                ours.q_proj.bias.copy_(b_q)
                ours.k_proj.bias.copy_(b_k)
                ours.v_proj.bias.copy_(b_v)
                ours.out_proj.bias.copy_(m.out_proj.bias)
        ours.train(m.training)
        return ours
