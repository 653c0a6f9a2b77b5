"""A decoder-only language model as a function of its weights, in the book's ``X @ W`` layout.

:class:`~transformer_lessons.language_model.CharLM` is the model as an ``nn.Module``; this
module writes the same model as a plain function of a dictionary of weights, the form a
learner builds it in ("Build your own model", its second step), from parts passed in: an
encoder block (:func:`~transformer_lessons.encoder_block.encoder_block`), a multi-head
attention that takes a mask, and a positional encoding.

.. math::

    h_0 = E[\\text{ids}] + PE, \\qquad h_l = \\operatorname{Block}_l(h_{l-1};\\ \\text{causal mask}),
    \\qquad \\text{logits} = \\operatorname{LN}_f(h_L)\\, W_{out} + b_{out}

The blocks are pre-norm, as in GPT-2 and :class:`CharLM`, whose output is not normalised:
hence the final LayerNorm. The weights (:func:`lm_weights` reads them from PyTorch modules):
``embedding (V, E)``, ``blocks`` a list of the encoder block's dictionaries
(:data:`~transformer_lessons.encoder_block.WEIGHT_NAMES`), ``gamma_f, beta_f (E,)``,
``W_out (E, V)`` and ``b_out (V,)``. Tying the head to the embedding is
``W_out = embedding.T`` (Press and Wolf, 2017), a choice made in the weights, not in the code.

Shapes: ``ids (B, T)`` integers in, logits ``(B, T, V)`` out.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import encoder_block as eb
from .attention import causal_mask
from .positional import positional_encoding


def language_model(ids, params, num_heads, block=eb.encoder_block, attention=eb.multi_head_attention,
                   positions=positional_encoding):
    """Logits of a decoder-only model, ``ids (B, T)`` -> ``(B, T, V)``.

    ``block(X, params, num_heads, attention, norm_first)`` is an encoder block,
    ``attention(X, W_q, W_k, W_v, W_o, num_heads, mask)`` a multi-head attention with a
    boolean mask (True = may attend), ``positions(T, E)`` a positional encoding.
    """
    T = ids.shape[1]
    E = params["embedding"].shape[1]
    mask = causal_mask(T)  # (T, T): position t sees 0..t

    def causal_attention(X, W_q, W_k, W_v, W_o, h):  # the block's attention, masked
        return attention(X, W_q, W_k, W_v, W_o, h, mask)

    embedding, pe = eb._common(params["embedding"], positions(T, E))  # NumPy, or both tensors
    x = embedding[ids] + pe  # (B, T, E) + (T, E)
    for p in params["blocks"]:
        x = block(x, p, num_heads, causal_attention, True)  # pre-norm
    x = eb.layer_norm(x, params["gamma_f"], params["beta_f"])  # the last block's output
    return x @ params["W_out"] + params["b_out"]  # (B, T, E) @ (E, V) -> (B, T, V)


def lm_weights(embedding: nn.Embedding, layers, norm: nn.LayerNorm, head: nn.Linear) -> dict:
    """The weights of a model made of PyTorch modules, in this module's layout (NumPy).

    ``layers`` are ``nn.TransformerEncoderLayer`` (their attention without biases,
    :func:`~transformer_lessons.encoder_block.zero_attention_biases`) or the book's own
    :class:`~transformer_lessons.encoder.TransformerEncoderLayer` (:func:`book_block_weights`).
    """
    def arr(t):
        return t.detach().cpu().numpy().copy()

    blocks = [eb.encoder_block_weights(layer) if isinstance(layer, nn.TransformerEncoderLayer)
              else book_block_weights(layer) for layer in layers]
    return {"embedding": arr(embedding.weight), "blocks": blocks, "gamma_f": arr(norm.weight),
            "beta_f": arr(norm.bias), "W_out": arr(head.weight.T), "b_out": arr(head.bias)}


def book_block_weights(layer) -> dict:
    """The weights of the book's :class:`~transformer_lessons.encoder.TransformerEncoderLayer`
    (its attention's biases must be zero), in the encoder block's layout."""
    attn = layer.self_attn
    projections = (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj)
    if any(p.bias is not None and bool(p.bias.detach().abs().max() > 0) for p in projections):
        raise ValueError("the attention has non-zero biases; this layout has none")

    def arr(t):
        return t.detach().cpu().numpy().copy()

    w = {name: arr(p.weight.T) for name, p in zip(("W_q", "W_k", "W_v", "W_o"), projections)}
    return {**w, "W_1": arr(layer.linear1.weight.T), "b_1": arr(layer.linear1.bias),
            "W_2": arr(layer.linear2.weight.T), "b_2": arr(layer.linear2.bias),
            "gamma_1": arr(layer.norm1.weight), "beta_1": arr(layer.norm1.bias),
            "gamma_2": arr(layer.norm2.weight), "beta_2": arr(layer.norm2.bias)}


class TorchDecoderOnly(nn.Module):
    """The same model from PyTorch's own modules: ``nn.Embedding``, sinusoidal positions,
    ``nn.TransformerEncoderLayer`` (pre-norm, no attention biases) under a causal mask,
    ``nn.LayerNorm`` and ``nn.Linear``; the reference the exercise's check compares with."""

    def __init__(self, vocab_size, d_model, num_heads, d_ff, num_layers, context, dropout=0.0,
                 dtype=torch.float64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, dtype=dtype)
        self.register_buffer("pe", torch.from_numpy(positional_encoding(context, d_model)).to(dtype))
        self.layers = nn.ModuleList(
            eb.zero_attention_biases(nn.TransformerEncoderLayer(
                d_model, num_heads, d_ff, dropout, batch_first=True, norm_first=True, dtype=dtype))
            for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, dtype=dtype)
        self.head = nn.Linear(d_model, vocab_size, dtype=dtype)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids (B, T)`` -> logits ``(B, T, V)``."""
        t = ids.size(1)
        blocked = ~torch.from_numpy(causal_mask(t))  # PyTorch's polarity: True = may not attend
        x = self.embed(ids) + self.pe[:t]  # (B, T, E)
        for layer in self.layers:
            x = layer(x, src_mask=blocked)
        return self.head(self.norm(x))  # (B, T, V)

    def weights(self) -> dict:
        """This model's weights in the layout of :func:`language_model`."""
        return lm_weights(self.embed, self.layers, self.norm, self.head)
