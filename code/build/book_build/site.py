"""The web site's glue: how the book's builder (myst-nb) turns the library's display
bundles into HTML. No teaching module imports this one or myst-nb; myst-nb finds the
renderers through the entry points ``myst_nb.mime_renderers`` in code/build/pyproject.toml, its
documented plug-in interface, and only while it builds the site.

One mechanism for every widget: a teaching function returns a bundle with a MIME type of
this book (JSON the page's script reads) and an ``image/png`` fallback. Jupyter, Colab,
Binder and the PDFs (the LaTeX builder does not list these types) show the PNG; on the
HTML builder a renderer below writes the widget:

* :data:`transformer_lessons.plots.THEMED_MIME`: a figure in a light and a dark variant
  (:class:`ThemedImages`);
* :data:`transformer_lessons.explorables.EXPLORABLE_MIME`: an explorable over its static
  figure (:class:`ExplorableHtml`), or, of kind ``walk``, the illustrated walk's frames
  (:class:`WalkHtml`);
* :data:`transformer_lessons.pretrained.HEADVIEW_MIME`: the head view over its fallback
  image (:class:`HeadViewHtml`).

The scripts and styles are served from :data:`INTERACTIVE` (``book/_site_extra/interactive/``
in the repository, ``<site>/interactive/`` on the site), each linked only by a page that
uses it.
"""

from __future__ import annotations

import html
import json
import re
from typing import ClassVar

from docutils import nodes  # the site's builder, not a teaching module's dependency

from transformer_lessons.explorables import EXPLORABLE_MIME
from transformer_lessons.plots import THEMED_MIME
from transformer_lessons.pretrained import HEADVIEW_MIME

INTERACTIVE = "../interactive/"  # the pages are in book/, the site's extra files at its root


def _part(data, mime: str, content, cell_metadata=None):
    """A myst-nb MimeData of another type for the same cell (its alt text and caption)."""
    from myst_nb.core.render import MimeData

    return MimeData(mime, content, cell_metadata=data.cell_metadata if cell_metadata is None else cell_metadata,
                    output_metadata={}, cell_index=data.cell_index, output_index=data.output_index, line=data.line)


def _svg_size_px(svg: str) -> tuple[str, str] | None:
    """The ``(width, height)`` of a matplotlib SVG in CSS pixels (it writes them in pt)."""
    head = svg[: svg.find(">", svg.find("<svg")) + 1]
    found = [re.search(rf'\b{name}="([0-9.]+)pt"', head) for name in ("width", "height")]
    if not all(found):
        return None
    return tuple(str(round(float(m.group(1)) * 4 / 3)) for m in found)


def _fluid_size(width: str, height: str) -> tuple[str, str]:
    """An image node's ``width`` and ``height`` for a diagram that keeps its proportions.

    docutils writes them as the ``<img>``'s inline style, which a stylesheet's
    ``height: auto`` cannot override: on a phone, ``max-width: 100%`` narrowed the box and
    the fixed height stayed, so the SVG sat letterboxed between empty bands. The height is
    therefore ``auto`` with the CSS ``aspect-ratio`` of the drawing: the box is reserved at
    its final size before the image loads (no layout shift) and scales with the column.
    """
    return f"{width}px", f"auto; aspect-ratio: {width} / {height}"


class _Renderer:
    """A myst-nb output renderer (its documented plug-in interface) for one :attr:`MIME`
    type on the HTML builder; other builders do not list the type and take the PNG."""

    MIME: ClassVar[str]
    PRIORITY: ClassVar[int] = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.mime_priority_overrides = [("html", cls.MIME, cls.PRIORITY)]

    @classmethod
    def handle_mime(cls, renderer, data, inline):
        return cls.render(renderer, data, inline) if data.mime_type == cls.MIME else None


class ThemedImages(_Renderer):
    """:data:`THEMED_MIME`: two images with the theme's ``only-light`` and ``only-dark``
    classes; both take the cell's ``mystnb: image`` options (the alt text, unless the
    figure brings its own: a diagram describes its sizes) and sit in the cell's figure
    with its caption."""

    MIME, PRIORITY = THEMED_MIME, 1

    @staticmethod
    def render(renderer, data, inline):
        content = data.content
        if content.get("alt"):
            mystnb = dict(data.cell_metadata.get("mystnb", {}))
            mystnb["image"] = {**mystnb.get("image", {}), "alt": content["alt"]}
            data = _part(data, data.mime_type, content, cell_metadata={**data.cell_metadata, "mystnb": mystnb})
        # One box around both: the theme hides a figcaption that follows an .only-dark
        # element (".only-dark ~ figcaption"), which would hide the caption in both modes.
        box = nodes.container(classes=["themed-figure"])
        for theme in ("light", "dark"):
            size = _svg_size_px(content[theme]) if content["mime"] == "image/svg+xml" else None
            for node in renderer.render_image(_part(data, content["mime"], content[theme])):
                node["classes"] = list(node.get("classes", [])) + [f"only-{theme}"]
                if size:
                    node["width"], node["height"] = _fluid_size(*size)
                box.append(node)
        return [box]


class ExplorableHtml(_Renderer):
    """:data:`EXPLORABLE_MIME`: the static figure (both themes, the cell's alt text) in a
    ``tl-static`` block, and an empty ``tl-explorable`` block that ``explorables.js``
    fills and then shows, hiding the static one."""

    MIME = EXPLORABLE_MIME
    SCRIPT = INTERACTIVE + "explorables.js"
    STYLE = INTERACTIVE + "explorables.css"

    @classmethod
    def render(cls, renderer, data, inline):
        content = data.content
        if content["kind"] == "walk":  # frames of its own, not one static figure
            return WalkHtml.render(renderer, data, inline)
        payload = json.dumps({"kind": content["kind"], "data": content["data"]}, separators=(",", ":"))
        payload = payload.replace("<", "\\u003c")  # nothing in it can close the script element
        head = (f'<link rel="stylesheet" href="{cls.STYLE}">'
                f'<div class="tl-explorable" data-kind="{content["kind"]}" hidden>'
                f'<script type="application/json" class="tl-data">{payload}</script></div>'
                f'<script src="{cls.SCRIPT}" defer></script>')
        static = nodes.container(classes=["tl-static"])
        static.extend(ThemedImages.render(renderer, _part(data, THEMED_MIME, content["static"]), inline)[0].children)
        return [nodes.raw("", head, format="html"), static]


class WalkHtml:
    """An explorable of kind ``walk`` (:mod:`transformer_lessons.walk`): a
    ``<div class="tl-walk">`` with one ``<figure data-step="k">`` per frame (its light and
    dark images with the frame's alt text, and the caption "Step k of n: ..."), then the
    stepper's controls. Without JavaScript the controls stay hidden and the frames show
    as a numbered sequence; with it (``html[data-mode]``, which the theme's inline script
    sets in ``<head>``), ``walk.css`` shows only the first frame from the first paint (no
    layout shift) and ``walk.js`` wires the buttons and the arrow keys. The numbers, full
    precision, are in a JSON script element for the tests."""

    SCRIPT = INTERACTIVE + "walk.js"
    STYLE = INTERACTIVE + "walk.css"

    @classmethod
    def render(cls, renderer, data, inline):
        content = data.content
        frames, n = content["frames"], len(content["frames"])
        numbers = json.dumps(content["data"], separators=(",", ":")).replace("<", "\\u003c")
        label = html.escape(content["label"])
        out = [nodes.raw("", f'<link rel="stylesheet" href="{cls.STYLE}">'
                             f'<div class="tl-walk" role="group" aria-label="{label}" data-steps="{n}">'
                             f'<script type="application/json" class="tl-walk-data">{numbers}</script>',
                         format="html")]
        for frame in frames:
            k = frame["step"]
            out.append(nodes.raw("", f'<figure class="tl-walk-frame" data-step="{k}">', format="html"))
            figure = {**frame["figure"], "alt": frame["alt"]}
            out.extend(ThemedImages.render(renderer, _part(data, THEMED_MIME, figure), inline))
            caption = html.escape(f'{frame["title"]}. {frame["caption"]}')
            out.append(nodes.raw("", f'<figcaption><span class="tl-walk-k">Step {k} of {n}:</span> {caption}'
                                     "</figcaption></figure>", format="html"))
        out.append(nodes.raw(
            "", '<div class="tl-walk-controls">'
            '<button type="button" class="tl-walk-prev">\u2190 Previous</button>'
            f'<span class="tl-walk-status" aria-live="polite">Step 1 of {n}</span>'
            '<button type="button" class="tl-walk-next">Next \u2192</button>'
            f'</div></div><script src="{cls.SCRIPT}" defer></script>', format="html"))
        return out


class HeadViewHtml(_Renderer):
    """:data:`HEADVIEW_MIME`: a ``<div class="headview">`` holding the attention data and
    the fallback image, which ``headview.js`` replaces with the explorer."""

    MIME = HEADVIEW_MIME
    SCRIPT = INTERACTIVE + "headview.js"
    STYLES = (INTERACTIVE + "box.css", INTERACTIVE + "headview.css")  # box.css: its pickers

    @classmethod
    def render(cls, renderer, data, inline):
        c = data.content  # the attention of every text, the fallback PNG and its size and alt text
        as_json = json.dumps(c["data"], separators=(",", ":")).replace("</", "<\\/")
        page = (
            "".join(f'<link rel="stylesheet" href="{s}">' for s in cls.STYLES)
            + '<div class="headview">'
            f'<script type="application/json" class="headview-data">{as_json}</script>'
            f'<img class="headview-fallback" src="data:image/png;base64,{c["png"]}" width="{c["width"]}" '
            f'height="{c["height"]}" alt="{html.escape(c["alt"])}">'
            f'</div><script defer src="{cls.SCRIPT}"></script>'
        )
        # the classes myst-nb gives a text/html output, which the head view was before
        return [nodes.raw("", page, format="html", classes=["output", "text_html"])]
