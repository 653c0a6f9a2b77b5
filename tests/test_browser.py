"""The built site in a real browser (Debian's chromium driven by Playwright), offline.

The site is served from _build/html on 127.0.0.1 by a fixture; every page of _toc.yml is
opened and every request recorded: none may leave 127.0.0.1, and no page may log a
console error. MathJax must typeset from the site's own /mathjax/, and quiz answers and
solutions must stay hidden until their dropdown is clicked.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import urlopen

import pytest
from bs4 import BeautifulSoup
from conftest import html_page

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(html_dir):
    """Base URL of _build/html served by http.server; stopped after the module."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(html_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urlopen(base + "/index.html", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("http.server did not start")
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.fail("Debian chromium is missing: run `make system-deps`", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


class Visit:
    """A page opened with every request, failed request and console error recorded."""

    def __init__(self, browser, url: str):
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url, wait_until="networkidle")

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser):
    opened = []

    def _open(url):
        v = Visit(browser, url)
        opened.append(v)
        return v

    yield _open
    for v in opened:
        v.close()


def test_every_page_is_offline_and_clean(site, visit, toc_files):
    problems = []
    for doc in toc_files:
        v = visit(f"{site}/{doc}.html")
        foreign = sorted({u for u in v.requests if urlparse(u).hostname not in ("127.0.0.1", None) and not u.startswith("data:")})
        if foreign:
            problems.append(f"{doc}: requests to other hosts: {foreign}")
        if v.failed:
            problems.append(f"{doc}: failed requests: {v.failed}")
        if v.errors:
            problems.append(f"{doc}: console errors: {v.errors}")
        if any("thebe" in u for u in v.requests):
            problems.append(f"{doc}: loads sphinx-thebe, which is disabled")
        broken = v.page.eval_on_selector_all("article img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        if broken:
            problems.append(f"{doc}: images that did not load: {broken}")
        v.close()
    assert not problems, "\n".join(problems)


def _math_pages(toc_files) -> list[str]:
    return [doc for doc in toc_files if BeautifulSoup(html_page(doc).read_text(), "html.parser").select("article .math")]


def test_mathjax_typesets_from_the_site(site, visit, toc_files):
    pages = _math_pages(toc_files)
    assert pages, "no page with math ($...$ or $$...$$) in the book"
    for doc in pages:
        v = visit(f"{site}/{doc}.html")
        # the first formula may sit in a closed dropdown: wait for any typeset one, visible or not
        v.page.wait_for_selector("mjx-container", state="attached", timeout=20000)
        assert any(urlparse(u).path.startswith("/mathjax/") for u in v.requests), f"{doc}: MathJax not loaded from /mathjax/"
        assert v.page.locator("mjx-merror").count() == 0, f"{doc}: MathJax reports errors"
        raw = v.page.evaluate(
            "() => { const a = document.querySelector('article').cloneNode(true);"
            " a.querySelectorAll('pre, code, script, mjx-container, mjx-assistive-mml').forEach(e => e.remove());"
            " return a.innerText; }"
        )
        for delimiter in ("$$", "\\(", "\\["):
            assert delimiter not in raw, f"{doc}: untypeset math ({delimiter}) left in the text"


def _hidden_boxes(toc_files):
    found = []
    for doc in toc_files:
        art = BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article")
        n_answers, n_solutions = len(art.select(".quiz-answer")), len(art.select("div.solution"))
        if n_answers or n_solutions:
            found.append((doc, n_answers, n_solutions))
    return found


def test_answers_and_solutions_open_only_when_clicked(site, visit, toc_files):
    pages = _hidden_boxes(toc_files)
    assert pages, "no quiz answer or exercise solution anywhere on the site"
    for doc, _, _ in pages:
        v = visit(f"{site}/{doc}.html")
        boxes = v.page.locator("article .quiz-answer, article div.solution")
        for i in range(boxes.count()):
            box = boxes.nth(i)
            body = box.locator(":scope > :not(.admonition-title):not(button)").first
            box.scroll_into_view_if_needed()
            assert not body.is_visible(), f"{doc}: box {i} is visible before it is clicked"
            box.locator(".admonition-title").first.click()
            body.wait_for(state="visible", timeout=5000)
            assert body.is_visible(), f"{doc}: box {i} did not open when clicked"
        assert not v.errors, f"{doc}: console errors: {v.errors}"
