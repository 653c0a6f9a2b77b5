"""The grader names exercises as the book prints them, and never types a number.

With a build of the book the names are read from it (number and title as printed); without
one (an instructor's machine with only the package) they are the exercises' titles. The
rubric's fallback titles are those of the pages, and what the grader reads from a build is
what the teaching kit reads (code/build/book_build/built.py).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tests.book_files import ROOT

from book_build import built
from transformer_classroom import grade

NUMBER = re.compile(r"\b(?:exercises?|bugs?|examples?|parts?)\s+\d", re.IGNORECASE)


def _page_exercises() -> list[tuple[str, str, str]]:
    """(page, label, title as typed) for every exercise of the book, in the book's order."""
    from transformer_classroom import book

    found = []
    for page in book.toc_pages(ROOT):
        path = ROOT / "book" / f"{page}.md"
        for m in re.finditer(r"^```\{exercise-start\}[ \t]*(.*)\n((?::[\w-]+:.*\n)*)", path.read_text(), re.M):
            options = dict(re.findall(r"^:([\w-]+):[ \t]*(.*)$", m.group(2), re.M))
            found.append((path.stem, options["label"].strip(), m.group(1).strip()))
    return found


def test_every_item_names_an_exercise_of_the_book():
    """Each declared exercise is asked for once, on its page, by its label alone (the build
    writes in its title), and the declarations (the rubric's order, the grades file's
    columns) follow the book's order."""
    on_pages = _page_exercises()
    for item in grade.RUBRIC:
        assert item.exercise in grade.EXERCISES, item.key
    labels = [label for _, label, _ in on_pages]
    for label, ex in grade.EXERCISES.items():
        assert labels.count(label) == 1, f"{label} is asked for {labels.count(label)} times in the book"
        page, _, title = on_pages[labels.index(label)]
        assert page == ex.page, (label, page, ex.page)
        assert not title, f"{page}.md types the title of {label}, which its declaration holds"
    assert [label for label in labels if label in grade.EXERCISES] == list(grade.EXERCISES)


def test_no_rubric_text_types_a_number():
    plain = grade.exercise_names(ROOT / "no-such-site")
    for item in grade.RUBRIC:
        assert not NUMBER.search(item.what), item.what
        assert not NUMBER.search(grade.describe(item, plain)), item.key
    assert not NUMBER.search(grade.ASSIGNMENTS.__doc__ or "")
    assert not re.search(r"\d", "".join(i.key for i in grade.RUBRIC)), "item keys carry no numbers"
    assert not NUMBER.search(grade.__doc__)


def test_without_a_build_exercises_are_named_by_title(tmp_path, monkeypatch):
    monkeypatch.setenv(grade.SITE_ENV, "")
    assert grade.default_site() is None
    names = grade.exercise_names()
    assert names == {label: ex.title for label, ex in grade.EXERCISES.items()}
    item = next(i for i in grade.RUBRIC if i.key == "self_attention")
    assert grade.describe(item).startswith("Self-attention in NumPy on small inputs")


def test_a_build_gives_the_printed_numbers(tmp_path):
    """A site laid out as the build writes it: the name is the title line as printed."""
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "exercises.html").write_text(
        '<section><div class="exercise admonition" id="ex-exercises-self-attention">\n'
        '<p class="admonition-title"><span class="caption-number">Exercise 9.7 </span> (Self-attention in NumPy)</p>'
        '<section id="exercise-content"><p>Write it.</p></section></div>'
        '<div class="exercise admonition" id="ex-exercises-bug-causal">'
        '<p class="admonition-title">Exercise (Bug hunt: a causal mask)</p><p>x</p></div></section>')
    names = grade.exercise_names(tmp_path)
    assert names["ex-exercises-self-attention"] == "Exercise 9.7 (Self-attention in NumPy)"
    assert names["ex-exercises-bug-causal"] == "Bug hunt: a causal mask"
    assert names["ex-exercises-positional"] == "Positional encoding"  # not on that site: the title
    assert names["ex-lm-kv-cache"] == grade.EXERCISES["ex-lm-kv-cache"].title


def test_names_from_the_build_are_those_the_kit_reads():
    """On this repository's build: the grader's names agree with code/build/book_build/built.py's lookup."""
    names = grade.exercise_names(built.SITE)
    for label in grade.EXERCISES:
        ref = built.lookup(label)
        assert names[label] == (f"{ref.number} ({ref.title})" if ref.number and ref.title else ref.number or ref.title)
        assert ref.title in ("", grade.EXERCISES[label].title), f"{label}: the build is older than the page?"
        assert bool(ref.number) == grade.EXERCISES[label].numbered, label


def test_feedback_names_the_printed_exercise(tmp_path):
    sub = tmp_path / "student.py"
    sub.write_text("def my_positional_encoding(n, d):\n    raise NotImplementedError\n")
    site = tmp_path / "site"
    (site / "book").mkdir(parents=True)
    (site / "book" / "exercises.html").write_text(
        '<div class="exercise admonition" id="ex-exercises-positional"><p class="admonition-title">'
        '<span class="caption-number">Exercise 4.2 </span> (Positional encoding)</p></div>')
    for args, expected in ((["--site", str(site)], "Exercise 4.2 (Positional encoding), even and odd d_model"),
                           ([], "Positional encoding, even and odd d_model")):
        out = tmp_path / ("fb" + str(len(args)))
        env = {**__import__("os").environ, grade.SITE_ENV: ""}
        result = subprocess.run(
            [sys.executable, "-m", "transformer_classroom.grade", str(sub), "--items", "positional",
             "--feedback", str(out), *args], capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == 0, result.stderr
        text = (out / "student.txt").read_text()
        assert f"positional (5 points): `my_positional_encoding`, {expected}" in text, text


def test_the_assessment_page_shows_the_printed_names():
    """The built rubric table names each item's exercise as the book numbers it (a numbered
    one by its number, an unnumbered one by its title), never a bare "Exercise"."""
    soup = built.page("instructor_assessment")
    table = next(t for t in soup.select("table") if "What passes" in t.get_text())
    cells = {tr.select("td")[0].get_text(strip=True): built.plain(tr.select("td")[3]) for tr in table.select("tbody tr")}
    assert list(cells) == [i.key for i in grade.RUBRIC]
    for item in grade.RUBRIC:
        ref = built.lookup(item.exercise)
        expected = ref.number if ref.number else grade.EXERCISES[item.exercise].title
        assert cells[item.key].startswith(expected), (item.key, cells[item.key], expected)
        assert not re.match(r"Exercise\s*[^\s\d]", cells[item.key]), cells[item.key]


@pytest.mark.book
def test_the_default_site_is_the_checkouts_build(monkeypatch):
    """Run in the repository (as `make test` does), the grader finds its built site."""
    monkeypatch.delenv(grade.SITE_ENV, raising=False)
    from tests.book_files import HTML

    assert grade.default_site() == (HTML if (HTML / "book").is_dir() else None)
    assert (HTML / "book").is_dir(), "no built site: run `make book` (`make test` does it for you)"
