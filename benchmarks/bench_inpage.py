"""Benchmark: the two models that run in the pages (charlm.js and minilm.js on nn.js).

Served from the built site (_build/html, `make book` first) by `python -m http.server` on
127.0.0.1, as a reader testing locally would, in Debian's chromium (code/build/book_build/chromium.py),
with a cold cache (a fresh browser context per measurement). Targets (on this 2-core CPU):

* the language model writes at least 20 characters a second (the page's own rate,
  ``charlm.lastRate``, over a 200-character run, median of 3 runs);
* the real model: the first head view within 5 s of the click (download, decoding the
  weights, tokenizing and the forward pass), a new sentence redrawn within 1 s (median of
  the sentences below, each click to head view), the download at most 30 MB.

Also recorded: the language model's load time and bytes, the per-sentence time of
``minilm.run`` for each sentence, and the bytes each page transfers before any click.

    .venv/bin/python -m benchmarks.bench_inpage      # or: python -m benchmarks.run inpage
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
CHARS_TARGET = 20.0
FIRST_VIEW_TARGET_S = 5.0
REDRAW_TARGET_S = 1.0
DOWNLOAD_TARGET = 30_000_000
SENTENCES = ["The trophy didn't fit in the suitcase because it was too big.", "A man is playing a guitar.",
             "Attention lets every token look at every other token in one step, whatever the distance."]


def _serve():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                               str(HTML)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urlopen(base + "/index.html", timeout=1)
            return server, base
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the site did not come up")


def _page(browser, url, ready):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    sizes = []
    page.on("requestfinished", lambda r: sizes.append(r.sizes()["responseBodySize"]))
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector(ready)
    return context, page, sizes


def run() -> dict:
    from book_build import chromium
    from playwright.sync_api import sync_playwright

    if not (HTML / "interactive" / "charlm" / "charlm.bin").exists():
        raise RuntimeError("_build/html has no exported models: run `make book` first")
    server, base = _serve()
    out = {}
    try:
        with sync_playwright() as p:
            browser = chromium.launch(p)
            rates, loads = [], []
            for _ in range(3):
                context, page, sizes = _page(browser, f"{base}/book/language_model.html", "div.charlm:not([hidden])")
                out["charlm_page_bytes_before_click"] = sum(sizes)
                page.fill("#charlm0-prompt", "The ")
                start = time.perf_counter()
                page.click("button.charlm-write")
                page.wait_for_function("() => window.transformerLessons.charlm.vocab !== null", timeout=120_000)
                loads.append(time.perf_counter() - start)
                page.wait_for_function("() => document.querySelector('.charlm-message').textContent.startsWith('Wrote')",
                                       timeout=300_000)
                rates.append(page.evaluate("() => window.transformerLessons.charlm.lastRate"))
                context.close()
            out.update(charlm_chars_per_second=statistics.median(rates), charlm_rates=rates,
                       charlm_load_s=statistics.median(loads),
                       charlm_bytes=(HTML / "interactive/charlm/charlm.bin").stat().st_size
                       + (HTML / "interactive/charlm/charlm.json").stat().st_size)

            context, page, sizes = _page(browser, f"{base}/book/real_model.html", "div.minilm:not([hidden])")
            out["minilm_page_bytes_before_click"] = sum(sizes)
            before = len(sizes)
            page.fill("#minilm0-a", SENTENCES[0])
            page.fill("#minilm0-b", "")
            start = time.perf_counter()
            page.click("button.minilm-run")
            page.wait_for_selector("div.minilm div.headview.headview-ready", timeout=300_000)
            out["minilm_first_view_s"] = time.perf_counter() - start
            out["minilm_download_bytes"] = sum(sizes[before:])
            redraws, runs = [], []
            for s in SENTENCES:
                page.fill("#minilm0-a", s)
                start = time.perf_counter()
                page.click("button.minilm-run")
                page.wait_for_function("() => !document.querySelector('button.minilm-run').disabled", timeout=120_000)
                redraws.append(time.perf_counter() - start)
                runs.append(page.evaluate("(s) => { const t = performance.now(); return window.transformerLessons.minilm"
                                          ".run(s).then(() => (performance.now() - t) / 1000); }", s))
            out.update(minilm_redraw_s=statistics.median(redraws), minilm_redraws_s=redraws, minilm_run_s=runs)
            context.close()
            browser.close()
    finally:
        server.terminate()
        server.wait()
    return out


def summary(r: dict) -> str:
    ok = lambda b: "PASS" if b else "FAIL"  # noqa: E731
    return "\n".join([
        f"language model: {r['charlm_chars_per_second']:.0f} characters/s (target >= {CHARS_TARGET:.0f}) "
        f"{ok(r['charlm_chars_per_second'] >= CHARS_TARGET)}; load {r['charlm_load_s']:.2f} s, "
        f"{r['charlm_bytes'] / 1024:.0f} KiB; page before the click {r['charlm_page_bytes_before_click'] / 1024:.0f} KiB",
        f"real model: first head view {r['minilm_first_view_s']:.1f} s after the click (target <= {FIRST_VIEW_TARGET_S:.0f}) "
        f"{ok(r['minilm_first_view_s'] <= FIRST_VIEW_TARGET_S)}; new sentence {r['minilm_redraw_s']:.2f} s "
        f"(target <= {REDRAW_TARGET_S:.0f}) {ok(r['minilm_redraw_s'] <= REDRAW_TARGET_S)}; minilm.run "
        + ", ".join(f"{t:.2f}" for t in r["minilm_run_s"]) + " s",
        f"real model download {r['minilm_download_bytes'] / 1e6:.1f} MB (target <= 30) "
        f"{ok(r['minilm_download_bytes'] <= DOWNLOAD_TARGET)}; page before the click "
        f"{r['minilm_page_bytes_before_click'] / 1024:.0f} KiB",
    ])


if __name__ == "__main__":
    result = run()
    print(summary(result))
