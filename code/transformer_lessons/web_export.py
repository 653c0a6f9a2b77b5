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

from .language_model import CharLM, CharTokenizer, LMConfig

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

    ``text/html``: a hidden ``<div class="charlm">`` that ``charlm.js`` (with ``nn.js``)
    fills and shows; the weights are fetched from ``model_url`` only when the reader
    clicks. Without JavaScript it stays hidden. ``text/latex`` is empty: the PDF shows the
    page's printed samples and figures instead. ``text/plain`` says where the box is.
    Show it with ``IPython.display.display(bundle, raw=True)``.
    """
    import html

    import matplotlib

    from . import plots

    cmap = matplotlib.colormaps[plots.WEIGHTS_CMAP]
    colours = [matplotlib.colors.to_hex(cmap(v)) for v in np.linspace(0, 1, 256)]
    c = model.cfg
    values = sum(t.numel() for name, t in model.state_dict().items() if name not in LEFT_OUT)
    data = json.dumps({"colours": colours}, separators=(",", ":"))
    page = (
        f'<link rel="stylesheet" href="{script}charlm.css">'
        f'<div class="charlm" hidden data-model="{html.escape(model_url)}" data-bytes="{4 * values}" '
        f'data-layers="{c.num_layers}" data-heads="{c.num_heads}" data-prompt="{html.escape(prompt)}">'
        f'<script type="application/json" class="charlm-data">{data}</script></div>'
        f'<script defer src="{script}nn.js"></script><script defer src="{script}charlm.js"></script>'
    )
    return {"text/html": page, "text/latex": "",
            "text/plain": "(the prompt box runs on the book's web site; in a notebook, call lm.generate)"}
