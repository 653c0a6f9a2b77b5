"""The package's shape: modules by concept, one home per function, short teaching code."""

import ast
import inspect
from pathlib import Path

import pytest

import transformer_lessons
from transformer_lessons import (
    attention,
    decoder,
    encoder,
    flash,
    language_model,
    multihead,
    path_length,
    positional,
    rotary,
    stability,
    toy,
)

PACKAGE = Path(transformer_lessons.__file__).parent

# What the book's pages show with literalinclude :pyobject:, whole (docstring included).
SHOWN = [
    (attention, "softmax"),
    (attention, "scaled_dot_product_attention"),
    (attention, "scaled_dot_product_attention_torch"),
    (multihead, "MultiHeadAttention.__init__"),
    (multihead, "MultiHeadAttention.forward"),
    (encoder, "TransformerEncoderLayer.forward"),
    (encoder, "TransformerEncoderLayer._self_attention"),
    (encoder, "TransformerEncoderLayer._feed_forward"),
    (positional, "positional_encoding"),
    (positional, "positional_encoding_loop"),
    (positional, "permutation_demo"),
    (stability, "softmax_unstable"),
    (stability, "attention_unscaled"),
    (stability, "saturation_stats"),
    (path_length, "input_gradient_norms"),
    (flash, "flash_attention"),
    (toy, "ToyConfig"),
    (toy, "train_reversal"),
    (decoder, "TransformerDecoderLayer.forward"),
    (decoder, "cached_self_attention"),
    (language_model, "CharLM.forward"),
    (rotary, "rope"),
]


@pytest.mark.parametrize("module,name", SHOWN, ids=[f"{m.__name__.split('.')[-1]}.{n}" for m, n in SHOWN])
def test_shown_code_is_at_most_25_lines(module, name):
    obj = module
    for part in name.split("."):
        obj = getattr(obj, part)
    lines = inspect.getsource(obj).rstrip().splitlines()
    assert len(lines) <= 25, f"{name} is {len(lines)} lines"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_is_imported_across_modules(path):
    tree = ast.parse(path.read_text())
    private = [
        f"from .{node.module} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert not private, private


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if p.name != "site.py"),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_teaching_modules_know_nothing_of_the_site(path):
    """The site's glue (myst-nb renderers, the site's paths) is in site.py alone: no other
    module imports myst-nb or IPython's display machinery, or names a path of the site."""
    tree = ast.parse(path.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"myst_nb", "docutils", "sphinx"} or m.startswith("IPython.core")}
    assert "../interactive" not in path.read_text() and "_site_extra" not in path.read_text()
