"""Read the built site (_build/html): labels, their numbers and titles, plain text.

The teaching kit (``book_build.slides``, ``book_build.handout``) never types a figure,
equation, exercise or quiz number: it looks each one up here by its label, in the pages the
build wrote, so whatever numbering the build uses flows into the slides and the handout.

``lookup(label)`` finds the element that a label names on any page and returns a
:class:`Ref`: its kind (figure, equation, exercise, section), its number as the build
printed it ("Fig. 3", "(2)", "Exercise 1"; empty when unnumbered), its title, and its page.
``plain(element)`` is an element's text for places without a math renderer (speaker
notes): each formula becomes readable plain text (``\\sqrt{d_k}`` -> ``√dₖ``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

from transformer_classroom import book

ROOT = book.find_root()
SITE = ROOT / "_build" / "html"


class SiteError(RuntimeError):
    pass


def page(name: str) -> BeautifulSoup:
    """The built page book/<name>.html, parsed once per version of the file."""
    path = SITE / "book" / f"{name}.html"
    if not path.exists():
        raise SiteError(f"{path.relative_to(ROOT)} missing: run `make book` first")
    return _parse(path, path.stat().st_mtime_ns)


@cache
def _parse(path: Path, mtime_ns: int) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(), "html.parser")


def pages() -> list[str]:
    return sorted(p.stem for p in (SITE / "book").glob("*.html"))


def find(ident: str) -> tuple[Tag, str]:
    """The element with this id on any built page, and the page's name."""
    for name in pages():
        el = page(name).find(id=ident)
        if el is not None:
            return el, name
    raise SiteError(f"no element with id {ident!r} in the built site")


def page_title(name: str) -> str:
    h1 = page(name).select_one("article h1") or page(name).find("h1")
    return _clean(h1.get_text(" ", strip=True)) if h1 else name


def _clean(text: str) -> str:
    return " ".join(text.replace("#", "").replace("¶", "").split())


@dataclass
class Ref:
    label: str
    kind: str  # "figure", "equation", "exercise", "section"
    number: str  # as printed by the build: "Fig. 3", "(2)", "Exercise 1", or ""
    title: str  # plain text
    page: str  # page name ("foundations")
    element: Tag

    @property
    def text(self) -> str:
        """How a sentence names it: "Exercise 1 (Self-attention in NumPy)", "Fig. 3", "(2)"."""
        if self.kind == "exercise":
            return f"{self.number} ({self.title})" if self.number else self.title
        if self.kind == "section":
            return self.title
        return self.number or self.title


def heading_of(el: Tag) -> Tag | None:
    """The heading of the section an element sits in."""
    for parent in [el, *el.parents]:
        if isinstance(parent, Tag) and parent.name == "section":
            h = parent.find(re.compile(r"^h[1-6]$"))
            if h is not None:
                return h
    return None


def lookup(label: str) -> Ref:
    """A label's number and title, read from the built site."""
    try:
        el, name = find(label)
        kind = "section"
    except SiteError:
        el, name = find(f"equation-{label}")
        kind = "equation"
    if kind == "equation":
        eqno = el.select_one(".eqno")
        number = _clean(eqno.get_text(" ", strip=True)) if eqno else ""
        h = heading_of(el)
        return Ref(label, "equation", number, plain(h) if h else page_title(name), name, el)
    if el.name == "figure" or el.find_parent("figure") is not None:
        fig = el if el.name == "figure" else el.find_parent("figure")
        num = fig.select_one(".caption-number")
        h = heading_of(fig)
        return Ref(label, "figure", _clean(num.get_text(" ", strip=True)) if num else "",
                   plain(h) if h else page_title(name), name, fig)
    classes = el.get("class", [])
    if "exercise" in classes or el.select_one(":scope > .admonition-title") is not None and "admonition" in classes:
        number, title = book.printed_exercise(str(el), label) or ("", "")
        return Ref(label, "exercise", number, title, name, el)
    # a heading label: the section itself, a span at its top, or an empty span just before it
    if el.name != "section" and not el.get_text(strip=True):
        nxt = el.find_next_sibling()
        if nxt is not None and nxt.name == "section":
            el = nxt
    section = el if el.name == "section" else el.find_parent("section")
    h = section.find(re.compile(r"^h[1-6]$")) if section is not None else None
    if h is None:
        raise SiteError(f"label {label!r} names neither a figure, an equation, an exercise nor a section")
    return Ref(label, "section", "", plain(h), name, section)


# --- plain text ------------------------------------------------------------------------------

_SUB = dict(zip("0123456789aehijklmnoprstuvx+-=()", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ₊₋₌₍₎"))
_SUP = dict(zip("0123456789+-=()nTi", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿᵀⁱ"))
_SYMBOLS = {
    r"\top": "T", r"\to": "→", r"\times": "×", r"\cdot": "·", r"\dots": "…", r"\ldots": "…",
    r"\cdots": "…", r"\infty": "∞", r"\ne": "≠", r"\neq": "≠", r"\le": "≤", r"\leq": "≤",
    r"\ge": "≥", r"\geq": "≥", r"\approx": "≈", r"\in": "∈", r"\sum": "Σ", r"\alpha": "α",
    r"\beta": "β", r"\gamma": "γ", r"\theta": "θ", r"\lambda": "λ", r"\mu": "μ", r"\sigma": "σ",
    r"\pi": "π", r"\ln": "ln", r"\log": "log", r"\exp": "exp", r"\max": "max", r"\min": "min",
    r"\sin": "sin", r"\cos": "cos", r"\mathbb{R}": "ℝ", r"\pm": "±", r"\quad": " ", r"\qquad": " ",
}


def _script(body: str, table: dict[str, str], mark: str) -> str:
    if body and all(c in table for c in body):
        return "".join(table[c] for c in body)
    return f"{mark}{body}" if body.isalnum() else f"{mark}({body})"


def tex_to_text(tex: str) -> str:
    """A formula as plain text: ``\\operatorname{softmax}(QK^\\top/\\sqrt{d_k})`` ->
    ``softmax(QKᵀ/√dₖ)``. Readable, not typeset: for speaker notes and PDF metadata."""
    s = tex.strip()
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)\b\s*\\?", "", s)
    s = re.sub(r"\\(?:,|;|:|!| )", " ", s)
    s = re.sub(r"\\(?:operatorname|mathrm|text|textrm|mathit|mathbf|boldsymbol|mathsf|texttt)\s*\{([^{}]*)\}", r"{\1}", s)
    for _ in range(3):
        s = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", s)
        s = re.sub(r"\\sqrt\s*\{([^{}]*)\}", lambda m: "√" + (m.group(1) if len(m.group(1)) <= 1 or re.fullmatch(r"\w_\{?\w+\}?", m.group(1)) else f"({m.group(1)})"), s)
    for name, sym in sorted(_SYMBOLS.items(), key=lambda kv: -len(kv[0])):
        s = re.sub(re.escape(name) + r"(?![A-Za-z])", lambda m, sym=sym: sym, s)
    s = s.replace("^T", "^{T}")
    s = re.sub(r"_\{([^{}]*)\}|_(\\?\w)", lambda m: _script((m.group(1) or m.group(2)).replace(" ", ""), _SUB, "_"), s)
    s = re.sub(r"\^\{([^{}]*)\}|\^(\\?\w)", lambda m: _script((m.group(1) or m.group(2)).replace(" ", ""), _SUP, "^"), s)
    s = re.sub(r"\\([A-Za-z]+)", r"\1", s)
    s = s.replace("{", "").replace("}", "").replace("\\", "")
    return " ".join(s.split())


def _math_tex(node: Tag) -> str | None:
    ann = node.find("annotation", attrs={"encoding": "application/x-tex"})
    if ann is not None:
        return ann.get_text()
    text = node.get_text()
    m = re.fullmatch(r"\s*(?:\\\(|\$)(.*?)(?:\\\)|\$)\s*", text, re.DOTALL)
    return m.group(1) if m else None


def title(h: Tag) -> str:
    """A heading's own words: :func:`plain` without the book's section number ("16.2. ")."""
    h = copy.copy(h)
    for number in h.select("span.section-number"):
        number.decompose()
    return plain(h)


def plain(el: Tag) -> str:
    """An element's text with each formula as plain text and no pilcrows."""
    el = copy.copy(el)
    for junk in el.select("a.headerlink, .katex-html"):
        junk.decompose()
    for node in el.select("span.katex, span.math, div.math, math"):
        if node.parent is None:
            continue  # inside a formula already replaced
        tex = _math_tex(node)
        if tex is not None:
            node.replace_with(NavigableString(tex_to_text(tex)))
    text = _clean(el.get_text(" ", strip=True))
    # TeX that a link text carries raw (a reference to a heading with a formula)
    text = re.sub(r"\\[A-Za-z]+(?:\{[^{}]*\})*", lambda m: tex_to_text(m.group(0)), text)
    for a, b in ((" ,", ","), (" .", "."), (" :", ":"), (" ;", ";"), ("( ", "("), (" )", ")"), (" ’", "’")):
        text = text.replace(a, b)
    return text
