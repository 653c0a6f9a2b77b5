"""The Gradescope bundle: its run_autograder, run on scratch trees, writes a valid results.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.classroom.test_grade import HEADER, PARTLY_BROKEN, SOLUTIONS
from transformer_classroom import grade, gradescope

ITEMS = grade.ASSIGNMENTS["exercises"]

SUBMISSIONS = {
    "good": HEADER + "\n\n".join(SOLUTIONS.values()),
    "partial": PARTLY_BROKEN,
    "crashing": "import os\n\ndef self_attention(Q, K, V):\n    os._exit(1)\n\n# %%\ndef split_heads(x, h)\n    return x\n",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bundle")
    assert gradescope.main(["--write", str(folder), "--assignment", "exercises", "--time-limit", "10"]) == 0
    return folder


def test_the_bundle_has_what_gradescope_needs(bundle):
    for name in ("setup.sh", "run_autograder"):
        assert os.access(bundle / name, os.X_OK), name
    pins = (bundle / "requirements.txt").read_text().splitlines()
    assert [line.split("==")[0] for line in pins] == ["numpy", "torch"] and all("==" in p for p in pins)
    assert (bundle / "transformer_classroom" / "sandbox_worker.py").exists()
    assert (bundle / "transformer_lessons" / "checks" / "core.py").exists()


def test_the_bundle_carries_only_what_grading_needs(bundle):
    """Grading's modules, not the plots, the pretrained model, the LMS export, the book's
    reader or anything of the build."""
    carried = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*.py")}
    for absent in ("transformer_lessons/plots.py", "transformer_lessons/pretrained.py", "transformer_lessons/diagrams.py",
                   "transformer_classroom/lms.py", "transformer_classroom/book.py", "transformer_classroom/quiz_blocks.py"):
        assert absent not in carried, absent
    assert not (bundle / "book_build").exists()
    assert json.loads((bundle / "config.json").read_text())["items"] == list(ITEMS)


def _run(bundle, root):
    env = {**os.environ, gradescope.ROOT_VARIABLE: str(root), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(bundle / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=900, cwd=root)
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "results" / "results.json").read_text())


def _valid(doc: dict) -> None:
    """Gradescope's format: a numeric score, tests with name, score, max_score and output."""
    assert set(doc) >= {"score", "tests", "output"}
    assert isinstance(doc["score"], (int, float)) and isinstance(doc["output"], str)
    by_item = {i.key: i for i in grade.RUBRIC}
    assert [t["name"].split(":")[0] for t in doc["tests"]] == list(ITEMS)
    for t in doc["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output"}
        assert isinstance(t["output"], str) and t["output"]
        assert t["max_score"] == by_item[t["name"].split(":")[0]].points
        assert 0 <= t["score"] <= t["max_score"]
        assert t["status"] == ("passed" if t["score"] == t["max_score"] else "failed")
    assert doc["score"] == sum(t["score"] for t in doc["tests"])


@pytest.mark.parametrize("name", sorted(SUBMISSIONS))
def test_run_autograder_grades_a_scratch_tree(bundle, tmp_path, name):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / f"{name}.py").write_text(SUBMISSIONS[name])
    doc = _run(bundle, tmp_path)
    _valid(doc)
    full = sum(grade.RUBRIC[[i.key for i in grade.RUBRIC].index(k)].points for k in ITEMS)
    tests = {t["name"].split(":")[0]: t for t in doc["tests"]}
    if name == "good":
        assert doc["score"] == full
    elif name == "partial":
        assert 0 < doc["score"] < full and tests["positional"]["score"] == 5
        assert "no transpose" in tests["multi_head"]["output"]
    else:
        assert doc["score"] == 0
        assert "exited with code 1" in tests["self_attention"]["output"]
        assert "SyntaxError" in doc["output"]


def test_an_empty_submission_still_gets_results(bundle, tmp_path):
    (tmp_path / "submission").mkdir()
    doc = _run(bundle, tmp_path)
    _valid(doc)
    assert doc["score"] == 0 and "No .ipynb or .py file" in doc["output"]


FORGER = '''
import json, os, signal

RESULTS = {results!r}

def self_attention(Q, K, V):
    try:  # full marks, then the harness killed: the forged score would stand
        with open(RESULTS, "w") as f:
            json.dump({{"score": 999, "tests": []}}, f)
    except OSError:
        pass
    os.kill(os.getppid(), signal.SIGKILL)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) != os.getpid():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    return Q
'''


def test_a_submission_cannot_write_the_score_or_stop_the_harness(bundle, tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "results").mkdir()
    results = tmp_path / "results" / "results.json"
    results.write_text('{"score": 999, "tests": []}')  # stale, or planted before the run
    (tmp_path / "submission" / "forger.py").write_text(FORGER.format(results=str(results)))
    doc = _run(bundle, tmp_path)
    _valid(doc)
    assert doc["score"] == 0 and "999" not in results.read_text()
    assert "Graded in the OS sandbox." in doc["output"]


def _in_simulated_autograder(tree, command: list[str]) -> subprocess.CompletedProcess:
    """``command`` run where ``tree`` is ``/autograder``, with bubblewrap: a tmpfs as ``/``
    holding the machine's own top-level folders, so that no folder is made on the real ``/``."""
    args = ["bwrap", "--die-with-parent", "--tmpfs", "/", "--dev", "/dev", "--proc", "/proc"]
    if os.geteuid() != 0:
        args.append("--unshare-user")
    for entry in sorted(os.listdir("/")):
        path = os.path.join("/", entry)
        if entry in ("dev", "proc", "autograder"):
            continue
        args += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--bind", path, path]
    args += ["--bind", str(tree), "/autograder", "--chdir", "/autograder", *command]
    env = {k: v for k, v in os.environ.items() if k != gradescope.ROOT_VARIABLE}
    return subprocess.run(args, env={**env, "PYTHON": sys.executable}, capture_output=True, text=True, timeout=900)


def test_the_bundle_at_gradescopes_own_paths(bundle, tmp_path):
    # Gradescope's layout: the bundle in /autograder/source, the files in /autograder/submission;
    # the forger aims at the real /autograder/results/results.json.
    shutil.copytree(bundle, tmp_path / "source")
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "forger.py").write_text(FORGER.format(results="/autograder/results/results.json"))
    proc = _in_simulated_autograder(tmp_path, ["bash", "/autograder/source/run_autograder"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "results" / "results.json").read_text())
    _valid(doc)
    assert "Graded in the OS sandbox." in doc["output"]
    assert doc["score"] == 0 and [t["score"] for t in doc["tests"]] == [0] * len(ITEMS)


def test_without_the_sandbox_a_root_harness_grades_as_the_unprivileged_user(monkeypatch):
    from transformer_classroom import sandbox

    monkeypatch.setattr(sandbox, "isolation_problem", lambda: "no namespaces here")
    if os.geteuid() != 0:
        assert gradescope.how_to_isolate()[:2] == (False, None)
        return
    import pwd

    monkeypatch.setattr(gradescope, "GRADING_USER", "nobody")
    isolation, user, how = gradescope.how_to_isolate()
    assert (isolation, user) == (False, pwd.getpwnam("nobody").pw_uid) and "unprivileged user nobody" in how
    monkeypatch.setattr(gradescope, "GRADING_USER", "no-such-user-tl")
    with pytest.raises(SystemExit, match="no-such-user-tl.*nothing was graded"):
        gradescope.how_to_isolate()


def test_setup_creates_the_user_and_installs_the_sandbox_and_the_cpu_build(bundle):
    setup = (bundle / "setup.sh").read_text()
    assert "apt-get install" in setup and "bubblewrap" in setup
    assert f"useradd --system --no-create-home --shell /usr/sbin/nologin {gradescope.GRADING_USER}" in setup
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in setup
    subprocess.run(["bash", "-n", str(bundle / "setup.sh")], check=True)
