"""The reader's path through the built site (_build/html): run `make book` first.

What a student sees is the lesson, not its scaffolding: code cells compute and print and
never test (claims are checked in cells tagged ``remove-cell``, which the site and the
notebooks leave out), the lesson plan the book was written from is never mentioned on a
student page, and a hidden check still fails the build when its claim breaks.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup
from tests.book_files import ROOT, html_page, source

pytestmark = pytest.mark.book

# A test in a visible cell: an assert statement or a testing helper of NumPy/PyTorch.
TEST_CALL = re.compile(r"^\s*assert\b|\b(np|numpy|torch)\.testing\.", re.MULTILINE)
OUTLINE = re.compile(r"\boutlines?\b", re.IGNORECASE)


def article(docname: str):
    art = BeautifulSoup(html_page(docname).read_text(), "html.parser").select_one("article.bd-article")
    assert art is not None, f"{docname}.html has no <article class='bd-article'>"
    return art


def student_pages(toc_files: list[str]) -> list[str]:
    # The instructor pages may name the lesson plan; the student PDF leaves them out.
    return [doc for doc in toc_files if "instructor" not in Path(doc).name]


def test_no_visible_code_cell_tests_anything(html_dir, toc_files):
    """Cells a reader sees (hide-input ones included: one click shows them) do not assert."""
    problems = []
    for doc in toc_files:
        for i, cell in enumerate(article(doc).select("div.cell")):
            code = cell.select_one(".cell_input pre")
            if code is None:
                continue
            match = TEST_CALL.search(code.get_text())
            if match:
                line = code.get_text()[match.start() :].splitlines()[0].strip()
                problems.append(f"{doc}: visible cell {i}: {line[:100]!r}")
    assert not problems, "move these checks into a cell tagged remove-cell:\n" + "\n".join(problems)


def test_no_student_page_mentions_the_outline(html_dir, toc_files):
    problems = []
    for doc in student_pages(toc_files):
        text = article(doc).get_text(" ")
        for match in OUTLINE.finditer(text):
            problems.append(f"{doc}: ...{text[max(0, match.start() - 60) : match.end() + 40]!r}...")
    assert not problems, "the reader never sees the lesson plan:\n" + "\n".join(problems)


def test_no_page_points_at_files_a_reader_cannot_open(html_dir, toc_files):
    """Code is shown or linked on the repository host, not named as a local path."""
    local_path = re.compile(r"\b(code/transformer_lessons/\w+\.py|tests/test_\w+\.py|benchmarks/\w+\.py)\b")
    problems = []
    for doc in student_pages(toc_files):
        art = article(doc)
        for a in art.select("a[href]"):
            a.decompose()  # a link to the host may spell the path
        for match in local_path.finditer(art.get_text(" ")):
            problems.append(f"{doc}: {match.group(0)}")
    assert not problems, "link these to https://github.com/... or show them:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory, book_config) -> Path:
    """A one-page book with this book's execution settings and one false hidden claim."""
    root = tmp_path_factory.mktemp("tiny_book")
    execute = {k: v for k, v in book_config["execute"].items() if k != "cache"}
    execute["execute_notebooks"] = "force"
    config = {"title": "tiny", "execute": execute, "only_build_toc_files": True}
    (root / "_config.yml").write_text(yaml.safe_dump(config))
    (root / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "page"}))
    header = "\n".join(source("book/live_coding").read_text().split("\n---", 1)[0].splitlines()[1:])
    page = textwrap.dedent(
        """\
        # A page with a hidden check

        ```{code-cell} ipython3
        total = 0.1 + 0.2
        print(total)
        ```

        ```{code-cell} ipython3
        :tags: [remove-cell]

        assert total == 0.3, "a claim the text makes, and it is false"
        ```
        """
    )
    (root / "page.md").write_text(f"---\n{header}\n---\n\n{page}")
    return root


def test_a_false_hidden_check_fails_the_build(tiny_book):
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert jb, "jupyter-book is not installed next to this Python"
    result = subprocess.run(
        [jb, "build", str(tiny_book), "-W", "-n", "--keep-going"], capture_output=True, text=True, timeout=600
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, "the build passed although a hidden (remove-cell) check failed"
    assert "a claim the text makes, and it is false" in output, output[-2000:]
