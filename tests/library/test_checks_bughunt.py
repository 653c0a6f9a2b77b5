"""The bug-hunt checks (transformer_lessons.checks.bughunt) pass every fix and name what is still wrong."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_lessons import causal_mask, scaled_dot_product_attention, softmax
from transformer_lessons.checks.bughunt import (
    CHECKS,
    check_batched_attention,
    check_causal_attention,
    check_causal_self_attention,
    check_padded_attention,
    check_softmax_rows,
    check_split_heads,
)
from transformer_lessons.checks import CheckFailed


def _sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _masked(Q, K, V, allowed, fill=-np.inf):
    s = np.where(allowed, Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), fill)
    return softmax(s) @ V


def _t(*a, dtype=torch.float64):
    return [torch.tensor(x, dtype=dtype) for x in a]


def _causal_in_place(Q, K, V):
    """Correct, and scales its Q in place."""
    Q /= np.sqrt(Q.shape[-1])
    return softmax(np.where(np.tril(np.ones((len(Q), len(Q)), dtype=bool)), Q @ K.T, -np.inf)) @ V


def _batched_in_place(Q, K, V):
    Q /= np.sqrt(Q.shape[-1])
    return softmax(Q @ np.swapaxes(K, -1, -2)) @ V


def _padded_in_place(Q, K, V, real):
    Q /= np.sqrt(Q.shape[-1])
    return softmax(np.where(real[:, None, :], Q @ np.swapaxes(K, -1, -2), -np.inf)) @ V


def _padded_nan_rows(Q, K, V, real):
    """Real tokens right; padding queries blocked too, with a plain softmax: their rows are nan."""
    s = np.where(real[:, None, :] & real[:, :, None], Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ V


TABLE = {
    check_causal_attention: (
        {
            "np.tril": lambda Q, K, V: _masked(Q, K, V, np.tril(np.ones((len(Q), len(Q)), dtype=bool))),
            "library mask": lambda Q, K, V: _masked(Q, K, V, causal_mask(len(Q))),
            "-1e9": lambda Q, K, V: _masked(Q, K, V, causal_mask(len(Q)), fill=-1e9),
            "library sdpa": lambda Q, K, V: scaled_dot_product_attention(Q, K, V, causal_mask(len(Q)))[0],
            "torch is_causal": lambda Q, K, V: F.scaled_dot_product_attention(*_t(Q, K, V), is_causal=True),
            "torch float32": lambda Q, K, V: F.scaled_dot_product_attention(
                *_t(Q, K, V, dtype=torch.float32), is_causal=True
            ),
            "loop": lambda Q, K, V: np.stack(
                [_masked(Q[t : t + 1], K[: t + 1], V[: t + 1], True)[0] for t in range(len(Q))]
            ),
            "np.tri": lambda Q, K, V: _masked(Q, K, V, np.tri(len(Q), dtype=bool)),
            "arange comparison": lambda Q, K, V: _masked(
                Q, K, V, np.arange(len(Q))[None, :] <= np.arange(len(Q))[:, None]
            ),
            "torch masked_fill float32": lambda Q, K, V: (
                lambda q, k, v: torch.softmax(
                    (q @ k.T / q.shape[-1] ** 0.5).masked_fill(
                        torch.ones(len(q), len(q)).triu(1).bool(), float("-inf")
                    ),
                    -1,
                )
                @ v
            )(*_t(Q, K, V, dtype=torch.float32)),
            "additive -inf bias": lambda Q, K, V: softmax(
                Q @ K.T / np.sqrt(Q.shape[-1]) + np.triu(np.full((len(Q), len(Q)), -np.inf), 1)
            )
            @ V,
            "in place": _causal_in_place,
        },
        {
            "wrong way round": lambda Q, K, V: _masked(Q, K, V, np.triu(np.ones((len(Q), len(Q)), dtype=bool))),
            "only the future": lambda Q, K, V: _masked(Q, K, V, ~np.tril(np.ones((len(Q), len(Q)), dtype=bool))),
            "diagonal is blocked": lambda Q, K, V: _masked(
                Q, K, V, np.tril(np.ones((len(Q), len(Q)), dtype=bool), k=-1)
            ),
            "there is no mask": lambda Q, K, V: _masked(Q, K, V, True),
            "applied after the softmax": lambda Q, K, V: (
                _sm(Q @ K.T / np.sqrt(Q.shape[-1])) * np.tril(np.ones((len(Q), len(Q))))
            )
            @ V,
            "wrong way round ": lambda Q, K, V: _masked(
                Q, K, V, np.triu(np.ones((len(Q), len(Q)), dtype=bool)), fill=-1e9
            ),
        },
    ),
    check_softmax_rows: (
        {
            "axis=-1": lambda s: _sm(s, -1),
            "axis=1": lambda s: _sm(s, 1),
            "library": softmax,
            "torch": lambda s: torch.softmax(torch.tensor(s), dim=-1),
            "torch float32": lambda s: torch.tensor(s, dtype=torch.float32).softmax(-1),
            "max per row via [:, None]": lambda s: (lambda e: e / e.sum(1)[:, None])(np.exp(s - s.max(1)[:, None])),
            "np.newaxis": lambda s: (lambda e: e / e.sum(-1)[:, np.newaxis])(np.exp(s - s.max(-1)[:, np.newaxis])),
            "logsumexp": lambda s: np.exp(
                s - s.max(-1, keepdims=True) - np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1, keepdims=True))
            ),
            "loop per row": lambda s: np.stack([np.exp(r - r.max()) / np.exp(r - r.max()).sum() for r in s]),
            "numpy float32": lambda s: _sm(s.astype(np.float32)),
            "F.softmax dim=1": lambda s: F.softmax(torch.tensor(s), dim=1),
            "in place": lambda s: (lambda e: np.divide(e, e.sum(-1, keepdims=True), out=e))(
                np.exp(np.subtract(s, s.max(-1, keepdims=True), out=s), out=s)
            ),
        },
        {
            "each column sums to 1": lambda s: _sm(s, 0),
            "maximum is taken per column": lambda s: (lambda e: e / e.sum(-1, keepdims=True))(
                np.exp(s - s.max(0, keepdims=True))
            ),
            "row sums are divided": lambda s: (lambda e: e / e.sum(-1))(np.exp(s - s.max(-1, keepdims=True))),
            "row maxima are subtracted": lambda s: (lambda e: e / e.sum(-1, keepdims=True))(np.exp(s - s.max(-1))),
            "np.exp overflows": lambda s: (lambda e: e / e.sum(-1, keepdims=True))(np.exp(s)),
            "overflows.*float32": lambda s: (lambda e: e / e.sum(-1, keepdims=True))(np.exp(s.astype(np.float32))),
            "sum is taken over the columns": lambda s: (lambda e: e / e.sum(0, keepdims=True))(
                np.exp(s - s.max(-1, keepdims=True))),
        },
    ),
    check_batched_attention: (
        {
            "swapaxes": lambda Q, K, V: softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])) @ V,
            "transpose(0, 2, 1)": lambda Q, K, V: softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])) @ V,
            "einsum": lambda Q, K, V: np.einsum(
                "bts,bsd->btd", softmax(np.einsum("btd,bsd->bts", Q, K) / math.sqrt(Q.shape[-1])), V
            ),
            "loop": lambda Q, K, V: np.stack([softmax(q @ k.T / np.sqrt(q.shape[-1])) @ v for q, k, v in zip(Q, K, V)]),
            "torch": lambda Q, K, V: F.scaled_dot_product_attention(*_t(Q, K, V)),
            "torch mT float32": lambda Q, K, V: (lambda q, k, v: torch.softmax(q @ k.mT / q.shape[-1] ** 0.5, -1) @ v)(
                *_t(Q, K, V, dtype=torch.float32)
            ),
            "np.matmul + transpose": lambda Q, K, V: np.matmul(
                softmax(np.matmul(Q, np.transpose(K, (0, 2, 1))) / np.sqrt(Q.shape[-1])), V
            ),
            "numpy float32": lambda Q, K, V: (
                lambda q, k, v: softmax(q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))) @ v
            )(*(a.astype(np.float32) for a in (Q, K, V))),
            "scale Q first": lambda Q, K, V: softmax((Q / np.sqrt(Q.shape[-1])) @ np.swapaxes(K, 1, 2)) @ V,
            "torch bmm": lambda Q, K, V: (
                lambda q, k, v: torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5, -1), v)
            )(*_t(Q, K, V)),
            "one einsum each": lambda Q, K, V: np.einsum(
                "bts,bsd->btd", softmax(np.einsum("btk,bsk->bts", Q / np.sqrt(Q.shape[-1]), K)), V
            ),
            "in place": _batched_in_place,
        },
        {
            "reverses all three axes": lambda Q, K, V: softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V,
            "K.transpose\\(1, 0, 2\\) swaps the batch": lambda Q, K, V: softmax(
                Q @ K.transpose(1, 0, 2) / np.sqrt(Q.shape[-1])) @ V,
            "summed over the batch": lambda Q, K, V: softmax(
                np.einsum("btd,bsd->ts", Q, K) / np.sqrt(Q.shape[-1])) @ V,
            "over the queries": lambda Q, K, V: softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]), axis=1) @ V,
            "shape": lambda Q, K, V: np.dot(softmax(np.dot(Q, np.swapaxes(K, -1, -2))), V),
            "not scaled": lambda Q, K, V: softmax(Q @ np.swapaxes(K, -1, -2)) @ V,
        },
    ),
    check_split_heads: (
        {
            "numpy": lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3),
            "swapaxes": lambda x, h: np.swapaxes(x.reshape(*x.shape[:2], h, -1), 1, 2),
            "torch view": lambda x, h: torch.tensor(x).view(x.shape[0], x.shape[1], h, -1).transpose(1, 2),
            "torch float32": lambda x, h: torch.tensor(x, dtype=torch.float32)
            .unflatten(-1, (h, -1))
            .permute(0, 2, 1, 3),
            "stack of slices": lambda x, h: np.stack(np.split(x, h, axis=-1), axis=1),
            "einops-style loop": lambda x, h: np.stack(
                [x[..., i * (x.shape[-1] // h) : (i + 1) * (x.shape[-1] // h)] for i in range(h)], 1
            ),
            "torch permute": lambda x, h: torch.tensor(x).reshape(*x.shape[:2], h, -1).permute(0, 2, 1, 3),
            "np.moveaxis": lambda x, h: np.moveaxis(x.reshape(*x.shape[:2], h, -1), 2, 1),
            "numpy float32": lambda x, h: x.astype(np.float32).reshape(*x.shape[:2], h, -1).transpose(0, 2, 1, 3),
            "array of heads, transposed": lambda x, h: np.array(np.split(x, h, axis=-1)).transpose(1, 0, 2, 3),
            "torch swapaxes": lambda x, h: torch.tensor(x).unflatten(2, (h, x.shape[-1] // h)).swapaxes(1, 2),
        },
        {
            "mixes different positions": lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1),
            "every H-th feature": lambda x, h: x.reshape(x.shape[0], x.shape[1], -1, h).transpose(0, 3, 1, 2),
            "swap axes 1 and 2": lambda x, h: x.reshape(x.shape[0], x.shape[1], h, -1),
        },
    ),
    check_causal_self_attention: (
        {
            "~mask": lambda mha, x: mha(
                x, x, x, attn_mask=~torch.tril(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool))
            )[0],
            "triu diagonal=1": lambda mha, x: mha(
                x, x, x, attn_mask=torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
            )[0],
            "float -inf": lambda mha, x: mha(
                x, x, x, attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=torch.float64)
            )[0],
            "is_causal": lambda mha, x: mha(
                x,
                x,
                x,
                attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=torch.float64),
                is_causal=True,
            )[0],
            "need_weights=False": lambda mha, x: mha(
                x, x, x, need_weights=False, attn_mask=~torch.tril(torch.ones(4, 4, dtype=torch.bool))
            )[0],
            "float mask by masked_fill": lambda mha, x: mha(
                x,
                x,
                x,
                attn_mask=torch.zeros(4, 4, dtype=torch.float64).masked_fill(
                    torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf")
                ),
            )[0],
            "3-D mask per head": lambda mha, x: mha(
                x, x, x, attn_mask=torch.ones(4, 4, dtype=torch.bool).triu(1).expand(x.shape[0] * 2, 4, 4)
            )[0],
            "ones().triu(1).bool()": lambda mha, x: mha(x, x, x, attn_mask=torch.ones(4, 4).triu(1).bool())[0],
            "arange comparison": lambda mha, x: mha(
                x, x, x, attn_mask=torch.arange(4)[None, :] > torch.arange(4)[:, None]
            )[0],
            "keyword arguments": lambda mha, x: mha(
                query=x, key=x, value=x, attn_mask=~torch.ones(4, 4, dtype=torch.bool).tril()
            )[0],
        },
        {
            "True = blocked": lambda mha, x: mha(x, x, x, attn_mask=torch.tril(torch.ones(4, 4, dtype=torch.bool)))[0],
            "float attn_mask": lambda mha, x: mha(x, x, x, attn_mask=torch.tril(torch.ones(4, 4, dtype=torch.float64)))[
                0
            ],
            "diagonal is blocked": lambda mha, x: mha(
                x, x, x, attn_mask=torch.triu(torch.ones(4, 4, dtype=torch.bool))
            )[0],
            "there is no mask": lambda mha, x: mha(x, x, x)[0],
            "wrong dtype": lambda mha, x: mha(x, x, x, attn_mask=torch.tril(torch.ones(4, 4)))[0],
            "wrong dtype ": lambda mha, x: mha(
                x, x, x, attn_mask=torch.zeros(4, 4).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -torch.inf)
            )[0],
        },
    ),
    check_padded_attention: (
        {
            "keys": lambda Q, K, V, r: _masked(Q, K, V, r[:, None, :]),
            "keys, -1e9": lambda Q, K, V, r: _masked(Q, K, V, r[:, None, :], fill=-1e9),
            "keys and queries": lambda Q, K, V, r: _masked(Q, K, V, r[:, None, :] & r[:, :, None]),
            "library": lambda Q, K, V, r: scaled_dot_product_attention(Q, K, V, r[:, None, :])[0],
            "torch": lambda Q, K, V, r: F.scaled_dot_product_attention(
                *_t(Q, K, V), attn_mask=torch.tensor(r)[:, None, :]
            ),
            "expand_dims": lambda Q, K, V, r: _masked(Q, K, V, np.expand_dims(r, 1)),
            "-1e30": lambda Q, K, V, r: _masked(Q, K, V, r[:, None, :], fill=-1e30),
            "loop over lengths": lambda Q, K, V, r: np.stack(
                [_masked(q, k, v, rr[None, :]) for q, k, v, rr in zip(Q, K, V, r)]
            ),
            "torch masked_fill float32": lambda Q, K, V, r: (
                lambda q, k, v: torch.softmax(
                    (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(
                        ~torch.tensor(r)[:, None, :], float("-inf")
                    ),
                    -1,
                )
                @ v
            )(*_t(Q, K, V, dtype=torch.float32)),
            "broadcast_to": lambda Q, K, V, r: _masked(
                Q, K, V, np.broadcast_to(r[:, None, :], (len(r), r.shape[1], r.shape[1]))
            ),
            "additive bias": lambda Q, K, V, r: softmax(
                Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + np.where(r, 0.0, -np.inf)[:, None, :]
            )
            @ V,
            "in place": _padded_in_place,
        },
        {
            "a mask on the queries": lambda Q, K, V, r: _masked(Q, K, V, r[:, :, None]),
            "a mask on the queries ": lambda Q, K, V, r: _masked(Q, K, V, r[:, :, None], fill=-1e9),
            "wrong way round": lambda Q, K, V, r: _masked(Q, K, V, ~r[:, None, :], fill=-1e9),
            "still attend to the padding": lambda Q, K, V, r: _masked(Q, K, V, True),
            "outputs at padding positions are nan": _padded_nan_rows,
            "wrong way round ": lambda Q, K, V, r: _masked(Q, K, V, ~r[:, None, :]),
        },
    ),
}

CORRECT = [(c, n) for c, (ok, _) in TABLE.items() for n in ok]
WRONG = [(c, n) for c, (_, bad) in TABLE.items() for n in bad]


def test_every_bug_has_a_table():
    assert set(TABLE) == set(CHECKS.values()) and len(CHECKS) >= 6
    for check, (correct, _) in TABLE.items():
        assert len(correct) >= 10, f"{check.__name__}: only {len(correct)} correct variants"


@pytest.mark.parametrize("check,name", CORRECT, ids=[f"{c.__name__}-{n}" for c, n in CORRECT])
def test_bug_checks_accept_fixes(check, name, capsys):
    check(TABLE[check][0][name])
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("check,needle", WRONG, ids=[f"{c.__name__}-{n}" for c, n in WRONG])
def test_bug_checks_name_what_is_still_wrong(check, needle):
    with pytest.raises(CheckFailed, match=needle.strip()) as err:
        check(TABLE[check][1][needle])
    assert str(err.value).isprintable(), repr(str(err.value))  # no zero-width or control characters


def test_the_float_mask_message_is_not_a_raw_dtype_error():
    with pytest.raises(CheckFailed) as err:
        check_causal_self_attention(TABLE[check_causal_self_attention][1]["wrong dtype"])
    message = str(err.value)
    assert message.startswith("PyTorch refused a tensor of the wrong dtype, most likely your mask")
    assert "True = blocked" in message and "torch.float64" in message


def test_two_dimensional_errors_get_no_transpose_hint():
    def no_keepdims(s):  # right on the square case, a broadcast error on the (3, 7) one
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=s.shape[0] == s.shape[1])

    with pytest.raises(CheckFailed, match="raised ValueError: operands could not be broadcast") as err:
        check_softmax_rows(no_keepdims)
    assert "K.T" not in str(err.value)


def test_three_dimensional_shape_errors_get_the_transpose_hint():
    def transposed_on_the_second_case(Q, K, V):  # the first case (B = S = d_k) runs with K.T
        return _batched_in_place(Q, K, V) if Q.shape[0] == 4 else softmax(Q @ K.T) @ V

    with pytest.raises(CheckFailed, match="K.T reverses") as err:
        check_batched_attention(transposed_on_the_second_case)
    assert "raised ValueError" in str(err.value)
