"""Probes of the toy reversal model (:mod:`transformer_lessons.toy`).

* :func:`accuracy_attending_to_self_only` -- switch off attention's mixing at test
  time: every query may attend only to its own position.
* :func:`order_blind_accuracy_bound` -- the best accuracy *any* model can reach on
  reversal when it cannot tell positions apart (no positional encoding).
"""

from __future__ import annotations

import itertools
from collections import Counter

import torch

from .toy import ToyEncoder, make_reversal_batch


@torch.no_grad()
def accuracy_attending_to_self_only(model: ToyEncoder, num_sequences: int = 1000, seed: int = 12345) -> float:
    """Token accuracy of ``model`` when each query may attend only to itself.

    Runs ``model`` with the mask ``eye(T)`` (True = may attend), so no information
    moves between positions; the data are those of
    :func:`~transformer_lessons.toy.evaluate_reversal` (same seed, same sequences).
    """
    cfg = model.cfg
    gen = torch.Generator().manual_seed(seed)
    x, y = make_reversal_batch(num_sequences, cfg.seq_len, cfg.vocab_size, gen)
    model.eval()
    self_only = torch.eye(cfg.seq_len, dtype=torch.bool)  # (T, T): query t sees key t only
    pred = model(x, mask=self_only).argmax(-1)  # (B, T)
    return (pred == y).float().mean().item()


def order_blind_accuracy_bound(seq_len: int, vocab_size: int) -> float:
    """Best expected token accuracy on reversal for a model blind to order.

    Without positional information, the output at a position is a function of its own
    token and of the *multiset* of all tokens (permutation equivariance). For even
    ``seq_len`` the target sits at another position, uniformly one of the other
    ``seq_len - 1`` slots, so the best guess is the most frequent of the other tokens
    and it is right with probability ``count / (seq_len - 1)``. Computed exactly by
    enumerating all ``vocab_size ** seq_len`` sequences.

    Raises:
        ValueError: for odd ``seq_len`` (the middle token maps to itself, which this
            formula does not cover) or more than 10**6 sequences.
    """
    if seq_len < 2 or seq_len % 2:
        raise ValueError(f"seq_len must be even and >= 2, got {seq_len}")
    if vocab_size < 1 or vocab_size**seq_len > 10**6:
        raise ValueError(f"vocab_size ** seq_len must be between 1 and 10**6, got {vocab_size}**{seq_len}")
    total = 0.0
    for seq in itertools.product(range(vocab_size), repeat=seq_len):
        bag = Counter(seq)
        for token in seq:
            bag[token] -= 1  # the other tokens, as seen from this position
            total += max(bag.values()) / (seq_len - 1)
            bag[token] += 1
    return total / (vocab_size**seq_len * seq_len)
