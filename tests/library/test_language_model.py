"""The tiny language model: shapes, causality, the cache, the metrics; the seq2seq model's plumbing."""

import math

import numpy as np
import pytest
import torch

from transformer_lessons import language_model as lm
from transformer_lessons.decoder import KVCache
from transformer_lessons.seq2seq import Seq2Seq, Seq2SeqConfig, reversal_batch

TEXT = "the cat sat on the mat. the dog sat on the log!\n" * 20


@pytest.fixture
def small():
    tok = lm.CharTokenizer(TEXT)
    cfg = lm.LMConfig(vocab_size=len(tok.chars), context=16, d_model=16, num_heads=2, num_layers=2, d_ff=32)
    torch.manual_seed(0)
    return tok, lm.CharLM(cfg).double().eval()


def test_corpus_ships_with_python():
    text = lm.corpus()
    assert len(text) > 400_000 and "def " in text


def test_tokenizer_round_trip_and_unknown_characters():
    tok = lm.CharTokenizer(TEXT)
    assert tok.decode(tok.encode("the log")) == "the log"
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("zebra")


def test_forward_shape_and_bad_input(small):
    tok, model = small
    assert model(tok.encode("the cat")[None]).shape == (1, 7, len(tok.chars))
    with pytest.raises(ValueError, match=r"\(1, 17\)"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_no_position_sees_the_future(small):
    tok, model = small
    x = tok.encode("the cat sat on t")[None]
    y = x.clone()
    y[0, 10:] = (y[0, 10:] + 1) % len(tok.chars)  # change every token from position 10 on
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[0, :10], b[0, :10], rtol=0, atol=0)
    assert not torch.allclose(a[0, 10:], b[0, 10:])
    for block in model.blocks:
        w = block.last_attention[0]  # (H, T, T)
        assert (w.triu(1) == 0).all()


def test_cached_steps_equal_the_full_forward(small):
    tok, model = small
    x = tok.encode("the dog sat on the")[:16]
    cache = KVCache(len(model.blocks))
    with torch.no_grad():
        steps = torch.cat([model.step(t.view(1, 1), cache) for t in x], dim=1)
        full = model(x[None])
    torch.testing.assert_close(steps, full, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="cache is full"):
        model.step(x[:1].view(1, 1), cache)


def test_generate_same_tokens_with_and_without_cache(small):
    tok, model = small
    model = model.float()
    prompt = tok.encode("the ")
    a = lm.generate(model, prompt, 10, temperature=0.8, seed=3, use_cache=True)
    b = lm.generate(model, prompt, 10, temperature=0.8, seed=3, use_cache=False)
    assert a.shape == (14,) and torch.equal(a, b) and torch.equal(a[:4], prompt)
    with pytest.raises(ValueError, match="temperature"):
        lm.generate(model, prompt, 2, temperature=0)
    with pytest.raises(ValueError, match="context"):
        lm.generate(model, prompt, 13)


def test_metrics():
    tok = lm.CharTokenizer(TEXT)
    ids = tok.encode(TEXT)
    train, test = lm.split(ids)
    assert len(train) == int(len(ids) * 0.9) and torch.equal(torch.cat([train, test]), ids)
    counts = np.bincount(train.numpy(), minlength=len(tok.chars)) + 1.0
    expected = -np.mean(np.log2(counts[test.numpy()] / counts.sum()))
    assert lm.unigram_bits(train, test, len(tok.chars)) == pytest.approx(expected)
    cfg = lm.LMConfig(vocab_size=len(tok.chars), context=16, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    model = lm.CharLM(cfg)
    with torch.no_grad():  # a model whose logits are all zero predicts uniformly: log2(V) bits
        model.head.weight.zero_()
        model.head.bias.zero_()
    assert lm.bits_per_character(model, test) == pytest.approx(math.log2(len(tok.chars)))


def test_training_lowers_the_loss():
    tok = lm.CharTokenizer(TEXT)
    cfg = lm.LMConfig(vocab_size=len(tok.chars), context=16, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    _, losses, seconds = lm.train_lm(cfg, tok.encode(TEXT), steps=60, batch_size=8)
    assert len(losses) == 60 and seconds > 0
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:5])


def test_seq2seq_shapes_and_teacher_forcing():
    cfg = Seq2SeqConfig(seq_len=5, d_model=8, num_heads=2, d_ff=16)
    src, tgt, tgt_in = reversal_batch(3, cfg, torch.Generator().manual_seed(0))
    assert torch.equal(tgt, src.flip(1))
    assert (tgt_in[:, 0] == cfg.vocab_size).all() and torch.equal(tgt_in[:, 1:], tgt[:, :-1])
    model = Seq2Seq(cfg).eval()
    assert model(src, tgt_in).shape == (3, 5, cfg.vocab_size)
    assert model.greedy(src).shape == (3, 5)
    assert model.decoder.cross_attention_weights.shape == (3, 2, 5, 5)


# --- top-k and top-p sampling, against distributions worked out by hand -------------------

P = np.array([0.15, 0.5, 0.05, 0.2, 0.1])  # sorted: 0.5 (id 1), 0.2 (3), 0.15 (0), 0.1 (4), 0.05 (2)
LOGITS = torch.tensor(np.log(P), dtype=torch.float64)


@pytest.mark.parametrize("kwargs, expected", [
    ({}, P),
    ({"temperature": 2.0}, np.sqrt(P) / np.sqrt(P).sum()),  # softmax(log p / 2) = sqrt(p) / sum
    ({"top_k": 2}, np.array([0, 5, 0, 2, 0]) / 7),
    ({"top_k": 5}, P),
    ({"top_p": 0.4}, np.array([0, 1, 0, 0, 0])),  # 0.5 alone reaches 0.4
    ({"top_p": 0.6}, np.array([0, 5, 0, 2, 0]) / 7),  # 0.5 + 0.2: the token that crosses 0.6 is kept
    ({"top_p": 0.8}, np.array([15, 50, 0, 20, 0]) / 85),
    ({"top_p": 1.0}, P),
    ({"top_k": 2, "top_p": 0.8}, np.array([0, 5, 0, 2, 0]) / 7),  # top-k first, then the nucleus
    ({"top_k": 4, "top_p": 0.9}, np.array([15, 50, 0, 20, 10]) / 95),
])
def test_next_token_probs_by_hand(kwargs, expected):
    probs = lm.next_token_probs(LOGITS, **kwargs)
    np.testing.assert_allclose(probs.numpy(), expected, rtol=0, atol=1e-12)


def test_next_token_probs_ties_go_to_the_lower_id():
    probs = lm.next_token_probs(torch.tensor([0.0, 1.0, 1.0, 1.0]), top_k=2)
    np.testing.assert_allclose(probs.numpy(), [0, 0.5, 0.5, 0], atol=1e-7)


@pytest.mark.parametrize("kwargs, match", [
    ({"temperature": 0}, "temperature"), ({"temperature": -1.0}, "temperature"),
    ({"temperature": float("nan")}, "temperature"), ({"temperature": "1"}, "temperature"),
    ({"top_k": 0}, "top_k"), ({"top_k": 6}, "V=5"), ({"top_k": 2.0}, "top_k"), ({"top_k": True}, "top_k"),
    ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"), ({"top_p": float("nan")}, "top_p"),
])
def test_next_token_probs_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lm.next_token_probs(LOGITS, **kwargs)
    with pytest.raises(ValueError, match="logits"):
        lm.next_token_probs(LOGITS[None])


def test_generate_top_k_1_is_greedy_and_top_p_keeps_the_support(small):
    tok, model = small
    model = model.float()
    prompt = tok.encode("the ")
    greedy = lm.generate(model, prompt, 8, top_k=1, seed=5)
    ids = prompt.clone()
    with torch.no_grad():
        for _ in range(8):
            ids = torch.cat([ids, model(ids[None])[0, -1].argmax().view(1)])
    assert torch.equal(greedy, ids)
    assert torch.equal(lm.generate(model, prompt, 8, top_p=1.0, seed=4), lm.generate(model, prompt, 8, seed=4))
    with pytest.raises(ValueError, match="top_p"):
        lm.generate(model, prompt, 2, top_p=0)


# --- writing past the context (the prompt box in Python) ----------------------------------

def test_write_equals_generate_within_the_context_and_goes_on_past_it(small, monkeypatch, capsys):
    import sys

    from transformer_lessons.lm_explore import explore_writing, write

    tok, model = small
    model = model.float()
    ref = lm.generate(model, tok.encode("the "), 12, temperature=0.9, top_k=5, top_p=0.9, seed=7)
    assert write(model, tok, "the ", 12, 0.9, 5, 0.9, seed=7) == tok.decode(ref[4:])
    long = write(model, tok, "the cat sat on the mat. " * 3, 40, seed=1)  # prompt and text beyond 16 positions
    assert len(long) == 40 and set(long) <= set(tok.chars)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed: the text, as a plain function
    assert explore_writing(model, tok, "the ", 5, top_p=None, seed=1) is None
    assert capsys.readouterr().out == "the " + write(model, tok, "the ", 5, 0.8, seed=1) + "\n"
    for bad, match in [("", "empty"), ("zebra", "'z'")]:
        with pytest.raises(ValueError, match=match):
            write(model, tok, bad)
    with pytest.raises(ValueError, match="num_new"):
        write(model, tok, "the", -1)
    with pytest.raises(ValueError, match="top_k"):
        write(model, tok, "the", 3, top_k=0)
