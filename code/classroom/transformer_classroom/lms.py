"""The book's quizzes for learning-management systems: a QTI 1.2 package and a Moodle XML bank.

    python -m transformer_classroom.lms [--book DIR] [--out DIR] [--publish DIR]

The one source is the quiz pages (front matter ``kind: quiz``) as the book shows them: their
own questions and those the chapters write for them in ``{quiz-question}`` blocks, collected
in their place by :func:`transformer_classroom.quiz_blocks.page_text`, the one reader of a
quiz page (every page is read through it, so a chapter's blocks are not the chapter's). A
*question* there is a heading with a label right above it (``(quiz-path-length)=``, at any heading level: ``##`` or ``###``) and
one answer box (an ``admonition`` of class ``quiz-answer``). What kind of question it is
comes from the first line of its answer box:

* ``**C.** ...``: single choice; the options are the question's own ``- **A.** ...`` lines or,
  when it has none, those listed once above it under the same heading (the "which mistake is
  this?" questions share one list of ten bugs);
* ``**2.** ...``: single choice whose options are the question's numbered list ``1. ...``;
* ``**True.**`` / ``**False.**``: true or false;
* anything else: an open question (review questions, code reading), exported as an *essay*
  with the answer box as the model answer: Moodle's "information for graders", and in QTI
  (which has no such field) the general feedback shown after the attempt.

Written into ``--out`` (default ``_build/lms``):

* ``<course>-qti.zip`` (``course: name`` of _config.yml): IMS QTI 1.2 (``imsmanifest.xml`` and one
  ``questestinterop`` assessment per quiz page), what Canvas classic quizzes, Blackboard and
  D2L import;
* ``<course>-moodle.xml``: Moodle XML, one category per quiz page.

Every question keeps the book's options in the book's order (shuffling is off: explanations
say "A and C are misconceptions"), its answer, its explanation as feedback, and links back to
the book: to the question on its quiz page and to the page that teaches it (the first page
its answer, its text or its section's introduction links to; none where they link to none).

Decided here:

* **Math stays LaTeX**, written ``\\(...\\)`` and ``\\[...\\]``: Moodle's MathJax filter (on by
  default) and Canvas's math rendering both typeset these delimiters, an LMS without them
  shows readable TeX, and no HTML sanitiser strips it (Moodle's HTML cleaning removes MathML
  elements, and what it leaves of KaTeX's MathML would be unreadable run-together text).
* **Code** becomes ``<pre><code>``; the cross-reference roles become links to the published
  book (``{ref}``, ``{doc}``, ``{numref}``), plain text (``{term}``) or author-year citations
  (``{cite:p}``, ``{cite:t}``, from ``book/references.bib``).
* **The standard library writes the XML** (``xml.etree``, ``zipfile``), with markdown-it-py
  (the Markdown parser the book's build already uses) for the HTML. text2qti, the usual QTI
  tool, reads its own plain-text quiz format (a second copy of every question), writes no
  Moodle XML, and renders LaTeX through a Canvas server's image URL; here the quiz pages are
  the only source.
* **Deterministic**: identifiers are the questions' labels, the zip's entries are sorted with
  a fixed timestamp (1980-01-01) and fixed permissions, so two runs give the same bytes.
* Each question is worth 1 point; the site's address is ``html_baseurl`` of ``_config.yml``
  or, without it, GitHub Pages' address of its ``repository: url``.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

from . import book as book_files
from . import quiz_blocks

QTI, MOODLE = "lms_qti", "lms_moodle"  # the two files, by their keys in book.published(): names from the course's
QTI_NS = "http://www.imsglobal.org/xsd/ims_qtiasiv1p2"
MANIFEST_NS = "http://www.imsglobal.org/xsd/imscp_v1p1"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: no build time in the bytes

LABEL = re.compile(r"^\(([A-Za-z0-9_.:-]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})")
LETTER_OPTION = re.compile(r"^- \*\*([A-Z])\.\*\*\s*(.*)$")
NUMBER_OPTION = re.compile(r"^(\d+)\.\s+(.*)$")
ANSWER_BOX = re.compile(r"^(:{3,})\{admonition\}")
KEY = re.compile(r"^\*\*([A-Z]|\d+)(?:[.,]\*\*|\*\*[.,])")  # as tests/site/test_quiz_key.py reads it
TRUE_FALSE = re.compile(r"^\*\*(True|False)\b[.,]?\*\*")
ROLE = re.compile(r"\{(ref|doc|numref|term|cite:p|cite:t|eq)\}`([^`]*)`")


class QuizFormatError(ValueError):
    """A quiz page that does not follow the format the export reads."""


@dataclass(frozen=True)
class Question:
    """One labelled question of a quiz page; texts are the page's MyST Markdown.

    ``kind`` is "choice", "truefalse" or "essay"; ``options`` are ``(key, text)`` in the
    book's order ("A", "B", ... or "1", "2", ...; "True", "False"), empty for an essay;
    ``answer`` is the key of the right option (None for an essay); ``explanation`` is the
    answer box's text; ``context`` the text above it under the same section heading (the
    shared list of bugs, and what introduces them).
    """

    label: str
    page: str
    title: str
    kind: str
    stem: str
    options: tuple[tuple[str, str], ...]
    answer: str | None
    explanation: str
    context: str = ""


@dataclass(frozen=True)
class QuizPage:
    """A quiz page: its name (``quiz_concepts``), title, introduction and questions."""

    name: str
    title: str
    intro: str
    questions: tuple[Question, ...]


# --- reading the quiz pages --------------------------------------------------------------


def _options(lines: list[str], pattern: re.Pattern) -> tuple[list[tuple[str, str]], set[int]]:
    """The ``(key, text)`` options among ``lines`` and the indices of the lines they use."""
    found, used, current = [], set(), None
    for i, line in enumerate(lines):
        if m := pattern.match(line):
            found.append([m.group(1), m.group(2).strip()])
            used.add(i)
            current = len(found) - 1
        elif current is not None and line.startswith("  ") and line.strip():
            found[current][1] += " " + line.strip()  # an option continued on the next line
            used.add(i)
        else:
            current = None
    return [(k, t) for k, t in found], used


def _question(label: str, title: str, body: list[str], shared: list[tuple[str, str]], page: str,
              context: str = "") -> Question:
    where = f"{page}.md, question {label!r}"
    start = next((i for i, line in enumerate(body) if ANSWER_BOX.match(line)), None)
    if start is None:
        raise QuizFormatError(f"{where}: no answer box (:::{{admonition}} Answer, class quiz-answer)")
    fence = ANSWER_BOX.match(body[start]).group(1)
    end = next((i for i in range(start + 1, len(body)) if body[i].strip() == fence), None)
    if end is None:
        raise QuizFormatError(f"{where}: the answer box opened with {fence} is never closed")
    box = body[start + 1:end]
    if not any(line.startswith(":class:") and "quiz-answer" in line for line in box):
        raise QuizFormatError(f"{where}: the admonition after the question lacks ':class: dropdown quiz-answer'")
    if any(ANSWER_BOX.match(line) for line in body[end + 1:]):
        raise QuizFormatError(f"{where}: more than one answer box")
    explanation = "\n".join(line for line in box if not line.startswith(":")).strip()
    question = body[:start]
    first = explanation.splitlines()[0] if explanation else ""
    kind, options, answer, used = "essay", [], None, set()
    if m := TRUE_FALSE.match(first):
        kind, options, answer = "truefalse", [("True", "True"), ("False", "False")], m.group(1)
    elif m := KEY.match(first):
        answer = m.group(1)
        pattern = NUMBER_OPTION if answer.isdigit() else LETTER_OPTION
        options, used = _options(question, pattern)
        if not options and not answer.isdigit():
            options = shared
        keys = [k for k, _ in options]
        if answer not in keys:
            raise QuizFormatError(f"{where}: the answer box gives {answer!r}, but the options are {keys or 'missing'}")
        if len(set(keys)) != len(keys):
            raise QuizFormatError(f"{where}: two options share a key: {keys}")
        kind = "choice"
    stem = "\n".join(line for i, line in enumerate(question) if i not in used).strip()
    if not stem:
        raise QuizFormatError(f"{where}: the question has no text")
    return Question(label=label, page=page, title=title, kind=kind, stem=stem, options=tuple(options),
                    answer=answer, explanation=explanation, context=context)


def parse_quiz_page(text: str, name: str) -> QuizPage:
    """Every labelled question of one quiz page (``text``), in the page's order.

    A question runs from its heading to the next heading or label; options listed outside
    any question are shared by the questions that follow under the same heading.
    """
    lines = text.splitlines()
    title, intro, questions = name, [], []
    current = None  # (label, title, body lines) of the question being read
    pending_label, shared, shared_block, fence, intro_done = None, [], [], None, False

    def close():
        nonlocal current
        if current is not None:
            questions.append(_question(*current, shared, name, "\n".join(shared_block).strip()))
        current = None

    for line in lines:
        if fence is None and (m := FENCE.match(line)):
            fence = m.group(1)
        elif fence is not None and line.strip().startswith(fence[0] * len(fence)) and line.strip().strip(fence[0]) == "":
            fence = None
        elif fence is None and (m := LABEL.match(line)):
            close()
            pending_label, intro_done = m.group(1), True
            continue
        elif fence is None and (m := HEADING.match(line)):
            close()
            if m.group(1) == "#" and title == name:
                title = m.group(2)
            else:
                intro_done = True
            if pending_label is not None:
                current = (pending_label, m.group(2), [])
                pending_label = None
            else:  # a section heading: its own list of shared options starts
                shared, shared_block = [], []
            continue
        if pending_label is not None and line.strip():
            pending_label = None  # a label on something else than a heading (a figure, a box)
        if current is not None:
            current[2].append(line)
        else:
            if not intro_done:
                intro.append(line)
            shared_block.append(line)
            shared = _options(shared_block, LETTER_OPTION)[0]
    close()
    labels = [q.label for q in questions]
    twice = sorted({l for l in labels if labels.count(l) > 1})
    if twice:
        raise QuizFormatError(f"{name}.md: labels used twice: {twice}")
    return QuizPage(name, title, "\n".join(intro).strip(), tuple(questions))


def read_quizzes(book: Path) -> list[QuizPage]:
    """The quiz pages of ``book`` (``kind: quiz``) with the chapters' questions in place, by name."""
    try:
        pages = [parse_quiz_page(quiz_blocks.page_text(book, name), name) for name in quiz_blocks.quiz_pages(book)]
    except quiz_blocks.QuizBlockError as err:
        raise QuizFormatError(str(err)) from None
    if not pages:
        raise QuizFormatError(f"no quiz page (kind: quiz) in {book}")
    return pages


# --- what the cross-references point to --------------------------------------------------


@dataclass
class Book:
    """Where the book's labels, pages and references are: enough to turn roles into links."""

    url: str
    titles: dict[str, str]  # page -> title
    labels: dict[str, tuple[str, str]]  # label -> (page, title)
    cites: dict[str, tuple[str, str]]  # bibtex key -> (authors, year)
    quizzes: frozenset[str] = frozenset()  # the quiz pages (front matter kind: quiz)

    @classmethod
    def read(cls, book: Path, url: str) -> "Book":
        titles, labels = {}, {}
        for path in sorted(book.glob("*.md")):
            text = quiz_blocks.page_text(book, path.stem)
            lines = (book_files.split(text) or ("", text))[1].splitlines()  # a comment in the front matter is no title
            heading = next((HEADING.match(l) for l in lines if HEADING.match(l) and l.startswith("# ")), None)
            titles[path.stem] = heading.group(2) if heading else path.stem
            for i, line in enumerate(lines):
                if m := LABEL.match(line):
                    nxt = next((l for l in lines[i + 1:] if l.strip()), "")
                    h = HEADING.match(nxt)
                    labels[m.group(1)] = (path.stem, h.group(2) if h else m.group(1))
                elif m := re.match(r"^\s*(?::label:|name:)\s*([A-Za-z0-9_-]+)\s*$", line):
                    labels.setdefault(m.group(1), (path.stem, m.group(1)))
        return cls(url, titles, labels, _bibliography(book / "references.bib"), frozenset(quiz_blocks.quiz_pages(book)))

    def link(self, page: str, anchor: str | None = None) -> str:
        return f"{self.url}book/{page}.html" + (f"#{anchor}" if anchor else "")


def _bibliography(path: Path) -> dict[str, tuple[str, str]]:
    """bibtex key -> ("Vaswani et al.", "2017"), the book's author-year labels."""
    if not path.exists():
        return {}
    out = {}
    for entry in re.split(r"^@", path.read_text(encoding="utf-8"), flags=re.M)[1:]:
        key = re.match(r"\w+\{([^,]+),", entry)
        author = re.search(r"^\s*author\s*=\s*\{(.*)\},?\s*$", entry, flags=re.M)
        year = re.search(r"^\s*year\s*=\s*\{?(\d{4})", entry, flags=re.M)
        if not (key and author and year):
            continue
        names = [re.sub(r"[{}\\]|\"|'", "", a.split(",")[0]).strip() for a in author.group(1).split(" and ")]
        who = names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2 else f"{names[0]} et al."
        out[key.group(1).strip()] = (who, year.group(1))
    return out


def _target(text: str) -> tuple[str | None, str]:
    """``"title <target>"`` -> (title, target); ``"target"`` -> (None, target)."""
    m = re.match(r"^(.*?)\s*<([^<>]+)>$", text)
    return (m.group(1), m.group(2)) if m else (None, text)


def _resolve_roles(text: str, book: Book, where: str) -> str:
    """MyST roles -> Markdown links or text, outside code blocks."""

    def one(m: re.Match) -> str:
        role, arg = m.group(1), m.group(2)
        title, target = _target(arg)
        if role == "term":
            return title or target
        if role in ("cite:p", "cite:t"):
            found = []
            for key in target.split(","):
                if key.strip() not in book.cites:
                    raise QuizFormatError(f"{where}: no reference {key.strip()!r} in references.bib")
                found.append(book.cites[key.strip()])
            if role == "cite:t":
                return "; ".join(f"{who} ({year})" for who, year in found)
            return "(" + "; ".join(f"{who}, {year}" for who, year in found) + ")"
        if role == "doc":
            page = target.split("/")[-1]
            if page not in book.titles:
                raise QuizFormatError(f"{where}: {{doc}} to a page the book does not have: {target!r}")
            return f"[{title or book.titles[page]}]({book.link(page)})"
        if target not in book.labels:
            raise QuizFormatError(f"{where}: {{{role}}} to a label the book does not have: {target!r}")
        page, label_title = book.labels[target]
        if role == "numref":  # the number is the build's: the link names the page instead
            label_title = f"this figure on “{book.titles[page]}”"
        return f"[{title or label_title}]({book.link(page, target)})"

    parts = re.split(r"(^```.*?^```)", text, flags=re.M | re.S)
    return "".join(p if p.startswith("```") else ROLE.sub(one, p) for p in parts)


def _first_link(texts: list[str], book: Book) -> tuple[str, str | None] | None:
    """The first page (not a quiz) that ``texts`` link to, with its anchor."""
    for text in texts:
        for m in ROLE.finditer(text):
            role, (_, target) = m.group(1), _target(m.group(2))
            if role == "doc" and target not in book.quizzes and target in book.titles:
                return target, None
            if role in ("ref", "numref") and target in book.labels and book.labels[target][0] not in book.quizzes:
                return book.labels[target][0], target
    return None


# --- Markdown to the HTML an LMS shows -----------------------------------------------------


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.use(dollarmath_plugin, allow_space=True, double_inline=True)

    def math(delims):
        return lambda self, tokens, idx, options, env: delims[0] + html.escape(tokens[idx].content.strip()) + delims[1]

    md.add_render_rule("math_inline", math(("\\(", "\\)")))
    md.add_render_rule("math_inline_double", math(("\\[", "\\]")))
    md.add_render_rule("math_block", math(("<p>\\[", "\\]</p>\n")))
    md.add_render_rule("math_block_label", math(("<p>\\[", "\\]</p>\n")))
    return md


class Renderer:
    """MyST Markdown of a quiz page -> HTML with links to the book and LaTeX math."""

    def __init__(self, book: Book):
        self.book = book
        self.md = _markdown()

    def __call__(self, text: str, where: str) -> str:
        return self.md.render(_resolve_roles(text, self.book, where)).strip()

    def inline(self, text: str, where: str) -> str:
        """An option's text: one paragraph, without the ``<p>``."""
        out = self(text, where)
        return out[3:-4] if out.startswith("<p>") and out.endswith("</p>") and out.count("<p>") == 1 else out


def _references(q: Question, page: QuizPage, book: Book) -> str:
    """The closing paragraph of every feedback: the question in the book, the page that teaches it."""
    here = f'<a href="{html.escape(book.link(q.page, q.label))}">{html.escape(page.title)}: {html.escape(q.title)}</a>'
    taught = _first_link([q.explanation, q.stem, q.context], book)  # not the page's intro: it names other pages too
    if taught is None:
        return f"<p>In the book: {here}.</p>"
    link = html.escape(book.link(*taught))
    return f'<p>In the book: {here}. Taught on <a href="{link}">{html.escape(book.titles[taught[0]])}</a>.</p>'


# --- QTI 1.2 -------------------------------------------------------------------------------


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs) -> ET.Element:
    el = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attrs.items()})
    if text is not None:
        el.text = text
    return el


def _material(parent: ET.Element, html_text: str) -> None:
    _sub(_sub(parent, "material"), "mattext", html_text, texttype="text/html")


def _metadata(parent: ET.Element, fields: dict[str, str]) -> None:
    meta = _sub(parent, "qtimetadata")
    for label, entry in fields.items():
        field = _sub(meta, "qtimetadatafield")
        _sub(field, "fieldlabel", label)
        _sub(field, "fieldentry", entry)


QTI_TYPES = {"choice": "multiple_choice_question", "truefalse": "true_false_question", "essay": "essay_question"}


_TEX = [(re.compile(r"\\sqrt\{([^{}]*)\}"), r"√\1"), (re.compile(r"\\(?:top|intercal)\b"), "ᵀ"),
        (re.compile(r"\\(?:cdot|times)\b"), "·"), (re.compile(r"_\{([^{}]*)\}"), r"_\1"),
        (re.compile(r"\\[a-zA-Z]+"), ""), (re.compile(r"[{}]"), "")]


def plain_title(title: str) -> str:
    """A question's title as an LMS's list shows it, plain text: no backticks, and math as
    readable text ("Why divide by $\\sqrt{d_k}$" -> "Why divide by √d_k")."""

    def math(m: re.Match) -> str:
        text = m.group(1)
        for pattern, repl in _TEX:
            text = pattern.sub(repl, text)
        return text

    return " ".join(re.sub(r"\$([^$]+)\$", math, title).replace("`", "").replace("^ᵀ", "ᵀ").split())


SHARED_PROMPT = "Which of the bugs in the options does this code contain? It contains exactly one."


def stem(q: Question) -> str:
    """The question's text; a snippet alone, whose options are the list its section shares
    ("which mistake is this?"), gets the prompt its section gives them."""
    prose = re.sub(r"^(```|~~~).*?^\1", "", q.stem, flags=re.MULTILINE | re.DOTALL).strip()
    return q.stem if prose or q.kind != "choice" else f"{SHARED_PROMPT}\n\n{q.stem}"


def qti_assessment(page: QuizPage, render: Renderer) -> ET.Element:
    """One quiz page as a QTI 1.2 ``questestinterop`` with one ``assessment``."""
    root = ET.Element("questestinterop", {"xmlns": QTI_NS})
    assessment = _sub(root, "assessment", ident=page.name, title=page.title)
    _metadata(assessment, {"cc_maxattempts": "1"})
    section = _sub(assessment, "section", ident="root_section")
    for q in page.questions:
        where = f"{q.page}.md, {q.label}"
        item = _sub(section, "item", ident=q.label, title=plain_title(q.title))
        fields = {"question_type": QTI_TYPES[q.kind], "points_possible": "1"}
        if q.options:  # Canvas's record of the choices' identifiers
            fields["original_answer_ids"] = ",".join(k for k, _ in q.options)
        _metadata(_sub(item, "itemmetadata"), fields)
        presentation = _sub(item, "presentation")
        _material(presentation, render(stem(q), where))
        if q.kind == "essay":
            response = _sub(presentation, "response_str", ident="response1", rcardinality="Single")
            _sub(response, "render_fib")
        else:
            response = _sub(presentation, "response_lid", ident="response1", rcardinality="Single")
            choices = _sub(response, "render_choice", shuffle="No")
            for key, text in q.options:  # the feedback cites options by key: show it (Canvas numbers nothing)
                shown = render.inline(text, where) if q.kind == "truefalse" else f"{key}. {render.inline(text, where)}"
                _material(_sub(choices, "response_label", ident=key), shown)
        processing = _sub(item, "resprocessing")
        _sub(_sub(processing, "outcomes"), "decvar", maxvalue="100", minvalue="0", varname="SCORE", vartype="Decimal")
        always = _sub(processing, "respcondition", continue_="Yes")
        _sub(_sub(always, "conditionvar"), "other")
        _sub(always, "displayfeedback", feedbacktype="Response", linkrefid="general_fb")
        if q.answer is not None:
            right = _sub(processing, "respcondition", continue_="No")
            _sub(_sub(right, "conditionvar"), "varequal", q.answer, respident="response1")
            _sub(right, "setvar", "100", action="Set", varname="SCORE")
        feedback = _sub(item, "itemfeedback", ident="general_fb")
        _material(_sub(feedback, "flow_mat"), render(q.explanation, where) + "\n" + _references(q, page, render.book))
    return root


def qti_manifest(pages: list[QuizPage]) -> ET.Element:
    """``imsmanifest.xml``: one resource of type ``imsqti_xmlv1p2`` per quiz page."""
    root = ET.Element("manifest", {"identifier": "transformer-lessons-quizzes", "xmlns": MANIFEST_NS})
    meta = _sub(root, "metadata")
    _sub(meta, "schema", "IMS Content")
    _sub(meta, "schemaversion", "1.1.3")
    _sub(root, "organizations")
    resources = _sub(root, "resources")
    for page in pages:
        href = f"{page.name}/{page.name}.xml"
        resource = _sub(resources, "resource", identifier=page.name, type="imsqti_xmlv1p2", href=href)
        _sub(resource, "file", href=href)
    return root


def _xml_bytes(root: ET.Element) -> bytes:
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False) + b"\n"


def qti_zip(pages: list[QuizPage], render: Renderer) -> bytes:
    """The QTI package: ``imsmanifest.xml`` and ``<page>/<page>.xml``, same bytes every time."""
    import io

    files = {"imsmanifest.xml": _xml_bytes(qti_manifest(pages))}
    files |= {f"{p.name}/{p.name}.xml": _xml_bytes(qti_assessment(p, render)) for p in pages}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # Unix, whatever the machine that writes it
            zf.writestr(info, files[name], compresslevel=9)
    return buf.getvalue()


# --- Moodle XML ----------------------------------------------------------------------------


def _text(parent: ET.Element, tag: str, html_text: str, **attrs) -> ET.Element:
    el = _sub(parent, tag, format="html", **attrs)
    _sub(el, "text", html_text)
    return el


CATEGORY = "$course$/top/Transformer lessons"


def moodle_xml(pages: list[QuizPage], render: Renderer) -> bytes:
    """The Moodle XML question bank: a category per quiz page, then its questions."""
    root = ET.Element("quiz")
    for page in pages:
        category = _sub(root, "question", type="category")
        _sub(_sub(category, "category"), "text", f"{CATEGORY}/{page.title}")
        _text(category, "info", render(page.intro, f"{page.name}.md") if page.intro else "")
        _sub(category, "idnumber", page.name)
        for q in page.questions:
            where = f"{q.page}.md, {q.label}"
            kind = {"choice": "multichoice", "truefalse": "truefalse", "essay": "essay"}[q.kind]
            el = _sub(root, "question", type=kind)
            _sub(_sub(el, "name"), "text", plain_title(q.title))
            _text(el, "questiontext", render(stem(q), where))
            explained = render(q.explanation, where) + "\n" + _references(q, page, render.book)
            _text(el, "generalfeedback", explained if q.kind != "essay" else _references(q, page, render.book))
            _sub(el, "defaultgrade", "1")
            _sub(el, "penalty", "0" if q.kind == "essay" else "0.3333333")
            _sub(el, "hidden", "0")
            _sub(el, "idnumber", q.label)
            if q.kind == "essay":
                _sub(el, "responseformat", "editor")
                _sub(el, "responserequired", "1")
                _sub(el, "responsefieldlines", "10")
                _sub(el, "attachments", "0")
                _sub(el, "attachmentsrequired", "0")
                _text(el, "graderinfo", explained)
                _text(el, "responsetemplate", "")
                continue
            if q.kind == "choice":
                _sub(el, "single", "true")
                _sub(el, "shuffleanswers", "false")
                _sub(el, "answernumbering", "123" if q.answer.isdigit() else "ABCD")
            for key, text in q.options:
                answer_text = key.lower() if q.kind == "truefalse" else render.inline(text, where)
                answer = _text(el, "answer", answer_text, fraction="100" if key == q.answer else "0")
                _text(answer, "feedback", "")
    return _xml_bytes(root)


# --- the command ---------------------------------------------------------------------------


def site_url(root: Path) -> str:
    """The published book's address (:func:`transformer_classroom.book.book_values`'s
    ``pages_url``: ``html_baseurl``, else a ``pages_url`` substitution, else GitHub Pages of
    the repository), as the pages print it."""
    try:
        return book_files.book_values(root)["pages_url"]
    except ValueError as err:
        raise QuizFormatError(f"_config.yml: cannot derive the site's address: {err}") from None


def export(book: Path, out: Path, url: str | None = None) -> dict[str, Path]:
    """Write both packages into ``out``; return ``{QTI: path, MOODLE: path}``."""
    pages = read_quizzes(book)
    render = Renderer(Book.read(book, url or site_url(book.parent)))
    out.mkdir(parents=True, exist_ok=True)
    names = book_files.published(book.parent)
    written = {QTI: qti_zip(pages, render), MOODLE: moodle_xml(pages, render)}
    for key, data in written.items():
        tmp = out / f".{names[key]}.tmp"
        tmp.write_bytes(data)
        tmp.replace(out / names[key])
    return {key: out / names[key] for key in written}


def main(argv: list[str] | None = None) -> int:
    root = Path.cwd()
    parser = argparse.ArgumentParser(prog="python -m transformer_classroom.lms",
                                     description="Export the book's quizzes as QTI 1.2 (Canvas, Blackboard, D2L) "
                                     "and Moodle XML.")
    parser.add_argument("--book", type=Path, default=root / "book", help="the folder of the quiz pages (book/)")
    parser.add_argument("--out", type=Path, default=root / "_build" / "lms", help="where to write (_build/lms)")
    parser.add_argument("--publish", type=Path, help="also copy both files here (the site: _build/html/lms)")
    parser.add_argument("--url", help="the published book's address (default: from _config.yml)")
    args = parser.parse_args(argv)
    try:
        written = export(args.book, args.out, args.url)
    except QuizFormatError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    pages = read_quizzes(args.book)
    counts = ", ".join(f"{p.name} {len(p.questions)}" for p in pages)
    print(f"wrote {', '.join(str(p) for p in written.values())} ({counts} questions)")
    if args.publish:
        args.publish.mkdir(parents=True, exist_ok=True)
        for path in written.values():
            shutil.copyfile(path, args.publish / path.name)
        print(f"copied both into {args.publish}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
