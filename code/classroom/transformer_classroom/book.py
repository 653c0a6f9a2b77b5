"""The one reader of the book's structure: ``_config.yml``, ``_toc.yml``, what each page
declares about itself in its front matter, and the exercise numbers the build printed
(:func:`printed_exercise`).

Every tool of the build (``book_build``), the classroom (the LMS export) and the tests
ask this module; none of them opens ``_toc.yml`` or parses a front matter itself.

Where the book is. A book is a folder holding ``_config.yml`` and ``_toc.yml``, with its
pages in ``book/``. Every function takes that folder as ``root``; without it, the folder
is found from the current directory upwards (the repository root, or ``book/`` while a
page executes), so the installed package never guesses from where its own file lies.

What a page declares. A page of the book is one file: what the tools need to know about it
is written at its top (the YAML front matter between ``---`` lines, before the title),
never in a file name and never in a list elsewhere. The keys, all optional:

``edition: instructor``
    the page belongs to the instructor edition only: the student PDF leaves it out
    (``book_build.pdf_toc``). Without it a page is in both editions.
``kind: quiz | glossary | exercises | cheat-sheet | pacing-plan | run-sheet``
    what machinery treats the page specially: a ``quiz`` page collects the chapters'
    questions and is exported to learning-management systems; the ``glossary`` page's terms
    get index entries; ``exercises`` is timed by its exercises' own minutes
    (``book_build.pacing``) and gives the handout its exercise table, the ``cheat-sheet``
    its equations, shapes and masks (``book_build.handout``); the ``pacing-plan`` page
    prints the lesson's plans and the ``run-sheet`` page holds its segments. The tools that
    need one of these pages ask for exactly one (:func:`the`).
``colab-install: <pip arguments>``
    what the page needs in Colab beyond ``transformer_lessons``: the notebook's install
    cell adds ``%pip install --quiet <pip arguments>`` (``book_build.sync_notebooks``).
``myst: substitutions: time: "N minutes" | "N-M minutes" | "..., optional"``
    the page's time budget, printed by the page as ``{{ time }}``; the times a page
    announces of other pages (``{{ time_<page> }}``) are generated from them by
    ``book_build.pages.sync``.
``pacing:``
    the page's place in the lesson plans and what the slides take from it; its keys are
    explained where it is read, ``book_build.pacing``.
"""

from __future__ import annotations

import os
import re
from functools import cache
from html.parser import HTMLParser
from importlib import metadata
from pathlib import Path

import yaml

KINDS = {"quiz", "glossary", "exercises", "cheat-sheet", "pacing-plan", "run-sheet"}
EDITIONS = {"both", "instructor"}
ROOT_ENV = "BOOK_ROOT"  # overrides the search from the current directory


class BookError(ValueError):
    """The book's files say something impossible (a missing page, a bad front matter)."""


def find_root(start: Path | None = None) -> Path:
    """The book's folder: ``$BOOK_ROOT``, else the nearest folder at or above ``start``
    (the current directory) that holds ``_config.yml`` and ``_toc.yml``."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV]).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_config.yml").exists() and (folder / "_toc.yml").exists():
            return folder
    raise BookError(f"no book at or above {here}: a book's folder holds _config.yml and _toc.yml "
                    f"(run from the repository, or set {ROOT_ENV})")


def _root(root: Path | str | None) -> Path:
    return Path(root) if root is not None else find_root()


def pages_folder(root: Path | str | None = None) -> Path:
    """``book/``, where the pages are."""
    return _root(root) / "book"


# --- _config.yml ---------------------------------------------------------------------------

@cache
def _yaml(path: Path, mtime_ns: int) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise BookError(f"{path}: not a YAML mapping")
    return data


def _read_yaml(path: Path) -> dict:
    return _yaml(path, path.stat().st_mtime_ns)


def config(root: Path | str | None = None) -> dict:
    """``_config.yml``, parsed."""
    return _read_yaml(_root(root) / "_config.yml")


def title(root: Path | str | None = None) -> str:
    return str(config(root)["title"])


def author(root: Path | str | None = None) -> str:
    return str(config(root)["author"])


def course_name(root: Path | str | None = None) -> str:
    """``course: name``: the prefix of the files the site publishes and the variants' default seed."""
    name = str((config(root).get("course") or {}).get("name") or "")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise BookError(f"_config.yml: course: name: {name!r} must be lower-case letters, digits and hyphens "
                        "(it names the published files)")
    return name


# What the site publishes besides its pages, by key: ``{course name}-<suffix>``.
PUBLISHED = {
    "pdf_student": "student.pdf",
    "pdf_instructor": "instructor.pdf",
    "pdf_handout": "handout.pdf",
    "pdf_slides": "slides.pdf",
    "lms_qti": "qti.zip",
    "lms_moodle": "moodle.xml",
}


def published(root: Path | str | None = None) -> dict[str, str]:
    """The file name of each file the site publishes (:data:`PUBLISHED`), from the course's name."""
    name = course_name(root)
    return {key: f"{name}-{suffix}" for key, suffix in PUBLISHED.items()}


def values(repo_url: str, branch: str = "main") -> dict[str, str]:
    """What ``{{ name }}`` in a page stands for, given ``repository: url`` and ``branch``
    of _config.yml:

    * ``repo_url``; ``source_url``, its files on the branch (a link to a file is
      ``{{ '[text](' ~ source_url ~ '/tests/library/test_encoder.py)' }}``: MyST replaces no
      substitution inside a link's target or a code block);
    * ``pages_url``: where GitHub Pages publishes it (``https://github.com/ORG/REPO`` ->
      ``https://org.github.io/REPO/``, what the publish workflow deploys to);
    * ``licence``: the learner package's licence (its metadata, from pyproject.toml);
    * ``example_T``, ``example_d_model``, ``example_heads``, ``example_d_k``,
      ``example_d_ff``: the running example's sizes (:mod:`transformer_lessons.example`).

    :func:`book_values` adds the book's own: ``book_title``, ``book_author`` and the names
    of the published files (:func:`published`).
    """
    from transformer_lessons import example

    m = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", repo_url)
    if m is None:
        raise BookError(f"repository url {repo_url!r} is not https://github.com/ORG/REPO")
    repo_url = repo_url.rstrip("/")
    return {
        "repo_url": repo_url,
        "source_url": f"{repo_url}/blob/{branch}",
        "pages_url": f"https://{m.group(1).lower()}.github.io/{m.group(2)}/",
        "licence": metadata.metadata("transformer_lessons")["License"],
        "example_T": str(len(example.tokens())),
        "example_d_model": str(example.D_MODEL),
        "example_heads": str(example.NUM_HEADS),
        "example_d_k": str(example.D_K),
        "example_d_ff": str(example.D_FF),
    }


def book_values(root: Path | str | None = None) -> dict[str, str]:
    """:func:`values` for the book in ``root``, as its build fills them
    (``book_build.ext.substitutions``): from ``repository`` (``url``, ``branch``); then
    ``html_baseurl``, when set, as ``pages_url`` (the site is published there); then every
    key set under ``parse: myst_substitutions``, which wins. The one reading of "where the
    book lives" for the build, the handout, the notebooks and the LMS export."""
    cfg = config(root)
    repository = cfg["repository"]
    found = values(repository["url"], repository.get("branch", "main"))
    base = ((cfg.get("sphinx") or {}).get("config") or {}).get("html_baseurl")
    if base:
        found["pages_url"] = base if base.endswith("/") else base + "/"
    found.update({"book_title": title(root), "book_author": author(root), **published(root)})
    found.update({k: str(v) for k, v in ((cfg.get("parse") or {}).get("myst_substitutions") or {}).items()})
    return found


# --- _toc.yml ------------------------------------------------------------------------------

def toc(root: Path | str | None = None) -> dict:
    """``_toc.yml``, parsed (a copy: the caller may change it)."""
    import copy

    return copy.deepcopy(_read_yaml(_root(root) / "_toc.yml"))


def toc_files(root: Path | str | None = None, toc: Path | None = None) -> list[str]:
    """Every document of ``_toc.yml`` (or of ``toc``), root first, in its order, as written
    there (``book/intro``); parts, chapters and sections alike."""
    data = _read_yaml(Path(toc) if toc is not None else _root(root) / "_toc.yml")
    entries = [data["root"]]

    def walk(items):
        for item in items or []:
            if "file" in item:
                entries.append(item["file"])
            walk(item.get("chapters"))
            walk(item.get("sections"))

    walk(data.get("parts"))
    walk(data.get("chapters"))
    return entries


def toc_pages(root: Path | str | None = None, toc: Path | None = None) -> list[str]:
    """The pages of the table of contents that are in ``book/``, in its order, by name."""
    folder = pages_folder(root)
    return [Path(e).name for e in toc_files(root, toc) if (folder / f"{Path(e).name}.md").exists()]


def source(docname: str, root: Path | str | None = None) -> Path:
    """The source file of a toc entry (``book/intro`` -> ``book/intro.md``)."""
    for suffix in (".md", ".ipynb"):
        if (p := _root(root) / (docname + suffix)).exists():
            return p
    raise BookError(f"no source for {docname} in _toc.yml")


# --- the pages' front matter -----------------------------------------------------------------

def path(page: str, root: Path | str | None = None) -> Path:
    """``book/<page>.md``; ``page`` may be a toc entry (``book/foundations``)."""
    p = pages_folder(root) / f"{Path(page).name}.md"
    if not p.exists():
        raise FileNotFoundError(f"no page book/{p.name}")
    return p


def split(text: str) -> tuple[str, str] | None:
    """(front matter text, rest) of a page's text, or None without front matter."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    return text[4: end + 1], text[end + 5:]


@cache
def _front_matter(p: Path, mtime_ns: int) -> dict:
    parts = split(p.read_text(encoding="utf-8"))
    data = yaml.safe_load(parts[0]) if parts else {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise BookError(f"book/{p.name}: front matter is not a mapping")
    return data


def front_matter(page: str, root: Path | str | None = None) -> dict:
    """The page's front matter as a dict (empty without one)."""
    p = path(page, root)
    return _front_matter(p, p.stat().st_mtime_ns)


def names(root: Path | str | None = None) -> list[str]:
    """Every page of the book folder, by name."""
    return sorted(p.stem for p in pages_folder(root).glob("*.md"))


def kind(page: str, root: Path | str | None = None) -> str | None:
    k = front_matter(page, root).get("kind")
    if k is not None and k not in KINDS:
        raise BookError(f"book/{Path(page).name}.md: kind: {k!r} is not one of {sorted(KINDS)}")
    return k


def edition(page: str, root: Path | str | None = None) -> str:
    """``instructor`` for a page of the instructor edition only, else ``both``."""
    e = front_matter(page, root).get("edition", "both")
    if e not in EDITIONS:
        raise BookError(f"book/{Path(page).name}.md: edition: {e!r} is not one of {sorted(EDITIONS)}")
    return e


def of_kind(k: str, root: Path | str | None = None) -> list[str]:
    """The pages that declare ``kind: k``."""
    if k not in KINDS:
        raise BookError(f"kind {k!r} is not one of {sorted(KINDS)}")
    return [p for p in names(root) if kind(p, root) == k]


def the(k: str, root: Path | str | None = None) -> str:
    """The one page of kind ``k`` (pacing-plan, run-sheet, glossary)."""
    found = of_kind(k, root)
    if len(found) != 1:
        raise BookError(f"exactly one page must declare kind: {k}, found {found}")
    return found[0]


def substitutions(page: str, root: Path | str | None = None) -> dict[str, str]:
    """The page's own MyST substitutions (``myst: substitutions``), values as text."""
    subs = (front_matter(page, root).get("myst") or {}).get("substitutions") or {}
    return {k: str(v) for k, v in subs.items()}


def time(page: str, root: Path | str | None = None) -> str | None:
    """The page's time budget as it prints it (``"30-35 minutes"``), or None."""
    return substitutions(page, root).get("time")


def times(root: Path | str | None = None) -> dict[str, str]:
    """page -> its declared time, for every page that declares one."""
    return {p: t for p in names(root) if (t := time(p, root)) is not None}


# --- the built site ----------------------------------------------------------------------------

class _TitleFinder(HTMLParser):
    """The text of the ``admonition-title`` inside the element with id ``ident``."""

    def __init__(self, ident: str):
        super().__init__(convert_charrefs=True)
        self.ident, self.depth, self.in_title, self.parts, self.done, self.found = ident, 0, 0, [], False, False

    def handle_starttag(self, tag, attrs):
        if self.done or tag in _VOID:
            return
        attrs = dict(attrs)
        if self.depth:
            self.depth += 1
            if self.in_title:
                self.in_title += 1
            elif "admonition-title" in (attrs.get("class") or "").split():
                self.in_title = 1
        elif attrs.get("id") == self.ident:
            self.depth, self.found = 1, True

    def handle_endtag(self, tag):
        if self.done or not self.depth or tag in _VOID:
            return
        self.depth -= 1
        if self.in_title:
            self.in_title -= 1
            if not self.in_title:
                self.done = True
        if not self.depth:
            self.done = True

    def handle_data(self, data):
        if self.in_title and not self.done:
            self.parts.append(data)


_VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "source", "col", "area", "base", "embed", "track"}


def printed_exercise(html: str, label: str) -> tuple[str, str] | None:
    """The number and the title the build printed for exercise ``label`` in a built page's
    ``html``: ``("Exercise 6.1", "Self-attention in NumPy")``, ``("", "Bug hunt: a causal mask")``
    for an exercise the book does not number; None when the page has no such exercise.
    The one reader of a built exercise's heading (the grader's feedback and
    ``book_build.built``, which the slides and the handout read)."""
    finder = _TitleFinder(label)
    finder.feed(html)
    if not finder.found:
        return None
    text = " ".join("".join(finder.parts).replace("¶", "").replace("#", "").split())
    text = text.replace(" )", ")").replace("( ", "(")
    m = re.fullmatch(r"(Exercise(?:\s+[\dA-Z.]+)?)\s*(?:\((.*)\))?", text)
    if not m:
        return "", text
    number = m.group(1) if m.group(1) != "Exercise" else ""
    return number, (m.group(2) or "").strip()


def main(argv: list[str] | None = None) -> int:
    """``python -m transformer_classroom.book KEY``: print one of :func:`book_values` (the
    Makefile asks it for the PDFs' names)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    values = book_values()
    if len(args) != 1 or args[0] not in values:
        print(f"usage: python -m transformer_classroom.book KEY, KEY one of {sorted(values)}", file=sys.stderr)
        return 2
    print(values[args[0]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
