"""Per-student variants of the graded assignment: the same skill, a different task each.

The assignment of the exercises page is causal multi-head attention. A variant changes what
the mask is or where the keys come from, so that one student's solution does not pass
another's check:

* ``causal``: the book's task, a causal mask ``(T, T)`` passed in;
* ``padding``: a padding mask ``key_mask (B, S)``, True = a real token, one row per sequence;
* ``cross``: cross-attention, queries from ``X (B, T, E)``, keys and values from ``Y (B, S, E)``
  with ``T != S``;
* ``heads4``, ``heads6``: causal self-attention with the number of heads fixed by the variant
  (4 or 6 heads of ``E = 24``), the mask made inside the function.

Which variant a student gets is a function of the student's id and a seed (the course's,
``--variant-seed``; change it each term): the first 8 bytes of SHA-256 of ``seed``, a NUL
byte and the id, modulo the number of variants. No list has to be kept: the same id always
gives the same variant, on the command line and on Gradescope. The id is whatever the
instructor chooses and uses consistently; on Gradescope it is the student id (``sid``) of
the submission's first user, or the e-mail address where the course gives no student ids.

Each variant is one rubric item (:func:`items`) graded by :mod:`transformer_classroom.grade`
with the checks of :mod:`transformer_lessons.checks.assignment`.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

POINTS = 8  # as the causal assignment item


@dataclass(frozen=True)
class Variant:
    """One variant: the function the student writes, its shapes, what it must do."""

    key: str
    name: str
    signature: str
    returns: str
    task: str
    check: str  # the check's name in transformer_lessons.checks (for the instructor)
    num_heads: int | None = None

    @property
    def item_key(self) -> str:
        return "assign_causal_multi_head" if self.key == "causal" else f"assign_{self.key}"


VARIANTS = (
    Variant("causal", "causal_multi_head_attention", "(X, W_q, W_k, W_v, W_o, num_heads, mask)",
            "(output (B, T, E), weights (B, H, T, T))",
            "Multi-head self-attention of X (B, T, E) with the boolean mask (T, T) (True = may attend) "
            "applied in every head before the softmax.", "check_causal_multihead_attention"),
    Variant("padding", "padded_multi_head_attention", "(X, W_q, W_k, W_v, W_o, num_heads, key_mask)",
            "(output (B, T, E), weights (B, H, T, S))",
            "Multi-head self-attention of X (B, T, E) (so S = T) with a padding mask key_mask (B, S): "
            "True marks a real token, False a padding position that no query may attend to; each "
            "sequence of the batch has its own mask.", "check_padded_multihead_attention"),
    Variant("cross", "cross_multi_head_attention", "(X, Y, W_q, W_k, W_v, W_o, num_heads)",
            "(output (B, T, E), weights (B, H, T, S))",
            "Multi-head cross-attention: the queries come from X (B, T, E), the keys and values from "
            "Y (B, S, E), where T and S differ; no mask.", "check_cross_multihead_attention"),
    *(
        Variant(f"heads{h}", "fixed_heads_causal_attention", "(X, W_q, W_k, W_v, W_o)",
                "(output (B, T, E), weights (B, H, T, T))",
                f"Causal multi-head self-attention of X (B, T, E) with H = {h} heads (the number is part "
                f"of your task, not an argument): make the causal mask (T, T) inside the function, "
                f"from T = X.shape[1].", "check_fixed_heads_causal_attention", num_heads=h)
        for h in (4, 6)
    ),
)
BY_KEY = {v.key: v for v in VARIANTS}


def variant_for(student: str, seed: str) -> Variant:
    """The variant of ``student`` (an id, stripped of surrounding spaces) under ``seed`` (the
    course's: ``--variant-seed``, by default ``course: name`` of _config.yml)."""
    student = str(student).strip()
    if not student:
        raise ValueError("a student id is needed to choose a variant (got an empty one)")
    digest = hashlib.sha256(f"{seed}\0{student}".encode("utf-8")).digest()
    return VARIANTS[int.from_bytes(digest[:8], "big") % len(VARIANTS)]


def task_text(variant: Variant, student: str | None = None) -> str:
    """What a student is given: the function to write, its shapes, the rules, what to hand in."""
    head = f"Graded assignment, variant `{variant.key}`" + (f" for {student}" if student else "")
    return "\n".join([
        head,
        "",
        f"Write `{variant.name}{variant.signature}` returning `{variant.returns}`.",
        variant.task,
        "The inputs are NumPy float64 arrays; W_q, W_k, W_v, W_o are (E, E) matrices used as "
        "Q = X @ W_q (and K = ... @ W_k, V = ... @ W_v, output = concat @ W_o), with no biases; each head "
        "works in d_k = E / H dimensions and divides its scores by sqrt(d_k). Masks are boolean, "
        "True = may attend; blocked scores become -inf before the softmax.",
        "Use NumPy (and `softmax` from transformer_lessons if you like), not the book's attention "
        "functions. Hand in the notebook or a .py file with the function, one test of your own "
        "that can fail, and three to five sentences on why the mask is applied to the scores "
        "before the softmax.",
    ])


def read_roster(path: Path) -> dict[str, str]:
    """``{submission file name: student id}`` from a CSV with columns ``student`` and ``submission``.

    ``submission`` is the file's name or path (only its name is matched); a submission not in
    the roster cannot be graded against a variant and is an error, as is a repeated file.
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"student", "submission"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: the roster needs the columns student and submission; missing: "
                             f"{', '.join(sorted(missing))} (found: {', '.join(reader.fieldnames or []) or 'none'})")
        roster = {}
        for row_number, row in enumerate(reader, start=2):
            name = Path((row["submission"] or "").strip()).name
            student = (row["student"] or "").strip()
            if not name or not student:
                raise ValueError(f"{path}, line {row_number}: empty student or submission")
            if name in roster:
                raise ValueError(f"{path}, line {row_number}: {name} is listed twice")
            roster[name] = student
    return roster


def markdown_table() -> str:
    """The variants as a Markdown table (the assessment page prints it from here)."""
    rows = ["| Variant (rubric item) | The function | The task |", "|---|---|---|"]
    rows += [f"| `{v.key}` (`{v.item_key}`) | `{v.name}{v.signature}` returns `{v.returns}` | {v.task} "
             f"Graded by `{v.check}`. |" for v in VARIANTS]
    return "\n".join(rows)
