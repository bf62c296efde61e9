"""check_causal_mask and check_padding_mask: a learner's masks against the reference."""

from __future__ import annotations

import torch

from .. import zoo
from .._validate import broadcast_shape
from ..core import causal_mask, padding_mask
from . import _verdict
from ._run import TIME_LIMIT, call, describe_error, shape_str

__all__ = ["check_causal_mask", "check_padding_mask"]

_CAUSAL_SIZES = (1, 4, 6)
_PADDING_CASES = ((torch.tensor([2, 5, 1, 3]), 5), (torch.tensor([4, 0]), 4))   # batch != n on purpose

_INVERTED_FIX = {
    "causal": "torch.ones(n, n, dtype=torch.bool).tril()   # True = may attend",
    "padding": "(torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # True = real token",
}


def _as_mask(name, value, expected_shape):
    """Return (tensor, complaint): the learner's result as a tensor, or why it cannot be one."""
    if value is None:
        return None, f"{name} returned None. Did the function end without a return statement?"
    if not isinstance(value, torch.Tensor):
        return None, f"{name} returned a {type(value).__name__}, not a torch.Tensor."
    fits = broadcast_shape(tuple(value.shape), tuple(expected_shape)) == tuple(expected_shape)
    if not fits:
        return None, (f"{name} returned shape {shape_str(value.shape)}, which does not broadcast to the "
                      f"scores' shape {shape_str(expected_shape)}.")
    return value, None


def _dtype_note(value, expected):
    """A non-bool mask with the right pattern: say what is wrong with the dtype."""
    if value.dtype == torch.bool:
        return None
    if value.is_floating_point() and bool(torch.isinf(value).any()):
        return ("your mask is an additive float mask (0 and -inf). That is a valid mask for "
                "F.scaled_dot_product_attention, but this exercise asks for a bool mask with True = may "
                "attend; return the bool version, e.g. torch.isfinite(mask).")
    pattern = value != 0
    if torch.equal(pattern.expand(expected.shape), expected.expand(expected.shape)):
        return (f"the pattern is right but the dtype is {value.dtype}. A float or int mask is not read "
                f"as allowed/blocked: a float mask is ADDED to the scores, so 1.0 and 0.0 block "
                f"nothing. Return a bool mask: add .bool() or build it with dtype=torch.bool.")
    return None


def _match(checked, family, got_full, cases_zoo):
    for bug_id, results in cases_zoo.items():
        if all(r is not None and torch.equal(g, r) for g, r in zip(got_full, results, strict=True)):
            fix = _INVERTED_FIX[family] if bug_id == "mask_inverted" else None
            return _verdict.bug_found(checked, bug_id, fix=fix)
    return None


def check_causal_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(n) -> (n, n)`` bool causal mask: query i may attend to keys j <= i (True = may attend).

    Tried with n = 1, 4 and 6. Returns a :class:`CheckResult`.
    """
    name = "check_causal_mask"
    got_full, expected_full = [], []
    for n in _CAUSAL_SIZES:
        expected = causal_mask(n)
        outcome = call(fn, {"n": n}, positional=("n",), time_limit=time_limit)
        if outcome.timed_out:
            return _verdict.problem(name, f"your function did not finish within {time_limit:g} s (n={n}).",
                                    ["Restart the kernel if it is still running."])
        if isinstance(outcome.error, NotImplementedError):
            return _verdict.not_implemented(name, str(outcome.error))
        if outcome.error is not None:
            return _verdict.problem(name, f"your function raised an error for n={n}.",
                                    [describe_error(outcome.error)])
        value, complaint = _as_mask("your function", outcome.value, expected.shape)
        if complaint:
            return _verdict.problem(name, complaint, [f"For n={n} the mask should have shape ({n}, {n})."],
                                    fix="torch.ones(n, n, dtype=torch.bool).tril()")
        note = _dtype_note(value, expected)
        if note:
            return _verdict.problem(name, "the mask is not bool.", [note])
        got_full.append(value.bool().expand(n, n))
        expected_full.append(expected)

    if all(torch.equal(g, e) for g, e in zip(got_full, expected_full, strict=True)):
        return _verdict.passed(name, "correct for n = 1, 4 and 6.",
                               ["Each query sees itself and every earlier position, nothing later."])
    cases_zoo = {bug_id: [fn_(n) for n in _CAUSAL_SIZES] for bug_id, fn_ in zoo.CAUSAL_MASK_BUGS.items()}
    found = _match(name, "causal", got_full, cases_zoo)
    if found:
        return found
    n, got, expected = next((n, g, e) for n, g, e in zip(_CAUSAL_SIZES, got_full, expected_full, strict=True)
                            if not torch.equal(g, e))
    leaks = (got & ~expected).nonzero().tolist()
    missing = (~got & expected).nonzero().tolist()
    notes = [f"For n={n}, {len(leaks)} entries allow what should be blocked and {len(missing)} block what "
             f"should be allowed."]
    if leaks:
        i, j = leaks[0]
        notes.append(f"For example query {i} may attend to key {j}, which comes after it.")
    elif missing:
        i, j = missing[0]
        notes.append(f"For example query {i} may not attend to key {j}, which is not after it.")
    return _verdict.problem(name, "the mask is not the causal pattern, and matches no known bug.", notes,
                            fix="torch.ones(n, n, dtype=torch.bool).tril()")


def check_padding_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(lengths, n)`` -> bool padding mask, True for real tokens (may attend).

    ``lengths`` is a 1-D int tensor (real tokens per sequence, padding at the
    end). The result must act on *key columns* of scores ``(batch, n_q, n_k)``:
    shape ``(batch, 1, n)``, like :func:`attnviz.padding_mask`, or a full
    ``(batch, n, n)`` whose rows all repeat the key pattern.
    """
    name = "check_padding_mask"
    got_full, expected_full = [], []
    for lengths, n in _PADDING_CASES:
        expected = padding_mask(lengths, n).expand(len(lengths), n, n)
        outcome = call(fn, {"lengths": lengths, "n": n}, positional=("lengths", "n"), time_limit=time_limit)
        case = f"lengths={lengths.tolist()}, n={n}"
        if outcome.timed_out:
            return _verdict.problem(name, f"your function did not finish within {time_limit:g} s ({case}).",
                                    ["Restart the kernel if it is still running."])
        if isinstance(outcome.error, NotImplementedError):
            return _verdict.not_implemented(name, str(outcome.error))
        if outcome.error is not None:
            return _verdict.problem(name, f"your function raised an error for {case}.",
                                    [describe_error(outcome.error)])
        value, complaint = _as_mask("your function", outcome.value, expected.shape)
        if complaint:
            notes = [f"For {case} the scores are (batch, n_q, n_k) = {shape_str(expected.shape)}, so the "
                     f"mask should be (batch, 1, n_k) = ({len(lengths)}, 1, {n})."]
            if isinstance(outcome.value, torch.Tensor) and tuple(outcome.value.shape) == (len(lengths), n):
                notes.append("A (batch, n) mask lines batch up with n_q when broadcast; insert the "
                             "query axis: mask[:, None, :].")
            return _verdict.problem(name, complaint, notes, fix=_INVERTED_FIX["padding"])
        note = _dtype_note(value, expected)
        if note:
            return _verdict.problem(name, "the mask is not bool.", [note])
        got_full.append(value.bool().expand(expected.shape))
        expected_full.append(expected)

    if all(torch.equal(g, e) for g, e in zip(got_full, expected_full, strict=True)):
        return _verdict.passed(name, "correct: padding keys are blocked for every query.",
                               ["lengths [2, 5, 1, 3] with n=5, and [4, 0] with n=4."])
    cases_zoo = {bug_id: [fn_(lengths, n).expand(len(lengths), n, n) for lengths, n in _PADDING_CASES]
                 for bug_id, fn_ in zoo.PADDING_MASK_BUGS.items()}
    found = _match(name, "padding", got_full, cases_zoo)
    if found:
        return found
    cases = zip(_PADDING_CASES, got_full, expected_full, strict=True)
    (lengths, n), got, expected = next((c, g, e) for c, g, e in cases if not torch.equal(g, e))
    b, i, j = (got != expected).nonzero()[0].tolist()
    allowed = "may" if bool(got[b, i, j]) else "may not"
    return _verdict.problem(name, "the mask is not the padding pattern, and matches no known bug.", [
        f"With lengths={lengths.tolist()} and n={n}: in sequence {b} (length {int(lengths[b])}) query {i} "
        f"{allowed} attend to key {j}."], fix=_INVERTED_FIX["padding"])
