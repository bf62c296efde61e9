# Two commands: `make lab` opens the course, `make test` runs every test.
# Both create .venv on first use (needs only python3 and make).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE   := node_modules/.installed
PORT   ?= 8888
UV     := uv==0.13.9
# JupyterLab refuses to start as root unless told; containers and CI often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test check unit lint js canvas clean help student nbgrader screenshots format docs

help:
	@echo "make lab    open the course in JupyterLab (first run installs into .venv)"
	@echo "make test   run every test: lint, unit tests, every notebook (nbval), the browser test, Binder, nbgrader, the hub"
	@echo "make check  the quick loop: lint and the unit tests (no notebooks, no browser, no slow builds)"
	@echo "make canvas rebuild attnviz/widgets/canvas.js from the front-end's modules in attnviz/widgets/js/"
	@echo "make format fix what the linters can fix by themselves (ruff, biome); make lint says what is left"
	@echo "make docs   regenerate the generated pages: docs/checkers.md (the bug catalog), docs/answers.md, the lesson pages' cell maps"
	@echo "make student  build the learner's edition in student/ (exercises as stubs; keeps every notebook you changed)"
	@echo "make nbgrader write an nbgrader course folder (one assignment per exercise notebook) to nbgrader_course/"
	@echo "make screenshots  run the browser test and refresh the README's images in docs/screenshots/"
	@echo "make clean  remove .venv and node_modules"

$(STAMP): requirements.txt pyproject.toml binder/overrides.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# uv installs what pip would, from where pip is set to look, in seconds (tools/install.py)
	$(BIN)/python -m pip install --disable-pip-version-check -q $(UV) || true
	$(BIN)/python tools/install.py $(BIN)/python -r requirements.txt
	$(BIN)/python tools/install.py $(BIN)/python --no-deps -e .
	# Binder's JupyterLab defaults (no news pop-up); nbgrader's JupyterLab and server extensions off,
	# since make lab is for learners (the README's teacher section says how to switch them on)
	$(BIN)/python tools/learner_settings.py
	touch $(STAMP)

# The JavaScript tools pinned in package.json (biome, esbuild, ...), from the npm registry.
$(NODE): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE)

# Learners work in the learner's edition (student/), built from the teacher's edition (notebooks/);
# building it again never overwrites a notebook the learner changed (tools/make_student.py).
lab: $(STAMP)
	$(BIN)/python tools/make_student.py notebooks student
	@echo "The browser opens student/00_start_here.ipynb. If none opens, paste a URL printed below and"
	@echo "open student/00_start_here.ipynb from JupyterLab's file browser."
	$(BIN)/jupyter lab --port=$(PORT) $(ROOT_FLAG) --ServerApp.root_dir=. student/00_start_here.ipynb

# Tests run side by side (pytest-xdist), three workers on two cores, since much of the time goes to
# waiting on kernels, browsers and servers. conftest.py says what runs together on one worker (a file,
# or a notebook, or for the long files one notebook's test each) and puts the longest first; xdist
# must not re-sort them (--no-loadscope-reorder).
PARALLEL ?= -n 3 --dist loadfile --no-loadscope-reorder

# pytest and what it starts write their bytecode into __pycache__ (git ignores it) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, which some machines and containers set, this one
# among them): otherwise every worker rewrites every test module's asserts and compiles the checkout's
# modules again, each time (3.4 s of a worker's 6.7 s before its first test, measured here).
WRITE_BYTECODE := PYTHONDONTWRITEBYTECODE=

# The checkers fork the process that calls them once per check (attnviz/check/_sandbox.py), over a
# thousand times in `make check`. A fork copies the page tables of the caller's heap and the child's
# exit frees them again: in a test worker that is 8 to 11 ms per check, and two thirds less when glibc
# puts its heap in huge pages (where the system allows them; elsewhere, and with an older glibc, the
# setting does nothing). benchmarks/fork_cost.py measures it side by side.
FAST_FORK := GLIBC_TUNABLES=$(if $(GLIBC_TUNABLES),$(GLIBC_TUNABLES):)glibc.malloc.hugetlb=1

test: lint js
	$(WRITE_BYTECODE) $(FAST_FORK) $(BIN)/python -m pytest $(PARALLEL)

# The quick loop for an edit: lint and the unit tests, in under a minute; make test runs the rest.
# The linters and node's tests (2 s) run beside pytest, while its workers start up.
check: $(STAMP) $(NODE)
	@$(MAKE) --no-print-directory -j 3 --output-sync=line lint js unit

unit: $(STAMP)
	$(WRITE_BYTECODE) $(FAST_FORK) $(BIN)/python -m pytest tests -q -m "not slow and not browser and not corpus" -n 2 --dist loadfile

# Python with ruff; the front-end's JavaScript with biome (lint and format).
lint: $(STAMP) $(NODE)
	$(BIN)/python -m ruff check attnviz tests notebooks benchmarks tools conftest.py
	node_modules/.bin/biome ci --colors=off --error-on-warnings

# The front-end's unit tests on node's own test runner (no browser), among them that
# attnviz/widgets/canvas.js is what its modules in attnviz/widgets/js/ build.
js: $(NODE)
	node --test --test-reporter=dot tests/js/*.test.js

canvas: $(NODE)
	node tools/build_canvas.js

format: $(STAMP) $(NODE)
	$(BIN)/python -m ruff check --fix attnviz tests notebooks benchmarks tools conftest.py
	node_modules/.bin/biome check --write

# docs/checkers.md from attnviz/check/_catalog.py; docs/answers.md from the notebooks' Check-yourself
# answers and the quiz banks (tools/answer_key.py); the lesson pages' cell maps (tools/cell_map.py)
docs: $(STAMP)
	$(BIN)/python -c "from attnviz.check._catalog import catalog_markdown; print(catalog_markdown(), end='')" > docs/checkers.md
	$(BIN)/python tools/answer_key.py > docs/answers.md
	$(BIN)/python tools/cell_map.py

student: $(STAMP)
	$(BIN)/python tools/make_student.py notebooks student

nbgrader: $(STAMP)
	$(BIN)/python tools/make_nbgrader.py notebooks nbgrader_course

# The README's images come from the browser test (screenshots/ is ignored; docs/screenshots/ is not).
screenshots: $(STAMP) $(NODE)
	rm -f screenshots/[0-9][0-9]_*.png
	ATTNVIZ_REQUIRE_BROWSER=1 ATTNVIZ_RECORD_OUTSIDE=1 $(BIN)/python -m pytest tests/test_browser.py -q
	mkdir -p docs/screenshots
	cp screenshots/[0-9][0-9]_*.png docs/screenshots/

clean:
	rm -rf $(VENV) node_modules
