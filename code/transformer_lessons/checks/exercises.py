"""The book's self-checked exercises, each declared once, beside its check.

A check module ends an exercise's section with its declaration::

    exercise("ex-exercises-positional", "Positional encoding", page="exercises", sets=("exercises",),
             items=[Graded("positional", "my_positional_encoding", 5, check_positional_encoding,
                           "{exercise}, even and odd `d_model`")])

and everything that names or grades the exercise reads it from :data:`EXERCISES`:

* the page: its ``{exercise-start}`` gives only the label, and the build prints the declared
  title (``book_build.ext.exercises``, also for the notebooks);
* the grader (``transformer_classroom.grade``): its rubric is every declared item, in
  declaration order (the grades file's columns), its named sets are the declared ``sets``;
* the instructors' assessment page prints the rubric and the sets from the grader.

So a new self-checked, graded exercise is three files: its check and declaration here in a
check module, its test, and the page that asks for it (CONTRIBUTING's recipe).

The modules of :mod:`transformer_lessons.checks` are imported in the book's order (the
exercises page, its bug hunt, its graded assignment, then the decoder and language-model
pages), so the declarations are too; ``tests/classroom/test_grade_names.py`` checks the order
against the pages. Points and sets are the classroom's business, declared here anyway: the
grader must work where the pages are not (a Gradescope bundle), and an exercise's points sit
best beside the check that earns them. Nothing here runs a check; declaring costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_ALLOWED = ("softmax", "causal_mask")


@dataclass(frozen=True)
class Graded:
    """One graded item of an exercise: the learner's ``function`` checked by ``check``.

    ``key`` names the item in the grades file (no number in it: numbers are the build's);
    ``what`` says what passes, its ``{exercise}`` filled with the exercise's printed name;
    ``kind`` is "function", or "class" for an ``nn.Module`` class the check instantiates.
    """

    key: str
    function: str
    points: int
    check: Callable[[Any], None]
    what: str = "{exercise}"
    kind: str = "function"


@dataclass(frozen=True)
class Exercise:
    """An exercise of the book: its label, its title as the page prints it, the page (a file
    name of the book's pages folder), the grader's named ``sets`` it belongs to, and its graded items.

    ``numbered`` is whether the book numbers it (an optional warm-up or a bug hunt is not);
    ``by_hand`` whether it asks for attention written by hand (the grader then scores a call
    of PyTorch's own attention 0); ``allowed`` the ``transformer_lessons`` names its answer
    may use.
    """

    label: str
    title: str
    page: str
    items: tuple[Graded, ...]
    sets: tuple[str, ...] = ()
    numbered: bool = True
    by_hand: bool = False
    allowed: tuple[str, ...] = DEFAULT_ALLOWED


EXERCISES: dict[str, Exercise] = {}
"""Every declared exercise, by label, in declaration order (the book's)."""


def exercise(label: str, title: str, *, page: str, items, sets=(), numbered: bool = True, by_hand: bool = False,
             allowed=DEFAULT_ALLOWED) -> Exercise:
    """Declare an exercise (see the module's docstring); a label or item key declared twice is an error."""
    if not label.startswith("ex-"):
        raise ValueError(f"an exercise's label starts with 'ex-': {label!r}")
    if label in EXERCISES:
        raise ValueError(f"the exercise {label!r} is declared twice")
    items = tuple(items)
    if not items:
        raise ValueError(f"{label}: a graded exercise has at least one item")
    taken = {i.key for e in EXERCISES.values() for i in e.items}
    for item in items:
        if item.key in taken:
            raise ValueError(f"{label}: the item key {item.key!r} is taken")
        if item.kind not in ("function", "class"):
            raise ValueError(f"{label}: item {item.key!r} has kind {item.kind!r}; 'function' or 'class'")
        taken.add(item.key)
    if "all" in sets:
        raise ValueError(f"{label}: 'all' is every exercise's set already")
    declared = Exercise(label, title, page, items, tuple(sets), numbered, by_hand, tuple(allowed))
    EXERCISES[label] = declared
    return declared
