"""book_build.ext.exercise_titles: a declared exercise's title and numbering are written into
its page (and notebook) from its declaration; a page that types them fails with a message."""

from __future__ import annotations

import pytest

from book_build.ext.exercise_titles import ExerciseTitleError, with_titles
from transformer_lessons.checks import EXERCISES

NUMBERED = next(e for e in EXERCISES.values() if e.numbered)
UNNUMBERED = next(e for e in EXERCISES.values() if not e.numbered)


def _start(label: str, title: str = "", extra: str = "", fence: str = "```") -> str:
    return f"{fence}{{exercise-start}}{' ' + title if title else ''}\n:label: {label}\n{extra}{fence}\n\nText.\n"


def test_the_declared_title_and_numbering_are_written_in():
    text = _start(NUMBERED.label) + "\n" + _start(UNNUMBERED.label, fence=":::")
    out = with_titles(text, NUMBERED.page)
    assert f"```{{exercise-start}} {NUMBERED.title}\n:label: {NUMBERED.label}\n```" in out
    assert f":::{{exercise-start}} {UNNUMBERED.title}\n:label: {UNNUMBERED.label}\n:nonumber:\n:::" in out
    assert out.count(":nonumber:") == 1 and out.endswith("Text.\n")


def test_an_undeclared_exercise_keeps_its_own_title():
    text = _start("ex-not-declared", "Its own title", ":nonumber:\n")
    assert with_titles(text, "anywhere") == text


@pytest.mark.parametrize("title, extra, page, message", [
    ("A typed title", "", None, "declared beside its check"),
    ("", ":nonumber:\n", None, "declared beside its check"),
    ("", "", "another_page", "puts it on"),
])
def test_a_page_that_types_the_declaration_fails(title, extra, page, message):
    with pytest.raises(ExerciseTitleError, match=message) as err:
        with_titles(_start(NUMBERED.label, title, extra), page or NUMBERED.page)
    assert NUMBERED.label in str(err.value)
