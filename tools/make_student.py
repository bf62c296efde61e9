"""Write the student edition of the course: solutions replaced by stubs; each keeps its one # hint: line.

    python tools/make_student.py [SOURCE_DIR] [OUT_DIR]      # defaults: notebooks/ -> student/

Copies SOURCE_DIR to OUT_DIR (OUT_DIR is emptied first). In every notebook,
each code cell tagged ``solution`` has each block

        # hint: scores, scale, mask, softmax, weights @ v
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

replaced by ``raise NotImplementedError("write your code here")`` at the
indentation of the BEGIN line. The ``# hint:`` line just above stays and is the
one place the hint is given (the stub does not repeat it, and the checker's
"not yet implemented" verdict points at the cell rather than restating it). Everything else is unchanged;
outputs and execution counts are stripped. Solution markers in a cell that is
not tagged ``solution``, or unbalanced markers, are an error: the student
edition must never leak a solution.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
HINT = re.compile(r"^\s*# hint:\s*(.*?)\s*$", re.IGNORECASE)  # tools/make_nbgrader.py reads it
DEFAULT_HINT = "write your code here"
TAG = "solution"


class StudentEditionError(ValueError):
    pass


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def stub_source(source: str, where: str = "cell") -> str:
    """``source`` with every BEGIN..END SOLUTION block replaced by a raising stub."""
    lines = source.split("\n")
    out, inside = [], False
    for number, line in enumerate(lines, start=1):
        begin, end = BEGIN.match(line), END.match(line)
        if inside:
            if begin:
                raise StudentEditionError(f"{where}, line {number}: BEGIN SOLUTION inside another block.")
            if end:
                inside = False
            continue
        if end:
            raise StudentEditionError(f"{where}, line {number}: END SOLUTION without a BEGIN.")
        if begin:
            out.append(f"{begin.group(1)}raise NotImplementedError({json.dumps(DEFAULT_HINT)})")
            inside = True
            continue
        out.append(line)
    if inside:
        raise StudentEditionError(f"{where}: BEGIN SOLUTION without an END.")
    return "\n".join(out)


def student_notebook(nb: dict, name: str = "notebook") -> dict:
    """A copy of the notebook (as JSON) with solutions stubbed and outputs stripped."""
    nb = json.loads(json.dumps(nb))
    for index, cell in enumerate(nb.get("cells", [])):
        source = _source(cell)
        where = f"{name}, cell {index}"
        has_markers = any(BEGIN.match(line) or END.match(line) for line in source.split("\n"))
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code":
            if has_markers and TAG not in tags:
                raise StudentEditionError(f"{where} has SOLUTION markers but is not tagged '{TAG}'.")
            if TAG in tags:
                cell["source"] = stub_source(source, where)
            cell["outputs"] = []
            cell["execution_count"] = None
        elif has_markers:
            raise StudentEditionError(f"{where} is a {cell.get('cell_type')} cell with SOLUTION markers.")
    nb.get("metadata", {}).pop("widgets", None)
    return nb


def checked_folders(source_dir, out_dir) -> tuple[Path, Path]:
    """Both folders resolved; an error if the source is missing or the output would touch it."""
    source_dir, out_dir = Path(source_dir).resolve(), Path(out_dir).resolve()
    if not source_dir.is_dir():
        raise StudentEditionError(f"{source_dir} is not a folder.")
    if out_dir == source_dir or out_dir in source_dir.parents or source_dir in out_dir.parents:
        raise StudentEditionError(f"refusing to write into {out_dir}: it holds, or sits inside, the "
                                  f"teacher's edition {source_dir}.")
    return source_dir, out_dir


def make_student(source_dir, out_dir) -> list[Path]:
    """Write the student edition of ``source_dir`` into ``out_dir``; returns the notebooks written."""
    source_dir, out_dir = checked_folders(source_dir, out_dir)
    # Build everything in memory first, so a bad notebook leaves the old edition untouched.
    editions = {}
    for path in sorted(source_dir.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(source_dir)
        editions[rel] = student_notebook(json.loads(path.read_text(encoding="utf-8")), str(rel))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(source_dir, out_dir,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.ipynb"))
    written = []
    for rel, nb in editions.items():
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written.append(target)
    return written


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parent.parent
    source = Path(argv[0]) if argv else root / "notebooks"
    out = Path(argv[1]) if len(argv) > 1 else root / "student"
    try:
        written = make_student(source, out)
    except StudentEditionError as err:
        print(f"make_student: {err}", file=sys.stderr)
        return 1
    stubbed = sum(
        sum(bool(BEGIN.match(line)) for line in _source(cell).split("\n"))
        for path in sorted(Path(source).resolve().rglob("*.ipynb")) if ".ipynb_checkpoints" not in path.parts
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    )
    print(f"Student edition: {len(written)} notebooks in {out} "
          f"({stubbed} solution blocks replaced by stubs).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
