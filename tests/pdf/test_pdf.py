"""The student and instructor PDFs (`make pdf`), read with poppler-utils.

The expected content is derived from the sources and the built HTML, not from prose:
chapter titles are the first heading of each page of _toc.yml, figures are the image
outputs of the cells, answers and solutions are the .quiz-answer and sphinx-exercise
solution boxes of the site.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

from book_build import pdf_toc
import pytest
from bs4 import BeautifulSoup
from tests.book_files import ROOT, html_page, page_title
from transformer_classroom import book
from transformer_classroom import quiz_blocks

pytestmark = pytest.mark.pdf

BUILD = ROOT / "_build"
EDITIONS = ("student", "instructor")


def pdf_path(edition: str) -> Path:
    return BUILD / book.published()[f"pdf_{edition}"]


def latex_log(edition: str) -> Path:
    return BUILD / f"pdf-{edition}" / "_build" / "latex" / "book.log"


@pytest.fixture(scope="module", autouse=True)
def _built():
    if shutil.which("pdftotext") is None:
        pytest.fail("poppler-utils is missing: run `make system-deps`", pytrace=False)
    missing = [str(pdf_path(e).relative_to(ROOT)) for e in EDITIONS if not pdf_path(e).exists()]
    if missing:
        pytest.fail(f"{missing} missing: run `make pdf` first (`make test` does it for you)", pytrace=False)


def norm(text: str) -> str:
    """Letters and digits only, lower case: robust to line breaks, hyphenation, ligatures."""
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", text).lower())


def norm_case(text: str) -> str:
    """Like norm, keeping case: tells the heading "Solution to Exercise 1" from prose
    that mentions "the solution to Exercise 1"."""
    return re.sub(r"[^A-Za-z0-9]", "", unicodedata.normalize("NFKC", text))


def without_page_breaks(text: str) -> str:
    """Drop what a page break puts inside a code block (footer, header, the
    continuation notes), so that a line wrapped across pages reads as one."""
    return re.sub(r"\(continues on next page\).*?\(continued from previous page\)", " ", text, flags=re.DOTALL)


_TEXT: dict[str, str] = {}


def pdf_text(edition: str) -> str:
    if edition not in _TEXT:
        _TEXT[edition] = subprocess.run(
            ["pdftotext", "-layout", str(pdf_path(edition)), "-"], check=True, capture_output=True, text=True
        ).stdout
    return _TEXT[edition]


_BODY: dict[str, str] = {}


def pdf_body_text(edition: str) -> str:
    """The text of every page without its running header and footer, so that a
    paragraph that runs across a page break reads as one. The body of an A4 page of
    this book lies between y = 97 pt and y = 752 pt (header at 70-95, footer at 762-773,
    measured with `pdftotext -bbox`); _config.yml's geometry fixes these."""
    if edition not in _BODY:
        _BODY[edition] = subprocess.run(
            ["pdftotext", "-layout", "-r", "72", "-x", "0", "-y", "97", "-W", "595", "-H", "655", str(pdf_path(edition)), "-"],
            check=True, capture_output=True, text=True,
        ).stdout
    return _BODY[edition]


def pages(edition: str) -> int:
    info = subprocess.run(["pdfinfo", str(pdf_path(edition))], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def edition_files(toc_files: list[str], edition: str) -> list[str]:
    return [f for f in toc_files if edition == "instructor" or not pdf_toc.is_instructor({"file": f})]


def snippet(el) -> str:
    """A normalised piece of an answer's own prose: its longest plain text run.

    Maths, code, links and the title are left out, and so is everything around them:
    the PDF renders maths and code differently, so text glued across them would not
    match, and a link's text is often a page title that appears elsewhere too.
    """
    el = BeautifulSoup(str(el), "html.parser")
    for drop in el.select(".admonition-title, .math, mjx-container, .cell, pre, code, script, a"):
        drop.replace_with("\x00")
    runs = [norm(run) for run in el.get_text().split("\x00")]
    best = max(runs, key=len, default="")
    return best[:60] if len(best) >= 12 else ""


def hidden_boxes(toc_files):
    """(page, kind, normalised text) of every quiz answer and solution on the site."""
    boxes = []
    for doc in toc_files:
        html = html_page(doc)
        if not html.exists():
            pytest.fail(f"{html} missing: run `make book`", pytrace=False)
        art = BeautifulSoup(html.read_text(), "html.parser").select_one("article")
        for el in art.select(".quiz-answer"):
            boxes.append((doc, "quiz answer", snippet(el)))
        for el in art.select("div.solution"):
            title = el.select_one(".admonition-title").get_text(" ", strip=True)
            boxes.append((doc, "solution title", norm_case(title)))
            if snippet(el):
                boxes.append((doc, "solution", snippet(el)))
    return boxes


@pytest.mark.parametrize("edition", EDITIONS)
def test_page_count_is_sane(edition, toc_files):
    n, chapters = pages(edition), len(edition_files(toc_files, edition))
    assert chapters <= n <= 40 * chapters, f"{edition}: {n} pages for {chapters} chapters"


def test_student_edition_is_shorter():
    assert pages("student") < pages("instructor")


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_chapter_title_is_present(edition, toc_files):
    text = norm(pdf_text(edition))
    missing = [page_title(f) for f in edition_files(toc_files, edition) if norm(page_title(f)) not in text]
    assert not missing, f"{edition} PDF lacks the chapters {missing}"


def test_student_edition_has_no_instructor_pages(toc_files):
    text = norm(pdf_text("student"))
    instructor = [f for f in toc_files if pdf_toc.is_instructor({"file": f})]
    assert instructor, "no page of the instructor edition in _toc.yml"
    leaked = [page_title(f) for f in instructor if norm(page_title(f)) in text]
    assert not leaked, f"the student PDF contains instructor pages: {leaked}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_title_page_names_the_edition(edition):
    first = subprocess.run(
        ["pdftotext", "-l", "1", str(pdf_path(edition)), "-"], check=True, capture_output=True, text=True
    ).stdout
    assert f"edition for {edition}s" in " ".join(first.lower().split()), first


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_pdf_names_its_title_author_and_cover(edition):
    """A file list shows the PDF's Title and Author (from _config.yml); the cover's page
    label is not the "1" of the text's first page."""
    info = subprocess.run(["pdfinfo", str(pdf_path(edition))], check=True, capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    assert fields.get("Title", "").strip() == f"{book.title()} (for {edition}s)", info
    assert fields.get("Author", "").strip() == book.author(), info
    from pypdf import PdfReader

    labels = PdfReader(str(pdf_path(edition))).page_labels
    assert labels[0] == "Cover" and labels.count("1") == 1, labels[:8]


@pytest.mark.parametrize("edition", EDITIONS)
def test_table_of_contents_has_page_numbers(edition, toc_files):
    text = pdf_text(edition)
    start = text.lower().find("contents")
    assert start >= 0, "no table of contents"
    toc = text[start : start + 30000]  # the contents run over several pages
    numbered = [f for f in edition_files(toc_files, edition) if re.search(re.escape(page_title(f)[:25]) + r".*?\s(\d+)\s*$", toc, re.MULTILINE | re.IGNORECASE)]
    assert len(numbered) >= len(edition_files(toc_files, edition)) // 2, f"table of contents without page numbers:\n{toc[:2000]}"


def test_answers_and_solutions_only_in_the_instructor_edition(toc_files):
    boxes = hidden_boxes(toc_files)
    text = {
        (edition, case): (norm_case if case else norm)(pdf_body_text(edition))
        for edition in EDITIONS
        for case in (True, False)
    }
    leaked = [b for b in boxes if b[2] and b[2] in text["student", b[1] == "solution title"]]
    missing = [b for b in boxes if b[2] and b[2] not in text["instructor", b[1] == "solution title"]]
    assert not leaked, f"the student PDF contains: {leaked}"
    assert not missing, f"the instructor PDF lacks: {missing}"


def test_bug_hunt_messages_are_printed_in_neither_edition():
    """A cell output tagged hide-output (the bug hunt's check messages, which name the fix)
    is left out of LaTeX by sphinx-jupyterbook-latex: neither PDF prints it, so both keep
    the same pages, and the page says so in print."""
    art = BeautifulSoup(html_page("book/exercises").read_text(), "html.parser").select_one("article")
    outputs = art.select(".tag_hide-output .cell_output")
    messages = [norm(el.get_text(" ").split("CheckFailed:")[-1])[:60] for el in outputs]
    assert len(messages) >= 6 and all(messages)
    for edition in EDITIONS:
        text = norm(pdf_body_text(edition))
        assert not [m for m in messages if m in text], f"the {edition} PDF prints a bug-hunt check's message"
        assert norm("names the fix, so it is not printed here") in text


def _figures(toc_files, edition) -> int:
    count = 0
    for doc in edition_files(toc_files, edition):
        art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
        if edition == "student":
            for hidden in art.select(".quiz-answer, div.solution, .instructor-only, .tag_instructor-only"):
                hidden.decompose()
        # the PDFs print the light variant; an illustrated walk's frames as one image (its grid)
        count += len(art.select(".cell_output img:not(.only-dark)")) - len(art.select(".tl-walk img:not(.only-dark)"))
        count += len(art.select(".tl-walk"))
    return count


@pytest.mark.parametrize("edition", EDITIONS)
def test_figures_are_embedded(edition, toc_files):
    listing = subprocess.run(
        ["pdfimages", "-list", str(pdf_path(edition))], check=True, capture_output=True, text=True
    ).stdout.splitlines()[2:]
    images = [line for line in listing if line.split()[2] == "image"]  # not the soft masks
    expected = _figures(toc_files, edition)
    assert len(images) >= expected, f"{edition}: {len(images)} images in the PDF, {expected} figure outputs on the site"


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_missing_glyphs(edition):
    log = latex_log(edition)
    assert log.exists(), f"{log} missing: run `make pdf`"
    missing = sorted({line.strip() for line in log.read_text(errors="replace").splitlines() if "Missing character" in line})
    assert not missing, f"{edition}: glyphs the fonts lack (they print as nothing):\n" + "\n".join(missing[:20])


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_unresolved_reference(edition):
    """LaTeX prints "??" for a reference it cannot resolve: a {numref} whose number the web
    knows but the PDF lost ("Exercise ??" in the run sheet is what an instructor would print)."""
    lines = [line.strip() for line in pdf_text(edition).splitlines() if "??" in line]
    assert not lines, f"{edition}: {len(lines)} lines print an unresolved reference:\n" + "\n".join(lines[:10])


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_link_has_its_target(edition):
    """A link whose label LaTeX never saw clicks to nothing (the text still prints)."""
    log = latex_log(edition).read_text(errors="replace").replace("\n", "")  # TeX wraps its log at 79
    missing = sorted(set(re.findall(r"Hyper reference `([^']*)' on page \d+ undefined", log)))
    assert not missing, f"{edition}: links to labels the PDF lacks: {missing}"


def _long_code_lines(toc_files, edition, width=80) -> list[tuple[str, str]]:
    lines = []
    for doc in edition_files(toc_files, edition):
        art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
        if edition == "student":
            for hidden in art.select(".quiz-answer, div.solution, .instructor-only, .tag_instructor-only"):
                hidden.decompose()
        for hidden in art.select(".tag_hide-input .cell_input, .tag_remove-input .cell_input"):
            hidden.decompose()  # not printed: jupyterbook-latex leaves hidden inputs out of the PDF
        for pre in art.select(".cell_input pre, div[class^='highlight-'] pre"):
            lines += [(doc, line) for line in pre.get_text().splitlines() if len(line) > width and norm(line)]
    return lines


@pytest.mark.parametrize("edition", EDITIONS)
def test_long_code_lines_wrap_rather_than_clip(edition, toc_files):
    # Sphinx's LaTeX clips a code line at the margin unless it may wrap (sphinxsetup
    # verbatimwrapslines/verbatimforcewraps in _config.yml); a clipped line loses its end,
    # and LaTeX does not warn about it. So: every long code line must be there in full.
    text = norm(without_page_breaks(pdf_body_text(edition)))
    clipped = [f"{doc}: {line.strip()[:100]}" for doc, line in _long_code_lines(toc_files, edition) if norm(line) not in text]
    assert not clipped, f"{edition}: code lines cut off at the margin:\n" + "\n".join(clipped[:10])


def test_site_links_to_both_pdfs():
    """The intro page links to ../pdf/<course>-<edition>.pdf and `make site` put the files there."""
    page = html_page("book/intro")
    hrefs = [a["href"] for a in BeautifulSoup(page.read_text(), "html.parser").select("a[href$='.pdf']")]
    for edition in EDITIONS:
        links = [h for h in hrefs if h.endswith(book.published()[f"pdf_{edition}"])]
        assert links, f"no link to the {edition} PDF on the intro page: {hrefs}"
        for href in links:
            target = (page.parent / href).resolve()
            assert target.is_file(), f"{href} does not resolve ({target}): run `make site`"


# --- print defects (issue 16): layout read from the LaTeX logs and the PDFs ----------------

OVERFULL_MAX_PT = 5.0
SCREENSHOTS = BUILD / "screenshots" / "pdf"


def latex_file(edition: str, suffix: str) -> Path:
    return BUILD / f"pdf-{edition}" / "_build" / "latex" / f"book{suffix}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_overfull_box_wider_than_5pt(edition):
    """Nothing sticks out into the margin: code, tables and formulas fit the line."""
    log = latex_log(edition).read_text(errors="replace")
    boxes = [(float(m.group(1)), m.group(0)) for m in re.finditer(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)[^\n]*", log)]
    wide = [text for pt, text in boxes if pt > OVERFULL_MAX_PT]
    assert not wide, f"{edition}: {len(wide)} overfull boxes wider than {OVERFULL_MAX_PT} pt:\n" + "\n".join(wide[:15])


@pytest.mark.parametrize("edition", EDITIONS)
def test_running_header_fits_one_line(edition):
    """fancyhdr warns when the header is taller than \\headheight (it wrapped onto two lines)."""
    log = latex_log(edition).read_text(errors="replace")
    warnings = re.findall(r"Package fancyhdr Warning: \\headheight is too small", log)
    assert not warnings, f"{edition}: {len(warnings)} pages whose running header does not fit one line"


def _toc_entries(edition: str) -> list[tuple[str, str, str]]:
    """(level, title, page) of every line of LaTeX's table of contents (book.toc)."""
    toc = latex_file(edition, ".toc").read_text(errors="replace")
    entries = []
    for m in re.finditer(r"\\contentsline \{(\w+)\}\{(.*)\}\{([^{}]*)\}\{[^{}]*\}%?$", toc, re.MULTILINE):
        title = re.sub(r"\\numberline \{([^{}]*)\}", r"\1 ", m.group(2))
        title = re.sub(r"\\[a-zA-Z@]+\s*|[{}]", "", title).strip()
        entries.append((m.group(1), title, m.group(3)))
    return entries


def _shared_part(entries):
    """The entries before the instructor-only part ("For instructors"); not the index,
    which closes each edition."""
    entries = [e for e in entries if e[1] != "Index"]
    for i, (level, title, _) in enumerate(entries):
        if level == "part" and "instructor" in title.lower():
            return entries[:i]
    return entries


def test_both_editions_share_page_numbers():
    """Up to the instructor part, every part, chapter and section starts on the same page
    in both editions: "turn to page 42" works in a class that mixes them."""
    student, instructor = _toc_entries("student"), _toc_entries("instructor")
    assert student and instructor
    shared_s, shared_i = _shared_part(student), _shared_part(instructor)
    assert len(shared_i) < len(instructor), "no instructor part at the end of the instructor edition"
    assert not any("instructor" in t.lower() for _, t, _ in student), "instructor entries in the student edition"
    diff = [(s, i) for s, i in zip(shared_s, shared_i) if s != i]
    assert len(shared_s) == len(shared_i) and not diff, f"the editions differ: {diff[:5]}"


def _figure_numbers(edition: str) -> dict[str, str]:
    aux = latex_file(edition, ".aux").read_text(errors="replace")
    return dict(re.findall(r"\\newlabel\{([^{}]*fig-[^{}]*)\}\{\{([^{}]*)\}", aux))


def test_both_editions_share_figure_numbers():
    student, instructor = _figure_numbers("student"), _figure_numbers("instructor")
    assert student, "no labelled figure in the student edition"
    differ = {k: (v, instructor.get(k)) for k, v in student.items() if instructor.get(k) != v}
    assert not differ, f"figure numbers differ (student, instructor): {differ}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_bibliography_once_in_the_contents(edition):
    titles = [t for _, t, _ in _toc_entries(edition)]
    assert sum(t.endswith("Bibliography") for t in titles) == 1, titles


@pytest.mark.parametrize("edition", EDITIONS)
def test_bibliography_labels_are_author_year(edition):
    """The list uses the labels the text cites ("Vaswani et al., 2017"), not "[VSP+17]"."""
    tex = latex_file(edition, ".tex").read_text(errors="replace")
    labels = re.findall(r"\\bibitem\[([^\]]*)\]", tex)
    assert labels, "no bibliography entries"
    bad = [label for label in labels if not re.search(r"\b(1[89]|20)\d\d[a-z]?$", label)]
    assert not bad, f"{edition}: labels without a year: {bad}"
    assert "Vaswani et al., 2017" in labels


@pytest.mark.parametrize("edition", EDITIONS)
def test_title_page_has_version_repository_and_licence(edition):
    first = subprocess.run(["pdftotext", "-l", "1", str(pdf_path(edition)), "-"], check=True, capture_output=True, text=True).stdout
    text = " ".join(first.split())
    assert re.search(r"Version \d+\.\d+", text), text
    values = book.book_values(ROOT)
    assert values["repo_url"].removeprefix("https://") in text, text
    assert f"Licence: {values['licence']}" in text, text
    assert norm(values["pages_url"]) in norm(pdf_text(edition)), "the front matter names the web edition's address"


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_nearly_empty_page_before_the_first_part(edition):
    """The pages between the contents and part I carry text, not three lines."""
    text = pdf_text(edition)
    pages_text = text.split("\f")
    start = next(i for i, p in enumerate(pages_text) if "About this printed edition" in p)
    assert len(norm(pages_text[start])) > 1200, pages_text[start]


def test_shape_comments_are_dark_in_print():
    """Comments (the shape comments) print at most 35 % grey-light: luminance <= 0.35."""
    sty = latex_file("student", "").parent / "sphinxhighlight.sty"
    text = sty.read_text()
    m = re.search(r"PYG@tok@c\}\{.*?\\textcolor\[rgb\]\{([\d.]+),([\d.]+),([\d.]+)\}", text)
    assert m, "no comment style in sphinxhighlight.sty"
    r, g, b = map(float, m.groups())
    assert 0.2126 * r + 0.7152 * g + 0.0722 * b <= 0.35, (r, g, b)


def _printed_code_lines(toc_files, edition):
    return [line for _, line in _long_code_lines(toc_files, edition, width=84)]


@pytest.mark.parametrize("edition", EDITIONS)
def test_code_wraps_only_lines_wider_than_the_page(edition, toc_files):
    """A code line of up to 84 characters prints on one line: the continuation mark
    (a hooked arrow) appears no more often than the lines too long for the page."""
    marks = pdf_body_text(edition).count("\u21aa")
    long_lines = _printed_code_lines(toc_files, edition)
    assert marks <= 2 * len(long_lines), f"{edition}: {marks} wrapped code lines, {len(long_lines)} lines over 84 characters"


def test_student_quiz_pages_leave_space_to_write(toc_files):
    boxes = [b for b in hidden_boxes(toc_files) if b[1] == "quiz answer"]
    text = pdf_body_text("student")
    assert text.count("Your answer") >= len(boxes), f"{text.count('Your answer')} answer spaces for {len(boxes)} questions"


STUDENT_WORDING = [
    r"open the \W*answer\W* box",
    r"solutions? (?:is|are) (?:hidden|folded)",
    r"compare (?:it |your \w+ )?with the answers?",
    r"in the folded solution",
]


def test_student_edition_does_not_promise_answers():
    text = " ".join(pdf_body_text("student").split()).lower()
    found = [m.group(0) for pattern in STUDENT_WORDING for m in re.finditer(pattern, text)]
    assert not found, f"the student edition refers to answers it does not print: {found}"


def test_render_pages_for_a_person_to_look_at():
    """A few pages as PNG in _build/screenshots/pdf/ (one in greyscale): look at them."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    text = pdf_text("instructor").split("\f")
    wanted = {"title": 1}
    question = re.search(r"^### (.+)$", quiz_blocks.page_text(ROOT / "book", "quiz_concepts"), re.MULTILINE).group(1)
    for name, needle in (("foundations", "Self-attention"), ("quiz", question), ("pacing", "The full lesson (2.5 hours)"), ("answers", "Solution to Exercise ")):
        hits = [i + 1 for i, p in enumerate(text) if needle in p and i > 5]
        # a page that is not found is a failure, not a screenshot quietly left out
        assert hits, f"no page of the instructor edition after the contents shows {needle!r} (for {name})"
        wanted[name] = hits[-1] if name in ("pacing", "answers") else hits[0]
    for name, page in wanted.items():
        for gray in (False, True):
            out = SCREENSHOTS / f"instructor-{name}-p{page}{'-gray' if gray else ''}"
            args = ["pdftoppm", "-png", "-r", "60", "-f", str(page), "-l", str(page), "-singlefile"]
            subprocess.run(args + (["-gray"] if gray else []) + [str(pdf_path("instructor")), str(out)], check=True)
            assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize("edition", EDITIONS)
def test_index_points_where_terms_are_taught(edition):
    """The index has entries in the chapters, not only on the glossary's pages: each glossary
    term is indexed at the sections whose titles name it (code/build/book_build/ext/glossary_index.py)."""
    idx = latex_file(edition, ".idx").read_text(errors="replace")
    pages = [int(p) for p in re.findall(r"\\indexentry\{.*\}\{(\d+)\}\s*$", idx, re.MULTILINE)]
    glossary = next(int(p) for level, t, p in _toc_entries(edition) if level == "chapter" and t.endswith("Glossary"))
    assert sum(p < glossary for p in pages) >= 10, f"{edition}: {sum(p < glossary for p in pages)} index entries before the glossary"


# --- one numbering (issue 20): the web and both PDFs, label by label --------------------------

# The LaTeX label Sphinx writes for an element of the page `doc` whose HTML id is `id`:
# "book/foundations:fig-x" for figures, tables and listings, "equation:book/foundations:eq-x"
# for a display equation (HTML id "equation-eq-x"), "exercise:ex-x" for an exercise
# (sphinx-exercise's own).
def _latex_label(doc: str, html_id: str, kind: str) -> str:
    if kind == "equation":
        return f"equation:{doc}:{html_id.removeprefix('equation-')}"
    if kind == "exercise":
        return f"exercise:{html_id}"
    return f"{doc}:{html_id}"


HIDDEN_IN_PRINT = ".quiz-answer, div.solution, .instructor-only, .tag_instructor-only"


def web_numbers(toc_files, edition: str) -> dict[str, tuple[str, str, str]]:
    """LaTeX label -> (kind, number as printed on the web, page) for every numbered figure,
    table, listing, exercise and equation of the edition's pages. Elements of boxes that the
    print editions move to the answers appendix, or drop, are left out: they are not where
    the web has them (tests below check that there are none)."""
    found = {}
    for doc in edition_files(toc_files, edition):
        art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
        for hidden in art.select(HIDDEN_IN_PRINT):
            hidden.decompose()
        for span in art.select("span.caption-number"):
            holder = span.find_parent(lambda t: t.has_attr("id") and t.name in ("figure", "table", "div"))
            if holder is None:
                continue
            text = " ".join(span.get_text().split())  # "Fig. 2.3", "Table 1.1", "Exercise 5.1"
            kind = text.split()[0].rstrip(".").lower()
            found[_latex_label(doc, holder["id"], kind)] = (kind, text, doc)
        for eqno in art.select("span.eqno"):
            math = eqno.find_parent(lambda t: t.has_attr("id"))
            number = eqno.find(string=True, recursive=False) or eqno.get_text()
            found[_latex_label(doc, math["id"], "equation")] = ("equation", number.strip(), doc)
    return found


def _aux_labels(edition: str) -> dict[str, tuple[str, str]]:
    """LaTeX label -> (number, hyperref anchor), from book.aux."""
    aux = latex_file(edition, ".aux").read_text(errors="replace")
    out = {}
    for line in aux.splitlines():
        m = re.match(r"\\newlabel\{(.*?)\}\{", line)
        if not m:
            continue
        groups, depth, start = [], 0, None  # the five brace groups of hyperref's label
        for i, ch in enumerate(line[m.end():]):
            if ch == "{":
                depth += 1
                if depth == 1:
                    start = i + 1
            elif ch == "}":
                if depth == 1:
                    groups.append(line[m.end() + start : m.end() + i])
                depth -= 1
                if depth < 0:
                    break
        if len(groups) >= 4:
            out[m.group(1)] = (groups[0], groups[3])
    return out


_READERS: dict = {}


def pdf_reader(edition: str):
    from pypdf import PdfReader

    if edition not in _READERS:
        _READERS[edition] = PdfReader(str(pdf_path(edition)))
    return _READERS[edition]


_PAGE_TEXT: dict = {}


def page_text(edition: str, index: int) -> str:
    """pdftotext of one page (0-based index), whitespace collapsed."""
    key = (edition, index)
    if key not in _PAGE_TEXT:
        pages_ = pdf_text(edition).split("\f")
        for i, text in enumerate(pages_):
            _PAGE_TEXT[(edition, i)] = " ".join(text.split())
    return _PAGE_TEXT.get(key, "")


def _bare(number: str) -> str:
    """"2.3" of "Fig. 2.3", "(2.3)" or "Exercise 2.3"."""
    return re.search(r"\d+(?:\.\d+)*", number).group(0)


@pytest.mark.parametrize("edition", EDITIONS)
def test_numbers_are_the_web_numbers(edition, toc_files):
    """Every numbered figure, table, exercise and equation prints, on its page of the PDF,
    the number it has on the web: the page is the one its LaTeX label's anchor points at
    (book.aux and the PDF's named destinations), the number is read from that page's text."""
    web = web_numbers(toc_files, edition)
    kinds = {k for k, _, _ in web.values()}
    assert {"fig", "equation", "exercise"} <= kinds, f"{edition}: numbered kinds on the web: {kinds}"
    assert all(re.fullmatch(r"(?:[A-Za-z]+\.? )?\(?\d+\.\d+\)?", n) for _, n, _ in web.values()), (
        "the web numbers are not by chapter: " + str(sorted({n for _, n, _ in web.values()})[:10])
    )
    aux = _aux_labels(edition)
    reader = pdf_reader(edition)
    dests = reader.named_destinations
    problems = []
    for label, (kind, number, doc) in sorted(web.items()):
        if label not in aux:
            problems.append(f"{label} ({number} on the web): no such label in the PDF")
            continue
        printed, anchor = aux[label]
        if kind in ("fig", "table", "listing", "equation") and printed != _bare(number):
            problems.append(f"{label}: {number} on the web, {printed} in LaTeX")
        if anchor not in dests:
            problems.append(f"{label}: its anchor {anchor} is not a destination of the PDF")
            continue
        index = reader.get_destination_page_number(dests[anchor])
        # the anchor's page and the next two: a float's caption, or an exercise box after a
        # page of figures, may follow its anchor a page or two later
        nearby = " ".join(page_text(edition, i) for i in (index, index + 1, index + 2))
        if not re.search(re.escape(number) + r"(?![.\d])", nearby):  # "Fig. 2.3", "(2.1)", "Exercise 5.1", not "5.1.1"
            problems.append(f"{label}: {number!r} (web) not printed on PDF page {index + 1}")
    assert not problems, f"{edition}: {len(problems)} of {len(web)} numbers differ:\n" + "\n".join(problems[:20])


@pytest.mark.parametrize("edition", EDITIONS)
def test_exercise_numbers_in_print_are_the_web_numbers(edition, toc_files):
    """The exercise headings of the PDF ("Exercise 5.1 (...)") are those of the web, in order."""
    web = [n for k, n, _ in sorted(web_numbers(toc_files, edition).values(), key=lambda v: v[1]) if k == "exercise"]
    printed = sorted(set(re.findall(r"\bExercise \d+(?:\.\d+)+", pdf_body_text(edition))))
    assert web and sorted(set(web)) == printed, f"{edition}: web {sorted(set(web))}, PDF {printed}"


def test_chapter_numbers_are_the_web_numbers(toc_files):
    """Each chapter of both PDFs has the number the web gives it (or none where the web has
    none): the instructor part comes last on the web as in print, so leaving it out of the
    student edition shifts nothing."""
    problems = []
    for edition in EDITIONS:
        chapters = [(t, p) for level, t, p in _toc_entries(edition) if level == "chapter"]
        for doc in edition_files(toc_files, edition):
            html = BeautifulSoup(html_page(doc).read_text(), "html.parser")
            h1 = html.select_one("article h1")
            web_no = (h1.select_one(".section-number").get_text().strip().rstrip(".") if h1 and h1.select_one(".section-number") else "")
            title = norm(page_title(doc))
            match = [t for t, _ in chapters if norm(t).endswith(title)]
            if not match:
                problems.append(f"{edition}: no chapter {page_title(doc)!r}")
                continue
            pdf_no = re.match(r"^(\d+)\s", match[0])
            if (pdf_no.group(1) if pdf_no else "") != web_no:
                problems.append(f"{edition}: {doc} is chapter {web_no or '(none)'} on the web, {match[0]!r} in print")
    assert not problems, "\n".join(problems)


def test_numbered_figures_in_answers_keep_their_numbers(toc_files):
    """A numbered figure inside a solution (numbered on the web where the solution is) is
    printed in the instructor edition's answers with its web number, and not at all in the
    student edition; the figures after it keep their numbers (test_numbers_are_the_web_numbers)."""
    inside = []
    for doc in toc_files:
        art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
        for box in art.select(HIDDEN_IN_PRINT):
            for fig in box.select("figure"):
                number = fig.select_one("span.caption-number")
                if number is not None:
                    inside.append((doc, " ".join(number.get_text().split()), norm(fig.select_one(".caption-text").get_text())[:40]))
    instructor, student = norm(pdf_body_text("instructor")), " ".join(pdf_body_text("student").split())
    for doc, number, caption in inside:
        assert norm(number) + caption in instructor, f"{doc}: {number} ({caption}) not printed in the instructor's answers"
        assert not re.search(re.escape(number) + r"(?![.\d])", student), f"{doc}: {number} printed in the student edition"


# --- the printed book (issue 20) -------------------------------------------------------------


def _links(edition: str):
    """(page number, destination name) of every internal named link of the PDF."""
    reader = pdf_reader(edition)
    out = []
    for i, page in enumerate(reader.pages):
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            dest = a.get("/Dest")
            action = a.get("/A")
            if action is not None:
                action = action.get_object()
                if action.get("/S") != "/GoTo":
                    continue  # a web address
                dest = action.get("/D")
            if dest is None or isinstance(dest, list) or hasattr(dest, "__len__") and not isinstance(dest, (str, bytes)):
                continue  # an explicit destination (page and position): cannot dangle
            out.append((i + 1, dest.decode("latin-1") if isinstance(dest, bytes) else str(dest)))
    return out


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_internal_link_has_a_destination(edition):
    """Every internal link of the PDF (contents, cross-references, citations, index) leads
    somewhere: its named destination exists. The citations are among them."""
    links = _links(edition)
    names = set(pdf_reader(edition).named_destinations)
    citations = [d for _, d in links if d.startswith("cite.")]
    assert len(links) > 100 and citations, f"{edition}: {len(links)} internal links, {len(citations)} citation links"
    dead = sorted({(p, d) for p, d in links if d not in names})
    assert not dead, f"{edition}: {len(dead)} links to nowhere, e.g. {dead[:8]}"


TEX_SOURCE = re.compile(
    r"\\(?:sqrt|frac|mathrm|mathbf|mathbb|mathcal|text|operatorname|top|cdot|cdots|ldots|left|right|sum|prod|"
    r"begin|end|alpha|beta|sigma|ell|max|min|exp|log|times|quad|qquad|infty|approx|leq|geq|neq|in|mid)\b|\$[^$\s][^$]*\\[^$]*\$"
)


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_tex_source_in_print(edition):
    """No formula is printed as its TeX source (a link text or a heading made from a title
    with maths printed "\\sqrt{d_k}")."""
    text = pdf_body_text(edition)
    found = sorted({text[max(0, m.start() - 30) : m.end() + 20].replace("\n", " ") for m in TEX_SOURCE.finditer(text)})
    assert not found, f"{edition}: TeX source in the text: {found[:10]}"


def _index_headwords(edition: str) -> list[str]:
    """The top-level entries of the printed index (makeindex's book.ind), as text."""
    ind = latex_file(edition, ".ind").read_text(errors="replace")
    words = []
    for m in re.finditer(r"^\s*\\item\s+(.*?)(?:,\s*\\(?:hyperpage|spxpagem|sphinxstyle)|\s*$)", ind, re.MULTILINE):
        text = m.group(1).replace(r"\sphinxhyphen{}", "-").replace(r"\sphinxhyphen {}", "-")
        text = re.sub(r"\\[a-zA-Z@]+\s*|[{}]", "", text)
        text = re.split(r",\s*\d", text)[0].strip().rstrip(",")  # the headword, not its pages
        if text:
            words.append(text)
    return words


@pytest.mark.parametrize("edition", EDITIONS)
def test_one_index_entry_per_term(edition):
    words = _index_headwords(edition)
    assert len(words) > 20, words
    seen: dict[str, int] = {}
    for w in words:
        seen[w.lower()] = seen.get(w.lower(), 0) + 1
    twice = sorted(w for w, n in seen.items() if n > 1)
    assert not twice, f"{edition}: index headwords printed more than once: {twice}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_ranges_print_with_a_dash(edition):
    """Page and number ranges print "37–40", not the TeX source "37--40"."""
    text = pdf_body_text(edition)
    found = sorted({text[max(0, m.start() - 40) : m.end() + 10].replace("\n", " ") for m in re.finditer(r"\d--\d", text)})
    assert not found, f"{edition}: {found[:10]}"


BODY_TOP, BODY_BOTTOM = 97.0, 752.0  # the body of an A4 page, in pt (pdf_body_text)


_LINES: dict = {}


def page_lines(edition: str) -> list[list[tuple[float, float, str]]]:
    """For each page, its body's text lines as (top, bottom, text), top to bottom, from
    `pdftotext -bbox-layout`."""
    if edition not in _LINES:
        xml = subprocess.run(["pdftotext", "-bbox-layout", str(pdf_path(edition)), "-"], check=True, capture_output=True, text=True).stdout
        result = []
        for page in re.findall(r"<page .*?</page>", xml, re.DOTALL):
            lines = []
            for m in re.finditer(r'<line xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">(.*?)</line>', page, re.DOTALL):
                top, bottom = float(m.group(1)), float(m.group(2))
                words = re.findall(r"<word [^>]*>(.*?)</word>", m.group(3))
                if top >= BODY_TOP and bottom <= BODY_BOTTOM:
                    lines.append((top, bottom, " ".join(words)))
            result.append(sorted(lines))
        _LINES[edition] = result
    return _LINES[edition]


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_heading_alone_at_the_foot_of_a_page(edition):
    """A numbered section heading ("2.2 Self-attention") is followed on its page by at least
    two lines of what it heads: never the last thing on a page."""
    headings = {norm(t) for level, t, _ in _toc_entries(edition) if level in ("section", "subsection") and re.match(r"\d+\.\d+", t)}
    assert len(headings) > 30, headings
    alone = []
    first_chapter = min(_chapter_start_pages(edition))
    for i, lines in enumerate(page_lines(edition)):
        if i < first_chapter:
            continue  # the table of contents lists the headings, one a line
        for j, (_, _, text) in enumerate(lines):
            if norm(text) in headings and len(lines) - j - 1 < 2:
                alone.append(f"page {i + 1}: {text!r} with {len(lines) - j - 1} line(s) after it")
    assert not alone, f"{edition}: headings at the foot of a page:\n" + "\n".join(alone)


def _chapter_start_pages(edition: str) -> set[int]:
    """0-based indices of the pages on which a part or a chapter starts (their printed page
    numbers in book.toc, mapped to pages with the PDF's page labels)."""
    labels = pdf_reader(edition).page_labels
    printed = {p for level, _, p in _toc_entries(edition) if level in ("part", "chapter")}
    return {i for i, label in enumerate(labels) if label in printed}


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_page_half_empty_inside_a_chapter(edition, tmp_path):
    """Inside a chapter no page ends before half of its body is filled: a figure that does not
    fit floats to the next page and the text goes on (a page before a new chapter or part
    may end anywhere). A page of a figure alone (its caption the page's only text) is at
    least 75 % full: a smaller figure shares its page with text (tlprint.sty's
    floatpagefraction). What is on a page is read from the page itself, rendered."""
    from PIL import Image

    subprocess.run(["pdftoppm", "-gray", "-r", "18", str(pdf_path(edition)), str(tmp_path / "p")], check=True)
    shots = sorted(tmp_path.glob("p-*.pgm"), key=lambda f: int(re.search(r"-(\d+)\.pgm$", f.name).group(1)))
    starts = _chapter_start_pages(edition)
    assert len(starts) > 10, starts
    half_empty = []
    for i, shot in enumerate(shots[:-1]):
        if i + 1 in starts or i < min(starts):
            continue  # the last page of a chapter, or the front matter
        with Image.open(shot) as im:
            w, h = im.size
            top, bottom = int(h * BODY_TOP / 842), int(h * BODY_BOTTOM / 842)
            px = im.load()
            inked = [y for y in range(top, bottom) if any(px[x, y] < 200 for x in range(w))]
        filled = (max(inked) - top) / (bottom - top) if inked else 0.0
        lines = page_lines(edition)[i]
        figure_only = bool(lines) and re.match(r"Fig\. \d+\.\d+", lines[0][2]) and len(lines) <= 6
        if figure_only:  # LaTeX centres a page of floats: what counts is the figure's height
            filled = (max(inked) - min(inked)) / (bottom - top)
        if filled < (0.75 if figure_only else 0.5):
            what = "a page of one figure" if figure_only else "body"
            half_empty.append(f"page {i + 1}: {what} filled to {filled:.0%}")
    assert not half_empty, f"{edition}: pages left half empty inside a chapter:\n" + "\n".join(half_empty)


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_link_in_the_running_header_or_footer(edition):
    """No link's clickable area covers the running header or footer: a link broken across
    two pages (a reference at the foot of a page) keeps to the text it is made of."""
    reader = pdf_reader(edition)
    height = float(reader.pages[0].mediabox.height)
    found = []
    for i, page in enumerate(reader.pages):
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            _, y0, _, y1 = (float(v) for v in a["/Rect"])
            top, bottom = height - y1, height - y0  # from the top of the page, as BODY_TOP
            if bottom < BODY_TOP - 2 or top > BODY_BOTTOM + 2:
                found.append(f"page {i + 1}: a link from {top:.0f} to {bottom:.0f} pt")
    assert not found, f"{edition}: links in the header or footer:\n" + "\n".join(found[:10])


@pytest.mark.parametrize("edition", EDITIONS)
def test_no_caption_at_the_top_of_a_page(edition):
    """A figure's caption is on the page of its figure: never the first line of a page's
    body, its image left at the foot of the page before."""
    found = [f"page {i + 1}: {lines[0][2][:60]!r}" for i, lines in enumerate(page_lines(edition))
             if lines and re.match(r"Fig\. \d+\.\d+", lines[0][2]) and lines[0][0] < BODY_TOP + 30]
    assert not found, f"{edition}: captions separated from their figures:\n" + "\n".join(found)


@pytest.mark.parametrize("edition", EDITIONS)
def test_index_terms_in_the_texts_face(edition):
    """The index lists words, set in the text's face, not in typewriter as if each were code."""
    reader = pdf_reader(edition)
    start = max(i for i, p in enumerate(reader.pages) if re.match(r"INDEX\b", p.extract_text() or ""))
    fonts: dict[str, str] = {}

    def visit(text, cm, tm, font, size):
        if font is not None and text.strip():
            fonts.setdefault(text.strip(), font.get("/BaseFont", ""))

    reader.pages[start].extract_text(visitor_text=visit)
    term = next((f for t, f in fonts.items() if t.startswith("attention")), None)
    assert term is not None, f"{edition}: no index entry 'attention' found on page {start + 1}: {list(fonts)[:10]}"
    assert "Mono" not in str(term), f"{edition}: index terms set in {term}"
