"""The learner's edition: no solution code in view, its check cells answer "not written yet", and a
rebuild never overwrites what a learner wrote.

The tool is tested on a small notebook built here (so these tests do not wait for the course's
notebooks), then on the real notebooks: the student edition of each exercise gets a verdict, never a
traceback, and the teacher's edition passes its own checker. Cells run in a subprocess through
IPython's InteractiveShell (no kernel, so it stays fast).
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_student  # noqa: E402
from nbbuild import write  # noqa: E402

_RUNNER = r"""
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
results = []
for program in json.load(sys.stdin):
    shell.reset(new_session=False)
    cells = []
    for source in program:
        with contextlib.redirect_stdout(io.StringIO()):
            outcome = shell.run_cell(source, store_history=False, silent=False)
        error = outcome.error_before_exec or outcome.error_in_exec
        cells.append({"error": None if error is None else f"{type(error).__name__}: {error}",
                      "result": None if outcome.result is None else repr(outcome.result)})
    results.append(cells)
print("@@RESULTS@@" + json.dumps(results))
"""


def _run_programs(programs):
    """Run lists of cell sources, each list in a fresh namespace; per cell: error and repr of the result."""
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(programs), text=True,
                          capture_output=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("@@RESULTS@@", 1)[1])


def _code_cells(path):
    nb = json.loads(Path(path).read_text())
    return [(c, "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"] if c["cell_type"] == "code"]


def _is_solution(cell):
    return "solution" in cell.get("metadata", {}).get("tags", [])


# ---- the tool on a synthetic notebook ---------------------------------------------------------

SOLUTION_FN = '''
import math
import torch


def my_attention(q, k, v, mask=None):
    """Scaled dot-product attention."""
    # hint: scores, scale by sqrt(d_k), mask with -inf, softmax over keys, weights @ v
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v
    ### END SOLUTION
'''

SOLUTION_CLASS = '''
from torch import nn


class MyMask:
    def __init__(self, n):
        ### BEGIN SOLUTION
        self.n = n
        ### END SOLUTION

    def build(self):
        # hint: a "lower" triangle \\ of True
        ### BEGIN SOLUTION
        return torch.ones(self.n, self.n, dtype=torch.bool).tril()
        ### END SOLUTION


def my_causal_mask(n):
    return MyMask(n).build()
'''


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("synthetic")
    source = tmp_path / "course"
    source.mkdir()
    write(source / "01_demo.ipynb", [
        ("md", "# Demo\n\nKeep this text: ### BEGIN SOLUTION is only a marker in code cells."
               .replace("### BEGIN SOLUTION", "the BEGIN marker")),
        ("code", SOLUTION_FN, ["solution"]),
        ("code", "from attnviz.check import check_attention\n\ncheck_attention(my_attention)"),
        ("code", SOLUTION_CLASS, ["solution"]),
        ("code", "from attnviz.check import check_causal_mask\n\ncheck_causal_mask(my_causal_mask)"),
        ("code", "answer = 6 * 7\nanswer"),
    ])
    nb = json.loads((source / "01_demo.ipynb").read_text())
    nb["cells"][5]["outputs"] = [{"output_type": "execute_result", "data": {"text/plain": "42"},
                                  "metadata": {}, "execution_count": 3}]
    nb["cells"][5]["execution_count"] = 3
    (source / "01_demo.ipynb").write_text(json.dumps(nb))
    (source / "data.txt").write_text("a file beside the notebooks\n")
    out = tmp_path / "student"
    done = make_student.make_student(source, out)
    return source, out, done


def test_stubs_replace_every_solution_block(synthetic):
    source, out, done = synthetic
    assert [str(p) for p in done.written] == ["01_demo.ipynb", "data.txt"]
    cells = _code_cells(out / "01_demo.ipynb")
    student = "\n".join(src for _, src in cells)
    for gone in ("BEGIN SOLUTION", "END SOLUTION", "scores = q @ k", "self.n = n", ".tril()"):
        assert gone not in student, gone
    fn = cells[0][1]
    assert ('    # hint: scores, scale by sqrt(d_k), mask with -inf, softmax over keys, weights @ v\n'
            '    raise NotImplementedError("write your code here")') in fn      # the hint once, not repeated
    cls = cells[2][1]
    assert '        raise NotImplementedError("write your code here")' in cls
    assert '        # hint: a "lower" triangle \\ of True\n        raise NotImplementedError' in cls
    compile(student, "student", "exec")                                          # still valid Python


def _cells(path):
    return json.loads(Path(path).read_text())["cells"]


def test_each_solution_is_shown_collapsed_right_after_its_check(synthetic):
    source, out, _ = synthetic
    teacher, student = _cells(source / "01_demo.ipynb"), _cells(out / "01_demo.ipynb")
    kinds = [(c["cell_type"], "solution-shown" in c["metadata"].get("tags", [])) for c in student]
    # stub, check, its solution (collapsed markdown), stub, check, its solution, the last cell
    assert kinds == [("markdown", False), ("code", False), ("code", False), ("markdown", True),
                     ("code", False), ("code", False), ("markdown", True), ("code", False)]
    shown = "".join(student[3]["source"])
    assert shown.startswith("<details><summary>") and shown.rstrip().endswith("</details>")
    assert "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])" in shown
    assert "BEGIN SOLUTION" not in shown and "# hint:" not in shown
    assert "return torch.ones(self.n, self.n, dtype=torch.bool).tril()" in "".join(student[6]["source"])
    ids = [c["id"] for c in student]
    assert len(set(ids)) == len(ids) and ids[3] == f"{teacher[1]['id']}-solution"


def test_everything_else_is_unchanged_and_outputs_are_stripped(synthetic):
    source, out, _ = synthetic
    teacher = _cells(source / "01_demo.ipynb")
    student = [c for c in _cells(out / "01_demo.ipynb")
               if "solution-shown" not in c["metadata"].get("tags", [])]
    assert len(teacher) == len(student)
    for before, after in zip(teacher, student, strict=True):
        assert after["cell_type"] == before["cell_type"]
        if not _is_solution(before):
            assert "".join(after["source"]) == "".join(before["source"])
        if after["cell_type"] == "code":
            assert after["outputs"] == [] and after["execution_count"] is None
    assert (out / "data.txt").read_text() == "a file beside the notebooks\n"


def test_student_check_cells_say_not_written_yet(ran):
    student, teacher = ran[:2]
    assert all(cell["error"] is None for cell in student + teacher), student + teacher
    for index in (1, 3):
        assert "not written yet" in student[index]["result"], student[index]
        assert teacher[index]["result"].startswith("✓"), teacher[index]


def _course(tmp_path, body="x = 1"):
    source = tmp_path / "course"
    source.mkdir(exist_ok=True)
    write(source / "01_demo.ipynb", [("md", "# Demo"), ("code", SOLUTION_FN, ["solution"]),
                                     ("code", "check_attention(my_attention)"), ("code", body)])
    write(source / "02_more.ipynb", [("md", "# More"), ("code", body)])
    return source


def _learner_edits(path, text="# my own notes\n"):
    nb = json.loads(path.read_text())
    nb["cells"][1]["source"] = text + "".join(nb["cells"][1]["source"])
    path.write_text(json.dumps(nb))                   # saved the way any editor would save it
    return path.read_bytes()


def test_rebuilding_keeps_a_learners_edited_notebook_byte_for_byte(tmp_path):
    source, out = _course(tmp_path), tmp_path / "student"
    make_student.make_student(source, out)
    mine = _learner_edits(out / "01_demo.ipynb")
    (out / "my_scratch.ipynb").write_text("{}")     # a notebook of the learner's own
    again = make_student.make_student(source, out)     # a second make lab / make student
    assert (out / "01_demo.ipynb").read_bytes() == mine
    assert [str(p) for p in again.kept] == ["01_demo.ipynb"] and again.written == []
    assert (out / "my_scratch.ipynb").read_text() == "{}"
    assert not (out / "01_demo.new.ipynb").exists()   # the course did not change: nothing beside it
    assert "kept your 01_demo.ipynb" in again.summary(out)


def test_a_course_update_is_written_beside_an_edited_notebook_and_into_untouched_ones(tmp_path):
    source, out = _course(tmp_path), tmp_path / "student"
    make_student.make_student(source, out)
    mine = _learner_edits(out / "01_demo.ipynb")
    _course(tmp_path, body="x = 2  # the course was updated")          # as after a git pull
    update = make_student.make_student(source, out)
    assert (out / "01_demo.ipynb").read_bytes() == mine                # the learner's work, untouched
    assert "x = 2" in (out / "01_demo.new.ipynb").read_text()           # the new version beside it
    assert "x = 2" in (out / "02_more.ipynb").read_text()               # never edited: brought up to date
    assert [str(p) for p in update.new_beside] == ["01_demo.new.ipynb"]
    assert [str(p) for p in update.written] == ["02_more.ipynb"]
    summary = update.summary(out)
    assert "kept your 01_demo.ipynb; the course's newer version is beside it: 01_demo.new.ipynb" in summary
    # the learner starts working in the new version too: it is kept from then on
    newer = _learner_edits(out / "01_demo.new.ipynb", "# now here\n")
    _course(tmp_path, body="x = 3")
    make_student.make_student(source, out)
    assert (out / "01_demo.new.ipynb").read_bytes() == newer and (out / "01_demo.ipynb").read_bytes() == mine


def test_a_deleted_notebook_comes_back_fresh(tmp_path):
    source, out = _course(tmp_path), tmp_path / "student"
    make_student.make_student(source, out)
    fresh = (out / "01_demo.ipynb").read_bytes()
    _learner_edits(out / "01_demo.ipynb")
    (out / "01_demo.ipynb").rename(out / "01_demo_my_try.ipynb")        # 00's recipe for a fresh copy
    make_student.make_student(source, out)
    assert (out / "01_demo.ipynb").read_bytes() == fresh
    assert (out / "01_demo_my_try.ipynb").exists()


def test_an_old_edition_without_a_record_is_kept(tmp_path):
    """A student/ folder from before the record existed: anything that differs is the learner's."""
    source, out = _course(tmp_path), tmp_path / "student"
    make_student.make_student(source, out)
    (out / make_student.MANIFEST).unlink()
    mine = _learner_edits(out / "01_demo.ipynb")
    done = make_student.make_student(source, out)
    assert (out / "01_demo.ipynb").read_bytes() == mine
    assert [str(p) for p in done.unchanged] == ["02_more.ipynb"]


@pytest.mark.parametrize("source, problem", [
    ("x = 1\n### BEGIN SOLUTION\nx = 2\n", "without an END"),
    ("### END SOLUTION\n", "without a BEGIN"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "inside another block"),
])
def test_unbalanced_markers_are_errors(source, problem):
    with pytest.raises(make_student.StudentEditionError, match=problem):
        make_student.stub_source(source)


def test_markers_in_an_untagged_cell_are_an_error_and_leave_the_old_edition(tmp_path):
    (tmp_path / "course").mkdir()
    write(tmp_path / "course" / "01_leak.ipynb",
          [("md", "# Leak"), ("code", "### BEGIN SOLUTION\nx = 1\n### END SOLUTION")])
    out = tmp_path / "student"
    out.mkdir()
    (out / "keep.txt").write_text("old")
    with pytest.raises(make_student.StudentEditionError, match="not tagged 'solution'"):
        make_student.make_student(tmp_path / "course", out)
    assert (out / "keep.txt").exists()


def test_an_exercise_without_a_check_cell_is_an_error(tmp_path):
    (tmp_path / "course").mkdir()
    write(tmp_path / "course" / "01_unchecked.ipynb",
          [("md", "# Unchecked"), ("code", SOLUTION_FN, ["solution"])])
    with pytest.raises(make_student.StudentEditionError, match="no check cell"):
        make_student.make_student(tmp_path / "course", tmp_path / "student")


def test_refuses_to_overwrite_the_teachers_edition(tmp_path):
    for out in (tmp_path, tmp_path.parent, tmp_path / "inside"):
        with pytest.raises(make_student.StudentEditionError, match="refusing"):
            make_student.make_student(tmp_path, out)


def test_command_line(tmp_path, synthetic):
    source, _, _ = synthetic
    run = [sys.executable, str(ROOT / "tools" / "make_student.py"), str(source), str(tmp_path / "cli")]
    first = subprocess.run(run, capture_output=True, text=True, check=True)
    assert "2 written, 0 already up to date, 0 kept" in first.stdout
    _learner_edits(tmp_path / "cli" / "01_demo.ipynb")
    second = subprocess.run(run, capture_output=True, text=True, check=True)
    assert "0 written, 1 already up to date, 1 kept" in second.stdout
    assert "kept your 01_demo.ipynb" in second.stdout


# ---- the course's own notebooks ---------------------------------------------------------------

COURSE = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXERCISES = [p for p in COURSE if any(_is_solution(c) for c, _ in _code_cells(p))]


def _is_display_import(node):
    """Widget and plotting imports are not needed by an exercise (and are slow to load)."""
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
    widgets_from_attnviz = isinstance(node, ast.ImportFrom) and node.module == "attnviz" and any(
        alias.name == "widgets" for alias in node.names)
    return widgets_from_attnviz or any(
        name.split(".")[0] in ("plotly", "ipywidgets", "matplotlib") or name.startswith("attnviz.widgets")
        for name in names)


def _exercise_program(path):
    """Imports from the whole notebook, then every code cell from the first solution cell on."""
    cells = _code_cells(path)
    first = next(i for i, (c, _) in enumerate(cells) if _is_solution(c))
    imports = []
    for _, src in cells[:first]:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        imports += [ast.get_source_segment(src, node) for node in tree.body
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and not _is_display_import(node)]
    return ["\n".join(imports)] + [src for _, src in cells[first:]]


@pytest.fixture(scope="module")
def course_student(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "student"
    make_student.make_student(ROOT / "notebooks", out)
    return out


@pytest.fixture(scope="module")
def ran(synthetic, course_student):
    """All programs in one subprocess (one torch import): the synthetic notebook's student and
    teacher editions, then each exercise notebook's student editions, then its teacher editions."""
    source, out, _ = synthetic
    programs = [[src for _, src in _code_cells(out / "01_demo.ipynb")],
                [src for _, src in _code_cells(source / "01_demo.ipynb")]]
    programs += [_exercise_program(course_student / p.name) for p in EXERCISES]
    programs += [_exercise_program(p) for p in EXERCISES]
    return _run_programs(programs)


def test_course_student_edition_has_no_solution_code(course_student):
    assert sorted(p.name for p in course_student.glob("*.ipynb")) == [p.name for p in COURSE]
    for path in COURSE:
        teacher = _code_cells(path)
        student = _code_cells(course_student / path.name)
        for (cell, before), (_, after) in zip(teacher, student, strict=True):
            assert "BEGIN SOLUTION" not in after and "END SOLUTION" not in after
            if not _is_solution(cell):
                assert after == before
                continue
            solution_lines = []
            inside = False
            for line in before.split("\n"):
                if make_student.END.match(line):
                    inside = False
                elif inside and line.strip() and not line.strip().startswith("#"):
                    solution_lines.append(line)
                elif make_student.BEGIN.match(line):
                    inside = True
            assert solution_lines, f"{path.name}: a solution cell with no solution"
            for line in solution_lines:
                assert line not in after.split("\n") or line.strip() in ("return out", "return output"), (
                    f"{path.name}: solution line left in the student edition: {line!r}")


@pytest.mark.skipif(not EXERCISES, reason="no notebook has exercise cells yet")
def test_course_check_cells_give_verdicts(course_student, ran):
    """Student edition: every check cell answers 'not written yet'. Teacher's edition: it passes."""
    programs = [_exercise_program(course_student / p.name) for p in EXERCISES]
    programs += [_exercise_program(p) for p in EXERCISES]
    results = ran[2:]
    for edition, offset in (("student", 0), ("teacher", len(EXERCISES))):
        for number, path in enumerate(EXERCISES):
            program, cells = programs[offset + number], results[offset + number]
            checks = [(src, cell) for src, cell in zip(program, cells, strict=True)
                      if "check_" in src and "import" not in src.strip().splitlines()[-1]]
            assert checks, f"{path.name}: no check cell after the exercise"
            for src, cell in zip(program, cells, strict=True):
                assert cell["error"] is None, f"{edition} {path.name}: {src[:80]!r} raised {cell['error']}"
            for src, cell in checks:
                verdict = cell["result"] or ""
                if edition == "student":
                    assert "not written yet" in verdict, f"{path.name}: {src!r} -> {verdict}"
                else:
                    assert verdict.startswith("✓"), f"{path.name}: {src!r} -> {verdict}"


def test_the_02_exercise_gives_its_hint_once():
    """Comment, stub text and hint used to hand over the recipe three times; one hint is left."""
    nb = json.loads((ROOT / "notebooks" / "02_scaled_dot_product_attention.ipynb").read_text())
    student = make_student.student_notebook(nb, "02")
    cell = next(src for c, src in ((c, "".join(c["source"])) for c in student["cells"])
                if c["cell_type"] == "code" and "def my_attention" in src)
    assert cell.count("finfo") == 1 and cell.count("# hint:") == 1, cell
    assert 'raise NotImplementedError("write your code here")' in cell


def _opened_and_saved(path):
    """What JupyterLab's autosave makes of a notebook only opened (and run): sources as lists of
    lines, the kernel's language_info, an output; not one character a learner typed."""
    nb = json.loads(path.read_text())
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.9"}
    for cell in nb["cells"]:
        cell["source"] = cell["source"].splitlines(keepends=True) if isinstance(cell["source"], str) \
            else cell["source"]
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [{"output_type": "stream", "name": "stdout",
                                                         "text": ["1\n"]}], 1
    path.write_text(json.dumps(nb, indent=1))
    return path.read_bytes()


def test_a_notebook_only_opened_and_saved_is_not_the_learners_work(tmp_path):
    """JupyterLab saves a notebook two minutes after it is opened: that must not hold back a course
    update as if the learner had written in it (a teacher met it before lesson 4)."""
    source, out = _course(tmp_path), tmp_path / "student"
    make_student.make_student(source, out)
    saved = _opened_and_saved(out / "01_demo.ipynb")
    same = make_student.make_student(source, out)                       # nothing new in the course
    assert (out / "01_demo.ipynb").read_bytes() == saved and same.kept == []   # left as it is
    _course(tmp_path, body="x = 2  # the course was updated")
    update = make_student.make_student(source, out)
    assert "x = 2" in (out / "01_demo.ipynb").read_text() and update.kept == []
    assert not (out / "01_demo.new.ipynb").exists()
    # saved again, then edited: from then on it is the learner's, kept byte for byte
    _opened_and_saved(out / "01_demo.ipynb")
    mine = _learner_edits(out / "01_demo.ipynb")
    _course(tmp_path, body="x = 3")
    make_student.make_student(source, out)
    assert (out / "01_demo.ipynb").read_bytes() == mine and "x = 3" in (out / "01_demo.new.ipynb").read_text()


def test_a_check_cell_calls_a_check_and_a_message_naming_one_is_not_a_call():
    """07's plug-in cell names check_multi_head(MyMultiHeadAttention) in its message: not a check cell."""
    assert make_student.calls_check("check_attention(my_attention)")
    assert make_student.calls_check("from attnviz import check\ncheck.check_multi_head(A)")
    assert make_student.calls_check("%time check_causal_mask(f)")          # IPython syntax: read as text
    assert not make_student.calls_check('assert gap < 1, f"run check_multi_head(MyMultiHeadAttention)"')
    assert not make_student.calls_check("# check_attention(my_attention) after you run the cell above")


def test_each_hint_line_sits_right_above_its_solution():
    """make_nbgrader reads a block's hint only from the line right above ``### BEGIN SOLUTION``; a hint
    line anywhere else leaves the nbgrader release's stub without its hint (a comment put between
    them once did, and only make test's nbgrader run, minutes in, said so)."""
    misplaced = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            lines = "".join(cell["source"]).split("\n")
            for at, line in enumerate(lines):
                below = lines[at + 1] if at + 1 < len(lines) else ""
                if make_student.HINT.match(line) and not make_student.BEGIN.match(below):
                    misplaced.append(f"{path.name} {cell.get('id')}: {line.strip()}")
    assert not misplaced, misplaced
