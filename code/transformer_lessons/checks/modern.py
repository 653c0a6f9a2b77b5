"""Self-checks of today's parts (RMSNorm, SwiGLU, grouped-query attention), each followed by
its exercise's declaration (:mod:`.exercises`).

The references are :mod:`transformer_lessons.modern`, which the book's tests hold to
``transformers``' ``LlamaRMSNorm`` and ``LlamaMLP`` and to PyTorch's
``F.scaled_dot_product_attention(..., enable_gqa=True)``. The conventions (copies of the
inputs, ``Correct!``, :class:`CheckFailed`, the tolerance) are those of :mod:`.core`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import modern
from ..attention import causal_mask, softmax
from .core import CheckFailed, as_array, call_learner, diagnose, transpose_hint
from .exercises import Graded, exercise

__all__ = ["check_grouped_query_attention", "check_rms_norm", "check_swiglu"]


# ---------------------------------------------------------------- RMSNorm
def _rms_mistakes(x, w, eps) -> dict:
    ms = (x**2).mean(-1, keepdims=True)
    centred = x - x.mean(-1, keepdims=True)
    var = (centred**2).mean(-1, keepdims=True)
    return {
        "the mean is subtracted: that is LayerNorm. RMSNorm divides x itself by its root mean square, "
        "sqrt(mean(x**2) + eps), with no mean subtracted": centred / np.sqrt(var + eps) * w,
        "x is divided by its standard deviation (np.std or var subtracts the mean): divide by the root mean "
        "square, sqrt(mean(x**2, axis=-1) + eps)": x / np.sqrt(var + eps) * w,
        "the weight is missing: multiply the normalised x by weight": modern.rms_norm(x, np.ones_like(w), eps),
        "eps is added outside the square root: sqrt(mean(x**2) + eps), eps inside": x / (np.sqrt(ms) + eps) * w,
        "the square root is missing: divide by sqrt(mean(x**2) + eps)": x / (ms + eps) * w,
        "the squares are summed, not averaged: mean(x**2, axis=-1)": x / np.sqrt((x**2).sum(-1, keepdims=True) + eps) * w,
        "the mean is taken over the wrong axis: each vector (the last axis, axis=-1, keepdims=True) has its own "
        "root mean square": x / np.sqrt((x**2).mean(0, keepdims=True) + eps) * w,
    }


def check_rms_norm(fn) -> None:
    """``fn(x (..., E), weight (E,), eps=1e-6) -> (..., E)``, against :func:`transformer_lessons.modern.rms_norm`."""
    rng = np.random.default_rng(21)
    for shape, eps in (((2, 5, 8), None), ((6, 16), None), ((3, 8), 0.5)):
        x = rng.normal(size=shape) * 2 + 1.5  # a mean far from 0: LayerNorm gives other numbers
        w = rng.normal(size=shape[-1:])
        args = (x, w) if eps is None else (x, w, eps)
        got, dtype = as_array(call_learner(fn, *args, what="rms_norm"))
        e = 1e-6 if eps is None else eps
        where = f"x {shape}, weight {w.shape}" + ("" if eps is None else f", eps={eps}")
        diagnose(got, dtype, modern.rms_norm(x, w, e), _rms_mistakes(x, w, e), f"rms_norm on {where}")
    print("Correct! Each vector is divided by its root mean square and scaled by the weight.")


exercise(
    "ex-modern-rms-norm", "RMSNorm", page="modern_parts", sets=("modern",),
    items=[Graded("modern_rms_norm", "rms_norm", 2, check_rms_norm, "{exercise}: `rms_norm(x, weight, eps)`")],
)


# ---------------------------------------------------------------- SwiGLU
def _gelu(z, approximate="none"):
    import torch
    import torch.nn.functional as F

    return F.gelu(torch.from_numpy(z), approximate=approximate).numpy()


def check_swiglu(fn) -> None:
    """``fn(x (..., E), W_gate (E, F), W_up (E, F), W_down (F, E)) -> (..., E)``, against
    :func:`transformer_lessons.modern.swiglu`."""
    rng = np.random.default_rng(22)
    for shape, f in (((2, 5, 8), 12), ((4, 6), 10)):
        e = shape[-1]
        x = rng.normal(size=shape)
        w_gate, w_up, w_down = rng.normal(size=(e, f)), rng.normal(size=(e, f)), rng.normal(size=(f, e)) / 3
        gate, up = x @ w_gate, x @ w_up
        with np.errstate(all="ignore"):
            mistakes = {
                "GELU in place of SiLU: SwiGLU gates with silu(z) = z * sigmoid(z)": [
                    (_gelu(gate) * up) @ w_down, (_gelu(gate, "tanh") * up) @ w_down],
                "sigmoid in place of SiLU (that is GLU): silu(z) = z * sigmoid(z)":
                    (1 / (1 + np.exp(-gate)) * up) @ w_down,
                "ReLU in place of SiLU (that is ReGLU): silu(z) = z * sigmoid(z)": (np.maximum(gate, 0) * up) @ w_down,
                "the gate and the up projection are swapped: the activation goes on x @ W_gate, not on x @ W_up":
                    (modern.silu(up) * gate) @ w_down,
                "there is no activation: silu(x @ W_gate) * (x @ W_up)": (gate * up) @ w_down,
                "the two branches are added: SwiGLU multiplies them, silu(x @ W_gate) * (x @ W_up)":
                    (modern.silu(gate) + up) @ w_down,
                "the activation is applied after the product: silu(x @ W_gate) * (x @ W_up), then @ W_down":
                    modern.silu(gate * up) @ w_down,
            }
        got, dtype = as_array(call_learner(fn, x, w_gate, w_up, w_down, what="swiglu", hint=transpose_hint))
        diagnose(got, dtype, modern.swiglu(x, w_gate, w_up, w_down), mistakes,
                 f"swiglu on x {shape}, W_gate and W_up ({e}, {f}), W_down ({f}, {e})")
    print("Correct! silu(x @ W_gate) * (x @ W_up), then @ W_down: Llama's feed-forward block.")


exercise(
    "ex-modern-swiglu", "SwiGLU", page="modern_parts", sets=("modern",),
    items=[Graded("modern_swiglu", "swiglu", 2, check_swiglu, "{exercise}: `swiglu(x, W_gate, W_up, W_down)`")],
)


# ---------------------------------------------------------------- grouped-query attention
def _gqa(x, ws, h, h_kv, mask=None, kv="repeat", scale="d_k", fill=-np.inf):
    """Grouped-query attention, right (the defaults) or with one mistake: ``kv="tile"`` (query
    head i uses key/value head i % H_kv), ``scale`` "d_model" or "none", blocked scores ``fill``."""
    w_q, w_k, w_v, w_o = ws
    b, t, e = x.shape
    d_k, group = e // h, h // h_kv

    def heads(m, n):
        return m.reshape(b, t, n, d_k).transpose(0, 2, 1, 3)

    def expand(m):
        return np.tile(m, (1, group, 1, 1)) if kv == "tile" else modern.repeat_kv(m, group)

    q, k, v = heads(x @ w_q, h), expand(heads(x @ w_k, h_kv)), expand(heads(x @ w_v, h_kv))
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt({"d_k": d_k, "d_model": e, "none": 1}[scale])
    if mask is not None:
        scores = np.where(mask, scores, fill)
    w = softmax(scores, axis=-1)
    return (w @ v).transpose(0, 2, 1, 3).reshape(b, t, e) @ w_o, w


def _gqa_case(fn, b, t, e, h, h_kv, causal) -> None:
    rng = np.random.default_rng(23 + h * 7 + h_kv)
    d_k = e // h
    x = rng.normal(size=(b, t, e))
    ws = (rng.normal(size=(e, e)) / 4, rng.normal(size=(e, h_kv * d_k)) / 4, rng.normal(size=(e, h_kv * d_k)) / 4,
          rng.normal(size=(e, e)) / 4)
    mask = causal_mask(t) if causal else None
    expected = modern.grouped_query_attention(x, *ws, h, h_kv, mask)
    mistakes = {
        f"the key/value heads are tiled, not repeated: query head i used key/value head i % {h_kv}; in Llama "
        f"key/value head g serves the {h // h_kv} query heads g*{h // h_kv} .. (g+1)*{h // h_kv} - 1 "
        "(np.repeat(kv, group, axis=1), torch's repeat_interleave)": _gqa(x, ws, h, h_kv, mask, kv="tile"),
        f"the scores are divided by sqrt(E) = sqrt({e}); each head divides by sqrt(d_k) = sqrt({d_k}), "
        "its own width": _gqa(x, ws, h, h_kv, mask, scale="d_model"),
        "the scores are not scaled: divide by sqrt(d_k)": _gqa(x, ws, h, h_kv, mask, scale="none"),
    }
    if causal:
        mistakes["the mask is the wrong way round: True = may attend, so keep the scores where it is True"] = \
            _gqa(x, ws, h, h_kv, ~mask | np.eye(t, dtype=bool))
        mistakes["the causal mask is not applied: blocked scores get -inf before the softmax"] = \
            _gqa(x, ws, h, h_kv)
        mistakes["the blocked scores are set to 0, an ordinary score: set them to -inf"] = \
            _gqa(x, ws, h, h_kv, mask, fill=0.0)
    what = f"grouped-query attention, H={h}, H_kv={h_kv}, X (B, T, E) = {x.shape}" + (", causal" if causal else "")
    args = (x, *ws, h, h_kv) if mask is None else (x, *ws, h, h_kv, mask)
    result = call_learner(fn, *args, what="grouped_query_attention", hint=transpose_hint)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{what}: return a pair (output (B, T, E), weights (B, H, T, T))")
    out, dtype = as_array(result[0], "the output")
    w, dtype_w = as_array(result[1], "the weights")
    if w.shape == (b, h_kv, t, t) and h_kv != h:
        raise CheckFailed(f"{what}: the weights have shape {w.shape}, one matrix per key/value head; return one "
                          f"per query head, (B, H, T, T) = {expected[1].shape}")
    diagnose(out, dtype, expected[0], {m: v[0] for m, v in mistakes.items()}, f"{what}, output")
    diagnose(w, dtype_w, expected[1], {m: v[1] for m, v in mistakes.items()}, f"{what}, weights")


def check_grouped_query_attention(fn) -> None:
    """``fn(X, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, mask=None) -> (output (B, T, E),
    weights (B, H, T, T))``, ``W_k, W_v (E, H_kv * d_k)``, against
    :func:`transformer_lessons.modern.grouped_query_attention`."""
    _gqa_case(fn, b=2, t=5, e=16, h=4, h_kv=2, causal=False)
    _gqa_case(fn, b=2, t=6, e=24, h=6, h_kv=2, causal=True)
    _gqa_case(fn, b=1, t=4, e=16, h=4, h_kv=1, causal=True)  # multi-query attention
    print("Correct! Each key/value head serves its group of query heads, as in Llama.")


exercise(
    "ex-modern-gqa", "Grouped-query attention", page="modern_parts", sets=("modern",), by_hand=True,
    items=[Graded("modern_gqa", "grouped_query_attention", 4, check_grouped_query_attention,
                  "{exercise}: output and per-head weights")],
)
