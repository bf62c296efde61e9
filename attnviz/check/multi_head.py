"""check_multi_head: run a learner's multi-head attention module with known weights."""

from __future__ import annotations

import torch
from torch import nn

from .. import zoo
from . import _verdict
from ._compare import agrees, max_gap, shape_complaint
from ._run import TIME_LIMIT, call, describe_error, first_tensor, shape_str

__all__ = ["check_multi_head"]

NAME = "check_multi_head"
D_MODEL, N_HEADS = 12, 3          # d_k = 4: √d_k = 2 is neither d_k nor √d_model
_OUTPUT_DIMS = ("features d_model (last dimension)", "positions n", "batch")
_LAYERS = ("W_q", "W_k", "W_v", "W_o")


def _probes():
    g = torch.Generator().manual_seed(5)
    x = [torch.randn(2, 5, D_MODEL, generator=g), torch.randn(3, 4, D_MODEL, generator=g),
         torch.randn(2, 4, D_MODEL, generator=g)]
    m1 = torch.tensor([[1, 0, 1, 0, 0], [1, 1, 0, 0, 1], [0, 1, 1, 0, 0], [1, 0, 1, 1, 0], [0, 0, 1, 1, 0]],
                      dtype=torch.bool)             # not symmetric; every row has a True and a False
    m2 = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 1, 0]],
                      dtype=torch.bool)             # position 1 may attend to nothing
    weights = {name: torch.randn(D_MODEL, D_MODEL, generator=g) / D_MODEL ** 0.5 for name in _LAYERS}
    return [("batch 2, 5 positions, no mask", x[0], None),
            ("batch 3, 4 positions, no mask", x[1], None),
            ("batch 2, 5 positions, a (5, 5) mask", x[0], m1),
            ("batch 2, 4 positions, a (4, 4) mask with position 1 fully masked", x[2], m2)], weights


def _load(module, weights):
    """Copy the known weights into W_q, W_k, W_v, W_o; returns a complaint or None."""
    for name in _LAYERS:
        layer = getattr(module, name, None)
        weight = getattr(layer, "weight", None)
        if not isinstance(weight, torch.Tensor):
            return (f"your module has no {name} layer with a .weight; the exercise asks for "
                    f"self.{name} = nn.Linear(d_model, d_model).")
        if tuple(weight.shape) != (D_MODEL, D_MODEL):
            return (f"self.{name}.weight has shape {shape_str(weight.shape)}, but with d_model={D_MODEL} "
                    f"it should be ({D_MODEL}, {D_MODEL}): nn.Linear(d_model, d_model).")
        with torch.no_grad():
            weight.copy_(weights[name])
            bias = getattr(layer, "bias", None)
            if isinstance(bias, torch.Tensor):
                bias.zero_()
    return None


def _build(cls, weights, time_limit):
    outcome = call(lambda: cls(D_MODEL, N_HEADS), {}, time_limit=time_limit)
    if outcome.error is None and not outcome.timed_out:
        module = outcome.value
        if not isinstance(module, nn.Module):
            return outcome, f"{cls!r}({D_MODEL}, {N_HEADS}) gave a {type(module).__name__}, not an nn.Module."
        complaint = _load(module, weights)
        module.eval()
        return outcome, complaint
    return outcome, None


def _run(module, probes, time_limit):
    forward = (lambda x, mask=None: module(x) if mask is None else module(x, mask=mask))
    results = []
    for _, x, mask in probes:
        args = {"x": x} if mask is None else {"x": x, "mask": mask}
        results.append(call(forward, args, positional=("x",), time_limit=time_limit))
    return results


_CACHE: dict = {}


def _expected():
    if not _CACHE:
        probes, weights = _probes()
        _CACHE["probes"], _CACHE["weights"] = probes, weights
        reference, _ = _build(zoo.MultiHeadWith, weights, TIME_LIMIT)
        _CACHE["reference"] = [first_tensor(o.value)[0] for o in _run(reference.value, probes, TIME_LIMIT)]
        candidates = dict(zoo.MULTI_HEAD_BUGS)
        for bug_id, fn in zoo.ATTENTION_BUGS.items():
            if bug_id != "nan_on_fully_masked_row":
                candidates[bug_id] = (lambda d, h, fn=fn: zoo.MultiHeadWith(d, h, attention=fn))
        known = {}
        for bug_id, cls in candidates.items():
            built, _ = _build(cls, weights, TIME_LIMIT)
            known[bug_id] = _run(built.value, probes, TIME_LIMIT)
        _CACHE["zoo"] = known
    return _CACHE["probes"], _CACHE["weights"], _CACHE["reference"], _CACHE["zoo"]


def _same_outcome(mine, theirs, live) -> bool:
    if (mine.error is None) != (theirs.error is None):
        return False
    return mine.error is not None or agrees(first_tensor(mine.value)[0], first_tensor(theirs.value)[0], live)


def _live(x, mask):
    if mask is None:
        return torch.ones(x.shape[:-1], dtype=torch.bool)
    return mask.any(dim=-1).expand(x.shape[:-1])


def check_multi_head(cls, *, time_limit: float = TIME_LIMIT):
    """Check a learner's multi-head attention class.

    ``cls(d_model, n_heads)`` must build an ``nn.Module`` with ``nn.Linear``
    layers ``W_q``, ``W_k``, ``W_v``, ``W_o`` (each d_model -> d_model; a bias,
    if present, is set to 0) and ``forward(x, mask=None)``: x is
    ``(batch, n, d_model)``, mask None or bool ``(n, n)`` (True = may attend,
    the same for every head and batch entry); it returns the output
    ``(batch, n, d_model)`` or ``(output, weights)``. The checker builds it
    with d_model=12, n_heads=3, copies known weights in, and compares with
    the reference on several inputs, one with a fully masked position (any
    finite output accepted there).
    """
    if not isinstance(cls, type) and not callable(cls):
        return _verdict.problem(NAME, f"expected a class, got a {type(cls).__name__}.",
                                ["Pass the class itself: check_multi_head(MyMultiHeadAttention)."])
    probes, weights, reference, known = _expected()
    built, complaint = _build(cls, weights, time_limit)
    if built.timed_out:
        return _verdict.problem(NAME, f"building the module took more than {time_limit:g} s.",
                                ["Restart the kernel if it is still running."])
    if isinstance(built.error, NotImplementedError):
        return _verdict.not_implemented(NAME, str(built.error))
    if built.error is not None:
        return _verdict.problem(NAME, f"building cls({D_MODEL}, {N_HEADS}) failed.",
                                [f"It raised {describe_error(built.error)}"])
    if complaint:
        return _verdict.problem(NAME, complaint, [])
    outcomes = _run(built.value, probes, time_limit)
    for (name, _, _), outcome in zip(probes, outcomes, strict=True):
        if outcome.timed_out:
            return _verdict.problem(NAME, f"forward did not finish within {time_limit:g} s.", [
                f"On {name}, a tiny input. Look for a loop that never ends; restart the kernel if it "
                f"is still running."])
        if isinstance(outcome.error, NotImplementedError):
            return _verdict.not_implemented(NAME, str(outcome.error))
        if outcome.error is None and first_tensor(outcome.value)[2]:
            return _verdict.problem(NAME, "forward " + first_tensor(outcome.value)[2], [f"On {name}."])

    live_right, dead_finite = [], []
    for (_, x, mask), outcome, expected in zip(probes, outcomes, reference, strict=True):
        got = None if outcome.error else first_tensor(outcome.value)[0]
        live = _live(x, mask)
        live_right.append(got is not None and agrees(got, expected, live))
        dead_finite.append(got is None or got.shape != expected.shape
                           or bool(torch.isfinite(got.detach()[~live]).all()))
    modified = sorted({n for o in outcomes for n in o.modified})
    modified_note = f"forward changed {', '.join(modified)} in place." if modified else None

    if all(live_right):
        if not all(dead_finite):
            return _verdict.bug_found(NAME, "nan_on_fully_masked_row",
                                      ["Every position that has a key to attend to gets the right output."])
        if modified:
            return _verdict.bug_found(NAME, "modifies_inputs", ["The outputs are right.", modified_note])
        return _verdict.passed(NAME, f"correct on all {len(probes)} test inputs.", [
            f"d_model={D_MODEL}, n_heads={N_HEADS} and known weights: no mask, a mask that "
            f"is not symmetric, and a fully masked position."])

    first_bad = live_right.index(False)
    name, x, mask = probes[first_bad]
    outcome, expected = outcomes[first_bad], reference[first_bad]
    if outcome.error is not None:
        note = f"On {name} (x {shape_str(x.shape)}) forward raised {describe_error(outcome.error)}"
    else:
        got = first_tensor(outcome.value)[0]
        if got.shape != expected.shape:
            note = f"On {name}: {shape_complaint(got.shape, expected.shape, _OUTPUT_DIMS)}"
        else:
            note = (f"On {name} the output differs from the correct one by up to "
                    f"{max_gap(got, expected, _live(x, mask)):.3g}.")
    for bug_id, theirs in known.items():
        if all(_same_outcome(mine, known_one, _live(x, k))
               for mine, known_one, (_, x, k) in zip(outcomes, theirs, probes, strict=True)):
            return _verdict.bug_found(NAME, bug_id, [note] + ([modified_note] if modified_note else []))
    right = [p[0] for p, ok in zip(probes, live_right, strict=True) if ok]
    notes = [note, f"Right on: {'; '.join(right) or 'none of the inputs'}."]
    if modified_note:
        notes.append(modified_note)
    return _verdict.problem(
        NAME, "the output is not right, and it does not match any single known bug.", notes,
        fix="split: view(B, n, h, d_k).transpose(1, 2); attention per head with / √d_k; merge: "
            "transpose(1, 2).contiguous().view(B, n, d_model); then W_o")
