"""Auto-marked multiple-choice quizzes: ``show_quiz("03")`` at the end of a notebook.

The questions live in :mod:`attnviz.quiz_bank`. They are shown with
jupyterquiz, which embeds everything (questions, its JavaScript and CSS) in the
cell's output: nothing is fetched at run time. Clicking an option marks it and
shows why it is right or wrong; the feedback starts with "Right." or
"Not quite." so it never relies on colour alone.

Torch-free and widget-free: needs only IPython (and jupyterquiz for the
interactive version; without it the questions are printed as text).
"""

from __future__ import annotations

from .quiz_bank import QUIZZES

__all__ = ["show_quiz", "quiz_text", "QUIZZES"]

# jupyterquiz's own defaults for the colours we do not set
_DEFAULT_COLOURS = {
    "--jq-many-choice-bg": "#24406b",
    "--jq-numeric-bg": "#24406b",
    "--jq-numeric-input-bg": "#c0c0c0",
    "--jq-numeric-input-label": "#101010",
    "--jq-numeric-input-shadow": "#999999",
    "--jq-string-bg": "#24406b",
    "--jq-mc-button-inset-shadow": "#555555",
    "--jq-link-color": "#9abafa",
}

# Dark blue question cards; green/red marks backed by the words "Right."/"Not quite."
_COLOURS = {
    "--jq-multiple-choice-bg": "#24406b",
    "--jq-mc-button-bg": "#fafafa",
    "--jq-mc-button-border": "#c8c8c8",
    "--jq-correct-color": "#1b7f3b",
    "--jq-incorrect-color": "#b3261e",
    "--jq-text-color": "#fafafa",
}

# The feedback's words on a dark page (body[data-jp-theme-light="false"])
_DARK_FEEDBACK = {"correct": "#6fd08c", "incorrect": "#ff8a80"}


def _bank(notebook):
    key = f"{int(notebook):02d}" if str(notebook).strip().isdigit() else str(notebook)
    if key not in QUIZZES:
        raise ValueError(f"no quiz for notebook {notebook!r}; there are quizzes for "
                         f"{', '.join(sorted(QUIZZES))}.")
    return QUIZZES[key]


def _plain(markup: str) -> str:
    import html
    import re
    return html.unescape(re.sub(r"</?code>", "`", markup))


def quiz_text(notebook, answers: bool = False) -> str:
    """The quiz for ``notebook`` as plain text (for printing, or for a teacher with ``answers=True``)."""
    lines = []
    for number, question in enumerate(_bank(notebook), start=1):
        lines.append(f"{number}. {_plain(question['question'])}")
        for letter, option in zip("abcdefgh", question["answers"], strict=False):
            mark = " *" if answers and option["correct"] else ""
            lines.append(f"   {letter}) {_plain(option['answer'])}{mark}")
            if answers:
                lines.append(f"      {_plain(option['feedback'])}")
        lines.append("")
    return "\n".join(lines)


# jupyterquiz, when it finds JupyterLab's MathJax without a global typeset(), tries to fetch MathJax
# from a CDN (and then errors on later quizzes). Our questions use no TeX, so the script is given a
# local, undefined MathJax (JupyterLab runs output JavaScript through a function-scoped eval, where a
# `var` shadows the global) and the CDN address is removed: nothing is fetched, ever.
_CDN = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"


def _lettered(questions):
    """The questions with each option headed a), b), c), ... as in :func:`quiz_text`'s answer key, so a
    room can be asked "who picks c?" whatever the grid the options are laid out in."""
    def headed(options):
        return [{**option, "answer": f"{letter}) {option['answer']}"}
                for letter, option in zip("abcdefgh", options, strict=False)]

    return [{**question, "answers": headed(question["answers"])} for question in questions]


def quiz_javascript_and_html(notebook, *, shuffle_answers: bool = False):
    """The (html, javascript) pair that :func:`show_quiz` displays; kept separate so it can be tested."""
    import random
    import string

    from jupyterquiz.dynamic.loader import load_questions_script
    from jupyterquiz.dynamic.renderer import build_script, build_styles, render_div

    div_id = "".join(random.choice(string.ascii_letters) for _ in range(12))
    colours = {**_DEFAULT_COLOURS, **_COLOURS}
    questions = list(_bank(notebook)) if shuffle_answers else _lettered(_bank(notebook))
    prefix, static, url = load_questions_script(questions, div_id)
    page = render_div(div_id, False, shuffle_answers, False, 1_000_000, 760, 10, "left")
    page += build_styles(div_id, colours)
    # code in an option keeps the option's own light look: JupyterLab Dark's rule for code in an output
    # (a dark box) is more specific than jupyterquiz's "inherit", and left dark text on a dark box
    page += (f"<style>#{div_id} .MCButton code {{background-color: rgba(0, 0, 0, 0.07) !important; "
             f"color: #1f1f1f !important;}}")
    # the feedback line under a question sits on the page: on a dark theme's page the marks' own
    # green and red read at 3.7:1 and 2.9:1, so there the words take lighter ones (over 7:1 on
    # JupyterLab Dark's #111); the buttons keep the darker ones behind their white text
    page += "".join(f'body[data-jp-theme-light="false"] #{div_id} .{kind} {{color: {colour};}}'
                    for kind, colour in _DARK_FEEDBACK.items()) + "</style>"
    script = "var MathJax;\n" + build_script(prefix, static, url, div_id, True).replace(_CDN, "")
    return page, script


def show_quiz(notebook, *, shuffle_answers: bool = False):
    """Display the auto-marked quiz for notebook ``"01"`` .. ``"08"`` (an int works too).

    Options appear in a fixed order, headed a), b), c), ... as in ``quiz_text(notebook, answers=True)``
    (so a teacher projecting it can ask "who picks c?"), unless ``shuffle_answers`` (then without
    letters). Without jupyterquiz the questions are printed as text.
    """
    _bank(notebook)
    try:
        page, script = quiz_javascript_and_html(notebook, shuffle_answers=shuffle_answers)
    except ImportError:
        print(quiz_text(notebook))
        print("(Install jupyterquiz for the clickable version.)")
        return None
    from IPython.display import HTML, Javascript, display

    display(HTML(page))
    display(Javascript(script))
    return None
