"""A meta description on every page of the web site (Lighthouse SEO: "Document does not
have a meta description"; search engines show it under the title).

The page's ``description`` front matter field if it has one, else its first paragraph of
prose: not an admonition, a cell, a table, a list or the toctree, and without its inline
formulas (their TeX would read as noise); cut at a word to 155 characters. Added in
Sphinx's documented ``html-page-context`` event through the ``metatags`` context value.

Everything else that makes the site light is configuration, not code: math rendered at
build time (sphinxcontrib-katex, _config.yml) and book/_templates/layout.html (no
fontawesome.js, no search scripts outside search.html). benchmarks/bench_site.py measures it.
"""

from __future__ import annotations

import html
import re

from docutils import nodes

LENGTH = 155  # what search engines show
NOT_PROSE = (nodes.Admonition, nodes.container, nodes.table, nodes.footnote, nodes.citation, nodes.sidebar,
             nodes.topic, nodes.field_list, nodes.definition_list, nodes.bullet_list, nodes.enumerated_list)


def _prose(para: nodes.paragraph) -> bool:
    parent = para.parent
    while parent is not None:
        if isinstance(parent, NOT_PROSE) or "toctree-wrapper" in parent.get("classes", []):
            return False
        parent = parent.parent
    return True


def _text(node: nodes.Node) -> str:
    words = [t.astext() for t in node.findall(nodes.Text) if not isinstance(t.parent, nodes.math)]
    text = re.sub(r"\s+", " ", "".join(words)).strip()
    text = re.sub(r"\s+([.,;:])", r"\1", text)  # where an inline formula was left out
    return re.sub(r"[,;:]+([.,;:])", r"\1", text)


def description(metadata: dict, doctree: nodes.document | None, fallback: str) -> str:
    if metadata.get("description"):
        return str(metadata["description"]).strip()
    for para in doctree.findall(nodes.paragraph) if doctree is not None else []:
        if not _prose(para):
            continue
        text = _text(para)
        nxt = para.next_node(descend=False, siblings=True)
        if text.endswith(":") and isinstance(nxt, (nodes.bullet_list, nodes.enumerated_list)):
            text += " " + "; ".join(_text(item).rstrip(".;") for item in nxt.children) + "."
        if len(text) >= 40:
            return text if len(text) <= LENGTH else text[:LENGTH].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return fallback


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if 'name="description"' in context.get("metatags", ""):
        return
    title = app.config.html_title or app.config.project
    fallback = f"{title}: {pagename.split('/')[-1].replace('_', ' ')}"
    desc = html.escape(description(app.env.metadata.get(pagename, {}), doctree, fallback), quote=True)
    context["metatags"] = context.get("metatags", "") + f'\n<meta name="description" content="{desc}" />'


def setup(app):
    app.connect("html-page-context", _page_context)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
