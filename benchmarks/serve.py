"""Serve a built site on 127.0.0.1 the way a static host does (benchmarks/bench_site.py).

GitHub Pages, where the book is published (.github/workflows/publish.yml), compresses
text responses with gzip (``Content-Encoding: gzip``, ``Vary: Accept-Encoding``) and
sends ``Cache-Control: max-age=600`` with every file. Python's ``http.server`` does
neither, and Lighthouse would then measure a site nobody is served. This server does
both, with threads so a browser's parallel requests are not queued behind each other.

    python -m benchmarks.serve _build/html 8000      # for a person to look at
    with serve(Path("_build/html")) as base: ...      # from Python: base is "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import io
import socket
import sys
import threading
from pathlib import Path

# What a static host compresses: text, not already-compressed images or fonts.
COMPRESSIBLE = (
    "text/",
    "application/javascript",
    "application/json",
    "application/xml",
    "image/svg+xml",
    "application/x-font-ttf",
    "font/ttf",
    "font/otf",
)
CACHE_CONTROL = "max-age=600"  # GitHub Pages' value


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "application/javascript",
        ".mjs": "application/javascript",
        ".woff": "font/woff",
        ".woff2": "font/woff2",
        ".svg": "image/svg+xml",
        ".json": "application/json",
        ".txt": "text/plain",
    }
    _gzip_cache: dict[tuple[str, float], bytes] = {}
    _lock = threading.Lock()

    def log_message(self, format, *args):  # quiet: the benchmark prints its own summary
        pass

    def end_headers(self):
        self.send_header("Cache-Control", CACHE_CONTROL)
        super().end_headers()

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            if not self.path.split("?")[0].endswith("/"):
                return super().send_head()  # the redirect to "dir/"
            path = path / "index.html"
        ctype = self.guess_type(str(path))
        wants_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (path.is_file() and wants_gzip and ctype.startswith(COMPRESSIBLE)):
            return super().send_head()
        stat = path.stat()
        key = (str(path), stat.st_mtime)
        with self._lock:
            body = self._gzip_cache.get(key)
        if body is None:
            body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
            with self._lock:
                self._gzip_cache[key] = body
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(stat.st_mtime))
        self.end_headers()
        return io.BytesIO(body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(root: Path, port: int | None = None):
    """Serve ``root`` on 127.0.0.1 in a background thread; yields the base URL."""
    handler = functools.partial(Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port or free_port()), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# The project's one Chromium launch (code/build/book_build/chromium.py): executable and flags.
from book_build import chromium


def _kind(ctype: str, url: str) -> str:
    if "html" in ctype:
        return "html"
    if "css" in ctype:
        return "css"
    if "javascript" in ctype:
        return "js"
    if ctype.startswith("font/") or url.split("?")[0].endswith((".woff", ".woff2", ".ttf", ".otf")):
        return "font"
    if ctype.startswith("image/"):
        return "image"
    return "other"


def page_weights(base: str, pages: list[str], top: int = 5) -> dict:
    """What a first-time reader downloads for each page: every response the browser
    gets while opening the page and scrolling to its end (lazy images, math fonts and
    components included), in a fresh browser context (empty cache).

    For each page: requests, raw_bytes (decoded bodies), transfer_bytes (bodies as sent:
    gzip-compressed where the server compressed them), bytes by kind, the heaviest
    resources. Headers are not counted.
    """
    from playwright.sync_api import sync_playwright

    result: dict = {"pages": {}}
    with sync_playwright() as p:
        browser = chromium.launch(p)
        try:
            for page_path in pages:
                context = browser.new_context(viewport={"width": 1350, "height": 940})
                page = context.new_page()
                responses = []
                page.on("response", lambda r: responses.append(r))
                page.goto(f"{base}/{page_path}", wait_until="networkidle")
                page.evaluate(
                    "async () => { for (let y = 0; y < document.body.scrollHeight; y += 600)"
                    " { window.scrollTo(0, y); await new Promise(r => setTimeout(r, 30)); } }"
                )
                page.wait_for_load_state("networkidle")
                rows = []
                for r in responses:
                    if r.url.startswith("data:") or r.status in (301, 302, 304):
                        continue
                    try:
                        body = r.body()
                    except Exception:  # noqa: BLE001  (a response without a body)
                        continue
                    headers = r.all_headers()
                    sent = int(headers["content-length"]) if "content-length" in headers else len(body)
                    ctype = headers.get("content-type", "")
                    rows.append({"url": r.url[len(base):], "kind": _kind(ctype, r.url), "raw": len(body), "transfer": sent,
                                 "gzip": headers.get("content-encoding") == "gzip"})
                context.close()
                by_kind: dict[str, int] = {}
                for row in rows:
                    by_kind[row["kind"]] = by_kind.get(row["kind"], 0) + row["transfer"]
                rows.sort(key=lambda row: -row["transfer"])
                result["pages"][page_path] = {
                    "requests": len(rows),
                    "raw_bytes": sum(row["raw"] for row in rows),
                    "transfer_bytes": sum(row["transfer"] for row in rows),
                    "transfer_bytes_by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
                    "heaviest": [{k: row[k] for k in ("url", "transfer", "raw")} for row in rows[:top]],
                }
        finally:
            browser.close()
    sizes = sorted(v["transfer_bytes"] for v in result["pages"].values())
    result["median_transfer_bytes"] = sizes[len(sizes) // 2]
    result["median_raw_bytes"] = sorted(v["raw_bytes"] for v in result["pages"].values())[len(sizes) // 2]
    result["heaviest"] = max(result["pages"], key=lambda k: result["pages"][k]["transfer_bytes"])
    return result


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path("_build/html")
    port = int(argv[1]) if len(argv) > 1 else 8000
    with serve(root, port) as base:
        print(f"serving {root} at {base}/ (gzip, {CACHE_CONTROL}); Ctrl-C stops", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
