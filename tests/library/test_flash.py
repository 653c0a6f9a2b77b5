"""flash_attention (tiled, online softmax) against the plain attention and PyTorch."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from transformer_lessons import causal_mask, scaled_dot_product_attention
from transformer_lessons.cost import peak_memory_bytes
from transformer_lessons.flash import block_slices, flash_attention
from tests.book_files import BAD_SHAPES

SHAPES = [
    # (batch dims), T, S, d_k, d_v
    ((), 5, 5, 8, 8),
    ((), 7, 13, 4, 6),  # T != S, d_k != d_v
    ((2,), 9, 4, 8, 3),
    ((2, 3), 10, 11, 16, 5),  # extra batch dimensions (B, H)
    ((1,), 1, 1, 1, 1),
]
BLOCKS = [(1, 1), (2, 3), (3, 2), (4, 4), (64, 64), (1, 64), (64, 1)]  # 1, not dividing, >= length


def _torch_sdpa(q, k, v, mask=None):
    t = lambda a: torch.from_numpy(np.array(a))  # noqa: E731
    m = None if mask is None else t(np.broadcast_to(mask, np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (1,)) + (k.shape[-2],)))
    return F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=m).numpy()


def _random(rng, batch, t, s, d_k, d_v, scale=1.0):
    return (scale * rng.normal(size=batch + (t, d_k)), scale * rng.normal(size=batch + (s, d_k)), rng.normal(size=batch + (s, d_v)))


@pytest.mark.parametrize("block_q,block_k", BLOCKS)
@pytest.mark.parametrize("batch,t,s,d_k,d_v", SHAPES)
def test_equals_plain_attention_and_torch(batch, t, s, d_k, d_v, block_q, block_k):
    rng = np.random.default_rng(0)
    q, k, v = _random(rng, batch, t, s, d_k, d_v)
    out = flash_attention(q, k, v, block_q=block_q, block_k=block_k)
    assert out.shape == batch + (t, d_v)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v), rtol=0, atol=1e-10)


def _masks(t, s):
    rng = np.random.default_rng(3)
    padding = np.ones((2, 1, 1, s), dtype=bool)
    padding[1, ..., s - 3:] = False  # the second sequence's last 3 keys are padding
    fully = rng.random((2, 3, t, s)) > 0.3
    fully[0, 1, 2] = False  # query 2 of (batch 0, head 1) may attend to nothing
    fully[1, :, 0] = False
    return {
        "causal": causal_mask(t)[:, :s] if s <= t else np.tril(np.ones((t, s), dtype=bool)),
        "padding": padding,
        "random with fully masked rows": fully,
        "per key (1, S)": rng.random((1, s)) > 0.5,
        "per query (T, 1)": np.arange(t)[:, None] % 2 == 0,
    }


@pytest.mark.parametrize("name", list(_masks(6, 9)))
@pytest.mark.parametrize("block_q,block_k", [(1, 1), (4, 4), (2, 5), (32, 32)])
def test_masks_match_plain_attention_and_torch(name, block_q, block_k):
    rng = np.random.default_rng(4)
    q, k, v = _random(rng, (2, 3), 6, 9, 8, 4)
    mask = _masks(6, 9)[name]
    out = flash_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    expected, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask), rtol=0, atol=1e-10)
    empty = weights.sum(-1) == 0  # rows that attend to nothing
    np.testing.assert_array_equal(out[empty], 0.0)


def test_fully_masked_rows_give_zeros():
    rng = np.random.default_rng(5)
    q, k, v = _random(rng, (), 4, 5, 8, 3)
    mask = np.ones((4, 5), dtype=bool)
    mask[2] = False
    mask[0, :3] = False  # row 0: the first key block (size 3) is fully masked, the next is not
    out = flash_attention(q, k, v, mask, block_q=2, block_k=3)
    np.testing.assert_array_equal(out[2], 0.0)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-12)
    np.testing.assert_array_equal(flash_attention(q, k, v, np.zeros((4, 5), dtype=bool)), 0.0)


@pytest.mark.parametrize("scale", [1e2, 1e4, 1e150])
def test_huge_scores_stay_finite(scale):
    rng = np.random.default_rng(6)
    q, k, v = _random(rng, (), 12, 10, 8, 3, scale=math.sqrt(scale))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value RuntimeWarning either
        out = flash_attention(q, k, v, block_q=5, block_k=3)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], rtol=0, atol=1e-10)
    if scale <= 1e4:
        np.testing.assert_allclose(out, _torch_sdpa(q, k, v), atol=1e-10, rtol=0)


def test_rising_maximum_rescales_earlier_blocks():
    # Scores grow from block to block, so every new block raises the running maximum.
    q = np.ones((1, 1))
    k = np.arange(8.0)[:, None] * 10.0
    v = np.arange(8.0)[:, None]
    out = flash_attention(q, k, v, block_k=1)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], rtol=1e-13)


def test_float32_is_kept_and_ints_become_float64():
    rng = np.random.default_rng(7)
    q, k, v = (a.astype(np.float32) for a in _random(rng, (), 6, 7, 8, 2))
    out = flash_attention(q, k, v, block_q=4, block_k=3)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], atol=1e-6)
    ints = np.arange(12).reshape(3, 4) % 3
    assert flash_attention(ints, ints, ints).dtype == np.float64


def test_broadcast_batch_dims():
    rng = np.random.default_rng(8)
    q = rng.normal(size=(2, 3, 5, 4))  # (B, H, T, d_k)
    k = rng.normal(size=(1, 7, 4))  # one key set shared by every batch entry: (1, S, d_k)
    v = rng.normal(size=(7, 6))  # (S, d_v)
    out = flash_attention(q, k, v, block_q=2, block_k=3)
    assert out.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], atol=1e-12)


finite = st.floats(-1e3, 1e3, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    t=st.integers(1, 9), s=st.integers(1, 9), d=st.integers(1, 5),
    block_q=st.integers(1, 10), block_k=st.integers(1, 10), seed=st.integers(0, 2**32 - 1),
    masked=st.booleans(),
)
def test_property_equals_plain_attention(t, s, d, block_q, block_k, seed, masked):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(t, d)) * 10, rng.normal(size=(s, d)) * 10, rng.normal(size=(s, d))
    mask = rng.random((t, s)) > 0.4 if masked else None
    out = flash_attention(q, k, v, mask, block_q=block_q, block_k=block_k)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(scores=arrays(np.float64, (3, 6), elements=finite), block_k=st.integers(1, 7))
def test_property_any_scores_one_query_per_row(scores, block_k):
    # With k = I (S = d_k = 6) and q = scores * sqrt(d_k), q @ k^T / sqrt(d_k) is the given scores.
    q = scores * math.sqrt(6)  # (T=3, d_k=6)
    k = np.eye(6)  # (S=6, d_k=6)
    v = np.random.default_rng(0).normal(size=(6, 2))  # (S, d_v=2)
    out = flash_attention(q, k, v, block_k=block_k)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v)[0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("q_shape,k_shape,v_shape,mask_shape,needle", BAD_SHAPES)
def test_bad_shapes_raise_value_error_naming_them(q_shape, k_shape, v_shape, mask_shape, needle):
    q, k, v = np.ones(q_shape), np.ones(k_shape), np.ones(v_shape)
    mask = None if mask_shape is None else np.ones(mask_shape, dtype=bool)
    with pytest.raises(ValueError) as info:
        flash_attention(q, k, v, mask)
    assert needle in str(info.value)


def test_bad_mask_and_block_sizes_are_refused():
    q = np.ones((2, 4))
    with pytest.raises(ValueError, match="boolean"):
        flash_attention(q, np.ones((3, 4)), np.ones((3, 4)), np.ones((2, 3)))
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="block size"):
            flash_attention(q, q, q, block_q=bad)
        with pytest.raises(ValueError, match="block size"):
            flash_attention(q, q, q, block_k=bad)


@pytest.mark.parametrize("length,block", [(10, 3), (10, 10), (10, 64), (1, 1), (7, 1), (0, 4)])
def test_block_slices_cover_every_position_once(length, block):
    slices = block_slices(length, block)
    covered = np.concatenate([np.arange(length)[sl] for sl in slices]) if slices else np.array([], dtype=int)
    np.testing.assert_array_equal(covered, np.arange(length))
    assert all(sl.stop - sl.start <= block for sl in slices)


def test_peak_memory_linear_for_tiled_quadratic_for_plain():
    rng = np.random.default_rng(9)
    plain, tiled = [], []
    for t in (256, 512, 1024):
        q, k, v = (rng.normal(size=(t, 32)) for _ in range(3))
        plain.append(peak_memory_bytes(scaled_dot_product_attention, q, k, v))
        tiled.append(peak_memory_bytes(flash_attention, q, k, v, block_q=64, block_k=64))
    plain, tiled = np.array(plain), np.array(tiled)
    # Doubling T: the plain version's (T, T) buffers grow 4x; the tiled one's at most 2x.
    assert np.all((plain[1:] / plain[:-1] > 3.5) & (plain[1:] / plain[:-1] < 4.1)), plain
    assert np.all(tiled[1:] / tiled[:-1] < 2.05), tiled
    assert plain[-1] > 1024 * 1024 * 8  # at least one (T, T) float64 matrix
    assert tiled[-1] < plain[-1] / 10
