"""Execute the book's pages side by side into the jupyter cache, before Sphinx reads them.

Jupyter Book 1.x reads the pages one after the other (its ``build`` command never passes
Sphinx a ``-j``), and myst-nb executes each page while Sphinx reads it, so a clean build
runs every page's kernel in turn and uses one core. This script, run by ``make book`` and
``make pdf`` before ``jupyter-book build``, executes the pages the cache
(``_build/.jupyter_cache``, ``execute.cache`` in ``_config.yml``) does not hold yet,
``--jobs`` at a time, and stores each result in the cache exactly as myst-nb's ``cache``
mode would: the page read by myst-nb's own reader (so the same code cells and the same
hash), executed by jupyter-cache's ``single_nb_execution`` in the page's folder with the
page's timeout (``mystnb: execution_timeout`` in its front matter, else ``execute.timeout``).
Sphinx then finds every page cached and only renders them; what a reader sees is the same.

Decisions:

* ``--jobs`` defaults to the cores this process may use, at most 2: the machine the book is
  built on has 2, and each kernel holds PyTorch and some a model (about 0.7 GB at most).
  ``BOOK_JOBS`` in the environment overrides it; ``--jobs 1`` still runs here, one page at a time.
* Each kernel gets one thread (``OMP_NUM_THREADS=1``): pages run side by side, and two
  threads of one kernel waiting for each other on a busy core are many times slower than one.
  The same number on every machine also makes the results the same on every machine.
* The slowest pages start first, so that the longest one does not start last: pages that
  declare a longer ``execution_timeout`` first, then the longer files.
* A page that fails is not cached: its error and traceback are printed and the script
  exits with status 1, so ``make book`` stops there, as the strict build would.
* Only pages of ``_toc.yml`` that are MyST notebooks (``only_build_toc_files: true``).

    .venv/bin/python -m book_build.execute_pages [--jobs N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path


from transformer_classroom import book

ROOT = book.find_root()
MAX_JOBS = 2
READ_DATA = {"type": "plugin", "name": "myst_nb_md"}  # how myst-nb registers a MyST page in the cache


def config() -> dict:
    return book.config(ROOT)


def toc_pages() -> list[Path]:
    """Every document of _toc.yml, as a path to its .md file."""
    return [ROOT / f"{doc}.md" for doc in book.toc_files(ROOT)]


def read(path: Path):
    """The page as myst-nb reads it (``None`` if it is not a notebook): the same cells, the same hash."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    text = path.read_text(encoding="utf8")
    if not is_myst_markdown_notebook(text):
        return None
    return read_myst_markdown_notebook(text, config=MdParserConfig(), add_source_map=True, path=str(path))


def page_settings(nb, execute: dict) -> dict:
    """Timeout and allow_errors of one page: its ``mystnb`` front matter over ``execute:``."""
    own = nb.metadata.get("mystnb", {}) or {}
    return {
        "timeout": int(own.get("execution_timeout", execute.get("timeout", 30))),
        "allow_errors": bool(own.get("execution_allow_errors", execute.get("allow_errors", False))),
    }


def default_jobs() -> int:
    if os.environ.get("BOOK_JOBS"):
        return max(1, int(os.environ["BOOK_JOBS"]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_JOBS, cores))


def _execute(path: str, timeout: int, allow_errors: bool) -> tuple[str, object, float, str | None, float]:
    """In a worker process: execute one page; (path, notebook, seconds, error, CPU seconds of the kernel)."""
    import resource

    from jupyter_cache.executors.utils import single_nb_execution

    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the kernel this starts
    nb = read(Path(path))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    error = None if result.err is None else (result.exc_string or repr(result.err))
    return path, nb, result.time, error, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="pages executed at once (default %(default)s)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cfg = config()
    execute = cfg.get("execute", {})
    if execute.get("execute_notebooks") != "cache":
        print(f"execute_pages: execute_notebooks is {execute.get('execute_notebooks')!r}, not 'cache': nothing to do")
        return 0
    cache = get_cache(str(ROOT / execute["cache"]))
    todo = []
    for path in toc_pages():
        nb = read(path)
        if nb is None:
            continue
        try:
            cache.match_cache_notebook(nb)
            continue  # cached: Sphinx will use it
        except KeyError:
            pass
        settings = page_settings(nb, execute)
        todo.append((settings["timeout"], path.stat().st_size, path, settings))
    if not todo:
        print("execute_pages: every page is cached")
        return 0
    todo.sort(key=lambda t: (t[0], t[1]), reverse=True)  # the slowest first
    names = ", ".join(t[2].stem for t in todo)
    print(f"execute_pages: executing {len(todo)} pages, {args.jobs} at a time: {names}", flush=True)

    failed = []
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no state shared with this one
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        futures = [pool.submit(_execute, str(p), s["timeout"], s["allow_errors"]) for _, _, p, s in todo]
        for future in as_completed(futures):
            path, nb, seconds, error, cpu = future.result()
            rel = Path(path).relative_to(ROOT)
            if error is not None:
                failed.append(rel)
                print(f"execute_pages: {rel} FAILED after {seconds:.1f} s:\n{error}", file=sys.stderr, flush=True)
                continue
            record = cache.add_nb_to_project(path, read_data=READ_DATA)
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds, "cpu_seconds": cpu}),
                                        check_validity=False, overwrite=True)
            print(f"execute_pages: {rel} executed in {seconds:.1f} s (kernel CPU {cpu:.1f} s)", flush=True)
    print(f"execute_pages: {len(todo) - len(failed)} of {len(todo)} pages in {time.perf_counter() - start:.1f} s", flush=True)
    if failed:
        print(f"execute_pages: failed: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
