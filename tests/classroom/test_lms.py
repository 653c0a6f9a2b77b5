"""The quizzes exported for learning-management systems (transformer_classroom.lms), read back.

The exported files are parsed as an LMS would parse them (the zip, its manifest, every QTI
assessment, the Moodle XML) and compared with the quiz pages read *independently* of the
exporter's parser: every labelled question once, the same options in the same order, the
same answer as the book's answer box. A changed answer on a copy of a quiz page changes the
export and fails the comparison with the book.
"""

from __future__ import annotations

import html
import io
import re
import shutil
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from tests.book_files import ROOT

from transformer_classroom import book, lms
from transformer_classroom.quiz_blocks import page_text, quiz_pages

BOOK = ROOT / "book"
Q = "{" + lms.QTI_NS + "}"
M = "{" + lms.MANIFEST_NS + "}"
URL = "https://example.org/book-site/"


# --- the book, read without the exporter -------------------------------------------------


def _outside_fences(lines: list[str]) -> list[tuple[int, str]]:
    out, fence = [], None
    for i, line in enumerate(lines):
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            out.append((i, line))
    return out


def book_questions(book: Path = BOOK) -> dict[str, dict]:
    """label -> {"page", "key", "options": [(key, text)]}, from the quiz pages as the book
    shows them (``quiz_blocks.page_text``: with the questions their chapters write for them).

    A label line ``(name)=`` outside code opens a question, which runs to the next label or
    heading that is not the question's own; its key is the bold start of its answer box.
    """
    found = {}
    for page in quiz_pages(book):
        lines = page_text(book, page).splitlines()
        plain = _outside_fences(lines)
        starts = [i for i, line in plain if re.fullmatch(r"\([^()\s]+\)=", line.strip())]
        headings = [i for i, line in plain if line.startswith("#")]
        for start in starts:
            label = lines[start].strip()[1:-2]
            assert label not in found, f"label {label} twice"
            own = next(i for i in headings if i > start)
            end = min([i for i in starts + headings if i > own] + [len(lines)])
            chunk = lines[own + 1:end]
            box = next(i for i, line in enumerate(chunk) if "{admonition}" in line)
            first = next(line for line in chunk[box + 1:] if line.strip() and not line.startswith(":"))
            key = re.match(r"^\*\*([^*]+?)[.,]?\*\*", first)
            letters = _listed(chunk[:box], r"^- \*\*([A-Z])\.\*\* (.*)")
            numbers = _listed(chunk[:box], r"^(\d+)\. (.*)")
            found[label] = {"page": page, "key": key.group(1) if key else None,
                            "letters": letters, "numbers": numbers, "line": start + 1}
    return found


def _listed(lines: list[str], pattern: str) -> list[tuple[str, str]]:
    """Options ``(key, text)`` of a list, an option's indented next lines joined to it."""
    out, open_ = [], False
    for line in lines:
        if m := re.match(pattern, line):
            out.append((m.group(1), m.group(2)))
            open_ = True
        elif open_ and line.startswith("  ") and line.strip():
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        else:
            open_ = False
    return out


def shared_options(book: Path = BOOK) -> dict[str, list[str]]:
    """page -> letters listed under the last section heading outside every question."""
    out = {}
    for page in quiz_pages(book):
        inside, label, letters = False, False, []
        for _, line in _outside_fences(page_text(book, page).splitlines()):
            if re.fullmatch(r"\([^()\s]+\)=", line.strip()):
                label = True
            elif line.startswith("#"):
                inside, label = label, False  # a labelled heading is a question's, another a section's
                if not inside:
                    letters = []
            elif not inside and (m := re.match(r"^- \*\*([A-Z])\.\*\*", line)):
                letters.append(m.group(1))
        out[page] = letters
    return out


def _plain_html(text: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return " ".join(text.replace("\\(", "").replace("\\)", "").split())


def _plain_md(text: str) -> str:
    return " ".join(re.sub(r"[*`$]", "", text).split())


# --- the export, read back -----------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    return lms.export(BOOK, tmp_path_factory.mktemp("lms"), URL)


def read_qti(path: Path) -> dict[str, dict]:
    """label -> {"page", "type", "options": [(ident, text)], "answer", "feedback"} from the zip."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        manifest = ET.fromstring(zf.read("imsmanifest.xml"))
        assert manifest.tag == M + "manifest"
        hrefs = [f.get("href") for f in manifest.iter(M + "file")]
        assert sorted(hrefs) == sorted(n for n in names if n != "imsmanifest.xml"), (hrefs, names)
        for res in manifest.iter(M + "resource"):
            assert res.get("type") == "imsqti_xmlv1p2"
        items = {}
        for href in hrefs:
            root = ET.fromstring(zf.read(href))
            assert root.tag == Q + "questestinterop"
            [assessment] = root.findall(Q + "assessment")
            for item in assessment.iter(Q + "item"):
                label = item.get("ident")
                assert label not in items, f"{label} exported twice"
                fields = {f.findtext(Q + "fieldlabel"): f.findtext(Q + "fieldentry")
                          for f in item.find(Q + "itemmetadata").iter(Q + "qtimetadatafield")}
                presentation = item.find(Q + "presentation")
                assert presentation.find(Q + "material/" + Q + "mattext").text
                processing = item.find(Q + "resprocessing")
                assert processing is not None and processing.find(Q + "outcomes/" + Q + "decvar") is not None
                answers = [v.text for v in processing.iter(Q + "varequal")]
                options = [(l.get("ident"), l.findtext(f"{Q}material/{Q}mattext"))
                           for l in presentation.iter(Q + "response_label")]
                feedback = item.find(f"{Q}itemfeedback/{Q}flow_mat/{Q}material/{Q}mattext").text
                items[label] = {"page": href.split("/")[0], "type": fields["question_type"], "options": options,
                                "answer": answers[0] if len(answers) == 1 else answers or None,
                                "feedback": feedback, "stem": presentation.find(f"{Q}material/{Q}mattext").text}
        return items


def read_moodle(path: Path) -> dict[str, dict]:
    root = ET.parse(path).getroot()
    assert root.tag == "quiz"
    out, category = {}, None
    for q in root.findall("question"):
        kind = q.get("type")
        if kind == "category":
            category = q.findtext("category/text")
            continue
        assert category, "a question before any category"
        label = q.findtext("idnumber")
        assert label not in out, f"{label} twice in the Moodle XML"
        answers = q.findall("answer")
        right = [a.findtext("text") for a in answers if a.get("fraction") == "100"]
        out[label] = {"type": kind, "category": category, "options": [a.findtext("text") for a in answers],
                      "right": right, "graderinfo": q.findtext("graderinfo/text"),
                      "feedback": q.findtext("generalfeedback/text"), "numbering": q.findtext("answernumbering"),
                      "shuffle": q.findtext("shuffleanswers"), "stem": q.findtext("questiontext/text")}
    return out


def differences(book: dict[str, dict], shared: dict[str, list[str]], qti: dict, moodle: dict) -> list[str]:
    """Every way the exported files disagree with the book (empty: the round trip holds)."""
    problems = []
    for missing in sorted(set(book) - set(qti)):
        problems.append(f"{missing}: not in the QTI package")
    for missing in sorted(set(book) - set(moodle)):
        problems.append(f"{missing}: not in the Moodle XML")
    for extra in sorted((set(qti) | set(moodle)) - set(book)):
        problems.append(f"{extra}: exported but not a labelled question of the book")
    for label, b in book.items():
        if label not in qti or label not in moodle:
            continue
        x, m = qti[label], moodle[label]
        if x["page"] != b["page"]:
            problems.append(f"{label}: in the QTI assessment {x['page']}, not {b['page']}")
        key = b["key"]
        if key in ("True", "False"):
            want_type, want_keys = "true_false_question", ["True", "False"]
        elif key and key.isdigit() and b["numbers"]:
            want_type, want_keys = "multiple_choice_question", [k for k, _ in b["numbers"]]
        elif key and re.fullmatch(r"[A-Z]", key):
            want_type = "multiple_choice_question"
            want_keys = [k for k, _ in b["letters"]] or shared[b["page"]]
        else:
            want_type, want_keys, key = "essay_question", [], None
        if x["type"] != want_type:
            problems.append(f"{label}: QTI type {x['type']}, the book's answer box makes it {want_type}")
        if [k for k, _ in x["options"]] != want_keys:
            problems.append(f"{label}: QTI options {[k for k, _ in x['options']]}, the book has {want_keys}")
        if x["answer"] != key:
            problems.append(f"{label}: QTI answer {x['answer']}, the book's answer box says {key}")
        own = b["letters"] if b["letters"] else b["numbers"] if key and key.isdigit() else []
        for (k, text), (_, exported_text) in zip(own, x["options"]):
            if f"{k}. {_plain_md(text)}" != _plain_html(exported_text):  # QTI shows the key: Canvas prints none
                problems.append(f"{label}: option {k} reads {_plain_html(exported_text)!r}, the book {_plain_md(text)!r}")
        moodle_type = {"multiple_choice_question": "multichoice", "true_false_question": "truefalse",
                       "essay_question": "essay"}[want_type]
        if m["type"] != moodle_type:
            problems.append(f"{label}: Moodle type {m['type']}, want {moodle_type}")
        if moodle_type == "multichoice":
            if [f"{k}. {_plain_html(o)}" for k, o in zip(want_keys, m["options"])] != [
                    _plain_html(t) for _, t in x["options"]]:  # Moodle numbers them itself (answernumbering)
                problems.append(f"{label}: Moodle options differ from QTI's")
            position = want_keys.index(key) if key in want_keys else -1
            if m["right"] != [m["options"][position]] or m["shuffle"] != "false":
                problems.append(f"{label}: Moodle marks {m['right']} right, the book option {key}")
        elif moodle_type == "truefalse" and m["right"] != [key.lower()]:
            problems.append(f"{label}: Moodle true/false answer {m['right']}, the book {key}")
        elif moodle_type == "essay" and not (m["graderinfo"] or "").strip():
            problems.append(f"{label}: essay without the model answer as grader information")
    return problems


# --- the tests -----------------------------------------------------------------------------


def test_every_labelled_question_of_every_quiz_page_is_found():
    book = book_questions()
    parsed = {q.label: q for p in lms.read_quizzes(BOOK) for q in p.questions}
    assert set(book) == set(parsed), (sorted(set(book) ^ set(parsed)))
    assert {b["page"] for b in book.values()} == set(quiz_pages(BOOK))
    # both heading styles and both option styles are in the book, and read
    assert parsed["quiz-cross-attention-shapes"].options[1][0] == "2"  # ## heading, numbered options
    assert parsed["quiz-cross-attention-shapes"].answer == "2"
    assert parsed["quiz-path-length"].answer == "C"  # ### heading, - **A.** options
    assert len(parsed["quiz-bug-wrong-axis"].options) >= 10  # the shared list of bugs
    # a question written in its chapter (decoder.md) is its quiz page's, links included
    assert parsed["quiz-causal-mask-shape"].page == "quiz_decoder"
    assert lms.Book.read(BOOK, URL).labels["quiz-causal-mask-shape"][0] == "quiz_decoder"


def test_the_export_agrees_with_the_book(exported):
    qti, moodle = read_qti(exported[lms.QTI]), read_moodle(exported[lms.MOODLE])
    problems = differences(book_questions(), shared_options(), qti, moodle)
    assert not problems, "\n".join(problems)
    assert sum(1 for q in qti.values() if q["type"] == "multiple_choice_question") >= 15
    assert sum(1 for q in qti.values() if q["type"] == "true_false_question") >= 2
    assert sum(1 for q in qti.values() if q["type"] == "essay_question") >= 10


def test_the_key_test_and_the_export_agree(exported):
    """The single-choice questions the key-fairness test reads have the same key exported."""
    from tests.site import test_quiz_key

    qti = read_qti(exported[lms.QTI])
    found = test_quiz_key.all_questions()
    assert found
    for q in found:
        page = q["where"].split(".md:")[0]
        # the key test names options by letter, numbered ones too ("2." is B): by position
        position = list(q["options"]).index(q["key"])
        matches = [x for x in qti.values() if x["page"] == page and len(x["options"]) == len(q["options"])
                   and [k for k, _ in x["options"]].index(x["answer"]) == position]
        assert matches, f"{q['where']}: key {q['key']} not exported with options {list(q['options'])}"


def test_feedback_is_the_explanation_and_links_back(exported):
    qti, moodle = read_qti(exported[lms.QTI]), read_moodle(exported[lms.MOODLE])
    parsed = {q.label: q for p in lms.read_quizzes(BOOK) for q in p.questions}
    for label, x in qti.items():
        assert f'href="{URL}book/{parsed[label].page}.html#{label}"' in x["feedback"], label
        if re.search(r"\{(?:ref|doc|numref)\}`(?:[^`<]*<)?(?!quiz)", parsed[label].explanation):
            assert "Taught on" in x["feedback"], f"{label}: no link to the page that teaches it"
        words = parsed[label].explanation.split()
        plain = next(words[i:i + 5] for i in range(len(words)) if all(re.fullmatch(r"[A-Za-z,;]+", w) for w in words[i:i + 5]))
        assert " ".join(plain) in _plain_html(x["feedback"]), f"{label}: {plain} not in the feedback"
        assert label in moodle and moodle[label]["feedback"]
    # the roles are resolved, the math is LaTeX between \( \), nothing of MyST is left
    everything = "".join(x["stem"] + x["feedback"] + "".join(t for _, t in x["options"]) for x in qti.values())
    assert not re.search(r"\{(ref|doc|term|cite:[pt]|numref)\}", everything)
    assert "\\(QK^\\top\\)" in everything and "Vaswani et al. (2017)" in everything
    assert f'{URL}book/decoder.html#causal-mask' in everything
    assert '<pre><code class="language-python">' in everything


def test_the_export_is_deterministic(tmp_path, exported):
    again = lms.export(BOOK, tmp_path, URL)
    for key in (lms.QTI, lms.MOODLE):
        assert again[key].read_bytes() == exported[key].read_bytes(), key
    with zipfile.ZipFile(exported[lms.QTI]) as zf:
        assert {i.date_time for i in zf.infolist()} == {lms.ZIP_TIME}
        assert zf.namelist() == sorted(zf.namelist())


def _copy_book(tmp_path: Path) -> Path:
    book = tmp_path / "book"
    book.mkdir()
    for path in list(BOOK.glob("*.md")) + [BOOK / "references.bib"]:
        shutil.copy(path, book / path.name)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return book


def test_a_changed_answer_changes_the_export_and_fails_the_round_trip(tmp_path, exported):
    book = _copy_book(tmp_path)
    page = book / "quiz_concepts.md"
    text = page.read_text()
    assert "**C.** The RNN passes" in text
    page.write_text(text.replace("**C.** The RNN passes", "**B.** The RNN passes"))
    changed = lms.export(book, tmp_path / "out", URL)
    assert changed[lms.QTI].read_bytes() != exported[lms.QTI].read_bytes()
    assert changed[lms.MOODLE].read_bytes() != exported[lms.MOODLE].read_bytes()
    qti, moodle = read_qti(changed[lms.QTI]), read_moodle(changed[lms.MOODLE])
    problems = differences(book_questions(BOOK), shared_options(BOOK), qti, moodle)
    assert any(p.startswith("quiz-path-length: QTI answer B") for p in problems), problems
    assert any(p.startswith("quiz-path-length: Moodle marks") for p in problems), problems
    assert not differences(book_questions(book), shared_options(book), qti, moodle)  # the copy's own round trip


def test_a_broken_question_is_an_error_not_a_silent_miss(tmp_path):
    book = _copy_book(tmp_path)
    page = book / "decoder.md"  # the questions of quiz_decoder are written in their chapters
    original = page.read_text()
    page.write_text(original.replace("**2.** Queries come", "**4.** Queries come"))
    with pytest.raises(lms.QuizFormatError, match=r"quiz-cross-attention-shapes.*'4'.*\['1', '2', '3'\]"):
        lms.read_quizzes(book)
    start = original.index(":::{admonition} Answer", original.index("(quiz-teacher-forcing)="))
    page.write_text(original[:start] + original[start:].replace(":::{admonition} Answer", "Answer:", 1))
    with pytest.raises(lms.QuizFormatError, match="quiz-teacher-forcing.*no answer box"):
        lms.read_quizzes(book)


def test_the_moodle_bank_has_one_category_per_quiz_page(exported):
    root = ET.parse(exported[lms.MOODLE]).getroot()
    categories = [q.findtext("category/text") for q in root.findall("question") if q.get("type") == "category"]
    titles = [p.title for p in lms.read_quizzes(BOOK)]
    assert categories == [f"{lms.CATEGORY}/{t}" for t in titles]
    for q in root.findall("question"):
        assert q.get("type") in {"category", "multichoice", "truefalse", "essay"}
        if q.get("type") == "multichoice":
            assert q.findtext("single") == "true"
            assert [a.get("fraction") for a in q.findall("answer")].count("100") == 1


def test_the_command_writes_and_publishes(tmp_path):
    code = lms.main(["--book", str(BOOK), "--out", str(tmp_path / "lms"), "--publish", str(tmp_path / "html" / "lms"),
                     "--url", URL])
    assert code == 0
    names = book.published()
    for key in (lms.QTI, lms.MOODLE):
        assert (tmp_path / "html" / "lms" / names[key]).read_bytes() == (tmp_path / "lms" / names[key]).read_bytes()


@pytest.mark.book
def test_the_site_publishes_the_packages_and_the_assessment_page_links_them(html_dir, tmp_path):
    from bs4 import BeautifulSoup

    page = html_dir / "book" / "instructor_assessment.html"
    soup = BeautifulSoup(page.read_text(), "html.parser")
    links = {a["href"] for a in soup.find_all("a", href=True)}
    fresh = lms.export(BOOK, tmp_path, None)
    for key in (lms.QTI, lms.MOODLE):
        href = f"../lms/{fresh[key].name}"
        assert href in links, f"the assessment page does not link {href}"
        published = (page.parent / href).resolve()
        assert published.is_file(), f"{href} is linked but not published in _build/html"
        assert published.read_bytes() == fresh[key].read_bytes(), f"{href} is stale: rebuild with make book"


def test_what_an_lms_shows_reads_without_the_book(exported):
    """Canvas shows QTI options without letters and titles as plain text: the options carry
    their keys (the feedback cites them), titles carry no TeX or backticks, and a snippet
    alone gets the prompt its section gives it."""
    qti = read_qti(exported[lms.QTI])
    moodle = ET.parse(exported[lms.MOODLE]).getroot()
    titles = [q.findtext("name/text") for q in moodle.findall("question") if q.get("type") != "category"]
    with zipfile.ZipFile(exported[lms.QTI]) as zf:
        titles += [i.get("title") for n in zf.namelist() if n != "imsmanifest.xml"
                   for i in ET.fromstring(zf.read(n)).iter(Q + "item")]
    assert titles and not [t for t in titles if "$" in t or "`" in t or "\\" in t], titles
    assert "Why divide by √d_k" in titles
    for label, q in qti.items():
        if q["type"] == "multiple_choice_question":
            assert all(_plain_html(text).startswith(f"{key}. ") for key, text in q["options"]), (label, q["options"])
            stem_text = re.sub(r"<pre>.*?</pre>", "", q["stem"], flags=re.S)
            assert _plain_html(stem_text).strip(), f"{label}: the stem is a snippet with no question"
    assert lms.SHARED_PROMPT in _plain_html(qti["quiz-bug-wrong-axis"]["stem"])
