"""Benchmark: grading a class of 40 honest submissions, each in its own sandbox, with the OS
sandbox (bubblewrap) and the same class again with ``--no-isolation``, side by side in one run.

Every submission is the book's own solutions (every rubric item), under 40 file names,
graded with the full rubric by `python -m transformer_classroom.grade` as an instructor runs
it: one fresh interpreter per submission (NumPy and PyTorch imported there), the checks
in the grader. Records the seconds in total and per submission, and checks that every
submission got full marks (a benchmark of wrong grading would be worthless). Information,
target: the class graded in the OS sandbox in under 3 minutes on a 2-core machine; the
ratio of the two runs is the OS sandbox's cost (bubblewrap itself starts in milliseconds; the
cost is dominated by starting an interpreter that imports PyTorch, in both).

    .venv/bin/python -m benchmarks.run grade
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
import tempfile
import time
from pathlib import Path

STUDENTS = 40
TESTS = Path(__file__).resolve().parent.parent / "tests"


def _honest_source() -> str:
    # the book's solutions, read from the pages as the tests read them
    from tests.classroom.test_grade import HEADER, OTHER_SOLUTIONS, SOLUTIONS

    return HEADER + "\n\n".join([*SOLUTIONS.values(), *OTHER_SOLUTIONS])


TARGET_SECONDS = 180  # the whole class, in the OS sandbox


def _grade_class(files: list[str], marks: Path, *extra: str) -> tuple[float, list[dict]]:
    from transformer_classroom import grade

    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = grade.main([*files, "--csv", str(marks), *extra])
    seconds = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"grading exited with code {code}")
    return seconds, list(csv.DictReader(marks.open()))


def run() -> dict:
    from transformer_classroom import grade

    source = _honest_source()
    full = sum(i.points for i in grade.RUBRIC)
    result = {"students": STUDENTS, "items": len(grade.RUBRIC)}
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for n in range(STUDENTS):
            path = Path(tmp) / f"student_{n:02d}.py"
            path.write_text(source)
            files.append(str(path))
        for name, extra in (("isolated", ()), ("not_isolated", ("--no-isolation",))):
            seconds, rows = _grade_class(files, Path(tmp) / f"marks_{name}.csv", *extra)
            result[name] = {
                "total_seconds": round(seconds, 1),
                "seconds_per_submission": round(seconds / STUDENTS, 2),
                "all_full_marks": len(rows) == STUDENTS and all(int(r["total"]) == full for r in rows),
            }
    result["isolated_over_not_isolated"] = round(result["isolated"]["total_seconds"]
                                                 / result["not_isolated"]["total_seconds"], 2)
    result["target_seconds"] = TARGET_SECONDS
    result["meets_target"] = result["isolated"]["total_seconds"] <= TARGET_SECONDS
    return result


def summary(result: dict) -> str:
    parts = []
    for name in ("isolated", "not_isolated"):
        r = result[name]
        marks = "every one with full marks" if r["all_full_marks"] else "NOT all with full marks: grading is wrong"
        parts.append(f"{name.replace('_', ' ')}: {r['total_seconds']:.1f} s ({r['seconds_per_submission']:.2f} s "
                     f"per submission, {marks})")
    return (f"{result['students']} honest submissions x {result['items']} items, "
            + "; ".join(parts) + f"; ratio {result['isolated_over_not_isolated']:.2f} "
            f"(target: isolated under {result['target_seconds']} s: {'met' if result['meets_target'] else 'MISSED'})")


DOC_START = "<!-- grade figures: generated from benchmarks/results.json by `python -m benchmarks.bench_grade --doc` -->"
DOC_END = "<!-- end of the grade figures -->"


def doc_text(result: dict) -> str:
    """docs/performance.md's paragraph on grading, from one run's ``result`` (a test keeps them equal)."""
    from .common import doc_paragraph

    return doc_paragraph(DOC_START, DOC_END, "Grading", result, summary)


if __name__ == "__main__":
    if sys.argv[1:] == ["--doc"]:  # docs/performance.md's paragraph, from the committed results
        import json

        print(doc_text(json.loads((Path(__file__).resolve().parent / "results.json").read_text())["sections"]["grade"]))
        raise SystemExit
    print(summary(run()))
