"""The answers of the code quiz (book/quiz_code.md) are what the code really does.

The page is plain markdown, so nothing runs it at build time. This test runs every
snippet of the page and checks its answer: the printed output of a code-reading
question (the answer's ``text`` block), the error of the one that raises, and, for each
"which mistake is this?" snippet, the message that the matching self-check of the
exercises gives, as the answer quotes it.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest
import torch

from transformer_classroom.quiz_blocks import page_text

PAGE = Path(__file__).resolve().parents[2] / "book" / "quiz_code.md"
REAL_PAGE = PAGE.with_name("quiz_real_model.md")
PRELUDE = """
import numpy as np
import torch
from torch import nn
from transformer_lessons import (MultiHeadAttention, causal_mask, positional_encoding,
                                 scaled_dot_product_attention, softmax)
"""


def questions() -> dict[str, tuple[str, str]]:
    """``{label: (snippet, answer)}`` for every labelled question with a snippet."""
    text = page_text(PAGE.parent, PAGE.stem)
    parts = re.split(r"^\((quiz-[a-z0-9-]+)\)=$", text, flags=re.M)
    found = {}
    for label, body in zip(parts[1::2], parts[2::2]):
        answer_at = body.index(":::{admonition} Answer")
        code = re.search(r"```python\n(.*?)```", body[:answer_at], flags=re.S)
        if code:
            found[label] = (code.group(1), body[answer_at:])
    return found


QUESTIONS = questions()


def normalise(s: str) -> str:
    return " ".join(s.split())


def run(snippet: str) -> tuple[str, dict]:
    namespace: dict = {}
    exec(PRELUDE, namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(snippet, namespace)
    return out.getvalue(), namespace


def test_every_question_is_labelled_and_found():
    labels = re.findall(r"^\((quiz-[a-z0-9-]+)\)=$", page_text(PAGE.parent, PAGE.stem), flags=re.M)
    assert len(labels) == len(set(labels)) == 18
    # every code question has a snippet; the questions on the real model are on a page
    # of their own, after that page (tests/library/test_pretrained.py checks their answers)
    assert set(labels) == set(QUESTIONS) and not any(label.startswith("quiz-real-") for label in labels)
    real = re.findall(r"^\((quiz-[a-z0-9-]+)\)=$", page_text(REAL_PAGE.parent, REAL_PAGE.stem), flags=re.M)
    assert real == ["quiz-real-shapes", "quiz-real-layer", "quiz-real-padding", "quiz-real-sink"]


def test_headings_are_neutral_and_numbered_in_order():
    """A heading must not name the bug it asks about: each section numbers its questions
    "Code reading 1, 2, ..." and "Spot the mistake 1, 2, ...", in page order."""
    text = page_text(PAGE.parent, PAGE.stem)
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    names = {"Code reading": "Code reading", "Which mistake is this?": "Spot the mistake"}
    seen = set()
    for section in sections:
        title = section.split("\n", 1)[0].strip()
        headings = re.findall(r"^### (.*)$", section, flags=re.M)
        assert title in names, f"unexpected section {title!r}"
        seen.add(title)
        assert headings == [f"{names[title]} {i}" for i in range(1, len(headings) + 1)], headings
    assert seen == set(names)


def test_mistake_keys_do_not_follow_the_list_order():
    """The answers' letters are not A, B, C, ... in page order (that would give them away)."""
    keys = re.findall(r"^\*\*([A-J])\*\*,", page_text(PAGE.parent, PAGE.stem), flags=re.M)
    assert sorted(keys) == list("ABCDEFGHIJ") and keys != sorted(keys), keys


READING = [label for label, (_, answer) in QUESTIONS.items() if "```text" in answer]


@pytest.mark.parametrize("label", READING)
def test_printed_output_is_the_answer(label):
    snippet, answer = QUESTIONS[label]
    expected = re.search(r"```text\n(.*?)```", answer, flags=re.S).group(1)
    torch.manual_seed(0)
    printed, _ = run(snippet)
    assert normalise(printed) == normalise(expected), f"{label}: printed\n{printed}"


def test_batched_np_dot_raises_as_the_answer_says():
    snippet, answer = QUESTIONS["quiz-code-batched-transpose"]
    *setup, last = snippet.strip().splitlines()
    printed, namespace = run("\n".join(setup))
    assert printed.strip() in answer
    with pytest.raises(ValueError) as err:
        exec(last, namespace)
    assert normalise(str(err.value)) in normalise(answer)


def test_permutation_answer():
    snippet, answer = QUESTIONS["quiz-code-permutation"]
    printed, _ = run(snippet)
    assert printed.split() == ["True", "False"]
    assert answer.split("\n", 3)[2].startswith("`True`, then `False`")


def checks_module():
    for name in ("transformer_lessons.checks", "transformer_lessons.exercises"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("no module with the exercise self-checks")


CHECKED_BUGS = [label for label, (_, answer) in QUESTIONS.items() if re.search(r"says\s+\"", answer)]


@pytest.mark.parametrize("label", CHECKED_BUGS)
def test_the_self_check_gives_the_quoted_message(label):
    snippet, answer = QUESTIONS[label]
    quoted = normalise(re.search(r"says\s+\"(.*?)\"", answer, flags=re.S).group(1)).rstrip(".")
    _, namespace = run(snippet)
    checks = checks_module()
    if "mha" in namespace and "mask" in namespace:  # the snippet as a function fn(mha, x), as in the mask-polarity bug
        from transformer_lessons.checks.bughunt import check_causal_self_attention

        mask = namespace["mask"]

        def as_function(mha, x):
            return mha(x, x, x, attn_mask=mask[: x.shape[1], : x.shape[1]])[0]

        call = lambda: check_causal_self_attention(as_function)  # noqa: E731
    elif "self_attention" in namespace:
        call = lambda: checks.check_self_attention(namespace["self_attention"])  # noqa: E731
    elif "SelfAttention" in namespace:
        call = lambda: checks.check_multihead_module(namespace["SelfAttention"])  # noqa: E731
    else:
        call = lambda: checks.check_positional_encoding(namespace["positional_encoding"])  # noqa: E731
    with pytest.raises(AssertionError) as err:
        with contextlib.redirect_stdout(io.StringIO()):
            call()
    assert quoted in normalise(str(err.value)), f"{label}: the check says {err.value}"


def test_mask_polarity_snippet_gives_nan_in_the_last_row_only():
    snippet, answer = QUESTIONS["quiz-bug-mask-polarity"]
    torch.manual_seed(0)
    _, namespace = run(snippet)
    out = namespace["out"]
    assert torch.isnan(out[0, -1]).all() and not torch.isnan(out[0, :-1]).any()
    w = namespace["w"][0]  # averaged over heads: every query but the last sees only the future
    future = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    assert w[:-1][~future[:-1]].eq(0).all()
    assert "`nan`" in answer and "~mask" in answer

