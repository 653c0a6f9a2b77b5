"""The handout: two full A4 sides for a student to keep (``make handout``).

Writes ``_build/html/handout/index.html`` and ``_build/html/pdf/transformer-lessons-handout.pdf``
from the built site (``make book`` first): nothing on it is typed here.

* the equations and the shapes of the cheat sheet (the page of ``kind: cheat-sheet``), each equation
  with its number and page in the printed student edition;
* the drawings of the shapes through self-attention and through an encoder layer (the
  book's own generated diagrams, ``transformer_lessons.diagrams``, as the build drew them);
* the signature of every numbered exercise and the check that tests it, with its number
  and printed page;
* the mask conventions;
* the book's address and a QR code to it, drawn at build time by ``segno`` (offline).

Numbers and pages of the printed book come from the student edition's LaTeX labels
(``_build/pdf-student/_build/latex/book.aux``, written by ``make pdf``, which ``make test``
runs before ``make handout``). Without a student PDF (``make handout`` alone) the handout
falls back to the web edition's numbers and names the page of the web edition instead of a
printed page number, and says so on the build's output; the tests of the handout require
the PDF.

The book's address is ``html_baseurl`` when _config.yml sets one, else the GitHub Pages
address of the repository of _config.yml (``github.com/OWNER/REPO`` ->
``https://OWNER.github.io/REPO/``), where the site is published.

Two full sides: the text size is the largest (in steps of 0.25 pt) at which everything fits
on two A4 pages, so the second page is full too (``tests/browser/test_handout.py`` measures it).
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup
from transformer_classroom import book

from . import built, printing

ROOT = built.ROOT
SITE = built.SITE
HANDOUT = SITE / "handout"
HANDOUT_PDF = SITE / "pdf" / book.published(ROOT)["pdf_handout"]
TEMPLATES = printing.TEMPLATES  # page.html (every kit page), handout.css
AUX = ROOT / "_build" / "pdf-student" / "_build" / "latex" / "book.aux"
DIAGRAMS = ["fig-foundations-self-attention-diagram", "fig-encoder-layer-diagram"]
SIZES = [s / 4 for s in range(52, 27, -1)]  # 13 pt down to 7 pt


class HandoutError(RuntimeError):
    pass


WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()


def count_word(n: int) -> str:
    return (WORDS[n] if n < len(WORDS) else str(n)).capitalize()


def book_values() -> dict[str, str]:
    """The values the pages print (``repo_url``, ``pages_url``, ``licence``, ...), as the
    build fills them: ``transformer_classroom.book.book_values``."""
    from transformer_classroom.book import book_values as values

    return values(ROOT)


def address() -> str:
    """Where the site is published (``pages_url``: ``html_baseurl`` of _config.yml if set)."""
    return book_values()["pages_url"]


def printed_labels() -> dict[str, tuple[str, str]] | None:
    """label -> (number, printed page) in the student edition, or None without its PDF."""
    if not AUX.exists():
        return None
    out = {}
    for m in re.finditer(r"\\newlabel\{([^{}]*)\}\{\{([^{}]*)\}\{([^{}]*)\}", AUX.read_text(errors="replace")):
        name, number, page = m.groups()
        label = name.split(":")[-1]
        out.setdefault(label, (number, page))
    return out


def _where(label: str, ref: built.Ref, printed) -> tuple[str, str]:
    """(number, page) as the handout prints them."""
    if printed is None:
        return ref.number.strip("()").replace("Fig. ", "").replace("Exercise ", ""), built.page_title(ref.page)
    if label not in printed:
        raise HandoutError(f"{label!r} is not in the student PDF's labels ({AUX.relative_to(ROOT)})")
    return printed[label]


def _table(page: str, heading_id_start: str):
    soup = built.page(page)
    for h in soup.select("article section > h2"):
        if built.title(h).lower().startswith(heading_id_start):
            table = h.parent.find("table")
            if table is not None:
                return h.parent, BeautifulSoup(str(table), "html.parser").find("table")
    raise HandoutError(f"no table under a heading starting {heading_id_start!r} on {page}")


def _unlink(el) -> None:
    for a in el.find_all("a"):
        a.unwrap()
    for junk in el.select(".headerlink"):
        junk.decompose()


def equations(printed) -> tuple[str, int]:
    _, table = _table(book.the("cheat-sheet"), "")  # the first table of the page: the equations
    rows = table.select("tbody tr")
    out = []
    for tr in rows:
        cells = tr.find_all("td")
        link = cells[-1].find("a")
        href = link.get("href", "") if link else ""
        label = href.split("#equation-")[-1] if "#equation-" in href else None
        if label is None:
            raise HandoutError(f"an equation row of the cheat sheet does not cite its equation: {built.plain(tr)}")
        ref = built.lookup(label)
        number, page = _where(f"equation-{label}" if printed and f"equation-{label}" in printed else label, ref, printed)
        for c in cells:
            _unlink(c)
        out.append(f"<tr><td>{cells[0].decode_contents()}</td><td>{cells[1].decode_contents()}</td>"
                   f"<td class='num'>({html.escape(number)})</td><td class='num'>{html.escape(page)}</td></tr>")
    head = "<tr><th></th><th>equation</th><th>no.</th><th>{}</th></tr>".format("page" if printed else "web page")
    return f"<table class='eqs'>{head}{''.join(out)}</table>", len(rows)


def shapes() -> str:
    _, table = _table(book.the("cheat-sheet"), "shapes")
    _unlink(table)
    return str(table)


def masks() -> str:
    section, table = _table(book.the("cheat-sheet"), "masks")
    _unlink(table)
    after = []
    for p in section.find_all("p", recursive=False):
        p = BeautifulSoup(str(p), "html.parser").p
        _unlink(p)
        after.append(str(p))
    return str(table) + "".join(after)


DIAGRAM_LABEL_PT = 7  # the diagrams' smallest label on paper (diagrams.SMALL drawn at its scale)


def diagram_scale() -> float:
    """The scale the handout draws the diagrams at: their smallest label at
    :data:`DIAGRAM_LABEL_PT` (at a fixed height of 80 mm the self-attention diagram, the
    tallest, printed its labels at under 5 pt)."""
    from transformer_lessons import diagrams as drawn

    return DIAGRAM_LABEL_PT / drawn.SMALL


def diagrams() -> str:
    figs = []
    scale = diagram_scale()
    for label in DIAGRAMS:
        ref = built.lookup(label)
        fig = BeautifulSoup(str(ref.element), "html.parser").find("figure")
        imgs = [i for i in fig.find_all("img") if "dark" not in " ".join(i.get("class", [])) + i.get("src", "")]
        if not imgs:
            raise HandoutError(f"figure {label!r} has no light image")
        size = re.search(r"aspect-ratio:\s*([\d.]+)\s*/\s*([\d.]+)", imgs[0].get("style", ""))
        if not size:
            raise HandoutError(f"figure {label!r}: its image has no size (aspect-ratio: W / H, in CSS px)")
        width = float(size.group(1)) * scale  # an SVG diagram is drawn at 96 CSS px per inch
        src = "../book/" + imgs[0]["src"] if not imgs[0]["src"].startswith(("/", "data:", "http")) else imgs[0]["src"]
        cap = fig.select_one("figcaption .caption-text") or fig.find("figcaption")
        first = re.split(r"(?<=\.)\s", built.plain(cap), maxsplit=1)[0] if cap else ""
        figs.append(f"<figure style='width: {width:.1f}px'><img src='{html.escape(src, quote=True)}' "
                    f"alt='{html.escape(imgs[0].get('alt', ''), quote=True)}'>"
                    f"<figcaption>{html.escape(first)}</figcaption></figure>")
    return "<div class='diagrams'>" + "".join(figs) + "</div>"


def exercises(printed) -> tuple[str, int]:
    soup = built.page(book.the("exercises"))
    rows = []
    for box in soup.select("div.exercise"):
        label = box.get("id")
        if not label:
            continue
        ref = built.lookup(label)
        if not ref.number:
            continue  # warm-ups, bugs and the assignment are unnumbered
        starter = next((pre.get_text() for pre in box.select(".cell_input pre") if "def " in pre.get_text()), None)
        check = next((re.search(r"\b(check_\w+)\(", pre.get_text()).group(1) for pre in box.select(".cell_input pre")
                      if re.search(r"\bcheck_\w+\(", pre.get_text())), None)
        if starter is None or check is None:
            raise HandoutError(f"{label}: no starter function or no check cell on the exercises page")
        sig = re.search(r"def (\w+\([^)]*\)):\s*\n\s*(?:\"\"\"(.*?)(?:\"\"\"|\n))?", starter)
        number, page = _where(label, ref, printed)
        doc = (sig.group(2) or "").strip() if sig else ""
        rows.append(f"<tr><td>{html.escape(ref.number)}<br><span class='small'>{html.escape(ref.title)}</span></td>"
                    f"<td><code>{html.escape(sig.group(1) if sig else '')}</code><br>{html.escape(doc)}</td>"
                    f"<td><code>{html.escape(check)}</code></td><td class='num'>{html.escape(page)}</td></tr>")
    if not rows:
        raise HandoutError("no numbered exercise on the built exercises page")
    head = "<tr><th>exercise</th><th>you write</th><th>the check</th><th>{}</th></tr>".format("page" if printed else "web page")
    return f"<table class='ex'>{head}{''.join(rows)}</table>", len(rows)


def build(printed) -> str:
    import segno

    url = address()
    repo = book_values()["repo_url"]
    qr = segno.make(url, error="m").svg_inline(scale=4, border=0)
    eq_table, n_eq = equations(printed)
    ex_table, n_ex = exercises(printed)
    title = book.title(ROOT)
    cheat = built.page(book.the("cheat-sheet"))
    running = cheat.select_one("article section > p:nth-of-type(1)")
    running_text = ""
    if running is not None:
        running = BeautifulSoup(str(running), "html.parser").p
        _unlink(running)
        text = str(running)
        running_text = re.sub(r"^<p>.*?(Running example)", r"<p>\1", text, flags=re.DOTALL)
    where = "printed student edition" if printed else "web edition (no PDF built: web numbers)"
    content = f"""
<header><div><h1>{html.escape(title)}</h1>
<p>The book, to read and run: <b>{html.escape(url)}</b> &middot; source ({html.escape(book_values()["licence"])} licence): {html.escape(repo)}</p>
<p>Numbers and pages: the {where}.</p>
{running_text}</div>{qr}</header>
<h2>{count_word(n_eq)} equations</h2>
{eq_table}
<h2>Shapes, in symbols and for the running example</h2>
{shapes()}
<h2>Masks: the conventions</h2>
{masks()}
<h2>The shapes through self-attention and through an encoder layer</h2>
{diagrams()}
<h2>{count_word(n_ex)} exercises: what you write, and what checks it</h2>
{ex_table}
<footer>{html.escape(title)} &middot; {html.escape(url)}</footer>
"""
    katex = next(iter(sorted(SITE.rglob("katex*.css"))), None)
    return printing.kit_page(
        f"Handout: {title}", "Two A4 pages to keep: equations, shapes, exercises, mask conventions, the book's address.",
        [f"../{katex.relative_to(SITE).as_posix()}"] if katex else [], (TEMPLATES / "handout.css").read_text(),
        f"<main>{content}</main>", "tlWhenReady(null);")


def _pages(path: Path) -> int:
    import subprocess

    info = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def handout() -> int:
    printed = printed_labels()
    if printed is None:
        print(f"code/build/book_build/handout.py: {AUX.relative_to(ROOT)} missing (no `make pdf`): the handout cites the web edition's numbers and pages")
    HANDOUT.mkdir(parents=True, exist_ok=True)
    (HANDOUT / "index.html").write_text(build(printed))
    tmp = HANDOUT / "trial.pdf"
    with printing.browser() as b:
        page = printing.open_ready(b, (HANDOUT / "index.html").as_uri(), {"width": 794, "height": 1123})
        # the largest text size that fits two sides: pages grow with the size, so bisect
        fits = {}

        def pages_at(i: int) -> int:
            if i not in fits:
                page.evaluate(f"() => document.documentElement.style.setProperty('--tl-size', '{SIZES[i]}pt')")
                printing.pdf(page, tmp)
                fits[i] = _pages(tmp)
            return fits[i]

        lo, hi = 0, len(SIZES) - 1  # SIZES falls: find the first index with <= 2 pages
        if pages_at(hi) > 2:
            raise HandoutError(f"the handout does not fit two A4 sides even at {SIZES[-1]} pt")
        while lo < hi:
            mid = (lo + hi) // 2
            if pages_at(mid) <= 2:
                hi = mid
            else:
                lo = mid + 1
        chosen = SIZES[lo]
        pages_at(lo)
        page.evaluate(f"() => document.documentElement.style.setProperty('--tl-size', '{chosen}pt')")
        printing.pdf(page, HANDOUT_PDF)
        tmp.unlink(missing_ok=True)
    html_text = (HANDOUT / "index.html").read_text().replace("<style>", f"<style>html {{ --tl-size: {chosen}pt; }}</style>\n<style>", 1)
    (HANDOUT / "index.html").write_text(html_text)
    print(f"wrote {(HANDOUT / 'index.html').relative_to(ROOT)} and {HANDOUT_PDF.relative_to(ROOT)}: "
          f"{_pages(HANDOUT_PDF)} pages at {chosen} pt")
    return 0


def main(argv: list[str]) -> int:
    if argv:
        sys.exit(__doc__)
    try:
        return handout()
    except (HandoutError, built.SiteError) as err:
        sys.exit(f"code/build/book_build/handout.py: {err}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
