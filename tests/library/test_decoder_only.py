"""The decoder-only model as a function of its weights (transformer_lessons.decoder_only) against a
stack of nn.TransformerEncoderLayer under a causal mask and against the book's CharLM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_lessons import decoder_only as do
from transformer_lessons import encoder_block as eb
from transformer_lessons.language_model import CharLM, LMConfig


@pytest.mark.parametrize("b, t, v, e, h, f, layers", [(2, 7, 11, 12, 3, 20, 2), (1, 4, 5, 8, 2, 16, 1),
                                                      (3, 6, 9, 16, 4, 24, 3)])
def test_language_model_matches_pytorch_layers(b, t, v, e, h, f, layers):
    torch.manual_seed(0)
    model = do.TorchDecoderOnly(v, e, h, f, layers, context=t).eval()
    ids = torch.randint(v, (b, t))
    with torch.no_grad():
        expected = model(ids).numpy()
    got = do.language_model(ids.numpy(), model.weights(), h)
    assert got.shape == (b, t, v)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_the_pytorch_reference_is_causal_and_uses_positions():
    torch.manual_seed(1)
    model = do.TorchDecoderOnly(7, 8, 2, 16, 2, context=5).eval()
    ids = torch.randint(7, (2, 5))
    later = ids.clone()
    later[:, -1] = (later[:, -1] + 1) % 7
    with torch.no_grad():
        a, b = model(ids), model(later)
        same = model(torch.full((1, 5), 3))
    torch.testing.assert_close(a[:, :-1], b[:, :-1])  # the past does not see the future
    assert not torch.allclose(a[:, -1], b[:, -1])
    assert not torch.allclose(same[0, 0], same[0, 1])  # positions tell repeated tokens apart


def test_language_model_matches_the_books_char_lm():
    """CharLM (the book's own layers, pre-norm, sinusoidal positions) with its attention biases zeroed."""
    cfg = LMConfig(vocab_size=10, context=6, d_model=12, num_heads=3, num_layers=2, d_ff=20)
    model = CharLM(cfg).eval()
    with torch.no_grad():
        for block in model.blocks:
            a = block.self_attn
            for proj in (a.q_proj, a.k_proj, a.v_proj, a.out_proj):
                proj.bias.zero_()
        ids = torch.randint(10, (2, 6), generator=torch.Generator().manual_seed(2))
        expected = model(ids).double().numpy()
    params = do.lm_weights(model.embed, model.blocks, model.norm, model.head)
    np.testing.assert_allclose(do.language_model(ids.numpy(), params, 3), expected, rtol=1e-5, atol=1e-5)


def test_tensors_in_give_a_tensor_out():
    torch.manual_seed(3)
    model = do.TorchDecoderOnly(5, 8, 2, 16, 1, context=4).eval()
    params = model.weights()
    ids = torch.randint(5, (2, 4))
    params32 = {**{k: torch.as_tensor(v).float() for k, v in params.items() if k != "blocks"},
                "blocks": [{k: torch.as_tensor(v).float() for k, v in p.items()} for p in params["blocks"]]}
    got = do.language_model(ids, params32, 2)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    with torch.no_grad():
        np.testing.assert_allclose(got.numpy(), model(ids).numpy(), rtol=1e-4, atol=1e-5)


def test_masked_attention_matches_nn_multihead_attention():
    torch.manual_seed(4)
    mha = torch.nn.MultiheadAttention(12, 3, bias=False, batch_first=True, dtype=torch.float64).eval()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    mask = np.tril(np.ones((5, 5), dtype=bool))
    with torch.no_grad():
        out, w = mha(x, x, x, attn_mask=torch.from_numpy(~mask), average_attn_weights=False)
    ws = [m.T.numpy() for m in mha.in_proj_weight.detach().chunk(3)] + [mha.out_proj.weight.detach().T.numpy()]
    got, got_w = eb.multi_head_attention(x.numpy(), *ws, 3, mask)
    np.testing.assert_allclose(got, out.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_w, w.numpy(), rtol=1e-10, atol=1e-12)
    got_t, _ = eb.multi_head_attention(x, *ws, 3, torch.from_numpy(mask))
    np.testing.assert_allclose(got_t.numpy(), out.numpy(), rtol=1e-10, atol=1e-12)


def test_book_block_weights_refuse_attention_biases():
    cfg = LMConfig(vocab_size=5, context=4, d_model=8, num_heads=2, num_layers=1, d_ff=16)
    with pytest.raises(ValueError, match="non-zero biases"):
        do.book_block_weights(CharLM(cfg).blocks[0])
