# The two commands of the README:
#   make book   set up .venv and build the HTML site into _build/html
#   make test   set up everything (Debian packages too) and run the whole test suite
# Other targets: make pdf (student + instructor PDFs), make site (HTML + PDFs, what is
# published), make notebooks (regenerate the Colab .ipynb files), make test-lib, make clean.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed
JB_STRICT := -W -n --keep-going
MATHJAX := book/_vendor/mathjax/tex-chtml-lite.js
PDF_STUDENT := _build/transformer-lessons-student.pdf
PDF_INSTRUCTOR := _build/transformer-lessons-instructor.pdf

.PHONY: book pdf site test test-lib bench notebooks system-deps venv vendor clean slides handout

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

$(MATHJAX): package.json package-lock.json
	npm ci --no-audit --no-fund
	$(PYTHON) tools/vendor_mathjax.py

vendor: $(MATHJAX)

system-deps:
	bash .ci/system-deps.sh

# Sphinx rewrites only pages whose source changed, and when none did it stops before copying
# _static/: an edit to the CSS or to a local extension alone would leave the old one in
# _build/html (so would a new MathJax in book/_vendor). Such an edit forces a full write (--all); cached outputs keep it cheap.
FORCE_ALL = $(shell find book/_static book/_ext book/_vendor _config.yml -type f -newer _build/html/.buildinfo 2>/dev/null | grep -q . && echo --all)

book: venv vendor
	$(PY) tools/cache_guard.py
	$(JB) build . --builder html $(JB_STRICT) $(FORCE_ALL)

# Two editions from one source (book/_ext/editions.py): the student edition leaves out
# solutions, quiz answers and the instructor pages. Both reuse the HTML build's cache.
pdf: venv vendor
	$(PY) tools/cache_guard.py
	$(PY) tools/pdf_toc.py student
	$(PY) tools/pdf_toc.py instructor
	BOOK_EDITION=student $(JB) build . --builder pdflatex $(JB_STRICT) \
	  --path-output _build/pdf-student --toc _build/_toc_student.yml
	cp _build/pdf-student/_build/latex/book.pdf $(PDF_STUDENT)
	$(JB) build . --builder pdflatex $(JB_STRICT) \
	  --path-output _build/pdf-instructor --toc _build/_toc_instructor.yml
	cp _build/pdf-instructor/_build/latex/book.pdf $(PDF_INSTRUCTOR)
	if [ -d _build/html ]; then mkdir -p _build/html/pdf && cp $(PDF_STUDENT) $(PDF_INSTRUCTOR) _build/html/pdf/; fi

# The teaching kit, from the built pages (tools/slides.py, tools/slides.yml): the reveal.js
# deck and its PDF in _build/html/slides/, the handout in _build/html/handout/ and
# _build/html/pdf/transformer-lessons-handout.pdf. Chromium prints the PDFs.
slides: book
	$(PY) tools/slides.py slides

handout: book
	$(PY) tools/slides.py handout

site: book pdf slides handout

notebooks: venv
	$(PY) tools/sync_notebooks.py

# Every benchmark (benchmarks/run.py): one JSON document, benchmarks/results.json, and a summary.
# Lighthouse (bench_site) comes from benchmarks/package.json, apart from the book's own npm packages.
bench: venv vendor
	npm ci --prefix benchmarks --no-audit --no-fund
	$(PY) benchmarks/run.py

test-lib: venv
	$(PY) -m pytest tests -m "not book and not pdf and not browser and not notebooks"

test: system-deps venv book pdf slides handout
	$(PY) -m pytest tests

clean:
	rm -rf _build book/_vendor node_modules
