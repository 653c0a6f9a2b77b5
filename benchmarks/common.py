"""What several benchmark sections share: the load average, the pages of the book, the
command line of a section run on its own.

    python benchmarks/bench_build.py     # a section alone: its JSON, then its summary
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded: read beside every timing (the machine is shared)."""
    return [round(x, 2) for x in os.getloadavg()]


def toc_pages(root: Path) -> list[str]:
    """Every document of ``root``'s _toc.yml, root first ('book/intro', ...)."""
    from transformer_classroom import book

    return book.toc_files(root)


def doc_paragraph(start: str, end: str, what: str, result: dict, summary: Callable[[dict], str]) -> str:
    """A section's paragraph of docs/performance.md, between its markers, from one run's
    ``result`` (its date, load average and commit, then its summary); a test keeps it equal."""
    load = "-".join(f"{x:.1f}" for x in result.get("load_average", [])) or "not recorded"
    return "\n".join([start, "", f"{what}, on {result['date'][:10]} (load average {load}, commit "
                       f"{result.get('revision', '?')}): {summary(result)}.", "", end])


def main(run: Callable[[], dict], summary: Callable[[dict], str]) -> None:
    """A section run as a script: its result as JSON, then its readable summary."""
    result = run()
    print(json.dumps(result, indent=2))
    print(summary(result))
