"""The page-speed layer: what a page's first paint waits for, and what it fetches.

One Sphinx extension (``book_build.speed`` in ``_config.yml``) of two parts and a template:

* :mod:`.first_paint`: one stylesheet per page, no blocking script (with first_paint_css.mjs,
  run by Node.js);
* :mod:`.performance`: a meta description on every page, lazy images, figures in a palette,
  the fonts each page draws preloaded;
* ``templates/layout.html``: the theme's page layout, changed to link what the two parts put
  in the page's context (``css_bundle``, ``font_preloads``), put on ``templates_path`` after
  the book's own folder.

The layer leans on the theme's internals (the stylesheets its template links, where its icon
fonts are, its page layout), so it is written against one theme release, declared in
:data:`THEME` and nowhere else: a build with another one installed stops at ``builder-inited``
with what to re-check (:data:`RECHECK`). tests/site/test_speed_extension.py builds a small book
with it; tests/site/test_site_performance.py checks the built site.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from sphinx.errors import ExtensionError

from . import first_paint, performance

# THE THEME THIS LAYER IS WRITTEN AGAINST, the one place that says so. sphinx-book-theme is
# pinned in requirements.txt; it pulls pydata-sphinx-theme 0.17, whose files the layer names.
THEME = {"sphinx-book-theme": "1.3.0", "pydata-sphinx-theme": "0.17.1"}
# What copies or names the theme's internals: re-check each against the new release, then
# change THEME (tests/site/test_speed_extension.py keeps it equal to requirements.txt).
RECHECK = [
    "book_build.speed.first_paint.THEME_CSS (the stylesheets pydata-sphinx-theme's "
    "static/webpack-macros.html head_pre_assets links before css_files)",
    "book_build.speed.first_paint.ICON_FONTS and book_build.speed.performance.ICON_FONTS "
    "(the theme's Font Awesome web fonts, cut and preloaded)",
    "code/build/book_build/speed/templates/layout.html (the theme's css, extrahead and docs_body blocks, copied)",
    "book/_templates/article-header-buttons.html (sphinx-book-theme's components/article-header-buttons.html, copied)",
    "book/_templates/theme-switcher.html and search-button-field.html (pydata-sphinx-theme's components, copied)",
    "the notes on the theme in book/_static/custom.css and _config.yml (html_theme_options, html_context)",
]
TEMPLATES = Path(__file__).with_name("templates")


def installed_theme() -> dict[str, str | None]:
    """The installed versions of the packages of :data:`THEME` (None: not installed)."""
    found: dict[str, str | None] = {}
    for name in THEME:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def check_theme(installed: dict[str, str | None]) -> None:
    """Raise ExtensionError, naming both versions and what to re-check, unless ``installed``
    is :data:`THEME`."""
    differ = {name: got for name, got in installed.items() if got != THEME.get(name)}
    if not differ:
        return
    versions = "; ".join(f"{name} {got or 'not installed'} is installed, the layer is written against "
                         f"{THEME[name]}" for name, got in differ.items())
    raise ExtensionError(
        f"book_build.speed: {versions}. Re-check against the installed theme:\n  - " + "\n  - ".join(RECHECK)
        + "\nthen set THEME in code/build/book_build/speed/__init__.py (and the pin in requirements.txt).")


def _check_theme(app) -> None:
    if app.builder.format == "html":  # the PDFs do not use the theme
        check_theme(installed_theme())


def _templates(app, config) -> None:
    # after the book's own templates_path, before the theme's (the HTML builder reads the
    # list when it is created, after config-inited)
    config.templates_path = [*config.templates_path, str(TEMPLATES)]


def setup(app):
    app.connect("config-inited", _templates)
    app.connect("builder-inited", _check_theme, priority=100)  # before anything renders
    first_paint.setup(app)
    performance.setup(app)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
