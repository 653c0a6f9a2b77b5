"""The exercises' declarations (transformer_lessons.checks.exercises): what a declaration
must hold, and that every declared item's check is a check of the package."""

from __future__ import annotations

import pytest

from transformer_lessons import checks
from transformer_lessons.checks import exercises


@pytest.fixture
def registry(monkeypatch):
    """A scratch registry holding only the book's first exercise."""
    first = next(iter(checks.EXERCISES.values()))
    monkeypatch.setattr(exercises, "EXERCISES", {first.label: first})
    return exercises.EXERCISES


def _item(key="new_item"):
    return checks.Graded(key, "new_function", 2, checks.check_positional_encoding)


def test_a_declaration_is_registered_in_order(registry):
    declared = exercises.exercise("ex-new", "A new one", page="exercises", items=[_item()], sets=("extra",))
    assert list(registry)[-1] == "ex-new" and registry["ex-new"] is declared
    assert declared.numbered and not declared.by_hand and declared.allowed == exercises.DEFAULT_ALLOWED


@pytest.mark.parametrize("label, kwargs, message", [
    ("new-label", {}, "starts with 'ex-'"),
    ("ex-exercises-self-attention", {}, "declared twice"),
    ("ex-new", {"items": []}, "at least one item"),
    ("ex-new", {"items": [_item("self_attention")]}, "'self_attention' is taken"),
    ("ex-new", {"items": [_item(), _item()]}, "'new_item' is taken"),
    ("ex-new", {"sets": ("all",)}, "'all'"),
    ("ex-new", {"items": [checks.Graded("k", "f", 1, print, kind="module")]}, "kind 'module'"),
])
def test_a_wrong_declaration_is_refused(registry, label, kwargs, message):
    with pytest.raises(ValueError, match=message):
        exercises.exercise(label, "A title", page="exercises", **{"items": [_item()], **kwargs})
    assert "ex-new" not in registry


def test_the_books_declarations():
    """Every item is worth points, checks with a function the package exports (or a partial
    or wrapper of one), and names a function the learner writes."""
    keys = [i.key for e in checks.EXERCISES.values() for i in e.items]
    assert len(keys) == len(set(keys))
    exported = {getattr(checks, name) for name in checks.__all__ if name.startswith("check_")}
    for ex in checks.EXERCISES.values():
        assert ex.title and ex.page and ex.sets, ex.label
        for item in ex.items:
            assert item.points > 0 and item.function.isidentifier(), item.key
            check = getattr(item.check, "func", item.check)  # functools.partial
            assert check in exported or check.__module__.startswith("transformer_lessons.checks."), item.key
