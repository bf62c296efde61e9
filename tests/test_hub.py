"""A real JupyterHub: a teacher and three students, the course handed out, nbgrader's exchange.

The test starts JupyterHub (pinned in requirements.txt) with configurable-http-proxy (pinned in
package.json, from ``node_modules`` after ``npm ci``), JupyterHub's shared-password (dummy)
authenticator and its LocalProcessSpawner, on 127.0.0.1 and free ports, everything in a temporary
folder; each person is a real Unix account (useradd; this needs root), so each server, kernel and
terminal runs as its own user, as on a school's hub. Then tests/_hub_class.py plays a class
through in headless Chromium: the teacher builds the learner's edition and releases 04_masking
from their own JupyterLab terminal; each student opens the teacher's nbgitpuller link, logs in,
gets the edition cloned into their home, runs notebooks 03 and 04 (all three at once), moves a
control and sees the explorer repaint; one checks an exercise; all fetch, write (the teacher's
solution; one catalogued bug; nothing) and submit through nbgrader's exchange; the teacher
collects and autogrades, and the marks are read from the gradebook. The hub is stopped and the
accounts removed at the end, whatever happened. Memory and CPU of every process are sampled
throughout; the measurements go to benchmarks/results/hub_sizing.json, which
``benchmarks/hub_sizing.py --from`` prints as the sizing table; what each student saw goes to
screenshots/hub_*.png.

Without Chromium, Playwright, root, node's proxy or the hub's packages the test skips with the
reason, unless ATTNVIZ_REQUIRE_BROWSER=1 (CI sets it), in which case it fails.
"""

from __future__ import annotations

import os
import pwd

import pytest
from _hub import missing_reason, write_json
from _hub_class import BUG, NOTEBOOKS, STUDENTS, run_class
from _lab import REPO, browser_missing_reason, chromium, skip_or_fail

pytestmark = pytest.mark.slow
RESULTS = REPO / "benchmarks" / "results" / "hub_sizing.json"
# points in 04_masking (tools/make_nbgrader.py): two exercises, each 1 (runs) + 2 (its checker)
MAX_SCORE = 6


@pytest.fixture(scope="module")
def hub_class():
    skip_or_fail(browser_missing_reason() or missing_reason(), "hub test")
    with chromium() as browser:
        result = run_class(browser, screenshots=REPO / "screenshots")
    write_json(RESULTS, result)
    return result


def test_every_student_runs_03_and_04_and_the_explorers_repaint(hub_class):
    moved = hub_class["repaints"]
    assert sorted(moved) == sorted(f"{role} {nb[:2]}" for role in STUDENTS for nb in NOTEBOOKS), moved
    for who, entry in moved.items():
        assert entry["outcome"] == "repainted", (who, entry)
        assert entry["paints_after"] > entry["paints_before"], (who, entry)


def test_a_student_checks_an_exercise(hub_class):
    checked = hub_class["checked"]
    # before the exercise is written the check cell says so; once written, the checker passes it
    assert checked["before"]["status"] == "attnviz-not_implemented", checked
    assert checked["after"]["status"] == "attnviz-passed", checked


def test_nbgrader_exchange_gives_full_zero_and_partial_marks(hub_class):
    scores = hub_class["scores"]
    assert {role: scores[role]["max_score"] for role in STUDENTS} == dict.fromkeys(STUDENTS, MAX_SCORE)
    assert scores["right"]["score"] == MAX_SCORE, scores["right"]
    assert scores["untouched"]["score"] == 0, scores["untouched"]
    # the bug's exercise runs with the right shape (1 of 1) and fails its checker (0 of 2);
    # the other exercise is the teacher's, so 3 of 3: 4 of 6 in all
    exercise = BUG[2]
    cells = scores["buggy"]["cells"]
    assert cells[f"{exercise}-runs"] == [1, 1] and cells[f"{exercise}-check"] == [0, 2], cells
    assert scores["buggy"]["score"] == MAX_SCORE - 2, scores["buggy"]
    # the autograded notebook names the bug for the student and the teacher
    assert f"[bug: {BUG[1]}]" in hub_class["autograded_check"]["buggy"], hub_class["autograded_check"]


def test_the_hub_listened_on_localhost_only_and_fetched_nothing_from_outside(hub_class):
    listening = hub_class["listening"]
    assert {entry["kind"] for entry in listening} >= {"hub", "proxy", "server"}, listening
    assert all(entry["ip"] == "127.0.0.1" for entry in listening), listening
    assert hub_class["outside_requests"] == [], hub_class["outside_requests"]


def test_each_students_kernels_were_measured(hub_class):
    for role in STUDENTS:
        for notebook in NOTEBOOKS:
            entry = hub_class["notebooks"][f"{role} {notebook[:2]}"]
            assert entry["kernel_hwm_mb"] > 50 and entry["kernel_cpu_s"] > 0.5, entry
        servers = [p for p in hub_class["processes"] if p["owner"] == role and p["kind"] == "server"]
        assert len(servers) == 1 and servers[0]["peak_rss_mb"] > 20, servers
    assert RESULTS.is_file()


def test_the_hub_left_nothing_behind(hub_class):
    assert hub_class["cleanup_problems"] == [], hub_class["cleanup_problems"]
    names = {entry.pw_name for entry in pwd.getpwall()}
    assert not names & set(hub_class["accounts"].values()), "the test's accounts are still there"
    assert not os.path.exists(hub_class["folder"]), hub_class["folder"]
