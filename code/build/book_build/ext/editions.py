"""Two editions from one source: the full book (web site, instructor PDF) and the student PDF.

``BOOK_EDITION=student`` in the environment of ``jupyter-book build`` (the Makefile's ``pdf``
target) builds the student edition, none or ``full`` the full book (the web site always). The
tags ``student_edition`` and ``instructor_edition`` are set for ``{only}`` blocks, as ``html``
and ``latex`` are for wording that differs between web and print.

**Same page and figure numbers in both editions** (tests/pdf/test_pdf.py): nothing is removed while
the pages are read, so Sphinx numbers both alike. Only on the book the LaTeX builder assembles
(:class:`AnswerBoxes`) is every quiz answer (class ``quiz-answer``), sphinx-exercise solution
and element of class ``instructor-only`` (or cell so tagged) replaced by a box whose height
depends only on the question (``\\tlanswerbox``, book/_latex/tlprint.sty), which says "Your
answer" (student) or names the page of the appendix "Answers and solutions" where it now is
(instructor: the last chapter, after the instructor pages code/build/book_build/pdf_toc.py adds). A quiz
question's heading, text and options stay on one page (``tlquestion``, measured in TeX).
"""

import os
import re
from collections import Counter

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node

HIDDEN = {"quiz-answer", "instructor-only", "tag_instructor-only"}
# Box heights: room for a few sentences, for a letter and a word, for one line (a solution, a note)
BOX_OPEN, BOX_CHOICE, BOX_LINE = "7\\baselineskip", "2.2\\baselineskip", "1.6\\baselineskip"


def _configure(app, config) -> None:
    config.book_edition = os.environ.get("BOOK_EDITION", "full")
    if config.book_edition not in {"full", "student"}:
        raise ValueError(f"BOOK_EDITION must be 'full' or 'student', got {config.book_edition!r}")
    app.tags.add("student_edition" if config.book_edition == "student" else "instructor_edition")


def tex(text: str) -> str:
    """Text as LaTeX: its special characters escaped."""
    return re.sub(r"([#$%&_{}])", r"\\\1", text)


def _kind(node) -> str | None:
    """"answer", "solution", "note" for what the print editions hide, else None."""
    if isinstance(node, solution_node):
        return "solution"
    classes = HIDDEN & set(node.get("classes", []))
    return ("answer" if "quiz-answer" in classes else "note") if classes else None


def _ancestor(node, test):
    parent = node.parent
    while parent is not None and not test(parent):
        parent = parent.parent
    return parent


def _options(node):
    """The options (a numbered list, or ``- **A.** ...``) right before an answer; None: an open question."""
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
        label = ("Your solution: in the notebook, checked by the self-check cell" if student
                 else rf"{tex(title)}: page \pageref{{{ref}}}")
        box = rf"\tlanswerbox{{{BOX_LINE}}}{{{label}}}"
    elif student:  # an instructor note: nothing visible in the student edition, same height
        box = rf"\par\vspace{{{BOX_LINE}}}\par"
    else:
        note = rf"\sffamily\small Instructor note: page \pageref{{{ref}}}"
        box = rf"\par\noindent\parbox[c][{BOX_LINE}]{{\linewidth}}{{{note}}}\par"
    # the same label in both editions (the answers appendix names the question's page)
    return _latex(rf"\phantomsection\label{{{ref}-q}}" + box + "\n")


def _latex(code: str) -> nodes.raw:
    return nodes.raw("", code, format="latex")


class AnswerBoxes(SphinxPostTransform):
    """On the assembled book: each quiz question kept with its options, then every answer,
    solution and note replaced by its box and (instructor edition) moved to the appendix."""

    default_priority = 805  # after chapter_numbers, bibliography and glossary_index
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        if self.document.get("docname") != self.config.root_doc:
            return  # only the assembled book, not a single page
        hidden = [n for n in self.document.findall(nodes.Element) if _kind(n) and _ancestor(n, _kind) is None]
        for answer in (n for n in hidden if _kind(n) == "answer"):
            self.keep_question_together(answer)
        student = self.config.book_edition == "student"
        appendix = nodes.section("", nodes.title(text="Answers and solutions"), nodes.paragraph(
            text="The answers to the quiz questions, the solutions of the exercises and the instructor notes of every "
            "chapter, in the order of the book. The student edition has a space for the reader's own answer in their "
            "place, so both editions keep the same page numbers."), ids=["tl-answers"], names=["tl-answers"])
        chapter = None
        for i, node in enumerate(hidden):
            kind, ref = _kind(node), f"tlans:{i}"
            title = next((t.astext() for t in node.findall(nodes.title)), "Solution") if kind == "solution" else ""
            section = _ancestor(node, lambda n: isinstance(n, nodes.section))
            heading = section[0].children if section is not None and isinstance(section[0], nodes.title) else []
            question = [nodes.Text(c.astext()) if isinstance(c, nodes.reference) else c.deepcopy() for c in heading]
            page = _ancestor(node, lambda n: isinstance(n, addnodes.start_of_file))
            here = next((t.astext() for t in page.findall(nodes.title)), "") if page is not None else ""
            numbered = self.numbered_inside(node)
            source = next((n.source for n in node.findall(nodes.Element) if n.source), None)  # not the nearest
            docname = self.env.path2doc(source) if source else None  # start_of_file: it can be another page's
            for link in node.findall(lambda n: type(n) in (nodes.reference, addnodes.number_reference)):
                if docname and link.get("refid"):  # LaTeX would write a refid as a label of the appendix's file
                    link["refuri"] = f"%{docname}#{link.attributes.pop('refid')}"
            counts = Counter(k for k, _ in numbered)  # the counters step where the box was
            steps = "".join(rf"\addtocounter{{{k}}}{{{n}}}" for k, n in counts.items())
            choice = kind == "answer" and _options(node) is not None
            node.replace_self([_latex(steps + "\n" if steps else ""), _box(kind, choice, student, ref, title)])
            if student:
                continue
            if here != chapter:
                chapter, sub = here, nodes.section("", nodes.title(text=here or "Notes"), ids=[f"tl-answers-{i}"])
                appendix += sub
            if kind == "solution":  # a solution box has its own title
                heading = nodes.emphasis(text="The exercise")
            else:
                heading = nodes.strong("", "", *question) if question else nodes.strong(text="Answer")
            self.unfloat_figures(node, numbered)
            tables = [n for k, n in numbered if k == "table" and n]  # one: the web's number; more: LaTeX's
            fixed = rf"\def\thetable{{{tables[0]}}}" if len(tables) == 1 else ""
            label = _latex(rf"\par\needspace{{5\baselineskip}}\phantomsection\label{{{ref}}}" + "\n")
            back = nodes.paragraph("", "", heading, _latex(rf", page \pageref{{{ref}-q}}"))
            sub += nodes.container("", label, back, _latex(rf"\begingroup{fixed}" + "\n"), node, _latex("\\endgroup\n"),
                                   classes=["tl-answer-entry"])
        if hidden and not student:
            last = list(self.document.findall(addnodes.start_of_file))[-1]  # the last chapter
            holder = addnodes.start_of_file("", appendix, docname="book/answers")
            last.parent.insert(last.parent.index(last) + 1, holder)

    @staticmethod
    def keep_question_together(answer) -> None:
        """``tlquestion`` around the heading, text and options of the question an answer follows and
        the answer's box; with the heading of a part the question opens ("Code reading" above "Code
        reading 1"), which would else be left alone at the foot of a page."""
        section = answer.parent
        before = section.children[: section.index(answer)] if isinstance(section, nodes.section) else []
        floats = (nodes.figure, nodes.table)
        if not before or any(_kind(c) or any(c.findall(lambda n: isinstance(n, floats))) for c in before):
            return  # the first answer of its section only; TeX cannot measure a float in a box
        start = section
        while isinstance(start.parent, nodes.section) and next(
            (c for c in start.parent.children if not isinstance(c, (nodes.title, nodes.target))), None) is start:
            start = start.parent
        start.parent.insert(start.parent.index(start), _latex("\\begin{tlquestion}\n"))
        section.insert(section.index(answer) + 1, _latex("\\end{tlquestion}\n"))

    def numbered_inside(self, node) -> list[tuple[str, str]]:
        """(kind, web number) of each numbered figure, table and equation in a hidden box: where the
        box was, LaTeX's counters step (later figures keep the web's numbers); in the appendix a
        figure prints its web number, looked up in every page's env.toc_fignumbers (labels are
        unique), the numbers Sphinx's writers print (it documents no other way to ask)."""
        def web_number(kind: str, ids: list[str]) -> str:  # a label's, not one of docutils' "id3"
            return next((".".join(map(str, numbers[kind][i])) for numbers in self.env.toc_fignumbers.values()
                         for i in ids if not re.fullmatch(r"id\d+", i) and i in numbers.get(kind, {})), "")

        found = [("figure", web_number("figure", f["ids"])) for f in node.findall(nodes.figure)
                 if f["ids"] and any(isinstance(c, nodes.caption) for c in f.children)]
        found += [("table", web_number("table", t["ids"])) for t in node.findall(nodes.table)
                  if t["ids"] and any(isinstance(c, nodes.title) for c in t.children)]
        return found + [("equation", "") for m in node.findall(nodes.math_block) if m.get("number") is not None]

    @staticmethod
    def unfloat_figures(node, numbered) -> None:
        """A figure in an answer box prints as its image and "Fig. 6.2: <caption>" with the web's
        number, in its place: a float cannot live inside a box (sphinx-exercise's admonition)."""
        numbers = iter([n for k, n in numbered if k == "figure"])
        for fig in list(node.findall(nodes.figure)):
            captions = [c for c in fig.children if isinstance(c, nodes.caption)]
            if captions:
                number = next(numbers, "")
                block = nodes.container(classes=["tl-answer-figure"])
                block += [nodes.paragraph("", "", image.deepcopy()) for image in fig.findall(nodes.image)]
                caption = [c.deepcopy() for c in captions[0].children]
                block += nodes.paragraph("", "", nodes.emphasis("", f"Fig. {number}: " if number else "", *caption))
                fig.replace_self(block)


def setup(app):
    app.add_config_value("book_edition", "full", "env")
    app.connect("config-inited", _configure)
    app.add_post_transform(AnswerBoxes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
