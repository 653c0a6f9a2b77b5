"""A tiny character-level language model: decoder-only, built from the book's own layers.

A decoder-only block is the encoder layer with a causal mask: masked self-attention and
the feed-forward network, each with a residual connection (pre-norm here, as in GPT-2).
There is no cross-attention, because there is no encoder. The model reads ``T``
characters and predicts, at every position ``t``, the character at ``t + 1``.

The text ships with Python: the ``pydoc_data.topics`` module, about 465,000 characters
of English documentation (no download). The last 10 % is held out for evaluation.

Shapes: token ids ``(B, T)`` in, logits ``(B, T, V)`` out, ``V`` the number of
distinct characters.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .attention import causal_mask
from .decoder import KVCache, cached_self_attention
from .encoder import TransformerEncoderLayer
from .positional import positional_encoding


def corpus() -> str:
    """The training text: every topic of ``pydoc_data.topics``, in sorted order."""
    from pydoc_data.topics import topics

    return "\n".join(topics[name] for name in sorted(topics))


class CharTokenizer:
    """One token per distinct character of ``text``, numbered in sorted order."""

    def __init__(self, text: str):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def encode(self, text: str) -> torch.Tensor:
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown!r}")
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


@dataclass
class LMConfig:
    vocab_size: int
    context: int = 64  # T, the longest input
    d_model: int = 96
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 384  # 4 * d_model
    seed: int = 0


class CharLM(nn.Module):
    """Token embedding + sinusoidal positions, ``num_layers`` causal blocks, a LayerNorm and a linear head."""

    def __init__(self, cfg: LMConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        pe = torch.from_numpy(positional_encoding(cfg.context, cfg.d_model)).float()
        self.register_buffer("pe", pe)  # (context, d_model)
        self.register_buffer("causal", torch.from_numpy(causal_mask(cfg.context)))  # (context, context)
        self.blocks = nn.ModuleList(
            TransformerEncoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, norm_first=True)
            for _ in range(cfg.num_layers)
        )
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids (B, T)`` with ``T <= context`` -> logits ``(B, T, V)``."""
        t = ids.size(1)
        if ids.dim() != 2 or not 1 <= t <= self.cfg.context:
            raise ValueError(f"ids must be (B, T) with 1 <= T <= {self.cfg.context}; got {tuple(ids.shape)}")
        x = self.embed(ids) + self.pe[:t]  # (B, T, d_model)
        mask = self.causal[:t, :t]  # (T, T): position t sees 0..t
        for block in self.blocks:
            x = block(x, mask=mask)
        return self.head(self.norm(x))  # (B, T, V)

    def step(self, ids_new: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """Logits for one new position, reusing the cached keys and values of the past.

        ``ids_new (B, 1)``; the position is ``len(cache)``. Returns ``(B, 1, V)``, equal
        to the last position of :meth:`forward` on the whole prefix.
        """
        pos = len(cache)
        if pos >= self.cfg.context:
            raise ValueError(f"the cache is full: {pos} positions, context {self.cfg.context}")
        x = self.embed(ids_new) + self.pe[pos]  # (B, 1, d_model)
        for i, block in enumerate(self.blocks):  # the pre-norm block of the encoder layer
            x = x + cached_self_attention(block.self_attn, block.norm1(x), cache, i)
            x = x + block.linear2(F.relu(block.linear1(block.norm2(x))))
        return self.head(self.norm(x))  # (B, 1, V)


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None) -> torch.Tensor:
    """The distribution the next token is drawn from: ``logits (V,)`` -> probabilities ``(V,)``.

    ``softmax(logits / temperature)``, then, if given, only the ``top_k`` likeliest tokens
    are kept, then only the smallest set of the likeliest whose probabilities add up to at
    least ``top_p`` (nucleus sampling, Holtzman et al., 2020); what is kept is scaled to
    sum to 1. Ties are broken by the lower token id (a stable sort), as the page's script does.
    """
    check_sampling(logits, temperature, top_k, top_p)
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    if top_k is None and top_p is None:
        return probs
    order = torch.sort(probs, descending=True, stable=True).indices  # likeliest first
    keep = torch.ones_like(probs, dtype=torch.bool)  # in the sorted order
    if top_k is not None:
        keep[top_k:] = False
    if top_p is not None:
        before = torch.cumsum(probs[order], dim=0) - probs[order]  # mass of the likelier tokens
        keep &= before < top_p  # the token that crosses top_p is kept
    kept = torch.zeros_like(probs)
    kept[order[keep]] = probs[order[keep]]
    return kept / kept.sum()


def check_sampling(logits, temperature, top_k, top_p):
    """Raise ``ValueError`` unless ``logits`` is ``(V,)``, ``temperature > 0``, ``top_k`` None or
    1..V and ``top_p`` None or in (0, 1]."""
    if logits.dim() != 1:
        raise ValueError(f"logits must be (V,), got {tuple(logits.shape)}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= len(logits)):
        raise ValueError(f"top_k must be an int from 1 to V={len(logits)} (or None), got {top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be a number in (0, 1] (or None), got {top_p!r}")


@torch.no_grad()
def generate(model: CharLM, prompt: torch.Tensor, num_new: int, temperature: float = 1.0,
             seed: int = 0, use_cache: bool = True, top_k: int | None = None,
             top_p: float | None = None) -> torch.Tensor:
    """Sample ``num_new`` tokens after ``prompt (T0,)``; returns ``(T0 + num_new,)``.

    Each step samples from :func:`next_token_probs`: ``softmax(logits / temperature)``,
    cut to the ``top_k`` likeliest tokens and to the nucleus ``top_p`` if given. Low
    temperatures pick the likeliest character more often, high ones flatten the
    distribution. With ``use_cache`` each step runs :meth:`CharLM.step` on the newest
    token; without it, :meth:`CharLM.forward` on the whole sequence so far. Both give
    the same tokens.
    """
    check_sampling(torch.zeros(model.cfg.vocab_size), temperature, top_k, top_p)
    if prompt.dim() != 1 or len(prompt) + num_new > model.cfg.context:
        raise ValueError(f"prompt (T0,) plus num_new must fit the context {model.cfg.context}; "
                         f"got prompt {tuple(prompt.shape)} and num_new={num_new}")
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    ids = prompt.clone()
    cache = KVCache(len(model.blocks))
    if use_cache:
        for tok in prompt[:-1]:  # fill the cache with the prompt
            model.step(tok.view(1, 1), cache)
    for _ in range(num_new):
        if use_cache:
            logits = model.step(ids[-1].view(1, 1), cache)[0, -1]
        else:
            logits = model(ids[None])[0, -1]
        probs = next_token_probs(logits, temperature, top_k, top_p)
        ids = torch.cat([ids, torch.multinomial(probs, 1, generator=gen)])
    return ids


def split(ids: torch.Tensor, held_out: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``1 - held_out`` of the text for training, the rest for evaluation."""
    cut = int(len(ids) * (1 - held_out))
    return ids[:cut], ids[cut:]


def random_windows(ids: torch.Tensor, batch_size: int, context: int, gen: torch.Generator):
    """``batch_size`` random windows: inputs ``(B, T)`` and targets shifted by one ``(B, T)``."""
    starts = torch.randint(len(ids) - context - 1, (batch_size,), generator=gen)
    x = torch.stack([ids[s : s + context] for s in starts.tolist()])
    y = torch.stack([ids[s + 1 : s + context + 1] for s in starts.tolist()])
    return x, y


@torch.no_grad()
def bits_per_character(model: CharLM, ids: torch.Tensor) -> float:
    """Mean cross-entropy in bits of predicting each character of ``ids`` from the ones before.

    The text is cut into consecutive windows of ``context + 1`` characters; every
    position of every window is predicted (early positions see a shorter past).
    """
    model.eval()
    c = model.cfg.context
    n = (len(ids) - 1) // c
    x = ids[: n * c].view(n, c)
    y = ids[1 : n * c + 1].view(n, c)
    total = 0.0
    for i in range(0, n, 256):
        logits = model(x[i : i + 256])
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), y[i : i + 256].reshape(-1), reduction="sum").item()
    return total / (n * c) / math.log(2)


def unigram_bits(train: torch.Tensor, test: torch.Tensor, vocab_size: int) -> float:
    """Bits per character of the best model that ignores context: character frequencies."""
    counts = np.bincount(train.numpy(), minlength=vocab_size) + 1.0  # add-one: no zero probability
    p = counts / counts.sum()
    return float(-np.log2(p[test.numpy()]).mean())


def train_lm(cfg: LMConfig, ids: torch.Tensor, steps: int, batch_size: int = 32, lr: float = 3e-3):
    """Train a :class:`CharLM` with AdamW on random windows of ``ids``.

    Returns ``(model, losses, seconds)``: the training loss of every step in bits per
    character, and the wall-clock time the training took.
    """
    torch.manual_seed(cfg.seed)
    model = CharLM(cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    start = time.perf_counter()
    model.train()
    for _ in range(steps):
        x, y = random_windows(ids, batch_size, cfg.context, gen)  # (B, T) each
        loss = F.cross_entropy(model(x).reshape(-1, cfg.vocab_size), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item() / math.log(2))  # nats -> bits
    model.eval()
    return model, losses, time.perf_counter() - start
