"""check_attention: run a learner's scaled dot-product attention and name what is wrong."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import _verdict
from ._compare import agrees, max_gap, rows, shape_complaint
from ._diagnose import Hypotheses, answer, error_kind, matching_bug
from ._reference import ATTENTION_VARIANTS, attention, in_neutral, neutral
from ._run import TIME_LIMIT, describe_error, guarded_call, shape_str
from ._sandbox import run_steps, to_plain
from ._stops import stop_verdict, where_note

__all__ = ["check_attention"]

NAME = "check_attention"
_OUTPUT_DIMS = ("features d_v (last dimension)", "queries n_q")
_POSITIONAL = ("q", "k", "v", "mask")


@dataclass
class Probe:
    """One crafted input. ``live`` marks query rows with at least one key to attend to."""

    name: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None
    kind: str = "main"  # main | large | float64 | float16 | repeat | backward

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

    def float64_args(self):
        return tuple(t.to(torch.float64) for t in (self.q, self.k, self.v)) + (self.mask,)

    def shapes(self):
        text = f"q {shape_str(self.q.shape)}, k {shape_str(self.k.shape)}, v {shape_str(self.v.shape)}"
        return text + (f", mask {shape_str(self.mask.shape)}" if self.mask is not None else ", no mask")


def _partial_mask(n_q, n_k, generator, dead_row=None, full_row=None):
    """A bool mask, not symmetric, every row holding at least one True and one False (except
    ``dead_row``, all False, and ``full_row``, all True)."""
    while True:
        mask = torch.rand(n_q, n_k, generator=generator, dtype=torch.float32) < 0.55
        every_row_mixed = bool(mask.any(-1).all() and (~mask).any(-1).all())
        if every_row_mixed and (n_q != n_k or not torch.equal(mask, mask.T)):
            break
    if dead_row is not None:
        mask[dead_row] = False
    if full_row is not None:
        mask[full_row] = True
    return mask


def _probes():
    """The crafted inputs. Main ones (compared with every hypothesis): n_q != n_k, d_k = 16 and 9
    (√d_k is neither 1, d_k, d_k / 2 nor the 2 of a stale global d_k = 4), d_v apart from d_k, a
    batch of heads, masks that are not symmetric with a row all True, a fully masked row, values
    all 1, and n_k = d_k = d_v (where a forgotten transpose or swapped k and v still run). Extra
    ones: large scores, float64 and float16 inputs, a repeat (dropout), a backward pass."""
    g = torch.Generator().manual_seed(6)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    d_k = 16
    probes = [
        Probe("4 queries, 4 keys, no mask", randn(4, d_k), randn(4, d_k), randn(4, 3), None),
        Probe("3 queries, 5 keys, no mask", randn(3, d_k), randn(5, d_k), randn(5, 6), None),
        Probe(
            "batch 2 x 3 heads, 4 queries, 6 keys, no mask (heads split by a transpose: not contiguous)",
            *(randn(2, n, 3, d).transpose(1, 2) for n, d in ((4, d_k), (6, d_k), (6, 5))),
            None,
        ),
        Probe(
            "5 queries, 5 keys, d_k = 9, a mask",
            randn(5, 9),
            randn(5, 9),
            randn(5, 3),
            _partial_mask(5, 5, g, full_row=2),
        ),
        Probe("3 queries, 5 keys, a mask", randn(3, d_k), randn(5, d_k), randn(5, 6), _partial_mask(3, 5, g)),
        Probe(
            "batch 2 x 3 heads, a (4, 6) mask",
            randn(2, 3, 4, d_k),
            randn(2, 3, 6, d_k),
            randn(2, 3, 6, 5),
            _partial_mask(4, 6, g, full_row=0),
        ),
        Probe(
            "4 queries, 4 keys, query 1 fully masked",
            randn(4, d_k),
            randn(4, d_k),
            randn(4, 3),
            _partial_mask(4, 4, g, dead_row=1),
        ),
        Probe(
            "3 queries, 5 keys, every value 1",
            randn(3, d_k),
            randn(5, d_k),
            torch.ones(5, 2, dtype=torch.float32),
            None,
        ),
        Probe(
            "3 queries, 5 keys, d_k = d_v = 5, a mask",
            randn(3, 5),
            randn(5, 5),
            randn(5, 5),
            _partial_mask(3, 5, g),
        ),
        Probe(
            "batch 1, 4 queries, 5 keys, a mask",
            randn(1, 4, d_k),
            randn(1, 5, d_k),
            randn(1, 5, 3),
            _partial_mask(4, 5, g),
        ),
    ]
    probes += [
        Probe(
            "large scores (q and k times 40)",
            randn(4, d_k) * 40,
            randn(6, d_k) * 40,
            randn(6, 3),
            _partial_mask(4, 6, g),
            kind="large",
        ),
        Probe(
            "float64 inputs",
            *(t.to(torch.float64) for t in (randn(3, d_k), randn(5, d_k), randn(5, 4))),
            _partial_mask(3, 5, g),
            kind="float64",
        ),
        Probe(
            "float16 inputs, query 2 fully masked",
            *(t.to(torch.float16) for t in (randn(4, d_k), randn(5, d_k), randn(5, 3))),
            _partial_mask(4, 5, g, dead_row=2),
            kind="float16",
        ),
        Probe(
            "the 5-query input again", probes[3].q, probes[3].k, probes[3].v, probes[3].mask, kind="repeat"
        ),
        Probe(
            "a backward pass",
            randn(2, 4, d_k),
            randn(2, 6, d_k),
            randn(2, 6, 5),
            _partial_mask(4, 6, g),
            kind="backward",
        ),
    ]
    return probes


def _backward_step(fn, probe, cotangent):
    def step():
        q, k, v = (t.detach().clone().requires_grad_(True) for t in (probe.q, probe.k, probe.v))
        value = fn(q, k, v, probe.mask.clone())
        output = value[0] if isinstance(value, (tuple, list)) and value else value
        if type(output) is not torch.Tensor or not output.is_floating_point():
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "no tensor"}}
        if output.grad_fn is None:
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "none"}}
        if output.shape != cotangent.shape:
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "shape"}}
        (output.to(torch.float64) * cotangent).sum().backward()
        grads = [None if t.grad is None else to_plain(t.grad) for t in (q, k, v)]
        return {"value": to_plain(value), "modified": [], "extra": {"grad": grads}}

    return step


_CACHE: dict = {}


def _expected():
    with neutral():
        return _build_cache()


def _build_cache():
    """Probes, reference outputs (float64), the reference gradients and every hypothesis's outputs
    on the main probes (computed once per kernel, in the kernel: this is the checker's own math)."""
    if not _CACHE:
        probes = _probes()
        main = [p for p in probes if p.kind == "main"]
        reference = [attention(*p.float64_args()) for p in probes]
        back = next(p for p in probes if p.kind == "backward")
        cotangent = torch.randn(
            back.q.shape[:-1] + back.v.shape[-1:],
            generator=torch.Generator().manual_seed(3),
            dtype=torch.float64,
        )
        q, k, v = (t.to(torch.float64).requires_grad_(True) for t in (back.q, back.k, back.v))
        (attention(q, k, v, back.mask)[0] * cotangent).sum().backward()
        table = Hypotheses(
            ATTENTION_VARIANTS, [(p.q, p.k, p.v, p.mask) for p in main]
        )  # float32, as learners
        _CACHE.update(
            probes=probes,
            reference=reference,
            cotangent=cotangent,
            grads=[q.grad, k.grad, v.grad],
            table=table,
        )
    return _CACHE


def _steps(fn, probes, cotangent):
    steps = []
    for probe in probes:
        if probe.kind == "backward":
            steps.append(_backward_step(fn, probe, cotangent))
        else:
            steps.append(lambda probe=probe: guarded_call(fn, probe.args, _POSITIONAL))
    return steps


def _describe(probe, ans, expected):
    where = f"On {probe.name} ({probe.shapes()})"
    if ans.error is not None:
        return f"{where} your function raised {describe_error(ans.error)}{where_note(ans.error)}"
    if ans.output.shape != expected.shape:
        return f"{where} {shape_complaint(ans.output.shape, expected.shape, _OUTPUT_DIMS)}"
    if not bool(torch.isfinite(rows(ans.output, probe.live)).all()):
        return f"{where} the output holds NaN or inf in rows that have keys to attend to."
    gap = max_gap(ans.output, expected, probe.live)
    return f"{where} the output differs from the correct one by up to {gap:.3g}."


def _ones_note(probe, ans):
    """With every value equal to 1, a correct output is exactly 1: the weights sum to 1 per row."""
    got = ans.output
    if got is None or got.shape[:-1] != probe.q.shape[:-1] or got.shape[-1] != probe.v.shape[-1]:
        return None
    low, high = float(got.min()), float(got.max())
    if math.isfinite(low) and math.isfinite(high) and abs(low - 1) < 1e-4 and abs(high - 1) < 1e-4:
        return None
    return (
        f"With every value equal to 1 the output should be exactly 1 everywhere (each row of "
        f"weights sums to 1), but yours runs from {low:.3g} to {high:.3g}: your weights do not "
        f"sum to 1 over the keys."
    )


def _dead_finite(probe, ans):
    if ans.output is None or ans.output.shape[:-1] != probe.q.shape[:-1]:
        return True
    return bool(torch.isfinite(rows(ans.output, ~probe.live)).all())


def _grad_trouble(ans, cache):
    """None when the learner's gradients match the reference's, else what is wrong."""
    grad = (ans.extra or {}).get("grad")
    if ans.error is not None:
        return f"the backward pass raised {describe_error(ans.error)}"
    if grad == "none":
        return (
            "the output carries no gradient (no grad_fn): something cut it off from q, k and v "
            "(.detach(), torch.no_grad(), .numpy() or .item() and back, or a new torch.tensor(...))."
        )
    if not isinstance(grad, list):
        return None
    for name, mine, right in zip("qkv", grad, cache["grads"], strict=True):
        if mine is None:
            return f"no gradient reaches {name}: the output does not depend on {name} through autograd."
        mine = torch.from_numpy(mine["array"])
        if mine.shape != right.shape or not torch.allclose(mine, right, atol=1e-3, rtol=1e-2):
            return (
                f"the gradient that reaches {name} differs from the correct one (by up to "
                f"{float((mine - right).abs().max()) if mine.shape == right.shape else float('nan'):.3g}): "
                f"part of the computation is detached from autograd."
            )
    return None


def _extra_checks(probes, answers, reference, cache, notes):
    """The probes beyond the main ones, for code whose main outputs are all right."""
    by_kind = {p.kind: (p, a, r) for p, a, r in zip(probes, answers, reference, strict=True)}
    probe, ans, _ = by_kind["backward"]
    trouble = _grad_trouble(ans, cache)
    if trouble:
        return _verdict.bug_found(NAME, "gradient_blocked", [f"On {probe.name}: {trouble}"] + notes)
    for probe, ans in ((p, a) for p, a in zip(probes, answers, strict=True) if p.kind == "main"):
        if ans.output is not None and ans.output.dtype != torch.float32:
            return _verdict.bug_found(
                NAME,
                "dtype_changed",
                [
                    f"On {probe.name} (float32 inputs) your output is "
                    f"{str(ans.output.dtype).replace('torch.', '')}."
                ]
                + notes,
            )
    probe, ans, (expected, _) = by_kind["float64"]
    if ans.error is not None:
        return _verdict.problem(
            NAME, "your function raised on float64 inputs.", [_describe(probe, ans, expected)]
        )
    if ans.output is not None and ans.output.dtype != torch.float64:
        return _verdict.bug_found(
            NAME,
            "dtype_changed",
            [f"On float64 inputs your output is {str(ans.output.dtype).replace('torch.', '')}."] + notes,
        )
    probe, ans, (expected, _) = by_kind["float16"]
    if ans.error is not None:
        if error_kind(ans.error) == "overflow":
            return _verdict.bug_found(
                NAME, "fill_overflows_float16", [_describe(probe, ans, expected)] + notes
            )
        return _verdict.problem(
            NAME, "your function raised on float16 inputs.", [_describe(probe, ans, expected)]
        )
    if ans.output is not None:
        if ans.output.dtype != torch.float16:
            return _verdict.bug_found(
                NAME,
                "dtype_changed",
                [f"On float16 inputs your output is {str(ans.output.dtype).replace('torch.', '')}."] + notes,
            )
        if not _dead_finite(probe, ans) or not bool(torch.isfinite(rows(ans.output, probe.live)).all()):
            return _verdict.bug_found(
                NAME,
                "fill_overflows_float16",
                [
                    "On float16 inputs with a fully masked query row, that row (or more) comes out NaN or "
                    "inf, although float32 and float64 are fine."
                ]
                + notes,
            )
    probe, ans, (expected, _) = by_kind["large"]
    if (
        ans.error is None
        and ans.output is not None
        and not agrees(ans.output, expected, probe.live, atol=1e-3)
    ):
        finite = bool(torch.isfinite(rows(ans.output, probe.live)).all())
        if not finite:
            return _verdict.bug_found(NAME, "softmax_overflow", [_describe(probe, ans, expected)] + notes)
        return _verdict.problem(
            NAME,
            "right on ordinary inputs, wrong when the scores are large.",
            [_describe(probe, ans, expected)],
        )
    return None


@in_neutral
def check_attention(fn, *, time_limit: float = TIME_LIMIT):
    """Check a learner's scaled dot-product attention ``fn(q, k, v, mask=None)``.

    ``q`` is ``(..., n_q, d_k)``, ``k`` ``(..., n_k, d_k)``, ``v`` ``(..., n_k, d_v)``;
    ``mask`` is None or bool broadcasting to ``(..., n_q, n_k)`` with True =
    may attend. ``fn`` returns the output ``(..., n_q, d_v)`` or
    ``(output, weights)``. The inputs include ``n_q != n_k``, a batch of
    heads, masks that are not symmetric and a fully masked query row (any
    finite result accepted there), large scores, float64 and float16 inputs
    (the output keeps the inputs' dtype) and a backward pass compared with
    the reference's gradients.

    ``fn`` runs in a child process (forked from the kernel) that is killed
    once all its calls together take more than ``time_limit`` seconds; nothing it
    does changes the kernel. Returns a :class:`CheckResult` (``.passed``,
    ``.bug``) that shows itself as a verdict. Never raises because of the
    learner's code.
    """
    if not callable(fn):
        return _verdict.problem(
            NAME,
            f"expected a function, got a {type(fn).__name__}.",
            ["Pass the function itself, without calling it: check_attention(my_attention)."],
        )
    cache = _expected()
    probes, reference = cache["probes"], cache["reference"]
    run = run_steps(_steps(fn, probes, cache["cotangent"]), time_limit=time_limit, budget=time_limit)
    notes = [run.note] if not run.isolated else []
    stopped = stop_verdict(NAME, run, [f"On {p.name} ({p.shapes()})" for p in probes], time_limit, notes)
    if stopped:
        return stopped
    answers = [answer(step) for step in run.steps]
    for ans in answers:
        if ans.error is not None and ans.error.get("not_implemented"):
            return _verdict.not_implemented(NAME, ans.error["message"])
    for probe, ans in zip(probes, answers, strict=True):
        if ans.complaint:
            return _verdict.problem(
                NAME,
                "your function " + ans.complaint,
                [f"On {probe.name} ({probe.shapes()})."] + notes,
                fix="return output   # or: return output, weights",
            )

    main = [i for i, p in enumerate(probes) if p.kind == "main"]
    m_probes, m_answers = [probes[i] for i in main], [answers[i] for i in main]
    m_expected = [reference[i][0] for i in main]
    modified = sorted({name for a in answers for name in a.modified})
    if modified:
        notes.append(f"It changed {', '.join(modified)} in place.")
    live_right = [
        a.output is not None and agrees(a.output, e, p.live)
        for p, a, e in zip(m_probes, m_answers, m_expected, strict=True)
    ]
    repeat = answers[next(i for i, p in enumerate(probes) if p.kind == "repeat")]
    first = answers[3]
    if (
        repeat.output is not None
        and first.output is not None
        and repeat.output.shape == first.output.shape
        and not torch.equal(repeat.output.nan_to_num(), first.output.nan_to_num())
    ):
        return _verdict.bug_found(
            NAME,
            "dropout_left_on",
            ["Called twice on the same input, your function gave two different outputs."] + notes,
        )

    if all(live_right):
        if not all(_dead_finite(p, a) for p, a in zip(m_probes, m_answers, strict=True)):
            large, large_answer = next(
                (p, a) for p, a in zip(probes, answers, strict=True) if p.kind == "large"
            )
            if large_answer.output is not None and not bool(
                torch.isfinite(rows(large_answer.output, large.live)).all()
            ):
                return _verdict.bug_found(
                    NAME,
                    "softmax_overflow",
                    [
                        "Both a fully masked row and large scores give NaN: exp(scores) / sum without "
                        "subtracting the row maximum (torch.softmax does that for you)."
                    ]
                    + notes,
                )
            return _verdict.bug_found(
                NAME,
                "nan_on_fully_masked_row",
                ["Everything else matches: every query that has a key to attend to gets the right output."]
                + notes,
            )
        if modified:
            return _verdict.bug_found(NAME, "modifies_inputs", ["The outputs are right."] + notes)
        found = _extra_checks(probes, answers, reference, cache, notes)
        if found:
            return found
        for p, a, (_, weights) in zip(m_probes, m_answers, [reference[i] for i in main], strict=True):
            if (
                a.weights is not None
                and a.weights.shape == weights.shape
                and not agrees(a.weights, weights, p.live)
            ):
                return _verdict.problem(
                    NAME,
                    "the output is right but the weights you return are not.",
                    [
                        f"On {p.name} ({p.shapes()}) the second thing returned has the weights' shape "
                        f"but different numbers. Return the softmax of the scaled, masked scores."
                    ]
                    + notes,
                )
        return _verdict.passed(
            NAME,
            f"correct on all {len(probes)} test inputs.",
            [
                "n_q ≠ n_k, a batch of heads, masks that are not symmetric, a fully masked query row (your "
                "result there is finite, as it should be), large scores, float64 and float16 inputs, and "
                "the gradients of a backward pass."
            ]
            + notes,
        )

    first_bad = live_right.index(False)
    detail = [_describe(m_probes[first_bad], m_answers[first_bad], m_expected[first_bad])]
    if any(error_kind(a.error) == "contiguous" for a in m_answers):
        return _verdict.bug_found(NAME, "missing_contiguous", detail + notes)
    lives = [p.live for p in m_probes]
    bug = matching_bug(m_answers, cache["table"], lives, [e.shape for e in m_expected])
    if bug:
        return _verdict.bug_found(NAME, bug, detail + notes)
    single = [all(n == 1 for n in p.q.shape[:-2]) for p in m_probes]
    telling = [ok and "every value 1" not in p.name for p, ok in zip(m_probes, live_right, strict=True)]
    if any(ok for ok, one in zip(telling, single, strict=True) if one) and not any(
        ok for ok, one in zip(live_right, single, strict=True) if not one
    ):
        return _verdict.bug_found(
            NAME,
            "batch_one_only",
            detail
            + [
                "Only the inputs with batch and head dimensions in front go wrong: index from the end, "
                "k.transpose(-2, -1) rather than k.T, and q.shape[-1] rather than q.shape[1]."
            ]
            + notes,
        )
    if modified:
        return _verdict.bug_found(NAME, "modifies_inputs", detail + notes)
    errors = [(p, a) for p, a in zip(m_probes, m_answers, strict=True) if a.error is not None]
    if errors:
        probe, ans = errors[0]
        return _verdict.problem(
            NAME,
            f"your function raised {ans.error['type']} on {probe.name}.",
            [
                _describe(probe, ans, m_expected[m_probes.index(probe)]),
                f"It raised on {len(errors)} of the {len(m_probes)} main inputs.",
            ]
            + notes,
            fix="run your function by hand on tensors of these shapes and read the error's last line",
        )
    right = [p.name for p, ok in zip(m_probes, live_right, strict=True) if ok]
    wrong = [p.name for p, ok in zip(m_probes, live_right, strict=True) if not ok]
    ones = next(
        (
            n
            for n in (
                _ones_note(p, a)
                for p, a in zip(m_probes, m_answers, strict=True)
                if "every value 1" in p.name
            )
            if n
        ),
        None,
    )
    detail += [ones] if ones else []
    detail.append(f"Right on: {'; '.join(right) or 'none of the inputs'}. Wrong on: {'; '.join(wrong)}.")
    if not all(_dead_finite(p, a) for p, a in zip(m_probes, m_answers, strict=True)):
        detail.append("A fully masked query row comes out as NaN.")
    return _verdict.problem(
        NAME,
        "the output is not right, and it does not match any single known bug.",
        detail + notes,
        fix="scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]); "
        "scores.masked_fill(~mask, torch.finfo(scores.dtype).min); softmax over dim=-1; weights @ v",
    )
