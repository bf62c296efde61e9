"""Write an nbgrader course folder from the course's notebooks.

    python tools/make_nbgrader.py [SOURCE_DIR] [OUT_DIR]    # defaults: notebooks/ -> nbgrader_course/

Every notebook with an exercise (a code cell tagged ``solution``) becomes one assignment:
``OUT_DIR/source/<NN_name>/<NN_name>.ipynb``, next to ``OUT_DIR/nbgrader_config.py``. In it

* each solution cell is an nbgrader solution cell. Its ``# hint: ...`` line (the one just above
  ``### BEGIN SOLUTION``) becomes ``hint = "..."``, and the config sets nbgrader's code stub to
  ``raise NotImplementedError(hint)``: the released stub keeps the exercise's own hint, and the
  check cell's "not written yet" verdict shows it, as in the learner's edition;
* each exercise gets an autograded test cell "it runs and returns the right shape" (1 point) when
  ``RUNS`` knows its name, and its check cell becomes an autograded test cell (2 points) that shows
  the verdict, then asserts it passed: a checker that finds a mistake fails the cell;
* every other cell, markdown or code, is a read-only (locked) nbgrader cell;
* a locked cell before the first code cell turns the checkers' fix lines off
  (``attnviz.check.show_fixes(False)``): in a graded exercise the fix would be the answer. The
  verdicts still name the bug, what is wrong and how it showed, in the student's kernel and in
  nbgrader's feedback.

The markers are validated exactly as for the student edition (``make_student.student_notebook``):
unbalanced markers, or markers outside a cell tagged ``solution``, are an error. Notebooks without
an exercise are not assignments (there is nothing to grade); hand them out as they are.
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_student  # noqa: E402
from make_student import (  # noqa: E402
    BEGIN,
    DEFAULT_HINT,
    HINT,
    TAG,
    StudentEditionError,
    _source,
    checked_folders,
)

CODE_STUB = "raise NotImplementedError(hint)"
CHECK_POINTS = 2
RUNS_POINTS = 1

CONFIG = f'''\
# nbgrader's configuration for this course folder (written by tools/make_nbgrader.py).
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "attention-from-first-principles"
# Each solution cell sets `hint = "..."` just above its solution: the released stub raises with it.
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
# Autograding runs every cell of a notebook. The slowest cells of the assignments (04's leak
# experiment, 08's corrupted copies) take 2-3 s of CPU: 60 s leaves room for a busy machine, and a
# learner's loop that never ends costs 60 s of grading per cell that calls it, not 300.
c.Execute.timeout = 60
'''

GRADED_MODE_ID = "graded-mode"   # not a lesson cell: the course has no such cell
GRADED_MODE = '''\
# A graded assignment: the checkers' verdicts say what is wrong and how it showed, not the line that fixes it
import attnviz.check

attnviz.check.show_fixes(False)'''

# A quick test per exercise, graded before the checker: it runs and returns the right shape.
# The inputs come from a private generator, so the notebook's own random numbers do not change.
RUNS = {
    "my_attention": '''\
import torch

# Test: my_attention runs on a batch and returns an output of shape (batch, n_q, d_v)
generator = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, n, d, generator=generator) for n, d in ((3, 4), (5, 4), (5, 6)))
result = my_attention(q, k, v)
output = result[0] if isinstance(result, (tuple, list)) else result
assert isinstance(output, torch.Tensor), f"my_attention returned a {type(output).__name__}, not a tensor"
assert tuple(output.shape) == (2, 3, 6), f"output shape {tuple(output.shape)}, expected (2, 3, 6)"''',
    "my_causal_mask": '''\
import torch

# Test: my_causal_mask(5) runs and returns a bool tensor of shape (5, 5)
mask = my_causal_mask(5)
assert isinstance(mask, torch.Tensor), f"my_causal_mask returned a {type(mask).__name__}, not a tensor"
assert mask.dtype == torch.bool and tuple(mask.shape) == (5, 5), (mask.dtype, tuple(mask.shape))''',
    "my_padding_mask": '''\
import torch

# Test: my_padding_mask([3, 5], 5) runs and returns a bool tensor of shape (batch, 1, n) = (2, 1, 5)
mask = my_padding_mask(torch.tensor([3, 5]), 5)
assert isinstance(mask, torch.Tensor), f"my_padding_mask returned a {type(mask).__name__}, not a tensor"
assert mask.dtype == torch.bool and tuple(mask.shape) == (2, 1, 5), (mask.dtype, tuple(mask.shape))''',
    "MyMultiHeadAttention": '''\
import torch

# Test: MyMultiHeadAttention(8, 2) maps x of shape (batch, n, d_model) = (2, 5, 8) to the same shape
generator = torch.Generator().manual_seed(0)
module = MyMultiHeadAttention(8, 2)
output = module(torch.randn(2, 5, 8, generator=generator))
assert isinstance(output, torch.Tensor), f"forward returned a {type(output).__name__}, not a tensor"
assert tuple(output.shape) == (2, 5, 8), f"output shape {tuple(output.shape)}, expected (2, 5, 8)"''',
    "decode_step": '''\
import torch

from attnviz.gpt import TinyGPT

# Test: decode_step(model, tokens, None) runs on a prefill of 3 tokens and returns
# (logits, cache) with logits of shape (batch, n_new, vocab) = (2, 3, 11)
with torch.random.fork_rng():  # the model's initial weights do not move the notebook's random numbers
    torch.manual_seed(0)
    model = TinyGPT(vocab_size=11, d_model=16, n_heads=4, n_layers=2, max_len=12).eval()
with torch.no_grad():
    result = decode_step(model, torch.tensor([[1, 2, 3], [4, 5, 6]]), None)
assert isinstance(result, (tuple, list)) and len(result) == 2, "decode_step must return (logits, cache)"
assert tuple(result[0].shape) == (2, 3, 11), f"logits shape {tuple(result[0].shape)}, expected (2, 3, 11)"''',
}


def runs_source(exercise: str) -> str:
    """RUNS' test for ``exercise``, first saying so if the name is not defined (a renamed function)."""
    lines = RUNS[exercise].split("\n")
    first = next(i for i, line in enumerate(lines)
                 if exercise in line and not line.lstrip().startswith(("#", "from", "import")))
    indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
    lines.insert(first, f'{indent}assert "{exercise}" in globals(), '
                        f'"{exercise} is not defined: keep the exercise\'s name, and run its cell"')
    return "\n".join(lines)


def _nbgrader(cell, grade_id, *, solution=False, points=None):
    """Mark ``cell`` as an nbgrader cell: solution, autograded test (``points``) or read-only."""
    meta = {"grade": points is not None, "grade_id": grade_id, "locked": not solution,
            "schema_version": 3, "solution": solution}
    if points is not None:
        meta["points"] = points
    cell.setdefault("metadata", {})["nbgrader"] = meta
    return cell


def _code_cell(source, cell_id):
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": {}, "outputs": [],
            "source": source.splitlines(keepends=True)}


def defined_name(source: str) -> str | None:
    """The first function or class a solution cell defines (its exercise's name)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            return node.name
    return None


def hint_source(source: str) -> str:
    """A solution cell's source with each block's ``# hint:`` line turned into ``hint = "..."``."""
    lines = source.split("\n")
    out = []
    for line in lines:
        begin = BEGIN.match(line)
        if begin:
            previous = HINT.match(out[-1]) if out else None
            hint = previous.group(1) if previous and previous.group(1) else DEFAULT_HINT
            if previous:
                out.pop()
            out.append(f"{begin.group(1)}hint = {json.dumps(hint, ensure_ascii=False)}")
        out.append(line)
    return "\n".join(out)


def check_calls(source: str) -> list[tuple[int, int, str, str | None]]:
    """Top-level ``check_x(arg)`` statements: (first line, last line, call text, argument name)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id.startswith("check_")):
            arg = call.args[0].id if call.args and isinstance(call.args[0], ast.Name) else None
            calls.append((node.lineno, node.end_lineno, ast.get_source_segment(source, node), arg))
    return calls


def graded_check_source(source: str) -> str:
    """The check cell with each ``check_x(...)`` shown, then asserted: a failed check fails the cell."""
    lines = source.split("\n")
    for first, last, call, _ in reversed(check_calls(source)):
        lines[first - 1:last] = [
            f"verdict = {call}",
            "display(verdict)",
            "assert verdict.passed, repr(verdict)   # graded: the points come only when the checker passes",
        ]
    return "\n".join(lines)


def nbgrader_notebook(nb: dict, name: str = "notebook") -> dict | None:
    """The nbgrader source version of a notebook (as JSON), or None when it has no exercise."""
    make_student.student_notebook(nb, name)          # validates the markers; raises on a leak
    for index, cell in enumerate(nb.get("cells", [])):
        if "BEGIN SOLUTION" in _source(cell) and TAG not in cell.get("metadata", {}).get("tags", []):
            # nbgrader matches the words anywhere in a line, not only the marker lines
            raise StudentEditionError(f"{name}, cell {index} mentions 'BEGIN SOLUTION' outside an exercise; "
                                      "nbgrader would treat it as a solution marker.")
    nb = json.loads(json.dumps(nb))
    cells, out, names, used, graded = nb.get("cells", []), [], {}, set(), set()
    if not any(TAG in c.get("metadata", {}).get("tags", []) for c in cells):
        return None

    def unique(grade_id):
        if grade_id in used:
            raise StudentEditionError(f"{name}: two nbgrader cells would share the id {grade_id!r}.")
        used.add(grade_id)
        return grade_id

    for index, cell in enumerate(cells):
        source = _source(cell)
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        if TAG in cell.get("metadata", {}).get("tags", []):
            exercise = defined_name(source) or f"exercise-{index:03d}"
            names[exercise] = index
            cell["source"] = hint_source(source).splitlines(keepends=True)
            out.append(_nbgrader(cell, unique(exercise), solution=True))
            continue
        calls = check_calls(source) if cell.get("cell_type") == "code" else []
        checked = [arg for *_, arg in calls if arg in names]
        if checked:
            graded.update(checked)
            for exercise in checked:
                if exercise in RUNS:
                    grade_id = unique(f"{exercise}-runs")
                    out.append(_nbgrader(_code_cell(runs_source(exercise), grade_id), grade_id,
                                         points=RUNS_POINTS))
            cell["source"] = graded_check_source(source).splitlines(keepends=True)
            out.append(_nbgrader(cell, unique(f"{'-'.join(checked)}-check"),
                                 points=CHECK_POINTS * len(checked)))
            continue
        out.append(_nbgrader(cell, unique(f"lesson-{index:03d}")))
    first_code = next(i for i, cell in enumerate(out) if cell.get("cell_type") == "code")
    out.insert(first_code, _nbgrader(_code_cell(GRADED_MODE, unique(GRADED_MODE_ID)), GRADED_MODE_ID))
    unchecked = sorted(set(names) - graded)
    if unchecked:
        raise StudentEditionError(f"{name}: no check cell calls a checker on {', '.join(unchecked)}, "
                                  "so nothing would grade it.")
    nb["cells"] = out
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def make_nbgrader(source_dir, out_dir) -> list[Path]:
    """Write the nbgrader course folder for ``source_dir`` into ``out_dir``; returns the notebooks."""
    source_dir, out_dir = checked_folders(source_dir, out_dir)
    assignments = {}
    for path in sorted(source_dir.glob("*.ipynb")):
        nb = nbgrader_notebook(json.loads(path.read_text(encoding="utf-8")), path.name)
        if nb is not None:
            assignments[path.stem] = nb
    source = out_dir / "source"
    if source.exists():
        shutil.rmtree(source)         # only the generated part: a gradebook and submissions stay
    written = []
    for assignment, nb in assignments.items():
        target = source / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written.append(target)
    (out_dir / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    return written


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parent.parent
    source = Path(argv[0]) if argv else root / "notebooks"
    out = Path(argv[1]) if len(argv) > 1 else root / "nbgrader_course"
    try:
        written = make_nbgrader(source, out)
    except StudentEditionError as err:
        print(f"make_nbgrader: {err}", file=sys.stderr)
        return 1
    print(f"nbgrader course folder {out}: {len(written)} assignments "
          f"({', '.join(p.parent.name for p in written)}).")
    print(f"Next: cd {out} && nbgrader generate_assignment <assignment> (writes release/<assignment>/).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
