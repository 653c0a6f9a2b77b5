"""Two editions from one source: the full book (web site, instructor PDF) and the
student PDF.

Set ``BOOK_EDITION=student`` in the environment of ``jupyter-book build`` (the
Makefile's ``pdf`` target does) to build the student edition. It

* turns on sphinx-exercise's ``hide_solutions`` (exercise solutions are dropped),
* drops every element with the class ``quiz-answer`` (quiz answer dropdowns) or
  ``instructor-only``, and every notebook cell tagged ``instructor-only``.

The instructor pages themselves are left out of the student PDF's table of
contents by ``tools/student_toc.py``. Any other value (or none) builds everything.
"""

from __future__ import annotations

import os

from docutils import nodes

STUDENT_HIDDEN = {"quiz-answer", "instructor-only", "tag_instructor-only"}


def _edition() -> str:
    edition = os.environ.get("BOOK_EDITION", "full")
    if edition not in {"full", "student"}:
        raise ValueError(f"BOOK_EDITION must be 'full' or 'student', got {edition!r}")
    return edition


def _configure(app, config) -> None:
    config.book_edition = _edition()
    if config.book_edition == "student":
        config.hide_solutions = True


def _strip(app, doctree) -> None:
    if app.config.book_edition != "student":
        return
    doomed = [n for n in doctree.findall(nodes.Element) if STUDENT_HIDDEN & set(n.get("classes", []))]
    for node in doomed:
        if node.parent is not None:
            node.parent.remove(node)


def setup(app):
    app.add_config_value("book_edition", "full", "env")
    app.connect("config-inited", _configure, priority=100)  # before sphinx-exercise reads hide_solutions
    app.connect("doctree-read", _strip)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
