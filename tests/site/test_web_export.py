"""The language model written out for the page: exported and read back, exactly."""

import json

import numpy as np

import pytest
import torch

from transformer_lessons import language_model as lm
from book_build.web_export import export_charlm, load_charlm

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


# --- all-MiniLM-L6-v2 as the real-model page downloads it -----------------------------------

SENTENCES = [  # the browser test's, and the benchmark's
    "The animal didn't cross the street because it was too tired.", "Naïve café owners' résumé-writing, in 2024!",
    "Unbelievably, antidisestablishmentarianism isn't in every dictionary.", "東京 is big; see [SEP] here\tand\u00a0there",
    "I love 🍕 and ☕", "A man is playing a guitar.", "Transformers replaced recurrence with attention.",
    "The trophy didn't fit in the suitcase because it was too big.", "The dog was too exhausted to walk across the road.",
    "Attention lets every token look at every other token in one step, whatever the distance.",
]


@pytest.fixture(scope="module")
def minilm_export(tmp_path_factory):
    from transformer_lessons.pretrained import load_minilm
    from book_build.web_export import export_minilm, load_minilm_export

    folder = tmp_path_factory.mktemp("minilm")
    ref = load_minilm()
    doc = export_minilm(folder, ref)
    return ref, load_minilm_export(folder), doc, folder


def test_minilm_download_is_under_30_mb_and_beside_its_tokenizer_and_card(minilm_export):
    _, _, doc, folder = minilm_export
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert total <= 30_000_000, total
    assert (folder / "minilm.bin").stat().st_size == doc["bytes"]
    from book_build.web_export import minilm_bytes

    assert minilm_bytes(minilm_export[0]) == doc["bytes"] + doc["tokenizer_bytes"]
    assert "apache-2.0" in (folder / "MODEL_CARD.md").read_text().lower()
    kinds = {name: spec["dtype"] for name, spec in doc["tensors"].items()}
    assert kinds["word_embeddings.weight"] == "i8g" and kinds["layers.0.self_attn.q_proj.weight"] == "f16"


def test_minilm_quantized_stays_close(minilm_export):
    """The tolerances docs/instructors.md states: embeddings cosine >= 0.999, attention within 2e-2."""
    ref, small, _, _ = minilm_export
    e_ref, e = ref.embed(SENTENCES), small.embed(SENTENCES)
    cos = (e_ref * e).sum(1) / np.linalg.norm(e, axis=1)
    assert cos.min() >= 0.999, cos
    worst = max(np.abs(ref.attention(s) - small.attention(s)).max() for s in SENTENCES)
    assert worst <= 2e-2, worst
    assert all(small.tokenize(t) == ref.tokenize(t) for t in SENTENCES)
    print(f"min cosine {cos.min():.6f}, largest attention difference {worst:.4f}")


def test_minilm_quantization_bad_shape():
    from book_build.web_export import _quantize_groups

    with pytest.raises(ValueError, match="groups of 16"):
        _quantize_groups(np.zeros((2, 100), dtype=np.float32))
