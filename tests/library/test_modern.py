"""transformer_lessons.modern against the references: transformers' LlamaRMSNorm and
LlamaMLP, and PyTorch's F.scaled_dot_product_attention(..., enable_gqa=True)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

from transformer_lessons import attention, modern


def test_rms_norm_is_llamas():
    torch.manual_seed(0)
    norm = LlamaRMSNorm(16, eps=1e-6).double()
    with torch.no_grad():
        norm.weight.copy_(torch.randn(16, dtype=torch.float64))
    x = torch.randn(2, 5, 16, dtype=torch.float64) * 3
    # LlamaRMSNorm normalises in float32 whatever its input's dtype: float32's precision
    np.testing.assert_allclose(modern.rms_norm(x.numpy(), norm.weight.detach().numpy()), norm(x).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(modern.rms_norm(x.numpy(), np.ones(16), eps=1e-5),
                               F.rms_norm(x, (16,), eps=1e-5).numpy(), rtol=1e-12)


def test_swiglu_is_llamas_mlp():
    torch.manual_seed(1)
    mlp = LlamaMLP(LlamaConfig(hidden_size=12, intermediate_size=20, num_attention_heads=2, num_key_value_heads=2, hidden_act="silu", mlp_bias=False)).double()
    x = torch.randn(3, 4, 12, dtype=torch.float64)
    w_gate, w_up, w_down = (layer.weight.detach().numpy().T for layer in (mlp.gate_proj, mlp.up_proj, mlp.down_proj))
    np.testing.assert_allclose(modern.swiglu(x.numpy(), w_gate, w_up, w_down), mlp(x).detach().numpy(),
                               rtol=1e-12, atol=1e-12)


def test_silu_is_torchs_and_finite():
    z = np.array([-1000.0, -3.0, 0.0, 2.5, 1000.0])
    np.testing.assert_allclose(modern.silu(z), F.silu(torch.from_numpy(z)).numpy(), rtol=1e-12, atol=0)
    assert np.all(np.isfinite(modern.silu(z)))


@pytest.mark.parametrize("num_heads, num_kv_heads, causal", [(4, 2, False), (4, 2, True), (6, 3, True), (4, 1, False),
                                                             (4, 4, True)])
def test_grouped_query_attention_is_sdpa_with_enable_gqa(num_heads, num_kv_heads, causal):
    rng = np.random.default_rng(num_heads * 10 + num_kv_heads)
    b, t, e = 2, 5, 24
    d_k = e // num_heads
    x = rng.normal(size=(b, t, e))
    w_q, w_o = rng.normal(size=(e, e)) / 5, rng.normal(size=(e, e)) / 5
    w_k, w_v = rng.normal(size=(e, num_kv_heads * d_k)) / 5, rng.normal(size=(e, num_kv_heads * d_k)) / 5
    mask = attention.causal_mask(t) if causal else None
    out, weights = modern.grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, mask)

    def heads(m, n):
        return torch.from_numpy(m).reshape(b, t, n, d_k).transpose(1, 2)

    ref = F.scaled_dot_product_attention(heads(x @ w_q, num_heads), heads(x @ w_k, num_kv_heads),
                                         heads(x @ w_v, num_kv_heads), is_causal=causal, enable_gqa=True)
    expected = ref.transpose(1, 2).reshape(b, t, e).numpy() @ w_o
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    assert weights.shape == (b, num_heads, t, t)
    np.testing.assert_allclose(weights.sum(-1), 1.0)
    if num_kv_heads == num_heads:  # one key/value head per query head: multi-head attention
        mha_out, _ = modern.grouped_query_attention(x, w_q, w_k, w_v, w_o, num_heads, num_heads, mask)
        np.testing.assert_allclose(mha_out, out)


def test_key_value_head_g_serves_its_group_of_query_heads():
    kv = np.arange(2)[None, :, None, None] * np.ones((1, 2, 3, 4))  # head g filled with g
    assert [int(h[0, 0]) for h in modern.repeat_kv(kv, 3)[0]] == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("call, needle", [
    (lambda: modern.rms_norm(np.ones((2, 4)), np.ones(3)), "(2, 4)"),
    (lambda: modern.swiglu(np.ones((2, 4)), np.ones((4, 6)), np.ones((4, 5)), np.ones((6, 4))), "(4, 5)"),
    (lambda: modern.grouped_query_attention(np.ones((2, 3, 8)), *(np.ones((8, 8)),) * 4, 4, 3), "H_kv = 3"),
    (lambda: modern.grouped_query_attention(np.ones((2, 3, 8)), np.ones((8, 8)), np.ones((8, 8)), np.ones((8, 4)),
                                            np.ones((8, 8)), 4, 2), "(8, 4)"),
    (lambda: modern.grouped_query_attention(np.ones((3, 8)), *(np.ones((8, 8)),) * 4, 4, 2), "(3, 8)"),
])
def test_bad_shapes_are_named(call, needle):
    with pytest.raises(ValueError) as err:
        call()
    assert needle in str(err.value)
