"""Grade students' exercise submissions with the self-checks, each submission in a sandbox.

    python -m transformer_classroom.grade FILE_OR_NOTEBOOK... [--csv FILE] [--items KEY,...]
        [--assignment NAME] [--feedback DIR] [--site DIR] [--time-limit S] [--memory-limit BYTES]
    python -m transformer_classroom.gradescope --write DIR [--variants]  # write a Gradescope autograder
    python -m transformer_classroom.grade --variant-for STUDENT_ID       # print a student's variant
    python -m transformer_classroom.grade --variants roster.csv FILE...  # grade each against its variant

Each submission is a ``.py`` file (split into cells at ``# %%`` lines) or a notebook. Its
imports, definitions and module-level helpers run (:mod:`transformer_classroom.submission`
says which statements), in a child process of its own (:mod:`transformer_classroom.sandbox`):
a fresh interpreter in a scratch directory, with a memory cap for all its processes together, killed with everything it
started once its items are graded. The child only runs the learner's functions on inputs
the grader sends; the grader itself runs the checks of :mod:`~transformer_lessons.checks`
(its encoder, decoder and bug-hunt checks) on what comes back, decides the points, and alone prints the report and writes the files.

Every item of :data:`RUBRIC` (or those of ``--items``/``--assignment``, see
:data:`ASSIGNMENTS`) gives one line: points and ``pass`` or the check's message. An item
fails with a one-line reason when its check exceeds ``--time-limit`` (the child is killed),
when the child exits, crashes or runs out of memory, or when the graded function uses the
book's own implementation (an import from ``transformer_lessons`` other than
``softmax`` and, where the item is not about masks, ``causal_mask``).

The rubric never types an exercise's number: each item names the book's exercise by its
label (:data:`EXERCISES`), and the feedback says it as the built web edition prints it
(``--site``, ``$TRANSFORMER_LESSONS_SITE`` or this checkout's ``_build/html``), or by its
title when no build is at hand: :func:`exercise_names`. The item keys carry no number either.

With ``--variants roster.csv`` the graded assignment is checked against each student's own
variant (:mod:`transformer_classroom.variants`): the roster maps each submission's file name to
the student's id, the id and ``--variant-seed`` choose the variant, and that variant's item
(:func:`variant_item`) replaces the assignment's item. Without ``--items``/``--assignment``
only the assignment is graded then.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import io
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import transformer_lessons
from transformer_lessons import checks
from transformer_lessons.checks import assignment
from transformer_lessons.checks.exercises import Exercise

from . import outputs, submission, variants
from . import sandbox as sandbox_module
from .sandbox import (
    BadReply, ItemTimeout, RemoteClass, RemoteFunction, Sandbox, SandboxError, UsedBuiltIn, WorkerDied, clean_text,
    set_subreaper,
)

TIME_LIMIT = 60  # seconds per item: an endless loop costs one item, not the run
MEMORY_LIMIT = 2 * 2**30  # bytes for all of a submission's processes together (sandbox.MemoryWatch)


@dataclass(frozen=True)
class Item:
    """One line of the rubric: the submission's ``name`` is checked with ``check``.

    Made from an exercise's declaration (:mod:`transformer_lessons.checks.exercises`):
    ``what`` says what passes, its ``{exercise}`` replaced by the exercise's name
    (:func:`describe`), never a typed number; ``kind`` is "function" or "class" (an
    ``nn.Module`` class the check instantiates); ``allowed`` are the ``transformer_lessons``
    names the graded code may use; ``exercise`` is the book's label of the exercise.
    """

    key: str
    name: str
    points: int
    check: Callable
    what: str
    kind: str = "function"
    allowed: tuple[str, ...] = checks.exercises.DEFAULT_ALLOWED
    exercise: str = ""  # the label of the book's exercise ("ex-exercises-self-attention")
    by_hand: bool = False  # the exercise asks for attention by hand: PyTorch's own attention scores 0

    @classmethod
    def of(cls, exercise: Exercise, graded: checks.Graded) -> Item:
        return cls(graded.key, graded.function, graded.points, graded.check, graded.what, graded.kind,
                   exercise.allowed, exercise.label, exercise.by_hand)


EXERCISES: dict[str, Exercise] = checks.EXERCISES
"""The exercises the rubric grades, by label, as declared beside their checks (a test keeps
their titles and order equal to the pages')."""

RUBRIC = [Item.of(e, g) for e in EXERCISES.values() for g in e.items]
"""Every declared item, in the book's order: the grades file's columns."""

ASSIGNMENTS = {name: tuple(i.key for i in RUBRIC if name in EXERCISES[i.exercise].sets)
               for name in dict.fromkeys(s for e in EXERCISES.values() for s in e.sets)}
ASSIGNMENTS["all"] = tuple(i.key for i in RUBRIC)
"""Named sets of items, as the exercises declare them: ``lab`` (the 2.5-hour session's lab,
the exercises page's ``pacing: session:`` slide; ``tests/site/test_kit_references.py`` checks
that they agree), ``exercises`` (the exercises page but its graded assignment), ``bughunt``,
``assignment``, ``decoder`` (the decoder and language-model pages), ``modern`` (today's
parts), ``capstone`` ("Build your own model": the encoder block), and ``all``."""


# --- exercise names, as the book prints them -----------------------------------------------

SITE_ENV = "TRANSFORMER_LESSONS_SITE"
def default_site() -> Path | None:
    """The built web edition whose numbers the grader quotes: ``$TRANSFORMER_LESSONS_SITE``
    if set (empty: none), else the ``_build/html`` of the book the grader runs in (found from
    the current directory, :func:`transformer_classroom.book.find_root`) if it is built. A
    Gradescope bundle carries no book (nor its reader): there, none."""
    env = os.environ.get(SITE_ENV)
    if env is not None:
        return Path(env) if env else None
    try:
        from . import book  # not in a Gradescope bundle, which grades without the book
    except ImportError:
        return None
    try:
        site = book.find_root() / "_build" / "html"
    except book.BookError:
        return None
    return site if (site / "book").is_dir() else None


def exercise_names(site: Path | None = None) -> dict[str, str]:
    """Each rubric exercise's name, label -> text, as the book prints it.

    Decision: the grader must work on an instructor's machine without a build, so a name
    comes from the built web edition when there is one (``site``, else :func:`default_site`):
    the exercise's title line as printed, number included ("Exercise 6.1 (Self-attention in
    NumPy)"). Without a site, or for a label the site lacks (a site older than the book), it
    is the exercise's title (:data:`EXERCISES`), with no number at all: a number the grader
    typed could disagree with the one the students see.
    """
    site = default_site() if site is None else site
    names = {label: ex.title for label, ex in EXERCISES.items()}
    if site is None:
        return names
    from . import book  # the reader of the built site; a Gradescope bundle has no site and never gets here

    for label, ex in EXERCISES.items():
        page = site / "book" / f"{ex.page}.html"
        printed = book.printed_exercise(page.read_text(encoding="utf-8", errors="replace"), label) if page.is_file() else None
        if printed and any(printed):
            number, title = printed
            names[label] = f"{number} ({title})" if number and title else number or title
    return names


def describe(item: Item, names: dict[str, str] | None = None) -> str:
    """What an item checks, in Markdown, with its exercise named as the book prints it."""
    names = exercise_names() if names is None else names
    name = names.get(item.exercise, EXERCISES[item.exercise].title) if item.exercise else ""
    text = item.what.format(exercise=name)
    return text[:1].upper() + text[1:]


ASSIGNMENT_KEY = "assign_causal_multi_head"  # the graded assignment's item, which a variant replaces


def variant_item(variant: variants.Variant) -> Item:
    """The rubric item of a variant of the graded assignment (the causal one is the rubric's own)."""
    if variant.key == "causal":
        return next(i for i in RUBRIC if i.key == ASSIGNMENT_KEY)
    if variant.key == "padding":
        check = assignment.check_padded_multihead_attention
    elif variant.key == "cross":
        check = assignment.check_cross_multihead_attention
    else:
        h = variant.num_heads

        def check(f):
            assignment.check_fixed_heads_causal_attention(f, h)
    return Item(variant.item_key, variant.name, variants.POINTS, check, f"{{exercise}}, variant `{variant.key}`",
                exercise="ex-exercises-assignment", by_hand=True)


def items_for_variant(items: list[Item], variant: variants.Variant) -> list[Item]:
    """``items`` with the assignment's item replaced by ``variant``'s."""
    if ASSIGNMENT_KEY not in {i.key for i in items}:
        raise ValueError(f"variants replace the assignment's item {ASSIGNMENT_KEY}, which the selection lacks")
    return [variant_item(variant) if i.key == ASSIGNMENT_KEY else i for i in items]


def myst_names() -> dict[str, str]:
    """Each rubric exercise as a MyST cross-reference: a numbered one's number is the build's
    ({numref}); an unnumbered one has no number to print, and is linked under its title."""
    return {label: f"{{numref}}`{label}`" if ex.numbered else f"{{ref}}`{ex.title} <{label}>`"
            for label, ex in EXERCISES.items()}


def rubric_markdown(items: list[Item] | None = None, names: dict[str, str] | None = None) -> str:
    """The rubric as a MyST Markdown table. The assessment page prints it from here, with
    each exercise as a cross-reference (:func:`myst_names`, the default) that the build
    numbers; pass ``names`` (:func:`exercise_names`) for plain text."""
    names = myst_names() if names is None else names
    rows = ["| Item | Function or class | Points | What passes |", "|---|---|---|---|"]
    rows += [f"| `{i.key}` | `{i.name}` | {i.points} | {describe(i, names)} |" for i in items or RUBRIC]
    return "\n".join(rows)


def select_items(keys: str | None = None, assignment: str | None = None) -> list[Item]:
    """The rubric items to grade: ``keys`` ("KEY,KEY"), a named assignment, or all of them."""
    by_key = {i.key: i for i in RUBRIC}
    if keys and assignment:
        raise ValueError("give --items or --assignment, not both")
    if assignment:
        if assignment not in ASSIGNMENTS:
            raise ValueError(f"unknown assignment {assignment!r}; the rubric has {', '.join(ASSIGNMENTS)}")
        wanted = list(ASSIGNMENTS[assignment])
    elif keys:
        wanted = [k.strip() for k in keys.split(",") if k.strip()]
        unknown = [k for k in wanted if k not in by_key]
        if unknown:
            raise ValueError(f"unknown item(s) {', '.join(unknown)}; the rubric has {', '.join(by_key)}")
    else:
        wanted = list(by_key)
    return [by_key[k] for k in wanted]


@dataclass
class Result:
    """One student's grading: points and verdict per item key, and notes on loading."""

    student: str
    items: list[Item]
    points: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.points.values())

    @property
    def max_total(self) -> int:
        return sum(i.points for i in self.items)


def _book_violation(item: Item, refs: set[str]) -> str | None:
    """The first ``transformer_lessons`` object the graded code uses that the item does not allow."""
    for ref in sorted(refs):
        parts = ref.split(".")
        if len(parts) < 2 or parts[0] != submission.PACKAGE or parts[-1] in item.allowed:
            continue  # only the book's own modules are ever imported here (a child names any string)
        if not all(p.isidentifier() for p in parts):
            continue
        obj = None
        for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            break
        if obj is None or type(obj).__name__ == "module":
            continue  # a module named on the way to an object, or a name the book lacks
        return ref
    return None


def _verdict_for(err: BaseException, time_limit: float) -> str:
    if isinstance(err, ItemTimeout):
        return f"stopped: the check took more than {time_limit:g} s (an endless loop?)"
    if isinstance(err, (WorkerDied, BadReply)):
        return f"crashed: {err}"
    if isinstance(err, AssertionError):  # a check's verdict: CheckFailed, or a plain assert
        return str(err).splitlines()[0] if str(err) else "the check failed"
    if isinstance(err, NotImplementedError):
        return "not written yet: replace `raise NotImplementedError(...)` with your code"
    return f"crashed: {type(err).__name__}: {err}"


def grade_submission(path: Path, items: list[Item] | None = None, *, time_limit: float | None = None,
                     memory_limit: int | None = None, isolation: bool = True, user: int | None = None) -> Result:
    """Grade one submission in its own sandbox; nothing is printed or written here.

    ``isolation=False`` runs it without the OS sandbox (:mod:`~transformer_classroom.sandbox`),
    with the grader's own rights (only for files you trust), or, with ``user``, as that uid
    and gid (a root grader on Gradescope where the image forbids the sandbox)."""
    items = list(items or RUBRIC)
    time_limit = TIME_LIMIT if time_limit is None else time_limit
    memory_limit = MEMORY_LIMIT if memory_limit is None else memory_limit
    result = Result(clean_text(path.stem, 80), items)
    try:
        cells, notes, skipped = submission.select(path)
    except (OSError, ValueError, KeyError, TypeError) as err:  # unreadable file or notebook
        cells, notes, skipped = [], [f"cannot read {path.name}: {type(err).__name__}: {err}"], {}
    result.notes += notes
    wire_cells = [(c.number, c.source, c.run) for c in cells if c.tree is not None]
    static_refs = submission.book_references(cells, set(getattr(transformer_lessons, "__all__", ())))
    names = sorted({i.name for i in items})
    sandbox, loaded, load_error = None, None, None

    def start():
        nonlocal sandbox, loaded, load_error
        sandbox = Sandbox(wire_cells, names, memory_limit=memory_limit, load_time_limit=time_limit,
                          isolation=isolation, user=user)
        try:
            loaded = sandbox.start()
        except SandboxError as err:
            reason = _verdict_for(err, time_limit).replace("the check took", "loading took")
            load_error = f"the submission did not load: {reason}"
            sandbox.close()

    was_reaper = set_subreaper(True)
    try:
        start()
        if loaded is not None:
            result.notes += [clean_text(n) for n in loaded["notes"]][:50]
        for item in items:
            if load_error is None and not sandbox.alive:  # the last item killed it: a fresh child
                sandbox.close()
                start()
            if load_error is not None:
                result.points[item.key], result.verdicts[item.key] = 0, load_error
                continue
            got, verdict = _grade_item(item, sandbox, loaded, static_refs, time_limit)
            missing = re.search(r"NameError: name '(\w+)' is not defined", verdict)
            if missing and missing.group(1) in skipped:
                verdict += f" ({skipped[missing.group(1)]})"
            result.points[item.key], result.verdicts[item.key] = got, clean_text(verdict)
    finally:
        if sandbox is not None:
            sandbox.close()
        if was_reaper is not None and not was_reaper:
            set_subreaper(False)
    return result


def _grade_item(item: Item, sandbox: Sandbox, loaded: dict, static_refs: dict, time_limit: float) -> tuple[int, str]:
    kind = loaded["kinds"].get(item.name)
    if kind is None:
        return 0, f"missing: no `{item.name}` defined"
    if item.kind == "class" and kind != "class":
        return 0, f"`{item.name}` is not a class: write `class {item.name}(nn.Module)`"
    if item.kind == "function" and kind != "callable":
        return 0, f"`{item.name}` is not a function: this item grades a function `{item.name}(...)`"
    refs = set(static_refs.get(item.name, ())) | {r for r in loaded["refs"].get(item.name, ()) if isinstance(r, str)}
    used = _book_violation(item, refs)
    if used:
        return 0, f"uses the book's own `{used.rsplit('.', 1)[-1]}` (`{used}`): this item asks for your own code"
    proxy = (RemoteClass if item.kind == "class" else RemoteFunction)(sandbox, item.name)
    sandbox.deadline = time.monotonic() + time_limit
    sandbox.by_hand = item.by_hand
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the checks' "Correct!" lines
            item.check(proxy)
    except UsedBuiltIn as err:
        return 0, str(err)
    except (SandboxError, Exception) as err:
        if isinstance(err, SandboxError):
            sandbox.close()
        return 0, _verdict_for(err, time_limit)
    return item.points, "pass"


def report_lines(result: Result) -> list[str]:
    """The report of one student: notes, one line per item, the total."""
    width = max([len(i.key) for i in result.items] + [5])
    lines = [f"{result.student}: note: {n}" for n in result.notes]
    for item in result.items:
        got = result.points[item.key]
        lines.append(f"{result.student}: {item.key:<{width}} {got:>2}/{item.points:<2} {result.verdicts[item.key]}")
    lines.append(f"{result.student}: {'total':<{width}} {result.total:>2}/{result.max_total}")
    return lines


def grade(path: Path, out=None, items: list[Item] | None = None, **limits) -> dict[str, int]:
    """Grade one submission and print its report; return the points per item key."""
    result = grade_submission(path, items, **limits)
    print("\n".join(report_lines(result)), file=out or sys.stdout)
    return result.points


def feedback_text(result: Result, names: dict[str, str] | None = None) -> str:
    """A student's feedback, readable without the book: every item's verdict and what it checks,
    each exercise named as the book prints it (``names``, default :func:`exercise_names`)."""
    names = exercise_names() if names is None else names
    lines = [f"Feedback for {result.student}: {result.total} of {result.max_total} points", ""]
    if result.notes:
        lines += ["Notes on your file (what did not run):", *(f"  - {n}" for n in result.notes), ""]
    for item in result.items:
        lines += [
            f"{item.key} ({item.points} points): `{item.name}`, {_plain(describe(item, names))}",
            f"  {result.points[item.key]}/{item.points}: {result.verdicts[item.key]}",
            "",
        ]
    return "\n".join(lines)


def _plain(text: str) -> str:
    return text.replace("$T \\ne S$", "T != S").replace("$d_v \\ne d_k$", "d_v != d_k").replace("`", "")


def mistake_of(verdict: str) -> str | None:
    """The class-summary category of a verdict: None for a pass and for an item not attempted
    (missing or not written yet: nothing to re-teach from it), else the mistake."""
    if verdict == "pass" or verdict.startswith(("missing:", "not written yet")) or "is not written yet" in verdict:
        return None
    if verdict.startswith(("crashed:", "stopped:")):
        return verdict.split(":", 1)[0] + " (error, time limit or killed)"
    if "values differ from the reference" in verdict:
        return "wrong values, no named mistake"
    return verdict


def class_summary(results: list[Result]) -> list[tuple[int, str, str]]:
    """``(students, item key, mistake)``: how many students made each mistake, most common first."""
    counts = Counter()
    for r in results:
        for key, verdict in r.verdicts.items():
            m = mistake_of(verdict)
            if m is not None:
                counts[(key, m)] += 1
    return sorted(((n, key, m) for (key, m), n in counts.items()), key=lambda t: (-t[0], t[1], t[2]))


def csv_text(results: list[Result], items: list[Item], student_variants: dict[str, str] | None = None) -> str:
    """One row per student. With ``student_variants`` (student -> variant key) a ``variant``
    column is added and the assignment's column, whatever the variant, is ``assignment``."""
    buf = io.StringIO()
    keys = [i.key for i in items]
    if student_variants is not None:
        keys = ["variant", *("assignment" if k == ASSIGNMENT_KEY else k for k in keys)]
    writer = csv.DictWriter(buf, fieldnames=["student", *keys, "total"], lineterminator="\n")
    writer.writeheader()
    for r in results:
        points = dict(r.points)
        if student_variants is not None:
            variant = variants.BY_KEY[student_variants[r.student]]
            points["assignment"] = points.pop(variant.item_key)
            points["variant"] = variant.key
        writer.writerow({"student": r.student, **points, "total": r.total})
    return buf.getvalue()


def default_seed(parser: argparse.ArgumentParser) -> str:
    """The variants' seed when none is given: the course's name (``course: name`` of the
    book's _config.yml), so two courses forked from the book give a student different variants."""
    from . import book

    try:
        return book.course_name()
    except (book.BookError, OSError) as err:
        parser.error(f"give --variant-seed (no book's _config.yml to take the course's name from: {err})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_classroom.grade",
        description="Run the exercise self-checks on each submission, each in its own sandboxed process: "
        "one line per item, points as CSV.",
        epilog="Each submission runs in an OS sandbox (bubblewrap, on Linux): it sees no file of yours, no other "
        "submission and no network. See the instructor's assessment page for what it protects.",
    )
    parser.add_argument("submissions", nargs="*", type=Path, help=".py files or .ipynb notebooks, one per student")
    parser.add_argument("--csv", type=Path, help="write the points per student and item to this CSV file")
    parser.add_argument("--items", help="grade only these items (comma-separated keys)")
    parser.add_argument("--assignment", help=f"grade only a named set of items: {', '.join(ASSIGNMENTS)}")
    parser.add_argument("--feedback", type=Path, help="write one feedback file per student to this folder")
    parser.add_argument("--time-limit", type=float, default=None, help=f"seconds per item (default {TIME_LIMIT})")
    parser.add_argument("--memory-limit", type=int, default=None,
                        help=f"bytes of memory for all of a submission's processes together (default {MEMORY_LIMIT}, 2 GiB)")
    parser.add_argument("--site", type=Path, default=None,
                        help="the built web edition (_build/html) whose exercise numbers the feedback quotes "
                        f"(default ${SITE_ENV}, else this checkout's build; without one, exercises are named by title)")
    parser.add_argument("--no-isolation", action="store_true",
                        help="grade without the OS sandbox, with your own rights and view of the machine: only for "
                        "a class whose files you trust (the output and the summary file say so)")
    parser.add_argument("--variant-for", metavar="STUDENT_ID", help="print the assignment's variant of this student")
    parser.add_argument("--variants", nargs="?", const=True, metavar="ROSTER",
                        help="grade the assignment against each student's variant: a CSV with columns student "
                        "(the id) and submission (the file)")
    parser.add_argument("--variant-seed", default=None,
                        help="the course's seed that, with the id, chooses a variant (default: course: name in _config.yml)")
    args = parser.parse_args(argv)
    if args.variant_seed is None and (args.variant_for is not None or args.variants):
        args.variant_seed = default_seed(parser)
    if args.variant_for is not None:
        try:
            print(variants.task_text(variants.variant_for(args.variant_for, args.variant_seed), args.variant_for.strip()))
        except ValueError as err:
            parser.error(str(err))
        return 0
    if not args.submissions:
        parser.error("give the submissions to grade (or --variant-for STUDENT_ID; a Gradescope autograder is written by "
                     "python -m transformer_classroom.gradescope --write DIR)")
    if args.variants is True:
        parser.error("--variants needs the roster CSV (student, submission) when grading files")
    try:
        if args.variants and not (args.items or args.assignment):
            items = select_items(assignment="assignment")
        else:
            items = select_items(args.items, args.assignment)
        per_student = {}
        if args.variants:
            roster = variants.read_roster(Path(args.variants))
            unknown = [p.name for p in args.submissions if p.name not in roster]
            if unknown:
                raise ValueError(f"not in the roster {args.variants}: {', '.join(unknown)}")
            for path in args.submissions:
                variant = variants.variant_for(roster[path.name], args.variant_seed)
                per_student[path] = (roster[path.name], variant, items_for_variant(items, variant))
    except (ValueError, OSError) as err:
        parser.error(str(err))
    refused = outputs.problems(args.csv, args.feedback)
    if refused:
        parser.error("; ".join(refused))
    warning = None
    if args.no_isolation:
        warning = ("WARNING: graded without isolation (--no-isolation): each submission ran with your rights and "
                   "view of the machine, and could read and write your files")
        print(warning, flush=True)
    else:
        problem = sandbox_module.isolation_problem()
        if problem:
            print(f"grade: nothing was graded: {problem}", file=sys.stderr)
            return 2
    results, student_variants = [], {}
    for path in args.submissions:
        chosen = per_student[path][2] if path in per_student else items
        result = grade_submission(path, chosen, time_limit=args.time_limit, memory_limit=args.memory_limit,
                                  isolation=not args.no_isolation)
        if path in per_student:
            student, variant, _ = per_student[path]
            result.student = clean_text(student, 80)
            result.notes.insert(0, f"variant {variant.key}: {variant.name}{variant.signature}")
            student_variants[result.student] = variant.key
        print("\n".join(report_lines(result)), flush=True)
        results.append(result)
    summary = class_summary(results)
    summary_text = "\n".join(
        ([warning] if warning else [])
        + ["Class summary: students per mistake, most common first"]
        + [f"{n:>4}  {key}: {m}" for n, key, m in summary]
    )
    print(summary_text)
    files, feedback_files = {}, None
    if args.csv:
        files[args.csv] = csv_text(results, items, student_variants if args.variants else None)
        files[outputs.summary_path(args.csv)] = summary_text + "\n"
    if args.feedback:
        names = exercise_names(args.site)
        feedback_files = {outputs.file_name(r.student): feedback_text(r, names) for r in results}
    try:
        outputs.write(files, args.feedback, feedback_files)
    except OSError as err:
        print(f"grade: the results could not be written, and none was: {err}", file=sys.stderr)
        return 1
    if args.feedback:
        print(f"wrote {len(results)} feedback files to {args.feedback}")
    if args.csv:
        print(f"wrote {args.csv} ({len(results)} students) and {outputs.summary_path(args.csv).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
