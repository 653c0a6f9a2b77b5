"""Self-checks that learners call from the exercise cells.

Each ``check_*`` runs the learner's code on small seeded inputs, compares it
with the library's reference implementation, and either prints a one-line
success message or raises :class:`AssertionError` saying *what* is wrong. When
an answer is wrong, the checker recomputes the classic mistakes and names the
one that matches, so the message is a diagnosis rather than "values differ".
"""

from __future__ import annotations

import math

import numpy as np

from .attention import scaled_dot_product_attention, softmax
from .positional import positional_encoding


def _call(fn, *args):
    """Call the learner's function; turn its exception into a readable failure."""
    try:
        with np.errstate(all="ignore"):
            result = fn(*args)
    except Exception as exc:  # the learner's bug, reported, not hidden
        shapes = ", ".join(str(getattr(a, "shape", a)) for a in args)
        raise AssertionError(
            f"your function raised {type(exc).__name__}: {exc} (called with inputs of shapes {shapes})"
        ) from exc
    if result is None:
        raise AssertionError("your function returned None: did you forget the `return` statement?")
    if hasattr(result, "detach"):  # a torch tensor is fine too
        result = result.detach().numpy()
    if isinstance(result, tuple):
        raise AssertionError(
            f"your function returned a tuple of {len(result)} items; return only the output array"
        )
    return np.asarray(result, dtype=float)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- exercise 1
def _attention_mistakes(q, k, v) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):  # some mistakes overflow on large scores, by design
        return _attention_mistake_table(q, k, v)


def _attention_mistake_table(q, k, v) -> dict[str, np.ndarray]:
    d_k = q.shape[-1]
    scores = q @ k.T
    w = softmax(scores / math.sqrt(d_k))
    return {
        "the scores are not scaled: divide Q K^T by sqrt(d_k) before the softmax": softmax(scores) @ v,
        "the scores are divided by d_k; the paper divides by sqrt(d_k)": softmax(scores / d_k) @ v,
        "softmax normalises the wrong axis: each query's row must sum to 1 (axis=-1), "
        "you normalised over the queries (axis=0)": softmax(scores / math.sqrt(d_k), axis=0) @ v,
        "you returned the attention weights; return weights @ V": w,
        "the weights multiply K instead of V: the output is weights @ V": w @ k,
        "there is no softmax: turn the scaled scores into weights with softmax before "
        "multiplying by V": (scores / math.sqrt(d_k)) @ v,
        "the weights are not normalised: divide exp(scores) by its row sum": np.exp(scores / math.sqrt(d_k)) @ v,
    }


def _diagnose(got: np.ndarray, expected: np.ndarray, mistakes: dict[str, np.ndarray], what: str) -> None:
    if _same(got, expected):
        return
    for message, wrong in mistakes.items():
        if _same(got, wrong):
            raise AssertionError(f"{what}: {message}.")
    if got.shape != expected.shape:
        raise AssertionError(f"{what}: expected shape {expected.shape}, got {got.shape}.")
    if not np.all(np.isfinite(got)):
        raise AssertionError(f"{what}: the result contains nan or inf.")
    worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
    raise AssertionError(
        f"{what}: values differ from the reference; largest difference at index {tuple(int(i) for i in worst)}: "
        f"expected {expected[worst]:.6g}, got {got[worst]:.6g}."
    )


def check_self_attention(fn) -> None:
    """Check ``fn(Q, K, V) -> output`` for 2-D NumPy arrays.

    ``Q (T, d_k)``, ``K (S, d_k)``, ``V (S, d_v)`` -> ``output (T, d_v)``.
    Tries T != S, d_v != d_k, and scores large enough to overflow a softmax
    that does not subtract the row maximum.
    """
    rng = np.random.default_rng(0)
    # d_k == d_v so that "K used as the values" has the right shape and is caught by value.
    cases = [
        ("small random inputs (T=4, S=6, d_k=d_v=8)", rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 8))),
        ("d_v != d_k (T=3, S=5, d_k=4, d_v=2)", rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))),
    ]
    for what, q, k, v in cases:
        got = _call(fn, q, k, v)
        expected, _ = scaled_dot_product_attention(q, k, v)
        _diagnose(got, expected, _attention_mistakes(q, k, v), f"on {what}")

    # Scaled scores with a spread of about 1600: exp() overflows unless the row max is subtracted.
    q, k, v = 40 * rng.normal(size=(4, 8)), 40 * rng.normal(size=(6, 8)), rng.normal(size=(6, 8))
    got = _call(fn, q, k, v)
    expected, _ = scaled_dot_product_attention(q, k, v)
    if not np.all(np.isfinite(got)):
        raise AssertionError(
            "on large scores (Q K^T / sqrt(d_k) in the thousands) the output contains nan or inf: "
            "exp() overflows. Subtract each row's maximum from the scores before exp(); "
            "softmax is unchanged by that shift."
        )
    _diagnose(got, expected, _attention_mistakes(q, k, v), "on large scores")
    print("Correct! Your self-attention matches the reference, including T != S, d_v != d_k and large scores.")


# ---------------------------------------------------------------- exercise 2
def check_multihead_module(module_cls, embed_dim: int = 32, num_heads: int = 4) -> None:
    """Check a learner's ``module_cls(embed_dim, num_heads)`` whose ``forward(x)``
    returns the self-attention output ``(B, T, E)`` for a batch-first ``x (B, T, E)``.

    The module must wrap ``nn.MultiheadAttention``; its output is compared with
    our own :class:`~transformer_lessons.MultiHeadAttention` built from the same
    weights, which catches a missing ``batch_first=True`` (the output has the
    right shape but mixes the sequences of the batch).
    """
    import torch
    from torch import nn

    from .multihead import MultiHeadAttention

    try:
        module = module_cls(embed_dim, num_heads)
    except Exception as exc:
        raise AssertionError(f"{module_cls.__name__}({embed_dim}, {num_heads}) raised {type(exc).__name__}: {exc}") from exc
    inner = [m for m in module.modules() if isinstance(m, nn.MultiheadAttention)]
    if not inner:
        raise AssertionError("your module does not contain an nn.MultiheadAttention; create one in __init__")
    mha = inner[0]
    if mha.embed_dim != embed_dim or mha.num_heads != num_heads:
        raise AssertionError(
            f"nn.MultiheadAttention has embed_dim={mha.embed_dim}, num_heads={mha.num_heads}; "
            f"expected the arguments you were given: {embed_dim}, {num_heads}"
        )
    module.eval()
    torch.manual_seed(0)
    x = torch.randn(8, 10, embed_dim)  # (B, T, E)
    try:
        with torch.no_grad():
            out = module(x)
    except Exception as exc:
        raise AssertionError(f"forward(x) with x of shape {tuple(x.shape)} raised {type(exc).__name__}: {exc}") from exc
    if isinstance(out, tuple):
        raise AssertionError(
            "forward returned a tuple: nn.MultiheadAttention returns (output, weights); return only the output"
        )
    if tuple(out.shape) != tuple(x.shape):
        raise AssertionError(f"output shape {tuple(out.shape)}; expected (batch, seq_len, embed_dim) = {tuple(x.shape)}")
    if not mha.batch_first:
        raise AssertionError(
            "nn.MultiheadAttention was built without batch_first=True: it reads (B, T, E) as "
            "(T, B, E) and attends across the batch instead of along each sequence. The shape "
            "looks right, the values are wrong."
        )
    reference = MultiHeadAttention.from_torch(mha).eval()
    with torch.no_grad():
        expected, _ = reference(x, x, x)
    if not torch.allclose(out, expected, atol=1e-5):
        raise AssertionError(
            "the output differs from self-attention on x: pass the same tensor as query, key and "
            "value (mha(x, x, x)) and return the first element of the result"
        )
    print(f"Correct! Output shape {tuple(out.shape)} = (batch, seq_len, embed_dim), and each sequence attends only to itself.")


# ---------------------------------------------------------------- exercise 3
def _pe_variant(seq_len: int, d_model: int, exponent, swap: bool = False, blocks: bool = False) -> np.ndarray:
    """A positional encoding built with a given exponent rule, for diagnosing mistakes."""
    pos = np.arange(seq_len)[:, None]
    cols = np.arange(d_model)[None, :]
    angle = pos / 10000.0 ** exponent(cols, d_model)
    even = cols % 2 == 0
    pe = np.where(even != swap, np.sin(angle), np.cos(angle))
    if blocks:  # first half sines, second half cosines, one frequency per pair
        half = (d_model + 1) // 2
        freqs = pos / 10000.0 ** (2 * np.arange(half) / d_model)
        pe = np.concatenate([np.sin(freqs), np.cos(freqs)[:, : d_model - half]], axis=1)
    return pe


def check_positional_encoding(fn) -> None:
    """Check ``fn(seq_len, d_model) -> (seq_len, d_model)`` against the paper's
    sinusoidal encoding, for an even and an odd ``d_model``."""
    pair = lambda j, d: 2 * (j // 2) / d  # column 2i and 2i+1 both use 2i / d_model  # noqa: E731
    for seq_len, d_model in ((12, 16), (7, 5)):
        got = _call(fn, seq_len, d_model)
        expected = positional_encoding(seq_len, d_model)
        mistakes = {
            "sine and cosine are swapped: even columns (2i) take sin, odd columns (2i+1) take cos":
                _pe_variant(seq_len, d_model, pair, swap=True),
            "the sine and cosine of a pair use different frequencies: column 2i+1 must use the same "
            "exponent 2i/d_model as column 2i (you used the column index 2i+1)":
                _pe_variant(seq_len, d_model, lambda j, d: j / d),
            "wrong frequency exponent: use 10000^(2i/d_model) where i is the pair index (you used i/d_model)":
                _pe_variant(seq_len, d_model, lambda j, d: (j // 2) / d),
            "wrong frequency exponent: divide by 10000^(2i/d_model), not multiply":
                _pe_variant(seq_len, d_model, lambda j, d: -pair(j, d)),
            "the sines and cosines are in two blocks; the paper interleaves them: "
            "column 2i = sin, column 2i+1 = cos":
                _pe_variant(seq_len, d_model, pair, blocks=True),
        }
        _diagnose(got, expected, mistakes, f"for seq_len={seq_len}, d_model={d_model}")
    print("Correct! Your positional encoding matches the paper's formula, for even and odd d_model.")


# ---------------------------------------------------------------- exercise 3
def check_attention_weights(fn, model) -> None:
    """Check ``fn(model, tokens) -> weights`` that reads a trained toy model's attention.

    ``model`` is a :class:`~transformer_lessons.toy.ToyEncoder`; ``tokens`` is one
    sequence, an int64 tensor of shape ``(T,)``. ``fn`` must return the first
    layer's per-head attention weights for that sequence, ``(H, T, T)`` (NumPy
    array or tensor), rows = queries. The reference runs ``model(tokens[None])``
    and reads ``model.attention_maps()[0][0]``.
    """
    import torch

    cfg = model.cfg
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, cfg.vocab_size, (cfg.seq_len,), generator=gen)  # (T,)
    model.eval()
    with torch.no_grad():
        model(tokens[None])  # (1, T) -> logits (1, T, V); stores the attention maps
        expected = model.attention_maps()[0][0].numpy()  # (H, T, T)
    try:
        with torch.no_grad():
            got = fn(model, tokens.clone())
    except Exception as exc:
        raise AssertionError(
            f"your function raised {type(exc).__name__}: {exc} (called with tokens of shape {tuple(tokens.shape)}; "
            f"note that model(...) takes a batch (B, T): tokens[None] has shape (1, {tokens.shape[0]}))"
        ) from exc
    if got is None:
        raise AssertionError("your function returned None: did you forget the `return` statement?")
    if isinstance(got, tuple):
        raise AssertionError(f"your function returned a tuple of {len(got)} items; return only the weights (H, T, T)")
    if hasattr(got, "detach"):
        got = got.detach().numpy()
    got = np.asarray(got, dtype=float)
    h, t, _ = expected.shape
    if got.shape == (1, h, t, t):
        raise AssertionError(f"shape {got.shape} still has the batch dimension: take sequence 0 (weights[0]) to get (H, T, T)")
    if got.shape == (t, t):
        if _same(got, expected.mean(0)):
            raise AssertionError(f"you averaged the {h} heads into one (T, T) matrix; return every head: (H, T, T) = {expected.shape}")
        raise AssertionError(f"shape {got.shape} is one matrix; return one per head: (H, T, T) = {expected.shape}")
    if got.shape != expected.shape:
        raise AssertionError(f"expected the first layer's weights of shape (H, T, T) = {expected.shape}, got {got.shape}")
    if _same(got, np.swapaxes(expected, -1, -2)):
        raise AssertionError("rows and columns are swapped: row t must be query t (who attends), column s key s")
    if not np.allclose(got.sum(-1), 1.0):
        raise AssertionError("the rows do not sum to 1: these are not softmax weights (scores or logits?)")
    _diagnose(got, expected, {}, "attention weights")
    print(f"Correct! Your function returns the per-head attention weights, shape {got.shape} = (H, T, T).")
