"""The decoder layer against nn.TransformerDecoderLayer; cached decoding against recomputation."""

import pytest
import torch
from torch import nn

from transformer_lessons.attention import causal_mask
from transformer_lessons.decoder import KVCache, TransformerDecoderLayer, cached_self_attention
from transformer_lessons.multihead import MultiHeadAttention

B, T, S, D, H, FF = 3, 7, 5, 16, 4, 32


def _pair(norm_first):
    torch.manual_seed(0)
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).double()
    ref.eval()
    return ref, TransformerDecoderLayer.from_torch(ref)


def _masks():
    causal = torch.from_numpy(causal_mask(T))  # (T, T) True = may attend
    memory_mask = torch.ones(T, S, dtype=torch.bool)
    memory_mask[:, 0] = False  # nobody may attend to source position 0
    tgt_pad = torch.ones(B, T, dtype=torch.bool)
    tgt_pad[1, -2:] = False  # sequence 1 has two padding positions at the end
    mem_pad = torch.ones(B, S, dtype=torch.bool)
    mem_pad[2, -1] = False
    return causal, memory_mask, tgt_pad, mem_pad


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("which", ["none", "causal", "all"])
def test_equals_pytorch_decoder_layer(norm_first, which):
    ref, ours = _pair(norm_first)
    x = torch.randn(B, T, D, dtype=torch.float64)
    memory = torch.randn(B, S, D, dtype=torch.float64)
    causal, memory_mask, tgt_pad, mem_pad = _masks()
    ours_kw, ref_kw = {}, {}
    if which in ("causal", "all"):
        ours_kw["tgt_mask"], ref_kw["tgt_mask"] = causal, ~causal  # PyTorch: True = blocked
    if which == "all":
        ours_kw.update(memory_mask=memory_mask, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=mem_pad)
        ref_kw.update(memory_mask=~memory_mask, tgt_key_padding_mask=~tgt_pad, memory_key_padding_mask=~mem_pad)
    with torch.no_grad():
        expected = ref(x, memory, **ref_kw)
        got = ours(x, memory, **ours_kw)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)


def test_attention_weights_per_head_respect_the_masks():
    _, ours = _pair(False)
    causal, memory_mask, _, _ = _masks()
    ours(torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64),
         tgt_mask=causal, memory_mask=memory_mask)
    self_w, cross_w = ours.self_attention_weights, ours.cross_attention_weights
    assert self_w.shape == (B, H, T, T) and cross_w.shape == (B, H, T, S)
    assert (self_w[..., ~causal] == 0).all()  # nothing above the diagonal
    assert (cross_w[..., 0] == 0).all()
    torch.testing.assert_close(self_w.sum(-1), torch.ones(B, H, T, dtype=torch.float64))


def test_bad_padding_mask_is_a_clear_error():
    _, ours = _pair(False)
    with pytest.raises(ValueError, match=r"\(B, S\).*\(3, 7, 1\)"):
        ours(torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64),
             tgt_key_padding_mask=torch.ones(B, T, 1, dtype=torch.bool))


def test_from_torch_rejects_other_modules():
    with pytest.raises(ValueError, match="TransformerDecoderLayer"):
        TransformerDecoderLayer.from_torch(nn.Linear(2, 2))


def test_cached_self_attention_equals_full_causal_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H).double()
    x = torch.randn(B, T, D, dtype=torch.float64)
    full, _ = mha(x, x, x, mask=torch.from_numpy(causal_mask(T)))
    cache = KVCache(num_layers=1)
    steps = [cached_self_attention(mha, x[:, t : t + 1], cache, 0) for t in range(T)]
    assert len(cache) == T
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=1e-12)
