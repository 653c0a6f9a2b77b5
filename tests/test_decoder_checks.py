"""The decoder exercises' self-checks accept right answers and name each classic mistake."""

import math

import numpy as np
import pytest
import torch

from transformer_lessons.decoder_checks import check_cached_attention, check_causal_mask, check_pytorch_causal_mask

RIGHT_BOOK = [
    lambda t: np.tril(np.ones((t, t), dtype=bool)),
    lambda t: np.arange(t)[:, None] >= np.arange(t)[None, :],
    lambda t: torch.ones(t, t, dtype=torch.bool).tril(),
    lambda t: ~np.triu(np.ones((t, t), dtype=bool), k=1),
]
WRONG_BOOK = [
    (lambda t: np.triu(np.ones((t, t), dtype=bool), k=1), "nn.MultiheadAttention's polarity"),
    (lambda t: np.tril(np.ones((t, t), dtype=bool), k=-1), "diagonal is blocked"),
    (lambda t: np.triu(np.ones((t, t), dtype=bool)), "wrong triangle"),
    (lambda t: np.tril(np.ones((t, t))), "float mask"),
    (lambda t: np.tril(np.ones((t, t + 1), dtype=bool)), "shape"),
]


@pytest.mark.parametrize("fn", RIGHT_BOOK)
def test_book_mask_accepts_right_answers(fn, capsys):
    check_causal_mask(fn)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn,named", WRONG_BOOK)
def test_book_mask_names_mistakes(fn, named):
    with pytest.raises(AssertionError, match=named):
        check_causal_mask(fn)


def test_pytorch_mask_right_and_wrong(capsys):
    check_pytorch_causal_mask(lambda t: np.triu(np.ones((t, t), dtype=bool), k=1))
    check_pytorch_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())
    assert capsys.readouterr().out.count("Correct") == 2
    with pytest.raises(AssertionError, match="book's polarity"):
        check_pytorch_causal_mask(lambda t: np.tril(np.ones((t, t), dtype=bool)))
    with pytest.raises(AssertionError, match="diagonal is blocked"):
        check_pytorch_causal_mask(lambda t: np.triu(np.ones((t, t), dtype=bool)))


def _split(mha, x):  # (B, 1, E) -> (B, H, 1, d_k)
    b = x.size(0)
    return x.view(b, 1, mha.num_heads, mha.head_dim).transpose(1, 2)


def _step(scale_by_e=False, append=True):
    def step(mha, x_new, past_k, past_v):
        q, k, v = (_split(mha, p(x_new)) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        if past_k is not None and append:
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        d = mha.embed_dim if scale_by_e else mha.head_dim
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)
        out = (w @ v).transpose(1, 2).reshape(x_new.shape)
        return mha.out_proj(out), k, v

    return step


def test_cached_step_right_answer(capsys):
    check_cached_attention(_step())
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("kw,named", [
    ({"append": False}, "shapes"),
    ({"scale_by_e": True}, r"sqrt\(d_k\)"),
])
def test_cached_step_named_mistakes(kw, named):
    with pytest.raises(AssertionError, match=named):
        check_cached_attention(_step(**kw))


def test_cached_step_that_attends_only_to_itself():
    def step(mha, x_new, past_k, past_v):
        out, k, v = _step()(mha, x_new, None, None)
        if past_k is not None:  # keeps a cache of the right shape but does not use it
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        return out, k, v

    with pytest.raises(AssertionError, match="only to itself"):
        check_cached_attention(step)
