"""Two editions from one source: the full book (web site, instructor PDF) and the
student PDF, and the print layout that both PDFs share.

Set ``BOOK_EDITION=student`` in the environment of ``jupyter-book build`` (the
Makefile's ``pdf`` target does) to build the student edition; any other value (or none)
builds everything. The web site is always the full book.

**Same page and figure numbers in both editions.** Nothing is removed while the pages
are read, so Sphinx numbers chapters, figures, tables and equations identically in both
editions. Only when the LaTeX builder has assembled the whole book into one tree
(``PrintEditions`` below) does the edition matter:

* every quiz answer (class ``quiz-answer``), every sphinx-exercise solution, and every
  element with the class ``instructor-only`` (or a cell tagged ``instructor-only``) is
  replaced by a box of a fixed height that depends only on the *question*, not on the
  edition: a ruled space to write the answer in (taller for an open question than for a
  multiple-choice one), one line for a solution or an instructor note;
* the student edition's box says "Your answer"; the instructor edition's box names the
  page of the appendix where the answer now is (chapter "Answers and solutions", the
  last chapter of the instructor edition, after the instructor pages);
* ``tools/pdf_toc.py`` puts the instructor pages in a last part of the instructor
  edition and leaves them out of the student edition.

So the two editions are identical, page for page, up to the end of the "Reference"
part; the instructor edition then goes on with the instructor pages and the answers.

**Wording for print.** Sentences that are true of the web site only ("open the Answer
box", "solutions are folded away") are replaced in both printed editions by the same
text (``STUDENT_SENTENCES``), so that both keep the same pages. The tags
``student_edition`` and ``instructor_edition`` are set for ``{only}`` directives; text
that differs between the editions must keep the same number of lines, or the pages drift.

**Print layout** (LaTeX builder only): the title page (version, repository, licence),
the short running header (``book/_latex/tlprint.sty``), a Pygments style whose comments
stay dark in greyscale, the bibliography printed inside the Bibliography chapter with
author-year labels, index entries where each glossary term is taught, and page-break
hints that keep a quiz question with its options. Figures float (``figure_align`` in
_config.yml): LaTeX puts a figure at the top of the next page rather than leave a page
half empty before it; headings are kept with what follows them by LaTeX itself
(``book/_latex/tlprint.sty``).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from docutils import nodes
from pygments.style import Style
from pygments.styles.default import DefaultStyle
from pygments.token import Comment, Keyword, Name, Number, Operator, String
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = {"quiz-answer", "instructor-only", "tag_instructor-only"}
APPENDIX_TITLE = "Answers and solutions"
# Heights of the place-holding boxes (LaTeX lengths). They depend on the question only.
BOX_OPEN = "7\\baselineskip"  # an open question: room to write a few sentences
BOX_CHOICE = "2.2\\baselineskip"  # a multiple-choice question: room for a letter and a word
BOX_LINE = "1.6\\baselineskip"  # a solution or an instructor note: one line
LINE_PT = 13.6  # \baselineskip of 11 pt text, for the page-break estimates
CODE_LINE_PT = 11.0  # \footnotesize code
CHARS_PER_LINE = 95


def _edition() -> str:
    edition = os.environ.get("BOOK_EDITION", "full")
    if edition not in {"full", "student"}:
        raise ValueError(f"BOOK_EDITION must be 'full' or 'student', got {edition!r}")
    return edition


def _configure(app, config) -> None:
    config.book_edition = _edition()
    app.tags.add("student_edition" if config.book_edition == "student" else "instructor_edition")
    # Not sphinx-exercise's own ``hide_solutions``: it drops only the opening node of a
    # gated solution, and it would renumber nothing but still differ in layout. The
    # solutions are replaced in the assembled LaTeX tree instead (PrintEditions).


# --- the print layout --------------------------------------------------------------------


class PrintStyle(Style):
    """Pygments style for print: every token dark enough to read in greyscale.

    The default style's comments (italic #3D7B7B) are the lightest text on a printed
    page, yet the shape comments (``# (B, T, E) -> (B, H, T, d_k)``) are the book's key
    device. Here comments are a dark grey (about 70 % black), keywords and names
    dark colours that stay dark when printed in black and white."""

    background_color = "#f7f7f7"
    styles = {
        **DefaultStyle.styles,
        Comment: "italic #474747",
        Comment.Preproc: "#474747",
        Keyword: "bold #1a237e",
        Keyword.Constant: "bold #1a237e",
        Name.Builtin: "#1a237e",
        Name.Function: "#0d3f66",
        Name.Class: "bold #0d3f66",
        Name.Decorator: "#5c2d91",
        String: "#7a2e00",
        String.Doc: "italic #474747",
        Number: "#004d1a",
        Operator: "#333333",
        Operator.Word: "bold #1a237e",
    }


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _tex(text: str) -> str:
    return re.sub(r"([#$%&_{}])", r"\\\1", text)


def _label_pdf(app) -> None:
    """The edition on the title page and in the header; the title page; the print style."""
    if app.builder.name != "latex":
        return
    student = app.config.book_edition == "student"
    label = "for students" if student else "for instructors"
    app.config.release = label
    app.builder.context["release"] = label  # the builder copied the config already
    app.config.pygments_style = "editions.PrintStyle"
    project = _project()
    repo = app.config.html_theme_options.get("repository_url", "")
    full_title = str(app.builder.context.get("title") or app.config.html_title or app.config.project)
    title, _, subtitle = full_title.partition(":")
    licence = project.get("license", {}).get("text", "")
    macros = "\n".join(
        [
            "% --- book/_ext/editions.py: the edition, version, repository and licence",
            rf"\newcommand{{\tledition}}{{Edition {label}}}",
            rf"\newcommand{{\tlshorttitle}}{{{_tex(title.strip())}}}",
            rf"\newcommand{{\tlsubtitle}}{{{_tex(subtitle.strip())}}}",
            rf"\newcommand{{\tlversion}}{{{_tex(project['version'])}}}",
            rf"\newcommand{{\tlrepository}}{{{repo}}}",
            rf"\newcommand{{\tllicence}}{{{_tex(licence)}}}",
            r"\usepackage{tlprint}",
        ]
    )
    ctx = app.builder.context
    ctx["preamble"] = macros + "\n" + ctx.get("preamble", "")
    ctx["maketitle"] = TITLE_PAGE
    # The running footer names the chapter: none before chapter 1 (not "CONTENTS").
    ctx["tableofcontents"] = ctx.get("tableofcontents", r"\sphinxtableofcontents") + "\n\\markboth{}{}\n"


TITLE_PAGE = r"""
\makeatletter
\begin{titlepage}
  \hypersetup{pageanchor=false}
  \centering\py@HeaderFamily
  \vspace*{3cm}
  {\Huge \tlshorttitle\par}
  \vspace{1.2em}
  {\LARGE\mdseries \tlsubtitle\par}
  \vspace{2.5em}
  {\itshape\Large \tledition\par}
  \vfill
  {\large\mdseries An executable lesson: every figure and number in this book was
   computed by its code when the book was built.\par}
  \vspace{2em}
  {\large Version \tlversion\ \textperiodcentered\ \today\par}
  \vspace{1em}
  {\large\mdseries\url{\tlrepository}\par}
  \vspace{1em}
  {\large\mdseries Licence: \tllicence. Copy it, change it, teach with it.\par}
  \vspace{1cm}
\end{titlepage}
\makeatother
\setcounter{page}{1}
"""


# --- author-year labels in the bibliography ---------------------------------------------


def _register_bibliography_style() -> None:
    """pybtex style ``authoryear``: the list sorted by author and year (pybtex's "plain")
    with labels such as "Vaswani et al., 2017", the form the text cites
    (``bibtex_reference_style: author_year``), instead of "[VSP+17]"."""
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [self.label(entry) for entry in sorted_entries]
            seen: dict[str, int] = {}
            for label in labels:
                seen[label] = seen.get(label, 0) + 1
            count: dict[str, int] = {}
            for label in labels:
                if seen[label] > 1:  # two works by the same authors in one year: 2017a, 2017b
                    count[label] = count.get(label, 0) + 1
                    yield label + "abcdefghijklmnopqrstuvwxyz"[count[label] - 1]
                else:
                    yield label

        @staticmethod
        def label(entry) -> str:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [" ".join(p.last_names) for p in people]
            if not names:
                who = entry.fields.get("organization", entry.fields.get("title", "Anon."))
            elif len(names) == 1:
                who = names[0]
            elif len(names) == 2:
                who = f"{names[0]} and {names[1]}"
            else:
                who = f"{names[0]} et al."
            who = who.replace("{", "").replace("}", "")
            return f"{who}, {entry.fields.get('year', 'n.d.')}"

    class AuthorYearStyle(PlainStyle):
        default_label_style = "authoryear"

    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels, force=True)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle, force=True)


# --- the assembled LaTeX tree ----------------------------------------------------------------


def _is_hidden(node) -> bool:
    return isinstance(node, solution_node) or bool(HIDDEN & set(node.get("classes", [])))


def _outermost_hidden(tree) -> list[nodes.Element]:
    found = []
    for node in tree.findall(nodes.Element):
        if not _is_hidden(node):
            continue
        parent = node.parent
        while parent is not None and not _is_hidden(parent):
            parent = parent.parent
        if parent is None:
            found.append(node)
    return found


def _section_title(node) -> str:
    parent = node.parent
    while parent is not None and not isinstance(parent, nodes.section):
        parent = parent.parent
    if parent is None or not parent.children or not isinstance(parent[0], nodes.title):
        return ""
    return parent[0].astext()


def _section_title_nodes(node) -> list[nodes.Node]:
    """A copy of the inline nodes of the title of the section holding `node`: maths stays
    maths (its text would be TeX source, "Why divide by \\sqrt{d_k}")."""
    parent = node.parent
    while parent is not None and not isinstance(parent, nodes.section):
        parent = parent.parent
    if parent is None or not parent.children or not isinstance(parent[0], nodes.title):
        return []
    return [c.deepcopy() if not isinstance(c, nodes.reference) else nodes.Text(c.astext()) for c in parent[0].children]


def _start_of_file(node):
    parent = node.parent
    while parent is not None and not isinstance(parent, addnodes.start_of_file):
        parent = parent.parent
    return parent


def _chapter_title(node, page_titles: set[str]) -> str:
    """The title of the chapter (the page) holding a node: the outermost section around
    it whose title is the title of a page (not a part's caption)."""
    sections, parent = [], node.parent
    while parent is not None:
        if isinstance(parent, nodes.section) and parent.children and isinstance(parent[0], nodes.title):
            sections.insert(0, parent[0].astext())
        parent = parent.parent
    return next((t for t in sections if t in page_titles), sections[0] if sections else "")


def _kind(node) -> str:
    if isinstance(node, solution_node):
        return "solution"
    if "quiz-answer" in node.get("classes", []):
        return "answer"
    return "note"


def _is_choice_question(node) -> bool:
    """A multiple-choice question: a list of options (``- **A.** ...``) before the answer."""
    parent = node.parent
    for sibling in parent.children[: parent.index(node)][::-1]:
        if isinstance(sibling, (nodes.bullet_list, nodes.enumerated_list)):
            return bool(re.match(r"^\(?[A-Ea-e][.)]", sibling.astext().strip()))
        if isinstance(sibling, nodes.paragraph):
            return False
    return False


def _box(kind: str, choice: bool, student: bool, ref: str, title: str) -> nodes.raw:
    # the same label in both editions (the answers appendix names the question's page)
    anchor = rf"\phantomsection\label{{{ref}-q}}"
    return nodes.raw("", anchor + _box_tex(kind, choice, student, ref, title).text, format="latex")


class _Tex:
    def __init__(self, text: str):
        self.text = text


def _box_tex(kind: str, choice: bool, student: bool, ref: str, title: str) -> "_Tex":
    if kind == "answer":
        height = BOX_CHOICE if choice else BOX_OPEN
        label = "Your answer" if student else rf"Your answer \hfill \emph{{the answer: page \pageref{{{ref}}}}}"
        tex = rf"\tlanswerbox{{{height}}}{{{label}}}"
    elif kind == "solution":
        text = _tex(title or "Solution")
        label = (
            r"Your solution: in the notebook, checked by the self-check cell"
            if student
            else rf"{text}: page \pageref{{{ref}}}"
        )
        tex = rf"\tlanswerbox{{{BOX_LINE}}}{{{label}}}"
    else:  # an instructor note: nothing visible in the student edition, same height
        tex = (
            rf"\par\vspace{{{BOX_LINE}}}\par"
            if student
            else rf"\par\noindent\parbox[c][{BOX_LINE}]{{\linewidth}}{{\sffamily\small Instructor note: page \pageref{{{ref}}}}}\par"
        )
    return _Tex(tex + "\n")


def _last_chapter_container(tree):
    """The toctree wrapper holding the last chapter: the answers go after it."""
    last = None
    for sof in tree.findall(addnodes.start_of_file):
        last = sof
    return last


def _estimate_pt(node) -> float:
    """A rough height of a node as printed: enough to decide a page break."""
    if isinstance(node, nodes.literal_block):
        return (node.astext().count("\n") + 1) * CODE_LINE_PT + 12
    if isinstance(node, nodes.math_block):
        return 3 * LINE_PT
    if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
        return sum(_estimate_pt(item) for item in node.children) + LINE_PT / 2
    if isinstance(node, nodes.list_item):
        return sum(_estimate_pt(c) for c in node.children) or LINE_PT
    if isinstance(node, nodes.Element) and not isinstance(node, (nodes.paragraph, nodes.title)):
        return sum(_estimate_pt(c) for c in node.children if isinstance(c, nodes.Element))
    text = node.astext()
    return (len(text) // CHARS_PER_LINE + 1) * LINE_PT + LINE_PT / 2


class PrintEditions(SphinxPostTransform):
    """Edition-specific boxes, chapter numbers, the bibliography's place and index entries,
    on the whole book assembled by the LaTeX builder (after Sphinx gathered the citations
    at the end of the tree, priority 750)."""

    default_priority = 800
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        if self.document.get("docname") != self.config.root_doc:
            return  # only the assembled book, not a single page
        self.number_chapters_as_sphinx_does()
        self.place_bibliography()
        self.keep_questions_together()
        self.index_terms()
        self.editions()

    def number_chapters_as_sphinx_does(self) -> None:
        """LaTeX numbers every chapter; Sphinx numbers only the chapters of a numbered
        part (``numbered: true`` in the table of contents), and the web edition, the
        exercise titles (sphinx-exercise takes them from Sphinx) and the printed figure and
        equation numbers must agree. So before each chapter Sphinx left unnumbered (the
        first part, "Before we start") LaTeX's section numbers are switched off
        (``\\tlunnumbered``, book/_latex/tlprint.sty) and switched back on before the next
        numbered one. LaTeX then neither prints nor counts a number for those chapters:
        chapter 1 is the first numbered chapter, as on the web."""
        numbered_now = True
        for sof in list(self.document.findall(addnodes.start_of_file)):
            docname = sof.get("docname", "")
            if docname not in self.env.titles or sof.parent is None:
                continue  # not a page of the book (the answers appendix is added later)
            numbered = bool(self.env.toc_secnumbers.get(docname, {}).get(""))
            if numbered != numbered_now:
                command = r"\tlnumbered" if numbered else r"\tlunnumbered"
                sof.parent.insert(sof.parent.index(sof), nodes.raw("", command + "\n", format="latex"))
                numbered_now = numbered

    # The bibliography list goes where the {bibliography} directive was, under the
    # chapter heading "Bibliography", instead of a second chapter of the same name.
    def place_bibliography(self) -> None:
        markers = list(self.document.findall(lambda n: isinstance(n, nodes.Element) and "tl-bibliography-here" in n.get("classes", [])))
        bibs = [n for n in self.document.findall(nodes.Element) if n.tagname == "thebibliography"]
        if not markers or not bibs:
            return
        bib = bibs[-1]
        bib.parent.remove(bib)
        markers[0].replace_self(bib)
        for extra in markers[1:]:
            extra.parent.remove(extra)

    def keep_questions_together(self) -> None:
        for section in list(self.document.findall(nodes.section)):
            body = [c for c in section.children if not isinstance(c, (nodes.title, nodes.section))]
            if not any(_is_hidden(n) for c in body for n in c.findall(nodes.Element)):
                continue
            height = 2 * LINE_PT
            for child in body:
                if _is_hidden(child):
                    height += 7 * LINE_PT
                    break
                height += _estimate_pt(child)
            height = min(height, 300.0)  # a long question may break after its start
            # A question that opens its part ("Code reading" with nothing but its title before
            # "Code reading 1") is kept with that part's heading: a page break between the two
            # would leave the heading alone at the foot of the page.
            target = section
            while isinstance(target.parent, nodes.section) and next(
                (c for c in target.parent.children if not isinstance(c, (nodes.title, nodes.target))), None
            ) is target:
                target = target.parent
                height += 3 * LINE_PT
            parent = target.parent
            parent.insert(parent.index(target), nodes.raw("", f"\\tlkeep{{{height:.0f}pt}}\n", format="latex"))

    def index_terms(self) -> None:
        """An index entry for each glossary term at every section whose title names it
        (where the term is taught), besides the glossary's own entry."""
        # The glossary's own entries: Sphinx puts each one inside its term, which LaTeX
        # typesets as a macro argument, and an \index read as part of an argument writes
        # "multi\sphinxhyphen {}head" where one in the text writes "multi\sphinxhyphen{}head":
        # makeindex then printed every hyphenated term twice. Moved to the start of the
        # term's definition (same page), they are written like the others.
        for term in list(self.document.findall(nodes.term)):
            item = term.parent
            definitions = [c for c in item.children if isinstance(c, nodes.definition)] if item is not None else []
            for index in list(term.findall(addnodes.index)):
                if definitions:
                    index.parent.remove(index)
                    index["inline"] = False
                    definitions[0].insert(0, index)
        std = self.env.get_domain("std")
        terms = sorted({name for (kind, name) in std.objects if kind == "term"}, key=len, reverse=True)
        if not terms:
            return
        patterns = {t: re.compile(rf"\b{re.escape(t)}s?\b", re.IGNORECASE) for t in terms}
        for section in self.document.findall(nodes.section):
            if not section.children or not isinstance(section[0], nodes.title):
                continue
            sof = _start_of_file(section)
            if sof is not None and "glossary" in sof.get("docname", ""):
                continue
            title = section[0].astext()
            hits = [t for t in terms if patterns[t].search(title)]
            if not hits:
                continue
            entries = [("single", t, "", "", None) for t in hits]
            index = addnodes.index(entries=entries, inline=False)
            section.insert(1, index)

    # A numbered figure (or equation) in a hidden box (a solution's figure) is numbered on
    # the web where the box is. In print the box goes (student edition) or moves to the
    # answers appendix (instructor edition): LaTeX's counters step where the box was, so the
    # figures after it keep the web's numbers, and in the appendix the figure prints the
    # number it has on the web ("Fig. 6.2"), not one of the appendix.
    def numbered_inside(self, node) -> list[tuple[str, str]]:
        # Labels are unique in the book: the number is looked up in every page's numbers
        # (the box may already stand outside its page's subtree here).
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
        """\\begingroup, and the web's number for the tables in this entry (one table: an
        entry with more keeps LaTeX's numbers for the others)."""
        tex = r"\begingroup"
        for kind in ("table",):
            numbers = [n for k, n in numbered if k == kind and n]
            if len(numbers) == 1:
                tex += rf"\def\the{kind}{{{numbers[0]}}}"
        return nodes.raw("", tex + "\n", format="latex")

    def editions(self) -> None:
        student = self.config.book_edition == "student"
        if True:  # both editions: the same words, the same pages
            for par in list(self.document.findall(nodes.paragraph)):
                for _ in range(5):  # a paragraph with several such sentences
                    if not _rewrite_paragraph(par):
                        break
        hidden = _outermost_hidden(self.document)
        if not hidden:
            return
        appendix = nodes.section(ids=["tl-answers"], names=["tl-answers"])
        appendix += nodes.title(text=APPENDIX_TITLE)
        appendix += nodes.paragraph(
            text="The answers to the quiz questions, the solutions of the exercises and the "
            "instructor notes of every chapter, in the order of the book. The student "
            "edition has a space for the reader's own answer in their place, so both "
            "editions keep the same page numbers."
        )
        current_chapter = None
        page_titles = {title.astext() for title in self.env.titles.values()}
        for i, node in enumerate(hidden):
            kind = _kind(node)
            ref = f"tlans:{i}"
            choice = kind == "answer" and _is_choice_question(node)
            question = _section_title(node)
            question_nodes = _section_title_nodes(node)
            chapter = _chapter_title(node, page_titles)
            sol_title = ""
            if kind == "solution":
                titles = list(node.findall(nodes.title))
                sol_title = titles[0].astext() if titles else "Solution"
            numbered = self.numbered_inside(node)
            node.replace_self([self.counter_steps(numbered), _box(kind, choice, student, ref, sol_title)])
            if student:
                continue
            if chapter != current_chapter:
                current_chapter = chapter
                sub = nodes.section(ids=[f"tl-answers-{i}"], names=[])
                sub += nodes.title(text=chapter or "Notes")
                appendix += sub
            entry = nodes.container(classes=["tl-answer-entry"])
            heading = question if kind != "solution" else sol_title
            entry += nodes.raw("", rf"\par\needspace{{5\baselineskip}}\phantomsection\label{{{ref}}}" + "\n", format="latex")
            back = nodes.raw("", rf", page \pageref{{{ref}-q}}", format="latex")
            if kind != "solution":  # a solution box has its own title
                title = nodes.strong("", "", *question_nodes) if question_nodes else nodes.strong(text=heading or "Answer")
                entry += nodes.paragraph("", "", title, back)
            else:
                entry += nodes.paragraph("", "", nodes.emphasis(text="The exercise"), back)
            self.unfloat_figures(node, numbered)
            entry += self.fixed_numbers(numbered)
            entry += node
            entry += nodes.raw("", "\\endgroup\n", format="latex")
            sub += entry
        if student:
            return
        last = _last_chapter_container(self.document)
        if last is None:
            self.document += appendix
            return
        holder = addnodes.start_of_file(docname="book/answers")
        holder += appendix
        last.parent.insert(last.parent.index(last) + 1, holder)


# Sentences of the pages that are true of the web site only (answers in folded boxes next
# to the questions): in both printed editions each sentence that matches is replaced (or
# dropped, ""), by the same text in both, so that both keep the same line and page breaks.
STUDENT_SENTENCES = [
    (
        re.compile(r"open (?:the|each) \W*answers?\W* box|answers? boxe?s? (?:is|are) (?:hidden|folded)", re.I),
        "Write your answer in the space after each question; the answers are at the back "
        "of the instructor edition and on the web edition of this book.",
    ),
    (
        re.compile(r"solutions? (?:is|are) (?:hidden|folded)|hints and a solution are folded", re.I),
        "The solutions are not printed next to the exercises: the self-check after each "
        "exercise tells you whether your code is right (the instructor edition has the "
        "solutions at the back).",
    ),
    (  # from the match to the end of the sentence ("..., then compare with the answers")
        re.compile(r"(?P<clause>compare (?:it |them |your \w+ )?with the answers?)", re.I),
        "check them against the answers of the web edition.",
    ),
    (re.compile(r"the solution's figure is in the web version", re.I), ""),
    (
        re.compile(r"in the folded solution", re.I),
        "The explanation is in the solution, at the back of the instructor edition and on "
        "the web edition.",
    ),
    (re.compile(r"(?P<clause>^the answer boxes$)", re.I), "the answers of the instructor edition"),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*])")


def _rewrite_paragraph(par: nodes.paragraph) -> bool:
    """Replace each sentence of `par` that matches STUDENT_SENTENCES, keeping the markup of
    the rest of the paragraph (the sentence itself becomes plain text)."""
    texts = [t for t in par.findall(nodes.Text)]
    full = "".join(str(t) for t in texts)
    for pattern, replacement in STUDENT_SENTENCES:
        m = pattern.search(full)
        if not m:
            continue
        starts = [0] + [e.end() for e in _SENTENCE_END.finditer(full)]
        start = m.start() if "clause" in pattern.groupindex else max(s for s in starts if s <= m.start())
        ends = [e.start() for e in _SENTENCE_END.finditer(full) if e.start() >= m.end()]
        end = ends[0] if ends else len(full)
        _splice(texts, start, end, replacement)
        return True
    return False


def _splice(texts: list[nodes.Text], start: int, end: int, replacement: str) -> None:
    """Replace characters [start, end) of the concatenated text nodes by `replacement`."""
    pos, placed = 0, False
    for t in texts:
        text, lo, hi = str(t), pos, pos + len(str(t))
        pos = hi
        if hi <= start or lo >= end:
            continue
        keep_before = text[: max(0, start - lo)]
        keep_after = text[max(0, end - lo):] if end < hi else ""
        new = keep_before + ("" if placed else replacement) + keep_after
        placed = True
        t.parent.replace(t, nodes.Text(new))


class MarkBibliography(SphinxPostTransform):
    """Before Sphinx gathers the citations (priority 750), mark where the
    ``{bibliography}`` directive put them, for PrintEditions.place_bibliography."""

    default_priority = 740
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for citation in self.document.findall(nodes.citation):
            marker = nodes.container(classes=["tl-bibliography-here"])
            citation.parent.insert(citation.parent.index(citation), marker)
            break


_WRITER_DEPTH: dict[int, int] = {}  # the LaTeX writer's numfig_secnum_depth, per build


def _number_env_by_chapter(app) -> None:
    """In the print builds, Sphinx's own numbers (sphinx-exercise's "Exercise 6.1", its
    solutions' titles) by chapter, as on the web and as LaTeX numbers figures and equations.

    sphinx-jupyterbook-latex sets numfig_secnum_depth to 2 when the book has parts: the LaTeX
    writer counts the part as a level, so 2 makes LaTeX restart its figure and equation
    counters at each chapter. Sphinx's own numbering (the environment's) does not count
    parts, and with 2 it numbered exercises by section: "Exercise 6.2.1" in print for the
    web's "Exercise 6.1". So the environment numbers with 1 (set here, after that
    extension, before the numbers are assigned) and the writer gets its 2 back once they
    are (``_restore_writer_depth``, on env-get-updated after Sphinx's own listener)."""
    if app.builder.name != "latex":
        return
    _WRITER_DEPTH[id(app)] = app.config.numfig_secnum_depth
    app.config.numfig_secnum_depth = 1


def _restore_writer_depth(app, env):
    if app.builder.name == "latex" and id(app) in _WRITER_DEPTH:
        app.config.numfig_secnum_depth = _WRITER_DEPTH[id(app)]
    return []


def setup(app):
    _register_bibliography_style()
    app.connect("builder-inited", _number_env_by_chapter, priority=900)  # after sphinx-jupyterbook-latex (500)
    # Sphinx assigns the numbers on env-get-updated (TocTreeCollector, priority 500)
    app.connect("env-get-updated", _restore_writer_depth, priority=900)
    app.add_config_value("book_edition", "full", "env")
    app.connect("config-inited", _configure)
    app.connect("builder-inited", _label_pdf)
    app.add_post_transform(MarkBibliography)
    app.add_post_transform(PrintEditions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
