"""Benchmark: how long the book takes to build, and how heavy its pages are.

Everything happens in a fresh temporary copy of the repository (the tracked files, as
they are in the working tree, plus the gitignored KaTeX stylesheet and fonts in
book/_static/katex/, from `make vendor`), so
the developer's own _build/ and cache are never touched. In that copy it runs the
Makefile's own targets (`make book`, `make pdf`, with the venv and vendor steps
taken as done: `-o venv -o vendor`, VENV pointing at the Python running this), and times

* a clean HTML build: empty _build/, every page executed, strict flags;
* a rebuild with nothing changed (every page comes from jupyter-cache);
* a rebuild after one page's markdown changed (that page is re-read, nothing executes);
* a rebuild after one page's code cell changed (that page alone re-executes);
* the execution time of every page, as jupyter-cache recorded it at the clean build
  (`execution_seconds` of each cache record: kernel start-up plus every cell);
* the PDF build (`make pdf`: both editions, student then instructor, from the cache);
* the weight of every page: HTML plus every asset a real browser (Debian's chromium via
  Playwright) requests while opening the page and scrolling to its end, served the way
  the host serves it (benchmarks/serve.py: gzip for text, as GitHub Pages does): the
  bytes a first-time reader downloads, raw (decoded) and as transferred (gzip);
* the total size of the published site (_build/html, PDFs included, and without them).

Targets (issue 6, 2-core machine): clean build < 3 min, no-change rebuild < 15 s,
every page executes in < 30 s. The built copy stays until the process exits, so the
`site` section of the same run (benchmarks/bench_site.py) measures that very site.

    PYTHONPATH=$PWD/code .venv/bin/python benchmarks/run.py build
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import serve  # noqa: E402  (benchmarks/serve.py)

TARGETS = {"clean_build_s": 180.0, "noop_rebuild_s": 15.0, "page_execution_s": 30.0}
MARKDOWN_PAGE = "book/foundations.md"  # the page edited in the two incremental rebuilds
CODE_PAGE = "book/foundations.md"

# Set by run(): the built site of the temporary copy, for bench_site in the same process.
BUILT_HTML: Path | None = None


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def toc_pages(root: Path) -> list[str]:
    """Every document of _toc.yml, root first ('book/intro', ...)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def fresh_copy() -> Path:
    """The tracked files (working-tree state) and book/_static/katex in a new temporary folder."""
    dest = Path(tempfile.mkdtemp(prefix="bench-build-"))
    atexit.register(shutil.rmtree, dest, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is skipped
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    katex = ROOT / "book" / "_static" / "katex"
    if not (katex / "katex.min.css").is_file():
        raise SystemExit("book/_static/katex is missing: run `make vendor` first")
    shutil.copytree(katex, dest / "book" / "_static" / "katex")
    return dest


def make(copy: Path, target: str) -> tuple[float, str]:
    """`make TARGET` in the copy, with this interpreter's venv; (seconds, output)."""
    env = {**os.environ, "PYTHONPATH": str(copy / "code")}  # the kernel imports the copy's library
    cmd = ["make", "--no-print-directory", "-o", "venv", "-o", "vendor", target, f"VENV={sys.prefix}"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-40:])
        raise RuntimeError(f"`make {target}` failed in {copy} (exit {proc.returncode}):\n{tail}")
    return seconds, out


def executed(output: str) -> list[str]:
    """Pages a build executed (myst-nb logs 'Executing notebook' for each)."""
    return sorted(set(re.findall(r"([^\s/]+)\.(?:md|ipynb): Executing notebook", output)))


def build_step(copy: Path, target: str) -> dict:
    before = load()
    seconds, out = make(copy, target)
    return {"seconds": round(seconds, 1), "executed_pages": executed(out), "load_before": before, "load_after": load()}


def execution_times(copy: Path) -> dict[str, float]:
    """Seconds jupyter-cache recorded for each page's execution, by docname."""
    from jupyter_cache import get_cache

    config = yaml.safe_load((copy / "_config.yml").read_text())
    cache = get_cache(copy / config["execute"]["cache"])
    times = {}
    for record in cache.list_cache_records():
        doc = Path(record.uri).resolve().relative_to(copy.resolve()).with_suffix("").as_posix()
        times[doc] = round(float(record.data.get("execution_seconds", float("nan"))), 2)
    return dict(sorted(times.items()))


def edit_markdown(copy: Path, rel: str) -> None:
    page = copy / rel
    page.write_text(page.read_text() + "\nA sentence added by the build benchmark.\n")


def edit_code(copy: Path, rel: str) -> None:
    page = copy / rel
    page.write_text(page.read_text() + "\n```{code-cell} ipython3\n# a code cell added by the build benchmark\n1 + 1\n```\n")


def site_size(html: Path) -> dict:
    files = [f for f in html.rglob("*") if f.is_file()]
    pdfs = [f for f in files if f.suffix == ".pdf"]
    total = sum(f.stat().st_size for f in files)
    pdf_bytes = sum(f.stat().st_size for f in pdfs)
    return {"files": len(files), "bytes": total, "pdf_bytes": pdf_bytes, "bytes_without_pdfs": total - pdf_bytes}


def run() -> dict:
    global BUILT_HTML
    copy = fresh_copy()
    result: dict = {"copy_of": str(ROOT), "targets": TARGETS, "load_at_start": load()}

    clean = build_step(copy, "book")
    result["clean_build"] = clean
    result["page_execution_s"] = execution_times(copy)
    result["noop_rebuild"] = build_step(copy, "book")

    edit_markdown(copy, MARKDOWN_PAGE)
    result["markdown_edit_rebuild"] = {"page": MARKDOWN_PAGE, **build_step(copy, "book")}
    edit_code(copy, CODE_PAGE)
    result["code_edit_rebuild"] = {"page": CODE_PAGE, **build_step(copy, "book")}

    result["pdf_build"] = {"editions": ["student", "instructor"], **build_step(copy, "pdf")}

    html = copy / "_build" / "html"
    BUILT_HTML = html
    result["site_size"] = site_size(html)
    pages = [f"{doc}.html" for doc in toc_pages(copy)]
    with serve.serve(html) as base:
        result["page_weight"] = serve.page_weights(base, pages)
    result["load_at_end"] = load()

    slowest = max(result["page_execution_s"].items(), key=lambda kv: kv[1])
    result["pass"] = {
        "clean_build": clean["seconds"] < TARGETS["clean_build_s"],
        "noop_rebuild": result["noop_rebuild"]["seconds"] < TARGETS["noop_rebuild_s"],
        "page_execution": slowest[1] < TARGETS["page_execution_s"],
        "code_edit_executes_one_page": result["code_edit_rebuild"]["executed_pages"] == [Path(CODE_PAGE).stem],
        "markdown_edit_executes_nothing": result["markdown_edit_rebuild"]["executed_pages"] == [],
    }
    return result


def _kb(n: float) -> str:
    return f"{n / 1024:.0f} KiB"


def summary(r: dict) -> str:
    t, ok = r["targets"], r["pass"]

    def mark(b: bool) -> str:
        return "PASS" if b else "FAIL"

    ex = r["page_execution_s"]
    slowest = max(ex.items(), key=lambda kv: kv[1])
    lines = [
        f"load average at start {r['load_at_start']} (1/5/15 min), at end {r['load_at_end']}",
        f"clean HTML build: {r['clean_build']['seconds']} s, {len(r['clean_build']['executed_pages'])} pages executed"
        f" (target < {t['clean_build_s']:.0f} s) {mark(ok['clean_build'])}",
        f"no-change rebuild: {r['noop_rebuild']['seconds']} s (target < {t['noop_rebuild_s']:.0f} s) {mark(ok['noop_rebuild'])}",
        f"rebuild after a markdown edit of {r['markdown_edit_rebuild']['page']}: {r['markdown_edit_rebuild']['seconds']} s,"
        f" executed {r['markdown_edit_rebuild']['executed_pages'] or 'nothing'}",
        f"rebuild after a code-cell edit of {r['code_edit_rebuild']['page']}: {r['code_edit_rebuild']['seconds']} s,"
        f" executed {r['code_edit_rebuild']['executed_pages']}",
        f"page execution (jupyter-cache): slowest {slowest[0]} {slowest[1]} s, total {sum(ex.values()):.1f} s"
        f" (target < {t['page_execution_s']:.0f} s each) {mark(ok['page_execution'])}",
        "  " + ", ".join(f"{Path(d).name} {s}" for d, s in ex.items()),
        f"PDF build (make pdf, {' + '.join(r['pdf_build']['editions'])}): {r['pdf_build']['seconds']} s",
    ]
    s = r["site_size"]
    lines.append(f"site: {s['files']} files, {s['bytes'] / 1e6:.1f} MB ({s['bytes_without_pdfs'] / 1e6:.1f} MB without the PDFs)")
    w = r["page_weight"]
    lines.append("page weight (first visit, all assets; transferred with gzip / raw):")
    for page, p in w["pages"].items():
        lines.append(f"  {page:38s} {_kb(p['transfer_bytes']):>9s} / {_kb(p['raw_bytes']):>9s}, {p['requests']} requests")
    lines.append(f"  median {_kb(w['median_transfer_bytes'])} transferred, heaviest {w['heaviest']}")
    return "\n".join(lines)


if __name__ == "__main__":
    import json

    res = run()
    print(json.dumps(res, indent=2))
    print(summary(res))
