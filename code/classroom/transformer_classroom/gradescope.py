"""A Gradescope autograder that grades with the same rubric and sandbox as the command line.

``python -m transformer_classroom.gradescope --write DIR`` writes the bundle (zip the
*contents* of ``DIR`` and upload it as the assignment's autograder):

- ``setup.sh``: installs bubblewrap and the pinned requirements (the NumPy and PyTorch
  versions the grader was run with here, PyTorch's CPU build) and creates the unprivileged
  user :data:`GRADING_USER`;
- ``requirements.txt``;
- ``transformer_lessons/`` and ``transformer_classroom/``: the modules grading imports, and
  no other (:func:`grading_modules`: the checks, the sandbox and its worker; not the plots,
  the LMS export or the book's reader);
- ``config.json``: the items to grade, the time and memory limits, and (``--variants``) the
  seed of the per-student variants;
- ``run_autograder``: grades the submission and writes ``results/results.json``.

Gradescope puts the student's files in ``/autograder/submission`` and reads
``/autograder/results/results.json``: ``{"score", "output", "execution_time", "tests":
[{"name", "score", "max_score", "status", "output"}, ...]}``, one test per rubric item.
With variants (``--write DIR --variants``), the graded assignment is checked against the
variant of the submission's student: Gradescope writes ``/autograder/submission_metadata.json``,
whose ``users`` list the submitters; the id is the first user's ``sid`` (the student id of the
course roster) or, where the course has none, that user's ``email`` (use the same ids with
``--variant-for``). A submission without either is graded 0 with that reason.
Each submission is graded in the OS sandbox of :mod:`~transformer_classroom.sandbox` where the
image allows it (:func:`how_to_isolate`), else as :data:`GRADING_USER`; either way it cannot
write ``results.json``, which the harness deletes first and writes only after the
submission's processes have ended, so a submission that kills the harness leaves no score
and Gradescope shows the run as failed. The root ``/autograder`` can be changed with the environment variable
``TRANSFORMER_LESSONS_AUTOGRADER_ROOT`` (the tests grade a scratch folder that way).

    python -m transformer_classroom.gradescope --root /autograder --config config.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from . import grade, sandbox, variants

ROOT_VARIABLE = "TRANSFORMER_LESSONS_AUTOGRADER_ROOT"
PINNED = ("numpy", "torch")  # what the checks and the sandbox import

GRADING_USER = "tl-student"  # the unprivileged account setup.sh creates; student code runs as it

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image. Tested on the
# base image "Ubuntu 22.04" with Python 3.11 (and on Debian 12, bookworm, as root).
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
export DEBIAN_FRONTEND=noninteractive
# bubblewrap: each submission runs in its own OS sandbox where the image allows namespaces;
# util-linux's setpriv starts it as a uid of its own there.
apt-get update -q && apt-get install -y -q --no-install-recommends bubblewrap util-linux
# Where the image forbids namespaces, student code runs as this unprivileged user instead:
# it can neither write results/results.json nor signal the harness.
id -u {GRADING_USER} >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin {GRADING_USER}
# PyTorch's CPU build, not PyPI's multi-GB CUDA one.
python3 -m pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
"""

RUN = f"""#!/usr/bin/env bash
# Gradescope runs this for every submission: /autograder/submission -> /autograder/results/results.json.
set -uo pipefail
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source_dir="$here"
[ -d "$source_dir/transformer_lessons" ] || source_dir="$here/source"  # copied to /autograder by Gradescope
root="${{{ROOT_VARIABLE}:-/autograder}}"
PYTHONPATH="$source_dir" exec "${{PYTHON:-python3}}" -m transformer_classroom.gradescope \\
    --root "$root" --config "$source_dir/config.json"
"""


PACKAGES = ("transformer_lessons", "transformer_classroom")
# What the harness runs: it imports these, and the sandbox starts the worker by its path.
HARNESS = ("transformer_classroom.gradescope", "transformer_classroom.grade")
LISTING = (
    "import json, sys\n"
    f"for name in {HARNESS!r}: __import__(name)\n"
    f"found = {{m.__file__ for name, m in list(sys.modules.items()) if name.split('.')[0] in {PACKAGES!r} and getattr(m, '__file__', None)}}\n"
    "print(json.dumps(sorted(found)))\n"
)


def grading_modules() -> dict[Path, Path]:
    """The files the bundle needs, each with its path in the bundle (``transformer_lessons/
    checks/core.py``): every module of the two packages that the harness imports, found by
    importing it in a fresh interpreter, and the sandbox's worker, which it runs by path."""
    done = subprocess.run([sys.executable, "-c", LISTING], capture_output=True, text=True, check=True)
    files = [Path(f) for f in json.loads(done.stdout)] + [sandbox.WORKER]
    out = {}
    for f in files:
        f = f.resolve()
        package = next(p for p in f.parents if p.name in PACKAGES)
        out[f] = Path(package.name) / f.relative_to(package)
    return out


def write_bundle(folder: Path, *, items: str | None = None, assignment: str | None = None,
                 time_limit: float | None = None, memory_limit: int | None = None,
                 variant_seed: str | None = None) -> None:
    """Write the autograder bundle into ``folder`` (created if needed); with ``variant_seed``,
    each submission's assignment is graded against its student's variant."""
    if variant_seed is not None and not (items or assignment):
        assignment = "assignment"
    chosen = grade.select_items(items, assignment)
    if variant_seed is not None and grade.ASSIGNMENT_KEY not in {i.key for i in chosen}:
        raise ValueError(f"--variants replaces the assignment's item {grade.ASSIGNMENT_KEY}, which the selection lacks")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # the student's code runs as a user of its own, which must read the grading code
    for package in PACKAGES:
        if (folder / package).exists():
            shutil.rmtree(folder / package)
    for source, target in grading_modules().items():
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / target)
    (folder / "requirements.txt").write_text(  # the versions graded with here, without a local label (+cpu)
        "".join(f"{name}=={metadata.version(name).split('+')[0]}  # imported by the checks and the sandbox\n"
                for name in PINNED)
    )
    config = {
        "items": [i.key for i in chosen],
        "time_limit": grade.TIME_LIMIT if time_limit is None else time_limit,
        "memory_limit": grade.MEMORY_LIMIT if memory_limit is None else memory_limit,
        "variant_seed": variant_seed,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
        path = folder / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def find_submission(folder: Path) -> tuple[Path | None, str]:
    """The file to grade in ``folder``: the first notebook, else the first ``.py`` file."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".ipynb", ".py"))
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    chosen = (notebooks or files or [None])[0]
    if chosen is None:
        return None, "No .ipynb or .py file was found in the submission."
    others = [p.name for p in files if p != chosen]
    note = f"Graded {chosen.name}" + (f" (not graded: {', '.join(others)})." if others else ".")
    return chosen, note


def student_id(root: Path) -> str | None:
    """The submitter's id from ``root/submission_metadata.json``: the first user's ``sid``, else ``email``."""
    try:
        users = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8")).get("users") or []
    except (OSError, ValueError, AttributeError):
        return None
    for user in users[:1]:
        for field in ("sid", "email"):
            if isinstance(user, dict) and str(user.get(field) or "").strip():
                return str(user[field]).strip()
    return None


def how_to_isolate() -> tuple[bool, int | None, str]:
    """``(isolation, user, sentence)``: the OS sandbox where this image allows it; else, for a
    root harness, the unprivileged :data:`GRADING_USER`; else (a harness that is not root)
    the harness's own, already unprivileged, user."""
    problem = sandbox.isolation_problem()
    if problem is None:
        return True, None, "Graded in the OS sandbox."
    if os.geteuid() != 0:
        return False, None, f"Graded without the OS sandbox ({problem}), as the autograder's own user."
    import pwd

    try:
        uid = pwd.getpwnam(GRADING_USER).pw_uid
    except KeyError:
        raise SystemExit(f"the autograder runs as root, the OS sandbox is unavailable ({problem}) and the user "
                         f"{GRADING_USER} that setup.sh creates is missing: nothing was graded") from None
    return False, uid, f"Graded without the OS sandbox (this image forbids it), as the unprivileged user {GRADING_USER}."


def results(root: Path, config: dict) -> dict:
    """Grade ``root/submission``; the ``results.json`` document."""
    start = time.monotonic()
    items = grade.select_items(",".join(config["items"]))
    path, note = find_submission(root / "submission")
    missing = None if path is not None else "missing: nothing was submitted"
    if config.get("variant_seed") is not None:
        student = student_id(root)
        if student is None:
            missing = missing or ("missing: submission_metadata.json names no student id (sid) or e-mail, "
                                  "so this submission has no variant to be graded against")
        else:
            variant = variants.variant_for(student, config["variant_seed"])
            items = grade.items_for_variant(items, variant)
            note += f" Variant {variant.key} ({variant.name}{variant.signature}) for {student}."
    if missing is not None:
        result = grade.Result("submission", items)
        for item in items:
            result.points[item.key], result.verdicts[item.key] = 0, missing
    else:
        isolation, user, how = how_to_isolate()
        note += f" {how}"
        result = grade.grade_submission(path, items, time_limit=config["time_limit"],
                                        memory_limit=config["memory_limit"], isolation=isolation, user=user)
    tests = [
        {
            "name": f"{item.key}: {item.name}",
            "score": result.points[item.key],
            "max_score": item.points,
            "status": "passed" if result.points[item.key] == item.points else "failed",
            "output": result.verdicts[item.key],
        }
        for item in items
    ]
    lines = [note, *(f"Note: {n}" for n in result.notes), f"Total: {result.total} of {result.max_total} points."]
    return {
        "score": result.total,
        "output": "\n".join(lines),
        "execution_time": round(time.monotonic() - start, 1),
        "tests": tests,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_classroom.gradescope",
        description="--write DIR: write a Gradescope autograder bundle into DIR (zip its contents and upload it). "
        "Without --write (what the bundle's run_autograder does): grade /autograder/submission into "
        "/autograder/results/results.json.")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write the autograder bundle into DIR and stop")
    parser.add_argument("--items", help="with --write: grade only these items (comma-separated keys)")
    parser.add_argument("--assignment", help=f"with --write: grade only a named set of items: {', '.join(grade.ASSIGNMENTS)}")
    parser.add_argument("--time-limit", type=float, default=None, help=f"with --write: seconds per item (default {grade.TIME_LIMIT})")
    parser.add_argument("--memory-limit", type=int, default=None, help="with --write: bytes of memory per submission")
    parser.add_argument("--variants", action="store_true",
                        help="with --write: grade the assignment against each student's variant")
    parser.add_argument("--variant-seed", default=None,
                        help="with --variants: the course's seed (default: course: name in _config.yml)")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get(ROOT_VARIABLE, "/autograder")))
    parser.add_argument("--config", type=Path)
    args = parser.parse_args(argv)
    if args.write:
        if args.variants and args.variant_seed is None:
            args.variant_seed = grade.default_seed(parser)
        try:
            write_bundle(args.write, items=args.items, assignment=args.assignment, time_limit=args.time_limit,
                         memory_limit=args.memory_limit, variant_seed=args.variant_seed if args.variants else None)
        except ValueError as err:
            parser.error(str(err))
        print(f"wrote the Gradescope autograder to {args.write}")
        return 0
    if args.config is None:
        parser.error("give --write DIR (write the bundle) or --config FILE (grade, as the bundle does)")
    out = args.root / "results" / "results.json"
    out.unlink(missing_ok=True)  # a stale or planted file: if this run dies, Gradescope finds no score
    document = results(args.root, json.loads(args.config.read_text()))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)  # what the submission wrote, if anything: only the harness writes the score
    tmp = out.with_name(f".results.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(tmp, out)
    print(document["output"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
