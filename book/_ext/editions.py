"""Two editions from one source: the full book (web site, instructor PDF) and the
student PDF.

Set ``BOOK_EDITION=student`` in the environment of ``jupyter-book build`` (the
Makefile's ``pdf`` target does) to build the student edition. It

* drops every sphinx-exercise solution (``solution`` and the gated
  ``solution-start``/``solution-end`` pair, with everything between them),
* drops every element with the class ``quiz-answer`` (quiz answer dropdowns) or
  ``instructor-only``, and every notebook cell tagged ``instructor-only``.

The instructor pages themselves are left out of the student PDF's table of
contents by ``tools/pdf_toc.py``. Any other value (or none) builds everything.
"""

from __future__ import annotations

import os

from docutils import nodes
from sphinx_exercise.nodes import solution_node

STUDENT_HIDDEN = {"quiz-answer", "instructor-only", "tag_instructor-only"}


def _edition() -> str:
    edition = os.environ.get("BOOK_EDITION", "full")
    if edition not in {"full", "student"}:
        raise ValueError(f"BOOK_EDITION must be 'full' or 'student', got {edition!r}")
    return edition


def _configure(app, config) -> None:
    config.book_edition = _edition()
    # Not sphinx-exercise's own ``hide_solutions``: it drops only the opening node of a
    # gated solution, so the content up to ``solution-end`` stays in the book and the
    # LaTeX writer fails on the orphaned ``solution_end_node``. Instead the merged
    # solution nodes are removed below, after sphinx-exercise's transforms have run.


def _label_pdf(app) -> None:
    """Print the edition on the PDF's title page: Sphinx shows "<releasename> <release>"
    there and in the page headers, "Edition for students" (releasename in _config.yml)."""
    if app.builder.name == "latex":
        label = "for students" if app.config.book_edition == "student" else "for instructors"
        app.config.release = label
        app.builder.context["release"] = label  # the builder copied the config already


def _strip(app, doctree) -> None:
    if app.config.book_edition != "student":
        return
    doomed = [
        n
        for n in doctree.findall(nodes.Element)
        if isinstance(n, solution_node) or STUDENT_HIDDEN & set(n.get("classes", []))
    ]
    for node in doomed:
        if node.parent is not None:
            node.parent.remove(node)


def setup(app):
    app.add_config_value("book_edition", "full", "env")
    app.connect("config-inited", _configure)
    app.connect("builder-inited", _label_pdf)
    app.connect("doctree-read", _strip)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
