"""A "Download the book" menu in the header of every page of the web site, linking the
two PDF editions that ``make pdf`` copies into the site (``_build/html/pdf/``).

sphinx-book-theme builds the header buttons in ``html-page-context`` (priority 501); this
handler runs after it and adds one dropdown next to "Download this page". The links are
made relative to each page with ``pathto`` (``../pdf/...`` from ``book/*.html``), so they
work wherever the site is hosted, and nothing checks them at build time: an HTML build
without the PDFs gives no warning (tests/test_browser.py checks them on the served site).
The file names are the Makefile's PDF_STUDENT and PDF_INSTRUCTOR.
"""

from __future__ import annotations

PDFS = [
    # (path in the site, menu text, tooltip, button label)
    (
        "pdf/transformer-lessons-student.pdf",
        "Student edition (PDF)",
        "Without solutions, quiz answers or instructor pages",
        "download-student-pdf-button",
    ),
    (
        "pdf/transformer-lessons-instructor.pdf",
        "Instructor edition (PDF)",
        "With solutions, quiz answers and the instructor pages",
        "download-instructor-pdf-button",
    ),
]


def _add_pdf_menu(app, pagename, templatename, context, doctree) -> None:
    buttons = context.get("header_buttons")
    if buttons is None:  # not sphinx-book-theme
        return
    pathto = context["pathto"]
    menu = {
        "type": "group",
        "tooltip": "Download the book (PDF)",
        "icon": "fas fa-book",
        "label": "download-book-buttons",
        "buttons": [
            {"type": "link", "url": pathto(path, 1), "text": text, "tooltip": tip, "icon": "fas fa-file-pdf", "label": label}
            for path, text, tip, label in PDFS
        ],
    }
    after = [i for i, b in enumerate(buttons) if b.get("label") == "download-buttons"]
    buttons.insert(after[0] + 1 if after else len(buttons), menu)


def setup(app):
    app.connect("html-page-context", _add_pdf_menu, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
