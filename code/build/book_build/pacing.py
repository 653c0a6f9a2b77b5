"""Read the pacing plans, the pages' time budgets and the run sheet from the book's sources.

One source for each, found by what the pages declare (``book_build.pages``):

* the plans are what each page declares in its front matter, ``pacing:`` (its segment of
  the session, its self-study row, its row of the short lesson, and its slides), with the
  rows of no page (breaks, the buffer), the lengths and the deck's title on the page of
  ``kind: pacing-plan``. This module is their one reader (:func:`full_plan`,
  :func:`short_plan`): the session runs in the order of the run sheet's sections, each
  row placed by its ``run-sheet:`` label (a break ``after:`` one), and its clocks are
  computed from the minutes. The plan page's two tables and the clocks of the run sheet's
  headings are generated from them (:func:`with_tables`, :func:`with_run_sheet_clocks`,
  run by ``book_build.pages``'s ``sync``, i.e. ``make notebooks``); nothing reads the tables.
  A wrong declaration raises :class:`PacingError` naming the page and the key.
* a page's time is its own front matter's ``myst: substitutions: time``, which the page
  prints in its ``Time:`` note as ``{{ time }}`` (and any page announcing it as
  ``{{ time_<page> }}``, generated);
* the run sheet is the page of ``kind: run-sheet``.

``tests/site/test_pacing.py`` adds them up; ``book_build.slides`` turns the plan's slides and the
run sheet into the deck and its speaker notes.

How long a page takes (``reading_minutes``), measured on the built page as a student sees
it (``make book`` first), at these rates, decided here:

* prose: 200 words a minute (the text of the page without its code, outputs, formulas'
  hidden MathML, solutions and answer boxes: those are read after trying);
* code a reader sees: 10 lines a minute (read it, run it, look at what it does: 6 s a line);
* text output: 40 lines a minute (a glance at arrays and tables); each figure: half a minute;
* a formula shown on its own line: a quarter of a minute.

A page whose work is exercises (``kind: exercises``) is timed by its exercises instead:
each exercise's heading carries its minutes.

``python -m book_build.pacing`` prints the full plan with each page's budget, and with
``--reading`` each page's measured reading time.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from transformer_classroom import book

ROOT = book.find_root()
BOOK = book.pages_folder(ROOT)
NOTES = book.path(book.the("pacing-plan"))
RUN_SHEET = book.path(book.the("run-sheet"))
MODES = {"in class", "lab", "self-study", "break", "buffer"}


@dataclass
class Segment:
    clock: str  # "0:10-0:25" (computed from the minutes and the order), "after" for self-study, "" (short plan)
    minutes: int
    title: str
    pages: list[str]  # page names ("foundations"), possibly none
    mode: str
    run_sheet: str | None = None  # the label of its run-sheet section ("run-foundations")
    slides: list = field(default_factory=list)  # what the slides take for it (code/build/book_build/slides.py)
    select: str = ""  # the short plan's "What to select"
    declared: str = ""  # where it is declared: "book/foundations.md: pacing: session"
    after: str | None = None  # placed right after this run-sheet label (a break) or page (self-study)
    short_minutes: tuple[int, int] | None = None  # a short-plan row's minutes at 60 and at 90

    @property
    def start(self) -> int | None:
        return _minutes(self.clock.split("-")[0]) if "-" in self.clock else None

    @property
    def end(self) -> int | None:
        return _minutes(self.clock.split("-")[1]) if "-" in self.clock else None


def _minutes(clock: str) -> int:
    h, m = clock.strip().split(":")
    return int(h) * 60 + int(m)


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


# --- the plans, read from what each page declares (code/build/book_build/pages.py: ``pacing:``) -------------

SLOTS = {  # slot of a page's ``pacing:`` -> the keys a row may have there, the modes it may take
    "session": ({"run-sheet", "after", "segment", "minutes", "mode", "slides", "pages"}, MODES - {"self-study"}),
    "self-study": ({"segment", "minutes", "after", "pages"}, {"self-study"}),
    "short": ({"run-sheet", "after", "segment", "minutes", "mode", "select", "pages"}, MODES),
}
PLAN_KEYS = {"session-minutes", "short-minutes"}  # only on the pacing-plan page


class PacingError(ValueError):
    """A wrong declaration; the message names the page and the key."""


def _plan_page() -> str:
    return book.the("pacing-plan")


def _where(page: str, key: str) -> str:
    return f"book/{page}.md: pacing: {key}"


def _run_sheet_labels() -> list[str]:
    """The labels of the run sheet's sections, in its order: the session's order."""
    text = book.path(book.the("run-sheet")).read_text()
    return re.findall(r"^\(([\w-]+)\)=\n## ", text, re.MULTILINE)


def _toc_order() -> list[str]:
    return book.toc_pages()


def _declared(page: str, plan_page: str | None = None) -> dict:
    d = book.front_matter(page).get("pacing") or {}
    if not isinstance(d, dict):
        raise PacingError(f"book/{page}.md: pacing: is not a mapping")
    allowed = set(SLOTS) | (PLAN_KEYS if page == (plan_page or _plan_page()) else set())
    unknown = set(d) - allowed
    if unknown:
        raise PacingError(f"book/{page}.md: pacing: unknown key {sorted(unknown)} (one of {sorted(allowed)})")
    return d


def _rows(slot: str, labels: list[str]) -> list[Segment]:
    """Every row of one slot (session, self-study, short) that a page declares, checked."""
    keys, modes = SLOTS[slot]
    plan_page = _plan_page()
    out = []
    for page in book.names():
        entries = _declared(page, plan_page).get(slot)
        if entries is None:
            continue
        for i, row in enumerate(entries if isinstance(entries, list) else [entries]):
            where = _where(page, slot) + (f"[{i}]" if isinstance(entries, list) else "")
            if not isinstance(row, dict):
                raise PacingError(f"{where}: a row is a mapping (segment, minutes, mode, ...)")
            unknown = set(row) - keys
            if unknown:
                raise PacingError(f"{where}: unknown key {sorted(unknown)} (one of {sorted(keys)})")
            mode = row.get("mode", "self-study" if slot == "self-study" else None)
            if mode not in modes:
                raise PacingError(f"{where}: mode: {mode!r} is not one of {sorted(modes)}")
            if not isinstance(row.get("segment"), str) or not row["segment"].strip():
                raise PacingError(f"{where}: segment: the row's text is missing")
            minutes = row.get("minutes")
            ok = (isinstance(minutes, list) and len(minutes) == 2 and all(isinstance(m, int) and m >= 0 for m in minutes)
                  if slot == "short" else isinstance(minutes, int) and minutes > 0)
            if not ok:
                want = "[minutes at 60, minutes at 90]" if slot == "short" else "a whole number of minutes above 0"
                raise PacingError(f"{where}: minutes: {minutes!r} is not {want}")
            for key in ("run-sheet", "after"):
                label = row.get(key)
                if label is not None and slot != "self-study" and label not in labels:
                    raise PacingError(f"{where}: {key}: {label!r} is not a section of the run sheet "
                                      f"(book/{book.the('run-sheet')}.md: {', '.join(labels)})")
            if "pages" in row and page != plan_page:
                raise PacingError(f"{where}: pages: only the pacing-plan page names pages; a page's rows are its own")
            if not isinstance(row.get("pages", []), list):
                raise PacingError(f"{where}: pages: {row['pages']!r} is not a list of pages")
            row_pages = list(row.get("pages", [])) if page == plan_page else [page]
            for p in row_pages:
                book.path(p)  # an unknown page fails here, by its name
            out.append(Segment("", minutes if slot != "short" else 0, row["segment"].strip(), row_pages, mode,
                               row.get("run-sheet"), list(row.get("slides") or []), row.get("select", ""), where,
                               row.get("after"), tuple(minutes) if slot == "short" else None))
    return out


def _in_session_order(rows: list[Segment], labels: list[str], plan: str) -> list[Segment]:
    """Rows placed by their run-sheet section (``run-sheet:``) or right after one (``after:``)."""
    by_label: dict[str, Segment] = {}
    after: dict[str, list[Segment]] = {}
    for r in rows:
        if r.run_sheet and r.after:
            raise PacingError(f"{r.declared}: run-sheet and after: a row has one place")
        if r.run_sheet:
            if r.run_sheet in by_label:
                raise PacingError(f"{r.declared}: run-sheet: {r.run_sheet!r} is already the place of "
                                  f"{by_label[r.run_sheet].declared}")
            by_label[r.run_sheet] = r
        elif r.after:
            after.setdefault(r.after, []).append(r)
        else:
            raise PacingError(f"{r.declared}: the row needs its place in the {plan}: run-sheet: <label> or after: <label>")
    out = []
    for label in labels:
        if label in by_label:
            out.append(by_label[label])
        out += after.get(label, [])
    return out


def _full_plan() -> list[Segment]:
    labels = _run_sheet_labels()
    session = _in_session_order(_rows("session", labels), labels, "session")
    claimed = {s.run_sheet for s in session}
    unclaimed = [label for label in labels if label not in claimed]
    if unclaimed:
        raise PacingError(f"book/{book.the('run-sheet')}.md: sections with no segment in the plan: {unclaimed} "
                          "(a page declares its segment as pacing: session: run-sheet: <label>)")
    for s in session:
        if s.mode != "break" and not s.run_sheet:
            raise PacingError(f"{s.declared}: mode: {s.mode} needs its run-sheet section (run-sheet: <label>); only a break has none")
    declared = _declared(_plan_page()).get("session-minutes")
    if not isinstance(declared, int):
        raise PacingError(f"{_where(_plan_page(), 'session-minutes')}: {declared!r} is not the session's minutes")
    total = sum(s.minutes for s in session)
    if total != declared:
        parts = ", ".join(f"{s.declared}: minutes: {s.minutes}" for s in session)
        raise PacingError(f"the session's segments add up to {total} minutes, not the {declared} of "
                          f"{_where(_plan_page(), 'session-minutes')} ({parts})")
    clock = 0
    for s in session:
        s.clock = f"{_clock(clock)}-{_clock(clock + s.minutes)}"
        clock += s.minutes
    return session + _self_study(session)


def _self_study(session: list[Segment]) -> list[Segment]:
    """The rows after the session: pages with a segment in class or lab in the session's order,
    then the others in the order of ``_toc.yml``; ``after: <page>`` follows that page's row."""
    rows = _rows("self-study", [])
    taught = [p for s in session for p in s.pages]
    toc = _toc_order()
    def rank(r):
        p = r.pages[0] if r.pages else ""
        return (0, taught.index(p)) if p in taught else (1, toc.index(p) if p in toc else len(toc), p)
    placed = sorted((r for r in rows if not r.after), key=rank)
    for r in rows:
        if r.after:
            at = [i for i, o in enumerate(placed) if r.after in o.pages]
            if not at:
                raise PacingError(f"{r.declared}: after: {r.after!r} has no self-study row to follow")
            placed.insert(at[0] + 1, r)
    for r in placed:
        r.clock = "after"
    return placed


def full_plan() -> list[Segment]:
    """The full lesson, in order: the session's segments with their clocks (computed from the
    minutes, in the order of the run sheet), then the self-study rows (clock ``after``)."""
    return _full_plan()


def short_plan() -> list[tuple[Segment, Segment]]:
    """(60-minute segment, 90-minute segment) for each row of the short lesson, in order: by
    each row's place (a page's row takes its page's place in the session, or says
    ``run-sheet:``/``after:``), then the self-study rows."""
    labels = _run_sheet_labels()
    place = {p: s.run_sheet for s in full_plan() if s.run_sheet for p in s.pages}
    rows = _rows("short", labels)
    timed, study = [], []
    for r in rows:
        if r.mode == "self-study":
            study.append(r)
            continue
        if not r.run_sheet and not r.after and r.pages:
            if r.pages[0] not in place:
                raise PacingError(f"{r.declared}: the page has no segment in the session to take its place from: "
                                  "say run-sheet: <label> or after: <label>")
            r.run_sheet = place[r.pages[0]]
        timed.append(r)
    ordered = _in_session_order(timed, labels, "short lesson") + study
    totals = short_plan_totals()
    for i, length in enumerate(totals):
        total = sum(r.short_minutes[i] for r in ordered)
        if total != length:
            parts = ", ".join(f"{r.declared}: minutes: {list(r.short_minutes)}" for r in ordered)
            raise PacingError(f"the short lesson's rows add up to {total} minutes in its {length}-minute version, "
                              f"not the {length} of {_where(_plan_page(), 'short-minutes')} ({parts})")
    out = []
    for r in ordered:
        out.append((replace(r, minutes=r.short_minutes[0]), replace(r, minutes=r.short_minutes[1])))
    return out


def short_plan_totals() -> tuple[int, int]:
    """The short lesson's two lengths, as the pacing-plan page declares them (``short-minutes``)."""
    lengths = _declared(_plan_page()).get("short-minutes")
    if not (isinstance(lengths, list) and len(lengths) == 2 and all(isinstance(m, int) for m in lengths)):
        raise PacingError(f"{_where(_plan_page(), 'short-minutes')}: {lengths!r} is not [60, 90]-like")
    return tuple(lengths)


def slides_title() -> str:
    """The deck's title: the book's (``title`` in _config.yml)."""
    return book.title()


# --- the plans' tables, written into the pacing-plan page (code/build/book_build/pages.py sync) ---------------

FULL_TABLE = ("% The table is generated from the pages' front matter (`pacing: session`, `pacing: self-study`) "
              "by code/build/book_build/pages.py (make notebooks): do not edit it here.")
SHORT_TABLE = ("% The table is generated from the pages' front matter (`pacing: short`) "
               "by code/build/book_build/pages.py (make notebooks): do not edit it here.")


FULL_SUMMARY = ("% The paragraph below is generated from the same declarations "
                "by code/build/book_build/pages.py (make notebooks): do not edit it here.")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def full_summary() -> str:
    """What the full plan adds up to, and its longest stretch without a break, in words."""
    session = [s for s in full_plan() if s.clock != "after"]
    total = sum(s.minutes for s in session)
    taught = sum(s.minutes for s in session if s.mode in ("in class", "lab"))
    breaks = [s.minutes for s in session if s.mode == "break"]
    buffer = sum(s.minutes for s in session if s.mode == "buffer")
    stretches, run = [], 0
    for s in session:
        run = 0 if s.mode == "break" else run + s.minutes
        if s.mode != "buffer":  # the buffer is time in hand, not teaching
            stretches.append(run)
    count = {1: "one break", 2: "two breaks", 3: "three breaks"}.get(len(breaks), f"{len(breaks)} breaks")
    each = f"{breaks[0]} minutes" + (" each" if len(breaks) > 1 else "") if len(set(breaks)) == 1 else \
        f"{_and([str(b) for b in breaks])} minutes"
    return (f"The segments add up to {total} minutes: {taught} of teaching and practice, {count} of "
            f"{each}, and {buffer} minutes of buffer. The longest stretch without a break is "
            f"{max(stretches)} minutes.\n")


def _row(cells: list) -> str:
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"


def _docs(names: list[str]) -> str:
    return ", ".join(f"{{doc}}`{p}`" for p in names)


def full_table() -> str:
    lines = [_row(["Clock", "Minutes", "Segment", "Page", "Mode"]), "|---|---|---|---|---|"]
    lines += [_row([s.clock, s.minutes, s.title, _docs(s.pages), s.mode]) for s in full_plan()]
    return "\n".join(lines) + "\n"


def short_table() -> str:
    rows = short_plan()
    lines = [_row(["Segment", "Page", "Mode", "60 min", "90 min", "What to select"]), "|---|---|---|---|---|---|"]
    lines += [_row([a.title, _docs(a.pages), a.mode, a.minutes, b.minutes, a.select]) for a, b in rows]
    t60, t90 = short_plan_totals()
    lines.append(_row(["**Total**", "", "", f"**{t60}**", f"**{t90}**", ""]))
    return "\n".join(lines) + "\n"


def with_tables(text: str) -> str:
    """The pacing-plan page's text with both tables generated below their marker lines
    (:data:`FULL_TABLE`, :data:`SHORT_TABLE`, then a blank line, then the table), and the
    full plan's summary right below its marker line (:data:`FULL_SUMMARY`)."""
    for marker, table in ((FULL_TABLE, full_table), (SHORT_TABLE, short_table)):
        pattern = re.compile(r"^" + re.escape(marker) + r"\n\n(?:\|.*\n)*", re.MULTILINE)
        if not pattern.search(text):
            raise PacingError(f"book/{_plan_page()}.md: the line {marker!r}, then a blank line, marks where the table goes")
        text = pattern.sub(lambda m: marker + "\n\n" + table(), text, count=1)
    pattern = re.compile(r"^" + re.escape(FULL_SUMMARY) + r"\n(?:.+\n)*", re.MULTILINE)
    if not pattern.search(text):
        raise PacingError(f"book/{_plan_page()}.md: the line {FULL_SUMMARY!r} marks where the plan's summary goes")
    return pattern.sub(lambda m: FULL_SUMMARY + "\n" + full_summary(), text, count=1)


BUDGET = re.compile(r"^(\d+)(?:-(\d+))? minutes(, optional)?$")


def budgets() -> dict[str, tuple[int, int, bool]]:
    """page -> (low, high, optional) from each page's declared time (``book_build.pages``)."""
    out = {}
    for page, value in book.times().items():
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
    if book.kind(page) == "exercises":
        minutes = sum(int(m.group(1)) for h in article.select("h2") if (m := EXERCISE_MINUTES.search(h.get_text(" ", strip=True).replace("#", "").strip())))
    for el in article.select(".cell, div.highlight, div.math, span.katex-display, figure"):
        el.decompose()
    words = len(re.findall(r"[A-Za-z0-9][\w'’.-]*", article.get_text(" ")))
    return Reading(page, words, code, output, figures, display, minutes)


# The run sheet's headings carry their segment's clock, minutes and mode, generated from the
# plan like its tables (a new section may be written "(run-x)=" then "## Title"; make notebooks
# adds the rest).
RUN_TITLE = re.compile(r"^\(([\w-]+)\)=\n## (.+?)(?: \(\d+:\d\d-\d+:\d\d, \d+ minutes(?:, [a-z ]+)?\))?[ \t]*$", re.MULTILINE)


def with_run_sheet_clocks(text: str) -> str:
    """The run sheet's text with each section's heading ending in its segment's
    ``(clock, N minutes, mode)``, from the plan."""
    by_label = {s.run_sheet: s for s in full_plan() if s.run_sheet}

    def heading(m: re.Match) -> str:
        s = by_label[m.group(1)]  # every label has its segment (full_plan checks)
        return f"({m.group(1)})=\n## {m.group(2)} ({s.clock}, {s.minutes} minutes, {s.mode})"
    return RUN_TITLE.sub(heading, text)


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
    text = text if text is not None else book.path(book.the("run-sheet")).read_text()
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
