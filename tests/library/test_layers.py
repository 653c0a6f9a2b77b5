"""The three parts of the repository and the one direction of their imports.

``transformer_lessons`` (what a learner imports) <- ``transformer_classroom`` (grading, the
LMS export, the reader of the book's structure) <- ``book_build`` (the Sphinx extensions,
the site's glue, the tools). An arrow points at what may be imported: never the other
way, and no circle anywhere, imports inside functions included. No module is found
through an addition to ``sys.path``: each is a package installed by ``make``, or the
repository's ``tests`` and ``benchmarks`` packages run from its root.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "transformer_lessons": ROOT / "code" / "transformer_lessons",
    "transformer_classroom": ROOT / "code" / "classroom" / "transformer_classroom",
    "book_build": ROOT / "code" / "build" / "book_build",
}
# What each part may import of the others.
ALLOWED = {
    "transformer_lessons": set(),
    "transformer_classroom": {"transformer_lessons"},
    "book_build": {"transformer_lessons", "transformer_classroom"},
}
PROJECT = set(PACKAGES) | {"tests", "benchmarks"}


def module_name(path: Path) -> str:
    for package, folder in PACKAGES.items():
        if folder in path.parents:
            rel = path.relative_to(folder.parent)
            break
    else:
        rel = path.relative_to(ROOT) if ROOT in path.parents else Path(path.name)
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files() -> list[Path]:
    files = [p for folder in PACKAGES.values() for p in folder.rglob("*.py")]
    files += sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))
    return [p for p in files if "__pycache__" not in p.parts]


def imports(path: Path) -> set[str]:
    """Every project module ``path`` imports, at module level or inside a function."""
    name = module_name(path)
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        found |= {t for t in targets if t.split(".")[0] in PROJECT}
    return found


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in project_files()}
    edges = {}
    for name, path in modules.items():
        # an import of ``a.b.c`` reaches the deepest module of the project it names
        targets = set()
        for t in imports(path):
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                targets.add(t)
        edges[name] = targets
    return edges


def test_the_parts_import_in_one_direction():
    wrong = []
    for path in project_files():
        part = module_name(path).split(".")[0]
        if part not in ALLOWED:
            continue
        for target in imports(path):
            other = target.split(".")[0]
            if other != part and other not in ALLOWED[part]:
                wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not wrong, "imports against the direction lessons <- classroom <- build:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle():
    """No circle of imports between the project's modules (a package's ``__init__``
    importing its own modules, which import nothing back from it, is no circle)."""
    edges = graph()
    colour, stack, cycles = {}, [], []

    def visit(node):
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if colour.get(nxt) == "grey":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in colour:
                visit(nxt)
        stack.pop()
        colour[node] = "black"

    for node in sorted(edges):
        if node not in colour:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_a_cycle_and_a_wrong_direction(tmp_path):
    """The two tests above can fail: a function-level import is an import."""
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from transformer_classroom import grade\n")
    assert "transformer_classroom.grade" in imports(a)


# The sandbox's worker is a fresh ``python -I`` whose one folder of the book's code is passed
# to it by the grader (installed or copied into a Gradescope bundle): it is told, not found.
TOLD = {"code/classroom/transformer_classroom/sandbox_worker.py"}


def test_no_module_is_found_through_sys_path():
    additions = [f"{p.relative_to(ROOT)}:{i}" for p in project_files()
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"\bsys\.path\.(insert|append|extend)\(", line) and str(p.relative_to(ROOT)) not in TOLD]
    assert not additions, f"sys.path changed in: {additions}"
    assert "pythonpath" not in (ROOT / "pyproject.toml").read_text(), "pytest's pythonpath puts folders on sys.path"
    assert "local_extensions" not in (ROOT / "_config.yml").read_text(), "local_extensions puts a folder on sys.path"


@pytest.mark.parametrize("path", sorted(PACKAGES["transformer_lessons"].rglob("*.py")), ids=lambda p: p.name)
def test_the_learners_package_reads_nothing_of_the_repository(path):
    """``transformer_lessons`` works installed alone (Colab): it opens no file of the book."""
    text = path.read_text(encoding="utf-8")
    for needle in (r"_toc\.yml", r"_config\.yml", r"(?<![\w.])_build\b", r"(?<![\w.])book/"):
        found = re.search(needle, text)
        assert not found, f"{path.name} names {found[0]!r}: the learner's package reads nothing of the repository"


def test_the_learners_package_installs_alone(tmp_path):
    """The root pyproject.toml (what Colab's install cell installs) packages only
    ``transformer_lessons``; its dependencies are NumPy, PyTorch, Matplotlib (and threadpoolctl)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["transformer_lessons*"]
    names = {re.split(r"[<>=!~ ]", d)[0] for d in project["project"]["dependencies"]}
    assert names == {"numpy", "torch", "matplotlib", "threadpoolctl"}
