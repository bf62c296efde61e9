"""check_causal_mask and check_padding_mask: a learner's masks against the checker's own."""

from __future__ import annotations

import inspect

import torch

from .._validate import broadcast_shape
from . import _verdict
from ._reference import causal, in_neutral, padding
from ._run import TIME_LIMIT, Odd, describe_error, guarded_call, rebuild, shape_str
from ._sandbox import run_steps
from ._stops import stop_verdict, where_note

__all__ = ["check_causal_mask", "check_padding_mask"]

_CAUSAL_SIZES = (1, 4, 6)
_RECTANGLES = ((3, 5), (5, 3))  # tried when the function takes (n_q, n_k)
_PADDING_CASES = (([2, 5, 1, 3], 5), ([4, 0], 4), ([2, 3, 1], 6))  # batch != n; the last max(lengths) < n

_INVERTED_FIX = {
    "causal": "torch.ones(n, n, dtype=torch.bool).tril()   # True = may attend",
    "padding": "(torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # True = real token",
}

_CAUSAL_HYPOTHESES = {
    "causal_future_visible": lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
    "causal_excludes_self": lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),
    "mask_inverted": lambda n: torch.ones(n, n, dtype=torch.bool).triu(1),
    "causal_off_by_one": lambda n: torch.ones(n, n, dtype=torch.bool).tril(1),
}
_PADDING_HYPOTHESES = {
    "padding_masks_queries": lambda lengths, n: padding(lengths, n).transpose(-2, -1),
    "mask_inverted": lambda lengths, n: ~padding(lengths, n),
}


def _as_mask(value, expected_shape):
    """Return (tensor, complaint): the learner's result as a tensor, or why it cannot be one."""
    if value is None:
        return None, "your function returned None. Did the function end without a return statement?"
    if isinstance(value, Odd):
        return None, f"your function returned {value.what}, not a bool torch.Tensor."
    if not isinstance(value, torch.Tensor):
        return None, f"your function returned a {type(value).__name__}, not a torch.Tensor."
    fits = broadcast_shape(tuple(value.shape), tuple(expected_shape)) == tuple(expected_shape)
    if not fits:
        return None, (
            f"your function returned shape {shape_str(value.shape)}, which does not broadcast to the "
            f"scores' shape {shape_str(expected_shape)}."
        )
    return value, None


def _dtype_note(value, expected):
    """A non-bool mask with the right pattern: say what is wrong with the dtype."""
    if value.dtype == torch.bool:
        return None
    if value.is_floating_point() and bool(torch.isinf(value).any()):
        return (
            "your mask is an additive float mask (0 and -inf). That is a valid mask for "
            "F.scaled_dot_product_attention, but this exercise asks for a bool mask with True = may "
            "attend; return the bool version, e.g. torch.isfinite(mask)."
        )
    pattern = value != 0
    if torch.equal(pattern.expand(expected.shape), expected.expand(expected.shape)):
        return (
            f"the pattern is right but the dtype is {str(value.dtype).replace('torch.', '')}. A float or int "
            f"mask is not read as allowed/blocked: a float mask is ADDED to the scores, so 1.0 and 0.0 block "
            f"nothing. Return a bool mask: add .bool() or build it with dtype=torch.bool."
        )
    return None


def _takes_two(fn):
    try:
        inspect.signature(fn).bind(3, 5)
        return True
    except (TypeError, ValueError):
        return False


def _collect(name, fn, cases, arg_names, time_limit):
    """Run every case in one child. Returns (results, verdict_or_None); results[i] is
    (value, modified)."""
    steps = [
        lambda case=case: guarded_call(fn, dict(zip(arg_names, case, strict=True)), arg_names)
        for case in cases
    ]
    run = run_steps(steps, time_limit=time_limit, budget=time_limit)
    notes = [run.note] if not run.isolated else []
    labels = [
        f"For {', '.join(f'{a}={_show(c)}' for a, c in zip(arg_names, case, strict=True))}" for case in cases
    ]
    stopped = stop_verdict(name, run, labels, time_limit, notes)
    if stopped:
        return None, stopped
    results = []
    for step, label in zip(run.steps, labels, strict=True):
        if step.status == "error":
            if step.error.get("not_implemented"):
                return None, _verdict.not_implemented(name, step.error["message"])
            return None, _verdict.problem(
                name,
                f"your function raised {step.error['type']}.",
                [f"{label}: {describe_error(step.error)}{where_note(step.error)}"] + notes,
            )
        results.append((rebuild(step.value["value"]), tuple(step.value["modified"])))
    return results, None


def _show(value):
    return value.tolist() if isinstance(value, torch.Tensor) else value


def _first_difference(label, got, expected, future_word=True):
    leaks = (got & ~expected).nonzero().tolist()
    missing = (~got & expected).nonzero().tolist()
    notes = [
        f"{label}, {len(leaks)} entries allow what should be blocked and {len(missing)} block what "
        f"should be allowed."
    ]
    if leaks:
        i, j = leaks[0][-2:]
        notes.append(f"For example query {i} may attend to key {j}, which comes after it.")
    elif missing:
        i, j = missing[0][-2:]
        notes.append(f"For example query {i} may not attend to key {j}, which is not after it.")
    return notes


@in_neutral
def check_causal_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(n) -> (n, n)`` bool causal mask: query i may attend to keys j <= i (True = may attend).

    Tried with n = 1, 4 and 6; if ``fn`` also takes ``(n_q, n_k)``, with (3, 5) and (5, 3) too
    (the triangle starts at the top-left corner, like ``attnviz.causal_mask``). Returns a
    :class:`CheckResult`.
    """
    name = "check_causal_mask"
    if not callable(fn):
        return _verdict.problem(
            name,
            f"expected a function, got a {type(fn).__name__}.",
            ["Pass the function itself: check_causal_mask(my_causal_mask)."],
        )
    rectangles = _RECTANGLES if _takes_two(fn) else ()
    square, squares_done = [(n,) for n in _CAUSAL_SIZES], None
    results, verdict = _collect(name, fn, square, ("n",), time_limit)
    if verdict:
        return verdict
    if rectangles:
        squares_done = results
        more, verdict = _collect(name, fn, rectangles, ("n_q", "n_k"), time_limit)
        if verdict:
            return verdict
        results = squares_done + more
    cases = square + list(rectangles)
    got_full, expected_full = [], []
    for case, (value, _) in zip(cases, results, strict=True):
        expected = causal(*case)
        mask, complaint = _as_mask(value, expected.shape)
        squares_right = all(torch.equal(g, e) for g, e in zip(got_full, expected_full, strict=True))
        if complaint and len(case) == 2 and squares_right:
            return _verdict.bug_found(
                name, "causal_not_rectangular", [f"For (n_q, n_k) = {case}: {complaint}"]
            )
        if complaint:
            return _verdict.problem(
                name,
                complaint,
                [f"For {case} the mask should have shape {shape_str(expected.shape)}."],
                fix="torch.ones(n, n, dtype=torch.bool).tril()",
            )
        note = _dtype_note(mask, expected)
        if note:
            return _verdict.problem(name, "the mask is not bool.", [note])
        got_full.append(mask.bool().expand(expected.shape))
        expected_full.append(expected)
    right = [torch.equal(g, e) for g, e in zip(got_full, expected_full, strict=True)]
    n_square = len(square)
    if all(right):
        tried = "n = 1, 4 and 6" + (" and (n_q, n_k) = (3, 5), (5, 3)" if rectangles else "")
        return _verdict.passed(
            name,
            f"correct for {tried}.",
            ["Each query sees itself and every earlier position, nothing later."],
        )
    if all(right[:n_square]):
        i = right.index(False)
        return _verdict.bug_found(
            name,
            "causal_not_rectangular",
            _first_difference(f"For (n_q, n_k) = {cases[i]}", got_full[i], expected_full[i]),
        )
    for bug_id, make in _CAUSAL_HYPOTHESES.items():
        if all(torch.equal(g, make(n)) for g, (n,) in zip(got_full[:n_square], square, strict=True)):
            fix = _INVERTED_FIX["causal"] if bug_id == "mask_inverted" else None
            return _verdict.bug_found(name, bug_id, fix=fix)
    i = right.index(False)
    return _verdict.problem(
        name,
        "the mask is not the causal pattern, and matches no known bug.",
        _first_difference(f"For n={cases[i]}", got_full[i], expected_full[i]),
        fix="torch.ones(n, n, dtype=torch.bool).tril()",
    )


def _batch_of_one(fn, time_limit):
    """(right, verdict): is ``fn`` right on a batch of one (lengths [3], n = 5)? Used to name
    batch_one_only; ``verdict`` is a final one (a time-out, an exit, a stub) or None."""
    lengths = torch.tensor([3])
    results, verdict = _collect("check_padding_mask", fn, [(lengths, 5)], ("lengths", "n"), time_limit)
    if verdict is not None:
        stopped = verdict.status != "problem" or "raised" not in verdict.headline
        return False, (verdict if stopped else None)  # a time-out, an exit or a stub: final
    value, expected = results[0][0], padding(lengths, 5).expand(1, 5, 5)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
        return False, None
    if broadcast_shape(tuple(value.shape), (1, 5, 5)) != (1, 5, 5):
        return False, None
    return torch.equal(value.expand(1, 5, 5), expected), None


@in_neutral
def check_padding_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(lengths, n)`` -> bool padding mask, True for real tokens (may attend).

    ``lengths`` is a 1-D int64 tensor (real tokens per sequence, padding at the
    end; its maximum may be less than ``n``). The result must act on *key
    columns* of scores ``(batch, n_q, n_k)``: shape ``(batch, 1, n)``, like
    :func:`attnviz.padding_mask`, or a full ``(batch, n, n)`` whose rows all
    repeat the key pattern. ``lengths`` must not be changed.
    """
    name = "check_padding_mask"
    if not callable(fn):
        return _verdict.problem(
            name,
            f"expected a function, got a {type(fn).__name__}.",
            ["Pass the function itself: check_padding_mask(my_padding_mask)."],
        )
    single, stopped = _batch_of_one(fn, time_limit)
    if stopped:
        return stopped
    cases = [(torch.tensor(lengths), n) for lengths, n in _PADDING_CASES]
    results, verdict = _collect(name, fn, cases, ("lengths", "n"), time_limit)
    if verdict:
        if single and verdict.status == "problem":
            return _verdict.bug_found(name, "batch_one_only", verdict.observed)
        return verdict
    got_full, expected_full = [], []
    for (lengths, n), (value, _) in zip(cases, results, strict=True):
        batch = len(lengths)
        expected = padding(lengths, n).expand(batch, n, n)
        mask, complaint = _as_mask(value, expected.shape)
        case = f"lengths={lengths.tolist()}, n={n}"
        if complaint:
            notes = [
                f"For {case} the scores are (batch, n_q, n_k) = {shape_str(expected.shape)}, so the "
                f"mask should be (batch, 1, n_k) = ({batch}, 1, {n})."
            ]
            if isinstance(value, torch.Tensor) and tuple(value.shape) == (batch, n):
                notes.append(
                    "A (batch, n) mask lines batch up with n_q when broadcast; insert the "
                    "query axis: mask[:, None, :]."
                )
            if (
                isinstance(value, torch.Tensor)
                and value.dim() >= 1
                and value.shape[-1] == int(lengths.max()) < n
            ):
                notes.append(
                    f"Its last dimension is max(lengths) = {int(lengths.max())}, not n = {n}: "
                    f"build it over torch.arange(n)."
                )
            return _verdict.problem(name, complaint, notes, fix=_INVERTED_FIX["padding"])
        note = _dtype_note(mask, expected)
        if note:
            return _verdict.problem(name, "the mask is not bool.", [note])
        got_full.append(mask.bool().expand(expected.shape))
        expected_full.append(expected)
    modified = any("lengths" in changed for _, changed in results)
    right = all(torch.equal(g, e) for g, e in zip(got_full, expected_full, strict=True))
    if right and modified:
        return _verdict.bug_found(name, "padding_lengths_modified", ["The masks are right."])
    if right:
        return _verdict.passed(
            name,
            "correct: padding keys are blocked for every query.",
            [
                "lengths [2, 5, 1, 3] with n=5, [4, 0] with n=4, and [2, 3, 1] with n=6 (longer than any "
                "sequence)."
            ],
        )
    if single:
        return _verdict.bug_found(
            name, "batch_one_only", ["Right for lengths=[3], n=5 (a batch of one), wrong for larger batches."]
        )
    for bug_id, make in _PADDING_HYPOTHESES.items():
        if all(
            torch.equal(g, make(lengths, n).expand(g.shape))
            for g, (lengths, n) in zip(got_full, cases, strict=True)
        ):
            fix = _INVERTED_FIX["padding"] if bug_id == "mask_inverted" else None
            return _verdict.bug_found(name, bug_id, fix=fix)
    pairs = zip(cases, got_full, expected_full, strict=True)
    (lengths, n), got, expected = next((c, g, e) for c, g, e in pairs if not torch.equal(g, e))
    b, i, j = (got != expected).nonzero()[0].tolist()
    allowed = "may" if bool(got[b, i, j]) else "may not"
    notes = [
        f"With lengths={lengths.tolist()} and n={n}: in sequence {b} (length {int(lengths[b])}) query {i} "
        f"{allowed} attend to key {j}."
    ]
    if modified:
        notes.append("It also changed lengths in place.")
    return _verdict.problem(
        name,
        "the mask is not the padding pattern, and matches no known bug.",
        notes,
        fix=_INVERTED_FIX["padding"],
    )
