"""Benchmark: how long the book takes to build, and how heavy its pages are.

Everything happens in a fresh temporary copy of the repository (the tracked files, as
they are in the working tree, plus the gitignored KaTeX stylesheet and fonts in
book/_static/katex/ and a link to the npm packages of node_modules/, from `make vendor`), so
the developer's own _build/ and cache are never touched. In that copy it runs the
Makefile's own targets (`make book`, `make pdf`, with the venv and vendor steps
taken as done: `-o venv -o vendor`, VENV pointing at the Python running this), and times

* a clean HTML build: empty _build/, every page executed, strict flags; its wall time,
  the CPU time (user + system) of the whole process tree (make, Sphinx, every kernel, Node),
  and the time of each phase read from the build's log as it streams: the pages' execution
  (code/build/book_build/execute_pages.py, pages side by side), Sphinx reading the sources (pages come from
  the cache), Sphinx writing the HTML, the LMS export;
* a rebuild with nothing changed (every page comes from jupyter-cache);
* a rebuild after one page's markdown changed (that page is re-read, nothing executes);
* a rebuild after one page's code cell changed (that page alone re-executes);
* the execution time of every page, as jupyter-cache recorded it at the clean build
  (`execution_seconds` of each cache record: kernel start-up plus every cell; and the
  kernel's CPU seconds, `cpu_seconds`, where code/build/book_build/execute_pages.py executed the page);
* the PDF build (`make pdf`: both editions, student then instructor, from the cache);
* the weight of every page: HTML plus every asset a real browser (Debian's chromium via
  Playwright) requests while opening the page and scrolling to its end, served the way
  the host serves it (benchmarks/serve.py: gzip for text, as GitHub Pages does): the
  bytes a first-time reader downloads, raw (decoded) and as transferred (gzip);
* the total size of the published site (_build/html, PDFs included, and without them).

Targets (issue 6, 2-core machine): clean build < 3 min, no-change rebuild < 15 s,
every page executes in < 30 s. With BENCH_BASELINE=<git revision> the clean build is also
timed for that revision, in a copy of its own, just before this one: a before/after pair
from one run. The built copy stays until the process exits, so the `site` section of the
same run (benchmarks/bench_site.py) measures that very site.

    .venv/bin/python -m benchmarks.run build
"""

from __future__ import annotations

import atexit
import io
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
from . import serve
from .common import load, main, toc_pages

TARGETS = {"clean_build_s": 180.0, "noop_rebuild_s": 15.0, "page_execution_s": 30.0}
BASELINE = os.environ.get("BENCH_BASELINE")  # a git revision to time a clean build of, beside this one

# Phases of `make book`, each from the first line of the log that matches its start to the
# next phase's start (or the end). A phase whose start never shows is left out.
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Sphinx colours its log even into a pipe
PHASES = [
    ("cache_guard", re.compile(r"book_build\.cache_guard")),
    ("execute_pages", re.compile(r"book_build\.execute_pages")),
    ("sphinx_setup", re.compile(r"jupyter-book build|Running Jupyter-Book")),
    ("sphinx_read", re.compile(r"^reading sources")),
    ("sphinx_write", re.compile(r"^preparing documents")),  # then copying assets, writing output
    ("sphinx_finish", re.compile(r"^(generating indices|dumping search index|dumping object inventory)")),
    ("lms_export", re.compile(r"transformer_classroom\.lms")),
]
MARKDOWN_PAGE = "book/foundations.md"  # the page edited in the two incremental rebuilds
CODE_PAGE = "book/foundations.md"

# Set by run(): the built site of the temporary copy, for bench_site in the same process.
BUILT_HTML: Path | None = None


def fresh_copy(revision: str | None = None) -> Path:
    """The tracked files and book/_static/katex in a new temporary folder: as they are in the
    working tree, or as they were at git ``revision``."""
    dest = Path(tempfile.mkdtemp(prefix="bench-build-"))
    atexit.register(shutil.rmtree, dest, ignore_errors=True)
    if revision is not None:
        archive = subprocess.run(["git", "archive", "--format=tar", revision], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
    else:
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
    # The npm packages of the build (code/build/book_build/speed/first_paint.py's Lightning CSS, PurgeCSS,
    # subset-font), installed by `make vendor`, which the copy's make skips (-o vendor).
    (dest / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    return dest


def _children_cpu() -> float:
    """User + system CPU seconds of every finished descendant of this process, so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def phases(lines: list[tuple[float, str]], end: float) -> dict[str, float]:
    """Seconds of each of :data:`PHASES`, from the log's ``(seconds since start, line)``."""
    starts: list[tuple[str, float]] = []
    for name, pattern in PHASES:
        hit = next((t for t, line in lines if pattern.search(line)), None)
        if hit is not None:
            starts.append((name, hit))
    starts.sort(key=lambda s: s[1])
    out = {}
    for (name, t0), nxt in zip(starts, starts[1:] + [("end", end)]):
        out[name] = round(nxt[1] - t0, 1)
    return out


def make(copy: Path, target: str) -> dict:
    """`make TARGET` in the copy, with this interpreter's venv.

    Returns the wall seconds, the CPU seconds of the whole process tree (every process the
    build starts is waited for, so RUSAGE_CHILDREN counts them all: make, Sphinx, kernels,
    Node), the phases of :func:`phases` and the output.
    """
    env = {**os.environ, "PYTHONPATH": str(copy / "code")}  # the kernel imports the copy's library
    cmd = ["make", "--no-print-directory", "-o", "venv", "-o", "vendor", target, f"VENV={sys.prefix}"]
    cpu0 = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [(time.perf_counter() - start, ANSI.sub("", line.rstrip("\n"))) for line in proc.stdout]  # timed as they arrive
    proc.wait()
    seconds = time.perf_counter() - start
    out = "\n".join(line for _, line in lines)
    if proc.returncode != 0:
        tail = "\n".join(out.splitlines()[-40:])
        raise RuntimeError(f"`make {target}` failed in {copy} (exit {proc.returncode}):\n{tail}")
    return {"seconds": seconds, "cpu_seconds": _children_cpu() - cpu0, "phases": phases(lines, seconds), "output": out}


def executed(output: str) -> list[str]:
    """Pages a build executed (myst-nb logs 'Executing notebook' for each)."""
    return sorted(set(re.findall(r"([^\s/]+)\.(?:md|ipynb): Executing notebook", output)))


def executed_ahead(output: str) -> list[str]:
    """Pages code/build/book_build/execute_pages.py executed before Sphinx ran."""
    return sorted(set(re.findall(r"execute_pages: book/([^\s/]+)\.md executed", output)))


def build_step(copy: Path, target: str) -> dict:
    before = load()
    m = make(copy, target)
    return {"seconds": round(m["seconds"], 1), "cpu_seconds": round(m["cpu_seconds"], 1), "phases": m["phases"],
            "executed_ahead": executed_ahead(m["output"]), "executed_pages": executed(m["output"]),
            "load_before": before, "load_after": load()}


def execution_times(copy: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds jupyter-cache recorded for each page's execution, by docname, and the
    kernel's CPU seconds where code/build/book_build/execute_pages.py recorded them."""
    from jupyter_cache import get_cache

    config = yaml.safe_load((copy / "_config.yml").read_text())
    cache = get_cache(copy / config["execute"]["cache"])
    times, cpu = {}, {}
    for record in cache.list_cache_records():
        doc = Path(record.uri).resolve().relative_to(copy.resolve()).with_suffix("").as_posix()
        times[doc] = round(float(record.data.get("execution_seconds", float("nan"))), 2)
        if "cpu_seconds" in record.data:
            cpu[doc] = round(float(record.data["cpu_seconds"]), 2)
    return dict(sorted(times.items())), dict(sorted(cpu.items()))


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
    result: dict = {"copy_of": str(ROOT), "targets": TARGETS, "load_at_start": load(), "cores": os.cpu_count()}

    if BASELINE:
        base = fresh_copy(BASELINE)
        result["baseline_clean_build"] = {"revision": BASELINE, **build_step(base, "book")}
        shutil.rmtree(base, ignore_errors=True)
    clean = build_step(copy, "book")
    result["clean_build"] = clean
    result["page_execution_s"], result["page_cpu_s"] = execution_times(copy)
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
        "clean_build_sphinx_executes_nothing": clean["executed_pages"] == [],  # code/build/book_build/execute_pages.py did it all
        "noop_rebuild": result["noop_rebuild"]["seconds"] < TARGETS["noop_rebuild_s"],
        "page_execution": slowest[1] < TARGETS["page_execution_s"],
        # executed by code/build/book_build/execute_pages.py before Sphinx, or by Sphinx itself (a page the first missed)
        "code_edit_executes_one_page": sorted({*result["code_edit_rebuild"]["executed_ahead"],
                                               *result["code_edit_rebuild"]["executed_pages"]}) == [Path(CODE_PAGE).stem],
        "markdown_edit_executes_nothing": not (result["markdown_edit_rebuild"]["executed_ahead"]
                                               or result["markdown_edit_rebuild"]["executed_pages"]),
    }
    return result


README_START = "<!-- build figures: generated from benchmarks/results.json by `python -m benchmarks.bench_build --readme` -->"
README_END = "<!-- end of the build figures -->"


def readme_rows(r: dict) -> str:
    """The build's rows of docs/performance.md's table of targets, from one run's result ``r`` (the
    ``build`` section of benchmarks/results.json); tests/site/test_readme.py checks them."""
    t, ok = r["targets"], r["pass"]
    clean, ex, cpu = r["clean_build"], r["page_execution_s"], r.get("page_cpu_s", {})
    slowest = max(ex, key=ex.get)
    load = f"load average {r['load_at_start'][0]:.1f} at the start, {r['load_at_end'][0]:.1f} at the end"
    rows = [
        f"| clean HTML build < {t['clean_build_s'] / 60:.0f} min | {clean['seconds']:.0f} s wall, {clean['cpu_seconds']:.0f} s CPU"
        f" ({len(clean['executed_ahead'])} pages executed, two at a time, in {clean['phases'].get('execute_pages', 0):.0f} s;"
        f" {r['date'][:10]}, {load}) | {'pass' if ok['clean_build'] else 'miss'} |",
        f"| no-change rebuild < {t['noop_rebuild_s']:.0f} s | {r['noop_rebuild']['seconds']} s"
        f" ({r['markdown_edit_rebuild']['seconds']} s after a markdown edit, {r['code_edit_rebuild']['seconds']} s after a"
        f" code-cell edit, which executes that page alone) | {'pass' if ok['noop_rebuild'] else 'miss'} |",
        f"| every page executes in < {t['page_execution_s']:.0f} s | slowest: `{Path(slowest).name}` {ex[slowest]:.0f} s"
        f" ({cpu.get(slowest, float('nan')):.0f} s of kernel CPU; all pages {sum(ex.values()):.0f} s) |"
        f" {'pass' if ok['page_execution'] else 'miss'} |",
        f"| PDF build | {r['pdf_build']['seconds']:.0f} s for both editions, from the cache | (no target) |",
    ]
    return "\n".join([README_START, "", "| build target | measured | |", "|---|---|---|", *rows, "", README_END])


def _kb(n: float) -> str:
    return f"{n / 1024:.0f} KiB"


def summary(r: dict) -> str:
    t, ok = r["targets"], r["pass"]

    def mark(b: bool) -> str:
        return "PASS" if b else "FAIL"

    ex, cpu = r["page_execution_s"], r.get("page_cpu_s", {})
    slowest = max(ex.items(), key=lambda kv: kv[1])

    def ran(b: dict) -> list[str]:
        return sorted(set(b["executed_pages"]) | set(b.get("executed_ahead", [])))

    def build(b: dict) -> str:
        return (f"{b['seconds']} s wall, {b.get('cpu_seconds', '?')} s CPU, {len(ran(b))} pages executed, load {b['load_before']} -> {b['load_after']}"
                f"\n    phases: " + ", ".join(f"{k} {v} s" for k, v in b.get("phases", {}).items()))

    lines = [f"load average at start {r['load_at_start']} (1/5/15 min), at end {r['load_at_end']}, {r.get('cores', '?')} cores"]
    if "baseline_clean_build" in r:
        lines.append(f"clean HTML build of {r['baseline_clean_build']['revision']} (before): {build(r['baseline_clean_build'])}")
    lines += [
        f"clean HTML build: {build(r['clean_build'])} (target < {t['clean_build_s']:.0f} s) {mark(ok['clean_build'])}",
        f"no-change rebuild: {r['noop_rebuild']['seconds']} s (target < {t['noop_rebuild_s']:.0f} s) {mark(ok['noop_rebuild'])}",
        f"rebuild after a markdown edit of {r['markdown_edit_rebuild']['page']}: {r['markdown_edit_rebuild']['seconds']} s,"
        f" executed {ran(r['markdown_edit_rebuild']) or 'nothing'}",
        f"rebuild after a code-cell edit of {r['code_edit_rebuild']['page']}: {r['code_edit_rebuild']['seconds']} s,"
        f" executed {ran(r['code_edit_rebuild'])}",
        f"page execution (jupyter-cache): slowest {slowest[0]} {slowest[1]} s, total {sum(ex.values()):.1f} s"
        f" (target < {t['page_execution_s']:.0f} s each) {mark(ok['page_execution'])}",
        "  wall (kernel CPU) s: " + ", ".join(f"{Path(d).name} {s}" + (f" ({cpu[d]})" if d in cpu else "") for d, s in ex.items()),
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
    if sys.argv[1:] == ["--readme"]:  # docs/performance.md's rows, from the committed results
        import json

        print(readme_rows(json.loads((HERE / "results.json").read_text())["sections"]["build"]))
        raise SystemExit
    main(run, summary)
