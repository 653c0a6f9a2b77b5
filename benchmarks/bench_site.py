"""Benchmark: the published site in a browser, beside a default Jupyter Book.

The site built by the `build` section of the same run (its fresh temporary copy; when
this section runs alone: the repository's _build/html, from `make book`) is served on
127.0.0.1 the way the host serves it (benchmarks/serve.py: gzip for text, cache
headers). Lighthouse (npm, pinned in benchmarks/package.json, run with Debian's
chromium) audits three representative pages, mobile (its default: simulated slow 4G and
a 4x slower CPU) and desktop (--preset=desktop): performance, accessibility, best
practices and SEO.

Beside it, in the same run, the book `jupyter-book create` makes (the template, same
jupyter-book version, built with its own defaults) is served and measured the same way
(Lighthouse on three pages, the weight of each page), and our figures are given as
ratios to it.

Targets (issue 6): performance >= 0.95 desktop and >= 0.85 mobile, accessibility, best
practices and SEO = 1.00 on every measured page, each at least the default book's.

    PYTHONPATH=$PWD/code .venv/bin/python benchmarks/run.py site     # after `make book`
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import serve  # noqa: E402  (benchmarks/serve.py)

LIGHTHOUSE = HERE / "node_modules" / ".bin" / "lighthouse"
CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]
CHROME_FLAGS = "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage " + " ".join(
    f for f in serve.LAUNCH_ARGS if f not in ("--no-sandbox", "--disable-gpu")
)
FORM_FACTORS = ["mobile", "desktop"]
TARGETS = {
    "performance": {"mobile": 0.85, "desktop": 0.95},
    "accessibility": {"mobile": 1.0, "desktop": 1.0},
    "best-practices": {"mobile": 1.0, "desktop": 1.0},
    "seo": {"mobile": 1.0, "desktop": 1.0},
}
# Three representative pages (role -> page), ours and the default book's counterpart.
OUR_PAGES = {
    "intro": "book/intro.html",  # the landing page: prose, launch buttons
    "math_figures": "book/foundations.html",  # equations (MathJax) and heatmaps (PNG figures)
    "code": "book/live_coding.html",  # long code cells and outputs
}
DEFAULT_PAGES = {
    "intro": "intro.html",
    "math_figures": "notebooks.html",  # its page with a figure (the template has no math)
    "code": "markdown-notebooks.html",
}
METRICS = ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift", "speed-index"]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def our_site() -> Path:
    """The site the `build` section built in this run, else the repository's _build/html."""
    built = getattr(sys.modules.get("bench_build"), "BUILT_HTML", None)
    html = Path(built) if built else ROOT / "_build" / "html"
    if not (html / "index.html").exists():
        raise SystemExit(f"{html} is missing: run `make book` first (or the `build` section in the same run)")
    return html


def default_book() -> tuple[Path, float]:
    """`jupyter-book create` in a temporary folder, built with its defaults; (html, seconds).

    One change, so that it is measured as a reader would get it: Sphinx points MathJax at
    a CDN (jsdelivr, mathjax@3, tex-mml-chtml.js), which this offline machine cannot
    reach, and a failed request would be a console error (best practices) and would hide
    1.2 MB the reader downloads. The very same file is served from the site instead
    (npm's mathjax, node_modules/mathjax/es5, the version the CDN's @3 resolves to).
    """
    tmp = Path(tempfile.mkdtemp(prefix="bench-default-book-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    book = tmp / "book"
    subprocess.run([str(jb), "create", str(book)], check=True, capture_output=True)
    es5 = ROOT / "node_modules" / "mathjax" / "es5"
    if not (es5 / "tex-mml-chtml.js").exists():
        raise SystemExit(f"{es5} is missing: run `npm ci` (make vendor)")
    shutil.copytree(es5, book / "_extra" / "mathjax")
    with (book / "_config.yml").open("a") as config:
        config.write("\n# bench_site.py: MathJax from the site instead of the CDN (same file)\n"
                     "sphinx:\n  config:\n    html_extra_path: [\"_extra\"]\n"
                     "    mathjax_path: ../mathjax/tex-mml-chtml.js\n")
    start = time.perf_counter()
    proc = subprocess.run([str(jb), "build", str(book), "--builder", "html"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the default book did not build:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return book / "_build" / "html", seconds


def lighthouse(url: str, form_factor: str, out_dir: Path) -> dict:
    """One Lighthouse run: category scores, the failing audits of each, key metrics."""
    report = out_dir / f"lh-{abs(hash((url, form_factor)))}.json"
    cmd = [
        str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={report}",
        f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={CHROME_FLAGS}",
    ]
    if form_factor == "desktop":
        cmd.append("--preset=desktop")
    env = {**os.environ, "CHROME_PATH": serve.CHROMIUM}
    before = load()
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    if proc.returncode != 0 or not report.exists():
        raise RuntimeError(f"lighthouse failed on {url} ({form_factor}):\n{proc.stderr[-3000:]}")
    lhr = json.loads(report.read_text())
    audits = lhr["audits"]
    failing = {}
    for cat in CATEGORIES:
        bad = []
        for ref in lhr["categories"][cat]["auditRefs"]:
            a = audits[ref["id"]]
            if ref.get("weight", 0) > 0 and a.get("score") is not None and a["score"] < 1:
                bad.append({"id": ref["id"], "score": a["score"], "weight": ref["weight"],
                            "display": a.get("displayValue", "")})
        failing[cat] = bad
    return {
        "scores": {cat: lhr["categories"][cat]["score"] for cat in CATEGORIES},
        "metrics": {m: round(audits[m]["numericValue"], 3) for m in METRICS if m in audits},
        "total_byte_weight": audits.get("total-byte-weight", {}).get("numericValue"),
        "failing_audits": failing,
        "run_warnings": lhr.get("runWarnings", []),
        "seconds": round(time.perf_counter() - start, 1),
        "load_before": before,
    }


def measure(html: Path, pages: dict[str, str], out_dir: Path) -> dict:
    result = {"lighthouse": {}, "page_weight": None}
    with serve.serve(html) as base:
        for role, page in pages.items():
            result["lighthouse"][role] = {"page": page}
            for ff in FORM_FACTORS:
                result["lighthouse"][role][ff] = lighthouse(f"{base}/{page}", ff, out_dir)
        result["page_weight"] = serve.page_weights(base, list(pages.values()))
    return result


def _check(ours: dict, default: dict) -> dict:
    """Pass/fail per target, and per page and form factor the scores' ratio to the default book."""
    checks, ratios = [], {}
    for role in OUR_PAGES:
        ratios[role] = {}
        for ff in FORM_FACTORS:
            o = ours["lighthouse"][role][ff]["scores"]
            d = default["lighthouse"][role][ff]["scores"]
            ratios[role][ff] = {c: (round(o[c] / d[c], 3) if d[c] else None) for c in CATEGORIES}
            for c in CATEGORIES:
                target = TARGETS[c][ff]
                checks.append({"page": role, "form_factor": ff, "category": c, "score": o[c], "target": target,
                               "default_book": d[c], "pass": o[c] >= target and o[c] >= d[c]})
        ow = ours["page_weight"]["pages"][OUR_PAGES[role]]
        dw = default["page_weight"]["pages"][DEFAULT_PAGES[role]]
        ratios[role]["transfer_bytes"] = round(ow["transfer_bytes"] / dw["transfer_bytes"], 3)
        ratios[role]["raw_bytes"] = round(ow["raw_bytes"] / dw["raw_bytes"], 3)
    return {"checks": checks, "ratios_to_default": ratios, "pass": all(c["pass"] for c in checks)}


def run() -> dict:
    if not LIGHTHOUSE.exists():
        raise SystemExit("benchmarks/node_modules is missing: run `npm ci --prefix benchmarks`")
    version = subprocess.run([str(LIGHTHOUSE), "--version"], capture_output=True, text=True).stdout.strip()
    chromium = subprocess.run([serve.CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    out_dir = Path(tempfile.mkdtemp(prefix="bench-lighthouse-"))
    atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
    result: dict = {"lighthouse_version": version, "chromium": chromium, "targets": TARGETS,
                    "server": f"benchmarks/serve.py (gzip, Cache-Control: {serve.CACHE_CONTROL})",
                    "load_at_start": load()}
    html = our_site()
    result["ours"] = {"site": str(html), "pages": OUR_PAGES, **measure(html, OUR_PAGES, out_dir)}
    default_html, seconds = default_book()
    result["default_book"] = {"build_seconds": round(seconds, 1), "pages": DEFAULT_PAGES,
                              **measure(default_html, DEFAULT_PAGES, out_dir)}
    result.update(_check(result["ours"], result["default_book"]))
    result["load_at_end"] = load()
    return result


def summary(r: dict) -> str:
    short = {"performance": "perf", "accessibility": "a11y", "best-practices": "bp", "seo": "seo"}
    lines = [f"{r['lighthouse_version'] and 'Lighthouse ' + r['lighthouse_version']}, {r['chromium']}; served by {r['server']}",
             f"load average at start {r['load_at_start']}, at end {r['load_at_end']} (Lighthouse performance is pessimistic under load)",
             "scores ours / default book (targets: perf >= 0.85 mobile, 0.95 desktop; a11y, bp, seo = 1.00):"]
    for role, page in r["ours"]["pages"].items():
        for ff in FORM_FACTORS:
            o = r["ours"]["lighthouse"][role][ff]
            d = r["default_book"]["lighthouse"][role][ff]
            cells = "  ".join(f"{short[c]} {o['scores'][c]:.2f}/{d['scores'][c]:.2f}" for c in CATEGORIES)
            lines.append(f"  {page:24s} {ff:7s} {cells}")
            for c in CATEGORIES:
                if o["failing_audits"][c] and o["scores"][c] < TARGETS[c][ff]:
                    ids = ", ".join(f"{a['id']} ({a['score']})" for a in o["failing_audits"][c])
                    lines.append(f"      {short[c]} below target: {ids}")
    lines.append("page weight, transferred (gzip) / raw, ours vs default book:")
    for role, page in r["ours"]["pages"].items():
        o = r["ours"]["page_weight"]["pages"][page]
        dp = r["default_book"]["pages"][role]
        d = r["default_book"]["page_weight"]["pages"][dp]
        ratio = r["ratios_to_default"][role]
        lines.append(f"  {page:24s} {o['transfer_bytes'] / 1024:6.0f} / {o['raw_bytes'] / 1024:6.0f} KiB vs {dp} "
                     f"{d['transfer_bytes'] / 1024:6.0f} / {d['raw_bytes'] / 1024:6.0f} KiB: x{ratio['transfer_bytes']} transferred")
    missed = [c for c in r["checks"] if not c["pass"]]
    if missed:
        lines.append("missed:")
        for c in missed:
            lines.append(f"  {c['page']} {c['form_factor']} {c['category']} {c['score']:.2f}"
                         f" (target {c['target']:.2f}, default book {c['default_book']:.2f})")
    lines.append(f"all targets met: {r['pass']}")
    return "\n".join(lines)


if __name__ == "__main__":
    res = run()
    print(json.dumps(res, indent=2))
    print(summary(res))
