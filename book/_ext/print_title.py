"""The printed books' title page, running header and code colours (LaTeX builder only).

Through Sphinx's documented settings: ``latex_elements`` (``preamble``, ``maketitle``,
``tableofcontents``), filled at ``config-inited``, and ``pygments_style`` for the LaTeX
builder, set at ``builder-inited``. The title page names the edition (``editions``), the
version and licence (pyproject.toml) and the repository (``repository: url`` in
_config.yml); the running header and footer are book/_latex/tlprint.sty's.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pygments.style import Style
from pygments.styles.default import DefaultStyle
from pygments.token import Comment, Keyword, Name, Number, Operator, String

ROOT = Path(__file__).resolve().parents[2]


class PrintStyle(Style):
    """Every token dark enough to read in greyscale: the default style's comments (italic
    #3D7B7B) are the lightest text on a printed page, yet the shape comments
    (``# (B, T, E) -> (B, H, T, d_k)``) are the book's key device."""

    background_color = "#f7f7f7"
    styles = {
        **DefaultStyle.styles,
        Comment: "italic #474747",
        Comment.Preproc: "#474747",
        Keyword: "bold #1a237e",
        Keyword.Constant: "bold #1a237e",
        Name.Builtin: "#1a237e",
        Name.Function: "#0d3f66",
        Name.Class: "bold #0d3f66",
        Name.Decorator: "#5c2d91",
        String: "#7a2e00",
        String.Doc: "italic #474747",
        Number: "#004d1a",
        Operator: "#333333",
        Operator.Word: "bold #1a237e",
    }


TITLE_PAGE = r"""
\makeatletter
\begin{titlepage}
  \hypersetup{pageanchor=false}
  \centering\py@HeaderFamily
  \vspace*{3cm}
  {\Huge \tlshorttitle\par}
  \vspace{1.2em}
  {\LARGE\mdseries \tlsubtitle\par}
  \vspace{2.5em}
  {\itshape\Large \tledition\par}
  \vfill
  {\large\mdseries An executable lesson: every figure and number in this book was
   computed by its code when the book was built.\par}
  \vspace{2em}
  {\large Version \tlversion\ \textperiodcentered\ \today\par}
  \vspace{1em}
  {\large\mdseries\url{\tlrepository}\par}
  \vspace{1em}
  {\large\mdseries Licence: \tllicence. Copy it, change it, teach with it.\par}
  \vspace{1cm}
\end{titlepage}
\makeatother
\setcounter{page}{1}
"""


def _tex(text: str) -> str:
    return re.sub(r"([#$%&_{}])", r"\\\1", text)


def _latex_elements(app, config) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    edition = "for students" if config.book_edition == "student" else "for instructors"
    title, _, subtitle = str(config.html_title or config.project).partition(":")
    macros = {
        "tledition": f"Edition {edition}",
        "tlshorttitle": _tex(title.strip()),
        "tlsubtitle": _tex(subtitle.strip()),
        "tlversion": _tex(project["version"]),
        "tlrepository": config.html_theme_options.get("repository_url", ""),
        "tllicence": _tex(project.get("license", {}).get("text", "")),
    }
    elements = config.latex_elements
    preamble = "".join(rf"\newcommand{{\{k}}}{{{v}}}" + "\n" for k, v in macros.items())
    elements["preamble"] = preamble + "\\usepackage{tlprint}\n" + elements.get("preamble", "")
    elements["maketitle"] = TITLE_PAGE
    # The running footer names the chapter: none before chapter 1 (not "CONTENTS").
    elements["tableofcontents"] = elements.get("tableofcontents", r"\sphinxtableofcontents") + "\n\\markboth{}{}\n"


def _print_colours(app) -> None:
    if app.builder.format == "latex":
        app.config.pygments_style = "print_title.PrintStyle"


def setup(app):
    app.setup_extension("editions")  # config.book_edition, set at its config-inited
    app.connect("config-inited", _latex_elements, priority=600)
    app.connect("builder-inited", _print_colours)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
