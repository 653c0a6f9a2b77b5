"""scaled_dot_product_attention (NumPy and its torch twin) and softmax against PyTorch and the formula."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from transformer_lessons import causal_mask, scaled_dot_product_attention, softmax
from transformer_lessons.attention import scaled_dot_product_attention_torch
from tests.book_files import BAD_SHAPES

SHAPES = [
    # (batch dims of q, k, v), T, S, d_k, d_v
    ((), 5, 5, 8, 8),
    ((), 3, 7, 4, 6),  # T != S, d_k != d_v
    ((2,), 4, 6, 8, 3),
    ((2, 3), 5, 4, 16, 16),  # extra batch dimensions (B, H)
    ((1,), 1, 1, 1, 1),
]


def _torch_sdpa(q, k, v, mask=None):
    t = lambda a: torch.from_numpy(np.array(a))  # noqa: E731
    m = None if mask is None else t(np.broadcast_to(mask, q.shape[:-1] + (k.shape[-2],)))
    return F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=m).numpy()


def _random(rng, batch, t, s, d_k, d_v, scale=1.0):
    return (scale * rng.normal(size=batch + (t, d_k)), scale * rng.normal(size=batch + (s, d_k)), rng.normal(size=batch + (s, d_v)))


@pytest.mark.parametrize("batch,t,s,d_k,d_v", SHAPES)
def test_matches_torch_sdpa(batch, t, s, d_k, d_v):
    rng = np.random.default_rng(1)
    q, k, v = _random(rng, batch, t, s, d_k, d_v)
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == batch + (t, d_v)
    assert weights.shape == batch + (t, s)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v), atol=1e-10, rtol=0)


def test_matches_the_formula():
    rng = np.random.default_rng(2)
    q, k, v = _random(rng, (), 3, 4, 5, 2)
    scores = q @ k.T / math.sqrt(5)
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, weights, atol=1e-12)
    np.testing.assert_allclose(out, weights @ v, atol=1e-12)


def _padding_mask(t, s, valid):
    mask = np.zeros((t, s), dtype=bool)
    mask[:, :valid] = True
    return mask


MASKS = {
    "causal": lambda t, s: causal_mask(t),
    "padding": lambda t, s: _padding_mask(t, s, 3),
    "row": lambda t, s: np.array([True, False, True, True, False, True])[None, :],  # broadcast (1, S)
    "batched": lambda t, s: np.random.default_rng(3).random((2, t, s)) > 0.3,
}


@pytest.mark.parametrize("name", MASKS)
def test_mask_matches_torch(name):
    rng = np.random.default_rng(4)
    t = s = 6
    q, k, v = _random(rng, (2,), t, s, 8, 5)
    mask = MASKS[name](t, s)
    mask = mask | np.eye(t, dtype=bool)  # every row keeps one key: torch gives nan otherwise
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask), atol=1e-10, rtol=0)
    np.testing.assert_array_equal(weights[np.broadcast_to(~mask, weights.shape)], 0.0)


def test_fully_masked_row_gives_zeros_like_torch():
    rng = np.random.default_rng(5)
    q, k, v = _random(rng, (), 4, 5, 8, 3)
    mask = np.ones((4, 5), dtype=bool)
    mask[2] = False  # query 2 may attend to nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights[2], 0.0)
    np.testing.assert_array_equal(out[2], 0.0)
    np.testing.assert_allclose(weights[[0, 1, 3]].sum(-1), 1.0)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask), atol=1e-10, rtol=0)


@pytest.mark.parametrize("scale", [1e2, 1e4, 1e150])
def test_huge_scores_stay_finite(scale):
    rng = np.random.default_rng(6)
    q, k, v = _random(rng, (), 4, 6, 8, 3, scale=math.sqrt(scale))
    out, weights = scaled_dot_product_attention(q, k, v)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    if scale <= 1e4:
        np.testing.assert_allclose(out, _torch_sdpa(q, k, v), atol=1e-10, rtol=0)


def test_float32_is_kept():
    rng = np.random.default_rng(7)
    q, k, v = (a.astype(np.float32) for a in _random(rng, (), 3, 4, 8, 2))
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.dtype == np.float32 and weights.dtype == np.float32
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    np.testing.assert_allclose(out, scaled_dot_product_attention(q64, k64, v64)[0], atol=1e-6)


@pytest.mark.parametrize("q_shape,k_shape,v_shape,mask_shape,needle", BAD_SHAPES)
def test_bad_shapes_raise_value_error_naming_them(q_shape, k_shape, v_shape, mask_shape, needle):
    q, k, v = np.ones(q_shape), np.ones(k_shape), np.ones(v_shape)
    mask = None if mask_shape is None else np.ones(mask_shape, dtype=bool)
    with pytest.raises(ValueError) as info:
        scaled_dot_product_attention(q, k, v, mask)
    assert needle in str(info.value)


def test_non_boolean_mask_is_refused():
    with pytest.raises(ValueError, match="boolean"):
        scaled_dot_product_attention(np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 4)), np.ones((2, 3)))


def test_softmax_stable_and_handles_minus_inf():
    x = np.array([[1000.0, 1001.0, -np.inf], [-np.inf, -np.inf, -np.inf], [-1e308, 1e308, 0.0]])
    w = softmax(x)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w[0], [1 / (1 + math.e), math.e / (1 + math.e), 0.0])
    np.testing.assert_array_equal(w[1], 0.0)
    np.testing.assert_allclose(w[2], [0.0, 1.0, 0.0])
    np.testing.assert_allclose(softmax(x[0], axis=0), w[0])


def test_causal_mask():
    np.testing.assert_array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    with pytest.raises(ValueError):
        causal_mask(0)


# ---------------------------------------------------------------- the torch twin


def test_torch_twin_matches_torch_sdpa_including_a_fully_masked_row():
    q, k, v = torch.randn(2, 3, 4, 8, dtype=torch.float64), torch.randn(2, 3, 6, 8, dtype=torch.float64), torch.randn(2, 3, 6, 5, dtype=torch.float64)
    mask = torch.rand(4, 6) > 0.4
    mask[1] = False
    mask[0, 0] = mask[2, 0] = mask[3, 0] = True
    out, weights = scaled_dot_product_attention_torch(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-10, rtol=0)
    assert torch.all(weights[..., 1, :] == 0) and torch.all(out[..., 1, :] == 0)


def test_torch_twin_fully_masked_row_has_finite_gradients():
    q = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 5, 4, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[0] = False
    out, _ = scaled_dot_product_attention_torch(q, k, k, mask)
    out.sum().backward()
    assert torch.all(torch.isfinite(q.grad)) and torch.all(torch.isfinite(k.grad))


# ---------------------------------------------------------------- properties
finite = st.floats(-1e3, 1e3, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    q=arrays(np.float64, (3, 4), elements=finite),
    k=arrays(np.float64, (5, 4), elements=finite),
    v=arrays(np.float64, (5, 2), elements=finite),
)
def test_rows_sum_to_one_and_output_is_a_convex_mix(q, k, v):
    out, w = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert np.all(w >= 0)
    # a convex combination of the values stays within their range
    assert np.all(out <= v.max(0) + 1e-9) and np.all(out >= v.min(0) - 1e-9)


@settings(max_examples=40, deadline=None)
@given(x=arrays(np.float64, (6, 4), elements=st.floats(-10, 10)), perm=st.permutations(range(6)))
def test_self_attention_is_permutation_equivariant(x, perm):
    perm = np.array(perm)
    out, _ = scaled_dot_product_attention(x, x, x)
    out_perm, _ = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    np.testing.assert_allclose(out_perm, out[perm], atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    scores_q=arrays(np.float64, (4, 3), elements=st.floats(-5, 5)),
    mask=arrays(np.bool_, (4, 6)),
)
def test_masked_keys_get_zero_weight(scores_q, mask):
    k = np.random.default_rng(0).normal(size=(6, 3))
    _, w = scaled_dot_product_attention(scores_q, k, k, mask)
    np.testing.assert_array_equal(w[~mask], 0.0)
    rows = mask.any(-1)
    np.testing.assert_allclose(w[rows].sum(-1), 1.0)
    np.testing.assert_array_equal(w[~rows], 0.0)
