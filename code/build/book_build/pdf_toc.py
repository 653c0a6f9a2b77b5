"""Write the table of contents of a PDF edition: ``_build/_toc_<edition>.yml``.

``python -m book_build.pdf_toc student|instructor [OUT]``

Both editions start from ``_toc.yml`` with two changes for print:

* The root document becomes ``book/pdf_front`` (a short preface) and the site's root
  page (``book/intro``) becomes the first chapter of the first part. In a LaTeX build
  sphinx-jupyterbook-latex prints the root document as unnumbered front matter
  *without its title*, so the intro chapter would lose its heading.
* Every page of the instructor edition only (the instructor notes, the run sheet, the
  assessment) leaves its part (and a part left with no chapters goes). The instructor
  edition prints them in a last part, "For instructors", after everything else; the
  student edition leaves them out. A page says so itself, ``edition: instructor`` in its
  front matter (``book_build.pages``), or its ``_toc.yml`` entry does (``edition:
  instructor`` beside ``file:``, which wins); a file name means nothing.

**Same page numbers in both editions (the decision).** A class works from both editions
at once ("turn to page 42"), so everything the two editions share comes first and in the
same place, and whatever only the instructor edition has comes after it, at the end:

* the instructor pages: the last part (this script);
* the quiz answers, exercise solutions and instructor-only notes, which on the web sit
  in folded boxes next to their question: the last chapter, "Answers and solutions",
  of the instructor edition. In their place both editions print a box of the same
  height (a space to write the answer; the instructor edition's box also names the page
  of the answer). ``book_build.ext.editions`` does that, after Sphinx has numbered the
  figures, tables and equations, so those numbers are the same in both editions too.

The alternative, answers in place in the instructor edition and boxes of the same height
in the student edition, was rejected: LaTeX cannot reserve the height of a box that breaks
across pages without typesetting its content, and a multi-page solution would leave a
student a page and a half of blank paper. ``tests/pdf/test_pdf.py`` checks that both editions
have the same number of pages before the instructor part, and the same page for every
chapter.

**Chapter numbers.** The web edition numbers chapters, figures, tables, equations and
exercises by chapter ("Fig. 2.3", "(2.1)", "Exercise 5.1"): every part of ``_toc.yml``
but the first carries ``numbered: true``, and Jupyter Book's sphinx-multitoc-numbering
continues the chapter numbers from one numbered part to the next. The first part
("Before we start") is unnumbered, and so is the site's root page, which is the first
chapter of that part here: it has no number on the web, so it has none in print
(``book_build.ext.chapter_numbers`` turns LaTeX's chapter numbers off for the chapters
Sphinx left unnumbered). The instructor part is the last part of ``_toc.yml`` too, so leaving it out
of the student edition changes no number of what comes before it: a chapter, figure or
equation has the same number on the web and in both editions (``tests/pdf/test_pdf.py``).

Used by ``make pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from transformer_classroom import book

ROOT = book.find_root()
FRONT = "book/pdf_front"
EDITIONS = ("student", "instructor")


INSTRUCTOR_PART = "For instructors"


def is_instructor(entry: dict) -> bool:
    """Whether a toc entry is a page of the instructor edition only: its ``edition:`` in
    ``_toc.yml``, else the page's own declaration. A file that is not there (the build
    stops on it anyway) is in both editions."""
    if "edition" in entry:
        return entry["edition"] == "instructor"
    file = entry.get("file", "")
    try:
        return book.edition(file) == "instructor"
    except FileNotFoundError:
        return False


def pdf_toc(toc: dict, edition: str) -> dict:
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    parts, instructor, options = [], [], {}
    for i, part in enumerate(toc.get("parts", [])):
        chapters = list(part.get("chapters", []))
        if i == 0:
            chapters.insert(0, {"file": toc["root"]})
        if any(is_instructor(c) for c in chapters):  # the numbering of the part they came from
            options = {k: v for k, v in part.items() if k not in ("caption", "chapters")}
        instructor += [c for c in chapters if is_instructor(c)]
        chapters = [c for c in chapters if not is_instructor(c)]
        if chapters:
            parts.append({**part, "chapters": chapters})
    if edition == "instructor" and instructor:
        parts.append({"caption": INSTRUCTOR_PART, **options, "chapters": instructor})
    return {**toc, "root": FRONT, "parts": parts}


def main(edition: str, out: str | None = None) -> int:
    toc = book.toc(ROOT)
    dest = ROOT / (out or f"_build/_toc_{edition}.yml")
    dest.parent.mkdir(parents=True, exist_ok=True)
    header = "# generated by code/build/book_build/pdf_toc.py from _toc.yml: do not edit\n"
    dest.write_text(header + yaml.safe_dump(pdf_toc(toc, edition), sort_keys=False))
    print(f"wrote {dest.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
