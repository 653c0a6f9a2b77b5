"""Run a submission in child processes with limits; the grader only ever receives values.

:class:`Sandbox` starts :mod:`transformer_classroom.sandbox_worker` in a fresh interpreter
(``python -I``: no user site, no ``PYTHONPATH``, not the current directory), with a
scrubbed environment, in a new session (its own process group), with its memory capped
(see below) and its output thrown away, inside an OS sandbox (below). The
grader sends it pickled requests (inputs the *grader* made) and reads replies that are
JSON and NumPy ``.npy`` blobs loaded with ``allow_pickle=False``: nothing the child sends
is ever unpickled or run. A reply that is late, garbled or missing (the child looped,
exited, crashed or ran out of memory) raises a :class:`SandboxError`, which is a
``BaseException`` so that the checks' handlers for the learner's own errors never catch it.

Processes a submission starts do not outlive it: the grader makes itself a child
subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so a process that detaches (a double fork,
``setsid``, ``start_new_session=True``) is re-parented to the grader instead of to
``init``; :meth:`Sandbox.close` kills the child's process group and then every process
below the grader that did not exist before the sandbox started, until none is left.

The memory cap holds for the whole submission, not per process. Two limits enforce it:
each process's address space is capped at the limit (``RLIMIT_AS``, inherited by every
process it forks: no single allocation can pass it), and a watchdog thread of the grader
(:class:`MemoryWatch`) sums the proportional set size (PSS: shared pages split between the
processes sharing them, so a fork's copy-on-write pages count once) of every process of
the submission, detached ones included, every :data:`WATCH_INTERVAL` seconds; when the sum
passes the limit it kills them all, and the request in flight fails with a
:class:`WorkerDied` that says so. Decision: a cgroup (``memory.max``) would be exact, but it
needs a delegated cgroup tree that an instructor's laptop does not give a user, and
``RLIMIT_NPROC`` (no forks) counts every process of the user and is not enforced for root;
the watchdog works wherever ``/proc`` does (Linux). Its price: between two samples a
submission can allocate past the limit, by what it allocates in :data:`WATCH_INTERVAL`
(each process still stops at the limit on its own). The same watchdog kills a submission
that runs more than :data:`MAX_PROCESSES` processes at once (a fork bomb), since
``RLIMIT_NPROC`` does not bind root.

:class:`RemoteFunction` and :class:`RemoteClass` stand for the learner's function or
``nn.Module`` class in the grader: calling them runs the learner's code in the child.

**The OS sandbox** (Linux, `bubblewrap <https://github.com/containers/bubblewrap>`_, the
sandbox Flatpak is built on): the child runs under ``bwrap`` (:func:`bwrap_command`) in new
user, PID, network, IPC, UTS and cgroup namespaces, with ``--die-with-parent``. Its file
system is empty but for, read-only, the system's ``/usr`` (and ``/bin``, ``/lib*`` beside
it), the Python installation and the environment's ``site-packages`` (:func:`readonly_paths`),
and the folder that holds ``transformer_lessons``; a private ``/tmp`` of
:data:`SCRATCH_SIZE` bytes is its home and scratch folder, and everything else, the root
included, is read-only. So a submission sees no home folder, no other submission, no output
path and no ``/etc``; it has only a loopback network of its own (nothing listening on the
machine's is reachable), its own ``/proc`` (its own processes, not the grader's command
line) and no capabilities outside its namespaces. Its cells reach it through the pipe,
never as a file. When its first process ends, the kernel ends every process of its PID
namespace, detached ones too. Where ``bwrap`` is missing or cannot create namespaces
(macOS, a kernel that forbids unprivileged user namespaces), :func:`isolation_problem` says
so before anything is graded; ``isolation=False`` (the grader's ``--no-isolation``) runs the
child as before, with the instructor's rights and view of the machine, in a scratch folder.
"""

from __future__ import annotations

import ctypes
import io
import itertools
import json
import os
import pickle
import re
import resource
import select
import shutil
import site
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import transformer_lessons

WORKER = Path(__file__).resolve().with_name("sandbox_worker.py")  # resolved: the sandbox binds real paths
PACKAGE_ROOT = Path(transformer_lessons.__file__).resolve().parent.parent  # the folder that holds transformer_lessons/
STARTUP_LIMIT = 300  # seconds for a fresh interpreter to import numpy and torch (a busy machine is slow)
MAX_REPLY = 512 * 2**20  # bytes: a reply larger than this is refused, not read
_TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                 "complex64", "complex128")
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
WATCH_INTERVAL = 0.05  # seconds between two samples of a submission's memory
MAX_PROCESSES = 64  # processes of one submission at once: a fork bomb is killed at the next sample
SCRATCH_SIZE = 64 * 2**20  # bytes of the private /tmp a sandboxed submission may write
BWRAP, SETPRIV = "bwrap", "/usr/bin/setpriv"
MAX_TASKS = 256  # RLIMIT_NPROC in the OS sandbox: processes and threads a submission may have at once
INSTALL_HINT = ("install bubblewrap (Debian and Ubuntu: `sudo apt-get install bubblewrap`; it needs a Linux kernel "
                "that lets users create namespaces, as Debian's and Ubuntu's do), or grade on Gradescope; for a class "
                "whose files you trust, --no-isolation grades without the sandbox")


class SandboxError(BaseException):
    """The child gave no usable reply; the message is the one-line reason."""


class UsedBuiltIn(BaseException):
    """The learner's function, in an exercise that asks for attention by hand, called a built-in one
    (a ``BaseException``, so that no check's ``except Exception`` turns it into a wrong value)."""


class ItemTimeout(SandboxError):
    pass


class WorkerDied(SandboxError):
    pass


class BadReply(SandboxError):
    pass


def clean_text(text: str, limit: int = 300) -> str:
    """One printable line of at most ``limit`` characters (a submission's text is not trusted)."""
    text = re.sub(r"[\x00-\x1f\x7f\u2028\u2029\u0085]+", " ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- processes
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux
        return None


def set_subreaper(on: bool = True) -> bool | None:
    """Make this process a child subreaper; return the previous setting (None where unsupported)."""
    libc = _libc()
    if libc is None or not sys.platform.startswith("linux"):
        return None
    old = ctypes.c_int(0)
    libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(old), 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0)
    return bool(old.value)


def _process_table() -> dict[int, tuple[int, str]]:
    """``{pid: (parent pid, state)}`` of every process, read from ``/proc``."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
        table[int(entry)] = (int(fields[1]), fields[0])
    return table


def children(pid: int | None = None) -> set[int]:
    pid = os.getpid() if pid is None else pid
    return {p for p, (ppid, _) in _process_table().items() if ppid == pid}


def kill_descendants(protected: set[int], deadline: float = 30.0) -> int:
    """SIGKILL every process below this one except ``protected`` children (and theirs); reap them.

    Loops until none is left: a process that forks while we kill is caught on the next
    pass, and orphans come back to us as the subreaper. Returns how many were killed.
    """
    if not Path("/proc").is_dir():  # pragma: no cover - not Linux: the process group kill is all there is
        return 0
    me, killed, end = os.getpid(), set(), time.monotonic() + deadline
    while time.monotonic() < end:
        table = _process_table()
        below: dict[int, list[int]] = {}
        for p, (ppid, _) in table.items():
            below.setdefault(ppid, []).append(p)
        todo = [p for p in below.get(me, []) if p not in protected]
        found = []
        while todo:
            p = todo.pop()
            found.append(p)
            todo += below.get(p, [])
        if not found:
            return len(killed)
        for p in found:
            if table[p][1] != "Z":
                try:
                    os.kill(p, signal.SIGKILL)
                    killed.add(p)
                except (ProcessLookupError, PermissionError):
                    pass
        for p in below.get(me, []):
            if p not in protected:
                try:
                    os.waitpid(p, os.WNOHANG)
                except ChildProcessError:
                    pass
        time.sleep(0.01)
    return len(killed)


# ---------------------------------------------------------------- replies
def _load_npy(blob: bytes) -> np.ndarray:
    try:
        arr = np.load(io.BytesIO(blob), allow_pickle=False)
    except Exception as exc:
        raise BadReply(f"the submission's process sent an unreadable array ({type(exc).__name__})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biufc" or arr.dtype.fields is not None or arr.ndim > 8:
        raise BadReply("the submission's process sent an array of an unsupported kind")
    return arr


def decode(node, blobs: list[bytes], depth: int = 0):
    """A value from a reply's JSON tree; anything unexpected is a :class:`BadReply`."""
    if depth > 16 or not isinstance(node, dict) or len(node) not in (1, 2):
        raise BadReply("the submission's process sent a malformed reply")
    if "py" in node:
        v = node["py"]
        if not isinstance(v, (type(None), bool, int, float, str)):
            raise BadReply("the submission's process sent a malformed value")
        return v
    index = node.get("nd", node.get("torch"))
    if index is not None:
        if not isinstance(index, int) or not 0 <= index < len(blobs):
            raise BadReply("the submission's process sent a reply that refers to a missing array")
        arr = _load_npy(blobs[index])
        if "nd" in node:
            return arr[()] if node.get("scalar") is True else arr
        import torch

        dtype = node.get("dtype")
        if dtype not in _TORCH_DTYPES:
            raise BadReply("the submission's process sent a tensor of an unsupported dtype")
        return torch.from_numpy(arr.copy()).to(getattr(torch, dtype))
    for kind, cls in (("tuple", tuple), ("list", list)):
        if kind in node:
            if not isinstance(node[kind], list):
                raise BadReply("the submission's process sent a malformed reply")
            return cls(decode(v, blobs, depth + 1) for v in node[kind])
    if "opaque" in node:
        raise TypeError(
            f"it returned a {clean_text(node['opaque'], 60)}, which the grader cannot read: "
            "return a NumPy array or a torch tensor"
        )
    raise BadReply("the submission's process sent a malformed reply")


_BUILTIN_ERRORS = {
    cls.__name__: cls
    for cls in (ArithmeticError, AttributeError, FloatingPointError, ImportError, IndexError, KeyError,
                LookupError, MemoryError, ModuleNotFoundError, NameError, NotImplementedError, OverflowError,
                RecursionError, RuntimeError, TypeError, UnboundLocalError, ValueError, ZeroDivisionError)
}


def rebuild_exception(info) -> Exception:
    """The learner's exception, rebuilt from its name and message; always an ``Exception``.

    Names that the grader gives a meaning to (``AssertionError``, ``CheckFailed``,
    ``SystemExit``) become plain ``Exception`` subclasses of the same name, so that a
    submission cannot raise a check's verdict or stop the grader.
    """
    if not isinstance(info, dict):
        raise BadReply("the submission's process sent a malformed error")
    name = info.get("type") if isinstance(info.get("type"), str) else "Exception"
    name = name if name.isidentifier() else "Exception"
    msg = info.get("msg") if isinstance(info.get("msg"), str) else ""
    msg = clean_text(msg.splitlines()[0] if msg.strip() else "", 500)  # the first line: a reason, not a report
    if info.get("not_implemented") is True:
        return NotImplementedError(msg)
    if name in _BUILTIN_ERRORS:
        return _BUILTIN_ERRORS[name](msg)
    return type(name, (Exception,), {"__module__": "submission"})(msg)


# ---------------------------------------------------------------- the OS sandbox
def readonly_paths() -> list[str]:
    """What the child's interpreter needs to see, read-only: the Python installation, the
    environment's ``site-packages``, the folder that holds ``transformer_lessons`` and the
    worker's own folder."""
    wanted = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix, *site.getsitepackages(),
              str(PACKAGE_ROOT), str(WORKER.parent)]
    found = []
    for p in wanted:
        if p and os.path.isdir(p) and p not in found:
            found.append(p)
    return found


def bwrap_command(inner: list[str]) -> list[str]:
    """``inner`` under bubblewrap: new namespaces, a read-only view of :func:`readonly_paths`
    and of the system's ``/usr``, a private writable ``/tmp`` and nothing else.

    For a user, bubblewrap makes a user namespace in which ``inner`` runs as uid 65534 with no
    capabilities. For root it cannot: a user namespace of root's maps its uid 65534 to root
    itself, which ``RLIMIT_NPROC`` never binds, so a fork bomb would run unbounded. There
    bubblewrap runs without one and ``setpriv`` (util-linux) starts ``inner`` as a uid of its
    own (:func:`sandbox_uid`, unprivileged, in no group, no capabilities, no new privileges)."""
    root = os.geteuid() == 0
    cmd = [BWRAP, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session"]
    if not root:
        cmd += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534"]
    # The private /tmp first: a path below /tmp (a bundle unpacked there) is then bound on top of it.
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(SCRATCH_SIZE), "--tmpfs", "/tmp",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
    binds = []
    for p in readonly_paths():
        real = os.path.realpath(p)
        binds += [(real, p)] + ([(real, real)] if real != p else [])
    # The folders above each mount point, made traversable: bubblewrap makes them 0700, root's, by
    # default, which the unprivileged uid below could not walk through.
    system = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/dev")  # mounted already
    parents = sorted({str(a) for _, dest in binds for a in Path(dest).parents
                      if str(a) not in ("/", "/tmp") and not any(str(a) == t or str(a).startswith(t + "/") for t in system)},
                     key=lambda d: d.count("/"))
    for d in parents:
        cmd += ["--perms", "0755", "--dir", d]
    for real, dest in binds:
        cmd += ["--ro-bind", real, dest]
    cmd += ["--remount-ro", "/", "--chdir", "/tmp", "--"]
    if root:
        uid = str(sandbox_uid())
        cmd += [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs"]
    return cmd + inner


_UIDS = itertools.count()


def sandbox_uid() -> int:
    """A uid no account has, one per sandbox this grader starts (when the grader is root):
    ``RLIMIT_NPROC`` counts every process of a uid, so each submission's count is its own."""
    return 1_000_000_000 + (os.getpid() % 2**22) * 64 + next(_UIDS) % 64


_PROBLEM: dict[str, str | None] = {}


def isolation_problem() -> str | None:
    """Why submissions cannot run in the OS sandbox here (None when they can), found by
    starting the sandbox once with this interpreter; the answer is kept for the process."""
    if "answer" not in _PROBLEM:
        _PROBLEM["answer"] = _probe()
    return _PROBLEM["answer"]


def _probe() -> str | None:
    if not sys.platform.startswith("linux"):
        return f"submissions run in a Linux sandbox (bubblewrap), and this is {sys.platform}: grade on Gradescope"
    if shutil.which(BWRAP) is None:
        return f"bubblewrap (`{BWRAP}`) is not installed: {INSTALL_HINT}"
    if os.geteuid() == 0 and not os.access(SETPRIV, os.X_OK):
        return f"grading as root needs `{SETPRIV}` (the util-linux package) to run each submission as a user of its own"
    try:
        probe = f"import numpy; open({str(WORKER)!r}).close()"  # the packages, and the worker the sandbox runs
        done = subprocess.run(bwrap_command([sys.executable, "-I", "-c", probe]), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap could not start a sandbox ({clean_text(err, 160)}): {INSTALL_HINT}"
    if done.returncode != 0:
        why = clean_text(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}", 160)
        if "PermissionError" in why:  # root grading: the sandbox's uid is no one's, and reads what every user may
            return f"the sandbox's unprivileged user cannot read the grader's files ({why}): make them readable by all"
        return f"bubblewrap could not start a sandbox ({why}): {INSTALL_HINT}"
    return None


# ---------------------------------------------------------------- the child
def _children_of(pid: int) -> list[int] | None:
    """``pid``'s children from ``/proc/PID/task/*/children`` (None where the kernel lacks it)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for tid in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except FileNotFoundError:
            if not Path(f"/proc/{pid}/task/{tid}/children").parent.exists():
                continue  # the thread has ended
            return None
        except (OSError, ValueError):
            continue
    return found


def _tree(protected: set[int]) -> list[int]:
    """Every live process below this one, except ``protected`` children and theirs.

    Walks down from this process by the kernel's lists of children (a few files per
    process, instead of every process's ``stat``: the watchdog runs this every
    :data:`WATCH_INTERVAL`); the whole process table where those lists are missing."""
    top = _children_of(os.getpid())
    if top is None:
        return _tree_from_table(protected)
    todo, found = [p for p in top if p not in protected], []
    seen = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(p)
        todo += _children_of(p) or []
    return found


def _tree_from_table(protected: set[int]) -> list[int]:
    """:func:`_tree` from the whole process table (every process's ``stat``)."""
    table = _process_table()
    below: dict[int, list[int]] = {}
    for p, (ppid, _) in table.items():
        below.setdefault(ppid, []).append(p)
    todo, found = [p for p in below.get(os.getpid(), []) if p not in protected], []
    while todo:
        p = todo.pop()
        if table[p][1] != "Z":
            found.append(p)
        todo += below.get(p, [])
    return found


def resident_of(pid: int) -> int:
    """A process's resident set size in bytes (``/proc/PID/statm``, cheap to read); 0 if gone."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def memory_of(pid: int) -> int:
    """A process's proportional set size in bytes (its resident size where PSS is not reported); 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class MemoryWatch(threading.Thread):
    """Kill a submission's processes once, together, they use more than ``limit`` bytes.

    Samples every :data:`WATCH_INTERVAL` seconds the processes below the grader that are not
    ``protected`` (the submission's child, what it forked, and what detached from it): their
    resident sizes first (cheap), and their PSS (a walk of their page tables) only when the
    resident sizes together pass the limit, since PSS is never larger. After
    a kill, :attr:`reason` says what happened; the grader's read then finds the pipe closed.
    """

    def __init__(self, limit: int, protected: set[int], pgid: int):
        super().__init__(daemon=True, name="sandbox-memory-watch")
        self.limit, self.protected, self.pgid = limit, set(protected), pgid
        self.reason: str | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(WATCH_INTERVAL):
            procs = _tree(self.protected)
            if len(procs) > MAX_PROCESSES and not self._halt.is_set():
                self.reason = (f"the submission ran {len(procs)} processes at once, over the limit of "
                               f"{MAX_PROCESSES}: all were killed")
                self._kill(procs)
                return
            if sum(resident_of(p) for p in procs) <= self.limit:
                continue  # resident >= PSS: under the limit, without walking the page tables
            used = sum(memory_of(p) for p in procs)
            if used > self.limit and not self._halt.is_set():
                self.reason = (f"the submission's {len(procs)} processes used {used / 2**20:.0f} MiB together, "
                               f"over the memory limit of {self.limit / 2**20:.0f} MiB: all were killed")
                self._kill(procs)
                return

    def _kill(self, procs: list[int]) -> None:
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for p in procs:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join()


class Sandbox:
    """One child process that holds a submission's namespace.

    ``cells`` are ``(cell number, source, indices of the statements to run)``; ``names``
    the names the grader will ask for. ``deadline`` (a ``time.monotonic()`` value) bounds
    every request; set it before each rubric item.
    """

    def __init__(self, cells, names, *, memory_limit: int, load_time_limit: float, isolation: bool = True,
                 user: int | None = None):
        self.cells, self.names, self.memory_limit = cells, list(names), memory_limit
        self.isolation = isolation
        # Without the OS sandbox, a root grader can still run the child as an unprivileged uid (Gradescope's
        # images that forbid namespaces): it then cannot write the grader's files or signal the grader.
        self.user = None if isolation else user
        self.load_time_limit = load_time_limit
        self.deadline = float("inf")
        self.by_hand = False  # the item being graded asks for attention by hand: calls are watched (sandbox_worker)
        self.proc = None
        self.watch: MemoryWatch | None = None
        self._seq = 0

    # -- lifetime
    def start(self) -> dict:
        """Start the child and run the submission's statements; return ``{"notes", "kinds", "refs"}``."""
        # Without isolation the child's home is a scratch folder of the grader's; in the sandbox, its private /tmp.
        self.scratch = None if self.isolation else tempfile.mkdtemp(prefix="grade-")
        home = "/tmp" if self.isolation else self.scratch
        if self.user is not None:
            os.chown(self.scratch, self.user, self.user)
        self._protected = children()
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        limit = self.memory_limit

        def limits():  # runs in the child, before the interpreter starts
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
        command = [sys.executable, "-I", str(WORKER), str(to_child_r), str(from_child_w), str(PACKAGE_ROOT)]
        if self.isolation:  # in the sandbox's own user namespace or uid, RLIMIT_NPROC counts the submission's tasks only
            command.append(str(MAX_TASKS))
        self.proc = subprocess.Popen(
            bwrap_command(command) if self.isolation else command,
            cwd="/" if self.isolation else self.scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_child_r, from_child_w),
            start_new_session=True,
            preexec_fn=limits,
            **({} if self.user is None else {"user": self.user, "group": self.user, "extra_groups": []}),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.watch = MemoryWatch(limit, self._protected, self.proc.pid)
        self.watch.start()
        self.deadline = time.monotonic() + STARTUP_LIMIT  # numpy and torch load before the clock starts
        self._receive()
        self.deadline = time.monotonic() + self.load_time_limit
        reply, _ = self._request({"op": "load", "cells": self.cells, "names": self.names})
        if not all(isinstance(reply.get(k), (list, dict)) for k in ("notes", "kinds", "refs")):
            raise BadReply("the submission's process sent a malformed reply")
        return reply

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """Kill the child, everything it started, and remove its scratch directory."""
        if self.proc is None:
            return
        if self.watch is not None:
            self.watch.stop()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        kill_descendants(self._protected)
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.proc = None

    # -- wire
    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "the submission's process stopped answering"
        if self.watch is not None and self.watch.reason:
            return self.watch.reason
        if code < 0:
            name = signal.Signals(-code).name
            hint = " (out of memory?)" if -code == signal.SIGKILL else ""
            return f"the submission's process was killed by {name}{hint}"
        return f"the submission's process exited with code {code}"

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ItemTimeout("time limit")
            ready, _, _ = select.select([self._from_child], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self._from_child, min(n - len(buf), 1 << 20))
            if not chunk:
                raise WorkerDied(self._death())
            buf += chunk
        return bytes(buf)

    def _request(self, request: dict) -> tuple[dict, list[bytes]]:
        if not self.alive:
            raise WorkerDied(self._death())
        self._seq += 1
        request["seq"] = self._seq
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)  # a copy: the child cannot touch ours
        try:
            os.write(self._to_child, struct.pack("<Q", len(data)))
            view = memoryview(data)
            while view:
                _, ready, _ = select.select([], [self._to_child], [], max(self.deadline - time.monotonic(), 0))
                if not ready:
                    raise ItemTimeout("time limit")
                view = view[os.write(self._to_child, view[: 1 << 16]) :]
        except OSError:  # a broken pipe: the child is gone
            raise WorkerDied(self._death()) from None
        return self._receive()

    def _receive(self) -> tuple[dict, list[bytes]]:
        budget = MAX_REPLY
        (size,) = struct.unpack("<Q", self._read(8))
        if size > budget:
            raise BadReply("the submission's process sent a reply larger than the grader reads")
        try:
            header = json.loads(self._read(size))
        except (ValueError, UnicodeDecodeError):
            raise BadReply("the submission's process sent a malformed reply") from None
        budget -= size
        (count,) = struct.unpack("<I", self._read(4))
        blobs = []
        for _ in range(count):
            (n,) = struct.unpack("<Q", self._read(8))
            if n > budget:
                raise BadReply("the submission's process sent a reply larger than the grader reads")
            budget -= n
            blobs.append(self._read(n))
        if not isinstance(header, dict) or header.get("seq") != self._seq:
            raise BadReply("the submission's process sent a reply out of turn")
        return header, blobs

    def _value(self, header: dict, blobs: list[bytes]):
        if isinstance(header.get("built_in"), list) and header["built_in"]:
            used = "; ".join(clean_text(u, 120) for u in header["built_in"][:3] if isinstance(u, str))
            raise UsedBuiltIn(f"this exercise asks for attention written by hand, and your code used {used}")
        if "exc" in header:
            raise rebuild_exception(header["exc"])
        if "ok" not in header:
            raise BadReply("the submission's process sent a malformed reply")
        return decode(header["ok"], blobs)

    # -- requests
    def call(self, name: str | None, args: tuple, kwargs: dict, handle: int | None = None):
        request = {"op": "call", "args": args, "kwargs": kwargs, "by_hand": self.by_hand}
        request.update({"handle": handle} if handle is not None else {"name": name})
        return self._value(*self._request(request))

    def construct(self, name: str, args: tuple) -> tuple[int, list]:
        header, blobs = self._request({"op": "construct", "name": name, "args": args})
        if "exc" in header:
            raise rebuild_exception(header["exc"])
        if not isinstance(header.get("handle"), int):
            raise BadReply("the submission's process sent a malformed reply")
        return header["handle"], _local_attention_layers(header.get("inner"), blobs)

    def method(self, handle: int, method: str) -> None:
        self._value(*self._request({"op": "method", "handle": handle, "method": method}))

    def describe(self, handle: int) -> list:
        header, blobs = self._request({"op": "describe", "handle": handle})
        if "exc" in header:
            raise rebuild_exception(header["exc"])
        return _local_attention_layers(header.get("inner"), blobs)


def _local_attention_layers(inner, blobs) -> list:
    """Real ``nn.MultiheadAttention`` layers in the grader, with the child's settings and weights."""
    import torch
    from torch import nn

    if not isinstance(inner, list) or len(inner) > 16:
        raise BadReply("the submission's process sent a malformed module description")
    layers = []
    for d in inner:
        if not isinstance(d, dict):
            raise BadReply("the submission's process sent a malformed module description")
        ints = [d.get(k) for k in ("embed_dim", "num_heads", "kdim", "vdim")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 4096 for v in ints):
            raise BadReply("the submission's module has an attention layer of an unsupported size")
        flags = [d.get(k) for k in ("bias", "add_bias_kv", "add_zero_attn", "batch_first", "training")]
        if not all(isinstance(v, bool) for v in flags) or not isinstance(d.get("dropout"), float):
            raise BadReply("the submission's process sent a malformed module description")
        state = d.get("state")
        if not isinstance(state, dict):
            raise BadReply("the submission's process sent a malformed module description")
        tensors = {str(k): decode(v, blobs) for k, v in state.items()}
        if not all(isinstance(t, torch.Tensor) for t in tensors.values()):
            raise BadReply("the submission's process sent a malformed module description")
        dtype = next(iter(tensors.values())).dtype if tensors else torch.float32
        try:
            layer = nn.MultiheadAttention(
                d["embed_dim"], d["num_heads"], dropout=d["dropout"], bias=d["bias"],
                add_bias_kv=d["add_bias_kv"], add_zero_attn=d["add_zero_attn"], kdim=d["kdim"],
                vdim=d["vdim"], batch_first=d["batch_first"], dtype=dtype,
            )
            layer.load_state_dict(tensors)
        except (ValueError, RuntimeError, AssertionError, TypeError) as exc:
            raise BadReply(f"the submission's attention layer could not be rebuilt: {clean_text(exc, 120)}") from None
        layer.train(d["training"])
        layers.append(layer)
    return layers


# ---------------------------------------------------------------- stand-ins for the learner's code
class RemoteFunction:
    """The learner's function, called in the child on copies of the arguments."""

    def __init__(self, sandbox: Sandbox, name: str):
        self._sandbox, self.__name__ = sandbox, name

    def __call__(self, *args, **kwargs):
        return self._sandbox.call(self.__name__, args, kwargs)


class RemoteModule:
    """An instance of the learner's ``nn.Module`` living in the child.

    ``modules()`` gives this stand-in, then grader-side copies of the ``nn.MultiheadAttention``
    layers it holds (refreshed after every call), so a check can read their settings and
    weights; calling it runs ``forward`` in the child.
    """

    def __init__(self, sandbox: Sandbox, handle: int, layers: list):
        self._sandbox, self._handle, self._layers = sandbox, handle, layers

    def modules(self):
        return iter([self, *self._layers])

    def eval(self):
        self._sandbox.method(self._handle, "eval")
        self._layers = self._sandbox.describe(self._handle)
        return self

    def train(self, mode: bool = True):
        self._sandbox.method(self._handle, "train" if mode else "eval")
        self._layers = self._sandbox.describe(self._handle)
        return self

    def __call__(self, *args, **kwargs):
        result = self._sandbox.call(None, args, kwargs, handle=self._handle)
        self._layers = self._sandbox.describe(self._handle)
        return result

    def __getattr__(self, name):
        raise AttributeError(f"the grader reads only the attention layers of a module, not `{name}`")


class RemoteClass:
    """The learner's ``nn.Module`` class: calling it builds an instance in the child."""

    def __init__(self, sandbox: Sandbox, name: str):
        self._sandbox, self.__name__ = sandbox, name

    def __call__(self, *args):
        handle, layers = self._sandbox.construct(self.__name__, args)
        return RemoteModule(self._sandbox, handle, layers)
