"""Print the answer key: every Check-yourself question of the course with its answer, then every
quiz's answer key, one page.

    python tools/answer_key.py > docs/answers.md

The answers live in the notebooks, collapsed under each question (``<details><summary>Answer``); this
gathers them for a teacher to print or read in one place. tests/test_learner_edition.py checks that
docs/answers.md is up to date.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSWER = re.compile(r"\s*<details><summary>Answer</summary>\s*(.*?)\s*</details>", re.S)


def _text(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _dedent(text: str) -> str:
    return "\n".join(line[3:] if line.startswith("   ") else line for line in text.split("\n"))


def notebook_answers(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """The notebook's title and its (question, answer) pairs, in order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    title = _text(cells[0]).split("\n", 1)[0].lstrip("# ").strip()
    found = [_text(c) for c in cells
             if c["cell_type"] == "markdown" and _text(c).startswith("## Check yourself")]
    if not found:
        return title, []
    body = found[0].split("### Exercise")[0]
    pairs = []
    for item in re.split(r"\n(?=\d+\. )", body)[1:]:
        match = ANSWER.search(item)
        question = (item[:match.start()] if match else item).strip()   # what follows the answer is not it
        pairs.append((question, _dedent(match.group(1)).strip() if match else ""))
    return title, pairs


def answer_key(paths) -> str:
    out = ["# Check yourself: the answers",
           "",
           "Every notebook ends with *Check yourself* questions. In the notebooks each answer sits under",
           "its question, collapsed (click *Answer*); this page gathers them, one section per notebook,",
           "to print or to read before a lesson. Generated from the notebooks by",
           "`python tools/answer_key.py > docs/answers.md`; do not edit by hand. The numbers quoted are",
           "those the notebooks print on the machine the course is tested on, or bounds their cells",
           "assert where a result varies with the seed or the CPU (`tests/test_binder.py` checks each",
           "against the cells' output and code).",
           ""]
    for path in paths:
        title, pairs = notebook_answers(path)
        if not pairs:
            continue
        out += [f"## {title}", "", f"`notebooks/{path.name}`", ""]
        for question, answer in pairs:
            number, _, text = question.partition(". ")
            text = _dedent(text).strip()
            # bold cannot run across a blank line: a question of several paragraphs bolds its number
            out += [f"**{number}.** {text}" if "\n\n" in text else f"**{number}. {text}**", "", answer, ""]
    out += quiz_keys(paths)
    return "\n".join(out).rstrip("\n") + "\n"


def quiz_keys(paths) -> list:
    """The quizzes' answer keys, one per notebook, as ``quiz_text(..., answers=True)`` prints them."""
    from attnviz.quiz import quiz_text
    from attnviz.quiz_bank import QUIZZES

    out = ["# The quizzes: answer keys",
           "",
           "Each notebook from 01 on ends with a quiz (`show_quiz(\"NN\")`) that marks the learner's pick",
           "and explains every wrong option. Its options keep this order, headed a), b), c), d) as here;",
           "` *` marks the right one, and the line under each option is the feedback the quiz shows.",
           "Printed by `attnviz.quiz.quiz_text(\"NN\", answers=True)`.",
           ""]
    for path in paths:
        number = path.name[:2]
        if number in QUIZZES:
            title = notebook_answers(path)[0]
            key = quiz_text(number, answers=True).rstrip("\n")
            out += [f"## Quiz: {title}", "", "```text", key, "```", ""]
    return out


def main() -> int:
    sys.stdout.write(answer_key(sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
