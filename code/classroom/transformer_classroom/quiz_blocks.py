"""Quiz questions written in the chapter they are about, shown on their quiz page.

A chapter writes a question about itself in a labelled block that names its quiz page::

    ::::{quiz-question} quiz_decoder
    (quiz-causal-mask-shape)=
    ## The causal mask

    Which entries of `causal_mask(4)` are `True`? ...

    :::{admonition} Answer
    :class: dropdown quiz-answer
    ...
    :::
    ::::

The argument is the quiz page (a page whose front matter says ``kind: quiz``); the block's
first line is the question's label, and the rest is the question exactly as a quiz page
writes it (heading, text, options, answer box, whose fence has fewer colons than the
block's). The chapter shows nothing of it: not on the web, not in print, not in its
notebook. The quiz page shows every block of the book that names it where it writes::

    :::{quiz-questions}
    :::

in table-of-contents order (the pages of ``_toc.yml``, or of the edition's table of contents
in a PDF build, in the same order; a page outside it is not built, and its blocks are not
read), so a new chapter with a question needs no edit to the quiz page. The directive goes
last on the quiz page, or right before a heading: the questions' sections go where the
page's own would.
The labels live on the quiz page: ``{ref}`` to a question, the slides' ``quiz: <label>``
and the answer boxes of the PDFs see the question there.

:func:`page_text` is the one reader of a page as the book shows it: a quiz page with the
blocks in place of its ``{quiz-questions}``, any other page without its blocks. The Sphinx
extension (``book_build.ext.quiz_questions``, through :func:`collected_text`, what
:func:`page_text` puts in the directive's place), the LMS
export (:mod:`transformer_classroom.lms`), the notebooks (``book_build.sync_notebooks``) and
the quiz-key test read pages through it. A block without a label, a block naming a page
that is not a quiz page, a label used twice, or a quiz page that is named by blocks but
has no ``{quiz-questions}`` is a :class:`QuizBlockError` naming the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import book as book_files

OPEN = re.compile(r"^(:{3,})\{quiz-question\}\s*(.*?)\s*$")
COLLECT = re.compile(r"^(:{3,})\{quiz-questions\}\s*$")
LABEL = re.compile(r"^\(([A-Za-z0-9_.:-]+)\)=\s*$")
BACKTICKS = re.compile(r"^\s*(`{3,}|~{3,})")


class QuizBlockError(ValueError):
    """A quiz-question block, or a quiz page collecting them, that the book cannot show."""


@dataclass(frozen=True)
class Block:
    """One ``{quiz-question}`` block: where it is written (``page``, 1-based ``line``), the
    quiz page it goes to, its label and its text (label line first, as the quiz page shows it)."""

    page: str
    line: int
    quiz: str
    label: str
    text: str


def _fenced(lines: list[str], opener: re.Pattern) -> list[tuple[int, int, re.Match]]:
    """``(start, end, match)`` of every colon-fenced directive matching ``opener`` outside
    code fences; ``end`` is the index of its closing line (MyST: at least as many colons)."""
    found, code, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        if code is None and (m := BACKTICKS.match(line)):
            code = m.group(1)
        elif code is not None and line.strip().startswith(code) and line.strip().strip(code[0]) == "":
            code = None
        elif code is None and (m := opener.match(line)):
            colons, inner, end = m.group(1), None, None
            for j in range(i + 1, len(lines)):
                s = lines[j].strip()
                if inner is None and (b := BACKTICKS.match(lines[j])):
                    inner = b.group(1)
                elif inner is not None and s.startswith(inner) and s.strip(inner[0]) == "":
                    inner = None
                elif inner is None and s and set(s) == {":"} and len(s) >= len(colons):
                    end = j
                    break
            if end is None:
                raise QuizBlockError(f"line {i + 1}: the block opened with {colons} is never closed")
            found.append((i, end, m))
            i = end
        i += 1
    return found


def block(page: str, line: int, quiz: str, body: list[str], quizzes: set[str]) -> Block:
    """The block written on ``page`` at ``line`` for quiz page ``quiz``, its lines ``body``
    (between its fences); an error unless ``quiz`` is one of ``quizzes`` and the first line
    is a label."""
    where = f"{page}.md, line {line}"
    if quiz not in quizzes:
        raise QuizBlockError(f"{where}: {{quiz-question}} names {quiz!r}, which is not a quiz page "
                             f"(a page with kind: quiz): {sorted(quizzes)}")
    first = next((text for text in body if text.strip()), "")
    label = LABEL.match(first)
    if label is None:
        raise QuizBlockError(f"{where}: the {{quiz-question}} block for {quiz} has no label: its first "
                             f"line must be the question's label, e.g. (quiz-my-question)=, not {first!r}")
    return Block(page, line, quiz, label.group(1), "\n".join(body).strip("\n"))


def blocks_of(text: str, page: str, quizzes: set[str]) -> list[Block]:
    """The ``{quiz-question}`` blocks of one page's ``text``, in the page's order."""
    lines = text.splitlines()
    try:
        fenced = _fenced(lines, OPEN)
    except QuizBlockError as err:
        raise QuizBlockError(f"{page}.md, {err}") from None
    return [block(page, start + 1, m.group(2), lines[start + 1:end], quizzes) for start, end, m in fenced]


def quiz_pages(book: Path) -> list[str]:
    """The quiz pages of the book folder ``book`` (front matter ``kind: quiz``), by name."""
    return [p for p in book_files.names(book.parent) if book_files.front_matter(p, book.parent).get("kind") == "quiz"]


def toc_pages(book: Path, toc: Path | None = None) -> list[str]:
    """The pages of the table of contents (``book/../_toc.yml``, or ``toc``), in its order, by name."""
    return book_files.toc_pages(book.parent, toc)


def collect(book: Path, toc: Path | None = None) -> dict[str, list[Block]]:
    """Every block of the book's pages, by quiz page (each quiz page present), in
    table-of-contents order; a label used twice is an error."""
    quizzes = quiz_pages(book)
    out: dict[str, list[Block]] = {q: [] for q in quizzes}
    seen: dict[str, Block] = {}
    for page in toc_pages(book, toc):
        for b in blocks_of((book / f"{page}.md").read_text(encoding="utf-8"), page, set(quizzes)):
            if b.label in seen:
                first = seen[b.label]
                raise QuizBlockError(f"{page}.md, line {b.line}: label {b.label!r} is already used by "
                                     f"the block of {first.page}.md, line {first.line}")
            seen[b.label] = b
            out[b.quiz].append(b)
    return out


def collected_text(book: Path, quiz: str, toc: Path | None = None) -> str:
    """What ``{quiz-questions}`` on quiz page ``quiz`` stands for: its blocks' texts, in
    table-of-contents order, separated by a blank line."""
    found = collect(book, toc)
    if quiz not in found:
        raise QuizBlockError(f"{quiz}.md: {{quiz-questions}} is on a page that is not a quiz page "
                             f"(kind: quiz in its front matter): {sorted(found)}")
    return "\n\n".join(b.text for b in found[quiz])


def page_text(book: Path, page: str, toc: Path | None = None) -> str:
    """Page ``page`` of ``book`` as the book shows it: a quiz page with the blocks that name
    it in place of its ``{quiz-questions}``; every page without its own blocks."""
    text = (book / f"{page}.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    quizzes = set(quiz_pages(book))
    blocks_of(text, page, quizzes)  # the page's own blocks, checked (they are shown elsewhere)
    try:
        here = _fenced(lines, COLLECT)
    except QuizBlockError as err:
        raise QuizBlockError(f"{page}.md, {err}") from None
    if here and page not in quizzes:
        raise QuizBlockError(f"{page}.md, line {here[0][0] + 1}: {{quiz-questions}} on a page that is not a quiz "
                             "page (kind: quiz in its front matter)")
    if len(here) > 1:
        raise QuizBlockError(f"{page}.md, line {here[1][0] + 1}: a second {{quiz-questions}} (it would show "
                             "every question twice)")
    replaced: list[tuple[int, int, str | None]] = [(start, end, None) for start, end, _ in _fenced(lines, OPEN)]
    if page in quizzes:
        inserted = collected_text(book, page, toc)
        if inserted and not here:
            names = sorted({b.page for b in collect(book, toc)[page]})
            raise QuizBlockError(f"{page}.md: {', '.join(n + '.md' for n in names)} write questions for this "
                                 "quiz page, but it has no {quiz-questions} to show them")
        replaced += [(start, end, inserted) for start, end, _ in here]
    out, i = [], 0
    for start, end, new in sorted(replaced):
        out += lines[i:start]
        if new is not None:
            out += new.splitlines()
        elif out and not out[-1].strip() and end + 1 < len(lines) and not lines[end + 1].strip():
            end += 1  # a removed block leaves one blank line, not two
        i = end + 1
    out += lines[i:]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
