"""What of a student's submission runs, decided by reading it (never by running it).

A submission is a notebook (its code cells: the book's notebooks carry no solutions, so
every code cell is the student's) or a ``.py`` file, split into cells at ``# %%`` lines as
editors do. Each cell is parsed on its own, so a syntax error costs only that cell. Of each cell's
top-level statements these run, one at a time:

- imports, ``def`` and ``class`` statements;
- assignments (``softmax = lambda ...``, ``D_K = 8``, ``rng = np.random.default_rng(0)``),
  unless the right-hand side calls a function the submission defines itself, anything
  from ``transformer_lessons`` or a ``check_*`` function: that is training or a check,
  not a helper (``model = train_reversal(...)``, ``ok = check_self_attention(...)``).

Everything else (calls such as prints and checks, loops, ``if`` blocks, ``with``) does
not run. :func:`book_references` lists, for each name the submission defines, which
objects of ``transformer_lessons`` its code uses, so that the grader can refuse marks for
the book's own implementation of what an item grades.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "transformer_lessons"
_CELL_MARK = re.compile(r"^\s*#\s*%%")


@dataclass
class Cell:
    """One cell: its number (from 1), its source and the indices of the statements that run."""

    number: int
    source: str
    run: list[int] = field(default_factory=list)
    tree: ast.Module | None = None


def code_cells(path: Path) -> list[str]:
    """A submission's code cells: a ``.py`` file split at ``# %%`` lines, or a notebook's own cells."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        cells, current = [], []
        for line in text.splitlines():
            if _CELL_MARK.match(line) and current:
                cells.append("\n".join(current))
                current = []
            current.append(line)
        cells.append("\n".join(current))
        return cells
    cells = []
    for cell in json.loads(text)["cells"]:
        if cell.get("cell_type") == "code":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cells.append("\n".join(_without_magic(line) for line in source.splitlines()))
    return cells


def _without_magic(line: str) -> str:
    """IPython magics and shell escapes are not Python: ``pass`` in their place keeps the block."""
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line


def _called_roots(node: ast.AST) -> list[tuple[str, str]]:
    """``(root name, called name)`` of every call in ``node`` outside lambda bodies."""
    out = []

    def visit(n):
        if isinstance(n, ast.Lambda):
            return
        if isinstance(n, ast.Call):
            f, last = n.func, None
            while isinstance(f, ast.Attribute):
                last = last or f.attr
                f = f.value
            if isinstance(f, ast.Name):
                out.append((f.id, last or f.id))
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def _book_aliases(trees: list[ast.Module]) -> tuple[dict[str, str], bool]:
    """``{local name: "transformer_lessons.x.y"}`` bound by the imports, and whether a star import is there."""
    aliases, star = {}, False
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == PACKAGE:
                        aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else PACKAGE
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] != PACKAGE:
                    continue
                for a in node.names:
                    if a.name == "*":
                        star = True
                    else:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases, star


def select(path: Path) -> tuple[list[Cell], list[str], dict[str, str]]:
    """The cells of ``path`` with the statements that run; notes (syntax errors); and
    ``{name: why}`` for the names of assignments that do not run (a graded function that
    needs one is told why)."""
    cells, notes, skipped = [], [], {}
    for n, source in enumerate(code_cells(path), start=1):
        cell = Cell(n, source)
        try:
            cell.tree = ast.parse(source)
        except SyntaxError as err:
            notes.append(f"cell {n}: SyntaxError: {err.msg} (line {err.lineno}); its definitions are missing")
        cells.append(cell)
    trees = [c.tree for c in cells if c.tree is not None]
    defined = {
        node.name
        for tree in trees
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    book, _ = _book_aliases(trees)
    for cell in cells:
        if cell.tree is None:
            continue
        for i, node in enumerate(cell.tree.body):
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                cell.run.append(i)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                calls = [
                    called
                    for root, called in _called_roots(node.value)
                    if root in defined or root in book or called.startswith("check")
                ]
                needs = sorted(_uses(node.value) & set(skipped))  # a value built from one that did not run
                if calls or needs:
                    why = f"it calls `{calls[0]}`" if calls else f"it needs `{needs[0]}`, which did not run"
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for name in (n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                        skipped[name] = f"`{name} = ...` (cell {cell.number}, line {node.lineno}) did not run: {why}"
                else:
                    cell.run.append(i)
    return cells, notes, skipped


def _uses(node: ast.AST) -> set[str]:
    """Dotted names a statement reads: ``np.sqrt`` gives ``np`` and ``np.sqrt``."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            parts, f = [], n
            while isinstance(f, ast.Attribute):
                parts.append(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                parts.append(f.id)
                dotted = list(reversed(parts))
                out.update(".".join(dotted[: k + 1]) for k in range(len(dotted)))
        elif isinstance(n, ast.Name):
            out.add(n.id)
    return out


def book_references(cells: list[Cell], star_names: set[str] = frozenset()) -> dict[str, set[str]]:
    """``{name defined: {"transformer_lessons.mod.obj", ...}}``: the book objects its code
    uses, directly or through the submission's other functions, classes and helpers.

    ``star_names`` are the names a ``from transformer_lessons import *`` would bind.
    """
    trees = [c.tree for c in cells if c.tree is not None]
    aliases, star = _book_aliases(trees)
    statements: dict[str, list[ast.AST]] = {}
    for cell in cells:
        for i in cell.run:
            node = cell.tree.body[i]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                statements.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            statements.setdefault(n.id, []).append(node)
    direct: dict[str, set[str]] = {}
    mentions: dict[str, set[str]] = {}
    for name, nodes in statements.items():
        used = set().union(*(_uses(n) for n in nodes))
        refs = set()
        for dotted in used:
            root, _, rest = dotted.partition(".")
            if root in aliases:
                refs.add(aliases[root] + ("." + rest if rest else ""))
            elif star and not rest and dotted in star_names:
                refs.add(f"{PACKAGE}.{dotted}")
        direct[name] = refs
        mentions[name] = {d for d in used if d in statements and d != name}
    out = {}
    for name in statements:
        seen, todo, refs = {name}, [name], set()
        while todo:
            cur = todo.pop()
            refs |= direct[cur]
            for m in mentions[cur] - seen:
                seen.add(m)
                todo.append(m)
        out[name] = refs
    return out
