"""The one engine every checker runs on: probes, the learner's answers, one ordered list of rules.

A checker is its probes plus the rules that differ (see :class:`Spec`):

* a :class:`Probe` is one crafted call: the arguments, the reference's result, its ``kind``
  (``main`` probes are compared with every hypothesis; the others each test one edge:
  ``setup``, ``repeat``, ``large``, ``float64``, ``float16``, ``backward``, ...) and the facts the
  rules read (``facts``: ``{"batch_one": True}``, ``{"ones": True}``, ...);
* the learner's code runs once per probe, in order, in one forked child
  (:func:`._sandbox.run_steps`); each probe's result is an :class:`._diagnose.Answer`;
* :data:`._rules.RULES` is the one ordered list of decisions, shared by every checker. Each rule
  reads the :class:`Trial` and returns a verdict or None; :func:`decide` returns the first
  verdict. A checker changes only the rules that differ (:func:`._rules.rules`).

Every verdict says first what happened (raised, timed out, returned the wrong thing), then which
bug it looks like.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from . import _verdict
from ._compare import agrees, max_gap, rows, shape_complaint
from ._diagnose import Answer, answer
from ._run import describe_error
from ._sandbox import run_steps
from ._stops import where_note

__all__ = ["Probe", "Spec", "Trial", "Rule", "decide", "run_check", "default_compare", "live_rows",
           "live_queries", "dtype_name"]


@dataclass
class Probe:
    """One crafted call. ``args``: the learner's arguments by name, in call order; ``expected``:
    the reference's result; ``live``: the output rows compared (None: all)."""

    name: str
    args: dict = field(default_factory=dict)
    expected: object = None
    kind: str = "main"
    live: torch.Tensor | None = None
    shapes: str = ""  # the inputs' shapes in words, for the verdict
    same_as: str = ""  # kind 'repeat': the name of the probe this one repeats
    facts: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        """How a verdict names this probe: 'On 3 queries, 5 keys (q (3, 16), ...)'."""
        if self.kind == "setup" or "where" in self.facts:
            return self.facts.get("where", self.name)
        return f"On {self.name}" + (f" ({self.shapes})" if self.shapes else "")

    def live_rows(self, tensor):
        if self.live is not None:
            return self.live
        return torch.ones(tensor.shape[:-1], dtype=torch.bool)


@dataclass
class Spec:
    """What makes one checker: its name and words, its hypotheses, its rules, its comparison.

    ``subject`` names the learner's code in verdicts ("your function", "forward", "your step").
    ``compare(probe, answer, expected) -> bool`` says whether an answer equals ``expected`` (the
    probe's reference result, or a hypothesis's; default: the output agrees on the live rows).
    ``passed(trial)`` gives the passing verdict; ``words`` holds the checker's own sentences (and, under
    ``"refine:hypothesis"``, a function ``(trial, verdict) -> verdict`` that adds to a named bug's words).
    """

    name: str
    subject: str = "your function"
    output_dims: tuple = ()
    hypotheses: object = None  # a _diagnose.Hypotheses, or None
    order: tuple | None = None  # the bug ids to try, in order (default: the hypotheses' order)
    fix: str = ""  # the fix for wrong code that matches no known bug
    passed: Callable | None = None
    compare: Callable | None = None
    describe: Callable | None = None  # (probe, answer) -> the Observed line
    complaint_fix: str = ""
    words: dict = field(default_factory=dict)  # checker-specific sentences the rules use
    rules: tuple = ()  # the shared rules with this checker's differences (_rules.rules(...))


@dataclass
class Trial:
    """One check in progress: the probes, the learner's answers to them, and the notes."""

    spec: Spec
    probes: list
    answers: list
    run: object  # the sandbox Run
    time_limit: float
    notes: list = field(default_factory=list)
    main_kind: str = "main"
    _right: dict = field(default_factory=dict)

    def pairs(self, kind=None):
        """``(probe, answer)`` for every probe of ``kind`` (every probe when None)."""
        return [(p, a) for p, a in zip(self.probes, self.answers, strict=True) if kind in (None, p.kind)]

    @property
    def main(self):
        return self.pairs(self.main_kind)

    def one(self, kind):
        """The ``(probe, answer)`` of the (first) probe of ``kind``, or (None, None)."""
        return next(iter(self.pairs(kind)), (None, None))

    def named(self, name):
        """The ``(probe, answer)`` of the probe called ``name``, or (None, None)."""
        return next(((p, a) for p, a in self.pairs() if p.name == name), (None, None))

    def right(self, probe, ans) -> bool:
        key = id(probe)
        if key not in self._right:
            compare = self.spec.compare or default_compare
            right = ans.error is None and not ans.complaint and bool(compare(probe, ans, probe.expected))
            self._right[key] = right
        return self._right[key]

    @property
    def all_right(self) -> bool:
        return all(self.right(p, a) for p, a in self.main)

    @property
    def modified(self):
        return sorted({name for a in self.answers for name in a.modified})

    def happened(self, probe, ans) -> str:
        """What the learner's code did on ``probe``, in a few words (a verdict's headline starts so)."""
        subject, output = self.spec.subject, self.spec.words.get("output", "output")
        if ans.error is not None:
            return f"{subject} raised {ans.error['type']} on {probe.name}"
        expected = probe.expected
        exact = isinstance(ans.output, torch.Tensor) and isinstance(expected, torch.Tensor)
        if exact and not self.spec.words.get("broadcasts"):
            if ans.output.shape != expected.shape:
                return f"{subject} returned an output of the wrong shape on {probe.name}"
            finite = bool(torch.isfinite(live_rows(probe, ans.output)).all())
            if ans.output.is_floating_point() and not finite:
                return f"{subject} returned NaN or inf on {probe.name}"
        wrong = sum(not self.right(p, a) for p, a in self.main)
        raised = sum(a.error is not None for _, a in self.main)
        inputs = self.inputs("test inputs")
        if raised and raised < wrong:          # some raised, the others returned something wrong
            return (f"{subject} returned the wrong {output} on {wrong - raised} and raised on {raised} of "
                    f"{len(self.main)} {inputs}")
        return f"{subject} returned the wrong {output} on {wrong} of {len(self.main)} {inputs}"

    def inputs(self, default="main inputs") -> str:
        """What the checker calls its main inputs in a verdict ("prefills", "steps after the prefill")."""
        return self.spec.words.get(f"inputs:{self.main_kind}", default)

    def describe(self, probe, ans) -> str:
        if self.spec.describe is not None:
            return self.spec.describe(probe, ans)
        return _describe(self, probe, ans)

    def first_wrong(self):
        return next(((p, a) for p, a in self.main if not self.right(p, a)), (None, None))

    def bug(self, bug_id, happened, observed=(), fix=None):
        """A known bug's verdict (empty observed lines are left out; the notes come last)."""
        lines = [line for line in observed if line] + self.notes
        return _verdict.bug_found(self.spec.name, bug_id, happened, lines, fix=fix)

    def problem(self, headline, observed=(), fix=""):
        lines = [line for line in observed if line] + self.notes
        return _verdict.problem(self.spec.name, headline, lines, fix=fix)


def default_compare(probe, ans, expected):
    """The default comparison: the output agrees with ``expected`` on the probe's live rows."""
    return isinstance(ans.output, torch.Tensor) and agrees(ans.output, expected, probe.live_rows(ans.output))


def live_rows(probe, tensor):
    """The rows of ``tensor`` the probe compares (all of them if the shapes do not fit)."""
    live = probe.live_rows(tensor)
    try:
        return rows(tensor, live)
    except RuntimeError:
        return tensor


def live_queries(shape, mask):
    """Bool ``shape``: the query rows with at least one key to attend to (all when no mask)."""
    return torch.ones(shape, dtype=torch.bool) if mask is None else mask.any(dim=-1).expand(shape)


def dtype_name(tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")


def right_but_transposed(probe, output) -> bool:
    """Whether ``output`` is the probe's right output with its last two axes swapped (compared on the
    right output's live query rows)."""
    return (isinstance(output, torch.Tensor) and output.dim() >= 2
            and agrees(output.mT, probe.expected, probe.live_rows(probe.expected)))


def _describe(trial, probe, ans) -> str:
    where = probe.where
    if ans.error is not None:
        return f"{where}: {trial.spec.subject} raised {describe_error(ans.error)}{where_note(ans.error)}"
    if ans.complaint:
        return f"{where}: {trial.spec.subject} {ans.complaint}"
    expected = probe.expected
    if ans.output.shape != expected.shape:
        extra = trial.spec.words.get("extra_dims", "")
        extra = extra(probe, ans) if callable(extra) else extra
        said = f"{where}: {shape_complaint(ans.output.shape, expected.shape, trial.spec.output_dims, extra)}"
        if right_but_transposed(probe, ans.output):
            said += " Its numbers are the right ones, transposed: its last two axes are swapped."
        return said
    words = trial.spec.words
    if not bool(torch.isfinite(live_rows(probe, ans.output)).all()):
        nan = words.get("nan", "the output holds NaN or inf in rows that have keys to attend to.")
        return f"{where}: {nan}"
    gap = max_gap(ans.output, expected, probe.live_rows(ans.output))
    return f"{where}: {words.get('gap', 'the output differs from the correct one by up to')} {gap:.3g}."


@dataclass(frozen=True)
class Rule:
    """``when``: 'always', 'right' (every main probe right) or 'wrong' (at least one is not)."""

    name: str
    when: str
    decide: Callable


def decide(trial):
    """The first verdict of the checker's rules that apply (see :class:`Rule`), or None."""
    for rule in trial.spec.rules:
        if rule.when == "right" and not trial.all_right:
            continue
        if rule.when == "wrong" and trial.all_right:
            continue
        verdict = rule.decide(trial)
        if verdict is not None:
            return verdict
    return None


def run_check(spec, probes, steps, time_limit, read=None, main_kind="main", prepare=None):
    """Run ``steps`` (one per probe, in order) in one isolated child and decide; returns a verdict.

    ``read(step, probe) -> Answer`` turns a sandbox Step into the learner's answer (default
    :func:`._diagnose.answer`); ``prepare(probes, answers)`` may then read the answers as a whole (a
    mask that is additive on one probe is read so on all).
    """
    read = read or (lambda step, probe: answer(step))
    run = run_steps(steps, time_limit=time_limit, budget=time_limit)
    notes = [run.note] if not run.isolated else []
    if run.stopped is None:
        answers = [read(step, probe) for step, probe in zip(run.steps, probes, strict=True)]
        if prepare is not None:
            prepare(probes, answers)
    else:
        answers = [Answer() for _ in run.steps]
    verdict = decide(Trial(spec, probes, answers, run, time_limit, notes, main_kind=main_kind))
    said = printed_note(run)
    if said and verdict is not None:
        verdict.notes.append(said)
    return verdict


def printed_note(run):
    """Words for a verdict when the learner's code printed: the child's output is shown nowhere else."""
    printed = [step.printed for step in run.steps if step.printed]
    if not printed:
        return None
    first = next((line.strip() for line in printed[0].splitlines() if line.strip()), "")
    first = first if len(first) <= 100 else first[:100] + " ..."
    quoted = f" (the first line: {first!r})" if first else ""
    return (f"Your code printed during {len(printed)} of the check's {len(run.steps)} calls{quoted}; a "
            "check runs it in another process and shows none of that. To see what it prints, call it "
            "yourself in a cell.")

