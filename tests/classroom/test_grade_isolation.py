"""The OS sandbox: what a hostile submission tries beyond Python, through the real command.

Each escape is a submission in one class folder graded by ``python -m transformer_classroom.grade``
in a child process, beside an honest student graded first and last. An attacker's function
returns the right answer only when its attack failed inside the sandbox, so its points
report what it found there; the files, processes and connections it aimed at are then
looked for from outside.
"""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from transformer_classroom import grade, outputs, sandbox

ITEMS = "self_attention,positional"

RIGHT = '''
import numpy as np

def _right(Q, K, V):
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ V

def my_positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    i = np.arange(d_model)[None, :]
    angle = pos / 10000 ** (2 * (i // 2) / d_model)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
'''

HONEST = RIGHT + '''
def self_attention(Q, K, V):
    return _right(Q, K, V)
'''


def attacks(paths: dict[str, str]) -> dict[str, str]:
    """The attackers' sources; ``paths`` are the outside paths they aim at."""
    consts = "".join(f"{k.upper()} = {v!r}\n" for k, v in paths.items())
    return {k: consts + RIGHT + v for k, v in {
        # Files written into the instructor's home, the machine's /tmp and the grading command's folder.
        "write_files": '''
import os

def self_attention(Q, K, V):
    wrote = []
    for folder in (HOME, "/tmp", CWD, CLASS):
        try:
            with open(os.path.join(folder, MARK), "w") as f:
                f.write("escaped")
            wrote.append(folder)
        except OSError:
            pass
    # /tmp in the sandbox is its own private one: writing there is allowed, and seen by no one outside
    return _right(Q, K, V) if wrote == ["/tmp"] else Q
''',
        # No code of its own: a classmate's file, found on disk and imported.
        "copy_classmate": '''
import importlib.util

def self_attention(Q, K, V):
    spec = importlib.util.spec_from_file_location("classmate", CLASSMATE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.self_attention(Q, K, V)
''',
        # A connection to a server on the machine's loopback.
        "network": '''
import socket

def self_attention(Q, K, V):
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        return Q
    except OSError:
        return _right(Q, K, V)
''',
        # The grader's command line from /proc, then a plain file where --feedback goes and forged marks.
        "forge_outputs": '''
import os

def self_attention(Q, K, V):
    found = False
    for pid in os.listdir("/proc"):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            continue
        if b"--feedback" in args:
            found = True
            fb = args[args.index(b"--feedback") + 1].decode()
            csv_path = args[args.index(b"--csv") + 1].decode()
            try:
                open(fb, "w").write("planted")
                open(csv_path, "w").write("student,total\\nforge_outputs,999\\nhonest,0\\n")
            except OSError:
                pass
    return Q if found else _right(Q, K, V)
''',
        # Processes that detach and would outlive the grading.
        # (in positional encoding: in an exercise by hand, a new process alone scores 0)
        "detach": '''
import os, subprocess, sys

def self_attention(Q, K, V):
    return _right(Q, K, V)

_encoding = my_positional_encoding

def my_positional_encoding(seq_len, d_model):
    subprocess.Popen([sys.executable, "-c", "import time  # " + MARK + "\\nwhile True: time.sleep(1)"],
                     start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", "import time  # " + MARK + "\\nwhile True: time.sleep(1)"])
    return _encoding(seq_len, d_model)
''',
        # A fork bomb: killed as a whole, its other item still graded.
        "fork_bomb": '''
import os

def self_attention(Q, K, V):
    return _right(Q, K, V)

def my_positional_encoding(seq_len, d_model):
    while True:
        os.fork()
''',
    }.items()}


class Listener(threading.Thread):
    """A server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port, self.accepted, self.stop = self.sock.getsockname()[1], 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self.accepted += 1
                conn.close()
            except OSError:
                continue


def _processes_with(mark: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def run_grade(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transformer_classroom.grade", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=900, env=env)


def _points(out: str, student: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(rf"^{student}: (\w+)\s+(\d+)/", out, re.M)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    work = tmp_path_factory.mktemp("grading")
    klass = work / "class"
    klass.mkdir()
    mark = f"tl-escape-{os.getpid()}"
    listener = Listener()
    listener.start()
    home = Path.home()
    paths = {"home": str(home), "cwd": str(work), "class": str(klass), "mark": mark,
             "classmate": str(klass / "honest.py"), "port": listener.port}
    files = [klass / "honest.py"]
    files[0].write_text(HONEST)
    for name, source in attacks(paths).items():
        (klass / f"{name}.py").write_text(source)
        files.append(klass / f"{name}.py")
    files.append(klass / "honest_again.py")
    files[-1].write_text(HONEST)
    try:
        done = run_grade(*files, "--items", ITEMS, "--csv", work / "marks.csv", "--feedback", work / "fb",
                         "--time-limit", "20", cwd=work)
        escaped = [p for p in (home / mark, Path("/tmp") / mark, work / mark, klass / mark) if p.exists()]
        left = _processes_with(mark)
    finally:
        listener.stop.set()
        for p in (home / mark, Path("/tmp") / mark, work / mark, klass / mark):
            p.unlink(missing_ok=True)
        for pid in _processes_with(mark):
            os.kill(pid, 9)
    return {"done": done, "out": done.stdout, "work": work, "escaped": escaped, "left": left,
            "accepted": listener.accepted}


def test_the_sandbox_works_on_this_machine():
    assert sandbox.isolation_problem() is None  # .ci/system-deps.sh installs bubblewrap


def test_the_class_is_graded_whole(graded):
    assert graded["done"].returncode == 0, graded["done"].stderr
    rows = {r["student"]: r for r in csv.DictReader((graded["work"] / "marks.csv").open())}
    full = sum(i.points for i in grade.select_items(ITEMS))
    assert int(rows["honest"]["total"]) == int(rows["honest_again"]["total"]) == full
    assert "999" not in (graded["work"] / "marks.csv").read_text()


def test_no_file_is_written_outside_the_sandbox(graded):
    assert graded["escaped"] == []
    assert _points(graded["out"], "write_files")["self_attention"] == 6  # every write failed inside


def test_a_classmates_file_cannot_be_read(graded):
    assert _points(graded["out"], "copy_classmate")["self_attention"] == 0
    assert re.search(r"^copy_classmate: self_attention .*(FileNotFoundError|No such file)", graded["out"], re.M)


def test_no_connection_reaches_the_machine(graded):
    assert graded["accepted"] == 0
    assert _points(graded["out"], "network")["self_attention"] == 6


def test_the_graders_command_line_and_outputs_are_out_of_reach(graded):
    assert _points(graded["out"], "forge_outputs")["self_attention"] == 6  # it saw no --feedback in /proc
    fb = graded["work"] / "fb"
    assert fb.is_dir() and (fb / "honest.txt").is_file() and (fb / outputs.MARKER).is_file()


def test_no_process_outlives_the_grading(graded):
    assert graded["left"] == []
    points = _points(graded["out"], "detach")
    assert points["self_attention"] == 6
    assert points["positional"] == grade.select_items("positional")[0].points


def test_a_fork_bomb_costs_only_its_item(graded):
    points = _points(graded["out"], "fork_bomb")
    assert points["self_attention"] == 6 and points["positional"] == 0
    # stopped by RLIMIT_NPROC at the sandbox's task limit, or killed by the watchdog over its process count
    assert re.search(r"^fork_bomb: positional .*(Resource temporarily unavailable|processes at once)", graded["out"], re.M)


# ---------------------------------------------------------------- the outputs
PLANTS = {
    "feedback_is_a_file": lambda w: (w / "fb").write_text("mine"),
    "feedback_is_a_link": lambda w: (w / "fb").symlink_to(w / "victim"),
    "feedback_is_a_foreign_folder": lambda w: ((w / "fb").mkdir(), (w / "fb" / "notes.md").write_text("mine")),
    "csv_is_a_link": lambda w: (w / "marks.csv").symlink_to(w / "victim"),
    "csv_is_someone_elses": lambda w: (w / "marks.csv").write_text("name,grade\nbob,A\n"),
    "summary_is_a_link": lambda w: (w / "marks_summary.txt").symlink_to(w / "victim"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_output_is_refused_before_grading(tmp_path, plant):
    (tmp_path / "victim").mkdir() if plant == "feedback_is_a_link" else (tmp_path / "victim").write_text("keep")
    PLANTS[plant](tmp_path)
    before = {p.name: (p.is_symlink(), p.read_text() if p.is_file() else None) for p in tmp_path.iterdir()}
    (tmp_path / "s.py").write_text(HONEST)
    done = run_grade(tmp_path / "s.py", "--items", "self_attention", "--csv", tmp_path / "marks.csv",
                     "--feedback", tmp_path / "fb", cwd=tmp_path)
    assert done.returncode == 2 and "total" not in done.stdout, done.stdout
    assert str(tmp_path) in done.stderr and "not" in done.stderr
    after = {p.name: (p.is_symlink(), p.read_text() if p.is_file() else None) for p in tmp_path.iterdir()}
    assert after == {**before, "s.py": (False, HONEST)}


def test_a_second_run_replaces_the_graders_own_outputs(tmp_path):
    (tmp_path / "s.py").write_text(HONEST)
    for _ in range(2):
        done = run_grade(tmp_path / "s.py", "--items", "self_attention", "--csv", tmp_path / "marks.csv",
                         "--feedback", tmp_path / "fb", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "fb").iterdir()) == sorted([outputs.MARKER, "s.txt"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_run_that_cannot_write_leaves_no_result(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.py").write_text(HONEST)
    calls = []

    def failing(target, text):
        calls.append(target)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(target, text)

    real = outputs._temp_file
    monkeypatch.setattr(outputs, "_temp_file", failing)
    code = grade.main([str(tmp_path / "s.py"), "--items", "self_attention", "--csv", str(tmp_path / "marks.csv"),
                       "--feedback", str(tmp_path / "fb")])
    assert code == 1 and "disk full" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.py"]


# ---------------------------------------------------------------- without the sandbox
def test_without_bubblewrap_nothing_is_graded(tmp_path):
    (tmp_path / "s.py").write_text(HONEST)
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    done = run_grade(tmp_path / "s.py", "--items", "self_attention", "--csv", tmp_path / "marks.csv",
                     cwd=tmp_path, env=env)
    assert done.returncode == 2 and "total" not in done.stdout
    assert "bubblewrap" in done.stderr and "apt-get install bubblewrap" in done.stderr and "Gradescope" in done.stderr
    assert not (tmp_path / "marks.csv").exists()


def test_no_isolation_is_said_in_the_output_and_the_summary(tmp_path):
    (tmp_path / "s.py").write_text(HONEST)
    done = run_grade(tmp_path / "s.py", "--items", "self_attention", "--csv", tmp_path / "marks.csv",
                     "--no-isolation", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("WARNING: graded without isolation")
    assert (tmp_path / "marks_summary.txt").read_text().startswith("WARNING: graded without isolation")
