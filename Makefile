# Two commands: `make lab` opens the course, `make test` runs every test.
# Both create .venv on first use (needs only python3 and make).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8888
# JupyterLab refuses to start as root unless told; containers and CI often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test lint clean help student nbgrader screenshots

help:
	@echo "make lab    open the course in JupyterLab (first run installs into .venv)"
	@echo "make test   run the unit tests and every notebook (nbval)"
	@echo "make student  build the learner's edition in student/ (exercises as stubs; keeps every notebook you changed)"
	@echo "make nbgrader write an nbgrader course folder (one assignment per exercise notebook) to nbgrader_course/"
	@echo "make screenshots  run the browser test and refresh the README's images in docs/screenshots/"
	@echo "make clean  remove .venv"

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

# Learners work in the learner's edition (student/), built from the teacher's edition (notebooks/);
# building it again never overwrites a notebook the learner changed (tools/make_student.py).
lab: $(STAMP)
	$(BIN)/python tools/make_student.py notebooks student
	$(BIN)/jupyter lab --port=$(PORT) $(ROOT_FLAG) --ServerApp.root_dir=. student/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m ruff check attnviz tests notebooks benchmarks tools
	$(BIN)/python -m pytest

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
	rm -rf $(VENV)
