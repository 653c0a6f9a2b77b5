"""Self-checks of the exercises page, each section ending with its exercise's declaration
(:mod:`.exercises`), in the page's order: self-attention, the warm-up with PyTorch's module,
multi-head attention from scratch, positional encoding, the attention of a trained model.

Each ``check_*`` runs the learner's code on small seeded inputs and compares the
*values* with a reference (the library's tested functions, or PyTorch's own
``nn.MultiheadAttention``), so any correct form passes (loops, ``einsum``, batched
``@``, torch, in place or not). Only when the values are wrong does a check recompute
the classic mistakes and name the one that matches; otherwise it reports the largest
difference with enough digits and the dtype. The conventions (copies of the inputs,
``Correct!``, :class:`CheckFailed`, the tolerance) are those of :mod:`.core`.
"""

from __future__ import annotations

import inspect
import math
from functools import partial

import numpy as np

from ..attention import causal_mask, scaled_dot_product_attention, softmax
from ..positional import positional_encoding
from ..toy import ToyConfig, ToyEncoder
from .core import CheckFailed, as_array, call_learner, close, diagnose, naive_softmax, transpose_hint
from .exercises import Graded, exercise

__all__ = [
    "check_attention_weights",
    "check_multihead_attention",
    "check_multihead_module",
    "check_positional_encoding",
    "check_self_attention",
    "mh_inputs",
    "mh_reference",
    "multihead_case",
    "self_attention_cases",
]


# ---------------------------------------------------------------- the self-attention exercise
def _attention_mistakes(q, k, v) -> dict[str, np.ndarray | list | None]:
    """What the classic mistakes of the self-attention exercise compute on ``Q (T, d_k)``, ``K (S, d_k)``, ``V (S, d_v)``."""
    (t, d_k), s, d_v = q.shape, k.shape[0], v.shape[-1]
    scores = q @ k.T  # (T, S)
    scaled = scores / math.sqrt(d_k)
    w = softmax(scaled)

    def in_dtypes(shift):  # exp() overflows at the precision of the maths: 88 in float32, 709 in float64
        return [
            naive_softmax((q.astype(dt) @ k.astype(dt).T) / dt(math.sqrt(d_k)), shift=shift, dtype=dt) @ v
            for dt in (np.float64, np.float32)
        ]

    def other_scale(n):  # a scale other than sqrt(d_k), named only where it gives other numbers
        return softmax(scores / math.sqrt(n)) @ v if n != d_k else None

    with np.errstate(all="ignore"):
        e = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
        whole = [softmax(scaled.reshape(-1)).reshape(t, s) @ v, (e / e.sum()) @ v]
        sigmoid = (1 / (1 + np.exp(-scaled))) @ v
        unnormalised = np.exp(np.minimum(scaled, 700)) @ v
    return {
        "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax": softmax(scores) @ v,
        "the scores are divided by d_k; the paper divides by sqrt(d_k)": softmax(scores / d_k) @ v,
        "the scores are multiplied by sqrt(d_k); divide by it: Q K^T / sqrt(d_k)": softmax(scores * math.sqrt(d_k)) @ v,
        "V is used as the keys: the scores are Q K^T, queries against keys (V only gives the values "
        "the weights mix)": softmax(q @ v.T / math.sqrt(d_k)) @ v if v.shape[-1] == d_k else None,
        f"the scores are divided by sqrt(S) = sqrt({s}), the number of keys (K.shape[0]); divide by "
        f"sqrt(d_k) = sqrt({d_k}), the width of each query and key (Q.shape[-1])": other_scale(s),
        f"the scores are divided by sqrt(T) = sqrt({t}), the number of queries (Q.shape[0]); divide by "
        f"sqrt(d_k) = sqrt({d_k}), the width of each query and key (Q.shape[-1])": other_scale(t),
        f"the scores are divided by sqrt(d_v) = sqrt({d_v}), the width of the values (V.shape[-1]); "
        f"divide by sqrt(d_k) = sqrt({d_k}), the width of the queries and keys (Q.shape[-1])": other_scale(d_v),
        "softmax normalises the wrong axis: each query's row must sum to 1 (axis=-1), "
        "you normalised over the queries (axis=0)": softmax(scaled, axis=0) @ v,
        "the weights are normalised over the whole matrix (a sum without an axis), so the whole "
        "(T, S) matrix sums to 1: each query's row must sum to 1, e.sum(axis=-1, keepdims=True)": whole,
        "you returned the attention weights; return weights @ V": w,
        "the weights multiply K instead of V: the output is weights @ V": w @ k,
        "there is no softmax: turn the scaled scores into weights with softmax before multiplying by V": scaled @ v,
        "a sigmoid is not a softmax: it squashes each score on its own, so a row does not sum to 1 and "
        "the keys do not compete; use exp(s - max) divided by the row's sum": sigmoid,
        "the weights are not normalised: divide exp(scores) by its row sum": unnormalised,
        "exp() overflows to inf on large scores (inf / inf = nan): subtract each row's maximum "
        "(scores.max(axis=-1, keepdims=True)) before exp(); softmax is unchanged by that shift": in_dtypes("none"),
        "you subtracted the maximum of the whole score matrix (one number) instead of each row's "
        "maximum: in a row whose scores are all far below it, every exp() underflows to 0 and "
        "0 / 0 = nan. Use scores.max(axis=-1, keepdims=True)": in_dtypes("global"),
    }


def self_attention_cases():
    """``(description, Q, K, V)`` cases of the self-attention check, seeded."""
    rng = np.random.default_rng(0)
    # d_k == d_v in the first case so that "K used as the values" has the right shape.
    small = (
        "small random inputs (T=4, S=6, d_k=d_v=8)",
        rng.normal(size=(4, 8)),
        rng.normal(size=(6, 8)),
        rng.normal(size=(6, 8)),
    )
    dv = (
        "d_v != d_k (T=3, S=5, d_k=4, d_v=2)",
        rng.normal(size=(3, 4)),
        rng.normal(size=(5, 4)),
        rng.normal(size=(5, 2)),
    )
    # Large scores: query 0 has scaled scores in the thousands (exp overflows without the row
    # max), query 3 has scores hundreds below every other row (underflows after a global max).
    q = np.abs(rng.normal(size=(4, 8))) * np.array([[300.0], [0.5], [-0.5], [-300.0]])
    k = np.abs(rng.normal(size=(6, 8))) + 1.0
    large = ("large scores (scaled scores from about -2000 to 2000)", q, k, rng.normal(size=(6, 8)))
    return [small, dv, large]


def check_self_attention(fn, *, cases=None) -> None:
    """Check ``fn(Q, K, V) -> output`` for 2-D arrays (NumPy in; NumPy or torch out).

    ``Q (T, d_k)``, ``K (S, d_k)``, ``V (S, d_v)`` -> ``output (T, d_v)``. Tries T != S,
    d_v != d_k, and scores large enough to overflow a softmax without the row maximum
    (and to underflow one that subtracts the global maximum). ``cases`` selects a subset
    of :func:`self_attention_cases` by index (the grading tool scores them apart).
    """
    all_cases = self_attention_cases()
    for i in cases if cases is not None else range(len(all_cases)):
        what, q, k, v = all_cases[i]
        expected, _ = scaled_dot_product_attention(q, k, v)
        got, dtype = as_array(call_learner(fn, q, k, v))  # on copies: q, k, v stay as they are
        diagnose(got, dtype, expected, _attention_mistakes(q, k, v), f"on {what}")
    if cases is None:
        print("Correct! Your self-attention matches the reference, including T != S, d_v != d_k and large scores.")


exercise(
    "ex-exercises-self-attention", "Self-attention in NumPy", page="exercises", sets=("lab", "exercises"), by_hand=True,
    items=[Graded("self_attention", "self_attention", 6, partial(check_self_attention, cases=[0, 1]),
                  "{exercise} on small inputs, $T \\ne S$ and $d_v \\ne d_k$"),
           Graded("self_attention_stability", "self_attention", 3, partial(check_self_attention, cases=[2]),
                  "{exercise} on large scores (the row maximum is subtracted)")],
)


# ---------------------------------------------------------------- the warm-up: nn.MultiheadAttention wrapped
def check_multihead_module(module_cls, embed_dim: int = 32, num_heads: int = 4) -> None:
    """Check a wrapper ``module_cls(embed_dim, num_heads)`` around ``nn.MultiheadAttention``
    whose ``forward(x)`` returns self-attention ``(B, T, E)`` for a batch-first ``x (B, T, E)``.

    The values are compared with a batch-first ``nn.MultiheadAttention`` holding the same
    weights, so any correct module passes (``batch_first=True``, or ``batch_first=False``
    with ``x`` transposed by hand); a mistake is named only when the values are wrong.
    """
    import torch
    from torch import nn

    module = call_learner(module_cls, embed_dim, num_heads, what=f"{module_cls.__name__}({embed_dim}, {num_heads})")
    inner = [m for m in module.modules() if isinstance(m, nn.MultiheadAttention)]
    if not inner:
        raise CheckFailed("your module does not contain an nn.MultiheadAttention; create one in __init__")
    mha = inner[0]
    if mha.embed_dim != embed_dim or mha.num_heads != num_heads:
        raise CheckFailed(
            f"nn.MultiheadAttention has embed_dim={mha.embed_dim}, num_heads={mha.num_heads}; "
            f"expected the arguments you were given: {embed_dim}, {num_heads}"
        )
    module.eval()
    torch.manual_seed(0)
    x = torch.randn(8, 10, embed_dim)  # (B, T, E)
    with torch.no_grad():
        # PyTorch's own module, built as the learner's (with or without biases, an extra key and
        # value, zero attention) but batch-first, holding the learner's weights read before its
        # forward runs
        ref = nn.MultiheadAttention(embed_dim, num_heads, bias=mha.in_proj_bias is not None,
                                    add_bias_kv=mha.bias_k is not None, add_zero_attn=mha.add_zero_attn,
                                    kdim=mha.kdim, vdim=mha.vdim, batch_first=True).eval()
        ref.load_state_dict({k: v for k, v in mha.state_dict().items() if k in ref.state_dict()})
        expected = ref(x, x, x, need_weights=False)[0]
        across_batch = ref(*(x.transpose(0, 1),) * 3, need_weights=False)[0].transpose(0, 1)
        out = call_learner(module, x, what="forward(x)")  # on a copy of x
        if isinstance(out, tuple):
            raise CheckFailed(
                "forward returned a tuple: nn.MultiheadAttention returns (output, weights); return only the output"
            )
    got, dtype = as_array(out, "forward")
    mistakes = {
        "nn.MultiheadAttention reads its input as (T, B, E) unless batch_first=True: each position "
        "attended across the batch instead of along its sequence. Build it with batch_first=True "
        "(or transpose x to (T, B, E) and the output back)": across_batch.numpy(),
    }
    diagnose(got, dtype, expected.numpy(), mistakes, f"on x of shape (B, T, E) = {tuple(x.shape)}")
    if not close(got, expected.numpy(), dtype):  # pragma: no cover - diagnose raised already
        raise CheckFailed("the output differs from self-attention on x: call mha(x, x, x)")
    print(
        f"Correct! Output shape {tuple(out.shape)} = (batch, seq_len, embed_dim), "
        "and each sequence attends only to itself."
    )


exercise(
    "ex-exercises-multihead-module", "Warm-up: wrap nn.MultiheadAttention", page="exercises", sets=("exercises",),
    numbered=False,
    items=[Graded("multi_head_warm_up", "MyMultiHeadAttention", 2, check_multihead_module,
                  "{exercise}: the wrapper around `nn.MultiheadAttention`", kind="class")],
)


# ---------------------------------------------------------------- the multi-head attention exercise
def mh_reference(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    num_heads,
    *,
    split="transpose",
    merge="transpose",
    scale="d_k",
    w_out=True,
    mask=None,
    shift="row",
    axis=-1,
    transposed=(),
    fill=-np.inf,
    empty_rows="nan",
    mask_after_softmax=False,
):
    """Multi-head self-attention in NumPy, right (the defaults) or with one classic mistake.

    ``x (B, T, E)``, ``w_* (E, E)`` with ``Q = x @ w_q`` -> ``(out (B, T, E), weights (B, H, T, T))``.
    ``mask`` (T, T) or (B, T, T), True = may attend: blocked scores get ``fill``; a row with
    nothing allowed is NaN (``empty_rows="nan"``, a plain softmax) or zeros (``"zero"``, as
    ``F.scaled_dot_product_attention``). The mistakes: ``split``/``merge`` by a reshape alone,
    ``split="strided"`` (a reshape to ``(B, T, d_k, H)``: head h gets every H-th feature),
    ``scale`` by ``"d_model"`` or ``"none"``, no W^O, the softmax over ``axis=-2`` (the
    queries) or ``axis=1`` (the heads), the matrices named in ``transposed`` ("q", "k", "v", "o") used transposed
    (``nn.Linear``'s layout), the mask multiplied into the weights after the softmax.
    """
    b, t, e = x.shape
    d_k = e // num_heads
    w_q, w_k, w_v, w_o = (w.T if name in transposed else w for name, w in zip("qkvo", (w_q, w_k, w_v, w_o)))

    def heads(m):  # (B, T, E) -> (B, H, T, d_k)
        if split == "reshape":  # the bug: heads mixed across positions
            return m.reshape(b, num_heads, t, d_k)
        if split == "strided":  # the bug: (B, T, d_k, H), so head h gets features h, h + H, ...
            return m.reshape(b, t, d_k, num_heads).transpose(0, 3, 1, 2)
        return m.reshape(b, t, num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ w_q), heads(x @ w_k), heads(x @ w_v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt({"d_k": d_k, "d_model": e, "none": 1}[scale])
    allowed = None if mask is None else (mask[:, None] if mask.ndim == 3 else mask)
    if allowed is not None and not mask_after_softmax:
        scores = np.where(allowed, scores, fill)
    w = softmax(scores, axis=axis) if empty_rows == "zero" else naive_softmax(scores, axis=axis, shift=shift)
    if allowed is not None and mask_after_softmax:
        w = np.where(allowed, w, 0.0)  # rows no longer sum to 1
    o = w @ v  # (B, H, T, d_k)
    if merge == "reshape":
        o = o.reshape(b, t, e)
    elif merge == "interleave":  # stacked on a new last axis: features of the heads interleaved
        o = o.transpose(0, 2, 3, 1).reshape(b, t, e)
    elif merge == "mean":
        return o.mean(1), w
    else:
        o = o.transpose(0, 2, 1, 3).reshape(b, t, e)  # (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, E)
    return (o @ w_o if w_out else o), w


def mh_inputs(embed_dim=12, num_heads=3, batch=2, seq_len=5, seed=0):
    """A seeded ``nn.MultiheadAttention`` (float64, no bias) and its weights as ``Q = x @ W``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(embed_dim, num_heads, bias=False, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(batch, seq_len, embed_dim, dtype=torch.float64)
    w_q, w_k, w_v = (w.T.detach().numpy().copy() for w in mha.in_proj_weight.chunk(3))  # nn.Linear: y = x W^T
    w_o = mha.out_proj.weight.T.detach().numpy().copy()
    return mha, x, (w_q, w_k, w_v, w_o)


def _mh_mistakes(x, ws, h, mask=None) -> dict[str, tuple | list[tuple]]:
    """``{message: (output, weights)}`` of the classic mistakes (a list: the same mistake several ways)."""
    def ref(**mistake):
        return mh_reference(x, *ws, h, mask=mask, **mistake)

    b, t, e = x.shape
    across_batch = ref_long = (None, None)
    if mask is None:  # (B, T, E) read as (T, B, E), or all B*T positions as one sequence
        across_batch = (mh_reference(x.swapaxes(0, 1), *ws, h)[0].swapaxes(0, 1), None)
        ref_long = (mh_reference(x.reshape(1, b * t, e), *ws, h)[0].reshape(b, t, e), None)
    return {
        "the heads are split as (B, T, d_k, H): head h gets features h, h + H, h + 2H, ... of each "
        "position instead of the block h*d_k .. (h+1)*d_k - 1; reshape to (B, T, H, d_k), then swap "
        "axes 1 and 2": [ref(split="strided", merge="interleave"), ref(split="strided")],
        "softmax normalises over the heads (axis=1 of the (B, H, T, T) scores): each query's row "
        "must sum to 1 over the keys, axis=-1": ref(axis=1),
        "the heads are split with a reshape to (B, H, T, d_k) but no transpose, so each 'head' mixes "
        "features of different positions: reshape to (B, T, H, d_k), then swap axes 1 and 2 "
        "(and swap back before merging)": ref(split="reshape", merge="reshape"),
        "the heads are split with a reshape but no transpose: reshape (B, T, E) to (B, T, H, d_k), "
        "then swap axes 1 and 2 to get (B, H, T, d_k)": ref(split="reshape"),
        "the heads are merged with a reshape but no transpose: swap (B, H, T, d_k) back to "
        "(B, T, H, d_k) before reshaping to (B, T, E)": ref(merge="reshape"),
        "the heads are concatenated along the wrong axis: the features of the heads are interleaved; "
        "head h must fill columns h*d_k to (h+1)*d_k - 1 (concatenate on the last axis)": ref(merge="interleave"),
        "W^O is missing: the concatenated heads go through the output projection (concat @ W_o)": ref(w_out=False),
        "the scores are divided by sqrt(d_model); each head divides by sqrt(d_k), its own width "
        "(d_k = d_model / H)": ref(scale="d_model"),
        "the scores are not scaled: divide by sqrt(d_k)": ref(scale="none"),
        "softmax normalises the wrong axis: in every head, each query's row of the (B, H, T, T) "
        "scores must sum to 1 (axis=-1); you normalised over the queries (axis=-2)": ref(axis=-2),
        "W_o is applied transposed (concat @ W_o.T, as F.linear(concat, W_o) does with a weight in "
        "nn.Linear's (out, in) layout): here the matrices are used as they are, output = concat @ W_o": ref(
            transposed="o"
        ),
        "the projections are applied transposed (X @ W.T, as F.linear(X, W) does with a weight in "
        "nn.Linear's (out, in) layout): here the matrices are used as they are, Q = X @ W_q, "
        "K = X @ W_k, V = X @ W_v and output = concat @ W_o": [ref(transposed="qkvo"), ref(transposed="qkv")],
        "you averaged the heads' outputs; concatenate them to (B, T, E) and apply W^O": ref(merge="mean"),
        "the sequences of the batch are mixed: attention ran across the batch axis (did you read "
        "(B, T, E) as (T, B, E)?); each sequence attends only within itself": across_batch,
        "the sequences of the batch are mixed: all B*T positions attended to each other as one "
        "long sequence; keep the batch axis apart": ref_long,
    }


def _run_multihead(impl, x, ws, num_heads, mask=None):
    """Run a function ``impl(X, W_q, W_k, W_v, W_o, num_heads[, mask])`` or an ``nn.Module`` class."""
    import torch
    from torch import nn

    e = x.shape[-1]
    if isinstance(impl, type) and issubclass(impl, nn.Module):
        module = call_learner(impl, e, num_heads, what=f"{impl.__name__}({e}, {num_heads})")
        names = ("q_proj", "k_proj", "v_proj", "out_proj")
        missing = [n for n in names if not isinstance(getattr(module, n, None), nn.Linear)]
        if missing:
            raise CheckFailed(f"your module needs nn.Linear attributes {names}; missing: {missing}")
        module = module.double().eval()
        with torch.no_grad():
            for name, w in zip(names, ws):
                getattr(module, name).weight.copy_(torch.from_numpy(w.T))  # nn.Linear stores W^T
                if getattr(module, name).bias is not None:
                    getattr(module, name).bias.zero_()
            xt = torch.from_numpy(x)
            n_args = len(
                [
                    p
                    for p in inspect.signature(module.forward).parameters.values()
                    if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD
                ]
            )
            args = (xt, xt, xt) if n_args >= 3 else (xt,)
            if mask is not None:
                args = args + (torch.from_numpy(mask),)
            result = call_learner(module, *args, what="forward", hint=transpose_hint)
    else:
        args = (x, *ws, num_heads) + ((mask,) if mask is not None else ())
        result = call_learner(impl, *args, hint=transpose_hint)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed("return a pair (output (B, T, E), weights (B, H, T, T)), the per-head attention weights too")
    return result


def multihead_case(impl, mask_kind=None, batch=2, seq_len=5, embed_dim=12, num_heads=3) -> None:
    import torch

    mha, xt, ws = mh_inputs(embed_dim, num_heads, batch, seq_len)
    x = xt.numpy()
    mask = causal_mask(seq_len) if mask_kind == "causal" else None
    with torch.no_grad():
        blocked = None if mask is None else torch.from_numpy(~mask)  # nn.MultiheadAttention: True = blocked
        out_t, w_t = mha(xt, xt, xt, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    expected, expected_w = out_t.numpy(), w_t.numpy()  # (B, T, E), (B, H, T, T)
    out, weights = _run_multihead(impl, x, ws, num_heads, mask)
    got, dtype = as_array(out, "the output")
    mistakes = _mh_mistakes(x, ws, num_heads, mask)
    if mask is not None:
        inverted = [mh_reference(x, *ws, num_heads, mask=~mask, fill=f) for f in (-np.inf, -1e9)]
        inverted.append(mh_reference(x, *ws, num_heads, mask=~mask, empty_rows="zero"))
        mistakes = {
            "the mask is the wrong way round: True = may attend, so keep scores where the mask is "
            "True and set the others to -inf": mh_reference(
                x, *ws, num_heads, mask=~mask | np.eye(seq_len, dtype=bool)
            ),
            "the mask is the wrong way round (True = may attend): position t must see 0..t, and the "
            "last position now has no key left (nan, zeros or a uniform row, depending on how the "
            "blocked scores are filled)": inverted,
            "the mask is not applied: position t may attend only to 0..t (set blocked scores to "
            "-inf before the softmax)": mh_reference(x, *ws, num_heads),
            "the mask is applied after the softmax: zeroing weights afterwards leaves rows that no "
            "longer sum to 1; set the blocked scores to -inf before the softmax": mh_reference(
                x, *ws, num_heads, mask=mask, mask_after_softmax=True
            ),
            "the blocked scores are set to 0, an ordinary score (exp(0) = 1, so the future still gets "
            "weight): set them to -inf": mh_reference(x, *ws, num_heads, mask=mask, fill=0.0),
            **mistakes,
        }
    mistakes = {m: v if isinstance(v, list) else [v] for m, v in mistakes.items()}
    what = f"multi-head attention, E={embed_dim}, H={num_heads}, input (B, T, E) = {x.shape}"
    diagnose(got, dtype, expected, {m: [p[0] for p in v] for m, v in mistakes.items()}, f"{what}, output")
    got_w, dtype_w = as_array(weights, "the weights")
    b, t = batch, seq_len
    if got_w.shape == (b, t, t) and close(got_w, expected_w.mean(1), dtype_w):
        raise CheckFailed(
            f"the weights are averaged over the heads, shape {got_w.shape}; return one matrix per head, "
            f"(B, H, T, T) = {expected_w.shape} (nn.MultiheadAttention averages unless average_attn_weights=False)"
        )
    diagnose(got_w, dtype_w, expected_w, {m: [p[1] for p in v] for m, v in mistakes.items()}, f"{what}, weights")


def check_multihead_attention(impl) -> None:
    """Check multi-head self-attention built from scratch, against ``nn.MultiheadAttention``.

    ``impl`` is either a function ``impl(X, W_q, W_k, W_v, W_o, num_heads) -> (output, weights)``
    with ``X (B, T, E)`` and ``(E, E)`` matrices used as ``Q = X @ W_q`` (NumPy float64 in,
    NumPy or torch out), or an ``nn.Module`` class ``impl(embed_dim, num_heads)`` with
    ``nn.Linear`` attributes ``q_proj, k_proj, v_proj, out_proj`` whose ``forward(x)`` (or
    ``forward(q, k, v)``) returns ``(output (B, T, E), weights (B, H, T, T))``. The weights
    of a seeded ``nn.MultiheadAttention`` are loaded into it; output and per-head weights
    are compared with PyTorch's.
    """
    multihead_case(impl)
    multihead_case(impl, batch=3, seq_len=4, embed_dim=8, num_heads=2)
    print("Correct! Your multi-head attention matches nn.MultiheadAttention: output and every head's weights.")


exercise(
    "ex-exercises-multihead", "Multi-head attention from scratch", page="exercises", sets=("lab", "exercises"),
    by_hand=True,
    items=[Graded("multi_head", "multi_head_attention", 8, check_multihead_attention,
                  "{exercise}: output and per-head weights equal PyTorch's")],
)


# ---------------------------------------------------------------- positional encoding
def _pair(j, d):  # columns 2i and 2i+1 both use the exponent 2i / d_model
    return 2 * (j // 2) / d


def _pe_variant(
    seq_len: int, d_model: int, exponent=_pair, swap: bool = False, start: int = 0, base: float = 10000.0, unit=1.0
) -> np.ndarray:
    """A positional encoding built with one rule changed, for naming mistakes: the exponent,
    sine and cosine swapped, the first position, the base, the angles times ``unit``."""
    pos = np.arange(start, start + seq_len)[:, None]
    cols = np.arange(d_model)[None, :]
    angle = pos / base ** exponent(cols, d_model) * unit
    return np.where((cols % 2 == 0) != swap, np.sin(angle), np.cos(angle))


def _pe_blocks(seq_len: int, d_model: int) -> np.ndarray:
    half = (d_model + 1) // 2  # first half sines, second half cosines, one frequency per pair
    freqs = np.arange(seq_len)[:, None] / 10000.0 ** (2 * np.arange(half) / d_model)
    return np.concatenate([np.sin(freqs), np.cos(freqs)[:, : d_model - half]], axis=1)


def _base_used(got: np.ndarray, d_model: int) -> float | None:
    """The base an encoding used, read from column 2 at position 1: sin(1 / base^(2 / d_model))."""
    if got.ndim != 2 or got.shape[0] < 2 or got.shape[1] < 3 or not 0 < got[1, 2] < 1:
        return None
    with np.errstate(all="ignore"):
        base = float(np.arcsin(got[1, 2]) ** (-d_model / 2))
    return base if np.isfinite(base) and base > 1 and abs(base / 10000 - 1) > 1e-3 else None


def _odd_width_hint(exc: Exception, args: tuple) -> str:
    seq_len, d_model = args
    return (
        f"; it works for an even d_model, and d_model={d_model} is odd: there are (d_model + 1) // 2 = "
        f"{(d_model + 1) // 2} sine columns (pe[:, 0::2]) but only d_model // 2 = {d_model // 2} cosine "
        "columns (pe[:, 1::2]), so take the cosines of the first d_model // 2 angles only"
    )


def check_positional_encoding(fn) -> None:
    """Check ``fn(seq_len, d_model) -> (seq_len, d_model)`` against the paper's sinusoidal
    encoding (float32 or float64, NumPy or torch), for an even and an odd ``d_model``."""
    for seq_len, d_model in ((12, 16), (7, 5)):
        expected = positional_encoding(seq_len, d_model)
        hint = _odd_width_hint if d_model % 2 else None  # reached only once the even case passed
        got, dtype = as_array(call_learner(fn, seq_len, d_model, hint=hint))

        def pe(**change):
            return _pe_variant(seq_len, d_model, **change)

        base = _base_used(got, d_model)  # read from the answer, to name any other base
        mistakes = {
            "sine and cosine are swapped: even columns (2i) take sin, odd columns (2i+1) take cos": pe(swap=True),
            "the sine and cosine of a pair use different frequencies: column 2i+1 must use the same "
            "exponent 2i/d_model as column 2i (you used the column index 2i+1)": pe(exponent=lambda j, d: j / d),
            "wrong frequency exponent: use 10000^(2i/d_model), i the pair index (you used i/d_model)": pe(
                exponent=lambda j, d: (j // 2) / d
            ),
            "the exponent is doubled twice: a column index that counts by 2 (col = 0, 2, 4, ...) is "
            "already 2i, so the exponent is col/d_model, not 2*col/d_model": pe(exponent=lambda j, d: 2 * _pair(j, d)),
            "wrong frequency exponent: divide by 10000^(2i/d_model), not multiply": pe(
                exponent=lambda j, d: -_pair(j, d)
            ),
            "the positions are counted from 1: the first position is pos = 0 (np.arange(seq_len)), "
            "so row 0 is sin(0) = 0, cos(0) = 1": pe(start=1),
            "the angles are treated as degrees: np.sin and np.cos take radians, and the angle is "
            "pos / 10000^(2i/d_model) as it is, with no conversion": [pe(unit=math.pi / 180), pe(unit=180 / math.pi)],
            "the sines and cosines are in two blocks; the paper interleaves them: "
            "column 2i = sin, column 2i+1 = cos": _pe_blocks(seq_len, d_model),
            "the result is transposed: return shape (seq_len, d_model)": expected.T,
        }
        if base is not None:
            mistakes[
                f"the frequencies use the base {base:.6g}; the paper's base is 10000: angle = pos / 10000^(2i/d_model)"
            ] = pe(base=base)
        diagnose(got, dtype, expected, mistakes, f"for seq_len={seq_len}, d_model={d_model}")
    print(f"Correct! Your positional encoding ({dtype}) matches the paper's formula, for even and odd d_model.")


exercise(
    "ex-exercises-positional", "Positional encoding", page="exercises", sets=("exercises",),
    items=[Graded("positional", "my_positional_encoding", 5, check_positional_encoding,
                  "{exercise}, even and odd `d_model`")],
)


# ---------------------------------------------------------------- the trained model exercise: the toy model's weights
def check_attention_weights(fn, model) -> None:
    """Check ``fn(model, tokens) -> weights`` that reads a toy model's attention.

    ``model`` is a :class:`~transformer_lessons.toy.ToyEncoder`; ``tokens`` is one sequence,
    int64 ``(T,)``. ``fn`` returns the layer's per-head weights ``(H, T, T)`` (NumPy or
    tensor), rows = queries; the reference reads ``model.attention_maps()[0][0]``.
    """
    import torch

    cfg = model.cfg
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg.vocab_size, (cfg.seq_len,), generator=gen)  # (T,)
    model.eval()
    with torch.no_grad():
        model(tokens[None])  # (1, T) -> logits (1, T, V); stores the attention maps
        expected = model.attention_maps()[0][0].double().numpy()  # (H, T, T)

    def batch_hint(exc, args):
        return f"; note that model(...) takes a batch (B, T): tokens[None] has shape (1, {tokens.shape[0]})"

    with torch.no_grad():  # on a copy of the model and of the tokens
        result = call_learner(fn, model, tokens, hint=batch_hint)
    got, dtype = as_array(result)
    h, t, _ = expected.shape
    if got.shape == (1, h, t, t):
        raise CheckFailed(
            f"shape {got.shape} still has the batch dimension: take sequence 0 (weights[0]) to get (H, T, T)"
        )
    if got.shape == (t, t):
        if close(got, expected.mean(0), dtype):
            raise CheckFailed(
                f"you averaged the {h} heads into one (T, T) matrix; return every head: (H, T, T) = {expected.shape}"
            )
        raise CheckFailed(f"shape {got.shape} is one matrix; return one per head: (H, T, T) = {expected.shape}")
    mistakes = {
        "rows and columns are swapped: row t must be query t (who attends), column s key s": np.swapaxes(
            expected, -1, -2
        ),
    }
    if any(close(got, m, dtype) for m in mistakes.values()):
        diagnose(got, dtype, expected, mistakes, "attention weights (H, T, T)")
    if got.shape == expected.shape and not close(got, expected, dtype) and not np.allclose(got.sum(-1), 1.0, atol=1e-4):
        raise CheckFailed("the rows do not sum to 1: these are not softmax weights (scores or logits?)")
    diagnose(got, dtype, expected, mistakes, "attention weights (H, T, T)")
    print(f"Correct! Your function returns the per-head attention weights, shape {got.shape} = (H, T, T).")


def _check_untrained_toy(fn) -> None:
    """:func:`check_attention_weights` on a seeded, untrained toy model: the check compares
    the learner's reading with the model's own maps, so training adds nothing to grade."""
    import torch

    torch.manual_seed(0)
    check_attention_weights(fn, ToyEncoder(ToyConfig()).eval())


exercise(
    "ex-exercises-visualise", "The attention of a trained model", page="exercises", sets=("lab", "exercises"),
    items=[Graded("trained_weights", "attention_weights", 3, _check_untrained_toy,
                  "{exercise} (checked on an untrained toy model)")],
)
