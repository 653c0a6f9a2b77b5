"""What a 390 px phone needs in the page body to show every table and code name whole
(issue 40; tests/browser/test_browser_phone.py measures it): a string rewrite of the body at
``html-page-context``, as ``accessibility`` does.

* **Code names break where a reader expects**: Sphinx writes inline code as nowrap
  ``<span class="pre">`` words, so ``torch.nn.functional.scaled_dot_product_attention`` either
  pushed the column wider or, with ``overflow-wrap: anywhere``, broke anywhere
  ("scaled_dot_/product_atte/ntion"). Here a ``<wbr>`` (outside the nowrap span: nowrap ignores
  it inside) follows each ``_``, ``.``, ``(``, ``/`` or ``,`` that stands between two letters or
  digits: ``scaled_<wbr>dot_<wbr>product_<wbr>attention``, ``F.<wbr>softmax(<wbr>x``. ``__init__``
  keeps its underscores together. The text, what a search or a copy finds, is unchanged.
* **Tables that stack on a phone**: every cell of a table with a header row gets
  ``data-label``, its column's header text, and the table the class ``tl-stack``; below 36em
  custom.css lays such a table out one row after the other, each cell under its label, so a
  four-column table is read whole instead of cut off or scrolled sideways.
"""

from __future__ import annotations

import html
import re

# A break opportunity after these, when a letter or digit stands on both sides.
BREAK_AFTER = re.compile(r"(?<=[A-Za-z0-9])([_./(,]+)(?=[A-Za-z0-9])")
INLINE_CODE = re.compile(r'(<code class="[^"]*\bliteral\b[^"]*">)(.*?)(</code>)', re.DOTALL)
PRE_WORD = re.compile(r'<span class="pre">([^<]*)</span>')
TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.DOTALL)
CELL = re.compile(r"<(t[hd])\b([^>]*)>(.*?)</\1>", re.DOTALL)
ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
MATHML = re.compile(r'<span class="katex-mathml">.*?</math></span>', re.DOTALL)


def break_code_names(body: str) -> str:
    """``<wbr>`` after the separators of every inline code name (see the module's docstring)."""

    def word(m: re.Match) -> str:
        parts = BREAK_AFTER.sub(lambda s: s.group(1) + "\0", m.group(1)).split("\0")
        return '</span><wbr><span class="pre">'.join(parts).join(('<span class="pre">', "</span>"))

    return INLINE_CODE.sub(lambda m: m.group(1) + PRE_WORD.sub(word, m.group(2)) + m.group(3), body)


def _text(cell_html: str) -> str:
    """A header cell's text as read: KaTeX's MathML dropped (its HTML rendering stays)."""
    return " ".join(html.unescape(TAG.sub("", MATHML.sub("", cell_html))).split())


def _span(attrs: str) -> int:
    m = re.search(r'colspan="(\d+)"', attrs)
    return int(m.group(1)) if m else 1


def label_table(table: str) -> str:
    """``table`` with ``data-label`` on every body cell and the class ``tl-stack``, or as it is
    when it has no header row."""
    head = re.search(r"<thead\b.*?</thead>", table, re.DOTALL)
    if not head:
        return table
    labels: list[str] = []
    for tag, attrs, inner in CELL.findall(ROW.findall(head.group(0))[-1]):
        labels += [_text(inner)] * _span(attrs)

    def row(m: re.Match) -> str:
        column = 0

        def cell(c: re.Match) -> str:
            nonlocal column
            tag, attrs, inner = c.groups()
            label = labels[column] if column < len(labels) else ""
            column += _span(attrs)
            return f'<{tag}{attrs} data-label="{html.escape(label)}">{inner}</{tag}>' if label else c.group(0)

        return m.group(0)[: m.start(1) - m.start(0)] + CELL.sub(cell, m.group(1)) + m.group(0)[m.end(1) - m.start(0):]

    body_start = head.end()
    labelled = table[:body_start] + ROW.sub(row, table[body_start:])
    if re.match(r'<table\b[^>]*\bclass="', labelled):
        return re.sub(r'class="', 'class="tl-stack ', labelled, count=1)
    return labelled.replace("<table", '<table class="tl-stack"', 1)


def rewrite(body: str) -> str:
    return TABLE.sub(lambda m: label_table(m.group(0)), break_code_names(body))


def _page(app, pagename, templatename, context, doctree) -> None:
    if context.get("body"):
        context["body"] = rewrite(context["body"])


def setup(app):
    app.connect("html-page-context", _page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
