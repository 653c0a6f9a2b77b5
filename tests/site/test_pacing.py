"""The pacing plans of the instructor notes, the pages' time budgets and the run sheet
agree (code/build/book_build/pacing.py reads all three from the book's sources), and each page's time
fits its length (measured on the built page: 200 words a minute, code and output slower).

* Each page declares its rows of both plans in its front matter (``pacing:``,
  code/build/book_build/pages.py); the plan page's two tables are generated from them, up to date, with
  the clocks computed from the minutes in the run sheet's order; every declared row is in
  the plan; a wrong declaration (an unknown mode, a run-sheet label that does not exist,
  minutes that do not add up) fails with a message naming the page and the key.

* The full lesson is 150 minutes with a buffer, a break before every hour is up, a clock
  that runs without gaps, and every segment marked in class, lab, break or buffer; the
  rows after it are self-study, each with its own time.
* A page's class and lab minutes never exceed its budget; with its self-study minutes they
  fall inside it; a segment shorter than its page says in the run sheet what to assign.
  Every page with a budget that is not optional has a place in the full plan; a page whose
  time is optional and has no row is self-study for all of it (a new "going further"
  page needs no row).
* Each page declares its time in its front matter (``book_build.pages``) and announces it
  as ``{{ time }}``, never typed; a page announcing another's prints the generated
  ``{{ time_<page> }}``, up to date; the time it takes to read and run the built page
  lies inside it.
* The short lesson adds up to 60 and 90 minutes, each row within its page's budget.
* The run sheet has one section per segment of the full plan, with the same clock and
  minutes, and each section says what to show, what to skip, what to ask, what answer to
  expect and what to draw on the board. Its sections are labelled, never numbered by
  hand (the build numbers them).
"""

from __future__ import annotations

import re
import shutil

from book_build import pacing
from book_build import pages
from transformer_classroom import book
import pytest
import yaml
from tests.book_files import ROOT

TOTAL = 150
MAX_WITHOUT_BREAK = 60
TIMED = {"in class", "lab"}


@pytest.fixture(scope="module")
def plan():
    return pacing.full_plan()


def test_full_lesson_adds_up_to_150_minutes_with_a_buffer(plan):
    assert sum(s.minutes for s in plan if s.start is not None) == TOTAL
    assert any(s.mode == "buffer" and s.minutes >= 5 for s in plan), "no buffer of at least 5 minutes"
    assert all(s.mode in pacing.MODES for s in plan), [s.mode for s in plan]


def test_clock_runs_without_gaps(plan):
    timed = [s for s in plan if s.start is not None]
    assert timed[0].start == 0 and timed[-1].end == TOTAL
    for before, after in zip(timed, timed[1:]):
        assert before.end == after.start, f"gap or overlap between {before.title!r} and {after.title!r}"
    for s in timed:
        assert s.end - s.start == s.minutes, f"{s.title}: clock {s.clock} vs {s.minutes} minutes"
    after = [s for s in plan if s.start is None]
    assert after and all(s.mode == "self-study" and s.minutes > 0 and s.pages for s in after), \
        [(s.title, s.mode, s.minutes) for s in after]
    assert all(s.mode != "self-study" for s in timed), "a self-study row inside the session's clock"


def test_a_break_every_hour(plan):
    run = 0
    for s in plan:
        if s.start is None:
            continue
        run = 0 if s.mode == "break" else run + s.minutes
        assert run <= MAX_WITHOUT_BREAK or s.mode == "buffer", f"{run} minutes without a break at {s.title!r}"


def _minutes_by_page(plan, modes):
    out: dict[str, int] = {}
    for s in plan:
        if s.mode in modes:
            for page in s.pages:
                out[page] = out.get(page, 0) + s.minutes
    return out


def test_segments_fit_their_pages_budgets(plan):
    """A page's minutes in class and in the lab (added over its segments) never exceed its
    budget, and with its self-study minutes they lie inside it."""
    taught = _minutes_by_page(plan, TIMED)
    study = _minutes_by_page(plan, {"self-study"})
    wrong = []
    for page in sorted(set(taught) | set(study)):
        budget = pacing.page_budget(page)
        if budget is None:
            continue
        t, total = taught.get(page, 0), taught.get(page, 0) + study.get(page, 0)
        if t > budget[1] or not budget[0] <= total <= budget[1]:
            wrong.append(f"{page}: {t} min in the session + {study.get(page, 0)} self-study, the page takes {budget[0]}-{budget[1]}")
    assert not wrong, "\n".join(wrong)


def test_a_segment_shorter_than_its_page_assigns_the_rest(plan):
    sheet = pacing.run_sheet()
    segments = [s for s in plan if s.start is not None and s.mode != "break"]
    study = _minutes_by_page(plan, {"self-study"})
    for seg, section in zip(segments, sheet):
        for page in seg.pages:
            budget = pacing.page_budget(page)
            if seg.mode in TIMED and budget and seg.minutes < budget[0]:
                assert "assign" in section.fields, f"run sheet {section.label}: {page} takes {budget[0]}+ min, {seg.minutes} in class, nothing assigned"
                assert study.get(page), f"{page}: no self-study row for the rest of the page"


def test_every_page_with_a_budget_is_in_the_plan(plan):
    """Every page with a time budget has a place in the plan: taught, or self-study (an
    optional time without a row is self-study for all of it)."""
    toc = book.toc_files(ROOT)
    pages = [f.split("/")[-1] for f in toc]
    budgeted = {p for p in pages if pacing.page_budget(p) and not pacing.page_is_optional(p)}
    planned = {p for s in plan for p in s.pages}
    assert budgeted <= planned, f"pages with a time budget missing from the plan: {sorted(budgeted - planned)}"
    assert set(pacing.budgets()) <= set(pages), "a time budget for a page that is not in the book"


def test_announced_times_are_the_substitution():
    """A page announces its own time with {{ time }}, never with typed minutes; a page that
    announces another page's time prints {{ time_<page> }}, generated from that page's
    front matter and up to date (code/build/book_build/pages.py)."""
    wrong = []
    for page in pacing.budgets():
        text = book.path(page).read_text()
        if "{{ time }}" not in text:
            wrong.append(f"{page}: no {{{{ time }}}}")
    for page in book.names():
        text = book.path(page).read_text()
        for m in re.finditer(r"Time:\s*\**\s*\d", text):
            wrong.append(f"{page}: typed time {text[m.start():m.start() + 30]!r}")
    assert not wrong, wrong
    assert not pages.sync(check=True), "stale times of other pages: run `make notebooks`"


def test_generated_times_follow_the_pages(tmp_path, monkeypatch):
    """The generator writes another page's time below the marker, and takes it away when
    the page no longer announces it."""
    folder = tmp_path / "book"
    folder.mkdir()
    (folder / "a.md").write_text("---\nmyst:\n  substitutions:\n    time: 5 minutes\n---\n# A\n\n{{ time }}, then b: {{ time_b }}\n")
    (folder / "b.md").write_text("---\nmyst:\n  substitutions:\n    time: 10-12 minutes, optional\n---\n# B\n")
    monkeypatch.setenv(book.ROOT_ENV, str(tmp_path))
    assert pages.sync(check=False) == ["book/a.md: the times of other pages"]
    assert book.substitutions("a") == {"time": "5 minutes", "time_b": "10-12 minutes, optional"}
    assert pages.sync(check=True) == []
    (folder / "a.md").write_text(book.path("a").read_text().replace("{{ time_b }}", "soon"))
    pages.sync(check=False)
    assert book.substitutions("a") == {"time": "5 minutes"}
    (folder / "c.md").write_text("# C\n\n{{ time_nowhere }}\n")
    with pytest.raises(ValueError, match="nowhere"):
        pages.sync(check=True)


@pytest.mark.book
@pytest.mark.parametrize("page", sorted(pacing.budgets()))
def test_each_page_reads_within_its_time(page):
    """The built page takes, at the rates of code/build/book_build/pacing.py, no longer than its budget, and
    its budget overstates it by at most a quarter (an honest number, not a generous one)."""
    from tests.book_files import HTML

    if not (HTML / "book" / f"{page}.html").exists():
        pytest.fail("run `make book` first", pytrace=False)
    low, high = pacing.page_budget(page)
    r = pacing.reading_minutes(page, HTML)
    assert r.minutes <= high, f"{page} takes {r.minutes:.1f} min ({r}), the page says {low}-{high}"
    assert low <= max(5, 1.25 * r.minutes), f"{page} takes {r.minutes:.1f} min, the page says {low}-{high}"


def test_short_lesson_adds_up():
    rows = pacing.short_plan()
    total_60, total_90 = pacing.short_plan_totals()
    assert (total_60, total_90) == (60, 90)
    assert sum(a.minutes for a, _ in rows) == 60
    assert sum(b.minutes for _, b in rows) == 90
    for a, b in rows:
        assert a.mode in pacing.MODES
        assert a.minutes <= b.minutes, a.title
        if a.mode in TIMED:
            for page in a.pages:
                budget = pacing.page_budget(page)
                assert not budget or b.minutes <= budget[1], f"{a.title}: {b.minutes} min > page budget {budget}"
        if a.mode == "self-study":
            assert a.minutes == b.minutes == 0


def test_run_sheet_follows_the_plan(plan):
    sheet = pacing.run_sheet()
    segments = [s for s in plan if s.start is not None and s.mode != "break"]
    assert [(r.clock, r.minutes) for r in sheet] == [(s.clock, s.minutes) for s in segments]
    assert [r.mode for r in sheet] == [s.mode for s in segments]
    labels = [r.label for r in sheet]
    assert len(set(labels)) == len(labels), labels
    typed = [r.title for r in sheet if re.match(r"\d+\.", r.title)]
    assert not typed, f"run-sheet headings with a typed number (the build numbers them): {typed}"
    plain = re.findall(r"^## \d+\. .*$", pacing.RUN_SHEET.read_text(), re.MULTILINE)
    assert not plain, f"run-sheet sections without a label, or with a typed number: {plain}"


def test_run_sheet_sections_are_complete():
    for section in pacing.run_sheet():
        if section.mode == "buffer":
            continue
        missing = {"show", "skip", "ask the room", "expect", "board"} - set(section.fields)
        assert not missing, f"run sheet {section.label} ({section.title}) lacks {missing}"
        assert all(len(v.split()) >= 4 for v in section.fields.values()), section.fields


def test_the_notes_say_what_the_plan_adds_up_to(plan):
    """The sentence under the plan states its sums (generated with the table by
    ``pacing.full_summary``): checked here against the table, computed anew."""
    text = " ".join(pacing.NOTES.read_text().split())
    m = re.search(
        r"add up to (\d+) minutes: (\d+) of teaching and practice, two breaks of (\d+)(?: and (\d+))? "
        r"minutes(?: each)?, and (\d+) minutes of buffer\. The longest stretch without a break is (\d+) minutes",
        text,
    )
    assert m, "the sentence with the plan's sums is missing from the instructor notes"
    total, taught, break1, break2, buffer, stretch = (int(g) if g else None for g in m.groups())
    break2 = break1 if break2 is None else break2  # "two breaks of 8 minutes each"
    breaks = [s.minutes for s in plan if s.mode == "break"]
    longest, run = 0, 0
    for s in plan:
        if s.start is None:
            continue
        run = 0 if s.mode == "break" else run + s.minutes
        longest = max(longest, run if s.mode != "buffer" else longest)
    assert total == sum(s.minutes for s in plan if s.start is not None)
    assert taught == sum(s.minutes for s in plan if s.mode in TIMED)
    assert [break1, break2] == breaks
    assert buffer == sum(s.minutes for s in plan if s.mode == "buffer")
    assert stretch == longest


# --- the plans are declared by the pages -------------------------------------------------------

def _rows(page: str, slot: str) -> list[dict]:
    rows = (book.front_matter(page).get("pacing") or {}).get(slot) or []
    return rows if isinstance(rows, list) else [rows]


def _row_pages(page: str, row: dict) -> list[str]:
    return list(row.get("pages", [])) if page == book.the("pacing-plan") else [page]


def test_each_pages_declared_rows_are_in_the_plans(plan):
    """Every row a page declares (``pacing: session``, ``self-study``, ``short``) is a row of
    the plan it belongs to, and a row of the table the instructor notes print; and the plans
    have no row that no page declares."""
    text = pacing.NOTES.read_text()
    short = pacing.short_plan()
    declared_full, declared_short = 0, 0
    for page in book.names():
        for slot in ("session", "self-study"):
            for row in _rows(page, slot):
                declared_full += 1
                mode = row.get("mode", "self-study")
                found = [s for s in plan if (s.title, s.minutes, s.mode, s.pages, s.after) ==
                         (row["segment"], row["minutes"], mode, _row_pages(page, row), row.get("after"))]
                assert len(found) == 1, f"book/{page}.md: pacing: {slot}: {row['segment']!r} is not (once) in the plan"
                docs = ", ".join(f"{{doc}}`{p}`" for p in found[0].pages)
                line = f"| {found[0].clock} | {row['minutes']} | {row['segment']} | {docs or ''}"
                assert line.replace("|  ", "| ").rstrip() in text, f"book/{page}.md: pacing: {slot}: no row {line!r} in the printed plan"
        for row in _rows(page, "short"):
            declared_short += 1
            found = [(a, b) for a, b in short if (a.title, a.mode, [a.minutes, b.minutes], a.pages, a.select) == (row["segment"], row["mode"], row["minutes"], _row_pages(page, row), row.get("select", ""))]
            assert len(found) == 1, f"book/{page}.md: pacing: short: {row['segment']!r} is not (once) in the short plan"
            assert f"| {row['segment']} |" in text and f"| {row['minutes'][0]} | {row['minutes'][1]} | {row.get('select', '')} |" in text
    assert declared_full == len(plan) and declared_short == len(short)


def test_the_printed_plans_are_generated_and_up_to_date():
    """The instructor notes print the tables code/build/book_build/pacing.py writes from the declarations,
    below their marker lines (`make notebooks` regenerates them)."""
    text = pacing.NOTES.read_text()
    assert pacing.FULL_TABLE in text and pacing.SHORT_TABLE in text
    assert pacing.full_table() in text and pacing.short_table() in text
    assert pacing.with_tables(text) == text, "the pacing tables are stale: run `make notebooks`"
    sheet = pacing.RUN_SHEET.read_text()
    assert pacing.with_run_sheet_clocks(sheet) == sheet, "the run sheet's clocks are stale: run `make notebooks`"


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A copy of the book's pages and toc, which pages.py and pacing.py then read; the
    returned ``edit(page, slot, key, change)`` changes one key of the first row a page
    declares in a slot of its ``pacing:`` (``change``: the new value, or a function of the old)."""
    (tmp_path / "book").mkdir()
    for md in book.pages_folder().glob("*.md"):
        shutil.copy(md, tmp_path / "book" / md.name)
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    monkeypatch.setenv(book.ROOT_ENV, str(tmp_path))

    def edit(page: str, slot: str, key: str, change) -> None:
        path = tmp_path / "book" / f"{page}.md"
        head, rest = book.split(path.read_text())
        data = yaml.safe_load(head)
        rows = data["pacing"][slot]
        row = rows[0] if isinstance(rows, list) else rows
        row[key] = change(row.get(key)) if callable(change) else change
        path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n" + rest)
    return edit


def _row_of(plan, page: str):
    return next(i for i, s in enumerate(plan) if s.run_sheet and page in s.pages)


def test_clocks_follow_the_declared_minutes(scratch):
    """Two minutes moved from the buffer to a page's segment move every clock between them;
    the generated table and the run sheet's headings follow, once `make notebooks` ran."""
    before = pacing.full_plan()
    buffer = next(i for i, s in enumerate(before) if s.mode == "buffer")
    taught = _row_of(before, "foundations")
    scratch("foundations", "session", "minutes", lambda m: m + 2)
    plan_page = book.path(book.the("pacing-plan"))
    head, rest = book.split(plan_page.read_text())
    data = yaml.safe_load(head)
    next(r for r in data["pacing"]["session"] if r["mode"] == "buffer")["minutes"] -= 2
    plan_page.write_text("---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n" + rest)
    after = pacing.full_plan()
    for i, (old, new) in enumerate(zip(before, after)):
        shift = (2 if taught < i <= buffer else 0, 2 if taught <= i < buffer else 0)
        if old.start is not None:
            assert (new.start, new.end) == (old.start + shift[0], old.end + shift[1]), (old.title, old.clock, new.clock)
    moved = after[taught + 1]
    assert f"| {moved.clock} | {moved.minutes} | {moved.title} |" in pacing.full_table()
    assert {f"book/{book.the('pacing-plan')}.md: the pacing plans' tables",
            f"book/{book.the('run-sheet')}.md: the clocks of its sections"} <= set(pages.sync(check=True))
    pages.sync(check=False)
    assert [(r.clock, r.minutes) for r in pacing.run_sheet()] == [(s.clock, s.minutes) for s in after if s.run_sheet]
    assert not pages.sync(check=True)


PLAN_PAGE = book.the("pacing-plan")


@pytest.mark.parametrize("page, slot, key, change, message", [
    ("foundations", "session", "mode", "lecture",
     r"book/foundations\.md: pacing: session: mode: 'lecture' is not one of"),
    ("foundations", "session", "run-sheet", "run-nowhere",
     r"book/foundations\.md: pacing: session: run-sheet: 'run-nowhere' is not a section of the run sheet"),
    (PLAN_PAGE, "session", "after", "run-nowhere",
     rf"book/{PLAN_PAGE}\.md: pacing: session\[0\]: after: 'run-nowhere' is not a section of the run sheet"),
    ("foundations", "session", "minutes", lambda m: m + 1,
     rf"add up to \d+ minutes, not the \d+ of book/{PLAN_PAGE}\.md: pacing: session-minutes "
     r"\(.*book/foundations\.md: pacing: session: minutes: \d+"),
    ("encoder", "short", "minutes", lambda m: [m[0], m[1] + 1],
     rf"rows add up to \d+ minutes in its \d+-minute version, not the \d+ of book/{PLAN_PAGE}\.md: pacing: short-minutes "
     r"\(.*book/encoder\.md: pacing: short: minutes: \["),
    ("foundations", "session", "room", "B", r"book/foundations\.md: pacing: session: unknown key \['room'\]"),
    ("quiz_code", "self-study", "after", "nowhere",
     r"book/quiz_code\.md: pacing: self-study: after: 'nowhere' has no self-study row"),
])
def test_a_wrong_declaration_names_the_page_and_key(scratch, page, slot, key, change, message):
    scratch(page, slot, key, change)
    with pytest.raises(pacing.PacingError, match=message):
        pacing.full_plan()
        pacing.short_plan()


def test_the_lab_leaves_time_beyond_its_exercises(plan):
    """A lab segment is longer than the times of the exercises it sets (those its slides
    name; each exercise's time is in its section's heading): the first minutes go to showing
    a self-check and to students whose notebook has to start again."""
    for lab in [s for s in plan if s.mode == "lab" and book.the("exercises") in s.pages]:
        text = book.path(book.the("exercises")).read_text()
        named = set(re.findall(r"\{ref\}`(ex-[\w-]+)`", yaml.safe_dump(lab.slides)))
        assert named, f"{lab.title}: its slides name no exercise"
        minutes = 0
        for heading, body in re.findall(r"^## (.*)\n((?:(?!^## ).*\n)*)", text, re.MULTILINE):
            labels = set(re.findall(r"^:label: (ex-[\w-]+)$", body, re.MULTILINE))
            if labels & named:
                minutes += int(re.search(r"\((\d+) minutes\)$", heading).group(1))
        assert minutes, f"{lab.title}: no section of the exercises holds {sorted(named)}"
        assert lab.minutes > minutes, f"{lab.title}: {lab.minutes} minutes for {minutes} minutes of exercises"
