"""A fork for another course is one file: a scratch copy of the repository with only
``_config.yml`` edited (title, author, course name, repository) builds a site, a student
PDF, slides, a handout, notebooks, LMS files and a Gradescope bundle in which no trace of
the old title, author or addresses is left, and the new ones are there.

The copy reuses this checkout's execution cache (the pages' outputs do not depend on
``_config.yml``: if one did, the old value would be in the copied output and this test
would find it) and runs each build step as ``make`` does, with this checkout's ``.venv``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.book_files import ROOT, build_steps, copy_cache, scratch_copy
from transformer_classroom import book

pytestmark = pytest.mark.book

NEW = {
    "title": "Attention for Geologists: Queries, Keys and Strata",
    "author": "The Department of Earth Sciences",
    "course": {"name": "geo-attention"},
    "repository": {"url": "https://github.com/geo-school/attention-course", "branch": "main", "path_to_book": ""},
}
TEXT_SUFFIXES = {".html", ".js", ".json", ".txt", ".xml", ".css", ".ipynb", ".yml", ".md", ".svg"}


def old_traces() -> list[str]:
    values = book.book_values(ROOT)
    return [book.title(ROOT), book.author(ROOT), values["repo_url"], values["pages_url"].rstrip("/"),
            values["pages_url"].split("//")[1].split("/")[0]]


def _run(fork: Path, *args: str, env: dict | None = None) -> None:
    done = subprocess.run(args, cwd=fork, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"{' '.join(args)} failed in the fork:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def fork(tmp_path_factory) -> Path:
    fork = scratch_copy(tmp_path_factory.mktemp("fork") / "repo")
    copy_cache(fork)

    config_path = fork / "_config.yml"
    config = yaml.safe_load(config_path.read_text())
    text = config_path.read_text()
    for key in ("title", "author"):
        text = text.replace(f'{key}: "{config[key]}"', f'{key}: "{NEW[key]}"', 1)
    text = text.replace(f"name: {config['course']['name']}", f"name: {NEW['course']['name']}", 1)
    text = text.replace(f"url: {config['repository']['url']}", f"url: {NEW['repository']['url']}", 1)
    config_path.write_text(text)
    assert {k: yaml.safe_load(text)[k] for k in ("title", "author", "course")} == {k: NEW[k] for k in ("title", "author", "course")}
    assert yaml.safe_load(text)["repository"]["url"] == NEW["repository"]["url"]

    python, jb = sys.executable, str(Path(sys.executable).with_name("jupyter-book"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop(book.ROOT_ENV, None)
    strict = ["-W", "-n", "--keep-going"]
    for step in build_steps(python):  # make notebooks, make book
        _run(fork, *step, env=env)
    _run(fork, python, "-m", "transformer_classroom.lms", "--out", "_build/lms", "--publish", "_build/html/lms", env=env)
    _run(fork, python, "-m", "book_build.pdf_toc", "student", env=env)  # make pdf, the student edition
    _run(fork, jb, "build", ".", "--builder", "pdflatex", *strict, "--path-output", "_build/pdf-student",
         "--toc", "_build/_toc_student.yml", env={**env, "BOOK_EDITION": "student"})
    _run(fork, python, "-m", "book_build.slides", env=env)  # make slides
    _run(fork, python, "-m", "book_build.handout", env=env)  # make handout
    _run(fork, python, "-m", "transformer_classroom.gradescope", "--write", "_build/autograder", "--variants", env=env)
    return fork


def _texts(fork: Path) -> dict[str, str]:
    """Every text the fork built or generated, by path: the site's files, the notebooks, the
    LMS files' contents, the PDFs' text, the Gradescope bundle."""
    texts = {}
    for folder in (fork / "_build" / "html", fork / "_build" / "autograder"):
        for p in folder.rglob("*"):
            if p.is_file() and p.suffix in TEXT_SUFFIXES:
                texts[str(p.relative_to(fork))] = p.read_text(errors="replace")
    for p in (fork / "book").glob("*.ipynb"):
        texts[str(p.relative_to(fork))] = p.read_text()
    for p in (fork / "_build" / "html").rglob("*.zip"):
        with zipfile.ZipFile(p) as zf:
            for name in zf.namelist():
                texts[f"{p.relative_to(fork)}!{name}"] = zf.read(name).decode(errors="replace")
    for p in [fork / "_build" / "pdf-student" / "_build" / "latex" / "book.pdf", *(fork / "_build" / "html").rglob("*.pdf")]:
        text = subprocess.run(["pdftotext", str(p), "-"], capture_output=True, text=True, check=True).stdout
        info = subprocess.run(["pdfinfo", str(p)], capture_output=True, text=True, check=True).stdout
        texts[str(p.relative_to(fork))] = " ".join((text + "\n" + info).split())  # lines joined: a title may wrap
    return texts


def test_a_fork_keeps_no_trace_of_the_old_course(fork):
    texts = _texts(fork)
    assert len(texts) > 100, f"only {len(texts)} files read: is the fork's build where this test looks?"
    found = [f"{path}: {old!r}" for path, text in texts.items() for old in old_traces() if old in text]
    assert not found, "the old course is still in the fork:\n" + "\n".join(found[:40])


def test_a_fork_shows_the_new_course(fork):
    texts = _texts(fork)
    site = fork / "_build" / "html"
    names = book.published(fork)
    assert names["pdf_student"] == "geo-attention-student.pdf"
    for rel in (f"lms/{names['lms_qti']}", f"lms/{names['lms_moodle']}", f"pdf/{names['pdf_handout']}",
                f"slides/{names['pdf_slides']}"):
        assert (site / rel).is_file(), f"the fork did not publish {rel}"
    assert NEW["title"] in texts["_build/html/book/intro.html"] or NEW["title"] in texts["_build/html/index.html"]
    pdf = texts["_build/pdf-student/_build/latex/book.pdf"]
    assert NEW["title"].split(":")[0] in pdf and NEW["repository"]["url"] in pdf
    intro = texts["book/intro.ipynb"]
    assert f"git+{NEW['repository']['url']}@main" in intro, "the notebooks' install cell does not install from the fork"
    config = yaml.safe_load((fork / "_build" / "autograder" / "config.json").read_text())
    assert config["variant_seed"] == NEW["course"]["name"]
