"""The bug hunt: six short attention functions with one real-world bug each.

The book shows each broken function as a starter cell; each ``check_*`` runs the
learner's fixed version on copies of seeded inputs, passes it when its values match the
reference, and otherwise names what is still wrong (the conventions of :mod:`.core`).
:data:`CHECKS` lists them in the book's order, by the name of the function to fix, and
each is declared as an exercise of the page's bug hunt (:mod:`.exercises`).
"""

from __future__ import annotations

import math

import numpy as np

from ..attention import causal_mask, scaled_dot_product_attention, softmax
from .core import CheckFailed, as_array, call_learner, close, diagnose, naive_softmax, transpose_hint
from .exercises import Graded, exercise


def _sdpa_naive(q, k, v, allowed=None, fill=-np.inf):
    """Attention as learners write it: blocked scores set to ``fill`` (-inf gives nan rows)."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if allowed is not None:
        s = np.where(allowed, s, fill)
    return naive_softmax(s) @ v


def _both_fills(q, k, v, allowed) -> list[np.ndarray]:
    """A row with nothing allowed, three ways: nan (-inf and a plain softmax), uniform (-1e9),
    zeros (-inf and the library's softmax)."""
    s = np.where(allowed, q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1]), -np.inf)
    return [_sdpa_naive(q, k, v, allowed), _sdpa_naive(q, k, v, allowed, fill=-1e9), softmax(s) @ v]


# ---------------------------------------------------------------- bug 1: causal mask
def check_causal_attention(fn) -> None:
    """``fn(Q, K, V) -> output (T, d_v)`` with a causal mask: position t sees 0..t."""
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    expected, _ = scaled_dot_product_attention(q, k, v, causal_mask(5))
    got, dtype = as_array(call_learner(fn, q, k, v))
    t = np.arange(5)
    row, col = t[:, None], t[None, :]  # query t, key s
    mistakes = {
        "the mask is the wrong way round: each position sees itself and the future (np.triu); "
        "position t must see 0..t, True on and below the diagonal (np.tril)": _both_fills(q, k, v, row <= col),
        "the mask lets each position see only the future and blocks the past and itself; "
        "True must mean 'may attend', on and below the diagonal (np.tril)": _both_fills(q, k, v, row < col),
        "the diagonal is blocked: a position may attend to itself (np.tril with k=0); position 0 "
        "now has nothing to attend to": _both_fills(q, k, v, row > col),
        "the mask is applied after the softmax: zeroing weights afterwards leaves rows that no longer "
        "sum to 1; set the blocked scores to -inf before the softmax": np.where(
            causal_mask(5), softmax(q @ k.T / math.sqrt(4)), 0.0
        )
        @ v,
        "there is no mask: every position sees the future": _sdpa_naive(q, k, v),
    }
    diagnose(got, dtype, expected, mistakes, "causal attention, T=5")
    print("Correct! Position t attends to positions 0..t only.")


# ---------------------------------------------------------------- bug 2: softmax axis
def check_softmax_rows(fn) -> None:
    """``fn(scores (T, S)) -> weights (T, S)``, each row a softmax over the keys."""
    rng = np.random.default_rng(2)
    # the large scores pass float64's exp overflow (exp(x) = inf above 709.78): an unshifted softmax fails
    for scores in (rng.normal(size=(5, 5)) * 3, rng.normal(size=(3, 7)) * 3 + 1000):
        expected = softmax(scores, axis=-1)
        got, dtype = as_array(call_learner(fn, scores))
        mistakes = {
            "each column sums to 1, not each row: normalise over the keys, axis=-1": softmax(scores, axis=0),
            f"np.exp overflows on these large scores (up to {scores.max():.0f}; exp(x) is inf above "
            f"{math.log(np.finfo(np.float64).max):.1f} in float64, {math.log(np.finfo(np.float32).max):.1f} in "
            "float32) and inf / inf = nan: subtract each row's maximum before np.exp": [
                naive_softmax(scores, shift="none"), naive_softmax(scores, shift="none", dtype=np.float32)],
            "the row maximum is subtracted (axis=-1) but the sum is taken over the columns (axis=0): "
            "divide by each row's sum, sum(axis=-1, keepdims=True)": (lambda e: e / e.sum(axis=0, keepdims=True))(
                np.exp(scores - scores.max(axis=-1, keepdims=True))),
            "the maximum is taken per column (axis=0): subtract each row's maximum, "
            "max(axis=-1, keepdims=True), so that every entry of a row gets the same shift": (
                lambda e: e / e.sum(axis=-1, keepdims=True)
            )(np.exp(scores - scores.max(axis=0, keepdims=True))),
            "the row sums are divided along the wrong axis: without keepdims=True, a (T,) vector "
            "broadcasts along the last axis, so entry (t, s) is divided by row s's sum; use "
            "sum(axis=-1, keepdims=True)": (lambda e: e / e.sum(axis=-1))(
                np.exp(scores - scores.max(axis=-1, keepdims=True))
            )
            if scores.shape[0] == scores.shape[1]
            else None,
            "the row maxima are subtracted along the wrong axis: without keepdims=True a (T,) vector "
            "broadcasts along the last axis; use max(axis=-1, keepdims=True)": softmax(scores - scores.max(axis=-1))
            if scores.shape[0] == scores.shape[1]
            else None,
        }
        diagnose(got, dtype, expected, mistakes, f"softmax of scores of shape {scores.shape}")
    print("Correct! Each row (one query) sums to 1, also for large scores.")


# ---------------------------------------------------------------- bug 3: K.T on a batch
def check_batched_attention(fn) -> None:
    """``fn(Q (B, T, d_k), K (B, S, d_k), V (B, S, d_v)) -> (B, T, d_v)``."""
    rng = np.random.default_rng(3)
    # B = S = d_k: here Q @ K.T runs without an error and gives wrong numbers.
    for b, t, s, d_k, d_v in ((4, 3, 4, 4, 2), (2, 3, 5, 4, 6)):
        q, k, v = rng.normal(size=(b, t, d_k)), rng.normal(size=(b, s, d_k)), rng.normal(size=(b, s, d_v))
        expected, _ = scaled_dot_product_attention(q, k, v)
        got, dtype = as_array(call_learner(fn, q, k, v, hint=transpose_hint))
        mistakes = {}
        if b == s == d_k:
            with np.errstate(all="ignore"):
                mistakes[
                    "K.T reverses all three axes of a (B, S, d_k) array, (d_k, S, B), so the "
                    "batches are mixed up: swap only the last two, np.swapaxes(K, -1, -2)"
                ] = softmax(q @ k.T / math.sqrt(d_k)) @ v
                mistakes[
                    "K.transpose(1, 0, 2) swaps the batch and key axes, (S, B, d_k), so the batches are "
                    "mixed up: swap the last two axes, np.swapaxes(K, -1, -2) (K.transpose(0, 2, 1))"
                ] = softmax(q @ k.transpose(1, 0, 2) / math.sqrt(d_k)) @ v
        mistakes[
            "the scores are summed over the batch (an einsum whose output has no b, 'btd,bsd->ts'): "
            "keep the batch index in the output, 'btd,bsd->bts'"
        ] = softmax(np.einsum("btd,bsd->ts", q, k) / math.sqrt(d_k)) @ v
        mistakes["softmax normalises over the queries (axis=1 or -2); use axis=-1"] = (
            softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k), axis=-2) @ v
        )
        unscaled = f"the scores are not scaled: divide them by sqrt(d_k) = sqrt({d_k}) (Q.shape[-1]) before the softmax"
        mistakes[unscaled] = softmax(q @ np.swapaxes(k, -1, -2)) @ v
        diagnose(got, dtype, expected, mistakes, f"batched attention, Q {q.shape}, K {k.shape}, V {v.shape}")
    print("Correct! Each sequence of the batch attends within itself.")


# ---------------------------------------------------------------- bug 4: head reshape order
def check_split_heads(fn) -> None:
    """``fn(x (B, T, E), num_heads) -> (B, H, T, d_k)``; head h gets features h*d_k..(h+1)*d_k-1."""
    rng = np.random.default_rng(4)
    b, t, e, h = 2, 5, 12, 3
    d_k = e // h
    x = rng.normal(size=(b, t, e))
    expected = x.reshape(b, t, h, d_k).transpose(0, 2, 1, 3)  # (B, T, E) -> (B, T, H, d_k) -> (B, H, T, d_k)
    got, dtype = as_array(call_learner(fn, x, h))
    mistakes = {
        "a reshape straight to (B, H, T, d_k) reads the features in memory order, so each 'head' "
        "mixes different positions: reshape to (B, T, H, d_k), then swap axes 1 and 2": x.reshape(b, h, t, d_k),
        "head h gets every H-th feature: reshape to (B, T, H, d_k) (heads first, then d_k), "
        "not (B, T, d_k, H)": x.reshape(b, t, d_k, h).transpose(0, 3, 1, 2),
        "the axes are (B, T, H, d_k): swap axes 1 and 2 to get (B, H, T, d_k)": x.reshape(b, t, h, d_k),
    }
    diagnose(got, dtype, expected, mistakes, f"split_heads of x {x.shape} into H={h} heads")
    print("Correct! Head h holds features h*d_k to (h+1)*d_k - 1 of every position.")


# ---------------------------------------------------------------- bug 5: mask polarity in nn.MultiheadAttention
def check_causal_self_attention(fn) -> None:
    """``fn(mha, x) -> output (B, T, E)``: causal self-attention with ``nn.MultiheadAttention``."""
    import torch
    from torch import nn

    torch.manual_seed(5)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    may_attend = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    with torch.no_grad():

        def run(attn_mask):
            return mha(x, x, x, attn_mask=attn_mask, need_weights=False)[0].numpy()

        expected = run(~may_attend)
        try:  # on a copy of mha and of x
            got, dtype = as_array(call_learner(fn, mha, x))
        except CheckFailed as exc:
            if "dtype" in str(exc.__cause__).lower():  # e.g. a float32 mask of 0 and 1 for float64 x
                raise CheckFailed(
                    "PyTorch refused a tensor of the wrong dtype, most likely your mask: a float attn_mask is "
                    f"*added* to the scores and must have the dtype of x ({x.dtype}), and a float mask of 0 "
                    "and 1 would block nothing anyway. Pass a boolean mask, True = blocked "
                    "(~torch.tril(torch.ones(T, T, dtype=torch.bool))), or a float mask of 0 and -inf in "
                    f"x's dtype (PyTorch said: {exc.__cause__})"
                ) from exc.__cause__
            raise
        mistakes = {
            "the mask is the one for F.scaled_dot_product_attention (True = may attend), but "
            "nn.MultiheadAttention's attn_mask means True = blocked: pass ~mask, or "
            "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)": run(may_attend),
            "a float attn_mask is added to the scores, so 0 and 1 block nothing: pass a boolean mask "
            "(True = blocked) or a float mask of 0 and -inf": run(may_attend.double()),
            "the diagonal is blocked too: each position may attend to itself "
            "(torch.triu(..., diagonal=1) blocks only the future)": run(torch.triu(torch.ones(4, 4, dtype=torch.bool))),
            "there is no mask: every position sees the future": run(None),
        }
    diagnose(got, dtype, expected, mistakes, "causal self-attention with nn.MultiheadAttention")
    print("Correct! nn.MultiheadAttention got the mask in its own polarity (True = blocked).")


# ---------------------------------------------------------------- bug 6: padding mask on keys
def check_padded_attention(fn) -> None:
    """``fn(Q, K, V, real) -> (B, T, d_v)`` for self-attention over padded sequences.

    ``real (B, T)`` is True for real tokens and False for padding; every query must give
    the padding keys zero weight. The rows of real tokens are compared with the reference.
    The rows of padding positions are not compared (what a padding query attends to does
    not matter, a model discards it) but must be finite: in a model they are the next
    layer's values, and a nan value spreads to every token even at weight 0 (0 * nan = nan).
    """
    rng = np.random.default_rng(6)
    b, t, d_k, d_v = 3, 5, 4, 3
    q, k, v = rng.normal(size=(b, t, d_k)), rng.normal(size=(b, t, d_k)), rng.normal(size=(b, t, d_v))
    real = np.arange(t)[None, :] < np.array([5, 3, 2])[:, None]  # lengths 5, 3, 2
    expected, _ = scaled_dot_product_attention(q, k, v, real[:, None, :])
    got, dtype = as_array(call_learner(fn, q, k, v, real, hint=transpose_hint))
    rows = real[..., None]  # compare real queries only

    def keep(a):
        return np.where(rows, a, 0.0)

    what = "padded self-attention, lengths 5, 3, 2"
    if got.shape != expected.shape:
        raise CheckFailed(f"{what}: expected shape (B, T, d_v) = {expected.shape}, got {got.shape}")
    if close(keep(got), keep(expected), dtype):
        if not np.all(np.isfinite(got)):
            raise CheckFailed(
                f"{what}: the real tokens are right, but the outputs at padding positions are nan or inf. "
                "In a model they are the next layer's values, and a nan value makes every output nan even "
                "at weight 0 (0 * nan = nan). Block only the padding keys, real[:, None, :], so that every "
                "query keeps a key (or give a row with no key zero weights)"
            )
        print("Correct! Every real token ignores the padding keys, and no output is nan.")
        return
    mistakes = {
        "real tokens still attend to the padding keys: the mask must block keys, real[:, None, :] "
        "of shape (B, 1, T); a mask on the queries, real[:, :, None], blocks only the padding rows": _sdpa_naive(
            q, k, v
        ),
        "the mask is the wrong way round: True marks real tokens, so keep scores where it is True": _both_fills(
            q, k, v, ~real[:, None, :]
        ),
    }
    diagnose(
        keep(got),
        dtype,
        keep(expected),
        {m: [keep(a) for a in (w if isinstance(w, list) else [w])] for m, w in mistakes.items()},
        f"{what} (rows of real tokens)",
    )


CHECKS = {
    "causal_attention": check_causal_attention,
    "softmax_rows": check_softmax_rows,
    "batched_attention": check_batched_attention,
    "split_heads": check_split_heads,
    "causal_self_attention": check_causal_self_attention,
    "padded_attention": check_padded_attention,
}

_BUGS = {  # function: its exercise's label and title, the fix in a few words, whether it is attention by hand
    "causal_attention": ("ex-exercises-bug-causal", "Bug hunt: a causal mask", "the causal mask", True),
    "softmax_rows": ("ex-exercises-bug-softmax", "Bug hunt: a softmax", "the softmax axis", False),
    "batched_attention": ("ex-exercises-bug-batched", "Bug hunt: a batch", "K.T on a batch", True),
    "split_heads": ("ex-exercises-bug-heads", "Bug hunt: splitting heads", "the head reshape", False),
    "causal_self_attention": ("ex-exercises-bug-polarity", "Bug hunt: a mask for nn.MultiheadAttention",
                              "mask polarity in `nn.MultiheadAttention`", False),
    "padded_attention": ("ex-exercises-bug-padding", "Bug hunt: padding", "the padding mask", True),
}
for _name, _check in CHECKS.items():
    _label, _title, _fix, _by_hand = _BUGS[_name]
    exercise(_label, _title, page="exercises", sets=("exercises", "bughunt"), numbered=False, by_hand=_by_hand,
             allowed=("softmax",) if _name == "causal_attention" else ("softmax", "causal_mask"),  # the mask is the bug
             items=[Graded(f"bug_{_name}", _name, 2, _check, f"{{exercise}}, fixed ({_fix})")])
