"""The exercises page's self-checks (transformer_lessons.checks.encoder) accept every correct
form of an answer and name each classic mistake."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_lessons import MultiHeadAttention, positional_encoding, positional_encoding_loop, softmax
from transformer_lessons import checks
from transformer_lessons.checks import CheckFailed
from transformer_lessons.toy import ToyConfig, ToyEncoder


def _softmax(s, axis=-1, shift="row"):
    if shift == "row":
        s = s - s.max(axis=axis, keepdims=True)
    elif shift == "global":
        s = s - s.max()
    e = np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)


def _t(*arrays, dtype=torch.float64):
    return [torch.tensor(a, dtype=dtype) for a in arrays]


# ---------------------------------------------------------------- exercise 1: self-attention
def sa_loops(Q, K, V):
    out = np.zeros((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        s = np.array([Q[t] @ K[j] for j in range(K.shape[0])]) / math.sqrt(Q.shape[1])
        w = np.exp(s - s.max())
        out[t] = (w / w.sum()) @ V
    return out


def sa_logsumexp(Q, K, V):
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    m = s.max(-1, keepdims=True)
    return np.exp(s - m - np.log(np.exp(s - m).sum(-1, keepdims=True))) @ V


def sa_in_place(Q, K, V):
    """Correct, and works in place: scales its Q, then overwrites the scores."""
    Q /= np.sqrt(Q.shape[-1])
    s = Q @ K.T
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ V


SA_CORRECT = {
    "in place": sa_in_place,
    "float32 maths returned as float64": lambda Q, K, V: (
        lambda q, k, v: (_softmax(q @ k.T / np.float32(np.sqrt(q.shape[-1]))) @ v).astype(np.float64)
    )(*(a.astype(np.float32) for a in (Q, K, V))),
    "torch float32 returned as float64": lambda Q, K, V: F.scaled_dot_product_attention(
        *_t(Q, K, V, dtype=torch.float32)
    ).double(),
    "numpy @": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
    "np.dot": lambda Q, K, V: np.dot(_softmax(np.dot(Q, K.T) / np.sqrt(Q.shape[-1])), V),
    "einsum": lambda Q, K, V: np.einsum("ts,sd->td", _softmax(np.einsum("td,sd->ts", Q, K) / Q.shape[1] ** 0.5), V),
    "loops": sa_loops,
    "logsumexp": sa_logsumexp,
    "scale Q first": lambda Q, K, V: _softmax((Q / np.sqrt(Q.shape[-1])) @ K.T) @ V,
    "swapaxes": lambda Q, K, V: _softmax(np.matmul(Q, np.swapaxes(K, -1, -2)) / math.sqrt(Q.shape[-1])) @ V,
    "library softmax": lambda Q, K, V: softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
    "numpy float32": lambda Q, K, V: (lambda q, k, v: _softmax(q @ k.T / np.float32(np.sqrt(q.shape[-1]))) @ v)(
        *(a.astype(np.float32) for a in (Q, K, V))
    ),
    "torch float64": lambda Q, K, V: (lambda q, k, v: torch.softmax(q @ k.T / q.shape[-1] ** 0.5, -1) @ v)(
        *_t(Q, K, V)
    ),
    "torch float32": lambda Q, K, V: (lambda q, k, v: torch.softmax(q @ k.T / q.shape[-1] ** 0.5, -1) @ v)(
        *_t(Q, K, V, dtype=torch.float32)
    ),
    "torch F.sdpa float32": lambda Q, K, V: F.scaled_dot_product_attention(*_t(Q, K, V, dtype=torch.float32)),
    "torch as list": lambda Q, K, V: (_softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V).tolist(),
}

SA_MISTAKES = {
    "not scaled": lambda Q, K, V: _softmax(Q @ K.T) @ V,
    "divided by d_k": lambda Q, K, V: _softmax(Q @ K.T / Q.shape[-1]) @ V,
    "multiplied by sqrt\\(d_k\\)": lambda Q, K, V: _softmax(Q @ K.T * np.sqrt(Q.shape[-1])) @ V,
    "V is used as the keys": lambda Q, K, V: _softmax(Q @ V.T / np.sqrt(Q.shape[-1])) @ V,
    "wrong axis": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1]), axis=0) @ V,
    "returned the attention weights": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1])),
    "multiply K instead of V": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ K,
    "there is no softmax": lambda Q, K, V: (Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
    "not normalised": lambda Q, K, V: np.exp(Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
    "overflows to inf": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1]), shift="none") @ V,
    "overflows to inf ": lambda Q, K, V: (lambda q, k, v: _softmax(q @ k.T / np.float32(2.0), shift="none") @ v)(
        *(a.astype(np.float32) for a in (Q, K, V))
    )
    if Q.shape[-1] == 4
    else (lambda q, k, v: _softmax(q @ k.T / np.float32(np.sqrt(8)), shift="none") @ v)(
        *(a.astype(np.float32) for a in (Q, K, V))
    ),
    "whole score matrix": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[-1]), shift="global") @ V,
    "whole score matrix ": lambda Q, K, V: (
        lambda q, k, v: _softmax(q @ k.T / np.float32(np.sqrt(q.shape[-1])), shift="global") @ v
    )(*(a.astype(np.float32) for a in (Q, K, V))),
    "number of keys": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(K.shape[0])) @ V,
    "number of queries": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(Q.shape[0])) @ V,
    "width of the values": lambda Q, K, V: _softmax(Q @ K.T / np.sqrt(V.shape[-1])) @ V,
    "sum without an axis": lambda Q, K, V: (lambda e: e / e.sum())(np.exp(Q @ K.T / np.sqrt(Q.shape[-1]))) @ V,
    "sum without an axis ": lambda Q, K, V: (lambda s: np.exp(s - s.max(-1, keepdims=True)) / np.exp(
        s - s.max(-1, keepdims=True)
    ).sum())(Q @ K.T / np.sqrt(Q.shape[-1]))
    @ V,
    "sigmoid is not a softmax": lambda Q, K, V: (1 / (1 + np.exp(-(Q @ K.T) / np.sqrt(Q.shape[-1])))) @ V,
    "raised ZeroDivisionError": lambda Q, K, V: 1 / 0,
    "returned None": lambda Q, K, V: None,
    "tuple": lambda Q, K, V: (SA_CORRECT["numpy @"](Q, K, V), None),
    "values differ": lambda Q, K, V: SA_CORRECT["numpy @"](Q, K, V) + 0.01,
}


@pytest.mark.parametrize("name", SA_CORRECT)
def test_self_attention_accepts_correct_answers(name, capsys):
    checks.check_self_attention(SA_CORRECT[name])
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", SA_MISTAKES)
def test_self_attention_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle.strip()):
        checks.check_self_attention(SA_MISTAKES[needle])


def test_values_differ_message_prints_digits_and_dtype():
    def off(Q, K, V):
        return (SA_CORRECT["numpy @"](Q, K, V) + 1e-3).astype(np.float32)

    with pytest.raises(CheckFailed, match=r"got -?\d\.\d{6,}.*float32.*rtol=0\.0001"):
        checks.check_self_attention(off)


def test_large_case_separates_overflow_from_underflow():
    """The stability case makes both mistakes fail, in different rows, in float32 and float64."""
    from transformer_lessons.checks import self_attention_cases

    _, q, k, v = self_attention_cases()[2]
    for dt in (np.float64, np.float32):
        s = q.astype(dt) @ k.astype(dt).T / dt(math.sqrt(8))
        with np.errstate(all="ignore"):
            over = np.isnan(_softmax(s, shift="none")).any(-1)
            under = np.isnan(_softmax(s, shift="global")).any(-1)
        assert over.any() and under.any() and not np.array_equal(over, under)


# ---------------------------------------------------------------- positional encoding
def _pe(seq_len, d_model, exponent, swap=False):
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for col in range(d_model):
            angle = pos / 10000 ** exponent(col, d_model)
            use_sin = (col % 2 == 0) != swap
            pe[pos, col] = np.sin(angle) if use_sin else np.cos(angle)
    return pe


def pe_torch_recipe(seq_len, d_model, dtype=torch.float32):
    """The most common torch recipe (float32 with .float())."""
    pe = torch.zeros(seq_len, d_model, dtype=dtype)
    position = torch.arange(0, seq_len).to(dtype).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).to(dtype) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe


def pe_loop_by_two(seq_len, d_model):
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for col in range(0, d_model, 2):
            pe[pos, col] = math.sin(pos / 10000 ** (col / d_model))
            if col + 1 < d_model:
                pe[pos, col + 1] = math.cos(pos / 10000 ** (col / d_model))
    return pe


def pe_stack(seq_len, d_model):
    ang = np.arange(seq_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.stack([np.sin(ang), np.cos(ang)], axis=-1).reshape(seq_len, -1)[:, :d_model]


def pe_even_only(seq_len, d_model):
    """Right for an even d_model, crashes for an odd one: one more sine than cosine column."""
    pe = np.zeros((seq_len, d_model))
    angles = np.arange(seq_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def pe_with(seq_len, d_model, start=0, base=10000, unit=1.0):
    ang = np.arange(start, start + seq_len)[:, None] / base ** (np.arange(0, d_model, 2) / d_model) * unit
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang[:, : d_model // 2])
    return pe


PE_CORRECT = {
    "torch float32 returned as float64": lambda n, d: pe_torch_recipe(n, d).double(),
    "base written 1e4": lambda n, d: pe_with(n, d, base=1e4),
    "library": positional_encoding,
    "library loop": positional_encoding_loop,
    "torch recipe float32": pe_torch_recipe,
    "torch recipe float64": lambda n, d: pe_torch_recipe(n, d, torch.float64),
    "loop by two": pe_loop_by_two,
    "loop per column": lambda n, d: _pe(n, d, lambda c, d: 2 * (c // 2) / d),
    "stack and interleave": pe_stack,
    "numpy float32": lambda n, d: positional_encoding(n, d).astype(np.float32),
    "exp-log form": lambda n, d: np.where(
        np.arange(d) % 2 == 0,
        np.sin(np.arange(n)[:, None] * np.exp(-(np.arange(d) // 2 * 2) * np.log(1e4) / d)),
        np.cos(np.arange(n)[:, None] * np.exp(-(np.arange(d) // 2 * 2) * np.log(1e4) / d)),
    ),
    "list of lists": lambda n, d: positional_encoding(n, d).tolist(),
}

PE_MISTAKES = {
    "swapped": lambda n, d: _pe(n, d, lambda c, d: 2 * (c // 2) / d, swap=True),
    "different frequencies": lambda n, d: _pe(n, d, lambda c, d: c / d),
    "you used i/d_model": lambda n, d: _pe(n, d, lambda c, d: (c // 2) / d),
    "doubled twice": lambda n, d: _pe(n, d, lambda c, d: 2 * (2 * (c // 2)) / d),
    "not multiply": lambda n, d: _pe(n, d, lambda c, d: -2 * (c // 2) / d),
    "two blocks": lambda n, d: np.concatenate(
        [
            np.sin(np.arange(n)[:, None] / 10000 ** (2 * np.arange((d + 1) // 2) / d)),
            np.cos(np.arange(n)[:, None] / 10000 ** (2 * np.arange(d // 2) / d)),
        ],
        axis=1,
    ),
    "transposed": lambda n, d: positional_encoding(n, d).T,
    "positions are counted from 1": lambda n, d: pe_with(n, d, start=1),
    "the base 1000;": lambda n, d: pe_with(n, d, base=1000),
    "the base 100000;": lambda n, d: pe_with(n, d, base=100000),
    "degrees": lambda n, d: pe_with(n, d, unit=np.pi / 180),
    "degrees ": lambda n, d: pe_with(n, d, unit=180 / np.pi),
    "d_model=5 is odd": pe_even_only,
    "raised IndexError": lambda n, d: np.zeros(3)[5],
    "values differ": lambda n, d: positional_encoding(n, d) + 1e-3,
}


@pytest.mark.parametrize("name", PE_CORRECT)
def test_positional_accepts_correct_answers(name, capsys):
    checks.check_positional_encoding(PE_CORRECT[name])
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", PE_MISTAKES)
def test_positional_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=re.escape(needle.strip())):
        checks.check_positional_encoding(PE_MISTAKES[needle])


def test_odd_width_crash_is_explained_without_the_transpose_hint():
    with pytest.raises(CheckFailed) as err:
        checks.check_positional_encoding(pe_even_only)
    message = str(err.value)
    assert "could not broadcast" in message and "d_model // 2 = 2 cosine columns" in message
    assert "K.T" not in message


# ---------------------------------------------------------------- exercise 2: multi-head from scratch
def _sdpa(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax(s)
    return w @ v, w


def mh_numpy(
    X, W_q, W_k, W_v, W_o, num_heads, mask=None, split=None, merge=None, scale=None, w_out=True, fill=-np.inf
):
    B, T, E = X.shape
    d_k = E // num_heads

    def heads(M):
        return split(M, B, T, num_heads, d_k) if split else M.reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3)

    Q, K, V = heads(X @ W_q), heads(X @ W_k), heads(X @ W_v)
    s = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(scale or d_k)
    if mask is not None:
        s = np.where(mask, s, fill)
    w = _softmax(s)
    o = w @ V
    o = merge(o, B, T, E) if merge else o.transpose(0, 2, 1, 3).reshape(B, T, E)
    return (o @ W_o if w_out else o), w


def mh_zero_rows(X, W_q, W_k, W_v, W_o, num_heads, mask):
    """Masked multi-head attention with a softmax that gives a row with no key zero weights."""
    B, T, E = X.shape
    Q, K, V = ((X @ W).reshape(B, T, num_heads, -1).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
    w = softmax(np.where(mask, Q @ np.swapaxes(K, -1, -2) / np.sqrt(E // num_heads), -np.inf))
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


def mh_mask_after_softmax(X, W_q, W_k, W_v, W_o, num_heads, mask):
    B, T, E = X.shape
    Q, K, V = ((X @ W).reshape(B, T, num_heads, -1).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
    w = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(E // num_heads)) * mask  # rows no longer sum to 1
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


def mh_loop_heads(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    d_k = X.shape[-1] // num_heads
    outs, ws = [], []
    for h in range(num_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        o, w = _sdpa(X @ W_q[:, cols], X @ W_k[:, cols], X @ W_v[:, cols], mask)
        outs.append(o)
        ws.append(w)
    return np.concatenate(outs, axis=-1) @ W_o, np.stack(ws, axis=1)


def mh_loop_batch(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    outs, ws = zip(*(mh_numpy(X[b : b + 1], W_q, W_k, W_v, W_o, num_heads, mask) for b in range(X.shape[0])))
    return np.concatenate(outs), np.concatenate(ws)


def mh_einsum(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    B, T, E = X.shape
    d_k = E // num_heads
    Q, K, V = (np.einsum("bte,ef->btf", X, W).reshape(B, T, num_heads, d_k) for W in (W_q, W_k, W_v))
    s = np.einsum("bthd,bshd->bhts", Q, K) / math.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax(s)
    o = np.einsum("bhts,bshd->bthd", w, V).reshape(B, T, E)
    return o @ W_o, w


def mh_torch(dtype):
    def impl(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
        x, wq, wk, wv, wo = _t(X, W_q, W_k, W_v, W_o, dtype=dtype)
        B, T, E = x.shape
        q, k, v = ((x @ w).view(B, T, num_heads, -1).transpose(1, 2) for w in (wq, wk, wv))
        s = q @ k.transpose(-2, -1) / math.sqrt(E // num_heads)
        if mask is not None:
            s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
        w = s.softmax(-1)
        return (w @ v).transpose(1, 2).reshape(B, T, E) @ wo, w

    return impl


def mh_torch_sdpa(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x, wq, wk, wv, wo = _t(X, W_q, W_k, W_v, W_o)
    B, T, E = x.shape
    q, k, v = ((x @ w).view(B, T, num_heads, -1).transpose(1, 2) for w in (wq, wk, wv))
    m = None if mask is None else torch.as_tensor(mask)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    w = torch.softmax(
        (q @ k.transpose(-2, -1) / math.sqrt(E // num_heads)).masked_fill(
            ~m if m is not None else torch.zeros(1, dtype=torch.bool), float("-inf")
        ),
        -1,
    )
    return out.transpose(1, 2).reshape(B, T, E) @ wo, w


def mh_library(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    E = X.shape[-1]
    m = MultiHeadAttention(E, num_heads, bias=False).double()
    with torch.no_grad():
        for lin, W in zip((m.q_proj, m.k_proj, m.v_proj, m.out_proj), (W_q, W_k, W_v, W_o)):
            lin.weight.copy_(torch.from_numpy(W.T))
        x = torch.from_numpy(X)
        return m(x, x, x, None if mask is None else torch.from_numpy(mask))


class MHModule(nn.Module):
    """A from-scratch module in torch (the other accepted form)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(embed_dim, embed_dim) for _ in range(4))

    def forward(self, x, mask=None):
        B, T, E = x.shape
        q, k, v = (p(x).view(B, T, self.h, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        s = q @ k.transpose(-2, -1) / math.sqrt(E // self.h)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        w = s.softmax(-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, E)), w


class MHModuleQKV(MHModule):
    def forward(self, query, key, value, mask=None):
        return super().forward(query, mask)


def mh_in_place(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """Correct, and works in place: folds the scale into its W_q, then scales nothing."""
    W_q /= np.sqrt(X.shape[-1] // num_heads)
    return mh_numpy(X, W_q, W_k, W_v, W_o, num_heads, mask=mask, scale=1)


def mh_f_linear(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    """What people who know nn.Linear write: F.linear(x, W) computes x @ W.T."""
    x, wq, wk, wv, wo = _t(X, W_q, W_k, W_v, W_o)
    B, T, E = x.shape
    q, k, v = (F.linear(x, w).view(B, T, num_heads, -1).transpose(1, 2) for w in (wq, wk, wv))
    m = None if mask is None else torch.as_tensor(mask)
    w = torch.softmax(
        (q @ k.transpose(-2, -1) / math.sqrt(E // num_heads)).masked_fill(
            ~m if m is not None else torch.zeros(1, dtype=torch.bool), float("-inf")
        ),
        -1,
    )
    return F.linear((w @ v).transpose(1, 2).reshape(B, T, E), wo), w


def mh_softmax_over_queries(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    B, T, E = X.shape
    d_k = E // num_heads
    Q, K, V = ((X @ W).reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = _softmax(s, axis=-2)
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


def _mh_softmax_axis(X, W_q, W_k, W_v, W_o, num_heads, axis):
    B, T, E = X.shape
    d_k = E // num_heads
    Q, K, V = ((X @ W).reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
    w = _softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k), axis=axis)
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


MH_CORRECT = {
    "in place": mh_in_place,
    "torch float32 returned as float64": lambda *a, mask=None: tuple(
        r.double() for r in mh_torch(torch.float32)(*a, mask=mask)
    ),
    "numpy": mh_numpy,
    "loop over heads": mh_loop_heads,
    "loop over batch": mh_loop_batch,
    "einsum": mh_einsum,
    "torch float64": mh_torch(torch.float64),
    "torch float32": mh_torch(torch.float32),
    "torch F.sdpa": mh_torch_sdpa,
    "library module": mh_library,
    "module forward(x)": MHModule,
    "module forward(q, k, v)": MHModuleQKV,
    "numpy float32": lambda X, *W, mask=None: tuple(a.astype(np.float32) for a in mh_numpy(X, *W, mask=mask)),
}

MH_MISTAKES = {
    "reshape to \\(B, H, T, d_k\\) but no transpose": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, split=lambda M, B, T, H, d: M.reshape(B, H, T, d), merge=lambda o, B, T, E: o.reshape(B, T, E)
    ),
    "split with a reshape but no transpose": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, split=lambda M, B, T, H, d: M.reshape(B, H, T, d)
    ),
    "merged with a reshape but no transpose": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, merge=lambda o, B, T, E: o.reshape(B, T, E)
    ),
    "concatenated along the wrong axis": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, merge=lambda o, B, T, E: np.stack(list(o.transpose(1, 0, 2, 3)), axis=-1).reshape(B, T, E)
    ),
    "split as \\(B, T, d_k, H\\)": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, split=lambda M, B, T, H, d: M.reshape(B, T, d, H).transpose(0, 3, 1, 2),
        merge=lambda o, B, T, E: o.transpose(0, 2, 3, 1).reshape(B, T, E)
    ),
    "W\\^O is missing": lambda X, *W, mask=None: mh_numpy(X, *W, mask=mask, w_out=False),
    "sqrt\\(d_model\\)": lambda X, *W, mask=None: mh_numpy(X, *W, mask=mask, scale=X.shape[-1]),
    "not scaled": lambda X, *W, mask=None: mh_numpy(X, *W, mask=mask, scale=1),
    "averaged the heads' outputs": lambda X, *W, mask=None: mh_numpy(
        X, *W, mask=mask, w_out=False, merge=lambda o, B, T, E: o.mean(1)
    ),
    "attention ran across the batch axis": lambda X, *W, mask=None: (lambda o, w: (o.swapaxes(0, 1), w))(
        *mh_numpy(X.swapaxes(0, 1), *W, mask=mask)
    ),
    "one long sequence": lambda X, *W, mask=None: (
        mh_numpy(X.reshape(1, -1, X.shape[-1]), *W)[0].reshape(X.shape),
        mh_numpy(X, *W)[1],
    ),
    "weights are averaged over the heads": lambda X, *W, mask=None: (lambda o, w: (o, w.mean(1)))(
        *mh_numpy(X, *W, mask=mask)
    ),
    "W_o is applied transposed": lambda X, Wq, Wk, Wv, Wo, h, mask=None: mh_numpy(X, Wq, Wk, Wv, Wo.T, h, mask=mask),
    "projections are applied transposed": mh_f_linear,
    "you normalised over the queries": mh_softmax_over_queries,
    "normalises over the heads": lambda X, Wq, Wk, Wv, Wo, h, mask=None: _mh_softmax_axis(X, Wq, Wk, Wv, Wo, h, 1),
    "return a pair": lambda X, *W, mask=None: mh_numpy(X, *W, mask=mask)[0],
    "raised ValueError": lambda X, *W, mask=None: np.zeros(3).reshape(2, 2),
    "weights: values differ": lambda X, *W, mask=None: (
        mh_numpy(X, *W, mask=mask)[0],
        mh_numpy(X, *W, mask=mask)[1] * 0.5,
    ),
}


@pytest.mark.parametrize("name", MH_CORRECT)
def test_multihead_accepts_correct_answers(name, capsys):
    checks.check_multihead_attention(MH_CORRECT[name])
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", MH_MISTAKES)
def test_multihead_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        checks.check_multihead_attention(MH_MISTAKES[needle])


def test_module_without_projections_is_named():
    class NoProj(nn.Module):
        def __init__(self, e, h):
            super().__init__()

    with pytest.raises(CheckFailed, match="q_proj"):
        checks.check_multihead_attention(NoProj)


# ---------------------------------------------------------------- the instructor's assignment: causal multi-head
CAUSAL_MISTAKES = {
    "wrong way round": lambda X, *W, mask: mh_numpy(X, *W, mask=~mask | np.eye(mask.shape[0], dtype=bool)),
    "no key left": lambda X, *W, mask: mh_numpy(X, *W, mask=~mask),
    "no key left ": lambda X, *W, mask: mh_zero_rows(X, *W, mask=~mask),
    "no key left  ": lambda X, *W, mask: mh_numpy(X, *W, mask=~mask, fill=-1e9),
    "applied after the softmax": lambda X, *W, mask: mh_mask_after_softmax(X, *W, mask=mask),
    "you normalised over the queries": lambda X, *W, mask: mh_softmax_over_queries(X, *W, mask=mask),
    "mask is not applied": lambda X, *W, mask: mh_numpy(X, *W),
    "blocked scores are set to 0": lambda X, *W, mask: mh_numpy(X, *W, mask=mask, fill=0.0),
    "W\\^O is missing": lambda X, *W, mask: mh_numpy(X, *W, mask=mask, w_out=False),
    "merged with a reshape": lambda X, *W, mask: mh_numpy(
        X, *W, mask=mask, merge=lambda o, B, T, E: o.reshape(B, T, E)
    ),
}


@pytest.mark.parametrize("name", MH_CORRECT)
def test_causal_multihead_accepts_correct_answers(name, capsys):
    impl = MH_CORRECT[name]
    if isinstance(impl, type):
        checks.check_causal_multihead_attention(impl)
    else:
        checks.check_causal_multihead_attention(lambda X, wq, wk, wv, wo, h, mask: impl(X, wq, wk, wv, wo, h, mask=mask))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("needle", CAUSAL_MISTAKES)
def test_causal_multihead_names_each_mistake(needle):
    wrong = CAUSAL_MISTAKES[needle]
    with pytest.raises(CheckFailed, match=needle.strip()):
        checks.check_causal_multihead_attention(lambda X, wq, wk, wv, wo, h, mask: wrong(X, wq, wk, wv, wo, h, mask=mask))


# ---------------------------------------------------------------- the warm-up: wrapping nn.MultiheadAttention
class GoodMHA(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)[0]


class SeqFirstTransposed(nn.Module):
    """Correct: keeps batch_first=False and transposes x itself."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)

    def forward(self, x):
        x = x.transpose(0, 1)
        return self.mha(x, x, x)[0].transpose(0, 1)


class NeedWeightsFalse(GoodMHA):
    def forward(self, x):
        out, _ = self.mha(query=x, key=x, value=x, need_weights=False)
        return out


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


class KeywordArguments(GoodMHA):
    def forward(self, x):
        return self.mha(query=x, key=x, value=x)[0]


class PerHeadWeights(GoodMHA):
    def forward(self, x):
        out, _ = self.mha(x, x, x, need_weights=True, average_attn_weights=False)
        return out


class Contiguous(GoodMHA):
    def forward(self, x):
        return self.mha(x, x, x)[0].contiguous()


class InModuleList(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.layers = nn.ModuleList([nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)])

    def forward(self, x):
        return self.layers[0](x, x, x)[0]


class Subclass(nn.MultiheadAttention):
    def __init__(self, embed_dim, num_heads):
        super().__init__(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return super().forward(x, x, x)[0]


class Permuted(SeqFirstTransposed):
    def forward(self, x):
        x = x.permute(1, 0, 2)
        return self.mha(x, x, x, need_weights=False)[0].permute(1, 0, 2)


class ExplicitDropoutZero(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, batch_first=True)

    def forward(self, x):
        attn_output, attn_weights = self.attn(x, x, x)
        return attn_output


class WithoutBias(nn.Module):
    """Correct: PyTorch's module without biases (the reference is built like the learner's)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, bias=False, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class KeyValueBias(WithoutBias):
    """Correct: with add_bias_kv (a learned extra key and value)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__(embed_dim, num_heads)
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, add_bias_kv=True, batch_first=True)


class NumpyOut(GoodMHA):
    def forward(self, x):
        return self.mha(x, x, x)[0].detach()


@pytest.mark.parametrize(
    "cls",
    [
        GoodMHA,
        SeqFirstTransposed,
        NeedWeightsFalse,
        KeywordArguments,
        PerHeadWeights,
        Contiguous,
        InModuleList,
        Subclass,
        Permuted,
        ExplicitDropoutZero,
        NumpyOut,
        WithoutBias,
        KeyValueBias,
    ],
)
def test_multihead_module_accepts_correct_modules(cls, capsys):
    checks.check_multihead_module(cls)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize(
    "cls,needle",
    [
        (NotBatchFirst, "batch_first"),
        (ReturnsTuple, "tuple"),
        (NoMHA, "does not contain"),
        (WrongInputs, "values differ"),
        (FixedHeads, "num_heads=8"),
    ],
)
def test_multihead_module_names_each_mistake(cls, needle):
    with pytest.raises(CheckFailed, match=needle):
        checks.check_multihead_module(cls)


# ---------------------------------------------------------------- exercise 4: the toy model's weights
@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ToyEncoder(ToyConfig()).eval()  # untrained is enough: the check compares with the model itself


def weights(model, tokens):
    model(tokens[None])  # (1, T)
    return model.attention_maps()[0][0]  # (H, T, T)


AW_CORRECT = {
    "tensor": weights,
    "numpy": lambda m, t: weights(m, t).numpy(),
    "float64": lambda m, t: weights(m, t).double(),
    "batch of one, squeezed": lambda m, t: (m(t.unsqueeze(0)), m.attention_maps()[0].squeeze(0))[1],
    "list": lambda m, t: weights(m, t).tolist(),
    "detach": lambda m, t: weights(m, t).detach(),
    "the layer's attribute": lambda m, t: (m(t[None]), m.layers[0].last_attention[0])[1],
    "last layer": lambda m, t: (m(t[None]), m.attention_maps()[-1][0])[1],
    "stacked layers": lambda m, t: (m(t[None]), torch.stack([w[0] for w in m.attention_maps()])[0])[1],
    "float32 numpy copy": lambda m, t: np.array(weights(m, t).numpy(), dtype=np.float32, copy=True),
    "clone": lambda m, t: weights(m, t).clone(),
}

AW_MISTAKES = {
    "returned None": lambda m, t: None,
    "takes a batch": lambda m, t: m(t),
    "batch dimension": lambda m, t: (m(t[None]), m.attention_maps()[0])[1],
    "averaged": lambda m, t: weights(m, t).mean(0),
    "swapped": lambda m, t: weights(m, t).transpose(-1, -2),
    "do not sum to 1": lambda m, t: weights(m, t) * 2,
    "tuple": lambda m, t: (weights(m, t), None),
    "one matrix": lambda m, t: weights(m, t)[0],
    "expected shape": lambda m, t: weights(m, t)[:, :5],
    "values differ": lambda m, t: weights(m, t.flip(0)),
}


def test_every_table_has_ten_correct_variants():
    for table in (SA_CORRECT, PE_CORRECT, MH_CORRECT, AW_CORRECT):
        assert len(table) >= 10


@pytest.mark.parametrize("name", AW_CORRECT)
def test_attention_weights_accepts_correct_answers(model, name, capsys):
    checks.check_attention_weights(AW_CORRECT[name], model)
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize("needle", AW_MISTAKES)
def test_attention_weights_names_each_mistake(model, needle):
    with pytest.raises(CheckFailed, match=needle):
        checks.check_attention_weights(AW_MISTAKES[needle], model)
