"""What Sphinx and the theme offer no setting for, measured by benchmarks/bench_site.py and
checked by tests/browser/test_browser.py (the rest is configuration: KaTeX at build time, layout.html):

* A meta description on every page (Lighthouse SEO), added to ``metatags`` at
  ``html-page-context``: the page's ``description`` front matter field, else its first paragraph
  of prose (not in an admonition, cell, table, list or the toctree) without inline formulas
  (their TeX reads as noise), cut at a word to 155 characters.
* The site's figures in a 256-colour palette (median cut, no dithering: 0.2/255 per pixel on
  average, files about 65% smaller; figure-heavy pages were over the byte budget), at
  ``build-finished`` on _build/html/_images/ only; figures with transparency, and files it
  would not make smaller, are left alone.
* Every image of a page's body gets ``loading="lazy"`` at ``doctree-resolved``: a browser fetches
  it when it nears the viewport, not before the first paint. A figure drawn for both colour modes
  is two images (``only-light``, ``only-dark``, book_build.site.ThemedImages), one
  hidden by the theme after the header's switch (a ``<picture>`` would follow the system's mode
  instead), and a lazy image the browser does not render is not fetched at all. An eager
  image is fetched before the first paint and counts in the simulated phone's largest paint
  (``make bench``; the measurement that decided it is in git history).
* Every web font a page draws, preloaded (``font_preloads`` at ``html-page-context``, written
  as ``<link rel="preload">`` by templates/layout.html): a font named only in the
  stylesheet is requested when the first layout finds text that needs it, so it arrives late
  and its text is painted again (a later speed index and largest paint). Font Awesome's solid
  and brands faces (the header's icons, every page) and the KaTeX faces the page's formulas
  use (KATEX_FACES: KaTeX's class names and the face katex.min.css gives each; check after a
  KaTeX upgrade), read from the page's HTML with Python's HTML parser.
  tests/browser/test_browser_fonts.py checks in Chromium that a page fetches every preload and no
  font it did not preload.
"""

import html
import re
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes

LENGTH = 155  # what search engines show
NOT_PROSE = (nodes.Admonition, nodes.container, nodes.table, nodes.footnote, nodes.citation, nodes.sidebar,
             nodes.topic, nodes.field_list, nodes.definition_list, nodes.bullet_list, nodes.enumerated_list)


def _prose(para: nodes.paragraph) -> bool:
    node = para.parent
    while node is not None and not (isinstance(node, NOT_PROSE) or "toctree-wrapper" in node.get("classes", [])):
        node = node.parent
    return node is None


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
    fallback = f"{app.config.html_title or app.config.project}: {pagename.split('/')[-1].replace('_', ' ')}"
    desc = html.escape(description(app.env.metadata.get(pagename, {}), doctree, fallback), quote=True)
    context["metatags"] = context.get("metatags", "") + f'\n<meta name="description" content="{desc}" />'


ICON_FONTS = ["_static/vendor/fontawesome/webfonts/fa-solid-900.woff2",
              "_static/vendor/fontawesome/webfonts/fa-brands-400.woff2"]  # the header's icons (book_build.speed.THEME)
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
    from PIL import Image, PngImagePlugin

    for png in (Path(app.outdir) / "_images").glob("*.png"):
        with Image.open(png) as im:
            im.load()
            text = PngImagePlugin.PngInfo()  # the figure's text chunks (its smallest text size) stay
            for key, value in getattr(im, "text", {}).items():
                text.add_text(key, value)
        if im.mode not in ("RGB", "RGBA") or (im.mode == "RGBA" and im.getchannel("A").getextrema() != (255, 255)):
            continue  # done by an earlier build, or not an opaque figure
        tmp = png.with_suffix(".palette.png")
        palette = im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        palette.save(tmp, optimize=True, pnginfo=text)
        if tmp.stat().st_size < png.stat().st_size:
            tmp.replace(png)
        else:
            tmp.unlink()


def _lazy_images(app, doctree, docname) -> None:
    for image in doctree.findall(nodes.image):  # the LaTeX writer ignores the attribute
        image["loading"] = "lazy"


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("html-page-context", _font_preloads)
    app.connect("doctree-resolved", _lazy_images)
    app.connect("build-finished", _palette_figures)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
