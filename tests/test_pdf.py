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
    toc = text[start : start + 6000]
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
