# Two commands: `make lab` opens the course, `make test` runs every test.
# Both create .venv on first use (needs only python3 and make).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE   := node_modules/.installed
PORT   ?= 8888
# JupyterLab refuses to start as root unless told; containers and CI often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test check lint js canvas clean help student nbgrader screenshots

help:
	@echo "make lab    open the course in JupyterLab (first run installs into .venv)"
	@echo "make test   run every test: lint, unit tests, every notebook (nbval), the browser test, Binder, nbgrader, the hub"
	@echo "make check  the quick loop: lint and the unit tests (no notebooks, no browser, no slow builds)"
	@echo "make canvas rebuild attnviz/widgets/canvas.js from the front-end's modules in attnviz/widgets/js/"
	@echo "make student  build the learner's edition in student/ (exercises as stubs; keeps every notebook you changed)"
	@echo "make nbgrader write an nbgrader course folder (one assignment per exercise notebook) to nbgrader_course/"
	@echo "make screenshots  run the browser test and refresh the README's images in docs/screenshots/"
	@echo "make clean  remove .venv and node_modules"

$(STAMP): requirements.txt pyproject.toml binder/overrides.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .
	# the same JupyterLab defaults as Binder: no news pop-up, no update check
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp binder/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	# nbgrader (for teachers: make nbgrader) ships JupyterLab and server extensions; make lab is for
	# learners, so both are switched off here (the README's teacher section says how to switch them on)
	if $(BIN)/python -c "import nbgrader" 2>/dev/null; then \
	  $(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1; \
	  for ext in formgrader validate_assignment assignment_list course_list; do \
	    $(BIN)/jupyter server extension disable --sys-prefix nbgrader.server_extensions.$$ext >/dev/null 2>&1; \
	  done; fi
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

# Test files run side by side (pytest-xdist): each file, and each notebook, on one worker with its own
# kernels and fixtures (the browser test with its own JupyterLab and Chromium), three at a time on two
# cores, since much of the time goes to waiting on kernels and browsers.
PARALLEL ?= -n 3 --dist loadfile

test: lint js
	$(BIN)/python -m pytest $(PARALLEL)

# The quick loop for an edit: lint and the unit tests, in under a minute; make test runs the rest.
check: lint js
	$(BIN)/python -m pytest tests -q -m "not slow and not browser and not corpus" -n 2 --dist loadfile

# Python with ruff; the front-end's JavaScript with biome (lint and format).
lint: $(STAMP) $(NODE)
	$(BIN)/python -m ruff check attnviz tests notebooks benchmarks tools conftest.py
	node_modules/.bin/biome ci --colors=off --error-on-warnings

# The front-end's unit tests on node's own test runner (no browser), among them that
# attnviz/widgets/canvas.js is what its modules in attnviz/widgets/js/ build.
js: $(NODE)
	node --test tests/js/*.test.js

canvas: $(NODE)
	node tools/build_canvas.js

student: $(STAMP)
	$(BIN)/python tools/make_student.py notebooks student

nbgrader: $(STAMP)
	$(BIN)/python tools/make_nbgrader.py notebooks nbgrader_course

# The README's images come from the browser test (screenshots/ is ignored; docs/screenshots/ is not).
screenshots: $(STAMP)
	rm -f screenshots/[0-9][0-9]_*.png
	ATTNVIZ_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests/test_browser.py -q
	mkdir -p docs/screenshots
	cp screenshots/[0-9][0-9]_*.png docs/screenshots/

clean:
	rm -rf $(VENV) node_modules
