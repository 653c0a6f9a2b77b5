"""The package's shape: modules by concept, one home per function, short teaching code."""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import transformer_lessons

PACKAGE = Path(transformer_lessons.__file__).parent

BOOK = Path(__file__).resolve().parents[2] / "book"
INCLUDE = re.compile(r"```\{literalinclude\}\s+\.\./code/transformer_lessons/([\w/]+)\.py\s*\n((?::\w+:.*\n)*)")


def shown_on_pages() -> list[tuple[str, str]]:
    """(module, object) of every ``literalinclude`` ``:pyobject:`` of the book's pages: what
    the pages show, read from the pages (a new page's shown code is held to the rule without
    an edit here)."""
    found = set()
    for md in sorted(BOOK.glob("*.md")):
        for m in INCLUDE.finditer(md.read_text()):
            obj = dict(re.findall(r":(\w+):\s*(.*)", m.group(2))).get("pyobject")
            if obj:
                found.add((m.group(1).replace("/", "."), obj.strip()))
    return sorted(found)


# The teaching forms the pages use and explain beside their equations without including
# their source; held to the same length as what the pages show.
TEACHING = [
    ("attention", "softmax"),
    ("attention", "scaled_dot_product_attention"),
    ("attention", "scaled_dot_product_attention_torch"),
    ("multihead", "MultiHeadAttention.__init__"),
    ("encoder", "TransformerEncoderLayer._self_attention"),
    ("encoder", "TransformerEncoderLayer._feed_forward"),
    ("positional", "positional_encoding"),
    ("positional", "positional_encoding_loop"),
    ("positional", "permutation_demo"),
    ("path_length", "input_gradient_norms"),
]
SHOWN = sorted(set(shown_on_pages()) | set(TEACHING))


def test_the_pages_show_library_code():
    """The reader of the pages finds their literalinclude blocks (and a renamed function
    fails here, not silently)."""
    shown = shown_on_pages()
    assert len(shown) >= 10, shown
    assert ("toy", "ToyConfig") in shown


@pytest.mark.parametrize("module,name", SHOWN, ids=[f"{m}.{n}" for m, n in SHOWN])
def test_shown_code_is_at_most_25_lines(module, name):
    obj = importlib.import_module(f"transformer_lessons.{module}")
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


# The two modules whose job is the web site: site.py (myst-nb renderers, the site's paths)
# and web_export.py (the models written out for the pages' JavaScript, and the markup of
# their boxes, which names where the site serves them).
SITE_MODULES = {"site.py", "web_export.py"}


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if p.name not in SITE_MODULES),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_teaching_modules_know_nothing_of_the_site(path):
    """The site's glue is in SITE_MODULES alone: no other module imports myst-nb or
    IPython's display machinery, or names a path of the site."""
    tree = ast.parse(path.read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"myst_nb", "docutils", "sphinx"} or m.startswith("IPython.core")}
    assert "../interactive" not in path.read_text() and "_site_extra" not in path.read_text()
