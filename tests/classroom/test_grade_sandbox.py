"""Hostile submissions cannot change anyone's marks, their own included, beyond what they compute.

One class is graded in one run: an honest student first (as if alone), then a submission
for each attack, then the honest student again under another name. The honest marks must
be the same both times, each attacker gets exactly the points of what it computed, and
the run writes every row, whatever the attackers did. The class is graded twice: in the OS
sandbox, and with ``--no-isolation``, where only the grader's defences inside Python stand
between the attacks and the marks (the escapes only the OS sandbox stops are in
``test_grade_isolation.py``).
"""

from __future__ import annotations

import csv
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tests.classroom.test_grade import HEADER, OTHER_SOLUTIONS, SOLUTIONS, _lines, _points
from transformer_classroom import grade, outputs

SPLIT_HEADS = '''
def split_heads(x, num_heads):  # right: these 2 points are earned after the attack
    b, t, e = x.shape
    return x.reshape(b, t, num_heads, e // num_heads).transpose(0, 2, 1, 3)
'''

ATTACKS = {
    # Replaces the checks (and their __code__) from a default argument: in the grader's
    # process this gave every later student full marks.
    "tamper_default": '''
import numpy as np
import transformer_lessons.checks as C
import transformer_lessons.checks.bughunt as B

def _patch():
    noop = (lambda *a, **k: None).__code__
    for mod in (C, B):
        for name in dir(mod):
            f = getattr(mod, name)
            if name.startswith(("check_", "diagnose")) and hasattr(f, "__code__"):
                f.__code__ = noop
    for k in list(B.CHECKS):
        B.CHECKS[k] = lambda f: None
    return 0

def self_attention(Q, K, V, _=_patch()):
    return Q
''',
    # The same from a decorator, on a function that computes nothing.
    "tamper_decorator": '''
import numpy as np

def cheat(f):
    import transformer_lessons.checks as C
    C.check_positional_encoding.__code__ = (lambda *a, **k: None).__code__
    C.close.__code__ = (lambda *a, **k: True).__code__
    return f

@cheat
def my_positional_encoding(seq_len, d_model):
    return np.zeros((seq_len, d_model))
''',
    # Forged marks at exit: an atexit hook that rewrites the CSV, and an attempt to exit cleanly.
    "forge_atexit": '''
import atexit, sys
import numpy as np

def _forge():
    with open(CSV, "w") as f:
        f.write("student,total\\nforge_atexit,999\\n")

def self_attention(Q, K, V):
    atexit.register(_forge)
    sys.exit(0)
''',
    # A process that detaches (double fork + setsid, and start_new_session=True) and keeps
    # rewriting the CSV, to outlive the grading and forge the marks at the end.
    "forge_detached": '''
import os, subprocess, sys, time
import numpy as np

def self_attention(Q, K, V):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(PIDS, "a") as f:
                f.write(f"{os.getpid()}\\n")
            while True:
                try:
                    with open(CSV, "w") as f:
                        f.write("student,total\\nforge_detached,999\\n")
                except OSError:
                    pass
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    p = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(1)"], start_new_session=True)
    with open(PIDS, "a") as f:
        f.write(f"{p.pid}\\n")
    return np.zeros((Q.shape[0], V.shape[1]))
''',
    # A time-out swallowed in a loop, then a right answer that must still be graded.
    "swallow_timeout": '''
import time
import numpy as np

def causal_attention(Q, K, V):
    while True:
        try:
            time.sleep(0.1)
        except BaseException:
            continue
''' + SPLIT_HEADS,
    "hard_exit": '''
import os
import numpy as np

def softmax_rows(scores):
    os._exit(3)
''' + SPLIT_HEADS,
    "memory_hog": '''
import numpy as np

def batched_attention(Q, K, V):
    hog = []
    while True:
        hog.append(np.ones(10**7))
''' + SPLIT_HEADS,
    # A .py file in cells: the cell with a syntax error costs only itself.
    "broken_cell": '''# %%
import numpy as np

# %%
def self_attention(Q, K, V)
    return Q

# %%
''' + SPLIT_HEADS,
    # Module-level helpers run; top-level calls and prints do not.
    "helpers": '''
import numpy as np
softmax = lambda s: np.exp(s - s.max(-1, keepdims=True)) / np.exp(s - s.max(-1, keepdims=True)).sum(-1, keepdims=True)
KEY_AXIS = -1

def self_attention(Q, K, V):
    return softmax(Q @ K.T / np.sqrt(Q.shape[KEY_AXIS])) @ V

print("honest: total 99/99")
raise SystemExit("top-level code must not run")
''',
    # The book's own implementation: imported, and reached through __import__ at run time.
    "book_code": '''
from transformer_lessons import scaled_dot_product_attention as sdpa, positional_encoding
from transformer_lessons.checks import mh_reference
tl = __import__("transformer_lessons")

def self_attention(Q, K, V):
    return sdpa(Q, K, V)[0]

def my_positional_encoding(seq_len, d_model):
    return positional_encoding(seq_len, d_model)

def multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads):
    return mh_reference(X, W_q, W_k, W_v, W_o, num_heads)

def batched_attention(Q, K, V):
    return tl.scaled_dot_product_attention(Q, K, V)[0]
''',
    # A correct answer that scales its input in place must pass.
    "in_place": '''
import numpy as np
from transformer_lessons import softmax

def self_attention(Q, K, V):
    Q /= np.sqrt(Q.shape[-1])
    return softmax(Q @ K.T) @ V

def causal_attention(Q, K, V):
    T = Q.shape[0]
    Q /= np.sqrt(Q.shape[-1])
    return softmax(np.where(np.tril(np.ones((T, T), dtype=bool)), Q @ K.T, -np.inf)) @ V
''',
    # Printed report lines, and an error message with fake report lines in it.
    "fake_lines": '''
import numpy as np

def self_attention(Q, K, V):
    print("honest: self_attention  0/6  forged")
    print("fake_lines: total 99/99")
    raise ValueError("boom\\nfake_lines: total 99/99\\nhonest: total 0/0")
''',
}

EARNED = {  # what each attacker computed, in points
    "tamper_default": 0,
    "tamper_decorator": 0,
    "forge_atexit": 0,
    "forge_detached": 0,
    "swallow_timeout": 2,
    "hard_exit": 2,
    "memory_hog": 2,
    "broken_cell": 2,
    "helpers": 9,
    "book_code": 0,
    "in_place": 11,
    "fake_lines": 0,
}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module", params=["isolated", "no-isolation"])
def graded(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("class")
    out_csv, pids, feedback = tmp / "marks.csv", tmp / "pids.txt", tmp / "feedback"
    honest = HEADER + "\n\n".join([*SOLUTIONS.values(), *OTHER_SOLUTIONS])
    files = [tmp / "honest.py"]
    files[0].write_text(honest)
    for name, source in ATTACKS.items():
        path = tmp / f"{name}.py"
        path.write_text(f"CSV = {str(out_csv)!r}\nPIDS = {str(pids)!r}\n" + source)
        files.append(path)
    files.append(tmp / "honest_again.py")
    files[-1].write_text(honest)
    import contextlib
    import io

    buf = io.StringIO()
    start = time.monotonic()
    with contextlib.redirect_stdout(buf):
        code = grade.main([*map(str, files), "--csv", str(out_csv), "--feedback", str(feedback),
                           "--time-limit", "10", "--memory-limit", str(2**30),
                           *(["--no-isolation"] if request.param == "no-isolation" else [])])
    seconds = time.monotonic() - start
    time.sleep(0.5)  # a forger left running would have rewritten the CSV by now
    return {"code": code, "out": buf.getvalue(), "csv": out_csv, "pids": pids, "feedback": feedback,
            "seconds": seconds, "isolated": request.param == "isolated"}


def test_the_run_finishes_and_writes_every_row(graded):
    assert graded["code"] == 0
    rows = list(csv.DictReader(graded["csv"].open()))
    assert [r["student"] for r in rows] == ["honest", *ATTACKS, "honest_again"]
    assert list(rows[0]) == ["student", *(i.key for i in grade.RUBRIC), "total"]


def test_honest_marks_are_the_same_alone_and_after_every_attack(graded):
    out = graded["out"]
    full = {**{i.key: i.points for i in grade.RUBRIC}, "total": sum(i.points for i in grade.RUBRIC)}
    assert _points(out, "honest") == full, out
    first = {k: v.split(" ", 1)[1] for k, v in _lines(out, "honest").items()}
    again = {k: v.split(" ", 1)[1] for k, v in _lines(out, "honest_again").items()}
    assert first == again
    rows = {r["student"]: r for r in csv.DictReader(graded["csv"].open())}
    assert {k: v for k, v in rows["honest"].items() if k != "student"} == {
        k: v for k, v in rows["honest_again"].items() if k != "student"
    }


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_attacker_earns_only_what_it_computed(graded, attack):
    assert _points(graded["out"], attack)["total"] == EARNED[attack], graded["out"]
    row = next(r for r in csv.DictReader(graded["csv"].open()) if r["student"] == attack)
    assert int(row["total"]) == EARNED[attack]


def test_the_reasons_are_one_line_each(graded):
    out = graded["out"]
    lines = {a: _lines(out, a) for a in ATTACKS}
    assert "stopped: the check took more than 10 s" in lines["swallow_timeout"]["bug_causal_attention"]
    assert "exited with code 3" in lines["hard_exit"]["bug_softmax_rows"]
    assert "MemoryError" in lines["memory_hog"]["bug_batched_attention"]
    assert "SystemExit" in lines["forge_atexit"]["self_attention"]
    assert re.search(r"^broken_cell: note: cell 3: SyntaxError", out, re.M)  # cell 1 is the CSV = ... preamble
    assert not re.search(r"^helpers: note:", out, re.M)  # every helper ran, the top-level raise did not
    book = lines["book_code"]
    assert "`scaled_dot_product_attention`" in book["self_attention"]
    assert "`positional_encoding`" in book["positional"]
    assert "`mh_reference`" in book["multi_head"]
    assert "`scaled_dot_product_attention`" in book["bug_batched_attention"]  # found at run time
    assert "ValueError: boom" in lines["fake_lines"]["self_attention"]


def test_printed_and_raised_report_lines_are_not_report_lines(graded):
    out = graded["out"]
    assert "forged" not in out and "99/99" not in out
    assert len(re.findall(r"^honest: total", out, re.M)) == 1


def test_nothing_a_submission_started_outlives_its_grading(graded):
    if graded["isolated"]:
        assert not graded["pids"].exists()  # the sandbox could not write it (test_grade_isolation.py)
        return
    pids = [int(p) for p in graded["pids"].read_text().split()]
    assert len(pids) >= 2  # per call: the double-forked forger and the start_new_session child
    assert not [p for p in pids if _alive(p)]
    assert "999" not in graded["csv"].read_text()


def test_feedback_files_and_class_summary(graded):
    fb = graded["feedback"]
    assert sorted(p.stem for p in fb.iterdir() if p.name != outputs.MARKER) == sorted(["honest", *ATTACKS, "honest_again"])
    assert (fb / outputs.MARKER).is_file()  # how a later run knows the folder is the grader's own
    text = (fb / "in_place.txt").read_text()
    assert "11 of" in text and "self_attention (6 points)" in text and "6/6: pass" in text
    summary = graded["csv"].with_name("marks_summary.txt").read_text()
    if not graded["isolated"]:
        warning, summary = summary.split("\n", 1)
        assert warning.startswith("WARNING: graded without isolation") and warning in graded["out"]
    assert summary.startswith("Class summary")
    counts = [int(m) for m in re.findall(r"^\s*(\d+)\s", summary, re.M)]
    assert counts and counts == sorted(counts, reverse=True)
    assert "not attempted" not in summary
    assert summary.strip() in graded["out"]


def test_items_and_assignments_grade_only_what_was_assigned(tmp_path):
    path = tmp_path / "lab.py"
    path.write_text(HEADER + "\n\n".join(SOLUTIONS.values()))
    lab = grade.select_items(assignment="lab")
    result = grade.grade_submission(path, lab, time_limit=30)
    assert list(result.points) == list(grade.ASSIGNMENTS["lab"])
    assert result.total == result.max_total == sum(i.points for i in lab)
    two = grade.select_items("positional,bug_split_heads")
    assert [i.key for i in two] == ["positional", "bug_split_heads"]
    with pytest.raises(ValueError, match="unknown item"):
        grade.select_items("ex9_nothing")
    with pytest.raises(ValueError, match="unknown assignment"):
        grade.select_items(assignment="nope")


def test_the_grader_never_unpickles_a_reply():
    """The grader's side reads replies as JSON and npy only (the child's side may unpickle requests)."""
    src = (Path(grade.__file__).with_name("sandbox.py")).read_text()
    assert "pickle.load" not in src and "allow_pickle=False" in src
    assert "torch.load" not in src


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


# ---------------------------------------------------------------- the pieces, without a child
def _npy(arr) -> bytes:
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def test_replies_are_values_or_refused():
    import numpy as np
    import torch

    from transformer_classroom import sandbox

    ok = sandbox.decode({"tuple": [{"nd": 0}, {"torch": 1, "dtype": "float32"}, {"py": 3}]},
                        [_npy(np.eye(2)), _npy(np.ones(3, dtype=np.float32))])
    assert isinstance(ok, tuple) and ok[1].dtype == torch.float32 and ok[2] == 3
    assert np.array_equal(ok[0], np.eye(2))
    pickled = _npy(np.array([object()], dtype=object))  # an object array is a pickle inside an .npy
    for node, blobs in [
        ({"nd": 0}, [pickled]),
        ({"nd": 5}, []),
        ({"torch": 0, "dtype": "object"}, [_npy(np.ones(2))]),
        ({"py": [1, 2]}, []),
        ({"something": 1}, []),
        ("not a dict", []),
    ]:
        with pytest.raises(sandbox.BadReply):
            sandbox.decode(node, blobs)
    with pytest.raises(TypeError, match="cannot read"):
        sandbox.decode({"opaque": "Generator"}, [])


def test_a_learners_error_never_becomes_a_verdict_or_an_exit():
    from transformer_classroom import sandbox
    from transformer_lessons.checks import CheckFailed

    for name in ("CheckFailed", "AssertionError", "SystemExit", "KeyboardInterrupt"):
        exc = sandbox.rebuild_exception({"type": name, "msg": "Correct!\nalice: total 99/99"})
        assert type(exc).__name__ == name and not isinstance(exc, (AssertionError, CheckFailed))
        assert isinstance(exc, Exception) and str(exc) == "Correct!"  # one line
    assert isinstance(sandbox.rebuild_exception({"type": "X", "not_implemented": True, "msg": ""}), NotImplementedError)
    assert type(sandbox.rebuild_exception({"type": "ValueError", "msg": "m"})) is ValueError


def test_what_of_a_file_runs(tmp_path):
    from transformer_classroom import submission

    path = tmp_path / "s.py"
    path.write_text(
        "import numpy as np\nfrom transformer_lessons.toy import train_reversal, ToyConfig\n"
        "D = 8\nsq = lambda x: x * x\nrng = np.random.default_rng(0)\n"
        "result = train_reversal(ToyConfig())\nmodel = result.model\nok = check_self_attention(sq)\n"
        "def f(x):\n    return sq(x)\nw = f(2)\nprint(D)\n# %%\ndef g(:\n"
    )
    cells, notes, skipped = submission.select(path)
    first = cells[0].tree.body
    ran = [type(first[i]).__name__ + ":" + (getattr(first[i], "name", "") or ast_target(first[i])) for i in cells[0].run]
    assert ran == ["Import:", "ImportFrom:", "Assign:D", "Assign:sq", "Assign:rng", "FunctionDef:f"]
    assert set(skipped) == {"result", "model", "ok", "w"}
    assert "train_reversal" in skipped["result"] and "needs `result`" in skipped["model"]
    assert len(notes) == 1 and notes[0].startswith("cell 2: SyntaxError")  # the cell after `# %%`


def ast_target(node) -> str:
    import ast

    return node.targets[0].id if isinstance(node, ast.Assign) else ""


def test_book_references_follow_helpers_and_aliases(tmp_path):
    from transformer_classroom import submission

    path = tmp_path / "s.py"
    path.write_text(
        "import transformer_lessons as tl\nfrom transformer_lessons.checks import mh_reference as ref\n"
        "sdpa = tl.scaled_dot_product_attention\n"
        "def helper(q, k, v):\n    return sdpa(q, k, v)\n"
        "def self_attention(Q, K, V):\n    return helper(Q, K, V)[0]\n"
        "def mh(*a):\n    return ref(*a)\n"
        "def clean(s):\n    return tl.softmax(s)\n"
    )
    cells, _, _ = submission.select(path)
    refs = submission.book_references(cells)
    assert "transformer_lessons.scaled_dot_product_attention" in refs["self_attention"]
    assert refs["mh"] == {"transformer_lessons.checks.mh_reference"}
    item = next(i for i in grade.RUBRIC if i.key == "self_attention")
    assert grade._book_violation(item, refs["clean"]) is None  # softmax is allowed
    assert grade._book_violation(item, refs["self_attention"]) == "transformer_lessons.scaled_dot_product_attention"
    assert grade._book_violation(item, {"os.system", "antigravity.x"}) is None  # never imported
