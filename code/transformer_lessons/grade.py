"""Grade students' exercise submissions with the self-checks.

    python -m transformer_lessons.grade FILE_OR_NOTEBOOK... [--csv FILE]

Each submission is a ``.py`` file or a notebook (``.ipynb``, e.g. the exercises page
filled in). From it only the imports and the top-level ``def``/``class`` statements are
run, each on its own, so a broken cell or a crashing import does not stop the others,
and nothing else in the file runs (no training, no check calls). In a notebook of the
book, the code cells of the folded solutions are skipped: a student's own cells count.

Then every item of :data:`RUBRIC` is checked, each on its own: one line per item, with
the points, ``pass`` or the check's message. ``--csv FILE`` writes one row per student
(the file's name) with the points per item and the total.

The submissions run as Python code with your rights: grade only files you trust, or
run this in a throw-away container.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import checks
from .checks import bughunt

TIME_LIMIT = 60  # seconds per check: an endless loop in a submission costs one item, not the run


@dataclass(frozen=True)
class Item:
    """One line of the rubric: the submission's ``name`` is checked with ``check``."""

    key: str
    name: str
    points: int
    check: Callable


def _toy_model():
    import torch

    from .toy import ToyConfig, ToyEncoder

    torch.manual_seed(0)  # untrained is enough: the check compares with the model itself
    return ToyEncoder(ToyConfig()).eval()


RUBRIC = [
    Item("ex1_self_attention", "self_attention", 6, lambda f: checks.check_self_attention(f, cases=[0, 1])),
    Item("ex1_stability", "self_attention", 3, lambda f: checks.check_self_attention(f, cases=[2])),
    Item("ex2_multi_head", "multi_head_attention", 8, checks.check_multihead_attention),
    Item("ex2_warm_up", "MyMultiHeadAttention", 2, checks.check_multihead_module),
    Item("ex3_positional", "my_positional_encoding", 5, checks.check_positional_encoding),
    Item("ex4_weights", "attention_weights", 3, lambda f: checks.check_attention_weights(f, _toy_model())),
    *(Item(f"bug{i}_{name}", name, 2, check) for i, (name, check) in enumerate(bughunt.CHECKS.items(), start=1)),
    Item("assign_causal_multi_head", "causal_multi_head_attention", 8, checks.check_causal_multihead_attention),
]


def code_cells(path: Path) -> list[str]:
    """The code a submission defines: a ``.py`` file whole, or a notebook's own code cells."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return [text]
    cells, in_solution = [], False
    for cell in json.loads(text)["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            if "{solution-start}" in source:
                in_solution = True
            if "{solution-end}" in source:
                in_solution = False
        elif cell["cell_type"] == "code" and not in_solution:
            cells.append("\n".join(_without_magic(line) for line in source.splitlines()))
    return cells


def _without_magic(line: str) -> str:
    """IPython magics and shell escapes are not Python: ``pass`` in their place keeps the block."""
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line


def load(path: Path) -> tuple[dict, list[str]]:
    """Run a submission's imports and definitions; return its namespace and the problems met."""
    namespace: dict = {"__name__": f"submission_{path.stem}"}
    problems = []
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for n, source in enumerate(code_cells(path), start=1):
        try:
            tree = ast.parse(source)
        except SyntaxError as err:
            problems.append(f"cell {n}: SyntaxError: {err.msg} (line {err.lineno}); its definitions are missing")
            continue
        for node in tree.body:
            if not isinstance(node, keep):
                continue
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
            except (Exception, SystemExit) as err:
                problems.append(f"cell {n}, line {node.lineno}: {type(err).__name__}: {err}")
    return namespace, problems


class _Timeout(BaseException):
    """Not an ``Exception``: the checks' own handlers must not catch it."""


def _alarm(signum, frame):
    raise _Timeout(f"the check took more than {TIME_LIMIT} s")


def grade_item(item: Item, namespace: dict) -> tuple[int, str]:
    """``(points, verdict)`` for one rubric item; never raises."""
    fn = namespace.get(item.name)
    if fn is None:
        return 0, f"missing: no `{item.name}` defined"
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(TIME_LIMIT)
    try:
        with _quiet():
            item.check(fn)
    except AssertionError as err:
        return 0, str(err).splitlines()[0] if str(err) else "the check failed"
    except _Timeout as err:
        return 0, f"stopped: {err} (an endless loop?)"
    except (Exception, SystemExit) as err:  # a crash inside the student's code
        return 0, f"crashed: {type(err).__name__}: {err}"
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    return item.points, "pass"


class _quiet:
    """Swallow what checks and submissions print, so the report stays one line per item."""

    def __enter__(self):
        import contextlib
        import io

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        return self

    def __exit__(self, *exc):
        self._stack.close()
        return False


def grade(path: Path, out=None) -> dict[str, int]:
    """Grade one submission, printing one line per item; return the points per item key."""
    out = out or sys.stdout
    student = path.stem
    try:
        namespace, problems = load(path)
    except (OSError, ValueError, KeyError) as err:  # unreadable file or notebook
        namespace, problems = {}, [f"cannot read {path.name}: {type(err).__name__}: {err}"]
    for problem in problems:
        print(f"{student}: note: {problem}", file=out)
    points = {}
    width = max(len(i.key) for i in RUBRIC)
    for item in RUBRIC:
        got, verdict = grade_item(item, namespace)
        points[item.key] = got
        print(f"{student}: {item.key:<{width}} {got:>2}/{item.points:<2} {verdict}", file=out)
    total = sum(points.values())
    print(f"{student}: {'total':<{width}} {total:>2}/{sum(i.points for i in RUBRIC)}", file=out)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lessons.grade",
        description="Run every exercise self-check on each submission: one line per item, points as CSV.",
        epilog="Submissions run as Python code with your rights: grade only files you trust.",
    )
    parser.add_argument("submissions", nargs="+", type=Path, help=".py files or .ipynb notebooks, one per student")
    parser.add_argument("--csv", type=Path, help="write the points per student and item to this CSV file")
    args = parser.parse_args(argv)
    rows = []
    for path in args.submissions:
        points = grade(path)
        rows.append({"student": path.stem, **points, "total": sum(points.values())})
    if args.csv:
        with args.csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["student", *(i.key for i in RUBRIC), "total"])
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.csv} ({len(rows)} students)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
