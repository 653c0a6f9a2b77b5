"""RoPE: the formula of Su et al. (2021) and the relative-position property."""

import pytest
import torch

from transformer_lessons.rotary import rope


def _complex_reference(x, positions, base=10000.0):
    """Su et al. (2021), section 3.2: pair (x_2i, x_2i+1) as a complex number times e^(i m theta_i)."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rotated = z * torch.polar(torch.ones_like(theta), positions[:, None].double() * theta)
    return torch.view_as_real(rotated).reshape(x.shape)


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 7, 16)])
def test_equals_the_complex_formula(shape):
    x = torch.randn(*shape, dtype=torch.float64)
    pos = torch.arange(shape[-2]) * 3 + 2
    torch.testing.assert_close(rope(x, pos), _complex_reference(x, pos), rtol=0, atol=1e-12)


def test_score_depends_only_on_the_offset():
    d = 32
    q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)

    def score(m, n):
        qm = rope(q[None], torch.tensor([m]))[0]
        kn = rope(k[None], torch.tensor([n]))[0]
        return qm @ kn

    for m, n in [(0, 0), (5, 2), (17, 40), (3, 3)]:
        for shift in (1, 7, 100, 1234):
            assert abs(score(m, n) - score(m + shift, n + shift)) < 1e-10
    assert abs(score(5, 2) - score(2, 5)) > 1e-3  # but the direction of the offset matters


def test_norm_is_kept_and_position_zero_is_identity():
    x = torch.randn(6, 10, dtype=torch.float64)
    out = rope(x, torch.arange(6))
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(out[0], x[0])


@pytest.mark.parametrize("shape,pos", [((5, 7), 5), ((5, 8), 4), ((8,), 8)])
def test_bad_shapes_are_named(shape, pos):
    with pytest.raises(ValueError, match="rope needs"):
        rope(torch.randn(*shape), torch.arange(pos))
