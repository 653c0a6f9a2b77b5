"""Quiz questions written in their chapter (transformer_classroom.quiz_blocks): collected on
their quiz page, absent from the chapter's site page and notebook."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from tests.book_files import ROOT

from transformer_classroom import quiz_blocks
from transformer_classroom.quiz_blocks import QuizBlockError, page_text

BOOK = ROOT / "book"
QUIZ = "---\nkind: quiz\n---\n\n# Quiz\n\nIntro.\n\n(quiz-own)=\n## Its own question\n\nWhy?\n\n:::{quiz-questions}\n:::\n"


def block(quiz: str, label: str | None, title: str) -> str:
    head = f"({label})=\n" if label else ""
    return (f"::::{{quiz-question}} {quiz}\n{head}## {title}\n\nWhich?\n\n1. one\n2. two\n\n"
            ":::{admonition} Answer\n:class: dropdown quiz-answer\n**2.** Because.\n:::\n::::\n")


def scratch(tmp_path: Path, pages: dict[str, str], toc: list[str]) -> Path:
    book = tmp_path / "book"
    book.mkdir()
    for name, text in pages.items():
        (book / f"{name}.md").write_text(text)
    chapters = "".join(f"      - file: book/{name}\n" for name in toc)
    (tmp_path / "_toc.yml").write_text(f"format: jb-book\nroot: book/intro\nparts:\n  - chapters:\n{chapters}")
    (book / "intro.md").write_text("# Intro\n")
    return book


def test_a_block_goes_to_its_quiz_page_in_toc_order(tmp_path):
    book = scratch(tmp_path, {
        "quiz_x": QUIZ,
        "b_chapter": "# B\n\nText of B.\n\n" + block("quiz_x", "quiz-from-b", "From B") + "\nMore of B.\n",
        "a_chapter": "# A\n\n" + block("quiz_x", "quiz-from-a", "From A") + "```python\n::::{quiz-question} not a block\n```\n",
    }, toc=["b_chapter", "a_chapter", "quiz_x"])
    quiz = page_text(book, "quiz_x")
    assert "{quiz-questions}" not in quiz and "{quiz-question}" not in quiz
    # the page's own question first, then the chapters' in the order of the toc (b before a)
    labels = re.findall(r"^\((quiz-[a-z-]+)\)=$", quiz, flags=re.M)
    assert labels == ["quiz-own", "quiz-from-b", "quiz-from-a"]
    assert "## From B\n\nWhich?\n\n1. one" in quiz and quiz.count(":::{admonition} Answer") == 2
    chapter = page_text(book, "b_chapter")
    assert chapter == "# B\n\nText of B.\n\nMore of B.\n"  # the block is gone, one blank line left
    # a block shown inside a code fence is an example, not a block
    assert "::::{quiz-question} not a block" in page_text(book, "a_chapter")
    assert [b.label for b in quiz_blocks.collect(book)["quiz_x"]] == ["quiz-from-b", "quiz-from-a"]


def test_an_unknown_quiz_page_is_an_error_naming_the_page(tmp_path):
    book = scratch(tmp_path, {"quiz_x": QUIZ, "chapter": "# C\n\n" + block("quiz_typo", "quiz-c", "C")},
                   toc=["chapter", "quiz_x"])
    with pytest.raises(QuizBlockError, match=r"chapter\.md, line 3: .*'quiz_typo'.*not a quiz page.*\['quiz_x'\]"):
        page_text(book, "quiz_x")


def test_a_block_without_a_label_is_an_error_naming_the_page(tmp_path):
    book = scratch(tmp_path, {"quiz_x": QUIZ, "chapter": "# C\n\n" + block("quiz_x", None, "C")},
                   toc=["chapter", "quiz_x"])
    with pytest.raises(QuizBlockError, match=r"chapter\.md, line 3: the \{quiz-question\} block for quiz_x has no label"):
        page_text(book, "chapter")


def test_a_label_twice_an_unclosed_block_and_a_quiz_page_that_cannot_show_them_are_errors(tmp_path):
    twice = "# C\n\n" + block("quiz_x", "quiz-c", "C") + "\n" + block("quiz_x", "quiz-c", "C again")
    book = scratch(tmp_path, {"quiz_x": QUIZ, "chapter": twice}, toc=["chapter", "quiz_x"])
    with pytest.raises(QuizBlockError, match=r"chapter\.md, line 1\d: label 'quiz-c' is already used .*chapter\.md, line 3"):
        page_text(book, "quiz_x")
    (book / "chapter.md").write_text("# C\n\n" + block("quiz_x", "quiz-c", "C").rsplit("::::", 1)[0])
    with pytest.raises(QuizBlockError, match=r"chapter\.md, line 3: the block opened with :::: is never closed"):
        page_text(book, "quiz_x")
    (book / "chapter.md").write_text("# C\n\n" + block("quiz_x", "quiz-c", "C"))
    (book / "quiz_x.md").write_text(QUIZ.replace(":::{quiz-questions}\n:::\n", ""))
    with pytest.raises(QuizBlockError, match=r"quiz_x\.md: chapter\.md write questions for this quiz page, but it has no"):
        page_text(book, "quiz_x")
    (book / "quiz_x.md").write_text(QUIZ + "\n:::{quiz-questions}\n:::\n")
    with pytest.raises(QuizBlockError, match=r"quiz_x\.md, line 17: a second \{quiz-questions\}"):
        page_text(book, "quiz_x")
    (book / "chapter.md").write_text("# C\n\n:::{quiz-questions}\n:::\n")
    with pytest.raises(QuizBlockError, match=r"chapter\.md, line 3: \{quiz-questions\} on a page that is not a quiz page"):
        page_text(book, "chapter")


# --- the book itself --------------------------------------------------------------------


def phrase(block: quiz_blocks.Block) -> str:
    """The longest run of plain words in a block's prose (outside code, math, roles and
    markup): what its quiz page shows as text and its chapter must not."""
    runs, fence = [], None
    for line in block.text.splitlines()[2:]:
        if fence is None and (m := re.match(r"^(`{3,})", line)):
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None and not line.startswith((":", "#", "(")):
            runs += [" ".join(r.split()) for r in re.split(r"`[^`]*`|\$[^$]*\$|\{[^}]*\}|[*`$]", line)]
    return max(runs, key=lambda r: len(r.split()))


def _plain(page: Path) -> str:
    import html

    body = re.sub(r"<script.*?</script>|<style.*?</style>", "", page.read_text(), flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", body))
    return " ".join(text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').split())


def test_the_migrated_questions_are_written_in_their_chapters():
    chapters = {b.page: b.quiz for found in quiz_blocks.collect(BOOK).values() for b in found}
    migrated = {"decoder": "quiz_decoder", "language_model": "quiz_decoder", "real_model": "quiz_real_model"}
    # at least these (a new chapter adds its own question with no edit here: test_one_file_changes)
    assert chapters.items() >= migrated.items(), chapters
    for quiz in ("quiz_decoder", "quiz_real_model"):
        raw = (BOOK / f"{quiz}.md").read_text()
        assert not re.search(r"^\(quiz-", raw, flags=re.M), f"{quiz}.md still writes a question itself"


def test_the_chapters_notebooks_leave_the_questions_out():
    for found in quiz_blocks.collect(BOOK).values():
        for b in found:
            cells = "\n".join(c.source for c in nbformat.read(BOOK / f"{b.page}.ipynb", as_version=4).cells)
            words = phrase(b)
            assert len(words.split()) >= 4 and words in " ".join((BOOK / f"{b.page}.md").read_text().split())
            assert words not in " ".join(cells.split()), f"{b.page}.ipynb shows its quiz question: {words!r}"
            assert "quiz-question" not in cells and f"({b.label})=" not in cells


@pytest.mark.book
def test_the_chapters_web_pages_leave_the_questions_out_and_the_quiz_pages_show_them(html_dir):
    for quiz, found in quiz_blocks.collect(BOOK).items():
        shown = (html_dir / "book" / f"{quiz}.html")
        for b in found:
            chapter = html_dir / "book" / f"{b.page}.html"
            assert f'id="{b.label}"' in shown.read_text(), f"{quiz}.html has no anchor {b.label}"
            assert f'id="{b.label}"' not in chapter.read_text(), f"{b.page}.html has the quiz anchor {b.label}"
            assert phrase(b) in _plain(shown), f"{quiz}.html does not show {phrase(b)!r}"
            assert phrase(b) not in _plain(chapter), f"{b.page}.html shows its quiz question: {phrase(b)!r}"
