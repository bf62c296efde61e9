"""check_causal_mask and check_padding_mask: a learner's masks against the checker's own, on the engine.

Each checker is its probes (the sizes or lengths it tries) plus the rules that differ from the
shared ones (:mod:`._engine`): a mask is compared exactly (True = may attend, broadcast to the
scores' shape), a non-bool mask is named and explained, a right mask in a wrong shape is named from
its shape (a causal triangle of a fixed size, a padding mask as wide as max(lengths) or without its
query axis), a causal function that also takes ``(n_q, n_k)`` is tried on rectangles (either corner
passes), an additive float mask is read as ``mask == 0``, and a padding function that changes
``lengths`` is named.
"""

from __future__ import annotations

import inspect
import re

import torch

from .._validate import broadcast_shape
from . import _verdict
from ._catalog import BUGS
from ._diagnose import Answer, Hypotheses, matching_bug
from ._engine import Probe, Rule, Spec, dtype_name, run_check
from ._reference import causal, in_neutral, padding
from ._repair import repaired
from ._rules import missing_torch_name, rules
from ._run import TIME_LIMIT, Odd, guarded_call, rebuild, shape_str
from ._stale import code_notes, code_of, globals_note, library_used, signature_of, with_stale_note
from ._stops import where_note
from ._yournames import mask_fix_in_your_names

__all__ = ["check_causal_mask", "check_padding_mask"]

_CAUSAL_SIZES = (4, 1, 6, 40, 300)  # 4 first (a verdict's example); 40 and 300: longer than a triangle
                                    # built once at a fixed size and sliced (nanoGPT's buffer is often 256)
_RECTANGLES = ((3, 5), (5, 3))  # tried when the function takes (n_q, n_k)
# batch != n; [2, 3, 1] with n = 6: max(lengths) < n; the last, the first's shape with other lengths (a mask
# cached by its shape)
_PADDING_CASES = (([2, 5, 1, 3], 5), ([4, 0], 4), ([2, 3, 1], 6), ([5, 1, 3, 2], 5))
_CAUSAL_FIX = "torch.ones(n, n, dtype=torch.bool).tril()"
_PADDING_FIX = "(torch.arange(n)[None, :] < lengths[:, None])[:, None, :]   # True = real token"

_CAUSAL_HYPOTHESES = {
    "causal_future_visible": [lambda n: torch.ones(n, n, dtype=torch.bool).triu()],
    "mask_blocks_nothing": [lambda n: torch.ones(n, n, dtype=torch.bool)],
    "causal_excludes_self": [lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1)],
    "mask_inverted": [lambda n: torch.ones(n, n, dtype=torch.bool).triu(1)],
    "causal_off_by_one": [lambda n: torch.ones(n, n, dtype=torch.bool).tril(1)],
    "causal_first_row_blocked": [  # a loop over the rows from 1: query 0 is left with no key
        lambda n: torch.ones(n, n, dtype=torch.bool).tril() & (torch.arange(n) > 0)[:, None]
    ],
    "causal_last_row_blocked": [  # a loop over range(n - 1): the last query is left with no key
        lambda n: torch.ones(n, n, dtype=torch.bool).tril() & (torch.arange(n) < n - 1)[:, None]
    ],
}
_PADDING_HYPOTHESES = {
    "padding_masks_queries": [lambda lengths, n: padding(lengths, n).transpose(-2, -1)],
    "padding_off_by_one": [
        lambda lengths, n: padding(torch.as_tensor(lengths) + 1, n),
        lambda lengths, n: padding(torch.as_tensor(lengths) - 1, n),
        # mask[b, 0, :length - 1] = True: for a length of 0, [:-1] is every position but the last
        lambda lengths, n: padding(torch.as_tensor(lengths) - 1, n)
        | ((torch.as_tensor(lengths) == 0)[:, None, None] & (torch.arange(n) < n - 1)),
    ],
    "mask_inverted": [lambda lengths, n: ~padding(lengths, n)],
    "padding_masks_queries_too": [
        lambda lengths, n: padding(lengths, n) & padding(lengths, n).transpose(-2, -1)
    ],
    # mask[b, :, -(n - length):] = False: for a sequence that fills all n, -0 is 0 and the slice is everything
    "padding_full_sequence_blocked": [
        lambda lengths, n: padding(lengths, n) & (torch.as_tensor(lengths) < n)[:, None, None]
    ],
    "padding_left_aligned": [  # the real tokens taken to be the last ones (left padding)
        lambda lengths, n: (torch.arange(n)[None, :] >= n - torch.as_tensor(lengths)[:, None])[:, None, :]
    ],
    # lengths read as the number of padding positions: the first n - length positions taken as real
    "padding_lengths_as_pad_counts": [lambda lengths, n: padding(n - torch.as_tensor(lengths), n)],
    # the padding mask and a causal one, combined: this exercise asks for padding alone
    "padding_combined_with_causal": [
        lambda lengths, n: padding(lengths, n) & torch.ones(n, n, dtype=torch.bool).tril()
    ],
    "padding_lengths_clamped": [lambda lengths, n: padding(torch.as_tensor(lengths).clamp(min=1), n)],
    "padding_lengths_reordered": [
        lambda lengths, n: padding(torch.as_tensor(lengths).sort(descending=True).values, n),
        lambda lengths, n: padding(torch.as_tensor(lengths).sort().values, n),
    ],
    # True everywhere; or everywhere in each non-empty sequence (mask[b, :length] = True on a (batch, 1, n)
    # mask slices the size-1 query axis)
    "mask_blocks_nothing": [
        lambda lengths, n: torch.ones(len(lengths), 1, n, dtype=torch.bool),
        lambda lengths, n: (torch.as_tensor(lengths) > 0)[:, None, None].expand(-1, 1, n),
    ],
}


def _show(value):
    return value.tolist() if isinstance(value, torch.Tensor) else value


def _probe(args, expected, kind="main", **facts):
    text = ", ".join(f"{name}={_show(value)}" for name, value in args.items())
    facts.setdefault("where", f"For {text}")
    return Probe(text, args, expected=expected, kind=kind, facts=facts)


def _read(step, probe):
    """The answer to a mask probe: the mask, or why it cannot be one (None, not a tensor, a shape
    that does not broadcast to the scores')."""
    if step.status == "error":
        return Answer(error=step.error)
    if step.status != "ok":
        return Answer(complaint=step.status)
    value = rebuild(step.value["value"])
    ans = Answer(output=value if isinstance(value, torch.Tensor) else None,
                 modified=tuple(step.value.get("modified", ())))
    shape = tuple(probe.expected.shape)
    if value is None:
        ans.complaint = "returned None. Did the function end without a return statement?"
    elif isinstance(value, Odd):
        ans.complaint = f"returned {value.what}, not a bool torch.Tensor."
    elif not isinstance(value, torch.Tensor):
        ans.complaint = f"returned a {type(value).__name__}, not a torch.Tensor."
    elif (together := broadcast_shape(tuple(value.shape), shape)) != shape:
        ans.complaint = (
            f"returned shape {shape_str(value.shape)}, which does not broadcast to the scores' shape "
            f"{shape_str(shape)}."
            if together is None
            else f"returned shape {shape_str(value.shape)}: against the scores' shape {shape_str(shape)} it "
            f"gives {shape_str(together)}, which changes the scores' shape"
            + _extra_dims(len(together) - len(shape))
        )
    return ans


def _extra_dims(extra):
    if extra <= 0:
        return "."
    return " (more dimensions: remove the extra one)." if extra == 1 else \
        f" (more dimensions: remove the {extra} extra ones)."


def _additive(value):
    """The fill of an additive float mask (0 where a query may attend, one negative number where it may
    not: -inf, torch.finfo(...).min, -1e9), or None when ``value`` is not one."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return None
    blocked = value[value != 0]
    if blocked.numel() == 0 or not bool((blocked < 0).all()) or blocked.unique().numel() != 1:
        return None
    return float(blocked[0])


def _read_additive(probes, answers):
    """A float mask that is additive (:func:`_additive`) on some probe, and all 0 or additive on every
    other, is read as additive on every one: its pattern is ``mask == 0`` (an all-0 mask, n = 1's, then
    lets every query attend), compared as a bool mask's is; the fill and dtype are kept for the words."""
    floats = [a for a in answers if isinstance(a.output, torch.Tensor) and a.output.is_floating_point()]
    fills = [_additive(a.output) for a in floats]
    found = [fill for fill in fills if fill is not None]
    if not found or any(fill is None and bool(a.output.any()) for a, fill in zip(floats, fills, strict=True)):
        return
    for a in floats:
        a.extra = {**(a.extra or {}), "additive": found[0], "dtype": dtype_name(a.output)}
        a.output = a.output == 0


def _same_mask(probe, ans, expected):
    shape = probe.expected.shape
    got = ans.output
    if not isinstance(got, torch.Tensor) or broadcast_shape(tuple(got.shape), tuple(shape)) != tuple(shape):
        return False
    try:
        return torch.equal(got.bool().expand(shape), expected.expand(shape))
    except RuntimeError:
        return False


def _additive_words(fill: float, words: str) -> str:
    """What an additive mask's fill does once F.scaled_dot_product_attention adds it to the scores."""
    if fill <= -1e9:
        return "That is a valid mask for F.scaled_dot_product_attention, which adds it to the scores"
    if fill > -1e4:
        return (f"Added to the scores, a fill of {words} lowers a blocked score by only {-fill:.4g}, far "
                "from blocking it")
    named = " (check_multi_head names a fill this small additive_mask_too_small)" if fill > -2e4 else ""
    return (f"F.scaled_dot_product_attention adds it to the scores, so it blocks a key only while that key's "
            f"score is less than {-fill:.4g} above the allowed ones{named}; -inf or torch.finfo(dtype).min "
            "always blocks")


def _dtype_note(t):
    """A non-bool mask: named, when its pattern is right everywhere (an additive float mask, or 1/0);
    otherwise a note that the dtype is wrong too, and the pattern's own rules go on."""
    # a repeat call's mask is _called_again's: a cache that hands back another mask than the first call's
    # (replay 24's 04A1 stored its float triangle, returned it on the second call, and was told its
    # pattern was right and its dtype float32, five rounds)
    pairs = [(p, a) for p, a in t.pairs() if p.kind != "again"]
    additive = next((a.extra for _, a in pairs if a.extra and "additive" in a.extra), None)
    if additive is not None:
        fill = additive["additive"]
        dtype = additive["dtype"]
        words = ("-inf" if fill == float("-inf") else f"torch.finfo(torch.{dtype}).min"
                 if fill == torch.finfo(getattr(torch, dtype)).min else f"{fill:.4g}")
        said = (f"your mask is an additive float mask ({dtype}: 0 where a query may attend, {words} where "
                "it may not)")
        happened = f"{t.spec.subject} returned a mask of dtype {dtype}, not bool"
        if t.all_right and not _rectangles(t):
            return t.bug("mask_not_bool", happened, [
                f"{said}. {_additive_words(fill, words)}; this exercise asks for a bool mask with True = may "
                "attend: return mask == 0."],
                fix="return mask == 0   # the bool mask: True where the additive mask is 0")
        t.notes.append(f"{said[0].upper()}{said[1:]}, read here as mask == 0. Once its pattern is right, "
                       "return it as a bool mask: mask == 0.")
        return None
    others = [(p, a) for p, a in pairs if isinstance(a.output, torch.Tensor) and not a.complaint
              and a.output.dtype != torch.bool]
    if not others:
        return None
    value = others[0][1].output
    read = ("a float mask is ADDED to the scores by F.scaled_dot_product_attention, so 1.0 and 0.0 block "
            "nothing" if value.is_floating_point() else
            "F.scaled_dot_product_attention raises on an integer mask, and so does masked_fill")
    pattern_right = all(_same_mask(p, Answer(output=a.output != 0), p.expected) for p, a in others
                        if p.kind == "main")
    if pattern_right and t.all_right and not _rectangles(t):
        happened = f"{t.spec.subject} returned a mask of dtype {dtype_name(value)}, not bool"
        return t.bug("mask_not_bool", happened, [
            f"the pattern is right but the dtype is {dtype_name(value)}: {read}."])
    name = dtype_name(value)
    article = "an" if name.startswith("i") else "a"
    t.notes.append(f"It is {article} {name} mask, not bool, as well: {read}. Once its pattern is right, "
                   "return a bool mask (build it with dtype=torch.bool).")
    return None


def _differences(probe, ans):
    """The Observed lines for a wrong mask: how many entries leak, how many are blocked wrongly."""
    shape = probe.expected.shape
    if ans.error is not None or ans.complaint:
        return (f"{probe.where}: {ans.complaint}" if ans.complaint else
                f"{probe.where}: {ans.error['type']}: {ans.error['message']}{where_note(ans.error)}")
    got, expected = ans.output.bool().expand(shape), probe.expected.expand(shape)
    leaks, missing = (got & ~expected).nonzero().tolist(), (~got & expected).nonzero().tolist()
    line = (f"{probe.where}, of the {got.numel()} (query, key) pairs {len(leaks)} are allowed that should be "
            f"blocked and {len(missing)} are blocked that should be allowed.")
    if probe.facts.get("lengths") is not None:
        b, i, j = (got != expected).nonzero()[0].tolist()
        allowed = "may" if bool(got[b, i, j]) else "may not"
        length = int(probe.facts["lengths"][b])
        return f"{line} In sequence {b} (length {length}) query {i} {allowed} attend to key {j}." \
            + _down_the_queries(probe, ans.output)
    if leaks:
        i, j = leaks[0][-2:]
        mirrored = len(shape) == 2 and shape[0] == shape[1] and (
            torch.equal(got, expected.flip(-1)) or torch.equal(got, expected.flip(-2)))
        return (f"{line} For example query {i} may attend to key {j}, which comes after it."
                + (" Your mask is the causal mask flipped (flip(-1) or flip(0) reverses the order of the "
                   "keys or of the queries; it does not transpose): build the lower triangle itself, "
                   "tril()." if mirrored else ""))
    i, j = missing[0][-2:]
    return (f"{line} For example query {i} may not attend to key {j}, which is not after it."
            + _window_words(missing, shape))


def _down_the_queries(probe, out) -> str:
    """For a padding mask of shape (batch, n, 1): that its positions run down the queries, so it blocks
    query rows, not key columns (replay 23's 04Z3 added the query axis last, and no line said so)."""
    n = probe.args.get("n")
    if out.dim() != 3 or not isinstance(n, int) or n < 2 or tuple(out.shape[1:]) != (n, 1):
        return ""
    return (f" Your mask has shape {shape_str(out.shape)}: its {n} positions run down the queries, so it "
            "blocks whole query rows, not key columns (the keys are the last axis, (batch, 1, n)).")


def _window_words(missing, shape) -> str:
    """When the keys blocked wrongly are exactly those w or more positions back: a sliding window."""
    if len(shape) != 2:
        return ""
    window = min(i - j for i, j in missing)
    far = [[i, j] for i in range(shape[0]) for j in range(shape[1]) if i - j >= window]
    if window < 1 or sorted(missing) != far:
        return ""
    return (f" Every key {window} or more positions back is blocked, and only those: a sliding window "
            f"(each query sees itself and the {window - 1} before it, as in Mistral's attention), where "
            "a causal mask lets each query see every earlier key.")


_RAISED_FIX = "call your function by hand with the arguments above and read the error's last lines"


def _raised_at_once(t):
    """A mask function that raises is told so before anything else is compared."""
    for probe, ans in t.pairs():
        if ans.error is not None and not (t.spec.words.get("single") and _single_right(t)):
            missing = missing_torch_name(ans.error.get("message", ""))
            return t.problem(f"your function raised {ans.error['type']}.",
                             [_differences(probe, ans), *([missing[0]] if missing else [])],
                             fix=missing[1] if missing else t.spec.words["raised_fix"])
    return None


def _shape_named(t):
    """A known bug read from the wrong answers' shapes (the checker's own ``words["shape_bug"]``)."""
    name = t.spec.words.get("shape_bug")
    wrong = [(p, a) for p, a in t.main if not t.right(p, a)]
    return name(t, wrong) if name and wrong else None


def _fixed_size(t, wrong):
    """Right up to some size m, and for every larger n the m x m triangle: built once and sliced."""
    sizes = set()
    for probe, ans in wrong:
        value, n = ans.output, probe.args.get("n")
        square = isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] == value.shape[1]
        if n is None or not square:
            return None
        m = value.shape[-1]
        if not m < n or not torch.equal(value.bool(), causal(m)):
            return None
        sizes.add(m)
    if len(sizes) != 1:
        return None
    m = sizes.pop()
    probe, ans = wrong[0]
    return t.bug("mask_fixed_size", f"{t.spec.subject} returned a {m} x {m} mask for n = {probe.args['n']}",
                 [_differences(probe, ans), f"Right for every n up to {m}; for each larger n it returns the "
                  f"same {m} x {m} triangle.", *_not_bool(ans)])


def _padding_shape_kind(probe, value):
    """'width' (the right mask, max(lengths) wide instead of n) or 'axis' (the right mask as (batch, n) or
    (1, batch, n), with no query axis after the batch), or None."""
    lengths, n = probe.args["lengths"], probe.args["n"]
    batch, expected = len(lengths), padding(lengths, n)
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return None
    width = value.shape[-1]
    if width == int(lengths.max()) < n and value.numel() == batch * width:
        padded = torch.nn.functional.pad(value.bool().reshape(batch, 1, width), (0, n - width))
        return "width" if torch.equal(padded, expected) else None
    if tuple(value.shape) in ((batch, n), (1, batch, n)):
        return "axis" if torch.equal(value.bool().reshape(batch, 1, n), expected) else None
    return None


def _padding_shape(t, wrong):
    kinds = {_padding_shape_kind(p, a.output) for p, a in wrong}
    if len(kinds) != 1 or None in kinds:
        return None
    probe, ans = wrong[0]
    lengths, n = probe.args["lengths"], probe.args["n"]
    if kinds == {"width"}:
        bug, happened = ("padding_width_from_lengths", f"{t.spec.subject} returned a mask "
                         f"{ans.output.shape[-1]} wide for n = {n}")
    else:
        bug, happened = ("padding_query_axis_misplaced", f"{t.spec.subject} returned shape "
                         f"{shape_str(ans.output.shape)} for a batch of {len(lengths)}")
    return t.bug(bug, happened, [_differences(probe, ans), *_padding_notes(probe, ans), *_not_bool(ans)])


def _not_bool(ans):
    """A line for a shape verdict on a mask that is not bool either: said at once, or fixing the shape
    alone would bring a second failure (HF's attention_mask, say: int64 (batch, n))."""
    dtype = ans.output.dtype if isinstance(ans.output, torch.Tensor) else torch.bool
    if dtype == torch.bool:
        return []
    name = dtype_name(ans.output)
    return [f"It is {'an' if name.startswith('i') else 'a'} {name} mask as well, not bool: masked_fill and "
            "F.scaled_dot_product_attention read only a bool mask as may/may not attend. Return a bool "
            "mask (a comparison gives one; leave out .long(), .int() and .float())."]


def _single_right(t):
    return any(t.right(p, a) for p, a in t.main if p.facts.get("batch_one"))


def _complaint(t):
    for probe, ans in t.pairs():
        if not ans.complaint:
            continue
        if probe.kind == "rectangle" and t.all_right:
            return t.bug("causal_not_rectangular", f"your function returned a mask of the wrong shape for "
                         f"(n_q, n_k) = {tuple(probe.args.values())}", [f"{probe.where}: {ans.complaint}"])
        kept = _kept_from(t, probe, ans)
        notes = t.spec.words["complaint_notes"](probe, ans) + kept + _values_too(t)
        # a mask kept from an earlier call says so first (replay 19's 04V2: "against the scores' shape (1, 1)
        # it gives (4, 4)" for a global mask built at n=4 read hard, and its cause came two lines later)
        said = f"returned shape {shape_str(ans.output.shape)} for {probe.name}: a mask sized by an earlier " \
            "call, used again." if kept and isinstance(ans.output, torch.Tensor) else ans.complaint
        return t.problem(f"your function {said}", notes, fix=t.spec.complaint_fix)
    return None


def _as_asked(probe, out):
    """A mask's values as the scores read them, extra leading dimensions of size 1 taken away; None where
    they cannot be read so."""
    if not isinstance(out, torch.Tensor):
        return None
    shape = tuple(probe.expected.shape)
    while out.dim() > len(shape) and out.shape[0] == 1:
        out = out[0]
    return out if broadcast_shape(tuple(out.shape), shape) == shape else None


def _values_too(t):
    """A note for a verdict on a mask's shape when its values, read as the asked shape, are a known bug
    as well (a strict < in a (1, n, n) mask; True on the padding where the shape was right): said with
    the shape, not left for the next round."""
    read = [(p, a, Answer(output=v)) for p, a in t.main if (v := _as_asked(p, a.output)) is not None]
    if not read or all(t.right(p, v) for p, _, v in read):
        return []
    bug = matching_bug([v for _, _, v in read], t.spec.hypotheses, [p for p, _, _ in read],
                       compare=t.spec.compare)
    if bug is None:
        return []
    squeezed = any(a.complaint for _, a, _ in read)
    where = ("Read without its extra dimensions of size 1, its values" if squeezed else
             f"Where its shape is right ({read[0][0].where.removeprefix('For ')}"
             + (f" and {len(read) - 1} more calls" if len(read) > 1 else "") + "), its values")
    return [f"{where} are wrong as well: the known bug \"{bug.replace('_', ' ')}\". {BUGS[bug].what}"]


def _inverted_too(t):
    """Two known bugs at once, one of them True and False swapped: the learner's masks, swapped back, are
    another known bug's (a replay's padding mask was arange(n) >= length, unsqueezed to (batch, n, 1): on
    the query rows and on the padding). Named with that bug, and the swap said with it, where "no known
    bug" named neither. A mask that blocks everything is not read as one that blocks nothing, swapped."""
    main = t.main
    if not main or not all(isinstance(a.output, torch.Tensor) and a.output.dtype == torch.bool
                           for _, a in main):
        return None
    order = [bug for bug in t.spec.hypotheses.variants if bug not in ("mask_inverted", "mask_blocks_nothing")]
    bug = matching_bug([Answer(output=~a.output) for _, a in main], t.spec.hypotheses, [p for p, _ in main],
                       compare=t.spec.compare, order=order)
    if bug is None:
        return None
    probe, ans = t.first_wrong()
    swapped = ("Its True and False are swapped as well, the known bug \"mask inverted\": in this course, as "
               "in PyTorch's fused function, True means \"may attend\".")
    return t.bug(bug, t.happened(probe, ans), [t.describe(probe, ans), swapped],
                 fix=t.spec.words.get(f"fix:{bug}"))


def _kept_from(t, probe, ans):
    """A note when a mask of the wrong shape is exactly an earlier call's mask: one kept from before
    (a global set on the first call, a cache keyed by nothing) and handed out again."""
    out = ans.output
    for before, _ in t.pairs():
        if before is probe:
            return _width_kept(t, probe, ans)
        if isinstance(out, torch.Tensor) and out.dtype == torch.bool \
                and _same_mask(before, Answer(output=out), before.expected):
            said = before.where.removeprefix("For ").rstrip(":")
            return [f"It is the mask of an earlier call ({said}): a mask kept from before (a global set on "
                    "the first call, a cache keyed by nothing) and handed out again: build it anew each "
                    "call."]
    return []


def _width_kept(t, probe, ans):
    """A note when a wrong-shaped mask is as wide as an earlier call's n, not this call's: something
    built on an earlier call (an arange kept on a class or in a global) and used again."""
    n = probe.args.get("n", probe.args.get("n_k"))
    out = ans.output
    if not isinstance(out, torch.Tensor) or out.dim() == 0 or n is None or out.shape[-1] == n:
        return []
    for before, _ in t.pairs():
        if before is probe:
            return []
        if before.args.get("n", before.args.get("n_k")) == out.shape[-1]:
            said = before.where.removeprefix("For ").rstrip(":")
            return [f"Its last dimension is {out.shape[-1]}, the n of an earlier call ({said}), not this "
                    f"call's n = {n}: something built on an earlier call (an arange or a mask kept on a "
                    "class, an object or a global) is used again. Build it from this call's arguments each "
                    "time."]
    return []


def _corner(probe, ans):
    """Where a rectangle's triangle starts: 'top-left' (query i sees keys j <= i), 'bottom-right' (the
    last query sees every key, as a KV cache needs), or None."""
    n_q, n_k = probe.args.values()
    if _same_mask(probe, ans, probe.expected):
        return "top-left"
    if _same_mask(probe, ans, torch.ones(n_q, n_k, dtype=torch.bool).tril(n_k - n_q)):
        return "bottom-right"
    return None


def _rectangles(t):
    """A causal function tried on rectangles: right when every one starts from the same corner."""
    pairs = t.pairs("rectangle")
    corners = [_corner(p, a) for p, a in pairs]
    if not pairs or (None not in corners and len(set(corners)) == 1):
        return None
    (first, _), *_, (last, _) = pairs
    if None in corners:
        probe, ans = pairs[corners.index(None)]
        return t.bug("causal_not_rectangular", f"your function returned the wrong mask for (n_q, n_k) = "
                     f"{tuple(probe.args.values())}", [_differences(probe, ans)])
    one, other = tuple(first.args.values()), tuple(last.args.values())
    happened = f"your function returned the wrong mask for (n_q, n_k) = {other}"
    return t.bug("causal_not_rectangular", happened, [
        f"For (n_q, n_k) = {one} its triangle starts from the {corners[0]} corner, for {other} from the "
        f"{corners[-1]}: keep to one."])


def _earlier_mask(t):
    """Wrong where the mask returned is an earlier call's (the right mask for that call, or what the
    function returned for it): a mask kept from before (functools.cache, a dict keyed by the shape or by
    n alone) and handed out again."""
    answered = []
    for probe, ans in t.main:
        out = ans.output
        if not t.right(probe, ans) and isinstance(out, torch.Tensor):
            try:                                   # as the scores see it: broadcast to (batch, n_q, n_k)
                seen = torch.broadcast_to(out.bool(), probe.expected.shape)
            except RuntimeError:
                seen = None
            for before, earlier in answered:
                same_as_expected = seen is not None and before.expected.shape == seen.shape \
                    and torch.equal(seen, before.expected.bool())
                # or exactly what it returned, rightly, for an earlier call (of another batch, say)
                same_as_returned = t.right(before, earlier) and isinstance(earlier.output, torch.Tensor) \
                    and earlier.output.shape == out.shape and torch.equal(earlier.output.bool(), out.bool())
                if (same_as_expected or same_as_returned) and not (
                        before.expected.shape == probe.expected.shape
                        and torch.equal(before.expected, probe.expected)):
                    def case(p):
                        return p.where.removeprefix("For ").rstrip(":")

                    return t.problem(
                        f"{t.spec.subject} returned, for {case(probe)}, the mask of an earlier call"
                        + (" with the same shape." if same_as_expected else "."),
                        [_differences(probe, ans),
                         f"It is the right mask for {case(before)}: a mask kept from an earlier call "
                         "(functools.cache, a dict keyed by the shape or by n alone) and handed out "
                         "again. Key it by every argument (the lengths themselves), or build it anew "
                         "each call: it is cheap."],
                        fix=t.spec.complaint_fix,
                    )
        answered.append((probe, ans))
    return None


def _called_again(t):
    """Right on every main input, wrong on one of them called a second time: something kept between calls
    (a cache whose mask was changed after it was stored, a global changed in place) gives another mask
    (replay 21's 04X1 and replay 23's 04Z2 asked for a repeat call: each n was called once)."""
    for probe, ans in t.pairs("again"):
        if not t.right(probe, ans):
            said = probe.where.removeprefix("For ")
            return t.problem(
                f"{t.spec.subject} returned the wrong mask for {said}, where the first call was right.",
                [_differences(probe, ans), "Something your function keeps between calls gives another mask "
                 "on a repeat call: a mask kept from before (a cache that stores another mask than the one "
                 "returned, or whose mask is changed after it is stored; a global changed in place). Build "
                 "the mask anew each call, or store exactly the mask you return."],
                fix=t.spec.complaint_fix)
    return None


MASK_RULES = rules(
    replace={"returned_odd": Rule("complaint", "always", _complaint)},
    before={
        "returned_odd": [Rule("raised_at_once", "always", _raised_at_once),
                         Rule("shape_named", "always", _shape_named)],
        "nondeterministic": [Rule("not_bool", "always", _dtype_note)],
        "passed": [Rule("rectangles", "right", _rectangles), Rule("called_again", "right", _called_again)],
        "hypothesis": [Rule("earlier_mask", "wrong", _earlier_mask)],
        "no_known_bug": [Rule("inverted_too", "wrong", _inverted_too)],
    },
    drop=("setup_failed", "large_scores_nan", "dead_rows_nan", "gradients", "main_dtype", "other_dtypes",
          "large_scores_wrong", "contiguous_error", "matmul_everywhere"),
)


_KEYS = re.compile(r"^(n_?k|nk|n_?keys?|num_keys?|keys?|k|kv.*|n_?kv.*|len_?k.*|key_?len.*|m|n_?cols?|cols?|"
                   r"n_?2|n_?k?_?len|width)$", re.IGNORECASE)


def _wrong_entries(probe, candidate) -> int:
    """In a child: how many (query, key) entries ``candidate`` (a change of the learner's function) gets
    wrong on ``probe``, one more for a mask that is not bool; 10 ** 9 for no mask of a fitting shape."""
    args = [v.clone() if isinstance(v, torch.Tensor) else v for v in probe.args.values()]
    out = candidate(*args)
    shape = tuple(probe.expected.shape)
    if not isinstance(out, torch.Tensor) or broadcast_shape(tuple(out.shape), shape) != shape:
        return 10 ** 9
    wrong = int((out.bool().expand(shape) != probe.expected.expand(shape)).sum())
    return wrong + (out.dtype != torch.bool)


def _repaired(spec, fn, result, probes, time_limit, width=None):
    """The Fix as the learner's own lines, one or two tokens changed, where that passes (:mod:`._repair`)."""
    def passes(changed):
        return _run(spec, changed, probes, time_limit).passed

    return repaired(fn, result, probes, _wrong_entries, passes, width)


def _takes_two(fn):
    """Whether ``fn`` takes (n_q, n_k): a second size it needs, or an optional one named like the keys'
    count. An optional second parameter of another name (device, dtype, diagonal) is left alone."""
    try:
        signature = signature_of(fn)
        bound = signature.bind(3, 5)
    except (TypeError, ValueError):
        return False
    names = list(bound.arguments)
    if len(names) < 2:                   # (3, 5) went into *args
        return True
    second = signature.parameters[names[1]]
    return second.default is inspect.Parameter.empty or bool(_KEYS.match(second.name))


def _steps(fn, probes):
    return [lambda p=p: guarded_call(fn, p.args, tuple(p.args)) for p in probes]


def _run(spec, fn, probes, time_limit):
    return run_check(spec, probes, _steps(fn, probes), time_limit, read=_read, prepare=_read_additive)


def _causal_passed(t):
    rectangles = t.pairs("rectangle")
    corner = _corner(*rectangles[0]) if rectangles else None
    tried = "n = 1, 4, 6, 40 and 300" + (f" and (n_q, n_k) = (3, 5), (5, 3), the triangle from the {corner} "
                                         "corner" if rectangles else "")
    other = [(p, a) for p, a in t.pairs() if isinstance(a.output, torch.Tensor)
             and tuple(a.output.shape) != tuple(p.expected.shape)]
    notes = [f"{other[0][0].where} your mask has shape {shape_str(other[0][1].output.shape)}, not "
             f"{shape_str(other[0][0].expected.shape)}: it broadcasts, so it works as a mask, but the "
             "exercise asks for (n, n) whatever n (a bare squeeze() drops every axis of size 1, both of "
             "them when n = 1; squeeze(0) drops only the first)."] if other else None
    return _verdict.passed("check_causal_mask", f"correct for {tried}.",
                           ["Each query sees itself and every earlier position, nothing later."], notes)


CAUSAL = Spec(
    "check_causal_mask",
    hypotheses=Hypotheses(_CAUSAL_HYPOTHESES, lambda p: tuple(p.args.values())),
    fix=_CAUSAL_FIX,
    passed=_causal_passed,
    compare=_same_mask,
    describe=_differences,
    complaint_fix=_CAUSAL_FIX,
    words={
        "output": "mask", "broadcasts": True, "fix:mask_inverted": "torch.ones(n, n, dtype=torch.bool).tril()"
        "   # True = may attend", "raised_fix": _RAISED_FIX, "shape_bug": _fixed_size,
        "complaint_notes": lambda p, a: [
            f"{p.where} the mask should have shape {shape_str(p.expected.shape)}."
        ] if a.output is not None else [],
    },
    rules=MASK_RULES,
)


def _library_note(fn, result, name: str, own: str):
    """A pass whose function hands the work to the course's own mask function says so, as
    check_attention does for a ready-made attention: the exercise is the mask built, and a teacher
    grading with the check may want to know."""
    from .. import core

    if result.passed and library_used(fn, {name: getattr(core, name)}):
        result.notes.append(f"Your function calls the course's attnviz.{name}: its numbers are right, and "
                            f"the exercise asks you to build the mask yourself ({own}).")
    return result


@_verdict.never_raises
@with_stale_note
@in_neutral
def check_causal_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(n) -> (n, n)`` bool causal mask: query i may attend to keys j <= i (True = may attend).

    Tried with n = 1, 4, 6, 40 and 300; if ``fn`` also takes ``(n_q, n_k)``, with (3, 5) and (5, 3) too
    (the triangle may start at the top-left corner, like ``attnviz.causal_mask``, or at the bottom-right,
    as a KV cache needs, the same corner for both). Returns a :class:`CheckResult`.
    """
    if not callable(fn):
        return _verdict.problem("check_causal_mask", f"expected a function, got a {type(fn).__name__}.",
                                ["Pass the function itself: check_causal_mask(my_causal_mask)."])
    probes = [_probe({"n": n}, causal(n)) for n in _CAUSAL_SIZES]
    probes.append(_probe({"n": 4}, causal(4), kind="again", where="For n=4 called a second time"))
    if _takes_two(fn):
        probes += [_probe({"n_q": a, "n_k": b}, causal(a, b), kind="rectangle") for a, b in _RECTANGLES]
    result = code_notes(fn, globals_note(fn, _run(CAUSAL, fn, probes, time_limit)))
    result = _repaired(CAUSAL, fn, mask_fix_in_your_names(fn, result, ("n",)), probes, time_limit)
    return _library_note(fn, result, "causal_mask", "torch.ones and torch.tril")


def _padding_notes(probe, ans):
    lengths, n = probe.args["lengths"], probe.args["n"]
    batch = len(lengths)
    notes = [f"{probe.where} the scores are (batch, n_q, n_k) = {shape_str(probe.expected.shape)}, so the "
             f"mask should be (batch, 1, n_k) = ({batch}, 1, {n})."]
    value = ans.output
    if isinstance(value, torch.Tensor) and tuple(value.shape) == (batch, n):
        notes.append("A (batch, n) mask has no query axis: broadcast against the scores, its batch axis "
                     "lines up with n_q.")
        if value.dtype == torch.bool and torch.equal(value, ~probe.expected[:, 0, :]):
            notes.append("Its values are inverted too: True on the padding, which is what "
                         "nn.MultiheadAttention's key_padding_mask means. Here True = may attend (a real "
                         "token), so compare arange(n) < length.")
    if isinstance(value, torch.Tensor) and tuple(value.shape) == (n, 1, batch) \
            and torch.equal(value.permute(2, 1, 0).bool(), probe.expected[:, :1, :].bool()):
        notes.append("Your mask is the right one with its first and last axes swapped: (n, 1, batch), "
                     "positions down and lengths across. Compare the positions as a row with the "
                     "lengths as a column: torch.arange(n)[None, :] < lengths[:, None], then add the "
                     "query axis.")
    if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[-1] == int(lengths.max()) < n:
        notes.append(f"Its last dimension is max(lengths) = {int(lengths.max())}, not n = {n}: build it over "
                     f"torch.arange(n).")
    return notes


def _padding_passed(t):
    full = any(isinstance(a.output, torch.Tensor) and a.output.dim() == 3 and a.output.shape[-2] > 1
               for _, a in t.main)
    # neither (batch, 1, n) nor (batch, n, n): a squeeze() that dropped the batch of one, say
    other = [(p, a) for p, a in t.pairs() if isinstance(a.output, torch.Tensor) and a.output.dim() != 3]
    asked = (len(other[0][0].args["lengths"]), 1, other[0][0].args["n"]) if other else ()
    notes = [f"{other[0][0].where} your mask has shape {shape_str(other[0][1].output.shape)}, not "
             f"(batch, 1, n) = {shape_str(asked)}: it broadcasts against these scores, so it works as a "
             "mask here, but the exercise asks for (batch, 1, n) whatever the batch (a bare squeeze() "
             "also drops a batch of one)."] if other else []
    return _verdict.passed(
        "check_padding_mask", "correct: padding keys are blocked for every query.",
        [
            "lengths [3] with n=5 (a batch of one), [2, 5, 1, 3] with n=5, [4, 0] with n=4, [2, 3, 1] "
            "with n=6 (longer than any sequence), and [5, 1, 3, 2] with n=5 (the same shape, other lengths)."
        ],
        (["Your mask is the full (batch, n, n): right for these scores, which have n queries. The exercise "
          "asks for (batch, 1, n), which fits any number of queries; with one query (a decoding step, "
          "notebook 08) a (batch, n, n) mask turns its one row of scores into n. Keep one row: "
          "mask[:, :1, :]."] if full else []) + notes,
    )


PADDING = Spec(
    "check_padding_mask",
    hypotheses=Hypotheses(_PADDING_HYPOTHESES, lambda p: (p.args["lengths"], p.args["n"])),
    fix=_PADDING_FIX,
    passed=_padding_passed,
    compare=_same_mask,
    describe=_differences,
    complaint_fix=_PADDING_FIX,
    words={
        "output": "mask", "broadcasts": True, "single": True, "fix:mask_inverted": _PADDING_FIX,
        "raised_fix": _RAISED_FIX,
        "modified_bug": "padding_lengths_modified", "complaint_notes": _padding_notes,
        "shape_bug": _padding_shape,
        "batch_one": "Right for lengths=[3], n=5 (a batch of one), wrong for larger batches.",
    },
    rules=MASK_RULES,
)


@_verdict.never_raises
@with_stale_note
@in_neutral
def check_padding_mask(fn, *, time_limit: float = TIME_LIMIT):
    """Check ``fn(lengths, n)`` -> bool padding mask, True for real tokens (may attend).

    ``lengths`` is a 1-D int64 tensor (real tokens per sequence, padding at the
    end; its maximum may be less than ``n``). The result must act on *key
    columns* of scores ``(batch, n_q, n_k)``: shape ``(batch, 1, n)``, like
    :func:`attnviz.padding_mask`, or a full ``(batch, n, n)`` whose rows all
    repeat the key pattern. ``lengths`` must not be changed.
    """
    if not callable(fn):
        return _verdict.problem("check_padding_mask", f"expected a function, got a {type(fn).__name__}.",
                                ["Pass the function itself: check_padding_mask(my_padding_mask)."])
    probes = []
    for lengths, n, single in [([3], 5, True)] + [(lengths, n, False) for lengths, n in _PADDING_CASES]:
        lengths = torch.tensor(lengths)
        expected = padding(lengths, n).expand(len(lengths), n, n)
        probes.append(_probe({"lengths": lengths, "n": n}, expected, batch_one=single, lengths=lengths))
    again = next(p for p in probes if not p.facts["batch_one"])      # lengths=[2, 5, 1, 3], n=5
    probes.append(_probe(again.args, again.expected, kind="again", lengths=again.facts["lengths"],
                         where=f"For {again.where.removeprefix('For ')} called a second time"))
    result = code_notes(fn, globals_note(fn, _run(PADDING, fn, probes, time_limit)))
    code = code_of(fn)
    width = code.co_varnames[1] if code is not None and code.co_argcount >= 2 else None
    result = _repaired(PADDING, fn, mask_fix_in_your_names(fn, result, ("lengths", "n")), probes, time_limit,
                       width)
    return _library_note(fn, result, "padding_mask", "torch.arange(n) compared with the lengths")
