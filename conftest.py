"""How `make test`'s workers (pytest-xdist, --dist loadgroup) share the tests: which tests must run
together on one worker, and which come first. Settings for the tests themselves are in
tests/conftest.py.

xdist hands a worker one unit at a time: here a unit is a whole file (or a notebook: nbval's cells
depend on the cells before them), except in the files below, whose tests are independent enough to
run on different workers at once. Units are handed out in the order they are collected (make test
passes --no-loadscope-reorder, or xdist would sort them by their number of tests): the longest
first, so that none of them starts last and keeps the others waiting.
"""

import re

import pytest

# Files that take minutes, longest first (measured with --durations on this 2-core machine); every
# other file keeps its place after them.
LONGEST_FIRST = (
    "tests/test_hub.py",                    # a JupyterHub, three students and nbgrader's exchange
    "tests/test_binder.py",                 # a fresh environment runs every notebook
    "tests/test_nbgrader.py",               # nbgrader autogrades twelve notebooks
    "tests/test_browser.py",                # every notebook in JupyterLab, then in Notebook 7
    "tests/test_browser_learner.py",        # the learner's edition in JupyterLab and Notebook 7
    "tests/test_learner_edition.py",        # every notebook of the learner's edition, run
    "tests/test_learner_corpus.py",         # about 380 learner implementations, 65 in a child each
    "notebooks/08_generation_kv_cache.ipynb",
    "notebooks/07_tiny_gpt.ipynb",
    "notebooks/04_masking.ipynb",
    "notebooks/05_multi_head.ipynb",
)

# Files whose tests are split into several units; the rest of each file is one unit.
#  test_browser.py: each test (a notebook in the page; its own JupyterLab per worker)
#  test_browser_learner.py: each notebook, in JupyterLab or Notebook 7
#  test_learner_edition.py: each notebook of the learner's edition, run
#  test_nbgrader.py: each assignment (generated and autograded on its own)
#  test_learner_corpus.py: the hostile cases, eight to a unit (one forking process per unit)
SPLIT = ("tests/test_browser.py", "tests/test_browser_learner.py", "tests/test_learner_edition.py",
         "tests/test_nbgrader.py", "tests/test_learner_corpus.py")
HOSTILE_PER_UNIT = 8
PARAMETER = re.compile(r"\[(.*)\]$")


def _group(item, hostile_index: dict) -> str:
    path, _, name = item.nodeid.partition("::")
    if path in ("tests/test_browser.py", "tests/test_browser_learner.py"):
        return item.nodeid
    if path in ("tests/test_learner_edition.py", "tests/test_nbgrader.py"):
        found = PARAMETER.search(name)
        return f"{path}::{found.group(1)}" if found else path
    if path == "tests/test_learner_corpus.py" and name.startswith("test_hostile_case"):
        index = hostile_index.setdefault(name, len(hostile_index))
        return f"{path}::hostile-{index // HOSTILE_PER_UNIT}"
    return path


def _later_notebook_first(item) -> int:
    """Within a split file, tests of later notebooks first: 07 and 08 are the course's longest."""
    if item.nodeid.split("::")[0] not in SPLIT:
        return 0
    found = PARAMETER.search(item.nodeid)
    number = re.search(r"(?:^|-)(\d\d)_", found.group(1)) if found else None
    return -int(number.group(1)) if number else 0


@pytest.hookimpl(tryfirst=True)     # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(item.nodeid.split("::")[0], len(rank)),
                                 _later_notebook_first(item)))
    hostile_index: dict = {}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item, hostile_index)))
