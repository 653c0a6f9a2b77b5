"""How long `make test`'s test suite takes on this machine: ``pytest tests -n 2 --dist
loadfile``, what `make test` runs after the builds (the site, PDFs, slides and handout must
be built: `make test` first, or `make site`).

    .venv/bin/python -m benchmarks.run --update tests

Recorded: the wall time, the number of tests that passed and failed, and the load average
beside it (the machine is shared). Target (issue 37): within 15 minutes on the 2-core machine.
A test fails the benchmark's run only as a finding: the figure is still recorded.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 15 * 60
COMMAND = [sys.executable, "-m", "pytest", "tests", "-n", "2", "--dist", "loadfile", "-q", "-p", "no:cacheprovider"]


def counts(output: str) -> dict[str, int]:
    """pytest's closing line, as numbers: ``{"passed": 1460, "failed": 2, ...}``."""
    last = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected)", last[-1])} if last else {}


def run() -> dict:
    start = time.perf_counter()
    done = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    found = counts(done.stdout)
    return {"command": " ".join(["pytest", *COMMAND[3:]]), "wall_seconds": round(seconds, 1), "exit_code": done.returncode,
            "passed": found.get("passed", 0), "failed": found.get("failed", 0) + found.get("error", 0) + found.get("errors", 0),
            "target_seconds": TARGET_SECONDS, "meets_target": seconds <= TARGET_SECONDS}


def summary(result: dict) -> str:
    minutes = result["wall_seconds"] / 60
    return (f"the test suite ({result['command']}): {minutes:.1f} min wall, {result['passed']} passed, "
            f"{result['failed']} failed (target: within {result['target_seconds'] // 60} min: "
            f"{'met' if result['meets_target'] else 'MISSED'})")


DOC_START = "<!-- tests figures: generated from benchmarks/results.json by `python -m benchmarks.bench_tests --doc` -->"
DOC_END = "<!-- end of the tests figures -->"


def doc_text(result: dict) -> str:
    """docs/performance.md's paragraph on the test suite, from one run's ``result`` (a test keeps them equal)."""
    from .common import doc_paragraph

    return doc_paragraph(DOC_START, DOC_END, "The test suite", result, summary)


if __name__ == "__main__":
    if sys.argv[1:] == ["--doc"]:  # docs/performance.md's paragraph, from the committed results
        import json

        print(doc_text(json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"]["tests"]))
        raise SystemExit
    print(summary(run()))
