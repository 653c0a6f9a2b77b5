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

Everything else that makes the site light is configuration, not code: math rendered at
build time (sphinxcontrib-katex, _config.yml) and book/_templates/layout.html (no
fontawesome.js, no search scripts outside search.html). benchmarks/bench_site.py measures it.
"""

from __future__ import annotations

import html
import re
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
    app.connect("doctree-resolved", _lazy_themed_figures)
    app.connect("build-finished", _palette_figures)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
