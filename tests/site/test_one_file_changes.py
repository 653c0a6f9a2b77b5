"""The changes CONTRIBUTING counts by their files, made in a scratch copy and built: the
running example's ``d_model`` (one file, ``code/transformer_lessons/example.py``), a chapter
(four) and a self-checked, graded exercise (three). (A fork, the other one-file change, is
``tests/site/test_fork.py``.)

The copy's own packages are imported (``PYTHONPATH``) and its pages built strictly.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.book_files import build_steps, copy_cache, scratch_copy
from transformer_lessons import example

pytestmark = pytest.mark.book

NEW_D_MODEL = 2 * example.D_MODEL


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> Path:
    copy = scratch_copy(tmp_path_factory.mktemp("d_model") / "repo")
    source = copy / "code" / "transformer_lessons" / "example.py"
    text = source.read_text()
    assert f"\nD_MODEL = {example.D_MODEL}\n" in text
    source.write_text(text.replace(f"\nD_MODEL = {example.D_MODEL}\n", f"\nD_MODEL = {NEW_D_MODEL}\n"))
    code = copy / "code"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (code, code / "classroom", code / "build")),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    probe = subprocess.run([sys.executable, "-c", "import transformer_lessons.example as e; print(e.__file__, e.D_MODEL)"],
                           cwd=copy, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert probe == [str(source), str(NEW_D_MODEL)], probe
    for step in build_steps(sys.executable):
        done = subprocess.run(step, cwd=copy, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, f"{' '.join(step[1:])} failed with d_model = {NEW_D_MODEL}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return copy


def test_a_new_d_model_builds_and_is_printed(changed):
    """The strict build passed (every page's hidden checks); the pages that print the
    running example's size print the new one, in the site and in the notebooks."""
    encoder = (changed / "_build" / "html" / "book" / "encoder.html").read_text()
    assert f"= {NEW_D_MODEL}" in encoder and f"= {4 * NEW_D_MODEL}" in encoder  # d_model and d_ff
    notebook = (changed / "book" / "encoder.ipynb").read_text()
    assert f"$d_{{model}}$ = {NEW_D_MODEL}" in notebook


# --- a chapter: four files by hand ---------------------------------------------------------

FUNCTION = '''

def attention_entropy(weights: np.ndarray) -> np.ndarray:
    """The entropy of each row of attention weights, in bits: 0 for a row that looks at
    one key, log2(S) for a row spread evenly over S keys."""
    w = np.asarray(weights, dtype=np.float64)
    return -(np.where(w > 0, w * np.log2(np.where(w > 0, w, 1.0)), 0.0)).sum(axis=-1)
'''
TEST = '''

def test_attention_entropy_against_its_formula():
    from transformer_lessons.attention import attention_entropy

    weights = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]])
    np.testing.assert_allclose(attention_entropy(weights), [0.0, 2.0, 1.0])
'''
PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
    jupytext_version: 1.19.6
kernelspec:
  display_name: Python 3
  language: python
  name: python3
myst:
  substitutions:
    time: 5 minutes, optional
---

# How spread out is attention?

```{note}
**Time: {{ time }}.** A short extension.
```

The entropy of a row of attention weights says how many keys it looks at: 0 bits for one
key, 2 bits for four keys equally.

```{code-cell} ipython3
import numpy as np

from transformer_lessons.attention import attention_entropy

print(attention_entropy(np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])))
```

```{exercise-start}
:label: ex-entropy-rows
```

Write `row_entropy(weights)`, the entropy in bits of each row of a `(T, S)` array of
attention weights.

```{code-cell} ipython3
def row_entropy(weights):
    raise NotImplementedError("your code here")
```

```{code-cell} ipython3
:tags: [raises-exception]

from transformer_lessons.checks import check_row_entropy

check_row_entropy(row_entropy)
```

```{exercise-end}
```

::::{quiz-question} quiz_concepts
(quiz-entropy-spread)=
## The entropy of a row

A row of weights is spread evenly over eight keys. What is its entropy, in bits?

:::{admonition} Answer
:class: dropdown quiz-answer
3 bits: $\\log_2 8$.
:::
::::
"""


# --- a self-checked, graded exercise: three files by hand (its page is the new chapter's) ----

CHECK = '''

def check_row_entropy(fn) -> None:
    """``fn(weights (T, S)) -> (T,)``: the entropy in bits of each row."""
    from ..attention import attention_entropy

    weights = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]])
    got, dtype = as_array(call_learner(fn, weights, what="row_entropy"))
    if not close(got, attention_entropy(weights), dtype):
        raise CheckFailed(f"row_entropy gives {got}; one key is 0 bits, four equal keys 2 bits")
    print("Correct! The entropy of each row, in bits.")


__all__ += ["check_row_entropy"]
exercise(
    "ex-entropy-rows", "The entropy of each row", page="entropy", sets=("going_further",),
    items=[Graded("row_entropy", "row_entropy", 3, check_row_entropy, "{exercise}: bits per row")],
)
'''
CHECK_TEST = '''

def test_check_row_entropy_passes_the_formula_and_names_nats():
    import numpy as np

    from transformer_lessons.checks import check_row_entropy

    check_row_entropy(lambda w: -(np.where(w > 0, w * np.log2(np.where(w > 0, w, 1.0)), 0.0)).sum(-1))
    with pytest.raises(CheckFailed, match="bits"):
        check_row_entropy(lambda w: -(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)).sum(-1))
'''
SOLUTION = """
import numpy as np


def row_entropy(weights):
    w = np.asarray(weights, dtype=float)
    return -(np.where(w > 0, w * np.log2(np.where(w > 0, w, 1.0)), 0.0)).sum(axis=-1)
"""

CHAPTER = {
    "code/transformer_lessons/attention.py": lambda text: text + FUNCTION,
    "tests/library/test_attention.py": lambda text: text + TEST,
    "book/entropy.md": lambda text: PAGE,
    "_toc.yml": lambda text: text.replace("      - file: book/cost\n", "      - file: book/cost\n      - file: book/entropy\n"),
}
EXERCISE = {
    "code/transformer_lessons/checks/decoder.py": lambda text: text + CHECK,
    "tests/library/test_checks_decoder.py": lambda text: text + CHECK_TEST,
    "book/entropy.md": lambda text: text,  # the chapter's page asks for it (above)
}


@pytest.fixture(scope="module")
def chapter(tmp_path_factory) -> Path:
    """The chapter and the exercise on its page, made in one scratch copy (one build)."""
    copy = scratch_copy(tmp_path_factory.mktemp("chapter") / "repo")
    for rel, change in {**CHAPTER, **EXERCISE}.items():
        if rel == "book/entropy.md":
            change = CHAPTER[rel]
        path = copy / rel
        new = change(path.read_text() if path.exists() else "")
        assert not path.exists() or new != path.read_text(), rel
        path.write_text(new)
    code = copy / "code"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (code, code / "classroom", code / "build")),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    # This checkout's executed pages are reused (the new function changes no existing page's
    # output), so make book's cache guard, which would re-execute them all, is left out here:
    # only the new page executes.
    copy_cache(copy)
    # ... except the one page that prints the rubric, whose output the new exercise changes
    subprocess.run([sys.executable, "-c", "from book_build import cache_guard; from transformer_classroom import book; "
                    "assert cache_guard.forget([book.path('instructor_assessment')])"],
                   cwd=copy, env=env, check=True, timeout=300)
    for step in [s for s in build_steps(sys.executable) if "book_build.cache_guard" not in s]:
        done = subprocess.run(step, cwd=copy, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, f"{' '.join(step[1:])} failed with the new chapter:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    # the tests that read the pages, the packages and the tools, in the copy
    tests = ["tests/library/test_attention.py", "tests/library/test_layers.py", "tests/library/test_package.py",
             "tests/site/test_readme.py", "tests/site/test_pacing.py", "tests/classroom/test_book_pages.py",
             "tests/classroom/test_quiz_blocks.py", "tests/site/test_quiz_key.py", "tests/library/test_checks_decoder.py",
             "tests/library/test_checks_exercises.py", "tests/classroom/test_grade_names.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-m", "not browser"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"the fast tests fail with the new chapter:\n{done.stdout[-4000:]}"
    return copy


def test_a_chapter_is_four_files(chapter):
    """The library function, its test, the page (with its quiz question) and _toc.yml: the
    strict build and the fast tests pass; the page is built, its notebook generated, and its
    question is on its quiz page."""
    site = chapter / "_build" / "html" / "book"
    assert "How spread out is attention?" in (site / "entropy.html").read_text()
    assert (chapter / "book" / "entropy.ipynb").exists(), "make notebooks did not write the page's notebook"
    assert "quiz-entropy-spread" in (site / "quiz_concepts.html").read_text()
    assert re.search(r"\[\s*-?0\.\s+2\.\s*\]", (site / "entropy.html").read_text()), "the page's cell did not print"


def test_an_exercise_is_three_files(chapter, tmp_path):
    """The check with its declaration, its test and the page: the page prints the declared
    title under the build's number, the notebook too; the grader grades the new item (alone,
    in its declared set, and in the whole rubric) and the assessment page's rubric lists it."""
    site = chapter / "_build" / "html" / "book"
    page = (site / "entropy.html").read_text()
    assert re.search(r'id="ex-entropy-rows".*?Exercise \d+\.1\s*</span>\s*\(The entropy of each row\)', page, re.S)
    assert "The entropy of each row" in (chapter / "book" / "entropy.ipynb").read_text()
    # the phone layer may break a code name after its underscore (<wbr>, book_build.ext.phone)
    assessment = re.sub(r"<[^>]+>", "", (site / "instructor_assessment.html").read_text())
    assert "row_entropy" in assessment
    code = chapter / "code"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (code, code / "classroom", code / "build"))}
    (tmp_path / "student.py").write_text(SOLUTION)
    for selection in (["--items", "row_entropy"], ["--assignment", "going_further"], []):
        csv = tmp_path / "grades.csv"
        done = subprocess.run([sys.executable, "-m", "transformer_classroom.grade", str(tmp_path / "student.py"),
                               "--csv", str(csv), *selection], cwd=chapter, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        header, row = csv.read_text().splitlines()[:2]
        columns = dict(zip(header.split(","), row.split(",")))
        assert columns["row_entropy"] == "3", (selection, columns)
