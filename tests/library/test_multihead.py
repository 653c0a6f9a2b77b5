"""MultiHeadAttention against nn.MultiheadAttention."""

import pytest
import torch
from torch import nn

from transformer_lessons import MultiHeadAttention


def _pair(embed_dim, num_heads, bias=True):
    ref = nn.MultiheadAttention(embed_dim, num_heads, bias=bias, batch_first=True, dtype=torch.float64).eval()
    if bias:  # PyTorch initialises the biases to zero; make them matter
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    return ref, MultiHeadAttention.from_torch(ref).eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    "embed_dim,num_heads,b,t,s",
    [(32, 4, 8, 10, 10), (16, 1, 2, 5, 5), (24, 3, 3, 4, 7), (8, 8, 1, 1, 3)],
)
@pytest.mark.parametrize("cross", [False, True])
def test_matches_nn_multihead_attention(embed_dim, num_heads, b, t, s, bias, cross):
    ref, ours = _pair(embed_dim, num_heads, bias)
    query = torch.randn(b, t, embed_dim, dtype=torch.float64)
    if cross:  # cross-attention: keys/values from another sequence of length S
        key = torch.randn(b, s, embed_dim, dtype=torch.float64)
        value = torch.randn(b, s, embed_dim, dtype=torch.float64)
    else:
        key = value = query
    expected, expected_w = ref(query, key, value, average_attn_weights=False)
    out, weights = ours(query, key, value)
    assert out.shape == (b, t, embed_dim)
    assert weights.shape == (b, num_heads, t, key.size(1))
    torch.testing.assert_close(out, expected, atol=1e-10, rtol=0)
    torch.testing.assert_close(weights, expected_w, atol=1e-10, rtol=0)


def test_mask_polarity_is_opposite_to_torch_attn_mask():
    ref, ours = _pair(16, 2)
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    may_attend = torch.ones(6, 6, dtype=torch.bool).tril()  # ours: True = may attend
    expected, expected_w = ref(x, x, x, attn_mask=~may_attend, average_attn_weights=False)  # torch: True = blocked
    out, weights = ours(x, x, x, mask=may_attend)
    torch.testing.assert_close(out, expected, atol=1e-10, rtol=0)
    torch.testing.assert_close(weights, expected_w, atol=1e-10, rtol=0)
    assert torch.all(weights[..., ~may_attend] == 0)


def test_padding_mask_per_sequence():
    ref, ours = _pair(16, 4)
    x = torch.randn(3, 5, 16, dtype=torch.float64)
    lengths = torch.tensor([5, 3, 1])
    key_ok = torch.arange(5)[None, :] < lengths[:, None]  # (B, S)
    expected, _ = ref(x, x, x, key_padding_mask=~key_ok)
    out, weights = ours(x, x, x, mask=key_ok[:, None, None, :])  # (B, 1, 1, S)
    torch.testing.assert_close(out, expected, atol=1e-10, rtol=0)
    out3, _ = ours(x, x, x, mask=key_ok[:, None, :].expand(3, 5, 5))  # (B, T, S)
    torch.testing.assert_close(out3, expected, atol=1e-10, rtol=0)


def test_weights_rows_sum_to_one():
    _, ours = _pair(32, 4)
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    _, w = ours(x, x, x)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 7, dtype=torch.float64))


def test_embed_dim_not_divisible_names_both_numbers():
    with pytest.raises(ValueError, match=r"embed_dim=30.*num_heads=4"):
        MultiHeadAttention(30, 4)


@pytest.mark.parametrize(
    "shapes,mask_shape,needle",
    [
        (((2, 5, 16), (2, 5, 16), (2, 5, 16)), (5, 4), "(5, 4)"),
        (((2, 5, 16), (2, 6, 16), (2, 5, 16)), None, "(2, 6, 16)"),
        (((2, 5, 12), (2, 5, 12), (2, 5, 12)), None, "(2, 5, 12)"),
        (((5, 16),) * 3, None, "(5, 16)"),
    ],
)
def test_bad_inputs_raise_value_error_naming_shapes(shapes, mask_shape, needle):
    m = MultiHeadAttention(16, 4)
    q, k, v = (torch.randn(*s) for s in shapes)
    mask = None if mask_shape is None else torch.ones(mask_shape, dtype=torch.bool)
    with pytest.raises(ValueError) as info:
        m(q, k, v, mask=mask)
    assert needle in str(info.value)


def test_float_mask_is_refused():
    m = MultiHeadAttention(16, 4)
    x = torch.randn(1, 3, 16)
    with pytest.raises(ValueError, match="boolean"):
        m(x, x, x, mask=torch.zeros(3, 3))


def test_dropout_only_in_training_and_weights_before_dropout():
    m = MultiHeadAttention(16, 2, dropout=0.5)
    x = torch.randn(2, 6, 16)
    m.train()
    out1, w1 = m(x, x, x)
    out2, _ = m(x, x, x)
    assert not torch.allclose(out1, out2)  # dropout is active
    torch.testing.assert_close(w1.sum(-1), torch.ones(2, 2, 6))  # returned weights: pre-dropout
    m.eval()
    torch.testing.assert_close(m(x, x, x)[0], m(x, x, x)[0])


def test_from_torch_refuses_unsupported_modules():
    with pytest.raises(ValueError, match="batch_first"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
