"""The slides of the session, from the built site: ``python -m book_build.slides`` (``make slides``).

(The handout is ``book_build.handout``, ``make handout``.) The deck's page is made of
templates: ``tools/templates/page.html`` (every page of the kit), ``slides.html`` (the
deck around the slides), ``slides.js`` (reveal.js's settings) and ``slides.css``.

Writes ``_build/html/slides/index.html`` (reveal.js, offline) and its PDF,
``_build/html/slides/transformer-lessons-slides.pdf``, one slide per page.

Everything on a slide comes from the built pages (``make book`` first), never from the
sources: the figures are the executed ones, the formulas are the site's KaTeX, and every
number (figure, equation, exercise, quiz question) is the one the build printed, looked up
by label (``book_build.built``). Each page says which of its figures, equations, cells,
tables and quiz questions make the slides of its segment, in its front matter
(``pacing: session: slides:``, ``book_build.pages``; the title slide and the buffer's are the
pacing-plan page's; the deck's title is the book's), and ``book_build.pacing``
reads them with the plan: the deck follows the session, segment by segment of the run sheet
(the page of ``kind: run-sheet``, by its sections' labels). Each slide's speaker notes
(press S) are that segment's text as the built run sheet shows it, as plain text
(references resolved to their titles, formulas written out). The plan's breaks become
break slides.

A slide is a mapping of one key:

``book: {title, points: [...]}``
    the title slide: the book's address, its QR code and the repository;
``text: {title, points: [...]}``
    a title slide or a short list (keep it short); a point may cite a label with the
    ``ref`` or ``numref`` role: the build's number and title replace it (never type one);
``figure: <label>`` (or ``{name, title}``)
    a figure of the book, with its number and the first sentence of its caption;
``equation: <label>`` (or ``{label, title}``)
    a numbered display equation of the book;
``cell: {contains, live, page, title}``
    a code cell (input and output) of the page (or of ``page``) whose source contains the
    text; ``live: true``: run it in class;
``table: {section, page, title}``
    the first table of a section of the page (by its id);
``quiz: <label>``
    a quiz question with its options; the answer goes to the speaker notes.

Figure, equation and cell slides take the title of the section they sit in (or ``title``).
A label missing from the built site fails the build and names it.

Every slide has a title. Text sizes are for a lecture room: at 1280 x 720, body text
40 px, captions 28 px, code and output 26 px (``tests/browser/test_slides.py`` measures them in Chromium,
scaled as displayed, and asserts at least 24 px).

The PDF is printed by Chromium through Playwright (``book_build.printing``) once the deck
says it is ready: reveal.js's ``ready`` and ``pdf-ready`` events, the fonts, every image.
"""

from __future__ import annotations

import html
import posixpath
import re
import shutil
import sys

from bs4 import BeautifulSoup, NavigableString, Tag
from transformer_classroom import book

from . import built, pacing, printing

ROOT = built.ROOT
SITE = built.SITE
TEMPLATES = printing.TEMPLATES  # page.html (every kit page), slides.html, slides.js, slides.css
REVEAL = ROOT / "node_modules" / "reveal.js" / "dist"
SLIDES = SITE / "slides"
SLIDES_PDF = SLIDES / book.published(ROOT)["pdf_slides"]
REVEAL_FILES = ["reveal.js", "reveal.css", "theme/white.css", "plugin/notes.js"]
DEST = "slides/index.html"
WIDTH, HEIGHT = 1280, 720


class SlideError(RuntimeError):
    pass


# --- pieces of the built pages --------------------------------------------------------------

def _relink(el: Tag, page: str, dest: str = DEST) -> Tag:
    """Rewrite el's image and link URLs from book/<page>.html to dest; drop pilcrow links."""
    where = f"book/{page}.html"
    for link in el.select("a.headerlink"):
        link.decompose()
    for tag, attr in (("img", "src"), ("a", "href"), ("source", "srcset")):
        for node in el.find_all(tag):
            url = node.get(attr)
            if not url or re.match(r"^[a-z]+:|^#", url):
                if url and url.startswith("#"):
                    node[attr] = posixpath.relpath(where, posixpath.dirname(dest)) + url
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(where), url.split("#")[0]))
            node[attr] = posixpath.relpath(target, posixpath.dirname(dest)) + (("#" + url.split("#", 1)[1]) if "#" in url else "")
    return el


def _light_only(el: Tag) -> None:
    """A figure drawn in a light and a dark variant keeps the light one (slides are light)."""
    imgs = el.find_all("img")
    if len(imgs) > 1:
        for img in imgs:
            if re.search(r"dark", " ".join(img.get("class", [])) + img.get("src", "")):
                img.decompose()


def _html(el: Tag) -> str:
    return el.decode_contents().strip()


def _title_html(h: Tag | None) -> str:
    if h is None:
        return ""
    h = BeautifulSoup(str(h), "html.parser").find(re.compile(r"^h[1-6]$"))
    for junk in h.select("a.headerlink"):
        junk.decompose()
    return _html(h)


def _first_sentence(caption: Tag) -> Tag:
    """The caption's first sentence, formulas kept whole (a caption on a slide is a label,
    the page has the rest)."""
    out = BeautifulSoup("<span></span>", "html.parser").span
    for node in list(caption.children):
        if isinstance(node, NavigableString):
            m = re.search(r"\.(\s|$)", str(node))  # a sentence's end: a caption cut at ";" reads as cut
            if m:
                out.append(NavigableString(str(node)[: m.start() + 1]))
                return out
            out.append(NavigableString(str(node)))
        else:
            out.append(BeautifulSoup(str(node), "html.parser"))
    return out


SIDE_CAPTION_RATIO = 1.7  # width / height below which a figure's caption goes beside it


def _aspect(img: Tag, page: str) -> float:
    """An image's width / height: from its CSS aspect-ratio (the themed SVG figures carry
    one), else from the built image file (a PNG's header, an SVG's width and height)."""
    ratio = re.search(r"aspect-ratio:\s*([\d.]+)\s*/\s*([\d.]+)", img.get("style", ""))
    if ratio:
        return float(ratio.group(1)) / float(ratio.group(2))
    path = built.SITE / posixpath.normpath(posixpath.join("book", img["src"]))  # src as the page has it
    if path.suffix == ".svg":
        w, h = (re.search(rf'<svg[^>]*\b{k}="([\d.]+)', path.read_text()) for k in ("width", "height"))
        if w and h:
            return float(w.group(1)) / float(h.group(1))
    from PIL import Image

    with Image.open(path) as im:
        return im.width / im.height


def figure_slide(label: str, title: str | None = None) -> tuple[str, str]:
    ref = built.lookup(label)
    if ref.kind != "figure":
        raise SlideError(f"{label!r} is not a figure")
    fig = BeautifulSoup(str(ref.element), "html.parser").find("figure")
    _light_only(fig)
    img = fig.find("img")
    if img is None:
        raise SlideError(f"figure {label!r} has no image")
    ratio = _aspect(img, ref.page)
    _relink(fig, ref.page)
    text = fig.select_one("figcaption .caption-text") or fig.find("figcaption")
    cap = _first_sentence(text) if text is not None else ""
    alt = html.escape(img.get("alt", ""), quote=True)
    src = html.escape(img["src"], quote=True)
    # a figure that is not wide gets its caption beside it (slides.css: tl-side), so that it
    # fills the slide's height rather than about half of it
    side = " tl-side" if ratio < SIDE_CAPTION_RATIO else ""
    body = (
        f'<figure class="tl-figure{side}"><img src="{src}" alt="{alt}">'
        f'<figcaption><b>{html.escape(ref.number)}</b> {cap}</figcaption></figure>'
    )
    return title or ref.title, body


def equation_slide(label: str, title: str | None = None) -> tuple[str, str]:
    ref = built.lookup(label)
    if ref.kind != "equation":
        raise SlideError(f"{label!r} is not an equation")
    el = BeautifulSoup(str(ref.element), "html.parser")
    _relink(el, ref.page)
    return title or ref.title, f'<div class="tl-equation">{el}</div><p class="tl-source">{html.escape(built.page_title(ref.page))}</p>'


def cell_slide(page: str, contains: str, live: bool, title: str | None = None) -> tuple[str, str]:
    soup = built.page(page)
    for cell in soup.select("div.cell"):
        source = cell.select_one(".cell_input pre")
        if source is not None and contains in source.get_text():
            break
    else:
        raise SlideError(f"no code cell containing {contains!r} on {page}")
    heading = built.heading_of(cell)
    cell = _relink(BeautifulSoup(str(cell), "html.parser").find("div"), page)
    code = html.escape(fit_code(cell.select_one(".cell_input pre").get_text().rstrip("\n")))
    outputs = []
    for out in cell.select(".cell_output"):
        img = out.find("img")
        if img is not None:
            outputs.append(f'<img class="tl-cell-img" src="{html.escape(img["src"], quote=True)}" alt="{html.escape(img.get("alt", ""), quote=True)}">')
        else:
            pre = out.find("pre")
            if pre is not None:
                outputs.append(f'<pre class="tl-output">{html.escape(pre.get_text().rstrip())}</pre>')
    badge = '<span class="tl-live">run it live</span>' if live else ""
    body = f'<div class="tl-cell"><pre class="tl-code"><code>{code}</code></pre>{"".join(outputs)}</div>{badge}<p class="tl-source">{html.escape(built.page_title(page))}</p>'
    return title or (_title_html(heading) if heading is not None else built.page_title(page)), body


CODE_COLUMNS = 74  # characters of code that fit one line of a slide at the code's size


def fit_code(code: str, width: int = CODE_COLUMNS) -> str:
    """Code as a slide shows it: a line too long for the slide has its trailing comment
    moved onto its own line just above it, at the same indentation (the code is unchanged;
    what is still too long wraps)."""
    out = []
    for line in code.splitlines():
        m = re.match(r"^(\s*)(.*?\S)\s{2,}(#.*)$", line)
        if len(line) > width and m and line.count('"') % 2 == 0 and "'" not in m.group(2)[-1:]:
            out.append(m.group(1) + m.group(3))
            out.append(m.group(1) + m.group(2))
        else:
            out.append(line)
    return "\n".join(out)


def table_slide(page: str, section: str, title: str | None = None) -> tuple[str, str]:
    soup = built.page(page)
    sec = soup.find(id=section)
    table = sec.find("table") if sec is not None else None
    if table is None:
        raise SlideError(f"no table in section {section!r} of {page}")
    table = _relink(BeautifulSoup(str(table), "html.parser").find("table"), page)
    return title or _title_html(built.heading_of(sec)), f'<div class="tl-table">{table}</div><p class="tl-source">{html.escape(built.page_title(page))}</p>'


def quiz_slide(label: str) -> tuple[str, str, str]:
    """A quiz question of the book: title, the question and its options; the answer goes
    to the speaker notes."""
    ref = built.lookup(label)
    section = BeautifulSoup(str(ref.element), "html.parser").find("section")
    _relink(section, ref.page)
    answer = section.select_one(".quiz-answer")
    if answer is None:
        raise SlideError(f"quiz question {label!r} has no answer box")
    answer.extract()
    h = section.find(re.compile(r"^h[1-6]$"))
    title = _title_html(h)
    h.decompose()
    for sub in section.find_all("section"):
        sub.decompose()
    body = f'<div class="tl-quiz">{_html(section)}</div><p class="tl-source">{html.escape(built.page_title(ref.page))}</p>'
    for t in answer.select(".admonition-title"):
        t.decompose()
    return title, body, "Answer. " + built.plain(answer)


_REF = re.compile(r"\{(ref|numref)\}`([^`]+)`")


def resolve(text: str) -> str:
    """{ref}`label` / {numref}`label` in a slide's text -> the build's number and title."""
    def one(m):
        ref = built.lookup(m.group(2))
        return ref.text if m.group(1) == "ref" else (ref.number or ref.title)
    return _REF.sub(one, text)


def text_slide(spec: dict) -> tuple[str, str]:
    points = "".join(f"<li>{html.escape(resolve(p))}</li>" for p in spec.get("points", []))
    return html.escape(resolve(spec["title"])), (f"<ul>{points}</ul>" if points else "")


def book_slide(spec: dict) -> tuple[str, str]:
    """The title slide: the book's title, its address and a QR code to it (as on the
    handout), and the repository, all from _config.yml."""
    from . import handout
    import segno

    url = handout.address()
    qr = segno.make(url, error="m").svg_inline(scale=8, border=0)
    points = "".join(f"<li>{html.escape(resolve(p))}</li>" for p in spec.get("points", []))
    body = (f'<div class="tl-book"><div><ul>{points}</ul><p class="tl-address">{html.escape(url)}</p>'
            f'<p class="tl-source">source ({html.escape(handout.book_values()["licence"])} licence): '
            f'{html.escape(handout.book_values()["repo_url"])}</p></div>{qr}</div>')
    return html.escape(spec.get("title") or book.title(ROOT)), body


def _slide(slide: dict, page: str | None) -> tuple[str, str, str]:
    """(title html, body html, extra notes) of one declared slide; ``page`` is the page
    that declares it (a cell or table slide takes that page's unless it names one)."""
    if not isinstance(slide, dict) or len(slide) != 1:
        raise SlideError(f"a slide is a mapping of one key (its kind), not {slide!r}")
    (kind, spec), = slide.items()
    if kind in ("cell", "table"):
        spec = {"page": page, **spec}
        if not spec["page"]:
            raise SlideError(f"a {kind} slide of a row of no page needs its page: {slide!r}")
    if kind == "book":
        return (*book_slide(spec), "")
    if kind == "text":
        return (*text_slide(spec), "")
    if kind == "figure":
        spec = spec if isinstance(spec, dict) else {"name": spec}
        return (*figure_slide(spec["name"], spec.get("title")), "")
    if kind == "equation":
        spec = spec if isinstance(spec, dict) else {"label": spec}
        return (*equation_slide(spec["label"], spec.get("title")), "")
    if kind == "cell":
        return (*cell_slide(spec["page"], spec["contains"], bool(spec.get("live")), spec.get("title")), "")
    if kind == "table":
        return (*table_slide(spec["page"], spec["section"], spec.get("title")), "")
    if kind == "quiz":
        return quiz_slide(spec)
    raise SlideError(f"unknown slide kind {kind!r} (book, text, figure, equation, cell, table, quiz)")


# --- speaker notes from the built run sheet -------------------------------------------------

def run_sheet_notes(sections: list[pacing.RunSheetSection]) -> dict[str, list[str]]:
    """Segment label -> its paragraphs, as plain text, from the built run sheet (each
    segment is a labelled section: the build numbers it, nobody types the number)."""
    notes = {}
    for s in sections:
        section = built.lookup(s.label).element
        notes[s.label] = [built.plain(p) for p in section.find_all(["p", "li"]) if not p.find_parent("li") or p.name == "li"]
    return notes


def _notes(section: pacing.RunSheetSection, paragraphs: list[str], extra: str = "") -> str:
    head = f"{section.clock}, {section.minutes} minutes, {section.mode}. {section.title}"
    parts = [f"<p><b>{html.escape(head)}</b></p>"]
    if extra:
        parts.append(f"<p><b>{html.escape(extra)}</b></p>")
    parts += [f"<p>{html.escape(p)}</p>" for p in paragraphs if p]
    return '<aside class="notes">' + "".join(parts) + "</aside>"


def _break_slide(seg: pacing.Segment) -> str:
    title = "Break"
    body = (f'<p class="tl-break">{seg.minutes} minutes<br>back at {html.escape(seg.clock.split("-")[1])}</p>')
    notes = f'<aside class="notes"><p><b>{html.escape(seg.clock)}, {seg.minutes} minutes, break.</b> {html.escape(seg.title)}.</p></aside>'
    label = f'<p class="tl-segment">{html.escape(seg.clock)} &middot; {html.escape(seg.title)}</p>'
    return f'<section data-segment="break" data-title="{title}"><h2>{title}</h2>{label}{body}{notes}</section>'


def _plain_title(title_html: str) -> str:
    return built.plain(BeautifulSoup(f"<h2>{title_html}</h2>", "html.parser").h2)


def build_slides() -> int:
    sheet = {s.label: s for s in pacing.run_sheet()}
    notes_text = run_sheet_notes(list(sheet.values()))
    sections = []
    for seg in pacing.full_plan():
        if seg.start is None:
            continue
        if seg.mode == "break":
            sections.append(_break_slide(seg))
            continue
        run = sheet[seg.run_sheet]
        if not seg.slides:
            raise SlideError(f"{seg.declared}: slides: the segment of run-sheet section {run.label} ({run.title}) has none")
        label = f'<p class="tl-segment">{html.escape(run.clock)} &middot; {html.escape(run.title)}</p>'
        for slide in seg.slides:
            try:
                title, body, extra = _slide(slide, seg.pages[0] if seg.pages else None)
            except SlideError as err:
                raise SlideError(f"{seg.declared}: slides: {err}") from None
            if not title:
                raise SlideError(f"{seg.declared}: slides: a slide of run-sheet section {run.label} has no title")
            notes = _notes(run, notes_text.get(run.label, []), extra)
            plain_title = html.escape(_plain_title(title), quote=True)
            sections.append(f'<section data-segment="{run.number}" data-label="{run.label}" data-title="{plain_title}"><h2>{title}</h2>{label}{body}{notes}</section>')
    body = "\n".join(sections)
    SLIDES.mkdir(parents=True, exist_ok=True)
    reveal_dir = SLIDES / "reveal"
    for name in REVEAL_FILES:
        src = REVEAL / name
        if not src.exists():
            raise SlideError(f"{src} missing: run `npm ci` (reveal.js is in package.json)")
        (reveal_dir / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, reveal_dir / name)
    katex = next(iter(sorted(SITE.rglob("katex*.css"))), None)
    if "katex" in body and not katex:
        raise SlideError("the slides have formulas but the site has no KaTeX stylesheet (make book)")
    sheets = ["reveal/reveal.css", "reveal/theme/white.css"]
    sheets += [posixpath.relpath(katex.relative_to(SITE).as_posix(), "slides")] if katex else []
    page = printing.kit_page(
        f"{pacing.slides_title()}: slides", "Slides of the 2.5-hour session, made from the book's own pages.",
        sheets, (TEMPLATES / "slides.css").read_text(), printing.template("slides.html", sections=body),
        printing.template("slides.js", width=WIDTH, height=HEIGHT))
    (SLIDES / "index.html").write_text(page)
    print(f"wrote {(SLIDES / 'index.html').relative_to(ROOT)}: {len(sections)} slides")
    return len(sections)


def print_slides() -> None:
    url = (SLIDES / "index.html").as_uri() + "?print-pdf"
    with printing.browser() as b:
        page = printing.open_ready(b, url, {"width": WIDTH, "height": HEIGHT})
        printing.pdf(page, SLIDES_PDF)
    print(f"wrote {SLIDES_PDF.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    if argv:
        sys.exit(__doc__)
    try:
        build_slides()
        print_slides()
    except (SlideError, built.SiteError) as err:
        sys.exit(f"code/build/book_build/slides.py: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
