"""Self-checks of "Build your own model", each followed by its exercise's declaration
(:mod:`.exercises`). Its first step: the encoder block, post-norm and pre-norm.

**The signature, and why.** The learner writes::

    encoder_block(X, params, num_heads, attention, norm_first=False, dropout=0.0, training=False)

with ``X (B, T, E)``, ``params`` a dictionary of the block's weights in the book's ``X @ W``
layout (:data:`transformer_lessons.encoder_block.WEIGHT_NAMES`: ``W_q, W_k, W_v, W_o (E, E)``,
``W_1 (E, F)``, ``b_1 (F,)``, ``W_2 (F, E)``, ``b_2 (E,)``, ``gamma_i, beta_i (E,)``), and
``attention`` a multi-head attention with the signature of the multi-head exercise,
``attention(X, W_q, W_k, W_v, W_o, num_heads) -> (out, weights)``. The attention is an
argument, not a name the block looks up: a learner passes the function they wrote for that
exercise, and the check passes the book's (:func:`transformer_lessons.encoder_block.multi_head_attention`,
which takes NumPy arrays or tensors), so that the block is checked alone and a mistake in the
attention is never blamed on the block; it is a module-level function, so the grader can
send it to a sandboxed submission. The attention has no biases, as in that exercise: the
oracle's are set to zero. A dictionary, not twelve arguments: the call stays one line, and
the names say which matrix is which. ``dropout`` and ``training`` make the learner decide
where dropout acts; the check runs the block twice in evaluation to see that it does not.

**The oracle** is ``torch.nn.TransformerEncoderLayer`` (batch first, ReLU, evaluation mode,
both ``norm_first``), its LayerNorm weights made other than ones and zeros so that a missing
gamma or beta shows, its weights copied into the learner's layout
(:func:`~transformer_lessons.encoder_block.encoder_block_weights`). The mistakes are computed
by :func:`_block` with one thing changed; the conventions (copies of the inputs, ``Correct!``,
:class:`CheckFailed`, the tolerance) are those of :mod:`.core`.
"""

from __future__ import annotations

import numpy as np

from .. import encoder_block as eb
from .core import CheckFailed, as_array, call_learner, close, diagnose
from .exercises import Graded, exercise

__all__ = ["check_encoder_block"]


def _layer_norm(z, gamma, beta, eps=1e-5, kind="right"):
    mean = z.mean(-1, keepdims=True)
    var = z.var(-1, keepdims=True, ddof=1 if kind == "unbiased" else 0)
    if kind == "no affine":
        return (z - mean) / np.sqrt(var + eps)
    return (z - mean) / np.sqrt(var + eps) * gamma + beta


def _block(x, p, h, norm_first, *, residual=("attn", "ffn"), normed_residual=False, ffn="right", ln="right"):
    """The encoder block in NumPy, right (the defaults) or with one mistake: a sub-layer
    without its ``residual``, the pre-norm residual taken from the normalised x, the
    feed-forward network or the LayerNorm written another way (see the messages below)."""
    def attend(z):
        return eb.multi_head_attention(z, p["W_q"], p["W_k"], p["W_v"], p["W_o"], h)[0]

    def feed_forward(z):
        hidden = z @ p["W_1"] + p["b_1"]  # (B, T, F)
        if ffn == "no relu":
            return hidden @ p["W_2"] + p["b_2"]
        if ffn == "relu after":
            return np.maximum(hidden @ p["W_2"] + p["b_2"], 0)
        if ffn == "bias after relu":
            return (np.maximum(z @ p["W_1"], 0) + p["b_1"]) @ p["W_2"] + p["b_2"]
        if ffn == "no bias":
            return np.maximum(z @ p["W_1"], 0) @ p["W_2"]
        return np.maximum(hidden, 0) @ p["W_2"] + p["b_2"]

    def norm(i, z):
        return _layer_norm(z, p[f"gamma_{i}"], p[f"beta_{i}"], kind=ln)

    keep_attn, keep_ffn = ("attn" in residual), ("ffn" in residual)
    if norm_first:
        n = norm(1, x)
        x = (n if normed_residual else x) * keep_attn + attend(n)
        n = norm(2, x)
        return (n if normed_residual else x) * keep_ffn + feed_forward(n)
    x = norm(1, x * keep_attn + attend(x))
    return norm(2, x * keep_ffn + feed_forward(x))


def _mistakes(x, p, h, norm_first) -> dict:
    def b(**mistake):
        return _block(x, p, h, norm_first, **mistake)

    asked, other = ("pre-norm", "post-norm") if norm_first else ("post-norm", "pre-norm")
    forms = {"pre-norm": "x + Sublayer(LayerNorm(x))", "post-norm": "LayerNorm(x + Sublayer(x))"}
    mistakes = {
        f"the norm is in the wrong place: you computed the {other} block, {forms[other]}; with "
        f"norm_first={norm_first} the block is {asked}, {forms[asked]}": _block(x, p, h, not norm_first),
        "the residual connections are missing: each sub-layer's input is added to its output, "
        "x + Sublayer(...)": b(residual=()),
        "the residual connection around the attention sub-layer is missing: add the attention's "
        "input to its output": b(residual=("ffn",)),
        "the residual connection around the feed-forward sub-layer is missing: add the "
        "feed-forward network's input to its output": b(residual=("attn",)),
        "the feed-forward network has no ReLU on its hidden layer: max(0, x W_1 + b_1) W_2 + b_2":
            b(ffn="no relu"),
        "the ReLU is applied after W_2: it belongs on the hidden layer, max(0, x W_1 + b_1), "
        "before W_2": b(ffn="relu after"),
        "b_1 is added after the ReLU: the hidden layer is max(0, x W_1 + b_1)": b(ffn="bias after relu"),
        "the feed-forward biases b_1 and b_2 are missing: max(0, x W_1 + b_1) W_2 + b_2": b(ffn="no bias"),
        "LayerNorm divides by the unbiased variance (torch.var's default, np.var with ddof=1); "
        "nn.LayerNorm uses the biased one (unbiased=False, ddof=0)": b(ln="unbiased"),
        "LayerNorm's gamma and beta are not applied: normalise, then * gamma + beta": b(ln="no affine"),
    }
    if norm_first:
        mistakes["the residual adds the normalised x: in pre-norm the residual path carries x itself, "
                 "x + Sublayer(LayerNorm(x)); only the sub-layer sees LayerNorm(x)"] = b(normed_residual=True)
    return mistakes


def _shape_hint(x, p):
    e, f = p["W_1"].shape

    def hint(exc, args) -> str:
        return (f"; X (B, T, E) = {tuple(x.shape)}, W_1 (E, F) = ({e}, {f}), W_2 (F, E) = ({f}, {e}): "
                f"x @ W_1 + b_1 is the hidden layer (B, T, F), and @ W_2 brings it back to (B, T, E)")
    return hint


def _oracle(norm_first, e, h, f, seed):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(e, h, f, dropout=0.1, activation="relu", batch_first=True,
                                       norm_first=norm_first, dtype=torch.float64).eval()
    with torch.no_grad():  # LayerNorms that are not the identity: a missing gamma or beta shows
        for w in (layer.norm1.weight, layer.norm2.weight):
            w.uniform_(0.5, 1.5)
        for w in (layer.norm1.bias, layer.norm2.bias):
            w.normal_(0.0, 0.5)
    return eb.zero_attention_biases(layer)


def _setup(fn, norm_first, b, t, e, h, f, seed):
    """The oracle's output on seeded inputs, what to call the case, and a runner of the learner's block."""
    import torch

    layer = _oracle(norm_first, e, h, f, seed)
    x = torch.randn(b, t, e, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        expected = layer(x).numpy()
    x = x.numpy()
    params = eb.encoder_block_weights(layer)
    what = (f"encoder_block, {'pre' if norm_first else 'post'}-norm (norm_first={norm_first}), "
            f"X (B, T, E) = {x.shape}, H={h}, F={f}")

    def run(dropout, training):
        result = call_learner(fn, x, params, h, eb.multi_head_attention, norm_first, dropout, training,
                              what="encoder_block", hint=_shape_hint(x, params))
        return as_array(result, "encoder_block")

    return x, params, expected, what, run


def _evaluation_case(fn, norm_first, b, t, e, h, f, seed) -> None:
    """The block in evaluation: equal to the oracle, with and without a dropout rate."""
    x, params, expected, what, run = _setup(fn, norm_first, b, t, e, h, f, seed)
    got, dtype = run(0.0, False)
    if got.shape == (b, t, f) and f != e:
        raise CheckFailed(f"{what}: the output has shape {got.shape}, the feed-forward network's hidden width "
                          f"F={f}; W_2 (F, E) = ({f}, {e}) brings the hidden layer back to width E={e}.")
    diagnose(got, dtype, expected, _mistakes(x, params, h, norm_first), what)

    first, dtype = run(0.1, False)
    second, _ = run(0.1, False)
    if not close(first, second, dtype):
        raise CheckFailed(f"{what}: dropout is left on in evaluation: two calls with dropout=0.1 and "
                          "training=False gave different outputs; dropout acts only when training is True.")
    if not close(first, expected, dtype):
        raise CheckFailed(f"{what}: dropout is left on in evaluation: with dropout=0.1 and training=False the "
                          "output differs from the one with dropout=0.0; in evaluation dropout is the identity.")


def _training_case(fn, norm_first, b, t, e, h, f, seed) -> None:
    """The block in training: dropout changes the output (its draws cannot be compared)."""
    _, _, expected, what, run = _setup(fn, norm_first, b, t, e, h, f, seed)
    trained, dtype = run(0.5, True)
    if trained.shape != expected.shape or not np.all(np.isfinite(trained)):
        raise CheckFailed(f"{what}: with dropout=0.5 and training=True the output has shape {trained.shape} "
                          f"or is not finite; expected shape {expected.shape}, finite.")
    if close(trained, expected, dtype):
        raise CheckFailed(f"{what}: dropout is never applied: with dropout=0.5 and training=True the output "
                          "equals the evaluation's; drop units (and scale the others by 1 / (1 - p)) when training.")


def check_encoder_block(fn) -> None:
    """``fn(X (B, T, E), params, num_heads, attention, norm_first=False, dropout=0.0, training=False)
    -> (B, T, E)``, against ``nn.TransformerEncoderLayer`` in evaluation mode (see the module's docstring)."""
    cases = [(False, 2, 5, 12, 3, 20, 31), (True, 3, 4, 8, 2, 24, 32), (True, 2, 5, 12, 3, 20, 33),
             (False, 3, 4, 8, 2, 24, 34)]  # (norm_first, B, T, E, H, F, seed): F is not 4E
    for case in cases:
        _evaluation_case(fn, *case)
    _training_case(fn, *cases[0])  # last: a block that ignores dropout has its other mistakes named first
    print("Correct! Your block matches nn.TransformerEncoderLayer, post-norm and pre-norm, "
          "with dropout only in training.")


exercise(
    "ex-build-encoder-block", "The encoder block", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_encoder_block", "encoder_block", 6, check_encoder_block,
                  "{exercise}: post-norm and pre-norm, no dropout in evaluation")],
)
