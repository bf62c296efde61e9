"""Naming a bug from its symptoms: which hypothesis reproduces the learner's outputs on every probe.

A learner's result on one probe is an :class:`Answer`: the output tensor, or
the error it raised, or a complaint about what it returned. A hypothesis
variant's result is a tensor or ``RAISED``. A variant *matches* when on every
probe either both raised (or the learner's output has another shape, the
way a raise would) or both produced tensors that :func:`agrees` on the
live rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .._threads import one_thread
from ._compare import agrees
from ._reference import neutral
from ._run import rebuild

__all__ = ["Answer", "answer", "RAISED", "Hypotheses", "matching_bug", "error_kind"]

RAISED = "raised"


@dataclass
class Answer:
    output: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    error: dict | None = None  # an error_info dict
    complaint: str = ""  # returned something that is not a readable tensor
    modified: tuple = ()
    extra: dict | None = None  # anything else the step sent (gradients, ...)


def answer(step) -> Answer:
    """The :class:`Answer` from one sandbox Step whose value came from ``guarded_call``."""
    from ._run import first_tensor

    if step.status == "error":
        return Answer(error=step.error)
    if step.status != "ok":
        return Answer(complaint=step.status)
    value = rebuild(step.value["value"])
    output, weights, complaint = first_tensor(value)
    return Answer(
        output=output,
        weights=weights,
        complaint=complaint or "",
        modified=tuple(step.value.get("modified", ())),
        extra=step.value.get("extra"),
    )


class Hypotheses:
    """Bug variants evaluated lazily on the probes' arguments, each result kept once computed.

    ``variants`` is ``{bug_id: [fn(*args) -> output tensor]}``, ``probe_args`` a list of argument
    tuples (one per probe). A variant that raises on a probe gives ``RAISED`` there.
    """

    def __init__(self, variants, probe_args):
        self.variants, self.probe_args, self._memo = variants, probe_args, {}

    def output(self, bug_id, v, p):
        key = (bug_id, v, p)
        if key not in self._memo:
            try:
                with one_thread(), neutral():
                    self._memo[key] = self.variants[bug_id][v](*self.probe_args[p])
            except Exception:  # noqa: BLE001 - a variant that cannot run on this probe
                self._memo[key] = RAISED
        return self._memo[key]


def _same(mine: Answer, theirs, live, shape) -> bool:
    if isinstance(theirs, str):  # the variant raised here
        return mine.error is not None or (mine.output is not None and tuple(mine.output.shape) != shape)
    if mine.output is None:
        return False
    return agrees(mine.output, theirs, live)


def matching_bug(answers, hypotheses, lives, shapes, order=None):
    """The first bug id (in ``order``, default the variants' order) with a variant that matches
    every probe; ``shapes`` are the correct output shapes. A variant raising everywhere explains
    nothing."""
    for bug_id in order or hypotheses.variants:
        for v in range(len(hypotheses.variants.get(bug_id, ()))):
            ran = False
            for p, (a, live, shape) in enumerate(zip(answers, lives, shapes, strict=True)):
                theirs = hypotheses.output(bug_id, v, p)
                if not _same(a, theirs, live, tuple(shape)):
                    break
                ran = ran or not isinstance(theirs, str)
            else:
                if ran:
                    return bug_id
    return None


_MATMUL = re.compile(
    r"cannot be multiplied|must match the size of tensor b|Expected size for first two "
    r"dimensions of batch2|size mismatch|mat1 and mat2",
    re.IGNORECASE,
)


def error_kind(error: dict | None) -> str | None:
    """'contiguous' for view-after-transpose, 'matmul' for a shape mismatch in a product, else None."""
    if not error:
        return None
    text = error.get("message", "")
    if "view size is not compatible" in text or ("view" in text and "contiguous" in text.lower()):
        return "contiguous"
    if _MATMUL.search(text):
        return "matmul"
    if "without overflow" in text:
        return "overflow"
    return None
