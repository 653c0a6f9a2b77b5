"""Values the pages print, each from its one home: MyST substitutions (``{{ repo_url }}`` in a
page) filled at ``config-inited`` by :func:`transformer_classroom.book.book_values` from the
book's _config.yml: ``repo_url``, ``source_url``, ``pages_url`` (``html_baseurl`` when set),
``licence``, the running example's sizes (``example_d_model``, ...), ``book_title``,
``book_author`` and the names of the files the site publishes (``pdf_student``, ...: from
``course: name``). A key set under ``parse: myst_substitutions`` wins (a site published
elsewhere than GitHub Pages sets ``pages_url`` there). The handout, the slides, the notebooks and
the LMS export read the same function. tests/site/test_book_site.py, tests/site/test_fork.py.

The published files' names are also written where MyST fills nothing: into raw HTML blocks
(``{{ pdf_student }}`` in a page's ``{raw} html``, replaced in the source as Sphinx reads it)
and into the templates (``html_context``: ``pathto("pdf/" ~ pdf_student, 1)``).
"""

import re

from transformer_classroom.book import PUBLISHED, book_values

RAW_KEYS = re.compile(r"\{\{\s*(" + "|".join(PUBLISHED) + r")\s*\}\}")


def _fill(app, config) -> None:
    values = book_values(app.srcdir)  # jupyter-book's source folder holds _config.yml
    for key, value in values.items():
        config.myst_substitutions.setdefault(key, value)
    config.html_context.update({key: config.myst_substitutions[key] for key in PUBLISHED})


def _published_names(app, docname, source) -> None:
    names = app.config.myst_substitutions
    source[0] = RAW_KEYS.sub(lambda m: names[m.group(1)], source[0])


def setup(app):
    app.connect("config-inited", _fill)
    app.connect("source-read", _published_names)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
