"""A lighter, faster site: what the theme loads on every page, cut to what a page uses.

Measured with Lighthouse (benchmarks/bench_site.py) on the untouched theme, the heaviest
things a reader downloaded were Font Awesome's JavaScript (1.5 MB, 540 kB gzipped: it
swaps every ``<i class="fa-...">`` for an inline SVG at run time), MathJax (on every page,
with or without math) and Font Awesome's web fonts (156 + 118 kB), and ten scripts in
``<head>`` blocked the first paint. This extension, for the HTML builder only:

* loads MathJax only on pages with math (myst-nb sets Sphinx's asset policy to
  "always", so Sphinx adds it to every page);
* defers the page's scripts (``defer`` keeps their order and runs them before
  DOMContentLoaded, which is what they wait for), except documentation_options.js,
  which inline scripts use right away, and except on search.html, whose searchtools.js
  needs doctools.js at once;
* gives every page a ``<meta name="description">``: the page's ``description`` front
  matter field if it has one, else its first paragraph of prose;
* after the build: gives every local raster image its width and height attributes, so
  the page does not shift when the image arrives (custom.css keeps ``height: auto`` so
  the aspect ratio holds when the image is narrowed), and ``fetchpriority="low"``, so
  that on a slow connection the figures do not compete with the text for bandwidth;
  drops fontawesome.js from every page and from the site (the theme's CSS draws the icons with the
  web fonts it declares), subsets the three Font Awesome fonts to the icons the site uses
  (the icon classes found in the pages and the theme's scripts, and the icon characters
  of the theme's own CSS) and drops the CSS rules of the 2,000 other icons; stores the
  figures (PNG) with a 256-colour palette (a third of the bytes, no visible change);
  and drops Sphinx's search scripts and the search index from every page but search.html, where
  the theme does not use them (``search_as_you_type`` off: the search box opens
  search.html).
"""

from __future__ import annotations

import html
import re
import struct
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.util import logging

logger = logging.getLogger(__name__)

KEEP_SYNC = {"documentation_options.js"}  # inline scripts use DOCUMENTATION_OPTIONS at once
MATH_IN_HTML = re.compile(r'class="[^"]*\bmath\b|\\\(|\\\[|\$\$')
DESCRIPTION_LENGTH = 155  # what search engines show
ICON_RULE = re.compile(r"([^{}]*)\{content:\s*(\"[^\"]*\"|'[^']*')\}")
ICON_SELECTOR = re.compile(r"\.(fa-[a-z0-9-]+)::?(?:before|after)")
PRIVATE_USE = re.compile(r"[\ue000-\uf8ff]|\\([ef][0-9a-fA-F]{3})(?![0-9a-fA-F])")
FA_FONTS = {  # file stem in _static/vendor/fontawesome/webfonts -> CSS font-family and weight
    "fa-solid-900": ("Font Awesome 6 Free", "900"),
    "fa-regular-400": ("Font Awesome 6 Free", "400"),
    "fa-brands-400": ("Font Awesome 6 Brands", "400"),
}


# --- per page -------------------------------------------------------------------------


def _is_html(app: Sphinx) -> bool:
    return app.builder.format == "html" and app.builder.name != "singlehtml"


def _script_name(js) -> str:
    return Path(str(js.filename or "").split("?")[0]).name


def _description(app: Sphinx, pagename: str, doctree) -> str:
    meta = app.env.metadata.get(pagename, {})
    if meta.get("description"):
        return str(meta["description"]).strip()
    if doctree is not None:
        skip = (nodes.Admonition, nodes.container, nodes.table, nodes.footnote, nodes.citation, nodes.sidebar,
                nodes.topic, nodes.field_list, nodes.definition_list, nodes.bullet_list, nodes.enumerated_list)
        for para in doctree.findall(nodes.paragraph):
            parent, inside = para.parent, False
            while parent is not None:
                if isinstance(parent, skip) or "toctree-wrapper" in parent.get("classes", []):
                    inside = True
                    break
                parent = parent.parent
            if inside:
                continue
            words = [t.astext() for t in para.findall(nodes.Text) if not isinstance(t.parent, nodes.math)]
            text = re.sub(r"\s+", " ", "".join(words)).strip()
            text = re.sub(r"\s+([.,;:])", r"\1", text)  # where an inline formula was left out
            text = re.sub(r"[,;:]+([.,;:])", r"\1", text)
            nxt = para.next_node(descend=False, siblings=True)
            if text.endswith(":") and isinstance(nxt, (nodes.bullet_list, nodes.enumerated_list)):
                items = [re.sub(r"\s+", " ", item.astext()).strip().rstrip(".;") for item in nxt.children]
                text = text + " " + "; ".join(items) + "."
            if len(text) >= 40:
                if len(text) > DESCRIPTION_LENGTH:
                    text = text[:DESCRIPTION_LENGTH].rsplit(" ", 1)[0].rstrip(",;:") + "…"
                return text
    title = app.config.html_title or app.config.project
    return f"{title}: {pagename.split('/')[-1].replace('_', ' ')}"


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if not _is_html(app):
        return
    body = context.get("body", "")
    # the math domain's own record for this page (has_equations() would also count every
    # page of the page's toctree: the root page would load MathJax for the whole book)
    has_math = app.env.get_domain("math").data["has_equations"].get(pagename, False) or bool(MATH_IN_HTML.search(body))
    scripts = []
    for js in context.get("script_files", []):
        name = _script_name(js)
        # Sphinx puts a relative mathjax_path under _static/: "_static/../mathjax/..."
        is_mathjax = (js.filename and str(js.filename).split("?")[0].endswith(app.config.mathjax_path)) or (
            not js.filename and str(js.attributes.get("body", "")).lstrip().startswith("window.MathJax")
        )
        if is_mathjax and not has_math:
            continue
        # search.html loads searchtools.js in its body, which calls doctools.js's _ready()
        # at once: leave that page's scripts as they are
        if pagename != "search" and js.filename and name not in KEEP_SYNC and not {"async", "defer"} & set(js.attributes):
            js = _JavaScript(js.filename, priority=js.priority, **{**js.attributes, "defer": "defer"})
        scripts.append(js)
    # the list is the builder's own, reset before each page: replace its items, not the objects in it
    context["script_files"][:] = scripts

    metatags = context.get("metatags", "")
    if 'name="description"' not in metatags:
        desc = html.escape(_description(app, pagename, doctree), quote=True)
        context["metatags"] = metatags + f'\n<meta name="description" content="{desc}" />'


SVG_SIZE = re.compile(rb'<svg\b[^>]*?\swidth="([\d.]+)(pt|px)?"[^>]*?\sheight="([\d.]+)(pt|px)?"')


def _image_size(path: Path) -> tuple[int, int] | None:
    """(width, height) of a PNG, GIF or JPEG, read from its header, or of an SVG with a
    width and height in pt or px (matplotlib's diagrams) in CSS px; None otherwise."""
    try:
        with path.open("rb") as f:
            head = f.read(26)
            if path.suffix == ".svg":
                m = SVG_SIZE.search(head + f.read(4000))
                if not m:
                    return None
                scale = 4 / 3 if m.group(2) == b"pt" else 1  # 1 pt = 4/3 CSS px
                return round(float(m.group(1)) * scale), round(float(m.group(3)) * scale)
            if head[:8] == b"\x89PNG\r\n\x1a\n":
                return struct.unpack(">II", head[16:24])
            if head[:6] in (b"GIF87a", b"GIF89a"):
                return struct.unpack("<HH", head[6:10])
            if head[:2] == b"\xff\xd8":
                f.seek(2)
                while True:
                    marker = f.read(2)
                    if len(marker) < 2 or marker[0] != 0xFF:
                        return None
                    length = struct.unpack(">H", f.read(2))[0]
                    if marker[1] in (0xC0, 0xC1, 0xC2):
                        h, w = struct.unpack(">xHH", f.read(5))
                        return w, h
                    f.seek(length - 2, 1)
    except (OSError, struct.error):
        return None
    return None


# --- after the build --------------------------------------------------------------------

FONTAWESOME_JS = re.compile(r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\n?')
SEARCH_SCRIPTS = re.compile(
    r'[ \t]*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"></script>\n?'
)


IMG = re.compile(r"<img\b[^>]*>")
IMG_SRC = re.compile(r'\ssrc="([^"]+)"')


def _sized_images(page: Path, text: str) -> str:
    """Width and height attributes on every local PNG/GIF/JPEG <img> that lacks them (the
    docutils writer turns :width: into a style, and notebook outputs have none), and a low
    fetch priority on every image: the page's text, styles and scripts come first, and
    its figures (none of them above the fold on a phone) right after."""

    def add(match: re.Match) -> str:
        tag = match.group(0)
        extra = "" if "fetchpriority=" in tag else ' fetchpriority="low"'
        src = IMG_SRC.search(tag)
        if not re.search(r"\s(width|height)=|style=\"[^\"]*(width|height)", tag) and src:
            url = html.unescape(src.group(1)).split("?")[0].split("#")[0]
            size = None if "://" in url or url.startswith(("data:", "/")) else _image_size(page.parent / url)
            if size:
                extra = f' width="{size[0]}" height="{size[1]}"' + extra
        return tag.replace("<img", "<img" + extra, 1) if extra else tag

    return IMG.sub(add, text)


def _rewrite_pages(app: Sphinx) -> int:
    outdir = Path(app.outdir)
    drop_search = str(getattr(app.config, "html_theme_options", {}).get("search_as_you_type", False)).lower() != "true"
    changed = 0
    for page in outdir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _sized_images(page, FONTAWESOME_JS.sub("", text))
        if drop_search and page != outdir / "search.html":
            new = SEARCH_SCRIPTS.sub("", new)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def _used_icon_classes(outdir: Path) -> set[str]:
    used: set[str] = set()
    for page in outdir.rglob("*.html"):
        for classes in re.findall(r'class="([^"]*\bfa[bsr]?\b[^"]*|[^"]*\bfa-[a-z0-9-]+[^"]*)"', page.read_text(encoding="utf-8")):
            used.update(c for c in classes.split() if c.startswith("fa-"))
    for script in (outdir / "_static").rglob("*.js"):
        if script.name != "fontawesome.js":
            used.update(re.findall(r"\bfa-[a-z0-9-]+", script.read_text(encoding="utf-8", errors="ignore")))
    return used


def _codepoints(text: str) -> set[int]:
    return {ord(m.group(0)) if not m.group(1) else int(m.group(1), 16) for m in PRIVATE_USE.finditer(text)}


def _slim_fontawesome(app: Sphinx) -> dict:
    """Subset the Font Awesome fonts to the icons in use and drop the other icons' CSS rules."""
    from fontTools import subset

    outdir = Path(app.outdir)
    theme_css = outdir / "_static" / "styles" / "pydata-sphinx-theme.css"
    fonts_dir = outdir / "_static" / "vendor" / "fontawesome" / "webfonts"
    if not theme_css.exists() or not fonts_dir.is_dir():
        return {}
    used = _used_icon_classes(outdir)
    css = theme_css.read_text(encoding="utf-8")

    needed: set[int] = set()

    def keep_or_drop(match: re.Match) -> str:
        selectors = [s.strip() for s in match.group(1).split(",")]
        names = [ICON_SELECTOR.fullmatch(s) for s in selectors]
        if not all(names):  # not an icon-class rule: keep, and keep its characters
            needed.update(_codepoints(match.group(0)))
            return match.group(0)
        kept = [s for s, n in zip(selectors, names) if n.group(1) in used]
        if not kept:
            return ""
        needed.update(_codepoints(match.group(2)))
        return ",".join(kept) + "{content:" + match.group(2) + "}"

    slim = ICON_RULE.sub(keep_or_drop, css)
    # characters of the icons drawn by the theme's CSS outside icon-class rules (admonitions,
    # toggles, ...) in every stylesheet
    needed |= _codepoints(ICON_RULE.sub("", css))
    for sheet in (outdir / "_static").rglob("*.css"):
        if sheet != theme_css:
            needed |= _codepoints(sheet.read_text(encoding="utf-8", errors="ignore"))

    sizes = {}
    for stem in FA_FONTS:
        ttf = fonts_dir / f"{stem}.ttf"
        if not ttf.exists():
            continue
        options = subset.Options()
        options.flavor = "woff"  # zlib: fontTools writes it without extra packages; woff2 needs brotli
        options.layout_features = ["*"]
        options.notdef_outline = True
        font = subset.load_font(str(ttf), options)
        cmap = font.getBestCmap()
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(needed & set(cmap)) or [0x20])
        subsetter.subset(font)
        out = fonts_dir / f"{stem}.subset.woff"
        subset.save_font(font, str(out), options)
        sizes[stem] = out.stat().st_size
        # point the @font-face at the subset: url(...stem.woff2) format("woff2"),url(...stem.ttf) format("truetype")
        slim = re.sub(
            rf'url\(([^)]*?){stem}\.woff2\)\s*format\("woff2"\)\s*,\s*url\([^)]*?{stem}\.ttf\)\s*format\("truetype"\)',
            rf'url(\g<1>{stem}.subset.woff) format("woff")',
            slim,
        )
    # the source map describes the untrimmed file: drop it, and the reference to it
    slim = re.sub(r"/\*# sourceMappingURL=[^*]*\*/\s*$", "", slim)
    theme_css.write_text(slim, encoding="utf-8")
    removed = [theme_css.with_name(theme_css.name + ".map")]
    # what no page loads any more (the theme copies them again at every build)
    removed += [outdir / "_static" / "scripts" / name for name in ("fontawesome.js", "fontawesome.js.map")]
    removed += [fonts_dir / f"{stem}.{ext}" for stem in sizes for ext in ("woff2", "ttf")]
    for path in removed:
        path.unlink(missing_ok=True)
    return {"icons": len(used), "glyphs": len(needed), "css_bytes": (len(css.encode()), len(slim.encode())), "fonts": sizes}


def _palette_figures(app: Sphinx) -> tuple[int, int]:
    """Store the opaque PNG figures of _images/ with a 256-colour palette.

    matplotlib draws a figure with a colormap of 256 colours plus the anti-aliasing of
    text and lines: 500-3,000 distinct colours, stored as 24/32-bit pixels. A palette of
    the 256 most used (median cut, no dithering) changes a pixel by 0.2/255 on average
    (a person sees no difference) and makes the file about 65% smaller. Figures with
    transparency, and files the palette would not make smaller, are left alone. Only the
    web site's copy changes: notebooks and PDFs keep the originals.
    """
    from PIL import Image

    before = after = 0
    for png in (Path(app.outdir) / "_images").glob("*.png"):
        with Image.open(png) as im:
            im.load()
        if im.mode == "P" or im.mode not in ("RGB", "RGBA"):
            continue  # done by an earlier build, or not a plain figure
        if im.mode == "RGBA":
            if im.getchannel("A").getextrema() != (255, 255):
                continue
            im = im.convert("RGB")
        size = png.stat().st_size
        tmp = png.with_suffix(".palette.png")
        im.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(tmp, optimize=True)
        if tmp.stat().st_size < size:
            before, after = before + size, after + tmp.stat().st_size
            tmp.replace(png)
        else:
            tmp.unlink()
    return before, after


def _finish(app: Sphinx, exception) -> None:
    if exception is not None or not _is_html(app):
        return
    changed = _rewrite_pages(app)
    slim = _slim_fontawesome(app)
    before, after = _palette_figures(app)
    logger.info(f"performance: {changed} pages rewritten; Font Awesome {slim}; "
                f"figures {before / 1e3:.0f} kB -> {after / 1e3:.0f} kB with a palette")


def setup(app: Sphinx) -> dict:
    # after sphinx.ext.mathjax (priority 500), which adds MathJax in this same event
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _finish)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
