"""The checks of today's parts (transformer_lessons.checks.modern) accept every correct way
to write them and name the classic mistakes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lessons.checks import CheckFailed, check_grouped_query_attention, check_rms_norm, check_swiglu


def _t(*arrays):
    return [torch.as_tensor(a) for a in arrays]


# ---------------------------------------------------------------- RMSNorm
RMS_CORRECT = {
    "numpy": lambda x, w, eps=1e-6: x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * w,
    "torch F.rms_norm": lambda x, w, eps=1e-6: F.rms_norm(torch.as_tensor(x), (x.shape[-1],), torch.as_tensor(w), eps),
    "torch rsqrt float32": lambda x, w, eps=1e-6: (lambda t: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps))(
        torch.as_tensor(x, dtype=torch.float32)) * torch.as_tensor(w, dtype=torch.float32),
    "loop over vectors": lambda x, w, eps=1e-6: np.stack(
        [v / math.sqrt(sum(c * c for c in v) / len(v) + eps) * w for v in x.reshape(-1, x.shape[-1])]).reshape(x.shape),
    "in place": lambda x, w, eps=1e-6: np.multiply(np.divide(x, np.sqrt((x**2).mean(-1, keepdims=True) + eps), out=x),
                                                   w, out=x),
}
RMS_MISTAKES = {
    "that is LayerNorm": lambda x, w, eps=1e-6: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w,
    "standard deviation": lambda x, w, eps=1e-6: x / np.sqrt(x.var(-1, keepdims=True) + eps) * w,
    "weight is missing": lambda x, w, eps=1e-6: x / np.sqrt((x**2).mean(-1, keepdims=True) + eps),
    "eps is added outside": lambda x, w, eps=1e-6: x / (np.sqrt((x**2).mean(-1, keepdims=True)) + eps) * w,
    "square root is missing": lambda x, w, eps=1e-6: x / ((x**2).mean(-1, keepdims=True) + eps) * w,
    "summed, not averaged": lambda x, w, eps=1e-6: x / np.sqrt((x**2).sum(-1, keepdims=True) + eps) * w,
    "wrong axis": lambda x, w, eps=1e-6: x / np.sqrt((x**2).mean(0, keepdims=True) + eps) * w,
}


@pytest.mark.parametrize("name", RMS_CORRECT)
def test_rms_norm_accepts_correct_answers(name, capsys):
    check_rms_norm(RMS_CORRECT[name])
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize("needle", RMS_MISTAKES)
def test_rms_norm_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        check_rms_norm(RMS_MISTAKES[needle])


# ---------------------------------------------------------------- SwiGLU
def _silu(z):
    return z / (1 + np.exp(-z))


SWIGLU_CORRECT = {
    "numpy": lambda x, g, u, d: (_silu(x @ g) * (x @ u)) @ d,
    "torch F.silu": lambda x, g, u, d: (lambda x, g, u, d: (F.silu(x @ g) * (x @ u)) @ d)(*_t(x, g, u, d)),
    "torch float32": lambda x, g, u, d: (lambda x, g, u, d: (F.silu(x @ g) * (x @ u)) @ d)(
        *(t.float() for t in _t(x, g, u, d))),
    "nn.Linear layout": lambda x, g, u, d: (lambda x, g, u, d: F.linear(F.silu(F.linear(x, g.T)) * F.linear(x, u.T), d.T))(
        *_t(x, g, u, d)),
    "einsum": lambda x, g, u, d: np.einsum("...f,fe->...e", _silu(np.einsum("...e,ef->...f", x, g))
                                           * np.einsum("...e,ef->...f", x, u), d),
}
SWIGLU_MISTAKES = {
    "GELU in place of SiLU": lambda x, g, u, d: (lambda x, g, u, d: (F.gelu(x @ g) * (x @ u)) @ d)(*_t(x, g, u, d)),
    "sigmoid in place of SiLU": lambda x, g, u, d: (1 / (1 + np.exp(-(x @ g))) * (x @ u)) @ d,
    "ReLU in place of SiLU": lambda x, g, u, d: (np.maximum(x @ g, 0) * (x @ u)) @ d,
    "gate and the up projection are swapped": lambda x, g, u, d: (_silu(x @ u) * (x @ g)) @ d,
    "no activation": lambda x, g, u, d: ((x @ g) * (x @ u)) @ d,
    "branches are added": lambda x, g, u, d: (_silu(x @ g) + x @ u) @ d,
    "activation is applied after the product": lambda x, g, u, d: _silu((x @ g) * (x @ u)) @ d,
}


@pytest.mark.parametrize("name", SWIGLU_CORRECT)
def test_swiglu_accepts_correct_answers(name, capsys):
    check_swiglu(SWIGLU_CORRECT[name])
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize("needle", SWIGLU_MISTAKES)
def test_swiglu_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        check_swiglu(SWIGLU_MISTAKES[needle])


# ---------------------------------------------------------------- grouped-query attention
def gqa_numpy(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None, kv="repeat", scale=None):
    B, T, E = X.shape
    d_k = E // num_heads
    group = num_heads // num_kv_heads

    def heads(M, n):
        return M.reshape(B, T, n, d_k).transpose(0, 2, 1, 3)

    def expand(M):
        return np.tile(M, (1, group, 1, 1)) if kv == "tile" else np.repeat(M, group, axis=1)

    Q, K, V = heads(X @ W_q, num_heads), expand(heads(X @ W_k, num_kv_heads)), expand(heads(X @ W_v, num_kv_heads))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(scale or d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


def gqa_torch(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None, dtype=torch.float64):
    x, wq, wk, wv, wo = (t.to(dtype) for t in _t(X, W_q, W_k, W_v, W_o))
    B, T, E = x.shape
    d_k = E // num_heads
    q = (x @ wq).view(B, T, num_heads, d_k).transpose(1, 2)
    k, v = ((x @ w).view(B, T, num_kv_heads, d_k).transpose(1, 2).repeat_interleave(num_heads // num_kv_heads, dim=1)
            for w in (wk, wv))
    s = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    w = s.softmax(-1)
    return (w @ v).transpose(1, 2).reshape(B, T, E) @ wo, w


def gqa_loop(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
    B, T, E = X.shape
    d_k, group = E // num_heads, num_heads // num_kv_heads
    outs, weights = [], []
    for h in range(num_heads):
        g = h // group
        q = X @ W_q[:, h * d_k:(h + 1) * d_k]
        k, v = X @ W_k[:, g * d_k:(g + 1) * d_k], X @ W_v[:, g * d_k:(g + 1) * d_k]
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        outs.append(w @ v)
        weights.append(w)
    return np.concatenate(outs, axis=-1) @ W_o, np.stack(weights, axis=1)


GQA_CORRECT = {
    "numpy": gqa_numpy,
    "torch float64": gqa_torch,
    "torch float32": lambda *a, **k: gqa_torch(*a, **k, dtype=torch.float32),
    "loop over heads": gqa_loop,
}
def _gqa_with(**mistake):
    def f(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None):
        if mistake.get("inverted") and mask is not None:
            mask = ~mask | np.eye(len(mask), dtype=bool)
        if mistake.get("no_mask"):
            mask = None
        scale = X.shape[-1] if mistake.get("scale") == "E" else mistake.get("scale")
        out, w = gqa_numpy(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask, kv=mistake.get("kv", "repeat"),
                           scale=scale)
        if mistake.get("kv_weights"):
            return out, w[:, ::num_heads // num_kv_heads]
        return out if mistake.get("output_only") else (out, w)
    return f


GQA_MISTAKES = {
    "tiled, not repeated": _gqa_with(kv="tile"),
    "divided by sqrt\\(E\\)": _gqa_with(scale="E"),
    "not scaled": _gqa_with(scale=1),
    "wrong way round": _gqa_with(inverted=True),
    "causal mask is not applied": _gqa_with(no_mask=True),
    "one matrix per key/value head": _gqa_with(kv_weights=True),
    "return a pair": _gqa_with(output_only=True),
}


@pytest.mark.parametrize("name", GQA_CORRECT)
def test_gqa_accepts_correct_answers(name, capsys):
    check_grouped_query_attention(GQA_CORRECT[name])
    assert "Correct!" in capsys.readouterr().out


@pytest.mark.parametrize("needle", GQA_MISTAKES)
def test_gqa_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        check_grouped_query_attention(GQA_MISTAKES[needle])
