"""Self-checks of "Build your own model", each followed by its exercise's declaration
(:mod:`.exercises`), in its three steps: the encoder block, post-norm and pre-norm (this
docstring); the decoder-only model and the training loop (the comments above their checks).

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
from ..decoder_only import TorchDecoderOnly
from ..lm_training import evaluate, learning_rate, lm_loss
from ..positional import positional_encoding
from .core import CheckFailed, as_array, call_learner, close, diagnose
from .exercises import Graded, exercise

__all__ = ["check_encoder_block", "check_evaluate", "check_language_model", "check_learning_rate", "check_lm_loss",
           "check_train"]


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


# ---------------------------------------------------------------- step 2: the decoder-only model
# The learner writes ``language_model(ids, params, num_heads, block, attention, positions)``: the
# block is their step-1 encoder block, ``attention(X, W_q, W_k, W_v, W_o, num_heads, mask)`` their
# causal multi-head attention (the graded assignment's signature), ``positions(T, E)`` their
# positional encoding; the check passes the book's three, so a mistake in them is never blamed
# on the model. The oracle is :class:`~transformer_lessons.decoder_only.TorchDecoderOnly`
# (``nn.Embedding``, ``nn.TransformerEncoderLayer`` pre-norm under a causal mask, ``nn.LayerNorm``,
# ``nn.Linear``). Two behavioural tests back the comparison: a later token must not change an
# earlier logit, and one token repeated must not give the same logits at every position.

def _lm(ids, p, h, *, mask="causal", positions=True, final_norm=True, head="right", norm_first=True,
        scale=False, same_block=False):
    """The model in NumPy, right (the defaults) or with one mistake (see the messages below)."""
    t, e = ids.shape[1], p["embedding"].shape[1]
    below = np.tril(np.ones((t, t), dtype=bool))
    masks = {"causal": below, "none": None, "inverted": ~below, "transposed": below.T,
             "shifted": np.tril(np.ones((t, t), dtype=bool), k=-1)}

    def attention(x, w_q, w_k, w_v, w_o, heads):
        return eb.multi_head_attention(x, w_q, w_k, w_v, w_o, heads, masks[mask])

    x = p["embedding"][ids] * (np.sqrt(e) if scale else 1.0)
    x = x + positional_encoding(t, e) * positions
    for block in p["blocks"]:
        x = eb.encoder_block(x, p["blocks"][0] if same_block else block, h, attention, norm_first)
    if final_norm:
        x = eb.layer_norm(x, p["gamma_f"], p["beta_f"])
    w_out = p["embedding"].T if head == "tied" else p["W_out"]
    return x @ w_out + (0 if head == "no bias" else p["b_out"])


def _lm_mistakes(ids, p, h) -> dict:
    def m(**mistake):
        with np.errstate(all="ignore"):  # a row with nothing to attend to is nan, as in torch
            return _lm(ids, p, h, **mistake)

    return {
        "the causal mask is missing: every position attends to the whole sequence, so a later token "
        "changes an earlier logit; pass attention the mask causal_mask(T), True on and below the diagonal":
            m(mask="none"),
        "the mask is inverted: each position sees only the positions after it (True must mean may attend; "
        "PyTorch's attn_mask uses the opposite polarity, True = blocked)": m(mask="inverted"),
        "the mask is the transpose of the causal mask: each position sees itself and the future, not "
        "the past; the causal mask is True on and below the diagonal (np.tril)": m(mask="transposed"),
        "the mask is shifted by one: a token cannot see itself (True strictly below the diagonal); the "
        "causal mask includes the diagonal, np.tril(np.ones((T, T)), k=0)": m(mask="shifted"),
        "the positional encoding is missing: add positions(T, E) to the token embeddings, or the model "
        "cannot tell where a token is": m(positions=False),
        "the final LayerNorm is missing: a pre-norm block's output is not normalised, so the model "
        "normalises the last block's output (gamma_f, beta_f) before the head": m(final_norm=False),
        "the blocks are post-norm (norm_first=False); this model, like GPT-2, is pre-norm: call "
        "block(..., norm_first=True)": m(norm_first=False),
        "the head uses the embedding's transpose (weight tying), but these weights have their own "
        "W_out (E, V): use params['W_out'] (to tie, set W_out = embedding.T in the weights)": m(head="tied"),
        "the head's bias b_out is missing: logits = LN_f(h) @ W_out + b_out": m(head="no bias"),
        "the embeddings are multiplied by sqrt(E), as in the paper's section 3.4; this model adds them "
        "to the positions unscaled": m(scale=True),
        "every block uses the first block's weights: block l takes params['blocks'][l]": m(same_block=True),
    }


def _matching(got, dtype, mistakes: dict, what: str) -> None:
    """Raise with the first mistake that ``got`` matches, if any."""
    for message, wrong in mistakes.items():
        if wrong is not None and close(got, np.asarray(wrong, dtype=float), dtype, equal_nan=True):
            raise CheckFailed(f"{what}: {message}.")


def _head_hint(params):
    e, v = params["W_out"].shape

    def hint(exc, args) -> str:
        return (f"; ids (B, T) = {tuple(args[0].shape)}, embedding (V, E) = ({v}, {e}), W_out (E, V) = ({e}, {v}): "
                "the head is x @ W_out + b_out, (B, T, E) @ (E, V) -> (B, T, V) (nn.Linear stores the transpose)")
    return hint


def _lm_case(fn, b, t, v, e, h, f, layers, seed) -> None:
    import torch

    torch.manual_seed(seed)
    model = TorchDecoderOnly(v, e, h, f, layers, context=t, dropout=0.1).eval()
    with torch.no_grad():  # LayerNorms that are not the identity: a missing gamma or beta shows
        for norm in [model.norm, *(n for layer in model.layers for n in (layer.norm1, layer.norm2))]:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0.0, 0.5)
    ids = torch.randint(v, (b, t), generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        expected = model(ids).numpy()
    ids, params = ids.numpy(), model.weights()
    what = f"language_model, ids (B, T) = {ids.shape}, V={v}, E={e}, H={h}, {layers} block{'s' * (layers > 1)}"

    def run(x):
        result = call_learner(fn, x, params, h, eb.encoder_block, eb.multi_head_attention, positional_encoding,
                              what="language_model", hint=_head_hint(params))
        return as_array(result, "language_model")

    got, dtype = run(ids)
    if close(got, expected, dtype):
        return
    if got.shape == (b, t, e):
        raise CheckFailed(f"{what}: the output has shape {got.shape}, the model's width E={e}: the head "
                          f"W_out (E, V) = ({e}, {v}) turns each position into V={v} logits.")
    _matching(got, dtype, _lm_mistakes(ids, params, h), what)
    later = ids.copy()
    later[:, -1] = (later[:, -1] + 1) % v
    changed, _ = run(later)
    if changed.shape == got.shape and not close(changed[:, :-1], got[:, :-1], dtype, equal_nan=True):
        raise CheckFailed(f"{what}: a future token changes an earlier logit: changing only the last token "
                          "changed the logits of the positions before it; mask the attention with the causal mask.")
    same, _ = run(np.full_like(ids, ids[0, 0]))
    if same.shape == got.shape and close(same, np.broadcast_to(same[:, :1], same.shape), dtype):
        raise CheckFailed(f"{what}: one token repeated gives the same logits at every position: the model "
                          "cannot tell positions apart; add positions(T, E) to the embeddings.")
    diagnose(got, dtype, expected, {}, what)


def check_language_model(fn) -> None:
    """``fn(ids (B, T), params, num_heads, block, attention, positions) -> logits (B, T, V)``, against
    :class:`~transformer_lessons.decoder_only.TorchDecoderOnly` (see the comment above)."""
    # one block first: a mask that leaves a row with nothing to attend to makes nan of that row only
    for case in [(2, 6, 13, 12, 3, 20, 1, 41), (3, 5, 9, 8, 2, 24, 3, 42)]:  # (B, T, V, E, H, F, blocks, seed)
        _lm_case(fn, *case)
    print("Correct! Your model matches a stack of nn.TransformerEncoderLayer under a causal mask, "
          "with embeddings, positions, a final LayerNorm and the head.")


exercise(
    "ex-build-language-model", "The decoder-only model", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_language_model", "language_model", 6, check_language_model,
                  "{exercise}: causal, with positions, a final norm and the head")],
)


# ---------------------------------------------------------------- step 3: the training loop
# Four functions, each checked alone, each getting the book's version of the others, so that
# one mistake is named once: ``lm_loss(logits, ids)``, ``learning_rate(step, peak_lr,
# warmup_steps, total_steps)``, ``train(model, batches, peak_lr, warmup_steps, loss_fn, schedule)
# -> losses`` and ``evaluate(model, batches, loss_fn) -> mean loss``. The grader runs the
# learner's code in another process and sees only what a function returns, so every check
# reads returned values: the losses of a few AdamW steps of a tiny float64 model without dropout
# (deterministic, compared with :func:`~transformer_lessons.lm_training.train` and its classic
# mistakes), and for ``evaluate`` a model with dropout in training mode (its loss varies between
# calls unless ``model.eval()``) and a loss function that refuses logits that carry a graph
# (no ``torch.no_grad()``). That the model is put back in training mode after is taught, not checked.

def _lm_batch(b, t, v, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, t, v, dtype=torch.float64, generator=gen) * 2
    return logits, torch.randint(v, (b, t), generator=gen)


def _loss_mistakes(logits, ids) -> dict:
    import torch
    import torch.nn.functional as F

    v = logits.shape[-1]

    def ce(lg, target, **kw):
        return F.cross_entropy(lg.reshape(-1, v), target.reshape(-1), **kw).numpy()

    pred, target = logits[:, :-1], ids[:, 1:]
    over_time = -torch.log_softmax(pred, dim=1).gather(-1, target[..., None]).mean()
    return {
        "the targets are not shifted: position t is scored against token t, which it already sees, so the "
        "model learns to copy its input; score logits[:, :-1] against ids[:, 1:]":
            [ce(logits, ids), ce(pred, ids[:, :-1])],
        "the shift goes the wrong way: the logits at position t predict the token at t + 1, so drop the "
        "last position of the logits and the first token, logits[:, :-1] against ids[:, 1:]":
            ce(logits[:, 1:], ids[:, :-1]),
        "the softmax is over the wrong axis (the positions, axis 1): the distribution is over the "
        "vocabulary, the last axis; F.cross_entropy wants (N, V), so reshape the logits to (B (T - 1), V)":
            over_time.numpy(),
        "the loss is summed: take the mean over the B (T - 1) predictions": ce(pred, target, reduction="sum"),
        "the loss is in bits (divided by log 2); use the natural log, as F.cross_entropy does":
            ce(pred, target) / np.log(2),
        "softmax is applied before F.cross_entropy, which takes logits and applies its own log-softmax":
            ce(torch.softmax(pred, -1), target),
    }


def _loss_hint(exc, args) -> str:
    b, t, v = args[0].shape
    return (f"; logits (B, T, V) = {(b, t, v)}, ids (B, T) = {(b, t)}: F.cross_entropy takes the vocabulary "
            f"on axis 1, so reshape the logits of positions 0..T-2 to ({b * (t - 1)}, {v}) and their "
            f"targets to ({b * (t - 1)},)")


def check_lm_loss(fn) -> None:
    """``fn(logits (B, T, V), ids (B, T)) -> scalar tensor``: cross-entropy of the next token."""
    import torch.nn.functional as F

    for b, t, v, seed in [(2, 7, 11, 51), (3, 5, 6, 52)]:
        logits, ids = _lm_batch(b, t, v, seed)
        expected = F.cross_entropy(logits[:, :-1].reshape(-1, v), ids[:, 1:].reshape(-1)).numpy()
        what = f"lm_loss, logits (B, T, V) = {(b, t, v)}"
        result = call_learner(fn, logits, ids, what="lm_loss", hint=_loss_hint)
        if isinstance(result, float):
            raise CheckFailed(f"{what}: it returned a Python number; return the loss as a tensor, so that "
                              "loss.backward() reaches the model (.item() cuts it from the graph).")
        got, dtype = as_array(result, "lm_loss")
        diagnose(got, dtype, expected, _loss_mistakes(logits, ids), what)
    print("Correct! Your loss is the cross-entropy of each next token, averaged over the predictions.")


exercise(
    "ex-build-lm-loss", "The language-model loss", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_lm_loss", "lm_loss", 3, check_lm_loss,
                  "{exercise}: targets shifted by one, over the vocabulary, the mean")],
)


def _schedules(peak, warmup, total) -> tuple[np.ndarray, dict]:
    steps = np.arange(total)
    progress = np.clip((steps - warmup) / max(1, total - warmup), 0, 1)
    cosine = peak * 0.5 * (1 + np.cos(np.pi * progress))
    ramp = peak * (steps + 1) / warmup
    right = np.where(steps < warmup, ramp, cosine)
    return right, {
        "there is no warm-up: the rate at step 0 is already the peak, when Adam's first updates are "
        "the least reliable; ramp it up, peak_lr * (step + 1) / warmup_steps":
            [peak * 0.5 * (1 + np.cos(np.pi * steps / total)), np.full(total, peak), cosine],
        "the rate at step 0 is 0, so the first step does not move the weights: warm up with "
        "(step + 1) / warmup_steps": np.where(steps < warmup, peak * steps / warmup, cosine),
        "the warm-up never ends: past warmup_steps the rate keeps growing beyond the peak; decay it "
        "with the cosine": ramp,
        "there is no decay after the warm-up: the cosine takes the rate from the peak to 0 at total_steps":
            np.where(steps < warmup, ramp, peak),
        "the cosine starts at step 0, not at the end of the warm-up: progress = (step - warmup_steps) / "
        "(total_steps - warmup_steps)": np.where(steps < warmup, ramp, peak * 0.5 * (1 + np.cos(np.pi * steps / total))),
        "the cosine goes below 0: 0.5 * (1 + cos(pi * progress)) runs from 1 to 0":
            np.where(steps < warmup, ramp, peak * np.cos(np.pi * progress)),
    }


def check_learning_rate(fn) -> None:
    """``fn(step, peak_lr, warmup_steps, total_steps) -> rate``: linear warm-up, then cosine decay to 0."""
    for peak, warmup, total in [(1e-3, 10, 40), (0.5, 4, 20)]:
        expected, mistakes = _schedules(peak, warmup, total)
        what = f"learning_rate, peak_lr={peak}, warmup_steps={warmup}, total_steps={total}"
        got = np.empty(total)
        for step in range(total):
            value, _ = as_array(call_learner(fn, step, peak, warmup, total, what="learning_rate"), "learning_rate")
            if value.shape != ():
                raise CheckFailed(f"{what}: step {step} gave an array of shape {value.shape}; return one number.")
            got[step] = value
        diagnose(got, "float64", expected, mistakes, what + ", at every step")
    print("Correct! Your schedule warms up from a small rate to the peak, then decays to 0 along a cosine.")


exercise(
    "ex-build-learning-rate", "Warm-up and decay", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_learning_rate", "learning_rate", 2, check_learning_rate,
                  "{exercise}: linear warm-up from a small rate, cosine decay")],
)


def _tiny_model(seed, dropout=0.0):
    import torch

    torch.manual_seed(seed)
    return TorchDecoderOnly(9, 8, 2, 16, 1, context=6, dropout=dropout).train()


def _batches(n, seed):
    import torch

    return torch.randint(9, (n, 4, 6), generator=torch.Generator().manual_seed(seed))  # (N, B, T)


def _train(model, batches, peak, warmup, mistake=None) -> list[float]:
    """:func:`~transformer_lessons.lm_training.train`, right or with one ``mistake``."""
    import torch

    opt = torch.optim.AdamW(model.parameters(), lr=peak)
    losses = []
    for step, ids in enumerate(batches):
        rate = learning_rate(step - (mistake == "lr after step"), peak, warmup, len(batches))
        if mistake != "constant lr" and not (mistake == "lr after step" and step == 0):
            for group in opt.param_groups:
                group["lr"] = rate
        loss = lm_loss(model(ids), ids)
        if mistake != "no zero_grad":
            opt.zero_grad()
        loss.backward()
        if mistake == "zero_grad after backward":
            opt.zero_grad()
        opt.step()
        losses.append(loss.item())
    return losses


def check_train(fn) -> None:
    """``fn(model, batches (N, B, T), peak_lr, warmup_steps, loss_fn, schedule) -> N losses``: AdamW,
    the schedule set before each step; compared with :func:`~transformer_lessons.lm_training.train`."""
    import copy

    model, batches, peak, warmup = _tiny_model(61), _batches(5, 62), 1e-2, 3
    expected = np.array(_train(copy.deepcopy(model), batches, peak, warmup))
    mistakes = {
        "the gradients are never zeroed: each step adds its gradients to the last one's; call "
        "optimizer.zero_grad() before loss.backward()": "no zero_grad",
        "the gradients are zeroed after loss.backward(), so optimizer.step() has nothing to follow; zero "
        "them before loss.backward()": "zero_grad after backward",
        "the learning rate never changes (no warm-up: the first step is taken at the peak rate): set "
        "each param group's 'lr' to schedule(step, peak_lr, warmup_steps, len(batches)) before "
        "optimizer.step()": "constant lr",
        "the learning rate is set after optimizer.step(): each step uses the previous step's rate, "
        "and step 0 the peak; set it before the step": "lr after step",
    }
    what = f"train, {len(batches)} batches (B, T) = {tuple(batches.shape[1:])}, peak_lr={peak}, warmup_steps={warmup}"
    result = call_learner(fn, model, batches, peak, warmup, lm_loss, learning_rate, what="train")
    got, dtype = as_array(list(result) if isinstance(result, (list, tuple)) else result, "train")
    if not close(got, expected, dtype):  # only then the mistakes are trained, each
        diagnose(got, dtype, expected, {m: np.array(_train(copy.deepcopy(model), batches, peak, warmup, k))
                                        for m, k in mistakes.items()}, what + ", the losses of the steps")
    print("Correct! Your loop takes the same AdamW steps as the book's, warm-up and all.")


exercise(
    "ex-build-train", "The training loop", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_train", "train", 3, check_train,
                  "{exercise}: AdamW, the schedule before each step, gradients zeroed")],
)


def _measuring_loss(logits, ids):
    """The book's :func:`lm_loss`, refusing logits that carry a graph (``evaluate`` measures
    under ``torch.no_grad()``); a module-level function, so the grader can send it."""
    if logits.requires_grad:
        raise CheckFailed("the logits carry a graph while measuring: compute them under "
                          "`with torch.no_grad():`, which keeps no graph and no gradients")
    return lm_loss(logits, ids)


def check_evaluate(fn) -> None:
    """``fn(model, batches (N, B, T), loss_fn) -> mean loss``, with dropout off and no graph kept;
    the model is given in training mode, with dropout."""
    import copy

    model, batches = _tiny_model(71, dropout=0.3), _batches(3, 72)
    expected = np.array(evaluate(copy.deepcopy(model), batches))
    what = f"evaluate, {len(batches)} batches (B, T) = {tuple(batches.shape[1:])}, a model with dropout 0.3"
    first, dtype = as_array(call_learner(fn, model, batches, _measuring_loss, what="evaluate"), "evaluate")
    second, _ = as_array(call_learner(fn, model, batches, _measuring_loss, what="evaluate"), "evaluate")
    if first.shape == second.shape and not close(first, second, dtype):
        raise CheckFailed(f"{what}: two calls gave different losses, {float(first):.6g} and {float(second):.6g}: "
                          "dropout is active while measuring; call model.eval() first (and model.train() after).")
    import torch

    with torch.no_grad():
        losses = np.array([lm_loss(copy.deepcopy(model).eval()(ids), ids).item() for ids in batches])
    diagnose(first, dtype, expected, {
        "it returns the last batch's loss: average over all the batches": losses[-1],
        "it returns the sum of the batches' losses: divide by their number": losses.sum(),
    }, what)
    print("Correct! Your evaluation measures with dropout off and without a graph.")


exercise(
    "ex-build-evaluate", "Measuring the loss", page="build_your_own", sets=("capstone",),
    items=[Graded("capstone_evaluate", "evaluate", 2, check_evaluate,
                  "{exercise}: dropout off, no graph kept")],
)
