"""Naming a bug from its symptoms: which hypothesis reproduces the learner's outputs on every probe.

A learner's result on one probe is an :class:`Answer`: the output tensor, or
the error it raised, or a complaint about what it returned. A hypothesis
variant's result is a tensor (or whatever the checker compares) or ``RAISED``.
A variant *matches* when on every probe either both raised (or the learner's
output has another shape, the way a raise would) or the checker's comparison
says the learner's output equals the variant's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .._threads import one_thread
from ._reference import neutral
from ._run import rebuild

__all__ = ["Answer", "answer", "RAISED", "Hypotheses", "matching_bug", "variant_matches", "error_kind"]

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
    """Bug variants evaluated lazily on the probes, each result kept once computed.

    ``variants`` is ``{bug_id: [variant, ...]}``. A variant's result on a probe is
    ``variant(*arguments(probe))``, or ``evaluate(variant, probe)`` when given (a decoding variant
    runs a whole sequence of steps). Results are kept by probe name, so the order in which a
    checker lists its probes does not matter. A variant that raises on a probe gives ``RAISED``.
    """

    def __init__(self, variants, arguments=None, evaluate=None):
        self.variants, self._memo, self.arguments, self._swapped = variants, {}, arguments, None
        self.evaluate = evaluate or (lambda variant, probe: variant(*arguments(probe)))

    def with_mask_swapped(self):
        """The same variants, each handed the mask with True and False swapped (the last argument, where
        it is a bool tensor): for two bugs at once, one of them a mask used the wrong way round. None for
        variants that are not called with arguments (a decoding step's)."""
        if self.arguments is None:
            return None
        if self._swapped is None:
            def swapped(probe):
                *rest, mask = self.arguments(probe)
                return (*rest, ~mask if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool else mask)

            self._swapped = Hypotheses(self.variants, swapped)
        return self._swapped

    def output(self, bug_id, v, probe):
        key = (bug_id, v, probe.name)
        if key not in self._memo:
            try:
                with one_thread(), neutral():
                    self._memo[key] = self.evaluate(self.variants[bug_id][v], probe)
            except Exception:  # noqa: BLE001 - a variant that cannot run on this probe
                self._memo[key] = RAISED
        return self._memo[key]


_NAMES_ERRORS = {"NameError", "UnboundLocalError"}
"""A name the learner's code never set: never what a variant's raise is (a variant is the reference
with one thing done wrong; it raises on sizes). A pasted Fix line's scores, read before it is set
only where a mask is given, looked like mask_axis_misplaced (a hurried learner's replay)."""


def _same(probe, mine: Answer, theirs, compare) -> bool:
    if isinstance(theirs, str):  # the variant raised here
        expected = probe.expected
        shape = tuple(expected.shape) if isinstance(expected, torch.Tensor) else None
        if mine.error is not None and mine.error.get("type") in _NAMES_ERRORS:
            return False
        return mine.error is not None or (
            isinstance(mine.output, torch.Tensor) and shape is not None and tuple(mine.output.shape) != shape
        )
    if mine.error is not None or mine.output is None:
        return False
    return bool(compare(probe, mine, theirs))


def _informative(theirs) -> bool:
    """A variant's result that tells something: it ran, and not to NaN or inf everywhere."""
    if isinstance(theirs, str):
        return False
    if isinstance(theirs, torch.Tensor) and theirs.is_floating_point():
        return bool(torch.isfinite(theirs).any())
    return True


def variant_matches(answers, hypotheses, probes, bug_id, v, *, compare) -> bool:
    """Whether variant ``v`` of ``bug_id`` matches every probe: both raised (or the learner's output
    has another shape, the way a raise would), or ``compare(probe, answer, variant_output)``. A
    variant that raises, or gives nothing but NaN or inf, on every probe explains nothing (many bugs
    do that)."""
    ran = False
    for a, probe in zip(answers, probes, strict=True):
        theirs = hypotheses.output(bug_id, v, probe)
        if not _same(probe, a, theirs, compare):
            return False
        ran = ran or _informative(theirs)
    return ran


def matching_bug(answers, hypotheses, probes, *, compare, order=None):
    """The first bug id (in ``order``, default the variants' order) with a variant that matches
    every probe (:func:`variant_matches`)."""
    for bug_id in order or hypotheses.variants:
        for v in range(len(hypotheses.variants.get(bug_id, ()))):
            if variant_matches(answers, hypotheses, probes, bug_id, v, compare=compare):
                return bug_id
    return None


_MATMUL = re.compile(
    r"cannot be multiplied|must match the size of tensor b|Expected size for first two "
    r"dimensions of batch2|size mismatch|mat1 and mat2",
    re.IGNORECASE,
)


_DTYPE = re.compile(
    r"expected scalar type \w+ but found|same dtype|dtype to be bool or float or to match|"
    r"can't be cast to the desired output type|expected both vectors to have same dtype",
    re.IGNORECASE,
)


def error_kind(error: dict | None) -> str | None:
    """What a PyTorch error says went wrong: 'contiguous' (view after transpose), 'matmul' (the
    shapes of a product do not line up), 'overflow' (a fill the dtype cannot hold), 'dtype' (two
    dtypes met), or None."""
    if not error:
        return None
    text = error.get("message", "")
    if "view size is not compatible" in text or ("view" in text and "contiguous" in text.lower()):
        return "contiguous"
    if _MATMUL.search(text):
        return "matmul"
    if "without overflow" in text:
        return "overflow"
    if _DTYPE.search(text):
        return "dtype"
    return None
