"""Quiz questions written in their chapter, shown on their quiz page (``transformer_classroom.quiz_blocks``).

``{quiz-question} <quiz page>`` in a chapter renders nothing there (web, both PDFs; the
notebooks leave it out too). ``{quiz-questions}`` on a quiz page parses, in its place, the
text of every such block of the book that names that page, in table-of-contents order, with
headings allowed (docutils' ``nested_parse(..., match_titles=True)``) into the section the
directive is in: its labels, sections and answer boxes are the quiz page's, as if written
there. Put it last on the page, or right before a heading. The quiz page depends on every
page of the table of contents (``env.note_dependency``), so a changed block rebuilds it.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from transformer_classroom.quiz_blocks import QuizBlockError, block, collected_text, quiz_pages, toc_pages


def _book(directive: SphinxDirective) -> tuple[Path, Path]:
    """The folder of the page being read and the table of contents."""
    page = Path(directive.env.doc2path(directive.env.docname))
    return page.parent, Path(directive.env.srcdir) / directive.config.external_toc_path


class QuizQuestion(SphinxDirective):
    """In a chapter: a question for its quiz page; shows nothing here."""

    required_arguments = 1
    has_content = True

    def run(self):
        book, _ = _book(self)
        try:
            block(self.env.docname.split("/")[-1], self.lineno, self.arguments[0], list(self.content),
                  set(quiz_pages(book)))
        except QuizBlockError as err:
            raise self.error(str(err)) from None
        return []


class QuizQuestions(SphinxDirective):
    """On a quiz page: the questions the chapters write for it."""

    def run(self):
        book, toc = _book(self)
        try:
            text = collected_text(book, self.env.docname.split("/")[-1], toc)
        except QuizBlockError as err:
            raise self.error(str(err)) from None
        for page in toc_pages(book, toc):
            self.env.note_dependency(str(book / f"{page}.md"))
        # parsed into the section the directive is in, as if written there: the blocks'
        # labels and text go into it, their headings where the page's own would go
        section = self.state.document
        while section.children and isinstance(section[-1], nodes.section):
            section = section[-1]
        self.state.nested_parse(StringList(text.splitlines()), 0, section, match_titles=True)
        return []


def setup(app):
    app.add_directive("quiz-question", QuizQuestion)
    app.add_directive("quiz-questions", QuizQuestions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
