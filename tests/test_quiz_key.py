"""The multiple-choice key is fair: the right answers are spread over the positions and are
not systematically the longest option.

A single-choice question is a ``### `` section of ``book/quiz_*.md`` with its own options
(``- **A.** ...``) and an answer box that opens with one letter (``**B.**``). The rules, over
all such questions together (N of them):

1. no letter is the key of more than ceil(0.4 * N) questions;
2. with N >= 4, at least three different letters are keys;
3. the key is the strictly longest option (in characters, markup removed) in at most
   ceil(N / 3) questions.
"""

import math
import re
from collections import Counter
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
OPTION = re.compile(r"^- \*\*([A-Z])\.\*\*\s*(.*)$")
KEY = re.compile(r"^\*\*([A-Z])(?:[.,]\*\*|\*\*[.,])")


def _plain(text: str) -> str:
    return re.sub(r"[*`$]|\{[a-z]+\}", "", text).strip()


def single_choice(text: str) -> list[dict]:
    """``[{"where", "options": {letter: text}, "key": letter}]`` of a quiz page."""
    questions = []
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        title, body = section.split("\n", 1)
        options, current, key, in_answer = {}, None, None, False
        for line in body.splitlines():
            if m := OPTION.match(line):
                current = m.group(1)
                options[current] = m.group(2)
            elif current and line.startswith("  ") and line.strip() and not in_answer:
                options[current] += " " + line.strip()
            elif line.startswith(("::::{admonition}", ":::{admonition}")):
                current, in_answer = None, True
            elif in_answer and key is None and (m := KEY.match(line)):
                key = m.group(1)
            elif line.strip() == "" and not in_answer:
                current = None
        if len(options) >= 2 and key in options:
            questions.append(
                {"where": title.strip(), "options": {k: _plain(v) for k, v in options.items()}, "key": key}
            )
    return questions


def all_questions() -> list[dict]:
    found = []
    for page in sorted(BOOK.glob("quiz_*.md")):
        for q in single_choice(page.read_text()):
            found.append({**q, "where": f"{page.name}: {q['where']}"})
    return found


def test_parser_reads_a_question():
    text = (
        "### Q\n\nWhich?\n\n- **A.** short\n- **B.** a much longer\n  option\n\n"
        "::::{admonition} Answer\n:class: dropdown quiz-answer\n**B.** Because.\n::::\n"
    )
    [q] = single_choice(text)
    assert q["key"] == "B" and q["options"]["B"] == "a much longer option"


@pytest.fixture(scope="module")
def questions():
    found = all_questions()
    assert found, (
        "no single-choice question found in book/quiz_*.md: the parser expects options as "
        "'- **A.** text' and an answer box that opens with '**B.**'"
    )
    return found


def test_keys_are_spread_over_the_positions(questions):
    n = len(questions)
    counts = Counter(q["key"] for q in questions)
    listing = ", ".join(f"{q['where']} -> {q['key']}" for q in questions)
    assert max(counts.values()) <= math.ceil(0.4 * n), f"one letter is the key too often: {dict(counts)} ({listing})"
    if n >= 4:
        assert len(counts) >= 3, f"keys use only {sorted(counts)}: {listing}"


def test_key_is_not_systematically_the_longest(questions):
    longest = []
    for q in questions:
        lengths = {k: len(v) for k, v in q["options"].items()}
        top = max(lengths.values())
        if lengths[q["key"]] == top and list(lengths.values()).count(top) == 1:
            longest.append(q["where"])
    limit = math.ceil(len(questions) / 3)
    assert (
        len(longest) <= limit
    ), f"the key is the longest option in {len(longest)} of {len(questions)} questions (limit {limit}): {longest}"
