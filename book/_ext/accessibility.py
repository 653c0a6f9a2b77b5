"""Accessibility fixes in the page body for what axe-core (tests/test_browser.py) reports
as serious or critical WCAG 2.1 violations. Each is HTML that a dependency writes with a
fixed string, so the fix is a string replacement in Sphinx's documented
``html-page-context`` event (the page body, before the theme lays it out):

* myst-nb 1.4 writes its hide-input toggle as ``<summary aria-label="Toggle hidden
  content">`` around the visible text "Show code cell source" (axe
  ``label-content-name-mismatch``: a speech user saying what they see would not match).
  The aria-label is dropped, so the name is the visible text. (myst_nb/sphinx_.py writes
  the tag; no configuration changes it.)
* docutils 0.21 writes a citation list as ``role="list"`` holding ``role="doc-biblioentry"``
  items, a role deprecated in DPUB-ARIA 1.1, so the list has no list items (axe
  ``aria-required-children``, critical): the entries become ``role="listitem"``.
  (docutils' HTML5 writer, visit_citation.)
* KaTeX writes every display equation as ``<span class="katex-display">``, which
  book/_static/custom.css makes the box that scrolls sideways when the equation is wider
  than the column (at a phone width). A box that scrolls must be reachable from the
  keyboard (axe ``scrollable-region-focusable``, serious), and KaTeX has no option for a
  tabindex, so every display equation gets ``tabindex="0"``; a screen reader there reads
  the equation's MathML.

And one theme option, set in ``config-inited`` (jupyter-book writes html_theme_options
itself from _config.yml's ``html:`` section, so setting it in ``sphinx: config:`` would
replace the launch and repository buttons): pydata-sphinx-theme 0.17 fills
``navbar_persistent`` with a search field when it is not set, overriding sphinx-book-theme's
empty default, which adds a second header bar with a second search field that covers the
sidebar's top at desktop width. It is set to ``[]`` unless _config.yml sets it.

The two header components with the same kind of problem are replaced as templates in
book/_templates/ (search-button-field.html, theme-switcher.html); colour contrast and
content wider than a phone are fixed in book/_static/custom.css.
"""

from __future__ import annotations

BODY_FIXES = [
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<span class="katex-display">', '<span class="katex-display" tabindex="0">'),
]


def _configure(app, config) -> None:
    config.html_theme_options.setdefault("navbar_persistent", [])


def _fix_body(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body:
        for old, new in BODY_FIXES:
            body = body.replace(old, new)
        context["body"] = body


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _fix_body)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
