"""`make nbgrader`: the course folder it writes is graded by nbgrader's own commands as it should be.

In a temporary course folder: `nbgrader generate_assignment` for each exercise notebook (one
assignment per notebook), then three submissions each under submitted/<student>/<assignment>/
(the teacher's solution, the untouched student release, and the teacher's solution with a bug
from attnviz.zoo put in place of one exercise), and for 04 a fourth: the learner's edition with right
answers, which tools/into_release.py puts into the release; `nbgrader autograde`, and the scores read
from nbgrader's gradebook: full marks, zero, and partial. Each assignment is generated and graded on
its own, so that `make test`'s workers grade them side by side. Autograding runs each submitted
notebook top to bottom (thirteen notebooks), so the graded part is marked slow; it runs in
`make test` all the same.

The tools' own rules (markers, ids, locked cells; into_release's placing of answers and added cells)
are tested on the course notebooks without nbgrader, in a few seconds.

The kernels `nbgrader autograde` starts here talk to it over IPC sockets in the course folder, not
over TCP: jupyter_client picks free TCP ports and frees them before the kernel binds them, so among
the many kernels `make test` starts at once another process can take one first, and the kernel dies
before it answers (jupyter_client issue 154; seen once here, in a fresh clone's `make test`). The
transport is not what these tests are about; the hub test runs nbgrader as a teacher would, over
TCP, and autogrades again, as a teacher would, when a kernel died so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import into_release  # noqa: E402
import make_nbgrader  # noqa: E402
from make_student import TAG, StudentEditionError, solution_text, student_notebook  # noqa: E402
from nbbuild import write  # noqa: E402

# assignment -> the bug put in place of one exercise: (family dict in attnviz.zoo or "module:dict",
#                                                      bug id, exercise)
BUGS = {
    "02_scaled_dot_product_attention": ("ATTENTION_BUGS", "missing_scale", "my_attention"),
    "04_masking": ("CAUSAL_MASK_BUGS", "causal_future_visible", "my_causal_mask"),
    "05_multi_head": ("MULTI_HEAD_BUGS", "heads_merged_without_transpose", "MyMultiHeadAttention"),
    "08_generation_kv_cache": ("attnviz.check.decoding:DECODING_BUGS", "values_not_appended", "decode_step"),
}
# also handed in for this assignment: the learner's edition with right answers, put into the release
# by tools/into_release.py (a fourth submission: full marks)
RESCUED = "04_masking"
# points: each exercise 1 (it runs, right shape) + 2 (its checker passes); 04 has two exercises
MAX_SCORE = {"02_scaled_dot_product_attention": 3, "04_masking": 6, "05_multi_head": 3,
             "08_generation_kv_cache": 3}


def _nbgrader_cells(path):
    nb = json.loads(Path(path).read_text())
    return nb, [c for c in nb["cells"] if "nbgrader" in c.get("metadata", {})]


def _by_id(cells):
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in cells}


# ---- the tool, without nbgrader --------------------------------------------------------------

@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("nbgrader") / "course"
    written = make_nbgrader.make_nbgrader(ROOT / "notebooks", out)
    return out, written


def test_one_assignment_per_exercise_notebook(course):
    out, written = course
    assert [p.relative_to(out).as_posix() for p in written] == [
        f"source/{name}/{name}.ipynb" for name in BUGS]
    config = (out / "nbgrader_config.py").read_text()
    assert 'c.ClearSolutions.code_stub = {"python": \'raise NotImplementedError(hint)\'}' in config


def test_every_cell_is_an_nbgrader_cell_and_the_lesson_is_locked(course):
    out, written = course
    for path in written:
        nb, cells = _nbgrader_cells(path)
        assert len(cells) == len(nb["cells"]), path.name
        teacher = json.loads((ROOT / "notebooks" / path.name).read_text())
        lesson = [c for c in cells if c["metadata"]["nbgrader"]["grade_id"].startswith("lesson-")]
        assert all(c["metadata"]["nbgrader"]["locked"] and not c["metadata"]["nbgrader"]["grade"]
                   for c in lesson)
        # lesson cells are the teacher's cells, unchanged and without outputs
        originals = {c["id"]: c for c in teacher["cells"]}
        for cell in lesson:
            assert cell["source"] == originals[cell["id"]]["source"]
            assert cell.get("outputs", []) == []
        ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells]
        assert len(set(ids)) == len(ids)


def test_the_release_turns_the_fix_lines_off_before_any_code(course):
    """A graded exercise's verdict names the mistake but not the line that fixes it (the answer)."""
    out, written = course
    for path in written:
        nb, cells = _nbgrader_cells(path)
        first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        meta = first_code["metadata"]["nbgrader"]
        assert meta["grade_id"] == make_nbgrader.GRADED_MODE_ID, path.name
        assert meta["locked"] and not meta["grade"] and not meta["solution"]
        assert "attnviz.check.show_fixes(False)" in "".join(first_code["source"])


def test_solution_cells_keep_their_hint_for_the_stub(course):
    out, _ = course
    cells = _by_id(_nbgrader_cells(out / "source/02_scaled_dot_product_attention/"
                                         "02_scaled_dot_product_attention.ipynb")[1])
    solution = "".join(cells["my_attention"]["source"])
    meta = cells["my_attention"]["metadata"]["nbgrader"]
    assert meta["solution"] and not meta["grade"] and not meta["locked"]
    assert ('    hint = "q @ kᵀ / √d_k; masked_fill with torch.finfo(scores.dtype).min; '
            'softmax(dim=-1); @ v"\n    ### BEGIN SOLUTION\n') in solution
    assert "# hint:" not in solution
    check = cells["my_attention-check"]
    assert check["metadata"]["nbgrader"] == {
        "grade": True, "grade_id": "my_attention-check", "locked": True, "points": 2,
        "schema_version": 3, "solution": False}
    assert "verdict = check_attention(my_attention)\ndisplay(verdict)\nassert verdict.passed" in "".join(
        check["source"])
    assert cells["my_attention-runs"]["metadata"]["nbgrader"]["points"] == 1


def test_graded_notebooks_hold_no_tex(course):
    """nbgrader's feedback page loads MathJax from a CDN (cdnjs, its feedback template's default):
    offline, TeX would show as its source. The graded notebooks write their maths in Unicode
    (softmax, √d_k), so a feedback page needs nothing from the internet (docs/teaching.md says so)."""
    out, _ = course
    tex = re.compile(r"\$[^$\n]+\$|\\\(|\\\[")
    found = [(path.name, cell.get("id"), match.group())
             for path in sorted((out / "source").glob("*/*.ipynb"))
             for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "markdown"
             for match in tex.finditer("".join(cell["source"]))]
    assert not found, found


def test_hint_source_without_a_hint_line_uses_the_default():
    source = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"
    assert make_nbgrader.hint_source(source).split("\n")[1] == '    hint = "write your code here"'


def test_an_exercise_without_a_check_cell_is_an_error(tmp_path):
    (tmp_path / "course").mkdir()
    write(tmp_path / "course" / "01_x.ipynb", [
        ("md", "# X"), ("code", "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                        ["solution"])])
    with pytest.raises(StudentEditionError, match="no check cell"):   # the markers check says it first
        make_nbgrader.make_nbgrader(tmp_path / "course", tmp_path / "out")


def test_marker_words_in_a_lesson_cell_are_an_error(tmp_path):
    (tmp_path / "course").mkdir()
    write(tmp_path / "course" / "01_x.ipynb", [("md", "Mark answers with `### BEGIN SOLUTION`.")])
    with pytest.raises(StudentEditionError, match="SOLUTION"):
        make_nbgrader.make_nbgrader(tmp_path / "course", tmp_path / "out")


def test_refuses_to_overwrite_the_teachers_edition(tmp_path):
    for out in (tmp_path, tmp_path.parent, tmp_path / "inside"):
        with pytest.raises(StudentEditionError, match="refusing"):
            make_nbgrader.make_nbgrader(tmp_path, out)


def test_command_line(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "make_nbgrader.py"), str(ROOT / "notebooks"),
                           str(tmp_path / "cli")], capture_output=True, text=True, check=True)
    assert f"{len(BUGS)} assignments" in done.stdout and (tmp_path / "cli" / "nbgrader_config.py").is_file()


# ---- tools/into_release.py: a hand-in from the learner's edition --------------------------------

def _learners_edition_answered(assignment):
    """The learner's edition of an assignment with the teacher's answers typed in, and a cell of the
    learner's own after the first exercise."""
    teacher = json.loads((ROOT / "notebooks" / f"{assignment}.ipynb").read_text())
    answers = {c["id"]: solution_text("".join(c["source"])) for c in teacher["cells"]
               if TAG in c["metadata"].get("tags", [])}
    nb = student_notebook(teacher, assignment)
    cells = []
    for cell in nb["cells"]:
        if cell.get("id") in answers:
            cell["source"] = answers[cell["id"]]
        cells.append(cell)
        if cell.get("id") == next(iter(answers)):
            cells.append({"cell_type": "code", "execution_count": None, "id": "learners-own",
                          "metadata": {}, "outputs": [], "source": "my_note = 'the diagonal stays True'"})
    return {**nb, "cells": cells}


def test_into_release_puts_the_learners_answers_into_the_release(course):
    out, _ = course
    release = json.loads((out / "source" / "04_masking" / "04_masking.ipynb").read_text())
    handin = _learners_edition_answered("04_masking")
    assert not into_release.is_release(handin) and into_release.is_release(release)
    nb, said = into_release.into_release(release, handin)
    ids = [c.get("id") for c in nb["cells"]]
    # every release cell, in order, with the learner's own cell right after the first exercise
    release_ids = [c.get("id") for c in release["cells"]]
    assert [i for i in ids if i != "learners-own"] == release_ids
    assert ids[ids.index("cell-057") + 1] == "learners-own"
    by_id = {c.get("id"): c for c in nb["cells"]}
    for cell_id in ("cell-057", "cell-060"):       # the exercises: the learner's code, nbgrader's metadata
        source = "".join(by_id[cell_id]["source"])
        assert "NotImplementedError" not in source and "BEGIN SOLUTION" not in source
        assert by_id[cell_id]["metadata"]["nbgrader"]["solution"] is True
    assert not any("solution-shown" in c["metadata"].get("tags", []) for c in nb["cells"])
    assert said == ["my_causal_mask: the learner's code", "my_padding_mask: the learner's code",
                    "1 cell the learner added, carried over"]


def test_into_release_finds_a_moved_answer_by_its_name_and_says_when_there_is_none(course):
    out, _ = course
    release = json.loads((out / "source" / "04_masking" / "04_masking.ipynb").read_text())
    handin = _learners_edition_answered("04_masking")
    for cell in handin["cells"]:
        if cell.get("id") == "cell-057":
            cell["id"] = "pasted-again"               # deleted, and pasted back as a new cell
        if cell.get("id") == "cell-060":
            cell["source"] = "# gave up"
            cell["id"] = "my-own-cell"
    nb, said = into_release.into_release(release, handin)
    by_id = {c.get("id"): c for c in nb["cells"]}
    assert "def my_causal_mask" in "".join(by_id["cell-057"]["source"])
    assert "def my_padding_mask" in "".join(by_id["cell-060"]["source"])   # the release's stub stays
    assert "no answer found for my_padding_mask: its stub stays" in said


def test_into_release_command_keeps_the_handin_and_leaves_a_release_alone(course, tmp_path, capsys):
    out, _ = course
    release_path = out / "source" / "04_masking" / "04_masking.ipynb"
    handin = tmp_path / "frank" / "04_masking.ipynb"
    handin.parent.mkdir()
    handin.write_text(json.dumps(_learners_edition_answered("04_masking")))
    before = handin.read_bytes()
    alice = tmp_path / "alice.ipynb"
    alice.write_bytes(release_path.read_bytes())
    assert into_release.main([str(release_path), str(handin), str(alice)]) == 0
    assert (tmp_path / "frank" / "04_masking.ipynb.handed-in").read_bytes() == before
    assert into_release.is_release(json.loads(handin.read_text()))
    assert alice.read_bytes() == release_path.read_bytes()
    said = capsys.readouterr().out
    assert "rewritten as the release" in said and "already carries nbgrader's metadata" in said
    assert into_release.main([str(handin.with_name("04_masking.ipynb.handed-in")), str(alice)]) == 2
    # the docs' `$(grep -L grade_id ...)` may find no stray hand-in: that is not an error
    assert into_release.main([str(release_path)]) == 0 and "nothing to convert" in capsys.readouterr().out
    assert into_release.main([]) == 2


# ---- nbgrader's own commands -----------------------------------------------------------------

def _nbgrader(course_dir, *args):
    """Run an nbgrader command in the course folder (its alembic step needs this venv's bin on PATH)."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (f"nbgrader {' '.join(args)} failed:\n"
                                  f"{done.stdout[-3000:]}\n{_first_traceback_and_tail(done.stderr)}")
    return done


def _first_traceback_and_tail(log: str, size: int = 5000) -> str:
    """The log's first traceback (a kernel's own, when one died) and its end, each cut to `size`."""
    first = log.find("Traceback")
    if first == -1 or first >= len(log) - size:
        return log[-size:]
    return f"{log[first:first + size]}\n[...]\n{log[-size:]}"


def _autograde(course_dir: Path, assignment: str):
    """`nbgrader autograde`, its kernels over IPC sockets in the course folder (see the docstring)."""
    done = _nbgrader(course_dir, "autograde", assignment, "--KernelManager.transport=ipc",
                     f"--KernelManager.ip={course_dir / 'kernel'}")
    assert "running over TCP" not in done.stderr, "a kernel ran over TCP:\n" + done.stderr[-3000:]
    return done


def _with_bug(solution_nb, family, bug_id, exercise):
    """The teacher's solution with one exercise replaced by a bug from the zoo."""
    nb = json.loads(json.dumps(solution_nb))
    cell = _by_id(c for c in nb["cells"] if "nbgrader" in c["metadata"])[exercise]
    module, family = family.split(":") if ":" in family else ("attnviz.zoo", family)
    cell["source"] = [f"from {module} import {family}\n", "\n", f'{exercise} = {family}["{bug_id}"]']
    return nb


def _grade(out: Path, assignment: str) -> dict:
    """Generate one assignment, submit its three versions, autograde them: their scores by student."""
    from nbgrader.api import Gradebook

    family, bug_id, exercise = BUGS[assignment]
    timings = {}
    start = time.perf_counter()
    _nbgrader(out, "generate_assignment", assignment)
    timings["generate_assignment"] = time.perf_counter() - start
    name = f"{assignment}.ipynb"
    release = json.loads((out / "release" / assignment / name).read_text())
    solution = json.loads((out / "source" / assignment / name).read_text())
    versions = {"teacher_solution": solution, "untouched_release": release,
                "one_zoo_bug": _with_bug(solution, family, bug_id, exercise)}
    if assignment == RESCUED:
        versions["learners_edition_rescued"] = into_release.into_release(
            release, _learners_edition_answered(assignment))[0]
    for student, nb in versions.items():
        target = out / "submitted" / student / assignment / name
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(nb))
    start = time.perf_counter()
    _autograde(out, assignment)
    timings[f"autograde ({len(versions)} notebooks)"] = time.perf_counter() - start
    print(f"\nnbgrader timings, {assignment}: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    scores = {}
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        for student in versions:
            sub = gradebook.find_submission(assignment, student)
            notebook = gradebook.find_submission_notebook(assignment, assignment, student)
            cells = {grade.name: (grade.score, grade.max_score) for grade in notebook.grades}
            scores[student] = (sub.score, sub.max_score, cells)
    return scores


@pytest.fixture(scope="module")
def graded(course):
    """One assignment graded by nbgrader's own commands, on first use: make test's workers grade
    the four assignments side by side (conftest.py gives each its own unit), in one course folder
    per worker."""
    pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt for Python >= 3.11")
    out, _ = course
    done: dict[str, dict] = {}
    failed: dict[str, str] = {}

    def grade(assignment: str) -> tuple[Path, dict]:
        if assignment in failed:   # graded once only: a second try would find the first's files
            pytest.fail(f"grading {assignment} failed in an earlier test: {failed[assignment]}")
        if assignment not in done:
            try:
                done[assignment] = _grade(out, assignment)
            except Exception as error:
                failed[assignment] = str(error).splitlines()[0] if str(error) else type(error).__name__
                raise
        return out, done[assignment]

    return grade


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(BUGS))
def test_nbgrader_grades_full_zero_and_partial(graded, assignment):
    _, scores = graded(assignment)
    full, maximum, _ = scores["teacher_solution"]
    assert maximum == MAX_SCORE[assignment]
    assert full == maximum, scores["teacher_solution"]
    assert scores["untouched_release"][0] == 0, scores["untouched_release"]
    partial, _, cells = scores["one_zoo_bug"]
    assert 0 < partial < maximum, scores["one_zoo_bug"]
    assert partial == maximum - 2, scores["one_zoo_bug"]     # 1 of 3, or 4 of 6 in 04
    if assignment == RESCUED:
        assert scores["learners_edition_rescued"][0] == maximum, scores["learners_edition_rescued"]
    _, bug_id, exercise = BUGS[assignment]
    # the buggy exercise runs and has the right shape (1 point) but its checker fails (0 of 2)
    assert cells[f"{exercise}-runs"] == (1, 1) and cells[f"{exercise}-check"] == (0, 2), cells


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(BUGS))
def test_autograded_check_cells_show_the_verdict(graded, assignment):
    """The graded notebook tells the learner why: the checker names the bug; the stub's hint shows."""
    out, _ = graded(assignment)
    _, bug_id, exercise = BUGS[assignment]
    name = f"{assignment}.ipynb"

    def check_output(student):
        nb = json.loads((out / "autograded" / student / assignment / name).read_text())
        cell = _by_id(c for c in nb["cells"] if "nbgrader" in c["metadata"])[f"{exercise}-check"]
        return json.dumps(cell["outputs"], ensure_ascii=False)

    buggy = check_output("one_zoo_bug")
    assert f"[bug: {bug_id}]" in buggy and "AssertionError" in buggy
    # ... and how it showed, but not the fix line (the answer), in the kernel's verdict and the assert
    from attnviz.check import BUGS as CATALOG
    from attnviz.check._verdict import FIX_WITHHELD
    assert json.dumps(FIX_WITHHELD, ensure_ascii=False)[1:-1] in buggy
    assert json.dumps(CATALOG[bug_id].what, ensure_ascii=False)[1:-1] in buggy
    fixes = [CATALOG[bug_id].fix, *CATALOG[bug_id].fixes.values()]
    assert not [fix for fix in fixes if json.dumps(fix, ensure_ascii=False)[1:-1] in buggy], buggy
    untouched = check_output("untouched_release")
    assert "not written yet" in untouched and "Hint: " in untouched
    assert "AssertionError" not in check_output("teacher_solution")


def test_nbgrader_extensions_are_off_for_learners():
    """`make lab` is for learners: the Makefile switches nbgrader's JupyterLab and server extensions off."""
    pytest.importorskip("nbgrader", reason="nbgrader is pinned in requirements.txt for Python >= 3.11")
    jupyter = Path(sys.executable).parent / "jupyter"

    def listed(*command):
        done = subprocess.run([str(jupyter), *command, "list"], capture_output=True, text=True, timeout=120)
        lines = (re.sub(r"\x1b\[[0-9;]*m", "", line).split()
                 for line in (done.stdout + done.stderr).splitlines())
        return {words[0]: status for words in lines if words and "nbgrader" in words[0]
                for status in words[1:3] if status in ("enabled", "disabled")}

    lab = listed("labextension")
    assert lab == {"@jupyter/nbgrader": "disabled"}, lab
    server = listed("server", "extension")
    assert sorted(server) == [f"nbgrader.server_extensions.{name}" for name in
                              ("assignment_list", "course_list", "formgrader", "validate_assignment")], server
    assert set(server.values()) == {"disabled"}, server
