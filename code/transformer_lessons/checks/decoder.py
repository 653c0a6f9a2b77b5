"""Self-checks of the decoder exercises: the causal mask (in both conventions, the decoder
page) and a decoding step with a key-value cache (the language-model page), each followed by
its exercise's declaration (:mod:`.exercises`).

The conventions are those of :mod:`.core`: the reader's code runs on copies of the
inputs, a pass prints a line starting with ``Correct!``, a failure raises
:class:`CheckFailed` whose message names the mistake (the classic ones get their own
sentence), never just "wrong".
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..attention import causal_mask
from ..multihead import MultiHeadAttention
from .core import CheckFailed, as_array, call_learner, close
from .exercises import Graded, exercise

__all__ = ["check_cached_attention", "check_causal_mask", "check_pytorch_causal_mask"]


def _as_bool_array(mask, who: str, t: int) -> np.ndarray:
    if mask is None:
        raise CheckFailed(f"{who}({t}) returned None: did you forget the `return` statement?")
    if isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().numpy()
    mask = np.asarray(mask)
    if mask.shape != (t, t):
        raise CheckFailed(f"{who}({t}) has shape {mask.shape}; a causal mask for {t} positions is ({t}, {t})")
    if mask.dtype != np.bool_:
        raise CheckFailed(
            f"{who}({t}) has dtype {mask.dtype}; return a boolean mask. A float mask is *added* to "
            "the scores (0 = allowed, -inf = blocked): a 0/1 float mask blocks nothing."
        )
    return mask


def _name_causal_mistake(mask: np.ndarray, right: np.ndarray, polarity: str) -> str | None:
    """Name the classic mistake ``mask`` makes; ``right`` is the book's causal mask (True = may attend)."""
    t = len(right)
    expected = right if polarity == "book" else ~right
    if np.array_equal(mask, ~expected):
        if polarity == "book":
            return (
                "True marks the future here: that is nn.MultiheadAttention's polarity (True = blocked). "
                "In this book (and F.scaled_dot_product_attention) True means 'may attend'."
            )
        return (
            "this is the book's polarity (True = may attend); nn.MultiheadAttention's attn_mask reads True "
            "as 'blocked', so this mask would hide the past and show the future."
        )
    lower_strict, upper = np.tril(np.ones((t, t), bool), -1), np.triu(np.ones((t, t), bool))
    mine = mask if polarity == "book" else ~mask  # what the mask allows, as True = may attend
    if np.array_equal(mine, lower_strict):
        return "the diagonal is blocked: position t must be able to attend to itself (keys 0..t, t included)."
    if np.array_equal(mine, upper):
        return "the wrong triangle: query t may see keys t..T-1, the future, and not its past."
    if np.array_equal(mine.T, right):
        return "rows and columns are swapped: rows are queries, columns are keys."
    return None


def check_causal_mask(make_mask) -> None:
    """``make_mask(T)`` must return the book's causal mask: boolean ``(T, T)``, True = may attend."""
    for t in (4, 7, 1):
        mask = _as_bool_array(call_learner(make_mask, t, what="make_mask"), "make_mask", t)
        right = causal_mask(t)
        if not np.array_equal(mask, right):
            named = _name_causal_mistake(mask, right, "book")
            raise CheckFailed(
                named
                or f"make_mask({t}) differs from the causal mask:\n{mask.astype(int)}\n"
                f"expected (1 = may attend):\n{right.astype(int)}"
            )
    print("Correct! Position t may attend to positions 0..t, itself included.")


def check_pytorch_causal_mask(make_mask) -> None:
    """``make_mask(T)`` must return an ``attn_mask`` that makes ``nn.MultiheadAttention`` causal:
    boolean (True = blocked), or PyTorch's float form (0 = allowed, -inf = blocked, added to
    the scores; what ``nn.Transformer.generate_square_subsequent_mask`` returns).

    The check runs ``nn.MultiheadAttention`` with the reader's mask and compares its
    output with this book's :class:`MultiHeadAttention` under the book's causal mask.
    """
    torch.manual_seed(0)
    t, e = 5, 8
    ref = nn.MultiheadAttention(e, 2, batch_first=True).double()
    ours = MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, t, e, dtype=torch.float64)
    raw, float_form = call_learner(make_mask, t, what="make_mask"), False
    values = raw.detach().cpu().numpy() if isinstance(raw, torch.Tensor) else np.asarray(raw) if raw is not None else None
    if values is not None and values.shape == (t, t) and values.dtype.kind == "f" and np.all(
            (values == 0) | np.isneginf(values)):
        raw = np.isneginf(values)  # PyTorch's float form: -inf where blocked, the same mask as a boolean one
        float_form = True
    mask = _as_bool_array(raw, "make_mask", t)
    with torch.no_grad():
        expected, _ = ours(x, x, x, mask=torch.from_numpy(causal_mask(t)))
        got, _ = ref(x, x, x, attn_mask=torch.from_numpy(mask), need_weights=False)
    if not torch.allclose(got, expected, atol=1e-10, rtol=0):
        named = _name_causal_mistake(mask, causal_mask(t), "pytorch")
        raise CheckFailed(named or "nn.MultiheadAttention with this mask is not causal")
    if float_form:
        print("Correct! In PyTorch's float form, -inf (added to the scores) blocks the future.")
    else:
        print("Correct! nn.MultiheadAttention reads True as 'blocked', so the mask marks the future.")


exercise(
    "ex-decoder-causal-mask", "The causal mask, twice", page="decoder", sets=("decoder",),
    allowed=("softmax",),  # the mask is the exercise: the book's causal_mask scores 0
    items=[Graded("dec_causal_mask", "make_mask", 2, check_causal_mask, "{exercise}: `make_mask`, True = may attend"),
           Graded("dec_torch_mask", "make_torch_mask", 2, check_pytorch_causal_mask,
                  "{exercise}: the same mask for `nn.MultiheadAttention` (True = blocked)")],
)


def _cache_hint(i: int):
    """What an error at a step after the first most likely means: the cache grew on the wrong axis."""

    def hint(exc, args) -> str:
        if i == 0:
            return ""
        return (
            "; it ran at position 0, where the cache is still empty: append the new key and value to the "
            "cache along the position axis, dim 2 of (B, H, t, d_k): torch.cat([past_k, k], dim=2)"
        )

    return hint


def check_cached_attention(step) -> None:
    """``step(mha, x_new, past_k, past_v) -> (out, k, v)`` must decode with a key-value cache.

    ``x_new (B, 1, E)`` is the newest position; ``past_k``, ``past_v`` are ``(B, H, t, d_k)``
    (``None`` at the first step). ``out (B, 1, E)`` is that position's self-attention
    output; ``k``, ``v (B, H, t + 1, d_k)`` the cache with the new position appended.
    The check decodes a sequence one position at a time, each step on copies of its
    inputs, and compares with the full causal self-attention computed at once.
    """
    torch.manual_seed(0)
    b, t, e, h = 2, 6, 8, 2
    mha = MultiHeadAttention(e, h).double().eval()
    x = torch.randn(b, t, e, dtype=torch.float64)
    with torch.no_grad():
        full, _ = mha(x, x, x, mask=torch.from_numpy(causal_mask(t)))
        k = v = None
        for i in range(t):
            x_i = x[:, i : i + 1]
            result = call_learner(step, mha, x_i, k, v, what=f"step (at position {i})", hint=_cache_hint(i))
            if not (isinstance(result, tuple) and len(result) == 3):
                raise CheckFailed(f"step {i}: return the triple (out, k, v), the output and the grown cache")
            out, k_new, v_new = result
            if tuple(getattr(out, "shape", ())) != (b, 1, e):
                shape = tuple(getattr(out, "shape", ()))
                raise CheckFailed(f"step {i}: out has shape {shape}, expected (B, 1, E) = {(b, 1, e)}")
            want = (b, h, i + 1, e // h)
            k_shape, v_shape = (tuple(getattr(c, "shape", ())) for c in (k_new, v_new))
            if k_shape != want or v_shape != want:
                raise CheckFailed(
                    f"step {i}: the returned cache has shapes k {k_shape}, v {v_shape}; "
                    f"after {i + 1} positions it must be (B, H, t, d_k) = {want}: append the new key and value "
                    "along the position axis (dim 2)"
                )
            got, dtype = as_array(out, f"step {i}: out")
            want_out = full[:, i : i + 1].numpy()
            if not close(got, want_out, dtype):
                only_self = mha(x_i, x_i, x_i)[0].numpy()
                if i > 0 and close(got, only_self, dtype):
                    raise CheckFailed(
                        f"step {i}: the new query attends only to itself: "
                        "use every cached key and value, not just the new ones"
                    )
                raise CheckFailed(
                    f"step {i}: the output differs from full causal attention by "
                    f"{np.abs(got - want_out).max():.3g} (divide the scores by "
                    f"sqrt(d_k) = {math.sqrt(e // h):g}, softmax over the keys, then mix the values)"
                )
            k, v = k_new, v_new
    print(f"Correct! {t} cached steps give exactly the full causal self-attention.")


exercise(
    "ex-lm-kv-cache", "A key-value cache", page="language_model", sets=("decoder",),
    items=[Graded("lm_cached_attention", "step", 4, check_cached_attention,
                  "{exercise}: one decoding step with a key-value cache")],
)
