"""The readers' environments, rebuilt on this machine: Colab's and Binder's.

A reader who clicks *Colab* or *Binder* runs ``book/NAME.ipynb`` in a kernel that has
none of the book's build tools (myst-nb, jupyter-book, pytest). The notebook tests
(``tests/notebooks/test_notebooks.py``) execute every notebook in two environments built here, so
that a notebook that only runs in the project's ``.venv`` fails the suite:

**colab**: a fresh virtual environment with what Colab has preinstalled *that the pages
use* (``COLAB_PREINSTALLED``, at this project's pins from ``requirements.txt``; Colab's own
versions drift every few months), and nothing else. Each notebook's own install cell then
does the rest, as in Colab: it runs in the kernel, with ``google.colab`` faked for that
cell only (an empty module in ``sys.modules``, removed right after, so only the cell's
``if "google.colab" in sys.modules`` branch sees it; no page or package code looks for
``google.colab`` anywhere else, which a test checks), and with one change: its
``git+<repository>@<branch>`` becomes ``file://<snapshot of this checkout>``, so that it
installs the code under test instead of what is published. Before every notebook the
environment goes back to what Colab has (whatever an install cell added is uninstalled),
so each notebook starts like a fresh Colab runtime, and after it the preinstalled
packages must be unchanged (an install cell must not replace Colab's torch or numpy). The
kernel's working directory is an empty folder, as Colab's ``/content``: a Colab notebook
has no repository files beside it.

**binder**: what repo2docker builds from ``binder/``: a Python of ``binder/runtime.txt``
with the part of repo2docker's base environment a kernel uses (``REPO2DOCKER_BASE``:
its Python 3.11 environment has ipywidgets 8, JupyterLab 4 and Notebook 7, which bring
ipykernel), then ``pip install -r binder/requirements.txt`` and ``binder/postBuild``, run
as repo2docker runs them, in a copy of the repository as the working directory. The
notebooks run from that copy's ``book/`` folder, as JupyterLab starts their kernels.

The copy of the repository ("snapshot") holds what ``git ls-files --cached --others
--exclude-standard`` lists: the files a commit of this checkout would hold, with their
current content, and nothing ignored (no ``.venv``, no ``_build``). It is refreshed at
every test session; Binder's editable install of the package keeps pointing at it.

Kernels start from the environment's own Python, with ``PYTHONPATH``, ``VIRTUAL_ENV``,
``PYTHONHOME`` and every ``PATH`` entry inside a virtual environment scrubbed, so the
project's ``.venv`` is on no path of either. They run under ``nice``.

**Cache.** Building both takes minutes (torch is a 190 MB wheel), so each environment is
kept in ``~/.cache/transformer-lessons/reader-envs/NAME-KEY`` (``$XDG_CACHE_HOME`` is
honoured; ``TRANSFORMER_LESSONS_READER_ENVS`` overrides the folder), where KEY is a hash
of everything that goes into it: the pins, the Python version, the code of its build
function below, and for Binder ``binder/*`` and ``pyproject.toml``. A change to any of
them builds a new one; environments of an older key unused for three days are removed.
Changes under ``code/`` or ``book/`` need no rebuild: Colab's install cell installs the
snapshot afresh for every notebook, Binder's editable install reads the snapshot.

``python tests/notebooks/reader_envs.py [colab|binder]`` builds (or reuses) an environment and
prints where it is and how long that took.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from book_build import sync_notebooks

ROOT = Path(__file__).resolve().parents[2]

# What Colab has preinstalled that the pages use (a page that imports something else
# needs it here, if Colab has it, or in its install cell: the import test says which).
COLAB_PREINSTALLED = ("torch", "numpy", "matplotlib", "ipykernel", "ipywidgets", "tokenizers", "safetensors")
# repo2docker's base environment for Python 3.11, the part a kernel uses.
REPO2DOCKER_BASE = ("ipykernel", "ipywidgets")
# Pins of what requirements.txt does not pin (the project itself does not need it).
EXTRA_PINS = {"ipywidgets": "8.1.9"}
STALE_AFTER_S = 3 * 24 * 3600


def project_pins() -> dict[str, str]:
    """Exact pins of requirements.txt, name (lower case) -> version."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s#;]+)", line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def pins_for(names: tuple[str, ...]) -> list[str]:
    pins = {**project_pins(), **EXTRA_PINS}
    missing = [n for n in names if n not in pins]
    if missing:
        raise ValueError(f"no exact pin for {missing}: add them to requirements.txt or EXTRA_PINS")
    return [f"{n}=={pins[n]}" for n in names]


def cache_root() -> Path:
    if os.environ.get("TRANSFORMER_LESSONS_READER_ENVS"):
        return Path(os.environ["TRANSFORMER_LESSONS_READER_ENVS"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "transformer-lessons" / "reader-envs"


def system_python() -> str:
    """The machine's python3, found on a PATH without any virtual environment."""
    found = shutil.which("python3", path=_scrubbed_path())
    if not found:
        raise RuntimeError("no python3 outside a virtual environment on PATH")
    return found


def _in_a_venv(entry: str) -> bool:
    return (Path(entry).parent / "pyvenv.cfg").exists()


def _scrubbed_path() -> str:
    entries = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(e for e in entries if e and not _in_a_venv(e))


def scrubbed_environ(venv: Path | None = None) -> dict[str, str]:
    """os.environ without any virtual environment, with ``venv`` activated if given."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONUSERBASE", "JUPYTER_PATH"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PATH"] = _scrubbed_path()
    if venv is not None:
        env["PATH"] = os.pathsep.join([str(venv / "bin"), env["PATH"]])
        env["VIRTUAL_ENV"] = str(venv)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def snapshot(dest: Path) -> Path:
    """Copy the files a commit of this checkout would hold into ``dest`` (replaced)."""
    result = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True,
    )
    if result.returncode:
        raise RuntimeError(f"the readers' environments copy this checkout's files with `git ls-files`: {result.stderr.decode()}")
    listed = result.stdout.decode().split("\0")
    if dest.exists():
        shutil.rmtree(dest)
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the work tree is not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _run(cmd: list[str], log: Path, **kw) -> None:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        result = subprocess.run(["nice", "-n", "10", *cmd], stdout=out, stderr=subprocess.STDOUT, **kw)
    if result.returncode:
        tail = log.read_text().splitlines()[-30:]
        raise RuntimeError(f"{shlex.join(cmd)} failed ({result.returncode}); end of {log}:\n" + "\n".join(tail))


def _freeze(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(python), "-c", "import json, importlib.metadata as m; "
         "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()}))"],
        env=scrubbed_environ(python.parent.parent), capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)


@dataclass
class ReaderEnv:
    """One reader's environment: a virtual environment and the kernel that runs in it."""

    name: str
    path: Path
    build_seconds: float = 0.0  # 0 when the cached one was reused
    notes: dict = field(default_factory=dict)

    @property
    def venv(self) -> Path:
        return self.path / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def repo(self) -> Path:
        """The snapshot of the checkout this environment uses."""
        return self.path / "repo"

    def environ(self) -> dict[str, str]:
        return scrubbed_environ(self.venv)

    def installed(self) -> dict[str, str]:
        return _freeze(self.python)

    def base(self) -> dict[str, str]:
        """What was installed when the environment was built."""
        return json.loads((self.path / "base.json").read_text())

    def kernel_manager(self):
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        kernels = self.path / "kernels"
        spec = kernels / "reader" / "kernel.json"
        spec.parent.mkdir(parents=True, exist_ok=True)
        argv = [shutil.which("nice") or "/usr/bin/nice", "-n", "10", str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec.write_text(json.dumps({"argv": argv, "display_name": f"Python 3 ({self.name})", "language": "python"}))
        return KernelManager(kernel_name="reader", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))

    def execute(self, nb, cwd: Path, timeout: int = 1800):
        """Run ``nb`` top to bottom in a fresh kernel of this environment (in place)."""
        from nbclient import NotebookClient

        km = self.kernel_manager()
        client = NotebookClient(
            nb, km=km, timeout=timeout,
            resources={"metadata": {"path": str(cwd)}},
            allow_errors=False,  # a cell tagged raises-exception may still raise (nbclient honours the tag)
        )
        try:
            client.execute(env=self.environ())
        finally:  # nbclient shuts down only kernels of a manager it made itself
            if km.has_kernel:
                km.shutdown_kernel(now=True)
            km.cleanup_resources()
        return nb


# --- building -----------------------------------------------------------------------


def _build_colab(env: ReaderEnv, log: Path) -> None:
    _run([system_python(), "-m", "venv", str(env.venv)], log)
    _run([str(env.python), "-m", "pip", "install", *pins_for(COLAB_PREINSTALLED)], log, env=env.environ())


def _build_binder(env: ReaderEnv, log: Path) -> None:
    runtime = (ROOT / "binder/runtime.txt").read_text().strip()  # e.g. python-3.11
    have = "python-{}.{}".format(*_python_version())
    if runtime != have:
        raise RuntimeError(f"binder/runtime.txt asks for {runtime}; this machine's python3 is {have}")
    # PyTorch's CPU index (binder/requirements.txt) cannot be reached from this machine: pip
    # warns and takes the same torch==2.13.0+cpu wheel from the machine's own wheel folder.
    # No retries, so that it gives up on that index at once instead of 15 s per package.
    environ = {**env.environ(), "PIP_RETRIES": "0"}
    _run([system_python(), "-m", "venv", str(env.venv)], log)
    _run([str(env.python), "-m", "pip", "install", *pins_for(REPO2DOCKER_BASE)], log, env=environ)
    snapshot(env.repo)
    # repo2docker: `pip install -r binder/requirements.txt`, then `./binder/postBuild`, in the repository
    _run([str(env.python), "-m", "pip", "install", "-r", "binder/requirements.txt"], log, cwd=env.repo, env=environ)
    _run(["./binder/postBuild"], log, cwd=env.repo, env=environ)


BUILDERS = {"colab": _build_colab, "binder": _build_binder}


def _python_version() -> tuple[int, int]:
    out = subprocess.run([system_python(), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, check=True)
    return tuple(int(x) for x in out.stdout.split())


def key(name: str) -> str:
    """Hash of everything that goes into environment ``name``."""
    parts = [name, inspect.getsource(BUILDERS[name]), inspect.getsource(_run), repr(_python_version())]
    if name == "colab":
        parts += pins_for(COLAB_PREINSTALLED)
    else:
        parts += pins_for(REPO2DOCKER_BASE)
        parts += [(ROOT / f).read_text() for f in ("binder/requirements.txt", "binder/postBuild", "binder/runtime.txt", "pyproject.toml")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _prune(root: Path, name: str, keep: Path) -> None:
    for old in root.glob(f"{name}-*"):
        stamp = old / "last-used"
        if old != keep and old.is_dir() and (not stamp.exists() or time.time() - stamp.stat().st_mtime > STALE_AFTER_S):
            shutil.rmtree(old, ignore_errors=True)


def get(name: str, rebuild: bool = False) -> ReaderEnv:
    """Environment ``name`` ('colab' or 'binder'): the cached one, or built now."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    env = ReaderEnv(name, root / f"{name}-{key(name)}")
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs on one machine build it once
        complete = env.path / "base.json"
        if rebuild or not complete.exists():
            shutil.rmtree(env.path, ignore_errors=True)
            env.path.mkdir(parents=True)
            start = time.monotonic()
            BUILDERS[name](env, env.path / "build.log")
            (env.path / "base.json").write_text(json.dumps(env.installed(), indent=1, sort_keys=True))
            env.build_seconds = time.monotonic() - start
            (env.path / "build-seconds").write_text(f"{env.build_seconds:.1f}\n")
        if name == "binder":
            snapshot(env.repo)  # the current files; the editable install points here
        (env.path / "last-used").touch()
        _prune(root, name, env.path)
    return env


# --- Colab: one notebook as Colab runs it -----------------------------------------------

FAKE_COLAB = 'import sys, types\nsys.modules["google.colab"] = types.ModuleType("google.colab")  # test harness: Colab\'s marker'
UNFAKE_COLAB = 'del sys.modules["google.colab"]  # test harness: the marker served the install cell only'


def install_cell_index(nb) -> int:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            if not cell.source.startswith(sync_notebooks.INSTALL_MARKER):
                raise ValueError("the first code cell is not the install cell (run `make notebooks`)")
            return i
    raise ValueError("notebook without code cells")


def for_colab(nb, source: Path):
    """``nb`` as the Colab test runs it: the install cell installs ``source`` instead of the
    repository, and sees ``google.colab`` (harness cells before and after it)."""
    import nbformat

    url, branch = sync_notebooks.repository()
    i = install_cell_index(nb)
    published = f"git+{url}@{branch}"
    cell = nb.cells[i]
    if cell.source.count(published) != 1:
        raise ValueError(f"the install cell does not install {published} exactly once:\n{cell.source}")
    cell.source = cell.source.replace(published, source.resolve().as_uri())
    fake = nbformat.v4.new_code_cell(FAKE_COLAB, metadata={"tags": ["harness"]})
    unfake = nbformat.v4.new_code_cell(UNFAKE_COLAB, metadata={"tags": ["harness"]})
    nb.cells[i:i + 1] = [fake, cell, unfake]
    return nb


def reset_colab(env: ReaderEnv) -> None:
    """Back to what Colab has: uninstall whatever an install cell added; a changed
    preinstalled package means a rebuild (raised, so the caller rebuilds)."""
    base, now = env.base(), env.installed()
    changed = {n: (v, now.get(n)) for n, v in base.items() if now.get(n) != v}
    if changed:
        raise RuntimeError(f"Colab's preinstalled packages changed (was, now): {changed}")
    added = sorted(set(now) - set(base))
    if added:
        _run([str(env.python), "-m", "pip", "uninstall", "-y", *added], env.path / "reset.log", env=env.environ())


# --- what a notebook imports ------------------------------------------------------------


def code_cells(nb) -> list[str]:
    """Each code cell's source as Python (IPython magics turned into calls)."""
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    return [transform(c.source) for c in nb.cells if c.cell_type == "code"]


def third_party_imports(nb) -> dict[str, int]:
    """Top-level module names a notebook imports that are neither the standard library
    nor ``transformer_lessons``, each with the index of the first code cell importing it."""
    found: dict[str, int] = {}
    for index, src in enumerate(code_cells(nb)):
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "transformer_lessons":
                    found.setdefault(top, index)
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def _packages_distributions() -> dict[str, list[str]]:
    import importlib.metadata

    return importlib.metadata.packages_distributions()


def distribution_of(module: str) -> set[str]:
    """The distributions that provide top-level ``module`` (from this environment's metadata)."""
    return {_norm(d) for d in _packages_distributions().get(module, [])}


@lru_cache(maxsize=None)
def _requires(name: str) -> tuple[str, ...]:
    import importlib.metadata

    from packaging.requirements import Requirement

    try:
        requires = importlib.metadata.requires(name) or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    reqs = [Requirement(line) for line in requires]
    return tuple(_norm(r.name) for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""}))


def with_dependencies(names: set[str]) -> set[str]:
    """``names`` and everything they require, transitively (metadata of this environment;
    extras left out, environment markers evaluated)."""
    seen, todo = set(), [_norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += _requires(name)
    return seen


def _pip_installs(lines: list[str]) -> set[str]:
    """What ``pip install`` lines install: each named requirement, with its dependencies
    unless the line says --no-deps ('.' is this project)."""
    from packaging.requirements import Requirement

    out: set[str] = set()
    for line in lines:
        words = shlex.split(line)
        if "install" not in words:
            continue
        args = words[words.index("install") + 1:]
        names = set()
        skip = False
        for arg in args:
            if skip:
                skip = False
                continue
            if arg in ("-r", "--requirement", "-c", "--constraint", "--extra-index-url", "--index-url", "-i", "-f", "--find-links"):
                skip = True
                continue
            if arg.startswith("-"):
                continue
            names.add("transformer-lessons" if arg in (".", "./") else _norm(Requirement(arg).name))
        out |= names if "--no-deps" in args else with_dependencies(names)
    return out


def requirements_file(path: Path) -> set[str]:
    """What ``pip install -r path`` installs: its requirements and their dependencies."""
    from packaging.requirements import Requirement

    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(_norm(Requirement(line).name))
    return with_dependencies(names)


def binder_provides() -> set[str]:
    post = [ln for ln in (ROOT / "binder/postBuild").read_text().splitlines() if not ln.strip().startswith("#")]
    return with_dependencies(set(REPO2DOCKER_BASE)) | requirements_file(ROOT / "binder/requirements.txt") | _pip_installs(post)


def colab_provides(nb) -> set[str]:
    """Colab's preinstalled packages and what the notebook's install cell installs there."""
    i = install_cell_index(nb)
    lines = [ln.strip().lstrip("%!") for ln in nb.cells[i].source.splitlines() if re.match(r"\s*[%!]pip ", ln)]
    return with_dependencies(set(COLAB_PREINSTALLED)) | _pip_installs(lines)


def missing_imports(nb, provided: set[str]) -> dict[str, str]:
    """Imports of ``nb`` no distribution in ``provided`` provides: module -> why."""
    missing = {}
    for module, cell in third_party_imports(nb).items():
        dists = distribution_of(module)
        if not dists:
            missing[module] = f"code cell {cell}: no installed distribution provides it"
        elif not dists & provided:
            missing[module] = f"code cell {cell}: provided by {sorted(dists)}, which this environment does not install"
    return missing


if __name__ == "__main__":
    for name in sys.argv[1:] or ["colab", "binder"]:
        start = time.monotonic()
        env = get(name)
        print(f"{name}: {env.path} ({'built' if env.build_seconds else 'cached'}, {time.monotonic() - start:.1f} s)")
