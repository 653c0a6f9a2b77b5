"""The running example is what its docstring says and the same every time."""

import numpy as np

from transformer_lessons import example


def test_sizes_fit_together():
    assert example.D_K * example.NUM_HEADS == example.D_MODEL
    assert example.D_FF == 4 * example.D_MODEL
    assert example.tokens() == ["the", "cat", "sat", "on", "the", "mat"]


def test_embeddings_shape_repeated_word_and_determinism():
    x = example.embeddings()
    assert x.shape == (6, example.D_MODEL) and x.dtype == np.float64
    np.testing.assert_array_equal(x[0], x[4])  # both "the"
    assert not np.allclose(x[1], x[2])
    np.testing.assert_array_equal(x, example.embeddings())
    rng = np.random.default_rng(example.SEED)
    np.testing.assert_array_equal(example.embeddings(rng), x)
