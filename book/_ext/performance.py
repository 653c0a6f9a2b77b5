"""What Sphinx and the theme offer no setting for, measured by benchmarks/bench_site.py and
checked by tests/test_browser.py (the rest is configuration: KaTeX at build time, layout.html):

* A meta description on every page (Lighthouse SEO), added to ``metatags`` at
  ``html-page-context``: the page's ``description`` front matter field, else its first paragraph
  of prose (not in an admonition, cell, table, list or the toctree) without inline formulas
  (their TeX reads as noise), cut at a word to 155 characters.
* The site's figures in a 256-colour palette (median cut, no dithering: 0.2/255 per pixel on
  average, files about 65% smaller; figure-heavy pages were over the byte budget), at
  ``build-finished`` on _build/html/_images/ only; figures with transparency, and files it
  would not make smaller, are left alone.
* A figure drawn for both colour modes is two images (``only-light``, ``only-dark``,
  transformer_lessons.site.ThemedImages), one hidden by the theme after the header's switch (a
  ``<picture>`` would follow the system's mode instead): both get ``loading="lazy"`` at
  ``doctree-resolved``, and a browser does not fetch a lazy image it does not render.
"""

import html
import re
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
        palette = im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        palette.save(tmp, optimize=True)
        if tmp.stat().st_size < png.stat().st_size:
            tmp.replace(png)
        else:
            tmp.unlink()


def _lazy_themed_figures(app, doctree, docname) -> None:
    for image in doctree.findall(nodes.image):  # the LaTeX writer ignores the attribute
        if {"only-light", "only-dark"} & set(image.get("classes", [])):
            image["loading"] = "lazy"


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("doctree-resolved", _lazy_themed_figures)
    app.connect("build-finished", _palette_figures)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
