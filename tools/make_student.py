"""Write the learner's edition of the course: exercises as stubs, one solution each behind a click.

    python tools/make_student.py [SOURCE_DIR] [OUT_DIR]      # defaults: notebooks/ -> student/

``SOURCE_DIR`` is the teacher's edition (the source of the course). In each of its notebooks, every
code cell tagged ``solution`` has each block

        # hint: scores, scale, mask, softmax, weights @ v
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

replaced by ``raise NotImplementedError("write your code here")`` at the indentation of the BEGIN
line; the ``# hint:`` line above it stays, the one place the hint is given. Right after the
exercise's check cell (the next code cell that calls a ``check_`` function) comes a markdown cell
with the teacher's solution inside a collapsed ``<details>`` block: one deliberate click away.
Everything else is unchanged; outputs and execution counts are stripped. Each notebook's
``language_info`` is what the kernel of the Python running this tool reports (JupyterLab writes the
kernel's into a notebook it opens and marks it modified when they differ: a notebook only opened
would ask "save your changes?" on closing). Solution markers in a cell
that is not tagged ``solution``, unbalanced markers, or an exercise with no check cell after it are
errors: the learner's edition must never leak a solution or leave an exercise unchecked.

**Nothing a learner writes is lost.** ``OUT_DIR/.edition.json`` records a hash of every file this
tool wrote, and of what a learner writes in each notebook (its cells' types and sources). On a
rebuild, a file still as it was written is brought up to date, and so is a notebook only opened, run
or saved (its outputs and metadata changed, not a cell's source: running it again gives the outputs
back); a file the learner changed (a cell edited, added or deleted) is kept byte for byte, and if the
course's version of it changed meanwhile, the new version is written beside it as ``NAME.new.ipynb``
(also kept once the learner edits it). Files the tool never wrote are left alone; nothing is
deleted. A notebook that is missing is written afresh: to get a fresh copy of one exercise, rename
your notebook and rebuild.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
HINT = re.compile(r"^\s*# hint:\s*(.*?)\s*$", re.IGNORECASE)  # tools/make_nbgrader.py reads it
DEFAULT_HINT = "write your code here"
TAG = "solution"
SHOWN_TAG = "solution-shown"   # the collapsed solution under a check (tools/into_release.py skips it)
CHECK_CALL = re.compile(r"\bcheck_\w+\s*\(")     # the fallback of calls_check, for a cell Python cannot parse
MANIFEST = ".edition.json"
SOLUTION_SUMMARY = "Show one solution (try yours first: the check above names the mistake it finds)"


class StudentEditionError(ValueError):
    pass


def kernel_language_info() -> dict | None:
    """The language_info the Python kernel (ipykernel) of this interpreter reports, or None without
    ipykernel. make lab and Binder's postBuild run this tool with the course's own Python."""
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:
        return None
    return json.loads(json.dumps(IPythonKernel.language_info))


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _has_markers(source: str) -> bool:
    return any(BEGIN.match(line) or END.match(line) for line in source.split("\n"))


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


def solution_text(source: str) -> str:
    """The teacher's cell as a learner should read it: no SOLUTION markers, no hint lines."""
    kept = [line for line in source.split("\n")
            if not (BEGIN.match(line) or END.match(line) or HINT.match(line))]
    return "\n".join(kept).strip("\n")


def solution_cell(source: str, cell_id: str) -> dict:
    """A markdown cell holding ``source``'s solution, collapsed."""
    fence = "````" if "```" in source else "```"
    text = (f"<details><summary>{SOLUTION_SUMMARY}</summary>\n\n{fence}python\n{solution_text(source)}\n"
            f"{fence}\n\n</details>")
    return {"cell_type": "markdown", "id": cell_id, "metadata": {"tags": [SHOWN_TAG]},
            "source": text}


def calls_check(source: str) -> bool:
    """Whether a code cell calls a check_ function (``check_attention(my_attention)``); a call's name
    in a string (a message that says which check to run) is not a call."""
    try:
        tree = ast.parse(source)
    except SyntaxError:                  # IPython syntax (a magic, a shell line): read the text
        return bool(CHECK_CALL.search(source))
    names = (getattr(node.func, "id", None) or getattr(node.func, "attr", "")
             for node in ast.walk(tree) if isinstance(node, ast.Call))
    return any(name.startswith("check_") for name in names)


def _check_cell_after(cells, index: int) -> int | None:
    """Index of the first code cell after ``index`` that calls a check_ function."""
    for later in range(index + 1, len(cells)):
        cell = cells[later]
        if cell.get("cell_type") == "code" and TAG not in cell.get("metadata", {}).get("tags", []) \
                and calls_check(_source(cell)):
            return later
    return None


def student_notebook(nb: dict, name: str = "notebook", language_info: bool = True) -> dict:
    """A copy of the notebook (as JSON): solutions stubbed, each shown collapsed after its check;
    ``language_info=False`` leaves the notebook's own (asking the kernel costs an ipykernel import,
    seconds, which tools/cell_map.py, reading cells only, does without)."""
    nb = json.loads(json.dumps(nb))
    cells = nb.get("cells", [])
    after_check: dict[int, list[dict]] = {}
    for index, cell in enumerate(cells):
        source = _source(cell)
        where = f"{name}, cell {index}"
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code":
            if _has_markers(source) and TAG not in tags:
                raise StudentEditionError(f"{where} has SOLUTION markers but is not tagged '{TAG}'.")
            if TAG in tags:
                cell["source"] = stub_source(source, where)
                check = _check_cell_after(cells, index)
                if check is None:
                    raise StudentEditionError(f"{where} is an exercise with no check cell after it "
                                              f"(a code cell calling check_...).")
                cell_id = f"{cell.get('id', f'cell-{index:03d}')}-solution"
                after_check.setdefault(check, []).append(solution_cell(source, cell_id))
            cell["outputs"] = []
            cell["execution_count"] = None
        elif _has_markers(source):
            raise StudentEditionError(f"{where} is a {cell.get('cell_type')} cell with SOLUTION markers.")
    nb["cells"] = [new for index, cell in enumerate(cells) for new in [cell] + after_check.get(index, [])]
    nb.get("metadata", {}).pop("widgets", None)
    language = kernel_language_info() if language_info else None
    if language and nb.get("metadata", {}).get("language_info", {}).get("name", "python") == "python":
        nb.setdefault("metadata", {})["language_info"] = language
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


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _written(data: bytes) -> str | None:
    """A digest of what a learner writes in a notebook: each cell's type and source (none of its
    outputs, execution counts or metadata, which running and saving change), or None for a file that
    is not a readable notebook."""
    try:
        cells = json.loads(data)["cells"]
        text = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
                for c in cells]
    except (ValueError, KeyError, TypeError):
        return None
    return _digest(json.dumps(text).encode("utf-8"))


def _notebook_bytes(nb: dict) -> bytes:
    return (json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def beside(rel: Path) -> Path:
    """Where a new version goes when the learner changed theirs: ``02_x.ipynb`` -> ``02_x.new.ipynb``."""
    return rel.with_name(f"{rel.stem}.new{rel.suffix}")


@dataclass
class Rebuild:
    """What one build did, file by file (paths relative to the learner's edition)."""

    written: list[Path] = field(default_factory=list)     # new, or brought up to date
    unchanged: list[Path] = field(default_factory=list)   # already the current version
    kept: list[Path] = field(default_factory=list)        # changed by the learner: left as they are
    new_beside: list[Path] = field(default_factory=list)  # the course's newer version, beside a kept one

    def summary(self, out_dir) -> str:
        lines = [f"Learner's edition in {out_dir}: {len(self.written)} written, "
                 f"{len(self.unchanged)} already up to date, {len(self.kept)} kept as you changed them."]
        updated = set(self.new_beside)
        for path in self.kept:
            if beside(path) in updated:
                lines.append(f"  kept your {path}; the course's newer version is beside it: {beside(path)}")
            else:
                lines.append(f"  kept your {path} (the course's version of it has not changed)")
        return "\n".join(lines)


def _editions(source_dir: Path) -> dict[Path, bytes]:
    """Every file of the learner's edition, as bytes, built in memory first (a bad notebook stops the
    build before anything is written)."""
    files = {}
    for path in sorted(source_dir.rglob("*")):
        rel = path.relative_to(source_dir)
        if path.is_dir() or {".ipynb_checkpoints", "__pycache__"} & set(rel.parts):
            continue
        if path.suffix == ".ipynb":
            files[rel] = _notebook_bytes(student_notebook(json.loads(path.read_text(encoding="utf-8")),
                                                          str(rel)))
        else:
            files[rel] = path.read_bytes()
    return files


def make_student(source_dir, out_dir) -> Rebuild:
    """Write (or bring up to date) the learner's edition of ``source_dir`` in ``out_dir``.

    Never overwrites a file the learner changed; see the module docstring."""
    source_dir, out_dir = checked_folders(source_dir, out_dir)
    files = _editions(source_dir)
    manifest_path = out_dir / MANIFEST
    try:
        record = json.loads(manifest_path.read_text(encoding="utf-8"))
        generated, typed = record["generated"], record.get("cells", {})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        generated, typed = {}, {}
    done = Rebuild()
    for rel, data in files.items():
        target, digest = out_dir / rel, _digest(data)
        notebook = rel.suffix == ".ipynb"
        if not target.exists():
            action = "write"
        else:
            held = target.read_bytes()
            current, written = _digest(held), _written(held) if notebook else None
            untyped = written is not None and written == typed.get(str(rel))
            if current == digest or (written is not None and written == _written(data)):
                action = "unchanged"        # the same, or only opened, run or saved: left as it is
            elif current == generated.get(str(rel)) or untyped:
                action = "write"            # nothing typed since this tool wrote it: bring it up to date
            else:
                action = "keep"             # the learner's work
        if action == "unchanged":
            done.unchanged.append(rel)
            generated[str(rel)] = digest
            if notebook:
                typed[str(rel)] = _written(data)
            continue
        if action == "keep":
            done.kept.append(rel)
            if digest == generated.get(str(rel)):
                continue                    # the course's version has not changed since
            rel_beside = beside(rel)
            target_beside = out_dir / rel_beside
            if target_beside.exists() and _digest(target_beside.read_bytes()) not in (
                    digest, generated.get(str(rel_beside))):
                continue                    # the learner works in the .new file too: keep it as well
            rel, target = rel_beside, target_beside
            done.new_beside.append(rel)
        else:
            done.written.append(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        generated[str(rel)] = digest
        if notebook:
            typed[str(rel)] = _written(data)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps({"generated": generated, "cells": typed, "source": str(source_dir)},
                                        indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return done


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parent.parent
    source = Path(argv[0]) if argv else root / "notebooks"
    out = Path(argv[1]) if len(argv) > 1 else root / "student"
    try:
        done = make_student(source, out)
    except StudentEditionError as err:
        print(f"make_student: {err}", file=sys.stderr)
        return 1
    print(done.summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
