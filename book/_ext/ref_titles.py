"""Cross-references to a section whose title holds maths keep the maths.

A ``{ref}`label``` without an explicit text takes the section's title as its link text,
but Sphinx stores that title as plain text (``clean_astext``), in which a formula is its
TeX source: a link to "Why divide by $\\sqrt{d_k}$" read "Why divide by \\sqrt{d_k}" on
the web and in print. After the references are resolved (Sphinx's ReferencesResolver,
priority 10), each such link text is replaced by a copy of the title's own nodes, so the
formula is rendered as it is in the heading (KaTeX on the web, LaTeX maths in the PDFs).
Links with a text of their own are left alone.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform


def _title_of(env, docname: str, labelid: str, cache: dict) -> nodes.title | None:
    if docname not in cache:
        try:
            cache[docname] = env.get_doctree(docname)
        except Exception:  # a generated document (genindex, search): no maths in its titles
            cache[docname] = None
    tree = cache[docname]
    if tree is None:
        return None
    for section in tree.findall(nodes.section):
        if labelid in section["ids"] and section.children and isinstance(section[0], nodes.title):
            return section[0]
    return None


class MathInRefTitles(SphinxPostTransform):
    default_priority = 20  # after the references are resolved

    def run(self, **kwargs) -> None:
        labels = self.env.get_domain("std").labels  # name -> (docname, labelid, sectname)
        by_text: dict[str, list[tuple[str, str]]] = {}
        for docname, labelid, sectname in labels.values():
            if docname and sectname and any(c in sectname for c in "\\^_"):  # maybe a formula
                by_text.setdefault(sectname, []).append((docname, labelid))
        if not by_text:
            return
        cache: dict = {}
        for inline in list(self.document.findall(nodes.inline)):
            if "std-ref" not in inline.get("classes", []):
                continue
            text = inline.astext()
            if text not in by_text or any(not isinstance(c, nodes.Text) for c in inline.children):
                continue
            for docname, labelid in by_text[text]:
                title = _title_of(self.env, docname, labelid, cache)
                if title is not None and any(title.findall(nodes.math)):
                    inline.children = []
                    for child in title.children:
                        if not isinstance(child, nodes.reference):  # no link inside a link
                            inline += child.deepcopy()
                        else:
                            inline += nodes.Text(child.astext())
                    break


def setup(app):
    app.add_post_transform(MathInRefTitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
