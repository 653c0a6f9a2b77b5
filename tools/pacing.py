"""Read the pacing plans, the pages' time budgets and the run sheet from the book's sources.

One source for each: the plans are the tables of ``book/instructor_notes.md`` (section
"Pacing plan"), a page's budget is the ``Time: N minutes`` (or ``N-M minutes``) note at
its top, the run sheet is ``book/instructor_run_sheet.md``. ``tests/test_pacing.py`` adds
them up; ``tools/slides.py`` copies the run sheet into the slides' speaker notes.

``python tools/pacing.py`` prints the full plan with each page's budget.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
NOTES = BOOK / "instructor_notes.md"
RUN_SHEET = BOOK / "instructor_run_sheet.md"
MODES = {"in class", "lab", "reference", "break", "buffer"}
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


TIME = re.compile(r"Time:\s*(\d+)(?:\s*-\s*(\d+))?\s*minutes", re.IGNORECASE)


def page_budget(page: str) -> tuple[int, int] | None:
    """(low, high) minutes of a page's ``Time:`` note, or None if it has none."""
    path = BOOK / f"{page}.md"
    if not path.exists():
        return None
    m = TIME.search(path.read_text())
    if not m:
        return None
    low = int(m.group(1))
    return low, int(m.group(2) or low)


def page_is_optional(page: str) -> bool:
    """Whether a page's time note calls it optional ("**Time: 15-20 minutes. Optional.**"):
    reading beyond the session, which the plan need not schedule."""
    path = BOOK / f"{page}.md"
    m = TIME.search(path.read_text()) if path.exists() else None
    return bool(m) and bool(re.match(r"\W*\s*optional", path.read_text()[m.end() : m.end() + 20], re.IGNORECASE))


@dataclass
class RunSheetSection:
    number: int
    title: str
    clock: str
    minutes: int
    mode: str
    fields: dict[str, str]  # "show", "skip", "ask the room", "expect", "board" -> text
    body: str


RUN_HEADING = re.compile(r"^## (\d+)\. (.+?) \((\d+:\d\d-\d+:\d\d), (\d+) minutes(?:, ([a-z ]+))?\)\s*$", re.MULTILINE)


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
        sections.append(RunSheetSection(int(h.group(1)), h.group(2), h.group(3), int(h.group(4)), (h.group(5) or "").strip(), fields, body))
    return sections


def main() -> int:
    for s in full_plan():
        budgets = [f"{p}: {page_budget(p)}" for p in s.pages]
        print(f"{s.clock:>10} {s.minutes:>4}  {s.mode:<9} {s.title}  {', '.join(budgets)}")
    print("total", sum(s.minutes for s in full_plan()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
