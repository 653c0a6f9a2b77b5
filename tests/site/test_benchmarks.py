"""The benchmark harness itself (benchmarks/): fast checks that need no build.

`make bench` is not part of `make test` (its figures are measurements, not pass/fail
checks of the code); these tests keep its plumbing honest: the server that Lighthouse
measures compresses like a static host, and run.py writes one JSON document from the
sections it is given.
"""

from __future__ import annotations

import gzip
import json
import sys
import types
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
from benchmarks import run
from benchmarks import serve


def _get(url: str, gzip_ok: bool = True):
    headers = {"Accept-Encoding": "gzip"} if gzip_ok else {}
    with urlopen(Request(url, headers=headers), timeout=10) as response:
        return response.headers, response.read()


def test_server_gzips_text_but_not_images(tmp_path):
    page = "<html><body>" + "attention " * 500 + "</body></html>"
    (tmp_path / "page.html").write_text(page)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    (tmp_path / "figure.png").write_bytes(png)
    with serve.serve(tmp_path) as base:
        headers, body = _get(f"{base}/page.html")
        assert headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(body).decode() == page
        assert len(body) < len(page) / 10
        assert headers["Cache-Control"] == serve.CACHE_CONTROL

        headers, body = _get(f"{base}/page.html", gzip_ok=False)  # a client that cannot inflate
        assert headers["Content-Encoding"] is None and body.decode() == page

        headers, body = _get(f"{base}/figure.png")
        assert headers["Content-Encoding"] is None and body == png


def test_run_writes_one_document_from_the_sections_given(tmp_path, monkeypatch, capsys):
    fake = types.ModuleType("bench_fake")
    fake.run = lambda: {"answer": 42}
    fake.summary = lambda result: f"the answer is {result['answer']}"
    monkeypatch.setitem(sys.modules, "benchmarks.bench_fake", fake)
    monkeypatch.setattr(run, "SECTIONS", ["fake"])
    out = tmp_path / "results.json"

    assert run.main(["--out", str(out), "fake"]) == 0
    doc = json.loads(out.read_text())
    assert doc["sections"]["fake"]["answer"] == 42
    assert len(doc["sections"]["fake"]["load_average"]) == 2  # before and after the section
    assert {"cpu", "cores", "torch"} <= set(doc["machine"])
    assert "the answer is 42" in capsys.readouterr().out


def test_run_rejects_an_unknown_section(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--out", str(tmp_path / "x.json"), "no-such-section"])
    assert exit_info.value.code == 2


def test_update_replaces_only_the_sections_given(tmp_path, monkeypatch, capsys):
    fake = types.ModuleType("bench_fake")
    fake.run = lambda: {"answer": 43}
    fake.summary = lambda result: f"the answer is {result['answer']}"
    monkeypatch.setitem(sys.modules, "benchmarks.bench_fake", fake)
    monkeypatch.setattr(run, "SECTIONS", ["fake", "other"])
    out = tmp_path / "results.json"
    earlier = {"date": "2000-01-01T00:00:00+00:00", "machine": {"cpu": "old"},
               "sections": {"fake": {"answer": 42}, "other": {"kept": True}}}
    out.write_text(json.dumps(earlier))

    assert run.main(["--out", str(out), "--update", "fake"]) == 0
    doc = json.loads(out.read_text())
    assert doc["sections"]["fake"]["answer"] == 43
    assert doc["sections"]["fake"]["date"] != earlier["date"]
    # the section not re-run is kept, with the date and machine of the run that measured it
    assert doc["sections"]["other"] == {"kept": True, "date": earlier["date"], "machine": {"cpu": "old"}}


def test_build_phases_are_read_from_the_log_as_it_came():
    from benchmarks import bench_build

    log = [(0.0, ".venv/bin/python -m book_build.cache_guard"), (0.5, ".venv/bin/python -m book_build.execute_pages"),
           (120.0, ".venv/bin/jupyter-book build . --builder html"), (125.0, "reading sources... [  4%] book/intro"),
           (130.0, "reading sources... [  8%] book/cost"), (140.0, "preparing documents... done"),
           (141.0, "copying static files... done"), (150.0, "writing output... [ 50%] book/cost"),
           (160.0, "dumping object inventory... done"), (165.0, ".venv/bin/python -m transformer_classroom.lms --out _build/lms")]
    assert bench_build.phases(log, 170.0) == {"cache_guard": 0.5, "execute_pages": 119.5, "sphinx_setup": 5.0,
                                              "sphinx_read": 15.0, "sphinx_write": 20.0, "sphinx_finish": 5.0,
                                              "lms_export": 5.0}
    coloured = "\x1b[01mreading sources... \x1b[39;49;00m[ 4%]"
    assert bench_build.ANSI.sub("", coloured).startswith("reading sources")


def test_mobile_reports_the_median_of_its_runs_and_keeps_every_run(monkeypatch, tmp_path):
    """bench_site runs Lighthouse MOBILE_RUNS times on mobile and reports the run of median
    performance, with every run's score; desktop runs once."""
    from benchmarks import bench_site

    scores = iter([0.93, 1.0, 0.97, 1.0])
    calls = []

    def fake(url, form_factor, out_dir):
        calls.append(form_factor)
        s = next(scores)
        return {"scores": {"performance": s}, "metrics": {}, "observed_first_contentful_paint": 1000 * s,
                "load_before": [0.1, 0.1, 0.1]}

    monkeypatch.setattr(bench_site, "lighthouse", fake)
    monkeypatch.setattr(bench_site, "MOBILE_RUNS", 3)
    mobile = bench_site.median_run("http://x/page.html", "mobile", tmp_path)
    assert mobile["scores"]["performance"] == 0.97
    assert [r["performance"] for r in mobile["runs"]] == [0.93, 1.0, 0.97]
    desktop = bench_site.median_run("http://x/page.html", "desktop", tmp_path)
    assert desktop["scores"]["performance"] == 1.0 and len(desktop["runs"]) == 1
    assert calls == ["mobile"] * 3 + ["desktop"]
    monkeypatch.setattr(bench_site, "MOBILE_RUNS", 0)
    with pytest.raises(ValueError, match="BENCH_MOBILE_RUNS"):
        bench_site.median_run("http://x/page.html", "mobile", tmp_path)


def test_the_suite_benchmark_reads_pytests_closing_line():
    from benchmarks import bench_tests

    out = "....\n=== 2 failed, 1460 passed, 3 deselected in 643.62s (0:10:43) ===\n"
    assert bench_tests.counts(out) == {"failed": 2, "passed": 1460, "deselected": 3}
    assert bench_tests.counts("no summary") == {}
