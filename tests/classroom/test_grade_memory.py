"""The memory cap holds for a whole submission, not for each of its processes.

Every process of a submission has its address space capped (``RLIMIT_AS``), and forks
inherit the cap; a submission that forks N children could still use N times it. The
sandbox's watchdog (``sandbox.MemoryWatch``) sums the memory of all of a submission's
processes and kills them together once the sum passes ``--memory-limit``. Here a hostile
submission spreads more than the cap over six children, each well under it, holds them,
and then returns a right answer: it must get 0 for that item, with a message saying why,
while its other item and two honest submissions (one of them forking a small helper) keep
their marks.
"""

from __future__ import annotations

import contextlib
import io
import os

from tests.classroom.test_grade import _lines, _points
from transformer_classroom import grade, sandbox

LIMIT = 2**30  # bytes, for the submission's processes together
CHILDREN, CHILD_BYTES = 6, 200 * 2**20  # 1.2 GiB in all, each child far under the cap

POSITIONAL = '''
def my_positional_encoding(seq_len, d_model):
    pos = np.arange(seq_len)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((seq_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe
'''

SPLIT_HEADS = '''
def split_heads(x, num_heads):
    b, t, e = x.shape
    return x.reshape(b, t, num_heads, e // num_heads).transpose(0, 2, 1, 3)
'''

HOSTILE = '''
import os, time
import numpy as np
''' + POSITIONAL.replace("def my_positional_encoding", "def _right") + f'''
def my_positional_encoding(seq_len, d_model):
    ready_r, ready_w = os.pipe()
    kids = []
    for _ in range({CHILDREN}):
        pid = os.fork()
        if pid == 0:
            hog = np.ones({CHILD_BYTES // 8})  # touched: resident, not just reserved
            os.write(ready_w, b"x")
            time.sleep(600)
            os._exit(0)
        kids.append(pid)
    ready = 0
    while ready < {CHILDREN}:  # every child holds its share at once
        ready += len(os.read(ready_r, {CHILDREN}))
    time.sleep(10)  # together over the cap for 10 s, then let go and answer right
    for pid in kids:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return _right(seq_len, d_model)
''' + SPLIT_HEADS

HONEST = "import numpy as np\n" + POSITIONAL + SPLIT_HEADS

HONEST_FORK = '''
import os
import numpy as np
''' + POSITIONAL.replace("def my_positional_encoding", "def _pe") + '''
def my_positional_encoding(seq_len, d_model):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a helper process with a little memory of its own
        helper = np.ones(2 * 10**6)
        os.write(w, b"ok")
        os._exit(0)
    assert os.read(r, 2) == b"ok"
    os.waitpid(pid, 0)
    return _pe(seq_len, d_model)
''' + SPLIT_HEADS


def test_forking_past_the_cap_costs_the_item(tmp_path):
    assert CHILD_BYTES * CHILDREN > LIMIT > 4 * CHILD_BYTES  # over the cap only together
    files = []
    for name, source in (("honest", HONEST), ("fork_hog", HOSTILE), ("honest_fork", HONEST_FORK),
                         ("honest_again", HONEST)):
        files.append(tmp_path / f"{name}.py")
        files[-1].write_text(source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = grade.main([*map(str, files), "--items", "positional,bug_split_heads",
                           "--time-limit", "120", "--memory-limit", str(LIMIT)])
    out = out.getvalue()
    assert code == 0
    full = {"positional": 5, "bug_split_heads": 2, "total": 7}
    for honest in ("honest", "honest_fork", "honest_again"):
        assert _points(out, honest) == full, out
    assert _points(out, "fork_hog") == {"positional": 0, "bug_split_heads": 2, "total": 2}, out
    verdict = _lines(out, "fork_hog")["positional"]
    assert "processes used" in verdict and "together, over the memory limit of 1024 MiB" in verdict, verdict
    assert int(verdict.split("submission's ")[1].split()[0]) >= 2  # the children were counted, not only the child


def test_memory_of_a_process_counts_what_it_touched():
    import os

    import numpy as np

    # 200 MiB, every page written: a fresh mapping whatever memory this process freed before
    # (a 50 MiB block once measured no growth in a worker that had freed as much).
    before = sandbox.memory_of(os.getpid())
    block = np.empty(200 * 2**20 // 8)
    block.fill(1.0)
    assert sandbox.memory_of(os.getpid()) - before > 150 * 2**20
    del block
    assert sandbox.memory_of(2**22 + 12345) == 0  # no such process


def test_the_watchdog_sees_every_process_below_the_grader():
    """A child, its detached grandchild, and the grandchild again once orphaned (it comes
    back to the grader, a subreaper): the processes whose memory the watchdog sums."""
    import subprocess
    import sys

    was = sandbox.set_subreaper(True)
    code = ("import subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], start_new_session=True)\n"
            "print(c.pid, flush=True)\ntime.sleep(120)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    try:
        assert {child.pid, grandchild} <= set(sandbox._tree(set()))
        assert sorted(sandbox._tree(set())) == sorted(sandbox._tree_from_table(set()))  # the fast walk, the full table
        assert grandchild not in sandbox._tree({child.pid})  # a protected child's processes are not the submission's
        child.kill()
        child.wait()
        assert grandchild in sandbox._tree(set())  # orphaned: now the grader's own child
        assert child.pid not in sandbox._tree(set())
    finally:
        for pid in (child.pid, grandchild):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        sandbox.kill_descendants(sandbox.children() - {grandchild})
        if was is not None and not was:
            sandbox.set_subreaper(False)
