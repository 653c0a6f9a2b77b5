"""The README's layout is true to the tree: every module of the package and every tool has
a row in its tables, and every row names something that exists."""

from __future__ import annotations

import re

import pytest
from book_files import ROOT

PACKAGE = ROOT / "code" / "transformer_lessons"
TOOLS = ROOT / "tools"


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


def modules() -> list[str]:
    """The package's modules and subpackages, by name (``attention``, ``checks``)."""
    found = {p.stem for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    found |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return sorted(found)


def tools() -> list[str]:
    """Every tool, as ``tools/<name>`` (a folder of templates as ``tools/<folder>/``)."""
    found = set()
    for p in TOOLS.iterdir():
        if p.name.startswith((".", "__")):
            continue
        found.add(f"tools/{p.name}/" if p.is_dir() else f"tools/{p.name}")
    return sorted(found)


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_every_module_is_in_the_layout(readme):
    listed = first_cells(readme, "### The package, module by module")
    assert not set(modules()) - set(listed), f"modules missing from README's layout: {sorted(set(modules()) - set(listed))}"
    assert not set(listed) - set(modules()), f"README lists modules that do not exist: {sorted(set(listed) - set(modules()))}"


def test_every_tool_is_in_the_layout(readme):
    listed = first_cells(readme, "### The tools")
    assert not set(tools()) - set(listed), f"tools missing from README's layout: {sorted(set(tools()) - set(listed))}"
    assert not set(listed) - set(tools()), f"README lists tools that do not exist: {sorted(set(listed) - set(tools()))}"


def test_the_reader_of_the_tables_sees_a_missing_row():
    text = "### The tools\n\n| tool | what |\n|---|---|\n| `tools/a.py` | a |\n\n## Next\n| `tools/b.py` | b |\n"
    assert first_cells(text, "### The tools") == ["tools/a.py"]


def test_the_ext_line_count_is_true(readme):
    """The README says how many lines of Python book/_ext holds: the figure is the tree's."""
    stated = re.search(r"`book/_ext/` is (\d+) lines of Python", readme)
    assert stated, "README no longer states the size of book/_ext"
    actual = sum(len(p.read_text().splitlines()) for p in (ROOT / "book" / "_ext").glob("*.py"))
    assert int(stated[1]) == actual, f"README says book/_ext is {stated[1]} lines; it is {actual}"


def test_the_site_benchmark_table_is_the_committed_run(readme):
    """The README's per-page Lighthouse table is generated from benchmarks/results.json
    (``python benchmarks/bench_site.py --readme``), never typed: a new run without a new
    table, or an edited figure, fails here."""
    import json

    import bench_site  # benchmarks/ (pytest's pythonpath)

    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"]["site"]
    start, end = readme.find(bench_site.README_START), readme.find(bench_site.README_END)
    assert 0 <= start < end, "README has lost the markers of the generated site table"
    stated = readme[start : end + len(bench_site.README_END)]
    assert stated == bench_site.readme_table(result), (
        "README's site table differs from benchmarks/results.json: run `python benchmarks/bench_site.py --readme`"
    )


def test_the_build_benchmark_rows_are_the_committed_run(readme):
    """Likewise the build's rows of the targets table (``python benchmarks/bench_build.py --readme``)."""
    import json

    import bench_build  # benchmarks/ (pytest's pythonpath)

    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())["sections"]["build"]
    start, end = readme.find(bench_build.README_START), readme.find(bench_build.README_END)
    assert 0 <= start < end, "README has lost the markers of the generated build figures"
    assert readme[start : end + len(bench_build.README_END)] == bench_build.readme_rows(result), (
        "README's build figures differ from benchmarks/results.json: run `python benchmarks/bench_build.py --readme`"
    )
