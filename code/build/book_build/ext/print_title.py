"""The printed books' title page and running header, through Sphinx's ``latex_elements``
(``preamble``, ``maketitle``, ``tableofcontents``) filled at ``config-inited``: the title page
(``\\tlmaketitle``, book/_latex/tlprint.sty, like the header and footer) names the edition
(``editions``), the package's version, the repository and the licence (``substitutions``).
"""

from importlib import metadata

from .editions import tex


def _latex_elements(app, config) -> None:
    edition = "for students" if config.book_edition == "student" else "for instructors"
    title, _, subtitle = str(config.html_title or config.project).partition(":")
    macros = {
        "tledition": f"Edition {edition}",
        "tlshorttitle": tex(title.strip()),
        "tlsubtitle": tex(subtitle.strip()),
        "tlversion": tex(metadata.version("transformer_lessons")),
        "tlrepository": config.myst_substitutions["repo_url"],
        "tllicence": tex(config.myst_substitutions["licence"]),
    }
    elements = config.latex_elements
    preamble = "".join(rf"\newcommand{{\{k}}}{{{v}}}" + "\n" for k, v in macros.items())
    # the PDF's own Title and Author (what a reader's file list and pdfinfo show)
    full_title = tex(str(config.html_title or config.project)) + f" ({edition})"
    preamble += rf"\AtBeginDocument{{\hypersetup{{pdftitle={{{full_title}}},pdfauthor={{{tex(str(config.author))}}}}}}}" + "\n"
    elements["preamble"] = preamble + "\\usepackage{tlprint}\n" + elements.get("preamble", "")
    elements["maketitle"] = r"\tlmaketitle"
    # The running footer names the chapter: none before chapter 1 (not "CONTENTS").
    elements["tableofcontents"] = elements.get("tableofcontents", r"\sphinxtableofcontents") + "\n\\markboth{}{}\n"


def setup(app):
    app.setup_extension("book_build.ext.editions")  # config.book_edition, set at its config-inited
    app.setup_extension("book_build.ext.substitutions")  # repo_url and licence, set at its config-inited
    app.connect("config-inited", _latex_elements, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
