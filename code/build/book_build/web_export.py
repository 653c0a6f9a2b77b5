"""The book's models written out for the web page's own forward pass (``book/_site_extra/interactive/nn.js``).

The page runs the character language model in plain JavaScript, with no library and no
request to another host. It needs the weights of the model trained in this very build and
its vocabulary. :func:`export_charlm` writes them as two files:

- ``charlm.json``: ``{"format": 1, "config": {...}, "vocab": [chars], "tensors": {name:
  {"offset", "shape"}}}``, offsets counted in float32 values;
- ``charlm.bin``: every tensor of the state dict (the ``pe`` table included, the causal
  mask left out: the script builds it), float32, little-endian, one after the other.

:func:`load_charlm` reads them back into a :class:`~transformer_lessons.language_model.CharLM`,
which is how the tests compare the page with the Python model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from transformer_lessons.language_model import CharLM, CharTokenizer, LMConfig

CHARLM_FORMAT = 1
LEFT_OUT = ("causal",)  # buffers the script rebuilds


def export_charlm(model: CharLM, tokenizer: CharTokenizer, folder: Path) -> dict:
    """Write ``charlm.json`` and ``charlm.bin`` into ``folder`` (created); returns the JSON document."""
    if len(tokenizer.chars) != model.cfg.vocab_size:
        raise ValueError(f"{len(tokenizer.chars)} characters for a model with vocab_size {model.cfg.vocab_size}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors, parts, offset = {}, [], 0
    for name, t in model.state_dict().items():
        if name in LEFT_OUT:
            continue
        a = t.detach().to(torch.float32).contiguous().numpy().astype("<f4")
        tensors[name] = {"offset": offset, "shape": list(a.shape)}
        parts.append(a.ravel())
        offset += a.size
    c = model.cfg
    doc = {"format": CHARLM_FORMAT,
           "config": {"vocab_size": c.vocab_size, "context": c.context, "d_model": c.d_model,
                      "num_heads": c.num_heads, "num_layers": c.num_layers, "d_ff": c.d_ff,
                      "layer_norm_eps": model.norm.eps, "norm_first": True, "activation": "relu"},
           "vocab": list(tokenizer.chars), "tensors": tensors, "values": offset}
    (folder / "charlm.bin").write_bytes(np.concatenate(parts).tobytes())
    (folder / "charlm.json").write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True))
    return doc


def load_charlm(folder: Path) -> tuple[CharLM, CharTokenizer]:
    """The model and tokenizer written by :func:`export_charlm`, in eval mode, float32."""
    folder = Path(folder)
    doc = json.loads((folder / "charlm.json").read_text())
    if doc.get("format") != CHARLM_FORMAT:
        raise ValueError(f"{folder / 'charlm.json'}: format {doc.get('format')!r}, expected {CHARLM_FORMAT}")
    flat = np.frombuffer((folder / "charlm.bin").read_bytes(), dtype="<f4")
    if flat.size != doc["values"]:
        raise ValueError(f"charlm.bin holds {flat.size} float32 values, charlm.json says {doc['values']}")
    c = doc["config"]
    model = CharLM(LMConfig(vocab_size=c["vocab_size"], context=c["context"], d_model=c["d_model"],
                            num_heads=c["num_heads"], num_layers=c["num_layers"], d_ff=c["d_ff"]))
    state = model.state_dict()
    for name, spec in doc["tensors"].items():
        n = int(np.prod(spec["shape"]))
        state[name] = torch.from_numpy(flat[spec["offset"] : spec["offset"] + n].reshape(spec["shape"]).copy())
    model.load_state_dict(state)
    tokenizer = CharTokenizer("".join(doc["vocab"]))
    if tokenizer.chars != doc["vocab"]:
        raise ValueError("the vocabulary in charlm.json is not sorted and distinct")
    return model.eval(), tokenizer


def charlm_box(model: CharLM, model_url: str = "../interactive/charlm/charlm.json", prompt: str = "The ",
               script: str = "../interactive/") -> dict:
    """The display bundle of the page's prompt box for ``model`` (exported by :func:`export_charlm`).

    ``text/html``: a hidden ``<div class="tl-box charlm">`` that ``charlm.js`` (with ``nn.js``)
    fills and shows, styled by ``box.css`` (what the boxes share) and ``charlm.css``; the
    weights are fetched from ``model_url`` only when the reader clicks. Without JavaScript it stays hidden. ``text/markdown`` is empty: the PDF shows the
    page's printed samples and figures instead. ``text/plain`` says where the box is.
    Show it with ``IPython.display.display(bundle, raw=True)``.
    """
    import html

    import matplotlib

    from transformer_lessons import plots

    cmap = matplotlib.colormaps[plots.WEIGHTS_CMAP]
    colours = [matplotlib.colors.to_hex(cmap(v)) for v in np.linspace(0, 1, 256)]
    c = model.cfg
    values = sum(t.numel() for name, t in model.state_dict().items() if name not in LEFT_OUT)
    data = json.dumps({"colours": colours}, separators=(",", ":"))
    page = (
        f'<link rel="stylesheet" href="{script}box.css"><link rel="stylesheet" href="{script}charlm.css">'
        f'<div class="tl-box charlm" hidden data-model="{html.escape(model_url)}" data-bytes="{4 * values}" '
        f'data-layers="{c.num_layers}" data-heads="{c.num_heads}" data-prompt="{html.escape(prompt)}">'
        f'<script type="application/json" class="charlm-data">{data}</script></div>'
        f'<script defer src="{script}nn.js"></script><script defer src="{script}charlm.js"></script>'
    )
    return {"text/html": page, "text/markdown": "",
            "text/plain": "(the prompt box runs on the book's web site; in a notebook, call lm.generate)"}


# --- all-MiniLM-L6-v2 for the real-model page -----------------------------------------------
#
# The page runs the real model in the browser too, downloaded only when the reader asks.
# float32 would be 91 MB; the page ships 28.9 MB with the tokenizer. Measured on ten
# sentences (tests/site/test_web_export.py, tests/browser/test_browser_minilm.py, docs/instructors.md): word
# embeddings and both feed-forward matrices of every layer in int8 with one fp16 scale per
# group of 16 values (symmetric, scale = max|w| / 127), the attention projections in fp16,
# biases and LayerNorms in float32: an attention weight moves by at most 0.015. Groups of
# 64 (27 MB) moved one by 0.023, per-row int8 for the embeddings alone by 0.019.

MINILM_FORMAT = 1
MAX_PIECES = 64  # word pieces a reader may type; with [CLS] and [SEP], 66 positions
GROUP = 16


def _minilm_dtype(name: str, shape: tuple) -> str:
    if len(shape) == 1:
        return "f32"
    if name == "word_embeddings.weight" or name.endswith(("linear1.weight", "linear2.weight")):
        return "i8g"
    return "f16"


def _quantize_groups(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a (R, C)`` -> int8 ``(R, C)`` and fp16 scales ``(R, C / GROUP)``: a ~= q * scale per group
    of ``GROUP`` consecutive values of a row."""
    r, c = a.shape
    if c % GROUP:
        raise ValueError(f"a matrix of shape {a.shape} does not split into groups of {GROUP} columns")
    g = a.reshape(r, c // GROUP, GROUP)
    scale = (np.abs(g).max(axis=2) / 127).astype(np.float16)
    scale[scale == 0] = 1
    q = np.round(g / scale.astype(np.float32)[..., None]).clip(-127, 127).astype(np.int8)
    return q.reshape(r, c), scale


def export_minilm(folder: Path, model=None) -> dict:
    """Write all-MiniLM-L6-v2 for the page into ``folder``: ``minilm.json`` (the index),
    ``minilm.bin`` (the tensors, little-endian, each 4-byte aligned), the model's own
    ``tokenizer.json`` and its model card. Returns the index."""
    import shutil

    from transformer_lessons.pretrained import load_minilm, model_dir

    model = model if model is not None else load_minilm()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors, parts, offset = {}, [], 0

    def put(arr: np.ndarray) -> int:
        nonlocal offset
        start = offset
        raw = arr.tobytes()
        raw += b"\0" * (-len(raw) % 4)
        parts.append(raw)
        offset += len(raw)
        return start

    for name, t in model.state_dict().items():
        a = t.detach().float().numpy()
        if name == "position_embeddings.weight":
            a = a[: MAX_PIECES + 2]  # the positions a reader's sentence can reach
        kind = _minilm_dtype(name, a.shape)
        spec = {"dtype": kind, "shape": list(a.shape)}
        if kind == "f32":
            spec["offset"] = put(a.astype("<f4"))
        elif kind == "f16":
            spec["offset"] = put(a.astype("<f2"))
        else:
            q, scale = _quantize_groups(a)
            spec["offset"], spec["scales"] = put(q), put(scale.astype("<f2"))
        tensors[name] = spec
    c = model.config
    doc = {"format": MINILM_FORMAT, "group": GROUP, "max_pieces": MAX_PIECES, "bytes": offset,
           "config": {"vocab_size": c.vocab_size, "d_model": c.d_model, "num_heads": c.num_heads, "d_ff": c.d_ff,
                      "num_layers": c.num_layers, "layer_norm_eps": c.layer_norm_eps, "positions": MAX_PIECES + 2},
           "tensors": tensors}
    (folder / "minilm.bin").write_bytes(b"".join(parts))
    (folder / "minilm.json").write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True))
    shutil.copyfile(model_dir() / "tokenizer.json", folder / "tokenizer.json")
    shutil.copyfile(model_dir() / "README.md", folder / "MODEL_CARD.md")
    doc["tokenizer_bytes"] = (folder / "tokenizer.json").stat().st_size  # what the page downloads besides
    return doc


def load_minilm_export(folder: Path):
    """The model the page runs: :func:`export_minilm`'s tensors, dequantized, in a
    :class:`~transformer_lessons.pretrained.BertEncoder` with the exported tokenizer
    (position embeddings past ``MAX_PIECES + 2`` are zero)."""
    from tokenizers import Tokenizer

    from transformer_lessons.pretrained import BertConfig, BertEncoder, model_dir

    folder = Path(folder)
    doc = json.loads((folder / "minilm.json").read_text())
    if doc.get("format") != MINILM_FORMAT:
        raise ValueError(f"{folder / 'minilm.json'}: format {doc.get('format')!r}, expected {MINILM_FORMAT}")
    raw = (folder / "minilm.bin").read_bytes()
    if len(raw) != doc["bytes"]:
        raise ValueError(f"minilm.bin has {len(raw)} bytes, minilm.json says {doc['bytes']}")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    model = BertEncoder(BertConfig.from_json(model_dir() / "config.json"), tokenizer)
    state = model.state_dict()
    for name, spec in doc["tensors"].items():
        shape, n = spec["shape"], int(np.prod(spec["shape"]))
        if spec["dtype"] == "f32":
            a = np.frombuffer(raw, "<f4", n, spec["offset"])
        elif spec["dtype"] == "f16":
            a = np.frombuffer(raw, "<f2", n, spec["offset"]).astype(np.float32)
        else:
            q = np.frombuffer(raw, np.int8, n, spec["offset"]).reshape(shape[0], -1, doc["group"]).astype(np.float32)
            s = np.frombuffer(raw, "<f2", n // doc["group"], spec["scales"]).astype(np.float32)
            a = (q * s.reshape(shape[0], -1, 1))
        a = torch.from_numpy(a.reshape(shape).copy())
        if name == "position_embeddings.weight":
            a = torch.cat([a, torch.zeros(state[name].shape[0] - shape[0], shape[1])])
        state[name] = a
    model.load_state_dict(state)
    return model.eval()


def minilm_bytes(model) -> int:
    """What the page downloads for ``model`` (a ``BertEncoder``), without writing it:
    ``minilm.bin`` as :func:`export_minilm` lays it out, plus ``tokenizer.json``."""
    from transformer_lessons.pretrained import model_dir

    size = 0
    for name, t in model.state_dict().items():
        shape = (MAX_PIECES + 2, t.shape[1]) if name == "position_embeddings.weight" else tuple(t.shape)
        n = int(np.prod(shape))
        kind = _minilm_dtype(name, shape)
        parts = [4 * n] if kind == "f32" else [2 * n] if kind == "f16" else [n, 2 * n // GROUP]
        size += sum(p + (-p % 4) for p in parts)
    return size + (model_dir() / "tokenizer.json").stat().st_size


def minilm_box(model, model_url: str = "../interactive/minilm/minilm.json", sentence: str = "",
               other: str = "", script: str = "../interactive/") -> dict:
    """The display bundle of the real-model page's text box (see :func:`charlm_box`): a
    hidden ``<div class="tl-box minilm">`` that ``minilm.js`` fills, with the size of the download
    (:func:`minilm_bytes`) shown on its button before the reader asks for it."""
    import html

    size = minilm_bytes(model)
    page = (
        f'<link rel="stylesheet" href="{script}box.css"><link rel="stylesheet" href="{script}headview.css">'
        f'<link rel="stylesheet" href="{script}minilm.css">'
        f'<div class="tl-box minilm" hidden data-model="{html.escape(model_url)}" data-bytes="{size}" '
        f'data-sentence="{html.escape(sentence)}" data-other="{html.escape(other)}"></div>'
        f'<script defer src="{script}nn.js"></script><script defer src="{script}headview.js"></script>'
        f'<script defer src="{script}minilm.js"></script>'
    )
    return {"text/html": page, "text/markdown": "",
            "text/plain": "(the text box runs on the book's web site; in a notebook, call explore_heads)"}
