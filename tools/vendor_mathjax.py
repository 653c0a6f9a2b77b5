"""Put the parts of MathJax 3 (from the npm package in node_modules/) that the site uses
into book/_vendor/mathjax/, which the HTML build serves at /mathjax/ (html_extra_path in
_config.yml). No CDN: the site must work offline.

The site loads one file, ``tex-chtml-lite.js``, built here by concatenating MathJax's own
components: the loader and startup, the core, TeX input (with the ams, newcommand,
configmacros, require, noundefined and autoload packages, as in MathJax's combined
``tex-chtml.js``), CommonHTML output and assistive MathML (hidden MathML that screen
readers read). It is ``tex-chtml.js`` without the contextual menu (``ui/menu``, 430 kB,
over a third of the combined file), and without MathML input, which the book does not use:
about 0.66 MB instead of 1.17 MB for ``tex-mml-chtml.js``, and less script to parse on
every page with math. Beside it: the TeX extensions that ``autoload`` fetches on demand
(a macro outside the packages above, e.g. ``\\boldsymbol``) and the CHTML web fonts.

Run by `make vendor` after `npm ci`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "node_modules" / "mathjax" / "es5"
DEST = ROOT / "book" / "_vendor" / "mathjax"
BUNDLE = "tex-chtml-lite.js"
# Concatenated in this order. startup.js defines MathJax.loader and MathJax.startup and
# schedules the start-up in a promise callback, which runs only after the whole file has
# executed, so the components after it have registered their input, output and handler
# by then.
COMPONENTS = ["startup.js", "core.js", "input/tex.js", "output/chtml.js", "output/chtml/fonts/tex.js", "a11y/assistive-mml.js"]
# Not ui/lazy (typesetting a formula only when it scrolls into view): it made Lighthouse's
# mobile score of the foundations page about 0.03 better, but a formula not yet typeset is
# an empty placeholder to a screen reader, and the text jumps as formulas typeset during
# scrolling. Every formula is typeset at load instead.
# Tell the loader that these are present, so that a TeX extension fetched on demand does
# not load one of them a second time (names as in MathJax's own tex-chtml.js).
PRELOADED = ["loader", "startup", "core", "input/tex", "output/chtml", "output/chtml/fonts/tex.js", "a11y/assistive-mml"]
# Keyboard access. The contextual menu left out above is also what makes MathJax give each
# formula tabindex="0"; without it a display equation too wide for a phone scrolls inside
# its box but cannot be reached from the keyboard (axe-core: scrollable-region-focusable,
# serious). After the first typesetting, every display equation is made focusable again.
# startup.js reads its pageReady from this same config object when it starts, after the
# whole file has run.
KEYBOARD = """/* --- keyboard access to display equations (tools/vendor_mathjax.py) --- */
MathJax.config.startup.pageReady = function () {
  return MathJax.startup.defaultPageReady().then(function () {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (c) {
      c.setAttribute("tabindex", "0");
    });
  });
}"""
# Fetched on demand by the bundle, copied as they are.
PARTS = ["input/tex/extensions", "output/chtml/fonts/woff-v2"]


def bundle() -> str:
    parts = [f"/* {BUNDLE}: MathJax 3 components concatenated by tools/vendor_mathjax.py */"]
    for name in COMPONENTS:
        parts.append(f"/* --- {name} --- */")
        parts.append((SRC / name).read_text(encoding="utf-8").strip())
    parts.append("MathJax.loader.preLoad(" + ", ".join(f'"{p}"' for p in PRELOADED) + ");")
    parts.append(KEYBOARD)
    return ";\n".join(parts) + "\n"


def main() -> int:
    if not (SRC / "startup.js").exists():
        print(f"{SRC} is missing: run `npm ci` first", file=sys.stderr)
        return 1
    if DEST.exists():
        shutil.rmtree(DEST)
    DEST.mkdir(parents=True)
    (DEST / BUNDLE).write_text(bundle(), encoding="utf-8")
    for part in PARTS:
        src, dest = SRC / part, DEST / part
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest)
        else:
            shutil.copy2(src, dest)
    size = sum(f.stat().st_size for f in DEST.rglob("*") if f.is_file())
    print(f"vendored MathJax into {DEST.relative_to(ROOT)}: {BUNDLE} {(DEST / BUNDLE).stat().st_size / 1e6:.2f} MB,"
          f" {size / 1e6:.1f} MB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
