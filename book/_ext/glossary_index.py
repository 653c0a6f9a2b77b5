"""In print, the index points where each glossary term is taught (LaTeX builder only).

* An index entry for each glossary term at every section whose title names it, besides
  the glossary's own entry.
* The glossary's own entries move from the term to the start of its definition (same
  page): Sphinx puts each inside its term, which LaTeX typesets as a macro argument, and
  an ``\\index`` read there writes "multi\\sphinxhyphen {}head" where one in the text
  writes "multi\\sphinxhyphen{}head": makeindex then printed every hyphenated term twice.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform


class GlossaryIndex(SphinxPostTransform):
    default_priority = 804
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for term in list(self.document.findall(nodes.term)):
            definitions = [c for c in term.parent.children if isinstance(c, nodes.definition)]
            for index in list(term.findall(addnodes.index)):
                if definitions:
                    index.parent.remove(index)
                    index["inline"] = False
                    definitions[0].insert(0, index)
        # (name, dispname, type, docname, anchor, priority): Domain.get_objects, documented
        found = [(name, doc) for name, _, kind, doc, _, _ in self.env.get_domain("std").get_objects() if kind == "term"]
        terms = sorted({name for name, _ in found}, key=len, reverse=True)
        glossary_docs = {doc for _, doc in found}
        patterns = {t: re.compile(rf"\b{re.escape(t)}s?\b", re.IGNORECASE) for t in terms}
        for section in self.document.findall(nodes.section):
            if not section.children or not isinstance(section[0], nodes.title) or _docname(section) in glossary_docs:
                continue
            hits = [t for t in terms if patterns[t].search(section[0].astext())]
            if hits:
                section.insert(1, addnodes.index(entries=[("single", t, "", "", None) for t in hits], inline=False))


def _docname(node) -> str:
    while node is not None and not isinstance(node, addnodes.start_of_file):
        node = node.parent
    return node.get("docname", "") if node is not None else ""


def setup(app):
    app.add_post_transform(GlossaryIndex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
