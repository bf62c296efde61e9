"""Committed notebooks are stripped, valid, and numbered in reading order."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"
    assert NOTEBOOKS[0].name == "00_start_here.ipynb"


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
def test_notebook_name_and_shape(path):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name)
    nb = json.loads(path.read_text())
    first = "".join(nb["cells"][0]["source"])
    assert first.startswith("# "), f"{path.name} should open with a title"
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    if path.name != "00_start_here.ipynb":
        assert "Check yourself" in text, f"{path.name} should end with a 'Check yourself' section"
