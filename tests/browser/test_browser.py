"""The built site in a real browser (Debian's chromium driven by Playwright), offline.

The site is served from _build/html on 127.0.0.1. One browser and one tab visit every
page of _toc.yml once (the ``sweep`` fixture), first at a desktop width (1280 px), then,
without reloading, at a phone width (390 px); every check below reads what that visit
recorded, so each page is loaded only once for all of them. Per page:

* requests: none may leave 127.0.0.1, none may fail (network error or HTTP >= 400), and
  no page may log a console error or throw, during the whole visit (clicks, resizing,
  dark mode included). There is no allow-list: the noise the untouched theme made (a
  favicon probe, sphinx-thebe, the "invalid theme mode" log) was removed at its source
  (html.favicon, the extension list and html_context in _config.yml);
* images: every shown ``<img>`` (figures and theme icons) has loaded (naturalWidth > 0),
  scrolled into view if it is lazy, in light and again in dark mode, and has meaningful
  alt text; of a figure drawn for both colour modes, the variant the theme hides was not
  downloaded. The rule: the alt text is non-empty; it is not a file name
  (``heatmap.png``, or the image's own file name); it is not a generic word on its own
  ("image", "figure", "plot", "png", "logo", ...); it is not matplotlib's repr
  ("<Figure size 640x480 with 1 Axes>"); and a figure of the lesson (an image in the
  article's cell outputs or figures) describes what it shows in at least 5 words. A
  theme icon next to its own text ("Binder logo") needs no more than that;
* math: every formula was rendered when the site was built (KaTeX): the page loads no
  math script at all, every formula carries MathML for screen readers, no KaTeX error
  element, and no raw ``$``, ``\\frac``, ``\\(`` or ``\\[`` is left in the text;
* phone width: the page itself does not scroll sideways (documentElement.scrollWidth <=
  390), and anything wider than its box (code, tables, outputs, display math) scrolls
  inside that box rather than being cut off; a display equation is keyboard-focusable;
* axe-core (node_modules/axe-core, pinned in package.json) finds no serious or critical
  violation of WCAG 2.1 A/AA, at both widths and, at the phone width, in dark mode too,
  with the quiz answers and solutions open (so their content is checked too);
* one visible search control at each width (no second header bar over the sidebar);
* quiz answers and exercise solutions are hidden until their title is clicked (not laid
  out at all: no box, not even an invisible one), then visible;
* executable pages have Binder and Colab launch buttons opening the page's ``.ipynb`` in
  the repository and branch of _config.yml; every page has the "Download the book" menu
  whose two links (student and instructor PDF) resolve to PDFs on the served site.

Layout shift: every page is opened again, in a fresh browser context (nothing cached), at
each width, and the cumulative layout shift of its first 1.5 s after ``load`` (Chromium's
``layout-shift`` entries, as Lighthouse sums them) must stay below 0.01: a layout
measurement, not a timing. The same holds at 390 px with Chromium's CPU slowed down
CPU_SLOWDOWN (6) times, above Lighthouse's 4x mobile profile (what comes late on a slow phone
or a busy machine).

Across the site: the search page finds "positional encoding" and its result leads to the
page that teaches it; screenshots of the heatmap page at both widths (and dark mode at
the phone width) are written to _build/screenshots/ for a person to look at.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlparse
from urllib.request import urlopen

import pytest
from bs4 import BeautifulSoup
from book_build import chromium
from tests.book_files import ROOT, html_page, is_executable
from transformer_classroom import book

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SCREENSHOTS = ROOT / "_build" / "screenshots"
# The page with the attention heatmaps that a person should look at, at both widths.
HEATMAP_PAGE = "book/foundations"
# The page (and section id) that teaches positional encoding: where search must lead.
POSITIONAL_ENCODING = ("book/foundations", "positional-encoding")
# The two PDF editions, as the Makefile's pdf target copies them into the site.
PDFS = [f"pdf/{book.published()[key]}" for key in ("pdf_student", "pdf_instructor")]

GENERIC_ALT = {
    "image", "img", "picture", "photo", "figure", "fig", "graphic", "graph", "plot",
    "chart", "diagram", "icon", "logo", "output", "png", "jpg", "jpeg", "gif", "svg",
    "untitled", "alt", "placeholder",
}  # fmt: skip
FILE_NAME = re.compile(r"^\S+\.(png|jpe?g|gif|svg|webp|bmp)$", re.IGNORECASE)
FIGURE_MIN_WORDS = 5
CHECKS = ["requests", "images", "math", "phone", "axe", "hidden", "launch", "pdf", "layout"]


# --- set-up: chromium, axe-core, the served site ---------------------------------------


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = chromium.launch(p)  # code/build/book_build/chromium.py: the project's one launch of Debian's chromium
        yield b
        b.close()


@pytest.fixture(scope="module")
def axe_path() -> Path:
    """node_modules/axe-core/axe.min.js, installed by `npm ci` at the version package.json pins."""
    pinned = json.loads((ROOT / "package.json").read_text()).get("devDependencies", {}).get("axe-core")
    assert pinned and re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"package.json must pin axe-core exactly, not {pinned!r}"
    if not AXE.exists():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: run `npm ci` (the Makefile's vendor target does)", pytrace=False)
    installed = json.loads((AXE.parent / "package.json").read_text())["version"]
    if installed != pinned:
        pytest.fail(f"node_modules has axe-core {installed}, package.json pins {pinned}: run `npm ci`", pytrace=False)
    return AXE


# --- what one page visit records ------------------------------------------------------


# Opens every quiz answer and solution of the article (sphinx-togglebutton's dropdowns), so
# that what they hold is drawn and measured too
OPEN_ANSWERS_JS = ("() => document.querySelectorAll('article .admonition.dropdown > .admonition-title')"
                   ".forEach(t => t.click())")


class Tab:
    """One browser tab, reused for every page; records requests, failures and errors."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport=DESKTOP)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20000)
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, url: str, viewport=DESKTOP) -> None:
        self.requests.clear()
        self.failed.clear()
        self.errors.clear()
        self.page.set_viewport_size(viewport)
        self.page.emulate_media(color_scheme="light")
        self.page.goto(url, wait_until="networkidle")

    def resize(self, viewport) -> None:
        self.page.set_viewport_size(viewport)
        # pydata-sphinx-theme makes boxes that scroll focusable (tabindex=0, which axe's
        # scrollable-region-focusable wants) in a resize handler debounced by 300 ms
        self.page.wait_for_timeout(500)

    def dark(self) -> None:
        """Switch the reader's system to dark mode; the theme (mode "auto") follows it."""
        self.page.emulate_media(color_scheme="dark")
        self.page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'", timeout=5000)

    def close(self) -> None:
        self.context.close()


def _foreign(urls: list[str]) -> list[str]:
    out = set()
    for u in urls:
        p = urlparse(u)
        if p.scheme in ("data", "blob", "about"):
            continue
        if p.scheme not in ("http", "https", "ws", "wss") or p.hostname != "127.0.0.1":
            out.add(u)
    return sorted(out)


def check_requests(tab: Tab) -> list[str]:
    problems = []
    if foreign := _foreign(tab.requests):
        problems.append(f"requests to other hosts: {foreign}")
    if tab.failed:
        problems.append(f"failed requests: {tab.failed}")
    if tab.errors:
        problems.append(f"console errors: {tab.errors}")
    if thebe := sorted({u for u in tab.requests if "thebe" in urlparse(u).path}):
        problems.append(f"loads sphinx-thebe, which is disabled (Binder/Colab instead): {thebe}")
    return problems


def widget_sweep(tab: Tab, axe_path: Path, selector: str, name: str) -> list[str]:
    """What every interactive box of a page must pass once it has been used: axe-core at
    1280 and 390 px, light and dark; the page not scrolling sideways at 390 px; nothing
    requested from another host, no failed request, no console error (check_requests).
    Screenshots of the box go to SCREENSHOTS as ``<name>-desktop-1280.png``,
    ``<name>-phone-390.png`` and ``<name>-phone-390-dark.png``. Ends at 1280 px."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    box = tab.page.locator(selector)
    problems = run_axe(tab, axe_path, "1280")
    box.screenshot(path=str(SCREENSHOTS / f"{name}-desktop-1280.png"))
    tab.resize(PHONE)
    problems += run_axe(tab, axe_path, "390")
    box.screenshot(path=str(SCREENSHOTS / f"{name}-phone-390.png"))
    width = tab.page.evaluate("() => document.documentElement.scrollWidth")
    if width > PHONE["width"]:
        problems.append(f"the page scrolls sideways at 390 px: {width} px wide")
    tab.dark()
    problems += run_axe(tab, axe_path, "390 dark")
    box.screenshot(path=str(SCREENSHOTS / f"{name}-phone-390-dark.png"))
    tab.resize(DESKTOP)
    problems += run_axe(tab, axe_path, "1280 dark")
    return problems + check_requests(tab)


# Every image, after scrolling each shown lazy one into view and waiting for it (up to 10 s):
# lazy images load only near the viewport, as a reader scrolls. "themed": one of the two
# variants of a figure drawn for both colour modes; "shown": it has a box (the theme hides
# the other mode's variant with display: none).
IMAGES_JS = """async () => {
  const imgs = [...document.querySelectorAll('img')];
  const shown = i => i.getClientRects().length > 0;
  for (const i of imgs) if (i.loading === 'lazy' && shown(i) && !(i.complete && i.naturalWidth > 0)) {
    i.scrollIntoView({block: 'center'});
    await Promise.race([i.decode().catch(() => null), new Promise(r => setTimeout(r, 10000))]);
  }
  window.scrollTo(0, 0);
  return imgs.map(i => ({
    src: i.currentSrc || i.src, alt: i.getAttribute('alt'), loaded: i.complete && i.naturalWidth > 0,
    figure: !!i.closest('article .cell_output, article figure'), shown: shown(i),
    themed: i.matches('article .only-light, article .only-dark'), dark: i.classList.contains('only-dark')}));
}"""


def alt_problem(alt: str | None, src: str, figure: bool) -> str | None:
    """Why ``alt`` is not meaningful alt text for the image at ``src`` (None: it is)."""
    if alt is None or not alt.strip():
        return "no alt text"
    text = alt.strip()
    name = Path(urlparse(src).path).name
    if FILE_NAME.match(text) or text == name:
        return f"alt text is a file name: {text!r}"
    if re.sub(r"[^a-z ]", "", text.lower()).strip() in GENERIC_ALT:
        return f"generic alt text: {text!r}"
    if text.startswith(("<Figure", "<matplotlib")):
        return f"alt text is matplotlib's repr: {text!r}"
    if figure and len(text.split()) < FIGURE_MIN_WORDS:
        return f"a figure's alt text should describe it (at least {FIGURE_MIN_WORDS} words): {text!r}"
    return None


def check_images(tab: Tab, mode: str = "light") -> list[str]:
    """Every shown image loaded, with meaningful alt text; of a themed figure, the variant of
    the other colour mode (hidden) was not even downloaded (code/build/book_build/speed/performance.py makes
    both lazy). Called in light mode, then again after the switch to dark mode, where the
    dark variants must load and show."""
    problems = []
    requested = set(tab.requests)
    for img in tab.page.evaluate(IMAGES_JS):
        short = img["src"][-60:]
        if img["themed"] and not img["shown"]:  # the other mode's variant, or inside a closed box
            if img["src"] in requested and mode == "light" and img["dark"]:
                problems.append(f"the hidden dark-mode variant of a figure was downloaded: {short}")
            continue
        if not img["loaded"]:
            problems.append(f"image did not load ({mode} mode): {short}")
        if why := alt_problem(img["alt"], img["src"], img["figure"]):
            problems.append(f"{why} ({short})")
    return problems


def check_one_search_control(tab: Tab, width: str) -> list[str]:
    """One visible search button: pydata-sphinx-theme 0.17 adds a second one in a header bar
    that covers the sidebar unless navbar_persistent is set (_config.yml)."""
    n = tab.page.evaluate(
        "() => [...document.querySelectorAll('.search-button__button')].filter(b => b.checkVisibility()).length"
    )
    return [] if n == 1 else [f"[{width}] {n} visible search buttons, expected 1"]


def _has_math(doc: str) -> bool:
    return bool(BeautifulSoup(html_page(doc).read_text(), "html.parser").select("article .math"))


RAW_TEXT_JS = """() => { const a = document.querySelector('article').cloneNode(true);
    a.querySelectorAll('pre, code, script, .katex').forEach(e => e.remove());
    return a.textContent; }"""
RAW_MATH = ("$", "\\frac", "\\sqrt", "\\mathrm", "\\operatorname", "\\(", "\\[")
# Any script whose name says math (MathJax, KaTeX's katex.min.js or auto-render): none may load.
MATH_SCRIPT = re.compile(r"mathjax|katex[^/]*\.js|auto-render", re.IGNORECASE)
MATH_JS = """() => ({
  formulas: document.querySelectorAll('article .math').length,
  rendered: document.querySelectorAll('article .math .katex').length,
  without_mathml: document.querySelectorAll('article .katex:not(:has(.katex-mathml math))').length,
  errors: document.querySelectorAll('article .katex-error').length,
  displays: document.querySelectorAll('article .katex-display').length,
  not_focusable: document.querySelectorAll('article .katex-display:not([tabindex="0"])').length})"""


def check_math(tab: Tab, doc: str) -> list[str]:
    problems = []
    if scripts := sorted({u for u in tab.requests if MATH_SCRIPT.search(urlparse(u).path)}):
        problems.append(f"loads a math script: {scripts}")
    raw = tab.page.evaluate(RAW_TEXT_JS)  # on every page: a link text made from a title with maths too
    problems += [f"raw TeX ({d!r}) left in the text" for d in RAW_MATH if d in raw]
    if not _has_math(doc):
        return problems
    m = tab.page.evaluate(MATH_JS)
    if m["rendered"] != m["formulas"]:
        problems.append(f"{m['formulas'] - m['rendered']} of {m['formulas']} formulas not rendered by KaTeX")
    if m["without_mathml"]:
        problems.append(f"{m['without_mathml']} formulas without MathML (what a screen reader reads)")
    if m["errors"]:
        problems.append(f"{m['errors']} KaTeX error(s) (.katex-error): a formula KaTeX could not parse")
    if m["not_focusable"]:
        problems.append(f"{m['not_focusable']} display equations without tabindex=0")
    return problems


# An element wider than its box must be a scroll container (overflow-x auto/scroll); content
# cut off by overflow: hidden does not count as scrolling. KaTeX's MathML (for screen
# readers) is visually hidden on purpose (clipped to 1 px), and KaTeX draws radicals and
# braces as wide SVG paths clipped to the formula on purpose: both are left out.
PHONE_JS = """() => {
  const W = window.innerWidth, doc = document.documentElement, problems = [];
  let scrolling = 0;
  const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string'
      ? '.' + e.className.trim().split(/\\s+/).slice(0, 3).join('.') : '');
  const all = [...document.querySelectorAll('article *')].filter(e => !e.closest('.katex-mathml, .katex svg'));
  const ox = new Map(all.map(e => [e, getComputedStyle(e).overflowX]));
  const clipper = d => { let a = d.parentElement; while (a && (ox.get(a) || 'visible') === 'visible') a = a.parentElement; return a; };
  const cut = new Map();  // a box that clips -> the first thing it cuts off
  for (const d of all) {
    const r = d.getBoundingClientRect();
    if (r.width === 0) continue;
    const c = clipper(d);
    if (!c || cut.has(c) || !['hidden', 'clip'].includes(ox.get(c))) continue;
    const b = c.getBoundingClientRect();
    if (r.right > b.right + 1 || r.left < b.left - 1) cut.set(c, d);
  }
  for (const [c, d] of cut) {
    problems.push(`${name(c)} cuts off ${name(d)} (overflow-x: ${ox.get(c)}): "${c.textContent.trim().slice(0, 40)}"`);
  }
  for (const e of all) {
    if (['auto', 'scroll'].includes(ox.get(e)) && e.clientWidth > 1 && e.scrollWidth > e.clientWidth + 1) scrolling++;
  }
  if (doc.scrollWidth > W) {
    const wide = [...document.querySelectorAll('article *')]
      .filter(e => e.getBoundingClientRect().right > W + 1 && !e.closest('pre, table, .katex-display'))
      .slice(0, 5).map(e => `${name(e)} "${(e.textContent || '').trim().slice(0, 40)}"`);
    problems.unshift(`the page scrolls sideways: ${doc.scrollWidth} px wide at ${W} px; too wide: ${wide.join(', ')}`);
  }
  return {problems, scrolling};
}"""


def check_phone(tab: Tab, counters: dict) -> list[str]:
    result = tab.page.evaluate(PHONE_JS)
    counters["scrolling_boxes"] += result["scrolling"]
    return result["problems"]


def run_axe(tab: Tab, axe_path: Path, width: str) -> list[str]:
    page = tab.page
    page.mouse.move(0, 0)  # no hover colours left over from earlier clicks
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_path))
    violations = page.evaluate(
        "async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']}))"
        ".violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n').slice(1, 2).join('').trim())}))",
        AXE_TAGS,
    )
    return [
        f"[{width}] {v['impact']} {v['id']} ({v['help']}): {v['nodes']}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]


def _hidden_boxes(doc: str) -> int:
    art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
    return len(art.select(".quiz-answer, div.solution"))


def check_hidden_until_clicked(tab: Tab, doc: str) -> list[str]:
    """Open every quiz answer and solution: hidden before the click, visible after it."""
    problems = []
    boxes = tab.page.locator("article .quiz-answer, article div.solution")
    for i in range(boxes.count()):
        box = boxes.nth(i)
        body = box.locator(":scope > :not(.admonition-title):not(button)").first
        box.scroll_into_view_if_needed()
        if body.is_visible():
            problems.append(f"box {i} is visible before it is clicked")
            continue
        # closed means display: none, not invisible boxes of zero height that the browser
        # still lays out (custom.css: a 68-102 ms layout on the exercises page)
        boxed = box.evaluate("b => [...b.children].filter(c => !c.classList.contains('admonition-title')"
                             " && c.getClientRects().length > 0).length")
        if boxed:
            problems.append(f"box {i}: {boxed} of its closed parts are laid out (not display: none)")
        box.locator(".admonition-title").first.click()
        try:
            body.wait_for(state="visible", timeout=5000)
            # wait for full opacity, so that axe (run next) measures the contrast of the text as
            # it ends up: sphinx-togglebutton's rules fade the body in (0.3 s), which they do
            # not from display: none (custom.css), but a theme upgrade may bring a fade back
            tab.page.wait_for_function("e => getComputedStyle(e).opacity === '1'", arg=body.element_handle(), timeout=5000)
        except Exception:  # noqa: BLE001 - reported as a problem of this page
            problems.append(f"box {i} did not open (fully) when clicked")
    return problems


def expected_launch_urls(doc: str, config: dict) -> dict[str, str]:
    """The Binder and Colab URLs of an executable page, from _config.yml."""
    repo, launch = config["repository"], config["launch_buttons"]
    org_repo = urlparse(repo["url"]).path.strip("/")
    path = (repo.get("path_to_book") or "").strip("/")
    notebook = "/".join(p for p in (path, doc + ".ipynb") if p)
    ui = {"jupyterlab": "lab/tree", "classic": "tree"}[launch.get("notebook_interface", "classic")]
    return {
        "Binder": f"{launch['binderhub_url'].rstrip('/')}/v2/gh/{org_repo}/{repo['branch']}?urlpath={ui}/{notebook}",
        "Colab": f"{launch['colab_url'].rstrip('/')}/github/{org_repo}/blob/{repo['branch']}/{notebook}",
    }


def _menu_links(tab: Tab, dropdown: str) -> dict[str, str] | None:
    """Open a header dropdown; {visible link text: href} of its items, None if absent."""
    page = tab.page
    toggle = page.locator(f".article-header-buttons {dropdown} > button")
    if toggle.count() == 0:
        return None
    toggle.first.click()
    items = page.locator(f".article-header-buttons {dropdown} .dropdown-menu a")
    items.first.wait_for(state="visible", timeout=5000)
    links = {items.nth(i).inner_text().strip(): items.nth(i).get_attribute("href") for i in range(items.count())}
    page.keyboard.press("Escape")
    return links


def check_launch(tab: Tab, doc: str, config: dict) -> list[str]:
    if not is_executable(doc):
        return []
    links = _menu_links(tab, ".dropdown-launch-buttons")
    if links is None:
        return ["executable page without launch buttons"]
    problems = []
    for name, url in expected_launch_urls(doc, config).items():
        if links.get(name) != url:
            problems.append(f"{name} button points at {links.get(name)!r}, expected {url!r}")
    if not (ROOT / (doc + ".ipynb")).is_file():
        problems.append(f"launch buttons open {doc}.ipynb, which is not in the repository")
    return problems


def check_pdf_menu(tab: Tab, pdf_urls: set) -> list[str]:
    links = _menu_links(tab, ".dropdown-download-book-buttons")
    if links is None:
        return ['no "Download the book" menu (book/_templates/article-header-buttons.html)']
    targets = {urlparse(urljoin(tab.page.url, href)).path.lstrip("/"): urljoin(tab.page.url, href) for href in links.values()}
    if sorted(targets) != sorted(PDFS):
        return [f"PDF links point at {sorted(targets)}, expected {PDFS}"]
    pdf_urls.update(targets.values())
    return []


def run_axe_dark(tab: Tab, axe_path: Path, width: str) -> list[str]:
    tab.dark()
    return run_axe(tab, axe_path, width)


def screenshot(tab: Tab, name: str) -> None:
    """The whole page, from the top, into _build/screenshots/ (for a person to look at)."""
    tab.page.evaluate("() => window.scrollTo(0, 0)")
    tab.page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


# --- the sweep: every page opened once -----------------------------------------------


@pytest.fixture(scope="module")
def sweep(site, browser, axe_path, toc_files, book_config):
    """{check: [problem, ...]} over every page of the table of contents, and counters."""
    problems: dict[str, list[str]] = {c: [] for c in CHECKS}
    counters = {"scrolling_boxes": 0, "hidden_boxes": 0, "launch_pages": 0}
    pdf_urls: set[str] = set()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab = Tab(browser)

    def record(check, doc, fn, *args):
        try:
            found = fn(*args)
        except Exception as e:  # noqa: BLE001 - a check that crashes is a problem of that page
            found = [f"the check raised {type(e).__name__}: {str(e).splitlines()[0][:300]}"]
        problems[check] += [f"{doc}: {p}" for p in found]

    try:
        for doc in toc_files:
            try:
                tab.open(f"{site}/{doc}.html")
            except Exception as e:  # noqa: BLE001
                problems["requests"].append(f"{doc}: could not be opened: {e}")
                continue
            record("images", doc, check_images, tab)
            record("math", doc, check_math, tab, doc)
            record("launch", doc, check_launch, tab, doc, book_config)
            counters["launch_pages"] += is_executable(doc)
            record("pdf", doc, check_pdf_menu, tab, pdf_urls)
            record("axe", doc, run_axe, tab, axe_path, "1280 px")
            record("layout", doc, check_one_search_control, tab, "1280 px")
            if doc == HEATMAP_PAGE:
                screenshot(tab, "heatmap-page-desktop-1280.png")
            if _hidden_boxes(doc):
                counters["hidden_boxes"] += _hidden_boxes(doc)
                record("hidden", doc, check_hidden_until_clicked, tab, doc)
            tab.resize(PHONE)
            record("phone", doc, check_phone, tab, counters)
            record("axe", doc, run_axe, tab, axe_path, "390 px")
            record("layout", doc, check_one_search_control, tab, "390 px")
            if doc == HEATMAP_PAGE:
                screenshot(tab, "heatmap-page-phone-390.png")
            record("axe", doc, run_axe_dark, tab, axe_path, "390 px, dark mode")
            record("images", doc, check_images, tab, "dark")
            if doc == HEATMAP_PAGE:
                screenshot(tab, "heatmap-page-phone-390-dark.png")
            # last: everything above (clicks, axe, resizing) must not have caused errors either
            record("requests", doc, check_requests, tab)
    finally:
        tab.close()
    for url in sorted(pdf_urls):
        try:
            with urlopen(url, timeout=10) as r:
                kind, head = r.headers.get("Content-Type", ""), r.read(5)
                if r.status != 200 or kind != "application/pdf" or head != b"%PDF-":
                    problems["pdf"].append(f"{url}: HTTP {r.status}, {kind}, starts {head!r}")
        except OSError as e:
            problems["pdf"].append(f"{url}: {e} (run `make pdf`: it copies both PDFs into _build/html/pdf/)")
    return {"problems": problems, "counters": counters, "pdf_urls": pdf_urls}


def _assert_clean(sweep, check: str) -> None:
    found = sweep["problems"][check]
    assert not found, f"{len(found)} problem(s):\n" + "\n".join(found)


def test_every_page_is_offline_and_clean(sweep):
    _assert_clean(sweep, "requests")


def test_images_load_and_have_meaningful_alt_text(sweep):
    _assert_clean(sweep, "images")


def test_math_is_rendered_at_build_time(sweep, toc_files):
    assert any(_has_math(doc) for doc in toc_files), "no page with math ($...$ or $$...$$) in the book"
    _assert_clean(sweep, "math")


def test_phone_width_does_not_scroll_sideways(sweep):
    _assert_clean(sweep, "phone")
    # the case the check is about exists: some code or output is wider than a phone
    assert sweep["counters"]["scrolling_boxes"] > 0, "no box scrolls sideways at 390 px: is the check looking?"


def test_one_search_control_and_no_second_header(sweep):
    _assert_clean(sweep, "layout")


def test_no_serious_accessibility_violation(sweep):
    _assert_clean(sweep, "axe")


def test_answers_and_solutions_open_only_when_clicked(sweep):
    assert sweep["counters"]["hidden_boxes"], "no quiz answer or exercise solution anywhere on the site"
    _assert_clean(sweep, "hidden")


def test_launch_buttons_open_the_pages_notebook(sweep):
    assert sweep["counters"]["launch_pages"], "no executable page in the table of contents"
    _assert_clean(sweep, "launch")


def test_pdf_download_links_resolve(sweep):
    _assert_clean(sweep, "pdf")
    assert len(sweep["pdf_urls"]) == len(PDFS), f"PDF links found: {sorted(sweep['pdf_urls'])}"


def test_heatmap_screenshots_are_saved(sweep):
    assert "heatmap" in " ".join(img.get("alt", "") for img in BeautifulSoup(html_page(HEATMAP_PAGE).read_text(), "html.parser").select("article img")).lower(), (
        f"{HEATMAP_PAGE} has no heatmap figure any more: point HEATMAP_PAGE at the page that has"
    )
    for name in ("heatmap-page-desktop-1280.png", "heatmap-page-phone-390.png", "heatmap-page-phone-390-dark.png"):
        shot = SCREENSHOTS / name
        assert shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {shot} missing or empty"


# --- layout shift ---------------------------------------------------------------------

CLS_LIMIT = 0.01
CLS_SETTLE_MS = 1500
# Sums layout-shift entries (not caused by input), buffered from the start of the page, for
# CLS_SETTLE_MS after load; names the moved elements of every shift, for the failure message.
CLS_JS = """(settle) => new Promise(resolve => {
  let total = 0; const shifts = [];
  const name = n => !n ? '?' : n.nodeType === 3
      ? name(n.parentElement) + ' text ' + JSON.stringify(n.textContent.trim().slice(0, 30))
      : n.nodeName.toLowerCase() + (typeof n.className === 'string' && n.className
        ? '.' + n.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
  new PerformanceObserver(list => { for (const e of list.getEntries()) if (!e.hadRecentInput) {
    total += e.value;
    shifts.push(`${e.value.toFixed(4)} at ${Math.round(e.startTime)} ms: ${e.sources.map(s => name(s.node)).join(', ')}`);
  } }).observe({type: 'layout-shift', buffered: true});
  setTimeout(() => resolve({total, shifts}), settle); })"""


def _layout_shift(browser, url: str, viewport: dict, cpu_slowdown: float = 1.0) -> dict:
    """CLS of one cold load of `url` (fresh context: fonts and figures arrive late), summed
    until CLS_SETTLE_MS after ``load`` and after the web fonts are in. With `cpu_slowdown`
    > 1 Chromium runs the page's scripts, style and layout that many times slower (CDP
    Emulation.setCPUThrottlingRate): a slow phone, or a machine busy with other work."""
    context = browser.new_context(viewport=viewport)
    try:
        page = context.new_page()
        if cpu_slowdown > 1:
            context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": cpu_slowdown})
        page.goto(url, wait_until="load", timeout=120_000)
        page.evaluate("document.fonts.ready.then(() => true)")
        return page.evaluate(CLS_JS, CLS_SETTLE_MS)
    finally:
        context.close()


def test_no_layout_shift(site, browser, toc_files):
    """Cumulative layout shift below CLS_LIMIT on every page, at 1280 and 390 px, cold cache."""
    problems = []
    for doc in toc_files:
        for viewport in (DESKTOP, PHONE):
            cls = _layout_shift(browser, f"{site}/{doc}.html", viewport)
            if cls["total"] >= CLS_LIMIT:
                problems.append(f"{doc} at {viewport['width']} px: CLS {cls['total']:.3f}; shifts: {cls['shifts'][:5]}")
    assert not problems, "\n".join(problems)


# Above Lighthouse's mobile profile (4x, a mid-range phone). At 6x the notation page's
# tables moved when KaTeX's fonts arrived after the first paint (CLS 0.011-0.019); their
# columns now have fixed widths (custom.css, symbol-table), and since the first paint waits
# for the whole article (layout.html), so 6x passes on every page, on a loaded machine too.
CPU_SLOWDOWN = 6


def test_no_layout_shift_on_a_slow_cpu(site, browser, toc_files):
    """The same at 390 px with the CPU slowed down CPU_SLOWDOWN times: what comes late on a
    slow phone (or on a loaded machine: the header once moved there, 0.015, when the page's
    scripts ran after the first paint) must not move the page either."""
    problems = []
    for doc in toc_files:
        cls = _layout_shift(browser, f"{site}/{doc}.html", PHONE, cpu_slowdown=CPU_SLOWDOWN)
        if cls["total"] >= CLS_LIMIT:
            problems.append(f"{doc} at 390 px, CPU x{CPU_SLOWDOWN} slower: CLS {cls['total']:.3f}; shifts: {cls['shifts'][:5]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("alt", "src", "figure", "ok"),
    [
        ("Binder logo", "../_static/images/logo_binder.svg", False, True),
        ("Heatmap of attention weights, queries down, keys across", "../_images/abc.png", True, True),
        ("", "x.png", False, False),
        (None, "x.png", False, False),
        ("heatmap.png", "../_images/abc.png", True, False),
        ("abc.png", "../_images/abc.png", False, False),
        ("Image", "x.png", False, False),
        ("<Figure size 640x480 with 1 Axes>", "x.png", True, False),
        ("Attention heatmap", "x.png", True, False),  # a figure needs a description
    ],
)
def test_alt_text_rule(alt, src, figure, ok):
    assert (alt_problem(alt, src, figure) is None) == ok, alt_problem(alt, src, figure)


# --- search ----------------------------------------------------------------------------


def test_search_finds_positional_encoding(site, browser, axe_path):
    doc, section = POSITIONAL_ENCODING
    assert BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one(f"article section#{section}"), (
        f"{doc} has no section #{section} any more: update POSITIONAL_ENCODING"
    )
    tab = Tab(browser)
    try:
        tab.open(f"{site}/search.html?q=positional+encoding")
        results = tab.page.locator("#search-results ul.search li a")
        results.first.wait_for(state="attached", timeout=20000)
        tab.page.wait_for_function("() => !document.querySelector('#search-progress')?.textContent.startsWith('Preparing')")
        hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
        target = next((h for h in hrefs if urlparse(h).path.endswith(f"{doc}.html") and urlparse(h).fragment == section), None)
        assert target, f"no search result links to {doc}.html#{section}; results: {hrefs}"
        assert not run_axe(tab, axe_path, "search page"), run_axe(tab, axe_path, "search page")
        assert not check_requests(tab), check_requests(tab)
        tab.page.locator(f'#search-results ul.search li a[href="{target}"]').first.click()
        tab.page.wait_for_load_state("networkidle")
        heading = tab.page.locator(f"section#{section} > h2").first.inner_text()
        assert "positional encoding" in heading.lower(), f"the result opened a section titled {heading!r}"
        assert urlparse(tab.page.url).path.endswith(f"{doc}.html")
    finally:
        tab.close()


def test_every_heading_is_in_the_accessibility_tree(site, browser, toc_files):
    """What a screen reader is given: every shown heading of every page is a heading in
    Chromium's accessibility tree, at 390 px, the page as loaded (not scrolled). axe reads the
    DOM and would not see the difference: `content-visibility: auto` on a page's sections
    leaves the headings of the sections below the screen out of the tree, marked
    "notRendered" (docs/decisions.md)."""
    problems = []
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Accessibility.enable")
        seen = 0
        for doc in toc_files:
            page.goto(f"{site}/{doc}.html", wait_until="load")
            # the article's shown headings (not those in a closed answer), marked, in document order
            texts = page.evaluate("() => [...document.querySelectorAll('article :is(h1, h2, h3, h4, h5, h6)')]"
                                  ".filter(h => !h.closest('details:not([open])') && h.checkVisibility())"
                                  ".map(h => { h.dataset.axCheck = ''; return h.textContent.trim().slice(0, 40); })")
            root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
            nodes = cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-ax-check]"})["nodeIds"]
            seen += len(nodes)
            for node, text in zip(nodes, texts, strict=True):
                ax = cdp.send("Accessibility.getPartialAXTree", {"nodeId": node, "fetchRelatives": False})["nodes"][0]
                if ax.get("ignored") or ax.get("role", {}).get("value") != "heading":
                    reasons = [r["name"] for r in ax.get("ignoredReasons", [])]
                    problems.append(f"{doc}: {text!r} is not a heading in the accessibility tree "
                                    f"(role {ax.get('role', {}).get('value')}, ignored for {reasons})")
        assert seen > 100, f"only {seen} headings found on {len(toc_files)} pages: is the check looking?"
    finally:
        context.close()
    assert not problems, "\n".join(problems)


def test_the_headers_colour_switch_shows_the_dark_figures(site, browser):
    """The reader's own choice of mode (the header's colour-mode button), not the system's
    setting, decides which variant of a themed figure is shown and downloaded: on the
    heatmap page, with a light system, the dark variants are not fetched until the reader
    switches to dark; then every one of them loads and shows."""
    tab = Tab(browser)
    try:
        tab.open(f"{site}/{HEATMAP_PAGE}.html")
        assert not (found := check_images(tab)), "\n".join(found)
        page = tab.page
        for _ in range(3):  # the button cycles light -> dark -> auto
            if page.evaluate("document.documentElement.dataset.theme") == "dark":
                break
            page.locator(".theme-switch-button:visible").first.click()
        assert page.evaluate("document.documentElement.dataset.theme") == "dark", "the colour-mode button never chose dark"
        images = page.evaluate(IMAGES_JS)
        dark = [i for i in images if i["themed"] and i["shown"]]
        assert dark, f"{HEATMAP_PAGE}: no themed figure shown in dark mode"
        assert not (found := check_images(tab, "dark")), "\n".join(found)
        assert not tab.errors and not tab.failed, tab.errors + tab.failed
    finally:
        tab.close()
