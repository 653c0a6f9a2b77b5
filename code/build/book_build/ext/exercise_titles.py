"""A graded exercise's title and numbering come from its declaration beside its check.

A page asks for a declared exercise (``transformer_lessons.checks.EXERCISES``) by its label
alone::

    ```{exercise-start}
    :label: ex-exercises-positional
    ```

and this extension writes in, as Sphinx reads the page (``source-read``), the declared title
as the directive's argument and ``:nonumber:`` for an exercise the book does not number.
The notebooks get the same text (:func:`with_titles`, called by ``book_build.sync_notebooks``).
A page that types a title or ``:nonumber:`` for a declared exercise, or asks for one declared
for another page, fails the build with a message that says where it is declared: the title
lives in one place. An exercise nobody declared (none today) keeps its page's own title.
"""

from __future__ import annotations

import re

from transformer_lessons.checks import EXERCISES

START = re.compile(r"^(?P<fence>`{3,}|:{3,})\{exercise-start\}(?P<title>[^\n]*)\n(?P<options>(?::[\w-]+:[^\n]*\n)*)",
                   re.MULTILINE)


class ExerciseTitleError(ValueError):
    """A page types what an exercise's declaration holds."""


def with_titles(text: str, page: str) -> str:
    """``text`` of page ``page`` (a file name of ``book/``, no suffix) with every declared
    exercise's title and numbering written in."""

    def fill(m: re.Match) -> str:
        options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", m.group("options"), re.MULTILINE))
        label = options.get("label", "").strip()
        if label not in EXERCISES:
            return m.group(0)
        ex = EXERCISES[label]
        where = f"{page}.md, exercise {label}"
        if ex.page != page:
            raise ExerciseTitleError(f"{where}: its declaration in transformer_lessons.checks puts it on {ex.page}.md")
        if m.group("title").strip() or "nonumber" in options:
            raise ExerciseTitleError(
                f"{where}: its title and numbering are declared beside its check (transformer_lessons.checks: "
                f"{ex.title!r}, numbered={ex.numbered}); give only `:label: {label}` here")
        return (f"{m.group('fence')}{{exercise-start}} {ex.title}\n{m.group('options')}"
                + ("" if ex.numbered else ":nonumber:\n"))

    return START.sub(fill, text)


def _fill(app, docname, source) -> None:
    source[0] = with_titles(source[0], docname.split("/")[-1])


def setup(app):
    app.connect("source-read", _fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
