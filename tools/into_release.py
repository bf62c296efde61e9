"""Put a learner's answers from a notebook of the learner's edition into the nbgrader release.

    python tools/into_release.py RELEASE HANDIN [HANDIN ...]

    cd nbgrader_course
    python ../tools/into_release.py release/04_masking/04_masking.ipynb \\
        $(grep -L grade_id submitted/*/04_masking/04_masking.ipynb)

A learner who hands in their copy from `student/` (the learner's edition, `make lab`) instead of the
release hands in a notebook without nbgrader's metadata, which `nbgrader autograde` scores 0 without
a word (and `nbgrader validate` calls a success). This tool rewrites each such hand-in as the release
with the learner's code in it: each exercise cell of the release (an nbgrader solution cell) takes
the source of the hand-in's cell with the same cell id, or else of the hand-in's code cell that
defines the exercise's function or class; cells the learner added are carried over in their place;
the learner's edition's collapsed solutions (cells tagged ``solution-shown``) are not. The hand-in
as it was is kept beside it, as ``<name>.ipynb.handed-in``. A hand-in that already carries nbgrader
metadata is left alone. Then `nbgrader autograde` grades it as any other (`--force --student ID` to
grade one again).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_nbgrader import defined_name  # noqa: E402
from make_student import SHOWN_TAG, _source  # noqa: E402


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_release(nb: dict) -> bool:
    """Whether a notebook carries nbgrader's metadata (a release, or a source notebook)."""
    return any(_grade_id(cell) for cell in nb.get("cells", []))


def into_release(release: dict, handin: dict) -> tuple[dict, list[str]]:
    """The release with the hand-in's answers and added cells; and what was done, line by line."""
    known = {cell.get("id") for cell in release["cells"]}
    theirs = {cell.get("id"): cell for cell in handin["cells"]}
    by_name = {defined_name(_source(cell)): cell for cell in handin["cells"] if cell["cell_type"] == "code"}
    added: dict[str | None, list[dict]] = {}       # release cell id -> the learner's cells after it
    previous = None
    for cell in handin["cells"]:
        if cell.get("id") in known:
            previous = cell.get("id")
        elif SHOWN_TAG not in cell.get("metadata", {}).get("tags", []):
            added.setdefault(previous, []).append(cell)
    extra = sum(len(cells) for cells in added.values())
    out, said = added.get(None, []), []          # cells added above the first cell of the lesson
    for cell in release["cells"]:
        cell = json.loads(json.dumps(cell))
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            name = defined_name(_source(cell)) or meta["grade_id"]
            answer = theirs.get(cell.get("id")) or by_name.get(name)
            if answer is None:
                said.append(f"no answer found for {name}: its stub stays")
            else:
                cell["source"] = answer["source"]
                said.append(f"{name}: the learner's code")
        out.append(cell)
        out += added.get(cell.get("id"), [])
    if extra:
        said.append(f"{extra} cell{'s' if extra != 1 else ''} the learner added, carried over")
    return {**release, "cells": out}, said


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if len(args) == 1:              # `grep -L grade_id ...` found no stray hand-in: nothing to do
        print("no hand-in given: nothing to convert (every hand-in already carries nbgrader's metadata?)")
        return 0
    release_path, handins = Path(args[0]), [Path(arg) for arg in args[1:]]
    release = json.loads(release_path.read_text(encoding="utf-8"))
    if not is_release(release):
        print(f"{release_path} has no nbgrader metadata: give the release "
              f"(release/<assignment>/<assignment>.ipynb) first", file=sys.stderr)
        return 2
    for path in handins:
        handin = json.loads(path.read_text(encoding="utf-8"))
        if is_release(handin):
            print(f"{path}: already carries nbgrader's metadata, left as it is")
            continue
        nb, said = into_release(release, handin)
        kept = path.with_name(path.name + ".handed-in")
        kept.write_bytes(path.read_bytes())
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path}: rewritten as the release ({'; '.join(said)}); the hand-in kept as {kept.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
