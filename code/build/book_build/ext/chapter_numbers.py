"""In print, chapters, figures, equations and exercises numbered as on the web (tests/pdf/test_pdf.py).

* LaTeX numbers every chapter, Sphinx those of a numbered part (``numbered: true`` in _toc.yml,
  read from ``env.toc_secnumbers``, the numbers its own writers print: it documents no other
  way): LaTeX's numbers are switched off before each chapter Sphinx left unnumbered
  (``\\tlunnumbered``, book/_latex/tlprint.sty), on again before the next numbered one.
* sphinx-jupyterbook-latex 1.0 sets ``numfig_secnum_depth`` to 2 at ``builder-inited`` when the
  book has parts (events.py, setup_latex_transforms, since
  https://github.com/executablebooks/sphinx-jupyterbook-latex/pull/88; no setting turns it off):
  Sphinx printed "Exercise 6.2.1". The book's value (1) is put back right after; the LaTeX
  writer reads 1 under parts as "no chapter prefix", so tlprint.sty writes "2.3" itself.
* sphinx-exercise 1.2.1 labels an exercise ``exercise:<label>`` in LaTeX and rewrites only
  references with a ``refid`` (same page; post_transforms.ResolveLinkTextToSolutions): a
  {numref} from another page printed "Exercise ??". :class:`ExerciseReferences` keeps the text
  Sphinx resolved ("Exercise 6.1") in a link to sphinx-exercise's label.
"""

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node


class ChapterNumbers(SphinxPostTransform):
    default_priority = 801  # on the assembled book, before the answers appendix is added
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        numbered_now = True
        for sof in list(self.document.findall(addnodes.start_of_file)):
            if sof.get("docname") not in self.env.found_docs:
                continue  # sphinx-jupyterbook-latex's holder of a part's heading, not a page
            numbered = bool(self.env.toc_secnumbers.get(sof["docname"], {}).get(""))
            if numbered != numbered_now:
                command = r"\tlnumbered" if numbered else r"\tlunnumbered"
                sof.parent.insert(sof.parent.index(sof), nodes.raw("", command + "\n", format="latex"))
                numbered_now = numbered


class ExerciseReferences(SphinxPostTransform):
    default_priority = 21  # after references are resolved (10), before sphinx-exercise's (22)
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        kinds = (exercise_node, exercise_enumerable_node)
        exercises = {node["label"] for node in self.document.findall(lambda n: isinstance(n, kinds))}
        for ref in list(self.document.findall(nodes.reference)):  # {ref} and {numref}
            uri = ref.get("refuri", "")
            if uri.startswith("%") and uri.partition("#")[2] in exercises:
                # the LaTeX writer links a refuri "%a#b" to the label "a:b": here "exercise:<label>"
                link = f"%exercise#{uri.partition('#')[2]}"
                ref.replace_self(nodes.reference("", "", *ref.children, internal=True, refuri=link))


def setup(app):
    depth = {}
    app.connect("config-inited", lambda app, config: depth.update(book=config.numfig_secnum_depth))
    # after sphinx-jupyterbook-latex's builder-inited (priority 500)
    app.connect("builder-inited", lambda app: setattr(app.config, "numfig_secnum_depth", depth["book"]), priority=900)
    app.add_post_transform(ChapterNumbers)
    app.add_post_transform(ExerciseReferences)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
