"""Probes of the toy model: attention ablation and the order-blind accuracy bound."""

import itertools

import pytest

from transformer_lessons.toy import ToyConfig, evaluate_reversal, train_reversal
from transformer_lessons.toy_probes import accuracy_attending_to_self_only, order_blind_accuracy_bound


@pytest.mark.parametrize(
    "seq_len, vocab_size, expected",
    [
        (2, 2, 1.0),  # own token + the bag determine the other token
        (2, 10, 1.0),
        # 3 other tokens from 10: all distinct 0.72 -> 1/3, one pair 0.27 -> 2/3, all equal 0.01 -> 1
        (4, 10, 0.72 / 3 + 0.27 * 2 / 3 + 0.01),
        # 3 other tokens from 2: always a pair (p=0.75) -> 2/3 or all equal (p=0.25) -> 1
        (4, 2, 0.75 * 2 / 3 + 0.25),
    ],
)
def test_order_blind_bound_exact_values(seq_len, vocab_size, expected):
    assert order_blind_accuracy_bound(seq_len, vocab_size) == pytest.approx(expected, abs=1e-12)


def test_order_blind_bound_beats_every_fixed_rule():
    """No order-blind rule (a function of own token and bag) does better: check one, 'pick the smallest other'."""
    seq_len, vocab = 4, 3
    hits = 0
    for seq in itertools.product(range(vocab), repeat=seq_len):
        for t in range(seq_len):
            others = list(seq[:t] + seq[t + 1 :])
            hits += min(others) == seq[seq_len - 1 - t]
    assert hits / (vocab**seq_len * seq_len) <= order_blind_accuracy_bound(seq_len, vocab) + 1e-12


@pytest.mark.parametrize("seq_len", [3, 0])
def test_order_blind_bound_rejects_odd_lengths(seq_len):
    with pytest.raises(ValueError):
        order_blind_accuracy_bound(seq_len, 10)


def test_self_only_attention_falls_to_chance():
    result = train_reversal(ToyConfig(seq_len=4, steps=200))
    assert evaluate_reversal(result.model) >= 0.99
    assert accuracy_attending_to_self_only(result.model) < 0.2
