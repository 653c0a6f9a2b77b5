"""The printed books' title page, running header and code colours (LaTeX builder only).

Through Sphinx's documented settings: ``latex_elements`` (``preamble``, ``maketitle``,
``tableofcontents``), filled at ``config-inited``, and ``pygments_style`` for the LaTeX
builder, set at ``builder-inited``. The title page (``\\tlmaketitle``) names the edition
(``editions``), the package's version, and the repository and licence (``substitutions``);
it and the running header and footer are book/_latex/tlprint.sty's.
"""

from __future__ import annotations

import re
from importlib import metadata

from pygments.style import Style
from pygments.styles.default import DefaultStyle
from pygments.token import Comment, Keyword, Name, Number, Operator, String

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


def _tex(text: str) -> str:
    return re.sub(r"([#$%&_{}])", r"\\\1", text)


def _latex_elements(app, config) -> None:
    edition = "for students" if config.book_edition == "student" else "for instructors"
    title, _, subtitle = str(config.html_title or config.project).partition(":")
    values = config.myst_substitutions
    macros = {
        "tledition": f"Edition {edition}",
        "tlshorttitle": _tex(title.strip()),
        "tlsubtitle": _tex(subtitle.strip()),
        "tlversion": _tex(metadata.version("transformer_lessons")),
        "tlrepository": values["repo_url"],
        "tllicence": _tex(values["licence"]),
    }
    elements = config.latex_elements
    preamble = "".join(rf"\newcommand{{\{k}}}{{{v}}}" + "\n" for k, v in macros.items())
    elements["preamble"] = preamble + "\\usepackage{tlprint}\n" + elements.get("preamble", "")
    elements["maketitle"] = r"\tlmaketitle"  # book/_latex/tlprint.sty
    # The running footer names the chapter: none before chapter 1 (not "CONTENTS").
    elements["tableofcontents"] = elements.get("tableofcontents", r"\sphinxtableofcontents") + "\n\\markboth{}{}\n"


def _print_colours(app) -> None:
    if app.builder.format == "latex":
        app.config.pygments_style = "print_title.PrintStyle"


def setup(app):
    app.setup_extension("editions")  # config.book_edition, set at its config-inited
    app.setup_extension("substitutions")  # repo_url and licence, set at its config-inited
    app.connect("config-inited", _latex_elements, priority=600)
    app.connect("builder-inited", _print_colours)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
