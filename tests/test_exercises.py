"""The self-checks accept correct answers and name every classic mistake."""

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lessons import positional_encoding, positional_encoding_loop
from transformer_lessons.exercises import check_multihead_module, check_positional_encoding, check_self_attention


# ---------------------------------------------------------------- exercise 1
def _softmax(s, axis=-1, stable=True):
    if stable:
        s = s - s.max(axis=axis, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)


def correct(Q, K, V):
    return _softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V


def correct_torch(Q, K, V):
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1) @ v


MISTAKES = {
    "not scaled": lambda Q, K, V: _softmax(Q @ K.T) @ V,
    "divided by d_k": lambda Q, K, V: _softmax(Q @ K.T / Q.shape[-1]) @ V,
    "Subtract each row's maximum": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1]), stable=False) @ V,
    "wrong axis": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1]), axis=0) @ V,
    "returned the attention weights": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1])),
    "multiply K instead of V": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ K,
    "there is no softmax": lambda Q, K, V: (Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
    "raised ZeroDivisionError": lambda Q, K, V: 1 / 0,
    "returned None": lambda Q, K, V: None,
    "tuple": lambda Q, K, V: (correct(Q, K, V), None),
    "values differ": lambda Q, K, V: correct(Q, K, V) + 0.01,
}


@pytest.mark.parametrize("answer", [correct, correct_torch])
def test_self_attention_accepts_correct_answers(answer, capsys):
    check_self_attention(answer)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", MISTAKES)
def test_self_attention_names_each_mistake(needle):
    with pytest.raises(AssertionError, match=needle):
        check_self_attention(MISTAKES[needle])


# ---------------------------------------------------------------- exercise 2
class GoodMHA(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)[0]


class NotBatchFirst(GoodMHA):
    def __init__(self, embed_dim, num_heads):
        super().__init__(embed_dim, num_heads)
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)


class ReturnsTuple(GoodMHA):
    def forward(self, x):
        return self.mha(x, x, x)


class NoMHA(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.lin = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return self.lin(x)


class WrongInputs(GoodMHA):
    def forward(self, x):
        return self.mha(x, x, torch.zeros_like(x))[0]


class FixedHeads(GoodMHA):
    def __init__(self, embed_dim, num_heads):
        super().__init__(embed_dim, 8)


def test_multihead_accepts_a_correct_module(capsys):
    check_multihead_module(GoodMHA)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(
    "cls,needle",
    [(NotBatchFirst, "batch_first"), (ReturnsTuple, "tuple"), (NoMHA, "does not contain"),
     (WrongInputs, "mha\\(x, x, x\\)"), (FixedHeads, "num_heads=8")],
)
def test_multihead_names_each_mistake(cls, needle):
    with pytest.raises(AssertionError, match=needle):
        check_multihead_module(cls)


# ---------------------------------------------------------------- positional encoding
def _pe(seq_len, d_model, exponent, swap=False):
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for col in range(d_model):
            angle = pos / 10000 ** exponent(col, d_model)
            use_sin = (col % 2 == 0) != swap
            pe[pos, col] = np.sin(angle) if use_sin else np.cos(angle)
    return pe


PE_MISTAKES = {
    "swapped": lambda n, d: _pe(n, d, lambda c, d: 2 * (c // 2) / d, swap=True),
    "different frequencies": lambda n, d: _pe(n, d, lambda c, d: c / d),
    "wrong frequency exponent": lambda n, d: _pe(n, d, lambda c, d: (c // 2) / d),
    "not multiply": lambda n, d: _pe(n, d, lambda c, d: -2 * (c // 2) / d),
    "two blocks": lambda n, d: np.concatenate(
        [np.sin(np.arange(n)[:, None] / 10000 ** (2 * np.arange((d + 1) // 2) / d)),
         np.cos(np.arange(n)[:, None] / 10000 ** (2 * np.arange(d // 2) / d))], axis=1),
    "expected shape": lambda n, d: positional_encoding(n, d).T,
    "raised IndexError": lambda n, d: np.zeros(3)[5],
    "values differ": lambda n, d: positional_encoding(n, d) + 1e-3,
}


@pytest.mark.parametrize("answer", [positional_encoding, positional_encoding_loop])
def test_positional_accepts_correct_answers(answer, capsys):
    check_positional_encoding(answer)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", PE_MISTAKES)
def test_positional_names_each_mistake(needle):
    with pytest.raises(AssertionError, match=needle):
        check_positional_encoding(PE_MISTAKES[needle])
