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

import pytest
from bs4 import BeautifulSoup
from conftest import ROOT, html_page, page_title

pytestmark = pytest.mark.pdf

BUILD = ROOT / "_build"
EDITIONS = ("student", "instructor")


def pdf_path(edition: str) -> Path:
    return BUILD / f"transformer-lessons-{edition}.pdf"


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
    return [f for f in toc_files if edition == "instructor" or "instructor" not in Path(f).name]


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
    instructor = [f for f in toc_files if "instructor" in Path(f).name]
    assert instructor, "no instructor page in _toc.yml"
    leaked = [page_title(f) for f in instructor if norm(page_title(f)) in text]
    assert not leaked, f"the student PDF contains instructor pages: {leaked}"


@pytest.mark.parametrize("edition", EDITIONS)
def test_title_page_names_the_edition(edition):
    first = subprocess.run(
        ["pdftotext", "-l", "1", str(pdf_path(edition)), "-"], check=True, capture_output=True, text=True
    ).stdout
    assert f"edition for {edition}s" in " ".join(first.lower().split()), first


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
        count += len(art.select(".cell_output img:not(.only-dark)"))  # the PDFs print the light variant
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
    """The intro page links to ../pdf/transformer-lessons-<edition>.pdf and `make site`
    put the files there."""
    page = html_page("book/intro")
    hrefs = [a["href"] for a in BeautifulSoup(page.read_text(), "html.parser").select("a[href$='.pdf']")]
    for edition in EDITIONS:
        links = [h for h in hrefs if h.endswith(f"transformer-lessons-{edition}.pdf")]
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
    assert "github.com/transformer-lessons/transformer-lessons" in text, text
    assert "Licence: MIT" in text, text


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
    for name, needle in (("foundations", "Self-attention"), ("quiz", "Question 4"), ("pacing", "The full lesson (2.5 hours)"), ("answers", "Solution to Exercise 1")):
        hits = [i + 1 for i, p in enumerate(text) if needle in p and i > 5]
        hit = hits[-1] if name in ("pacing", "answers") and hits else (hits[0] if hits else None)
        if hit:
            wanted[name] = hit
    for name, page in wanted.items():
        for gray in (False, True):
            out = SCREENSHOTS / f"instructor-{name}-p{page}{'-gray' if gray else ''}"
            args = ["pdftoppm", "-png", "-r", "60", "-f", str(page), "-l", str(page), "-singlefile"]
            subprocess.run(args + (["-gray"] if gray else []) + [str(pdf_path("instructor")), str(out)], check=True)
            assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.parametrize("edition", EDITIONS)
def test_index_points_where_terms_are_taught(edition):
    """The index has entries in the chapters, not only on the glossary's pages: each glossary
    term is indexed at the sections whose titles name it (book/_ext/editions.py)."""
    idx = latex_file(edition, ".idx").read_text(errors="replace")
    pages = [int(p) for p in re.findall(r"\\indexentry\{.*\}\{(\d+)\}\s*$", idx, re.MULTILINE)]
    glossary = next(int(p) for level, t, p in _toc_entries(edition) if level == "chapter" and t.endswith("Glossary"))
    assert sum(p < glossary for p in pages) >= 10, f"{edition}: {sum(p < glossary for p in pages)} index entries before the glossary"
