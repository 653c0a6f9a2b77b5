"""Every solution shown in the book runs and passes its check; every starter cell, unchanged,
fails its check with a message that says what to do.

Read from the page sources: on book/exercises.md each ``exercise-start`` block holds a
starter cell (its first code cell) and a check cell (tagged ``raises-exception``); the
first code cell of the matching ``solution-start`` block is the solution. The graded
assignment's solution is in the instructor edition only (book/instructor_assessment.md,
a ``python`` block in its ``solution-start`` block).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jupytext
import pytest
import torch

from transformer_lessons.checks import CheckFailed
from transformer_lessons.toy import ToyConfig, ToyEncoder

BOOK = Path(__file__).resolve().parents[2] / "book"


def _code(cell) -> str:
    # IPython magics (%xmode) are not Python.
    return "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("%"))


def parse_exercises(path: Path = BOOK / "exercises.md"):
    """``(setup code, {label: {"starter", "check", "solution"}})`` of the exercises page."""
    nb = jupytext.read(path)
    exercises: dict[str, dict] = {}
    current = solving = None
    setup = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if m := re.search(r"\{exercise-start\}[^\n]*\n:label: (\S+)", cell.source):
                current = m.group(1)
                exercises[current] = {}
            if "{exercise-end}" in cell.source:
                current = None
            if m := re.search(r"\{solution-start\} (\S+)", cell.source):
                solving = m.group(1)
            if "{solution-end}" in cell.source:
                solving = None
            continue
        tags = cell.metadata.get("tags", [])
        if setup is None:
            setup = _code(cell)
        elif current:
            key = "check" if "raises-exception" in tags else "starter"
            exercises[current].setdefault(key, _code(cell))
        elif solving and "raises-exception" not in tags:
            exercises[solving].setdefault("solution", _code(cell))
    return setup, exercises


def instructor_solutions(path: Path = BOOK / "instructor_assessment.md") -> dict[str, str]:
    text = path.read_text()
    found = {}
    for m in re.finditer(r"```\{solution-start\} (\S+)\n(.*?)```\{solution-end\}", text, re.S):
        code = re.search(r"```python\n(.*?)```", m.group(2), re.S)
        if code:
            found[m.group(1)] = code.group(1)
    return found


SETUP, EXERCISES = parse_exercises()
INSTRUCTOR = instructor_solutions()


def _namespace() -> dict:
    ns: dict = {}
    exec(SETUP, ns)
    torch.manual_seed(0)
    ns["model"] = ToyEncoder(ToyConfig()).eval()  # untrained: the check compares with the model itself
    return ns


def _defined(code: str) -> set[str]:
    return {n.name for n in ast.parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_the_page_has_every_exercise():
    assert len(EXERCISES) >= 12  # 4 core + warm-up + 6 bugs + the assignment
    for label, parts in EXERCISES.items():
        assert {"starter", "check"} <= set(parts), f"{label}: starter or check cell missing"
        assert "solution" in parts or label in INSTRUCTOR, f"{label}: no solution in the book"
        solution = parts.get("solution") or INSTRUCTOR[label]
        assert _defined(parts["starter"]) <= _defined(solution), f"{label}: the solution defines other names"


def test_the_assignment_is_solved_only_in_the_instructor_edition():
    assert "ex-exercises-assignment" in INSTRUCTOR
    assert "solution" not in EXERCISES["ex-exercises-assignment"]


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_starter_fails_its_check_and_says_what_to_do(label):
    ns = _namespace()
    exec(EXERCISES[label]["starter"], ns)
    with pytest.raises(CheckFailed) as err:
        exec(EXERCISES[label]["check"], ns)
    message = str(err.value)
    assert "values differ" not in message, f"{label}: the starter's message names no mistake: {message}"
    assert len(message) > 40


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_solution_in_place_of_the_starter_passes(label, capsys):
    ns = _namespace()
    exec(EXERCISES[label].get("solution") or INSTRUCTOR[label], ns)
    exec(EXERCISES[label]["check"], ns)
    assert "Correct!" in capsys.readouterr().out
