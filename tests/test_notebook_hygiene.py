"""Committed notebooks are stripped, valid, numbered in reading order, and follow the course template.

The template (docs/STYLE.md, "The notebooks"): a title ``# NN ...``; what the reader will be able
to do; seeds in the first code cells; a "Check yourself" section as the last ``##`` section; the
notebook's own quiz, ``show_quiz("NN")``, after it; and, when a next notebook exists, a link to it
at the end. The tests find notebooks by glob, so a new ``NN_topic.ipynb`` is held to the same
template the day it is added.

``00_start_here`` is exempt from seeds, "Check yourself" and the quiz: it only sets the reader up
and teaches nothing to check yet. It must then draw no random numbers at all, and it still needs
the title, the goals and the link to 01.
"""

import json
import re
from pathlib import Path

import pytest

from attnviz.quiz_bank import QUIZZES

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
START = "00_start_here.ipynb"
GOALS = "By the end of this notebook you will"
RANDOM = re.compile(r"\btorch\.(randn|rand|randint|randperm|normal)\b|\.uniform_\(|nn\.(Linear|Embedding)\(")


def _cells(path):
    nb = json.loads(path.read_text())
    return [(cell["cell_type"], "".join(cell["source"])) for cell in nb["cells"]]


def _number(path):
    return path.name[:2]


def _next(path):
    later = [p for p in NOTEBOOKS if p.name[:2] > path.name[:2]]
    return later[0] if later else None


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"
    assert NOTEBOOKS[0].name == START


def test_notebooks_are_numbered_without_gaps():
    numbers = [int(_number(p)) for p in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))), f"notebook numbers {numbers} have a gap or a repeat"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stripped(path):
    nb = json.loads(path.read_text())
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert not cell.get("outputs"), f"{path.name}: cell {index} has stored outputs"
        assert cell.get("execution_count") is None, f"{path.name}: cell {index} has an execution count"
    assert "widgets" not in nb.get("metadata", {}), f"{path.name} stores widget state (~5 MB)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_title_and_goals(path):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name)
    kind, first = _cells(path)[0]
    assert kind == "markdown" and first.startswith("# "), f"{path.name} should open with a # title"
    if path.name != START:
        number = _number(path)
        assert re.match(rf"# {number}\b", first), f"{path.name}: the title should start '# {number}'"
    opening = "\n".join(source for kind, source in _cells(path)[:2] if kind == "markdown")
    assert GOALS in opening, f"{path.name} should open with '{GOALS} ...' (its learning goals)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_seeds_at_the_top(path):
    code = [source for kind, source in _cells(path) if kind == "code"]
    if path.name == START:
        # exempt from seeds, so it must not draw random numbers
        assert not any(RANDOM.search(source) for source in code), f"{START} draws random numbers: seed it"
        return
    assert any("torch.manual_seed(" in source for source in code[:2]), (
        f"{path.name}: one of the first two code cells should seed torch (torch.manual_seed)")


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name != START], ids=lambda p: p.name)
def test_check_yourself_then_the_quiz(path):
    cells = _cells(path)
    headings = [(i, line) for i, (kind, source) in enumerate(cells) if kind == "markdown"
                for line in source.splitlines() if line.startswith("## ")]
    assert headings and headings[-1][1].strip() == "## Check yourself", (
        f"{path.name}: the last ## section should be '## Check yourself', got {headings[-1:]}")
    quiz = f'show_quiz("{_number(path)}")'
    at = [i for i, (kind, source) in enumerate(cells) if kind == "code" and quiz in source]
    assert at, f"{path.name} should run its own quiz, {quiz}"
    assert at[0] > headings[-1][0], f"{path.name}: the quiz should come after 'Check yourself'"
    assert _number(path) in QUIZZES, f"attnviz/quiz_bank.py has no questions for {_number(path)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_ends_with_a_link_to_the_next_notebook(path):
    following = _next(path)
    if following is None:
        pytest.skip(f"{path.name} is the last notebook")
    kind, last = _cells(path)[-1]
    assert kind == "markdown" and f"]({following.name})" in last, (
        f"{path.name} should end with a markdown cell linking to the next notebook, "
        f"e.g. 'Next: [..]({following.name}).'")
