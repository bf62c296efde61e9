"""The result of a check: a small object that shows itself as a friendly verdict."""

from __future__ import annotations

import functools
import html
import os
import re
from dataclasses import dataclass, field

from ._catalog import BUGS

__all__ = ["CheckResult", "passed", "bug_found", "not_implemented", "problem", "bug_words", "show_fixes",
           "fixes_shown", "never_raises"]

# sizes and flags an id names: kept as the code spells them
_NAMES = ("d_model", "d_head", "d_k", "n_heads", "is_causal")


def bug_words(bug_id: str) -> str:
    """A bug id as words for a headline: 'cache not appended', 'scale by d_model'."""
    words = bug_id.replace("_", " ")
    for name in _NAMES:
        words = re.sub(rf"\b{name.replace('_', ' ')}\b", name, words)   # whole words: 'repeated heads' stays
    return words

# Whether a verdict shows its one-line fix (show_fixes); the line that replaces it when not
_SHOWN = {"fix": True}
FIX_WITHHELD = ("not shown in a graded assignment (it would be the answer): the lines above say what is "
                "wrong and how it showed.")


def fixes_shown() -> bool:
    """Whether verdicts show their fix line: False in an nbgrader release (graded work)."""
    return _SHOWN["fix"]


def show_fixes(shown: bool = True) -> None:
    """Whether verdicts end with their one-line fix (the default).

    An nbgrader release (``tools/make_nbgrader.py``) calls ``show_fixes(False)`` in its first code
    cell: in a graded exercise the fix line would be the answer. The verdict still names the bug,
    what is wrong and how it showed, and the result's ``fix`` field keeps the fix: this is a
    default for the graded notebook, not a lock.
    """
    if not isinstance(shown, bool):
        raise TypeError(f"show_fixes(shown): shown must be True or False, not {shown!r}.")
    _SHOWN["fix"] = shown


# code inside a verdict keeps the verdict's own light colours (a dark theme would give it a dark box)
_CODE = ' style="background:rgba(0,0,0,0.07);color:#1f1f1f;padding:0 0.2em;border-radius:3px"'

# status -> (icon, border colour, background); colours readable when projected
_LOOK = {
    "passed": ("✓", "#1b7f3b", "#eef8f1"),
    "bug": ("✗", "#b3261e", "#fdf0ef"),
    "problem": ("✗", "#b3261e", "#fdf0ef"),
    "not_implemented": ("…", "#5f6368", "#f3f4f6"),
    # a pass of an older definition (a newer cell failed): not green under a red SyntaxError
    "passed_stale": ("⚠", "#8a5a00", "#fff6e0"),
}


@dataclass
class CheckResult:
    """What a checker found.

    ``passed`` (bool) and ``bug`` (a bug id from :data:`attnviz.check.BUGS`, or None)
    are the machine-readable part. ``status`` is 'passed', 'bug' (a known bug
    was recognised), 'problem' (something is wrong that matches no known bug;
    ``observed`` says what) or 'not_implemented'. ``headline``, ``what``,
    ``shows``, ``fix``, ``observed`` and ``notes`` (beside the verdict) are its words;
    ``warnings`` (shown first) say that what was checked may not be what the learner meant
    (an older definition of the name). ``fix_of``: the known bug whose fix the Fix line is, where the
    verdict names none (two mistakes at once, one of them known), so the line is written in the
    learner's own code as that bug's would be.
    """

    passed: bool
    bug: str | None
    status: str
    checked: str
    headline: str
    what: str = ""
    shows: str = ""
    fix: str = ""
    observed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fix_of: str | None = None

    def _lines(self):
        rows = [("Warning", warning) for warning in self.warnings]
        if self.what:
            rows.append(("What is wrong", self.what))
        if self.shows:
            rows.append(("How it shows", self.shows))
        label = {"passed": "Checked", "not_implemented": "Hint"}.get(self.status, "Observed")
        for line in self.observed:
            rows.append((label, line))
        for note in self.notes:                     # beside a verdict, not what it checked or saw
            rows.append(("Note", note))
        if self.fix:
            rows.append(("Fix", self.fix if _SHOWN["fix"] else FIX_WITHHELD))
        return rows

    def _look(self) -> tuple[str, str, str]:
        return _LOOK["passed_stale" if self.passed and self.warnings else self.status]

    def __repr__(self) -> str:
        icon = self._look()[0]
        bug = f" [bug: {self.bug}]" if self.bug else ""
        text = [f"{icon} {self.checked}: {self.headline}{bug}"]
        text += [f"  {label}: {value}" for label, value in self._lines()]
        return "\n".join(text)

    def _repr_html_(self) -> str:
        icon, colour, background = self._look()
        esc = html.escape
        bug = (
            f' <span style="font-size:0.85em;color:#555">(bug id: <code{_CODE}>{esc(self.bug)}</code>)</span>'
            if self.bug
            else ""
        )
        rows = []
        for label, value in self._lines():
            code = label == "Fix" and value is not FIX_WITHHELD
            body = f"<code{_CODE}>{esc(value)}</code>" if code else esc(value)
            colour_of = ";color:#8a3b00" if label == "Warning" else ""   # dark amber on the light box
            rows.append(f'<div style="margin:0.25em 0{colour_of}"><b>{esc(label)}:</b> {body}</div>')
        return (
            f'<div class="attnviz-verdict attnviz-{self.status}" style="border-left:6px solid {colour};'
            f"background:{background};padding:0.6em 0.9em;margin:0.4em 0;font-size:1.05em;"
            f'line-height:1.45;color:#1f1f1f">'
            f'<div style="font-weight:600;color:{colour}">{icon} {esc(self.checked)}: '
            f"{esc(self.headline)}{bug}</div>{''.join(rows)}</div>"
        )


def passed(checked: str, headline: str, observed=None, notes=None) -> CheckResult:
    """A pass: ``observed`` says what was checked, ``notes`` anything worth knowing beside it."""
    return CheckResult(True, None, "passed", checked, headline, observed=list(observed or []),
                       notes=list(notes or []))


def bug_found(checked: str, bug_id: str, happened: str, observed=None, fix=None) -> CheckResult:
    """A known bug: the headline says first what ``happened`` ("your function raised RuntimeError
    on ..."), then which bug it looks like; the catalog gives what is wrong, how it shows, the fix."""
    bug = BUGS[bug_id]
    return CheckResult(
        False,
        bug_id,
        "bug",
        checked,
        f"{happened}. It looks like the known bug \"{bug_words(bug_id)}\".",
        what=bug.what,
        shows=bug.shows_for(checked),
        fix=fix or bug.fix_for(checked),
        observed=list(observed or []),
    )


NOT_WRITTEN = "not written yet: write your code in the cell above, run it, then run this cell again."


def not_implemented(checked: str, hint: str = "") -> CheckResult:
    """The exercise's stub (``raise NotImplementedError(hint)``) ran: a friendly verdict, no traceback."""
    observed = [hint] if hint and hint.strip() != "write your code here" else []  # the stub's default
    return CheckResult(
        False,
        None,
        "not_implemented",
        checked,
        NOT_WRITTEN,
        observed=observed,
    )


def problem(checked: str, headline: str, observed, fix: str = "") -> CheckResult:
    return CheckResult(False, None, "problem", checked, headline, fix=fix, observed=list(observed))


def never_raises(check):
    """Decorator for a public checker, the outermost: what the checker's own reading of the learner's code
    or object raises (a shape of code no reader foresaw, an object whose ``__getattr__`` raises) becomes a
    verdict in plain words, never a traceback in the learner's notebook. The learner's code itself runs in
    the child, whose errors are verdicts already; KeyboardInterrupt (the learner stopping the cell) goes
    through. With ``ATTNVIZ_CHECK_RAISE=1`` in the environment (the tests set it) the error is raised as
    it is: a test must see the checker's slip, not a verdict that hides it."""
    @functools.wraps(check)
    def wrapper(fn, *args, **kwargs):
        try:
            return check(fn, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the checker's own slip, told as such
            if os.environ.get("ATTNVIZ_CHECK_RAISE") == "1":
                raise
            said = f"{type(err).__name__}: {err}"
            said = said if len(said) <= 200 else said[:197] + "..."
            return problem(check.__name__, (
                "the checker could not finish reading your code: the checker itself raised an error (a gap "
                "in the checker, not a verdict on your code)."), [
                f"Inside the checker: {said}",
                "Try your function by hand on a small input and compare with the notebook's reference. If "
                "your code is an ordinary function or class, the course's authors would like to see it: "
                "this case is one the checker should handle."])
    return wrapper
