"""check_multi_head: run a learner's multi-head attention module with known weights."""

from __future__ import annotations

import torch
from torch import nn

from . import _verdict
from ._compare import agrees, max_gap, rows, shape_complaint
from ._diagnose import Hypotheses, answer, error_kind, matching_bug
from ._reference import ATTENTION_VARIANTS, MULTI_HEAD_VARIANTS, in_neutral, multi_head, neutral
from ._run import TIME_LIMIT, describe_error, guarded_call, shape_str
from ._sandbox import run_steps, to_plain
from ._stops import stop_verdict, where_note

__all__ = ["check_multi_head"]

NAME = "check_multi_head"
CONFIGS = ((12, 3), (10, 2), (18, 3))  # d_k = 4 (notebook 05's), 5 and 6: a stale global d_k fails
_OUTPUT_DIMS = ("features d_model (last dimension)", "positions n", "batch")
_LAYERS = ("W_q", "W_k", "W_v", "W_o")


def _mask(rows_, dead=None, full=None):
    mask = torch.tensor(rows_, dtype=torch.bool)
    if dead is not None:
        mask[dead] = False
    if full is not None:
        mask[full] = True
    return mask


_M5 = [[1, 0, 1, 0, 0], [1, 1, 0, 0, 1], [1, 1, 1, 1, 1], [1, 0, 1, 1, 0], [0, 0, 1, 1, 0]]  # not symmetric
_M4 = [[1, 1, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 1, 0]]  # position 1 dead


def _probes():
    """(label, config index, x, mask, kind) for every call, and the known weights per config."""
    g = torch.Generator().manual_seed(5)
    weights, probes = [], []
    for c, (d_model, n_heads) in enumerate(CONFIGS):
        weights.append(
            {
                name: torch.randn(d_model, d_model, generator=g, dtype=torch.float32) / d_model**0.5
                for name in _LAYERS
            }
        )
        x5, x4 = (
            torch.randn(2, 5, d_model, generator=g, dtype=torch.float32),
            torch.randn(2, 4, d_model, generator=g, dtype=torch.float32),
        )
        tag = f"d_model={d_model}, n_heads={n_heads}"
        probes += [
            (f"{tag}: batch 2, 5 positions, no mask", c, x5, None, "main"),
            (f"{tag}: batch 2, 5 positions, a (5, 5) mask", c, x5, _mask(_M5), "main"),
            (f"{tag}: batch 2, 4 positions, position 1 fully masked", c, x4, _mask(_M4), "main"),
        ]
    d_model = CONFIGS[0][0]
    probes += [
        (
            f"d_model={d_model}: batch 3, 4 positions, no mask",
            0,
            torch.randn(3, 4, d_model, generator=g, dtype=torch.float32),
            None,
            "main",
        ),
        (
            f"d_model={d_model}: batch 1, 5 positions, a (5, 5) mask",
            0,
            torch.randn(1, 5, d_model, generator=g, dtype=torch.float32),
            _mask(_M5),
            "main",
        ),
        ("the first input again", 0, probes[0][2], None, "repeat"),
        (f"d_model={d_model}: large scores (x times 30)", 0, probes[1][2] * 30, _mask(_M5), "large"),
        (f"d_model={d_model}: the module and x in float64", 0, probes[2][2].double(), _mask(_M4), "float64"),
        (
            f"d_model={d_model}: the module and x in float16, position 1 fully masked",
            0,
            probes[2][2].half(),
            _mask(_M4),
            "float16",
        ),
        (
            "a backward pass",
            1,
            torch.randn(2, 5, CONFIGS[1][0], generator=g, dtype=torch.float32),
            _mask(_M5),
            "backward",
        ),
    ]
    return probes, weights


def _load(module, weights, d_model):
    """Copy the known weights into W_q, W_k, W_v, W_o (biases to 0); returns a complaint or None."""
    for name in _LAYERS:
        layer = getattr(module, name, None)
        weight = getattr(layer, "weight", None)
        if not isinstance(weight, torch.Tensor):
            return (
                f"your module has no {name} layer with a .weight; the exercise asks for "
                f"self.{name} = nn.Linear(d_model, d_model)."
            )
        if tuple(weight.shape) != (d_model, d_model):
            return (
                f"self.{name}.weight has shape {shape_str(weight.shape)}, but with d_model={d_model} "
                f"it should be ({d_model}, {d_model}): nn.Linear(d_model, d_model)."
            )
        with torch.no_grad():
            weight.copy_(weights[name])
            bias = getattr(layer, "bias", None)
            if isinstance(bias, torch.Tensor):
                bias.zero_()
    return None


_DTYPES = {"float64": torch.float64, "float16": torch.float16}


def _key(c, kind):
    return (c, kind if kind in _DTYPES else "float32")


def _build_step(cls, c, weights, state, kind="float32"):
    d_model, n_heads = CONFIGS[c]

    def step():
        module = cls(d_model, n_heads)
        if not isinstance(module, nn.Module):
            return {
                "complaint": f"cls({d_model}, {n_heads}) gave a {type(module).__name__}, not an nn.Module."
            }
        complaint = _load(module, weights[c], d_model)
        if complaint:
            return {"complaint": complaint}
        module.eval()
        if kind in _DTYPES:
            module.to(_DTYPES[kind])
        state[(c, kind)] = module
        return {"complaint": ""}

    return step


def _forward(module):
    return lambda x, mask=None: module(x) if mask is None else module(x, mask=mask)


def _forward_step(key, x, mask, state):
    def step():
        args = {"x": x} if mask is None else {"x": x, "mask": mask}
        return guarded_call(_forward(state[key]), args, ("x",))

    return step


def _backward_step(key, x, mask, cotangent, state):
    def step():
        module = state[key]
        leaf = x.clone().requires_grad_(True)
        value = module(leaf, mask=mask.clone())
        output = value[0] if isinstance(value, (tuple, list)) and value else value
        if (
            type(output) is not torch.Tensor
            or not output.is_floating_point()
            or output.shape != cotangent.shape
        ):
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "no tensor"}}
        if output.grad_fn is None:
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "none"}}
        (output.to(torch.float64) * cotangent).sum().backward()
        return {
            "value": to_plain(value),
            "modified": [],
            "extra": {"grad": None if leaf.grad is None else to_plain(leaf.grad)},
        }

    return step


def _live(x, mask):
    if mask is None:
        return torch.ones(x.shape[:-1], dtype=torch.bool)
    return mask.any(dim=-1).expand(x.shape[:-1])


_CACHE: dict = {}


def _variants():
    table = {}
    for bug_id, fns in MULTI_HEAD_VARIANTS.items():
        table[bug_id] = [
            lambda x, w, h, m, fn=fn, dead=dead: fn(x, w, h, m, dead)
            for fn in fns
            for dead in ("zero", "uniform", "nan")
        ]
    for bug_id, fns in ATTENTION_VARIANTS.items():
        table.setdefault(bug_id, [])
        table[bug_id] += [lambda x, w, h, m, fn=fn: multi_head(x, w, h, m, attend=fn) for fn in fns]
    return table


def _expected():
    with neutral():
        return _build_cache()


def _build_cache():
    if not _CACHE:
        probes, weights = _probes()
        w64 = [{name: w.to(torch.float64) for name, w in ws.items()} for ws in weights]
        args = [(x.to(torch.float64), w64[c], CONFIGS[c][1], mask) for _, c, x, mask, _ in probes]
        reference = [multi_head(*a) for a in args]
        _, c, x, mask, _ = probes[-1]
        cotangent = torch.randn(x.shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
        leaf = x.to(torch.float64).requires_grad_(True)
        (multi_head(leaf, w64[c], CONFIGS[c][1], mask) * cotangent).sum().backward()
        main = [i for i, p in enumerate(probes) if p[4] == "main"]
        args32 = [(x, weights[c], CONFIGS[c][1], mask) for _, c, x, mask, _ in probes]
        table = Hypotheses(_variants(), [args32[i] for i in main])  # float32, as learners
        _CACHE.update(
            probes=probes,
            weights=weights,
            reference=reference,
            cotangent=cotangent,
            grad=leaf.grad,
            table=table,
            main=main,
        )
    return _CACHE


def _describe(label, x, mask, ans, expected):
    if ans.error is not None:
        raised = f"{describe_error(ans.error)}{where_note(ans.error)}"
        return f"On {label} (x {shape_str(x.shape)}) forward raised {raised}"
    if ans.output.shape != expected.shape:
        return f"On {label}: {shape_complaint(ans.output.shape, expected.shape, _OUTPUT_DIMS)}"
    if not bool(torch.isfinite(rows(ans.output, _live(x, mask))).all()):
        return f"On {label} the output holds NaN or inf at positions that have keys to attend to."
    return (
        f"On {label} the output differs from the correct one by up to "
        f"{max_gap(ans.output, expected, _live(x, mask)):.3g}."
    )


@in_neutral
def check_multi_head(cls, *, time_limit: float = TIME_LIMIT):
    """Check a learner's multi-head attention class.

    ``cls(d_model, n_heads)`` must build an ``nn.Module`` with ``nn.Linear``
    layers ``W_q``, ``W_k``, ``W_v``, ``W_o`` (each d_model -> d_model; a bias,
    if present, is set to 0) and ``forward(x, mask=None)``: x is
    ``(batch, n, d_model)``, mask None or bool ``(n, n)`` (True = may attend,
    the same for every head and batch entry); it returns the output
    ``(batch, n, d_model)`` or ``(output, weights)``. The checker builds it
    with (d_model, n_heads) = (12, 3), (10, 2) and (18, 3), copies known
    weights in, and compares with its own reference on several inputs (batch
    1, 2 and 3, masks, a fully masked position where any finite output is
    accepted), a repeated call and a backward pass. The module runs in a
    child process with a time limit; the kernel is never changed.
    """
    if isinstance(cls, nn.Module):
        return _verdict.problem(
            NAME,
            f"expected a class, got an instance of {type(cls).__name__}.",
            ["Pass the class itself, not a module built from it: check_multi_head(MyMultiHeadAttention)."],
        )
    if not callable(cls):
        return _verdict.problem(
            NAME,
            f"expected a class, got a {type(cls).__name__}.",
            ["Pass the class itself: check_multi_head(MyMultiHeadAttention)."],
        )
    cache = _expected()
    probes, reference = cache["probes"], cache["reference"]
    state: dict = {}
    steps, labels, order = [], [], []
    keys = list(dict.fromkeys(_key(p[1], p[4]) for p in probes))
    for key in keys:
        d_model, n_heads = CONFIGS[key[0]]
        steps.append(_build_step(cls, key[0], cache["weights"], state, key[1]))
        labels.append(
            f"Building cls({d_model}, {n_heads})" + ("" if key[1] == "float32" else f" in {key[1]}")
        )
        order.append(None)
        for j, (label, pc, x, mask, kind) in enumerate(probes):
            if _key(pc, kind) == key and kind != "backward":
                steps.append(_forward_step(key, x, mask, state))
                labels.append(f"On {label}")
                order.append(j)
    label, c, x, mask, _ = probes[-1]
    steps.append(_backward_step(_key(c, "backward"), x, mask, cache["cotangent"], state))
    labels.append(f"On {label}")
    order.append(len(probes) - 1)
    run = run_steps(steps, time_limit=time_limit, budget=time_limit)
    notes = [run.note] if not run.isolated else []
    stopped = stop_verdict(NAME, run, labels, time_limit, notes)
    if stopped:
        return stopped

    answers = [None] * len(probes)
    for step, index, label in zip(run.steps, order, labels, strict=True):
        if index is None:  # a build step
            if step.status == "error" and " in float" in label:
                return _verdict.problem(
                    NAME,
                    f"{label[0].lower()}{label[1:]} failed.",
                    [
                        f"It raised {describe_error(step.error)}{where_note(step.error)}. After "
                        f"module.to(dtype) every parameter has that dtype."
                    ]
                    + notes,
                )
            if step.status == "error":
                if step.error.get("not_implemented"):
                    return _verdict.not_implemented(NAME, step.error["message"])
                return _verdict.problem(
                    NAME,
                    f"{label[0].lower()}{label[1:]} failed.",
                    [f"It raised {describe_error(step.error)}{where_note(step.error)}"] + notes,
                )
            if step.value.get("complaint"):
                return _verdict.problem(NAME, step.value["complaint"], notes)
            continue
        answers[index] = answer(step)
    for (label, *_), ans in zip(probes, answers, strict=True):
        if ans.error is not None and ans.error.get("not_implemented"):
            return _verdict.not_implemented(NAME, ans.error["message"])
        if ans.complaint:
            return _verdict.problem(NAME, "forward " + ans.complaint, [f"On {label}."] + notes)

    main = cache["main"]
    m = [(probes[i], answers[i], reference[i]) for i in main]
    live_right = [a.output is not None and agrees(a.output, e, _live(p[2], p[3])) for p, a, e in m]
    modified = sorted({n for a in answers for n in a.modified})
    if modified:
        notes.append(f"forward changed {', '.join(modified)} in place.")
    repeat = answers[next(i for i, p in enumerate(probes) if p[4] == "repeat")]
    if (
        repeat.output is not None
        and answers[0].output is not None
        and repeat.output.shape == answers[0].output.shape
        and not torch.equal(repeat.output.nan_to_num(), answers[0].output.nan_to_num())
    ):
        return _verdict.bug_found(
            NAME,
            "dropout_left_on",
            ["Called twice on the same input (in eval mode), forward gave two different outputs."] + notes,
        )

    if all(live_right):
        dead_finite = all(
            a.output is None or bool(torch.isfinite(rows(a.output, ~_live(p[2], p[3]))).all())
            for p, a, _ in m
        )
        extra = {p[4]: (p, a, e) for p, a, e in zip(probes, answers, reference, strict=True)}
        (lp, la, le) = extra["large"]
        large_nan = la.output is not None and not bool(
            torch.isfinite(rows(la.output, _live(lp[2], lp[3]))).all()
        )
        if large_nan:
            return _verdict.bug_found(
                NAME,
                "softmax_overflow",
                [
                    f"On {lp[0]} the output holds NaN or inf: exp(scores) / sum without subtracting the row "
                    f"maximum (torch.softmax does that for you)."
                ]
                + notes,
            )
        if not dead_finite:
            return _verdict.bug_found(
                NAME,
                "nan_on_fully_masked_row",
                ["Every position that has a key to attend to gets the right output."] + notes,
            )
        if modified:
            return _verdict.bug_found(NAME, "modifies_inputs", ["The outputs are right."] + notes)
        for p, a, _ in m:
            if a.output.dtype != torch.float32:
                return _verdict.bug_found(
                    NAME,
                    "dtype_changed",
                    [f"On {p[0]} (float32 x) the output is {str(a.output.dtype).replace('torch.', '')}."]
                    + notes,
                )
        for kind in ("float64", "float16"):
            p, a, e = extra[kind]
            if a.error is not None:
                found = (
                    "fill_overflows_float16"
                    if kind == "float16" and error_kind(a.error) == "overflow"
                    else None
                )
                if found:
                    return _verdict.bug_found(NAME, found, [_describe(p[0], p[2], p[3], a, e)] + notes)
                return _verdict.problem(
                    NAME, f"forward raised on {kind}.", [_describe(p[0], p[2], p[3], a, e)] + notes
                )
            if a.output.dtype != _DTYPES[kind]:
                return _verdict.bug_found(
                    NAME,
                    "dtype_changed",
                    [f"On {p[0]} the output is {str(a.output.dtype).replace('torch.', '')}."] + notes,
                )
            finite = bool(torch.isfinite(a.output).all())
            if kind == "float16" and not finite:
                return _verdict.bug_found(
                    NAME,
                    "fill_overflows_float16",
                    [f"On {p[0]} the output holds NaN or inf, although float32 is fine."] + notes,
                )
            tol = 2e-2 if kind == "float16" else 1e-4
            if not agrees(a.output, e, _live(p[2], p[3]), atol=tol, rtol=tol):
                return _verdict.problem(
                    NAME, f"right in float32, wrong in {kind}.", [_describe(p[0], p[2], p[3], a, e)] + notes
                )
        back = answers[-1]
        grad = (back.extra or {}).get("grad")
        trouble = None
        if back.error is not None:
            trouble = f"the backward pass raised {describe_error(back.error)}"
        elif grad == "none" or grad is None:
            trouble = "the output carries no gradient back to x (.detach(), torch.no_grad() or NumPy)."
        elif isinstance(grad, dict):
            mine = torch.from_numpy(grad["array"])
            if mine.shape != cache["grad"].shape or not torch.allclose(
                mine, cache["grad"], atol=1e-3, rtol=1e-2
            ):
                trouble = (
                    "the gradient that reaches x differs from the correct one: part of forward is detached."
                )
        if trouble:
            return _verdict.bug_found(NAME, "gradient_blocked", [f"On {probes[-1][0]}: {trouble}"] + notes)
        return _verdict.passed(
            NAME,
            f"correct on all {len(probes)} test inputs.",
            [
                "(d_model, n_heads) = (12, 3), (10, 2) and (18, 3) with known weights: batch 1, 2 and 3, "
                "no mask, a mask that is not symmetric, a fully masked position, large scores, float64 and "
                "float16 modules, a repeated call and the gradients of a backward pass."
            ]
            + notes,
        )

    first_bad = live_right.index(False)
    (label, _, x, mask, _), ans, expected = m[first_bad]
    detail = [_describe(label, x, mask, ans, expected)]
    if any(error_kind(a.error) == "contiguous" for _, a, _ in m):
        return _verdict.bug_found(NAME, "missing_contiguous", detail + notes)
    m_answers = [a for _, a, _ in m]
    lives = [_live(p[2], p[3]) for p, _, _ in m]
    bug = matching_bug(m_answers, cache["table"], lives, [e.shape for _, _, e in m])
    if bug:
        return _verdict.bug_found(NAME, bug, detail + notes)
    if modified:
        return _verdict.bug_found(NAME, "modifies_inputs", detail + notes)
    if all(error_kind(a.error) == "matmul" for _, a, _ in m):
        return _verdict.bug_found(
            NAME,
            "missing_key_transpose",
            detail
            + [
                "Every input fails in a matrix product whose shapes do not line up; the usual cause is "
                "query @ key without key.transpose(-2, -1) (k.T on a 4-D tensor reverses all four axes)."
            ]
            + notes,
        )
    batch_one = [p[2].shape[0] == 1 for p, _, _ in m]
    if any(batch_one) and all(ok == b for ok, b in zip(live_right, batch_one, strict=True)):
        return _verdict.bug_found(NAME, "batch_one_only", detail + notes)
    errors = [(p, a) for p, a, _ in m if a.error is not None]
    if errors:
        (label, *_), err = errors[0]
        return _verdict.problem(
            NAME,
            f"forward raised {err.error['type']} on {label}.",
            detail + [f"It raised on {len(errors)} of the {len(m)} inputs."] + notes,
        )
    right = [p[0] for (p, _, _), ok in zip(m, live_right, strict=True) if ok]
    notes = detail + [f"Right on: {'; '.join(right) or 'none of the inputs'}."] + notes
    return _verdict.problem(
        NAME,
        "the output is not right, and it does not match any single known bug.",
        notes,
        fix="split: view(B, n, h, d_k).transpose(1, 2); attention per head with / √d_k; merge: "
        "transpose(1, 2).contiguous().view(B, n, d_model); then W_o",
    )
