"""The README is a front door that stays short and points at docs/ that exists; docs/layout.md
is true to the tree (every module of the three packages has a row in its
tables, and every row names something that exists); docs/performance.md's generated figures
are the committed run's."""

from __future__ import annotations

import re

import pytest
from tests.book_files import ROOT

PACKAGES = {
    "## transformer_lessons, module by module": ROOT / "code" / "transformer_lessons",
    "## transformer_classroom, module by module": ROOT / "code" / "classroom" / "transformer_classroom",
    "## book_build, module by module": ROOT / "code" / "build" / "book_build",
}


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    nxt = text.find("\n### ", start + len(heading))
    stops = [i for i in (end, nxt) if i > 0]
    return text[start : min(stops) if stops else len(text)]


def first_cells(text: str, heading: str) -> list[str]:
    """The first cell of every row of the table under a heading, backticks removed."""
    cells = []
    for line in _section(text, heading).splitlines():
        m = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if m:
            cells.append(m.group(1))
    return cells


def modules(package) -> list[str]:
    """A package's modules and subpackages (and folders of data), by name (``attention``, ``checks``)."""
    found = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    found |= {p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    return sorted(found)


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "docs" / "layout.md").read_text()


@pytest.fixture(scope="module")
def performance() -> str:
    return (ROOT / "docs" / "performance.md").read_text()


def test_the_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160, "README.md is the front door: move details to docs/"
    assert "make book" in text[:2000] and "make test" in text[:2000]
    for target in re.findall(r"\]\(((?:docs/)?[A-Za-z_-]+\.md)\)", text):
        assert (ROOT / target).exists(), f"README links {target}, which does not exist"


@pytest.mark.parametrize("heading", sorted(PACKAGES))
def test_every_module_is_in_the_layout(readme, heading):
    listed, present = first_cells(readme, heading), modules(PACKAGES[heading])
    assert not set(present) - set(listed), f"modules missing from docs/layout.md: {sorted(set(present) - set(listed))}"
    assert not set(listed) - set(present), f"docs/layout.md lists modules that do not exist: {sorted(set(listed) - set(present))}"


def test_the_reader_of_the_tables_sees_a_missing_row():
    text = "### The tools\n\n| tool | what |\n|---|---|\n| `a` | a |\n\n## Next\n| `b` | b |\n"
    assert first_cells(text, "### The tools") == ["a"]


def test_the_site_benchmark_table_is_the_committed_run(performance):
    """docs/performance.md's per-page Lighthouse table is generated from benchmarks/results.json
    (``python -m benchmarks.bench_site --readme``), never typed: a new run without a new
    table, or an edited figure, fails here."""
    import json

    from benchmarks import bench_site

    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"]["site"]
    start, end = performance.find(bench_site.README_START), performance.find(bench_site.README_END)
    assert 0 <= start < end, "docs/performance.md has lost the markers of the generated site table"
    stated = performance[start : end + len(bench_site.README_END)]
    assert stated == bench_site.readme_table(result), (
        "docs/performance.md's site table differs from benchmarks/results.json: run `python -m benchmarks.bench_site --readme`"
    )


def test_the_build_benchmark_rows_are_the_committed_run(performance):
    """Likewise the build's rows of the targets table (``python -m benchmarks.bench_build --readme``)."""
    import json

    from benchmarks import bench_build

    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"]["build"]
    start, end = performance.find(bench_build.README_START), performance.find(bench_build.README_END)
    assert 0 <= start < end, "docs/performance.md has lost the markers of the generated build figures"
    assert performance[start : end + len(bench_build.README_END)] == bench_build.readme_rows(result), (
        "docs/performance.md's build figures differ from benchmarks/results.json: run `python -m benchmarks.bench_build --readme`"
    )


@pytest.mark.parametrize("section", ["grade", "tests"])
def test_the_generated_benchmark_paragraphs_are_the_committed_run(performance, section):
    """docs/performance.md's paragraphs on grading (the OS sandbox's cost) and on the test
    suite (make test's time on both cores), each generated from its section of results.json."""
    import importlib
    import json

    bench = importlib.import_module(f"benchmarks.bench_{section}")
    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"][section]
    start, end = performance.find(bench.DOC_START), performance.find(bench.DOC_END)
    assert 0 <= start < end, f"docs/performance.md has lost the markers of the generated {section} figures"
    assert performance[start : end + len(bench.DOC_END)] == bench.doc_text(result), (
        f"docs/performance.md's {section} figures differ from benchmarks/results.json: "
        f"run `python -m benchmarks.bench_{section} --doc`"
    )
