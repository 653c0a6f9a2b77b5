"""Read the pacing plans, the pages' time budgets and the run sheet from the book's sources.

One source for each, found by what the pages declare (``tools/pages.py``): the plans are
the tables of the page of ``kind: pacing-plan`` (section "Pacing plan"); a page's time is
its own front matter's ``myst: substitutions: time``, which the page prints in its
``Time:`` note as ``{{ time }}`` (and any page announcing it as ``{{ time_<page> }}``,
generated); the run sheet is the page of ``kind: run-sheet``. ``tests/test_pacing.py``
adds them up; ``tools/slides.py`` turns the run sheet into the slides' speaker notes.

How long a page takes (``reading_minutes``), measured on the built page as a student sees
it (``make book`` first), at these rates, decided here:

* prose: 200 words a minute (the text of the page without its code, outputs, formulas'
  hidden MathML, solutions and answer boxes: those are read after trying);
* code a reader sees: 10 lines a minute (read it, run it, look at what it does: 6 s a line);
* text output: 40 lines a minute (a glance at arrays and tables); each figure: half a minute;
* a formula shown on its own line: a quarter of a minute.

A page whose work is exercises (``kind: exercises``) is timed by its exercises instead:
each exercise's heading carries its minutes.

``python tools/pacing.py`` prints the full plan with each page's budget, and with
``--reading`` each page's measured reading time.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pages

ROOT = pages.ROOT
BOOK = pages.BOOK
NOTES = pages.path(pages.the("pacing-plan"))
RUN_SHEET = pages.path(pages.the("run-sheet"))
MODES = {"in class", "lab", "self-study", "break", "buffer"}
DOC = re.compile(r"\{doc\}`(?:[^`<]*<)?([^`>]+)>?`")


@dataclass
class Segment:
    clock: str  # "0:10-0:25", or "after" for reference rows
    minutes: int
    title: str
    pages: list[str]  # page names ("foundations"), possibly none
    mode: str

    @property
    def start(self) -> int | None:
        return _minutes(self.clock.split("-")[0]) if "-" in self.clock else None

    @property
    def end(self) -> int | None:
        return _minutes(self.clock.split("-")[1]) if "-" in self.clock else None


def _minutes(clock: str) -> int:
    h, m = clock.strip().split(":")
    return int(h) * 60 + int(m)


def _table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after a heading."""
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            break
    return rows


def _pages(cell: str) -> list[str]:
    return [Path(p).name for p in DOC.findall(cell)]


def full_plan(text: str | None = None) -> list[Segment]:
    text = text if text is not None else NOTES.read_text()
    rows = _table(text, "### The full lesson")
    header = [h.lower() for h in rows[0]]
    assert header == ["clock", "minutes", "segment", "page", "mode"], header
    return [Segment(r[0], int(r[1]), r[2], _pages(r[3]), r[4].lower()) for r in rows[1:]]


def short_plan(text: str | None = None) -> list[tuple[Segment, Segment]]:
    """(60-minute segment, 90-minute segment) for each row of the short lesson."""
    text = text if text is not None else NOTES.read_text()
    rows = _table(text, "### The short lesson")
    header = [h.lower() for h in rows[0]]
    assert header[:5] == ["segment", "page", "mode", "60 min", "90 min"], header
    out = []
    for r in rows[1:]:
        if r[0].startswith("**"):
            continue  # the total
        for_60 = Segment("", int(r[3]), r[0], _pages(r[1]), r[2].lower())
        for_90 = Segment("", int(r[4]), r[0], _pages(r[1]), r[2].lower())
        out.append((for_60, for_90))
    return out


def short_plan_totals(text: str | None = None) -> tuple[int, int]:
    text = text if text is not None else NOTES.read_text()
    rows = _table(text, "### The short lesson")
    total = [r for r in rows if r[0].startswith("**")][0]
    return int(total[3].strip("*")), int(total[4].strip("*"))


BUDGET = re.compile(r"^(\d+)(?:-(\d+))? minutes(, optional)?$")


def budgets() -> dict[str, tuple[int, int, bool]]:
    """page -> (low, high, optional) from each page's declared time (``tools/pages.py``)."""
    out = {}
    for page, value in pages.times().items():
        m = BUDGET.match(value.strip())
        if not m:
            raise ValueError(f"book/{page}.md: time: {value!r} is not 'N minutes', 'N-M minutes' or '..., optional'")
        low = int(m.group(1))
        out[page] = (low, int(m.group(2) or low), bool(m.group(3)))
    return out


def page_budget(page: str) -> tuple[int, int] | None:
    """(low, high) minutes of a page, or None if it has none."""
    b = budgets().get(page)
    return (b[0], b[1]) if b else None


def page_is_optional(page: str) -> bool:
    """Whether a page's time is marked optional: reading beyond the session."""
    b = budgets().get(page)
    return bool(b and b[2])


# --- how long a page takes, measured on the built page ---------------------------------------

PROSE_WPM = 200
CODE_LPM = 10
OUTPUT_LPM = 40
FIGURE_MINUTES = 0.5
DISPLAY_MATH_MINUTES = 0.25
EXERCISE_MINUTES = re.compile(r"\((\d+) minutes\)\s*$")


@dataclass
class Reading:
    page: str
    words: int
    code_lines: int
    output_lines: int
    figures: int
    display_math: int
    exercise_minutes: int  # the sum of the exercises' own times (an exercise page)

    @property
    def minutes(self) -> float:
        if self.exercise_minutes:
            return float(self.exercise_minutes)
        return (self.words / PROSE_WPM + self.code_lines / CODE_LPM + self.output_lines / OUTPUT_LPM
                + self.figures * FIGURE_MINUTES + self.display_math * DISPLAY_MATH_MINUTES)


def reading_minutes(page: str, site: Path | None = None) -> Reading:
    """How long book/<page> takes a student, measured on the built HTML page."""
    from bs4 import BeautifulSoup

    path = (site or ROOT / "_build" / "html") / "book" / f"{page}.html"
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: run `make book` first")
    soup = BeautifulSoup(path.read_text(), "html.parser")
    article = soup.select_one("article.bd-article") or soup.select_one("article") or soup.body
    for junk in article.select(".solution, .quiz-answer, .katex-mathml, script, style, .headerlink, .toggle-hidden"):
        junk.decompose()
    code = sum(len(pre.get_text().rstrip("\n").splitlines())
               for pre in article.select(".cell_input pre, div.highlight pre")
               if pre.find_parent(class_="tag_hide-input") is None and pre.find_parent(class_="cell_output") is None)
    output = sum(len(pre.get_text().rstrip("\n").splitlines()) for pre in article.select(".cell_output pre"))
    figures = len(article.select("img")) - len(article.select("img.only-dark, .only-dark img, img[class*=dark]"))
    display = len(article.select("div.math, .math-wrapper, span.katex-display"))
    minutes = 0
    if pages.kind(page) == "exercises":
        minutes = sum(int(m.group(1)) for h in article.select("h2") if (m := EXERCISE_MINUTES.search(h.get_text(" ", strip=True).replace("#", "").strip())))
    for el in article.select(".cell, div.highlight, div.math, span.katex-display, figure"):
        el.decompose()
    words = len(re.findall(r"[A-Za-z0-9][\w'’.-]*", article.get_text(" ")))
    return Reading(page, words, code, output, figures, display, minutes)


@dataclass
class RunSheetSection:
    number: int  # its place in the run sheet, from 1 (the build prints the section's number)
    label: str  # "run-foundations": slides and notes find the section by it
    title: str
    clock: str
    minutes: int
    mode: str
    fields: dict[str, str]  # "show", "skip", "ask the room", "expect", "board" -> text
    body: str


# A segment of the run sheet: a labelled section, "(run-x)=" then "## Title (0:10-0:25,
# 15 minutes, in class)". No typed number: the build numbers the sections.
RUN_HEADING = re.compile(
    r"^\(([\w-]+)\)=\n## (.+?) \((\d+:\d\d-\d+:\d\d), (\d+) minutes(?:, ([a-z ]+))?\)\s*$", re.MULTILINE)


def run_sheet(text: str | None = None) -> list[RunSheetSection]:
    text = text if text is not None else RUN_SHEET.read_text()
    heads = list(RUN_HEADING.finditer(text))
    sections = []
    for i, h in enumerate(heads):
        body = text[h.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip()
        fields = {
            m.group(1).lower(): " ".join(m.group(2).split())
            for m in re.finditer(r"\*\*([A-Z][a-z ]+)\.\*\*\s*(.*?)(?=\n\*\*[A-Z][a-z ]+\.\*\*|\Z)", body, re.DOTALL)
        }
        sections.append(RunSheetSection(i + 1, h.group(1), h.group(2), h.group(3), int(h.group(4)),
                                        (h.group(5) or "").strip(), fields, body))
    return sections


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "--reading":
        for page in sorted(budgets()):
            r = reading_minutes(page)
            print(f"{page:<16} budget {page_budget(page)}  reads in {r.minutes:5.1f} min  ({r})")
        return 0
    for s in full_plan():
        times = [f"{p}: {page_budget(p)}" for p in s.pages]
        print(f"{s.clock:>10} {s.minutes:>4}  {s.mode:<9} {s.title}  {', '.join(times)}")
    print("total", sum(s.minutes for s in full_plan()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
