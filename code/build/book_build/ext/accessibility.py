"""What axe-core (tests/browser/test_browser.py) reports as serious or critical in HTML a dependency
writes as a fixed string that no setting changes: a string replacement in the page body at
``html-page-context`` (before the theme lays it out).

* myst-nb 1.4 (myst_nb/sphinx_.py) writes ``<summary aria-label="Toggle hidden content">``
  around the visible "Show code cell source" (``label-content-name-mismatch``): the aria-label
  goes, so the visible text is the name.
* docutils 0.21's HTML5 writer (visit_citation) writes citations as ``role="doc-biblioentry"``,
  deprecated in DPUB-ARIA 1.1, in a ``role="list"`` (``aria-required-children``): ``listitem``.
* KaTeX's display equations scroll sideways when wider than the column (custom.css); a box that
  scrolls must take the keyboard's focus (``scrollable-region-focusable``), and KaTeX has no
  tabindex option: ``tabindex="0"`` (a screen reader there reads the equation's MathML).

The rest is templates (book/_templates/), custom.css and ``navbar_persistent`` (_config.yml).
"""

BODY_FIXES = [
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<span class="katex-display">', '<span class="katex-display" tabindex="0">'),
]


def _fix_body(app, pagename, templatename, context, doctree) -> None:
    if context.get("body"):
        for old, new in BODY_FIXES:
            context["body"] = context["body"].replace(old, new)


def setup(app):
    app.connect("html-page-context", _fix_body)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
