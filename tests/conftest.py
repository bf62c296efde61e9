"""Shared test settings: deterministic hypothesis runs, float32 tolerances; the browser fixtures."""

import os

import pytest
from _lab import OnePage, browser_missing_reason, chromium, skip_or_fail

# A checker's own slip raises in the tests (and in the kernels and servers they start), where a learner
# gets a verdict in plain words (attnviz/check/_verdict.py's never_raises): a test must not pass on it.
os.environ["ATTNVIZ_CHECK_RAISE"] = "1"


def runs_tests(config) -> bool:
    """False in pytest-xdist's controller, which only hands tests to its workers and runs none."""
    return hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


def pytest_configure(config):
    # Only where tests run: the controller of `make test` and `make check` skips importing torch and
    # hypothesis (1.5 s before its workers start, measured).
    if not runs_tests(config):
        return
    import torch
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "course",
        derandomize=True,          # the same examples on every run, so CI cannot flake
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "course"))

    # One thread per test process: the course's tensors are small, and `make test` runs test files
    # side by side (pytest-xdist). On this 2-core machine under load, two threads made a tiny model's
    # generate() 10 to 20 times slower (threads waiting for each other), not faster.
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for one test file (tests/_lab.py); skipped without it, failed where required."""
    skip_or_fail(browser_missing_reason())
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def lab_page(request):
    """The one JupyterLab page a test file's worker opens its notebooks in (tests/_lab.py OnePage), a
    fresh one after a failure."""
    one = OnePage(request.session)
    yield one
    one.drop()
