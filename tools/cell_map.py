"""Where each cell a lesson plan names sits: its section and the words to search for in JupyterLab.

    python tools/cell_map.py            # rewrite the "Finding the cells" part of every lesson page
    python tools/cell_map.py --check    # exit 1 if a page's part is not what this would write

JupyterLab never shows a cell's id, and the plans in docs/lessons/ steer by ids (`cell-021`). For
each id a plan's minute table names, in the order it names them, this writes one row: the notebook,
the section heading the cell sits under, and the cell's first line of code (or the first words of a
text cell; for an exercise's stub, its hint) that JupyterLab's Find (Ctrl+F) finds in that cell alone,
in the learner's edition (which a class sees: a stub's solution there is a cell of its own, and Find
must not land on it) and in the teacher's. The part sits between two HTML comments at the end of
each page; `make docs` rewrites it and tests/test_teaching_kit.py checks it is up to date.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

from make_student import student_notebook

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "docs" / "lessons").glob("lesson*_*.md"))
NOTEBOOKS = {path.name[:2]: path for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
START = "<!-- cells: written by tools/cell_map.py (make docs); do not edit by hand -->"
END = "<!-- end of cells -->"
ROW = re.compile(r"^\| [^|]+ \| ([^|]+) \|")          # a minute row: its "project" column
NOTEBOOK = re.compile(r"^\s*(\d\d)\b")                 # "04 §1: ..." -> 04
CELL = re.compile(r"`(cell-[\w-]+)`")


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _lines(cell) -> list:
    """A cell's lines to search by: a code cell's without comments (inline ones cut off), then its
    whole-line comments without the # (an exercise's stub has no line of its own but its hint); a
    text cell's with headings' # removed; blank lines left out."""
    lines, comments = [], []
    for line in _text(cell).splitlines():
        if cell["cell_type"] == "code" and line.lstrip().startswith("#"):
            comments.append(line.strip().lstrip("#").strip())
            continue
        if cell["cell_type"] == "code":
            line = line.split("  #")[0]
        line = line.strip().lstrip("#").strip()
        if line:
            lines.append(line)
    return lines + [line for line in comments if line]


FOLDED = "(its code is folded, and Find would unfold it: go there by the Table of Contents)"


def _words(line: str) -> str:
    """The line, or its start cut at a word's end and marked "...", for a line over 60 characters."""
    if len(line) <= 60:
        return line
    cut = line[:57]
    return (cut[:cut.rfind(" ")] if " " in cut[10:] else cut).rstrip() + "..."


@functools.cache
def learners_cells(path: Path) -> list:
    """The cells of a notebook's learner's edition, the one a class sees projected: each exercise a
    stub, and its solution in a collapsed cell of its own after the check (tools/make_student.py)."""
    return student_notebook(json.loads(path.read_text()), path.name, language_info=False)["cells"]


def cell_places(path: Path) -> dict:
    """``{cell id: (section heading, words)}`` for every cell of a notebook's learner's edition: the last
    heading (## or ###) at or above it, and its first line (or the line's start, before a backtick)
    whose words no other cell holds anywhere, case aside, as Find matches a cell's source (so Find
    never lands on a stub's collapsed solution, which repeats the stub's def); else its first line no
    other cell holds whole, else its first."""
    cells = learners_cells(path)
    teachers = {cell.get("id"): _text(cell).lower() for cell in json.loads(path.read_text())["cells"]}
    seen = {}
    for cell in cells:
        for line in set(_lines(cell)):
            seen[line] = seen.get(line, 0) + 1
    texts = [_text(cell).lower() for cell in cells]

    def found_elsewhere(line, index):
        """Whether Find would land anywhere but this cell, in the learner's edition or the teacher's."""
        words = _words(line).removesuffix("...").lower()
        own = cells[index].get("id")
        return (any(words in text for other, text in enumerate(texts) if other != index)
                or words not in teachers.get(own, "")
                or any(words in text for cell_id, text in teachers.items() if cell_id != own))

    places, section = {}, "top"
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            # the cell's last heading: a "## Check yourself" cell may end with "### Exercises", which
            # the Table of Contents lists last, right above the cells that follow
            heading = next((line.lstrip("#").strip() for line in reversed(_text(cell).splitlines())
                            if line.startswith(("## ", "### "))), None)
            section = heading or section
        lines = _lines(cell)
        own = [line for line in lines if seen[line] == 1]
        # words to type as they are: no backtick (the map prints them in a code span) and no pipe
        typed = [cut for line in own for cut in (line, re.split(r"[`|]", line)[0].rstrip())
                 if len(cut) >= 10 and not re.search(r"[`|]", cut)]
        alone = next((line for line in typed if not found_elsewhere(line, index)), None)   # the first
        folded = cell.get("metadata", {}).get("jupyter", {}).get("source_hidden", False)
        places[cell.get("id")] = (section, FOLDED if folded else _words(alone or (own or lines or [""])[0]))
    return places


def plan_cells(page: Path) -> list:
    """``(notebook number, cell id)`` for each id the minute table names, in order, each once. A row
    belongs to the notebook its "project" column starts with, or else to the row before's."""
    found, current = [], None
    for line in page.read_text().split(START)[0].splitlines():
        row = ROW.match(line)
        if not row:
            continue
        number = NOTEBOOK.match(row.group(1))
        current = number.group(1) if number else current
        for cell_id in CELL.findall(line):
            if current and (current, cell_id) not in found:
                found.append((current, cell_id))
    return found


def cells_part(page: Path) -> str:
    rows = ["| cell | notebook | section | search for (Ctrl+F) |", "|---|---|---|---|"]
    cache = {}
    for number, cell_id in plan_cells(page):
        places = cache.setdefault(number, cell_places(NOTEBOOKS[number]))
        section, words = places.get(cell_id, ("(not in the notebook)", ""))
        words = words.replace("|", "\\|").replace("`", "'")
        shown = words if words == FOLDED else f"`{words}`"
        rows.append(f"| `{cell_id}` | {NOTEBOOKS[number].stem} | {section} | {shown} |")
    return "\n".join([
        START,
        "## Finding the cells",
        "",
        "JupyterLab shows no cell ids. Each id above, in the plan's order: the section it sits under (the "
        "Table of Contents, *View → Table of Contents*, jumps there) and a line of it that *Edit → Find* "
        "(Ctrl+F) finds in that cell alone, in the learner's edition and the teacher's (for an exercise, "
        "its hint: the stub's def is also in the collapsed solution). Type the words before a \"...\", which "
        "marks a line cut short. Find opens a text cell as its markdown source: Shift+Enter shows it "
        "rendered again, or go there by the Table of Contents (at 150% close it again, Ctrl+B, or "
        "every printed line wraps).",
        "",
        *rows,
        END,
    ])


def rewritten(page: Path) -> str:
    text = page.read_text()
    body = text.split(START)[0].rstrip("\n")
    return f"{body}\n\n{cells_part(page)}\n"


def main(argv: list[str]) -> int:
    stale = []
    for page in LESSONS:
        new = rewritten(page)
        if new != page.read_text():
            stale.append(page.name)
            if "--check" not in argv:
                page.write_text(new)
    if "--check" in argv and stale:
        print(f"not up to date (run make docs): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
