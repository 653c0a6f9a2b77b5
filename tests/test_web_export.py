"""The language model written out for the page: exported and read back, exactly."""

import json

import pytest
import torch

from transformer_lessons import language_model as lm
from transformer_lessons.web_export import export_charlm, load_charlm

TEXT = "the cat sat on the mat. the dog sat on the log!\n" * 20


@pytest.fixture
def trained(tmp_path):
    tok = lm.CharTokenizer(TEXT)
    cfg = lm.LMConfig(vocab_size=len(tok.chars), context=16, d_model=16, num_heads=2, num_layers=2, d_ff=32)
    model, _, _ = lm.train_lm(cfg, tok.encode(TEXT), steps=3, batch_size=4)
    return tok, model


def test_export_round_trip_is_exact(trained, tmp_path):
    tok, model = trained
    doc = export_charlm(model, tok, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "charlm.json").read_text()) == doc
    assert (tmp_path / "out" / "charlm.bin").stat().st_size == 4 * doc["values"]
    assert "causal" not in doc["tensors"] and "pe" in doc["tensors"]
    again, tok2 = load_charlm(tmp_path / "out")
    assert tok2.chars == tok.chars
    for name, t in model.state_dict().items():
        assert torch.equal(again.state_dict()[name], t), name
    x = tok.encode("the log")[None]
    with torch.no_grad():
        assert torch.equal(again(x), model(x))


def test_export_bad_input(trained, tmp_path):
    tok, model = trained
    with pytest.raises(ValueError, match="vocab_size"):
        export_charlm(model, lm.CharTokenizer("ab"), tmp_path)
    export_charlm(model, tok, tmp_path)
    (tmp_path / "charlm.bin").write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="float32 values"):
        load_charlm(tmp_path)
