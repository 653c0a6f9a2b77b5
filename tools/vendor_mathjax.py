"""Copy the parts of MathJax 3 (from the npm package in node_modules/) that the site
uses into book/_vendor/mathjax/, which the HTML build serves at /mathjax/
(html_extra_path in _config.yml). No CDN: the site must work offline.

Run by `make vendor` after `npm ci`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "node_modules" / "mathjax" / "es5"
DEST = ROOT / "book" / "_vendor" / "mathjax"
# The combined TeX + MathML -> CommonHTML component, and what it loads on demand:
# TeX extensions, the CHTML fonts, the menu and its accessibility tools.
PARTS = ["tex-mml-chtml.js", "input", "output/chtml", "a11y", "ui", "sre", "adaptors"]


def main() -> int:
    if not (SRC / "tex-mml-chtml.js").exists():
        print(f"{SRC} is missing: run `npm ci` first", file=sys.stderr)
        return 1
    if DEST.exists():
        shutil.rmtree(DEST)
    for part in PARTS:
        src, dest = SRC / part, DEST / part
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest)
        else:
            shutil.copy2(src, dest)
    size = sum(f.stat().st_size for f in DEST.rglob("*") if f.is_file())
    print(f"vendored MathJax into {DEST.relative_to(ROOT)} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
