"""The teaching kit refers to exercises, quiz questions, figures and equations by label.

The run sheet, the instructor notes, the objectives' plan, the slides' manifest and the
generators of the slides and the handout must not type a number that the build makes
("Exercise 3", "Fig. 14", "(12)", "slide 24", "Bug 5", "Example 2"): a typed number
drifts when a page changes. They write {numref}/{ref}/{eq} (pages) or a label
(tools/slides.yml), and the build supplies number and title. Also: the lab and the peer
review of the run sheet use the same exercise.
"""

from __future__ import annotations

import re

import pytest
from book_files import ROOT

import pacing

KIT = ["book/instructor_run_sheet.md", "book/instructor_notes.md", "book/objectives.md",
       "tools/slides.yml", "tools/slides.py", "tools/handout.py"]
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


@pytest.mark.parametrize("path", KIT)
def test_no_hand_typed_numbers(path):
    text = _prose((ROOT / path).read_text())
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
