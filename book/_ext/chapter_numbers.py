"""In print, chapters, figures, equations and exercises numbered as on the web.

* LaTeX numbers every chapter; Sphinx numbers only the chapters of a numbered part
  (``numbered: true`` in _toc.yml). Before each chapter Sphinx left unnumbered (the first
  part) LaTeX's section numbers are switched off (``\\tlunnumbered``,
  book/_latex/tlprint.sty), and back on before the next numbered one, so chapter 1 is
  the web's chapter 1 and "Fig. 2.3" and "(2.1)" are the same on the web and on paper.
* sphinx-jupyterbook-latex sets ``numfig_secnum_depth`` to 2 when the book has parts: the
  LaTeX writer counts the part as a level, so 2 makes LaTeX restart its figure and
  equation counters at each chapter. Sphinx's own numbering (sphinx-exercise's "Exercise
  6.1") does not count parts, and with 2 it printed "Exercise 6.2.1". So the environment
  numbers with 1 (set at ``builder-inited``, after that extension) and the writer gets its
  2 back once the numbers are assigned (``env-get-updated``, after Sphinx's TocTreeCollector).
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

_WRITER_DEPTH: dict[int, int] = {}  # the LaTeX writer's numfig_secnum_depth, per build


def _number_env_by_chapter(app) -> None:
    if app.builder.format == "latex":
        _WRITER_DEPTH[id(app)] = app.config.numfig_secnum_depth
        app.config.numfig_secnum_depth = 1


def _restore_writer_depth(app, env):
    if id(app) in _WRITER_DEPTH:
        app.config.numfig_secnum_depth = _WRITER_DEPTH[id(app)]
    return []


class ChapterNumbers(SphinxPostTransform):
    default_priority = 801  # on the assembled book, before the answers appendix is added
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        numbered_now = True
        for sof in list(self.document.findall(addnodes.start_of_file)):
            docname = sof.get("docname", "")
            if docname not in self.env.titles or sof.parent is None:
                continue
            numbered = bool(self.env.toc_secnumbers.get(docname, {}).get(""))
            if numbered != numbered_now:
                command = r"\tlnumbered" if numbered else r"\tlunnumbered"
                sof.parent.insert(sof.parent.index(sof), nodes.raw("", command + "\n", format="latex"))
                numbered_now = numbered


def setup(app):
    app.connect("builder-inited", _number_env_by_chapter, priority=900)  # after sphinx-jupyterbook-latex (500)
    app.connect("env-get-updated", _restore_writer_depth, priority=900)  # after Sphinx's own (500)
    app.add_post_transform(ChapterNumbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
