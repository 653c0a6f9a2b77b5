"""The teaching kit (make slides handout; tools/slides.py): the reveal.js deck, its PDF and
the handout, as an instructor would use them, offline.

* the deck has 25-35 slides, one per entry of tools/slides.yml, each with speaker notes
  taken from the run sheet (the same clock and minutes as the pacing plan);
* in Chromium, served from _build/html on 127.0.0.1: every image loads, every formula is
  typeset, nothing is requested from another host, nothing fails, no console error;
* the deck's PDF has one page per slide; the handout's PDF fits two A4 sides;
* the instructor notes link the deck, its PDF and the handout, and the links resolve.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from urllib.parse import urlparse

import pytest
import yaml
from bs4 import BeautifulSoup
from conftest import HTML, ROOT, html_page

pytestmark = pytest.mark.browser

spec = importlib.util.spec_from_file_location("pacing", ROOT / "tools" / "pacing.py")
pacing = importlib.util.module_from_spec(spec)
sys.modules["pacing"] = pacing
spec.loader.exec_module(pacing)

DECK = HTML / "slides" / "index.html"
DECK_PDF = HTML / "slides" / "transformer-lessons-slides.pdf"
HANDOUT = HTML / "handout" / "index.html"
HANDOUT_PDF = HTML / "pdf" / "transformer-lessons-handout.pdf"
MANIFEST = yaml.safe_load((ROOT / "tools" / "slides.yml").read_text())


def pdf_pages(path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def pdf_page_size(path) -> tuple[float, float]:
    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    w, h = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", info, re.MULTILINE).groups()
    return float(w), float(h)


@pytest.fixture(scope="module")
def deck():
    for path in (DECK, DECK_PDF, HANDOUT, HANDOUT_PDF):
        if not path.exists():
            pytest.fail(f"{path.relative_to(ROOT)} missing: run `make slides handout`", pytrace=False)
    return BeautifulSoup(DECK.read_text(), "html.parser")


def test_slide_count_follows_the_manifest(deck):
    slides = deck.select(".reveal .slides > section")
    expected = sum(len(s["slides"]) for s in MANIFEST["segments"])
    assert len(slides) == expected
    assert 25 <= len(slides) <= 35, f"{len(slides)} slides for a 2.5-hour session"


def test_every_slide_has_speaker_notes_from_the_run_sheet(deck):
    sheet = {s.number: s for s in pacing.run_sheet()}
    for slide in deck.select(".reveal .slides > section"):
        notes = slide.select_one("aside.notes")
        assert notes is not None and len(notes.get_text().split()) >= 10, slide.get_text()[:80]
        run = sheet[int(slide["data-segment"])]
        assert f"{run.clock}, {run.minutes} minutes" in notes.get_text()


def test_segments_cover_the_run_sheet_in_order():
    numbers = [s["run_sheet"] for s in MANIFEST["segments"]]
    assert numbers == sorted(numbers) == [s.number for s in pacing.run_sheet()]


def test_slides_pdf_has_one_page_per_slide(deck):
    assert pdf_pages(DECK_PDF) == len(deck.select(".reveal .slides > section"))


def test_handout_fits_two_a4_sides(deck):
    assert pdf_pages(HANDOUT_PDF) <= 2
    w, h = pdf_page_size(HANDOUT_PDF)
    assert abs(w - 595) < 3 and abs(h - 842) < 3, (w, h)


def test_handout_names_the_book(deck):
    text = subprocess.run(["pdftotext", str(HANDOUT_PDF), "-"], check=True, capture_output=True, text=True).stdout
    assert "transformer-lessons" in text


def test_instructor_notes_link_the_kit(deck):
    page = html_page("book/instructor_notes")
    hrefs = [a["href"] for a in BeautifulSoup(page.read_text(), "html.parser").select("article a[href]")]
    for target in (DECK, DECK_PDF, HANDOUT_PDF):
        links = [h for h in hrefs if (page.parent / h.split("#")[0]).resolve() == target.resolve()]
        assert links, f"the instructor notes do not link {target.relative_to(HTML)}"


# --- in Chromium, offline ----------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def visit(deck, site):
    from pathlib import Path

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make system-deps`", pytrace=False)
    from playwright.sync_api import sync_playwright

    record = {"requests": [], "failed": [], "errors": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on("request", lambda r: record["requests"].append(r.url))
        page.on("requestfailed", lambda r: record["failed"].append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and record["failed"].append(f"{r.url} (HTTP {r.status})"))
        page.on("console", lambda m: m.type == "error" and record["errors"].append(m.text))
        page.on("pageerror", lambda e: record["errors"].append(str(e)))
        page.goto(f"{site}/slides/index.html", wait_until="networkidle")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        record["slides"] = page.evaluate("() => Reveal.getTotalSlides()")
        record["images"] = page.evaluate(
            "() => Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])"
        )
        record["raw_tex"] = page.evaluate(
            "() => Array.from(document.querySelectorAll('.tl-equation')).filter(e => /\\\\\\[|\\$\\$/.test(e.innerText)).length"
        )
        page.goto(f"{site}/handout/index.html", wait_until="networkidle")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        record["handout_images"] = page.evaluate("() => Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])")
        browser.close()
    return record


def test_deck_runs_in_the_browser(visit, deck):
    assert visit["slides"] == len(deck.select(".reveal .slides > section"))
    assert not visit["errors"], visit["errors"]
    assert not visit["failed"], visit["failed"]


def test_every_image_loads(visit):
    assert visit["images"], "no image in the deck"
    broken = [src for src, ok in visit["images"] + visit["handout_images"] if not ok]
    assert not broken, f"images that do not load: {broken}"


def test_every_formula_is_typeset(visit):
    assert visit["raw_tex"] == 0


def test_no_request_to_another_host(visit):
    foreign = sorted({u for u in visit["requests"] if urlparse(u).hostname not in {"127.0.0.1", None} and not u.startswith("data:")})
    assert not foreign, f"requests that leave the machine: {foreign}"


def test_handout_is_the_cheat_sheet_when_there_is_one(deck):
    """tools/slides.yml names the page; until it exists the handout uses the fallback page."""
    page = MANIFEST["handout"]["page"]
    source = page if (ROOT / "book" / f"{page}.md").exists() else MANIFEST["handout"]["fallback"]
    title = BeautifulSoup(html_page(f"book/{source}").read_text(), "html.parser").select_one("article h1")
    handout = BeautifulSoup(HANDOUT.read_text(), "html.parser")
    assert title is not None and title.get_text(" ", strip=True).rstrip("#").strip() in handout.get_text(" ", strip=True)
