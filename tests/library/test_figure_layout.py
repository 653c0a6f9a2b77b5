"""Every figure the library makes, laid out as the page shows it: no two texts overlap, no
text sticks out of the figure, the smallest text is at least 9 CSS px tall on a 390 px
phone, and heatmap cells are square.

The inputs have the sizes and labels of the book's own figures (the real model's
sentences tokenised by its own tokenizer, the language model's 24-character snippet, the
toy model's 10 labelled words), and some harder ones (64 tokens). The measurements are
in tests/figure_checks.py; tests/browser/test_browser_layout.py measures the built pages' figures
in a browser at 390 px (the width each image is shown at times its recorded smallest text).
"""

from __future__ import annotations

import functools
import inspect

import matplotlib
import numpy as np
import pytest
from tests.figure_checks import non_square_cells, overlapping_texts, smallest_phone_text_px

from transformer_lessons import diagrams, example, explorables, plots, positional_encoding, pretrained, walk
from transformer_lessons.stability import saturation_stats

matplotlib.use("Agg")

SENTENCES = {  # the real-model page's sentences
    "tired": "The animal didn't cross the street because it was too tired.",
    "agreement": "The keys to the cabinet are on the table.",
    "cat": "The cat sat on the mat because it was tired.",
}
SIX = ["A man is playing a guitar.", "Someone is strumming a guitar.", "The cat sleeps on the sofa.",
       "A kitten is napping on the couch.", "The stock market fell sharply today.",
       "Share prices dropped this afternoon."]
SNIPPET = "the __init__() method of a"[:24]  # 24 characters, as on the language-model page
TOY = "the cat sat on the mat and the dog saw".split()


def _wordpieces(text: str) -> list[str]:
    """The real model's tokens of ``text`` (its own tokenizer, no weights loaded)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(pretrained.model_dir() / "tokenizer.json"))
    tok.no_padding()
    return tok.encode(text).tokens


def _weights(*shape, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(shape[-1]), size=shape[:-1])


def _figures():
    """name -> a function making the figure, for every figure function of the library."""
    tired = _wordpieces(SENTENCES["tired"])
    keys = _wordpieces(SENTENCES["agreement"])
    cat = _wordpieces(SENTENCES["cat"])
    chars = [repr(c)[1:-1] or " " for c in SNIPPET]
    words = "the cat sat on the mat".split()
    pe = positional_encoding(64, 32)
    d_ks = [2**i for i in range(1, 11)]
    n = len(tired)
    return {
        # plots
        "attention_heatmap": lambda: plots.attention_heatmap(_weights(6, 6), words, annotate=True),
        "attention_heatmap, the agreement head": lambda: plots.attention_heatmap(
            _weights(len(keys), len(keys)), keys, title="layer 2, head 11"),
        "attention_heatmap, 24 characters": lambda: plots.attention_heatmap(_weights(24, 24), chars, chars),
        "attention_heatmap, cross-attention": lambda: plots.attention_heatmap(
            _weights(6, 5), [f"out {t}" for t in range(6)], [f"in {s}" for s in range(5)], annotate=True),
        "attention_heatmap, 64 tokens": lambda: plots.attention_heatmap(_weights(64, 64), [f"w{i}" for i in range(64)]),
        "attention_grid": lambda: plots.attention_grid(_weights(4, 6, 6), words),
        "attention_grid, two real-model heads": lambda: plots.attention_grid(
            _weights(2, n, n), tired, titles=["layer 5, head 6: previous token", "layer 1, head 12: [CLS]"]),
        "attention_grid, toy sentence": lambda: plots.attention_grid(
            _weights(2, 10, 10), [f"{w} ({t})" for t, w in enumerate(TOY)], suptitle="Trained toy model on a real sentence"),
        "attention_grid, positions": lambda: plots.attention_grid(_weights(2, 10, 10), list(range(10)),
                                                                  suptitle="Mean attention, layer 0"),
        "positional_encoding_heatmap": lambda: plots.positional_encoding_heatmap(pe),
        "positional_encoding_curves": lambda: plots.positional_encoding_curves(pe),
        "saturation_plot": lambda: plots.saturation_plot(
            d_ks[:4], [saturation_stats(d, False) for d in d_ks[:4]], [saturation_stats(d, True) for d in d_ks[:4]]),
        "loss_curve": lambda: plots.loss_curve(np.geomspace(4, 0.1, 300), title="Training loss (bits per character)"),
        "gradient_distance_plot": lambda: plots.gradient_distance_plot(np.logspace(-8, 0, 6), np.ones(6)),
        "scaling_plot": lambda: plots.scaling_plot(
            [128, 256, 512, 1024, 2048], {"plain (scores formed)": np.geomspace(1, 256, 5),
                                          "flash (tiled)": np.geomspace(1, 16, 5)}, ylabel="peak memory (MiB)",
            title="Memory of one attention call"),
        "dk_weights_plot": lambda: plots.dk_weights_plot(d_ks, np.linspace(0.2, 1, 10), np.full(10, 0.3), 8, 500),
        "pe_similarity_plot": lambda: plots.pe_similarity_plot(pe, 10),
        # diagrams
        "self_attention": diagrams.self_attention,
        "multi_head": diagrams.multi_head,
        "encoder_layer": diagrams.encoder_layer,
        "positional_input": diagrams.positional_input,
        "decoder_layer": diagrams.decoder_layer,
        # the real model's pictures
        "head_gallery": lambda: pretrained.head_gallery(_weights(6, 12, n, n), tired),
        "head_view": lambda: pretrained.head_view(_weights(len(cat), len(cat)), cat, "layer 1, head 3", query=2),
        "similarity_heatmap": lambda: pretrained.similarity_heatmap(np.corrcoef(np.random.default_rng(0).normal(
            size=(6, 20))), SIX),
        # the explorables' static figures
        "explorables.attention": lambda: explorables.attention(words, *np.random.default_rng(0).normal(
            size=(3, 6, 4))).static,
        "explorables.dk_slider": lambda: explorables.dk_slider(n_keys=8).static,
        "explorables.pe_explorer": lambda: explorables.pe_explorer(64, 32, 10).static,
        # the illustrated walk's frames, with the foundations page's inputs ("cat")
        **{f"attention_walk, step {k}": functools.partial(lambda k: _cat_walk().frames[k - 1], k) for k in range(1, 8)},
    }


@functools.cache
def _cat_walk():
    rng = np.random.default_rng(example.SEED)
    X = example.embeddings(rng)
    W_Q, W_K, W_V = (rng.normal(size=(example.D_MODEL, example.D_K)) / np.sqrt(example.D_MODEL) for _ in range(3))
    return walk.attention_walk(example.tokens(), X, W_Q, W_K, W_V, 1)


FIGURES = _figures()


@functools.cache
def figure(name: str):
    """Each figure is made once and measured by every test below."""
    return FIGURES[name]()


def _figure_functions():
    """Every public function of the figure modules that returns a figure."""
    found = set()
    for module in (plots, diagrams, pretrained, explorables, walk):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != module.__name__:
                continue
            ret = str(inspect.signature(fn).return_annotation)
            doc = fn.__doc__ or ""
            if "ThemedFigure" in ret or "Explorable" in ret or ret == "Walk" or "Returns a matplotlib ``Figure``" in doc \
                    or "Returns a ``Figure``" in doc:
                found.add(name)
    return found


def test_every_figure_function_is_measured():
    measured = {name.split(",")[0].removeprefix("explorables.") for name in FIGURES}
    # explore_heads draws with head_view; themed draws whatever its caller gives it
    missing = _figure_functions() - measured - {"explore_heads", "themed"}
    assert not missing, f"figure functions without a layout test: {sorted(missing)}"


@pytest.mark.parametrize("name", FIGURES)
def test_no_text_overlaps_or_is_cut_off(name):
    fig = figure(name)
    problems = overlapping_texts(fig)
    assert not problems, f"{name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", FIGURES)
def test_smallest_text_is_readable_on_a_phone(name):
    fig = figure(name)
    px, text = smallest_phone_text_px(fig, svg=getattr(fig, "svg", False))
    assert px >= plots.MIN_PHONE_TEXT_PX, f"{name}: {text!r} is {px:.1f} CSS px at 390 px"


@pytest.mark.parametrize("name", [n for n in FIGURES if "heatmap" in n or "grid" in n or "gallery" in n
                                  or n in ("explorables.attention", "positional_input")])
def test_heatmap_cells_are_square(name):
    fig = figure(name)
    assert any(ax.images for ax in fig.axes), f"{name} draws no heatmap"
    problems = non_square_cells(fig)
    assert not problems, f"{name}: {problems}"


def test_long_sequences_label_every_kth_token_instead_of_overlapping():
    """64 tokens cannot each have a readable label on a 5.3 inch heatmap: every k-th does."""
    labels = [f"w{i}" for i in range(64)]
    fig = plots.attention_heatmap(_weights(64, 64), labels)
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    step = labels.index(shown[1])
    assert step > 1 and shown == labels[::step]
    assert not overlapping_texts(fig)


def test_a_grid_too_narrow_for_its_labels_goes_down_one_column():
    n = len(_wordpieces(SENTENCES["tired"]))
    fig = plots.attention_grid(_weights(2, n, n), _wordpieces(SENTENCES["tired"]), ncols=2)
    heat = [ax for ax in fig.axes if ax.images]
    assert len({round(ax.get_position().x0, 2) for ax in heat}) == 1  # one column
    fig = plots.attention_grid(_weights(2, 6, 6), list("abcdef"), ncols=2)
    heat = [ax for ax in fig.axes if ax.images]
    assert len({round(ax.get_position().x0, 2) for ax in heat}) == 2  # short: side by side


def test_the_checks_can_fail():
    """Each measurement catches what it is for, on figures made wrong on purpose."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.3, 3))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "first label", fontsize=10)
    ax.text(0.52, 0.5, "second label", fontsize=10)
    ax.text(1.3, 0.5, "outside", fontsize=10, transform=ax.transAxes)
    problems = overlapping_texts(fig)
    assert any("overlaps" in p for p in problems) and any("sticks out" in p for p in problems)
    ax.imshow(np.zeros((4, 8)), aspect="auto")
    assert non_square_cells(fig)
    fig.texts.clear()
    ax.set_title("tiny", fontsize=6)
    assert smallest_phone_text_px(fig)[0] < plots.MIN_PHONE_TEXT_PX
