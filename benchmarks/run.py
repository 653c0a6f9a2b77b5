"""`make bench`: every benchmark of the project, one JSON document, one readable summary.

Each section is a module `benchmarks/bench_<name>.py` with two functions:

    run() -> dict                 # JSON-serialisable figures, measured in this process
    summary(result: dict) -> str  # a few readable lines, targets and ratios included

Sections run one after the other (never in parallel: the machine has 2 cores and the
figures are ratios measured side by side). The document is written to
benchmarks/results.json (committed: docs/performance.md's figures come from it) and the
summary is printed.

    .venv/bin/python -m benchmarks.run                 # every section
    .venv/bin/python -m benchmarks.run library toy     # only these sections
    .venv/bin/python -m benchmarks.run --out /tmp/x.json toy
    .venv/bin/python -m benchmarks.run --update library   # re-measure one section, keep the others

With --update the sections given replace theirs in the existing document and the others
are kept as they were; every section records its own "date" and "machine", so a figure
is always read with the run that measured it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SECTIONS = ["build", "site", "library", "toy", "pretrained", "decoder", "grade", "inpage", "tests"]  # build first: `site` measures what it built; tests last


def machine() -> dict:
    import numpy
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "os": platform.platform(),
    }


def revision() -> str:
    """The commit measured, with "+changes" when the work tree differs from it."""
    import subprocess

    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    return (head or "unknown") + ("+changes" if dirty.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # no `choices=`: with nargs="*" Python 3.11's argparse rejects the empty default against them
    parser.add_argument("sections", nargs="*", help=f"sections to run, of {SECTIONS} (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    parser.add_argument("--update", action="store_true",
                        help="keep the other sections of an existing --out document")
    args = parser.parse_args(argv)
    chosen = args.sections or SECTIONS
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {SECTIONS}")

    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    doc = {"date": now, "machine": machine(), "sections": {}}
    if args.update and args.out.exists():
        old = json.loads(args.out.read_text())
        for name, section in old.get("sections", {}).items():  # measured by an earlier run
            section.setdefault("date", old.get("date"))
            section.setdefault("machine", old.get("machine"))
            doc["sections"][name] = section
    summaries = []
    measured = revision()  # before any section: what is measured is the tree as it was at the start
    for name in chosen:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"== {name} ...", flush=True)
        start, load_start = time.perf_counter(), os.getloadavg()[0]
        result = module.run()
        result["section_seconds"] = round(time.perf_counter() - start, 1)
        # 1-minute load average before and after: timings from a busy machine are not comparable
        result["load_average"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
        result["date"], result["machine"], result["revision"] = now, doc["machine"], measured
        doc["sections"][name] = result
        summaries.append(f"## {name} ({result['section_seconds']} s)\n{module.summary(result)}")
        # write after every section: a long run that dies still leaves what it measured
        args.out.write_text(json.dumps(doc, indent=2) + "\n")

    m = doc["machine"]
    print(f"\n# Benchmark, {doc['date']}: {m['cpu']}, {m['cores']} cores, torch {m['torch']}\n")
    print("\n\n".join(summaries))
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
