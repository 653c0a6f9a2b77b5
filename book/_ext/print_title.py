"""The printed books' title page and running header (LaTeX builder only).

Through Sphinx's documented ``latex_elements`` (``preamble``, ``maketitle``,
``tableofcontents``), filled at ``config-inited``. The title page (``\\tlmaketitle``)
names the edition (``editions``), the package's version, and the repository and licence (``substitutions``);
it and the running header and footer are book/_latex/tlprint.sty's.
"""

from __future__ import annotations

from importlib import metadata

from editions import tex


def _latex_elements(app, config) -> None:
    edition = "for students" if config.book_edition == "student" else "for instructors"
    title, _, subtitle = str(config.html_title or config.project).partition(":")
    values = config.myst_substitutions
    macros = {
        "tledition": f"Edition {edition}",
        "tlshorttitle": tex(title.strip()),
        "tlsubtitle": tex(subtitle.strip()),
        "tlversion": tex(metadata.version("transformer_lessons")),
        "tlrepository": values["repo_url"],
        "tllicence": tex(values["licence"]),
    }
    elements = config.latex_elements
    preamble = "".join(rf"\newcommand{{\{k}}}{{{v}}}" + "\n" for k, v in macros.items())
    elements["preamble"] = preamble + "\\usepackage{tlprint}\n" + elements.get("preamble", "")
    elements["maketitle"] = r"\tlmaketitle"  # book/_latex/tlprint.sty
    # The running footer names the chapter: none before chapter 1 (not "CONTENTS").
    elements["tableofcontents"] = elements.get("tableofcontents", r"\sphinxtableofcontents") + "\n\\markboth{}{}\n"


def setup(app):
    app.setup_extension("editions")  # config.book_edition, set at its config-inited
    app.setup_extension("substitutions")  # repo_url and licence, set at its config-inited
    app.connect("config-inited", _latex_elements, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
