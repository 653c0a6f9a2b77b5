"""The teaching kit refers to exercises, quiz questions, figures and equations by label.

The run sheet, the instructor notes, the objectives' plan, the slides' manifest and the
generators of the slides and the handout must not type a number that the build makes
("Exercise 3", "Fig. 14", "(12)", "slide 24", "Bug 5", "Example 2"): a typed number
drifts when a page changes. They write {numref}/{ref}/{eq} (pages) or a label
(the slides the pages declare, ``pacing: session: slides:``), and the build supplies number
and title. Also: the lab and the peer
review of the run sheet use the same exercise.
"""

from __future__ import annotations

import re

import pytest
import yaml
from tests.book_files import ROOT

from book_build import built, pacing
from book_build import pages
from transformer_classroom import book

KIT = ["book/instructor_run_sheet.md", "book/instructor_notes.md", "book/objectives.md",
       "code/build/book_build/slides.py", "code/build/book_build/handout.py", "the pages' pacing declarations"]
TYPED = re.compile(
    r"\b(?:exercises?|examples?|fig(?:ure)?s?\.?|equations?|eqs?\.|slides?|bugs?|questions?|tables?|pitfalls?)"
    r"\s+\d+(?:\s*(?:,|and|or|-)\s*\d+)*\b", re.IGNORECASE)
EQ_NUMBER = re.compile(r"(?<![\w$\\])\((?:\d+\.)?\d+\)(?![\w$])")


def _prose(text: str) -> str:
    """Text without code blocks, inline code, maths and roles' targets."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    text = re.sub(r"\{[a-z:]+\}`[^`]*`", " ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.DOTALL)
    return text


def _kit_text(path: str) -> str:
    if path == KIT[-1]:  # what every page declares of the plans and the slides (code/build/book_build/pages.py)
        return "\n".join(yaml.safe_dump(book.front_matter(p)["pacing"], sort_keys=False)
                         for p in book.names() if "pacing" in book.front_matter(p))
    return (ROOT / path).read_text()


@pytest.mark.parametrize("path", KIT)
def test_no_hand_typed_numbers(path):
    text = _prose(_kit_text(path))
    found = [m.group(0) for m in TYPED.finditer(text)] + [m.group(0) for m in EQ_NUMBER.finditer(text)]
    assert not found, f"{path}: numbers typed by hand, cite the label instead: {found}"


def test_the_check_catches_typed_numbers():
    sample = "Do Exercise 3 and look at Fig. 14, equation (12) and slide 24; Exercises 1 and 2."
    found = TYPED.findall(_prose(sample)) + EQ_NUMBER.findall(_prose(sample))
    assert len(found) == 5, found
    assert not TYPED.findall(_prose("{numref}`ex-exercises-positional` and $W_1$ at 1:05"))


def _labels(text: str) -> set[str]:
    return set(re.findall(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([^`>]+)>?`", text))


def test_lab_and_peer_review_use_the_same_exercise():
    sheet = pacing.run_sheet()
    lab = next(s for s in sheet if s.mode == "lab" and "practice" in s.title.lower())
    review = next(s for s in sheet if "peer review" in s.title.lower())
    lab_ex = {l for l in _labels(lab.fields["show"]) if l.startswith("ex-")}
    review_ex = {l for l in _labels(review.fields["show"]) if l.startswith("ex-")}
    assert review_ex and review_ex <= lab_ex, (review_ex, lab_ex)


def test_the_graders_lab_is_the_run_sheets_lab():
    from transformer_classroom import grade

    lab = next(s for s in pacing.run_sheet() if s.mode == "lab" and "practice" in s.title.lower())
    assert {i.exercise for i in grade.select_items(assignment="lab")} == {
        l for l in _labels(lab.fields["show"]) if l.startswith("ex-")}


BOOK_PAGES = sorted((ROOT / "book").glob("*.md"))
HEADING = re.compile(r"^(?:#{1,6} .*|```\{(?:exercise|exercise-start|solution-start)\}.*)$", re.M)
PART = re.compile(r"\bparts?\s+\d+\b", re.IGNORECASE)


@pytest.mark.parametrize("path", BOOK_PAGES, ids=lambda p: p.name)
def test_no_page_heading_types_a_number(path):
    """Headings and exercise titles ("## Bug 1: ...", "## Example 2: ...") carry no number of
    their own: the build numbers sections and exercises; prose cites them by label, and no page
    counts itself a "Part 3 of the lesson"."""
    text = re.sub(r"```\{code-cell\}.*?```", " ", (ROOT / path).read_text(), flags=re.DOTALL)
    headings = HEADING.findall(text)
    found = [h for h in headings if TYPED.search(_prose(h))]
    found += [m.group(0) for m in PART.finditer(_prose(text))]
    found += [m.group(0) for m in re.finditer(r"\b(?:examples?|bugs?)\s+\d+\b", _prose(text), re.IGNORECASE)]
    assert not found, f"{path.name}: numbers typed by hand, make them generated: {found}"


def test_the_heading_check_catches_typed_numbers():
    sample = "## Bug 1: a mask\n\n```{exercise-start} Example 2: x\n```\n\nPart 3 of the lesson; see Bug 2.\n"
    headings = HEADING.findall(sample)
    assert [h for h in headings if TYPED.search(_prose(h))] == headings and len(headings) == 2
    assert PART.findall(sample) and re.findall(r"\bbugs?\s+\d+\b", sample, re.IGNORECASE)


def test_on_the_exercises_page_exercise_n_is_in_section_n():
    """"Do 6.2" means one thing: on the exercises page each numbered exercise sits in the
    section of the same number (its intro is not a numbered section)."""
    soup = built.page(book.the("exercises"))
    numbered = [(el, built.lookup(el["id"])) for el in soup.select("div.exercise[id]")]
    numbered = [(el, ref) for el, ref in numbered if ref.number]
    assert numbered, "no numbered exercise on the built exercises page"
    for el, ref in numbered:
        heading = built.heading_of(el)
        section = re.match(r"\s*(\d+(?:\.\d+)+)", heading.get_text(" ", strip=True)) if heading else None
        assert section, f"{ref.label}: no numbered section around it"
        assert ref.number.split()[-1] == section.group(1).rstrip("."), (ref.number, heading.get_text(" ", strip=True))


def test_every_quiz_slide_is_a_question_with_options():
    """A quiz slide is a poll: the room answers by option, so its question has options."""
    from transformer_classroom import lms

    kinds = {q.label: q.kind for p in lms.read_quizzes(ROOT / "book") for q in p.questions}
    slides = [s["quiz"] for page in book.toc_pages(ROOT) for mode in (book.front_matter(page, ROOT).get("pacing") or {}).values()
              if isinstance(mode, dict) for s in mode.get("slides") or [] if isinstance(s, dict) and "quiz" in s]
    assert slides, "no quiz slide in the pages' pacing"
    assert {label: kinds[label] for label in slides if kinds[label] not in ("choice", "truefalse")} == {}
