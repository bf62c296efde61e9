"""Notebooks, docs and quizzes never speak of how the course was written.

A learner or a teacher reads what the course says about attention and about PyTorch. How the course
came to say it (its sources, its earlier drafts, the issue or the review that asked for a change)
means nothing to them and goes stale at once; where a sentence leans on an outside text, it names
that text (title and section) instead. This test reads every cell of every notebook (markdown and
code, comments included), the README, every page under docs/ and every quiz text, and names the
file, the place and the words it found.
"""

import json
import re
from pathlib import Path

import pytest

from attnviz.quiz_bank import QUIZZES

REPO = Path(__file__).resolve().parent.parent

# Words about the making of the course, not about its subject. Each entry is one way of saying it.
FORBIDDEN = [
    r"\bour (own )?sources?\b",
    r"\b(this|the) course'?s (own )?sources?\b",
    r"\b(earlier|previous|older|first|last|old) drafts?\b",
    r"\bdrafts? of (this|the) (course|notebook|guide)\b",
    r"\b(earlier|previous|older) versions? of (this|the) (course|notebook|guide)s?\b",
    r"\bthe issue (asks|says|lists|wants)\b",
    r"\bthis issue\b",
    r"\bissue #?\d+\b",
    r"\bthe brief\b",
    r"\bthe (lead|helper)'s\b",
    r"\b(code )?reviewers?\b",
    r"\bas (was )?requested\b",
    r"\bwe were asked\b",
    r"\bwhen this (course|notebook|guide) was (last )?(measured|written|tested|made)\b",
]
PATTERN = re.compile("|".join(f"(?:{p})" for p in FORBIDDEN), re.IGNORECASE)


def _notebook_texts(path):
    cells = json.loads(path.read_text())["cells"]
    for index, cell in enumerate(cells):
        yield f"cell {index} ({cell['cell_type']})", "".join(cell["source"])


def _doc_texts(path):
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        yield f"line {number}", line


def _quiz_texts():
    for notebook, questions in QUIZZES.items():
        for q, question in enumerate(questions, start=1):
            yield f"quiz {notebook} question {q}", question["question"]
            for answer in question["answers"]:
                yield f"quiz {notebook} question {q}", answer["answer"] + " " + answer["feedback"]


SOURCES = (
    [(path.relative_to(REPO).as_posix(), _notebook_texts, path)
     for path in sorted((REPO / "notebooks").glob("*.ipynb"))]
    + [(path.relative_to(REPO).as_posix(), _doc_texts, path)
       for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]]
)


def found_in(texts) -> list[str]:
    return [f"{where}: {match.group(0)!r}" for where, text in texts for match in PATTERN.finditer(text)]


@pytest.mark.parametrize(("name", "reader", "path"), SOURCES, ids=[s[0] for s in SOURCES])
def test_no_words_about_how_the_course_was_written(name, reader, path):
    hits = found_in(reader(path))
    assert not hits, f"{name} speaks of how the course was written (name the outside text instead):\n  " + \
        "\n  ".join(hits)


def test_quiz_texts_do_not_either():
    hits = found_in(_quiz_texts())
    assert not hits, "attnviz/quiz_bank.py:\n  " + "\n  ".join(hits)


@pytest.mark.parametrize("planted", [
    "(Our sources phrase the default as ...)",
    "Books (and this course's own sources) describe these",
    "Common references (and earlier drafts of this course) say",
    "An earlier version of this notebook said",
    "as the issue asks, we now",
    "This issue lists three",
    "fixed in issue #21",
    "about 2 s when this course was last measured",
    "a reviewer pointed out",
])
def test_the_pattern_catches_the_ways_it_was_said(planted):
    assert PATTERN.search(planted), planted


@pytest.mark.parametrize("fine", [
    "The Annotated Transformer's `attention` function (its section \"Attention\")",
    "PyTorch's own source gives an odd head count as one reason",
    "the sources of error in a timing",
    "a KV cache draws on earlier positions",
    "Colab's tracker has an open report (googlecolab/colabtools#5889)",
])
def test_the_pattern_leaves_ordinary_sentences_alone(fine):
    assert not PATTERN.search(fine), fine
