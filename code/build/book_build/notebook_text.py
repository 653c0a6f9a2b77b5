"""A page's MyST text as a reader's notebook shows it: Jupyter and Colab render Markdown,
not MyST, so the directives a page uses are written out in plain Markdown, and the
solutions are left out.

Used by ``book_build.sync_notebooks`` on a page's text (after the quiz blocks are taken out
and the exercises' titles written in), before jupytext splits it into cells:

* ``{solution-start}`` ... ``{solution-end}``, code cells included: left out. The notebook is
  what a student works in; the web edition has the solutions folded under each exercise and
  the instructor PDF prints them. (The grader still recognises a notebook of an older
  edition that carried them: ``transformer_classroom.submission``.)
* ``{exercise-start} Title``: a bold line, **Exercise: Title**; ``{exercise-end}``: nothing.
* ``{only} EXPR``: its content if ``EXPR`` names ``notebook`` (a tag no Sphinx build sets, so
  such text is for the notebooks alone), else nothing: ``html`` and ``latex`` text speaks
  of folded boxes and printed pages.
* ``{note}``, ``{important}``, ``{admonition} Title`` and the other boxes: a quote whose first
  line is the box's title in bold; a folded box (``:class: dropdown``) is shown open.
* ``{literalinclude} FILE`` with ``:pyobject: NAME``: the object's source, as a Python code
  block (the reader sees the code the page shows).
* ``{raw}``: nothing (the site's HTML has no place in a notebook).

Cross-reference roles and glued numbers stay as written (``{doc}`...```): a notebook does
not render them, and the page they come from is one click away in the web edition.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*?)[ \t]*$")
OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$")
BOXES = {"note", "important", "tip", "warning", "caution", "attention", "hint", "seealso", "danger", "error",
         "admonition"}


class NotebookTextError(ValueError):
    """A page uses MyST that the notebooks cannot show."""


def _block(lines: list[str], start: int) -> tuple[re.Match, dict[str, str], list[str], int]:
    """The directive opening at ``lines[start]``: its match, options, content lines and the
    index of the line after its closing fence."""
    m = OPEN.match(lines[start])
    close = m.group("indent") + m.group("fence")
    end = next((j for j in range(start + 1, len(lines)) if lines[j].rstrip() == close), None)
    if end is None:
        raise NotebookTextError(f"line {start + 1}: {{{m.group('name')}}} is never closed")
    body, options = lines[start + 1:end], {}
    while body and (o := OPTION.match(body[0])):
        options[o.group("key")] = o.group("value").strip()
        body = body[1:]
    return m, options, body, end + 1


def _dedent(lines: list[str], indent: str) -> list[str]:
    return [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines]


def _pyobject(path: Path, name: str) -> str:
    """The source of ``name`` (a function, a class or ``Class.method``) in the file ``path``."""
    text = path.read_text(encoding="utf-8")
    scope: list[ast.stmt] = ast.parse(text).body
    node = None
    for part in name.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                     and n.name == part), None)
        if node is None:
            raise NotebookTextError(f"{path.name} has no {name}")
        scope = node.body
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = text.splitlines()[first - 1:node.end_lineno]
    indent = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(line[indent:] for line in lines)


def for_jupyter(text: str, folder: Path) -> str:
    """``text`` of a page in ``folder`` (``book/``) with its directives written out as
    Markdown (see the module's docstring); code cells are left as they are."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        name, indent = m.group("name"), m.group("indent")
        match, options, body, after = _block(lines, i)
        if name == "code-cell":
            out += lines[i:after]
        elif name == "solution-start":
            end = next((j for j in range(after, len(lines)) if (e := OPEN.match(lines[j]))
                        and e.group("name") == "solution-end"), None)
            if end is None:
                raise NotebookTextError(f"line {i + 1}: a solution with no {{solution-end}}")
            after = _block(lines, end)[3]
            while out and not out[-1].strip() and after < len(lines) and not lines[after].strip():
                out.pop()  # one blank line where the solution was
        elif name == "exercise-start":
            out.append(f"{indent}**Exercise: {match.group('arg')}**" if match.group("arg") else f"{indent}**Exercise**")
        elif name in ("exercise-end", "raw"):
            while out and not out[-1].strip() and after < len(lines) and not lines[after].strip():
                out.pop()
        elif name == "only":
            if "notebook" in match.group("arg").split():
                out += for_jupyter("\n".join(body), folder).split("\n")
            else:
                while out and not out[-1].strip() and after < len(lines) and not lines[after].strip():
                    out.pop()
        elif name in BOXES:
            title = match.group("arg") if name == "admonition" else name.capitalize()
            content = _dedent(for_jupyter("\n".join(body), folder).split("\n"), indent)
            while content and not content[0].strip():
                content = content[1:]
            while content and not content[-1].strip():
                content = content[:-1]
            quoted = [f"**{title}.**", ""] + content if title else content
            out += [f"{indent}> {line}".rstrip() for line in quoted]
        elif name == "literalinclude":
            if "pyobject" not in options:
                raise NotebookTextError(f"line {i + 1}: a literalinclude without :pyobject: (the notebooks show one object)")
            source = _pyobject((folder / match.group("arg")).resolve(), options["pyobject"])
            out += [f"{indent}```{options.get('language', 'python')}", *(indent + s if s else s for s in
                                                                         source.split("\n")), f"{indent}```"]
        else:
            raise NotebookTextError(f"line {i + 1}: {{{name}}} has no plain-Markdown form for the notebooks; "
                                    "add one in book_build.notebook_text")
        i = after
    return "\n".join(out)
