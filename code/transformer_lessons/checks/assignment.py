"""The graded assignment's checks: causal multi-head attention, declared as the exercises
page's graded assignment (:mod:`.exercises`), and its per-student variants
(:mod:`transformer_classroom.variants`).

Each compares the learner's function with ``nn.MultiheadAttention`` (float64, no bias, the
seeded weights of :func:`~.encoder.mh_inputs` loaded into the four ``(E, E)`` matrices, used
as ``Q = X @ W_q``) on two sizes, output and every head's weights:

* :func:`check_padded_multihead_attention`: ``f(X, W_q, W_k, W_v, W_o, num_heads, key_mask)``,
  ``key_mask (B, S)`` bool, True = a real token that may be attended (PyTorch's
  ``key_padding_mask`` is its negation);
* :func:`check_cross_multihead_attention`: ``f(X, Y, W_q, W_k, W_v, W_o, num_heads)``,
  queries from ``X (B, T, E)``, keys and values from ``Y (B, S, E)``, ``T != S``;
* :func:`check_fixed_heads_causal_attention`: ``f(X, W_q, W_k, W_v, W_o)``, causal
  self-attention with the variant's own number of heads, the mask made inside.

The causal variant is the assignment itself, :func:`check_causal_multihead_attention`.
"""

from __future__ import annotations

import numpy as np

from ..attention import causal_mask
from .core import CheckFailed, as_array, call_learner, diagnose, transpose_hint
from .encoder import mh_inputs, mh_reference, multihead_case
from .exercises import Graded, exercise

__all__ = [
    "check_causal_multihead_attention",
    "check_cross_multihead_attention",
    "check_fixed_heads_causal_attention",
    "check_padded_multihead_attention",
]


def check_causal_multihead_attention(impl) -> None:
    """As :func:`~.encoder.check_multihead_attention`, with a causal mask: ``impl(X, W_q, W_k, W_v, W_o,
    num_heads, mask)`` where ``mask (T, T)`` is boolean, True = may attend (a module's forward
    gets the mask as its last argument). Compared with ``nn.MultiheadAttention`` given
    ``attn_mask = ~mask`` (its own polarity: True = blocked)."""
    multihead_case(impl, mask_kind="causal")
    multihead_case(impl, mask_kind="causal", batch=3, seq_len=4, embed_dim=8, num_heads=2)
    print("Correct! Your causal multi-head attention matches nn.MultiheadAttention with a causal mask.")


exercise(
    "ex-exercises-assignment", "Graded assignment: causal multi-head attention", page="exercises",
    sets=("assignment",), numbered=False, by_hand=True,
    items=[Graded("assign_causal_multi_head", "causal_multi_head_attention", 8, check_causal_multihead_attention)],
)


def _pair(result, what: str, weights_shape: tuple) -> tuple:
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"return a pair (output (B, T, E), weights {weights_shape}), the per-head weights too")
    (out, dtype), (w, dtype_w) = as_array(result[0], "the output"), as_array(result[1], "the weights")
    return out, dtype, w, dtype_w


def _cross_reference(x, y, ws, h, key_mask=None):
    """NumPy multi-head attention, queries from ``x (B, T, E)``, keys and values from ``y (B, S, E)``."""
    w_q, w_k, w_v, w_o = ws
    b, t, e = x.shape
    s, d_k = y.shape[1], e // h

    def heads(m, n):  # (B, n, E) -> (B, n, H, d_k) -> (B, H, n, d_k)
        return m.reshape(b, n, h, d_k).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ w_q, t), heads(y @ w_k, s), heads(y @ w_v, s)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)  # (B, H, T, S)
    if key_mask is not None:
        scores = np.where(key_mask[:, None, None, :], scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(b, t, e) @ w_o, w


def _compare(result, expected, mistakes: dict, what: str, rows=None) -> None:
    """Compare output and weights; with ``rows (B, T)`` (bool), only the queries where it is True."""
    out, dtype, w, dtype_w = _pair(result, what, expected[1].shape)

    def keep(a, i):  # the rows compared: (B, T, E) -> (N, E); (B, H, T, S) -> (N, H, S)
        if rows is None or np.shape(a) != expected[i].shape:
            return a  # a wrong shape is reported as it is
        return np.asarray(a)[rows] if i == 0 else np.swapaxes(np.asarray(a), 1, 2)[rows]

    where = "" if rows is None else " (rows of real tokens)"
    for i, (got, dt, part) in enumerate(((out, dtype, "output"), (w, dtype_w, "weights"))):
        diagnose(keep(got, i), dt, keep(expected[i], i),
                 {m: [keep(p[i], i) for p in v] for m, v in mistakes.items()}, f"{what}, {part}{where}")


def _padding_case(impl, batch, seq_len, embed_dim, num_heads, lengths) -> None:
    import torch

    mha, xt, ws = mh_inputs(embed_dim, num_heads, batch, seq_len)
    x = xt.numpy()
    key_mask = np.arange(seq_len)[None, :] < np.asarray(lengths)[:, None]  # (B, S): True = a real token
    with torch.no_grad():
        out_t, w_t = mha(xt, xt, xt, key_padding_mask=torch.from_numpy(~key_mask), need_weights=True,
                         average_attn_weights=False)
    expected = (out_t.numpy(), w_t.numpy())  # (B, T, E), (B, H, T, S)
    allowed = np.broadcast_to(key_mask[:, None, :], (batch, seq_len, seq_len))
    def fills(mask):  # a row with no key left, as each way of filling blocked scores leaves it
        return [mh_reference(x, *ws, num_heads, mask=mask, empty_rows="zero"), mh_reference(x, *ws, num_heads, mask=mask),
                mh_reference(x, *ws, num_heads, mask=mask, fill=-1e9)]

    mistakes = {
        "the padding keys still get weight: the mask must block keys (columns), key_mask[:, None, None, :] "
        "broadcast to (B, H, T, S); not applied, or applied to the queries (rows), it blocks none of "
        "them": [mh_reference(x, *ws, num_heads)],
        "the padding mask is the wrong way round: True = a real token that may be attended, so keep the "
        "scores where key_mask is True and set the others to -inf": fills(~allowed),
        "the blocked scores are set to 0, an ordinary score (exp(0) = 1, so padding keys still get "
        "weight): set them to -inf": [mh_reference(x, *ws, num_heads, mask=allowed, fill=0.0)],
        "the padding mask is applied after the softmax: set the padded keys' scores to -inf before it, "
        "so that each row still sums to 1": [mh_reference(x, *ws, num_heads, mask=allowed, mask_after_softmax=True)],
    }
    result = call_learner(impl, x, *ws, num_heads, key_mask, hint=transpose_hint)
    # the padding positions' own rows are not compared: the task blocks padding *keys*, and what
    # a padding query computes is never used (the bug hunt's padding exercise says the same)
    _compare(result, expected, mistakes,
             f"padded multi-head attention, E={embed_dim}, H={num_heads}, X (B, T, E) = {x.shape}, "
             f"key_mask (B, S) = {key_mask.shape}", rows=key_mask)


def check_padded_multihead_attention(impl) -> None:
    """``impl(X, W_q, W_k, W_v, W_o, num_heads, key_mask) -> (output (B, T, E), weights (B, H, T, S))``
    against ``nn.MultiheadAttention(..., key_padding_mask=~key_mask)``."""
    _padding_case(impl, batch=3, seq_len=5, embed_dim=12, num_heads=3, lengths=[5, 3, 1])
    _padding_case(impl, batch=2, seq_len=4, embed_dim=8, num_heads=2, lengths=[2, 4])
    print("Correct! Your padded multi-head attention matches nn.MultiheadAttention with key_padding_mask.")


def _cross_case(impl, batch, tgt_len, src_len, embed_dim, num_heads) -> None:
    import torch

    mha, xt, ws = mh_inputs(embed_dim, num_heads, batch, tgt_len)
    yt = torch.randn(batch, src_len, embed_dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x, y = xt.numpy(), yt.numpy()
    with torch.no_grad():
        out_t, w_t = mha(xt, yt, yt, need_weights=True, average_attn_weights=False)
    expected = (out_t.numpy(), w_t.numpy())  # (B, T, E), (B, H, T, S)
    mistakes = {
        "the keys and values come from X: in cross-attention the queries come from X (the decoder) "
        "and the keys and values from Y (the encoder's output)": [(mh_reference(x, *ws, num_heads)[0], None)],
    }
    result = call_learner(impl, x, y, *ws, num_heads, hint=transpose_hint)
    _compare(result, expected, mistakes,
             f"cross-attention, E={embed_dim}, H={num_heads}, X (B, T, E) = {x.shape}, Y (B, S, E) = {y.shape}")


def check_cross_multihead_attention(impl) -> None:
    """``impl(X, Y, W_q, W_k, W_v, W_o, num_heads) -> (output (B, T, E), weights (B, H, T, S))``
    against ``nn.MultiheadAttention(X, Y, Y)``, with ``T != S``."""
    _cross_case(impl, batch=2, tgt_len=4, src_len=6, embed_dim=12, num_heads=3)
    _cross_case(impl, batch=3, tgt_len=5, src_len=2, embed_dim=8, num_heads=2)
    print("Correct! Your cross-attention matches nn.MultiheadAttention(X, Y, Y).")


def _heads_case(impl, num_heads, batch, seq_len, embed_dim) -> None:
    import torch

    mha, xt, ws = mh_inputs(embed_dim, num_heads, batch, seq_len)
    x, mask = xt.numpy(), causal_mask(seq_len)
    with torch.no_grad():
        out_t, w_t = mha(xt, xt, xt, attn_mask=torch.from_numpy(~mask), need_weights=True, average_attn_weights=False)
    expected = (out_t.numpy(), w_t.numpy())
    mistakes = {
        f"the number of heads is {h}, not {num_heads}: your variant uses H = {num_heads} heads of "
        f"d_k = E / {num_heads}": [mh_reference(x, *ws, h, mask=mask)]
        for h in (1, 2, 3, 4, 6, 8) if h != num_heads and embed_dim % h == 0
    }
    mistakes["the causal mask is missing: position t may attend only to 0..t"] = [mh_reference(x, *ws, num_heads)]
    result = call_learner(impl, x, *ws, hint=transpose_hint)
    if isinstance(result, tuple) and len(result) == 2 and hasattr(result[1], "shape") and len(result[1].shape) == 4 \
            and result[1].shape[1] != num_heads:
        raise CheckFailed(f"the weights have {result[1].shape[1]} heads, shape {tuple(result[1].shape)}; "
                          f"your variant uses H = {num_heads}: (B, H, T, T) = {expected[1].shape}")
    _compare(result, expected, mistakes,
             f"causal attention with H={num_heads} heads, E={embed_dim}, X (B, T, E) = {x.shape}")


def check_fixed_heads_causal_attention(impl, num_heads: int) -> None:
    """``impl(X, W_q, W_k, W_v, W_o) -> (output (B, T, E), weights (B, H, T, T))``: causal
    self-attention with ``num_heads`` heads (the variant's), the causal mask made inside."""
    _heads_case(impl, num_heads, batch=2, seq_len=5, embed_dim=24)
    _heads_case(impl, num_heads, batch=3, seq_len=3, embed_dim=24)
    print(f"Correct! Your causal attention with {num_heads} heads matches nn.MultiheadAttention.")
