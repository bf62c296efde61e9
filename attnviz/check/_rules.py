"""The shared rules every checker decides with, in their one order (:data:`RULES`).

Each rule reads a :class:`._engine.Trial` and returns a verdict or None; :func:`._engine.decide`
runs them in order and the first verdict wins. A rule's ``when`` says whether it applies always,
only when every main probe is right ('right': the edges and the pass), or only when one is wrong
('wrong': which bug). The order:

1. what happened, whatever the outputs: stopped (timed out, over budget, the process ended), not
   written yet (``NotImplementedError``), the set-up failed (building the module), returned
   something unreadable, two calls on the same input differ (dropout);
2. every main probe right: NaN with large scores, NaN on a fully masked row, inputs changed in
   place, gradients, the output's dtype, float64 and float16 inputs, large scores, then the pass;
3. a main probe wrong: a tell-tale error (``.view`` after ``transpose``; a boolean index that needs the
   mask's exact shape), a hypothesis that
   reproduces every main output, right only for a batch of one, wrong only for a batch of one (a bare
   squeeze), inputs changed in place, every product failing, raised, and finally what happened with
   no known bug.

A checker keeps this list and changes only what differs (:func:`rules`).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import torch

from . import _verdict
from ._compare import agrees, rows
from ._diagnose import error_kind, matching_bug
from ._engine import Rule, Trial, default_compare, dtype_name, live_queries, live_rows
from ._run import describe_error
from ._stops import stop_verdict, where_note

NO_KNOWN_BUG = ", and it matches no known bug."   # how a headline that names no bug ends

__all__ = ["NO_KNOWN_BUG", "RULES", "rules"]


def stopped(t):
    labels = [p.where for p in t.probes]
    return stop_verdict(t.spec.name, t.run, labels, t.time_limit, t.notes)


def not_written(t):
    """The stub's raise ran, and nothing else did (a NotImplementedError on some inputs only is the
    learner's own, and their code is judged as raising there)."""
    if any(ans.error is None for probe, ans in t.pairs() if probe.kind != "setup"):
        return None
    for ans in t.answers:
        if ans.error is not None and ans.error.get("not_implemented"):
            return _verdict.not_implemented(t.spec.name, ans.error["message"])
    return None


def setup_failed(t):
    """A probe of kind 'setup' (building the module) raised or gave something unusable."""
    for probe, ans in t.pairs("setup"):
        if ans.error is not None:
            extra = probe.facts.get("raised_note", "")
            return t.problem(
                f"{probe.name[0].lower()}{probe.name[1:]} failed.",
                [f"It raised {describe_error(ans.error)}{where_note(ans.error)}.{extra}"],
            )
        if ans.complaint:
            return t.problem(ans.complaint)
    return None


def returned_odd(t):
    for probe, ans in t.pairs():
        if ans.complaint and probe.kind != "setup":
            return t.problem(
                f"{t.spec.subject} {ans.complaint}", [f"{probe.where}."], fix=t.spec.complaint_fix
            )
    return None


def _same_output(one, other):
    return (isinstance(one.output, torch.Tensor) and isinstance(other.output, torch.Tensor)
            and one.output.shape == other.output.shape
            and torch.equal(one.output.nan_to_num(), other.output.nan_to_num()))


def nondeterministic(t):
    repeats = t.pairs("repeat")
    for probe, ans in repeats:
        first_probe, first = t.named(probe.same_as)
        if (
            first is not None
            and isinstance(ans.output, torch.Tensor)
            and isinstance(first.output, torch.Tensor)
            and ans.output.shape == first.output.shape
            and not torch.equal(ans.output.nan_to_num(), first.output.nan_to_num())
        ):
            seed = first_probe.facts.get("seed")
            reset = [a for p, a in repeats if p.same_as == probe.same_as and seed is not None
                     and p.facts.get("seed") == seed]       # the random numbers reset to the first call's
            if reset and not all(_same_output(a, first) for a in reset):
                return t.problem(       # not randomness: the same draws gave another output
                    f"{t.spec.subject} gave another output for the same input after other calls",
                    [f"Called on {first_probe.name} first, then again after the other inputs, with the "
                     "random numbers reset to the first call's, it gave another output: not dropout's "
                     "randomness. Something a call leaves behind changes the later calls: a mask, tensor "
                     "or cache stored on self (or a global) that is used again."],
                    fix="keep forward's inputs in forward: use the mask passed to this call (mask=None: "
                        "no mask), and store nothing on self",
                )
            return t.bug(
                "dropout_left_on",
                f"{t.spec.subject} gave two different outputs for the same input",
                [f"Called twice on {first_probe.name}, it gave two different outputs."],
            )
    return None


def _finite(probe, ans):
    return isinstance(ans.output, torch.Tensor) and bool(torch.isfinite(live_rows(probe, ans.output)).all())


def _dead_finite(probe, ans):
    out = ans.output
    if not isinstance(out, torch.Tensor) or probe.live is None or out.shape[:-1] != probe.live.shape:
        return True
    return bool(torch.isfinite(rows(out, ~probe.live)).all())


def large_scores_nan(t):
    probe, ans = t.one("large")
    if probe is not None and isinstance(ans.output, torch.Tensor) and not _finite(probe, ans):
        return t.bug(
            "softmax_overflow",
            f"{t.spec.subject} returned NaN or inf when the scores are large",
            [
                f"{probe.where} the output holds NaN or inf: exp(scores) / sum without subtracting the "
                f"row maximum (torch.softmax does that for you)."
            ],
        )
    return None


def dead_rows_nan(t):
    probe = next((p for p, a in t.main if not _dead_finite(p, a)), None)
    if probe is not None:
        return t.bug(
            "nan_on_fully_masked_row",
            f"{t.spec.subject} returned NaN on a fully masked query row",
            [
                f"{probe.where} a query with no key to attend to comes out NaN; every query that has "
                f"a key to attend to gets the right output."
            ],
        )
    return None


def inputs_modified(t):
    if t.modified:
        changed = ", ".join(t.modified)
        observed = [] if t.all_right else [t.describe(*t.first_wrong())]
        return t.bug(
            t.spec.words.get("modified_bug", "modifies_inputs"),
            f"{t.spec.subject} changed {changed} in place",
            observed + [f"It changed {changed} in place." + (" The outputs are right." * t.all_right)],
        )
    return None


def main_dtype(t):
    for probe, ans in t.main:
        want = probe.facts.get("dtype", torch.float32)
        if isinstance(ans.output, torch.Tensor) and ans.output.dtype != want:
            want = dtype_name(torch.empty(0, dtype=want))
            return t.bug(
                "dtype_changed",
                f"{t.spec.subject} returned {dtype_name(ans.output)} for {want} inputs",
                [f"{probe.where} the output is {dtype_name(ans.output)}."],
            )
    return None


_DTYPE_FIX = (
    "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # replaces the blocked scores in "
    "their own dtype: no float mask to build, and none to add (in float16 an added minimum overflows)"
)


_CAST_FIX = ("no .float() on the way, and dtype=scores.dtype for any tensor you build: "
             "torch.zeros(mask.shape, dtype=scores.dtype)")


def other_dtypes(t):
    """float64 and float16 probes: raised, a dtype changed, NaN in float16, wrong numbers."""
    for kind in ("float64", "float16"):
        for probe, ans in t.pairs(kind):
            want = probe.facts["dtype"]
            word = dtype_name(torch.empty(0, dtype=want))
            if ans.error is not None:
                what = error_kind(ans.error)
                happened = f"{t.spec.subject} raised {ans.error['type']} on {word} inputs"
                if kind == "float16" and what == "overflow":
                    return t.bug("fill_overflows_float16", happened, [t.describe(probe, ans)])
                if kind == "float64" and what == "overflow":
                    return t.problem(f"{happened}.", [
                        t.describe(probe, ans),
                        "A float64 number too large for float32, such as torch.finfo(torch.float64).min, "
                        "went into a float32 tensor: one your code built (torch.where(mask, 0.0, fill) with "
                        "two Python numbers, torch.zeros(...), torch.tensor(...)) takes the default dtype, "
                        "float32."],
                        fix="scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # in the "
                            "scores' own dtype")
                if what == "dtype":
                    return t.bug(
                        "dtype_changed",
                        happened,
                        [
                            t.describe(probe, ans),
                            f"A tensor built inside your code (torch.zeros(...), torch.tensor(...), a bool "
                            f"mask times a Python number such as 1e9 * ~mask) is float32, the default dtype, "
                            f"and meets {word} ones.",
                        ],
                        fix=_DTYPE_FIX,
                    )
                return t.problem(f"{happened}.", [t.describe(probe, ans)])
            if not isinstance(ans.output, torch.Tensor):
                continue
            if ans.output.dtype != want:
                observed = [f"{probe.where} the output is {dtype_name(ans.output)}."]
                if ans.output.dtype == torch.float32:
                    observed.append(
                        "Something in your code made float32: a .float() or .to(torch.float32), or a float32 "
                        "tensor you built (torch.zeros(mask.shape) for an additive mask, torch.tensor(...))."
                    )
                return t.bug(
                    "dtype_changed",
                    f"{t.spec.subject} returned {dtype_name(ans.output)} for {word} inputs",
                    observed,
                    fix=_CAST_FIX if ans.output.dtype == torch.float32 else None,
                )
            if kind == "float16" and (not _finite(probe, ans) or not _dead_finite(probe, ans)):
                return t.bug(
                    "fill_overflows_float16",
                    f"{t.spec.subject} returned NaN or inf on float16 inputs",
                    [f"{probe.where} the output holds NaN or inf, although float32 and float64 are fine."],
                )
            if kind == "float64" and (not _finite(probe, ans) or not _dead_finite(probe, ans)):
                why = ("Somewhere the float64 scores pass through float32: softmax(..., dtype=torch.float32) "
                       "(as Hugging Face's models do for float16), a .float(), or a float32 tensor you "
                       "built (a bool mask times a number is one). In float32, "
                       "torch.finfo(torch.float64).min is -inf, so a fully masked row's softmax becomes "
                       "0/0 = NaN.")
                if not _finite(probe, ans):     # rows with keys to attend to are NaN too: mask * fill
                    why = ("Your rows with keys to attend to are NaN too, the mark of a mask added as a bool "
                           "times the fill ((~mask) * torch.finfo(scores.dtype).min): a bool tensor times a "
                           "Python number is float32, whatever the scores' dtype. float64's minimum does not "
                           "fit in float32 and becomes -inf, and at each allowed position False × -inf = "
                           "0 × -inf = NaN.")
                return t.problem(
                    f"{t.spec.subject} returned NaN or inf on float64 inputs, although float32 is fine",
                    [f"{probe.where} the output holds NaN or inf.", why],
                    fix="keep the scores in their own dtype: torch.softmax(scores, dim=-1), with no "
                        "dtype= and no .float()" if _finite(probe, ans) else
                        "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # replace the "
                        "blocked scores; a bool mask times the fill is float32",
                )
            tol = probe.facts.get("tolerance", 1e-4)
            if not agrees(ans.output, probe.expected, probe.live_rows(ans.output), atol=tol, rtol=tol):
                return t.problem(
                    f"{t.spec.subject} is right in float32 but wrong in {word}.", [t.describe(probe, ans)]
                )
    return None


def large_scores_wrong(t):
    probe, ans = t.one("large")
    if probe is None or ans.error is not None or not isinstance(ans.output, torch.Tensor):
        return None
    if not agrees(ans.output, probe.expected, probe.live_rows(ans.output), atol=1e-3):
        return t.problem(
            f"{t.spec.subject} is right on ordinary inputs, wrong when the scores are large.",
            [t.describe(probe, ans)],
        )
    return None


def gradients(t):
    probe, ans = t.one("backward")
    if probe is None:
        return None
    trouble = _grad_trouble(ans, probe.facts["grads"])
    if trouble and ans.error is not None and "inplace operation" in str(ans.error.get("message", "")):
        return t.problem(
            f"{t.spec.subject} gave the right output, but its backward pass raised: a tensor autograd keeps "
            "was changed in place",
            [f"{probe.where}: {trouble}",
             "Autograd keeps some tensors of the forward pass (the weights a softmax or an exp made) to "
             "compute the gradients; an in-place operation on one afterwards (exp_(), /=, masked_fill_()) "
             "changes what it kept, and the backward pass refuses."],
            fix="weights = torch.softmax(scores, dim=-1)   # out-of-place forms: w = w / s, not w /= s or "
                "exp_()",
        )
    if trouble:
        return t.bug(
            "gradient_blocked",
            f"{t.spec.subject} gave the right output, but not the right gradients",
            [f"{probe.where}: {trouble}"],
        )
    return None


def _grad_trouble(ans, expected):
    if ans.error is not None:
        return f"the backward pass raised {describe_error(ans.error)}"
    grad = (ans.extra or {}).get("grad")
    if grad in ("none", None):
        return (
            "the output carries no gradient (no grad_fn): something cut it off from the inputs "
            "(.detach(), torch.no_grad(), .numpy() or .item() and back, or a new torch.tensor(...))."
        )
    if not isinstance(grad, dict):
        return None
    for name, right in expected.items():
        mine = grad.get(name)
        if mine is None:
            return f"no gradient reaches {name}: the output does not depend on {name} through autograd."
        mine = torch.from_numpy(mine["array"])
        if mine.shape != right.shape or not torch.allclose(mine, right, atol=1e-3, rtol=1e-2):
            gap = float((mine - right).abs().max()) if mine.shape == right.shape else float("nan")
            return (
                f"the gradient that reaches {name} differs from the correct one (by up to {gap:.3g}): "
                f"part of the computation is detached from autograd."
            )
    return None


def dead_row_gradient(t):
    """Right outputs, but a backward pass through a fully masked row gives NaN or inf gradients (a -inf
    fill whose NaN was wiped from the output with nan_to_num): the exercise's finite fill is there so
    that no NaN is made at all, and in training this one reaches the weights, so the check fails."""
    probe, ans = t.one("backward_dead")
    grads = (ans.extra or {}).get("grad") if probe is not None and ans.error is None else None
    if not isinstance(grads, dict):
        return None
    bad = [name for name, grad in grads.items()
           if grad is not None and not torch.isfinite(torch.from_numpy(grad["array"])).all()]
    if not bad:
        return None
    return t.problem(
        f"{t.spec.subject} gives the right outputs, but a backward pass through a fully masked row gives "
        "NaN gradients.",
        [f"{probe.where} the output is finite, but the gradient of {' and '.join(bad)} holds NaN. A NaN "
         "made on the way and wiped from the output later (say -inf added to the scores, or a division by "
         "a row's tiny sum, then nan_to_num) still goes backward through autograd, and in training it "
         "reaches the weights."],
        fix="scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # then torch.softmax: "
            "no NaN made, forward or backward")


def passed(t):
    return t.spec.passed(t)


def contiguous_error(t):
    for probe, ans in t.main:
        if error_kind(ans.error) == "contiguous":
            return t.bug(
                "missing_contiguous",
                f"{t.spec.subject} raised {ans.error['type']} on {probe.name}",
                [t.describe(probe, ans)],
            )
    return None


def hypothesis(t):
    if t.spec.hypotheses is None:
        return None
    main = t.main
    bug = matching_bug(
        [a for _, a in main],
        t.spec.hypotheses,
        [p for p, _ in main],
        compare=t.spec.compare or default_compare,
        order=t.spec.order,
    )
    if bug:
        probe, ans = t.first_wrong()
        fix = t.spec.words.get(f"fix:{bug}")
        verdict = t.bug(bug, t.happened(probe, ans), [t.describe(probe, ans)], fix=fix)
        refine = t.spec.words.get("refine:hypothesis")      # a checker's words on one variant it tells apart
        return refine(t, verdict) if refine else verdict
    return None


def mask_swapped_too(t):
    """Two known bugs at once, one of them the mask used the wrong way round: the answers are another known
    bug's, given the mask with True and False swapped (replay 18's 05U2: heads merged without a transpose,
    and masked_fill(mask, ...)). Named with that bug, and the mask said with it, where "no known bug" named
    neither."""
    table = t.spec.hypotheses.with_mask_swapped() if t.spec.hypotheses is not None else None
    main = t.main
    if table is None or not any(isinstance(p.args.get("mask"), torch.Tensor) for p, _ in main):
        return None
    order = [bug for bug in (t.spec.order or table.variants) if bug != "mask_inverted"]
    bug = matching_bug([a for _, a in main], table, [p for p, _ in main],
                       compare=t.spec.compare or default_compare, order=order)
    mask = ('Where a mask is given, it is used the wrong way round as well, the known bug "mask inverted": '
            'True means "may attend", so block where the mask is False (masked_fill(~mask, ...)).')
    if bug is None:
        verdict = _batch_one_swapped(t)
        if verdict is not None:
            verdict.observed.insert(1, mask)
        return verdict
    probe, ans = t.first_wrong()
    return t.bug(bug, t.happened(probe, ans), [t.describe(probe, ans), mask],
                 fix=t.spec.words.get(f"fix:{bug}"))


def _batch_one_swapped(t):
    """:func:`batch_one`, read against the reference given the mask swapped (replay 18's 02U1: d_k read
    as k.shape[1], and masked_fill(mask, ...)): the verdict, or None."""
    variants = t.spec.hypotheses.variants.get("mask_inverted")
    if not variants:
        return None
    swapped = {}
    for probe, _ in t.main:
        output, mask = t.spec.hypotheses.output("mask_inverted", 0, probe), probe.args.get("mask")
        if not isinstance(output, torch.Tensor):
            return None
        live = probe.live if probe.live is not None else torch.ones(output.shape[:-1], dtype=torch.bool)
        if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:   # rows the swapped mask leaves empty
            live = live & live_queries(output.shape[:-1], ~mask)            # are no one's to read
        swapped[id(probe)] = replace(probe, expected=output, live=live)
    probes = [swapped.get(id(p), p) for p in t.probes]
    return batch_one(Trial(t.spec, probes, t.answers, t.run, t.time_limit, list(t.notes), t.main_kind))


def _right_or_misshapen(t, probe, ans):
    """Right, or wrong only by its shape (or raised): what code for one batch size does elsewhere.
    Right-shaped wrong numbers on an input without batch dimensions are another bug (a softmax
    written wrong, say)."""
    expected = getattr(probe, "expected", None)
    if t.right(probe, ans) or ans.error is not None or not isinstance(ans.output, torch.Tensor):
        return True
    return not isinstance(expected, torch.Tensor) or ans.output.shape != expected.shape


def batch_one(t):
    main = t.main
    singles = [(p, a) for p, a in main if p.facts.get("batch_one")]
    others = [(p, a) for p, a in main if not p.facts.get("batch_one")]
    if not singles or not others:
        return None
    telling = any(t.right(p, a) and not p.facts.get("ones") for p, a in singles)
    unbatched = [(p, a) for p, a in singles if p.facts.get("unbatched")]
    # right on some unbatched inputs and not on others: what goes wrong is not the batch (replay 20's
    # 02W3, right only where d_v = d_k, was told it was right on inputs without batch dimensions)
    split = len({t.right(p, a) for p, a in unbatched if not p.facts.get("ones")}) > 1
    if telling and not split and all(_right_or_misshapen(t, p, a) for p, a in unbatched) and not any(
            t.right(p, a) for p, a in others):
        probe, ans = t.first_wrong()
        return t.bug(
            "batch_one_only",
            f"{t.spec.subject} "
            + t.spec.words.get("batch_one_headline",
                               "is right for a batch of one, wrong (or raised) for larger batches"),
            [t.describe(probe, ans), t.spec.words.get("batch_one", "")],
        )
    return None


def three_dims(t):
    """Right on every (batch, n, d) input, and wrong (or raised) on every input with another number of
    dimensions: torch.bmm, or transpose(1, 2), counting dimensions from the front (d2l's style)."""
    def dims(probe):
        q = probe.args.get("q") if isinstance(probe.args, dict) else None
        return q.dim() if isinstance(q, torch.Tensor) else None

    main = [(p, a) for p, a in t.main if dims(p) is not None]
    batched = [(p, a) for p, a in main if dims(p) == 3]
    others = [(p, a) for p, a in main if dims(p) != 3]
    if not batched or not others or not all(t.right(p, a) for p, a in batched):
        return None
    if any(t.right(p, a) for p, a in others):
        return None
    probe, ans = next((p, a) for p, a in others)
    shown = sorted({f"{dims(p)}-D" for p, _ in others})
    return t.bug("three_dims_only", f"{t.spec.subject} is right on (batch, n, d) inputs and wrong on "
                 f"{' and '.join(shown)} ones", [t.describe(probe, ans)])


_TILES = ("If it walks the keys in tiles with a running (online) softmax: each tile takes the mask's columns "
          "for its keys (mask[..., start:stop], the last axis); whenever a tile raises a row's running "
          "maximum, both the running sum and the output so far are multiplied by exp(old maximum - new "
          "maximum); the maximum starts at -inf; the division by the sum comes once, after the last tile; "
          "and the last tile may be shorter than the others.")


def long_inputs(t):
    """Right on every short input, wrong on the probe of kind 'long' (many keys): code that walks the keys
    in tiles. ``words["long"]``: (what the short inputs hold, what the long one holds), as words."""
    probe, ans = t.one("long")
    if probe is None or ans.error is None and isinstance(ans.output, torch.Tensor) \
            and ans.output.shape == probe.expected.shape \
            and agrees(ans.output, probe.expected, probe.live_rows(ans.output), atol=1e-4):
        return None
    short, long = t.spec.words["long"]
    return t.problem(f"{t.spec.subject} is right on short inputs ({short}), wrong with {long}.",
                     [t.describe(probe, ans), _TILES], fix=t.spec.words.get("long_fix", ""))


def batch_of_one_dropped(t):
    """Every input right but those with a batch of one, where the output lost its batch dimension or
    the code raised: a bare squeeze()."""
    main = t.main
    wrong = [(p, a) for p, a in main if not t.right(p, a)]
    if not wrong or len(wrong) == len(main):
        return None

    def single(probe):
        shape = getattr(probe.expected, "shape", None)
        return bool(probe.facts.get("batch_one")) and shape is not None and len(shape) > 0 and shape[0] == 1

    def lost(probe, ans):
        out = ans.output
        return isinstance(out, torch.Tensor) and out.dim() < probe.expected.dim()

    if not all(single(p) for p, _ in wrong) or not all(a.error is not None or lost(p, a) for p, a in wrong):
        return None
    probe, ans = wrong[0]
    return t.bug(
        "squeeze_drops_batch",
        f"{t.happened(probe, ans)}: only a batch of one goes wrong",
        [t.describe(probe, ans),
         f"Right on the {t.inputs()} with a batch of two or more; wrong on the {len(wrong)} with a batch "
         f"of one."],
    )


def matmul_everywhere(t):
    main = t.main
    if main and all(error_kind(a.error) == "matmul" for _, a in main):
        probe, ans = next(iter(main))
        return t.bug(
            "missing_key_transpose",
            f"{t.spec.subject} raised {ans.error['type']} on every input",
            [
                t.describe(probe, ans),
                "Every input fails in a matrix product whose shapes do not line up; the usual cause is "
                "query @ key without key.transpose(-2, -1) (k.T on a 4-D tensor reverses all four axes).",
            ],
        )
    return None


_BOOLEAN_INDEX = re.compile(r"shape of the mask .* does not match the shape of the indexed tensor")


def mask_indexed(t):
    """scores[~mask] = value: a boolean index needs the mask's exact shape, so every input whose mask only
    broadcasts to the scores raised IndexError, and every other input is right."""
    errors = [(p, a) for p, a in t.main if a.error is not None]
    if not errors or not all(_BOOLEAN_INDEX.search(a.error.get("message", "")) for _, a in errors):
        return None
    if not all(t.right(p, a) for p, a in t.main if a.error is None):
        return None
    probe, ans = errors[0]
    return t.bug(
        "mask_boolean_indexed",
        f"{t.spec.subject} raised {ans.error['type']} on {probe.name}",
        [t.describe(probe, ans),
         f"It raised on {len(errors)} of the {len(t.main)} {t.inputs()}, each with a mask that broadcasts "
         f"to the scores without having their shape; every other one is right."],
    )


def mask_none_raised(t):
    """Raised on every call made without a mask (mask=None, left out) and right on every call with one:
    the mask is used without ``if mask is not None``."""
    without = [(p, a) for p, a in t.main if "mask" not in p.args]
    given = [(p, a) for p, a in t.main if "mask" in p.args]
    if not without or not given or not all(t.right(p, a) for p, a in given) or not all(
            a.error is not None and "NoneType" in a.error.get("message", "") for _, a in without):
        return None
    probe, ans = without[0]
    return t.problem(
        f"{t.spec.subject} raised {ans.error['type']} whenever no mask is given (mask=None), and is right "
        "whenever one is.",
        [t.describe(probe, ans), "mask=None means nothing is blocked: use the mask only when there is one."],
        fix="if mask is not None: scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
    )


_UNBOUND = re.compile(r"cannot access local variable '(\w+)'|local variable '(\w+)' referenced before")
_UNDEFINED = re.compile(r"name '(\w+)' is not defined")
# the call itself did not fit the def (raised before any line of the learner's code ran)
_ARGUMENTS = re.compile(r"takes \d+ positional arguments? but \d+ (?:were|was) given|"
                        r"unexpected keyword argument|missing \d+ required (?:positional|keyword)")


def _call_mismatch(ans) -> bool:
    error = ans.error or {}
    return error.get("type") == "TypeError" and not error.get("where") and bool(
        _ARGUMENTS.search(error.get("message", "")))


def call_mismatch(t):
    """The call itself did not fit the def on some main input (a keyword it does not take, an argument
    it lacks): said before any bug is matched, since a bug that raises on the same inputs (all those
    with a mask, say) would match it too."""
    found = [(p, a) for p, a in t.main if _call_mismatch(a)]
    if not found:
        return None
    probe, ans = found[0]
    errors = sum(a.error is not None for _, a in t.main)
    return t.problem(
        f"{t.spec.subject} raised {ans.error['type']} on {probe.name}.",
        [t.describe(probe, ans), f"It raised on {errors} of the {len(t.main)} {t.inputs()}.",
         "The check calls your code with the exercise's arguments, and your def takes others: compare its "
         "first line with the exercise's."],
        fix=t.spec.words.get("signature", t.spec.words.get("raised_fix", "")),
    )


_TRUTH = "Boolean value of Tensor with more than one value is ambiguous"


def mask_truthiness(t):
    """Some input raised asking a tensor for one True or False (if mask:, if mask and ...): told in plain
    words before any hypothesis (a bug that raises on every masked input would match it too)."""
    raised_here = [(p, a) for p, a in t.main if a.error is not None and _TRUTH in a.error.get("message", "")]
    if not raised_here:
        return None
    probe, ans = raised_here[0]
    return t.problem(
        f"{t.spec.subject} raised {ans.error['type']} on {probe.name}.",
        [t.describe(probe, ans),
         "An if (or and, or, not) asked a tensor of several numbers for one True or False: if mask: is "
         "one. Whether a mask was given is a question about None."],
        fix="if mask is not None:   # not if mask:")


_NO_TORCH_NAME = re.compile(r"module '(torch(?:\.\w+)*)' has no attribute '(\w+)'")
_OTHER_LIBRARIES = {       # names other libraries have, and what PyTorch writes for them
    "sequence_mask": ("TensorFlow's tf.sequence_mask(lengths, n)",
                      "torch.arange(n)[None, :] < lengths[:, None]"),
    "band_part": ("TensorFlow's tf.linalg.band_part(x, -1, 0)",
                  "torch.tril(x)   # band_part(x, 0, -1): torch.triu(x)"),
    "expand_dims": ("TensorFlow's and NumPy's expand_dims(x, axis)", "x.unsqueeze(axis)"),
    "reduce_sum": ("TensorFlow's tf.reduce_sum(x, axis)", "x.sum(dim=axis)"),
    "reduce_max": ("TensorFlow's tf.reduce_max(x, axis)", "x.amax(dim=axis)"),
    "cast": ("TensorFlow's tf.cast(x, dtype)", "x.to(dtype)"),
    "newaxis": ("NumPy's np.newaxis", "x[:, None]   # None inserts an axis"),
    "masked_softmax": ("d2l's own d2l.masked_softmax", "torch.softmax(scores.masked_fill(~mask, "
                       "torch.finfo(scores.dtype).min), dim=-1)"),
}


_ALIASES = {"F": "import torch.nn.functional as F", "nn": "import torch.nn as nn", "math": "import math",
            "torch": "import torch", "np": "import numpy as np", "gpt": "from attnviz import gpt"}
"""Names learners use for modules, and the import that gives each (notebook 05 never imports
torch.nn.functional as F, yet a replay's learners called F.softmax there: session 30's replay 5)."""


def missing_torch_name(message: str):
    """``(line, fix)`` for an AttributeError of a name PyTorch does not have (torch.sequence_mask, a
    TensorFlow habit), or None."""
    found = _NO_TORCH_NAME.search(message)
    if not found:
        return None
    module, name = found.groups()
    if name in _OTHER_LIBRARIES:
        where, fix = _OTHER_LIBRARIES[name]
        return (f"PyTorch has no {module}.{name}: that is {where}, and PyTorch writes it "
                f"{fix.split('   #')[0]}.", fix)
    return (f"PyTorch has no {module}.{name}: a name from another library, or a typo? "
            f"help({module}) lists what {module} has.", "")


def raised(t):
    errors = [(p, a) for p, a in t.main if a.error is not None]
    if errors:
        probe, ans = next(iter(errors))
        lines = [t.describe(probe, ans), f"It raised on {len(errors)} of the {len(t.main)} {t.inputs()}."]
        fix = t.spec.words.get("raised_fix", "")
        message = ans.error.get("message", "")
        undefined = _UNDEFINED.search(message) if ans.error["type"] == "NameError" else None
        defined = t.spec.words.get("fix_names", {}).get(undefined[1]) if undefined else None
        if defined:                       # a Fix line's own name, pasted: no cell defines it
            name = undefined[1]
            lines.append(f"{name} is a name the Fix lines use for something your code computes itself (no "
                         f"cell of the notebook defines it): define it in your code before its first use, "
                         f"or use your own name for the same thing.")
            fix = defined
        elif undefined and undefined[1] in _ALIASES:   # a module's usual name, never imported here
            name = undefined[1]
            lines.append(f"{name} is not defined where your code runs: {name} is the usual name for a "
                         "module, and no cell above has imported it under that name (or, after a kernel "
                         "restart, none has run yet). Import it yourself, above your code.")
            fix = f"{_ALIASES[name]}   # at the top of your cell"
        elif undefined:                   # often a restarted kernel: the imports above were not run again
            name = undefined[1]
            lines.append(f"{name} is not defined where your code runs. If a cell above defines or imports "
                         f"it, run that cell (after a kernel restart none has run: Run > Run All Cells); "
                         f"if none does, define or import {name} yourself.")
            fix = f"run the cell that defines or imports {name} (after a kernel restart: Run All Cells)"
        elif unbound := _UNBOUND.search(message):      # often a Fix line pasted with the Fix's own name
            name = unbound[1] or unbound[2]
            lines.append(f"{name} is read before your code gives it a value: a name assigned anywhere in a "
                         f"function is that function's own, so the notebook's {name} (if it has one) is not "
                         f"used. Give {name} a value above this line, or write the name your code already "
                         "uses for that value.")
            # words, not a line: "name = ..." pasted as it stood gave the name an Ellipsis (a replay)
            fix = t.spec.words.get("fix_names", {}).get(name) or (
                f"give {name} its value above its first use, or write your own name for that value in its "
                "place")
        elif missing := missing_torch_name(message):
            lines.append(missing[0])
            fix = missing[1] or fix
        elif _call_mismatch(ans):             # a checker without call_mismatch (decoding's cached steps)
            lines.append("The check calls your code with the exercise's arguments, and your def takes "
                         "others: compare its first line with the exercise's.")
            fix = t.spec.words.get("signature", fix)
        elif error_kind(ans.error) == "overflow":
            lines.append("A fill too large for the scores' dtype went into them: "
                         "torch.finfo(torch.float64).min (or -1e39) does not fit in float32, nor -1e9 in "
                         "float16.")
            fix = "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # the scores' dtype"
        return t.problem(f"{t.spec.subject} raised {ans.error['type']} on {probe.name}.", lines, fix=fix)
    return None


def _ones_note(probe, ans):
    """With every value equal to 1, a correct output is exactly 1: the weights sum to 1 per row."""
    got = ans.output
    if not isinstance(got, torch.Tensor) or got.shape != probe.expected.shape:
        return None
    low, high = float(got.min()), float(got.max())
    if math.isfinite(low) and math.isfinite(high) and abs(low - 1) < 1e-4 and abs(high - 1) < 1e-4:
        return None
    said = (f"With every value equal to 1 the output should be exactly 1 everywhere (each row of "
            f"weights sums to 1), but yours runs from {low:.3g} to {high:.3g}")
    weights = ans.weights
    if isinstance(weights, torch.Tensor) and weights.is_floating_point() and weights.dim() >= 1:
        sums = weights.detach().to(torch.float64).sum(dim=-1)
        sums = sums[torch.isfinite(sums)]
        if sums.numel() and bool(((sums - 1).abs() < 1e-4).all()):
            return f"{said}, although the weights you return sum to 1: the output is not weights @ v."
    return f"{said}: your weights do not sum to 1 over the keys."


def _one_output_for_all(t) -> bool:
    """Whether, on every wrong call without a mask whose right output differs from query to query,
    the output is the same for each query (along axis -2)."""
    seen = False
    for probe, ans in t.main:
        out, want = ans.output, probe.expected
        if t.right(probe, ans) or probe.args.get("mask") is not None:
            continue
        tensors = isinstance(out, torch.Tensor) and isinstance(want, torch.Tensor)
        if not tensors or out.shape != want.shape or out.dim() < 2 or out.shape[-2] < 2 \
                or not out.is_floating_point():
            return False
        out, want = out.detach().to(torch.float64), want.to(torch.float64)
        if torch.allclose(want, want[..., :1, :].expand_as(want), rtol=1e-4, atol=1e-5):
            continue                     # every value alike: the right output is one for all too
        if not torch.allclose(out, out[..., :1, :].expand_as(out), rtol=1e-4, atol=1e-5):
            return False
        seen = True
    return seen


def no_known_bug(t):
    probe, ans = t.first_wrong()
    detail = [t.describe(probe, ans)]
    detail += [n for n in (_ones_note(p, a) for p, a in t.main if p.facts.get("ones")) if n]
    right = [p.name for p, a in t.main if t.right(p, a)]
    wrong = [p.name for p, a in t.main if not t.right(p, a)]
    alone = [p.facts.get("alone") for p, a in t.main if not t.right(p, a)]
    if len(alone) == 1 and alone[0]:           # the one input that goes wrong says what it tries
        detail.append(alone[0])
    if right:
        detail.append(f"Right on: {'; '.join(right)}. Wrong on: {'; '.join(wrong)}.")
    else:
        detail.append(f"Wrong on every one of these: {'; '.join(wrong)}.")
    if _one_output_for_all(t):
        detail.append("Every query gets the same output, one blend for all: the weights never chose values "
                      "per query. An einsum that names the values' position axis apart from the keys' "
                      "(bhqk,bhvd->bhqd sums each row of weights to 1 and the values over every position) "
                      "does this, as does a sum over the wrong axis.")
    fix = t.spec.fix
    if _only_masked_wrong(t) and "mask_fix" in t.spec.words:
        detail.append("Every input without a mask is right, and only inputs with one go wrong: look at how "
                      "the mask is applied." + _other_widths(t))
        fix = t.spec.words["mask_fix"]
    if not all(_dead_finite(p, a) for p, a in t.main):
        detail.append("A fully masked query row comes out as NaN.")
    outputs = [a.output for _, a in t.main if isinstance(a.output, torch.Tensor)]
    outputs = [o for o in outputs if o.is_floating_point()]
    if outputs and not any(bool(torch.isfinite(o).any()) for o in outputs):
        detail.append(
            "Every number it returned is NaN or inf, which many mistakes give: look for a -inf that meets a "
            "0 (0 * -inf, (1 - mask) * -inf) or a softmax over scores that are all -inf."
        )
    return t.problem(f"{t.happened(probe, ans)}{NO_KNOWN_BUG}", detail, fix=fix)


def _other_widths(t) -> str:
    """Where every input whose queries are of a width no right input has is wrong (d_k = 9 and 5, the
    right ones all 16), words that say so: a scale kept from an earlier call, or a width read from
    elsewhere, fails there too, whatever the mask does (a replay's scale, computed once and kept)."""
    def width(probe):
        q = probe.args.get("q")
        return q.shape[-1] if isinstance(q, torch.Tensor) and q.dim() else None

    right = {width(p) for p, a in t.main if t.right(p, a)} - {None}
    others = sorted({width(p) for p, a in t.main} - right - {None})
    if not right or not others or any(t.right(p, a) for p, a in t.main if width(p) in others):
        return ""
    said = " and ".join(str(w) for w in others)
    each = " or ".join(str(w) for w in sorted(right))
    return (f" But every input with d_k = {said} is wrong too, where each right one has d_k = {each}: look "
            "at the scale as well (√d_k is each input's own q.shape[-1], read anew each call).")


def _only_masked_wrong(t) -> bool:
    """Every main input without a mask is right (so every wrong one has a mask)."""
    plain = [(p, a) for p, a in t.main if "mask" not in p.args]
    return len(plain) < len(t.main) and bool(plain) and all(t.right(p, a) for p, a in plain)


RULES = (
    Rule("stopped", "always", stopped),
    Rule("not_written", "always", not_written),
    Rule("setup_failed", "always", setup_failed),
    Rule("returned_odd", "always", returned_odd),
    Rule("nondeterministic", "always", nondeterministic),
    # every main probe right: the edges
    Rule("large_scores_nan", "right", large_scores_nan),
    Rule("dead_rows_nan", "right", dead_rows_nan),
    Rule("inputs_modified", "right", inputs_modified),
    Rule("gradients", "right", gradients),
    Rule("main_dtype", "right", main_dtype),
    Rule("other_dtypes", "right", other_dtypes),
    Rule("large_scores_wrong", "right", large_scores_wrong),
    Rule("passed", "right", passed),
    # a main probe wrong: which bug
    Rule("call_mismatch", "wrong", call_mismatch),
    Rule("mask_truthiness", "wrong", mask_truthiness),
    Rule("contiguous_error", "wrong", contiguous_error),
    Rule("mask_indexed", "wrong", mask_indexed),
    Rule("hypothesis", "wrong", hypothesis),
    Rule("batch_one", "wrong", batch_one),
    Rule("three_dims", "wrong", three_dims),
    Rule("batch_of_one_dropped", "wrong", batch_of_one_dropped),
    Rule("inputs_modified_too", "wrong", inputs_modified),
    Rule("matmul_everywhere", "wrong", matmul_everywhere),
    Rule("mask_none_raised", "wrong", mask_none_raised),
    Rule("raised", "wrong", raised),
    Rule("mask_swapped_too", "wrong", mask_swapped_too),
    Rule("no_known_bug", "wrong", no_known_bug),
)


def rules(replace=None, before=None, drop=()):
    """The shared :data:`RULES` with a checker's differences: ``replace`` {name: Rule}, ``before``
    {name: [Rule, ...]} inserted in front of the named rule, ``drop`` names left out."""
    replace, before = replace or {}, before or {}
    out = []
    for rule in RULES:
        out += before.get(rule.name, [])
        if rule.name not in drop:
            out.append(replace.get(rule.name, rule))
    return tuple(out)
