"""Values the pages print, each from its one home: MyST substitutions (``{{ repo_url }}`` in a
page) filled at ``config-inited`` by :func:`transformer_lessons.site.values` from _config.yml's
``repository: url`` and ``branch`` (the theme's ``repository_url`` and ``repository_branch``):
``repo_url``, ``source_url``, ``pages_url``, ``licence`` and the running example's sizes
(``example_d_model``, ...). A key set under ``parse: myst_substitutions`` in _config.yml wins (a
site published elsewhere than GitHub Pages sets ``pages_url`` there). tests/test_book_site.py.
"""

from transformer_lessons.site import values


def _fill(app, config) -> None:
    options = config.html_theme_options
    for key, value in values(options["repository_url"], options.get("repository_branch", "main")).items():
        config.myst_substitutions.setdefault(key, value)


def setup(app):
    app.connect("config-inited", _fill)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
