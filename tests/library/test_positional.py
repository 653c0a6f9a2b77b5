"""positional_encoding against the formula of Vaswani et al. (2017), section 3.5."""

import math

import numpy as np
import pytest

from transformer_lessons import positional_encoding, positional_encoding_loop


@pytest.mark.parametrize("seq_len,d_model", [(1, 1), (5, 8), (50, 64), (7, 5), (3, 1), (10, 3)])
def test_matches_formula_elementwise(seq_len, d_model):
    pe = positional_encoding(seq_len, d_model)
    assert pe.shape == (seq_len, d_model)
    for pos in range(seq_len):
        for col in range(d_model):
            i = col // 2
            angle = pos / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert pe[pos, col] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seq_len,d_model", [(5, 8), (20, 33), (64, 128)])
def test_loop_version_equals_vectorised(seq_len, d_model):
    np.testing.assert_allclose(positional_encoding_loop(seq_len, d_model), positional_encoding(seq_len, d_model), atol=1e-12)


def test_pairs_share_a_frequency():
    # sin^2 + cos^2 = 1 holds only if column 2i and 2i+1 use the same angle.
    pe = positional_encoding(40, 16)
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0, atol=1e-12)


def test_position_zero_and_first_column():
    pe = positional_encoding(10, 6)
    np.testing.assert_array_equal(pe[0], [0, 1, 0, 1, 0, 1])
    np.testing.assert_allclose(pe[:, 0], np.sin(np.arange(10)))  # i = 0: frequency 1


def test_relative_position_is_a_rotation():
    # PE[pos + k] is a fixed linear function (a rotation per pair) of PE[pos] (section 3.5).
    d, k = 8, 3
    pe = positional_encoding(30, d)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        rot = np.array([[math.cos(k * w), -math.sin(k * w)], [math.sin(k * w), math.cos(k * w)]])
        pair = pe[:, 2 * i : 2 * i + 2]
        np.testing.assert_allclose(pair[:-k] @ rot, pair[k:], atol=1e-12)


@pytest.mark.parametrize("fn", [positional_encoding, positional_encoding_loop])
@pytest.mark.parametrize("seq_len,d_model", [(0, 8), (5, 0), (-1, 4), (2.5, 4)])
def test_bad_sizes_raise(fn, seq_len, d_model):
    with pytest.raises(ValueError):
        fn(seq_len, d_model)
