"""One class on a real JupyterHub: a teacher hands out the course, three students work, nbgrader grades.

``run_class(browser)`` plays it through and returns what happened and what it cost; it raises an
AssertionError naming the step (login, spawn, hand-out, open notebook, run all, repaint, check,
release, fetch, write, submit, collect, autograde) when a step fails. Used by tests/test_hub.py
(which asserts on the result) and benchmarks/hub_sizing.py (which prints the cost table).

What each person does, all in headless Chromium through the hub (each has their own browser
context, so their own login cookie):

1. The teacher, who has their own copy of the course (its notebooks and tools) in their home,
   logs in; in a terminal in their JupyterLab they build the learner's edition
   (``python tools/make_student.py notebooks ~/attention-course``), commit it to a git repository
   (which ``git daemon``, run as the teacher, serves on 127.0.0.1 in place of a git host), write the
   nbgrader course folder (``python tools/make_nbgrader.py notebooks ~/course``, what `make
   nbgrader` runs) and ``nbgrader generate_assignment`` and ``release_assignment`` 04_masking.
2. Each student opens the teacher's nbgitpuller link (``/hub/user-redirect/git-pull?repo=...``),
   logs in on the way, clicks Launch if the hub asks, and lands in JupyterLab with the learner's
   edition cloned into their home (as themselves: nbgitpuller runs in their own server).
3. Together, notebook by notebook (03, then 04): each opens it in the JupyterLab the link opened
   (File > Open's command, as a click in the file browser; the tab closes afterwards and its
   kernel keeps running, as JupyterLab leaves it), Run All, and moves a control of
   its explorer (03: the d_k slider with the keyboard; 04's explorer has dropdowns only: the
   mask dropdown); the explorer must repaint (its root's ``data-attnviz-paint`` goes up). In 04
   one student checks an exercise: the check cell first says the exercise is not written yet,
   then, once they type the solution in and run both cells, that it passed.
4. nbgrader's exchange: in their own terminals the students ``nbgrader fetch_assignment``; two
   open the fetched notebook in the same JupyterLab and write into it (the teacher's solution; the same with
   one exercise replaced by a bug from ``attnviz.zoo``), save, and all three ``nbgrader submit``
   (one untouched). The teacher ``nbgrader collect`` and ``nbgrader autograde``; the scores are
   read from the gradebook.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from _hub import Hub, HubNotebookPage, Sampler, Terminal, submit_login, wait_for_lab
from _lab import (
    REPO,
    NotebookTimeout,
    describe_failures,
    explorer_state,
    explorers,
    find_slider,
    free_port,
    outside_requests,
    press_slider_key,
    wait_repaint,
)

sys.path.insert(0, str(REPO / "tools"))
import make_nbgrader  # noqa: E402

STUDENTS = ("right", "buggy", "untouched")     # named by what each hands in
CHECKER = "right"                              # the student who checks an exercise in the edition
FOLDER = "attention-course"                    # the learner's edition's folder in each home
SOURCE = "~/attention-from-first-principles"   # the teacher's copy of the course (the teacher's edition)
NOTEBOOKS = ("03_why_sqrt_dk.ipynb", "04_masking.ipynb")
ASSIGNMENT = "04_masking"
KERNEL_NEVER_STARTED = "Kernel died before replying to kernel_info"   # nbclient's words
# what the buggy student hands in: one exercise replaced by a catalogued bug (tests/test_nbgrader.py)
BUG = ("CAUSAL_MASK_BUGS", "causal_future_visible", "my_causal_mask")
VIEWPORT = {"width": 1280, "height": 800}
MB = 1024 * 1024


def course_id() -> str:
    found = re.search(r'course_id = "([^"]+)"', make_nbgrader.CONFIG)
    assert found, "tools/make_nbgrader.py's CONFIG sets no course_id"
    return found.group(1)


def _solution_sources(path: Path) -> dict[str, str]:
    """The teacher's exercise cells of a notebook, by the name each defines."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for cell in nb["cells"]:
        if "solution" in cell.get("metadata", {}).get("tags", []):
            source = "".join(cell["source"])
            name = make_nbgrader.defined_name(source)
            out[name] = source
    return out


class _Step:
    """Times the named steps of the class."""

    def __init__(self, log):
        self.seconds: dict[str, float] = {}
        self.log = log
        self._start = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.log(f"[hub {now - self._start:6.1f} s] {name}")
        self.seconds[name] = now
        self._last = name

    def table(self) -> dict[str, float]:
        names = list(self.seconds)
        ends = [*(self.seconds[n] for n in names[1:]), time.monotonic()]
        return {n: round(end - self.seconds[n], 1) for n, end in zip(names, ends, strict=True)}


_JS_CELL_INDEX = r"""(start) => window.jupyterapp.shell.currentWidget.content.widgets
  .findIndex(cell => cell.model.sharedModel.getSource().trim().startsWith(start))"""

_JS_VERDICT = r"""(index) => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[index];
  const verdict = cell && cell.node.querySelector('.attnviz-verdict');
  return verdict ? {status: Array.from(verdict.classList).find(c => c !== 'attnviz-verdict'),
                    text: verdict.textContent.trim().slice(0, 300)} : null;
}"""

_JS_RUN_CELL = r"""async ([index, source]) => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  if (source !== null) panel.content.widgets[index].model.sharedModel.setSource(source);
  panel.content.activeCellIndex = index;
  await app.commands.execute('notebook:run-cell');
}"""

_JS_WRITE_AND_SAVE = r"""async (sources) => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  const written = [];
  for (const cell of panel.content.widgets) {
    const meta = cell.model.getMetadata('nbgrader');
    if (meta && meta.grade_id in sources) {
      cell.model.sharedModel.setSource(sources[meta.grade_id]);
      written.push(meta.grade_id);
    }
  }
  await app.commands.execute('docmanager:save');
  return written;
}"""


def _move_control(page: HubNotebookPage, notebook: str) -> dict:
    """Move the explorer's control as a student would; the explorer's repaint counter must go up."""
    found = explorers(page)
    assert found, f"repaint: {page.name} shows no explorer after Run All"
    explorer = found[0]
    before = explorer_state(page, explorer["index"])
    if notebook.startswith("03"):
        assert find_slider(page, "d_k"), f"repaint: {page.name} has no d_k slider"
        did = f"pressed {press_slider_key(page, 'd_k')} on the d_k slider"
    else:
        control = next((c for c in explorer["controls"] if c["kind"] == "dropdown"), None)
        assert control, f"repaint: {page.name}'s explorer has no dropdown: {explorer['controls']}"
        select = page.page.locator(f'[data-attnviz-control="{control["id"]}"] select')
        values = select.evaluate("el => Array.from(el.options).map(o => o.value)")
        now = select.input_value()
        target = values[(values.index(now) + 1) % len(values)]
        select.select_option(target)
        did = f"chose {target!r} in the {control['label'] or 'first'} dropdown"
    outcome = wait_repaint(page, explorer["index"], before, timeout=60)
    after = explorer_state(page, explorer["index"])
    return {"did": did, "outcome": outcome, "paints_before": before["paints"],
            "paints_after": after["paints"]}


def _check_an_exercise(page: HubNotebookPage, solutions: dict[str, str]) -> dict:
    """Before writing the exercise its check cell says so; after, it passes."""
    exercise = page.page.evaluate(_JS_CELL_INDEX, "def my_causal_mask")
    check = page.page.evaluate(_JS_CELL_INDEX, "from attnviz.check import check_causal_mask")
    assert exercise >= 0 and check > exercise, (
        f"check: no my_causal_mask exercise and check cell in {page.name}")
    unwritten = page.page.evaluate(_JS_VERDICT, check)
    page.page.evaluate(_JS_RUN_CELL, [exercise, solutions["my_causal_mask"]])
    page.page.evaluate(_JS_RUN_CELL, [check, None])
    deadline = time.monotonic() + 60
    verdict = None
    while time.monotonic() < deadline:
        verdict = page.page.evaluate(_JS_VERDICT, check)
        if verdict and verdict != unwritten:
            break
        page.page.wait_for_timeout(300)
    return {"before": unwritten, "after": verdict}


def run_class(browser, log=print, screenshots: Path | None = None) -> dict:
    """Play the class through on a fresh hub; always stops the hub and removes its accounts.

    ``screenshots``: a folder for a picture of what each student sees (after the repaint, the check).
    """
    step = _Step(log)
    result: dict = {"steps": {}, "repaints": {}, "notebooks": {}, "scores": {}}
    hub = Hub(["teacher", *STUDENTS])
    result["folder"] = str(hub.tmp)
    # a SIGTERM (a timeout's kill) unwinds through the finally below, so the hub still stops
    previous = signal.signal(signal.SIGTERM, _terminated) if _main_thread() else None
    sampler = None
    contexts = []
    try:
        step("prepare: accounts, shared environment, exchange")
        hub.prepare(course_id())
        result["accounts"] = {role: account.name for role, account in hub.accounts.items()}
        step("hub: start JupyterHub and its proxy")
        hub.start()
        sampler = Sampler(hub).start()
        teacher = hub.accounts["teacher"]
        # the teacher's own copy of the course (its notebooks and tools), as a clone would give them
        hub.give("teacher", [REPO / "notebooks", REPO / "tools"], SOURCE.removeprefix("~/"))

        step("login: the teacher")
        context = browser.new_context(viewport=VIEWPORT)
        contexts.append(context)
        outside = outside_requests(context, hub.base)
        teacher_page = context.new_page()
        submit_login(teacher_page, hub, teacher, "/hub/")
        wait_for_lab(teacher_page, hub, teacher)
        desk = Terminal(teacher_page, "the teacher")

        step("hand-out: the teacher builds the learner's edition and commits it")
        desk.run(f"cd ~ && python {SOURCE}/tools/make_student.py {SOURCE}/notebooks ~/{FOLDER} "
                 f"&& cd ~/{FOLDER} && git init -q -b main && git add -A && git -c user.name=Teacher "
                 "-c user.email=teacher@localhost commit -q -m 'The learner edition' && git log --oneline",
                 "hand-out")
        port = free_port()
        hub.run_as("teacher", ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
                               f"--base-path={teacher.home}", "--export-all", "--informative-errors",
                               str(teacher.home / FOLDER)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(port, "hand-out: git daemon")

        # the release runs in the teacher's terminal while the students log in (waited for before fetch)
        desk.send(f"cd ~ && python {SOURCE}/tools/make_nbgrader.py {SOURCE}/notebooks ~/course "
                  f"&& cd ~/course && nbgrader generate_assignment {ASSIGNMENT} "
                  f"&& nbgrader release_assignment {ASSIGNMENT}",
                  "release")

        link = "/hub/user-redirect/git-pull?" + urlencode({
            "repo": f"git://127.0.0.1:{port}/{FOLDER}", "branch": "main",
            "urlpath": f"lab/tree/{FOLDER}"}, quote_via=quote)
        result["nbgitpuller_link"] = link
        step("login and spawn: three students open the teacher's nbgitpuller link")
        student_pages = {}
        for role in STUDENTS:
            context = browser.new_context(viewport=VIEWPORT)
            contexts.append(context)
            outside_here = outside_requests(context, hub.base)
            page = context.new_page()
            student_pages[role] = (context, page, outside_here)
            account = hub.accounts[role]
            submit_login(page, hub, account, link)             # the hub asks them to log in first
        for role, (_, page, _) in student_pages.items():
            wait_for_lab(page, hub, hub.accounts[role])
        for role in STUDENTS:
            home = hub.accounts[role].home / FOLDER
            exercise = home / "04_masking.ipynb"
            assert exercise.is_file(), f"hand-out: nbgitpuller put no {FOLDER}/04_masking.ipynb in {role}'s"
            assert exercise.stat().st_uid == hub.accounts[role].uid, f"hand-out: {exercise} is not {role}'s"
            cell = next(("".join(c["source"]) for c in json.loads(exercise.read_text())["cells"]
                         if "".join(c["source"]).startswith("def my_causal_mask")), "")
            assert "raise NotImplementedError" in cell and "return torch.ones" not in cell, (
                f"hand-out: {role}'s my_causal_mask cell is not the learner's stub:\n{cell}")
        result["handed_out"] = "nbgitpuller (git clone as each student, through their own server)"

        solutions = _solution_sources(REPO / "notebooks" / "04_masking.ipynb")
        for notebook in NOTEBOOKS:
            stem = notebook.split("_")[0]
            step(f"open notebook: {notebook} for each student")
            pages = {}
            for role in STUDENTS:      # from the file browser of the JupyterLab the link opened
                pages[role] = HubNotebookPage.in_lab(student_pages[role][1], f"{FOLDER}/{notebook}",
                                                     f"{role}'s {notebook}").goto()
            for role, page in pages.items():
                try:
                    page.wait_ready(timeout=240)
                except NotebookTimeout as error:
                    # seen once, under load: the notebook open with "No Kernel", no session ever made and
                    # no dialog. The student picks the kernel, as they would; recorded, with the log
                    lines = hub.server_lines(hub.accounts[role].name)
                    if not page.choose_kernel_again():
                        raise NotebookTimeout(f"{error}\n{lines}") from None
                    print(f"[hub] {role}'s {notebook} had no kernel after 240 s; chose it again\n{lines}")
                    result.setdefault("kernel_chosen_again", []).append(f"{role}: {notebook}")
                    try:
                        page.wait_ready(timeout=120)
                    except NotebookTimeout as again:
                        raise NotebookTimeout(f"{again} (after choosing the kernel again; first: {error})"
                                              f"\n{hub.server_lines(hub.accounts[role].name)}") from None
            kernels = {role: page.kernel_id() for role, page in pages.items()}
            step(f"run all: {notebook}, the three students at once")
            for page in pages.values():
                page.start_run_all()
            for page in pages.values():
                progress = page.wait_run_all(timeout=400)
                report = page.inspect()
                failures = describe_failures(page.name, progress, report)
                assert not failures, "run all: " + "\n".join(failures)
            if notebook == NOTEBOOKS[0]:
                sampler.sample()
                result["listening"] = sampler.listening()     # hub, proxy, servers and kernels all up
            step(f"repaint: {notebook}, each student moves a control")
            for role, page in pages.items():
                moved = _move_control(page, notebook)
                result["repaints"][f"{role} {stem}"] = moved
                assert moved["outcome"] == "repainted", f"repaint: {page.name}: {moved}"
                if screenshots is not None:
                    page.scroll_to('[data-attnviz-root="0"]')
                    page.screenshot(screenshots / f"hub_{stem}_{role}.png")
            if notebook.startswith("04"):
                step("check: one student writes an exercise and runs its check cell")
                result["checked"] = _check_an_exercise(pages[CHECKER], solutions)
                if screenshots is not None:
                    pages[CHECKER].scroll_to(".attnviz-verdict.attnviz-passed")
                    pages[CHECKER].screenshot(screenshots / f"hub_04_{CHECKER}_checked.png")
            sampler.sample()
            for role, page in pages.items():
                record = sampler.kernel(role, kernels[role])
                assert record is not None, f"measure: no kernel process found for {page.name}"
                result["notebooks"][f"{role} {stem}"] = {
                    "student": role, "notebook": notebook, "kernel_hwm_mb": record.hwm / MB,
                    "kernel_tree_peak_mb": record.peak_tree_rss / MB,
                    "kernel_cpu_s": record.cpu + record.children_cpu}
                page.close()      # the tab closes; the kernel stays running, as JupyterLab leaves it

        step("release: the teacher's release finishes (make_nbgrader, generate_ and release_assignment)")
        said = desk.wait(timeout=600)
        released = hub.exchange / course_id() / "outbound" / ASSIGNMENT
        assert released.is_dir(), f"release: nothing in {released}:\n{said}"
        step("fetch: each student fetches 04_masking in their terminal")
        terminals = {role: Terminal(student_pages[role][1], f"{role}") for role in STUDENTS}
        for role in STUDENTS:
            terminals[role].send(f"cd ~ && nbgrader fetch_assignment {ASSIGNMENT}", "fetch")
        for role in STUDENTS:
            terminals[role].wait(timeout=300)
            fetched = hub.accounts[role].home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            assert fetched.is_file(), f"fetch: no {fetched} after nbgrader fetch_assignment"

        step("write: two students write their answers in JupyterLab and save")
        source_nb = json.loads((teacher.home / "course" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
                               .read_text())
        teacher_cells = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
                         for c in source_nb["cells"] if c["metadata"]["nbgrader"].get("solution")}
        family, bug_id, exercise = BUG
        answers = {"right": teacher_cells,
                   "buggy": {**teacher_cells, exercise: (f"from attnviz.zoo import {family}\n\n"
                                                         f'{exercise} = {family}["{bug_id}"]')}}
        writing = {}
        for role in answers:
            writing[role] = HubNotebookPage.in_lab(student_pages[role][1], f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb",
                                                   f"{role}'s fetched {ASSIGNMENT}").goto()
        for role, sources in answers.items():
            page = writing[role].wait_ready(timeout=240)
            written = page.page.evaluate(_JS_WRITE_AND_SAVE, sources)
            assert sorted(written) == sorted(sources), f"write: {page.name}: wrote {written}, not {sources}"
            _wait_saved(hub.accounts[role].home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", sources, page.name)
            page.close()

        step("submit: each student submits in their terminal")
        for role in STUDENTS:
            terminals[role].send(f"cd ~ && nbgrader submit {ASSIGNMENT}", "submit")
        for role in STUDENTS:
            said = terminals[role].wait(timeout=300)
            assert "Submitted as" in said, f"submit: nbgrader submit said:\n{said[-1500:]}"

        step("collect: the teacher collects")
        said = desk.run(f"cd ~/course && nbgrader collect {ASSIGNMENT}", "collect")
        for role in STUDENTS:
            name = hub.accounts[role].name
            assert (teacher.home / "course" / "submitted" / name / ASSIGNMENT).is_dir(), (
                f"collect: nothing collected for {name}:\n{said[-1500:]}")

        step("autograde: the teacher autogrades")
        said = desk.run(f"cd ~/course && nbgrader autograde {ASSIGNMENT}", "autograde", timeout=600)
        if KERNEL_NEVER_STARTED in said:
            # a kernel whose TCP port another process took first (jupyter_client issue 154): no
            # notebook ran in it, nbgrader removed that submission's grading, and a teacher runs
            # autograde again, which grades only the submissions not yet graded
            step("autograde: a kernel died before it started; the teacher autogrades again")
            result["autograde_again"] = said[-1500:]
            desk.run(f"cd ~/course && nbgrader autograde {ASSIGNMENT}", "autograde", timeout=600)
        step("gradebook: read the scores")
        result["scores"] = _scores(teacher.home / "course", {r: hub.accounts[r].name for r in STUDENTS})
        result["autograded_check"] = _check_outputs(teacher.home / "course",
                                                    {r: hub.accounts[r].name for r in STUDENTS})
        result["outside_requests"] = outside + [u for _, _, r in student_pages.values() for u in r]
        step("done")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)    # a second SIGTERM must not cut cleanup short
        if sampler is not None:
            sampler.stop()
        for context in contexts:
            try:
                context.close()
            except Exception:  # noqa: BLE001 - the browser may already be gone; the hub must still stop
                pass
        problems = hub.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        for problem in problems:
            log(f"[hub] cleanup: {problem}")
        result["cleanup_problems"] = problems
        result["steps"] = step.table()
        if sampler is not None:
            result["processes"] = _process_table(sampler)
            result["totals"] = {"peak_all_rss_mb": sampler.peak_total_rss / MB,
                                "peak_all_pss_mb": sampler.peak_total_pss / MB,
                                "peak_students_pss_mb": sampler.peak_students_pss / MB,
                                "samples": sampler.samples}
    return result


def _terminated(signum, frame):
    raise SystemExit(f"hub test: terminated by signal {signum}")


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _wait_port(port: int, step: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"{step} is not listening on 127.0.0.1:{port} after {timeout:.0f} s")


def _wait_saved(path: Path, sources: dict[str, str], name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            nb = json.loads(path.read_text())
            cells = {c["metadata"].get("nbgrader", {}).get("grade_id"): "".join(c["source"])
                     for c in nb["cells"]}
            if all(cells.get(k) == v for k, v in sources.items()):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"write: {name} was not saved with the answers within {timeout:.0f} s")


def _scores(course: Path, names: dict[str, str]) -> dict:
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for role, name in names.items():
            submission = gradebook.find_submission(ASSIGNMENT, name)
            notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, name)
            scores[role] = {"score": submission.score, "max_score": submission.max_score,
                            "cells": {g.name: [g.score, g.max_score] for g in notebook.grades}}
    return scores


def _check_outputs(course: Path, names: dict[str, str]) -> dict:
    """The autograded check cell of the bug's exercise, as text, per student."""
    exercise = BUG[2]
    out = {}
    for role, name in names.items():
        path = course / "autograded" / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = json.loads(path.read_text())
        cell = next(c for c in nb["cells"]
                    if c["metadata"].get("nbgrader", {}).get("grade_id") == f"{exercise}-check")
        out[role] = json.dumps(cell.get("outputs", []), ensure_ascii=False)[:2000]
    return out


def _process_table(sampler: Sampler) -> list[dict]:
    return [{"pid": r.pid, "owner": r.owner, "kind": r.kind, "peak_rss_mb": round(r.peak_rss / MB, 1),
             "peak_tree_mb": round(r.peak_tree_rss / MB, 1), "hwm_mb": round(r.hwm / MB, 1),
             "cpu_s": round(r.cpu, 2), "children_cpu_s": round(r.children_cpu, 2),
             "cmdline": r.cmdline[:160]} for r in sampler.records.values()]
