"""The contributor and teacher docs stay true to the code: their links resolve, their bug ids exist."""

import re
from pathlib import Path

import pytest

from attnviz.check import BUGS

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "docs" / name for name in ("teaching.md", "ARCHITECTURE.md", "STYLE.md")]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    links = [target for target in LINK.findall(path.read_text()) if "://" not in target]
    missing = [target for target in links if not (path.parent / target).exists()]
    assert not missing, f"{path.name} links to missing files: {missing}"


def test_the_guide_names_only_catalogued_bugs():
    """Every id named in an *Exercise* paragraph of the guide is in the checkers' catalog."""
    text = (REPO / "docs" / "teaching.md").read_text()
    exercises = [p for p in text.split("\n\n") if p.startswith("*Exercise")]
    assert len(exercises) >= 3, "the guide should describe the exercises of 02, 04 and 05"
    named = {name for paragraph in exercises for name in re.findall(r"`([a-z]+(?:_[a-z0-9]+)+)`", paragraph)
             if not name.startswith("check_") and not name.startswith("torch.")}
    assert named, "the guide names no bug ids"
    unknown = sorted(named - set(BUGS))
    assert not unknown, f"docs/teaching.md names bug ids the catalog does not have: {unknown}"


def test_the_guide_has_a_section_per_notebook():
    text = (REPO / "docs" / "teaching.md").read_text()
    for notebook in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        heading = rf"^## {notebook.name[:2]} "
        assert re.search(heading, text, re.M), f"docs/teaching.md has no section for {notebook.name}"


def test_readme_links_the_guide_and_the_map():
    readme = (REPO / "README.md").read_text()
    for doc in ("docs/teaching.md", "docs/ARCHITECTURE.md"):
        assert f"]({doc})" in readme, f"README.md should link {doc}"
