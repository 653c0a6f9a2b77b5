"""The handout (make handout; code/build/book_build/handout.py): two full A4 sides, numbers from the build.

* exactly two A4 pages, both full: page 1's text reaches its last tenth, page 2's its
  bottom third (pdftotext -bbox);
* each equation's number and page are those of the printed student edition: the page of
  the student PDF whose printed number the handout gives shows that equation number;
* every heading's count is the count of its rows; nothing says "links" on paper;
* the book's address (from _config.yml) is printed, and the QR code encodes it.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from bs4 import BeautifulSoup
from tests.book_files import HTML, ROOT
from transformer_classroom import book

pytestmark = [pytest.mark.browser, pytest.mark.pdf]

HANDOUT = HTML / "handout" / "index.html"
HANDOUT_PDF = HTML / "pdf" / book.published()["pdf_handout"]
STUDENT_PDF = ROOT / "_build" / book.published()["pdf_student"]


def run(*cmd) -> str:
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def handout():
    for path in (HANDOUT, HANDOUT_PDF, STUDENT_PDF):
        if not path.exists():
            pytest.fail(f"{path.relative_to(ROOT)} missing: run `make pdf handout`", pytrace=False)
    return BeautifulSoup(HANDOUT.read_text(), "html.parser")


def word_boxes(page: int) -> tuple[float, list[float]]:
    """(page height, yMax of every word) of one page of the handout."""
    xml = run("pdftotext", "-bbox", "-f", str(page), "-l", str(page), str(HANDOUT_PDF), "-")
    height = float(re.search(r'<page width="[\d.]+" height="([\d.]+)"', xml).group(1))
    return height, [float(y) for y in re.findall(r'yMax="([\d.]+)"', xml)]


def printed_page(text: str) -> str | None:
    """The page number printed in a page's header or footer (its first or last line)."""
    lines = [l.split() for l in text.strip().splitlines() if l.strip()]
    for words in (lines[0], lines[-1]) if lines else ():
        for w in (words[0], words[-1]):
            if w.isdigit():
                return w
    return None


def test_two_a4_pages(handout):
    info = run("pdfinfo", str(HANDOUT_PDF))
    assert re.search(r"^Pages:\s+2$", info, re.MULTILINE), info
    w, h = map(float, re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", info, re.MULTILINE).groups())
    assert abs(w - 595) < 3 and abs(h - 842) < 3, (w, h)


def test_both_sides_are_full(handout):
    for page, fraction in ((1, 0.85), (2, 2 / 3)):
        height, ys = word_boxes(page)
        assert ys and max(ys) >= fraction * height, f"page {page}: text ends at {max(ys, default=0):.0f} of {height:.0f} pt"


def test_equation_numbers_and_pages_are_the_printed_books(handout):
    rows = handout.select("table.eqs tr")[1:]
    assert rows
    student = run("pdftotext", "-layout", str(STUDENT_PDF), "-").split("\f")
    for tr in rows:
        number, page = (td.get_text(strip=True) for td in tr.select("td.num"))
        assert re.fullmatch(r"\(\d+(\.\d+)*\)", number), number
        assert page.isdigit(), f"no printed page for {number}"
        # the physical page that prints this page number and shows this equation number
        hits = [i for i, text in enumerate(student) if number in text and printed_page(text) == page]
        assert hits, f"equation {number}: the student PDF's page {page} does not show it"


def test_heading_counts_are_the_rows(handout):
    words = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()
    eq = handout.find("h2", string=re.compile(r"equations$"))
    assert eq is not None
    assert words.index(eq.get_text().split()[0].lower()) == len(handout.select("table.eqs tr")) - 1
    ex = handout.find("h2", string=re.compile(r"exercises"))
    assert words.index(ex.get_text().split()[0].lower()) == len(handout.select("table.ex tr")) - 1


def test_nothing_on_paper_speaks_of_links(handout):
    text = run("pdftotext", str(HANDOUT_PDF), "-")
    assert not re.search(r"\blinks?\b", text, re.IGNORECASE), "a handout on paper has no links"
    assert "\\sqrt" not in text and "\\frac" not in text


def test_address_and_qr_code(handout):
    import segno

    from book_build import handout as tool

    url = tool.address()
    text = re.sub(r"\s+", "", run("pdftotext", str(HANDOUT_PDF), "-"))
    assert url in text
    svg = handout.find("svg")
    assert svg is not None
    assert str(BeautifulSoup(segno.make(url, error="m").svg_inline(scale=4, border=0), "html.parser").find("svg")) == str(svg)


def test_exercise_signatures(handout):
    rows = handout.select("table.ex tr")[1:]
    assert len(rows) >= 3
    for tr in rows:
        cells = tr.find_all("td")
        assert re.match(r"\w+\(", cells[1].code.get_text()), cells[1]
        assert cells[2].get_text().startswith("check_")


def test_screenshots_for_a_person(handout):
    """Both sides as images, in colour and in greyscale, kept in _build/screenshots/."""
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    subprocess.run(["pdftoppm", "-png", "-r", "70", str(HANDOUT_PDF), str(shots / "handout")], check=True)
    subprocess.run(["pdftoppm", "-png", "-gray", "-r", "70", "-f", "1", "-l", "1", str(HANDOUT_PDF), str(shots / "handout-grey")], check=True)
    assert len(list(shots.glob("handout-*.png"))) >= 3


def test_diagram_labels_are_readable_on_paper(handout, site):
    """The diagrams' smallest labels print at 7 pt or more: each diagram's image, laid out
    for print on A4 in Chromium, is drawn at least at the scale that gives its smallest
    label (``diagrams.SMALL`` points at full size) 7 pt."""
    from playwright.sync_api import sync_playwright

    from book_build import chromium
    from transformer_lessons import diagrams

    with sync_playwright() as p:
        browser = chromium.launch(p)
        # the width of an A4 page inside the handout's margins (210 - 2 x 12 mm) at 96 px per inch
        page = browser.new_page(viewport={"width": 703, "height": 1040})
        page.emulate_media(media="print")
        page.goto(f"{site}/handout/index.html", wait_until="load")
        scales = page.evaluate("""() => Array.from(document.querySelectorAll('.diagrams img')).map(
            img => [img.getAttribute('alt').slice(0, 40), img.getBoundingClientRect().width / img.naturalWidth])""")
        browser.close()
    assert len(scales) == 2, scales
    small = [(alt, round(s * diagrams.SMALL, 1)) for alt, s in scales if s * diagrams.SMALL < 6.95]
    assert not small, f"diagram labels below 7 pt on the handout: {small}"
