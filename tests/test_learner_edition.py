"""The learner's edition, as a learner opens it: it runs, it shows no solution, it answers in words.

* Every notebook of the learner's edition runs top to bottom in a fresh kernel with no exercise
  attempted and no error, every check cell answers "not written yet" (not a traceback), and every
  number an answer to a Check-yourself question quotes is one the notebook printed (or a threshold
  its asserts use), so the answers cannot drift from the cells: tests/test_binder.py runs the
  edition once, in the Binder environment, and asks that of each notebook (tests/_edition.py).
* No cell a learner sees without clicking holds a solution: the stub cells hold none of the
  teacher's solution lines, and no visible cell holds half or more of any one solution's lines
  (a visible cell is a code cell, or a markdown cell outside its collapsed ``<details>`` blocks).
* Every exercise has its solution collapsed right after its check; every Check-yourself question
  has exactly one collapsed answer; 00 names the notebooks that have exercises; docs/answers.md,
  the printable answer key, is up to date.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _edition import DETAILS, check_yourself
from _edition import is_solution as _is_solution
from _edition import text as _text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import answer_key  # noqa: E402
import make_student  # noqa: E402

TEACHER = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _cells(nb: dict) -> list[dict]:
    return nb["cells"]


def _learner(path: Path) -> dict:
    return make_student.student_notebook(json.loads(path.read_text(encoding="utf-8")), path.name)


def solution_lines(nb: dict) -> list[list[str]]:
    """Each solution block's lines that carry code (stripped; no blanks, comments or markers)."""
    blocks = []
    for cell in _cells(nb):
        if not _is_solution(cell):
            continue
        inside = False
        for line in _text(cell).split("\n"):
            if make_student.BEGIN.match(line):
                inside, block = True, []
            elif make_student.END.match(line):
                inside = False
                blocks.append(block)
            elif inside and line.strip() and not line.strip().startswith("#"):
                block.append(line.strip())
    return blocks


def visible_cells(nb: dict) -> list[str]:
    """What a learner sees without clicking: code cells, and markdown with <details> removed."""
    return [DETAILS.sub("", _text(c)) if c["cell_type"] == "markdown" else _text(c) for c in _cells(nb)]


EXERCISES = [p for p in TEACHER if solution_lines(json.loads(p.read_text()))]


# ---- no kernel needed ------------------------------------------------------------------------

@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.stem)
def test_no_visible_cell_holds_a_solution(path):
    teacher = json.loads(path.read_text())
    learner = _learner(path)
    for block in solution_lines(teacher):
        for index, seen in enumerate(visible_cells(learner)):
            lines = {line.strip() for line in seen.split("\n")}
            shown = [line for line in block if line in lines]
            assert len(shown) < len(block) / 2, (
                f"{path.name}, learner's cell {index} shows {len(shown)} of the {len(block)} lines of a "
                f"solution:\n" + "\n".join(shown))
    stubs = [_text(c) for c in _cells(learner) if _is_solution(c)]
    for block in solution_lines(teacher):
        for line in block:
            assert not any(line in stub.split("\n") for stub in stubs), f"{path.name}: {line!r} in a stub"


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.stem)
def test_every_exercise_has_its_solution_collapsed_after_its_check(path):
    cells = _cells(_learner(path))
    stubs = [i for i, c in enumerate(cells) if _is_solution(c)]
    shown = [i for i, c in enumerate(cells) if "solution-shown" in c["metadata"].get("tags", [])]
    assert len(stubs) == len(shown) >= 1
    for stub, solution in zip(stubs, shown, strict=True):
        check = cells[solution - 1]
        assert check["cell_type"] == "code" and make_student.calls_check(_text(check)), path.name
        assert stub < solution - 1
        text = _text(cells[solution])
        assert text.startswith("<details><summary>") and text.rstrip().endswith("</details>")


def questions(text: str) -> list[str]:
    """The numbered questions of a Check-yourself cell, each with what follows it."""
    body = text.split("### Exercise")[0]
    return re.split(r"\n(?=\d+\. )", body)[1:]


@pytest.mark.parametrize("path", TEACHER[1:], ids=lambda p: p.stem)
def test_every_check_yourself_question_has_one_collapsed_answer(path):
    found = questions(check_yourself(json.loads(path.read_text())))
    assert len(found) >= 3, path.name
    for number, question in enumerate(found, start=1):
        assert question.startswith(f"{number}. "), question[:60]
        assert question.count("<details><summary>Answer</summary>") == 1, f"{path.name} question {number}"
        assert question.count("</details>") == 1, f"{path.name} question {number}"
        answer = question.split("<summary>Answer</summary>", 1)[1].split("</details>", 1)[0]
        assert len(answer.split()) >= 12, f"{path.name} question {number}: a one-line answer is no answer"


def test_00_names_the_notebooks_with_exercises():
    start = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    text = "\n".join(_text(c) for c in _cells(start))
    numbers = [p.name[:2] for p in EXERCISES]
    listed = ", ".join(numbers[:-1]) + " and " + numbers[-1]
    assert f"Notebooks {listed} have exercises" in text, listed
    for words in ("student/", "not written yet", "Show one solution", "Answer", "notebooks/",
                  "python3 tools/make_student.py", ".new.ipynb"):
        assert words in text, words


def test_the_printable_answer_key_is_up_to_date():
    assert (ROOT / "docs" / "answers.md").read_text(encoding="utf-8") == answer_key.answer_key(TEACHER), (
        "docs/answers.md is out of date: run python tools/answer_key.py > docs/answers.md")


def test_the_answer_key_tool_runs():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "answer_key.py")], capture_output=True,
                          text=True, check=True)
    assert done.stdout.startswith("# Check yourself: the answers")
