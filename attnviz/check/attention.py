"""check_attention: run a learner's scaled dot-product attention and name what is wrong."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import zoo
from ..core import scaled_dot_product_attention
from . import _verdict
from ._compare import agrees, max_gap, shape_complaint
from ._run import TIME_LIMIT, call, describe_error, first_tensor, shape_str

__all__ = ["check_attention"]

NAME = "check_attention"
_OUTPUT_DIMS = ("features d_v (last dimension)", "queries n_q")


@dataclass
class Probe:
    """One crafted input. ``live`` marks query rows with at least one key to attend to."""

    name: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None

    @property
    def live(self):
        if self.mask is None:
            return torch.ones(self.q.shape[:-1], dtype=torch.bool)
        return self.mask.any(dim=-1).expand(self.q.shape[:-1])

    @property
    def args(self):
        """Passed positionally; the mask only when there is one, so fn(q, k, v) works unmasked."""
        args = {"q": self.q, "k": self.k, "v": self.v}
        if self.mask is not None:
            args["mask"] = self.mask
        return args

    def shapes(self):
        text = f"q {shape_str(self.q.shape)}, k {shape_str(self.k.shape)}, v {shape_str(self.v.shape)}"
        return text + (f", mask {shape_str(self.mask.shape)}" if self.mask is not None else ", no mask")


def _partial_mask(n_q, n_k, generator, dead_row=None):
    """A bool mask, not symmetric, with every row holding at least one True and one False."""
    while True:
        mask = torch.rand(n_q, n_k, generator=generator) < 0.55
        every_row_mixed = bool(mask.any(-1).all() and (~mask).any(-1).all())
        if every_row_mixed and (n_q != n_k or not torch.equal(mask, mask.T)):
            break
    if dead_row is not None:
        mask[dead_row] = False
    return mask


def _probes():
    """The crafted inputs: n_q != n_k, d_k = 16 (so √d_k = 4, neither 1 nor d_k), d_v apart from
    both, batch and heads, masks that are not symmetric, and a fully masked row."""
    g = torch.Generator().manual_seed(6)

    def randn(*shape):
        return torch.randn(*shape, generator=g)

    d_k = 16
    return [
        Probe("4 queries, 4 keys, no mask", randn(4, d_k), randn(4, d_k), randn(4, 3), None),
        Probe("3 queries, 5 keys, no mask", randn(3, d_k), randn(5, d_k), randn(5, 6), None),
        Probe("batch 2 x 3 heads, 4 queries, 6 keys, no mask",
              randn(2, 3, 4, d_k), randn(2, 3, 6, d_k), randn(2, 3, 6, 5), None),
        Probe("5 queries, 5 keys, a mask", randn(5, d_k), randn(5, d_k), randn(5, 3), _partial_mask(5, 5, g)),
        Probe("3 queries, 5 keys, a mask", randn(3, d_k), randn(5, d_k), randn(5, 6), _partial_mask(3, 5, g)),
        Probe("batch 2 x 3 heads, a (4, 6) mask", randn(2, 3, 4, d_k), randn(2, 3, 6, d_k), randn(2, 3, 6, 5),
              _partial_mask(4, 6, g)),
        Probe("4 queries, 4 keys, query 1 fully masked", randn(4, d_k), randn(4, d_k), randn(4, 3),
              _partial_mask(4, 4, g, dead_row=1)),
        Probe("3 queries, 5 keys, every value 1", randn(3, d_k), randn(5, d_k), torch.ones(5, 2), None),
    ]


_CACHE: dict = {}


def _expected():
    """Probes, the reference outcome for each, and each zoo member's outcomes (computed once)."""
    if not _CACHE:
        probes = _probes()
        _CACHE["probes"] = probes
        _CACHE["reference"] = [scaled_dot_product_attention(p.q, p.k, p.v, p.mask) for p in probes]
        zoo_outcomes = {}
        for bug_id, fn in zoo.ATTENTION_BUGS.items():
            zoo_outcomes[bug_id] = [call(fn, p.args, positional=("q", "k", "v", "mask")) for p in probes]
        _CACHE["zoo"] = zoo_outcomes
    return _CACHE["probes"], _CACHE["reference"], _CACHE["zoo"]


def _consistent(learner, known, probes) -> bool:
    """Does a zoo member's behaviour reproduce the learner's on every probe?"""
    for mine, theirs, probe in zip(learner, known, probes, strict=True):
        if (mine.error is None) != (theirs.error is None):
            return False
        if mine.error is not None:
            continue
        got, _, _ = first_tensor(mine.value)
        expected, _, _ = first_tensor(theirs.value)
        if not agrees(got, expected, probe.live):
            return False
    return True


def _describe_failure(probe, outcome, expected_output):
    if outcome.error is not None:
        return f"On {probe.name} ({probe.shapes()}) your function raised {describe_error(outcome.error)}"
    got, _, _ = first_tensor(outcome.value)
    where = f"On {probe.name} ({probe.shapes()})"
    if got.shape != expected_output.shape:
        return f"{where} {shape_complaint(got.shape, expected_output.shape, _OUTPUT_DIMS)}"
    live_rows = got.detach()[probe.live.expand(got.shape[:-1])]
    if not bool(torch.isfinite(live_rows).all()):
        return f"{where} the output holds NaN or inf in rows that have keys to attend to."
    return (f"{where} the output differs from the correct one by up to "
            f"{max_gap(got, expected_output, probe.live):.3g}.")


def _ones_note(probe, outcome):
    """With every value equal to 1, a correct output is exactly 1: the weights sum to 1 per row."""
    if outcome.error is not None:
        return None
    got, _, _ = first_tensor(outcome.value)
    if got is None or got.shape[:-1] != probe.q.shape[:-1] or got.shape[-1] != probe.v.shape[-1]:
        return None
    low, high = float(got.min()), float(got.max())
    if math.isfinite(low) and math.isfinite(high) and abs(low - 1) < 1e-4 and abs(high - 1) < 1e-4:
        return None
    return (f"With every value equal to 1 the output should be exactly 1 everywhere (each row of "
            f"weights sums to 1), but yours runs from {low:.3g} to {high:.3g}: your weights do not "
            f"sum to 1 over the keys.")


def _weights_ok(weights, expected, live):
    """Returned weights (optional) must match where their shape says they are weights."""
    if weights is None or weights.shape != expected.shape:
        return True
    return agrees(weights, expected, live)


def check_attention(fn, *, time_limit: float = TIME_LIMIT):
    """Check a learner's scaled dot-product attention ``fn(q, k, v, mask=None)``.

    ``q`` is ``(..., n_q, d_k)``, ``k`` ``(..., n_k, d_k)``, ``v`` ``(..., n_k, d_v)``;
    ``mask`` is None or bool broadcasting to ``(..., n_q, n_k)`` with True =
    may attend. ``fn`` returns the output ``(..., n_q, d_v)`` or
    ``(output, weights)``. The inputs include ``n_q != n_k``, a batch of
    heads, masks that are not symmetric and a fully masked query row, where
    any finite result is accepted.

    Returns a :class:`CheckResult` (``.passed``, ``.bug``) that shows itself
    as a verdict. Never raises because of the learner's code.
    """
    if not callable(fn):
        return _verdict.problem(NAME, f"expected a function, got a {type(fn).__name__}.",
                                ["Pass the function itself, without calling it: "
                                 "check_attention(my_attention)."])
    probes, reference, zoo_outcomes = _expected()
    outcomes = []
    for probe in probes:
        outcome = call(fn, probe.args, positional=("q", "k", "v", "mask"), time_limit=time_limit)
        if outcome.timed_out:
            return _verdict.problem(NAME, f"your function did not finish within {time_limit:g} s.", [
                f"On {probe.name} ({probe.shapes()}), tiny inputs that correct code handles in "
                f"milliseconds. Look for a loop that never ends. If it is still running, restart the "
                f"kernel (Kernel > Restart Kernel) to stop it."])
        if isinstance(outcome.error, NotImplementedError):
            return _verdict.not_implemented(NAME, str(outcome.error))
        if outcome.error is None:
            _, _, complaint = first_tensor(outcome.value)
            if complaint:
                return _verdict.problem(NAME, "your function " + complaint,
                                        [f"On {probe.name} ({probe.shapes()})."],
                                        fix="return output   # or: return output, weights")
        outcomes.append(outcome)

    modified = sorted({name for o in outcomes for name in o.modified})
    modified_note = (f"It changed {', '.join(modified)} in place." if modified else None)
    live_right, dead_finite, weights_right = [], [], []
    for probe, outcome, (expected, expected_weights) in zip(probes, outcomes, reference, strict=True):
        got, weights, _ = (None, None, None) if outcome.error else first_tensor(outcome.value)
        live_right.append(got is not None and agrees(got, expected, probe.live))
        dead_finite.append(got is None or got.shape != expected.shape
                           or bool(torch.isfinite(got.detach()[~probe.live.expand(got.shape[:-1])]).all()))
        weights_right.append(got is None or _weights_ok(weights, expected_weights, probe.live))

    if all(live_right):
        if not all(dead_finite):
            return _verdict.bug_found(NAME, "nan_on_fully_masked_row", [
                "Everything else matches: every query that has a key to attend to gets the right output.",
                *([modified_note] if modified_note else [])])
        if modified:
            return _verdict.bug_found(NAME, "modifies_inputs",
                                      ["The outputs are right.", modified_note])
        if not all(weights_right):
            bad = probes[weights_right.index(False)]
            return _verdict.problem(NAME, "the output is right but the weights you return are not.", [
                f"On {bad.name} ({bad.shapes()}) the second thing returned has the weights' shape "
                f"but different numbers. Return the softmax of the scaled, masked scores."])
        return _verdict.passed(NAME, f"correct on all {len(probes)} test inputs.", [
            "n_q ≠ n_k, a batch of heads, masks that are not symmetric, and a fully masked query "
            "row (your result there is finite, as it should be)."])

    for bug_id, known in zoo_outcomes.items():
        if bug_id != "nan_on_fully_masked_row" and _consistent(outcomes, known, probes):
            first_bad = live_right.index(False)
            notes = [_describe_failure(probes[first_bad], outcomes[first_bad], reference[first_bad][0])]
            if modified_note:
                notes.append(modified_note)
            return _verdict.bug_found(NAME, bug_id, notes)

    right = [p.name for p, ok in zip(probes, live_right, strict=True) if ok]
    wrong = [p.name for p, ok in zip(probes, live_right, strict=True) if not ok]
    first_bad = live_right.index(False)
    notes = [_describe_failure(probes[first_bad], outcomes[first_bad], reference[first_bad][0])]
    ones = _ones_note(probes[-1], outcomes[-1])
    if ones:
        notes.append(ones)
    notes.append(f"Right on: {'; '.join(right) or 'none of the inputs'}. Wrong on: {'; '.join(wrong)}.")
    batched = [p.q.dim() > 2 for p in probes]
    if all(ok != b for ok, b in zip(live_right, batched, strict=True)):
        notes.append("Only the inputs with batch and head dimensions in front go wrong: index from the end, "
                     "k.transpose(-2, -1) rather than k.T, and q.shape[-1] rather than q.shape[1].")
    if not all(dead_finite):
        notes.append("A fully masked query row comes out as NaN.")
    if modified_note:
        notes.append(modified_note)
    return _verdict.problem(
        NAME, "the output is not right, and it does not match any single known bug.", notes,
        fix="scores = q @ k.transpose(-2, -1) / math.sqrt(d_k); mask blocked scores with -inf; "
            "softmax over dim=-1; weights @ v")
