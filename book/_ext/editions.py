"""Two editions from one source: the full book (web site, instructor PDF) and the
student PDF.

``BOOK_EDITION=student`` in the environment of ``jupyter-book build`` (the Makefile's
``pdf`` target sets it) builds the student edition; any other value (or none) builds
everything. The web site is always the full book. The tags ``student_edition`` and
``instructor_edition`` are set for ``{only}`` blocks; wording that differs between the web
and print is written in the page as ``{only} html`` and ``{only} latex`` blocks.

**Same page and figure numbers in both editions.** Nothing is removed while the pages
are read, so Sphinx numbers everything identically in both. Only on the whole book
assembled by the LaTeX builder (:class:`AnswerBoxes`) does the edition matter: every
quiz answer (class ``quiz-answer``), sphinx-exercise solution and element with the class
``instructor-only`` (or a cell tagged ``instructor-only``) is replaced by a box of a
height that depends only on the *question* (book/_latex/tlprint.sty's ``\\tlanswerbox``):
a ruled space to write in (taller for an open question than for a multiple-choice one),
one line for a solution or an instructor note. The student edition's box says "Your
answer"; the instructor edition's names the page of the appendix "Answers and solutions"
(its last chapter, after the instructor pages, which ``tools/pdf_toc.py`` adds) where
the answer now is. So the two editions are identical, page for page, up to the end of
the "Reference" part. A quiz question's heading, text and options are kept on one page
(``tlquestion`` in tlprint.sty measures them in TeX).
"""

from __future__ import annotations

import os
import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node

HIDDEN = {"quiz-answer", "instructor-only", "tag_instructor-only"}
# Heights of the place-holding boxes (LaTeX lengths). They depend on the question only.
BOX_OPEN = "7\\baselineskip"  # an open question: room to write a few sentences
BOX_CHOICE = "2.2\\baselineskip"  # a multiple-choice question: room for a letter and a word
BOX_LINE = "1.6\\baselineskip"  # a solution or an instructor note: one line


def _configure(app, config) -> None:
    config.book_edition = os.environ.get("BOOK_EDITION", "full")
    if config.book_edition not in {"full", "student"}:
        raise ValueError(f"BOOK_EDITION must be 'full' or 'student', got {config.book_edition!r}")
    app.tags.add("student_edition" if config.book_edition == "student" else "instructor_edition")


def tex(text: str) -> str:
    """Text as LaTeX: its special characters escaped."""
    return re.sub(r"([#$%&_{}])", r"\\\1", text)


def _is_hidden(node) -> bool:
    return isinstance(node, solution_node) or bool(HIDDEN & set(node.get("classes", [])))


def _kind(node) -> str:
    if isinstance(node, solution_node):
        return "solution"
    return "answer" if "quiz-answer" in node["classes"] else "note"


def _ancestor(node, test):
    parent = node.parent
    while parent is not None and not test(parent):
        parent = parent.parent
    return parent


def _question_title(node) -> list[nodes.Node]:
    """A copy of the title of the section holding `node`, maths kept as maths, no links."""
    section = _ancestor(node, lambda n: isinstance(n, nodes.section))
    if section is None or not isinstance(section[0], nodes.title):
        return []
    return [nodes.Text(c.astext()) if isinstance(c, nodes.reference) else c.deepcopy() for c in section[0].children]


def _chapter_title(node) -> str:
    """The title of the page holding a node (the first title of its ``start_of_file``)."""
    page = _ancestor(node, lambda n: isinstance(n, addnodes.start_of_file))
    title = next(page.findall(nodes.title), None) if page is not None else None
    return title.astext() if title is not None else ""


def _options(node):
    """The list of options of a multiple-choice question (``- **A.** ...`` or a numbered
    list) right before its answer, or None for an open question."""
    for sibling in node.parent.children[: node.parent.index(node)][::-1]:
        if isinstance(sibling, nodes.enumerated_list):
            return sibling
        if isinstance(sibling, nodes.bullet_list):
            return sibling if re.match(r"^\(?[A-Ea-e][.)]", sibling.astext().strip()) else None
        if isinstance(sibling, nodes.paragraph):
            return None
    return None


def _box(kind: str, choice: bool, student: bool, ref: str, title: str) -> nodes.raw:
    if kind == "answer":
        label = "Your answer" if student else rf"Your answer \hfill \emph{{the answer: page \pageref{{{ref}}}}}"
        box = rf"\tlanswerbox{{{BOX_CHOICE if choice else BOX_OPEN}}}{{{label}}}"
    elif kind == "solution":
        label = rf"{tex(title)}: page \pageref{{{ref}}}"
        if student:
            label = "Your solution: in the notebook, checked by the self-check cell"
        box = rf"\tlanswerbox{{{BOX_LINE}}}{{{label}}}"
    elif student:  # an instructor note: nothing visible in the student edition, same height
        box = rf"\par\vspace{{{BOX_LINE}}}\par"
    else:
        box = rf"\par\noindent\parbox[c][{BOX_LINE}]{{\linewidth}}{{\sffamily\small Instructor note: page \pageref{{{ref}}}}}\par"
    # the same label in both editions (the answers appendix names the question's page)
    return nodes.raw("", rf"\phantomsection\label{{{ref}-q}}" + box + "\n", format="latex")


class AnswerBoxes(SphinxPostTransform):
    """On the book assembled by the LaTeX builder: each quiz question kept with its
    options, then every answer, solution and note replaced by its box and (instructor
    edition) moved to the appendix."""

    default_priority = 805  # after chapter_numbers, bibliography and glossary_index
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        if self.document.get("docname") != self.config.root_doc:
            return  # only the assembled book, not a single page
        hidden = [n for n in self.document.findall(nodes.Element) if _is_hidden(n) and _ancestor(n, _is_hidden) is None]
        for node in hidden:
            if _kind(node) == "answer":
                self.keep_question_together(node)
        student = self.config.book_edition == "student"
        appendix = nodes.section(ids=["tl-answers"], names=["tl-answers"])
        appendix += nodes.title(text="Answers and solutions")
        appendix += nodes.paragraph(
            text="The answers to the quiz questions, the solutions of the exercises and the "
            "instructor notes of every chapter, in the order of the book. The student "
            "edition has a space for the reader's own answer in their place, so both "
            "editions keep the same page numbers."
        )
        chapter = None
        for i, node in enumerate(hidden):
            kind, ref = _kind(node), f"tlans:{i}"
            choice = kind == "answer" and _options(node) is not None
            sol_title = next((t.astext() for t in node.findall(nodes.title)), "Solution") if kind == "solution" else ""
            question = _question_title(node)
            here = _chapter_title(node)
            numbered = self.numbered_inside(node)
            source = next((n.source for n in node.findall(nodes.Element) if n.source), None)
            page = self.env.path2doc(source) if source else None
            for link in node.findall(lambda n: type(n) in (nodes.reference, addnodes.number_reference)):
                if page and link.get("refid"):  # LaTeX writes a refid as a label of the appendix's file
                    link["refuri"] = f"%{page}#{link.attributes.pop('refid')}"
            node.replace_self([self.counter_steps(numbered), _box(kind, choice, student, ref, sol_title)])
            if student:
                continue
            if here != chapter:
                chapter = here
                sub = nodes.section(ids=[f"tl-answers-{i}"], names=[])
                sub += nodes.title(text=chapter or "Notes")
                appendix += sub
            entry = nodes.container(classes=["tl-answer-entry"])
            entry += nodes.raw("", rf"\par\needspace{{5\baselineskip}}\phantomsection\label{{{ref}}}" + "\n", format="latex")
            back = nodes.raw("", rf", page \pageref{{{ref}-q}}", format="latex")
            if kind == "solution":  # a solution box has its own title
                entry += nodes.paragraph("", "", nodes.emphasis(text="The exercise"), back)
            else:
                entry += nodes.paragraph("", "", nodes.strong("", "", *question) if question else nodes.strong(text="Answer"), back)
            self.unfloat_figures(node, numbered)
            entry += self.fixed_numbers(numbered)
            entry += node
            entry += nodes.raw("", "\\endgroup\n", format="latex")
            sub += entry
        if student or not hidden:
            return
        last = list(self.document.findall(addnodes.start_of_file))[-1]  # the last chapter
        holder = addnodes.start_of_file(docname="book/answers")
        holder += appendix
        last.parent.insert(last.parent.index(last) + 1, holder)

    @staticmethod
    def keep_question_together(answer) -> None:
        """``tlquestion`` (book/_latex/tlprint.sty) around the heading, text and options of
        the question an answer follows, and the answer (its box, once replaced). A question that opens its part ("Code reading" with
        nothing but its title before "Code reading 1") takes that part's heading in too: a
        page break between the two would leave the heading alone at the foot of a page."""
        section = answer.parent
        before = section.children[: section.index(answer)] if isinstance(section, nodes.section) else []
        if not before or any(_is_hidden(c) or any(c.findall(lambda n: isinstance(n, (nodes.figure, nodes.table)))) for c in before):
            return  # the first answer of its section only; TeX cannot measure a float in a box
        start = section
        while isinstance(start.parent, nodes.section) and next(
            (c for c in start.parent.children if not isinstance(c, (nodes.title, nodes.target))), None
        ) is start:
            start = start.parent
        start.parent.insert(start.parent.index(start), nodes.raw("", "\\begin{tlquestion}\n", format="latex"))
        section.insert(section.index(answer) + 1, nodes.raw("", "\\end{tlquestion}\n", format="latex"))  # with its box

    # A numbered figure (or equation) in a hidden box (a solution's figure) is numbered on
    # the web where the box is. In print the box goes (student edition) or moves to the
    # answers appendix (instructor edition): LaTeX's counters step where the box was, so the
    # figures after it keep the web's numbers, and in the appendix the figure prints the
    # number it has on the web ("Fig. 6.2"), not one of the appendix.
    def numbered_inside(self, node) -> list[tuple[str, str]]:
        # Labels are unique in the book: the number is looked up in every page's numbers
        # (the box may already stand outside its page's subtree here), in
        # env.toc_fignumbers, which Sphinx's own writers print: it documents no other way.
        def web_number(kind: str, ids: list[str]) -> str:
            for numbers in self.env.toc_fignumbers.values():
                for i in ids:
                    if not re.fullmatch(r"id\d+", i) and i in numbers.get(kind, {}):  # a label, not docutils' "id3"
                        return ".".join(map(str, numbers[kind][i]))
            return ""

        found = []
        for fig in node.findall(nodes.figure):
            if fig["ids"] and any(isinstance(c, nodes.caption) for c in fig.children):
                found.append(("figure", web_number("figure", fig["ids"])))
        for table in node.findall(nodes.table):
            if table["ids"] and any(isinstance(c, nodes.title) for c in table.children):
                found.append(("table", web_number("table", table["ids"])))
        for math in node.findall(nodes.math_block):
            if math.get("number") is not None:
                found.append(("equation", ""))
        return found

    @staticmethod
    def counter_steps(numbered) -> nodes.raw:
        counts = {k: sum(1 for kind, _ in numbered if kind == k) for k in ("figure", "table", "equation")}
        tex = "".join(rf"\addtocounter{{{k}}}{{{n}}}" for k, n in counts.items() if n)
        return nodes.raw("", tex + "\n" if tex else "", format="latex")

    @staticmethod
    def unfloat_figures(node, numbered) -> None:
        """A figure in an answer box prints as its image and its caption, "Fig. 6.2: ...",
        with the web's number: a float cannot live inside a box (sphinx-exercise's
        admonition), and it keeps its place in the answer."""
        numbers = iter([n for k, n in numbered if k == "figure"])
        for fig in list(node.findall(nodes.figure)):
            captions = [c for c in fig.children if isinstance(c, nodes.caption)]
            if not captions:
                continue
            number = next(numbers, "")
            block = nodes.container(classes=["tl-answer-figure"])
            for image in fig.findall(nodes.image):
                block += nodes.paragraph("", "", image.deepcopy())
            label = f"Fig. {number}: " if number else ""
            block += nodes.paragraph("", "", nodes.emphasis("", label, *[c.deepcopy() for c in captions[0].children]))
            fig.replace_self(block)

    @staticmethod
    def fixed_numbers(numbered) -> nodes.raw:
        """\\begingroup, and the web's number for the table in this entry (one table: an
        entry with more keeps LaTeX's numbers for the others)."""
        numbers = [n for k, n in numbered if k == "table" and n]
        tex = r"\begingroup" + (rf"\def\thetable{{{numbers[0]}}}" if len(numbers) == 1 else "")
        return nodes.raw("", tex + "\n", format="latex")


def setup(app):
    app.add_config_value("book_edition", "full", "env")
    app.connect("config-inited", _configure)
    app.add_post_transform(AnswerBoxes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
