"""code/build/book_build/ext/editions.py on small document trees: which answer gets which box in print."""

from docutils import nodes
from book_build.ext.editions import _box, _options


def question(*body) -> nodes.container:
    """A section holding ``body`` and then a quiz answer; returns the answer."""
    answer = nodes.container(classes=["quiz-answer"])
    section = nodes.section("", nodes.title(text="Q"), *body, answer)
    assert answer.parent is section
    return answer


def items(*texts, kind=nodes.bullet_list):
    return kind("", *[nodes.list_item("", nodes.paragraph(text=t)) for t in texts])


def test_lettered_options_make_a_choice_question():
    answer = question(nodes.paragraph(text="Which?"), items("A. one", "B. two"))
    assert _options(answer) is not None


def test_numbered_options_make_a_choice_question():
    """The options of the cross-attention question (quiz_decoder) are a numbered list (its numbers are not text)."""
    answer = question(nodes.paragraph(text="Which?"), items("queries (8, 9, 64)", "queries (8, 5, 64)", kind=nodes.enumerated_list))
    assert _options(answer) is not None


def test_an_open_question_gets_the_tall_box():
    assert _options(question(nodes.paragraph(text="Why?"))) is None
    assert _options(question(items("a point", "another point"), nodes.paragraph(text="Why?"))) is None
    assert _options(question(nodes.paragraph(text="Why?"), items("a hint", "another hint"))) is None
    choice, open_ = (_box("answer", c, True, "tlans:0", "").astext() for c in (True, False))
    assert "2.2\\baselineskip" in choice and "7\\baselineskip" in open_
