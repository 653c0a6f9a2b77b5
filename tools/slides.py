"""The teaching kit from the built site: the slides (reveal.js) and the handout.

``python tools/slides.py slides``   _build/html/slides/index.html and its PDF
``python tools/slides.py handout``  _build/html/handout/index.html and
                                    _build/html/pdf/transformer-lessons-handout.pdf

Both read the pages of the built site (``make book`` first), never the sources: the
figures are the executed ones and the equations are typeset by the site's own math
renderer. ``tools/slides.yml`` says which figures, equations, cells and tables make the
slides, segment by segment of the run sheet (``book/instructor_run_sheet.md``), whose text
becomes each slide's speaker notes (press S in the deck). reveal.js comes from npm
(``package.json``) and is copied next to the deck: the slides work offline, and nothing is
loaded from another host.

The PDFs are printed by Chromium (``chromium --headless --print-to-pdf``): the deck with
reveal.js's ``?print-pdf`` layout (one slide per page), the handout with a print
stylesheet for A4 (it must fit two sides; ``tests/test_slides.py`` checks both).
"""

from __future__ import annotations

import html
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from bs4 import BeautifulSoup

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pacing  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
MANIFEST = ROOT / "tools" / "slides.yml"
REVEAL = ROOT / "node_modules" / "reveal.js" / "dist"
SLIDES = SITE / "slides"
SLIDES_PDF = SLIDES / "transformer-lessons-slides.pdf"
HANDOUT = SITE / "handout"
HANDOUT_PDF = SITE / "pdf" / "transformer-lessons-handout.pdf"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-pdf-header-footer",
    "--virtual-time-budget=20000",
    "--run-all-compositor-stages-before-draw",
]
REVEAL_FILES = ["reveal.js", "reveal.css", "theme/white.css", "plugin/notes.js"]


class SlideError(RuntimeError):
    pass


def _page(name: str) -> tuple[BeautifulSoup, str]:
    path = SITE / "book" / f"{name}.html"
    if not path.exists():
        raise SlideError(f"{path.relative_to(ROOT)} missing: run `make book` first")
    return BeautifulSoup(path.read_text(), "html.parser"), f"book/{name}.html"


_INDEX: dict[str, tuple[BeautifulSoup, str]] | None = None


def _find_id(ident: str):
    """The element with this id on any page of the site, and the page's site path."""
    global _INDEX
    if _INDEX is None:
        _INDEX = {}
        for path in sorted((SITE / "book").glob("*.html")):
            _INDEX[path.stem] = (BeautifulSoup(path.read_text(), "html.parser"), f"book/{path.name}")
    for soup, where in _INDEX.values():
        el = soup.find(id=ident)
        if el is not None:
            return el, where
    raise SlideError(f"no element with id {ident!r} in the built site (tools/slides.yml)")


def _relink(el, where: str, dest: str) -> None:
    """Rewrite the src/href of el's images and links from page `where` to page `dest`,
    dropping the pilcrow links ("#") that Sphinx puts after headings and numbers."""
    for link in el.select("a.headerlink"):
        link.decompose()
    for tag, attr in (("img", "src"), ("a", "href"), ("source", "srcset")):
        for node in el.find_all(tag):
            url = node.get(attr)
            if not url or re.match(r"^[a-z]+:|^#", url):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(where), url.split("#")[0]))
            node[attr] = posixpath.relpath(target, posixpath.dirname(dest)) + (("#" + url.split("#", 1)[1]) if "#" in url else "")


def _light_only(el) -> None:
    """A figure drawn in a light and a dark variant keeps the light one (slides are light)."""
    imgs = el.find_all("img")
    if len(imgs) > 1:
        for img in imgs:
            if re.search(r"dark", " ".join(img.get("class", [])) + img.get("src", "")):
                img.decompose()


def figure_slide(name: str, dest: str) -> str:
    el, where = _find_id(name)
    fig = el if el.name == "figure" else el.find_parent("figure") or el
    _light_only(fig)
    img = fig.find("img")
    if img is None:
        raise SlideError(f"figure {name!r} has no image")
    _relink(fig, where, dest)
    caption = fig.find("figcaption")
    cap = caption.get_text(" ", strip=True) if caption else ""
    cap = re.sub(r"^(Fig\.|Figure)\s*[\d.]+\s*", "", cap)
    number = re.match(r"^((?:Fig\.|Figure)\s*[\d.]+)", caption.get_text(" ", strip=True)).group(1) if caption and re.match(r"^((?:Fig\.|Figure)\s*[\d.]+)", caption.get_text(" ", strip=True)) else ""
    alt = html.escape(img.get("alt", ""), quote=True)
    src = html.escape(img["src"], quote=True)
    return (
        f'<figure class="tl-figure"><img src="{src}" alt="{alt}">'
        f'<figcaption><b>{html.escape(number)}</b> {html.escape(_shorten(cap, 220))}</figcaption></figure>'
    )


def equation_slide(label: str, dest: str) -> str:
    el, where = _find_id(f"equation-{label}")
    _relink(el, where, dest)
    page = where.split("/")[-1].removesuffix(".html")
    return f'<div class="tl-equation">{el.decode_contents()}</div><p class="tl-source">{html.escape(_page_title(page))}</p>'


def cell_slide(page: str, contains: str, live: bool, dest: str) -> str:
    soup, where = _page(page)
    for cell in soup.select("div.cell"):
        source = cell.select_one(".cell_input pre")
        if source is not None and contains in source.get_text():
            break
    else:
        raise SlideError(f"no code cell containing {contains!r} on {page}")
    _relink(cell, where, dest)
    code = html.escape(source.get_text().rstrip("\n"))
    outputs = []
    for out in cell.select(".cell_output"):
        img = out.find("img")
        if img is not None:
            outputs.append(f'<img src="{html.escape(img["src"], quote=True)}" alt="{html.escape(img.get("alt", ""), quote=True)}">')
        else:
            pre = out.find("pre")
            if pre is not None:
                outputs.append(f"<pre class=\"tl-output\">{html.escape(pre.get_text().rstrip())}</pre>")
    badge = '<p class="tl-live">Run it live</p>' if live else ""
    return f'{badge}<pre class="tl-code"><code>{code}</code></pre>{"".join(outputs)}<p class="tl-source">{html.escape(_page_title(page))}</p>'


def table_slide(page: str, section: str, dest: str) -> str:
    soup, where = _page(page)
    sec = soup.find(id=section)
    table = sec.find("table") if sec is not None else None
    if table is None:
        raise SlideError(f"no table in section {section!r} of {page}")
    _relink(table, where, dest)
    return f'<div class="tl-table">{table}</div><p class="tl-source">{html.escape(_page_title(page))}</p>'


def text_slide(spec: dict) -> str:
    points = "".join(f"<li>{html.escape(p)}</li>" for p in spec.get("points", []))
    return f"<h2>{html.escape(spec['title'])}</h2>" + (f"<ul>{points}</ul>" if points else "")


def _page_title(page: str) -> str:
    soup, _ = _page(page)
    h1 = soup.select_one("article h1") or soup.find("h1")
    return h1.get_text(" ", strip=True).rstrip("#¶ ").strip() if h1 else page


def _shorten(text: str, n: int) -> str:
    if len(text) <= n:
        return text
    cut = text[:n].rsplit(". ", 1)[0]
    return cut + "." if len(cut) > n // 2 else text[:n].rsplit(" ", 1)[0] + " ..."


def _notes(section: pacing.RunSheetSection) -> str:
    parts = [f"<p><b>{html.escape(section.clock)}, {section.minutes} minutes, {html.escape(section.mode)}.</b> {html.escape(section.title)}</p>"]
    for key in ("show", "skip", "ask the room", "expect", "board"):
        if key in section.fields:
            text = re.sub(r"\{doc\}`([^`]+)`", r"\1", section.fields[key])
            parts.append(f"<p><b>{key.capitalize()}.</b> {html.escape(text)}</p>")
    if not section.fields:
        parts.append(f"<p>{html.escape(' '.join(section.body.split()))}</p>")
    return '<aside class="notes">' + "".join(parts) + "</aside>"


def _math_head(body: str, dest: str) -> str:
    """The site's own math renderer: MathJax (raw TeX left in the page) or KaTeX's CSS
    (formulas rendered at build time)."""
    head = []
    if "katex" in body:
        for path in sorted(SITE.rglob("katex*.css")):
            head.append(f'<link rel="stylesheet" href="{posixpath.relpath(path.relative_to(SITE).as_posix(), posixpath.dirname(dest))}">')
            break
    elif "\\[" in body or "\\(" in body or "\\begin{" in body:
        # (with KaTeX the TeX source stays in each formula's MathML <annotation>: not raw TeX)
        mathjax = next(iter(sorted(SITE.glob("mathjax/tex-*.js"))), None)
        if mathjax is None:
            raise SlideError("the slides have TeX but the site has no MathJax (make book)")
        src = posixpath.relpath(mathjax.relative_to(SITE).as_posix(), posixpath.dirname(dest))
        # as Sphinx configures it: myst-nb marks sections mathjax_ignore and the formulas "math"
        head.append(
            '<script>window.MathJax = {tex: {inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]]}, '
            'options: {ignoreHtmlClass: "tex2jax_ignore|mathjax_ignore|document", '
            'processHtmlClass: "tex2jax_process|mathjax_process|math|output_area"}};</script>'
        )
        head.append(f'<script defer src="{src}"></script>')
    return "\n".join(head)


STYLE = """
.reveal h2 { font-size: 1.5em; text-transform: none; }
.reveal ul { font-size: 0.85em; }
.reveal .tl-figure { margin: 0; }
.reveal .tl-figure img { max-height: 560px; max-width: 100%; margin: 0; }
.reveal figcaption, .reveal .tl-source { font-size: 0.45em; color: #333; margin: 0.3em 0 0; }
.reveal .tl-equation { font-size: 0.9em; }
.reveal pre.tl-code, .reveal pre.tl-output { font-size: 0.42em; width: 100%; box-shadow: none;
  background: #f5f5f5; color: #111; text-align: left; padding: 0.4em; max-height: 360px; overflow: auto; }
.reveal pre.tl-output { background: #fff; border-left: 3px solid #999; }
.reveal .tl-live { font-size: 0.5em; font-weight: bold; color: #8a1c00; margin: 0 0 0.2em; }
.reveal .tl-segment { position: absolute; top: 680px; left: 0; font-size: 0.4em; color: #444; margin: 0; }
.reveal .tl-table table { font-size: 0.45em; }
.reveal img { background: #fff; }
"""


def _slide(slide: dict, dest: str) -> str:
    (kind, spec), = slide.items()
    if kind == "text":
        return text_slide(spec)
    if kind == "figure":
        return figure_slide(spec, dest)
    if kind == "equation":
        return equation_slide(spec, dest)
    if kind == "cell":
        return cell_slide(spec["page"], spec["contains"], bool(spec.get("live")), dest)
    if kind == "table":
        return table_slide(spec["page"], spec["section"], dest)
    raise SlideError(f"tools/slides.yml: unknown slide kind {kind!r}")


def _first_slide(alternatives: list[dict], dest: str) -> str:
    """The first of several alternatives that the built site has (a list in the manifest:
    the same slide under a page's old and new names)."""
    errors = []
    for slide in alternatives:
        try:
            return _slide(slide, dest)
        except SlideError as err:
            errors.append(str(err))
    raise SlideError("; ".join(errors))


def build_slides() -> int:
    manifest = yaml.safe_load(MANIFEST.read_text())
    sheet = {s.number: s for s in pacing.run_sheet()}
    dest = "slides/index.html"
    sections = []
    for segment in manifest["segments"]:
        number = segment["run_sheet"]
        if number not in sheet:
            raise SlideError(f"tools/slides.yml: no section {number} in the run sheet")
        run = sheet[number]
        notes = _notes(run)
        label = f'<p class="tl-segment">{html.escape(run.clock)} &middot; {html.escape(run.title)}</p>'
        for slide in segment["slides"]:
            body = _first_slide(slide if isinstance(slide, list) else [slide], dest)
            sections.append(f'<section data-segment="{number}">{label}{body}{notes}</section>')
    body = "\n".join(sections)
    SLIDES.mkdir(parents=True, exist_ok=True)
    reveal_dir = SLIDES / "reveal"
    for name in REVEAL_FILES:
        src = REVEAL / name
        if not src.exists():
            raise SlideError(f"{src} missing: run `npm ci` (reveal.js is in package.json)")
        (reveal_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, reveal_dir / name)
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(manifest['title'])}: slides</title>
<meta name="description" content="Slides of the 2.5-hour session, made from the book's own pages.">
<link rel="icon" href="../_static/favicon.png">
<link rel="stylesheet" href="reveal/reveal.css">
<link rel="stylesheet" href="reveal/theme/white.css">
{_math_head(body, dest)}
<style>{STYLE}</style>
</head>
<body>
<div class="reveal"><div class="slides">
{body}
</div></div>
<script src="reveal/reveal.js"></script>
<script src="reveal/plugin/notes.js"></script>
<script>
Reveal.initialize({{hash: true, slideNumber: "c/t", width: 1280, height: 720, margin: 0.05,
  showNotes: false, plugins: [RevealNotes]}});
</script>
</body>
</html>
"""
    (SLIDES / "index.html").write_text(page)
    print(f"wrote {(SLIDES / 'index.html').relative_to(ROOT)}: {len(sections)} slides")
    return len(sections)


def chromium_pdf(url: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        cmd = [CHROMIUM, *CHROMIUM_ARGS, f"--user-data-dir={profile}", f"--print-to-pdf={out}", url]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    if not out.exists() or out.stat().st_size < 1000:
        raise SlideError(f"Chromium did not print {url} to {out}")
    print(f"wrote {out.relative_to(ROOT)}")


def slides() -> int:
    build_slides()
    chromium_pdf((SLIDES / "index.html").as_uri() + "?print-pdf", SLIDES_PDF)
    return 0


HANDOUT_STYLE = """
@page { size: A4; margin: 12mm 13mm; }
html { font: var(--tl-size, 9.5pt)/1.3 "FreeSans", "Helvetica", "Arial", sans-serif; color: #000; }
body { margin: 0; }
h1 { font-size: 15pt; margin: 0 0 2mm; }
h2 { font-size: 11pt; margin: 3mm 0 1mm; break-after: avoid; }
h3 { font-size: 10pt; margin: 2mm 0 1mm; break-after: avoid; }
p, ul, ol, dl { margin: 0 0 1.5mm; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; margin: 1mm 0 2mm; break-inside: avoid; }
th, td { border: 0.5pt solid #555; padding: 0.6mm 1.2mm; text-align: left; vertical-align: top; }
pre, code { font-family: "DejaVu Sans Mono", "FreeMono", monospace; font-size: 0.85em; }
pre { white-space: pre-wrap; background: #f3f3f3; padding: 1mm 1.5mm; margin: 0 0 1.5mm; break-inside: avoid; }
img { max-width: 100%; max-height: 60mm; }
.math, mjx-container { font-size: 95%; }
a { color: #000; text-decoration: none; }
.tl-footer { margin-top: 3mm; border-top: 0.5pt solid #000; padding-top: 1mm; font-size: 0.9em; }
.headerlink, .toggle-button, button, .copybtn, script, .tag_remove-cell { display: none !important; }
"""


def handout() -> int:
    manifest = yaml.safe_load(MANIFEST.read_text())["handout"]
    page = manifest["page"]
    if not (SITE / "book" / f"{page}.html").exists():
        print(f"tools/slides.py: book/{page} is not built; the handout is made from book/{manifest['fallback']}")
        page = manifest["fallback"]
    soup, where = _page(page)
    article = soup.select_one("article") or soup.body
    for junk in article.select(".headerlink, .cell_input, .tag_hide-input .cell_input, script, button, .copybtn"):
        junk.decompose()
    dest = "handout/index.html"
    _relink(article, where, dest)
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    content = article.decode_contents()
    doc = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Handout: {html.escape(_page_title(page))}</title>
<meta name="description" content="A two-page handout of the lesson: equations, shapes, mask conventions.">
<link rel="icon" href="../_static/favicon.png">
{_math_head(content, dest)}
<style>{HANDOUT_STYLE}</style>
<style>html {{ --tl-size: SIZEpt; }}</style>
</head>
<body>
<main>
{content}
<p class="tl-footer">The Transformer: attention, multi-head attention and positional encoding.
The book, to read and run: https://transformer-lessons.github.io/transformer-lessons/ &middot;
source and licence (MIT): {html.escape(repo)}</p>
</main>
</body>
</html>
"""
    HANDOUT.mkdir(parents=True, exist_ok=True)
    # Two A4 sides at most: the largest of these text sizes that fits.
    for size in HANDOUT_SIZES:
        (HANDOUT / "index.html").write_text(doc.replace("SIZEpt", f"{size}pt"))
        chromium_pdf((HANDOUT / "index.html").as_uri(), HANDOUT_PDF)
        pages = _pdf_pages(HANDOUT_PDF)
        if pages <= 2:
            break
        print(f"  {pages} pages at {size} pt: smaller")
    else:
        raise SlideError(f"book/{page} does not fit two A4 sides even at {HANDOUT_SIZES[-1]} pt")
    print(f"wrote {(HANDOUT / 'index.html').relative_to(ROOT)} from book/{page} at {size} pt, {pages} pages")
    return 0


HANDOUT_SIZES = [9.5, 9.0, 8.5, 8.0, 7.5, 7.0]


def _pdf_pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def main(argv: list[str]) -> int:
    commands = {"slides": slides, "handout": handout}
    if len(argv) != 1 or argv[0] not in commands:
        sys.exit(__doc__)
    try:
        return commands[argv[0]]()
    except SlideError as err:
        sys.exit(f"tools/slides.py: {err}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
