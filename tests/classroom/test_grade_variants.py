"""Per-student variants of the graded assignment (transformer_classroom.variants and grade).

Each variant's reference solution (written here, never on the site) passes its own check and
fails every other variant's; the choice of a variant is a fixed function of id and seed;
``--variants roster.csv`` and the Gradescope bundle grade each student against that student's
variant, in the sandbox.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from transformer_classroom import book, grade, gradescope, variants
from transformer_lessons.attention import softmax

SEED = book.course_name()  # what the commands use without --variant-seed

HEADER = "import numpy as np\nfrom transformer_lessons import softmax\n\n"

COMMON = '''
def _heads(M, h):  # (B, n, E) -> (B, n, H, d_k) -> (B, H, n, d_k)
    B, n, E = M.shape
    return M.reshape(B, n, h, E // h).transpose(0, 2, 1, 3)


def _attend(Q, K, V, W_o, allowed):  # Q (B, H, T, d_k), K, V (B, H, S, d_k), allowed broadcasts to (B, H, T, S)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])  # (B, H, T, S)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    B, H, T, d_k = Q.shape
    concat = (weights @ V).transpose(0, 2, 1, 3).reshape(B, T, H * d_k)  # (B, H, T, d_k) -> (B, T, E)
    return concat @ W_o, weights
'''

SOLUTIONS = {
    "causal": COMMON + '''
def causal_multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, mask):
    h = num_heads
    return _attend(_heads(X @ W_q, h), _heads(X @ W_k, h), _heads(X @ W_v, h), W_o, mask)
''',
    "padding": COMMON + '''
def padded_multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads, key_mask):
    h = num_heads
    return _attend(_heads(X @ W_q, h), _heads(X @ W_k, h), _heads(X @ W_v, h), W_o, key_mask[:, None, None, :])
''',
    "cross": COMMON + '''
def cross_multi_head_attention(X, Y, W_q, W_k, W_v, W_o, num_heads):
    h = num_heads
    return _attend(_heads(X @ W_q, h), _heads(Y @ W_k, h), _heads(Y @ W_v, h), W_o, None)
''',
    **{
        f"heads{h}": COMMON + f'''
def fixed_heads_causal_attention(X, W_q, W_k, W_v, W_o):
    T = X.shape[1]
    mask = np.tril(np.ones((T, T), dtype=bool))  # (T, T), True = may attend
    return _attend(_heads(X @ W_q, {h}), _heads(X @ W_k, {h}), _heads(X @ W_v, {h}), W_o, mask)
'''
        for h in (4, 6)
    },
}


def _function(key: str):
    """The reference solution of a variant, as a function of this process."""
    namespace = {"np": np, "softmax": softmax}
    exec(SOLUTIONS[key], namespace)
    return namespace[variants.BY_KEY[key].name]


def test_every_variant_has_a_reference_solution():
    assert sorted(SOLUTIONS) == sorted(variants.BY_KEY)
    assert len({v.item_key for v in variants.VARIANTS}) == len(variants.VARIANTS)


@pytest.mark.parametrize("key", sorted(variants.BY_KEY))
def test_a_variants_solution_passes_its_own_check_and_fails_the_others(key, capsys):
    solution = _function(key)
    grade.variant_item(variants.BY_KEY[key]).check(solution)
    assert "Correct!" in capsys.readouterr().out
    for other in variants.VARIANTS:
        if other.key == key:
            continue
        with pytest.raises(AssertionError):  # CheckFailed: a wrong signature or wrong values
            grade.variant_item(other).check(solution)


def test_the_checks_name_the_usual_mistakes():
    from transformer_lessons.checks import CheckFailed

    flipped = _function("padding")

    def inverted(X, W_q, W_k, W_v, W_o, h, key_mask):
        return flipped(X, W_q, W_k, W_v, W_o, h, ~key_mask | (key_mask.sum(1, keepdims=True) == key_mask.shape[1]))

    with pytest.raises(CheckFailed, match="padding mask|values differ|nan"):
        grade.variant_item(variants.BY_KEY["padding"]).check(inverted)
    heads4 = _function("heads4")
    with pytest.raises(CheckFailed, match="4 heads|H = 6"):
        grade.variant_item(variants.BY_KEY["heads6"]).check(heads4)
    cross = _function("cross")
    with pytest.raises(CheckFailed, match="keys and values come from X"):
        grade.variant_item(variants.BY_KEY["cross"]).check(lambda X, Y, *rest: cross(X, X, *rest))


def test_the_variant_is_a_fixed_function_of_id_and_seed():
    ids = [f"s{i:04d}" for i in range(500)]
    first = [variants.variant_for(s, SEED).key for s in ids]
    assert first == [variants.variant_for(f" {s} ", SEED).key for s in ids]  # spaces do not matter
    counts = Counter(first)
    assert set(counts) == set(variants.BY_KEY) and min(counts.values()) > 500 / len(counts) / 2, counts
    other = [variants.variant_for(s, seed="spring-2027").key for s in ids]
    assert sum(a != b for a, b in zip(first, other)) > len(ids) / 2  # another seed, another assignment
    with pytest.raises(ValueError, match="student id"):
        variants.variant_for("  ", SEED)


def test_variant_for_prints_the_task_without_a_solution(capsys):
    assert grade.main(["--variant-for", "s0001"]) == 0
    out = capsys.readouterr().out
    variant = variants.variant_for("s0001", SEED)
    assert f"`{variant.name}{variant.signature}`" in out and variant.key in out and "s0001" in out
    assert "np.where" not in out and "swapaxes" not in out


def test_the_roster_is_read_strictly(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student,submission\ns1,alice.py\ns2,sub/bob.ipynb\n")
    assert variants.read_roster(path) == {"alice.py": "s1", "bob.ipynb": "s2"}
    path.write_text("id,file\ns1,alice.py\n")
    with pytest.raises(ValueError, match="student and submission"):
        variants.read_roster(path)
    path.write_text("student,submission\ns1,alice.py\ns2,alice.py\n")
    with pytest.raises(ValueError, match="twice"):
        variants.read_roster(path)


def _ids_for(*keys: str, seed: str = SEED) -> dict[str, str]:
    """A student id for each variant key."""
    found = {}
    for i in range(10_000):
        key = variants.variant_for(f"id{i}", seed).key
        if key in keys and key not in found:
            found[key] = f"id{i}"
        if len(found) == len(keys):
            return found
    raise AssertionError(f"no ids for {keys}")


def test_the_roster_grades_each_submission_against_its_variant(tmp_path, capsys):
    """Two students, two variants, each handing in the other's task: only the own one scores."""
    ids = _ids_for("cross", "padding")
    files = {}
    for key, student in ids.items():
        files[key] = tmp_path / f"{key}_student.py"
        files[key].write_text(HEADER + SOLUTIONS[key])
    swapped = tmp_path / "swapped.py"
    swapped.write_text(HEADER + SOLUTIONS["cross"])  # the padding student hands in the cross solution
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "submission"])
        writer.writerow([ids["cross"], files["cross"].name])
        writer.writerow([ids["padding"], files["padding"].name])
        writer.writerow(["id-swap-" + ids["padding"], swapped.name])
    # the third id must have the padding variant too: find one
    swap_id = next(f"swap{i}" for i in range(10_000) if variants.variant_for(f"swap{i}", SEED).key == "padding")
    roster.write_text(roster.read_text().replace("id-swap-" + ids["padding"], swap_id))
    marks = tmp_path / "marks.csv"
    code = grade.main(["--variants", str(roster), str(files["cross"]), str(files["padding"]), str(swapped),
                       "--csv", str(marks), "--time-limit", "60"])
    assert code == 0
    rows = {r["student"]: r for r in csv.DictReader(marks.open())}
    assert rows[ids["cross"]]["variant"] == "cross" and rows[ids["cross"]]["assignment"] == "8"
    assert rows[ids["padding"]]["variant"] == "padding" and rows[ids["padding"]]["assignment"] == "8"
    assert rows[swap_id]["variant"] == "padding" and rows[swap_id]["assignment"] == "0"
    out = capsys.readouterr().out
    assert f"{swap_id}: assign_padding" in out and "missing: no `padded_multi_head_attention`" in out


def test_a_submission_missing_from_the_roster_is_an_error(tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("student,submission\ns1,alice.py\n")
    (tmp_path / "bob.py").write_text("x = 1\n")
    with pytest.raises(SystemExit):
        grade.main(["--variants", str(roster), str(tmp_path / "bob.py")])
    assert "not in the roster" in capsys.readouterr().err


def test_the_gradescope_bundle_grades_the_submitters_variant(tmp_path):
    bundle = tmp_path / "bundle"
    assert gradescope.main(["--write", str(bundle), "--variants", "--variant-seed", "term-1", "--time-limit", "60"]) == 0
    config = json.loads((bundle / "config.json").read_text())
    assert config["variant_seed"] == "term-1" and config["items"] == [grade.ASSIGNMENT_KEY]
    ids = _ids_for("heads4", "causal", seed="term-1")
    docs = {}
    for key, student in ids.items():
        root = tmp_path / key
        (root / "submission").mkdir(parents=True)
        (root / "submission" / "answer.py").write_text(HEADER + SOLUTIONS["heads4"])  # both hand in heads4
        metadata = {"users": [{"email": f"{student}@example.org", "name": "A Student", "sid": student}]}
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
        env = {**os.environ, gradescope.ROOT_VARIABLE: str(root), "PYTHON": sys.executable}
        proc = subprocess.run(["bash", str(bundle / "run_autograder")], env=env, capture_output=True, text=True,
                              timeout=900, cwd=root)
        assert proc.returncode == 0, proc.stderr
        docs[key] = json.loads((root / "results" / "results.json").read_text())
    assert docs["heads4"]["score"] == variants.POINTS and "Variant heads4" in docs["heads4"]["output"]
    assert docs["causal"]["score"] == 0 and "Variant causal" in docs["causal"]["output"]
    assert docs["causal"]["tests"][0]["name"].startswith("assign_causal_multi_head")


def test_gradescope_reads_the_id_from_the_metadata(tmp_path):
    assert gradescope.student_id(tmp_path) is None
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "a@b.org", "sid": None}]}))
    assert gradescope.student_id(tmp_path) == "a@b.org"
    (tmp_path / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "a@b.org", "sid": "123"}]}))
    assert gradescope.student_id(tmp_path) == "123"
    (tmp_path / "submission_metadata.json").write_text("not json")
    assert gradescope.student_id(tmp_path) is None
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "answer.py").write_text(HEADER + SOLUTIONS["causal"])
    doc = gradescope.results(tmp_path, {"items": [grade.ASSIGNMENT_KEY], "time_limit": 10,
                                        "memory_limit": grade.MEMORY_LIMIT, "variant_seed": "x"})
    assert doc["score"] == 0 and "no student id" in doc["tests"][0]["output"]


def test_the_instructor_page_lists_the_variants_from_the_module():
    from tests.book_files import ROOT

    text = (ROOT / "book" / "instructor_assessment.md").read_text()
    assert "variants.markdown_table()" in text
    table = variants.markdown_table()
    assert all(f"`{v.key}`" in table and v.name in table for v in variants.VARIANTS)
    # the page shows structure, never a variant's solution
    for solution in SOLUTIONS.values():
        assert solution.strip().splitlines()[-1].strip() not in text


@pytest.mark.parametrize("fill_rows", ["nan", "zero"])
def test_the_padding_variant_ignores_the_padding_queries_rows(fill_rows, capsys):
    """The task blocks padding keys; what a padding query computes is never used, so an answer
    that also masks the padding rows (nan or zero there) passes, as in the bug hunt."""
    padded = _function("padding")

    def rows_and_columns(X, W_q, W_k, W_v, W_o, h, key_mask):
        out, weights = padded(X, W_q, W_k, W_v, W_o, h, key_mask)
        out, weights = out.copy(), weights.copy()
        fill = np.nan if fill_rows == "nan" else 0.0
        out[~key_mask] = fill  # (B, T, E): the padding queries' outputs
        weights.transpose(0, 2, 1, 3)[~key_mask] = fill  # (B, H, T, S): their rows of weights
        return out, weights

    grade.variant_item(variants.BY_KEY["padding"]).check(rows_and_columns)
    assert "Correct!" in capsys.readouterr().out


def _padded_with(kind: str):
    """The padding variant written with one mistake, with a plain exp/sum softmax and -1e9."""
    def f(X, W_q, W_k, W_v, W_o, h, key_mask):
        B, T, E = X.shape
        heads = lambda M: M.reshape(B, T, h, E // h).transpose(0, 2, 1, 3)  # noqa: E731
        Q, K, V = heads(X @ W_q), heads(X @ W_k), heads(X @ W_v)
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(E // h)
        keep = {"queries": key_mask[:, None, :, None], "inverted": ~key_mask[:, None, None, :],
                "zero": key_mask[:, None, None, :]}[kind]
        s = np.where(keep, s, 0.0 if kind == "zero" else -1e9)
        e = np.exp(s - s.max(-1, keepdims=True))
        w = e / e.sum(-1, keepdims=True)
        return (w @ V).transpose(0, 2, 1, 3).reshape(B, T, E) @ W_o, w
    return f


@pytest.mark.parametrize("kind, needle", [("queries", "padding keys still get weight"),
                                          ("inverted", "wrong way round"), ("zero", "set to 0")])
def test_the_padding_variant_names_mask_mistakes_however_the_softmax_is_written(kind, needle):
    from transformer_lessons.checks import CheckFailed

    with pytest.raises(CheckFailed, match=needle):
        grade.variant_item(variants.BY_KEY["padding"]).check(_padded_with(kind))
