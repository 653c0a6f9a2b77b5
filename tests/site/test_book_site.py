"""Checks of the built web site (_build/html): run `make book` first.

Structure, not prose: every page of _toc.yml is there, no cell shows an error it was
not meant to show, figures are embedded with caption and alt text, quiz answers and
solutions start closed, launch buttons point at files of the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from transformer_classroom import book
import pytest
from bs4 import BeautifulSoup
from tests.book_files import PLACEHOLDER, ROOT, html_page, source

pytestmark = pytest.mark.book

INSTALL_MARKER = "Colab only: install transformer_lessons"


def soup(docname: str) -> BeautifulSoup:
    return BeautifulSoup(html_page(docname).read_text(), "html.parser")


def article(docname: str):
    art = soup(docname).select_one("article.bd-article")
    assert art is not None, f"{docname}.html has no <article class='bd-article'>"
    return art


def is_executable(docname: str) -> bool:
    text = source(docname).read_text()
    return text.startswith("---") and "jupytext:" in text.split("\n---", 1)[0]


def test_no_page_is_a_placeholder(toc_files):
    unwritten = [f for f in toc_files if PLACEHOLDER.search(source(f).read_text())]
    assert not unwritten, f"pages still holding the skeleton's 'Placeholder.' line: {unwritten}"


def test_every_toc_page_is_built(html_dir, toc_files):
    missing = [f for f in toc_files if not html_page(f).exists()]
    assert not missing, f"pages of _toc.yml missing from _build/html: {missing}"


def test_no_cell_shows_an_error_unless_tagged(html_dir, toc_files):
    problems = []
    for doc in toc_files:
        for i, cell in enumerate(article(doc).select("div.cell")):
            tagged = "tag_raises-exception" in cell.get("class", [])
            errors = cell.select(".cell_output .traceback, .cell_output .error, .cell_output .stderr")
            if errors and not tagged:
                problems.append(f"{doc}: cell {i} shows an error/stderr output: {errors[0].get_text()[:200]!r}")
            if tagged and not cell.select(".cell_output .traceback"):
                problems.append(f"{doc}: cell {i} is tagged raises-exception but shows no traceback")
    assert not problems, "\n".join(problems)


def test_images_resolve(html_dir, toc_files):
    broken = []
    for doc in toc_files:
        page = html_page(doc)
        for img in article(doc).select("img"):
            src = img.get("src", "")
            if src.startswith("data:image/"):
                continue
            assert not urlparse(src).netloc, f"{doc}: image from another host: {src}"
            target = (page.parent / src.split("?")[0]).resolve()
            if not target.is_file() or target.stat().st_size == 0:
                broken.append(f"{doc}: {src}")
    assert not broken, f"images that do not resolve to a file in _build/html: {broken}"


def test_figures_have_caption_and_alt_text(html_dir, toc_files):
    problems = []
    for doc in toc_files:
        for img in article(doc).select(".cell_output img"):
            if not img.get("alt", "").strip():
                problems.append(f"{doc}: figure {img.get('src', '')[:60]} has no alt text")
            figure = img.find_parent("figure")
            if figure is not None and "tl-walk-frame" in figure.get("class", []):
                # a frame of the illustrated walk: its own "Step k of n" caption, in the walk's figure
                if not figure.select_one("figcaption").get_text(strip=True).startswith("Step "):
                    problems.append(f"{doc}: walk frame {figure.get('data-step')} has no 'Step k of n' caption")
                figure = figure.find_parent("figure")
            caption = figure.select_one("figcaption .caption-text") if figure else None
            if caption is None or not caption.get_text(strip=True):
                problems.append(f"{doc}: figure {img.get('src', '')[:60]} has no caption (mystnb: figure: caption)")
            elif figure.find_parent(class_="solution") is not None:
                # the student edition leaves solutions out: a numbered figure there would make its
                # figures skip a number, and the two editions would number differently
                if figure.select_one(".caption-number"):
                    problems.append(f"{doc}: figure {caption.get_text()[:40]!r} in a solution is numbered; "
                                    "give it no name")
            elif not figure.get("id"):
                problems.append(f"{doc}: figure with caption {caption.get_text()[:40]!r} has no name")
    assert not problems, "\n".join(problems)


def test_quizzes_and_instructor_notes_are_pages_of_their_own(html_dir, toc_files):
    """Quiz answers sit on pages that declare ``kind: quiz``; no page of both editions links a
    page of the instructor edition (``edition: instructor``), which the student PDF drops."""
    quizzes = [f for f in toc_files if book.kind(f) == "quiz"]
    instructor = [f for f in toc_files if book.edition(f) == "instructor"]
    assert quizzes, "_toc.yml has no quiz page (front matter kind: quiz)"
    assert instructor, "_toc.yml has no instructor page (front matter edition: instructor)"
    instructor_html = {Path(f).name + ".html" for f in instructor}
    problems = []
    for doc in toc_files:
        answers = article(doc).select(".quiz-answer")
        if answers and doc not in quizzes:
            problems.append(f"{doc}: quiz answers belong on a quiz page, found {len(answers)}")
        if doc in quizzes and not answers:
            problems.append(f"{doc}: a quiz page without any answer (:class: dropdown quiz-answer)")
        if doc not in instructor:
            for a in article(doc).select("a[href]"):
                target = urlparse(a["href"]).path
                if Path(target).name in instructor_html:  # a page, not the instructor PDF
                    problems.append(f"{doc}: links to instructor page {a['href']} (the student PDF drops those)")
    assert not problems, "\n".join(problems)


def _closed_dropdown(el) -> bool:
    classes = el.get("class", [])
    if "dropdown" in classes and "toggle-shown" not in classes:
        return True  # sphinx-togglebutton: collapsed on load
    details = el.find_parent("details")
    return details is not None and not details.has_attr("open")


def test_answers_and_solutions_start_closed(html_dir, toc_files):
    problems, solutions = [], 0
    for doc in toc_files:
        art = article(doc)
        for el in art.select(".quiz-answer"):
            if not _closed_dropdown(el):
                problems.append(f"{doc}: a quiz answer that is not a closed dropdown: {el.get_text()[:80]!r}")
        for el in art.select("div.solution"):
            solutions += 1
            if not _closed_dropdown(el):
                problems.append(f"{doc}: a solution that is not a closed dropdown (add :class: dropdown)")
        if "exercise" in Path(doc).name:
            exercises = art.select("div.exercise")
            assert exercises, f"{doc}: no sphinx-exercise exercise on the exercises page"
            assert art.select("div.solution"), f"{doc}: exercises without any solution"
    assert not problems, "\n".join(problems)


def _launch_target(url: str) -> tuple[str, str, str]:
    """(org/repo, branch, path in the repository) of a Binder or Colab launch URL."""
    parsed = urlparse(url)
    parts = parsed.path.strip("/").split("/")
    if "mybinder.org" in parsed.netloc or parsed.path.startswith("/v2/gh/"):
        # /v2/gh/ORG/REPO/BRANCH?urlpath=lab/tree/PATH
        org, repo, branch = parts[2:5]
        urlpath = parse_qs(parsed.query)["urlpath"][0]
        path = re.sub(r"^(lab/tree|tree|notebooks)/", "", urlpath)
        return f"{org}/{repo}", branch, path
    if "colab.research.google.com" in parsed.netloc:
        # /github/ORG/REPO/blob/BRANCH/PATH
        assert parts[0] == "github" and parts[3] == "blob", url
        return f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:])
    raise AssertionError(f"not a launch URL: {url}")


def _tracked(path: str) -> bool:
    if not (ROOT / ".git").exists():
        return (ROOT / path).is_file()
    result = subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=ROOT, capture_output=True)
    return result.returncode == 0


def test_launch_buttons_point_at_repository_files(html_dir, toc_files, book_config):
    repo = book_config["repository"]
    expected_repo = urlparse(repo["url"]).path.strip("/")
    problems = []
    for doc in toc_files:
        links = [a["href"] for a in soup(doc).select("a[href]") if "mybinder.org" in a["href"] or "colab.research" in a["href"]]
        if is_executable(doc):
            hosts = {urlparse(u).netloc for u in links}
            if not {"mybinder.org", "colab.research.google.com"} <= hosts:
                problems.append(f"{doc}: executable page without both Binder and Colab buttons: {links}")
        for url in links:
            org_repo, branch, path = _launch_target(url)
            if org_repo != expected_repo or branch != repo["branch"]:
                problems.append(f"{doc}: {url} is not {expected_repo}@{repo['branch']} (_config.yml repository)")
            if not path.endswith(".ipynb"):
                problems.append(f"{doc}: {url} opens {path}; Colab/Binder need the .ipynb")
            if not _tracked(path):
                problems.append(f"{doc}: {url} points at {path}, not a file in the repository (run `make notebooks`, commit)")
    assert not problems, "\n".join(problems)


def test_repository_button_is_the_configured_repository(html_dir, toc_files, book_config):
    url = book_config["repository"]["url"].rstrip("/")
    for doc in toc_files:
        buttons = soup(doc).select("a.btn-source-repository-button")
        assert buttons, f"{doc}: no repository button (html.use_repository_button)"
        hrefs = {a["href"].rstrip("/") for a in buttons}
        assert hrefs == {url}, f"{doc}: repository button points at {hrefs}, _config.yml says {url}"


def test_install_cell_is_not_shown(html_dir, toc_files):
    shown = [doc for doc in toc_files if INSTALL_MARKER in article(doc).get_text()]
    assert not shown, f"the Colab install cell (tagged remove-cell) is visible on: {shown}"


def test_no_raw_math_delimiters_left(html_dir, toc_files):
    # dollarmath turns $...$ into <span class="math">; a stray $$ in the text means a
    # formula MyST did not parse (for example a blank line inside it).
    stray = []
    for doc in toc_files:
        art = article(doc)
        for tag in art.select(".math, pre, code, script, .cell"):
            tag.decompose()
        if "$$" in art.get_text():
            stray.append(doc)
    assert not stray, f"unparsed $$ math on: {stray}"


def test_bug_hunt_messages_are_shown_only_when_asked(html_dir):
    """The message a bug-hunt check gives the buggy starter names the fix: on the web it sits
    in a closed toggle under its cell (tag hide-output); the PDFs box it (test_pdf.py)."""
    from transformer_lessons.checks import bughunt

    calls = [check.__name__ for check in bughunt.CHECKS.values()]
    folded = []
    for cell in article("book/exercises").select("div.cell.tag_raises-exception"):
        code = cell.select_one(".cell_input").get_text()
        if not any(f"{name}(" in code for name in calls):
            continue
        details = cell.select_one("details")
        assert "tag_hide-output" in cell.get("class", []), f"a bug-hunt check shows its message: {code.strip()}"
        assert details is not None and not details.has_attr("open"), f"not folded: {code.strip()}"
        assert details.select_one(".cell_output .traceback"), f"the folded output is not the message: {code.strip()}"
        assert "Show the check's message" in details.select_one("summary").get_text()
        folded.append(code)
    assert len(folded) == len(calls), f"{len(folded)} folded bug-hunt checks for {len(calls)} bugs"


def test_where_the_book_lives_is_typed_only_in_the_config(html_dir, toc_files, book_config):
    """The pages write the repository, the Pages address and the licence as substitutions
    (code/build/book_build/ext/substitutions.py); the built pages show them, and no `{{ }}` is left."""
    from transformer_classroom import book

    values = book.book_values(ROOT)
    host = values["pages_url"].split("/")[2]
    pages = sorted((ROOT / "book").glob("*.md"))  # the print edition's front page too
    typed = [f"{md.name}: {needle}" for md in pages for needle in (values["repo_url"], host, f"{values['licence']} licence")
             if needle in md.read_text()]
    assert not typed, typed
    built = " ".join(html_page(doc).read_text() for doc in toc_files)
    assert values["repo_url"] in built and f"{values['licence']} licence" in built
    left = [doc for doc in toc_files if "{{" in BeautifulSoup(html_page(doc).read_text(), "html.parser").select_one("article").get_text()]
    assert not left, f"substitutions left unreplaced on {left}"


def test_no_reference_doubles_its_article(html_dir, toc_files):
    """"the {ref}`label`" to a section titled "The ..." prints "the The ...": name it in the role."""
    doubled = [f"{doc}: {m.group(0)!r}" for doc in toc_files
               for m in re.finditer(r"\b(?:the The|a A|an An)\b.{0,30}", article(doc).get_text(" "))]
    assert not doubled, doubled
