"""Accessibility fixes at the source for what axe-core (tests/test_browser.py) reports
on the untouched theme (sphinx-book-theme 1.3 on pydata-sphinx-theme 0.17, myst-nb 1.4,
docutils 0.21). Each would be a *serious* or *critical* WCAG 2.1 violation on every page.

Header components (the templates in ``accessibility_templates/``, put first on
``templates_path`` so they replace the theme's files of the same name):

* ``search-button-field.html``: the sidebar search button shows "Search Ctrl+K" but is
  labelled ``aria-label="Search"`` (axe ``label-content-name-mismatch``: a speech user
  saying what they see would not match). The label now comes from the visible word
  "Search"; the key hint is hidden from assistive technology and declared with
  ``aria-keyshortcuts`` instead.
* ``theme-switcher.html``: the button is labelled "Color mode" but its three icons carry
  titles ("Light", "Dark", "System Settings") that Font Awesome turns into SVG
  ``<title>`` text inside the button (same rule). The icons are now decorative
  (``aria-hidden``, no title); the label and the tooltip stay "Color mode".

Page bodies (the ``html-page-context`` event rewrites the rendered body):

* myst-nb's hide-input toggle is ``<summary aria-label="Toggle hidden content">`` around
  the visible text "Show code cell source" (``label-content-name-mismatch``): the
  aria-label is dropped, so the name is the visible text.
* docutils writes a citation list as ``role="list"`` holding ``role="doc-biblioentry"``
  items, a role deprecated in DPUB-ARIA 1.1, so the list has no list items (axe
  ``aria-required-children``, critical): the entries become ``role="listitem"``.

Header bar: pydata-sphinx-theme 0.17 fills ``navbar_persistent`` with a search field
whenever the user's theme options do not set it, overriding sphinx-book-theme's empty
default. The result is a second header bar with a second search field above every page,
which at desktop width covers the top of the sidebar (its title and its own search
field). ``navbar_persistent`` is set to ``[]`` (unless _config.yml sets it), which
restores sphinx-book-theme's layout: one search field, in the sidebar, and the search
icon in the article header.

Colour contrast (links on the exercise boxes) and content wider than a phone are fixed
in book/_static/custom.css.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "accessibility_templates"

BODY_FIXES = [
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
    ('role="doc-biblioentry"', 'role="listitem"'),
]


def _configure(app, config) -> None:
    # Before the themes' own component folders, which they append to templates_path.
    config.templates_path.insert(0, str(TEMPLATES))
    config.html_theme_options.setdefault("navbar_persistent", [])


def _fix_body(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if not body:
        return
    for old, new in BODY_FIXES:
        body = body.replace(old, new)
    context["body"] = body


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _fix_body)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
