"""The order in which `make test`'s workers (pytest-xdist, --dist loadfile) take the test files: the
longest first, so that none of them starts last and keeps the others waiting. Settings for the
tests themselves are in tests/conftest.py."""

# Files that take minutes, longest first (measured with --durations on this 2-core machine); every
# other file keeps its place after them.
LONGEST_FIRST = (
    "tests/test_hub.py",                    # a JupyterHub, three students and nbgrader's exchange
    "tests/test_browser.py",                # every notebook in JupyterLab, then in Notebook 7
    "tests/test_browser_learner.py",        # the learner's edition in JupyterLab and Notebook 7
    "tests/test_nbgrader.py",               # nbgrader autogrades twelve notebooks
    "tests/test_binder.py",                 # a fresh environment runs every notebook
    "tests/test_learner_corpus.py",         # about 290 learner implementations, each in a child
    "tests/test_learner_edition.py",        # every notebook of the learner's edition, run
    "notebooks/07_tiny_gpt.ipynb",
    "notebooks/04_masking.ipynb",
    "notebooks/05_multi_head.ipynb",
    "notebooks/06_cost_and_fused.ipynb",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
