"""Print a page of the built site to PDF with Chromium, once the page says it is ready.

A page of the teaching kit sets ``window.tlReady = true`` when everything it shows is
laid out: for the deck, after reveal.js's ``ready`` event (and in ``?print-pdf`` mode its
``pdf-ready`` event, fired once the deck is laid out one slide per page), after
``document.fonts.ready`` and after every image has loaded. ``print_pdf`` loads the page in
Playwright's Chromium (``book_build.chromium``), waits for that flag (up to ten minutes: a
busy machine is slow, never wrong), and only then prints. No sleep, no virtual time budget:
the old ``chromium --print-to-pdf`` printed whatever was on screen when its timer ran out,
a blank page on a loaded machine.
"""

from __future__ import annotations

import contextlib
import html
import string
from pathlib import Path

from . import chromium

TEMPLATES = Path(__file__).resolve().parent / "templates"

READY = "() => window.tlReady === true"
TIMEOUT_MS = 600_000

# What a kit page puts in its <script> to raise the flag; `extra` is a promise expression
# the page waits for as well (reveal.js's events).
READY_SCRIPT = """
window.tlReady = false;
function tlImagesLoaded() {
  return Promise.all(Array.from(document.images).map(img => img.complete ? null :
    new Promise(done => { img.addEventListener("load", done); img.addEventListener("error", done); })));
}
function tlWhenReady(extra) {
  return Promise.resolve(extra)
    .then(() => document.fonts.ready)
    .then(tlImagesLoaded)
    .then(() => document.fonts.ready)
    .then(() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done))))
    .then(() => { window.tlReady = true; document.documentElement.dataset.tlReady = "true"; });
}
"""


@contextlib.contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = chromium.launch(p)
        try:
            yield b
        finally:
            b.close()


def open_ready(b, url: str, viewport: dict):
    """A page at `url`, once it has raised its ready flag; JavaScript errors fail loudly."""
    page = b.new_page(viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load", timeout=TIMEOUT_MS)
    page.wait_for_function(READY, timeout=TIMEOUT_MS)
    if errors:
        raise RuntimeError(f"{url}: {errors}")
    return page


def pdf(page, out: Path, **options) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    page.pdf(path=str(out), print_background=True, prefer_css_page_size=True, **options)
    return out


def template(name: str, **values) -> str:
    """``tools/templates/<name>`` with ``$name`` placeholders filled (``string.Template``)."""
    return string.Template((TEMPLATES / name).read_text()).substitute(values)


def kit_page(title: str, description: str, stylesheets: list[str], style: str, body: str, script: str) -> str:
    """A page of the teaching kit (``tools/templates/page.html``): its title, description,
    stylesheet URLs, styles, body and script; the script runs after :data:`READY_SCRIPT`."""
    links = "\n".join(f'<link rel="stylesheet" href="{html.escape(url, quote=True)}">' for url in stylesheets)
    return template("page.html", title=html.escape(title), description=html.escape(description, quote=True),
                    stylesheets=links, style=style, body=body, ready_script=READY_SCRIPT, script=script)
