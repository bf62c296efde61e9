"""What a run of the learner's edition must show, read from the executed notebook.

tests/test_binder.py runs every notebook of the learner's edition once, in the Binder environment,
and asks these questions of each executed notebook; tests/test_learner_edition.py uses the same
readers for the questions that need no kernel.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_student  # noqa: E402

DETAILS = re.compile(r"<details>.*?</details>", re.S)
NUMBER = re.compile(r"(?<![\w.≈=])(?<!≈ )(?<!= )\d+\.\d+(?:e[-+]?\d+)?(?!\w|\.\d)")


def text(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def is_solution(cell: dict) -> bool:
    return "solution" in cell.get("metadata", {}).get("tags", [])


def check_yourself(nb: dict) -> str:
    found = [text(c) for c in nb["cells"] if c["cell_type"] == "markdown"
             and text(c).startswith("## Check yourself")]
    assert len(found) == 1
    return found[0]


def outputs_text(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append("".join(output.get("text", "")))
        for kind in ("text/plain", "text/html"):
            parts.append("".join(output.get("data", {}).get(kind, "")))
    return "\n".join(parts)


def unattempted_run_problems(nb: dict, name: str) -> list[str]:
    """An executed learner's notebook with no exercise attempted: no cell shows an error, every check
    cell says "not written yet" (no traceback), and every number an answer quotes was printed (or is
    in the notebook's code, as an assert's threshold)."""
    problems = [f"{name}: cell {i} shows {o.get('ename')}: {o.get('evalue')}"
                for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
                for o in c.get("outputs", []) if o.get("output_type") == "error"]
    for index, cell in enumerate(nb["cells"]):
        is_check = make_student.calls_check(text(cell)) and not is_solution(cell)
        if cell["cell_type"] == "code" and is_check:
            verdict = outputs_text(cell)
            if "not written yet" not in verdict or "Traceback" in verdict:
                problems.append(f"{name}: check cell {index} says {verdict[:500]!r}")
    if name.startswith("00"):
        return problems
    printed = "\n".join(outputs_text(c) + "\n" + text(c) for c in nb["cells"] if c["cell_type"] == "code")
    answers = "\n".join(DETAILS.findall(check_yourself(nb)))
    missing = sorted({n for n in NUMBER.findall(answers) if n not in printed})
    if missing:
        problems.append(f"{name}: answers quote numbers that no cell printed: {missing}")
    return problems
