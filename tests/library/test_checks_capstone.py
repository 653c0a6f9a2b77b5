"""The check of "Build your own model" (transformer_lessons.checks.capstone) accepts every
correct way to write the encoder block and names the classic mistakes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lessons.checks import CheckFailed, check_encoder_block


# ---------------------------------------------------------------- correct blocks, several ways
def _ln(z, g, b, eps=1e-5):
    mean = z.mean(-1, keepdims=True)
    return (z - mean) / np.sqrt(((z - mean) ** 2).mean(-1, keepdims=True) + eps) * g + b


def numpy_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False, *, mistake=None):
    """A learner's NumPy block; ``mistake`` makes it wrong in one way (for the tests below)."""
    p = params
    rng = np.random.default_rng()

    def drop(z):
        if (training or mistake == "dropout in eval") and dropout > 0:
            return z * (rng.random(z.shape) >= dropout) / (1 - dropout)
        if mistake == "fixed dropout in eval" and dropout > 0:
            return z * (np.random.default_rng(0).random(z.shape) >= dropout) / (1 - dropout)
        return z

    def attn(z):
        return drop(attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0])

    def ffn(z):
        if mistake == "nn.Linear layout":
            return np.maximum(z @ p["W_1"].T + p["b_1"], 0) @ p["W_2"].T + p["b_2"]
        hidden = np.maximum(z @ p["W_1"] + p["b_1"], 0)
        return drop(drop(hidden) @ p["W_2"] + p["b_2"])

    def ln(i, z):
        if mistake == "torch.var":
            t = torch.as_tensor(z)
            out = (t - t.mean(-1, keepdim=True)) / torch.sqrt(t.var(-1, keepdim=True) + 1e-5)
            return out.numpy() * p[f"gamma_{i}"] + p[f"beta_{i}"]
        if mistake == "no affine":
            return _ln(z, 1.0, 0.0)
        return _ln(z, p[f"gamma_{i}"], p[f"beta_{i}"])

    pre = norm_first != (mistake == "swapped norms")
    if mistake == "no residual":
        if pre:
            X = attn(ln(1, X))
            return ffn(ln(2, X))
        X = ln(1, attn(X))
        return ln(2, ffn(X))
    if pre:
        n = ln(1, X)
        X = (n if mistake == "normed residual" else X) + attn(n)
        n = ln(2, X)
        return (n if mistake == "normed residual" else X) + ffn(n)
    X = ln(1, (0 if mistake == "no attention residual" else X) + attn(X))
    if mistake == "no W_2":  # the hidden layer, (B, T, F), added to nothing
        return np.maximum(X @ p["W_1"] + p["b_1"], 0)
    if mistake == "no W_2, residual":  # (B, T, E) + (B, T, F): a broadcast error
        return ln(2, X + np.maximum(X @ p["W_1"] + p["b_1"], 0))
    if mistake == "no ffn residual":
        return ln(2, ffn(X))
    return ln(2, X + ffn(X))


def torch_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False, dtype=torch.float32):
    """PyTorch, float32 by default: F.layer_norm, F.dropout, the attention called on tensors."""
    x = torch.as_tensor(X, dtype=dtype)
    p = {k: torch.as_tensor(v, dtype=dtype) for k, v in params.items()}
    e = x.shape[-1]

    def sa(z):
        out = attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]
        return F.dropout(torch.as_tensor(out, dtype=dtype), dropout, training)

    def ff(z):
        hidden = F.dropout(F.relu(z @ p["W_1"] + p["b_1"]), dropout, training)
        return F.dropout(hidden @ p["W_2"] + p["b_2"], dropout, training)

    def ln(i, z):
        return F.layer_norm(z, (e,), p[f"gamma_{i}"], p[f"beta_{i}"], 1e-5)

    if norm_first:
        x = x + sa(ln(1, x))
        return x + ff(ln(2, x))
    x = ln(1, x + sa(x))
    return ln(2, x + ff(x))


def einsum_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    """einsum for the matrices, a loop over positions for the LayerNorm, in place where it can."""
    p = params

    def ln(i, z):
        out = np.empty_like(z)
        for idx in np.ndindex(z.shape[:-1]):
            v = z[idx]
            out[idx] = (v - v.mean()) / np.sqrt(v.var() + 1e-5) * p[f"gamma_{i}"] + p[f"beta_{i}"]
        return out

    def ff(z):
        hidden = np.einsum("bte,ef->btf", z, p["W_1"]) + p["b_1"]
        np.maximum(hidden, 0, out=hidden)
        if training and dropout:
            hidden *= np.random.default_rng().random(hidden.shape) >= dropout
        return np.einsum("btf,fe->bte", hidden, p["W_2"]) + p["b_2"]

    def sa(z):
        return attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]

    if norm_first:
        X += sa(ln(1, X))
        X += ff(ln(2, X))
        return X
    X = ln(1, X + sa(X))
    return ln(2, X + ff(X))


def own_attention_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    """Ignores the attention handed in and uses the learner's own multi-head attention."""
    def my_mha(X, W_q, W_k, W_v, W_o, h):
        B, T, E = X.shape
        d_k = E // h
        Q, K, V = ((X @ W).reshape(B, T, h, d_k).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w

    return numpy_block(X, params, num_heads, my_mha, norm_first, dropout, training)


CORRECT = {
    "numpy": numpy_block,
    "torch float32": torch_block,
    "torch float64": lambda *a: torch_block(*a, dtype=torch.float64),
    "einsum and loops, in place": einsum_block,
    "own multi-head attention": own_attention_block,
}


@pytest.mark.parametrize("name", CORRECT)
def test_accepts_correct_blocks(name, capsys):
    check_encoder_block(CORRECT[name])
    assert "Correct!" in capsys.readouterr().out


# ---------------------------------------------------------------- the classic mistakes, named
def _wrong(mistake):
    def block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, norm_first, dropout, training, mistake=mistake)
    return block


def _ffn_wrong(kind):
    def block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        p = dict(params)
        if kind == "no relu":
            def ffn(z):
                return (z @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"]
        elif kind == "relu after":
            def ffn(z):
                return np.maximum((z @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], 0)
        elif kind == "bias after relu":
            def ffn(z):
                return (np.maximum(z @ p["W_1"], 0) + p["b_1"]) @ p["W_2"] + p["b_2"]
        else:
            def ffn(z):
                return np.maximum(z @ p["W_1"], 0) @ p["W_2"]

        def ln(i, z):
            return _ln(z, p[f"gamma_{i}"], p[f"beta_{i}"])

        def sa(z):
            return attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads)[0]

        if norm_first:
            X = X + sa(ln(1, X))
            return X + ffn(ln(2, X))
        X = ln(1, X + sa(X))
        return ln(2, X + ffn(X))
    return block


def no_dropout_ever(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
    return numpy_block(X, params, num_heads, attention, norm_first, 0.0, False)


MISTAKES = {
    "residual connections are missing": _wrong("no residual"),
    "around the attention sub-layer is missing": _wrong("no attention residual"),
    "around the feed-forward sub-layer is missing": _wrong("no ffn residual"),
    "norm is in the wrong place: you computed the pre-norm block": _wrong("swapped norms"),
    "residual adds the normalised x": _wrong("normed residual"),
    "dropout is left on in evaluation: two calls": _wrong("dropout in eval"),
    "dropout is left on in evaluation: with dropout=0.1": _wrong("fixed dropout in eval"),
    "dropout is never applied": no_dropout_ever,
    "hidden width F=20": _wrong("no W_2"),
    r"broadcast.*W_2 \(F, E\) = \(20, 12\)": _wrong("no W_2, residual"),
    r"W_1 \(E, F\) = \(12, 20\)": _wrong("nn.Linear layout"),
    "no ReLU on its hidden layer": _ffn_wrong("no relu"),
    "ReLU is applied after W_2": _ffn_wrong("relu after"),
    "b_1 is added after the ReLU": _ffn_wrong("bias after relu"),
    "biases b_1 and b_2 are missing": _ffn_wrong("no bias"),
    "unbiased variance": _wrong("torch.var"),
    "gamma and beta are not applied": _wrong("no affine"),

}


@pytest.mark.parametrize("needle", MISTAKES)
def test_names_each_mistake(needle):
    with pytest.raises(CheckFailed, match=needle):
        check_encoder_block(MISTAKES[needle])


def test_pre_norm_asked_post_norm_given_is_named():
    """The pre-norm case of a block that always computes post-norm."""
    def post_only(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, False, dropout, training)

    with pytest.raises(CheckFailed, match=r"you computed the post-norm block.*norm_first=True"):
        check_encoder_block(post_only)


def test_a_shape_error_names_the_shapes():
    def wrong_axis(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return X.reshape(X.shape[0], -1) @ params["W_1"]  # (B, T*E) @ (E, F)

    with pytest.raises(CheckFailed) as err:
        check_encoder_block(wrong_axis)
    message = str(err.value)
    assert "(2, 5, 12)" in message and "W_1: (12, 20)" in message and "Traceback" not in message


def test_a_wrong_output_shape_is_named():
    def first_position(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        return numpy_block(X, params, num_heads, attention, norm_first, dropout, training)[:, 0]

    with pytest.raises(CheckFailed, match=r"expected shape \(2, 5, 12\), got \(2, 12\)"):
        check_encoder_block(first_position)


def test_not_written_yet_is_said():
    def starter(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False):
        raise NotImplementedError("your code here")

    with pytest.raises(CheckFailed, match="not written yet"):
        check_encoder_block(starter)
