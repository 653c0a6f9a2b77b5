"""Three things Sphinx and the theme do not offer as settings, measured by
benchmarks/bench_site.py and the browser tests (tests/test_browser.py):

* A meta description on every page (Lighthouse SEO: "Document does not have a meta
  description"; search engines show it under the title).
* The site's copy of the figures stored with a 256-colour palette: matplotlib's PNGs hold
  500-3,000 colours as 24-bit pixels; a palette of the 256 most used (median cut, no
  dithering) changes a pixel by 0.2/255 on average and makes the files about 65% smaller
  (the figure-heavy pages were over the byte budget without it). Done after the build
  (``build-finished``) on _build/html/_images/ only: notebooks and PDFs keep the originals;
  figures with transparency, and files it would not make smaller, are left alone.
* Only the variant of a themed figure that the reader's colour mode shows is downloaded.
  A figure drawn for both modes is two images (``only-light``, ``only-dark``,
  transformer_lessons.plots.ThemedImages), and the theme hides one with ``display: none``
  according to ``data-theme``, which the reader's own switch in the header sets (so a
  ``<picture>`` with a ``prefers-color-scheme`` media query would pick the wrong one when
  the reader chose a mode unlike the system's). Both get ``loading="lazy"``: a browser does
  not fetch a lazy image that is not rendered, so the hidden variant is fetched only when
  the reader switches mode (tests/test_browser.py checks both modes). Set on the image
  nodes in Sphinx's documented ``doctree-resolved`` event; docutils writes the attribute.

The description:

The page's ``description`` front matter field if it has one, else its first paragraph of
prose: not an admonition, a cell, a table, a list or the toctree, and without its inline
formulas (their TeX would read as noise); cut at a word to 155 characters. Added in
Sphinx's documented ``html-page-context`` event through the ``metatags`` context value.

The fonts a page draws, preloaded:

Every web font a page draws is named in ``font_preloads`` (html-page-context), which
book/_templates/layout.html writes as ``<link rel="preload">`` in ``<head>``. A font named
only in the stylesheet is requested when the first layout finds text that needs it: the
page is laid out and painted in a fallback font, and when the font arrives every line is
laid out again (on foundations, 9,100 layout objects: a 660 ms task on Lighthouse's
4x slower CPU after the first paint, counted in total blocking time), and the icons and
formulas are painted again (a later speed index). Preloaded, the fonts arrive with the
stylesheet, before the first layout. Which fonts:

* Font Awesome's solid and brands faces, drawn by the header's icons on every page (cut
  to those icons by book/_ext/first_paint.py: 1-3 kB each);
* KaTeX's faces that the page's formulas use (KaTeX_FACES: the class names KaTeX writes
  and the face its stylesheet, katex.min.css, gives each; check after a KaTeX upgrade),
  read from the page's HTML with Python's HTML parser: KaTeX_Main-Regular for any
  formula, Math-Italic for a variable, Size1-Size4 for the sizes of large delimiters,
  and so on (3-13 kB each, cut to the site's characters).

tests/test_browser_fonts.py loads pages in Chromium and checks that every font file a page
fetches was preloaded, and every preload is fetched.

Everything else that makes the site light is configuration, not code: math rendered at
build time (sphinxcontrib-katex, _config.yml) and book/_templates/layout.html (no
fontawesome.js, no search scripts outside search.html). benchmarks/bench_site.py measures it.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes

LENGTH = 155  # what search engines show
NOT_PROSE = (nodes.Admonition, nodes.container, nodes.table, nodes.footnote, nodes.citation, nodes.sidebar,
             nodes.topic, nodes.field_list, nodes.definition_list, nodes.bullet_list, nodes.enumerated_list)


def _prose(para: nodes.paragraph) -> bool:
    parent = para.parent
    while parent is not None:
        if isinstance(parent, NOT_PROSE) or "toctree-wrapper" in parent.get("classes", []):
            return False
        parent = parent.parent
    return True


def _text(node: nodes.Node) -> str:
    words = [t.astext() for t in node.findall(nodes.Text) if not isinstance(t.parent, nodes.math)]
    text = re.sub(r"\s+", " ", "".join(words)).strip()
    text = re.sub(r"\s+([.,;:])", r"\1", text)  # where an inline formula was left out
    return re.sub(r"[,;:]+([.,;:])", r"\1", text)


def description(metadata: dict, doctree: nodes.document | None, fallback: str) -> str:
    if metadata.get("description"):
        return str(metadata["description"]).strip()
    for para in doctree.findall(nodes.paragraph) if doctree is not None else []:
        if not _prose(para):
            continue
        text = _text(para)
        nxt = para.next_node(descend=False, siblings=True)
        if text.endswith(":") and isinstance(nxt, (nodes.bullet_list, nodes.enumerated_list)):
            text += " " + "; ".join(_text(item).rstrip(".;") for item in nxt.children) + "."
        if len(text) >= 40:
            return text if len(text) <= LENGTH else text[:LENGTH].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return fallback


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if 'name="description"' in context.get("metatags", ""):
        return
    title = app.config.html_title or app.config.project
    fallback = f"{title}: {pagename.split('/')[-1].replace('_', ' ')}"
    desc = html.escape(description(app.env.metadata.get(pagename, {}), doctree, fallback), quote=True)
    context["metatags"] = context.get("metatags", "") + f'\n<meta name="description" content="{desc}" />'


ICON_FONTS = ["_static/vendor/fontawesome/webfonts/fa-solid-900.woff2",
              "_static/vendor/fontawesome/webfonts/fa-brands-400.woff2"]  # the header's icons
KATEX_FONT = "_static/katex/fonts/KaTeX_{}.woff2"
# katex.min.css (KaTeX 0.16): the classes on one element that select a face, and the face.
KATEX_FACES = [
    ({"katex"}, "Main-Regular"),
    ({"mathnormal"}, "Math-Italic"),
    ({"boldsymbol"}, "Math-BoldItalic"),
    ({"mathit"}, "Main-Italic"), ({"textit"}, "Main-Italic"),
    ({"mathbf"}, "Main-Bold"), ({"textbf"}, "Main-Bold"),
    ({"amsrm"}, "AMS-Regular"), ({"mathbb"}, "AMS-Regular"), ({"textbb"}, "AMS-Regular"),
    ({"mathcal"}, "Caligraphic-Regular"),
    ({"mathfrak"}, "Fraktur-Regular"), ({"textfrak"}, "Fraktur-Regular"),
    ({"mathboldfrak"}, "Fraktur-Bold"), ({"textboldfrak"}, "Fraktur-Bold"),
    ({"mathtt"}, "Typewriter-Regular"), ({"texttt"}, "Typewriter-Regular"),
    ({"mathscr"}, "Script-Regular"), ({"textscr"}, "Script-Regular"),
    ({"mathsf"}, "SansSerif-Regular"), ({"textsf"}, "SansSerif-Regular"),
    ({"mathboldsf"}, "SansSerif-Bold"), ({"textboldsf"}, "SansSerif-Bold"),
    ({"mathitsf"}, "SansSerif-Italic"), ({"mathsfit"}, "SansSerif-Italic"), ({"textitsf"}, "SansSerif-Italic"),
    *[({"delimsizing", f"size{n}"}, f"Size{n}-Regular") for n in (1, 2, 3, 4)],
    ({"delim-size1"}, "Size1-Regular"), ({"delim-size4"}, "Size4-Regular"),
    ({"op-symbol", "small-op"}, "Size1-Regular"), ({"op-symbol", "large-op"}, "Size2-Regular"),
]


class _KatexClasses(HTMLParser):
    """The sets of classes of .katex elements and of the elements inside KaTeX's visible
    output (.katex-html, which KaTeX writes well-formed: every span, svg and path closed)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # open elements inside the current .katex-html, itself included
        self.found: set[frozenset[str]] = set()

    def handle_starttag(self, tag, attrs):
        classes = frozenset((dict(attrs).get("class") or "").split())
        if self.depth:
            self.depth += 1
        elif "katex-html" in classes:
            self.depth = 1
        if self.depth or "katex" in classes:
            self.found.add(classes)

    def handle_startendtag(self, tag, attrs):  # <path .../>: opened and closed
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1


def katex_faces(body: str) -> list[str]:
    """KaTeX's font faces the formulas of a page's HTML use, in KATEX_FACES order."""
    if 'class="katex' not in body:
        return []
    parser = _KatexClasses()
    parser.feed(body)
    parser.close()
    faces = []
    for needed, face in KATEX_FACES:
        if face not in faces and any(needed <= classes for classes in parser.found):
            faces.append(face)
    return faces


def _font_preloads(app, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html":
        return
    fonts = list(ICON_FONTS) + [KATEX_FONT.format(face) for face in katex_faces(context.get("body", ""))]
    context["font_preloads"] = fonts


def _palette_figures(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image

    for png in (Path(app.outdir) / "_images").glob("*.png"):
        with Image.open(png) as im:
            im.load()
        if im.mode not in ("RGB", "RGBA") or (im.mode == "RGBA" and im.getchannel("A").getextrema() != (255, 255)):
            continue  # done by an earlier build, or not an opaque figure
        tmp = png.with_suffix(".palette.png")
        im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(tmp, optimize=True)
        if tmp.stat().st_size < png.stat().st_size:
            tmp.replace(png)
        else:
            tmp.unlink()


def _lazy_themed_figures(app, doctree, docname) -> None:
    if app.builder.format != "html":
        return
    for image in doctree.findall(nodes.image):
        if {"only-light", "only-dark"} & set(image.get("classes", [])):
            image["loading"] = "lazy"


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("html-page-context", _font_preloads)
    app.connect("doctree-resolved", _lazy_themed_figures)
    app.connect("build-finished", _palette_figures)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
