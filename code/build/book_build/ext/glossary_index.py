"""In print, the index points where each glossary term is taught (tests/pdf/test_pdf.py):

* an entry for each glossary term at every section whose title names it, besides its own;
* the glossary's own entries move from the term into its definition (same page): inside the
  term, a macro argument in LaTeX, ``\\index`` wrote "multi\\sphinxhyphen {}head" where the text
  writes "multi\\sphinxhyphen{}head", and makeindex printed every hyphenated term twice.
"""

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
            for index in list(term.findall(addnodes.index)) if definitions else []:
                index.parent.remove(index)
                index["inline"] = False
                definitions[0].insert(0, index)
        # (name, dispname, type, docname, anchor, priority): Domain.get_objects, documented
        found = [(name, doc) for name, _, kind, doc, _, _ in self.env.get_domain("std").get_objects() if kind == "term"]
        terms = sorted({name for name, _ in found}, key=lambda t: (-len(t), t))  # longest first, then a fixed order
        glossary_docs = {doc for _, doc in found}
        patterns = {t: re.compile(rf"\b{re.escape(t)}s?\b", re.IGNORECASE) for t in terms}
        pages = [sof for sof in self.document.findall(addnodes.start_of_file) if sof.get("docname") in glossary_docs]
        in_glossary = {id(section) for sof in pages for section in sof.findall(nodes.section)}
        for section in self.document.findall(nodes.section):
            if not section.children or not isinstance(section[0], nodes.title) or id(section) in in_glossary:
                continue
            hits = [t for t in terms if patterns[t].search(section[0].astext())]
            if hits:
                section.insert(1, addnodes.index(entries=[("single", t, "", "", None) for t in hits], inline=False))


def setup(app):
    app.add_post_transform(GlossaryIndex)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
