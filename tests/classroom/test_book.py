"""transformer_classroom.book.book_values: the one reading of where the book lives, which the
pages' substitutions, the handout, the slides, the notebooks and the LMS export share."""

from __future__ import annotations

import pytest
import yaml

from transformer_classroom import book, lms


def _book(tmp_path, **config):
    config = {"title": "A course", "author": "Its teachers", "course": {"name": "a-course"}, **config}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    return tmp_path


def test_the_published_files_are_named_by_the_course(tmp_path):
    root = _book(tmp_path, repository={"url": "https://github.com/o/r"})
    values = book.book_values(root)
    assert values["pdf_student"] == "a-course-student.pdf" and values["lms_qti"] == "a-course-qti.zip"
    assert (values["book_title"], values["book_author"]) == ("A course", "Its teachers")
    (tmp_path / "_config.yml").write_text(yaml.safe_dump({"title": "t", "author": "a", "course": {"name": "Bad Name"}}))
    with pytest.raises(book.BookError, match="Bad Name"):
        book.published(root)


def test_pages_url_is_github_pages_of_the_repository(tmp_path):
    root = _book(tmp_path, repository={"url": "https://github.com/Some-Org/lessons", "branch": "dev"})
    values = book.book_values(root)
    assert values["repo_url"] == "https://github.com/Some-Org/lessons"
    assert values["source_url"] == "https://github.com/Some-Org/lessons/blob/dev"
    assert values["pages_url"] == "https://some-org.github.io/lessons/"  # GitHub lowercases the owner's host
    assert lms.site_url(root) == values["pages_url"]


def test_html_baseurl_is_where_the_site_is_published(tmp_path):
    root = _book(tmp_path, repository={"url": "https://github.com/org/lessons"},
                 sphinx={"config": {"html_baseurl": "https://lessons.example.edu"}})
    assert book.book_values(root)["pages_url"] == "https://lessons.example.edu/"
    assert lms.site_url(root) == "https://lessons.example.edu/"


def test_a_substitution_in_the_config_wins(tmp_path):
    root = _book(tmp_path, repository={"url": "https://github.com/org/lessons"},
                 sphinx={"config": {"html_baseurl": "https://a.example/"}},
                 parse={"myst_substitutions": {"pages_url": "https://b.example/"}})
    assert book.book_values(root)["pages_url"] == "https://b.example/"


def test_a_repository_that_is_not_on_github_is_named(tmp_path):
    root = _book(tmp_path, repository={"url": "https://gitlab.com/org/lessons"})
    with pytest.raises(ValueError, match="gitlab.com/org/lessons"):
        book.book_values(root)
    with pytest.raises(lms.QuizFormatError, match="gitlab.com/org/lessons"):
        lms.site_url(root)


def test_printed_exercise_reads_the_number_and_title_the_build_printed():
    html = ('<section><div class="exercise admonition" id="ex-a">\n<p class="admonition-title">'
            '<span class="caption-number">Exercise 9.7 </span> (Self-attention in NumPy)</p><p>x</p></div>'
            '<div class="exercise admonition" id="ex-b"><p class="admonition-title">Exercise (Bug hunt: a mask)</p></div>'
            '<div class="exercise admonition" id="ex-c"><p class="admonition-title">Exercise 1.2</p></div></section>')
    assert book.printed_exercise(html, "ex-a") == ("Exercise 9.7", "Self-attention in NumPy")
    assert book.printed_exercise(html, "ex-b") == ("", "Bug hunt: a mask")
    assert book.printed_exercise(html, "ex-c") == ("Exercise 1.2", "")
    assert book.printed_exercise(html, "ex-d") is None
