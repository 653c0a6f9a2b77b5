"""The toy reversal model learns the anti-diagonal attention pattern (fast config)."""

import itertools

import numpy as np
import pytest
import torch

from transformer_lessons.toy import (
    ToyConfig,
    ToyEncoder,
    accuracy_attending_to_self_only,
    anti_diagonal_mass,
    evaluate_reversal,
    make_reversal_batch,
    mean_attention,
    order_blind_accuracy_bound,
    train_reversal,
)

FAST = ToyConfig(seq_len=8, steps=250)


@pytest.fixture(scope="module")
def trained():
    return train_reversal(FAST)


def test_batch_is_reversed():
    x, y = make_reversal_batch(4, 6, 10, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 6)
    assert torch.equal(y[:, 0], x[:, -1]) and torch.equal(y, x.flip(1))


def test_learns_the_task(trained):
    assert evaluate_reversal(trained.model) >= 0.99
    assert trained.losses[-1] < 0.1 * trained.losses[0]


def test_attention_concentrates_on_the_anti_diagonal(trained):
    weights = mean_attention(trained.model)  # (layers, H, T, T)
    t = FAST.seq_len
    mass = anti_diagonal_mass(weights[0])  # per head; uniform attention would give 1/T
    best = int(mass.argmax())
    assert mass[best] > 4 / t
    np.testing.assert_array_equal(weights[0, best].argmax(-1), np.arange(t)[::-1])


def test_training_is_deterministic():
    cfg = ToyConfig(seq_len=6, steps=20)
    a, b = train_reversal(cfg), train_reversal(cfg)
    assert a.losses == b.losses


def test_without_positional_encoding_the_task_is_not_learned():
    cfg = ToyConfig(seq_len=8, steps=250, use_positional_encoding=False)
    model = train_reversal(cfg).model
    assert evaluate_reversal(model) < 0.5  # a bag of tokens: the order is invisible


def test_anti_diagonal_mass_reference_values():
    t = 5
    assert anti_diagonal_mass(np.fliplr(np.eye(t))) == pytest.approx(1.0)
    assert anti_diagonal_mass(np.full((t, t), 1 / t)) == pytest.approx(1 / t)


def test_too_long_input_is_refused():
    model = ToyEncoder(ToyConfig(seq_len=4))
    with pytest.raises(ValueError, match="exceeds"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_forward_passes_the_mask_to_every_layer():
    torch.manual_seed(0)
    model = ToyEncoder(ToyConfig(seq_len=5, num_layers=2)).eval()
    x = torch.randint(0, 10, (3, 5))
    with torch.no_grad():
        free = model(x)
        torch.testing.assert_close(model(x, mask=torch.ones(5, 5, dtype=torch.bool)), free)
        causal = model(x, mask=torch.ones(5, 5, dtype=torch.bool).tril())
        assert model.attention_maps()[1][..., 0, 1:].abs().max() == 0  # layer 2 is masked too
    assert not torch.allclose(causal, free)


# ---------------------------------------------------------------- probes


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


def test_sequence_attention_is_the_models_maps_for_one_sequence():
    from transformer_lessons.toy import ToyConfig, ToyEncoder, sequence_attention

    torch.manual_seed(0)
    model = ToyEncoder(ToyConfig())
    tokens = torch.randint(0, model.cfg.vocab_size, (model.cfg.seq_len,))
    w = sequence_attention(model, tokens)
    with torch.no_grad():
        model(torch.stack([tokens, tokens]))
    np.testing.assert_allclose(w, np.stack([m[1].numpy() for m in model.attention_maps()]), rtol=1e-6, atol=1e-7)
    assert w.shape == (len(model.attention_maps()), model.cfg.num_heads, model.cfg.seq_len, model.cfg.seq_len)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)
