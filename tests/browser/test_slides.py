"""The slides (make slides; code/build/book_build/slides.py), as an instructor would use them, offline.

* one slide per slide the pages declare for their segments (``pacing: session: slides:``,
  read by code/build/book_build/pacing.py) plus one break slide per break of the pacing plan, 25-40 in all; every slide titled; speaker notes from the built run sheet as plain
  text (no role markup, no TeX), with the segment's clock and minutes;
* quiz slides carry the question and every option of the book's question; the answer is in
  the notes only;
* every number on a slide is the build's: each figure and equation slide shows the number
  the built page printed for its label;
* the PDF has one page per slide and each page carries its slide's title (pdftotext, page
  by page): a PDF printed before the deck was laid out fails here;
* in Chromium at 1280 x 720, served on 127.0.0.1: code, output and captions are at least
  24 px as displayed (reveal.js's scale included) and body text at least 28 px; nothing
  runs off a slide; every image loads; caption formulas are typeset (KaTeX), no raw TeX;
  nothing is requested from another host; no console error;
* the instructor notes link the deck, its PDF and the handout, and the links resolve.
"""

from __future__ import annotations

import re
import subprocess
from urllib.parse import urlparse

import pytest
from bs4 import BeautifulSoup
from tests.book_files import HTML, ROOT, html_page
from transformer_classroom import book

from book_build import built
from book_build import chromium
from book_build import pacing

pytestmark = pytest.mark.browser

DECK = HTML / "slides" / "index.html"
DECK_PDF = HTML / "slides" / book.published()["pdf_slides"]
HANDOUT_PDF = HTML / "pdf" / book.published()["pdf_handout"]
SHOTS = ROOT / "_build" / "screenshots"
MIN_SMALL_PX = 24  # code, output, captions
MIN_BODY_PX = 28  # bullet points and quiz text


def pdf_pages(path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def page_text(path, n: int) -> str:
    return subprocess.run(["pdftotext", "-layout", "-f", str(n), "-l", str(n), str(path), "-"],
                          check=True, capture_output=True, text=True).stdout


def squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@pytest.fixture(scope="module")
def deck():
    for path in (DECK, DECK_PDF):
        if not path.exists():
            pytest.fail(f"{path.relative_to(ROOT)} missing: run `make slides`", pytrace=False)
    return BeautifulSoup(DECK.read_text(), "html.parser")


@pytest.fixture(scope="module")
def slides(deck):
    return deck.select(".reveal .slides > section")


def _segments():
    """The session's segments with slides: every one but the breaks."""
    return [s for s in pacing.full_plan() if s.start is not None and s.mode != "break"]


def _entries():
    for segment in _segments():
        for slide in segment.slides:
            yield segment.run_sheet, slide


def test_slides_are_declared_for_each_run_sheet_section_by_label():
    """Each run-sheet segment has its slides, declared with its row of the plan and found by
    the label of its section."""
    assert [s.run_sheet for s in _segments()] == [r.label for r in pacing.run_sheet()]
    assert all(s.slides for s in _segments()), [s.declared for s in _segments() if not s.slides]


def test_slide_count_follows_the_manifest_and_the_breaks(slides):
    breaks = [s for s in pacing.full_plan() if s.mode == "break"]
    assert len(slides) == len(list(_entries())) + len(breaks)
    assert 25 <= len(slides) <= 40, f"{len(slides)} slides for a 2.5-hour session"


def test_every_slide_has_a_title(slides):
    for i, slide in enumerate(slides, 1):
        h2 = slide.find("h2", recursive=False)
        assert h2 is not None and h2.get_text(strip=True), f"slide {i} has no title"
        assert slide.get("data-title", "").strip(), f"slide {i}"


def test_a_break_slide_at_each_break_of_the_plan(slides):
    plan = [s for s in pacing.full_plan() if s.start is not None]
    order = []
    for s in plan:
        if s.mode == "break":
            order.append(("break", s.clock))
        else:
            order.append(("segment", s.clock))
    seen = []
    for slide in slides:
        kind = "break" if slide["data-segment"] == "break" else "segment"
        clock = slide.select_one(".tl-segment").get_text().split("·")[0].strip()
        if not seen or seen[-1] != (kind, clock):
            seen.append((kind, clock))
    assert seen == order
    for slide in slides:
        if slide["data-segment"] == "break":
            seg = next(s for s in plan if s.mode == "break" and s.clock in slide.get_text())
            assert f"{seg.minutes} minutes" in slide.get_text() and seg.clock.split("-")[1] in slide.get_text()


def test_speaker_notes_are_plain_text_from_the_run_sheet(slides):
    sheet = {s.number: s for s in pacing.run_sheet()}
    for slide in slides:
        notes = slide.select_one("aside.notes")
        assert notes is not None, slide.get("data-title")
        text = notes.get_text(" ")
        assert not re.search(r"[{}`$\\]|\{(ref|doc|numref|eq)\}", text), f"markup in the notes of {slide['data-title']!r}: {text[:300]}"
        if slide["data-segment"] == "break":
            continue
        run = sheet[int(slide["data-segment"])]
        assert f"{run.clock}, {run.minutes} minutes" in text
        assert len(text.split()) >= 30, f"notes of {slide['data-title']!r} are too short"


def test_notes_resolve_references_to_the_builds_titles(slides):
    """The run sheet cites by label; the notes carry what the build made of each label."""
    text = " ".join(s.select_one("aside.notes").get_text(" ") for s in slides)
    ref = built.lookup("ex-exercises-self-attention")
    assert ref.number and ref.number in text
    assert built.lookup("fig-foundations-weights").number in text


def test_quiz_slides_carry_the_question_and_options(slides):
    quiz = [spec["quiz"] for _, spec in _entries() if "quiz" in spec]
    assert len(quiz) >= 3
    by_title = {squash(s["data-title"]): s for s in slides}
    for label in quiz:
        ref = built.lookup(label)
        slide = by_title[squash(ref.title)]
        body = squash(built.plain(slide.select_one(".tl-quiz")))
        section = ref.element
        question = section.find("p")
        assert squash(built.plain(question))[:60] in body, label
        for li in section.select(":scope > ul > li"):
            assert squash(built.plain(li)) in body, f"{label}: option {built.plain(li)!r} missing"
        answer = built.plain(section.select_one(".quiz-answer"))
        notes = slide.select_one("aside.notes").get_text(" ")
        assert "Answer" in notes and squash(answer)[:40] in squash(notes)
        assert "quiz-answer" not in str(slide.select_one(".tl-quiz"))


def test_figure_and_equation_numbers_come_from_the_build(slides):
    text = " ".join(s.get_text(" ") for s in slides)
    for _, spec in _entries():
        kind, value = next(iter(spec.items()))
        if kind in ("figure", "equation"):
            label = value if isinstance(value, str) else value.get("name") or value.get("label")
            number = built.lookup(label).number
            assert number and number in text, f"{label}: {number!r} not on the slides"


def test_slides_pdf_has_one_page_per_slide_with_its_text(slides):
    assert pdf_pages(DECK_PDF) == len(slides)
    missing = []
    for n, slide in enumerate(slides, 1):
        if squash(slide["data-title"]) not in squash(page_text(DECK_PDF, n)):
            missing.append(f"page {n}: {slide['data-title']!r}")
    assert not missing, "PDF pages without their slide's title:\n" + "\n".join(missing)


def test_instructor_notes_link_the_kit(deck):
    page = html_page("book/instructor_notes")
    hrefs = [a["href"] for a in BeautifulSoup(page.read_text(), "html.parser").select("article a[href]")]
    for target in (DECK, DECK_PDF, HANDOUT_PDF):
        links = [h for h in hrefs if (page.parent / h.split("#")[0]).resolve() == target.resolve()]
        assert links, f"the instructor notes do not link {target.relative_to(HTML)}"


# --- in Chromium, offline ----------------------------------------------------------------------

MEASURE = """() => {
  const scale = Reveal.getScale();
  const out = [];
  Reveal.getSlides().forEach((slide, i) => {
    Reveal.slide(i);
    const box = slide.getBoundingClientRect();
    const sizes = {};
    for (const [kind, sel] of [["small", "pre.tl-code, pre.tl-output, figcaption, .tl-source, .tl-segment, .tl-live"],
                               ["body", "ul li, .tl-quiz p, .tl-quiz li, .tl-break"]]) {
      for (const el of slide.querySelectorAll(sel)) {
        if (!el.innerText.trim()) continue;
        const px = parseFloat(getComputedStyle(el).fontSize) * scale;
        sizes[kind] = Math.min(sizes[kind] ?? 1e9, px);
      }
    }
    let overflow = [];
    for (const el of slide.querySelectorAll("h2, p, li, pre, img, figure, table, .tl-equation, .tl-cell")) {
      const r = el.getBoundingClientRect();
      if (r.height === 0) continue;
      if (r.bottom > box.bottom + 2 || r.right > box.right + 2 || r.left < box.left - 2 || r.top < box.top - 2)
        overflow.push(el.tagName + "." + el.className);
      if (el.tagName === "PRE" && (el.scrollHeight > el.clientHeight + 2 || el.scrollWidth > el.clientWidth + 2))
        overflow.push("scrolling " + el.className);
    }
    const figures = Array.from(slide.querySelectorAll("figure.tl-figure img")).map(img => {
      const r = img.getBoundingClientRect();
      return [r.height / box.height, r.width / box.width];
    });
    out.push({title: slide.dataset.title, sizes, overflow, figures, rawTex: /\\\\(sqrt|frac|operatorname|mathrm|top)\\b/.test(slide.innerText)});
  });
  return out;
}"""


@pytest.fixture(scope="module")
def visit(deck, site):
    from playwright.sync_api import sync_playwright

    try:
        chromium.require()
    except FileNotFoundError as err:
        pytest.fail(str(err), pytrace=False)
    record = {"requests": [], "failed": [], "errors": []}
    with sync_playwright() as p:
        browser = chromium.launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on("request", lambda r: record["requests"].append(r.url))
        page.on("requestfailed", lambda r: record["failed"].append(f"{r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and record["failed"].append(f"{r.url} (HTTP {r.status})"))
        page.on("console", lambda m: m.type == "error" and record["errors"].append(m.text))
        page.on("pageerror", lambda e: record["errors"].append(str(e)))
        page.goto(f"{site}/slides/index.html", wait_until="load", timeout=600_000)
        page.wait_for_function("() => window.tlReady === true", timeout=600_000)
        page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")
        record["slides"] = page.evaluate("() => Reveal.getTotalSlides()")
        record["images"] = page.evaluate(
            "() => Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])"
        )
        record["measure"] = page.evaluate(MEASURE)
        # a few slides for a person to look at: the first code, figure, equation and quiz slide
        SHOTS.mkdir(parents=True, exist_ok=True)
        kinds = page.evaluate("""() => Reveal.getSlides().map(s => s.querySelector('.tl-code') ? 'code' :
            s.querySelector('.tl-quiz') ? 'quiz' : s.querySelector('.tl-equation') ? 'equation' :
            s.querySelector('figure') ? 'figure' : s.dataset.segment === 'break' ? 'break' : 'text')""")
        record["shots"] = []
        for kind in ("text", "equation", "figure", "code", "quiz", "break"):
            if kind in kinds:
                page.evaluate(f"() => Reveal.slide({kinds.index(kind)})")
                path = SHOTS / f"slides-{kind}.png"
                page.screenshot(path=str(path))
                record["shots"].append(path)
        record["caption_math"] = page.evaluate(
            "() => Array.from(document.querySelectorAll('figcaption')).map(c => [c.innerText.slice(0, 60), c.querySelectorAll('.katex').length, c.querySelectorAll('.katex-error').length])"
        )
        browser.close()
    return record


def test_deck_runs_in_the_browser(visit, slides):
    assert visit["slides"] == len(slides)
    assert not visit["errors"], visit["errors"]
    assert not visit["failed"], visit["failed"]


def test_text_is_large_enough_for_a_lecture_room(visit):
    small = [(m["title"], round(m["sizes"]["small"], 1)) for m in visit["measure"] if m["sizes"].get("small", 99) < MIN_SMALL_PX]
    body = [(m["title"], round(m["sizes"]["body"], 1)) for m in visit["measure"] if m["sizes"].get("body", 99) < MIN_BODY_PX]
    assert not small, f"code, output or captions below {MIN_SMALL_PX} px: {small}"
    assert not body, f"body text below {MIN_BODY_PX} px: {body}"
    measured = [m for m in visit["measure"] if "small" in m["sizes"]]
    assert len(measured) >= 10, "too few slides with code or captions measured"


def test_figures_fill_their_slides(visit):
    """A figure slide gives the figure most of the slide (its caption beside a figure that
    is not wide): at least 72 % of the slide's height or 85 % of its width, so that its
    tick labels stay as large as the slide allows (under a caption, figures filled about
    55-69 % of the height)."""
    figures = [(m["title"], h, w) for m in visit["measure"] for h, w in m["figures"]]
    assert len(figures) >= 5, figures
    small = [(t, f"{h:.0%} high, {w:.0%} wide") for t, h, w in figures if h < 0.72 and w < 0.85]
    assert not small, f"figures that leave most of their slide empty: {small}"


def test_nothing_runs_off_a_slide(visit):
    over = [(m["title"], m["overflow"][:3]) for m in visit["measure"] if m["overflow"]]
    assert not over, over


def test_formulas_are_typeset(visit):
    raw = [m["title"] for m in visit["measure"] if m["rawTex"]]
    assert not raw, f"raw TeX on slides: {raw}"
    assert not [c for c in visit["caption_math"] if c[2]], "KaTeX errors in captions"


def test_every_image_loads(visit):
    assert visit["images"], "no image in the deck"
    broken = [src for src, ok in visit["images"] if not ok]
    assert not broken, f"images that do not load: {broken}"


def test_no_request_to_another_host(visit):
    foreign = sorted({u for u in visit["requests"] if urlparse(u).hostname not in {"127.0.0.1", None} and not u.startswith("data:")})
    assert not foreign, f"requests that leave the machine: {foreign}"


def test_screenshots_for_a_person(visit):
    """Screenshots of a few slides and of the PDF's first pages, kept in _build/screenshots/."""
    assert len(visit["shots"]) >= 5
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "3", str(DECK_PDF), str(SHOTS / "slides-pdf")], check=True)
    for path in visit["shots"]:
        assert path.stat().st_size > 5000, f"{path} looks empty"
