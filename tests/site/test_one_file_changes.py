"""The changes CONTRIBUTING counts as one file, made in a scratch copy and built: the
running example's ``d_model`` (``code/transformer_lessons/example.py``). (A fork, the other
one-file change, is ``tests/site/test_fork.py``.)

The copy's own packages are imported (``PYTHONPATH``), its pages executed afresh and built
strictly: every hidden check of every page passes with the new size, and the pages print it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.book_files import build_steps, scratch_copy
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
