"""How `make test`'s workers (pytest-xdist, --dist loadfile) share the tests: which tests must run
together on one worker, and which come first. Settings for the tests themselves are in
tests/conftest.py.

xdist hands a worker one unit at a time. With --dist loadfile a unit is a whole file (or a
notebook: nbval's cells depend on the cells before them); here the long files below are split into
several units, so that their tests run on different workers at once. (xdist's own --dist loadgroup
would do that from marks, but with pytest 9.2 it groups nothing: it renames a test's nodeid through
an attribute pytest 9 no longer reads.) Units are handed out in the order they are collected
(make test passes --no-loadscope-reorder, or xdist would sort them by their number of tests): the
longest first, so that none of them starts last and keeps the others waiting.
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
    "tests/test_learner_corpus.py",         # about 500 learner implementations, 65 in a child each
    "notebooks/08_generation_kv_cache.ipynb",
    "notebooks/07_tiny_gpt.ipynb",
    "notebooks/04_masking.ipynb",
    "notebooks/05_multi_head.ipynb",
)

# Files split into several units; the rest of each file is one unit.
#  test_browser.py, test_browser_learner.py: each test (a notebook in the page; a worker starts its
#    own JupyterLab and Chromium for them)
#  test_nbgrader.py: each assignment (generated and autograded on its own)
#  test_learner_corpus.py: the hostile cases, eight to a unit (one forking process per unit)
PER_TEST = ("tests/test_browser.py", "tests/test_browser_learner.py")
PER_PARAMETER = ("tests/test_nbgrader.py",)
HOSTILE = "tests/test_learner_corpus.py::test_hostile_case"
HOSTILE_PER_UNIT = 8
PARAMETER = re.compile(r"\[(.*)\]$")
_UNITS: dict[str, str] = {}


def unit(nodeid: str) -> str:
    """The unit of work a test belongs to (the same answer for the same test, every time)."""
    if nodeid not in _UNITS:
        path = nodeid.split("::")[0]
        found = PARAMETER.search(nodeid)
        if path in PER_TEST:
            _UNITS[nodeid] = nodeid
        elif path in PER_PARAMETER and found:
            _UNITS[nodeid] = f"{path}::{found.group(1)}"
        elif nodeid.startswith(HOSTILE):
            done = sum(1 for other in _UNITS if other.startswith(HOSTILE))
            _UNITS[nodeid] = f"{HOSTILE}::{done // HOSTILE_PER_UNIT}"
        else:
            _UNITS[nodeid] = path
    return _UNITS[nodeid]


def _later_notebook_first(item) -> int:
    """Within a split file, tests of later notebooks first: 07 and 08 are the course's longest."""
    if item.nodeid.split("::")[0] not in PER_TEST + PER_PARAMETER:
        return 0
    found = PARAMETER.search(item.nodeid)
    number = re.search(r"(?:^|-)(\d\d)_", found.group(1)) if found else None
    return -int(number.group(1)) if number else 0


def pytest_collection_modifyitems(config, items):
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(item.nodeid.split("::")[0], len(rank)),
                                 _later_notebook_first(item)))


@pytest.hookimpl(optionalhook=True)     # a hook of pytest-xdist's; without it, never called
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with the units above: xdist's own file scheduler names a test's unit in one
    method, and this one overrides it the same way."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class CourseScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(nodeid)

    return CourseScheduling(config, log)
