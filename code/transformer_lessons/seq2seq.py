"""A tiny encoder-decoder trained to reverse a sequence: cross-attention you can see.

The encoder reads the source ``x_0 .. x_{T-1}``; the decoder writes the target
``y_t = x_{T-1-t}`` one token at a time. During training the decoder's input is the
target shifted right by one, behind a start token (*teacher forcing*): at position ``t``
it sees ``<s>, y_0 .. y_{t-1}`` and must predict ``y_t``. The token it needs is at
source position ``T - 1 - t``, so a model that has learned the task should put its
cross-attention weight on the anti-diagonal.

Shapes: source and target ``(B, T)`` token ids, logits ``(B, T, V)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .attention import causal_mask
from .decoder import TransformerDecoderLayer
from .encoder import TransformerEncoderLayer
from .positional import positional_encoding


@dataclass
class Seq2SeqConfig:
    seq_len: int = 8
    vocab_size: int = 10  # tokens 0..9; the start token is number 10
    d_model: int = 32
    num_heads: int = 1
    d_ff: int = 64
    seed: int = 0


def reversal_batch(batch_size: int, cfg: Seq2SeqConfig, gen: torch.Generator):
    """Random sources ``(B, T)``, their reversals ``(B, T)``, and the decoder inputs ``(B, T)``."""
    src = torch.randint(cfg.vocab_size, (batch_size, cfg.seq_len), generator=gen)
    tgt = src.flip(1)
    start = torch.full((batch_size, 1), cfg.vocab_size)  # the start token <s>
    return src, tgt, torch.cat([start, tgt[:, :-1]], dim=1)  # teacher forcing: shifted right


class Seq2Seq(nn.Module):
    """One encoder layer and one decoder layer (post-norm, as in the paper)."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size + 1, cfg.d_model)  # + the start token
        self.register_buffer("pe", torch.from_numpy(positional_encoding(cfg.seq_len, cfg.d_model)).float())
        self.register_buffer("causal", torch.from_numpy(causal_mask(cfg.seq_len)))
        self.encoder = TransformerEncoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff)
        self.decoder = TransformerDecoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, dropout=0.0)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """``src (B, T)``, ``tgt_in (B, T)`` -> logits ``(B, T, V)``."""
        memory = self.encoder(self.embed(src) + self.pe)  # (B, T, d_model)
        x = self.embed(tgt_in) + self.pe
        return self.head(self.decoder(x, memory, tgt_mask=self.causal))

    @torch.no_grad()
    def greedy(self, src: torch.Tensor) -> torch.Tensor:
        """Decode ``src (B, T)`` one token at a time, feeding back each prediction."""
        b, t = src.shape
        out = torch.full((b, 1), self.cfg.vocab_size)
        for _ in range(t):
            pad = torch.zeros(b, t - out.size(1), dtype=torch.long)  # later positions: ignored (causal)
            logits = self(src, torch.cat([out, pad], 1))
            out = torch.cat([out, logits[:, out.size(1) - 1].argmax(-1, keepdim=True)], 1)
        return out[:, 1:]


def train_seq2seq(cfg: Seq2SeqConfig, steps: int = 600, batch_size: int = 64, lr: float = 3e-3):
    """Train :class:`Seq2Seq` on random reversals; returns ``(model, losses)``."""
    torch.manual_seed(cfg.seed)
    model = Seq2Seq(cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        src, tgt, tgt_in = reversal_batch(batch_size, cfg, gen)
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, cfg.vocab_size), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return model, losses
