"""check_attention: a learner's scaled dot-product attention on crafted inputs, named by the engine.

This checker is its probes (:func:`_probes`) plus three rules of its own (the weights returned must be
right too; (weights, output) is named for what it is; when no bug explains every input, the inputs
without a mask may still name one of two mistakes); everything else is the shared engine (:mod:`._engine`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from . import _verdict
from ._catalog import ATTENTION_FIX_NAMES, BUGS
from ._compare import agrees
from ._diagnose import Hypotheses, matching_bug
from ._engine import Probe, Rule, Spec, default_compare, live_queries, right_but_transposed, run_check
from ._ownlines import elementwise_blend
from ._ownlines_scores import floor_below_float16
from ._reference import ATTENTION_VARIANTS, attention, in_neutral, neutral
from ._rules import dead_row_gradient, long_inputs, rules
from ._run import TIME_LIMIT, guarded_call, shape_str
from ._sandbox import to_plain
from ._scale import divisor_names, fitted_divisor
from ._stale import code_notes, globals_note, names_used, with_stale_note
from ._yournames import fix_in_your_names

__all__ = ["check_attention"]

NAME = "check_attention"
_OUTPUT_DIMS = ("features d_v", "queries n_q")
_POSITIONAL = ("q", "k", "v", "mask")


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


_LONG = 300   # keys in the long probe: past tiles of 32, 64, 128 and 256, with a partial last tile


def _probe(name, q, k, v, mask, kind="main", **facts):
    """One call ``fn(q, k, v[, mask])``; ``live`` marks query rows with at least one key."""
    args = {"q": q, "k": k, "v": v} if mask is None else {"q": q, "k": k, "v": v, "mask": mask}
    live = live_queries(q.shape[:-1], mask)
    text = f"q {shape_str(q.shape)}, k {shape_str(k.shape)}, v {shape_str(v.shape)}"
    # "no mask" only where the probe's name does not say it already ("4 queries, 4 keys, no mask")
    if mask is not None:
        text += f", mask {shape_str(mask.shape)}"
    elif "no mask" not in name:
        text += ", no mask"
    facts.setdefault("dtype", q.dtype)
    facts.setdefault("batch_one", all(n == 1 for n in q.shape[:-2]))
    facts.setdefault("unbatched", q.dim() == 2)
    return Probe(name, args, kind=kind, live=live, shapes=text, facts=facts)


def _negative_float16_probe(randn):
    """float16, query 1 fully masked and every one of its scores below -16: float16's minimum added to
    such a score (an additive mask) is -inf, so that row's softmax is 0/0."""
    k = randn(5, 16).abs() + 0.5
    q = randn(3, 16)
    q[1] = -2.0 * k.mean(dim=0)                       # q[1] . k_j < 0 for every key: scores about -10 to -20
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[0, 3:] = False
    mask[1] = False
    return _probe("float16 inputs, query 1 fully masked, its scores all below -16",
                  *(t.to(torch.float16) for t in (q * 2, k, randn(5, 3))), mask, kind="float16",
                  tolerance=2e-2)


def _blocked_far_above_probe(randn):
    """Key 4 is blocked for every query, and query 0 scores it 20000 above the keys it may see: an
    additive mask of -10000 (or any fill smaller than the gap) lets it win, and a softmax that takes
    the row's largest score before masking underflows every allowed key to 0."""
    q, k = randn(3, 16), randn(5, 16)
    k[4] = q[0] * (4 * 20000 / float(q[0] @ q[0]))          # q[0] . k[4] / √16 = 20000
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[:, 4] = False
    mask[1, 0] = False
    return _probe("a blocked key (key 4) that query 0 scores 20000 above the keys it may see", q, k,
                  randn(5, 3), mask, kind="blocked_far")


def _allowed_far_below_probe(randn):
    """Query 0 may see keys 0 and 1 only, and scores them about 100000 below 0; the blocked key 2 scores
    about 0. A fill of a fixed -10000 (BERT's old constant), or float16's minimum -65504 used for every
    dtype, in the blocked key's place lets it win; the dtype's own minimum does not. In float64, so
    that scores of that size still differ between two right implementations by far less than the
    check's tolerance (float32 rounds them to about 0.01)."""
    q, k = randn(2, 16), randn(3, 16)
    for j, score in enumerate((-100000.0, -100001.0)):      # q[0] . k_j / √16 = score
        k[j] = q[0] * (4 * score / float(q[0] @ q[0]))
    mask = torch.ones(2, 3, dtype=torch.bool)
    mask[0, 2] = False
    return _probe("query 0's allowed keys scoring 100000 below 0, its blocked key about 0 (float64)", q, k,
                  randn(3, 3), mask, kind="allowed_far_below")


def _probes():
    """The crafted inputs. Main ones (compared with every hypothesis): n_q != n_k (fewer queries than
    keys, and more), d_k = 16 and 9
    (√d_k is neither 1, d_k, d_k / 2 nor the 2 of a stale global d_k = 4), d_v apart from d_k, a
    batch of heads, masks that are not symmetric with a row all True, a fully masked row, values
    all 1, n_k = d_k = d_v (where a forgotten transpose or swapped k and v still run) and a padding
    mask (batch, 1, n_k) on a batch of three sequences (a mask squeezed or given a head axis), and one
    (batch, 1, 1, n_k) on a batch of heads (a mask tiled over batch and heads together). Extra
    ones: large scores, a blocked key scoring far above the allowed ones, float64 and float16 inputs, a
    repeat (dropout), a backward pass."""
    g = torch.Generator().manual_seed(6)
    padded = torch.Generator().manual_seed(61)     # its own draws: the other probes stay as they were
    far = torch.Generator().manual_seed(62)        # the same for the blocked key far above
    more = torch.Generator().manual_seed(63)       # the same for more queries than keys
    long = torch.Generator().manual_seed(64)       # the same for many keys
    dead = torch.Generator().manual_seed(65)       # the same for a backward pass through a dead row
    heads = torch.Generator().manual_seed(66)      # the same for a padding mask on a batch of heads
    below = torch.Generator().manual_seed(67)      # the same for allowed keys scoring far below 0

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32)

    d_k = 16
    probes = [
        _probe("4 queries, 4 keys, no mask", randn(4, d_k), randn(4, d_k), randn(4, 3), None),
        _probe("3 queries, 5 keys, no mask", randn(3, d_k), randn(5, d_k), randn(5, 6), None),
        _probe(
            "batch 2 x 3 heads, 4 queries, 6 keys, no mask (heads split by a transpose: not contiguous)",
            *(randn(2, n, 3, d).transpose(1, 2) for n, d in ((4, d_k), (6, d_k), (6, 5))),
            None,
        ),
        five := _probe(
            "5 queries, 5 keys, d_k = 9, a mask",
            randn(5, 9),
            randn(5, 9),
            randn(5, 3),
            _partial_mask(5, 5, g, full_row=2),
        ),
        _probe(
            "3 queries, 5 keys, a mask", randn(3, d_k), randn(5, d_k), randn(5, 6), _partial_mask(3, 5, g)
        ),
        _probe(
            "batch 2 x 3 heads, a (4, 6) mask",
            randn(2, 3, 4, d_k),
            randn(2, 3, 6, d_k),
            randn(2, 3, 6, 5),
            _partial_mask(4, 6, g, full_row=0),
        ),
        _probe(
            "4 queries, 4 keys, query 1 fully masked",
            randn(4, d_k),
            randn(4, d_k),
            randn(4, 3),
            _partial_mask(4, 4, g, dead_row=1),
        ),
        _probe(
            "3 queries, 5 keys, every value 1",
            randn(3, d_k),
            randn(5, d_k),
            torch.ones(5, 2, dtype=torch.float32),
            None,
            ones=True,
        ),
        _probe(
            "3 queries, 5 keys, d_k = d_v = 5, a mask",
            randn(3, 5),
            randn(5, 5),
            randn(5, 5),
            _partial_mask(3, 5, g),
        ),
        _probe(
            "batch 1, 4 queries, 5 keys, a mask",
            randn(1, 4, d_k),
            randn(1, 5, d_k),
            randn(1, 5, 3),
            _partial_mask(4, 5, g),
        ),
        _probe(   # notebook 04's padding mask (batch, 1, n_k) on a batch of sequences, one per row of
            # lengths; 6 queries: code that walks the queries in tiles of 4 is tried past one tile
            "batch 3, 6 queries, 5 keys, a padding mask (3, 1, 5) for lengths 5, 3, 2",
            *(torch.randn(3, n, d, generator=padded) for n, d in ((6, d_k), (5, d_k), (5, 3))),
            (torch.arange(5)[None, :] < torch.tensor([5, 3, 2])[:, None])[:, None, :],
        ),
        _probe(   # more queries than keys: a loop over the keys' count where the queries' belongs
            "6 queries, 4 keys, a mask",
            *(torch.randn(n, d, generator=more) for n, d in ((6, d_k), (4, d_k), (4, 3))),
            _partial_mask(6, 4, more),
        ),
        _probe(   # a padding mask with a head axis (batch, 1, 1, n_k) on a batch of heads: a mask tiled
            # over the flattened batch and heads (mask.repeat) gives one sequence another's padding
            "batch 2 x 3 heads, 4 queries, 5 keys, a padding mask (2, 1, 1, 5) for lengths 5, 2",
            *(torch.randn(2, 3, n, d, generator=heads) for n, d in ((4, d_k), (5, d_k), (5, 3))),
            (torch.arange(5)[None, :] < torch.tensor([5, 2])[:, None])[:, None, None, :],
            alone=("Only the padding mask with a head axis on a batch of heads goes wrong: each sequence "
                   "must keep its own mask row. Tiling the mask over batch and heads flattened together "
                   "(mask.repeat) hands a sequence another's padding; broadcasting, or expand, keeps them "
                   "apart."),
        ),
    ]
    probes += [
        _probe(
            "large scores (q and k times 40)",
            randn(4, d_k) * 40,
            randn(6, d_k) * 40,
            randn(6, 3),
            _partial_mask(4, 6, g),
            kind="large",
        ),
        _probe(
            "float64 inputs, query 1 fully masked",   # a softmax run in float32 makes its fill -inf
            *(t.to(torch.float64) for t in (randn(3, d_k), randn(5, d_k), randn(5, 4))),
            _partial_mask(3, 5, g, dead_row=1),
            kind="float64",
        ),
        _probe(
            "float16 inputs, query 2 fully masked",
            *(t.to(torch.float16) for t in (randn(4, d_k), randn(5, d_k), randn(5, 3))),
            _partial_mask(4, 5, g, dead_row=2),
            kind="float16",
            tolerance=2e-2,
        ),
        _negative_float16_probe(randn),
        _blocked_far_above_probe(lambda *shape: torch.randn(*shape, generator=far, dtype=torch.float32)),
        _allowed_far_below_probe(lambda *shape: torch.randn(*shape, generator=below, dtype=torch.float64)),
        _probe(   # code that walks the keys in tiles (an online softmax) is tried past one tile
            f"5 queries, {_LONG} keys, a mask",
            *(torch.randn(n, d, generator=long, dtype=torch.float32)
              for n, d in ((5, d_k), (_LONG, d_k), (_LONG, 3))),
            torch.rand(5, _LONG, generator=long) > 0.3,
            kind="long",
        ),
        Probe("the 5-query input again", five.args, kind="repeat", same_as=five.name, live=five.live,
              shapes=five.shapes),
        _probe(
            "a backward pass",
            randn(2, 4, d_k),
            randn(2, 6, d_k),
            randn(2, 6, 5),
            _partial_mask(4, 6, g),
            kind="backward",
        ),
        _probe(   # the same shapes (and cotangent) as the backward pass, with query 3 fully masked
            "a backward pass, query 3 fully masked",
            *(torch.randn(2, n, d, generator=dead, dtype=torch.float32)
              for n, d in ((4, d_k), (6, d_k), (6, 5))),
            _partial_mask(4, 6, dead, dead_row=3),
            kind="backward_dead",
        ),
    ]
    return probes


def _backward_step(fn, probe, cotangent):
    def step():
        q, k, v = (t.detach().clone().requires_grad_(True) for t in (probe.args[n] for n in "qkv"))
        value = fn(q, k, v, probe.args["mask"].clone())
        output = value[0] if isinstance(value, (tuple, list)) and value else value
        if type(output) is not torch.Tensor or not output.is_floating_point():
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "no tensor"}}
        if output.grad_fn is None:
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "none"}}
        if output.shape != cotangent.shape:
            return {"value": to_plain(value), "modified": [], "extra": {"grad": "shape"}}
        (output.to(torch.float64) * cotangent).sum().backward()
        leaves = {"q": q, "k": k, "v": v}
        grads = {name: None if t.grad is None else to_plain(t.grad) for name, t in leaves.items()}
        return {"value": to_plain(value), "modified": [], "extra": {"grad": grads}}

    return step


_CACHE: dict = {}


def _expected():
    """Probes with their reference outputs (float64) and gradients, and the hypotheses (computed
    once per kernel, in the kernel: this is the checker's own math)."""
    with neutral():
        if not _CACHE:
            probes = _probes()
            for probe in probes:
                args = [probe.args[n].to(torch.float64) for n in "qkv"]
                probe.expected, probe.facts["weights"] = attention(*args, probe.args.get("mask"))
            back = next(p for p in probes if p.kind == "backward")
            shape = back.args["q"].shape[:-1] + back.args["v"].shape[-1:]
            cotangent = torch.randn(shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
            q, k, v = (back.args[n].to(torch.float64).requires_grad_(True) for n in "qkv")
            (attention(q, k, v, back.args["mask"])[0] * cotangent).sum().backward()
            back.facts["grads"] = {"q": q.grad, "k": k.grad, "v": v.grad}
            table = Hypotheses(ATTENTION_VARIANTS, lambda p: tuple(p.args.get(n) for n in _POSITIONAL))
            _CACHE.update(probes=probes, cotangent=cotangent, table=table)  # float32, as learners
    return _CACHE


def _steps(fn, probes, cotangent):
    steps = []
    for probe in probes:
        if probe.kind in ("backward", "backward_dead"):
            steps.append(_backward_step(fn, probe, cotangent))
        else:
            steps.append(lambda probe=probe: guarded_call(fn, probe.args, _POSITIONAL))
    return steps


def _weights_returned(t):
    """The output is right; if the weights are returned too, they must be right."""
    for probe, ans in t.main:
        weights = probe.facts["weights"]
        if (
            ans.weights is not None
            and ans.weights.shape == weights.shape
            and not agrees(ans.weights, weights, probe.live)
        ):
            args = probe.args
            unmasked = attention(*(args[n].to(torch.float64) for n in "qkv"))[1]
            unmasked_weights = "mask" in args and agrees(ans.weights, unmasked, probe.live)
            square = weights.shape[-1] == weights.shape[-2]
            transposed = square and agrees(ans.weights.transpose(-2, -1), weights, probe.live)
            said = (" They are the softmax of the scores without the mask: the output uses the mask, "
                    "the weights you return do not." if unmasked_weights else
                    " They are the right weights transposed: return them as (..., n_q, n_k), a row per query."
                    if transposed else "")
            return t.problem(
                "the output is right but the weights you return are not.",
                [
                    f"{probe.where} the second thing returned has the weights' shape but different "
                    f"numbers.{said or ' Return the softmax of the scaled, masked scores.'}"
                ],
            )
    return None


def _wrong_in_value(t, kind):
    """The probe of ``kind`` and the answer to it when the answer has the right shape and wrong numbers;
    (None, None) otherwise (no such probe, raised, another shape, or right)."""
    probe, ans = t.one(kind)
    if probe is None or ans.error is not None or not isinstance(ans.output, torch.Tensor) \
            or ans.output.shape != probe.expected.shape \
            or agrees(ans.output, probe.expected, probe.live_rows(ans.output), atol=1e-3):
        return None, None
    return probe, ans


def _blocked_far_softmax(t):
    """The softmax ran over the blocked keys too (see :func:`_blocked_far`), named before a fully masked
    row's NaN (the weights masked after the softmax and renormalised divide 0 by 0 there: that verdict's
    Fix, the fill, left the renormalising in place, and the same verdict came back; replay 26) and
    before the float16 probe is read (renormalised with an epsilon that float16 rounds to 0, that code is
    NaN there too, and a fill it does not have would be blamed)."""
    return _blocked_far(t, named_only=True)


def _blocked_far(t, named_only=False):
    """Right everywhere else, wrong when a blocked key scores far above the allowed ones: the blocked key
    won (an additive mask too small for the gap), or every allowed weight underflowed (the row's
    largest score, a blocked one, subtracted before masking, or the weights masked and renormalised
    after the softmax)."""
    probe, ans = _wrong_in_value(t, "blocked_far")
    if probe is None:
        return None
    row, blocked = ans.output[0].detach().to(torch.float64), probe.args["v"][4].to(torch.float64)
    seen, finite = [t.describe(probe, ans)], bool(torch.isfinite(row).all())
    if finite and torch.allclose(row, blocked, atol=1e-3) and not named_only:
        return t.bug("additive_mask_too_small", f"{t.spec.subject} gave query 0's weight to a blocked key",
                     seen + ["Query 0's output is key 4's value: the blocked key won."])
    if not finite or float(row.abs().max()) < 1e-6:
        return t.bug("softmax_max_over_blocked",
                     f"{t.spec.subject} gave query 0 no weight on the keys it may see",
                     seen + [f"Query 0's output is {'all 0' if finite else 'NaN'}: every key it may see got "
                             "weight 0."])
    if named_only:
        return None
    return t.problem(f"{t.spec.subject} is right on ordinary inputs, wrong when a blocked key scores far "
                     "above the keys a query may see.", seen)


def _allowed_far_below(t):
    """Right everywhere else, wrong when the keys a query may see all score far below 0: a fixed fill
    such as -10000 (replaced or added) is then above them, and the blocked key wins."""
    probe, ans = _wrong_in_value(t, "allowed_far_below")
    if probe is None:
        return None
    seen = [t.describe(probe, ans)]
    row, blocked = ans.output[0].detach().to(torch.float64), probe.args["v"][2].to(torch.float64)
    if bool(torch.isfinite(row).all()) and torch.allclose(row, blocked, atol=1e-3):
        seen.append("Query 0's output is key 2's value: the blocked key won. Its fill, a fixed number such "
                    "as -10000 (BERT's old constant) or float16's minimum -65504, is above scores of "
                    "-100000; the dtype's own minimum, torch.finfo(scores.dtype).min, is below every score "
                    "the dtype can hold.")
    return t.problem(f"{t.spec.subject} is right on ordinary inputs, wrong when the keys a query may see "
                     "all score far below 0.", seen,
                     fix="scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)")


def _swapped_return(t):
    """(weights, output) returned: the second thing is the right output, the first the right weights."""
    main = t.main
    for probe, ans in main:
        weights = probe.facts["weights"]
        if (
            ans.weights is None
            or ans.output is None
            or ans.weights.shape != probe.expected.shape
            or ans.output.shape != weights.shape
            or not agrees(ans.weights, probe.expected, probe.live)
            or not agrees(ans.output, weights, probe.live)
        ):
            return None
    probe, ans = t.first_wrong()
    return t.bug(
        "output_and_weights_swapped",
        f"{t.happened(probe, ans)}: the output and the weights are returned in the wrong order",
        [f"{probe.where} the first thing returned has the weights' shape "
         f"{shape_str(probe.facts['weights'].shape)} and numbers, and the second is the right output."],
    )


def _output_transposed(t):
    """Every output is the right one with its last two axes swapped (v.mT @ weights.mT, or the blend
    transposed at the end): (..., d_v, n_q) where (..., n_q, d_v) belongs. A rule, not a hypothesis:
    the live query rows a masked input compares are the rows of the output turned back."""
    if not all(ans.error is None and right_but_transposed(probe, ans.output) for probe, ans in t.main):
        return None
    probe, ans = t.first_wrong()
    return t.bug("output_transposed", t.happened(probe, ans), [t.describe(probe, ans)])


def _any_scale(t):
    """Every wrong output is attention with the scores divided by another number than √d_k (none of
    the catalog's usual ones: √(2·d_k), √(k.shape[0]) ...): named wrong_scale, with the number read
    off each output and, where one expression of the input's sizes gives it on every input, that."""
    wrong = [(p, a) for p, a in t.main if not t.right(p, a)]
    if not wrong:
        return None
    divisors, names, seen = [], [], []
    for probe, ans in wrong:
        divisor = fitted_divisor(probe.args, ans.output, probe.live_rows(ans.output))
        if divisor is None:
            return None
        divisors.append(divisor)
        names.append(divisor_names(divisor, probe.args))
        d_k = probe.args["q"].shape[-1]
        seen.append(f"On {probe.name} ({probe.shapes}) your output is attention with the scores divided by "
                    f"{divisor:.4g}, not by √d_k = √{d_k} = {d_k ** 0.5:.4g}.")
    seen = seen[:3]
    path = _one_path(t, wrong, divisors)
    everywhere = sorted(set.intersection(*names), key=len)
    if everywhere:
        seen.append(f"On every one of these it is {everywhere[0]}, where the scale is "
                    "math.sqrt(q.shape[-1]).")
        return t.bug("wrong_scale", t.happened(*wrong[0]), [*seen, path])
    constant = max(divisors) - min(divisors) <= 1e-3 * divisors[0]
    rounded = all(abs(divisor - math.isqrt(probe.args["q"].shape[-1])) <= 1e-3 * divisor
                  for divisor, (probe, _) in zip(divisors, wrong, strict=True))
    # right where d_k is a square whose root is not that one number: √d_k rounded, not a constant
    squares = sorted({d_k for p, a in t.main if t.right(p, a) and (d_k := p.args["q"].shape[-1])
                      and math.isqrt(d_k) ** 2 == d_k and abs(math.sqrt(d_k) - divisors[0]) > 1e-3})
    if rounded and (squares or not constant):
        where = f", and right where d_k is {', '.join(map(str, squares))} (squares)" if squares else ""
        seen.append(f"It is √d_k rounded down to a whole number on every input it gets wrong{where}: "
                    "math.isqrt (or int(math.sqrt(...))), where the scale is math.sqrt(q.shape[-1]).")
    elif constant:
        which = "every input" if len(wrong) == len(t.main) else "every input it gets wrong"
        seen.append(f"It is {divisors[0]:.4g} on {which}, whatever their sizes: a constant, where the "
                    "scale is math.sqrt(q.shape[-1]), this input's own d_k.")
    probe, ans = wrong[0]
    return t.bug("wrong_scale", t.happened(probe, ans), [*seen, path])


def _one_path(t, wrong, divisors) -> str:
    """Where the scale is wrong on exactly the main inputs with a mask, or exactly those without one,
    and right on all the others: a line that says the learner's code takes two paths (an early return
    when no mask is given, say: replay 19's 02V3, told "It is 1 on every input", went on to scale the
    shared scores line and so scaled the other path twice); else ''."""
    masked = {id(p) for p, _ in t.main if "mask" in p.args}
    plain = {id(p) for p, _ in t.main} - masked
    bad = {id(p) for p, _ in wrong}
    if not masked or not plain or not (bad <= masked or bad <= plain):
        return ""
    side = masked if bad <= masked else plain
    path, right_on = ("with a mask", "without a mask") if side is masked else \
        ("without a mask", "with a mask")
    wrong_on = f"every one {path}" if bad == side else f"{len(bad)} of the {len(side)} {path}"
    d_ks = [p.args["q"].shape[-1] for p, _ in wrong]
    if all(abs(divisor - 1) <= 1e-3 for divisor in divisors):
        how = "does not scale the scores at all"
    elif all(abs(divisor - d_k) <= 1e-3 * d_k for divisor, d_k in zip(divisors, d_ks, strict=True)):
        how = "divides the scores by √d_k twice (√d_k · √d_k = d_k)"
    else:
        how = "scales the scores by another number"
    return (f"It is right on all {len(t.main) - len(side)} main inputs {right_on} and wrong on {wrong_on}: "
            "your code takes one path when a mask is given and another when none is (an if on "
            f"the mask, say), and its path {path} {how}. Both paths need the scores divided by "
            "math.sqrt(q.shape[-1]), once.")


def _right_exactly_where(t, same):
    """``(equal, unequal)``: the main inputs where ``same(probe)`` holds and the others, when the learner's
    code is right on every one of the first and on none of the second (both there); else None."""
    equal = [(p, a) for p, a in t.main if same(p)]
    unequal = [(p, a) for p, a in t.main if not same(p)]
    if not equal or not unequal or not all(t.right(p, a) for p, a in equal) or \
            any(t.right(p, a) for p, a in unequal):
        return None
    return equal, unequal


def _keys_counted_from_queries(t):
    """Right on every main input with as many queries as keys, wrong (or raised) on every one whose
    numbers differ: a size read from the queries where the keys' belongs (``L, S = q.size(-2),
    q.size(-2)``), or the other way round. Said before "batch one only": an unbatched input goes wrong."""
    split = _right_exactly_where(t, lambda p: p.args["q"].shape[-2] == p.args["k"].shape[-2])
    if split is None:
        return None
    square, uneven = split
    probe, ans = uneven[0]
    n_q, n_k = probe.args["q"].shape[-2], probe.args["k"].shape[-2]
    return t.problem(
        f"{t.spec.subject} is right whenever there are as many queries as keys, and wrong (or raised) "
        "whenever their numbers differ.",
        [t.describe(probe, ans),
         f"It goes wrong on all {len(uneven)} main inputs whose numbers of queries and keys differ, "
         f"batched or not, and is right on the {len(square)} where they are equal: somewhere a size is read "
         f"from the queries where the keys' belongs, or the other way round. With {n_q} queries and {n_k} "
         f"keys the scores are ({n_q}, {n_k}); a mask or a pattern built from the queries' count twice is "
         f"({n_q}, {n_q})."],
        fix="the keys' count is k.shape[-2] (the scores and the mask are (n_q, n_k)): read it from k "
            "wherever a size stands for the keys",
    )


def _values_width_from_keys(t):
    """Right on every main input whose values are as wide as its keys (d_v = d_k), wrong (or raised) on
    every one where they differ: a width read from q or k where v's belongs (``hasil.view(*depan, n_q,
    d_k)``). Said before "batch one only": replay 20's 02W3 was told it was right on inputs without batch
    dimensions, beside an unbatched input it raised on."""
    split = _right_exactly_where(t, lambda p: p.args["v"].shape[-1] == p.args["k"].shape[-1])
    if split is None:
        return None
    even, uneven = split
    probe, ans = uneven[0]
    d_k, d_v = probe.args["k"].shape[-1], probe.args["v"].shape[-1]
    return t.problem(
        f"{t.spec.subject} is right whenever the values are as wide as the keys (d_v = d_k), and wrong (or "
        "raised) whenever their widths differ.",
        [t.describe(probe, ans),
         f"It goes wrong on all {len(uneven)} main inputs whose d_v differs from d_k, and is right on the "
         f"{len(even)} where they are equal: somewhere a width is read from q or k (d_k) where v's belongs. "
         f"With d_k = {d_k} and d_v = {d_v} the output is (..., n_q, {d_v}): the weights blend rows of v."],
        fix="the output's width is v.shape[-1] (d_v): read it from v wherever a size stands for the values' "
            "width (a view or reshape of the output, say)",
    )


def _unmasked_bug(t):
    """Two mistakes at once, one of them in the masking: the inputs without a mask name the other."""
    plain = [(p, a) for p, a in t.main if "mask" not in p.args]
    if len(plain) == len(t.main) or all(t.right(p, a) for p, a in plain):
        return None
    answers, probes = [a for _, a in plain], [p for p, _ in plain]
    bug = matching_bug(answers, t.spec.hypotheses, probes, compare=default_compare)
    if bug is None or bug == "mask_ignored":
        return None
    probe, ans = next((p, a) for p, a in plain if not t.right(p, a))
    verdict = t.problem(
        f"{t.happened(probe, ans)}: two mistakes, it seems, and one of them is {_verdict.bug_words(bug)}.",
        [f"On the inputs without a mask your output matches the known bug {bug}: {BUGS[bug].what}",
         t.describe(probe, ans),
         "The inputs with a mask go wrong as well, beyond what that bug explains: is the mask used, "
         "before the softmax? Fix the first mistake, run the check again, and it will name what is left."],
        fix=BUGS[bug].fix_for(NAME),
    )
    verdict.fix_of = bug            # the Fix in their own line, as that bug's verdict would give it
    return verdict


def _passed(t):
    return _verdict.passed(
        NAME,
        f"correct on all {len(t.probes)} test inputs ({len(t.main)} main ones, the rest edge cases).",
        [
            "n_q ≠ n_k, a batch of heads, masks that are not symmetric, a fully masked query row (your "
            "result there is finite, as it should be), large scores, a blocked key scoring far above the "
            "allowed ones, allowed keys all scoring far below 0, "
            f"{_LONG} keys, float64 and float16 inputs, and "
            "the gradients of a backward pass."
        ],
        t.notes,
    )


SPEC = Spec(
    NAME,
    output_dims=_OUTPUT_DIMS,
    fix="scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]); "
    "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min); softmax over dim=-1; weights @ v",
    passed=_passed,
    complaint_fix="return output   # or: return output, weights",
    words={
        "batch_one": "Only the inputs with batch and head dimensions in front go wrong: index from the end, "
        "k.transpose(-2, -1) rather than k.T, and q.shape[-1] rather than q.shape[1].",
        "raised_fix": "run your function by hand on tensors of these shapes and read the error's last line",
        "fix_names": ATTENTION_FIX_NAMES,
        "signature": "def my_attention(q, k, v, mask=None):   # a mask comes fourth, or not at all",
        "mask_fix": "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)   # on the scores, "
        "before the softmax; True = may attend",
        "batch_one_headline": "is right on inputs without batch dimensions, wrong (or raised) with batch or "
        "head dimensions in front",
        "long": ("up to 6 keys", f"{_LONG} keys"),
        "long_fix": "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]); mask; softmax over dim=-1; "
        "weights @ v   # or check each tile's rescaling against this on long inputs",
    },
    # the softmax over blocked keys too: a fully masked row is NaN with it (and float16 with an epsilon), so
    # it is named before those rules, as check_multi_head does
    rules=rules(before={"large_scores_nan": [Rule("blocked_far_softmax", "right", _blocked_far_softmax)],
                        "passed": [Rule("long_keys", "right", long_inputs),
                                   Rule("dead_row_gradient", "right", dead_row_gradient),
                                   Rule("blocked_far", "right", _blocked_far),
                                   Rule("allowed_far_below", "right", _allowed_far_below),
                                   Rule("weights_returned", "right", _weights_returned)],
                        "hypothesis": [Rule("swapped_return", "wrong", _swapped_return),
                                       Rule("output_transposed", "wrong", _output_transposed)],
                        "batch_one": [Rule("keys_counted_from_queries", "wrong", _keys_counted_from_queries),
                                      Rule("values_width_from_keys", "wrong", _values_width_from_keys)],
                        "no_known_bug": [Rule("any_scale", "wrong", _any_scale),
                                         Rule("unmasked_bug", "wrong", _unmasked_bug)]}),
)


def _built_in_note(fn, result):
    """A pass whose function is, or calls, a ready-made attention (torch's or the course's) says so: the
    exercise is the steps written out, and a teacher grading with the check may want to know."""
    if not result.passed:
        return result
    module = getattr(fn, "__module__", "") or ""
    names = names_used(fn)
    if module.split(".")[0] in ("attnviz", "torch") or "scaled_dot_product_attention" in names:
        result.notes.append("Your function calls a ready-made attention (scaled_dot_product_attention): its "
                            "numbers are right, and the exercise asks for the steps written out: scores, "
                            "scale, mask, softmax, blend.")
    return result


@_verdict.never_raises
@with_stale_note
@in_neutral
def check_attention(fn, *, time_limit: float = TIME_LIMIT):
    """Check a learner's scaled dot-product attention ``fn(q, k, v, mask=None)``.

    ``q`` is ``(..., n_q, d_k)``, ``k`` ``(..., n_k, d_k)``, ``v`` ``(..., n_k, d_v)``;
    ``mask`` is None or bool broadcasting to ``(..., n_q, n_k)`` with True =
    may attend. ``fn`` returns the output ``(..., n_q, d_v)`` or
    ``(output, weights)``. The inputs include ``n_q != n_k``, a batch of
    heads, masks that are not symmetric and a fully masked query row (any
    finite result accepted there), large scores, a blocked key scoring far
    above the allowed ones, float64 and float16 inputs (the output keeps the
    inputs' dtype) and a backward pass compared with the reference's
    gradients.

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
    spec = replace(SPEC, hypotheses=cache["table"])
    probes = cache["probes"]
    result = run_check(spec, probes, _steps(fn, probes, cache["cotangent"]), time_limit)
    result = code_notes(fn, _built_in_note(fn, globals_note(fn, result, "q.shape[-1], k.shape[-2]")))
    return _entry_by_entry(fn, fix_in_your_names(fn, floor_below_float16(fn, result)))


def _entry_by_entry(fn, result):
    """A function that raised where tensors fail to broadcast, told "missing key transpose", whose code
    multiplies its weights by the values entry by entry (``vazn.mul(arzesh)``, ``torch.mul(w, v)``,
    ``w * v``): said so, with its line as a matrix product. (Broadcasting's error, "the size of tensor a
    must match", also comes from a product whose shapes do not line up, which is why the bug is told apart
    by the code.)"""
    if result.bug != "missing_key_transpose" or not any("must match the size of tensor b" in line
                                                         for line in result.observed):
        return result
    line = elementwise_blend(fn)
    if line is None:
        return result
    return _verdict.problem(NAME, "your function multiplies its weights by the values entry by entry, where "
                            "a matrix product belongs, and raised where their shapes do not broadcast.",
                            [*result.observed[:1], "The output is weights @ values: each query's row of "
                             "weights blends the rows of the values, (.., n_q, n_k) @ (.., n_k, d_v). An "
                             "entry-by-entry product (mul, *) needs the same shapes and blends nothing."],
                            fix=f"{line}   # in place of your line: a matrix product, weights @ values")
