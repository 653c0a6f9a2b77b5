"""Benchmark: grading a class of 40 honest submissions, each in its own sandbox.

Every submission is the book's own solutions (every rubric item), under 40 file names,
graded with the full rubric by `python -m transformer_lessons.grade` as an instructor runs
it: one fresh interpreter per submission (NumPy and PyTorch imported there), the checks
in the grader. Records the seconds in total and per submission, and checks that every
submission got full marks (a benchmark of wrong grading would be worthless). Information,
no target: the cost is dominated by starting an interpreter that imports PyTorch.

    .venv/bin/python benchmarks/run.py grade
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
    sys.path.insert(0, str(TESTS))  # the book's solutions, read from the pages as the tests read them
    from test_grade import HEADER, OTHER_SOLUTIONS, SOLUTIONS

    return HEADER + "\n\n".join([*SOLUTIONS.values(), *OTHER_SOLUTIONS])


def run() -> dict:
    from transformer_lessons import grade

    source = _honest_source()
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for n in range(STUDENTS):
            path = Path(tmp) / f"student_{n:02d}.py"
            path.write_text(source)
            files.append(str(path))
        marks = Path(tmp) / "marks.csv"
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            grade.main([*files, "--csv", str(marks)])
        seconds = time.perf_counter() - start
        rows = list(csv.DictReader(marks.open()))
    full = sum(i.points for i in grade.RUBRIC)
    return {
        "students": STUDENTS,
        "items": len(grade.RUBRIC),
        "total_seconds": round(seconds, 1),
        "seconds_per_submission": round(seconds / STUDENTS, 2),
        "all_full_marks": len(rows) == STUDENTS and all(int(r["total"]) == full for r in rows),
    }


def summary(result: dict) -> str:
    marks = "every one with full marks" if result["all_full_marks"] else "NOT all with full marks: grading is wrong"
    return (
        f"{result['students']} honest submissions x {result['items']} items: {result['total_seconds']:.1f} s in total, "
        f"{result['seconds_per_submission']:.2f} s per submission ({marks})"
    )


if __name__ == "__main__":
    print(summary(run()))
