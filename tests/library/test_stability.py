"""The broken code of the debugging demo really is broken, and the measurements say so."""

import numpy as np
import pytest

from transformer_lessons import scaled_dot_product_attention, softmax
from transformer_lessons.positional import permutation_demo
from transformer_lessons.stability import attention_unscaled, saturation_stats, softmax_unstable


def test_unstable_softmax_overflows_where_the_stable_one_does_not():
    x = np.array([1000.0, 1001.0, 1002.0])
    with np.errstate(all="ignore"):
        assert np.isnan(softmax_unstable(x)).all()
    np.testing.assert_allclose(softmax_unstable(x - 1000), softmax(x))


def test_unscaled_attention_differs_by_sqrt_dk():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 16)), rng.normal(size=(4, 16)), rng.normal(size=(4, 2))
    out, _ = attention_unscaled(q, k, v)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q * 4, k, v)[0])  # sqrt(16) = 4


def test_saturation_grows_with_dk_only_without_scaling():
    small, large = 4, 1024
    u_small, u_large = saturation_stats(small, scaled=False), saturation_stats(large, scaled=False)
    s_small, s_large = saturation_stats(small, scaled=True), saturation_stats(large, scaled=True)
    assert u_large["score_std"] == pytest.approx(np.sqrt(large), rel=0.1)
    assert s_large["score_std"] == pytest.approx(1.0, rel=0.1)
    assert u_large["max_weight"] > 0.9 > u_small["max_weight"]
    assert abs(s_large["max_weight"] - s_small["max_weight"]) < 0.1
    assert u_large["grad_norm"] < 0.01 * s_large["grad_norm"]  # most queries get almost no gradient
    assert u_large["grad_p90_p10"] > 1e6 and s_large["grad_p90_p10"] < 10  # ...and a few get huge ones


def test_permutation_demo_shows_equivariance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 4))
    attend = lambda z: scaled_dot_product_attention(z, z, z)[0]  # noqa: E731
    a, b = permutation_demo(x, np.array([4, 2, 0, 1, 3]), attend)
    np.testing.assert_allclose(a, b, atol=1e-12)
