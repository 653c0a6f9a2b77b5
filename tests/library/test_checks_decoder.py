"""The decoder exercises' self-checks (transformer_lessons.checks.decoder) accept right answers
and name each classic mistake, with the convention of every other check."""

import math

import numpy as np
import pytest
import torch

from transformer_lessons.checks import CheckFailed, check_cached_attention, check_causal_mask, check_pytorch_causal_mask

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
    assert capsys.readouterr().out.startswith("Correct! ")


@pytest.mark.parametrize("fn,named", WRONG_BOOK)
def test_book_mask_names_mistakes(fn, named):
    with pytest.raises(CheckFailed, match=named):
        check_causal_mask(fn)


def test_pytorch_mask_right_and_wrong(capsys):
    check_pytorch_causal_mask(lambda t: np.triu(np.ones((t, t), dtype=bool), k=1))
    check_pytorch_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())
    assert capsys.readouterr().out.count("Correct! ") == 2
    # PyTorch's float form (-inf = blocked), as nn.Transformer.generate_square_subsequent_mask makes it
    check_pytorch_causal_mask(torch.nn.Transformer.generate_square_subsequent_mask)
    check_pytorch_causal_mask(lambda t: np.triu(np.full((t, t), -np.inf), k=1))
    assert capsys.readouterr().out.count("Correct! In PyTorch's float form") == 2
    with pytest.raises(CheckFailed, match="0/1 float mask blocks nothing"):
        check_pytorch_causal_mask(lambda t: np.triu(np.ones((t, t)), k=1))
    with pytest.raises(CheckFailed, match="wrong triangle"):
        check_pytorch_causal_mask(lambda t: np.tril(np.full((t, t), -np.inf), k=-1))
    with pytest.raises(CheckFailed, match="book's polarity"):
        check_pytorch_causal_mask(lambda t: np.tril(np.ones((t, t), dtype=bool)))
    with pytest.raises(CheckFailed, match="diagonal is blocked"):
        check_pytorch_causal_mask(lambda t: np.triu(np.ones((t, t), dtype=bool)))


def _split(mha, x):  # (B, 1, E) -> (B, H, 1, d_k)
    b = x.size(0)
    return x.view(b, 1, mha.num_heads, mha.head_dim).transpose(1, 2)


def _step(scale_by_e=False, append=True, dim=2):
    def step(mha, x_new, past_k, past_v):
        q, k, v = (_split(mha, p(x_new)) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
        if past_k is not None and append:
            k, v = torch.cat([past_k, k], dim), torch.cat([past_v, v], dim)
        d = mha.embed_dim if scale_by_e else mha.head_dim
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)
        out = (w @ v).transpose(1, 2).reshape(x_new.shape)
        return mha.out_proj(out), k, v

    return step


def test_cached_step_right_answer(capsys):
    check_cached_attention(_step())
    assert capsys.readouterr().out.startswith("Correct! ")


def test_cached_step_in_float32_returned_as_float64(capsys):
    def step(mha, x_new, past_k, past_v):
        out, k, v = _step()(mha.float(), x_new.float(), past_k, past_v)
        return out.double(), k, v

    check_cached_attention(step)
    assert capsys.readouterr().out.startswith("Correct! ")


def test_cached_step_that_clobbers_its_inputs_passes(capsys):
    def step(mha, x_new, past_k, past_v):
        out, k, v = _step()(mha, x_new, past_k, past_v)
        x_new.zero_()  # a view of the check's sequence, were it not a copy
        for p in mha.parameters():
            p.data.zero_()
        return out, k.clone(), v.clone()

    check_cached_attention(step)
    assert capsys.readouterr().out.startswith("Correct! ")


@pytest.mark.parametrize("dim", [0, 1, 3, -1])
def test_cache_on_the_wrong_dimension_names_dim_2(dim):
    with pytest.raises(CheckFailed, match=r"append the new key and value .* dim 2") as err:
        check_cached_attention(_step(dim=dim))
    assert "at position 1" in str(err.value)


@pytest.mark.parametrize(
    "check",
    [check_causal_mask, check_pytorch_causal_mask, check_cached_attention],
    ids=lambda c: c.__name__,
)
def test_unwritten_answer_is_not_written_yet(check):
    def unwritten(*args):
        raise NotImplementedError("your code here")

    with pytest.raises(CheckFailed, match="is not written yet"):
        check(unwritten)


@pytest.mark.parametrize("kw,named", [
    ({"append": False}, "shapes"),
    ({"scale_by_e": True}, r"sqrt\(d_k\)"),
])
def test_cached_step_named_mistakes(kw, named):
    with pytest.raises(CheckFailed, match=named):
        check_cached_attention(_step(**kw))


def test_cached_step_that_attends_only_to_itself():
    def step(mha, x_new, past_k, past_v):
        out, k, v = _step()(mha, x_new, None, None)
        if past_k is not None:  # keeps a cache of the right shape but does not use it
            k, v = torch.cat([past_k, k], 2), torch.cat([past_v, v], 2)
        return out, k, v

    with pytest.raises(CheckFailed, match="only to itself"):
        check_cached_attention(step)
