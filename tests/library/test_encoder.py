"""TransformerEncoderLayer against nn.TransformerEncoderLayer (eval mode)."""

import pytest
import torch
from torch import nn

from transformer_lessons import TransformerEncoderLayer


def _reference(norm_first, activation="relu"):
    ref = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, activation=activation,
        batch_first=True, norm_first=norm_first, dtype=torch.float64,
    ).eval()
    with torch.no_grad():  # non-trivial LayerNorm and attention biases
        for p in (ref.norm1.weight, ref.norm1.bias, ref.norm2.weight, ref.norm2.bias, ref.self_attn.in_proj_bias):
            p.add_(0.3 * torch.randn_like(p))
    return ref


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("causal", [False, True], ids=["no-mask", "causal"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_matches_nn_transformer_encoder_layer(norm_first, causal, activation):
    ref = _reference(norm_first, activation)
    ours = TransformerEncoderLayer.from_torch(ref).eval()
    x = torch.randn(3, 9, 32, dtype=torch.float64)
    may_attend = torch.ones(9, 9, dtype=torch.bool).tril()
    with torch.no_grad():
        # PyTorch's src_mask: True = NOT allowed; ours: True = may attend.
        expected = ref(x, src_mask=~may_attend if causal else None)
        got = ours(x, mask=may_attend if causal else None)
    assert got.shape == x.shape
    torch.testing.assert_close(got, expected, atol=1e-10, rtol=0)


def test_residual_and_norm_order_matter():
    # The two orders are different functions: a from_torch that ignored norm_first would fail here.
    ref = _reference(norm_first=False)
    ours = TransformerEncoderLayer.from_torch(ref).eval()
    ours.norm_first = True
    x = torch.randn(2, 5, 32, dtype=torch.float64)
    with torch.no_grad():
        assert not torch.allclose(ours(x), ref(x))


def test_keeps_attention_weights_for_plotting():
    layer = TransformerEncoderLayer(16, 2, 32).eval()
    layer(torch.randn(2, 5, 16))
    assert layer.last_attention.shape == (2, 2, 5, 5)


def test_bad_configuration_raises():
    with pytest.raises(ValueError, match="embed_dim=30"):
        TransformerEncoderLayer(30, 4, 64)
    with pytest.raises(ValueError, match="activation"):
        TransformerEncoderLayer(32, 4, 64, activation="tanh")
