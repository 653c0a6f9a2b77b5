"""The multiple-choice key is fair: the right answers are spread over the positions and are
not systematically the longest option.

A single-choice question is a section (``##`` or ``###``) of a page that declares
``kind: quiz`` (``book_build.pages``), read as the book shows it
(``transformer_classroom.quiz_blocks.page_text``: with the questions its chapters write for
it), with its own options (``- **A.** ...``, or a numbered
list ``1. ...``, the first option being A) and an answer box that opens with one letter or
number (``**B.**``, ``**2.**``). The rules, over all such questions together (N of them):

1. no letter is the key of more than ceil(0.4 * N) questions;
2. with N >= 4, at least three different letters are keys;
3. the key is the strictly longest option (in characters, markup removed) in at most
   ceil(N / 3) questions.

The bounds never decrease when a question is added, so a new question that breaks them
is fixed in itself: the failure names the letters its key may take (and
``test_a_new_question_always_has_a_fair_place`` checks that there is one, for a question
of two to five options), never another question.
"""

import math
import re
from collections import Counter

from book_build import pages
from transformer_classroom import book
import pytest

from transformer_classroom.quiz_blocks import page_text

OPTION = re.compile(r"^(?:- \*\*([A-Z])\.\*\*|(\d)\.)\s+(.*)$")
KEY = re.compile(r"^\*\*([A-Z]|\d)(?:[.,]\*\*|\*\*[.,])")
LETTERS = "ABCDEFGHI"


def _letter(s: str) -> str:
    return LETTERS[int(s) - 1] if s.isdigit() else s


def _plain(text: str) -> str:
    return re.sub(r"[*`$]|\{[a-z]+\}", "", text).strip()


def single_choice(text: str) -> list[dict]:
    """``[{"where", "options": {letter: text}, "key": letter}]`` of a quiz page."""
    questions = []
    for section in re.split(r"^#{2,3} ", text, flags=re.M)[1:]:
        title, body = section.split("\n", 1)
        options, current, key, in_answer = {}, None, None, False
        for line in body.splitlines():
            if not in_answer and (m := OPTION.match(line)):
                current = _letter(m.group(1) or m.group(2))
                options[current] = m.group(3)
            elif current and line.startswith("  ") and line.strip() and not in_answer:
                options[current] += " " + line.strip()
            elif line.startswith(("::::{admonition}", ":::{admonition}")):
                current, in_answer = None, True
            elif in_answer and key is None and (m := KEY.match(line)):
                key = _letter(m.group(1))
            elif line.strip() == "" and not in_answer:
                current = None
        if len(options) >= 2 and key in options:
            questions.append(
                {"where": title.strip(), "options": {k: _plain(v) for k, v in options.items()}, "key": key}
            )
    return questions


def all_questions() -> list[dict]:
    found = []
    for page in book.of_kind("quiz"):
        for q in single_choice(page_text(book.pages_folder(), page)):
            found.append({**q, "where": f"{page}.md: {q['where']}"})
    return found


def test_parser_reads_a_question():
    text = (
        "### Q\n\nWhich?\n\n- **A.** short\n- **B.** a much longer\n  option\n\n"
        "::::{admonition} Answer\n:class: dropdown quiz-answer\n**B.** Because.\n::::\n"
    )
    [q] = single_choice(text)
    assert q["key"] == "B" and q["options"]["B"] == "a much longer option"
    numbered = "## Q\n\nWhich?\n\n1. one\n2. two\n3. three\n\n:::{admonition} Answer\n:class: dropdown\n**3.** Yes.\n:::\n"
    [q] = single_choice(numbered)
    assert q["key"] == "C" and q["options"] == {"A": "one", "B": "two", "C": "three"}


def fair(questions: list[dict]) -> list[str]:
    """What breaks the rules in a set of questions (empty: fair)."""
    n = len(questions)
    counts = Counter(q["key"] for q in questions)
    wrong = []
    if max(counts.values()) > math.ceil(0.4 * n):
        wrong.append(f"one letter is the key too often: {dict(counts)}")
    if n >= 4 and len(counts) < 3:
        wrong.append(f"keys use only {sorted(counts)}")
    longest = [q["where"] for q in questions if _key_is_longest(q)]
    if len(longest) > math.ceil(n / 3):
        wrong.append(f"the key is the longest option in {len(longest)} of {n} questions: {longest}")
    return wrong


def _key_is_longest(q: dict) -> bool:
    lengths = {k: len(v) for k, v in q["options"].items()}
    top = max(lengths.values())
    return lengths[q["key"]] == top and list(lengths.values()).count(top) == 1


def fair_keys(questions: list[dict], n_options: int) -> list[str]:
    """The letters a new question's key (not its longest option) may take."""
    return [letter for letter in LETTERS[:n_options]
            if not fair(questions + [{"where": "new", "key": letter, "options": dict.fromkeys(LETTERS[:n_options], "same")}])]


@pytest.fixture(scope="module")
def questions():
    found = all_questions()
    assert found, (
        "no single-choice question found on the pages of kind: quiz: the parser expects options as "
        "'- **A.** text' and an answer box that opens with '**B.**'"
    )
    return found


def test_keys_are_spread_over_the_positions(questions):
    n = len(questions)
    counts = Counter(q["key"] for q in questions)
    listing = ", ".join(f"{q['where']} -> {q['key']}" for q in questions)
    hint = f"; a new question of four options may take its key at {fair_keys(questions[:-1], 4)}"
    assert max(counts.values()) <= math.ceil(0.4 * n), f"one letter is the key too often: {dict(counts)} ({listing}){hint}"
    if n >= 4:
        assert len(counts) >= 3, f"keys use only {sorted(counts)}: {listing}"


def test_key_is_not_systematically_the_longest(questions):
    longest = [q["where"] for q in questions if _key_is_longest(q)]
    limit = math.ceil(len(questions) / 3)
    assert (
        len(longest) <= limit
    ), f"the key is the longest option in {len(longest)} of {len(questions)} questions (limit {limit}): {longest}"


@pytest.mark.parametrize("n_options", [2, 3, 4, 5])
def test_a_new_question_always_has_a_fair_place(questions, n_options):
    """Adding a question never forces an edit to another: some letter of its own keeps the
    set fair (its key not its longest option)."""
    assert not fair(questions), fair(questions)
    assert fair_keys(questions, n_options), f"no letter of {n_options} options keeps the key fair"


def test_fair_finds_an_unfair_set():
    many_a = [{"where": str(i), "key": "A", "options": {"A": "x", "B": "y"}} for i in range(5)]
    assert fair(many_a) and fair_keys(many_a, 2) == []  # past mending by one question
    longest = [{"where": str(i), "key": "ABC"[i % 3], "options": {"A": "x", "B": "x", "C": "x", "ABC"[i % 3]: "longer"}}
               for i in range(6)]
    assert any("longest" in w for w in fair(longest))
