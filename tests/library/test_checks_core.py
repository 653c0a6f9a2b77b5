"""The convention every self-check shares (transformer_lessons.checks.core): the learner's code
runs on copies, so nothing it does to its inputs can fail a right answer or change the
reference; an unwritten answer is "not written yet"; a pass prints "Correct!" first; the
tolerance is float32's for float32 and float64 results alike."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lessons import causal_mask, positional_encoding, scaled_dot_product_attention, softmax
from transformer_lessons.checks import (
    CheckFailed,
    as_array,
    bughunt,
    call_learner,
    check_attention_weights,
    check_cached_attention,
    check_causal_mask,
    check_causal_multihead_attention,
    check_multihead_attention,
    check_multihead_module,
    check_positional_encoding,
    check_pytorch_causal_mask,
    check_self_attention,
    close,
    tolerance,
)
from transformer_lessons.checks.core import transpose_hint
from transformer_lessons.toy import ToyConfig, ToyEncoder


# ---------------------------------------------------------------- right answers, one per check
def multi_head(X, W_q, W_k, W_v, W_o, num_heads, mask=None):
    B, T, E = X.shape
    d_k = E // num_heads
    Q, K, V = ((X @ W).reshape(B, T, num_heads, d_k).transpose(0, 2, 1, 3) for W in (W_q, W_k, W_v))
    s = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)
    w = softmax(s if mask is None else np.where(mask, s, -np.inf))
    return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w


class Wrapper(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


def cached_step(mha, x_new, past_k, past_v):
    b, h = x_new.shape[0], mha.num_heads
    q, k, v = (p(x_new).view(b, 1, h, -1).transpose(1, 2) for p in (mha.q_proj, mha.k_proj, mha.v_proj))
    if past_k is not None:
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(mha.head_dim), dim=-1)
    return mha.out_proj((w @ v).transpose(1, 2).reshape(x_new.shape)), k, v


def toy_weights(model, tokens):
    model(tokens[None])
    return model.attention_maps()[0][0]


@pytest.fixture(scope="module")
def toy_model():
    torch.manual_seed(0)
    return ToyEncoder(ToyConfig()).eval()  # untrained: the check compares with the model itself


RIGHT = {
    "self_attention": (check_self_attention, lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0]),
    "positional_encoding": (check_positional_encoding, positional_encoding),
    "multihead_attention": (check_multihead_attention, multi_head),
    "causal_multihead_attention": (check_causal_multihead_attention, multi_head),
    "causal_mask": (check_causal_mask, causal_mask),
    "pytorch_causal_mask": (check_pytorch_causal_mask, lambda t: ~causal_mask(t)),
    "cached_attention": (check_cached_attention, cached_step),
    "bug_causal_attention": (
        bughunt.check_causal_attention,
        lambda Q, K, V: scaled_dot_product_attention(Q, K, V, causal_mask(len(Q)))[0],
    ),
    "bug_softmax_rows": (bughunt.check_softmax_rows, softmax),
    "bug_batched_attention": (
        bughunt.check_batched_attention,
        lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0],
    ),
    "bug_split_heads": (
        bughunt.check_split_heads,
        lambda x, h: x.reshape(*x.shape[:2], h, -1).transpose(0, 2, 1, 3),  # a view of x
    ),
    "bug_causal_self_attention": (
        bughunt.check_causal_self_attention,
        lambda mha, x: mha(x, x, x, attn_mask=~torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril())[0],
    ),
    "bug_padded_attention": (
        bughunt.check_padded_attention,
        lambda Q, K, V, real: scaled_dot_product_attention(Q, K, V, real[:, None, :])[0],
    ),
}


def test_every_bug_check_has_a_right_answer_here():
    assert set(bughunt.CHECKS.values()) <= {check for check, _ in RIGHT.values()}


def _keep(result):
    """A copy of what the learner returns, so that wrecking its inputs cannot change it."""
    if isinstance(result, tuple):
        return tuple(_keep(r) for r in result)
    if isinstance(result, torch.Tensor):
        return result.detach().clone()
    return np.array(result, copy=True) if isinstance(result, np.ndarray) else result


def _wreck(value) -> None:
    """Overwrite an input in place: what a careless answer could do after using it."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value[...] = False if value.dtype == bool else 0
    elif isinstance(value, torch.Tensor):
        with torch.no_grad():
            value.zero_()
    elif isinstance(value, nn.Module):
        with torch.no_grad():
            for p in value.parameters():
                p.zero_()


def wrecking(fn):
    """``fn``, right, that then overwrites every one of its inputs with zeros."""

    def answer(*args):
        result = _keep(fn(*args))
        for a in args:
            _wreck(a)
        return result

    return answer


@pytest.mark.parametrize("name", RIGHT)
def test_a_right_answer_passes_and_says_correct_first(name, capsys):
    check, right = RIGHT[name]
    check(right)
    assert capsys.readouterr().out.startswith("Correct! ")


@pytest.mark.parametrize("name", RIGHT)
def test_a_right_answer_that_wrecks_its_inputs_still_passes(name, capsys):
    """The learner gets copies, and the references come from the check's own inputs."""
    check, right = RIGHT[name]
    check(wrecking(right))
    assert capsys.readouterr().out.startswith("Correct! ")


@pytest.mark.parametrize("name", RIGHT)
def test_an_unwritten_answer_is_not_written_yet(name):
    check, _ = RIGHT[name]

    def unwritten(*args):
        raise NotImplementedError("your code here")

    with pytest.raises(CheckFailed, match="is not written yet: replace `raise NotImplementedError"):
        check(unwritten)


WRONG = [
    (check_self_attention, lambda Q, K, V: softmax(Q @ K.T) @ V, "the scores are not scaled"),
    (check_multihead_attention, lambda X, *W: multi_head(X, *W[:3], W[3].T, W[4]), "W_o is applied transposed"),
    (
        bughunt.check_causal_attention,
        lambda Q, K, V: scaled_dot_product_attention(Q, K, V, np.triu(np.ones((len(Q), len(Q)), dtype=bool)))[0],
        "the mask is the wrong way round",
    ),
    (bughunt.check_split_heads, lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1), "mixes different positions"),
]


@pytest.mark.parametrize("check,answer,named", WRONG, ids=[n for _, _, n in WRONG])
def test_a_wrong_answer_that_wrecks_its_inputs_is_still_named(check, answer, named):
    """The mistakes, too, are recomputed from the check's own inputs."""
    with pytest.raises(CheckFailed, match=named):
        check(wrecking(answer))


def test_the_module_and_the_trained_model_checks_use_copies_too(toy_model, capsys):
    class WrecksItsInput(Wrapper):
        def forward(self, x):
            out = super().forward(x)
            x.zero_()
            return out

    check_multihead_module(WrecksItsInput)
    before = {k: v.clone() for k, v in toy_model.state_dict().items()}
    check_attention_weights(wrecking(toy_weights), toy_model)
    assert capsys.readouterr().out.count("Correct! ") == 2
    assert all(torch.equal(before[k], v) for k, v in toy_model.state_dict().items())  # the reader's model, intact


def test_an_unwritten_module_or_weights_function_is_not_written_yet(toy_model):
    def unwritten(*args):
        raise NotImplementedError

    with pytest.raises(CheckFailed, match="not written yet"):
        check_attention_weights(unwritten, toy_model)

    class Unwritten(nn.Module):
        def __init__(self, embed_dim, num_heads):
            raise NotImplementedError

    with pytest.raises(CheckFailed, match="not written yet"):
        check_multihead_module(Unwritten)


# ---------------------------------------------------------------- tolerance
def test_tolerance_is_float32s_for_float64_results_and_looser_below():
    assert tolerance("float64") == tolerance("float32") == (1e-4, 1e-5)
    assert tolerance("float16")[0] > 1e-4 and tolerance("bfloat16")[0] > tolerance("float16")[0]
    ref = np.linspace(-1, 1, 50)
    assert close(ref.astype(np.float32).astype(np.float64) + 1e-6, ref, "float64")  # float32 maths
    assert not close(ref + 1e-3, ref, "float64")


@pytest.mark.parametrize(
    "check,answer",
    [
        (
            check_self_attention,
            lambda Q, K, V: scaled_dot_product_attention(*(a.astype(np.float32) for a in (Q, K, V)))[0].astype(
                np.float64
            ),
        ),
        (check_positional_encoding, lambda n, d: positional_encoding(n, d).astype(np.float32).astype(np.float64)),
        (
            check_multihead_attention,
            lambda X, *W: tuple(
                r.astype(np.float64)
                for r in multi_head(X.astype(np.float32), *(w.astype(np.float32) for w in W[:4]), W[4])
            ),
        ),
        (
            bughunt.check_batched_attention,
            lambda Q, K, V: torch.nn.functional.scaled_dot_product_attention(
                *(torch.tensor(a, dtype=torch.float32) for a in (Q, K, V))
            ).double(),
        ),
    ],
    ids=["self_attention", "positional_encoding", "multihead_attention", "bug_batched_attention"],
)
def test_float32_maths_returned_as_float64_passes(check, answer, capsys):
    check(answer)
    assert capsys.readouterr().out.startswith("Correct! ")


# ---------------------------------------------------------------- call_learner and as_array
def test_call_learner_hands_over_copies():
    a, t = np.ones(3), torch.ones(3)
    call_learner(lambda x, y: (x.__imul__(0), y.mul_(0)), a, t)
    assert a.sum() == 3 and t.sum() == 3


def test_the_transpose_hint_only_for_wide_inputs_and_shape_errors():
    error = ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0")
    assert "K.T" in transpose_hint(error, (np.zeros((2, 3, 4)),))
    assert transpose_hint(error, (np.zeros((3, 4)),)) == ""  # 2-D: .T is the transpose
    assert transpose_hint(ZeroDivisionError("division by zero"), (np.zeros((2, 3, 4)),)) == ""


def test_the_transpose_hint_is_not_given_to_two_dimensional_answers():
    def crashes(Q, K, V):
        return Q @ K  # (T, d_k) @ (S, d_k): a shape error

    with pytest.raises(CheckFailed, match="raised ValueError") as err:
        check_self_attention(crashes)
    assert "K.T" not in str(err.value)


def test_as_array_reports_what_is_not_an_array():
    with pytest.raises(CheckFailed, match="forget the `return`"):
        as_array(None)
    with pytest.raises(CheckFailed, match="not an array of numbers"):
        as_array({"a": 1})
    values, dtype = as_array(torch.ones(2, dtype=torch.float16))
    assert dtype == "float16" and values.dtype == np.float64
