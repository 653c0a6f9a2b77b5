"""The pacing plans of the instructor notes, the pages' time budgets and the run sheet
agree (tools/pacing.py reads all three from the book's sources).

* The full lesson is 150 minutes with a buffer, a break before every hour is up, a clock
  that runs without gaps, and every segment marked in class, lab, reference, break or buffer.
* A segment taught in class or in the lab gets a time inside its page's ``Time:`` budget;
  every page with a budget has a place in the full plan (taught or reference).
* The short lesson adds up to 60 and 90 minutes, each row within its page's budget.
* The run sheet has one section per segment of the full plan, with the same clock and
  minutes, and each section says what to show, what to skip, what to ask, what answer to
  expect and what to draw on the board.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import ROOT, _toc_files

import yaml

spec = importlib.util.spec_from_file_location("pacing", ROOT / "tools" / "pacing.py")
pacing = importlib.util.module_from_spec(spec)
sys.modules["pacing"] = pacing  # dataclasses look their module up there
spec.loader.exec_module(pacing)

TOTAL = 150
MAX_WITHOUT_BREAK = 60
TIMED = {"in class", "lab"}


@pytest.fixture(scope="module")
def plan():
    return pacing.full_plan()


def test_full_lesson_adds_up_to_150_minutes_with_a_buffer(plan):
    assert sum(s.minutes for s in plan) == TOTAL
    assert any(s.mode == "buffer" and s.minutes >= 5 for s in plan), "no buffer of at least 5 minutes"
    assert all(s.mode in pacing.MODES for s in plan), [s.mode for s in plan]


def test_clock_runs_without_gaps(plan):
    timed = [s for s in plan if s.start is not None]
    assert timed[0].start == 0 and timed[-1].end == TOTAL
    for before, after in zip(timed, timed[1:]):
        assert before.end == after.start, f"gap or overlap between {before.title!r} and {after.title!r}"
    for s in timed:
        assert s.end - s.start == s.minutes, f"{s.title}: clock {s.clock} vs {s.minutes} minutes"
    assert all(s.minutes == 0 for s in plan if s.start is None), "an untimed row with minutes"


def test_a_break_every_hour(plan):
    run = 0
    for s in plan:
        if s.start is None:
            continue
        run = 0 if s.mode == "break" else run + s.minutes
        assert run <= MAX_WITHOUT_BREAK or s.mode == "buffer", f"{run} minutes without a break at {s.title!r}"


def test_segments_fit_their_pages_budgets(plan):
    """The minutes a page gets in class and in the lab (added over its segments: a lab may
    be split by a break) lie within the page's own ``Time:`` budget."""
    taught: dict[str, int] = {}
    for s in plan:
        if s.mode in TIMED:
            for page in s.pages:
                taught[page] = taught.get(page, 0) + s.minutes
    wrong = []
    for page, minutes in taught.items():
        budget = pacing.page_budget(page)
        if budget and not budget[0] <= minutes <= budget[1]:
            wrong.append(f"{page}: {minutes} min in the plan, the page says {budget[0]}-{budget[1]}")
    assert not wrong, "\n".join(wrong)


def test_every_page_with_a_budget_is_in_the_plan(plan):
    """Every page with a time budget is scheduled (taught or reference), unless its time
    note calls it optional (reading beyond the session)."""
    toc = _toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    pages = [f.split("/")[-1] for f in toc]
    budgeted = {p for p in pages if pacing.page_budget(p) and not pacing.page_is_optional(p)}
    planned = {p for s in plan for p in s.pages}
    assert budgeted <= planned, f"pages with a time budget missing from the plan: {sorted(budgeted - planned)}"


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
        if a.mode == "reference":
            assert a.minutes == b.minutes == 0


def test_run_sheet_follows_the_plan(plan):
    sheet = pacing.run_sheet()
    segments = [s for s in plan if s.start is not None and s.mode != "break"]
    assert [(r.clock, r.minutes) for r in sheet] == [(s.clock, s.minutes) for s in segments]
    assert [r.mode for r in sheet] == [s.mode for s in segments]
    assert [r.number for r in sheet] == list(range(1, len(sheet) + 1))


def test_run_sheet_sections_are_complete():
    for section in pacing.run_sheet():
        if section.mode == "buffer":
            continue
        missing = {"show", "skip", "ask the room", "expect", "board"} - set(section.fields)
        assert not missing, f"run sheet {section.number} ({section.title}) lacks {missing}"
        assert all(len(v.split()) >= 4 for v in section.fields.values()), section.fields


def test_the_notes_say_what_the_plan_adds_up_to(plan):
    """The sentence under the plan states its sums: checked against the table."""
    import re

    text = " ".join(pacing.NOTES.read_text().split())
    m = re.search(
        r"add up to (\d+) minutes: (\d+) of teaching and practice, two breaks of (\d+) and (\d+) "
        r"minutes, and (\d+) minutes of buffer\. The longest stretch without a break is (\d+) minutes",
        text,
    )
    assert m, "the sentence with the plan's sums is missing from the instructor notes"
    total, taught, break1, break2, buffer, stretch = map(int, m.groups())
    breaks = [s.minutes for s in plan if s.mode == "break"]
    longest, run = 0, 0
    for s in plan:
        if s.start is None:
            continue
        run = 0 if s.mode == "break" else run + s.minutes
        longest = max(longest, run if s.mode != "buffer" else longest)
    assert total == sum(s.minutes for s in plan)
    assert taught == sum(s.minutes for s in plan if s.mode in TIMED)
    assert [break1, break2] == breaks
    assert buffer == sum(s.minutes for s in plan if s.mode == "buffer")
    assert stretch == longest
