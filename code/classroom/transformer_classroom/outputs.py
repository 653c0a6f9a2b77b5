"""The grader's files (the marks CSV, the class summary, the feedback folder): checked before
grading starts, written only after every submission is graded, each whole or not at all.

Decisions:

- An output path that already exists must be the grader's own earlier output, found by its
  content: a regular file whose first line is the header the grader writes
  (:data:`CSV_HEADER_START`, :data:`SUMMARY_STARTS`), or a real folder that is empty or holds
  the grader's marker file (:data:`MARKER`) and regular ``.txt`` files only. Anything else (a
  link, a plain file where the feedback folder goes, a folder of other files) is refused
  before a single submission runs (:func:`problems`), so that a run never ends by
  overwriting what it did not write, or by crashing after an hour of grading.
- Every file is first written to a new temporary file (``O_EXCL``: never through a link that
  someone planted) in its target folder, the feedback to a new temporary folder beside the
  target, and only when all of them are complete are they renamed into place
  (:func:`write`). A run that fails before that leaves only temporary names starting with a
  dot, which :func:`write` removes on failure, and exits non-zero.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

CSV_HEADER_START = "student,"
SUMMARY_STARTS = ("Class summary:", "WARNING:")
MARKER = ".transformer-lessons-feedback"
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _first_line(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline()
    except OSError:
        return ""


def _file_problem(path: Path, starts: tuple[str, ...], what: str) -> str | None:
    if not os.path.lexists(path):
        return None if path.parent.is_dir() else f"{path}: its folder {path.parent} does not exist"
    if path.is_symlink() or not path.is_file():
        return f"{path} exists and is not a file the grader wrote ({'a link' if path.is_symlink() else 'not a file'})"
    if not _first_line(path).startswith(starts):
        return f"{path} exists and is not a {what} the grader wrote: move it away or choose another name"
    return None


def _folder_problem(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None  # created, with its parents, when the results are written
    if path.is_symlink() or not path.is_dir():
        return (f"{path} exists and is not the grader's feedback folder "
                f"({'a link' if path.is_symlink() else 'a file'}): move it away or choose another folder")
    entries = list(path.iterdir())
    if not entries:
        return None
    foreign = [e.name for e in entries if e.name != MARKER and (e.is_symlink() or not e.is_file() or e.suffix != ".txt")]
    if not (path / MARKER).is_file() or foreign:
        return (f"{path} holds files the grader did not write ({', '.join(sorted(foreign)[:3]) or 'no marker'}): "
                "choose an empty or new folder")
    return None


def file_name(student: str) -> str:
    """A student's feedback file name: their name with anything but letters, digits and ``.@+-``
    replaced, never hidden and never a path."""
    return (re.sub(r"[^\w.@+-]", "_", student).lstrip(".") or "student") + ".txt"


def summary_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + "_summary.txt")


def problems(csv_path: Path | None, feedback: Path | None) -> list[str]:
    """Why the outputs cannot be written where asked (empty when they can)."""
    found = []
    if csv_path is not None:
        found += [_file_problem(csv_path, (CSV_HEADER_START,), "marks CSV"),
                  _file_problem(summary_path(csv_path), SUMMARY_STARTS, "class summary")]
    if feedback is not None:
        found.append(_folder_problem(feedback))
    return [p for p in found if p]


def _temp_file(target: Path, text: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)  # O_EXCL
    os.chmod(fd, 0o666 & ~_UMASK)  # mkstemp makes it 0600; the file gets the mode the user's other files get
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    return Path(name)


def write(files: dict[Path, str], feedback: Path | None = None, feedback_files: dict[str, str] | None = None) -> None:
    """Write ``files`` (path -> text) and the feedback folder (file name -> text) whole:
    everything to temporary names first, then renamed into place. Raises ``OSError`` (after
    removing the temporary files) if anything cannot be written."""
    temps: list[Path] = []
    new_folder = None
    try:
        if feedback is not None:
            feedback.parent.mkdir(parents=True, exist_ok=True)
            new_folder = Path(tempfile.mkdtemp(prefix=f".{feedback.name}.", suffix=".tmp", dir=feedback.parent))
            new_folder.chmod(0o777 & ~_UMASK)
            (new_folder / MARKER).write_text("Feedback files written by the grading command.\n", encoding="utf-8")
            for name, text in (feedback_files or {}).items():
                if Path(name).name != name or not name.endswith(".txt"):
                    raise OSError(f"refusing a feedback file name {name!r}")
                (new_folder / name).write_text(text, encoding="utf-8")
        for target, text in files.items():
            temps.append(_temp_file(target, text))
        if feedback is not None:
            problem = _folder_problem(feedback)  # again: it may have changed while grading
            if problem:
                raise OSError(problem)
            old = None
            if os.path.lexists(feedback):
                old = Path(tempfile.mkdtemp(prefix=f".{feedback.name}.old.", dir=feedback.parent))
                os.rename(feedback, old / "previous")
            os.rename(new_folder, feedback)
            new_folder = None
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        for temp, target in zip(temps, files):
            os.replace(temp, target)  # rename(2) replaces the name itself, never what a link points at
        temps = []
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)
        if new_folder is not None:
            shutil.rmtree(new_folder, ignore_errors=True)
