"""The bibliography: author-year labels, and in print one list inside the Bibliography chapter.

* pybtex style ``authoryear`` (``bibtex_default_style`` in _config.yml, through pybtex's
  plug-in interface): pybtex's "plain" list (sorted by author and year) with labels such as
  "Vaswani et al., 2017", the form the text cites (``bibtex_reference_style: author_year``),
  instead of "[VSP+17]".
* LaTeX builder: Sphinx gathers every citation of the book into one ``thebibliography`` at the
  end (a second chapter "Bibliography", priority 750); the list goes back where the
  ``{bibliography}`` directive was, in the book's chapter of that name (tlprint.sty prints it
  without a heading of its own).
"""

from docutils import nodes
from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.transforms.post_transforms import SphinxPostTransform

MARK = "tl-bibliography-here"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [self.label(entry) for entry in sorted_entries]
        for i, label in enumerate(labels):  # two works by the same authors in one year: 2017a, 2017b
            yield label + ("abcdefghijklmnopqrstuvwxyz"[labels[:i].count(label)] if labels.count(label) > 1 else "")

    @staticmethod
    def label(entry) -> str:
        names = [" ".join(p.last_names) for p in entry.persons.get("author") or entry.persons.get("editor") or []]
        who = " and ".join(names) if len(names) <= 2 else f"{names[0]} et al."
        who = who or entry.fields.get("organization", entry.fields.get("title", "Anon."))  # no names
        return f"{who.replace('{', '').replace('}', '')}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(PlainStyle):
    default_label_style = AuthorYearLabels  # pybtex's find_plugin takes a plug-in class for a name


class MarkBibliography(SphinxPostTransform):
    default_priority = 740  # before Sphinx gathers the citations: mark where the first one is
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        citation = next(self.document.findall(nodes.citation), None)
        if citation is not None:
            citation.parent.insert(citation.parent.index(citation), nodes.container(classes=[MARK]))


class PlaceBibliography(SphinxPostTransform):
    default_priority = 802  # after: the gathered list replaces the mark
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        mark = next(self.document.findall(lambda n: isinstance(n, nodes.container) and MARK in n["classes"]), None)
        bib = [n for n in self.document.findall(nodes.Element) if n.tagname == "thebibliography"]
        if mark is not None and bib:
            bib[-1].parent.remove(bib[-1])
            mark.replace_self(bib[-1])


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle, force=True)
    app.add_post_transform(MarkBibliography)
    app.add_post_transform(PlaceBibliography)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
