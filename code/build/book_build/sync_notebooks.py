"""Keep the Colab/Binder notebooks in sync with the MyST sources.

For every executable page ``book/NAME.md`` (a page with a jupytext header),
``book/NAME.ipynb`` is the output-free notebook generated from it; Colab opens it (Colab
cannot read MyST), and sphinx-book-theme points the launch buttons at it.

The notebook gets one cell the page does not have: the *install cell*, first among the
code cells, tagged ``remove-cell``. In Colab it installs ``transformer_lessons`` from the
repository named in ``_config.yml`` (``repository.url`` / ``repository.branch``, the one
setting for where the book lives); anywhere else it does nothing. The page sources stay
free of it, so a new page needs no boilerplate beyond its jupytext header.

Cells tagged ``remove-cell`` in a page (hidden checks of the page's claims) and cells tagged
``site-only`` (a visible output that only the build can make: an interactive box written by
``book_build``, an instructor's table made by ``transformer_classroom``) are left out of the
notebook, and so are the page's quiz questions (``{quiz-question}`` blocks, shown on
their quiz page: the notebook is made from ``transformer_classroom.quiz_blocks.page_text``):
a reader in Colab or Binder sees what the site shows.

Build-only code lives in those cells and nowhere else. myst-nb's ``glue`` (numbers quoted
in the prose) and anything else of the book's build exists only where the book is built:
a reader's kernel has the package, its dependencies and what the install cell adds. So a
page imports ``from myst_nb import glue`` in a ``remove-cell`` cell (typically one right
after its setup cell), never in a visible or ``hide-input`` cell; the notebook then has
no glue, and has no need of it (its prose is the page's, with the glued numbers as roles
a notebook does not render). A stand-in ``glue`` that works without myst-nb was not
chosen: it would put build machinery in front of the reader for nothing.
``tests/notebooks/test_notebooks.py`` checks every import of every notebook against what Colab (with
the install cell) and ``binder/`` install, and runs every notebook in rebuilt Colab and
Binder environments (``tests/notebooks/reader_envs.py``).

The notebook is what a student works in: its text is the page's with the MyST directives
written out as Markdown and the solutions left out (``book_build.notebook_text``).

Before the notebooks, the times a page announces of other pages are brought up to date in
its front matter (``book_build.pages``).

``python -m book_build.sync_notebooks``          rewrite what is out of date (``make notebooks``)
``python -m book_build.sync_notebooks --check``  exit 1 if anything is out of date (the tests)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jinja2
import jupytext
import nbformat
from transformer_classroom import book

from . import pages
from .ext.exercise_titles import with_titles
from .notebook_text import for_jupyter

ROOT = book.find_root()
BOOK = ROOT / "book"
INSTALL_MARKER = "# Colab only: install transformer_lessons"
INSTALL_TAG = "remove-cell"
# A cell that shows the reader something only the site's build can make (a page's interactive
# box, written by book_build; an instructor table made by the classroom): the page shows
# its output, the notebook leaves it out, so a reader's kernel never imports either package.
SITE_ONLY = "site-only"


def repository() -> tuple[str, str]:
    repo = book.config(ROOT)["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def install_source(page: str = "") -> str:
    """The install cell; a page's ``colab-install:`` (pip arguments: what it needs in Colab
    beyond transformer_lessons, ``book_build.pages``) adds a line."""
    url, branch = repository()
    extra_args = book.front_matter(page).get("colab-install") if page else None
    extra = f"\n    %pip install --quiet {extra_args}" if extra_args else ""
    return (
        f"{INSTALL_MARKER} from the book's repository.\n"
        "# Everywhere else (the site build, Binder, your own machine) this cell does nothing.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install --quiet "transformer_lessons @ git+{url}@{branch}"{extra}'
    )


def executable_pages() -> list[Path]:
    pages = []
    for md in sorted(BOOK.glob("*.md")):
        head = md.read_text().split("\n---", 1)[0]
        if md.read_text().startswith("---") and "jupytext:" in head and "kernelspec:" in head:
            pages.append(md)
    return pages


def with_install_cell(nb: nbformat.NotebookNode, page: str = "") -> nbformat.NotebookNode:
    """Return ``nb`` whose first code cell is the current install cell."""
    cell = nbformat.v4.new_code_cell(install_source(page), metadata={"tags": [INSTALL_TAG]})
    cells = [c for c in nb.cells if not (c.cell_type == "code" and c.source.startswith(INSTALL_MARKER))]
    first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    cells.insert(first_code, cell)
    nb.cells = cells
    return nb


def _comparable(nb: nbformat.NotebookNode) -> list[tuple]:
    return [
        (c.cell_type, c.source.strip(), tuple(c.get("metadata", {}).get("tags", [])))
        for c in nb.cells
    ]


def substitutions() -> dict[str, str]:
    """The pages' MyST substitutions, as the build fills them (code/build/book_build/ext/substitutions.py):
    ``transformer_classroom.book.book_values``. A page's own (its time, ``book_build.pages``)
    come on top, in :func:`notebook_for`. Jupyter renders no MyST."""
    from transformer_classroom.book import book_values

    return book_values(ROOT)


def substitute(text: str, values: dict[str, str]) -> str:
    """``text`` with every ``{{ expression }}`` written out, as MyST renders it (Jinja2)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return re.sub(r"\{\{(.+?)\}\}", lambda m: env.from_string(m.group(0)).render(values), text)


def notebook_for(md: Path) -> nbformat.NotebookNode:
    """The notebook a reader opens for page ``md``: no hidden checks, no quiz questions
    (they are on their quiz page), no solutions, the directives as Markdown
    (``book_build.notebook_text``), the graded exercises' declared titles written in
    (``book_build.ext.exercise_titles``), the page's substitutions (its front matter's,
    ``book_build.pages``) written out in the text cells, plus the install cell."""
    from transformer_classroom.quiz_blocks import page_text

    text = for_jupyter(with_titles(page_text(md.parent, md.stem), md.stem), md.parent)
    nb = jupytext.reads(text, fmt="md:myst")
    nb.cells = [c for c in nb.cells
                if not (c.cell_type == "code" and set(c.get("metadata", {}).get("tags", [])) & {INSTALL_TAG, SITE_ONLY})]
    values = {**substitutions(), **book.substitutions(md.stem)}
    for c in nb.cells:
        if c.cell_type == "markdown":
            c.source = substitute(c.source, values)
    return with_install_cell(nb, md.stem)


def sync(check: bool) -> list[str]:
    stale = []
    for md in executable_pages():
        if INSTALL_MARKER in md.read_text():
            stale.append(f"{md.relative_to(ROOT)}: remove the install cell (the notebook gets it)")
        nb = notebook_for(md)
        ipynb = md.with_suffix(".ipynb")
        current = nbformat.read(ipynb, as_version=4) if ipynb.exists() else None
        if current is None or _comparable(current) != _comparable(nb) or any(
            c.get("outputs") for c in current.cells
        ):
            stale.append(f"{ipynb.relative_to(ROOT)}: missing or out of sync with {md.name}")
            if not check:
                out = notebook_for(md)
                out.metadata.pop("jupytext", None)
                out.metadata.pop("pacing", None)  # the lesson plan and slides: not for a reader
                out.metadata["colab"] = {"provenance": []}
                for i, c in enumerate(out.cells):
                    c["id"] = f"{md.stem}-{i}"  # stable ids: regenerating changes nothing
                jupytext.write(out, ipynb, fmt="ipynb")
    return stale


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = pages.sync(check) + sync(check)  # the pages' generated times first: notebooks print them
    for line in stale:
        print(("out of date: " if check else "updated: ") + line)
    if check and stale:
        print("run `make notebooks` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
