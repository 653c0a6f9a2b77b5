"""The grading command: a good, a partly broken and a crashing submission, as .py and .ipynb."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from transformer_classroom import grade
from tests.library.test_exercises_solutions import EXERCISES, INSTRUCTOR

BOOK = Path(__file__).resolve().parents[2] / "book"
MAX = sum(item.points for item in grade.RUBRIC)


def page_notebook(replace: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The exercises notebook (install cell and all) as a student's, starter cells replaced by ``replace``."""
    nb = nbformat.read(BOOK / "exercises.ipynb", as_version=4)
    starters = {parts["starter"]: label for label, parts in EXERCISES.items()}
    for cell in nb.cells:
        label = starters.get(cell.source) if cell.cell_type == "code" else None
        if label and replace and label in replace:
            cell.source = replace[label]
    return nb


SOLUTIONS = {label: parts.get("solution") or INSTRUCTOR[label] for label, parts in EXERCISES.items()}


def page_solution(page: str, label: str) -> str:
    """The first code cell of the solution ``label`` on ``book/<page>.md``, without its check calls."""
    nb = jupytext.read(BOOK / f"{page}.md")
    solving = False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and f"{{solution-start}} {label}" in cell.source:
            solving = True
        elif solving and cell.cell_type == "code":
            return "\n".join(line for line in cell.source.splitlines() if not line.startswith("check_"))
    raise LookupError(label)


# The exercises of the other pages (decoder, language model, today's parts), solved as the book solves them.
OTHER_SOLUTIONS = [page_solution(ex.page, label) for label, ex in grade.EXERCISES.items() if ex.page != "exercises"]
HEADER = "import math\nimport numpy as np\nimport torch\nfrom torch import nn\nfrom transformer_lessons import softmax\n\n"

PARTLY_BROKEN = """
import numpy as np
from transformer_lessons import softmax


def self_attention(Q, K, V):  # no max subtraction: right on small inputs, nan on large scores
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    return np.exp(s) / np.exp(s).sum(-1, keepdims=True) @ V


def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads):  # heads split without a transpose
    B, T, E = X.shape
    d_k = E // num_heads
    Q, K, V = ((X @ W).reshape(B, num_heads, T, d_k) for W in (W_q, W_k, W_v))
    w = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k))
    return (w @ V).reshape(B, T, E) @ W_o, w


def my_positional_encoding(seq_len, d_model):
    pe = np.zeros((seq_len, d_model))
    ang = np.arange(seq_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang[:, : d_model // 2])
    return pe


def split_heads(x, num_heads):
    raise RuntimeError("boom")


def causal_attention(Q, K, V):
    while True:  # never returns: the time limit ends it
        pass
"""


def _lines(out: str, student: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(rf"^{student}: (\w+) .*$", out, re.M)}


def _points(out: str, student: str) -> dict[str, int]:
    return {k: int(re.search(r"(\d+)/", v).group(1)) for k, v in _lines(out, student).items()}


@pytest.fixture()
def submissions(tmp_path, monkeypatch):
    monkeypatch.setattr(grade, "TIME_LIMIT", 10)
    good = tmp_path / "good.ipynb"
    nb = page_notebook(SOLUTIONS)
    nb.cells += [nbformat.v4.new_code_cell("import math"), *map(nbformat.v4.new_code_cell, OTHER_SOLUTIONS)]
    nbformat.write(nb, good)
    untouched = tmp_path / "untouched.ipynb"
    nbformat.write(page_notebook(), untouched)
    partly = tmp_path / "partly.py"
    partly.write_text(PARTLY_BROKEN)
    good_py = tmp_path / "good_py.py"
    good_py.write_text(HEADER + "\n\n".join([*SOLUTIONS.values(), *OTHER_SOLUTIONS]))
    crash_py = tmp_path / "crash.py"
    crash_py.write_text("import numpy as np\n\ndef self_attention(Q, K, V)\n    return Q\n")  # SyntaxError
    crash_nb = tmp_path / "crash_nb.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import no_such_module_here\nimport numpy as np"),
        nbformat.v4.new_code_cell("def self_attention(Q, K, V):\n    import sys\n    sys.exit(1)"),
        nbformat.v4.new_code_cell("def my_positional_encoding(n, d) oops"),
        nbformat.v4.new_code_cell(
            "def split_heads(x, num_heads):\n    return x.reshape(x.shape[0], x.shape[1], num_heads, -1)"
            ".transpose(0, 2, 1, 3)"
        ),
        nbformat.v4.new_code_cell("raise SystemExit('a top-level statement: never run')"),
    ]
    nbformat.write(nb, crash_nb)
    return {p.stem: p for p in (good, untouched, partly, good_py, crash_py, crash_nb)}


def test_grades_every_submission_and_writes_the_csv(submissions, tmp_path, capsys):
    out_csv = tmp_path / "grades.csv"
    assert grade.main([str(p) for p in submissions.values()] + ["--csv", str(out_csv)]) == 0
    out = capsys.readouterr().out
    keys = [item.key for item in grade.RUBRIC]

    assert not re.search(r"^(good|untouched): note:", out, re.M)  # the notebook's own cells all run
    for student in ("good", "good_py"):  # every solution of the book, and the instructor's
        assert _points(out, student) == {**{i.key: i.points for i in grade.RUBRIC}, "total": MAX}, out

    assert _points(out, "untouched")["total"] == 0  # the folded solutions of the page are not graded
    assert "not written yet" in _lines(out, "untouched")["self_attention"]
    assert "wrong way round" in _lines(out, "untouched")["bug_causal_attention"]  # the bug, named

    partly = _points(out, "partly")
    lines = _lines(out, "partly")
    assert partly["self_attention"] == 6 and partly["self_attention_stability"] == 0
    assert "overflows" in lines["self_attention_stability"]
    assert partly["multi_head"] == 0 and "no transpose" in lines["multi_head"]
    assert partly["positional"] == 5
    assert "RuntimeError: boom" in lines["bug_split_heads"]
    assert "stopped: the check took more than" in lines["bug_causal_attention"]
    assert "missing" in lines["assign_causal_multi_head"]
    assert partly["total"] == 11

    assert _points(out, "crash")["total"] == 0
    assert re.search(r"^crash: note: cell 1: SyntaxError", out, re.M)
    crash_nb = _points(out, "crash_nb")
    assert crash_nb["bug_split_heads"] == 2 and crash_nb["total"] == 2  # the one good cell still counts
    assert "ModuleNotFoundError" in out and "cell 3: SyntaxError" in out
    assert "SystemExit" in _lines(out, "crash_nb")["self_attention"]
    assert "raise SystemExit" not in out  # a top-level statement does not run

    # One line per student and item, plus the total.
    for student in submissions:
        assert set(_lines(out, student)) == {*keys, "total"}

    rows = list(csv.DictReader(out_csv.open()))
    assert [r["student"] for r in rows] == list(submissions)
    assert list(rows[0]) == ["student", *keys, "total"]
    by_student = {r["student"]: r for r in rows}
    assert int(by_student["good"]["total"]) == MAX and int(by_student["partly"]["positional"]) == 5


def test_the_book_notebooks_carry_no_solution():
    """A student works in the notebook: its exercises have starters and checks, no solutions
    (book_build.notebook_text), and no MyST the notebook would show as raw text."""
    for ipynb in sorted(BOOK.glob("*.ipynb")):
        nb = nbformat.read(ipynb, as_version=4)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert "{solution-start}" not in markdown and "{exercise-start}" not in markdown, ipynb.name
        assert not re.search(r"^\s*(`{3,}|:{3,})\{", markdown, re.M), ipynb.name
    code = "\n".join(c.source for c in nbformat.read(BOOK / "exercises.ipynb", as_version=4).cells)
    for label, solution in SOLUTIONS.items():  # the book's own solution of every exercise: not there
        body = [line for line in solution.splitlines() if line.strip() and not line.lstrip().startswith(("def ", '"""', "#"))]
        assert body and not all(line in code for line in body[:3]), label


def test_command_line_entry_point(submissions, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "transformer_classroom.grade",
            str(submissions["partly"]),
            "--csv",
            str(tmp_path / "g.csv"),
            "--time-limit",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "partly: positional" in result.stdout and (tmp_path / "g.csv").exists()


def test_instructor_page_prints_the_rubric_from_the_command():
    """The page's table of items is printed by a cell from ``grade.RUBRIC``, not typed."""
    text = (BOOK / "instructor_assessment.md").read_text()
    assert "grade.rubric_markdown()" in text
    assert not re.search(r"^\| `\w+` \| `\w+` \| \d+ \|", text, re.M)  # no hand-typed rubric row
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| (\d+) \|", grade.rubric_markdown(), re.M)
    assert rows == [(i.key, i.name, str(i.points)) for i in grade.RUBRIC]


def test_the_capstone_set_grades_the_encoder_block(tmp_path):
    """`--assignment capstone` grades the three steps of "Build your own model": the book's
    solutions pass in the sandbox (the checks hand them the book's block, attention, positions,
    loss, schedule and a tiny model across the pipe), and a wrong answer to each item scores 0
    with its mistake named."""
    items = grade.select_items(assignment="capstone")
    assert [i.name for i in items] == ["encoder_block", "language_model", "lm_loss", "learning_rate", "train",
                                       "evaluate"]
    assert list(grade.ASSIGNMENTS["capstone"]) == [i.key for i in items]
    labels = ["ex-build-encoder-block", "ex-build-language-model", "ex-build-lm-loss", "ex-build-learning-rate",
              "ex-build-train", "ex-build-evaluate"]
    solutions = [page_solution("build_your_own", label) for label in labels]
    good = tmp_path / "good.py"
    good.write_text(HEADER + "\n\n".join(solutions))
    passed = grade.grade_submission(good, items, time_limit=60)
    assert passed.total == passed.max_total > 0, passed.verdicts

    wrongs = {  # item: (its solution made wrong, words of the verdict)
        "encoder_block": (("if norm_first:", "if False:"), ["you computed the post-norm block", "norm_first=True"]),
        "language_model": (("return attention(X, W_q, W_k, W_v, W_o, h, mask)",
                            "return attention(X, W_q, W_k, W_v, W_o, h)"), ["causal mask is missing"]),
        "lm_loss": (("ids[:, 1:].reshape(-1)", "ids[:, :-1].reshape(-1)"), ["targets are not shifted"]),
        "learning_rate": (("return peak_lr * (step + 1) / warmup_steps", "return peak_lr"), ["no warm-up"]),
        "train": (("optimizer.zero_grad()", "pass"), ["gradients are never zeroed"]),
        "evaluate": (("model.eval()", "model.train()"), ["dropout is active while measuring"]),
    }
    for index, (item, ((old, new), words)) in enumerate(wrongs.items()):
        assert old in solutions[index], (item, old)
        broken = [s.replace(old, new) if i == index else s for i, s in enumerate(solutions)]
        path = tmp_path / f"wrong_{item}.py"
        path.write_text(HEADER + "\n\n".join(broken))
        failed = grade.grade_submission(path, [items[index]], time_limit=60)  # its item alone
        key = items[index].key
        assert failed.points[key] == 0, failed.verdicts
        assert all(w in failed.verdicts[key] for w in words), failed.verdicts[key]