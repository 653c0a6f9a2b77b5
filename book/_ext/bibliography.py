"""The bibliography: author-year labels, and in print one list inside the Bibliography chapter.

* pybtex style ``authoryear`` (``bibtex_default_style`` in _config.yml, registered through
  pybtex's documented plug-in interface): the list sorted by author and year (pybtex's
  "plain") with labels such as "Vaswani et al., 2017", the form the text cites
  (``bibtex_reference_style: author_year``), instead of "[VSP+17]".
* LaTeX builder: Sphinx gathers every citation of the book into one ``thebibliography``
  at the end (a second chapter "Bibliography"); the list is moved back where the
  ``{bibliography}`` directive was, under the book's own chapter of that name
  (book/_latex/tlprint.sty prints it without a heading of its own).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform


def _register_style() -> None:
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [self.label(entry) for entry in sorted_entries]
            count: dict[str, int] = {}
            for label in labels:
                if labels.count(label) > 1:  # two works by the same authors in one year: 2017a, 2017b
                    count[label] = count.get(label, 0) + 1
                    yield label + "abcdefghijklmnopqrstuvwxyz"[count[label] - 1]
                else:
                    yield label

        @staticmethod
        def label(entry) -> str:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [" ".join(p.last_names) for p in people]
            if not names:
                who = entry.fields.get("organization", entry.fields.get("title", "Anon."))
            elif len(names) <= 2:
                who = " and ".join(names)
            else:
                who = f"{names[0]} et al."
            return f"{who.replace('{', '').replace('}', '')}, {entry.fields.get('year', 'n.d.')}"

    class AuthorYearStyle(PlainStyle):
        default_label_style = "authoryear"

    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabels, force=True)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle, force=True)


class MarkBibliography(SphinxPostTransform):
    """Before Sphinx gathers the citations (priority 750), mark where the directive put them."""

    default_priority = 740
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for citation in self.document.findall(nodes.citation):
            citation.parent.insert(citation.parent.index(citation), nodes.container(classes=["tl-bibliography-here"]))
            break


class PlaceBibliography(SphinxPostTransform):
    """After they are gathered (750), the list goes to the first mark; the other marks go."""

    default_priority = 802
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        markers = list(self.document.findall(lambda n: isinstance(n, nodes.container) and "tl-bibliography-here" in n["classes"]))
        bibs = [n for n in self.document.findall(nodes.Element) if n.tagname == "thebibliography"]
        if markers and bibs:
            bibs[-1].parent.remove(bibs[-1])
            markers[0].replace_self(bibs[-1])
            markers = markers[1:]
        for extra in markers:
            extra.parent.remove(extra)


def setup(app):
    _register_style()
    app.add_post_transform(MarkBibliography)
    app.add_post_transform(PlaceBibliography)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
