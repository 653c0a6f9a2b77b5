"""Values the pages print, each from its one home: MyST substitutions (``{{ repo_url }}`` in a
page) filled at ``config-inited`` by :func:`book_build.site.book_values` from the
book's _config.yml (``repository: url`` and ``branch``; ``html_baseurl`` as ``pages_url`` when
set): ``repo_url``, ``source_url``, ``pages_url``, ``licence`` and the running example's sizes
(``example_d_model``, ...). A key set under ``parse: myst_substitutions`` wins (a site published
elsewhere than GitHub Pages sets ``pages_url`` there). The handout, the slides, the notebooks and
the LMS export read the same function. tests/site/test_book_site.py.
"""

from transformer_classroom.book import book_values


def _fill(app, config) -> None:
    for key, value in book_values(app.srcdir).items():  # jupyter-book's source folder holds _config.yml
        config.myst_substitutions.setdefault(key, value)


def setup(app):
    app.connect("config-inited", _fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
