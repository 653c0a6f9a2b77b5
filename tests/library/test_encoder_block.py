"""The encoder block as functions of its weights (transformer_lessons.encoder_block) against
nn.TransformerEncoderLayer and nn.MultiheadAttention, in evaluation mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lessons import encoder_block as eb


def _layer(norm_first, d_model=16, nhead=4, dim_feedforward=40, seed=0):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.1, batch_first=True,
                                       norm_first=norm_first, dtype=torch.float64).eval()
    with torch.no_grad():  # LayerNorms that are not the identity
        for p in (layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias):
            p.add_(0.3 * torch.randn_like(p))
    return eb.zero_attention_biases(layer)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_block_matches_nn_transformer_encoder_layer(norm_first):
    layer = _layer(norm_first)
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    with torch.no_grad():
        expected = layer(x).numpy()
    params = eb.encoder_block_weights(layer)
    got = eb.encoder_block(x.numpy(), params, 4, norm_first=norm_first, dropout=0.1)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    # torch tensors in (float32), a tensor out
    got32 = eb.encoder_block(x.float(), params, 4, norm_first=norm_first)
    assert isinstance(got32, torch.Tensor) and got32.dtype == torch.float32
    np.testing.assert_allclose(got32.numpy(), expected, rtol=1e-4, atol=1e-4)
    # the other order gives other numbers: the test can tell them apart
    assert not np.allclose(eb.encoder_block(x.numpy(), params, 4, norm_first=not norm_first), expected, atol=1e-3)


def test_multi_head_attention_matches_nn_multihead_attention():
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(12, 3, bias=False, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    with torch.no_grad():
        out, w = mha(x, x, x, need_weights=True, average_attn_weights=False)
    ws = [m.T.numpy() for m in mha.in_proj_weight.detach().chunk(3)] + [mha.out_proj.weight.detach().T.numpy()]
    got, got_w = eb.multi_head_attention(x.numpy(), *ws, 3)
    np.testing.assert_allclose(got, out.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_w, w.numpy(), rtol=1e-10, atol=1e-12)
    got_t, _ = eb.multi_head_attention(x, *ws, 3)  # a tensor and arrays mixed
    np.testing.assert_allclose(got_t.numpy(), out.numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_matches_nn_layer_norm():
    torch.manual_seed(2)
    ln = nn.LayerNorm(6, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.normal_(), ln.bias.normal_()
    x = torch.randn(4, 6, dtype=torch.float64) * 3 + 2
    got = eb.layer_norm(x.numpy(), ln.weight.detach().numpy(), ln.bias.detach().numpy())
    np.testing.assert_allclose(got, ln(x).detach().numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_acts_in_training_only():
    layer = _layer(False)
    params = eb.encoder_block_weights(layer)
    x = np.random.default_rng(3).normal(size=(2, 5, 16))
    evaluation = eb.encoder_block(x, params, 4, dropout=0.5)
    assert np.array_equal(evaluation, eb.encoder_block(x, params, 4, dropout=0.5))
    trained = [eb.encoder_block(x, params, 4, dropout=0.5, training=True, rng=np.random.default_rng(s)) for s in (0, 1)]
    assert not np.allclose(trained[0], evaluation) and not np.allclose(trained[0], trained[1])
    same_seed = eb.encoder_block(x, params, 4, dropout=0.5, training=True, rng=np.random.default_rng(0))
    assert np.array_equal(trained[0], same_seed)


def test_weights_refuse_attention_biases():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    with torch.no_grad():
        layer.self_attn.in_proj_bias.fill_(0.5)
    with pytest.raises(ValueError, match="non-zero biases"):
        eb.encoder_block_weights(layer)
    assert set(eb.encoder_block_weights(eb.zero_attention_biases(layer))) == set(eb.WEIGHT_NAMES)
