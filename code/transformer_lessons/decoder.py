"""The Transformer decoder layer and incremental decoding with a key-value cache.

A decoder layer (Vaswani et al., 2017, section 3.1) has three sub-layers, each wrapped
in a residual connection and layer normalisation, like the encoder's two:

1. **masked self-attention**: position ``t`` attends to positions ``0..t`` only (a
   causal mask), so the layer can be trained to predict token ``t + 1`` at every
   position at once without seeing it;
2. **cross-attention**: queries from the decoder, keys and values from the encoder's
   output (the *memory*);
3. the position-wise **feed-forward** network.

Masks follow the book's convention everywhere: boolean, **True = may attend**
(``tgt_mask (T, T)``, ``memory_mask (T, S)``), and the key-padding masks say which
positions are real tokens: ``tgt_key_padding_mask (B, T)``,
``memory_key_padding_mask (B, S)``, **True = a real token** (may be attended to). PyTorch's
``nn.TransformerDecoderLayer`` uses the opposite polarity for all four.

Shapes: ``x (B, T, d_model)``, ``memory (B, S, d_model)``; output ``(B, T, d_model)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .encoder import copy_torch_weights, torch_layer_settings
from .multihead import MultiHeadAttention


def _combine(mask: torch.Tensor | None, key_padding: torch.Tensor | None) -> torch.Tensor | None:
    """One boolean mask for ``MultiHeadAttention`` from an attention mask and a key-padding mask.

    ``mask (T, S)`` and ``key_padding (B, S)`` (both True = may attend) become
    ``(B, 1, T, S)``: query ``t`` of sequence ``b`` may attend to key ``s`` when both allow it.
    """
    if key_padding is None:
        return mask
    if key_padding.dim() != 2 or key_padding.dtype != torch.bool:
        raise ValueError(
            f"a key-padding mask must be boolean (B, S), True = a real token; got dtype "
            f"{key_padding.dtype} with shape {tuple(key_padding.shape)}"
        )
    padding = key_padding[:, None, None, :]  # (B, S) -> (B, 1, 1, S)
    return padding if mask is None else padding & mask  # (B, 1, T, S)


class TransformerDecoderLayer(nn.Module):
    """Masked self-attention, cross-attention and feed-forward, each with residual and LayerNorm.

    Args:
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dim_feedforward: hidden width of the feed-forward network.
        dropout: dropout after each sub-layer and on the attention weights.
        norm_first: False = post-norm (the paper), True = pre-norm.
        layer_norm_eps: epsilon of the three LayerNorms (PyTorch's default).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first
        self.self_attention_weights: torch.Tensor | None = None  # (B, H, T, T), per head
        self.cross_attention_weights: torch.Tensor | None = None  # (B, H, T, S), per head

    def _self_block(self, x, mask):
        out, weights = self.self_attn(x, x, x, mask=mask)  # queries, keys, values: the decoder
        self.self_attention_weights = weights.detach()
        return self.dropout(out)

    def _cross_block(self, x, memory, mask):
        out, weights = self.cross_attn(x, memory, memory, mask=mask)  # keys, values: the encoder
        self.cross_attention_weights = weights.detach()
        return self.dropout(out)

    def _ff_block(self, x):
        return self.dropout(self.linear2(self.dropout(F.relu(self.linear1(x)))))

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        tgt_key_padding_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x (B, T, d_model)``, ``memory (B, S, d_model)`` -> ``(B, T, d_model)``.

        All masks boolean, True = may attend (see the module docstring).
        """
        self_mask = _combine(tgt_mask, tgt_key_padding_mask)  # (T, T) or (B, 1, T, T)
        cross_mask = _combine(memory_mask, memory_key_padding_mask)  # (T, S) or (B, 1, T, S)
        if self.norm_first:
            x = x + self._self_block(self.norm1(x), self_mask)
            x = x + self._cross_block(self.norm2(x), memory, cross_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._self_block(x, self_mask))
            x = self.norm2(x + self._cross_block(x, memory, cross_mask))
            x = self.norm3(x + self._ff_block(x))
        return x

    @classmethod
    def from_torch(cls, m: nn.TransformerDecoderLayer) -> "TransformerDecoderLayer":
        """Copy the weights of a ``nn.TransformerDecoderLayer(batch_first=True)`` (ReLU)."""
        if not isinstance(m, nn.TransformerDecoderLayer):
            raise ValueError(f"expected nn.TransformerDecoderLayer, got {type(m).__name__}")
        if m.activation is not F.relu:
            raise ValueError(f"only the ReLU activation is supported, got {m.activation!r}")
        ours = cls(**torch_layer_settings(m))
        ours.self_attn = MultiHeadAttention.from_torch(m.self_attn)
        ours.cross_attn = MultiHeadAttention.from_torch(m.multihead_attn)
        return copy_torch_weights(ours, m, ("linear1", "linear2", "norm1", "norm2", "norm3"))


class KVCache:
    """Keys and values of the positions decoded so far, one entry per layer.

    Generating token ``t + 1`` needs the keys and values of positions ``0..t``. Without
    a cache, every step recomputes them for the whole prefix; with it, a step computes
    one new key and value per layer and appends them, so its cost grows with ``t``
    (the attention over the prefix) instead of with ``t`` times the projections.
    """

    def __init__(self, num_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * num_layers  # each (B, H, t, d_k)
        self.values: list[torch.Tensor | None] = [None] * num_layers

    def __len__(self) -> int:
        k = self.keys[0]
        return 0 if k is None else k.size(2)

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add one position's ``k, v (B, H, 1, d_k)``; return all of them ``(B, H, t + 1, d_k)``."""
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def cached_self_attention(mha: MultiHeadAttention, x_new: torch.Tensor, cache: KVCache, layer: int) -> torch.Tensor:
    """Self-attention of one new position over itself and every cached one.

    ``x_new (B, 1, E)`` is the newest position. No mask is needed: the cache holds
    only the past, so the newest query sees exactly what a causal mask would allow.
    Returns ``(B, 1, E)``, equal to the last row of the full causal self-attention.
    """
    b, _, e = x_new.shape
    h, d_k = mha.num_heads, mha.head_dim

    def split(t):  # (B, 1, E) -> (B, H, 1, d_k)
        return t.view(b, 1, h, d_k).transpose(1, 2)

    q = split(mha.q_proj(x_new))
    k, v = cache.append(layer, split(mha.k_proj(x_new)), split(mha.v_proj(x_new)))  # (B, H, t+1, d_k)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (B, H, 1, t+1)
    out = (weights @ v).transpose(1, 2).reshape(b, 1, e)  # (B, H, 1, d_k) -> (B, 1, E)
    return mha.out_proj(out)
